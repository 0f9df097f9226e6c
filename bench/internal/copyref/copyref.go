// Package copyref is the machine's best copy as the benchmarks measure
// it: every way of copying memory this machine offers (Go's copy, REP
// MOVSB, goshmem's AVX2 temporal and non-temporal loops, the copy
// engine with this machine's plan, and, with cgo, the C library's
// memcpy that the C peer calls), and the interleaved comparison that
// times a goshmem transfer in blocks alternating with blocks of every
// lone copy of the same bytes.
//
// Why interleaved: on a shared machine the memory bandwidth moves by
// 10% within seconds, so a best copy measured by another program at
// another moment is neither a bound nor a fair reference (a put_bw run
// beat the limit measured a minute before it by 4-10% at 8-64 MiB).
// Blocks of a few milliseconds, alternated, compare one state of the
// machine; the ratio of each round is the transfer's bandwidth over the
// best lone copy's in that round.
package copyref

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem/internal/mem"
)

// Method is one way of copying memory: Loop copies src to dst iters
// times.
type Method struct {
	Name string
	Loop func(dst, src []byte, iters int)
	// Cgo tells that Loop is one long cgo call (the C library's
	// memcpy). Go code timed right after it can run slower: in
	// Interleave at 16 MiB, puts timed after a glibc block (each
	// after an untimed block of its own) ran at 17-19 GB/s in 2-3 of 7
	// rounds against 22-24 in the others, and never so after a Go
	// method.
	Cgo bool
}

// goLoop returns a method that runs f iters times.
func goLoop(f func(dst, src []byte) int) func(dst, src []byte, iters int) {
	return func(dst, src []byte, iters int) {
		for range iters {
			f(dst, src)
		}
	}
}

// Methods returns the copies this machine can do: Go's copy (the
// runtime's memmove), REP MOVSB, the AVX2 temporal and non-temporal
// loops of goshmem's copy engine (where the CPU has AVX2; these three
// are memmove below 256 bytes), the engine itself with this machine's
// plan (mem.Copy: memmove below mem.LargeCopy), and the C library's
// memcpy (where HaveGlibc).
func Methods() []Method {
	plan := mem.DefaultCopyPlan()
	ms := []Method{
		{Name: "copy", Loop: goLoop(func(d, s []byte) int { return copy(d, s) })},
		{Name: "movsb", Loop: goLoop(mem.CopyPlan{RepMovsb: true}.CopyKernel)},
	}
	if plan.AVX2 {
		ms = append(ms,
			Method{Name: "avx2", Loop: goLoop(mem.CopyPlan{AVX2: true}.CopyKernel)},
			Method{Name: "nt", Loop: goLoop(mem.CopyPlan{AVX2: true, NTThreshold: 1}.CopyKernel)})
	}
	ms = append(ms, Method{Name: "engine", Loop: goLoop(mem.Copy)})
	if HaveGlibc {
		ms = append(ms, Method{Name: "glibc", Loop: glibcLoop, Cgo: true})
	}
	return ms
}

// Names returns the methods' names, comma-separated.
func Names(ms []Method) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.Name
	}
	return strings.Join(s, ", ")
}

// Rounds is the number of rounds of Interleave: each round times one
// block of the transfer and one block of every method.
const Rounds = 7

// blockBytes is about how many bytes one block moves: a few
// milliseconds at cache or memory speed, long against the clock's
// resolution and a block's set-up, short against the machine's changes
// of state.
const blockBytes = 128 << 20

// BlockCount returns how many transfers (or copies) of size bytes make
// one block: at least 2, about blockBytes in all.
func BlockCount(size int) int { return max(2, blockBytes/max(size, 1)) }

// Result is Interleave's measurement of one size: per round, the
// transfer's bandwidth and the reference's, in MB/s (1e6 bytes per
// second), and the method that was fastest in that round.
//
// The reference (Copy, named by Best) is one method for all rounds: the
// one with the highest median over the rounds, the machine's best way
// to copy this size. Not each round's fastest block (RoundBest): several
// ways are often equally fast (the two-CPU splits at 64-256 KiB each
// win some of the 7 rounds), and the best of several noisy blocks of
// one speed lies above that speed (the winner's curse). In 6 runs of
// get_bw and put_bw -copy at 64 KiB the transfer's median ratio to
// each round's fastest block was 0.77-0.96, to the best method 0.83-0.96:
// 0-9% apart (docs/performance.md, "The best copy is a method").
type Result struct {
	Size     int
	Transfer []float64
	Copy     []float64
	Best     string
	Fastest  []string
	// Each is every method's bandwidth per round, in the order of the
	// methods given to Interleave.
	Each [][]float64
	// RoundBest is each round's fastest block, whatever its method.
	RoundBest []float64
}

