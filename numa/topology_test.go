package numa

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestDiscoverTwoNodes(t *testing.T) {
	topo, err := Discover("testdata/2node")
	if err != nil {
		t.Fatal(err)
	}
	want := &Topology{
		Online:  []int{0, 1, 2, 3, 4, 5, 6, 7},
		Offline: []int{8}, // present 0-8
		Nodes: []Node{
			{ID: 0, CPUs: []int{0, 1, 4, 5}, MemTotal: 16384000 << 10, MemFree: 12000000 << 10, Distances: []int{10, 21}},
			{ID: 1, CPUs: []int{2, 3, 6, 7}, MemTotal: 16777216 << 10, MemFree: 16000000 << 10, Distances: []int{21, 10}},
		},
		CPUs: []CPU{
			{ID: 0, Core: 0, Socket: 0, Node: 0, Siblings: []int{0, 4}},
			{ID: 1, Core: 1, Socket: 0, Node: 0, Siblings: []int{1, 5}},
			{ID: 2, Core: 0, Socket: 1, Node: 1, Siblings: []int{2, 6}},
			{ID: 3, Core: 1, Socket: 1, Node: 1, Siblings: []int{3, 7}},
			{ID: 4, Core: 0, Socket: 0, Node: 0, Siblings: []int{0, 4}}, // SMT sibling of 0
			{ID: 5, Core: 1, Socket: 0, Node: 0, Siblings: []int{1, 5}},
			{ID: 6, Core: 0, Socket: 1, Node: 1, Siblings: []int{2, 6}},
			{ID: 7, Core: 1, Socket: 1, Node: 1, Siblings: []int{3, 7}},
		},
		Sockets: []Socket{
			{ID: 0, CPUs: []int{0, 1, 4, 5}, Nodes: []int{0}, Cores: 2},
			{ID: 1, CPUs: []int{2, 3, 6, 7}, Nodes: []int{1}, Cores: 2},
		},
	}
	if !reflect.DeepEqual(topo, want) {
		t.Errorf("Discover(2node) =\n%+v\nwant\n%+v", topo, want)
	}
	checkInvariants(t, topo)
	for cpu, node := range map[int]int{0: 0, 5: 0, 6: 1, 8: -1, -1: -1} {
		if got := topo.NodeOf(cpu); got != node {
			t.Errorf("NodeOf(%d) = %d; want %d", cpu, got, node)
		}
	}
}

func TestDiscoverNoNodeDir(t *testing.T) {
	topo, err := Discover("testdata/nonode")
	if err != nil {
		t.Fatal(err)
	}
	want := &Topology{
		Online: []int{0, 1, 2, 3}, // possible 0-3, no present: nothing offline
		Nodes:  []Node{{ID: 0, CPUs: []int{0, 1, 2, 3}, MemTotal: 8000000 << 10, MemFree: 6000000 << 10, Distances: []int{10}}},
		CPUs: []CPU{
			{ID: 0, Core: 0, Siblings: []int{0}}, {ID: 1, Core: 1, Siblings: []int{1}},
			{ID: 2, Core: 2, Siblings: []int{2}}, {ID: 3, Core: 3, Siblings: []int{3}},
		},
		Sockets: []Socket{{ID: 0, CPUs: []int{0, 1, 2, 3}, Nodes: []int{0}, Cores: 4}},
	}
	if !reflect.DeepEqual(topo, want) {
		t.Errorf("Discover(nonode) =\n%+v\nwant\n%+v", topo, want)
	}
	checkInvariants(t, topo)
}

// smtMachine is the machine of testdata/2socket-smt, cpuset and
// cpuset-v1: 2 sockets x 4 cores x 2 threads, Linux numbering (CPUs
// 0-7 are the first threads, 0-3 on socket 0; CPU N+8 is N's sibling),
// one node per socket; with caches, L1d, L1i and L2 per core and L3 per
// socket.
func smtMachine(caches bool) *Topology {
	t := &Topology{
		Nodes: []Node{
			{ID: 0, CPUs: []int{0, 1, 2, 3, 8, 9, 10, 11}, MemTotal: 65536000 << 10, MemFree: 60000000 << 10, Distances: []int{10, 21}},
			{ID: 1, CPUs: []int{4, 5, 6, 7, 12, 13, 14, 15}, MemTotal: 65536000 << 10, MemFree: 50000000 << 10, Distances: []int{21, 10}},
		},
		Sockets: []Socket{
			{ID: 0, CPUs: []int{0, 1, 2, 3, 8, 9, 10, 11}, Nodes: []int{0}, Cores: 4},
			{ID: 1, CPUs: []int{4, 5, 6, 7, 12, 13, 14, 15}, Nodes: []int{1}, Cores: 4},
		},
	}
	for id := range 16 {
		first := id % 8
		t.Online = append(t.Online, id)
		t.CPUs = append(t.CPUs, CPU{ID: id, Core: first % 4, Socket: first / 4, Node: first / 4, Siblings: []int{first, first + 8}})
	}
	if !caches {
		return t
	}
	for _, c := range []struct {
		level int
		typ   string
		size  int64
	}{{1, "Data", 32 << 10}, {1, "Instruction", 32 << 10}, {2, "Unified", 1 << 20}} {
		for first := range 8 {
			t.Caches = append(t.Caches, Cache{Level: c.level, Type: c.typ, Size: c.size, LineSize: 64, CPUs: []int{first, first + 8}})
		}
	}
	t.Caches = append(t.Caches,
		Cache{Level: 3, Type: "Unified", Size: 16 << 20, LineSize: 64, CPUs: []int{0, 1, 2, 3, 8, 9, 10, 11}},
		Cache{Level: 3, Type: "Unified", Size: 16 << 20, LineSize: 64, CPUs: []int{4, 5, 6, 7, 12, 13, 14, 15}})
	return t
}

