//go:build verbs && cgo && linux

package verbs

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internode"
)

// fill writes the deterministic content of write number seq into b.
func fill(b []byte, seq int) {
	r := rand.New(rand.NewPCG(uint64(seq), 77))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// TestTransportRemoteMemory: leader 1 exposes a region; leader 0 writes
// random ranges of it with RDMA WRITE, from private memory (through
// send buffers) and from a region it exposed itself (no copy), each
// write followed by a frame. When a frame is delivered the data written
// before it must be in place (the order the core relies on to ring the
// target's doorbell). Reads of random ranges, into private memory and
// into the exposed region, return what the writes before them left (a
// mirror of the region is the reference). A write from exposed memory
// whose source is overwritten after Flush must not carry the new
// bytes. Ranges outside the region and unknown ids are refused.
func TestTransportRemoteMemory(t *testing.T) {
	sinks := []*sink{newSink(), newSink()}
	trs := openLeaders(t, 2, sinks)
	const size = 4 << 20
	target, source := mapped(t, size), mapped(t, size)
	mirror := make([]byte, size)

	// Leader 1 checks each write's bytes when the frame after it comes.
	type check struct {
		seq int
		ok  bool
	}
	checks := make(chan check, 1<<12)
	sinks[1].reply = func(from int, h *internode.Header, buf []byte) {
		want := make([]byte, h.Arg0) // the write's length
		fill(want, int(h.Seq))
		checks <- check{int(h.Seq), bytes.Equal(target[h.Off:h.Off+uint64(len(want))], want)}
	}
	if err := trs[1].Expose(7, target); err != nil {
		t.Fatal(err)
	}
	if err := trs[0].Expose(3, source); err != nil {
		t.Fatal(err)
	}
	if err := trs[1].Expose(7, target); err == nil {
		t.Error("exposing region 7 twice: no error")
	}
	// Leader 1's announcement reaches leader 0 before a frame sent
	// after it: once the frame is here, Write must accept.
	if err := trs[1].Send(0, &internode.Header{Op: 1}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sinks[0].frames:
	case <-time.After(10 * time.Second):
		t.Fatal("leader 1's frame did not come")
	}
	if ok, _ := trs[0].Write(1, 7, size-10, make([]byte, 11)); ok {
		t.Error("Write past the end of the region was accepted")
	}
	if ok, _ := trs[0].Read(1, 8, 0, make([]byte, 1)); ok {
		t.Error("Read of a region never exposed was accepted")
	}

	r := rand.New(rand.NewPCG(5, 6))
	private := make([]byte, 3<<20)
	const writes = 400
	for seq := range writes {
		n := 1 + r.IntN(64<<10)
		if seq%5 <= 1 { // both kinds of source, above and below zeroCopyMin
			n = 1 + r.IntN(3<<20)
		}
		off := r.IntN(size - n + 1)
		var src []byte
		if seq%2 == 0 {
			src = private[:n]
		} else {
			so := r.IntN(size - n + 1)
			src = source[so : so+n]
		}
		fill(src, seq)
		ok, err := trs[0].Write(1, 7, uint64(off), src)
		if !ok || err != nil {
			t.Fatalf("write %d (%d bytes at %d): %v, %v", seq, n, off, ok, err)
		}
		h := internode.Header{Op: 2, Seq: uint32(seq), Off: uint64(off), Arg0: uint64(n)}
		if err := trs[0].Send(1, &h, nil); err != nil {
			t.Fatal(err)
		}
		if err := trs[0].Flush(1); err != nil {
			t.Fatal(err)
		}
		// Wait for leader 1's check before the next write can cover
		// the same bytes.
		select {
		case c := <-checks:
			if !c.ok || c.seq != seq {
				t.Fatalf("write %d (%d bytes at %d, %s): its bytes were not in place when the frame after it came (check %d)", seq, n, off, kindOf(seq), c.seq)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the frame after write %d did not come", seq)
		}
		copy(mirror[off:], src)
		clear(src) // after Flush the source is the caller's again (a write without a copy has completed)
		if seq%7 == 3 {
			rn := 1 + r.IntN(2<<20)
			ro := r.IntN(size - rn + 1)
			var dst []byte
			if seq%2 == 0 {
				dst = make([]byte, rn)
			} else {
				do := r.IntN(size - rn + 1)
				dst = source[do : do+rn]
			}
			ok, err := trs[0].Read(1, 7, uint64(ro), dst)
			if !ok || err != nil {
				t.Fatalf("read after write %d (%d bytes at %d): %v, %v", seq, rn, ro, ok, err)
			}
			if !bytes.Equal(dst, mirror[ro:ro+rn]) {
				t.Fatalf("read after write %d (%d bytes at %d) differs from what was written", seq, rn, ro)
			}
		}
	}
	if n := trs[0].stats.zeroCopy.Load(); n == 0 {
		t.Error("no write or read went from or into exposed memory without a copy")
	}
}

func kindOf(seq int) string {
	if seq%2 == 0 {
		return "through send buffers"
	}
	return "from exposed memory"
}

// TestTransportDefer: a frame held back (Defer, while the sender
// polls) leaves with the next frame, in order, in one message; Kick
// sends what is held; what nobody kicks arrives anyway while the
// sender polls (the progress goroutine's looks); Flush sends it; Defer
// refuses when nobody polls and for payloads over 1 KiB.
func TestTransportDefer(t *testing.T) {
	sinks := []*sink{newSink(), newSink()}
	trs := openLeaders(t, 2, sinks)
	tr := trs[0]
	expect := func(seqs ...uint32) {
		t.Helper()
		for _, seq := range seqs {
			select {
			case f := <-sinks[1].frames:
				if f.h.Seq != seq || !bytes.Equal(f.payload, payloadOf(0, seq, int(f.h.Len))) {
					t.Fatalf("got frame %d (%d bytes), want frame %d", f.h.Seq, f.h.Len, seq)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("frame %d did not come", seq)
			}
		}
	}
	frame := func(seq uint32, n int) (*internode.Header, []byte) {
		return &internode.Header{Seq: seq, Len: uint32(n)}, payloadOf(0, seq, n)
	}
	tr.PollIdle()
	if h, b := frame(99, 8); tr.Defer(1, h, b) {
		t.Fatal("Defer held a frame while nobody polls")
	}
	tr.Poll()
	if h, b := frame(99, 2000); tr.Defer(1, h, b) {
		t.Fatal("Defer held a 2000-byte payload")
	}
	sends := tr.stats.sends.Load()
	start := time.Now()
	var held time.Time // when the first frame was held
	for i := range uint32(3) {
		h, b := frame(i, 8+int(i))
		tr.Poll() // a polling PE polls between its puts' Defers
		if !tr.Defer(1, h, b) {
			t.Fatalf("Defer refused frame %d while a PE polls", i)
		}
		if i == 0 {
			held = time.Now()
		}
		clear(b) // Defer copied it
	}
	first := uint32(0)
	select {
	case f := <-sinks[1].frames:
		// The progress goroutine posts what has been held for
		// pollGrace, which TCG's slowness can make this loop outlast.
		if d := time.Since(held); d < pollGrace {
			t.Fatalf("frame %d came %v after it was held, before anything released it", f.h.Seq, d)
		}
		if f.h.Seq != 0 {
			t.Fatalf("got frame %d first, want frame 0", f.h.Seq)
		}
		first = 1
	case <-time.After(100 * time.Microsecond):
	}
	h, b := frame(3, 100)
	if err := tr.Send(1, h, b); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	expect([]uint32{0, 1, 2, 3}[first:]...)
	// The progress goroutine posts what has been held for pollGrace:
	// only a sequence quicker than that must be one message.
	if n := tr.stats.sends.Load() - sends; n != 1 && took < pollGrace {
		t.Errorf("4 frames took %d messages in %v, want 1", n, took)
	}
	tr.Poll()
	if h, b := frame(4, 1); !tr.Defer(1, h, b) {
		t.Fatal("Defer refused")
	}
	tr.Kick()
	expect(4)
	tr.Poll()
	if h, b := frame(5, 1); !tr.Defer(1, h, b) {
		t.Fatal("Defer refused")
	}
	if err := tr.Flush(1); err != nil {
		t.Fatal(err)
	}
	expect(5)
	tr.Poll()
	if h, b := frame(6, 1); !tr.Defer(1, h, b) {
		t.Fatal("Defer refused")
	}
	done := make(chan struct{})
	go func() { // a PE that keeps polling, and never kicks
		for {
			select {
			case <-done:
				return
			default:
				tr.Poll()
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	expect(6)
	close(done)
}
