package wait_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
)

func TestAuto(t *testing.T) {
	for _, m := range []wait.Mode{wait.Mixed, wait.Processes, wait.Goroutines} {
		dedicated := wait.Policy{Spin: 32000, Yield: 200, ParkYield: -1, MaxSleep: 10 * time.Millisecond, Mode: m}
		oversub := wait.Policy{Spin: 1, Yield: 4000, ParkYield: -1, MaxSleep: 10 * time.Millisecond, Mode: m}
		if m == wait.Goroutines {
			oversub.Yield, oversub.ParkYield = 32, 1
		}
		cases := []struct {
			npes, ncpus int
			want        wait.Policy
		}{
			{1, 1, dedicated},
			{1, 64, dedicated},
			{4, 4, dedicated},
			{8, 16, dedicated},
			{2, 1, oversub},
			{5, 4, oversub},
			{1000, 64, oversub},
			{1, 0, oversub},
		}
		for _, c := range cases {
			if got := wait.Auto(c.npes, c.ncpus, m); got != c.want {
				t.Errorf("Auto(%d, %d, %v) = %+v, want %+v", c.npes, c.ncpus, m, got, c.want)
			}
		}
		// Oversubscribed: hand the CPU over soon (short spin); processes
		// keep handing it over for long before any futex sleep.
		if d, o := wait.Auto(1, 1, m), wait.Auto(2, 1, m); d.Spin <= o.Spin || (m != wait.Goroutines && o.Yield < 1000) {
			t.Errorf("%v: oversubscribed policy %+v spins as long as %+v or yields too little before sleeping", m, o, d)
		}
	}
}