// fourNodeSocket is testdata/4numa-socket: 1 socket, 16 cores without
// SMT, 4 nodes of 4 CPUs (sub-NUMA clustering, AMD NPS4), L3 per node.
func fourNodeSocket() *Topology {
	t := &Topology{Sockets: []Socket{{ID: 0, CPUs: seq(0, 15), Nodes: []int{0, 1, 2, 3}, Cores: 16}}}
	for id := range 16 {
		t.Online = append(t.Online, id)
		t.CPUs = append(t.CPUs, CPU{ID: id, Core: id, Socket: 0, Node: id / 4, Siblings: []int{id}})
	}
	for n := range 4 {
		d := []int{12, 12, 12, 12}
		d[n] = 10
		t.Nodes = append(t.Nodes, Node{ID: n, CPUs: seq(4*n, 4*n+3), MemTotal: 33554432 << 10, MemFree: int64(30000000+n*1000000) << 10, Distances: d})
	}
	for _, c := range []struct {
		level int
		typ   string
		size  int64
	}{{1, "Data", 32 << 10}, {1, "Instruction", 32 << 10}, {2, "Unified", 1 << 20}} {
		for id := range 16 {
			t.Caches = append(t.Caches, Cache{Level: c.level, Type: c.typ, Size: c.size, LineSize: 64, CPUs: []int{id}})
		}
	}
	for n := range 4 {
		t.Caches = append(t.Caches, Cache{Level: 3, Type: "Unified", Size: 32 << 20, LineSize: 64, CPUs: seq(4*n, 4*n+3)})
	}
	return t
}

// seq returns [lo, lo+1, ..., hi].
func seq(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

func TestDiscoverTrees(t *testing.T) {
	cpuset := smtMachine(false)
	cpuset.Cpuset = []int{4, 5, 6, 7, 12, 13, 14, 15}
	cpuset.CpusetMems = []int{1}
	cpusetV1 := smtMachine(false)
	cpusetV1.Cpuset = []int{0, 1, 8, 9}
	cpusetV1.CpusetMems = []int{0}
	tests := []struct {
		tree string
		want *Topology
	}{
		{"2socket-smt", smtMachine(true)},
		{"4numa-socket", fourNodeSocket()},
		{"offline", &Topology{
			Online:  []int{0, 1, 3, 4, 6, 7},
			Offline: []int{2, 5},
			Nodes:   []Node{{ID: 0, CPUs: []int{0, 1, 3, 4, 6, 7}, MemTotal: 16384000 << 10, MemFree: 8000000 << 10, Distances: []int{10}}},
			// The sibling and cache lists name the offline CPUs too.
			CPUs: []CPU{
				{ID: 0, Core: 0, Siblings: []int{0, 4}},
				{ID: 1, Core: 1, Siblings: []int{1}}, // 5 is offline
				{ID: 3, Core: 3, Siblings: []int{3, 7}},
				{ID: 4, Core: 0, Siblings: []int{0, 4}},
				{ID: 6, Core: 2, Siblings: []int{6}}, // 2 is offline
				{ID: 7, Core: 3, Siblings: []int{3, 7}},
			},
			Sockets: []Socket{{ID: 0, CPUs: []int{0, 1, 3, 4, 6, 7}, Nodes: []int{0}, Cores: 4}},
			Caches:  []Cache{{Level: 3, Type: "Unified", Size: 8 << 20, LineSize: 64, CPUs: []int{0, 1, 3, 4, 6, 7}}},
		}},
		{"memoryless", &Topology{
			Online: []int{0, 1, 2, 3},
			Nodes: []Node{
				{ID: 0, CPUs: []int{0, 1}, MemTotal: 8192000 << 10, MemFree: 7000000 << 10, Distances: []int{10, 21, 14}},
				{ID: 1, CPUs: []int{2, 3}, Distances: []int{21, 10, 24}},                                                // CPUs, no memory
				{ID: 2, CPUs: []int{}, MemTotal: 67108864 << 10, MemFree: 67000000 << 10, Distances: []int{14, 24, 10}}, // memory, no CPUs
			},
			CPUs: []CPU{
				{ID: 0, Core: 0, Socket: 0, Node: 0, Siblings: []int{0}},
				{ID: 1, Core: 1, Socket: 0, Node: 0, Siblings: []int{1}},
				{ID: 2, Core: 0, Socket: 1, Node: 1, Siblings: []int{2}},
				{ID: 3, Core: 1, Socket: 1, Node: 1, Siblings: []int{3}},
			},
			Sockets: []Socket{
				{ID: 0, CPUs: []int{0, 1}, Nodes: []int{0}, Cores: 2},
				{ID: 1, CPUs: []int{2, 3}, Nodes: []int{1}, Cores: 2},
			},
		}},
		{"cpuset", cpuset},
		{"cpuset-v1", cpusetV1},
	}
	for _, tt := range tests {
		t.Run(tt.tree, func(t *testing.T) {
			topo, err := Discover(filepath.Join("testdata", tt.tree))
			if err != nil {
				t.Fatal(err)
			}
			diffTopology(t, topo, tt.want)
			checkInvariants(t, topo)
		})
	}
}

// diffTopology reports how got differs from want field by field, which
// is easier to read than one line holding both.
func diffTopology(t *testing.T, got, want *Topology) {
	t.Helper()
	gv, wv := reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem()
	for i := range gv.NumField() {
		g, w := gv.Field(i).Interface(), wv.Field(i).Interface()
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s =\n%+v\nwant\n%+v", gv.Type().Field(i).Name, g, w)
		}
	}
}

func TestUsable(t *testing.T) {
	tests := []struct {
		tree     string
		affinity []int
		want     []int
	}{
		{"2socket-smt", nil, seq(0, 15)},
		{"2socket-smt", []int{15, 3, 3, 99, -1, 1 << 30}, []int{3, 15}},
		{"2socket-smt", []int{}, nil},
		{"cpuset", nil, []int{4, 5, 6, 7, 12, 13, 14, 15}},
		{"cpuset", []int{0, 1, 4, 5, 12}, []int{4, 5, 12}},
		{"cpuset", []int{0, 1, 8}, nil},
		{"cpuset-v1", seq(0, 15), []int{0, 1, 8, 9}},
		{"offline", seq(0, 5), []int{0, 1, 3, 4}},
		{"offline", nil, []int{0, 1, 3, 4, 6, 7}},
	}
	for _, tt := range tests {
		topo, err := Discover(filepath.Join("testdata", tt.tree))
		if err != nil {
			t.Fatal(err)
		}
		in := slices.Clone(tt.affinity)
		got := topo.Usable(tt.affinity)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Usable(%v) = %v; want %v", tt.tree, tt.affinity, got, tt.want)
		}
		if !slices.Equal(in, tt.affinity) {
			t.Errorf("%s: Usable changed its argument to %v", tt.tree, tt.affinity)
		}
		if len(got) > 0 && len(topo.Online) > 0 && &got[0] == &topo.Online[0] {
			t.Errorf("%s: Usable returned Online itself", tt.tree)
		}
	}
}

