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
//	seq := Seq.Load()                     store the data
//	Sleepers = (Sleepers+1)|FutexArmed    if Sleepers.Load() != 0 &&
//	                         (full fence)    clearing FutexArmed found it set {
//	if condition holds: Sleepers--            Seq.Add(1); futex_wake(&Seq)
//	    and return                        }
//	futex_wait(&Seq, seq, timeout)
//	Sleepers--  (the last one out clears FutexArmed)
//
// The waiter reads Seq before it registers. A writer clears FutexArmed
// whenever it finds it set, also when it rings for some earlier store
// than the one this waiter now waits for; if that happens after the
// waiter registered, its Seq.Add comes after the waiter's Seq load, so
// the futex_wait returns at once and the waiter registers (and arms)
// again. Were Seq read after registering, such a ring could fall
// between the two, and the waiter would sleep with FutexArmed clear:
// every later writer would skip its wake-up until the timeout.
//
// When the writer's store is an atomic (AMOs: LOCK-prefixed on amd64)
// the pair is a Dekker handshake and no wake-up is lost: either the
// waiter's re-check sees the data, or the writer's load sees Sleepers
// != 0 and bumps Seq before the waiter's futex_wait compares it.
//
// Plain stores (put's data, and the words published with
// Policy.Publish, such as a small broadcast's sequence word) can still sit
// in the writer's store buffer while its load of Sleepers runs ahead.
// An asymmetric fence closes that window (Policy.Fenced): every process
// of the job registered for membarrier(2) at start, and a waiter calls
// membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) after it registers and
// before its re-check. That makes every running thread of those
// processes execute a full barrier: a writer whose load of Sleepers ran
// after that barrier sees the registration and wakes the waiter; one
// whose load ran before it had its earlier store drained by the
// barrier, so the waiter's re-check sees the data. Writers then pay no
// fence at all (a plain MOV instead of an XCHG that waits for its line),
// and the waiter pays one system call (a few microseconds, with an IPI
// per CPU running a PE) on a path that is about to sleep anyway.
// Without membarrier (kernels before 4.16, a seccomp filter) Publish
// is an XCHG, and a plain-store put's wake-up can still be late: the
// waiter then polls briefly after registering, and every sleep has a
// timeout, so it is at worst late, never lost. The timeout is also
// when the waiter checks that the job is alive (see node).
//
// Writers pay one load of a line that is only written when its owner
// goes to sleep, and a predictable branch; the wake is outlined.
//
// # Control-only sleepers
//
// A doorbell is per PE, not per word: every write into a PE's heap
// rings it. A PE asleep in a barrier, whose flags only other barrier
// calls write, would be woken by every put another PE streams into its
// heap meanwhile, and each wake-up costs the writer a futex_wake (and
// its CPU the sleeper's membarrier when it goes back to sleep): about
// a tenth of a 1-8 MiB put stream's bandwidth here, a quarter when the
// sleeper sleeps at once. So a wait whose
// condition reads only control words (barrier flags, team words,
// mailboxes: words that only the runtime's own synchronization writes,
// always with Ring) says so (Backoff.ControlOnly), and every other
// sleeper counts itself in the doorbell's Data word, before it
// registers and until after it has unregistered. Data writers (puts,
// AMOs, signals into the heap) ring with RingData, which wakes only
// when Data is not 0:
//
//	data sleeper                          data writer (RingData)
//	------------                          ----------------------
//	Data++                                store the data
//	register in Sleepers (as above)       if Data != 0:
//	re-check, sleep                           wake (as above)
//	unregister; Data--
//
// A data writer loads Data, not Sleepers, so that a PE asleep in a
// barrier costs the PE streaming puts into it nothing but that load
// (an outlined call per put before). The contract above holds with
// Data in Sleepers' place: Data is raised with a full fence before the
// sleeper registers, and so before its membarrier and its re-check. A
// writer whose load of Data runs after that membarrier sees it raised
// and wakes (wake then reads Sleepers); one whose load ran before had
// its store drained by the membarrier, and the re-check sees the data;
// an atomic writer and the sleeper's Data++ are a Dekker pair. Data is
// lowered only after the sleeper has unregistered. A control-only
// sleeper's wake-ups come from Ring, which ignores Data.
//
// # Goroutine PEs
//
// When every PE of the job is a goroutine of one process (Mode
// Goroutines), a waiter yields to the Go scheduler and then parks on
// its PE's Notify, an in-process wake-up list, instead of putting an OS
// thread to sleep on the futex. Every writer is then in this process
// and reaches the Notify through the Bell it rings. A parked goroutine
// registers in the high half of Sleepers (ParkUnit), a futex sleeper in
// the low half, so that a ring wakes only the kind of sleeper there is:
// Ring stays one load when nobody sleeps, and pays no futex call when
// only goroutines are parked.
//
// A control-only wait of goroutine PEs parks without a timer (when the
// policy is not Fenced and names the job's failure record,
// Policy.Abort): its words are written with a full fence before the
// ring, so no wake-up can be lost, and a failure is read once the
// waiter is armed. It yields only Policy.ParkYield times first: each
// runtime.Gosched takes the scheduler's global run-queue lock, and a
// park costs about a goroutine switch. Waits for data keep their timed
// sleeps, which bound a wake-up lost to a plain store.
package wait

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
)