func phaseName(p wait.Phase) string {
	switch p {
	case wait.Spinning:
		return "Spinning"
	case wait.Yielding:
		return "Yielding"
	case wait.Sleeping:
		return "Sleeping"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

func TestPauseSequence(t *testing.T) {
	const (
		S  = wait.Spinning
		Y  = wait.Yielding
		SL = wait.Sleeping
	)
	cases := []struct {
		p    wait.Policy
		want []wait.Phase
	}{
		{wait.Policy{Spin: 2, Yield: 2}, []wait.Phase{S, S, Y, Y, SL, Y, Y, SL, Y, Y, SL}},
		{wait.Policy{Spin: 0, Yield: 0}, []wait.Phase{SL, SL, SL}},
		{wait.Policy{Spin: 3, Yield: 0}, []wait.Phase{S, S, S, SL, SL, SL}},
		{wait.Policy{Spin: 0, Yield: 1}, []wait.Phase{Y, SL, Y, SL, Y, SL}},
		{wait.Policy{Spin: 1, Yield: 3}, []wait.Phase{S, Y, Y, Y, SL, Y, Y, Y, SL}},
	}
	for _, c := range cases {
		p := c.p
		b := wait.Start(&p)
		for i, w := range c.want {
			if got := b.Pause(); got != w {
				t.Errorf("policy %+v: Pause #%d = %s, want %s", c.p, i+1, phaseName(got), phaseName(w))
				break
			}
		}
		if b.Sleeps() != 0 {
			t.Errorf("Pause alone counted %d sleeps", b.Sleeps())
		}
	}
	// A policy change between Starts does not leak state.
	p := wait.Policy{Spin: 1, Yield: 0}
	b1 := wait.Start(&p)
	b1.Pause()
	b2 := wait.Start(&p)
	if got := b2.Pause(); got != wait.Spinning {
		t.Errorf("a fresh Backoff starts at %s", phaseName(got))
	}
}

func TestRingWithoutSleepers(t *testing.T) {
	var d job.Doorbell
	d.Seq.Store(41)
	for range 100 {
		wait.Ring(wait.Bell{Door: &d})
	}
	if d.Seq.Load() != 41 || d.Sleepers.Load() != 0 {
		t.Fatalf("Ring without sleepers changed the doorbell: Seq %d Sleepers %d", d.Seq.Load(), d.Sleepers.Load())
	}
	d.Sleepers.Store(1 | wait.FutexArmed)
	wait.Ring(wait.Bell{Door: &d})
	if d.Seq.Load() != 42 {
		t.Fatalf("Ring with a sleeper: Seq %d, want 42", d.Seq.Load())
	}
	d.Sleepers.Store(0)
	wait.WakeAll(wait.Bell{Door: &d})
	if d.Seq.Load() != 43 {
		t.Fatalf("WakeAll: Seq %d, want 43", d.Seq.Load())
	}
}

func TestSleepConditionAlreadyHolds(t *testing.T) {
	var d job.Doorbell
	d.Seq.Store(5)
	p := wait.Policy{Spin: 1, Yield: 1, MaxSleep: 5 * time.Second}
	b := wait.Start(&p)
	calls := 0
	start := time.Now()
	ok := b.Sleep(wait.Bell{Door: &d}, func() bool { calls++; return true })
	el := time.Since(start)
	if !ok {
		t.Fatal("Sleep returned false with the condition true")
	}
	if el > 500*time.Millisecond {
		t.Fatalf("Sleep took %v with the condition already true", el)
	}
	if calls != 1 {
		t.Errorf("cond called %d times, want 1", calls)
	}
	if b.Sleeps() != 0 {
		t.Errorf("Sleeps() = %d, want 0: nothing slept", b.Sleeps())
	}
	if d.Sleepers.Load() != 0 || d.Seq.Load() != 5 {
		t.Errorf("after Sleep: Sleepers %d Seq %d, want 0, 5", d.Sleepers.Load(), d.Seq.Load())
	}
}

func TestSleepTimesOut(t *testing.T) {
	var d job.Doorbell
	p := wait.Policy{MaxSleep: 5 * time.Second}
	b := wait.Start(&p)
	start := time.Now()
	for i := 1; i <= 3; i++ {
		if b.Sleep(wait.Bell{Door: &d}, func() bool { return false }) {
			t.Fatal("Sleep returned true with the condition false")
		}
		if b.Sleeps() != i {
			t.Fatalf("Sleeps() = %d after %d sleeps", b.Sleeps(), i)
		}
		if d.Sleepers.Load() != 0 {
			t.Fatalf("Sleepers = %d after Sleep returned", d.Sleepers.Load())
		}
	}
	// The first sleeps are short (the policy's MaxSleep is only a cap).
	if el := time.Since(start); el > time.Second {
		t.Errorf("three first sleeps took %v", el)
	}
}

// TestSleepReachesMaxSleep checks the promise of Sleep's comment: sleeps
// start short, but "a long wait still ends up in MaxSleep sleeps".
func TestSleepReachesMaxSleep(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps about a second")
	}
	const maxSleep = 200 * time.Millisecond
	var d job.Doorbell
	p := wait.Policy{MaxSleep: maxSleep}
	b := wait.Start(&p)
	never := func() bool { return false }
	start := time.Now()
	for i := 0; i < 40 && time.Since(start) < 2*maxSleep; i++ {
		b.Sleep(wait.Bell{Door: &d}, never)
	}
	warm, warmSleeps := time.Since(start), b.Sleeps()
	// Allow for an early (spurious) futex return: take the longest of
	// three sleeps.
	var longest time.Duration
	for range 3 {
		t0 := time.Now()
		b.Sleep(wait.Bell{Door: &d}, never)
		longest = max(longest, time.Since(t0))
	}
	if longest < maxSleep*3/4 {
		t.Errorf("after %d sleeps (%v) a Sleep lasts %v; want about MaxSleep = %v", warmSleeps, warm, longest, maxSleep)
	}
}

// TestDoorbellWakesSleeper is the contract: a waiter asleep in Sleep is
// woken by a writer that stores the condition atomically and rings.
func TestDoorbellWakesSleeper(t *testing.T) {
	var d job.Doorbell
	var flag atomic.Uint32
	p := wait.Policy{Spin: 2, Yield: 2, MaxSleep: 5 * time.Second}
	never := func() bool { return false }

	b := wait.Start(&p)
	// Let the backoff reach its long sleeps first.
	for range 10 {
		b.Sleep(wait.Bell{Door: &d}, never)
	}
	seq0 := d.Seq.Load()

	type result struct {
		ok       bool
		returned time.Time
	}
	res := make(chan result)
	go func() {
		// A futex wait may return early (a signal, such as the Go
		// runtime's preemption signal); a waiter then sleeps again, as
		// every caller of Sleep does.
		cond := func() bool { return flag.Load() == 1 }
		ok := b.Sleep(wait.Bell{Door: &d}, cond)
		for !ok {
			ok = b.Sleep(wait.Bell{Door: &d}, cond)
		}
		res <- result{ok, time.Now()}
	}()
	// Wait until the waiter has registered, then give it time to reach
	// futex_wait.
	awaitRegistered(t, &d)
	time.Sleep(5 * time.Millisecond)
	flag.Store(1)
	wait.Ring(wait.Bell{Door: &d})
	rang := time.Now()
	select {
	case r := <-res:
		if !r.ok {
			t.Fatal("Sleep returned false after the condition was set")
		}
		if lat := r.returned.Sub(rang); lat > time.Second {
			t.Fatalf("the waiter woke %v after Ring; MaxSleep is %v", lat, p.MaxSleep)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter never woke up")
	}
	if d.Sleepers.Load() != 0 {
		t.Errorf("Sleepers = %d after the waiter returned", d.Sleepers.Load())
	}
	if got := d.Seq.Load(); got != seq0+1 {
		t.Errorf("Seq = %d, want %d: Ring must bump it exactly once", got, seq0+1)
	}
}

// TestRingWakesFutexWaiters waits on the doorbell with the raw protocol
// and a 5 s timeout, so that only Ring can end the waits early.
func TestRingWakesFutexWaiters(t *testing.T) {
	const waiters = 4
	var d job.Doorbell
	var cond atomic.Bool
	var wg sync.WaitGroup
	var late atomic.Int32
	start := make(chan struct{})
	var rang atomic.Int64
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for { // register as Sleep does
				s := d.Sleepers.Load()
				if d.Sleepers.CompareAndSwap(s, (s+1)|wait.FutexArmed) {
					break
				}
			}
			seq := d.Seq.Load()
			for !cond.Load() {
				sys.FutexWait(mem.U32(&d.Seq), seq, 5*time.Second)
				seq = d.Seq.Load()
			}
			d.Sleepers.Add(^uint32(0))
			if r := rang.Load(); r == 0 || time.Since(time.Unix(0, r)) > time.Second {
				late.Add(1)
			}
		}()
	}
	close(start)
	for d.Sleepers.Load() != waiters|wait.FutexArmed {
		time.Sleep(50 * time.Microsecond)
	}
	time.Sleep(5 * time.Millisecond)
	rang.Store(time.Now().UnixNano())
	cond.Store(true)
	wait.Ring(wait.Bell{Door: &d})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Ring did not wake every waiter")
	}
	if late.Load() != 0 {
		t.Errorf("%d of %d waiters woke more than 1s after Ring", late.Load(), waiters)
	}
	if d.Sleepers.Load()&^uint32(wait.FutexArmed) != 0 || d.Seq.Load() != 1 {
		t.Errorf("after the wake: Sleepers %#x Seq %d, want 0, 1", d.Sleepers.Load(), d.Seq.Load())
	}
}

