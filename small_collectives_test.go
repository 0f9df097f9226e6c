package goshmem_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// TestSmallCollectivesNoBarrier: inside a shared-memory domain, a
// collective of a few elements is one publication per member and one
// read of each other member's (the dropbox exchange): it runs no team
// barrier round. (FCollect, Collect and Alltoall used to run two.)
func TestSmallCollectivesNoBarrier(t *testing.T) {
	for _, n := range []int{2, 3} {
		err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, n, func(pe *goshmem.PE) {
			w := goshmem.TeamWorld(pe)
			src, _ := goshmem.Malloc[int64](pe, 16)
			dst, _ := goshmem.Malloc[int64](pe, 64)
			ops := map[string]func(){
				"SumReduce": func() { goshmem.SumReduce(w, dst[:4], src[:4]) },
				"Broadcast": func() { goshmem.Broadcast(w, dst[:4], src[:4], 1) },
				"FCollect":  func() { goshmem.FCollect(w, dst, src[:4]) },
				"Collect":   func() { goshmem.Collect(w, dst, src[:1+pe.MyPE()]) },
				"Alltoall":  func() { goshmem.Alltoall(w, dst, src, 2) },
				"Alltoalls": func() { goshmem.Alltoalls(w, dst, src, 2, 2, 1) },
			}
			for _, name := range []string{"SumReduce", "Broadcast", "FCollect", "Collect", "Alltoall", "Alltoalls"} {
				before := goshmem.SyncRounds(w)
				for range 10 {
					ops[name]()
				}
				if d := goshmem.SyncRounds(w) - before; d != 0 {
					t.Errorf("%d PEs, PE %d: 10 small %s ran %d team barrier rounds, want 0", n, pe.MyPE(), name, d)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// smallVal is element i of member PE m's source in iteration it.
func smallVal(it, m, i int) int64 { return int64(it)*1_000_003 + int64(m)*10_007 + int64(i)*31 + 1 }

// TestSmallCollectivesMixed runs random back-to-back collectives of
// random small sizes (on both sides of the dropboxes, 632 bytes for exchanges and 312
// for broadcasts: up to 90 int64) on the world and on random strided teams, interleaved, and
// checks every result against a reference computed from the formula of
// the sources. Every kind of exchange shares a team's two dropboxes, so
// a dropbox reused before a slow member read it shows up as a wrong
// value; the sources are overwritten right after each call, as a caller
// may.
func TestSmallCollectivesMixed(t *testing.T) {
	iters := 3000
	if testing.Short() {
		iters = 300
	}
	for _, npes := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(npes), func(t *testing.T) {
			err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, npes, func(pe *goshmem.PE) {
				world := goshmem.TeamWorld(pe)
				teams := []*goshmem.Team{world}
				shape := rand.New(rand.NewPCG(uint64(npes), 7)) // the same on every PE
				for range 3 {
					size := 1 + shape.IntN(npes)
					stride := 1 + shape.IntN(2)
					for (size-1)*stride >= npes {
						size--
					}
					start := shape.IntN(npes - (size-1)*stride)
					team, err := world.SplitStrided(start, stride, size, nil)
					if err != nil {
						t.Errorf("SplitStrided(%d, %d, %d): %v", start, stride, size, err)
						return
					}
					teams = append(teams, team) // nil on non-members

				}
				const max = 90
				src, _ := goshmem.Malloc[int64](pe, max*npes*2)
				dst, _ := goshmem.Malloc[int64](pe, max*npes*2)
				rng := rand.New(rand.NewPCG(uint64(npes), 11)) // the same on every PE
				for it := 0; it < iters; it++ {
					// Every PE draws the same op, size and team index;
					// a PE outside the team skips the call.
					op, n, ti := rng.IntN(6), 1+rng.IntN(max), rng.IntN(4)
					if rng.IntN(2) == 0 {
						// Half the calls at 8-32 B, either side of
						// the small dropboxes' 24 bytes.
						n = 1 + rng.IntN(4)
					}
					tm := teams[ti]
					if tm == nil {
						continue
					}
					if err := smallStep(pe, tm, op, n, it, src, dst); err != nil {
						t.Errorf("%d PEs, PE %d, it %d: %v", npes, pe.MyPE(), it, err)
						return
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// smallStep runs collective op on tm with n elements per member in
// iteration it and checks the result (world PE numbers name the
// members' sources).
func smallStep(pe *goshmem.PE, tm *goshmem.Team, op, n, it int, src, dst []int64) error {
	me, np := tm.MyPE(), tm.NPEs()
	wpe := func(m int) int { return tm.WorldPE(m) }
	fill := func(k int) {
		for i := 0; i < k; i++ {
			src[i] = smallVal(it, pe.MyPE(), i)
		}
	}
	clear(dst)
	check := func(what string, i int, want int64) error {
		if dst[i] != want {
			return fmt.Errorf("%s on %d members, n %d: dst[%d] = %d, want %d", what, np, n, i, dst[i], want)
		}
		return nil
	}
	switch op {
	case 0: // SumReduce, in place half the time
		fill(n)
		d := dst[:n]
		if it%2 == 0 {
			d = src[:n]
		}
		goshmem.SumReduce(tm, d, src[:n])
		copy(dst, d)
		for i := 0; i < n; i++ {
			var want int64
			for m := 0; m < np; m++ {
				want += smallVal(it, wpe(m), i)
			}
			if err := check("SumReduce", i, want); err != nil {
				return err
			}
		}
	case 1: // Broadcast from a rotating root
		fill(n)
		root := it % np
		goshmem.Broadcast(tm, dst[:n], src[:n], root)
		for i := 0; i < n; i++ {
			if err := check(fmt.Sprintf("Broadcast from %d", root), i, smallVal(it, wpe(root), i)); err != nil {
				return err
			}
		}
	case 2: // FCollect
		fill(n)
		goshmem.FCollect(tm, dst, src[:n])
		for m := 0; m < np; m++ {
			for i := 0; i < n; i++ {
				if err := check("FCollect", m*n+i, smallVal(it, wpe(m), i)); err != nil {
					return err
				}
			}
		}
	case 3: // Collect, lengths differing per member (0 included)
		length := func(m int) int { return (n + m*37) % 91 }
		fill(length(me))
		goshmem.Collect(tm, dst, src[:length(me)])
		at := 0
		for m := 0; m < np; m++ {
			for i := 0; i < length(m); i++ {
				if err := check("Collect", at, smallVal(it, wpe(m), i)); err != nil {
					return err
				}
				at++
			}
		}
	case 4, 5: // Alltoall, and Alltoalls with strides 2
		k := max(1, n/np)
		st := op - 3
		fill(np * k * st)
		goshmem.Alltoalls(tm, dst, src, st, st, k)
		for m := 0; m < np; m++ {
			for i := 0; i < k; i++ {
				if err := check(fmt.Sprintf("Alltoalls stride %d", st), (m*k+i)*st, smallVal(it, wpe(m), (me*k+i)*st)); err != nil {
					return err
				}
			}
		}
	}
	src[0] = -1 // the source may be reused at once
	return nil
}
