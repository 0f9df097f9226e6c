package node_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/node"
)

// longSleep makes a wait's timeout the longest SHMEM_WAIT_SLEEP takes
// (500 ms); a wait's sleeps grow to it within about a second, after which
// only a wake-up ends a wait in time: what these tests check.
var longSleep = node.Config{HeapSize: 1 << 20, WaitSleep: 500 * time.Millisecond}

// wokenWithin is how soon a woken wait must end; a timeout takes 500 ms.
const wokenWithin = 150 * time.Millisecond

// goroutineRing runs a token around g goroutines of pe (THREAD_MULTIPLE):
// goroutine k waits with WaitUntil for the token in its own word, then
// puts it into the next one's, so one goroutine of the PE has work at a
// time and the others wait. It returns the median time of a hand-off
// over three runs of hops hand-offs.
func goroutineRing(pe *goshmem.PE, g, hops int) time.Duration {
	pe.SetThreadLevel(goshmem.ThreadMultiple)
	const runs = 3
	words, err := goshmem.Calloc[int64](pe, runs*g) // g fresh words per run
	if err != nil {
		panic(err)
	}
	var took []time.Duration
	for run := range runs {
		tok := words[run*g : (run+1)*g]
		t0 := time.Now()
		done := make(chan struct{})
		for k := range g {
			go func() {
				for h := k; h < hops; h += g {
					goshmem.WaitUntil(pe, &tok[k], goshmem.CmpEQ, int64(h))
					goshmem.P(pe.Ctx(), &tok[(k+1)%g], int64(h+1), pe.MyPE())
				}
				done <- struct{}{}
			}()
		}
		for range g {
			<-done
		}
		took = append(took, time.Since(t0)/time.Duration(hops))
	}
	slices.Sort(took)
	return took[runs/2]
}

// handOverWithin bounds a hand-off between goroutines of one PE in
// goroutineRing: some microseconds here, 1-3 ms when a waiter spun
// through its whole spin holding the CPU that the goroutine it waited
// for needed (the fit policy's 32000 polls).
const handOverWithin = 250 * time.Microsecond

// TestWaitHandsOverToGoroutines: PEs that fit their CPUs spin in a
// wait, but a spinning waiter lets the other goroutines of its process
// run every few microseconds: the goroutine that will end the wait may
// be one of them (a THREAD_MULTIPLE PE's workers), three of them on one
// PE pass a token in microseconds, not in the milliseconds of a whole
// spin.
func TestWaitHandsOverToGoroutines(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("pes=%d", n), func(t *testing.T) {
			hop := make([]time.Duration, n)
			err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, n, func(pe *goshmem.PE) {
				hop[pe.MyPE()] = goroutineRing(pe, 3, 300)
			})
			if err != nil {
				t.Fatal(err)
			}
			for q, d := range hop {
				if d > handOverWithin {
					t.Errorf("PE %d: a hand-off between goroutines of the PE took %v, want at most %v", q, d, handOverWithin)
				}
			}
			t.Logf("hand-off per PE: %v", hop)
		})
	}
}

// TestGoroutinePEsPark: PEs that are goroutines of one process wait by
// parking in the process, never in a futex wait of an OS thread. While
// PE 0 is late for a barrier, every other PE's doorbell counts parked
// goroutines only (multiples of wait.ParkUnit, none in the futex half);
// when PE 0 arrives, the barrier completes at once, not at the waits'
// timeouts.
func TestGoroutinePEsPark(t *testing.T) {
	const n = 8
	var late time.Duration
	err := goshmem.RunLocalConfig(longSleep, n, func(pe *goshmem.PE) {
		if m := pe.WaitPolicy().Mode; m != wait.Goroutines {
			panic(fmt.Sprintf("goroutine PEs wait in mode %v", m))
		}
		pe.BarrierAll()
		if pe.MyPE() == 0 {
			deadline := time.Now().Add(5 * time.Second)
			for q := 1; q < n; q++ {
				// The value that ended the loop is the one checked: a
				// parked PE that is woken (a ring, the end of its sleep)
				// unregisters for a moment before it parks again, and
				// a second read may see that moment's 0 (seen once in
				// CI, with other packages' tests on the CPUs).
				s := pe.Sleepers(q)
				for s == 0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
					s = pe.Sleepers(q)
				}
				if s == 0 || s%wait.ParkUnit != 0 {
					panic(fmt.Sprintf("PE %d waiting in a barrier: doorbell Sleepers %#x, want parked goroutines only (multiples of %#x)", q, s, wait.ParkUnit))
				}
			}
			time.Sleep(1500 * time.Millisecond) // the sleeps reach their 500 ms
			t0 := time.Now()
			pe.BarrierAll()
			late = time.Since(t0)
		} else {
			pe.BarrierAll()
		}
		pe.BarrierAll()
	})
	if err != nil {
		t.Fatal(err)
	}
	if late > wokenWithin {
		t.Errorf("the barrier took %v after the last PE arrived: the parked PEs were not woken", late)
	}
}