// sleeperKinds are the two ways a waiter sleeps: a futex wait of its
// thread (PEs that are processes), or a park on the PE's Notify
// (goroutine PEs).
// sleeperBell returns a doorbell and its Bell, with an in-process
// Notify for a parking sleeper.
func sleeperBell(park bool) (*job.Doorbell, wait.Bell) {
	d := new(job.Doorbell)
	bell := wait.Bell{Door: d}
	if park {
		bell.Local = new(wait.Notify)
	}
	return d, bell
}

var sleeperKinds = []struct {
	name string
	mode wait.Mode
	park bool
}{
	{"futex", wait.Processes, false},
	{"park", wait.Goroutines, true},
}

// TestNoLostWakeup runs many short producer/consumer rounds, the
// consumer sleeping on the futex (Processes) or parking on the
// in-process Notify (Goroutines) at once and the producer storing
// atomically and ringing: every wait must end, none needing more than a
// few timeouts.
func TestNoLostWakeup(t *testing.T) {
	for _, tc := range sleeperKinds {
		t.Run(tc.name, func(t *testing.T) {
			d, bell := sleeperBell(tc.park)
			p := wait.Policy{Mode: tc.mode, MaxSleep: 2 * time.Second} // sleep at once
			var word atomic.Uint64
			const rounds = 300
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := uint64(1); i <= rounds; i++ {
					b := wait.Start(&p)
					cond := func() bool { return word.Load() >= i }
					for !cond() {
						if b.Pause() == wait.Sleeping && b.Sleep(bell, cond) {
							break
						}
					}
				}
			}()
			for i := uint64(1); i <= rounds; i++ {
				word.Store(i)
				wait.Ring(bell)
				if i%16 == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("the waiter is stuck")
			}
			if d.Sleepers.Load() != 0 {
				t.Errorf("Sleepers = %#x at the end", d.Sleepers.Load())
			}
		})
	}
}

func TestRelax(t *testing.T) {
	start := time.Now()
	for range 1000 {
		wait.Relax()
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("1000 Relax took %v", el)
	}
}

// parkUntil parks in mode Goroutines on bell until cond holds, as every
// caller of Sleep does, and reports how many sleeps it took.
func parkUntil(p *wait.Policy, bell wait.Bell, cond func() bool) int {
	b := wait.Start(p)
	for !b.Sleep(bell, cond) {
	}
	return b.Sleeps()
}

