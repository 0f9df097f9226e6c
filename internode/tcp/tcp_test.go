package tcp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internode"
)

// sink records what a leader receives: per sender, the frames in order.
type sink struct {
	mu     sync.Mutex
	frames map[int][]got
	failed chan string
}

type got struct {
	h   internode.Header
	buf []byte
}

func newSink() *sink { return &sink{frames: map[int][]got{}, failed: make(chan string, 16)} }

func (s *sink) Buffer(from int, h *internode.Header) []byte { return make([]byte, h.Len) }
func (s *sink) Deliver(from int, h *internode.Header, buf []byte) {
	s.mu.Lock()
	s.frames[from] = append(s.frames[from], got{*h, buf})
	s.mu.Unlock()
}
func (s *sink) Failed(peer int, err error) { s.failed <- fmt.Sprintf("leader %d: %v", peer, err) }

func (s *sink) count(from int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frames[from])
}

// start makes n transports on loopback that know each other.
func start(t *testing.T, n int, job func(i int) string) ([]*Transport, []*sink) {
	t.Helper()
	ts := make([]*Transport, n)
	ss := make([]*sink, n)
	addrs := make([]string, n)
	for i := range n {
		ss[i] = newSink()
		tr, addr, err := internode.Listen([]internode.Backend{Backend}, "tcp", internode.Config{Index: i, Leaders: n, JobID: job(i), Sink: ss[i], Iface: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		ts[i], addrs[i] = tr.(*Transport), addr
	}
	for _, tr := range ts {
		if err := tr.Start(addrs); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, tr := range ts {
			tr.Close()
		}
	})
	return ts, ss
}

func payload(from, to, k, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(from*1000+to), uint64(k)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFramesInOrder: three leaders send each other random frames (no
// payload up to 8 MiB), concurrently; every receiver gets every
// sender's frames in order, headers and payloads intact.
func TestFramesInOrder(t *testing.T) {
	const n, per = 3, 60
	ts, ss := start(t, n, func(int) string { return "job" })
	sizes := func(from, to, k int) int {
		r := rand.New(rand.NewPCG(uint64(from), uint64(to*100+k)))
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return r.IntN(64)
		case 2:
			return r.IntN(64 << 10)
		}
		return r.IntN(8 << 20)
	}
	var wg sync.WaitGroup
	for from := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range per {
				for to := range n {
					if to == from {
						continue
					}
					p := payload(from, to, k, sizes(from, to, k))
					h := internode.Header{Op: uint8(k), PE: uint32(to), Off: uint64(k) << 40, Len: uint32(len(p)), Seq: uint32(k), Arg0: uint64(from), Arg1: ^uint64(k)}
					if err := ts[from].Send(to, &h, p); err != nil {
						t.Error(err)
						return
					}
				}
			}
			for to := range n {
				if to != from {
					if err := ts[from].Flush(to); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	for to := range n {
		for from := range n {
			if from == to {
				continue
			}
			waitFor(t, fmt.Sprintf("%d frames from %d at %d", per, from, to), func() bool { return ss[to].count(from) == per })
			for k, g := range ss[to].frames[from] {
				want := internode.Header{Op: uint8(k), PE: uint32(to), Off: uint64(k) << 40, Len: uint32(sizes(from, to, k)), Seq: uint32(k), Arg0: uint64(from), Arg1: ^uint64(k)}
				if g.h != want {
					t.Fatalf("frame %d from %d at %d: header %+v, want %+v", k, from, to, g.h, want)
				}
				if !bytes.Equal(g.buf, payload(from, to, k, sizes(from, to, k))) && len(g.buf)+sizes(from, to, k) > 0 {
					t.Fatalf("frame %d from %d at %d: payload differs (%d bytes)", k, from, to, len(g.buf))
				}
			}
		}
	}
	select {
	case f := <-ss[0].failed:
		t.Errorf("a failure during a clean exchange: %s", f)
	default:
	}
}

// TestBatching: frames sent while a write is in flight go out together
// in the next write. A 64 MiB frame keeps the connection busy; the small
// frames sent meanwhile need far fewer writes than frames. (A lone
// sender on an idle connection writes each frame at once, for latency.)
func TestBatching(t *testing.T) {
	ts, ss := start(t, 2, func(int) string { return "job" })
	var writes atomic.Int64
	ts[0].writes = func() { writes.Add(1) }
	big := make([]byte, 64<<20)
	done := make(chan error)
	go func() {
		h := internode.Header{Len: uint32(len(big))}
		done <- ts[0].Send(1, &h, big)
	}()
	p := ts[0].out[1]
	for busy := false; !busy; {
		p.mu.Lock()
		busy = p.writing
		p.mu.Unlock()
	}
	const frames = 10000
	for k := range frames {
		h := internode.Header{Seq: uint32(k), Len: 8}
		if err := ts[0].Send(1, &h, []byte("01234567")); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := ts[0].Flush(1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every frame", func() bool { return ss[1].count(0) == frames+1 })
	if w := writes.Load(); w > frames/10 {
		t.Errorf("%d frames sent during a write took %d writes: not batched", frames, w)
	} else {
		t.Logf("%d frames sent during a write, and the big one, in %d writes", frames, w)
	}
}

// TestPeerLost: when a leader closes, the others that talk to it learn
// it through Sink.Failed within a second, and sends to it then fail.
func TestPeerLost(t *testing.T) {
	ts, ss := start(t, 3, func(int) string { return "job" })
	for from := range 3 {
		for to := range 3 {
			if from != to {
				h := internode.Header{}
				ts[from].Send(to, &h, nil)
				ts[from].Flush(to)
			}
		}
	}
	waitFor(t, "the first frames", func() bool { return ss[0].count(2) == 1 && ss[1].count(2) == 1 })
	ts[2].Close()
	for _, i := range []int{0, 1} {
		select {
		case f := <-ss[i].failed:
			if !strings.Contains(f, "leader 2") {
				t.Errorf("leader %d: failure %q does not name leader 2", i, f)
			}
		case <-time.After(time.Second):
			t.Errorf("leader %d did not notice leader 2's end within 1 s", i)
		}
	}
}

// TestOtherJobRejected: a leader of another job (or another index
// layout) cannot deliver frames; the sender's transport fails with a
// message.
func TestOtherJobRejected(t *testing.T) {
	ts, ss := start(t, 2, func(i int) string { return fmt.Sprint("job", i) })
	h := internode.Header{}
	ts[0].Send(1, &h, nil)
	select {
	case f := <-ss[0].failed:
		if !strings.Contains(f, "leader 1") {
			t.Errorf("failure %q does not name the leader", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a connection to another job's leader did not fail")
	}
	if ss[1].count(0) != 0 {
		t.Error("a frame from another job was delivered")
	}
}

func TestListenUnknownBackend(t *testing.T) {
	_, _, err := internode.Listen([]internode.Backend{Backend}, "verbs", internode.Config{Leaders: 1, Sink: newSink()})
	if err == nil || !strings.Contains(err.Error(), "SHMEM_INTERNODE takes tcp") {
		t.Errorf("unknown backend: %v", err)
	}
}

func FuzzHeader(f *testing.F) {
	f.Add(make([]byte, internode.HeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < internode.HeaderSize {
			return
		}
		var h internode.Header
		h.Decode(b)
		out := make([]byte, internode.HeaderSize)
		h.Encode(out)
		if !bytes.Equal(out, b[:internode.HeaderSize]) {
			t.Fatalf("decode/encode changed the header: %x -> %x", b[:internode.HeaderSize], out)
		}
	})
}
