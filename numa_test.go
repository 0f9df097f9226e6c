package goshmem_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
	"github.com/goshmem/goshmem/numa"
)

// fakeHomes places npes PEs on a fake sysfs tree of package numa with
// the launcher's placement and returns each PE's home NUMA node.
func fakeHomes(t *testing.T, tree string, npes int, mapBy string) []int {
	t.Helper()
	topo, err := numa.Discover("numa/testdata/" + tree)
	if err != nil {
		t.Fatal(err)
	}
	places, err := numa.Place(topo, topo.Usable(nil), npes, mapBy, numa.BindCore)
	if err != nil {
		t.Fatal(err)
	}
	homes := make([]int, npes)
	for i, p := range places {
		homes[i] = p.Node
	}
	return homes
}

// TestTeamNUMAFakeTopologies runs jobs whose PEs sit where the launcher
// would put them on the fake machines of numa/testdata (2 sockets with
// SMT, a socket split in 4 NUMA nodes, a memoryless node, a cpuset), and
// checks TeamNUMA, the levels of the hierarchy, and reductions and
// broadcasts run level by level against a naive reference on random
// inputs.
func TestTeamNUMAFakeTopologies(t *testing.T) {
	type tc struct {
		tree  string
		npes  int
		mapBy string
		sim   int // GOSHMEM_SIM_DOMAINS
	}
	var cases []tc
	for _, tree := range []string{"2socket-smt", "4numa-socket", "memoryless", "cpuset"} {
		for _, mapBy := range []string{numa.MapCore, numa.MapNUMA, numa.MapSocket} {
			cases = append(cases, tc{tree, 6, mapBy, 0})
		}
	}
	cases = append(cases,
		tc{"2socket-smt", 8, numa.MapCore, 0},    // 4 + 4: the NUMA level only
		tc{"4numa-socket", 8, numa.MapNUMA, 4},   // domains of 4 PEs over 4 nodes: three levels
		tc{"2socket-smt", 5, numa.MapNUMA, 2},    // uneven domains and nodes
		tc{"2socket-smt", 20, numa.MapSocket, 0}, // oversubscribed: PEs share cores
		tc{"memoryless", 3, numa.MapNUMA, 0},     // one PE per node
		tc{"4numa-socket", 16, numa.MapCore, 0},  // every core taken
		tc{"4numa-socket", 7, numa.MapSocket, 3}, // one socket, domains cut across nodes
		tc{"2socket-smt", 4, numa.MapCore, 0},    // one node: flat
	)
	for _, c := range cases {
		homes := fakeHomes(t, c.tree, c.npes, c.mapBy)
		for _, mode := range []string{"always", "auto"} {
			name := fmt.Sprintf("%s/n=%d/map-by=%s/sim=%d/%s", c.tree, c.npes, c.mapBy, c.sim, mode)
			t.Run(name, func(t *testing.T) {
				cfg := node.Config{HeapSize: 1 << 20, NUMANodes: homes, SimDomains: c.sim,
					NUMACollectives: mode, HeapPolicy: "none"}
				err := goshmem.RunLocalConfig(cfg, c.npes, func(pe *goshmem.PE) {
					checkNUMATeams(t, pe, homes, c.sim)
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func checkNUMATeams(t *testing.T, pe *goshmem.PE, homes []int, sim int) {
	me, n := pe.MyPE(), pe.NPEs()
	domain := func(q int) int {
		if sim > 0 {
			return q / sim
		}
		return 0
	}
	// TeamNUMA: the PEs of TeamShared (here every PE) on my home node.
	var want []int
	for q := range n {
		if homes[q] == homes[me] {
			want = append(want, q)
		}
	}
	tn := goshmem.TeamNUMA(pe)
	var got []int
	for i := range tn.NPEs() {
		got = append(got, tn.WorldPE(i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("PE %d (node %d): TeamNUMA = %v, want %v", me, homes[me], got, want)
	}
	if pe.NUMANode(me) != homes[me] {
		t.Errorf("PE %d: NUMANode = %d, want %d", me, pe.NUMANode(me), homes[me])
	}

	// The levels: my (domain, node) group; then, on its first member,
	// the first members of the node groups of my domain (when the domain
	// spans nodes); then, on the first member of the domain, the first
	// member of every domain (when there are several).
	w := goshmem.TeamWorld(pe)
	spans, multi := false, sim > 0 && sim < n
	for q := range n {
		for r := range n {
			if domain(q) == domain(r) && homes[q] != homes[r] {
				spans = true
			}
		}
	}
	if spans || multi {
		levels := goshmem.HierarchyLevels(w)
		var wantLevels [][]int
		group := func(key func(q int) any, among []int) []int {
			var g []int
			for _, q := range among {
				if key(q) == key(me) {
					g = append(g, q)
				}
			}
			return g
		}
		firsts := func(key func(q int) any, among []int) []int {
			seen := map[any]bool{}
			var f []int
			for _, q := range among {
				if !seen[key(q)] {
					seen[key(q)] = true
					f = append(f, q)
				}
			}
			return f
		}
		all := make([]int, n)
		for q := range all {
			all[q] = q
		}
		var keys []func(q int) any
		if spans {
			keys = append(keys, func(q int) any { return [2]int{domain(q), homes[q]} })
		}
		if multi {
			keys = append(keys, func(q int) any { return domain(q) })
		}
		keys = append(keys, func(int) any { return 0 })
		cands, in := all, true
		for _, key := range keys {
			if !in {
				wantLevels = append(wantLevels, nil)
				continue
			}
			g := group(key, cands)
			wantLevels = append(wantLevels, g)
			in = g[0] == me
			cands = firsts(key, cands)
		}
		if fmt.Sprint(levels) != fmt.Sprint(wantLevels) {
			t.Errorf("PE %d: hierarchy levels %v, want %v", me, levels, wantLevels)
		}
	}

	// Reductions and broadcasts of random vectors, small and large,
	// against sums and copies computed here from every PE's inputs.
	src, _ := goshmem.Malloc[int64](pe, 3000)
	dst, _ := goshmem.Malloc[float64](pe, 3000)
	fsrc, _ := goshmem.Malloc[float64](pe, 3000)
	isum, _ := goshmem.Malloc[int64](pe, 3000)
	input := func(q, it, size int) ([]int64, []float64) {
		r := rand.New(rand.NewPCG(uint64(q), uint64(it*7919+size)))
		iv, fv := make([]int64, size), make([]float64, size)
		for i := range iv {
			iv[i] = r.Int64N(1 << 40)
			fv[i] = float64(r.IntN(1 << 20)) // exact in float64 sums
		}
		return iv, fv
	}
	for it := range 9 {
		size := []int{1, 15, 3000}[it%3]
		iv, fv := input(me, it, size)
		copy(src, iv)
		copy(fsrc, fv)
		goshmem.SumReduce(w, isum[:size], src[:size])
		goshmem.MaxReduce(w, dst[:size], fsrc[:size])
		wantSum, wantMax := make([]int64, size), make([]float64, size)
		for q := range n {
			qi, qf := input(q, it, size)
			for i := range size {
				wantSum[i] += qi[i]
				if q == 0 || qf[i] > wantMax[i] {
					wantMax[i] = qf[i]
				}
			}
		}
		if !slices.Equal(isum[:size], wantSum) || !slices.Equal(dst[:size], wantMax) {
			t.Errorf("PE %d it %d size %d: reduction differs from the reference", me, it, size)
			return
		}
		root := (it * 5) % n
		goshmem.Broadcast(w, isum[:size], src[:size], root)
		ri, _ := input(root, it, size)
		if !slices.Equal(isum[:size], ri) {
			t.Errorf("PE %d it %d size %d: broadcast from %d differs from the root's source", me, it, size, root)
			return
		}
		w.Sync()
	}
	// Team-local too: the world in reverse order mixes the nodes.
	back, err := w.SplitStrided(n-1, -1, n, nil)
	if err != nil {
		panic(err)
	}
	src[0] = int64(me + 1)
	goshmem.SumReduce(back, isum[:1], src[:1])
	if want := int64(n * (n + 1) / 2); isum[0] != want {
		t.Errorf("PE %d: reverse-team sum %d, want %d", me, isum[0], want)
	}
	back.Destroy()
}