// waitRegistered waits until the doorbell shows want in Sleepers.
func waitRegistered(t *testing.T, d *job.Doorbell, want uint32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); d.Sleepers.Load() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("Sleepers = %#x, want %#x", d.Sleepers.Load(), want)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// TestParkedGoroutinesWokenInProcess: in mode Goroutines waiters park
// on the PE's Notify (they count in the high half of Sleepers, not as
// futex sleepers), and a Ring through the Bell wakes all of them at once
// without a futex wake (Seq unchanged), long before MaxSleep.
func TestParkedGoroutinesWokenInProcess(t *testing.T) {
	const waiters = 3
	var d job.Doorbell
	var n wait.Notify
	bell := wait.Bell{Door: &d, Local: &n}
	p := wait.Policy{Mode: wait.Goroutines, MaxSleep: 5 * time.Second, MinSleep: 5 * time.Second}
	var flag atomic.Uint32
	woke := make(chan time.Time, waiters)
	for range waiters {
		go func() {
			parkUntil(&p, bell, func() bool { return flag.Load() == 1 })
			woke <- time.Now()
		}()
	}
	waitRegistered(t, &d, waiters*wait.ParkUnit)
	flag.Store(1)
	rang := time.Now()
	wait.Ring(bell)
	for range waiters {
		select {
		case w := <-woke:
			if lat := w.Sub(rang); lat > time.Second {
				t.Errorf("a parked waiter woke %v after Ring (MaxSleep %v)", lat, p.MaxSleep)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Ring did not wake the parked waiters")
		}
	}
	if d.Sleepers.Load() != 0 || d.Seq.Load() != 0 {
		t.Errorf("after the wake: Sleepers %#x Seq %d, want 0, 0 (no futex wake for parked goroutines)", d.Sleepers.Load(), d.Seq.Load())
	}
}

// TestWakeAllWakesEveryKindOfSleeper: a job's failure (WakeAll) wakes a
// goroutine parked on the Notify and a thread asleep on the futex of
// the same doorbell.
func TestWakeAllWakesEveryKindOfSleeper(t *testing.T) {
	var d job.Doorbell
	var n wait.Notify
	bell := wait.Bell{Door: &d, Local: &n}
	park := wait.Policy{Mode: wait.Goroutines, MaxSleep: 5 * time.Second, MinSleep: 5 * time.Second}
	futex := wait.Policy{Mode: wait.Processes, MaxSleep: 5 * time.Second, MinSleep: 5 * time.Second}
	var aborted atomic.Bool
	cond := func() bool { return aborted.Load() }
	woke := make(chan string, 2)
	go func() { parkUntil(&park, bell, cond); woke <- "parked" }()
	go func() { parkUntil(&futex, bell, cond); woke <- "futex" }()
	waitRegistered(t, &d, wait.ParkUnit+1|wait.FutexArmed)
	time.Sleep(5 * time.Millisecond) // let the futex sleeper reach futex_wait
	aborted.Store(true)
	wait.WakeAll(bell)
	for range 2 {
		select {
		case <-woke:
		case <-time.After(2 * time.Second):
			t.Fatalf("WakeAll left a sleeper asleep (Sleepers %#x)", d.Sleepers.Load())
		}
	}
}

// TestRingWakesOnlyTheKindThatSleeps: a Ring pays a futex wake only
// when a thread sleeps on the futex, not for parked goroutines.
func TestRingWakesOnlyTheKindThatSleeps(t *testing.T) {
	var d job.Doorbell
	var n wait.Notify
	d.Sleepers.Store(wait.ParkUnit)
	wait.Ring(wait.Bell{Door: &d, Local: &n})
	if d.Seq.Load() != 0 {
		t.Errorf("Ring with only a parked goroutine bumped Seq to %d", d.Seq.Load())
	}
	d.Sleepers.Store(wait.ParkUnit + 1 | wait.FutexArmed)
	wait.Ring(wait.Bell{Door: &d, Local: &n})
	if d.Seq.Load() != 1 {
		t.Errorf("Ring with a futex sleeper: Seq %d, want 1", d.Seq.Load())
	}
}

// TestRingAfterWakePaysNoFutex: once a writer has woken the futex
// sleepers, further rings before they leave the doorbell (a woken
// thread may wait long for a CPU when PEs outnumber CPUs) pay no futex
// wake; a sleeper that registers after the wake is woken by the next
// ring; and when the last sleeper leaves, Ring is one load again.
func TestRingAfterWakePaysNoFutex(t *testing.T) {
	var d job.Doorbell
	bell := wait.Bell{Door: &d}
	// A sleeper registered as Sleep does; it is woken but not yet gone.
	d.Sleepers.Store(1 | wait.FutexArmed)
	wait.Ring(bell)
	if d.Seq.Load() != 1 || d.Sleepers.Load() != 1 {
		t.Fatalf("the first Ring: Seq %d Sleepers %#x, want 1, 1", d.Seq.Load(), d.Sleepers.Load())
	}
	for range 100 {
		wait.Ring(bell)
	}
	if d.Seq.Load() != 1 {
		t.Fatalf("rings after the wake, before the sleeper left, bumped Seq to %d", d.Seq.Load())
	}
	// A real sleeper registers now: the next ring must wake it.
	p := wait.Policy{Mode: wait.Processes, MaxSleep: 5 * time.Second, MinSleep: 5 * time.Second}
	var flag atomic.Uint32
	done := make(chan struct{})
	go func() {
		parkUntil(&p, bell, func() bool { return flag.Load() == 1 })
		close(done)
	}()
	waitRegistered(t, &d, 2|wait.FutexArmed)
	time.Sleep(5 * time.Millisecond) // let it reach futex_wait
	flag.Store(1)
	wait.Ring(bell)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("a sleeper that registered after a wake was not woken by the next Ring")
	}
	if d.Seq.Load() != 2 {
		t.Errorf("Seq %d, want 2", d.Seq.Load())
	}
	// The first sleeper leaves, as Sleep does: the doorbell is clear.
	d.Sleepers.Add(^uint32(0))
	if d.Sleepers.Load() != 0 {
		t.Errorf("Sleepers = %#x after every sleeper left, want 0 (Ring one load again)", d.Sleepers.Load())
	}
	// And a sleeper that times out alone leaves it clear too.
	p2 := wait.Policy{Mode: wait.Processes, MaxSleep: time.Millisecond}
	b := wait.Start(&p2)
	b.Sleep(bell, func() bool { return false })
	if d.Sleepers.Load() != 0 {
		t.Errorf("Sleepers = %#x after a sleep timed out, want 0", d.Sleepers.Load())
	}
}

