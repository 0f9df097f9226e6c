package node_test

// Random collectives checked against a naive reference: in each round
// every PE draws the same collective (the generator is seeded by the
// round), the same team out of a pool (the world, TeamShared, strided
// splits forwards and backwards, both teams of a 2-D split), the same
// size, from a few elements to well past every algorithm's threshold
// (the 24-byte and 632-byte dropboxes, flat combining's 1 KiB, recursive
// doubling's 16 KiB, the shared copies' 64 KiB), and a root or strides;
// every member checks every element of its result against what the
// definition computes from the members' inputs, which every PE can
// compute. Across hosts the teams span hosts in every shape the pool
// gives.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

const (
	rcMaxReduce = 32 << 10 // elements (int64) of the largest reduce or broadcast: 256 KiB
	rcMaxBlock  = 8 << 10  // elements of the largest block of the gathers and alltoalls: 64 KiB
)

// rcIn is element i of world PE p's input in round r.
func rcIn(p, r, i int) int64 {
	x := uint64(p+1)*0x9E3779B97F4A7C15 ^ uint64(r)*0xC2B2AE3D27D4EB4F ^ uint64(i)*0x165667B19E3779F9
	x ^= x >> 29
	return int64(x*0xBF58476D1CE4E5B9) >> 20 // small enough that sums of a few never overflow
}

// rcCount draws an element count up to max, favouring the sizes around
// the algorithms' thresholds.
func rcCount(g *rand.Rand, max int) int {
	var n int
	switch g.IntN(6) {
	case 0:
		n = 1 + g.IntN(3) // up to 24 bytes: the small dropboxes
	case 1:
		n = 1 + g.IntN(80) // up to 640 bytes: the exchange's dropboxes
	case 2:
		n = 64 + g.IntN(2048) // flat combining's 1 KiB, recursive doubling's 16 KiB
	case 3:
		n = 1 + g.IntN(max)
	default:
		n = 1 + g.IntN(16)
	}
	return min(n, max)
}

func init() { scenarios["coll-random"] = scenarioRandomColl }

