// Package wait implements how goshmem waits on words in shared memory:
// spin, then yield, then sleep on a futex, in the shape of the Go
// runtime's lock_futex.go and sync.Mutex (a short optimistic phase
// inline in the caller, the rest outlined here).
//
// # The doorbell contract
//
// Each PE owns a Doorbell in the job's control block. A PE waits only
// for memory that others write into *its* heap or *its* control slot,
// so it sleeps only on its own doorbell:
//
//	waiter                               writer (any PE, any process)
//	------                               ----------------------------
//	Sleepers.Add(1)          (full fence) store the data
//	seq := Seq.Load()                     if Sleepers.Load() != 0 {
//	if condition holds: Sleepers.Add(-1)      Seq.Add(1); futex_wake(&Seq)
//	    and return                        }
//	futex_wait(&Seq, seq, timeout)
//	Sleepers.Add(-1)
//
// When the writer's store is an atomic (AMOs, signals, barrier flags:
// XCHG or LOCK-prefixed on amd64) the pair is a Dekker handshake and no
// wake-up is lost: either the waiter's re-check sees the data, or the
// writer's load sees Sleepers != 0 and bumps Seq before the waiter's
// futex_wait compares it. Plain stores (put) can still sit in the
// writer's store buffer while its load of Sleepers runs ahead; the
// waiter therefore spins briefly after registering before it sleeps,
// and every sleep has a timeout, so such a wake-up is at worst late,
// never lost. The timeout is also when the waiter checks that the job
// is alive (see node).
//
// Writers pay one load of a line that is only written when its owner
// goes to sleep, and a predictable branch; the wake is outlined.
package wait

import (
	"runtime"
	"time"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
)

// Policy bounds the phases of a wait.
type Policy struct {
	Spin     int           // polls with a CPU pause before yielding
	Yield    int           // polls with a yield before sleeping
	MaxSleep time.Duration // longest sleep: bounds how late a wake-up lost to a plain store can be
	// MinSleep is the first sleep (0: 50 us); sleeps double from it up
	// to MaxSleep. A wait that is expected to be long starts long: each
	// sleep that ends costs more than the futex call (the Go runtime's
	// sysmon thread polls every 20 us for about a millisecond after a
	// thread returns from a blocking system call).
	MinSleep time.Duration
}

// Auto returns the policy for npes PEs sharing ncpus CPUs: when PEs do
// not outnumber CPUs, spinning is the fastest way to see a peer's store;
// when they do, a spinning PE steals the CPU of the peer it waits for,
// so it yields and sleeps almost at once.
func Auto(npes, ncpus int) Policy {
	if npes <= ncpus {
		return Policy{Spin: 32000, Yield: 200, MaxSleep: 10 * time.Millisecond}
	}
	return Policy{Spin: 160, Yield: 4, MaxSleep: 10 * time.Millisecond}
}

// Ring wakes the owner of d if it sleeps. It is the writers' half of the
// contract and inlines into every RMA and AMO.
func Ring(d *job.Doorbell) {
	if d.Sleepers.Load() != 0 {
		wake(d)
	}
}

//go:noinline
func wake(d *job.Doorbell) {
	d.Seq.Add(1)
	sys.FutexWake(mem.U32(&d.Seq), 1<<30)
}

// WakeAll bumps and wakes d unconditionally (job abort).
func WakeAll(d *job.Doorbell) { wake(d) }

// Phase is where a Backoff is.
type Phase int

const (
	Spinning Phase = iota
	Yielding
	Sleeping
)

// Backoff is the state of one wait. The zero value is not ready; use
// Start. It lives on the waiter's stack.
type Backoff struct {
	p      *Policy
	n      int
	sleeps int
}

// Start begins a wait under policy p.
func Start(p *Policy) Backoff { return Backoff{p: p} }

// Pause waits a little, escalating from spinning to yielding. It
// returns Sleeping when the caller should sleep on its doorbell (with
// Sleep), after which the next Pause starts over at yielding.
func (b *Backoff) Pause() Phase {
	b.n++
	switch {
	case b.n <= b.p.Spin:
		// One pause per poll: a pause costs some 20 ns here (up to 140
		// cycles on recent Intel cores), and every extra one delays
		// noticing a store that has already arrived.
		Relax()
		return Spinning
	case b.n <= b.p.Spin+b.p.Yield:
		if b.n&1 == 0 {
			runtime.Gosched()
		} else {
			sys.SchedYield()
		}
		return Yielding
	}
	b.n = b.p.Spin // next round: yield a little again, then sleep
	return Sleeping
}

// Sleep is the waiter's half of the contract. cond reports whether the
// wait is over; Sleep registers on d, re-checks cond for a short while
// (see the package comment), and sleeps until woken or until the
// policy's MaxSleep elapses. It reports cond's last value.
func (b *Backoff) Sleep(d *job.Doorbell, cond func() bool) bool {
	d.Sleepers.Add(1)
	seq := d.Seq.Load()
	for range 64 {
		if cond() {
			d.Sleepers.Add(^uint32(0))
			return true
		}
		Relax()
	}
	// Sleep briefly at first: a wake-up lost to a store still in a
	// writer's store buffer costs little, and a long wait still ends up
	// in MaxSleep sleeps.
	first := b.p.MinSleep
	if first <= 0 {
		first = 50 * time.Microsecond
	}
	d2 := first << min(b.sleeps, 20)
	b.sleeps++
	sys.FutexWait(mem.U32(&d.Seq), seq, min(d2, b.p.MaxSleep))
	d.Sleepers.Add(^uint32(0))
	return cond()
}

// Sleeps returns how many times this wait slept.
func (b *Backoff) Sleeps() int { return b.sleeps }