// TestPauseYieldsByMode: each mode's yield phase runs (Gosched,
// sched_yield or both) and ends in Sleeping after Yield yields.
func TestPauseYieldsByMode(t *testing.T) {
	for _, m := range []wait.Mode{wait.Mixed, wait.Processes, wait.Goroutines} {
		p := wait.Policy{Spin: 1, Yield: 5, Mode: m}
		b := wait.Start(&p)
		got := []wait.Phase{}
		for range 7 {
			got = append(got, b.Pause())
		}
		want := []wait.Phase{wait.Spinning, wait.Yielding, wait.Yielding, wait.Yielding, wait.Yielding, wait.Yielding, wait.Sleeping}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v: phases %v, want %v", m, got, want)
		}
	}
}

// TestEarlierRingDoesNotDisarmSleeper: a writer rings for an earlier
// store (one this waiter no longer waits for) just after the waiter has
// registered on its doorbell; that ring clears FutexArmed. A later
// writer's ring, for the store the waiter does wait for, must still wake
// it: the waiter may not go to sleep disarmed. (Two PEs: PE 1's ring for
// its previous publication, late because PE 1 lost its CPU after the
// store, fell between PE 0's registering and its reading Seq, and PE 0
// slept until MaxSleep through PE 1's next publication.)
func TestEarlierRingDoesNotDisarmSleeper(t *testing.T) {
	var d job.Doorbell
	var flag atomic.Uint32
	bell := wait.Bell{Door: &d}
	rings := 0
	p := wait.Policy{Spin: 1, Yield: 1, MinSleep: 5 * time.Second, MaxSleep: 5 * time.Second}
	done := make(chan time.Duration)
	go func() {
		b := wait.StartWithHook(&p, func() {
			if rings == 0 { // the first sleep only
				rings++
				wait.Ring(bell) // the late ring of an earlier store
			}
		})
		cond := func() bool { return flag.Load() == 1 }
		start := time.Now()
		for !b.Sleep(bell, cond) {
		}
		done <- time.Since(start)
	}()
	// Give the waiter time to reach futex_wait, then store and ring.
	awaitRegistered(t, &d)
	time.Sleep(20 * time.Millisecond)
	flag.Store(1)
	wait.Ring(bell)
	select {
	case took := <-done:
		if took > time.Second {
			t.Fatalf("the waiter woke %v after it started, MaxSleep is %v: the ring for its store was lost", took, p.MaxSleep)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter never woke up")
	}
}

// awaitRegistered waits until some waiter has registered on d.
func awaitRegistered(t *testing.T, d *job.Doorbell) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); d.Sleepers.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never registered on the doorbell")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// TestNoLostWakeupPlainStores is the fenced contract under load: two
// threads pass a counter back and forth, each publishing with
// Policy.Publish (a plain store on amd64) and ringing, each sleeping at
// once when it waits (on the futex, or parked in the process as
// goroutine PEs do). Sleeps last lostSleep unless woken, and each wait
// sleeps at once, so a wake-up lost to a store still in the writer's
// store buffer shows as a wait of a whole sleep; the test counts waits
// longer than half of one. (With a second as the bound, a clean-clone
// CI's race phase, with other packages' multi-process tests running
// alongside, failed once: 1 wait of 40000 took over a second, in a
// subtest that lasted 3.5 s in all, so no sleep had run out: the
// threads had waited for a CPU.) With the membarrier call taken out of Sleep, the futex case
// lost 2-4 wake-ups in each of 4 runs on the development machine; the
// park case, whose registration and channel take longer, lost none
// there, so it checks the fenced park path runs right, not that the
// fence is needed for it.
func TestNoLostWakeupPlainStores(t *testing.T) {
	if err := sys.MembarrierRegister(); err != nil {
		t.Skipf("no asymmetric fence on this kernel: %v", err)
	}
	for _, tc := range sleeperKinds {
		t.Run(tc.name, func(t *testing.T) {
			const lostSleep = 10 * time.Second
			p := wait.Policy{Mode: tc.mode, MinSleep: lostSleep, MaxSleep: lostSleep}
			if tc.park {
				p.Spin = 1000 // SetFenced fences goroutine PEs that spin long
			}
			p.SetFenced(true)
			if !p.Fenced {
				t.Fatalf("SetFenced(true) left Fenced false on %+v", p)
			}
			p.Spin = 0 // now sleep at once
			var doors [2]job.Doorbell
			var notes [2]wait.Notify
			bell := func(i int) wait.Bell {
				b := wait.Bell{Door: &doors[i]}
				if tc.park {
					b.Local = &notes[i]
				}
				return b
			}
			var words [2]atomic.Uint32
			rounds := 20000
			if testing.Short() {
				rounds = 500
			}
			var slow [2]atomic.Int64 // waits longer than half a sleep
			// Every other round rings as a put does (RingData): the
			// sleepers are data sleepers, so that must wake them too.
			ring := func(i uint32, b wait.Bell) {
				if i%2 == 0 {
					wait.RingData(b)
				} else {
					wait.Ring(b)
				}
			}
			run := func(me int, done chan<- struct{}) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				defer close(done)
				other := 1 - me
				for i := uint32(1); i <= uint32(rounds); i++ {
					if me == 0 {
						p.Publish(&words[other], i)
						ring(i, bell(other))
					}
					start := time.Now()
					cond := func() bool { return words[me].Load() >= i }
					b := wait.Start(&p)
					for !cond() {
						if b.Pause() == wait.Sleeping && b.Sleep(bell(me), cond) {
							break
						}
					}
					if time.Since(start) > lostSleep/2 {
						slow[me].Add(1)
					}
					if me == 1 {
						p.Publish(&words[other], i)
						ring(i, bell(other))
					}
				}
			}
			d0, d1 := make(chan struct{}), make(chan struct{})
			go run(0, d0)
			go run(1, d1)
			for _, d := range []chan struct{}{d0, d1} {
				select {
				case <-d:
				case <-time.After(120 * time.Second):
					t.Fatal("a waiter is stuck")
				}
			}
			if n := slow[0].Load() + slow[1].Load(); n > 0 {
				t.Errorf("%d of %d waits took over %v, half a sleep: wake-ups lost to plain stores", n, 2*rounds, lostSleep/2)
			}
		})
	}
}

