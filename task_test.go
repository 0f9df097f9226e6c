package goshmem_test

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
	"github.com/goshmem/goshmem/node"
)

// chunkLog is what a test task records of each chunk, in the owner's
// heap: how many times it ran, and which PE ran it last (plus one).
type chunkLog struct {
	runs []int64
	who  []int64
}

func newChunkLog(p *goshmem.PE, n int) chunkLog {
	return chunkLog{mustCalloc[int64](p, n), mustCalloc[int64](p, n)}
}

// record notes that PE me ran chunks [lo, hi) of owner's execution.
func (l chunkLog) record(p *goshmem.PE, owner, lo, hi int) {
	runs, who := goshmem.Ptr(p, l.runs, owner), goshmem.Ptr(p, l.who, owner)
	if runs == nil {
		panic("a chunk ran on a PE that does not map its owner's heap")
	}
	for c := lo; c < hi; c++ {
		atomic.AddInt64(&runs[c], 1)
		atomic.StoreInt64(&who[c], int64(p.MyPE())+1)
	}
}

// check verifies, on the owner, that chunks [0, n) ran exactly once
// each, chunk 0 on the owner (work first), and the rest of the log not
// at all, clears the log, and returns how many chunks other PEs ran.
func (l chunkLog) check(p *goshmem.PE, n int) (stolen int) {
	if w := atomic.LoadInt64(&l.who[0]); n > 0 && w != int64(p.MyPE())+1 {
		panic(fmt.Sprintf("PE %d: chunk 0 ran on PE %d: the owner must take chunks first", p.MyPE(), w-1))
	}
	for c := range l.runs {
		want := int64(0)
		if c < n {
			want = 1
		}
		if got := atomic.LoadInt64(&l.runs[c]); got != want {
			panic(fmt.Sprintf("PE %d: chunk %d of %d ran %d times, want %d", p.MyPE(), c, n, got, want))
		}
		if c < n && atomic.LoadInt64(&l.who[c]) != int64(p.MyPE())+1 {
			stolen++
		}
		atomic.StoreInt64(&l.runs[c], 0)
		atomic.StoreInt64(&l.who[c], 0)
	}
	return stolen
}

// spinFor burns the CPU for about d (work that a thief can take over,
// unlike a sleep).
func spinFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// TestTaskEveryChunkOnce: every PE executes tasks of random sizes at
// once, over many iterations, while the others steal from it in the
// barrier that follows; every chunk must run exactly once, and with
// stealing off (or alone) only on its owner. With stealing, PE 0's
// first batch waits for a theft, so at least one chunk is stolen.
func TestTaskEveryChunkOnce(t *testing.T) {
	const maxChunks = 3000
	for _, tc := range []struct {
		name  string
		npes  int
		steal bool
	}{
		{"1", 1, true}, {"2", 2, true}, {"4", 4, true}, {"8", 8, true}, {"4-off", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stolen, thefts atomic.Int64
			hold := tc.steal && tc.npes > 1 // PE 0's first call waits for a theft
			cfg := node.Config{HeapSize: testHeap, TaskNoSteal: !tc.steal}
			runCfg(t, cfg, tc.npes, func(p *goshmem.PE) {
				log := newChunkLog(p, maxChunks)
				task := goshmem.NewTask(p, func(owner, lo, hi int) {
					log.record(p, owner, lo, hi)
					if owner != p.MyPE() {
						thefts.Add(1)
					} else if owner == 0 && lo == 0 && hold {
						// The first time, PE 0 holds its first batch until
						// another PE ran one of its chunks: stealing is
						// then certain, whatever the machine's load.
						for end := time.Now().Add(20 * time.Second); thefts.Load() == 0; runtime.Gosched() {
							if time.Now().After(end) {
								panic("no PE stole a chunk within 20 s")
							}
						}
						hold = false
					}
				})
				rng := rand.New(rand.NewPCG(uint64(p.MyPE()), 7))
				for it := 0; it < 40; it++ {
					n := rng.IntN(maxChunks + 1)
					if p.MyPE() == 0 {
						n = maxChunks
					}
					task.Execute(n)
					p.BarrierAll() // thieves of the slower owners wait here
					stolen.Add(int64(log.check(p, n)))
					p.BarrierAll()
				}
				task.Destroy()
			})
			if tc.steal && tc.npes > 1 && stolen.Load() == 0 {
				t.Errorf("no chunk was stolen in 40 iterations of %d PEs", tc.npes)
			}
			if (!tc.steal || tc.npes == 1) && stolen.Load() != 0 {
				t.Errorf("SHMEM_TASK_STEAL off, but %d chunks ran on other PEs than their owner", stolen.Load())
			}
			t.Logf("%d chunks stolen", stolen.Load())
		})
	}
}