// Mode is how a wait yields and sleeps: it depends on whether the PEs
// are processes, goroutines of one process, or both.
type Mode uint8

const (
	// Mixed: several PEs per process and several processes. Yielding
	// alternates runtime.Gosched (the PE goroutines of this process)
	// and sched_yield (other processes); sleeping is a futex wait.
	Mixed Mode = iota
	// Processes: one PE per process. Yielding is sched_yield (a
	// Gosched does not give the OS thread to another process);
	// sleeping is a futex wait.
	Processes
	// Goroutines: every PE of the job is a goroutine of this process.
	// Yielding is runtime.Gosched and sleeping parks the goroutine on
	// its PE's Notify: no OS thread ever sleeps in a wait.
	Goroutines
)

func (m Mode) String() string {
	switch m {
	case Mixed:
		return "mixed"
	case Processes:
		return "processes"
	case Goroutines:
		return "goroutines"
	}
	return "Mode(?)"
}

// Policy bounds the phases of a wait.
type Policy struct {
	Spin  int // polls with a CPU pause before yielding
	Yield int // polls with a yield before sleeping
	// ParkYield, when not negative, replaces Yield in a wait that
	// parks without a timer (a control-only wait of mode Goroutines,
	// not Fenced, with Abort set: see Sleep), which costs about
	// a goroutine switch, while every runtime.Gosched takes the
	// scheduler's global run queue lock. Auto sets it when goroutine
	// PEs outnumber their Ps; negative: Yield.
	ParkYield int
	// Abort, when set, is the job's failure record: not 0 once the job
	// has failed, set before the failure's WakeAll. A timer-free park
	// (see Sleep) checks it once armed, so that a failure recorded
	// after the waiter's own last look at it, but before Sleep read
	// Seq, still ends the wait. Without it every park has a timer.
	Abort    *atomic.Uint32
	MaxSleep time.Duration // longest sleep: bounds how late a wake-up lost to a plain store can be
	// MinSleep is the first sleep (0: 50 us); sleeps double from it up
	// to MaxSleep. A wait that is expected to be long starts long: each
	// sleep that ends costs more than the futex call (the Go runtime's
	// sysmon thread polls every 20 us for about a millisecond after a
	// thread returns from a blocking system call).
	MinSleep time.Duration
	Mode     Mode // how to yield and sleep
	// Fenced: sleepers fence with membarrier after registering (see
	// the package comment), so writers publish with plain stores. Set
	// by SetFenced.
	Fenced bool
}

// fencedGoSpin is the shortest spin of a goroutine PE's policy that
// fences: goroutine PEs that outnumber their threads park at almost
// every hand-over (Spin 1), where a system call per park would cost
// more than the fence saves; PEs that fit spin long and rarely park.
const fencedGoSpin = 1000

// SetFenced sets p.Fenced when membarrier is available (registered
// reports that this process registered for it) and p's waiters rarely
// sleep in mode Goroutines (they spin at least fencedGoSpin polls).
// Call it after the policy's phases are final.
func (p *Policy) SetFenced(registered bool) {
	p.Fenced = registered && (p.Mode != Goroutines || p.Spin >= fencedGoSpin)
}

