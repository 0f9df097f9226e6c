//go:build verbs && cgo && linux

package verbs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internode"
	"github.com/goshmem/goshmem/internode/internodetest"
)

// frame is one delivered frame.
type frame struct {
	from    int
	h       internode.Header
	payload []byte
}

// sink records what a leader receives; reply, when set, is called from
// Deliver (as the core answers a get).
type sink struct {
	frames chan frame
	failed chan error
	reply  func(from int, h *internode.Header, buf []byte)
}

func newSink() *sink {
	return &sink{frames: make(chan frame, 1<<16), failed: make(chan error, 16)}
}

func (s *sink) Buffer(from int, h *internode.Header) []byte { return make([]byte, h.Len) }

func (s *sink) Deliver(from int, h *internode.Header, buf []byte) {
	if s.reply != nil {
		s.reply(from, h, buf)
		return
	}
	s.frames <- frame{from, *h, buf}
}

func (s *sink) Failed(peer int, err error) { s.failed <- fmt.Errorf("leader %d: %w", peer, err) }

// openLeaders opens n transports connected to each other, or skips
// without a device.
func openLeaders(t *testing.T, n int, sinks []*sink) []*Transport {
	t.Helper()
	openOrSkip(t).Close() // skip without a device
	e := internodetest.NewExchange(n)
	trs := make([]*Transport, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := internode.Open([]internode.Backend{Backend()}, Name, internode.Config{
				Index: i, Leaders: n, JobID: "test", Exchange: e.View(i), Sink: sinks[i],
			})
			errs[i] = err
			if err == nil {
				trs[i] = tr.(*Transport)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("leader %d: %v", i, err)
		}
	}
	t.Cleanup(func() { closeAll(trs) })
	return trs
}

// closeAll closes the leaders' transports at once, as the leaders of a
// job do (Close waits for the peers' goodbyes); a second Close does
// nothing.
func closeAll(trs []*Transport) {
	var wg sync.WaitGroup
	for _, tr := range trs {
		wg.Add(1)
		go func() { defer wg.Done(); tr.Close() }()
	}
	wg.Wait()
}

// payloadOf is the content of frame seq of size n from leader from.
func payloadOf(from int, seq uint32, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(from), uint64(seq)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// sizes returns n frame sizes: mostly small, some across several
// message buffers, a few large.
func sizes(r *rand.Rand, n int) []int {
	s := make([]int, n)
	for i := range s {
		switch k := r.IntN(100); {
		case k < 60:
			s[i] = r.IntN(64)
		case k < 90:
			s[i] = r.IntN(3 * slotSize)
		case k < 99:
			s[i] = r.IntN(256 << 10)
		default:
			s[i] = 1<<20 + r.IntN(4096)
		}
	}
	s[0], s[1], s[2] = 0, firstChunk, firstChunk+moreChunk // the edges
	return s
}

// TestTransportFrames: two leaders send each other frames of random
// sizes at once (small ones, ones that span several message buffers,
// 1 MiB ones), many more than the credits; each arrives once, whole
// and in order.
func TestTransportFrames(t *testing.T) {
	sinks := []*sink{newSink(), newSink()}
	trs := openLeaders(t, 2, sinks)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 3000
	sz := [][]int{sizes(r, n), sizes(r, n)}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range n {
				p := payloadOf(i, uint32(seq), sz[i][seq])
				h := internode.Header{Op: 7, PE: uint32(i), Off: uint64(seq) * 3, Len: uint32(len(p)), Seq: uint32(seq), Arg0: ^uint64(seq)}
				if err := trs[i].Send(1-i, &h, p); err != nil {
					t.Errorf("leader %d: Send %d: %v", i, seq, err)
					return
				}
				if seq%100 == 99 {
					if err := trs[i].Flush(1 - i); err != nil {
						t.Errorf("leader %d: Flush: %v", i, err)
						return
					}
				}
			}
		}()
	}
	for i := range 2 {
		from := 1 - i
		for seq := range n {
			select {
			case f := <-sinks[i].frames:
				want := payloadOf(from, uint32(seq), sz[from][seq])
				if f.from != from || f.h.Seq != uint32(seq) || f.h.Op != 7 || f.h.Off != uint64(seq)*3 || f.h.Arg0 != ^uint64(seq) || int(f.h.Len) != len(want) {
					t.Fatalf("leader %d: frame %d: from %d header %+v, want from %d seq %d len %d", i, seq, f.from, f.h, from, seq, len(want))
				}
				if !bytes.Equal(f.payload, want) {
					t.Fatalf("leader %d: frame %d (%d bytes): payload differs", i, seq, len(want))
				}
			case err := <-sinks[i].failed:
				t.Fatalf("leader %d: %v", i, err)
			case <-time.After(20 * time.Second):
				t.Fatalf("leader %d: frame %d of %d did not come", i, seq, n)
			}
		}
	}
	wg.Wait()
}