// TestTaskOwnerPanicRecovered: when a chunk the owner runs panics and
// the program recovers (as Go code does around a unit of work), the PE
// can execute again, and the new execution runs each of its chunks
// exactly once: the failed execution's thieves finish the chunks they
// had claimed first, and no one claims another (before, the PE stayed
// marked busy forever: its next Execute panicked, and its large puts
// and gets were never shared again).
func TestTaskOwnerPanicRecovered(t *testing.T) {
	for _, tc := range []struct {
		npes  int
		steal bool
	}{{1, true}, {2, true}, {4, true}, {2, false}} {
		t.Run(fmt.Sprintf("pes=%d/steal=%v", tc.npes, tc.steal), func(t *testing.T) {
			const n = 400
			var gen atomic.Int32 // 0: the execution that fails, 1: the next
			var thefts atomic.Int64
			var runs [n]atomic.Int32
			thieves := tc.npes > 1 && tc.steal
			cfg := node.Config{HeapSize: testHeap, TaskNoSteal: !tc.steal}
			runCfg(t, cfg, tc.npes, func(p *goshmem.PE) {
				task := goshmem.NewTask(p, func(owner, lo, hi int) {
					if owner != p.MyPE() {
						thefts.Add(1)
						time.Sleep(100 * time.Microsecond) // still running when the owner panics
					}
					// Read after the sleep: a chunk of the failed execution
					// that ran on after the next had begun would count.
					g := gen.Load()
					if owner == p.MyPE() && g == 0 && lo == 0 {
						// Fail only once a thief has run a chunk.
						for end := time.Now().Add(20 * time.Second); thieves && thefts.Load() == 0; runtime.Gosched() {
							if time.Now().After(end) {
								panic("no PE stole a chunk within 20 s")
							}
						}
						panic("the owner's chunk failed")
					}
					if g == 1 {
						for c := lo; c < hi; c++ {
							runs[c].Add(1)
						}
					}
				})
				if p.MyPE() == 0 {
					func() {
						defer func() {
							if r := recover(); r != "the owner's chunk failed" {
								t.Errorf("Execute panicked with %v, want the chunk's panic", r)
							}
						}()
						task.Execute(n)
					}()
					gen.Store(1)
					task.Execute(n)
				}
				p.BarrierAll()
				task.Destroy()
			})
			for c := range runs {
				if k := runs[c].Load(); k != 1 {
					t.Errorf("chunk %d of the execution after the recovered panic ran %d times, want once", c, k)
				}
			}
		})
	}
}