// Publish stores v into w, a word that a PE may wait for, ordered after
// every earlier store: with a plain store under a fenced policy, else
// with an atomic store (XCHG), whose full fence the doorbell contract
// then relies on. A Ring of the waiter's doorbell follows.
func (p *Policy) Publish(w *atomic.Uint32, v uint32) {
	if p.Fenced {
		mem.StoreRelease(w, v)
		return
	}
	w.Store(v)
}

// The phases of the policies Auto returns. When PEs fit their CPUs a
// waiter spins long (tens of microseconds to a millisecond: a peer's
// store is seen within a cache-line hand-off). When they do not, the PE
// waited for may need this waiter's CPU, so the waiter hands it over
// almost at once:
//   - processes yield with sched_yield for some thousands of yields
//     (about a millisecond or more) before the first futex sleep: a
//     yield costs under a microsecond when nothing else is runnable on
//     the CPU and is a hand-over when something is, while a sleep costs
//     the writer a wake-up system call and the sleeper several
//     microseconds;
//   - goroutines yield with runtime.Gosched a few dozen times and then
//     park in the process: waking a parked goroutine is a goroutine
//     switch, and a long Gosched loop only contends for the scheduler's
//     global run queue.
//
// The oversubscribed spins are short also because a PAUSE loop is what
// a hypervisor's pause-loop exiting takes a vCPU away for. Processes
// poll once before their first yield: with the central barrier, 16
// polls (what this was) cost a quarter more at 8 processes on 2 vCPUs
// (median of 10 adjacent pairs 0.76 for 1 poll against 16) and the same
// at 4; the more PEs share a CPU, the likelier the PE waited for is
// one of them.
const (
	fitSpin        = 32000
	fitYield       = 200
	oversubSpin    = 1    // processes: yield at once (see below)
	oversubGoSpin  = 1    // goroutines: a switch to the PE waited for costs less than spinning
	oversubYield   = 4000 // processes: sched_yields before the first sleep
	oversubGoYield = 32   // goroutines: Gosched calls before the first park
	// oversubGoParkYield: Gosched calls before a timer-free park
	// (Policy.ParkYield). 8 goroutine PEs' barrier on 2 Ps (oshrun -n 8
	// --pes-per-proc 8 bench/barrier): 1 beat 0, 2 and 4 in alternated
	// runs.
	oversubGoParkYield = 1
	sharedSpin         = 32 // PEs fit, helpers share the CPUs: about a microsecond, then yield (see Shared)
	defaultMaxSleep    = 10 * time.Millisecond
	resumeYieldLimit   = 200 // yields between sleeps, at most
	// spinGosched: a spinning waiter lets the other goroutines of its
	// process run once every this many polls (runtime.Gosched, some
	// 100-200 ns when there is none): a program's own goroutines (a
	// THREAD_MULTIPLE PE's workers) may be what it waits for, and
	// neither sched_yield nor a futex sleep hands them the P. A spin
	// without it held them off for the whole spin (about 1 ms a hand-off
	// between 3 goroutines of a PE on 1-2 CPUs). The first one comes
	// after some microseconds, when a quick wait is over.
	spinGosched = 64
)

// Auto returns the policy for npes PEs sharing ncpus CPUs, waiting in
// mode m: when PEs do not outnumber CPUs, spinning is the fastest way to
// see a peer's store; when they do, a spinning PE steals the CPU of the
// peer it waits for, so it yields almost at once (sched_yield for
// processes, runtime.Gosched for goroutines), and sleeps only after a
// long idle period (goroutines park soon: that is cheap in-process).
func Auto(npes, ncpus int, m Mode) Policy {
	if npes <= ncpus {
		return Policy{Spin: fitSpin, Yield: fitYield, ParkYield: -1, MaxSleep: defaultMaxSleep, Mode: m}
	}
	if m == Goroutines {
		return Policy{Spin: oversubGoSpin, Yield: oversubGoYield, ParkYield: oversubGoParkYield, MaxSleep: defaultMaxSleep, Mode: m}
	}
	return Policy{Spin: oversubSpin, Yield: oversubYield, ParkYield: -1, MaxSleep: defaultMaxSleep, Mode: m}
}