// TestRingDataSkipsControlOnlySleepers: data rings (RingData, what puts
// and AMOs ring) do not wake a sleeper whose wait is control-only (a
// barrier's), however many come; they do wake a data sleeper on the
// same doorbell; Ring wakes the control-only one; and the doorbell's
// counts are back to zero afterwards. A futex sleeper's wake-up is
// seen in Seq (bumped by every wake, and by nothing else), which a
// spurious return of futex_wait (a signal) does not touch; a parked
// goroutine's in its count of sleeps (a park returns only when woken
// or at its 10 s timeout).
func TestRingDataSkipsControlOnlySleepers(t *testing.T) {
	for _, tc := range sleeperKinds {
		t.Run(tc.name, func(t *testing.T) {
			d, bell := sleeperBell(tc.park)
			p := wait.Policy{Mode: tc.mode, MinSleep: 10 * time.Second, MaxSleep: 10 * time.Second}
			var ctlWord, dataWord atomic.Uint32
			var ctlSleeps atomic.Int32
			sleeper := func(ctl bool, cond func() bool, sleeps *atomic.Int32, done chan<- struct{}) {
				b := wait.Start(&p)
				if ctl {
					b.ControlOnly()
				}
				for !cond() {
					sleeps.Add(1)
					if b.Sleep(bell, cond) {
						break
					}
				}
				close(done)
			}
			ctlDone := make(chan struct{})
			go sleeper(true, func() bool { return ctlWord.Load() == 1 }, &ctlSleeps, ctlDone)
			awaitRegistered(t, d)
			time.Sleep(5 * time.Millisecond) // into futex_wait or the park
			seq := d.Seq.Load()
			for range 200 {
				dataWord.Add(1)
				wait.RingData(bell)
			}
			time.Sleep(20 * time.Millisecond)
			if tc.park && ctlSleeps.Load() != 1 || !tc.park && d.Seq.Load() != seq {
				t.Fatalf("200 data rings woke the control-only sleeper (sleeps %d, Seq %d -> %d)", ctlSleeps.Load(), seq, d.Seq.Load())
			}
			if d.Data.Load() != 0 {
				t.Fatalf("Data = %d with only a control-only sleeper", d.Data.Load())
			}

			// A data sleeper joins: now a data ring wakes.
			var dataSleeps atomic.Int32
			dataDone := make(chan struct{})
			target := dataWord.Load() + 1
			go sleeper(false, func() bool { return dataWord.Load() >= target }, &dataSleeps, dataDone)
			for deadline := time.Now().Add(5 * time.Second); d.Data.Load() == 0; time.Sleep(50 * time.Microsecond) {
				if time.Now().After(deadline) {
					t.Fatal("the data sleeper never counted itself in Data")
				}
			}
			time.Sleep(5 * time.Millisecond)
			dataWord.Add(1)
			wait.RingData(bell)
			select {
			case <-dataDone:
			case <-time.After(5 * time.Second):
				t.Fatal("RingData did not wake a data sleeper (its sleeps last 10 s)")
			}
			select {
			case <-ctlDone:
				t.Fatal("the control-only sleeper returned before its word was set")
			default:
			}
			ctlWord.Store(1)
			wait.Ring(bell)
			select {
			case <-ctlDone:
			case <-time.After(5 * time.Second):
				t.Fatal("Ring did not wake the control-only sleeper (its sleeps last 10 s)")
			}
			if d.Sleepers.Load() != 0 || d.Data.Load() != 0 {
				t.Errorf("after both returned: Sleepers %#x, Data %d; want 0, 0", d.Sleepers.Load(), d.Data.Load())
			}
		})
	}
}