// TestTransportOneWay: a leader that only receives returns its credits
// in credit messages: 20,000 frames one way, nothing back.
func TestTransportOneWay(t *testing.T) {
	sinks := []*sink{newSink(), newSink()}
	trs := openLeaders(t, 2, sinks)
	const n = 20000
	go func() {
		for seq := range n {
			h := internode.Header{Seq: uint32(seq), Len: 8}
			trs[0].Send(1, &h, payloadOf(0, uint32(seq), 8))
		}
	}()
	for seq := range n {
		select {
		case f := <-sinks[1].frames:
			if f.h.Seq != uint32(seq) {
				t.Fatalf("frame %d has seq %d", seq, f.h.Seq)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("frame %d of %d did not come", seq, n)
		}
	}
}

// TestTransportReply: a leader answers each request from inside
// Deliver with Reply (as the core answers a get); 2,000 round trips
// with up to 64 requests in flight.
func TestTransportReply(t *testing.T) {
	sinks := []*sink{newSink(), newSink()}
	trs := openLeaders(t, 2, sinks)
	sinks[1].reply = func(from int, h *internode.Header, buf []byte) {
		ans := payloadOf(1, h.Seq, int(h.Arg0))
		rh := internode.Header{Op: 2, Seq: h.Seq, Len: uint32(len(ans))}
		if err := trs[1].Reply(from, &rh, ans); err != nil {
			t.Errorf("Reply: %v", err)
		}
	}
	const n, window = 2000, 64
	got := 0
	for seq := range n + window {
		if seq < n {
			h := internode.Header{Op: 1, Seq: uint32(seq), Arg0: uint64(seq % 5000 * 7)}
			if err := trs[0].Send(1, &h, nil); err != nil {
				t.Fatal(err)
			}
		}
		if seq < window {
			continue
		}
		select {
		case f := <-sinks[0].frames:
			if f.h.Seq != uint32(got) || !bytes.Equal(f.payload, payloadOf(1, f.h.Seq, got%5000*7)) {
				t.Fatalf("answer %d: seq %d, %d bytes", got, f.h.Seq, len(f.payload))
			}
			got++
		case err := <-sinks[0].failed:
			t.Fatal(err)
		case <-time.After(20 * time.Second):
			t.Fatalf("answer %d did not come", got)
		}
	}
}

// TestTransportCloseIsClean: after frames both ways, both leaders
// close; neither is told the other failed.
func TestTransportCloseIsClean(t *testing.T) {
	sinks := []*sink{newSink(), newSink()}
	trs := openLeaders(t, 2, sinks)
	for i := range 2 {
		h := internode.Header{Len: 3}
		trs[i].Send(1-i, &h, []byte("abc"))
	}
	for i := range 2 {
		<-sinks[i].frames
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			trs[i].Close()
			if d := time.Since(start); d > closeWait/2 {
				t.Errorf("leader %d: Close took %v: it waited for a goodbye it had", i, d)
			}
		}()
	}
	wg.Wait()
	time.Sleep(2 * deadAfter) // past the probes and the silence bound
	for i := range 2 {
		select {
		case err := <-sinks[i].failed:
			t.Errorf("leader %d after a clean Close: %v", i, err)
		default:
		}
	}
	if err := trs[0].Send(1, &internode.Header{}, nil); err == nil {
		t.Error("Send after Close succeeded")
	}
}

