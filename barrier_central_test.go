package goshmem_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// TestTeamBarrierSeparatesPhases checks Team.Sync and Team.Barrier
// under every barrier algorithm (and across simulated domains, and
// through CMA, where the central barrier falls back to the
// dissemination barrier for teams) against the definition of a barrier:
// no member leaves sync k before every member has entered it. Members
// arrive in random order with random delays and announce their arrival
// with an atomic add on the team's first member; teams are the world,
// the world backwards, the rows and columns of a 2-D split, TeamShared
// and TeamHost, used interleaved with the PE's own BarrierAll and
// SyncAll (whose barrier the teams that hold every PE in order share
// under the default algorithm).
func TestTeamBarrierSeparatesPhases(t *testing.T) {
	for _, cfg := range []node.Config{
		{HeapSize: 1 << 20, BarrierAlgorithm: "dissemination"},
		{HeapSize: 1 << 20, BarrierAlgorithm: "tree"},
		{HeapSize: 1 << 20, BarrierAlgorithm: "central"},
		{HeapSize: 1 << 20, BarrierAlgorithm: "central", SimDomains: 2},
		{HeapSize: 1 << 20, BarrierAlgorithm: "central", Transport: "cma"},
		{HeapSize: 1 << 20},
		{HeapSize: 1 << 20, Transport: "cma"},
		{HeapSize: 1 << 20, SimDomains: 2},
	} {
		for _, n := range []int{1, 2, 3, 5, 8} {
			name := fmt.Sprintf("%s domains=%d %s n=%d", cfg.BarrierAlgorithm, cfg.SimDomains, cfg.Transport, n)
			err := goshmem.RunLocalConfig(cfg, n, func(pe *goshmem.PE) {
				w := goshmem.TeamWorld(pe)
				back, err := w.SplitStrided(n-1, -1, n, nil)
				if err != nil {
					panic(err)
				}
				x, y, err := w.Split2D(2, nil, nil)
				if err != nil {
					panic(err)
				}
				teams := []*goshmem.Team{w, back, x, y, nil, goshmem.TeamShared(pe), goshmem.TeamHost(pe)} // nil: pe.BarrierAll, pe.SyncAll
				ctr, _ := goshmem.Calloc[int64](pe, len(teams))
				c := pe.Ctx()
				rng := rand.New(rand.NewPCG(uint64(pe.MyPE()), uint64(n)))
				for k := int64(1); k <= 60; k++ {
					for i, tm := range teams {
						if rng.IntN(8) == 0 {
							time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
						}
						first, size := 0, n
						barrier, sync := pe.BarrierAll, pe.SyncAll
						if tm != nil {
							first, size, barrier, sync = tm.WorldPE(0), tm.NPEs(), tm.Barrier, tm.Sync
						}
						goshmem.AtomicAdd(c, &ctr[i], 1, first)
						if k%2 == 0 {
							barrier()
						} else {
							sync()
						}
						if got, want := goshmem.AtomicFetch(c, &ctr[i], first), k*int64(size); got < want {
							panic(fmt.Sprintf("team %d sync %d let PE %d through after %d arrivals, want %d", i, k, pe.MyPE(), got, want))
						}
						sync() // nobody arrives at sync k+1 before all checked sync k
					}
				}
				back.Destroy()
				x.Destroy()
				y.Destroy()
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
}

// TestCentralBarrierTeamSlotReuse destroys and re-creates teams back to
// back under the central barrier: a team's arrival count lives in its
// first member's slot, which that member may take again for the next
// team while the other members are still polling the count of the
// destroyed team's last sync (they have not yet seen its last arrival).
// Clearing the count there would leave them waiting forever.
func TestCentralBarrierTeamSlotReuse(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		err := runErrCfg(t, node.Config{HeapSize: 1 << 20, BarrierAlgorithm: "central"}, n, func(pe *goshmem.PE) {
			w := goshmem.TeamWorld(pe)
			for i := range 300 {
				tm, err := w.SplitStrided(0, 1, n, nil)
				if err != nil {
					panic(err)
				}
				if i%3 == 0 {
					time.Sleep(time.Duration(pe.MyPE()) * 10 * time.Microsecond)
				}
				tm.Sync()
				tm.Destroy()
			}
		})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
	}
}