// Wins returns how many rounds each method was the fastest copy in,
// most first: "movsb 4, glibc 3".
func (r Result) Wins() string {
	type win struct {
		name string
		n    int
	}
	var ws []win
	for _, f := range r.Fastest {
		if i := slices.IndexFunc(ws, func(w win) bool { return w.name == f }); i >= 0 {
			ws[i].n++
		} else {
			ws = append(ws, win{f, 1})
		}
	}
	slices.SortStableFunc(ws, func(a, b win) int { return b.n - a.n })
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = fmt.Sprintf("%s %d", w.name, w.n)
	}
	return strings.Join(s, ", ")
}

// WinsBySize is Wins for each result, "SIZE WINS" separated by "; ".
func WinsBySize(rs []Result) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%d %s", r.Size, r.Wins())
	}
	return strings.Join(s, "; ")
}

// Ratios returns the per-round ratios Transfer/Copy.
func (r Result) Ratios() []float64 {
	q := make([]float64, 0, len(r.Copy))
	for i, c := range r.Copy {
		if c > 0 {
			q = append(q, r.Transfer[i]/c)
		}
	}
	return q
}

// Ref is a reference a transfer is timed against: Run(k) does in its
// own way what a block of k units of the transfer does (k lone copies,
// or k round trips of a bare ping-pong).
type Ref struct {
	Name string
	Cgo  bool // Run is one long cgo call (see Method.Cgo)
	Run  func(k int)
}

// Interleave times rounds rounds of one block of the transfer (xfer(k)
// moves k times size bytes and returns when they have arrived) and one
// block of k = BlockCount(size) lone copies of size bytes from src to
// dst by each method (InterleaveRefs). dst and src are the bytes the
// transfer moves (mapped: the partner's heap through Ptr), so both read
// and write the same memory.
func Interleave(size, rounds int, xfer func(k int), dst, src []byte, ms []Method) Result {
	d, s := dst[:size], src[:size]
	refs := make([]Ref, len(ms))
	for i, m := range ms {
		refs[i] = Ref{Name: m.Name, Cgo: m.Cgo, Run: func(k int) { m.Loop(d, s, k) }}
	}
	k := BlockCount(size)
	return InterleaveRefs(size, k, rounds, float64(size)*float64(k), xfer, refs)
}

// InterleaveRefs times rounds rounds of one block of the transfer
// (xfer(k)) and one block of each reference (Run(k)), the order rotated
// from round to round; every timed block follows an untimed one of its
// own kind. A block's figure is blockBytes over its time, in MB/s;
// Copy is, per round, the best reference's, and Result.Size is size.
// Every PE taking part runs the same calls in the same order (a
// ping-pong's partner too); only the timing PE's figures mean anything.
func InterleaveRefs(size, k, rounds int, blockBytes float64, xfer func(k int), refs []Ref) Result {
	// Each kind runs one untimed block before its timed one, so that
	// it starts from the state of the caches it leaves itself, not
	// from the state the kind before it left. (Puts that ran 10-20%
	// slower at 16 MiB right after the glibc block were the first
	// reason; the cause there turned out to be the cgo call, below,
	// not the caches, but a block timed in its own steady state is
	// the comparison meant either way.)
	// The rotation makes the last kind the one before the transfer in
	// every round but the first: the cgo references go first (right
	// after the transfer), so that the transfer never follows one (see
	// Method.Cgo).
	var order []int // kind j >= 1 is reference order[j-1]
	for _, cgo := range []bool{true, false} {
		for i, m := range refs {
			if m.Cgo == cgo {
				order = append(order, i)
			}
		}
	}
	kinds := make([]func(n int), 0, 1+len(refs))
	kinds = append(kinds, xfer)
	for _, i := range order {
		kinds = append(kinds, refs[i].Run)
	}
	r := Result{Size: size, Each: make([][]float64, len(refs))}
	for i := range rounds {
		best, who := 0.0, ""
		var xf float64
		for o := range kinds {
			j := (i + o) % len(kinds)
			kinds[j](k)
			t0 := time.Now()
			kinds[j](k)
			bw := blockBytes / (float64(time.Since(t0).Nanoseconds()) / 1e3)
			if j == 0 {
				xf = bw
				continue
			}
			m := order[j-1]
			r.Each[m] = append(r.Each[m], bw)
			if bw > best {
				best, who = bw, refs[m].Name
			}
		}
		r.Transfer = append(r.Transfer, xf)
		r.RoundBest = append(r.RoundBest, best)
		r.Fastest = append(r.Fastest, who)
	}
	b, bm := 0, -1.0
	for m := range refs {
		if med := median(r.Each[m]); med > bm {
			b, bm = m, med
		}
	}
	r.Best, r.Copy = refs[b].Name, slices.Clone(r.Each[b])
	return r
}

