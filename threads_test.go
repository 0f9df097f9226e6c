package goshmem_test

import (
	"sync"
	"testing"

	"github.com/goshmem/goshmem"
)

// TestThreadMultipleAllocWhileRMA: under SHMEM_THREAD_MULTIPLE (every
// PE's level) a goroutine of a PE may allocate and free - collectives
// over the world - while other goroutines of the same PE do RMA, AMOs
// and waits on their own contexts, create and destroy contexts, and run
// collectives on a team of their own. Run with -race, in every data
// path mode (SHMEM_DEBUG checks each RMA against the live allocations
// while the allocator changes them).
func TestThreadMultipleAllocWhileRMA(t *testing.T) {
	const n, rounds = 2, 40
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			runCfg(t, m.cfg, n, func(p *goshmem.PE) {
				me, peer := p.MyPE(), 1-p.MyPE()
				x := mustCalloc[int64](p, 16)
				sub, err := goshmem.TeamWorld(p).SplitStrided(0, 1, n, nil)
				if err != nil {
					panic(err)
				}
				var wg sync.WaitGroup
				wg.Add(3)
				go func() { // the world's allocations
					defer wg.Done()
					var keep []int64
					for i := 0; i < rounds; i++ {
						y := mustMalloc[int64](p, 8+i)
						keep, err = goshmem.Realloc(p, keep, i+1)
						if err != nil {
							panic(err)
						}
						goshmem.Free(p, y)
					}
					goshmem.Free(p, keep)
				}()
				go func() { // RMA and AMOs on a context of its own
					defer wg.Done()
					c, err := p.CtxCreate(goshmem.CtxPrivate)
					if err != nil {
						panic(err)
					}
					for i := 0; i < 20*rounds; i++ {
						goshmem.P(c, &x[me], int64(i), peer)
						goshmem.Put(c, x[2+2*me:4+2*me], []int64{int64(i), int64(i)}, peer)
						_ = goshmem.G(c, &x[peer], peer)
						goshmem.AtomicAdd(c, &x[8], 1, peer)
					}
					c.Quiet()
					c.Destroy()
				}()
				go func() { // collectives on the team, contexts made and destroyed
					defer wg.Done()
					for i := 0; i < rounds; i++ {
						goshmem.SumReduce(sub, x[10:12], x[12:14])
						c, err := sub.CtxCreate(0)
						if err != nil {
							panic(err)
						}
						goshmem.AtomicAdd(c, &x[9], 1, peer)
						c.Destroy()
					}
					sub.Sync()
				}()
				wg.Wait()
				p.BarrierAll()
				if x[8] != 20*rounds || x[9] != rounds {
					t.Errorf("PE %d: AMO counts %d and %d, want %d and %d", me, x[8], x[9], 20*rounds, rounds)
				}
				sub.Destroy()
			})
		})
	}
}