func TestLookups(t *testing.T) {
	topo, err := Discover("testdata/memoryless")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := topo.CPU(2); !ok || c.ID != 2 || c.Node != 1 || c.Socket != 1 {
		t.Errorf("CPU(2) = %+v, %v; want CPU 2 of node 1, socket 1", c, ok)
	}
	for _, id := range []int{-1, 4, 1 << 30} {
		if c, ok := topo.CPU(id); ok {
			t.Errorf("CPU(%d) = %+v, true; want false", id, c)
		}
		if n, ok := topo.Node(id); ok {
			t.Errorf("Node(%d) = %+v, true; want false", id, n)
		}
	}
	if n, ok := topo.Node(2); !ok || n.ID != 2 || len(n.CPUs) != 0 || n.MemTotal == 0 {
		t.Errorf("Node(2) = %+v, %v; want the memory-only node", n, ok)
	}
	if n, ok := topo.Node(1); !ok || n.MemTotal != 0 || !slices.Equal(n.CPUs, []int{2, 3}) {
		t.Errorf("Node(1) = %+v, %v; want the memoryless node with CPUs 2-3", n, ok)
	}
}

// TestNilTopology: a nil *Topology (what Discover returns with an
// error) answers every lookup as "not there" instead of panicking.
func TestNilTopology(t *testing.T) {
	var topo *Topology
	if c, ok := topo.CPU(0); ok {
		t.Errorf("nil.CPU(0) = %+v, true; want false", c)
	}
	if n, ok := topo.Node(0); ok {
		t.Errorf("nil.Node(0) = %+v, true; want false", n)
	}
	if got := topo.NodeOf(0); got != -1 {
		t.Errorf("nil.NodeOf(0) = %d, want -1", got)
	}
	if got := topo.Usable([]int{0, 1}); got != nil {
		t.Errorf("nil.Usable = %v, want nil", got)
	}
	if got := topo.UsableCores([]int{0}); got != 0 {
		t.Errorf("nil.UsableCores = %d, want 0", got)
	}
}

// TestDiscoverThisMachine asserts only what holds on any machine.
func TestDiscoverThisMachine(t *testing.T) {
	topo, err := Discover("")
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, topo)
	online, _, err := NumCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if online != len(topo.Online) {
		t.Errorf("NumCPUs online = %d, Discover found %d online CPUs", online, len(topo.Online))
	}
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range allowed {
		if _, ok := slices.BinarySearch(topo.Online, c); !ok {
			t.Errorf("allowed CPU %d is not online (%s)", c, FormatCPUList(topo.Online))
		}
	}
	// The kernel keeps the affinity within the cgroup cpuset, so a
	// correctly read cpuset takes nothing from it.
	if got := topo.Usable(allowed); !slices.Equal(got, allowed) {
		t.Errorf("Usable(Allowed() = %s) = %s; cpuset %s read wrongly?",
			FormatCPUList(allowed), FormatCPUList(got), FormatCPUList(topo.Cpuset))
	}
	nodes := 1 // a kernel without NUMA support
	if entries, err := os.ReadDir("/sys/devices/system/node"); err == nil {
		nodes = 0
		for _, e := range entries {
			if rest, ok := strings.CutPrefix(e.Name(), "node"); ok {
				if _, err := strconv.Atoi(rest); err == nil {
					nodes++
				}
			}
		}
	}
	if len(topo.Nodes) != nodes {
		t.Errorf("Discover found %d nodes; /sys/devices/system/node has %d", len(topo.Nodes), nodes)
	}
	t.Logf("%d nodes, %d sockets, online CPUs %s, offline %s, cpuset %s, mems %s, %d caches",
		len(topo.Nodes), len(topo.Sockets), FormatCPUList(topo.Online), FormatCPUList(topo.Offline),
		FormatCPUList(topo.Cpuset), FormatCPUList(topo.CpusetMems), len(topo.Caches))
	for _, c := range topo.Caches {
		t.Logf("L%d %s %d KiB, line %d, CPUs %s", c.Level, c.Type, c.Size>>10, c.LineSize, FormatCPUList(c.CPUs))
	}
}