func scenarioRandomColl(pe *goshmem.PE) {
	me, np := pe.MyPE(), pe.NPEs()
	rounds := testRounds(400)
	src, err1 := goshmem.Malloc[int64](pe, max(rcMaxReduce, np*rcMaxBlock))
	dst, err2 := goshmem.Malloc[int64](pe, max(rcMaxReduce, np*rcMaxBlock))
	if err1 != nil || err2 != nil {
		fail(pe, "Malloc: %v %v", err1, err2)
	}
	w := goshmem.TeamWorld(pe)
	// The pool of teams, made alike on every PE; members[i] lists team
	// i's world PEs in team order.
	var teams []*goshmem.Team
	var members [][]int
	add := func(t *goshmem.Team, start, stride, size int) {
		teams = append(teams, t)
		m := make([]int, size)
		for i := range m {
			m[i] = start + i*stride
		}
		members = append(members, m)
	}
	add(w, 0, 1, np)
	split := func(start, stride, size int) {
		if os.Getenv("GOSHMEM_TEST_VERBOSE") != "" {
			fmt.Printf("PE %d split %d %d %d\n", me, start, stride, size)
		}
		t, err := w.SplitStrided(start, stride, size, nil)
		if err != nil {
			fail(pe, "SplitStrided(%d, %d, %d): %v", start, stride, size, err)
		}
		add(t, start, stride, size)
	}
	split(np-1, -1, np)
	if np >= 3 {
		split(1, 1, np-1)
		split(0, 2, (np+1)/2)
	}
	if np >= 4 {
		x, y, err := w.Split2D(2, nil, nil)
		if err != nil {
			fail(pe, "Split2D: %v", err)
		}
		// x: the row of me (2 wide), y: the column; both differ by PE, so
		// each PE records its own rows' members.
		row, col := me/2*2, me%2
		add(x, row, 1, min(2, np-row))
		add(y, col, 2, (np-col+1)/2)
	}
	// Two slots whose teams are destroyed and made again now and then
	// (below): splits of the world or of the backwards team, so that
	// team slots and scratch blocks are reused.
	churn := []int{len(teams), len(teams) + 1}
	split(0, 1, np)
	split(np-1, -1, np)
	// TeamShared: the PEs of this PE's host, in world order.
	sh := goshmem.TeamShared(pe)
	var shm []int
	for i := range sh.NPEs() {
		shm = append(shm, sh.TranslatePE(i, w))
	}
	teams, members = append(teams, sh), append(members, shm)

	calls, checked := 0, 0
	verbose := os.Getenv("GOSHMEM_TEST_VERBOSE") != ""
	for r := 0; r < rounds; r++ {
		g := rand.New(rand.NewPCG(uint64(r)+1, 99))
		if g.IntN(8) == 0 {
			// Every PE: destroy a churned team and split a new one off
			// the world or the backwards team (members[1], every PE).
			ci := churn[g.IntN(len(churn))]
			if teams[ci] != nil {
				teams[ci].Destroy()
			}
			parent, pm := w, members[0]
			if g.IntN(2) == 0 {
				parent, pm = teams[1], members[1]
			}
			start, stride := g.IntN(np), []int{-2, -1, 1, 2, 3}[g.IntN(5)]
			most := 1 // members from start on with this stride
			for i := start + stride; i >= 0 && i < np; i += stride {
				most++
			}
			size := 1 + g.IntN(most)
			t, err := parent.SplitStrided(start, stride, size, nil)
			if err != nil {
				fail(pe, "round %d: SplitStrided(%d, %d, %d): %v", r, start, stride, size, err)
			}
			m := make([]int, size)
			for i := range m {
				m[i] = pm[start+i*stride]
			}
			teams[ci], members[ci] = t, m
		}
		ti := g.IntN(len(teams))
		kind := g.IntN(8)
		t, mem := teams[ti], members[ti]
		// 2-D split teams and TeamShared differ by PE: a PE takes part
		// in the round only where the team is its own.
		if t == nil {
			continue
		}
		n := t.NPEs()
		if n != len(mem) {
			fail(pe, "round %d: team %d has %d PEs, want %d", r, ti, n, len(mem))
		}
		my := t.MyPE()
		if mem[my] != me {
			fail(pe, "round %d: team %d: member %d is world PE %d, want %d", r, ti, my, mem[my], me)
		}
		// Every member of a team draws the same numbers from here on
		// (members of another row or host draw theirs for their team).
		g = rand.New(rand.NewPCG(uint64(r)+1, uint64(ti)*1000+uint64(mem[0])))
		in := func(m, i int) int64 { return rcIn(mem[m], r, i) }
		for i := range src {
			src[i] = rcIn(me, r, i)
		}
		calls++
		if verbose {
			fmt.Printf("PE %d round %d kind %d team %d %v\n", me, r, kind, ti, mem)
		}
		check := func(what string, i int, got, want int64) {
			checked++
			if got != want {
				fail(pe, "round %d: %s on team %d (world PEs %v), member %d: element %d is %d, want %d", r, what, ti, mem, my, i, got, want)
			}
		}
		switch kind {
		case 0: // broadcast
			k, root := rcCount(g, rcMaxReduce), g.IntN(n)
			goshmem.Broadcast(t, dst[:k], src[:k], root)
			what := fmt.Sprintf("Broadcast of %d from %d", k, root)
			for i := range k {
				check(what, i, dst[i], in(root, i))
			}
		case 1, 2: // reductions
			k := rcCount(g, rcMaxReduce)
			op := g.IntN(5)
			names := []string{"SumReduce", "MinReduce", "MaxReduce", "XorReduce", "OrReduce"}
			inPlace := g.IntN(4) == 0
			d, s := dst[:k], src[:k]
			if inPlace {
				d = s
			}
			switch op {
			case 0:
				goshmem.SumReduce(t, d, s)
			case 1:
				goshmem.MinReduce(t, d, s)
			case 2:
				goshmem.MaxReduce(t, d, s)
			case 3:
				goshmem.XorReduce(t, d, s)
			case 4:
				goshmem.OrReduce(t, d, s)
			}
			what := fmt.Sprintf("%s of %d (in place %v)", names[op], k, inPlace)
			for i := range k {
				want := in(0, i)
				for m := 1; m < n; m++ {
					v := in(m, i)
					switch op {
					case 0:
						want += v
					case 1:
						want = min(want, v)
					case 2:
						want = max(want, v)
					case 3:
						want ^= v
					case 4:
						want |= v
					}
				}
				check(what, i, d[i], want)
			}
		case 3: // fcollect
			k := rcCount(g, rcMaxBlock)
			goshmem.FCollect(t, dst[:n*k], src[:k])
			what := fmt.Sprintf("FCollect of %d", k)
			for m := range n {
				for i := range k {
					check(what, m*k+i, dst[m*k+i], in(m, i))
				}
			}
		case 4: // collect: member m gives counts[m] elements, some none
			counts := make([]int, n)
			for m := range counts {
				if g.IntN(5) > 0 {
					counts[m] = rcCount(g, rcMaxBlock)
				}
			}
			goshmem.Collect(t, dst, src[:counts[my]])
			at := 0
			what := fmt.Sprintf("Collect of %v", counts)
			for m := range n {
				for i := range counts[m] {
					check(what, at, dst[at], in(m, i))
					at++
				}
			}
		case 5: // alltoall: block j of member m goes to member j
			k := rcCount(g, rcMaxBlock/2)
			goshmem.Alltoall(t, dst[:n*k], src[:n*k], k)
			what := fmt.Sprintf("Alltoall of %d", k)
			for m := range n {
				for i := range k {
					check(what, m*k+i, dst[m*k+i], in(m, my*k+i))
				}
			}
		case 6: // alltoalls with strides
			k := rcCount(g, 256)
			ds, ss := 1+g.IntN(3), 1+g.IntN(3)
			goshmem.Alltoalls(t, dst[:(n*k-1)*ds+1], src[:(n*k-1)*ss+1], ds, ss, k)
			what := fmt.Sprintf("Alltoalls of %d (strides %d, %d)", k, ds, ss)
			for m := range n {
				for i := range k {
					check(what, (m*k+i)*ds, dst[(m*k+i)*ds], in(m, (my*k+i)*ss))
				}
			}
		case 7: // prefix sums
			k := rcCount(g, rcMaxBlock)
			incl := g.IntN(2) == 0
			if incl {
				goshmem.SumInscan(t, dst[:k], src[:k])
			} else {
				goshmem.SumExscan(t, dst[:k], src[:k])
			}
			what := fmt.Sprintf("scan of %d (inclusive %v)", k, incl)
			for i := range k {
				var want int64
				for m := 0; m < my || (incl && m == my); m++ {
					want += in(m, i)
				}
				if !incl && my == 0 {
					continue // undefined on member 0
				}
				check(what, i, dst[i], want)
			}
		}
	}
	pe.BarrierAll()
	for _, t := range teams[1:] {
		if t != nil && t != sh {
			t.Destroy()
		}
	}
	fmt.Printf("PE %d ok random coll: %d calls, %d elements checked\n", me, calls, checked)
}

// TestMultiProcessRandomColl runs the random collectives on one host:
// processes that map each other, goroutine PEs mixed in, more PEs than
// CPUs (bound: the CPU groups), and through CMA.
func TestMultiProcessRandomColl(t *testing.T) {
	runJobCases(t, "coll-random", "ok random coll", []jobCase{
		{"4x1-xpmem", 4, 1, nil},
		{"5x2-mixed", 5, 2, nil},
		{"6x3-goroutines", 6, 3, nil},
		{"3x1-cma", 3, 1, []string{"SHMEM_TRANSPORT=cma"}},
		{"6x1-domains", 6, 1, []string{"GOSHMEM_SIM_DOMAINS=3"}}, // hierarchical on one host
		{"8x4-oversubscribed", 8, 4, nil},
	})
}

// TestRandomCollInProcess runs them among goroutine PEs of this process.
func TestRandomCollInProcess(t *testing.T) {
	if err := goshmem.RunLocalConfig(node.Config{HeapSize: 8 << 20}, 5, scenarioRandomColl); err != nil {
		t.Fatal(err)
	}
}