// TestTaskStolenInEveryWait: while PE 0 executes a task, the other PEs
// wait in one routine; PE 0's first chunk does not end until another
// PE has run a chunk, so the test hangs (and fails) unless that
// routine steals. PE 0 then lets the waits end.
func TestTaskStolenInEveryWait(t *testing.T) {
	const chunks = 64
	waits := []struct {
		name string
		// wait is what PEs other than 0 do; release is what PE 0 does
		// after its Execute to end it (nil: the same as wait, for the
		// collectives).
		wait, release func(p *goshmem.PE, w []int64, sig []uint64, lock []int64)
	}{
		{"WaitUntil",
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				goshmem.WaitUntil(p, &w[0], goshmem.CmpEQ, 1)
			},
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				for q := 1; q < p.NPEs(); q++ {
					goshmem.AtomicSet(p.Ctx(), &w[0], 1, q)
				}
			}},
		{"WaitUntilAll",
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				goshmem.WaitUntilAll(p, w[:2], nil, goshmem.CmpEQ, 1)
			},
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				for q := 1; q < p.NPEs(); q++ {
					goshmem.Put(p.Ctx(), w[:2], []int64{1, 1}, q)
				}
				p.Quiet()
			}},
		{"SignalWaitUntil",
			func(p *goshmem.PE, _ []int64, sig []uint64, _ []int64) {
				goshmem.SignalWaitUntil(p, &sig[0], goshmem.CmpGE, 1)
			},
			func(p *goshmem.PE, w []int64, sig []uint64, _ []int64) {
				for q := 1; q < p.NPEs(); q++ {
					goshmem.PutSignal(p.Ctx(), w[2:3], []int64{5}, &sig[0], 1, goshmem.SignalSet, q)
				}
				p.Quiet()
			}},
		{"SetLock",
			func(p *goshmem.PE, _ []int64, _ []uint64, lock []int64) {
				p.SetLock(&lock[0])
				p.ClearLock(&lock[0])
			},
			func(p *goshmem.PE, _ []int64, _ []uint64, lock []int64) {
				p.ClearLock(&lock[0])
			}},
		{"BarrierAll",
			func(p *goshmem.PE, _ []int64, _ []uint64, _ []int64) { p.BarrierAll() }, nil},
		{"SumReduce",
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				goshmem.SumReduce(goshmem.TeamWorld(p), w[4:5], w[3:4])
			}, nil},
		{"Broadcast",
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				goshmem.Broadcast(goshmem.TeamWorld(p), w[5:6], w[3:4], 0)
			}, nil},
		{"WaitUntilAny",
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				goshmem.WaitUntilAny(p, w[:2], nil, goshmem.CmpEQ, 1)
			},
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				for q := 1; q < p.NPEs(); q++ {
					goshmem.AtomicSet(p.Ctx(), &w[1], 1, q)
				}
			}},
		{"Team.Sync",
			func(p *goshmem.PE, _ []int64, _ []uint64, _ []int64) { goshmem.TeamWorld(p).Sync() }, nil},
		{"SumReduce4KiB",
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				goshmem.SumReduce(goshmem.TeamWorld(p), w[1024:1536], w[16:528])
			}, nil},
		{"Collect",
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				goshmem.Collect(goshmem.TeamWorld(p), w[600:600+p.NPEs()], w[3:4])
			}, nil},
		{"Alltoall",
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				goshmem.Alltoall(goshmem.TeamWorld(p), w[700:700+p.NPEs()], w[800:800+p.NPEs()], 1)
			}, nil},
		{"FCollect",
			func(p *goshmem.PE, w []int64, _ []uint64, _ []int64) {
				goshmem.FCollect(goshmem.TeamWorld(p), w[8:8+p.NPEs()], w[3:4])
			}, nil},
	}
	for _, npes := range []int{2, 4, 8} { // 4 and 8 on 2 CPUs: the central barrier
		for _, wt := range waits {
			t.Run(fmt.Sprintf("%s/%d", wt.name, npes), func(t *testing.T) {
				run(t, npes, testHeap, func(p *goshmem.PE) {
					w := mustCalloc[int64](p, 2048)
					sig := mustCalloc[uint64](p, 1)
					lock := mustCalloc[int64](p, 1)
					log := newChunkLog(p, chunks)
					var thefts []int64 = mustCalloc[int64](p, 1)
					task := goshmem.NewTask(p, func(owner, lo, hi int) {
						if owner == p.MyPE() && lo == 0 {
							// Hold the first batch until a thief ran a chunk.
							for end := time.Now().Add(20 * time.Second); atomic.LoadInt64(&thefts[0]) == 0; {
								if time.Now().After(end) {
									panic("no PE stole a chunk within 20 s")
								}
								runtime.Gosched()
							}
						}
						if owner != p.MyPE() {
							atomic.AddInt64(&goshmem.Ptr(p, thefts, owner)[0], 1)
						}
						log.record(p, owner, lo, hi)
					})
					if p.MyPE() == 0 {
						p.SetLock(&lock[0]) // SetLock's waiters wait for PE 0 to clear it
					}
					p.BarrierAll()
					if p.MyPE() == 0 {
						task.Execute(chunks)
						if wt.release == nil {
							wt.wait(p, w, sig, lock)
						} else {
							wt.release(p, w, sig, lock)
						}
					} else {
						wt.wait(p, w, sig, lock)
					}
					p.BarrierAll()
					if p.MyPE() == 0 {
						if s := log.check(p, chunks); s == 0 {
							panic("no chunk ran on another PE")
						}
					}
					p.BarrierAll()
					task.Destroy()
				})
			})
		}
	}
}