// checkInvariants checks what Discover promises of every topology.
func checkInvariants(t *testing.T, topo *Topology) {
	t.Helper()
	if len(topo.Nodes) == 0 {
		t.Fatal("no nodes")
	}
	if len(topo.Online) == 0 || len(topo.CPUs) != len(topo.Online) {
		t.Fatalf("%d online CPUs, %d CPU records", len(topo.Online), len(topo.CPUs))
	}
	ascending := func(what string, s []int) {
		t.Helper()
		for i := 1; i < len(s); i++ {
			if s[i] <= s[i-1] {
				t.Errorf("%s %v not ascending without repeats", what, s)
				return
			}
		}
	}
	subset := func(what string, s, of []int) {
		t.Helper()
		for _, c := range s {
			if !slices.Contains(of, c) {
				t.Errorf("%s %v holds %d, not in %v", what, s, c, of)
			}
		}
	}
	ascending("Online", topo.Online)
	ascending("Offline", topo.Offline)
	for _, c := range topo.Offline {
		if slices.Contains(topo.Online, c) {
			t.Errorf("CPU %d is both online and offline", c)
		}
	}
	var nodeIDs []int
	in := map[int]int{} // CPU -> number of nodes holding it
	for i, n := range topo.Nodes {
		if i > 0 && n.ID <= topo.Nodes[i-1].ID {
			t.Errorf("nodes not ascending by ID")
		}
		nodeIDs = append(nodeIDs, n.ID)
		ascending("node CPUs", n.CPUs)
		for _, c := range n.CPUs {
			in[c]++
		}
		if n.MemTotal < 0 || n.MemFree < 0 || n.MemFree > n.MemTotal {
			t.Errorf("node %d: MemTotal %d, MemFree %d", n.ID, n.MemTotal, n.MemFree)
		}
		if n.Distances != nil && len(n.Distances) != len(topo.Nodes) {
			t.Errorf("node %d: %d distances for %d nodes", n.ID, len(n.Distances), len(topo.Nodes))
		}
	}
	inSocket := map[int]int{} // CPU -> number of sockets holding it
	for i, s := range topo.Sockets {
		if i > 0 && s.ID <= topo.Sockets[i-1].ID {
			t.Errorf("sockets not ascending by ID")
		}
		ascending("socket CPUs", s.CPUs)
		ascending("socket nodes", s.Nodes)
		subset("socket nodes", s.Nodes, nodeIDs)
		for _, c := range s.CPUs {
			inSocket[c]++
		}
		if s.Cores < 1 || s.Cores > len(s.CPUs) {
			t.Errorf("socket %d: %d cores for %d CPUs", s.ID, s.Cores, len(s.CPUs))
		}
	}
	for i, c := range topo.CPUs {
		if c.ID != topo.Online[i] {
			t.Errorf("CPUs[%d].ID = %d; Online[%d] = %d", i, c.ID, i, topo.Online[i])
		}
		if in[c.ID] != 1 {
			t.Errorf("online CPU %d is in %d nodes; want exactly 1", c.ID, in[c.ID])
		}
		if inSocket[c.ID] != 1 {
			t.Errorf("online CPU %d is in %d sockets; want exactly 1", c.ID, inSocket[c.ID])
		}
		if n, ok := topo.Node(c.Node); !ok || !slices.Contains(n.CPUs, c.ID) {
			t.Errorf("CPU %d says node %d, which does not list it", c.ID, c.Node)
		}
		if i := slices.IndexFunc(topo.Sockets, func(s Socket) bool { return s.ID == c.Socket }); i < 0 ||
			!slices.Contains(topo.Sockets[i].CPUs, c.ID) || !slices.Contains(topo.Sockets[i].Nodes, c.Node) {
			t.Errorf("CPU %d says socket %d, which does not list it or its node", c.ID, c.Socket)
		}
		if c.Core < 0 || c.Socket < 0 {
			t.Errorf("CPU %+v: negative core or socket", c)
		}
		ascending("siblings", c.Siblings)
		if !slices.Contains(c.Siblings, c.ID) {
			t.Errorf("CPU %d is not among its siblings %v", c.ID, c.Siblings)
		}
		for _, s := range c.Siblings {
			d, ok := topo.CPU(s)
			switch {
			case !ok:
				t.Errorf("CPU %d: sibling %d is not online", c.ID, s)
			case !slices.Equal(d.Siblings, c.Siblings):
				t.Errorf("CPU %d has siblings %v, its sibling %d has %v", c.ID, c.Siblings, s, d.Siblings)
			case d.Core != c.Core || d.Socket != c.Socket:
				t.Errorf("CPU %d (core %d socket %d) has sibling %d (core %d socket %d)", c.ID, c.Core, c.Socket, s, d.Core, d.Socket)
			}
		}
	}
	if len(in) != len(topo.Online) {
		t.Errorf("nodes hold %d CPUs; %d are online", len(in), len(topo.Online))
	}
	if len(inSocket) != len(topo.Online) {
		t.Errorf("sockets hold %d CPUs; %d are online", len(inSocket), len(topo.Online))
	}
	for i, c := range topo.Caches {
		if len(c.CPUs) == 0 {
			t.Errorf("cache %+v has no CPUs", c)
			continue
		}
		ascending("cache CPUs", c.CPUs)
		subset("cache CPUs", c.CPUs, topo.Online)
		if c.Level < 0 || c.Size < 0 || c.LineSize < 0 {
			t.Errorf("cache %+v: negative level or size", c)
		}
		if i > 0 {
			p := topo.Caches[i-1]
			if k := cmpCache(p, c); k >= 0 {
				t.Errorf("caches %+v and %+v out of order or repeated", p, c)
			}
		}
	}
	if topo.Cpuset != nil {
		ascending("Cpuset", topo.Cpuset)
		subset("Cpuset", topo.Cpuset, topo.Online)
		if len(topo.Cpuset) == 0 || len(topo.Cpuset) == len(topo.Online) {
			t.Errorf("Cpuset %v does not restrict online CPUs %v", topo.Cpuset, topo.Online)
		}
	}
	if topo.CpusetMems != nil {
		ascending("CpusetMems", topo.CpusetMems)
		subset("CpusetMems", topo.CpusetMems, nodeIDs)
		if len(topo.CpusetMems) == 0 || len(topo.CpusetMems) == len(nodeIDs) {
			t.Errorf("CpusetMems %v does not restrict nodes %v", topo.CpusetMems, nodeIDs)
		}
	}
}

// cmpCache orders caches as Topology.Caches promises.
func cmpCache(a, b Cache) int {
	if a.Level != b.Level {
		return a.Level - b.Level
	}
	if a.Type != b.Type {
		return strings.Compare(a.Type, b.Type)
	}
	return slices.Compare(a.CPUs, b.CPUs)
}

// writeTree creates files (path relative to root -> contents) under a
// temporary root and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const (
	cpuD  = "sys/devices/system/cpu/"
	nodeD = "sys/devices/system/node/"
)