// TestPanicWakesParkedPEs: when a PE fails, every other goroutine PE,
// parked in any kind of wait, is woken and stops at once, not at its
// next timeout.
func TestPanicWakesParkedPEs(t *testing.T) {
	const n = 8
	var panicked atomic.Int64
	ended := make([]atomic.Int64, n)
	start := time.Now()
	err := goshmem.RunLocalConfig(longSleep, n, func(pe *goshmem.PE) {
		x, _ := goshmem.Calloc[int64](pe, 8)
		sig, _ := goshmem.Calloc[uint64](pe, 1)
		me := pe.MyPE()
		if me == 0 {
			pe.SetLock(&x[4])
		}
		pe.BarrierAll()
		defer func() { ended[me].Store(int64(time.Since(start))) }()
		switch me {
		case 0:
			time.Sleep(1500 * time.Millisecond) // the others park, their sleeps reach 500 ms
			panicked.Store(int64(time.Since(start)))
			panic("PE 0 fails")
		case 1, 2:
			goshmem.WaitUntil(pe, &x[0], goshmem.CmpEQ, 1)
		case 3:
			goshmem.SignalWaitUntil(pe, &sig[0], goshmem.CmpEQ, 1)
		case 4:
			pe.SetLock(&x[4])
		case 5:
			goshmem.WaitUntilAll(pe, x[:4], nil, goshmem.CmpEQ, 1)
		default:
			pe.BarrierAll()
		}
	})
	var pe *node.PanicError
	if !errors.As(err, &pe) || pe.PE != 0 {
		t.Fatalf("RunLocal = %v, want PE 0's panic", err)
	}
	for q := 1; q < n; q++ {
		if d := time.Duration(ended[q].Load() - panicked.Load()); d > wokenWithin {
			t.Errorf("PE %d stopped %v after PE 0 failed", q, d)
		}
	}
}

// TestJobErrorNamesPanic: the job error that stops the other PEs of
// the process of a PE that panicked says what it panicked with, so a
// goroutine that dies of that error (before Main reports the panic)
// does not lose the cause.
func TestJobErrorNamesPanic(t *testing.T) {
	var seen atomic.Pointer[string]
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 2, func(pe *goshmem.PE) {
		if pe.MyPE() == 0 {
			time.Sleep(50 * time.Millisecond) // PE 1 waits in the barrier
			panic("boom 7f3a: the cause")
		}
		defer func() {
			r := recover()
			msg := fmt.Sprint(r)
			seen.Store(&msg)
			panic(r)
		}()
		pe.BarrierAll()
	})
	var pe *node.PanicError
	if !errors.As(err, &pe) || pe.PE != 0 {
		t.Fatalf("RunLocal = %v, want PE 0's panic", err)
	}
	m := seen.Load()
	if m == nil {
		t.Fatal("PE 1's barrier returned")
	}
	for _, want := range []string{"PE 0", "panicked", "boom 7f3a: the cause"} {
		if !strings.Contains(*m, want) {
			t.Errorf("PE 1 stopped with %q, which does not name %q", *m, want)
		}
	}
}

// spinFor counts iterations of a CPU-bound loop for d.
func spinFor(d time.Duration) int64 {
	var n int64
	x := uint64(1)
	for t0 := time.Now(); ; {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		n++
		if n&63 == 0 && time.Since(t0) >= d {
			break
		}
	}
	if x == 0 {
		n++ // keep x live
	}
	return n
}