// TestTaskWaitInsideChunk: a chunk that waits (here, on a thief, for a
// flag that the owner sets from its first chunk once a thief waits)
// waits plainly: the thief does not steal again from inside it, so
// chunks never nest on a PE.
func TestTaskWaitInsideChunk(t *testing.T) {
	const npes, chunks = 3, 40
	var maxDepth atomic.Int32
	var thefts atomic.Int64
	run(t, npes, testHeap, func(p *goshmem.PE) {
		flag := mustCalloc[int64](p, 1)
		log := newChunkLog(p, chunks)
		var depth atomic.Int32 // of this PE
		task := goshmem.NewTask(p, func(owner, lo, hi int) {
			d := depth.Add(1)
			for m := maxDepth.Load(); d > m && !maxDepth.CompareAndSwap(m, d); m = maxDepth.Load() {
			}
			if owner != p.MyPE() {
				thefts.Add(1)
				goshmem.WaitUntil(p, &flag[0], goshmem.CmpEQ, 1)
			} else {
				if lo == 0 {
					// Set the flag once a thief waits for it in a chunk.
					for end := time.Now().Add(20 * time.Second); thefts.Load() == 0; runtime.Gosched() {
						if time.Now().After(end) {
							panic("no PE stole a chunk within 20 s")
						}
					}
					time.Sleep(10 * time.Millisecond)
					for q := range p.NPEs() {
						goshmem.AtomicSet(p.Ctx(), &flag[0], 1, q)
					}
				}
				spinFor(200 * time.Microsecond)
			}
			log.record(p, owner, lo, hi)
			depth.Add(-1)
		})
		if p.MyPE() == 0 {
			task.Execute(chunks)
		}
		p.BarrierAll()
		if p.MyPE() == 0 {
			if log.check(p, chunks) == 0 {
				panic("no chunk was stolen")
			}
		}
		p.BarrierAll()
		task.Destroy()
	})
	if d := maxDepth.Load(); d != 1 {
		t.Errorf("chunks nested %d deep on one PE, want 1", d)
	}
}