// TestQuietSleepSkipsYields: a sleep that lasts its whole time without
// a ring is followed at once by the next sleep (an idle waiter burned 7-11%
// of a CPU in the yields between 10 ms sleeps), while a sleep that a
// ring ended is followed by the yields again (the hand-over an
// oversubscribed waiter needs), for futex sleepers and parked
// goroutines alike.
func TestQuietSleepSkipsYields(t *testing.T) {
	never := func() bool { return false }
	for _, mode := range []wait.Mode{wait.Processes, wait.Goroutines} {
		var d job.Doorbell
		var n wait.Notify
		bell := wait.Bell{Door: &d, Local: &n}
		p := wait.Policy{Spin: 1, Yield: 5, MaxSleep: time.Millisecond, MinSleep: time.Millisecond, Mode: mode}
		b := wait.Start(&p)
		// untilSleeping counts the Pauses that yield before Sleeping.
		untilSleeping := func() int {
			yields := 0
			for b.Pause() != wait.Sleeping {
				yields++
			}
			return yields
		}
		if got := untilSleeping(); got != p.Spin+p.Yield {
			t.Fatalf("%v: %d pauses before the first sleep, want %d", mode, got, p.Spin+p.Yield)
		}
		for i := range 3 {
			if b.Sleep(bell, never) {
				t.Fatalf("%v: Sleep reported a condition that never holds", mode)
			}
			if got := untilSleeping(); got != 0 {
				t.Errorf("%v: after quiet sleep %d, %d pauses before the next sleep, want 0", mode, i+1, got)
			}
		}
		// A ring (for another word) ends the next sleep, long before its
		// time is up.
		p.MaxSleep, p.MinSleep = time.Minute, time.Minute
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Microsecond):
					wait.Ring(bell)
				}
			}
		}()
		start := time.Now()
		if b.Sleep(bell, never) {
			t.Fatalf("%v: Sleep reported a condition that never holds", mode)
		}
		close(stop)
		if took := time.Since(start); took > 30*time.Second {
			t.Fatalf("%v: the rings did not end the sleep (%v)", mode, took)
		}
		if got := untilSleeping(); got != p.Yield {
			t.Errorf("%v: after a rung sleep, %d pauses before the next sleep, want %d (the yields)", mode, got, p.Yield)
		}
	}
}

