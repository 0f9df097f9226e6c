package numa

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fakeTopo builds the topology of a machine of sockets sockets, each of
// coresPerSocket cores of threadsPerCore hardware threads, each socket
// split into nodesPerSocket NUMA nodes of consecutive cores (node IDs
// socket by socket). CPUs are numbered as Linux numbers them on x86:
// the first thread of every core, then the second thread of every core,
// and so on, so core c of socket s holds the CPUs
// s*coresPerSocket + c + k*sockets*coresPerSocket. core_id is the
// core's index in its socket. Every field Place may read is filled
// consistently, Sockets and Siblings included.
func fakeTopo(sockets, coresPerSocket, threadsPerCore, nodesPerSocket int) *Topology {
	ncores := sockets * coresPerSocket
	t := &Topology{}
	for id := range ncores * threadsPerCore {
		core := id % ncores
		s, c := core/coresPerSocket, core%coresPerSocket
		cpu := CPU{ID: id, Core: c, Socket: s, Node: s*nodesPerSocket + c*nodesPerSocket/coresPerSocket}
		for k := range threadsPerCore {
			cpu.Siblings = append(cpu.Siblings, core+k*ncores)
		}
		t.CPUs = append(t.CPUs, cpu)
		t.Online = append(t.Online, id)
	}
	for n := range sockets * nodesPerSocket {
		node := Node{ID: n, CPUs: []int{}, MemTotal: 1 << 30}
		for _, c := range t.CPUs {
			if c.Node == n {
				node.CPUs = append(node.CPUs, c.ID)
			}
		}
		t.Nodes = append(t.Nodes, node)
	}
	for s := range sockets {
		sock := Socket{ID: s, Cores: coresPerSocket}
		for _, c := range t.CPUs {
			if c.Socket == s {
				sock.CPUs = append(sock.CPUs, c.ID)
			}
		}
		for n := range nodesPerSocket {
			sock.Nodes = append(sock.Nodes, s*nodesPerSocket+n)
		}
		t.Sockets = append(t.Sockets, sock)
	}
	return t
}

// placeOffline removes cpus from t as if they had been taken offline:
// sysfs then tells nothing of them but their number.
func placeOffline(t *Topology, cpus ...int) *Topology {
	off := func(c int) bool { return slices.Contains(cpus, c) }
	t.CPUs = slices.DeleteFunc(t.CPUs, func(c CPU) bool { return off(c.ID) })
	for i := range t.CPUs {
		t.CPUs[i].Siblings = slices.DeleteFunc(t.CPUs[i].Siblings, off)
	}
	t.Online = slices.DeleteFunc(t.Online, off)
	for i := range t.Nodes {
		t.Nodes[i].CPUs = slices.DeleteFunc(t.Nodes[i].CPUs, off)
	}
	for i := range t.Sockets {
		t.Sockets[i].CPUs = slices.DeleteFunc(t.Sockets[i].CPUs, off)
	}
	t.Offline = slices.Sorted(slices.Values(cpus))
	return t
}

func placeCPUs(list string) []int {
	c, err := ParseCPUList(list)
	if err != nil {
		panic(err)
	}
	return c
}

func placeWithout(all []int, drop ...int) []int {
	return slices.DeleteFunc(slices.Clone(all), func(c int) bool { return slices.Contains(drop, c) })
}

func TestFakeTopo(t *testing.T) {
	topo := fakeTopo(2, 4, 2, 1)
	if got := topo.CPUs[9]; !reflect.DeepEqual(got, CPU{ID: 9, Core: 1, Socket: 0, Node: 0, Siblings: []int{1, 9}}) {
		t.Errorf("CPU 9 = %+v", got)
	}
	if got := FormatCPUList(topo.Nodes[1].CPUs); got != "4-7,12-15" {
		t.Errorf("node 1 CPUs = %s", got)
	}
	topo = fakeTopo(1, 16, 1, 4)
	if got := FormatCPUList(topo.Nodes[2].CPUs); got != "8-11" {
		t.Errorf("node 2 CPUs = %s", got)
	}
}

