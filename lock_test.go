package goshmem_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem"
)

// TestLockMutualExclusion: n PEs increment a counter on PE 0 with a
// non-atomic G then P inside SetLock/ClearLock; the total is exact and
// no two PEs are ever inside at once.
func TestLockMutualExclusion(t *testing.T) {
	const iters = 200
	for _, m := range modes {
		for _, n := range []int{1, 2, 4} {
			if m.name != "mapped" && n != 4 {
				continue
			}
			t.Run(fmt.Sprintf("%s/n=%d", m.name, n), func(t *testing.T) {
				runCfg(t, m.cfg, n, func(p *goshmem.PE) {
					c := p.Ctx()
					me := p.MyPE()
					lock := mustCalloc[int64](p, 1)
					ctr := mustCalloc[int64](p, 2) // [0] counter, [1] PEs inside
					p.BarrierAll()
					for i := 0; i < iters; i++ {
						p.SetLock(&lock[0])
						if in := goshmem.AtomicFetchInc(c, &ctr[1], 0); in != 0 {
							t.Errorf("PE %d: %d other PEs inside the lock", me, in)
						}
						v := goshmem.G(c, &ctr[0], 0)
						if i%16 == 0 {
							runtime.Gosched() // widen the window
						}
						goshmem.P(c, &ctr[0], v+1, 0)
						goshmem.AtomicAdd(c, &ctr[1], -1, 0)
						p.ClearLock(&lock[0])
					}
					p.BarrierAll()
					if me == 0 && ctr[0] != int64(n*iters) {
						t.Errorf("counter = %d, want %d", ctr[0], n*iters)
					}
				})
			})
		}
	}
}

// TestTestLock: TestLock acquires a free lock and returns false; it
// returns true (not acquired) while another PE holds it, whether that PE
// took it with SetLock or TestLock.
func TestTestLock(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			runCfg(t, m.cfg, 3, func(p *goshmem.PE) {
				me := p.MyPE()
				locks := mustCalloc[int64](p, 2)
				step := func(who int, f func()) {
					if me == who {
						f()
					}
					p.BarrierAll()
				}
				expect := func(who int, lock int, want bool, what string) {
					step(who, func() {
						if got := p.TestLock(&locks[lock]); got != want {
							t.Errorf("PE %d: TestLock(lock %d) %s = %v, want %v", who, lock, what, got, want)
						}
					})
				}
				expect(0, 0, false, "on a free lock")
				expect(1, 0, true, "held by PE 0 (TestLock)")
				expect(2, 0, true, "held by PE 0 (TestLock)")
				expect(1, 1, false, "on the other, free, lock")
				expect(2, 1, true, "held by PE 1")
				step(0, func() { p.ClearLock(&locks[0]) })
				step(1, func() { p.ClearLock(&locks[1]) })
				step(2, func() { p.SetLock(&locks[0]) })
				expect(0, 0, true, "held by PE 2 (SetLock)")
				expect(1, 0, true, "held by PE 2 (SetLock)")
				step(2, func() { p.ClearLock(&locks[0]) })
				expect(1, 0, false, "after PE 2 released it")
				step(1, func() { p.ClearLock(&locks[0]) })
				// Every PE can take both locks again.
				for q := 0; q < 3; q++ {
					expect(q, 0, false, "free again")
					expect(q, 1, false, "free again")
					step(q, func() { p.ClearLock(&locks[0]); p.ClearLock(&locks[1]) })
				}
			})
		})
	}
}