// TestControlOnlyParkHasNoTimer: a control-only wait of a goroutine PE
// (mode Goroutines, not fenced) parks without a timeout, so it does not
// come back after MaxSleep; a Ring after the condition's store wakes
// it, and so does a job failure's WakeAll with the condition still
// false (it must then see the abort, as every waiter does).
func TestControlOnlyParkHasNoTimer(t *testing.T) {
	var d job.Doorbell
	var n wait.Notify
	bell := wait.Bell{Door: &d, Local: &n}
	var flag, abort atomic.Uint32
	p := wait.Policy{Mode: wait.Goroutines, MaxSleep: time.Millisecond, MinSleep: time.Millisecond, Abort: &abort}
	sleep := func() (chan bool, *int) {
		out := make(chan bool, 1)
		sleeps := new(int)
		go func() {
			b := wait.Start(&p)
			b.ControlOnly()
			ok := b.Sleep(bell, func() bool { return flag.Load() == 1 })
			*sleeps = b.Sleeps()
			out <- ok
		}()
		return out, sleeps
	}

	out, _ := sleep()
	waitRegistered(t, &d, wait.ParkUnit)
	select {
	case <-out:
		t.Fatal("a control-only park returned without a ring (it timed out)")
	case <-time.After(50 * time.Millisecond): // 50 times MaxSleep
	}
	flag.Store(1)
	wait.Ring(bell)
	select {
	case ok := <-out:
		if !ok {
			t.Error("woken after the store, Sleep reported the condition false")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ring did not wake the control-only park")
	}
	if d.Sleepers.Load() != 0 || d.Data.Load() != 0 {
		t.Errorf("after the wake: Sleepers %#x Data %d, want 0, 0", d.Sleepers.Load(), d.Data.Load())
	}

	flag.Store(0)
	out, sleeps := sleep()
	waitRegistered(t, &d, wait.ParkUnit)
	abort.Store(2)
	wait.WakeAll(bell)
	select {
	case ok := <-out:
		if ok {
			t.Error("woken by WakeAll, Sleep reported a condition that is false")
		}
		if *sleeps != 1 {
			t.Errorf("Sleeps() = %d after one park, want 1", *sleeps)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WakeAll did not wake the control-only park")
	}

	// A failure recorded (and rung) after the waiter last looked at the
	// record, before it called Sleep: Sleep must not park for good.
	out, _ = sleep()
	select {
	case <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("a control-only park slept through a failure recorded before it")
	}

	// Without a failure record the park has a timer.
	abort.Store(0)
	p.Abort = nil
	out, _ = sleep()
	select {
	case <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("a control-only park without Policy.Abort did not time out")
	}
}

// TestControlOnlyParkNoLostWakeup races the two wake-ups a timer-free
// park relies on against its registration, many times: a Ring after an
// atomic store of the condition, and WakeAll (a job failure) with the
// condition false. Each round's wake-up comes at once, after a few
// spins, once the waiter has registered, or from the waiter's own hook
// between registering and parking. A lost one leaves the waiter parked
// forever, which the deadline catches.
func TestControlOnlyParkNoLostWakeup(t *testing.T) {
	const rounds = 3000
	var d job.Doorbell
	var n wait.Notify
	bell := wait.Bell{Door: &d, Local: &n}
	var abort atomic.Uint32
	p := wait.Policy{Mode: wait.Goroutines, MaxSleep: time.Hour, MinSleep: time.Hour, Abort: &abort}
	var word, aborted, seen atomic.Uint64
	parks := 0 // the waiter's, read after done
	wakeUp := func(i uint64) {
		if i%3 == 0 {
			// A failure, recorded before its WakeAll (node's Job.fail);
			// the waiter leaves it as node's waits do, here to wait
			// again in the next round (Abort cleared before then).
			aborted.Store(i)
			abort.Store(2)
			wait.WakeAll(bell)
		} else {
			word.Store(i)
			wait.Ring(bell)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); i <= rounds; i++ {
			// As node's waits: the condition reads the control word,
			// and the abort record is read after every sleep.
			cond := func() bool { return word.Load() >= i }
			b := wait.Start(&p)
			if i%5 == 4 {
				b = wait.StartWithHook(&p, func() { wakeUp(i) })
			}
			b.ControlOnly()
			for !b.Sleep(bell, cond) && aborted.Load() < i {
			}
			abort.Store(0)
			parks += b.Sleeps()
			seen.Store(i)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for i := uint64(1); i <= rounds; i++ {
		for seen.Load() < i-1 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the waiter is stuck (Sleepers %#x)", i-1, d.Sleepers.Load())
			}
			runtime.Gosched()
		}
		switch i % 5 {
		case 4:
			continue // the waiter's hook wakes it
		case 1:
			for range i % 64 {
				wait.Relax()
			}
		case 2:
			for d.Sleepers.Load() == 0 && seen.Load() < i && time.Now().Before(deadline) {
				runtime.Gosched()
			}
		}
		wakeUp(i)
	}
	select {
	case <-done:
	case <-time.After(time.Until(deadline) + time.Second):
		t.Fatalf("the waiter is stuck at round %d (Sleepers %#x)", seen.Load()+1, d.Sleepers.Load())
	}
	if d.Sleepers.Load() != 0 {
		t.Errorf("Sleepers = %#x at the end", d.Sleepers.Load())
	}
	if parks < rounds/2 {
		t.Errorf("the waiter slept %d times in %d rounds: the races were not run", parks, rounds)
	}
	t.Logf("%d sleeps in %d rounds", parks, rounds)
}

// TestControlOnlyYields: a control-only wait of goroutine PEs that is
// not fenced (its park has no timer) yields ParkYield times before it
// sleeps; a data wait, a fenced one, a process's, and one whose policy
// has no ParkYield (negative) yield Yield times.
func TestControlOnlyYields(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    wait.Policy
		ctl  bool
		want int
	}{
		{"goroutines, control-only", wait.Policy{Spin: 1, Yield: 32, ParkYield: 1, Mode: wait.Goroutines, Abort: new(atomic.Uint32)}, true, 1},
		{"goroutines, control-only, no failure record", wait.Policy{Spin: 1, Yield: 32, ParkYield: 1, Mode: wait.Goroutines}, true, 32},
		{"goroutines, data", wait.Policy{Spin: 1, Yield: 32, ParkYield: 1, Mode: wait.Goroutines}, false, 32},
		{"goroutines, control-only, fenced", wait.Policy{Spin: 1, Yield: 32, ParkYield: 1, Mode: wait.Goroutines, Fenced: true}, true, 32},
		{"goroutines, control-only, no ParkYield", wait.Policy{Spin: 1, Yield: 32, ParkYield: -1, Mode: wait.Goroutines}, true, 32},
		{"processes, control-only", wait.Policy{Spin: 1, Yield: 32, ParkYield: 1, Mode: wait.Processes}, true, 32},
	} {
		b := wait.Start(&tc.p)
		if tc.ctl {
			b.ControlOnly()
		}
		yields := 0
		for i := 0; ; i++ {
			ph := b.Pause()
			if ph == wait.Sleeping {
				break
			}
			if ph == wait.Yielding {
				yields++
			}
			if i > 1000 {
				t.Fatalf("%s: no Sleeping after 1000 pauses", tc.name)
			}
		}
		if yields != tc.want {
			t.Errorf("%s: %d yields before sleeping, want %d", tc.name, yields, tc.want)
		}
	}
	for _, m := range []wait.Mode{wait.Processes, wait.Goroutines, wait.Mixed} {
		for _, npes := range []int{1, 8} {
			p := wait.Auto(npes, 2, m)
			want := -1
			if m == wait.Goroutines && npes > 2 {
				want = 1
			}
			if p.ParkYield != want || p.ParkYield > p.Yield {
				t.Errorf("Auto(%d, 2, %v).ParkYield = %d, want %d (and no more than Yield %d)", npes, m, p.ParkYield, want, p.Yield)
			}
		}
	}
}
