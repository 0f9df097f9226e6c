package main

// The relayed TCP ping-pong: the floor of a cross-host put between a PE
// and a host's non-leader PE, whose frames go through its leader. The
// echo side (tcp -listen) hands each message it reads to a second
// process through a word in shared memory and writes the answer that
// process stores in another word: on the echo side, as in a goshmem
// host of a leader and one more PE, one process reads and writes the
// socket and another waits for its data in shared memory and answers
// through it. Neither process is bound to a CPU (the scheduler places
// them, as it does a job's PEs), and both wait as goshmem's waits do
// when PEs share CPUs (internal/wait's Shared policy): a number of polls
// with a pause instruction each (relaySpins), then a sched_yield per
// poll. On a
// machine whose test hosts share its CPUs (the measuring side, the
// echo side and its second process: three busy processes on two CPUs
// here), the row says what the hand-offs between the two processes of
// one host cost on top of the network: what the non-leader target of
// bench/compare's cross-host mode is judged against.

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
)

// relaySpins are the spin counts the client tries (tcpHeader.Relay):
// wait.Shared's, and one a hundred times longer. The row "relay
// latency" is the better of them.
var relaySpins = []uint64{32, 3200}

// childRelay is the echo side's second process: for each new value the
// parent stores in x it stores the same value in y, until the parent
// stores stop. It waits with the spin count in aux (set by the parent
// before each block).
func childRelay(w words, alive func() error) error {
	var last uint64
	for {
		v, err := relayWait(w.x, last, w.aux.Load(), alive)
		if err != nil {
			return err
		}
		if v == stop {
			return nil
		}
		w.y.Store(v)
		last = v
	}
}

// relayWait waits until *x differs from old and returns its value:
// spins polls with a pause each, then a sched_yield per poll; every
// 65536 polls it checks that the other process lives.
func relayWait(x *atomic.Uint64, old, spins uint64, alive func() error) (uint64, error) {
	for n := uint64(1); ; n++ {
		if v := x.Load(); v != old {
			return v, nil
		}
		if n <= spins {
			wait.Relax()
			continue
		}
		sys.SchedYield()
		if n&(1<<16-1) == 0 {
			if err := alive(); err != nil {
				return 0, err
			}
		}
	}
}

// relay is the echo side's handle on its second process: started at
// the first relayed block of a connection, ended with the connection.
type relay struct {
	p   *pair
	seq uint64 // the last value handed over
}

// startRelay starts the second process, unbound.
func startRelay() (*relay, error) {
	p, err := startPair(roleRelay, spinPause, -1, -1)
	if err != nil {
		return nil, err
	}
	return &relay{p: p}, nil
}

// round hands the next value over and waits for the answer, spinning
// spins polls first (the second process spins as many: aux is set
// before the block).
func (r *relay) round(spins uint64) error {
	r.seq++
	r.p.w.x.Store(r.seq)
	_, err := relayWait(r.p.w.y, r.seq-1, spins, r.p.alive)
	return err
}

// close ends the second process.
func (r *relay) close() error { return r.p.finish(r.p.w.x) }