// TestWaitingDoesNotStarveWork: waiting never starves real work. A
// CPU-bound goroutine of the process must keep at least 30% of the
// speed it has alone (in iterations per 100 ms) while 8 goroutine PEs
// do barriers in a loop, and while they wait for a PE that is late. On
// a machine with fewer CPUs than GOMAXPROCS it has less to start with;
// the bound is generous for loaded test machines.
func TestWaitingDoesNotStarveWork(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for about a second")
	}
	const n = 8
	const window = 100 * time.Millisecond
	best := func(f func() int64) int64 {
		var b int64
		for range 3 {
			b = max(b, f())
		}
		return b
	}
	alone := best(func() int64 { return spinFor(window) })
	for _, phase := range []string{"barrier loop", "waiting for a late PE"} {
		var stop atomic.Bool
		var during int64
		err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, n, func(pe *goshmem.PE) {
			pe.BarrierAll()
			if pe.MyPE() == 0 {
				go func() {
					during = best(func() int64 { return spinFor(window) })
					stop.Store(true)
				}()
			}
			if phase == "barrier loop" {
				x, _ := goshmem.Calloc[int32](pe, 1)
				for {
					pe.BarrierAll()
					if pe.MyPE() == 0 && stop.Load() {
						x[0] = 1
					}
					pe.BarrierAll()
					if goshmem.G(pe.Ctx(), &x[0], 0) == 1 {
						break
					}
				}
			} else {
				if pe.MyPE() == 0 {
					for !stop.Load() {
						time.Sleep(time.Millisecond)
					}
				}
				pe.BarrierAll()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		ratio := float64(during) / float64(alone)
		t.Logf("%s: CPU-bound goroutine at %.2f of its speed alone (%d vs %d iterations per %v; GOMAXPROCS %d)",
			phase, ratio, during, alone, window, runtime.GOMAXPROCS(0))
		if ratio < 0.3 {
			t.Errorf("%s: a CPU-bound goroutine ran at %.2f of its speed alone while 8 PEs waited; want >= 0.30", phase, ratio)
		}
	}
}

// TestPanicDuringBarriers: a goroutine PE fails at a random point while
// the others run barriers (the team barrier, and small reductions) in a
// loop, so its
// failure lands at every moment of their waits: before, while and after
// they register to park. Control-only waits of goroutine PEs park
// without a timer, so a failure they missed would leave them parked for
// good; every job must end within a second of the panic.
func TestPanicDuringBarriers(t *testing.T) {
	const n = 8
	rng := rand.New(rand.NewPCG(1, 2))
	for rep := range 40 {
		victim, at := rng.IntN(n), rng.IntN(200)
		var panicked atomic.Int64
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			done <- goshmem.RunLocalConfig(longSleep, n, func(pe *goshmem.PE) {
				// A team of all but PE 0, backwards: its barrier is the
				// teams' own, not the world's.
				team, err := goshmem.TeamWorld(pe).SplitStrided(n-1, -1, n-1, nil)
				if err != nil {
					panic(err)
				}
				x, err := goshmem.Calloc[int64](pe, 2)
				if err != nil {
					panic(err)
				}
				for i := 0; ; i++ {
					if pe.MyPE() == victim && i == at {
						panicked.Store(int64(time.Since(start)))
						panic("the victim fails")
					}
					switch {
					case i%3 == 2:
						// A small reduction: combined on the central
						// counter when the PEs outnumber the Ps.
						goshmem.SumReduce(goshmem.TeamWorld(pe), x[1:], x[:1])
					case i%2 == 0:
						pe.BarrierAll()
					case team != nil: // (PE 0 is not a member)
						team.Sync()
					}
				}
			})
		}()
		select {
		case err := <-done:
			var pe *node.PanicError
			if !errors.As(err, &pe) || pe.PE != victim {
				t.Fatalf("rep %d: RunLocal = %v, want PE %d's panic", rep, err, victim)
			}
			if d := time.Since(start) - time.Duration(panicked.Load()); d > time.Second {
				t.Errorf("rep %d: the job ended %v after PE %d failed at barrier %d", rep, d, victim, at)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("rep %d: the PEs still wait 30 s after PE %d failed at barrier %d", rep, victim, at)
		}
	}
}
