package copyref

import (
	"bytes"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMethodsCopy checks that every method copies the bytes, at sizes
// on both sides of the engine's thresholds and at odd lengths.
func TestMethodsCopy(t *testing.T) {
	ms := Methods()
	names := Names(ms)
	for _, want := range []string{"copy", "movsb", "engine"} {
		if !strings.Contains(names, want) {
			t.Errorf("methods %q lack %q", names, want)
		}
	}
	if HaveGlibc != strings.Contains(names, "glibc") {
		t.Errorf("HaveGlibc %v, methods %q", HaveGlibc, names)
	}
	for _, n := range []int{1, 255, 256, 4097, 65536, 1<<20 + 3} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + 1)
		}
		for _, m := range ms {
			dst := make([]byte, n)
			m.Loop(dst, src, 2)
			if !bytes.Equal(dst, src) {
				t.Errorf("%s, %d bytes: the copy differs", m.Name, n)
			}
		}
	}
}

// TestInterleave checks the block structure: per round one timed block
// of the transfer and of every method, each after an untimed block of
// its own kind, k = BlockCount(size) transfers per block, and figures
// that are bandwidths of the bytes moved.
func TestInterleave(t *testing.T) {
	const size = 1 << 16
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	var calls []int
	xfer := func(k int) {
		calls = append(calls, k)
		for range k {
			copy(dst, src)
		}
	}
	ms := Methods()
	r := Interleave(size, 3, xfer, dst, src, ms)
	k := BlockCount(size)
	if want := []int{k, k, k, k, k, k}; !slices.Equal(calls, want) {
		t.Errorf("transfer calls %v, want %v (an untimed and a timed block per round)", calls, want)
	}
	if len(r.Transfer) != 3 || len(r.Copy) != 3 || len(r.Fastest) != 3 || len(r.Each) != len(ms) {
		t.Fatalf("result %+v: want 3 rounds, %d methods", r, len(ms))
	}
	// The reference is the method with the best median, in every round.
	b := -1
	for j := range ms {
		if b < 0 || median(r.Each[j]) > median(r.Each[b]) {
			b = j
		}
	}
	if r.Best != ms[b].Name {
		t.Errorf("Best = %q, want %q, the method with the highest median", r.Best, ms[b].Name)
	}
	for i := range 3 {
		if r.Transfer[i] <= 0 || r.Copy[i] <= 0 || math.IsInf(r.Copy[i], 0) {
			t.Errorf("round %d: transfer %v, copy %v MB/s", i, r.Transfer[i], r.Copy[i])
		}
		if r.Copy[i] != r.Each[b][i] {
			t.Errorf("round %d: copy %v is not the best method's block, %v", i, r.Copy[i], r.Each[b][i])
		}
		best := 0.0
		for j := range ms {
			best = max(best, r.Each[j][i])
		}
		if r.RoundBest[i] != best {
			t.Errorf("round %d: RoundBest %v is not the round's fastest block, %v", i, r.RoundBest[i], best)
		}
		if !strings.Contains(Names(ms), r.Fastest[i]) || r.Fastest[i] == "" {
			t.Errorf("round %d: fastest %q", i, r.Fastest[i])
		}
	}
	if q := r.Ratios(); len(q) != 3 || q[0] != r.Transfer[0]/r.Copy[0] {
		t.Errorf("ratios %v", q)
	}
	if BlockCount(1<<30) != 2 || BlockCount(1<<10) != blockBytes>>10 {
		t.Errorf("BlockCount: %d at 1 GiB, %d at 1 KiB", BlockCount(1<<30), BlockCount(1<<10))
	}
}