// Shared returns the policy for PEs that fit their CPUs only while
// helper threads that wake on I/O (the leaders' transports of a job
// across hosts) sleep: a waiter spins about a microsecond, long enough
// for a host-mate's answer (a hand-off is well under a microsecond),
// then yields as when oversubscribed, so that a woken helper gets a CPU
// at the next yield instead of at the scheduler's next tick. A yield
// with nothing else runnable costs a system call (under a
// microsecond), so waits between PEs of the host stay near the spin
// policy's. Measured on 2 vCPUs (2 runs each, 8 B): with 32 polls an
// on-host put ping-pong took 0.072-0.075 us (spin policy 0.068-0.082,
// 1 poll 0.30-0.33), a ping-pong between two one-PE hosts 24-26 us
// (1 poll 22-26, 256 polls 30: the woken leader waits for the spin).
func Shared(m Mode) Policy {
	p := Auto(2, 1, m)
	p.Spin = sharedSpin
	return p
}

// Notify is the in-process wake-up list of one PE's doorbell, on which
// the PE's goroutines park in mode Goroutines. The zero value is ready.
// It must not be copied after first use.
//
// A park with a timeout (a wait for data, whose writers store plainly
// and may miss the registration: see the package comment) waits on a
// channel that the next wake closes, with a timer. A park without one
// (a control-only wait: see Sleep) waits on cond, which allocates
// nothing. In a stand-alone model of the central barrier (8 goroutines
// on 2 Ps, parking at once) a timer per park took a barrier from
// 1.8-2.4 us to 6.3 us.
type Notify struct {
	// armed is set when a goroutine takes the channel to park on and
	// cleared by the wake that closes it: between a wake and the woken
	// goroutine's leaving the doorbell, writers that still see it
	// registered pay one load here, not the lock.
	armed atomic.Bool
	mu    sync.Mutex
	ch    chan struct{} // closed by the next wake; nil: nobody parked since the last one
	cond  sync.Cond     // untimed parks; L is &mu, set by the first park
}

// channel returns the channel the next wake closes.
func (n *Notify) channel() <-chan struct{} {
	n.mu.Lock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	c := n.ch
	n.armed.Store(true)
	n.mu.Unlock()
	return c
}

// park parks the calling goroutine until the next wake, unless done
// reports true once armed (it is then not parked); it reports done's
// value. A wake whose load of armed comes after done's check takes the
// lock, which the waiter holds from arming until cond.Wait has added
// it to the list, so its Broadcast reaches the waiter.
func (n *Notify) park(done func() bool) bool {
	n.mu.Lock()
	n.cond.L = &n.mu
	n.armed.Store(true)
	if done() {
		n.mu.Unlock()
		return true
	}
	n.cond.Wait()
	n.mu.Unlock()
	return false
}

// wake wakes every goroutine parked on n.
func (n *Notify) wake() {
	if !n.armed.Load() || !n.armed.Swap(false) {
		return
	}
	n.mu.Lock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	n.cond.Broadcast()
	n.mu.Unlock()
}

// Bell is how this process rings one PE's doorbell: the doorbell in the
// control block, and the PE's Notify when the PE's goroutines park in
// this process (nil otherwise).
type Bell struct {
	Door  *job.Doorbell
	Local *Notify
}

// ParkUnit is what a goroutine parked on its PE's Notify adds to the
// doorbell's Sleepers; a futex sleeper adds 1 and sets FutexArmed. Up
// to 32767 threads of one PE may sleep on the futex at once.
const ParkUnit = 1 << 16

// FutexArmed is set in a doorbell's Sleepers by every thread that
// registers to sleep on the futex, and cleared by the writer that wakes
// them: a writer that finds it clear while futex sleepers are still
// counted knows they were woken after they registered (they are on
// their way out), and pays no second futex_wake. The last sleeper to
// leave clears it too.
const FutexArmed = 1 << 15

// Ring wakes the owner of b if it sleeps. It is the writers' half of the
// contract and inlines into every RMA and AMO: one load when nobody
// sleeps.
func Ring(b Bell) {
	if b.Door.Sleepers.Load() != 0 {
		wake(b)
	}
}