// TestTransportAbort: the other leader's Sink gets the reason.
func TestTransportAbort(t *testing.T) {
	sinks := []*sink{newSink(), newSink()}
	trs := openLeaders(t, 2, sinks)
	trs[0].Abort("PE 3 called GlobalExit(2)")
	select {
	case err := <-sinks[1].failed:
		if !strings.Contains(err.Error(), "PE 3 called GlobalExit(2)") || !strings.Contains(err.Error(), "aborted") {
			t.Fatalf("Failed: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the abort did not reach the other leader within 2 s")
	}
}

// TestTransportDeadPeer: a leader that vanishes without a goodbye (its
// queue pairs destroyed, as when its process dies) is reported lost
// within 2 s, though nothing is sent to it: the idle probe finds it.
func TestTransportDeadPeer(t *testing.T) {
	sinks := []*sink{newSink(), newSink()}
	trs := openLeaders(t, 2, sinks)
	// Leader 1 dies: no goodbye.
	dead := trs[1]
	dead.ended.Do(func() { // as end, without the goodbyes (a later Close does nothing)
		dead.rx.Lock()
		dead.closing.Store(true)
		dead.rx.Unlock()
		close(dead.quit)
		dead.cq.StopWaits()
		<-dead.done
		dead.destroy()
	})
	start := time.Now()
	select {
	case err := <-sinks[0].failed:
		if !strings.Contains(err.Error(), "leader 1") {
			t.Fatalf("Failed: %v", err)
		}
		t.Logf("lost after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(2500 * time.Millisecond):
		t.Fatal("a dead peer was not noticed within 2.5 s")
	}
	if err := trs[0].Send(1, &internode.Header{}, nil); err == nil {
		t.Error("Send to a lost peer succeeded")
	}
}

// TestTransportThreeLeaders: each of three leaders sends to both
// others; frames from each peer stay in order.
func TestTransportThreeLeaders(t *testing.T) {
	sinks := []*sink{newSink(), newSink(), newSink()}
	trs := openLeaders(t, 3, sinks)
	const n = 500
	for i := range 3 {
		go func() {
			for seq := range n {
				for _, to := range []int{(i + 1) % 3, (i + 2) % 3} {
					p := payloadOf(i, uint32(seq), seq%40*100)
					trs[i].Send(to, &internode.Header{Seq: uint32(seq), PE: uint32(i), Len: uint32(len(p))}, p)
				}
			}
		}()
	}
	for i := range 3 {
		next := map[int]uint32{}
		for range 2 * n {
			select {
			case f := <-sinks[i].frames:
				if f.h.Seq != next[f.from] || int(f.h.PE) != f.from || !bytes.Equal(f.payload, payloadOf(f.from, f.h.Seq, int(f.h.Seq)%40*100)) {
					t.Fatalf("leader %d: from %d seq %d, want seq %d", i, f.from, f.h.Seq, next[f.from])
				}
				next[f.from]++
			case <-time.After(20 * time.Second):
				t.Fatalf("leader %d: frames stopped: %v", i, next)
			}
		}
	}
}

// TestTransportPingPongLatency logs the one-way latency of 8-byte
// frames between two leaders of one process, received by the caller's
// Poll (as a waiting leader does) and by the progress goroutine alone
// (for comparing with ib_write_lat on the same device; not a timed
// test).
func TestTransportPingPongLatency(t *testing.T) {
	sinks := []*sink{newSink(), newSink()}
	trs := openLeaders(t, 2, sinks)
	const n = 2000
	watchdog := time.AfterFunc(90*time.Second, func() { panic("TestTransportPingPongLatency: 2 x 2000 round trips did not end within 90 s") })
	defer watchdog.Stop()
	for _, poll := range []bool{true, false} {
		done := make(chan struct{})
		go func() { // leader 1 echoes
			defer close(done)
			for range n {
				var f frame
				for got := false; !got; {
					select {
					case f = <-sinks[1].frames:
						got = true
					default:
						if poll {
							trs[1].Poll()
						} else {
							f = <-sinks[1].frames
							got = true
						}
					}
				}
				trs[1].Send(0, &f.h, f.payload)
			}
		}()
		p := make([]byte, 8)
		start := time.Now()
		for i := range n {
			trs[0].Send(1, &internode.Header{Seq: uint32(i), Len: 8}, p)
			for got := false; !got; {
				select {
				case <-sinks[0].frames:
					got = true
				default:
					if poll {
						trs[0].Poll()
					} else {
						<-sinks[0].frames
						got = true
					}
				}
			}
		}
		<-done
		t.Logf("poll %v: one way %.2f us", poll, float64(time.Since(start).Microseconds())/2/n)
	}
}