// TestDiscoverBadNodeFiles: a node file (or /proc/meminfo) that exists
// but cannot be read or parsed is an error naming it, as Discover's doc
// says (they were skipped: MemTotal 0, no error), and a distance file
// must have one distance per online node.
func TestDiscoverBadNodeFiles(t *testing.T) {
	base := map[string]string{cpuD + "online": "0", nodeD + "online": "0", nodeD + "node0/cpulist": "0"}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(base)
		maps.Copy(m, extra)
		return m
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		dir   string // made a directory: a file that cannot be read
		want  string
	}{
		{"meminfo not a number", with(map[string]string{nodeD + "node0/meminfo": "Node 0 MemTotal: lots kB\n"}), "", "node0/meminfo"},
		{"meminfo unit", with(map[string]string{nodeD + "node0/meminfo": "Node 0 MemTotal: 100 MB\n"}), "", "unknown unit"},
		{"meminfo negative", with(map[string]string{nodeD + "node0/meminfo": "Node 0 MemTotal: -100 kB\n"}), "", "bad number"},
		{"meminfo free", with(map[string]string{nodeD + "node0/meminfo": "Node 0 MemTotal: 100 kB\nNode 0 MemFree: x kB\n"}), "", "MemFree"},
		{"proc meminfo", map[string]string{cpuD + "online": "0", "proc/meminfo": "MemTotal: x kB\n"}, "", "proc/meminfo"},
		{"cpulist unreadable", base, nodeD + "node0/cpulist", "node0/cpulist"},
		{"meminfo unreadable", base, nodeD + "node0/meminfo", "node0/meminfo"},
		{"distance unreadable", base, nodeD + "node0/distance", "node0/distance"},
		{"too many distances", with(map[string]string{nodeD + "node0/distance": "10 20"}), "", "2 distances for 1 online nodes"},
		{"too few distances", map[string]string{cpuD + "online": "0-1", nodeD + "online": "0-1",
			nodeD + "node0/cpulist": "0", nodeD + "node0/distance": "10", nodeD + "node1/cpulist": "1", nodeD + "node1/distance": "20 10"}, "", "1 distances for 2 online nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			if tc.dir != "" {
				os.RemoveAll(filepath.Join(root, tc.dir))
				if err := os.MkdirAll(filepath.Join(root, tc.dir), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			topo, err := Discover(root)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Discover = %+v, %v; want an error containing %q", topo, err, tc.want)
			}
		})
	}
	// A node listed online whose directory is gone: the others keep
	// their distances to the nodes that are here only, in Nodes' order.
	topo, err := Discover(writeTree(t, map[string]string{cpuD + "online": "0-2", nodeD + "online": "0-2",
		nodeD + "node0/cpulist": "0-1", nodeD + "node0/distance": "10 20 30",
		nodeD + "node2/cpulist": "2", nodeD + "node2/distance": "30 20 10"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Nodes) != 2 || !slices.Equal(topo.Nodes[0].Distances, []int{10, 30}) || !slices.Equal(topo.Nodes[1].Distances, []int{30, 10}) {
		t.Errorf("with node 1 gone: nodes %+v, want nodes 0 and 2 with distances [10 30] and [30 10]", topo.Nodes)
	}
}

func TestDiscoverOddTrees(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  *Topology
	}{
		{
			name: "no online file, no topology dirs",
			files: map[string]string{
				cpuD + "cpu0/uevent": "", cpuD + "cpu1/online": "1\n", cpuD + "cpu2/online": "0\n",
				cpuD + "cpufreq/x": "", cpuD + "cpuidle/x": "",
			},
			want: &Topology{
				Online:  []int{0, 1},
				Offline: []int{2}, // no present or possible file: the cpu<N> directories
				Nodes:   []Node{{ID: 0, CPUs: []int{0, 1}, Distances: []int{10}}},
				CPUs:    []CPU{{ID: 0, Core: 0, Siblings: []int{0}}, {ID: 1, Core: 1, Siblings: []int{1}}},
				Sockets: []Socket{{ID: 0, CPUs: []int{0, 1}, Nodes: []int{0}, Cores: 2}},
			},
		},
		{
			name: "orphan CPU, CPU in two nodes, memory-only node, no node online file",
			files: map[string]string{
				cpuD + "online":                "0-3",
				cpuD + "cpu0/topology/core_id": "0", cpuD + "cpu0/topology/physical_package_id": "-1",
				nodeD + "node0/cpulist": "0-1\n", nodeD + "node1/cpulist": "1-2,9\n",
				nodeD + "node2/cpulist": "\n", nodeD + "node2/meminfo": "Node 2 MemTotal: 4 kB\n",
				nodeD + "nodeX/cpulist": "3",
			},
			want: &Topology{
				Online: []int{0, 1, 2, 3},
				Nodes: []Node{
					{ID: 0, CPUs: []int{0, 1, 3}},
					{ID: 1, CPUs: []int{2}, MemTotal: 0},
					{ID: 2, CPUs: []int{}, MemTotal: 4096},
				},
				CPUs: []CPU{
					{ID: 0, Core: 0, Siblings: []int{0}}, {ID: 1, Core: 1, Siblings: []int{1}},
					{ID: 2, Core: 2, Node: 1, Siblings: []int{2}}, {ID: 3, Core: 3, Siblings: []int{3}},
				},
				Sockets: []Socket{{ID: 0, CPUs: []int{0, 1, 2, 3}, Nodes: []int{0, 1}, Cores: 4}},
			},
		},
		{
			name: "node listed online but missing",
			files: map[string]string{
				cpuD + "online": "0", nodeD + "online": "0-1", nodeD + "node1/cpulist": "0",
			},
			want: &Topology{
				Online:  []int{0},
				Nodes:   []Node{{ID: 1, CPUs: []int{0}}},
				CPUs:    []CPU{{ID: 0, Node: 1, Siblings: []int{0}}},
				Sockets: []Socket{{ID: 0, CPUs: []int{0}, Nodes: []int{1}, Cores: 1}},
			},
		},
		{
			name: "has_memory overrides meminfo, MemFree without MemTotal or above it",
			files: map[string]string{
				cpuD + "online": "0-1", cpuD + "present": "0-1",
				nodeD + "has_memory":    "1-2\n",
				nodeD + "node0/cpulist": "0", nodeD + "node0/meminfo": "Node 0 MemTotal: 4 kB\nNode 0 MemFree: 4 kB\n",
				nodeD + "node1/cpulist": "1", nodeD + "node1/meminfo": "Node 1 MemFree: 2 kB\n",
				nodeD + "node2/cpulist": "", nodeD + "node2/meminfo": "Node 2 MemTotal: 1 kB\nNode 2 MemFree: 2 kB\n",
			},
			want: &Topology{
				Online:  []int{0, 1},
				Nodes:   []Node{{ID: 0, CPUs: []int{0}}, {ID: 1, CPUs: []int{1}}, {ID: 2, CPUs: []int{}, MemTotal: 1024, MemFree: 1024}},
				CPUs:    []CPU{{ID: 0, Siblings: []int{0}}, {ID: 1, Core: 1, Node: 1, Siblings: []int{1}}},
				Sockets: []Socket{{ID: 0, CPUs: []int{0, 1}, Nodes: []int{0, 1}, Cores: 2}},
			},
		},
		{
			name: "siblings that do not agree",
			files: map[string]string{
				cpuD + "online": "0-5", cpuD + "present": "0-7",
				// 0 names 1, 1 does not name 0.
				cpuD + "cpu0/topology/core_id": "0", cpuD + "cpu0/topology/thread_siblings_list": "0-1",
				cpuD + "cpu1/topology/core_id": "0", cpuD + "cpu1/topology/thread_siblings_list": "1",
				// 2 and 3 name each other but have other cores.
				cpuD + "cpu2/topology/core_id": "2", cpuD + "cpu2/topology/thread_siblings_list": "2-3",
				cpuD + "cpu3/topology/core_id": "3", cpuD + "cpu3/topology/thread_siblings_list": "2-3",
				// 4 and 5 agree, 5's list misses itself and names offline 6.
				cpuD + "cpu4/topology/core_id": "4", cpuD + "cpu4/topology/thread_siblings_list": "4-5",
				cpuD + "cpu5/topology/core_id": "4", cpuD + "cpu5/topology/thread_siblings_list": "4,6",
			},
			want: &Topology{
				Online:  []int{0, 1, 2, 3, 4, 5},
				Offline: []int{6, 7},
				Nodes:   []Node{{ID: 0, CPUs: []int{0, 1, 2, 3, 4, 5}, Distances: []int{10}}},
				CPUs: []CPU{
					{ID: 0, Core: 0, Siblings: []int{0}}, {ID: 1, Core: 0, Siblings: []int{1}},
					{ID: 2, Core: 2, Siblings: []int{2}}, {ID: 3, Core: 3, Siblings: []int{3}},
					{ID: 4, Core: 4, Siblings: []int{4, 5}}, {ID: 5, Core: 4, Siblings: []int{4, 5}},
				},
				Sockets: []Socket{{ID: 0, CPUs: []int{0, 1, 2, 3, 4, 5}, Nodes: []int{0}, Cores: 4}},
			},
		},
		{
			name: "partial caches",
			files: map[string]string{
				cpuD + "online": "0-1", cpuD + "present": "0-1",
				// cpu0: an L2 with no shared_cpu_list, size or line size,
				// an index without level (skipped), an L1d shared with 1.
				cpuD + "cpu0/cache/index2/level": "2", cpuD + "cpu0/cache/index2/type": "Unified",
				cpuD + "cpu0/cache/index3/type":  "Unified",
				cpuD + "cpu0/cache/index0/level": "1", cpuD + "cpu0/cache/index0/type": "Data",
				cpuD + "cpu0/cache/index0/size": "48K", cpuD + "cpu0/cache/index0/shared_cpu_list": "0-1",
				// cpu1: the same L1d under another index, its own L2.
				cpuD + "cpu1/cache/index5/level": "1", cpuD + "cpu1/cache/index5/type": "Data",
				cpuD + "cpu1/cache/index5/size": "48K", cpuD + "cpu1/cache/index5/shared_cpu_list": "0-1",
				cpuD + "cpu1/cache/index6/level": "2", cpuD + "cpu1/cache/index6/type": "Unified",
				cpuD + "cpu1/cache/index6/size": "2M", cpuD + "cpu1/cache/index6/coherency_line_size": "128",
				cpuD + "cpu1/cache/index6/shared_cpu_list": "0",
			},
			want: &Topology{
				Online:  []int{0, 1},
				Nodes:   []Node{{ID: 0, CPUs: []int{0, 1}, Distances: []int{10}}},
				CPUs:    []CPU{{ID: 0, Core: 0, Siblings: []int{0}}, {ID: 1, Core: 1, Siblings: []int{1}}},
				Sockets: []Socket{{ID: 0, CPUs: []int{0, 1}, Nodes: []int{0}, Cores: 2}},
				Caches: []Cache{
					{Level: 1, Type: "Data", Size: 48 << 10, CPUs: []int{0, 1}},
					{Level: 2, Type: "Unified", CPUs: []int{0}},
					{Level: 2, Type: "Unified", Size: 2 << 20, LineSize: 128, CPUs: []int{0, 1}}, // lists 0, is 1's
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := Discover(writeTree(t, tt.files))
			if err != nil {
				t.Fatal(err)
			}
			diffTopology(t, topo, tt.want)
			checkInvariants(t, topo)
		})
	}
}

func TestDiscoverCpuset(t *testing.T) {
	const (
		v1 = "sys/fs/cgroup/cpuset/"
		v2 = "sys/fs/cgroup/"
	)
	base := map[string]string{
		cpuD + "online": "0-3", nodeD + "online": "0-1",
		nodeD + "node0/cpulist": "0-1", nodeD + "node1/cpulist": "2-3",
	}
	tests := []struct {
		name       string
		files      map[string]string
		cpus, mems []int
	}{
		{"no proc/self/cgroup", nil, nil, nil},
		{"v2, the cgroup's files", map[string]string{
			"proc/self/cgroup": "0::/a\n", v2 + "a/cpuset.cpus.effective": "1-2\n", v2 + "a/cpuset.mems.effective": "0-1\n",
		}, []int{1, 2}, nil},
		{"v2, the parent's files", map[string]string{
			"proc/self/cgroup": "0::/a/b/c\n", v2 + "a/b/cgroup.procs": "", v2 + "a/cpuset.cpus.effective": "3", v2 + "a/cpuset.mems.effective": "1",
		}, []int{3}, []int{1}},
		{"v2, the root", map[string]string{
			"proc/self/cgroup": "0::/\n", v2 + "cpuset.cpus.effective": "0-3", v2 + "cpuset.mems.effective": "0-1",
		}, nil, nil},
		{"v2, a namespace root that restricts (container)", map[string]string{
			"proc/self/cgroup": "0::/\n", v2 + "cpuset.cpus.effective": "0", v2 + "cpuset.mems.effective": "0",
		}, []int{0}, []int{0}},
		{"v2, no cpuset files", map[string]string{
			"proc/self/cgroup": "0::/user.slice/session-1.scope\n", v2 + "user.slice/cgroup.procs": "",
		}, nil, nil},
		{"v2, offline and unknown CPUs and nodes", map[string]string{
			"proc/self/cgroup": "0::/a", v2 + "a/cpuset.cpus.effective": "2-9", v2 + "a/cpuset.mems.effective": "1-3",
		}, []int{2, 3}, []int{1}},
		{"v2, none of the online CPUs", map[string]string{
			"proc/self/cgroup": "0::/a", v2 + "a/cpuset.cpus.effective": "8-9", v2 + "a/cpuset.mems.effective": "",
		}, nil, nil},
		{"v1, effective files", map[string]string{
			"proc/self/cgroup": "4:memory:/j\n3:cpuset:/j\n", v1 + "j/cpuset.effective_cpus": "0-1", v1 + "j/cpuset.cpus": "0-3",
			v1 + "j/cpuset.effective_mems": "0", v1 + "j/cpuset.mems": "0-1",
		}, []int{0, 1}, []int{0}},
		{"v1, controller list, no effective files", map[string]string{
			"proc/self/cgroup": "5:cpu,cpuset,memory:/j\n", v1 + "j/cpuset.cpus": "2-3", v1 + "j/cpuset.mems": "0-1",
		}, []int{2, 3}, nil},
		{"v1, the cgroup's directory not mounted (container without cgroup namespace)", map[string]string{
			"proc/self/cgroup": "3:cpuset:/docker/abc\n", v1 + "cpuset.effective_cpus": "1-2", v1 + "cpuset.effective_mems": "1",
		}, []int{1, 2}, []int{1}},
		{"v1 and v2: v1 holds the cpuset controller", map[string]string{
			"proc/self/cgroup": "3:cpuset:/j\n0::/k\n", v1 + "j/cpuset.effective_cpus": "0",
			v2 + "k/cpuset.cpus.effective": "1",
		}, []int{0}, nil},
		{"v1 without cpuset", map[string]string{
			"proc/self/cgroup": "2:memory:/j\n1:name=systemd:/j\n", v1 + "j/cpuset.effective_cpus": "0",
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := maps.Clone(base)
			maps.Copy(files, tt.files)
			topo, err := Discover(writeTree(t, files))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(topo.Cpuset, tt.cpus) || !reflect.DeepEqual(topo.CpusetMems, tt.mems) {
				t.Errorf("Cpuset %v, CpusetMems %v; want %v, %v", topo.Cpuset, topo.CpusetMems, tt.cpus, tt.mems)
			}
			checkInvariants(t, topo)
		})
	}
}

func TestDiscoverErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"empty root", map[string]string{"x": ""}, []string{"cannot find the CPUs", "is sysfs mounted"}},
		{"bad online", map[string]string{cpuD + "online": "0-z"}, []string{"cpu/online", `"z" is not a CPU number`}},
		{"empty online", map[string]string{cpuD + "online": "\n"}, []string{"lists no CPUs"}},
		{"bad core_id", map[string]string{cpuD + "online": "0", cpuD + "cpu0/topology/core_id": "zero"}, []string{"core_id", "not a number"}},
		{"bad node cpulist", map[string]string{cpuD + "online": "0", nodeD + "node0/cpulist": "1-0"}, []string{"node0/cpulist", "descending"}},
		{"bad node online", map[string]string{cpuD + "online": "0", nodeD + "online": "x"}, []string{"node/online"}},
		{"bad distance", map[string]string{cpuD + "online": "0", nodeD + "node0/distance": "10 far"}, []string{"node0/distance", `"far"`}},
		{"bad present", map[string]string{cpuD + "online": "0", cpuD + "present": "0-"}, []string{"cpu/present"}},
		{"bad possible", map[string]string{cpuD + "online": "0", cpuD + "possible": "x"}, []string{"cpu/possible"}},
		{"bad siblings", map[string]string{cpuD + "online": "0", cpuD + "cpu0/topology/thread_siblings_list": "0,"}, []string{"thread_siblings_list", "empty item"}},
		{"bad has_memory", map[string]string{cpuD + "online": "0", nodeD + "has_memory": "a"}, []string{"has_memory"}},
		{"bad cache level", map[string]string{cpuD + "online": "0", cpuD + "cpu0/cache/index0/level": "L1"}, []string{"index0/level", "not a cache level"}},
		{"cache level 0", map[string]string{cpuD + "online": "0", cpuD + "cpu0/cache/index0/level": "0", cpuD + "cpu0/cache/index0/type": "Data"}, []string{"index0/level", `"0"`, "not a cache level"}},
		{"unknown cache type", map[string]string{cpuD + "online": "0", cpuD + "cpu0/cache/index0/level": "1", cpuD + "cpu0/cache/index0/type": "Trace"}, []string{"index0/type", `"Trace"`, "not a cache type"}},
		{"bad cache size", map[string]string{
			cpuD + "online": "0", cpuD + "cpu0/cache/index0/level": "1", cpuD + "cpu0/cache/index0/type": "Data", cpuD + "cpu0/cache/index0/size": "32KB",
		}, []string{"index0/size", `"32KB"`}},
		{"bad line size", map[string]string{
			cpuD + "online": "0", cpuD + "cpu0/cache/index0/level": "1", cpuD + "cpu0/cache/index0/type": "Data", cpuD + "cpu0/cache/index0/coherency_line_size": "-64",
		}, []string{"coherency_line_size", `"-64"`}},
		{"bad shared_cpu_list", map[string]string{
			cpuD + "online": "0", cpuD + "cpu0/cache/index0/level": "1", cpuD + "cpu0/cache/index0/type": "Data", cpuD + "cpu0/cache/index0/shared_cpu_list": "0-x",
		}, []string{"shared_cpu_list"}},
		{"bad proc/self/cgroup", map[string]string{cpuD + "online": "0", "proc/self/cgroup": "cpuset:/a\n"}, []string{"proc/self/cgroup", "hierarchy-ID:controllers:path"}},
		{"bad cpuset file", map[string]string{
			cpuD + "online": "0", "proc/self/cgroup": "0::/a\n", "sys/fs/cgroup/a/cpuset.cpus.effective": "0-1-2",
		}, []string{"a/cpuset.cpus.effective"}},
		{"bad v1 mems file", map[string]string{
			cpuD + "online": "0", "proc/self/cgroup": "1:cpuset:/\n", "sys/fs/cgroup/cpuset/cpuset.effective_mems": "?",
		}, []string{"cpuset/cpuset.effective_mems"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := Discover(writeTree(t, tt.files))
			if err == nil {
				t.Fatalf("Discover = %+v, nil; want an error", topo)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseMeminfoField(t *testing.T) {
	tests := []struct {
		in, field string
		want      int64
		ok        bool
	}{
		{"MemTotal:        8000000 kB\nMemFree: 1 kB\n", "MemTotal", 8000000 << 10, true},
		{"MemTotal:        8000000 kB\nMemFree: 1 kB\n", "MemFree", 1 << 10, true},
		{"Node 0 MemTotal:       4024524 kB\nNode 0 MemFree: 3 kB\n", "MemTotal", 4024524 << 10, true},
		{"Node 0 MemTotal:       4024524 kB\nNode 0 MemFree: 3 kB\n", "MemFree", 3 << 10, true},
		{"Node 1 MemFree: 3 kB\nNode 1 MemTotal: 0 kB\n", "MemTotal", 0, true},
		{"MemTotal: 12", "MemTotal", 12, true},
		{"MemFree: 3 kB\n", "MemTotal", 0, false},
		{"MemAvailable: 3 kB\n", "MemFree", 0, false},
		{"", "MemTotal", 0, false},
		{"MemTotal:", "MemTotal", 0, false},
		{"MemTotal: -1 kB", "MemTotal", 0, false},
		{"MemTotal: x kB", "MemTotal", 0, false},
		{"MemTotal: 1 MB", "MemTotal", 0, false},
		{"MemTotal: 9223372036854775807 kB", "MemTotal", 0, false},
		{"MemTotal: 9007199254740991 kB", "MemTotal", 9007199254740991 << 10, true},
	}
	for _, tt := range tests {
		got, err := parseMeminfoField(tt.in, tt.field)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseMeminfoField(%q, %q) = %d, %v; want %d, ok %v", tt.in, tt.field, got, err, tt.want, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), tt.field) {
			t.Errorf("parseMeminfoField(%q, %q) error %q does not name the field", tt.in, tt.field, err)
		}
	}
}

func TestParseCacheSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"32K\n", 32 << 10, true},
		{"1024K", 1 << 20, true},
		{"32M", 32 << 20, true},
		{"1G", 1 << 30, true},
		{"16k", 16 << 10, true},
		{"512", 512, true},
		{"0K", 0, true},
		{"", 0, false},
		{"K", 0, false},
		{"32KB", 0, false},
		{"32 K", 0, false},
		{"-32K", 0, false},
		{"3K2", 0, false},
		{"32T", 0, false},
		{"9007199254740992K", 0, false},
		{"9223372036854775808", 0, false},
	}
	for _, tt := range tests {
		got, err := parseCacheSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseCacheSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseProcCgroup(t *testing.T) {
	tests := []struct {
		in   string
		want cgroupPaths
		ok   bool
	}{
		{"0::/\n", cgroupPaths{v2: "/"}, true},
		{"0::/user.slice/user-0.slice/session-3.scope\n", cgroupPaths{v2: "/user.slice/user-0.slice/session-3.scope"}, true},
		{"3:cpuset:/slurm/job7\n1:name=systemd:/x\n0::/y\n", cgroupPaths{v1Cpuset: "/slurm/job7", v2: "/y"}, true},
		{"7:cpu,cpuset,memory:/a/\n", cgroupPaths{v1Cpuset: "/a"}, true},
		{"7:cpusetx:/a\n2:name=cpuset:/b\n", cgroupPaths{}, true},
		{"0::/a:b\n", cgroupPaths{v2: "/a:b"}, true},
		{"0::/../..\n", cgroupPaths{v2: "/"}, true}, // outside the namespace's root
		{"0::\n\n", cgroupPaths{v2: "/"}, true},
		{"", cgroupPaths{}, true},
		{"0:/a\n", cgroupPaths{}, false},
		{"x::/a\n", cgroupPaths{}, false},
		{"-1:cpuset:/a\n", cgroupPaths{}, false},
	}
	for _, tt := range tests {
		got, err := parseProcCgroup(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseProcCgroup(%q) = %+v, %v; want %+v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseDistances(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"10\n", []int{10}},
		{"10 21\n", []int{10, 21}},
		{"10 16 16 16 28 28 22 28\n", []int{10, 16, 16, 16, 28, 28, 22, 28}},
		{"", nil},
		{"10 x", nil},
		{"-1", nil},
		{"256", nil},
	}
	for _, tt := range tests {
		got, err := parseDistances(tt.in)
		if (err == nil) != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("parseDistances(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseMemTotal(f *testing.F) {
	f.Add("MemTotal:        8000000 kB\n")
	f.Add("Node 0 MemTotal:       4024524 kB\nNode 0 MemFree: 3 kB\n")
	f.Add("MemTotal: 9223372036854775807 kB")
	f.Fuzz(func(t *testing.T, s string) {
		for _, field := range []string{"MemTotal", "MemFree"} {
			n, err := parseMeminfoField(s, field)
			if err == nil && n < 0 {
				t.Fatalf("parseMeminfoField(%q, %q) = %d", s, field, n)
			}
		}
	})
}

func FuzzParseCacheSize(f *testing.F) {
	for _, s := range []string{"32K", "1024K\n", "32M", "1G", "512", "", "K", "9007199254740992K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseCacheSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("parseCacheSize(%q) = %d", s, n)
		}
		text := strconv.FormatInt(n, 10)
		if n%1024 == 0 {
			text = strconv.FormatInt(n/1024, 10) + "K" // as the kernel writes it
		}
		if again, err := parseCacheSize(text); err != nil || again != n {
			t.Fatalf("parseCacheSize(%q) = %d; formatted %q; parsed back %d, %v", s, n, text, again, err)
		}
	})
}

func FuzzParseProcCgroup(f *testing.F) {
	for _, s := range []string{"0::/\n", "3:cpuset:/slurm/job7\n0::/y\n", "7:cpu,cpuset:/a/../b\n", "0:/a", "x::/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseProcCgroup(s)
		if err != nil {
			return
		}
		for _, cg := range []string{p.v1Cpuset, p.v2} {
			if cg != "" && (!strings.HasPrefix(cg, "/") || path.Clean(cg) != cg) {
				t.Fatalf("parseProcCgroup(%q) = %+v: path %q not clean and absolute", s, p, cg)
			}
		}
	})
}

func FuzzParseDistances(f *testing.F) {
	f.Add("10 21\n")
	f.Add("10 x")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDistances(s)
		if err != nil {
			return
		}
		if len(d) == 0 {
			t.Fatalf("parseDistances(%q) = no distances, nil", s)
		}
		for _, v := range d {
			if v < 0 || v > 255 {
				t.Fatalf("parseDistances(%q) = %v", s, d)
			}
		}
	})
}