func TestPlaceExact(t *testing.T) {
	smt := fakeTopo(2, 4, 2, 1) // core c of socket s: CPUs 4s+c and 4s+c+8
	quad := fakeTopo(1, 16, 1, 4)
	two := fakeTopo(1, 2, 1, 1) // like this machine
	smt2 := fakeTopo(1, 2, 2, 1)
	node0, node1 := placeCPUs("0-3,8-11"), placeCPUs("4-7,12-15")
	type P = Placement
	for _, tc := range []struct {
		name          string
		topo          *Topology
		usable        []int
		npes          int
		mapBy, bindTo string
		want          []P // the last len(want) PEs
	}{
		{"smt core/core", smt, smt.Online, 4, MapCore, BindCore, []P{
			{0, 0, 0, 0, []int{0, 8}}, {1, 1, 0, 0, []int{1, 9}}, {2, 2, 0, 0, []int{2, 10}}, {3, 3, 0, 0, []int{3, 11}}}},
		{"smt socket/socket", smt, smt.Online, 4, MapSocket, BindSocket, []P{
			{0, 0, 0, 0, node0}, {4, 0, 1, 1, node1}, {1, 1, 0, 0, node0}, {5, 1, 1, 1, node1}}},
		{"smt numa/numa", smt, smt.Online, 3, MapNUMA, BindNUMA, []P{
			{0, 0, 0, 0, node0}, {4, 0, 1, 1, node1}, {1, 1, 0, 0, node0}}},
		{"smt core/none", smt, smt.Online, 2, MapCore, BindNone, []P{
			{0, 0, 0, 0, nil}, {1, 1, 0, 0, nil}}},
		{"smt oversubscribed: second PE on a core takes its other thread", smt, smt.Online, 10, MapCore, BindCore, []P{
			{0, 0, 0, 0, []int{0, 8}}, {1, 1, 0, 0, []int{1, 9}}, {2, 2, 0, 0, []int{2, 10}}, {3, 3, 0, 0, []int{3, 11}},
			{4, 0, 1, 1, []int{4, 12}}, {5, 1, 1, 1, []int{5, 13}}, {6, 2, 1, 1, []int{6, 14}}, {7, 3, 1, 1, []int{7, 15}},
			{8, 0, 0, 0, []int{0, 8}}, {9, 1, 0, 0, []int{1, 9}}}},
		{"4 nodes in a socket, numa/numa", quad, quad.Online, 6, MapNUMA, BindNUMA, []P{
			{0, 0, 0, 0, placeCPUs("0-3")}, {4, 4, 0, 1, placeCPUs("4-7")}, {8, 8, 0, 2, placeCPUs("8-11")}, {12, 12, 0, 3, placeCPUs("12-15")},
			{1, 1, 0, 0, placeCPUs("0-3")}, {5, 5, 0, 1, placeCPUs("4-7")}}},
		{"4 nodes in a socket, socket/none", quad, quad.Online, 3, MapSocket, BindNone, []P{
			{0, 0, 0, 0, nil}, {1, 1, 0, 0, nil}, {2, 2, 0, 0, nil}}},
		{"4 nodes in a socket, core/socket", quad, quad.Online, 2, MapCore, BindSocket, []P{
			{0, 0, 0, 0, quad.Online}, {1, 1, 0, 0, quad.Online}}},
		{"4 nodes, node 1 cut to one core: skipped once exhausted", quad, placeWithout(quad.Online, 5, 6, 7), 7, MapNUMA, BindNUMA, []P{
			{0, 0, 0, 0, placeCPUs("0-3")}, {4, 4, 0, 1, []int{4}}, {8, 8, 0, 2, placeCPUs("8-11")}, {12, 12, 0, 3, placeCPUs("12-15")},
			{1, 1, 0, 0, placeCPUs("0-3")}, {9, 9, 0, 2, placeCPUs("8-11")}, {13, 13, 0, 3, placeCPUs("12-15")}}},
		{"cpuset of socket 1 only, socket/core", smt, node1, 3, MapSocket, BindCore, []P{
			{4, 0, 1, 1, []int{4, 12}}, {5, 1, 1, 1, []int{5, 13}}, {6, 2, 1, 1, []int{6, 14}}}},
		{"cpuset of socket 1 only, numa/numa", smt, node1, 2, MapNUMA, BindNUMA, []P{
			{4, 0, 1, 1, node1}, {5, 1, 1, 1, node1}}},
		{"2-CPU machine", two, two.Online, 2, MapCore, BindCore, []P{
			{0, 0, 0, 0, []int{0}}, {1, 1, 0, 0, []int{1}}}},
		{"2-CPU machine, numa", two, two.Online, 1, MapNUMA, BindNUMA, []P{
			{0, 0, 0, 0, []int{0, 1}}}},
		{"8 PEs on 2 cores", two, two.Online, 8, MapCore, BindCore, []P{
			{0, 0, 0, 0, []int{0}}, {1, 1, 0, 0, []int{1}}, {0, 0, 0, 0, []int{0}}, {1, 1, 0, 0, []int{1}},
			{0, 0, 0, 0, []int{0}}, {1, 1, 0, 0, []int{1}}, {0, 0, 0, 0, []int{0}}, {1, 1, 0, 0, []int{1}}}},
		{"8 PEs on 2 SMT cores: threads in turn", smt2, smt2.Online, 8, MapSocket, BindNone, []P{
			{0, 0, 0, 0, nil}, {1, 1, 0, 0, nil}, {2, 0, 0, 0, nil}, {3, 1, 0, 0, nil},
			{0, 0, 0, 0, nil}, {1, 1, 0, 0, nil}, {2, 0, 0, 0, nil}, {3, 1, 0, 0, nil}}},
		{"half a core: only its first thread", smt, placeWithout(smt.Online, 8), 2, MapCore, BindCore, []P{
			{0, 0, 0, 0, []int{0}}, {1, 1, 0, 0, []int{1, 9}}}},
		{"half a core: only its second thread", smt, placeWithout(smt.Online, 0), 2, MapCore, BindCore, []P{
			{8, 0, 0, 0, []int{8}}, {1, 1, 0, 0, []int{1, 9}}}},
		{"half a core, numa binding", smt, placeWithout(smt.Online, 8), 1, MapCore, BindNUMA, []P{
			{0, 0, 0, 0, placeCPUs("0-3,9-11")}}},
		{"half a core, oversubscribed: its PEs share the one thread", smt, placeWithout(smt.Online, 8), 10, MapCore, BindCore, []P{
			{0, 0, 0, 0, []int{0}}, {9, 1, 0, 0, []int{1, 9}}}},
		{"usable unsorted with repeats", smt, []int{5, 4, 5, 12}, 3, MapCore, BindCore, []P{
			{4, 0, 1, 1, []int{4, 12}}, {5, 1, 1, 1, []int{5}}, {12, 0, 1, 1, []int{4, 12}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Place(tc.topo, tc.usable, tc.npes, tc.mapBy, tc.bindTo)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.npes {
				t.Fatalf("got %d placements, want %d", len(got), tc.npes)
			}
			from := len(got) - len(tc.want) // want is the last PEs
			for i, w := range tc.want {
				if !reflect.DeepEqual(got[from+i], w) {
					t.Errorf("PE %d: got %+v, want %+v", from+i, got[from+i], w)
				}
			}
		})
	}
}

// TestPlaceBindNotShared checks that PEs on one core do not share a
// Bind slice: the launcher may change one PE's.
func TestPlaceBindNotShared(t *testing.T) {
	topo := fakeTopo(1, 2, 2, 1)
	for _, bind := range []string{BindCore, BindNUMA, BindSocket} {
		p, err := Place(topo, topo.Online, 3, MapCore, bind)
		if err != nil {
			t.Fatal(err)
		}
		p[0].Bind[0] = -7
		if p[2].Bind[0] == -7 {
			t.Errorf("--bind-to %s: PEs 0 and 2 share their Bind slice", bind)
		}
	}
}

func TestPlaceErrors(t *testing.T) {
	topo := fakeTopo(2, 4, 2, 1)
	off := placeOffline(fakeTopo(1, 2, 2, 1), 3)
	for _, tc := range []struct {
		name          string
		topo          *Topology
		usable        []int
		npes          int
		mapBy, bindTo string
		want          []string
	}{
		{"unknown mapping", topo, topo.Online, 2, "hwthread", BindCore, []string{`"hwthread"`, `"core", "numa" or "socket"`}},
		{"empty mapping", topo, topo.Online, 2, "", BindCore, []string{`unknown mapping ""`}},
		{"unknown binding", topo, topo.Online, 2, MapCore, "package", []string{`"package"`, `"none", "core", "numa" or "socket"`}},
		{"case matters", topo, topo.Online, 2, MapCore, "Core", []string{`unknown binding "Core"`}},
		{"no PEs", topo, topo.Online, 0, MapCore, BindCore, []string{"0 PEs", "1 to 1048576"}},
		{"negative PEs", topo, topo.Online, -3, MapCore, BindCore, []string{"-3 PEs", "1 to 1048576"}},
		{"too many PEs", topo, topo.Online, 1 << 40, MapCore, BindCore, []string{"1099511627776 PEs", "1 to 1048576"}},
		{"no usable CPU", topo, nil, 2, MapCore, BindCore, []string{"no usable CPU"}},
		{"empty usable", topo, []int{}, 2, MapCore, BindCore, []string{"no usable CPU"}},
		{"CPUs past the last", topo, []int{0, 16, 17, 40}, 2, MapCore, BindCore, []string{"CPUs 16-17,40 are not online", "online: 0-15"}},
		{"negative CPU", topo, []int{-1, 2}, 2, MapCore, BindCore, []string{"CPUs -1 are not online"}},
		{"offline CPU", off, []int{0, 1, 3}, 1, MapCore, BindCore, []string{"CPUs 3 are not online", "online: 0-2"}},
		{"online but unknown", &Topology{Online: []int{0, 1}, CPUs: []CPU{{ID: 0}}}, []int{0, 1}, 1, MapCore, BindCore,
			[]string{"CPUs 1 are online but the topology has no core"}},
		{"nil topology", nil, []int{0}, 1, MapCore, BindCore, []string{"without a topology"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Place(tc.topo, tc.usable, tc.npes, tc.mapBy, tc.bindTo)
			if err == nil {
				t.Fatalf("got %+v, want an error", p)
			}
			if !strings.HasPrefix(err.Error(), "numa: ") {
				t.Errorf("error %q does not start with numa:", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// placeRefCore is a core as the reference placement sees it.
type placeRefCore struct {
	socket, node, core int
	threads            []int // usable, ascending
}

// placeRefCores lists the usable cores of topo naively: for every socket,
// node and core_id in ascending order, the usable CPUs that have them.
func placeRefCores(topo *Topology, usable []int) []placeRefCore {
	var sockets, nodes, coreIDs []int
	for _, c := range topo.CPUs {
		sockets = append(sockets, c.Socket)
		nodes = append(nodes, c.Node)
		coreIDs = append(coreIDs, c.Core)
	}
	uniq := func(s []int) []int { slices.Sort(s); return slices.Compact(s) }
	var out []placeRefCore
	for _, s := range uniq(sockets) {
		for _, n := range uniq(nodes) {
			for _, id := range uniq(coreIDs) {
				rc := placeRefCore{socket: s, node: n, core: id}
				for _, u := range usable {
					i := slices.IndexFunc(topo.CPUs, func(c CPU) bool { return c.ID == u })
					if c := topo.CPUs[i]; c.Socket == s && c.Node == n && c.Core == id {
						rc.threads = append(rc.threads, u)
					}
				}
				if rc.threads != nil {
					slices.Sort(rc.threads)
					out = append(out, rc)
				}
			}
		}
	}
	return out
}

// placeRef is a naive placement: the home CPU of each PE, found by
// walking a cursor over the groups (sockets or nodes, or one group for
// --map-by core) and taking the next untaken core of each, starting a
// new round when every core is taken.
func placeRef(topo *Topology, usable []int, npes int, mapBy string) []int {
	cores := placeRefCores(topo, usable)
	group := func(c placeRefCore) int {
		switch mapBy {
		case MapNUMA:
			return c.node
		case MapSocket:
			return c.socket
		}
		return 0
	}
	var groups []int
	for _, c := range cores {
		if !slices.Contains(groups, group(c)) {
			groups = append(groups, group(c))
		}
	}
	slices.Sort(groups)
	taken := make([]bool, len(cores))
	uses := make([]int, len(cores))
	var home []int
	cursor := 0
	for range npes {
		if !slices.Contains(taken, false) {
			clear(taken)
			cursor = 0
		}
		for {
			g := groups[cursor%len(groups)]
			cursor++
			i := slices.IndexFunc(cores, func(c placeRefCore) bool { return group(c) == g })
			for i >= 0 && i < len(cores) && (taken[i] || group(cores[i]) != g) {
				i++
			}
			if i >= 0 && i < len(cores) {
				taken[i] = true
				home = append(home, cores[i].threads[uses[i]%len(cores[i].threads)])
				uses[i]++
				break
			}
		}
	}
	return home
}

// placeRandomTopo builds a random machine, sometimes with core_ids that do
// not follow CPU numbers, and a random non-empty usable subset of it.
func placeRandomTopo(rng *rand.Rand) (*Topology, []int) {
	sockets, cores, threads := 1+rng.IntN(3), 1+rng.IntN(6), 1+rng.IntN(4)
	topo := fakeTopo(sockets, cores, threads, 1+rng.IntN(min(cores, 3)))
	if rng.IntN(3) == 0 { // core_ids reversed, with gaps
		for i := range topo.CPUs {
			topo.CPUs[i].Core = 2 * (cores - 1 - topo.CPUs[i].Core)
		}
	}
	keep := 0.2 + 0.8*rng.Float64()
	var usable []int
	for _, c := range topo.Online {
		if rng.Float64() < keep {
			usable = append(usable, c)
		}
	}
	if usable == nil {
		usable = []int{topo.Online[rng.IntN(len(topo.Online))]}
	}
	return topo, usable
}

func TestPlaceRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		topo, usable := placeRandomTopo(rng)
		mapBy := []string{MapCore, MapNUMA, MapSocket}[rng.IntN(3)]
		bindTo := []string{BindNone, BindCore, BindNUMA, BindSocket}[rng.IntN(4)]
		cores := placeRefCores(topo, usable)
		npes := 1 + rng.IntN(2*len(cores)+3)
		what := fmt.Sprintf("case %d: %d PEs --map-by %s --bind-to %s on %d sockets, %d CPUs, %d nodes, usable %s",
			iter, npes, mapBy, bindTo, len(topo.Sockets), len(topo.CPUs), len(topo.Nodes), FormatCPUList(usable))

		got, err := Place(topo, usable, npes, mapBy, bindTo)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		again, _ := Place(topo, usable, npes, mapBy, bindTo)
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("%s: not deterministic:\n%+v\n%+v", what, got, again)
		}
		if len(got) != npes {
			t.Fatalf("%s: %d placements", what, len(got))
		}
		home := make([]int, npes)
		for i, p := range got {
			home[i] = p.CPU
		}
		if want := placeRef(topo, usable, npes, mapBy); !slices.Equal(home, want) {
			t.Fatalf("%s: home CPUs %v, reference %v", what, home, want)
		}

		perCore := map[[2]int]int{}
		perGroup := map[int]int{}
		for i, p := range got {
			if !slices.Contains(usable, p.CPU) {
				t.Fatalf("%s: PE %d on CPU %d, not usable", what, i, p.CPU)
			}
			c := topo.CPUs[slices.IndexFunc(topo.CPUs, func(c CPU) bool { return c.ID == p.CPU })]
			if p.Core != c.Core || p.Socket != c.Socket || p.Node != c.Node {
				t.Fatalf("%s: PE %d is %+v but CPU %d is %+v", what, i, p, p.CPU, c)
			}
			var domain []int // the CPUs of what the PE is bound to, from the topology's own lists
			switch bindTo {
			case BindCore:
				domain = c.Siblings
			case BindNUMA:
				domain = topo.Nodes[slices.IndexFunc(topo.Nodes, func(n Node) bool { return n.ID == p.Node })].CPUs
			case BindSocket:
				domain = topo.Sockets[slices.IndexFunc(topo.Sockets, func(s Socket) bool { return s.ID == p.Socket })].CPUs
			}
			var want []int
			for _, d := range domain {
				if slices.Contains(usable, d) {
					want = append(want, d)
				}
			}
			if !slices.Equal(p.Bind, want) || (bindTo == BindNone) != (p.Bind == nil) {
				t.Fatalf("%s: PE %d bound to %v, want %v", what, i, p.Bind, want)
			}
			if p.Bind != nil && !slices.Contains(p.Bind, p.CPU) {
				t.Fatalf("%s: PE %d: home CPU %d not in its binding %v", what, i, p.CPU, p.Bind)
			}
			perCore[[2]int{p.Socket, p.Core}]++
			switch mapBy {
			case MapNUMA:
				perGroup[p.Node]++
			case MapSocket:
				perGroup[p.Socket]++
			}
		}

		// Every usable core gets floor or ceil of npes/cores PEs.
		lo, hi := npes/len(cores), (npes+len(cores)-1)/len(cores)
		for _, c := range cores {
			if n := perCore[[2]int{c.socket, c.core}]; n < lo || n > hi {
				t.Fatalf("%s: core %d of socket %d has %d PEs, want %d to %d", what, c.core, c.socket, n, lo, hi)
			}
		}
		// While no group has run out of cores, groups differ by at most
		// one PE.
		if mapBy != MapCore {
			size := map[int]int{}
			for _, c := range cores {
				if mapBy == MapNUMA {
					size[c.node]++
				} else {
					size[c.socket]++
				}
			}
			smallest := npes
			for _, n := range size {
				smallest = min(smallest, n)
			}
			if npes <= smallest*len(size) {
				least, most := npes, 0
				for g := range size {
					least, most = min(least, perGroup[g]), max(most, perGroup[g])
				}
				if most-least > 1 {
					t.Fatalf("%s: PEs per group %v", what, perGroup)
				}
			}
		}
		// --map-by core packs: the first npes cores, in order.
		if mapBy == MapCore && npes <= len(cores) {
			for i, c := range cores[:npes] {
				if got[i].Socket != c.socket || got[i].Core != c.core {
					t.Fatalf("%s: PE %d on core %d of socket %d, want core %d of socket %d", what, i, got[i].Core, got[i].Socket, c.core, c.socket)
				}
			}
		}
	}
}

func TestDefaultBinding(t *testing.T) {
	smt := fakeTopo(2, 4, 2, 1)
	two := fakeTopo(1, 2, 1, 1)
	smt2 := fakeTopo(1, 2, 2, 1) // cores {0,2} and {1,3}
	for _, tc := range []struct {
		topo   *Topology
		usable []int
		npes   int
		want   string
	}{
		{smt, smt.Online, 1, BindCore},
		{smt, smt.Online, 2, BindCore},
		{smt, smt.Online, 3, BindNUMA},
		{smt, smt.Online, 8, BindNUMA},
		{smt, smt.Online, 9, BindNone}, // 8 cores, 16 threads: cores count
		{smt, smt.Online, 16, BindNone},
		{smt, placeCPUs("4-7"), 4, BindNUMA},  // one thread of each core of socket 1
		{smt, placeCPUs("4,12"), 2, BindNone}, // one core
		{smt, placeCPUs("4,12"), 1, BindCore},
		{two, two.Online, 2, BindCore},
		{two, two.Online, 3, BindNone},
		{two, two.Online, 8, BindNone},
		{smt2, []int{0, 1}, 2, BindCore},
		{smt2, []int{0, 2}, 2, BindNone},
		{smt2, nil, 1, BindNone},
		{nil, []int{0}, 1, BindNone},
	} {
		if got := DefaultBinding(tc.topo, tc.usable, tc.npes); got != tc.want {
			t.Errorf("DefaultBinding(usable %s, %d PEs) = %q, want %q", FormatCPUList(tc.usable), tc.npes, got, tc.want)
		}
	}
}

func TestBindingMap(t *testing.T) {
	small := fakeTopo(2, 2, 2, 1) // core c of socket s: CPUs 2s+c and 2s+c+4
	smt := fakeTopo(2, 4, 2, 1)
	quad := fakeTopo(1, 16, 1, 4)
	reversed := fakeTopo(1, 3, 2, 1)
	for i := range reversed.CPUs {
		reversed.CPUs[i].Core = 2 - reversed.CPUs[i].Core // core_id 2 holds CPUs 0 and 3
	}
	for _, tc := range []struct {
		name          string
		topo          *Topology
		bound, usable []int
		want          string
	}{
		{"core 0", small, []int{0, 4}, small.Online, "[BB/..][../..]"},
		{"one thread", small, []int{3}, small.Online, "[../..][../B.]"},
		{"socket 1", small, placeCPUs("2-3,6-7"), small.Online, "[../..][BB/BB]"},
		{"unbound", small, nil, small.Online, "[../..][../..]"},
		{"nothing usable", small, nil, nil, "[--/--][--/--]"},
		{"cpuset of socket 1", smt, []int{5, 13}, placeCPUs("4-7,12-15"), "[--/--/--/--][../BB/../..]"},
		{"half a core", smt, []int{0}, placeWithout(smt.Online, 8), "[B-/../../..][../../../..]"},
		{"4 nodes, bound to node 1", quad, placeCPUs("4-7"), quad.Online, "[././././B/B/B/B/./././././././.]"},
		{"offline thread", placeOffline(fakeTopo(1, 2, 2, 1), 3), []int{1}, []int{0, 1, 2}, "[../B]"},
		{"cores by core_id", reversed, []int{0, 3}, reversed.Online, "[../../BB]"},
		{"no CPUs", &Topology{}, nil, nil, ""},
		{"nil", nil, nil, nil, ""},
	} {
		if got := tc.topo.BindingMap(tc.bound, tc.usable); got != tc.want {
			t.Errorf("%s: BindingMap(%s, %s) = %q, want %q", tc.name, FormatCPUList(tc.bound), FormatCPUList(tc.usable), got, tc.want)
		}
	}
}

// TestBindingMapOfPlace checks that the map of every PE Place binds has
// as many B as its Bind has CPUs and no '-' where Place bound it.
func TestBindingMapOfPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		topo, usable := placeRandomTopo(rng)
		p, err := Place(topo, usable, 1+rng.IntN(8), MapNUMA, BindSocket)
		if err != nil {
			t.Fatal(err)
		}
		for _, pe := range p {
			m := topo.BindingMap(pe.Bind, usable)
			if strings.Count(m, "B") != len(pe.Bind) || strings.Count(m, "B")+strings.Count(m, ".")+strings.Count(m, "-") != len(topo.CPUs) ||
				strings.Count(m, "[") != len(topo.Sockets) || strings.Count(m, "-") != len(topo.CPUs)-len(usable) {
				t.Fatalf("BindingMap(%v, %s) = %q for %d CPUs in %d sockets", pe.Bind, FormatCPUList(usable), m, len(topo.CPUs), len(topo.Sockets))
			}
		}
	}
}

func TestDescribe(t *testing.T) {
	smt := fakeTopo(2, 4, 2, 1)
	for _, tc := range []struct {
		mapBy, bindTo string
		usable        []int
		pe            int
		want          string
	}{
		{MapCore, BindCore, smt.Online, 0, "bound to core 0 (CPUs 0,8) of socket 0, NUMA node 0"},
		{MapSocket, BindCore, smt.Online, 3, "bound to core 1 (CPUs 5,13) of socket 1, NUMA node 1"},
		{MapNUMA, BindNUMA, smt.Online, 1, "bound to NUMA node 1 (CPUs 4-7,12-15)"},
		{MapSocket, BindSocket, placeWithout(smt.Online, 4), 1, "bound to socket 1 (CPUs 5-7,12-15)"},
		{MapCore, BindCore, placeWithout(smt.Online, 11), 3, "bound to core 3 (CPU 3) of socket 0, NUMA node 0"},
		{MapCore, BindNone, smt.Online, 0, "not bound (may use CPUs 0-15); home NUMA node 0"},
		{MapSocket, BindNone, placeCPUs("4-7"), 2, "not bound (may use CPUs 4-7); home NUMA node 1"},
	} {
		p, err := Place(smt, tc.usable, tc.pe+1, tc.mapBy, tc.bindTo)
		if err != nil {
			t.Fatal(err)
		}
		if got := smt.Describe(p[tc.pe], tc.bindTo, tc.usable); got != tc.want {
			t.Errorf("--map-by %s --bind-to %s, PE %d: %q, want %q", tc.mapBy, tc.bindTo, tc.pe, got, tc.want)
		}
	}
	if got := smt.Describe(Placement{CPU: 3, Node: 0, Bind: []int{3}}, "hwthread", smt.Online); got != "bound to CPU 3; home NUMA node 0" {
		t.Errorf("unknown binding: %q", got)
	}
	// Cores are numbered within their socket in Place's order, as Open
	// MPI's --report-bindings and the binding map count them, not by
	// sysfs core_id: here socket 0's core_ids are 0, 2, 8, 8 (the last
	// two told apart by their siblings), which printed "core 8" twice.
	odd := fakeTopo(2, 4, 2, 1)
	ids := []int{0, 2, 8, 8}
	for i := range odd.CPUs {
		c := &odd.CPUs[i]
		if c.Socket == 0 {
			c.Core = ids[c.ID%4]
		}
	}
	p, err := Place(odd, odd.Online, 4, MapCore, BindCore)
	if err != nil {
		t.Fatal(err)
	}
	for pe, want := range []string{
		"bound to core 0 (CPUs 0,8) of socket 0, NUMA node 0",
		"bound to core 1 (CPUs 1,9) of socket 0, NUMA node 0",
		"bound to core 2 (CPUs 2,10) of socket 0, NUMA node 0",
		"bound to core 3 (CPUs 3,11) of socket 0, NUMA node 0",
	} {
		if got := odd.Describe(p[pe], BindCore, odd.Online); got != want {
			t.Errorf("core_ids 0, 2, 8, 8: PE %d: %q, want %q", pe, got, want)
		}
	}
}

// TestCPUsText: a set of CPUs is named in the singular, the plural, or
// as none, in a sentence of oshinfo's or of Describe's.
func TestCPUsText(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want string
	}{
		{nil, "no CPUs"},
		{[]int{3}, "CPU 3"},
		{[]int{0, 1, 2, 3, 8}, "CPUs 0-3,8"},
	} {
		if got := CPUsText(c.cpus); got != c.want {
			t.Errorf("CPUsText(%v) = %q, want %q", c.cpus, got, c.want)
		}
	}
}