// TestTaskErrors: programmer errors panic naming the routine.
func TestTaskErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(p *goshmem.PE)
		want string
	}{
		{"negative", func(p *goshmem.PE) {
			goshmem.NewTask(p, func(int, int, int) {}).Execute(-1)
		}, "Task.Execute: -1 chunks out of range [0, 2097151]"},
		{"too many", func(p *goshmem.PE) {
			goshmem.NewTask(p, func(int, int, int) {}).Execute(goshmem.MaxTaskChunks + 1)
		}, "out of range"},
		{"destroyed", func(p *goshmem.PE) {
			task := goshmem.NewTask(p, func(int, int, int) {})
			task.Destroy()
			task.Execute(1)
		}, "Task.Execute: task 0 was destroyed"},
		{"nested Execute", func(p *goshmem.PE) {
			var task *goshmem.Task
			task = goshmem.NewTask(p, func(owner, lo, hi int) {
				if owner == p.MyPE() {
					task.Execute(1)
				}
			})
			task.Execute(4)
		}, "already executes a task"},
		{"nil body", func(p *goshmem.PE) { goshmem.NewTask(p, nil) }, "NewTask: body is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runErr(t, 1, testHeap, tc.fn)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTaskThiefPanics: a chunk that panics on a thief fails the job
// with an error naming the owner, the task and the chunk; the owner's
// Execute does not hang.
func TestTaskThiefPanics(t *testing.T) {
	err := runErr(t, 2, testHeap, func(p *goshmem.PE) {
		never := mustCalloc[int64](p, 1)
		task := goshmem.NewTask(p, func(owner, lo, hi int) {
			if owner != p.MyPE() {
				panic(errors.New("bad cell"))
			}
			// The owner's first batch waits for what never comes: only
			// the job's failure ends it, so a thief must run a chunk.
			goshmem.WaitUntil(p, &never[0], goshmem.CmpEQ, 1)
		})
		if p.MyPE() == 0 {
			task.Execute(1000)
		}
		p.BarrierAll()
	})
	var pe *goshmem.PanicError
	var tp *goshmem.TaskPanicError
	if !errors.As(err, &pe) || !errors.As(err, &tp) {
		t.Fatalf("RunLocal returned %v, want a PanicError holding a TaskPanicError", err)
	}
	if tp.Owner != 0 || tp.Thief != 1 || tp.Task != 0 || tp.Chunk <= 0 || tp.Chunk >= 1000 ||
		!strings.Contains(tp.Name, "TestTaskThiefPanics") || tp.Value.(error).Error() != "bad cell" {
		t.Errorf("TaskPanicError %+v: want owner 0, thief 1, task 0, a chunk in (0, 1000), the body's name, the value", tp)
	}
	for _, w := range []string{"chunk", "task 0", "of PE 0", "run by PE 1", "bad cell"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// TestTaskMismatchedBodies: PEs that create different bodies under one
// handle are told so when one steals from the other.
func TestTaskMismatchedBodies(t *testing.T) {
	err := runErr(t, 2, testHeap, func(p *goshmem.PE) {
		var task *goshmem.Task
		never := mustCalloc[int64](p, 1)
		if p.MyPE() == 0 {
			// Its first batch waits until the job fails: PE 1 must steal.
			task = goshmem.NewTask(p, func(owner, lo, hi int) { goshmem.WaitUntil(p, &never[0], goshmem.CmpEQ, 1) })
		} else {
			task = goshmem.NewTask(p, func(owner, lo, hi int) {})
		}
		if p.MyPE() == 0 {
			task.Execute(2000)
		}
		p.BarrierAll()
	})
	if err == nil || !strings.Contains(err.Error(), "tasks must be created in the same order on every PE") {
		t.Fatalf("error %v, want the mismatch named", err)
	}
}

// TestTaskNearFirst: a thief takes chunks from the owners on its NUMA
// node before any other (4 PEs, nodes 0, 0, 1, 1 simulated; PEs 0 and
// 2 own tasks, PEs 1 and 3 start waiting once both are open): each
// thief's sequence of owners has every chunk of its node's owner
// before the first of the other.
func TestTaskNearFirst(t *testing.T) {
	cfg := node.Config{HeapSize: testHeap, NUMANodes: []int{0, 0, 1, 1}}
	var seqs [4][]int
	var open, total atomic.Int64
	runCfg(t, cfg, 4, func(p *goshmem.PE) {
		me := p.MyPE()
		if me == 1 || me == 3 {
			p.SetTaskSteal(false) // not before both tasks are open (NewTask's barrier waits too)
		}
		task := goshmem.NewTask(p, func(owner, lo, hi int) {
			if owner == me && lo == 0 {
				// Both tasks are open before anyone steals, and both
				// owners hold their first batch until a thief ran a
				// chunk: stealing is certain, whatever the load.
				for open.Add(1); open.Load() < 2 || total.Load() == 0; {
					runtime.Gosched()
				}
			}
			for range hi - lo {
				spinFor(20 * time.Microsecond)
				runtime.Gosched() // 4 goroutine PEs on 2 Ps: let the waiting ones run
			}
			if owner != me && (me == 1 || me == 3) {
				seqs[me] = append(seqs[me], owner)
				total.Add(1)
			}
		})
		if me == 0 || me == 2 {
			task.Execute(400)
		} else {
			for open.Load() < 2 {
				runtime.Gosched()
			}
			p.SetTaskSteal(true)
		}
		p.BarrierAll()
		task.Destroy()
	})
	for _, thief := range []int{1, 3} {
		nearOwner := thief - 1
		s := seqs[thief]
		if i := slices.IndexFunc(s, func(o int) bool { return o != nearOwner }); i >= 0 && slices.Contains(s[i:], nearOwner) {
			t.Errorf("PE %d (node %d) stole from PE %d before it had finished with PE %d, on its node: %v", thief, thief/2, s[i], nearOwner, s)
		}
	}
	if total.Load() == 0 {
		t.Error("PEs 1 and 3 stole nothing")
	}
}

// TestTaskSatisfiedWaitLateByOneChunk: a thief checks its own wait
// after every chunk, so once what it waits for has happened it starts
// no further chunk in that wait: the wait ends at most one chunk late.
// PE 1 waits in WaitUntil and steals 20 ms chunks of PE 0's task; PE 2
// sets PE 1's flag 50 ms in (PE 1 is then in a chunk). No chunk may
// start on PE 1 between then and the end of its wait, and the wait
// must end within one chunk.
func TestTaskSatisfiedWaitLateByOneChunk(t *testing.T) {
	const chunk = 20 * time.Millisecond
	var setAt, returnedAt atomic.Int64 // unix ns
	var starts, ends []int64           // when PE 1 started and ended each chunk it stole (unix ns)
	run(t, 3, testHeap, func(p *goshmem.PE) {
		flag := mustCalloc[int64](p, 1)
		me := p.MyPE()
		task := goshmem.NewTask(p, func(owner, lo, hi int) {
			if me == 1 {
				starts = append(starts, time.Now().UnixNano())
			}
			for range hi - lo {
				time.Sleep(chunk) // a chunk that lets the others run
			}
			if me == 1 {
				ends = append(ends, time.Now().UnixNano())
			}
		})
		switch me {
		case 0:
			task.Execute(20)
		case 1:
			goshmem.WaitUntil(p, &flag[0], goshmem.CmpEQ, 1)
			returnedAt.Store(time.Now().UnixNano())
		case 2:
			p.SetTaskSteal(false) // only PE 1 steals
			time.Sleep(50 * time.Millisecond)
			setAt.Store(time.Now().UnixNano())
			goshmem.AtomicSet(p.Ctx(), &flag[0], 1, 1)
		}
		p.BarrierAll()
		task.Destroy()
	})
	set, ret := setAt.Load(), returnedAt.Load()
	if len(starts) == 0 || starts[0] > set {
		t.Fatalf("PE 1 stole no chunk before its flag was set (chunks started at %v, flag set at %v)", starts, set)
	}
	for _, s := range starts {
		if s > set+int64(time.Millisecond) && s < ret {
			t.Errorf("PE 1 started a chunk %v after its wait was satisfied, before the wait ended", time.Duration(s-set))
		}
	}
	// One chunk late at most: the wait ends soon after the end of the
	// chunk PE 1 was in when its flag was set (measured, not assumed to
	// take 20 ms: on a loaded machine a sleep of 20 ms took 75 ms once),
	// with as much again for the scheduler.
	last := int64(0)
	for k, s := range starts {
		if s <= set && k < len(ends) {
			last = max(last, ends[k])
		}
	}
	if late := time.Duration(ret - max(last, set)); late > chunk {
		t.Errorf("PE 1's wait ended %v after its flag was set and %v after the chunk it was in ended: it ran more than that chunk", time.Duration(ret-set), late)
	}
}