// TestTestLockByHolder: a PE that holds a lock and tests it (from its
// own goroutine or a second one, as a THREAD_MULTIPLE program may) gets
// true, and the test changes nothing: the PEs queued behind it in
// SetLock still get the lock in turn when it clears it. (TestLock once
// reset the holder's queue node first, dropping the link of the PE
// queued behind it: ClearLock then waited forever for that link.)
func TestTestLockByHolder(t *testing.T) {
	for _, m := range modes {
		for _, other := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/goroutine=%v", m.name, other), func(t *testing.T) {
				runCfg(t, m.cfg, 3, func(p *goshmem.PE) {
					c := p.Ctx()
					lock := mustCalloc[int64](p, 1)
					order := mustCalloc[int64](p, 4) // on PE 0: [0] next slot, [1:] who got the lock
					p.BarrierAll()
					if p.MyPE() == 0 {
						p.SetLock(&lock[0])
					}
					p.BarrierAll()
					if p.MyPE() != 0 {
						// PE 1 queues first, then PE 2 behind it.
						if p.MyPE() == 2 {
							awaitQueued(t, p, lock, 1)
						}
						p.SetLock(&lock[0])
						slot := goshmem.AtomicFetchInc(c, &order[0], 0)
						goshmem.P(c, &order[1+slot], int64(p.MyPE()), 0)
						p.ClearLock(&lock[0])
					} else {
						awaitQueued(t, p, lock, 2)
						test := func() bool { return p.TestLock(&lock[0]) }
						var held bool
						if other {
							done := make(chan bool)
							go func() { done <- test() }()
							held = <-done
						} else {
							held = test()
						}
						if !held {
							t.Errorf("TestLock by the lock's holder = false (acquired), want true")
						}
						goshmem.P(c, &order[1], 0, 0)
						order[0] = 1
						p.ClearLock(&lock[0])
					}
					p.BarrierAll()
					if p.MyPE() == 0 && (order[0] != 3 || order[1] != 0 || order[2] != 1 || order[3] != 2) {
						t.Errorf("lock taken by %v (%d takers), want PEs 0, 1, 2 in queue order", order[1:], order[0])
					}
				})
			})
		}
	}
}

// awaitQueued waits until the PE that queued last in SetLock on the MCS
// lock has linked itself in: PE q's copy of the word (node/lock.go:
// high half next<<2|held<<1|waiting on each PE) names a successor. PE 0's
// successor is PE 1, PE 1's is PE 2, so PE q waits for PE q-1's link.
func awaitQueued(t *testing.T, p *goshmem.PE, lock []int64, q int) {
	deadline := time.Now().Add(10 * time.Second)
	for goshmem.AtomicFetch(p.Ctx(), &lock[0], q-1)>>34 == 0 {
		if time.Now().After(deadline) {
			t.Errorf("PE %d never queued on the lock", q)
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestTestLockSpin: acquiring with a TestLock loop also excludes, mixed
// with SetLock on other PEs.
func TestTestLockSpin(t *testing.T) {
	const iters = 100
	run(t, 3, testHeap, func(p *goshmem.PE) {
		c := p.Ctx()
		lock := mustCalloc[int64](p, 1)
		ctr := mustCalloc[int64](p, 1)
		p.BarrierAll()
		for i := 0; i < iters; i++ {
			if p.MyPE() == 0 {
				p.SetLock(&lock[0])
			} else {
				for p.TestLock(&lock[0]) {
					runtime.Gosched()
				}
			}
			v := goshmem.G(c, &ctr[0], 0)
			runtime.Gosched()
			goshmem.P(c, &ctr[0], v+1, 0)
			p.ClearLock(&lock[0])
		}
		p.BarrierAll()
		if p.MyPE() == 0 && ctr[0] != 3*iters {
			t.Errorf("counter = %d, want %d", ctr[0], 3*iters)
		}
	})
}

// TestLocksIndependent: holding one lock does not block another.
func TestLocksIndependent(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		locks := mustCalloc[int64](p, 4)
		flag := mustCalloc[int64](p, 1)
		if p.MyPE() == 0 {
			p.SetLock(&locks[0])
			p.SetLock(&locks[3])
		}
		p.BarrierAll()
		if p.MyPE() == 1 {
			// Locks 1 and 2 are free although 0 and 3 are held.
			p.SetLock(&locks[1])
			p.SetLock(&locks[2])
			p.ClearLock(&locks[2])
			p.ClearLock(&locks[1])
			goshmem.AtomicSet(p.Ctx(), &flag[0], 1, 0)
			p.SetLock(&locks[3]) // waits for PE 0
			p.ClearLock(&locks[3])
		} else {
			goshmem.WaitUntil(p, &flag[0], goshmem.CmpEQ, 1)
			p.ClearLock(&locks[3])
			p.ClearLock(&locks[0])
		}
		p.BarrierAll()
		if p.TestLock(&locks[p.MyPE()]) {
			t.Errorf("PE %d: lock %d not free at the end", p.MyPE(), p.MyPE())
		}
	})
}

// TestLockBadArgument: SetLock, TestLock and ClearLock given a lock
// outside the heap, misaligned, or (SHMEM_DEBUG) freed panic naming the
// routine and lock before touching any memory.
func TestLockBadArgument(t *testing.T) {
	var goVar int64
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			runCfg(t, m.cfg, 2, func(p *goshmem.PE) {
				words := mustCalloc[int64](p, 2)
				freed := mustCalloc[int64](p, 1)
				goshmem.Free(p, freed)
				p.BarrierAll()
				cases := []struct {
					name string
					lock *int64
					want string
				}{
					{"Go variable", &goVar, "lock ["},
					{"misaligned", (*int64)(unsafe.Add(unsafe.Pointer(&words[0]), 4)), "lock 0x"},
				}
				if m.cfg.Debug {
					cases = append(cases, struct {
						name string
						lock *int64
						want string
					}{"freed", &freed[0], "lock ["})
				}
				for _, tc := range cases {
					for _, r := range []struct {
						routine string
						fn      func(*int64)
					}{{"SetLock", p.SetLock}, {"TestLock", func(l *int64) { p.TestLock(l) }}, {"ClearLock", p.ClearLock}} {
						v := panicOf(func() { r.fn(tc.lock) })
						msg, _ := v.(string)
						if want := "goshmem." + r.routine + ": " + tc.want; !strings.HasPrefix(msg, want) {
							t.Errorf("%s, %s: panic %v, want a message starting %q", r.routine, tc.name, v, want)
						}
					}
				}
				p.BarrierAll()
				if words[0] != 0 || words[1] != 0 {
					t.Errorf("PE %d: memory next to the bad lock changed: %v", p.MyPE(), words)
				}
			})
		})
	}
}

