//go:build verbs && cgo && linux

package verbs

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestRCPingPong times this package's own posts and reaps the way
// perftest's ib_write_lat times the device: two queue pairs of one
// process, two threads, an 8-byte RDMA WRITE each way, each side
// polling its memory for the other's counter and reaping its send's
// completion. The one-way time it logs, against ib_write_lat's on the
// same device (guest.sh's lat step), separates what Go and cgo cost
// per message from what goshmem's transport adds above them. It fails
// if a counter arrives wrong or the ping-pong stalls.
func TestRCPingPong(t *testing.T) {
	d := openOrSkip(t)
	var qs [2]*RC
	var cqs [2]*CQ
	var mrs [2]*MR
	bufs := [2][]byte{mapped(t, 4096), mapped(t, 4096)}
	for i := range qs {
		cq, err := d.NewCQ(64)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cq.Close() })
		q, err := d.NewRC(cq, cq, 32)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		m, err := d.Register(bufs[i], LocalWrite|RemoteWrite|RemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		qs[i], cqs[i], mrs[i] = q, cq, m
	}
	for i := range qs {
		if err := qs[i].Connect(qs[1-i].Endpoint()); err != nil {
			t.Fatal(err)
		}
	}
	const (
		rounds = 2000
		out    = 0  // this side's outgoing counter (the WRITE's source)
		in     = 64 // where the other side's counter lands
	)
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs 2 threads running at once")
	}
	word := func(b []byte, off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&b[off])) }
	var wg sync.WaitGroup
	errs := make([]string, 2)
	var elapsed time.Duration
	side := func(me int) {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var wc [16]Completion
		other := 1 - me
		deadline := time.Now().Add(60 * time.Second)
		send := func(v uint64) bool {
			binary.LittleEndian.PutUint64(bufs[me][out:], v)
			if err := qs[me].PostWrite(v, mrs[me], bufs[me][out:out+8], uint64(mrs[other].Addr)+in, mrs[other].RKey); err != nil {
				errs[me] = err.Error()
				return false
			}
			for {
				n, err := cqs[me].Poll(wc[:])
				if err != nil || n > 0 && wc[0].Status != 0 {
					errs[me] = "send completion failed"
					return false
				}
				if n > 0 {
					return true
				}
			}
		}
		recv := func(v uint64) bool {
			for n := 0; ; n++ {
				switch got := word(bufs[me], in).Load(); {
				case got == v:
					return true
				case got > v:
					errs[me] = "counter ran ahead"
					return false
				}
				if n&1023 == 0 && time.Now().After(deadline) {
					errs[me] = "stalled"
					return false
				}
			}
		}
		start := time.Now()
		for v := uint64(1); v <= rounds; v++ {
			if me == 0 && !send(v) || !recv(v) || me == 1 && !send(v) {
				return
			}
		}
		if me == 0 {
			elapsed = time.Since(start)
		}
	}
	wg.Add(2)
	go side(1)
	go side(0)
	wg.Wait()
	for i, e := range errs {
		if e != "" {
			t.Fatalf("side %d: %s", i, e)
		}
	}
	t.Logf("RC ping-pong, 8-byte RDMA WRITE each way, polled in memory: %.2f us one way (%d round trips)",
		float64(elapsed.Nanoseconds())/1e3/(2*rounds), rounds)
}