// RingData is Ring for a write of data into the owner's heap (a put, an
// AMO, a signal): it wakes only sleepers that wait for data, not those
// whose condition reads only control words (Backoff.ControlOnly). One
// load when no data sleeper sleeps, also while the owner sleeps in a
// barrier: it loads Data, not Sleepers. That is as safe as Ring's load
// of Sleepers, because a data sleeper raises Data before it registers
// (and before its membarrier and re-check) and lowers it only after it
// has unregistered ("Control-only sleepers"); wake then looks at
// Sleepers.
func RingData(b Bell) {
	if b.Door.Data.Load() != 0 {
		wake(b)
	}
}

//go:noinline
func wake(b Bell) {
	s := b.Door.Sleepers.Load()
	if s&FutexArmed != 0 && b.Door.Sleepers.And(^uint32(FutexArmed))&FutexArmed != 0 {
		b.Door.Seq.Add(1)
		sys.FutexWake(mem.U32(&b.Door.Seq), 1<<30)
	}
	if s >= ParkUnit && b.Local != nil {
		b.Local.wake()
	}
}

// WakeAll bumps and wakes b unconditionally, futex sleepers and parked
// goroutines (job abort).
func WakeAll(b Bell) {
	b.Door.Sleepers.And(^uint32(FutexArmed))
	b.Door.Seq.Add(1)
	sys.FutexWake(mem.U32(&b.Door.Seq), 1<<30)
	if b.Local != nil {
		b.Local.wake()
	}
}

// register counts a sleeper of the given kind on d: a parked goroutine
// (ParkUnit), or a futex sleeper (1, and FutexArmed).
func register(d *job.Doorbell, park bool) {
	if park {
		d.Sleepers.Add(ParkUnit)
		return
	}
	for {
		s := d.Sleepers.Load()
		if d.Sleepers.CompareAndSwap(s, (s+1)|FutexArmed) {
			return
		}
	}
}

// unregister undoes register; the last sleeper to leave clears
// FutexArmed, so that Ring is one load again.
func unregister(d *job.Doorbell, park bool) {
	if park {
		d.Sleepers.Add(^uint32(ParkUnit - 1))
		return
	}
	if d.Sleepers.Add(^uint32(0)) == FutexArmed {
		d.Sleepers.CompareAndSwap(FutexArmed, 0)
	}
}

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
	yield  int // the policy's Yield, or its ParkYield (ControlOnly)
	sleeps int
	// ctl: the condition reads only control words (ControlOnly), so
	// Sleep does not count this waiter in the doorbell's Data.
	ctl bool

	registered func() // test hook: called by Sleep right after it registers
}

// Start begins a wait under policy p.
func Start(p *Policy) Backoff { return Backoff{p: p, yield: p.Yield} }

// ControlOnly marks the wait as one whose condition reads only control
// words, which writers set with Ring: data writers (RingData) then do
// not wake it (see the package comment). A wait whose condition reads
// anything a put or an AMO can write must not be marked.
func (b *Backoff) ControlOnly() {
	b.ctl = true
	if b.parksUntimed() && b.p.ParkYield >= 0 {
		b.yield = b.p.ParkYield
	}
}

// parksUntimed reports whether Sleep parks without a timer: a
// control-only wait of a goroutine PE, under a policy that is not
// Fenced (so its writers store with a full fence) and names the job's
// failure record (see Sleep).
func (b *Backoff) parksUntimed() bool {
	return b.ctl && b.p.Mode == Goroutines && !b.p.Fenced && b.p.Abort != nil
}

// Pause waits a little, escalating from spinning to yielding. It
// returns Sleeping when the caller should sleep on its doorbell (with
// Sleep), after which the next Pause yields again (at most
// resumeYieldLimit times) before the next sleep, unless that sleep
// lasted its whole time without a ring: then the next Pause returns
// Sleeping at once.
func (b *Backoff) Pause() Phase {
	b.n++
	switch {
	case b.n <= b.p.Spin:
		// One pause per poll: a pause costs some 20 ns here (up to 140
		// cycles on recent Intel cores), and every extra one delays
		// noticing a store that has already arrived.
		Relax()
		if b.n%spinGosched == 0 {
			b.spinYield()
		}
		return Spinning
	case b.n <= b.p.Spin+b.yield:
		switch b.p.Mode {
		case Processes:
			sys.SchedYield()
		case Goroutines:
			runtime.Gosched()
		default:
			if b.n&1 == 0 {
				runtime.Gosched()
			} else {
				sys.SchedYield()
			}
		}
		return Yielding
	}
	// Next round: yield a little again, then sleep.
	b.n = b.p.Spin + b.yield - min(b.yield, resumeYieldLimit)
	return Sleeping
}