// Prefix starts the closing comment of a bandwidth program's -copy:
// per size, "SIZE RATIO [MIN-MAX] TRANSFER COPY", the median and range
// of the per-round ratios and the medians of both bandwidths (MB/s),
// separated by "; ".
const Prefix = "vs copy, interleaved: "

// PatternPrefix starts put_pingpong -copy's closing comment, in
// Format's form: the ping-pong's one-way bandwidth against the bare
// ping-pong's (the same round trips by each copy method and a bare
// flag) timed next to it.
const PatternPrefix = "vs bare ping-pong, interleaved: "

// RoundPrefix starts the comment that gives, in Format's form, the
// transfer against each round's fastest block of any way (RoundBest),
// after the comment of Prefix (or PatternPrefix). It is what a bound is
// checked with: the transfer beat the machine's best copy only if it
// beat every way in every round. (The best way's median, Prefix's
// reference, is the fair reference for how close the transfer comes;
// a transfer as fast as it lies above it in about half the rounds.)
const RoundPrefix = "vs each round's fastest way, interleaved: "

// Format returns the comment's text after Prefix for rs.
func Format(rs []Result) string { return format(rs, func(r Result) []float64 { return r.Copy }) }

// FormatRoundBest returns the comment's text after RoundPrefix for rs.
func FormatRoundBest(rs []Result) string {
	return format(rs, func(r Result) []float64 { return r.RoundBest })
}

func format(rs []Result, ref func(Result) []float64) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString("; ")
		}
		c := ref(r)
		var q []float64
		for i, x := range c {
			if x > 0 {
				q = append(q, r.Transfer[i]/x)
			}
		}
		if len(q) == 0 {
			q = []float64{0}
		}
		if len(c) == 0 {
			c = []float64{0}
		}
		b.WriteString(formatFigure(Figure{r.Size, median(q), slices.Min(q), slices.Max(q), median(r.Transfer), median(c)}))
	}
	return b.String()
}

// formatFigure is one size of the comment.
func formatFigure(g Figure) string {
	return fmt.Sprintf("%d %.3f [%.3f-%.3f] %.0f %.0f", g.Size, g.Ratio, g.Min, g.Max, g.Transfer, g.Copy)
}

// Figure is one size of the comment, parsed.
type Figure struct {
	Size            int
	Ratio, Min, Max float64
	Transfer, Copy  float64 // MB/s
}

// Parse reads the text after Prefix (Format's output).
func Parse(s string) ([]Figure, error) {
	var out []Figure
	for _, f := range strings.Split(s, ";") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var g Figure
		var rng string
		if _, err := fmt.Sscanf(f, "%d %g %s %g %g", &g.Size, &g.Ratio, &rng, &g.Transfer, &g.Copy); err != nil {
			return nil, fmt.Errorf("copy comment %q: %v", f, err)
		}
		lo, hi, ok := strings.Cut(strings.Trim(rng, "[]"), "-")
		var err1, err2 error
		g.Min, err1 = strconv.ParseFloat(lo, 64)
		g.Max, err2 = strconv.ParseFloat(hi, 64)
		if !ok || err1 != nil || err2 != nil || !strings.HasPrefix(rng, "[") || !strings.HasSuffix(rng, "]") {
			return nil, fmt.Errorf("copy comment %q: range %q is not [MIN-MAX]", f, rng)
		}
		out = append(out, g)
	}
	return out, nil
}

// median returns the median of x (the upper one of an even count).
func median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	return x[len(x)/2]
}