// TestClearLockNotHeld: ClearLock by a PE that does not hold the lock
// (it is free, another PE holds it, or this PE cleared it already)
// panics naming the routine, instead of waiting forever for a
// successor's link or releasing the holder's lock; the lock still works
// after.
func TestClearLockNotHeld(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			runCfg(t, m.cfg, 2, func(p *goshmem.PE) {
				lock := mustCalloc[int64](p, 1)
				count := mustCalloc[int64](p, 1)
				p.BarrierAll()
				mustPanic := func(what string) {
					t.Helper()
					v := panicOf(func() { p.ClearLock(&lock[0]) })
					msg, _ := v.(string)
					if !strings.HasPrefix(msg, "goshmem.ClearLock: lock ") || !strings.Contains(msg, "not held by PE") {
						t.Errorf("PE %d: ClearLock of %s: panic %v, want goshmem.ClearLock: ... not held by PE ...", p.MyPE(), what, v)
					}
				}
				mustPanic("a free lock")
				p.BarrierAll()
				if p.MyPE() == 0 {
					p.SetLock(&lock[0])
				}
				p.BarrierAll()
				if p.MyPE() == 1 {
					mustPanic("a lock PE 0 holds")
				}
				p.BarrierAll()
				if p.MyPE() == 0 {
					p.ClearLock(&lock[0])
					mustPanic("a lock this PE cleared already")
				}
				p.BarrierAll()
				for range 100 {
					p.SetLock(&lock[0])
					goshmem.P(p.Ctx(), &count[0], goshmem.G(p.Ctx(), &count[0], 0)+1, 0)
					p.ClearLock(&lock[0])
				}
				p.BarrierAll()
				if p.MyPE() == 0 && count[0] != 200 {
					t.Errorf("count after 2 x 100 locked increments = %d, want 200", count[0])
				}
			})
		})
	}
}