// TestFormatParse checks that the comment reads back as written, with
// the median and range of the per-round ratios, and that malformed
// text is an error.
func TestFormatParse(t *testing.T) {
	rs := []Result{
		{Size: 65536, Transfer: []float64{90, 100, 95}, Copy: []float64{100, 100, 100}},
		{Size: 1 << 20, Transfer: []float64{50}, Copy: []float64{40}},
	}
	s := Format(rs)
	if want := "65536 0.950 [0.900-1.000] 95 100; 1048576 1.250 [1.250-1.250] 50 40"; s != want {
		t.Fatalf("Format = %q, want %q", s, want)
	}
	got, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []Figure{{65536, 0.95, 0.9, 1, 95, 100}, {1 << 20, 1.25, 1.25, 1.25, 50, 40}}
	if !slices.Equal(got, want) {
		t.Errorf("Parse = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"65536 x [0.9-1.0] 1 2", "65536 0.9 0.9-1.0 1 2", "65536 0.9 [0.9] 1 2", "65536 0.9"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}

// FuzzParse checks that Parse never panics and that what it accepts
// formats back to figures it reads the same way.
func FuzzParse(f *testing.F) {
	f.Add("65536 0.950 [0.900-1.000] 95 100; 1048576 1.250 [1.250-1.250] 50 40")
	f.Add("1 0 [0-0] 0 0")
	f.Add("; ;")
	f.Fuzz(func(t *testing.T, s string) {
		figs, err := Parse(s)
		if err != nil {
			return
		}
		for _, g := range figs {
			if _, err := Parse(strings.TrimSpace(formatFigure(g))); err != nil {
				t.Errorf("%+v formats to %q, which does not parse: %v", g, formatFigure(g), err)
			}
		}
	})
}

// TestInterleaveCgoOrder checks that the transfer never runs right
// after a cgo method (Method.Cgo), whatever the methods' order, and that
// each method's figures land at its own index.
func TestInterleaveCgoOrder(t *testing.T) {
	var log []string
	mk := func(name string, cgo bool) Method {
		return Method{Name: name, Cgo: cgo, Loop: func(dst, src []byte, n int) { log = append(log, name) }}
	}
	ms := []Method{mk("a", false), mk("b", false), mk("c", true)} // the cgo one last, as Methods has it
	buf := make([]byte, 256)
	r := Interleave(256, 5, func(int) { log = append(log, "x") }, buf, buf, ms)
	for i := 1; i < len(log); i++ {
		if log[i] == "x" && log[i-1] == "c" {
			t.Fatalf("the transfer ran right after the cgo method: %v", log)
		}
	}
	for j, m := range ms {
		if len(r.Each[j]) != 5 {
			t.Errorf("method %s: %d figures, want 5", m.Name, len(r.Each[j]))
		}
	}
	if n := strings.Count(strings.Join(log, ""), "c"); n != 10 {
		t.Errorf("the cgo method ran %d times, want 10: %v", n, log)
	}
}

func TestWins(t *testing.T) {
	r := Result{Fastest: []string{"glibc", "movsb", "movsb", "nt", "movsb", "glibc"}}
	if got, want := r.Wins(), "movsb 3, glibc 2, nt 1"; got != want {
		t.Errorf("Wins = %q, want %q", got, want)
	}
}

func TestWinsBySize(t *testing.T) {
	rs := []Result{{Size: 65536, Fastest: []string{"nt", "glibc", "nt"}}, {Size: 131072, Fastest: []string{"movsb"}}}
	if got, want := WinsBySize(rs), "65536 nt 2, glibc 1; 131072 movsb 1"; got != want {
		t.Errorf("WinsBySize = %q, want %q", got, want)
	}
}

// TestSplitter: a split copy moves every byte once, whatever the size
// (the halves meet at SplitPoint, the chunks cover the bytes), in each
// way, and Stop ends the partner's Serve.
func TestSplitter(t *testing.T) {
	var req, length, claim, done int64
	const maxN = 300000
	src, dst := make([]byte, maxN), make([]byte, maxN)
	ended := make(chan struct{})
	go func() {
		Serve(func(last int64) int64 {
			for {
				if r := atomic.LoadInt64(&req); r != last {
					return r
				}
				runtime.Gosched()
			}
		}, &length, &claim, &done, dst, src)
		close(ended)
	}()
	sp := &Splitter{Req: &req, Len: &length, Claim: &claim, Done: &done}
	ms := sp.Methods()
	if names := Names(ms); names != "split-t, split-nt, chunks-t, chunks-nt, guided-t, guided-nt" {
		t.Errorf("split methods %q", names)
	}
	for i, n := range []int{64 << 10, 64<<10 + 1, 100003, 128 << 10, maxN} {
		for _, m := range ms {
			for j := range src[:n] {
				src[j] = byte(j*7 + i)
			}
			clear(dst)
			m.Loop(dst[:n], src[:n], 2)
			if !bytes.Equal(dst[:n], src[:n]) {
				t.Fatalf("%s copy of %d bytes differs from its source", m.Name, n)
			}
			if slices.ContainsFunc(dst[n:], func(b byte) bool { return b != 0 }) {
				t.Fatalf("%s copy of %d bytes wrote past its end", m.Name, n)
			}
		}
	}
	sp.Stop()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Stop")
	}
}
