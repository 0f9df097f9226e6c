package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/leaderq"
	"github.com/goshmem/goshmem/internode"
)

// TestTalking checks when a polling wait counts its process as talking
// to other hosts (and reads the sockets at every yield and every 8
// spins): at once after a frame sent or delivered, for about netActive
// after the last, not after that, and again at the next frame.
func TestTalking(t *testing.T) {
	var x xhost
	x.netEvent()
	if !x.talking() {
		t.Fatal("a frame just now: talking() = false")
	}
	start := time.Now()
	if !x.talking() {
		t.Fatal("no frame since the last look, well within netActive: talking() = false")
	}
	for x.talking() {
		if time.Since(start) > 100*netActive {
			t.Fatalf("no frame for %v: talking() still true", time.Since(start))
		}
	}
	if d := time.Since(start); d < netActive {
		t.Errorf("talking() turned false %v after the last frame, before netActive (%v)", d, netActive)
	}
	if x.talking() {
		t.Error("quiet: talking() = true at the next look")
	}
	x.netEvent()
	if !x.talking() {
		t.Error("a new frame after a quiet period: talking() = false")
	}
}

// recorder is a transport that records what drain hands it.
type recorder struct {
	calls []string // "send h", "batch h n", "flush h", in order
	got   map[int][]internode.Header
}

func (r *recorder) Send(peer int, h *internode.Header, payload []byte) error {
	r.calls = append(r.calls, fmt.Sprintf("send %d", peer))
	r.got[peer] = append(r.got[peer], *h)
	return nil
}

func (r *recorder) SendBatch(peer int, frames []internode.Frame) error {
	r.calls = append(r.calls, fmt.Sprintf("batch %d %d", peer, len(frames)))
	for _, f := range frames {
		if len(f.Payload) != int(f.Header.Len) {
			return fmt.Errorf("frame of %d bytes with a header saying %d", len(f.Payload), f.Header.Len)
		}
		r.got[peer] = append(r.got[peer], f.Header)
	}
	return nil
}

func (r *recorder) Reply(peer int, h *internode.Header, payload []byte) error {
	return r.Send(peer, h, payload)
}

func (r *recorder) Flush(peer int) error {
	r.calls = append(r.calls, fmt.Sprintf("flush %d", peer))
	return nil
}

func (r *recorder) Abort(string) {}
func (r *recorder) Close() error { return nil }

// TestDrainBatches: the messages that a leader finds in its host's
// queue go to each host in one SendBatch, in the order they were queued,
// and each host written to is flushed once, after the batches (the
// leader writes many queued operations at once: one write where the
// connection is idle).
func TestDrainBatches(t *testing.T) {
	region := make([]byte, leaderq.Size(64, 256))
	q, err := leaderq.Init(region, 64, 256)
	if err != nil {
		t.Fatal(err)
	}
	// PEs 0-1 on host 0 (this one), 2 on host 1, 3-4 on host 2.
	x := &xhost{q: q, hostOf: []int32{0, 0, 1, 2, 2}, host: 0}
	rec := &recorder{got: map[int][]internode.Header{}}
	x.tr = rec
	x.batch = make([][]internode.Frame, 3)
	var want [3][]uint64
	for i := range 20 {
		pe := []int{2, 3, 4, 2, 3}[i%5]
		h := internode.Header{Op: xPut, PE: uint32(pe), Off: uint64(i * 8), Len: uint32(i % 9)}
		msg := make([]byte, internode.HeaderSize+i%9)
		h.Encode(msg)
		if !q.TryPush(msg) {
			t.Fatalf("push %d refused", i)
		}
		host := x.hostOf[pe]
		want[host] = append(want[host], h.Off)
	}
	touched := make([]bool, 3)
	x.drain(make([]byte, 64*256), touched)
	if got, w := strings.Join(rec.calls, ", "), "batch 1 8, batch 2 12, flush 1, flush 2"; got != w {
		t.Errorf("drain called %q, want %q", got, w)
	}
	for host := 1; host <= 2; host++ {
		var offs []uint64
		for _, h := range rec.got[host] {
			offs = append(offs, h.Off)
		}
		if !slices.Equal(offs, want[host]) {
			t.Errorf("host %d got the frames at offsets %v, want %v (queue order)", host, offs, want[host])
		}
	}
	if slices.Contains(touched, true) {
		t.Errorf("touched %v after drain, want all false", touched)
	}
}

// TestCtlWordIn: an xCtl frame's offset must name an aligned word inside
// the control block, also for offsets near 2^64, where off+4 wraps.
func TestCtlWordIn(t *testing.T) {
	const size = 0x2c0
	for _, c := range []struct {
		off  uint64
		want bool
	}{
		{0, true}, {4, true}, {size - 4, true},
		{size, false}, {size - 2, false}, {2, false},
		{1<<64 - 4, false}, {1<<64 - 8, false}, {1 << 63, false},
	} {
		if got := ctlWordIn(c.off, size); got != c.want {
			t.Errorf("ctlWordIn(%#x, %#x) = %v, want %v", c.off, size, got, c.want)
		}
	}
	if ctlWordIn(0, 2) {
		t.Errorf("ctlWordIn(0, 2) = true for a block smaller than a word")
	}
}