// spinYield lets the rest of the process run for a moment in a long
// spin (see spinGosched): the goroutines of this P, and, one time in
// four where the PE is a process of its own, the threads of its other P
// (a PE alone in its process runs two Ps on the CPU it is bound to;
// the goroutine it waits for may have been given the other one).
//
//go:noinline
func (b *Backoff) spinYield() {
	runtime.Gosched()
	if b.p.Mode != Goroutines && b.n%(4*spinGosched) == 0 {
		sys.SchedYield()
	}
}

// Sleep is the waiter's half of the contract. cond reports whether the
// wait is over; Sleep registers on b's doorbell, re-checks cond for a
// short while (see the package comment), and sleeps until woken or
// until the policy's MaxSleep elapses: a futex wait, or in mode
// Goroutines a park on b.Local. It reports cond's last value.
func (b *Backoff) Sleep(bell Bell, cond func() bool) bool {
	d := bell.Door
	park := b.p.Mode == Goroutines && bell.Local != nil
	var parked <-chan struct{}
	// seq is read before registering: a writer that clears FutexArmed
	// after this load (even one ringing for an earlier store, which
	// found this waiter registered) also bumps Seq, so the futex wait
	// below returns at once. Read after registering, such a ring could
	// fall between the two: the wait would then sleep with FutexArmed
	// clear and every later writer would skip the wake, until the
	// timeout (a lost wake-up: 2-PE reductions stalled for 10 ms).
	seq := d.Seq.Load()
	if !b.ctl {
		d.Data.Add(1) // before registering: see "Control-only sleepers"
	}
	register(d, park)
	if b.registered != nil {
		b.registered()
	}
	if park && b.parksUntimed() {
		// A control-only wait in process parks without a timer. Its
		// words are written with a full fence (an atomic add, or a
		// store that is an XCHG: Publish when not Fenced) before the
		// writer's Ring, so the Dekker handshake of the package comment
		// holds and no wake-up is lost to a store buffer. A job's
		// failure is recorded in Policy.Abort before its WakeAll bumps
		// Seq and wakes the Notify: a failure before the check is seen
		// there, and a WakeAll after it finds the Notify armed. With
		// nothing that can be lost, a timeout would only cost a timer
		// per park.
		b.sleeps++
		abort := b.p.Abort
		bell.Local.park(func() bool { return cond() || d.Seq.Load() != seq || abort.Load() != 0 })
		b.leave(d, park)
		return cond()
	}
	polls := 64
	if park {
		parked = bell.Local.channel()
		// In-process writers: a goroutine switch costs about as much as
		// these polls, and the timeout bounds the rest.
		polls = 4
	}
	if b.p.Fenced {
		// Every store a writer made before its load of Sleepers missed
		// this registration is visible after this (package comment).
		sys.MembarrierGlobal()
		polls = 1
	}
	for range polls {
		if cond() {
			b.leave(d, park)
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
	dur := min(first<<min(b.sleeps, 20), b.p.MaxSleep)
	b.sleeps++
	rung := true
	if park {
		t := time.NewTimer(dur)
		select {
		case <-parked:
		case <-t.C:
			rung = false
		}
		t.Stop()
	} else {
		sys.FutexWait(mem.U32(&d.Seq), seq, dur)
		rung = d.Seq.Load() != seq
	}
	b.leave(d, park)
	if cond() {
		return true
	}
	if !rung {
		// Nobody rang during the whole sleep: what this wait waits for
		// is not about to happen, and yielding before the next sleep
		// would only burn the CPU (each yield returns at once when
		// nothing else is runnable here; 200 of them per 10 ms sleep
		// cost an idle waiter some 5% of a CPU). Sleep again at once.
		b.n = b.p.Spin + b.yield
	}
	return false
}

// leave undoes Sleep's registration: Sleepers, then Data.
func (b *Backoff) leave(d *job.Doorbell, park bool) {
	unregister(d, park)
	if !b.ctl {
		d.Data.Add(^uint32(0))
	}
}

// Sleeps returns how many times this wait slept.
func (b *Backoff) Sleeps() int { return b.sleeps }