// TestDiscoverNodes: the fast partial discovery agrees with Discover on
// everything it fills in, on every fake machine and on this one.
func TestDiscoverNodes(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	roots := []string{""}
	for _, e := range entries {
		if e.IsDir() {
			roots = append(roots, filepath.Join("testdata", e.Name()))
		}
	}
	for _, root := range roots {
		full, err := Discover(root)
		if err != nil {
			t.Fatalf("Discover(%q): %v", root, err)
		}
		part, err := DiscoverNodes(root)
		if err != nil {
			t.Fatalf("DiscoverNodes(%q): %v", root, err)
		}
		// Free memory moves between the two reads on a live machine.
		for i := range full.Nodes {
			if root == "" && i < len(part.Nodes) {
				part.Nodes[i].MemFree = full.Nodes[i].MemFree
			}
		}
		if !reflect.DeepEqual(part.Nodes, full.Nodes) || !slices.Equal(part.Online, full.Online) ||
			!slices.Equal(part.Cpuset, full.Cpuset) || !slices.Equal(part.CpusetMems, full.CpusetMems) {
			t.Errorf("%q: DiscoverNodes = %+v\nDiscover = %+v", root, part, full)
		}
		for i, c := range part.CPUs {
			if c.ID != full.CPUs[i].ID || c.Node != full.CPUs[i].Node || part.NodeOf(c.ID) != full.NodeOf(c.ID) {
				t.Errorf("%q: CPU %+v, Discover says %+v", root, c, full.CPUs[i])
			}
		}
	}
}
