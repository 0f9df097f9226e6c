package numa

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDiscoverTwoNodes(t *testing.T) {
	topo, err := Discover("testdata/2node")
	if err != nil {
		t.Fatal(err)
	}
	want := &Topology{
		Online: []int{0, 1, 2, 3, 4, 5, 6, 7}, // cpu8 is offline
		Nodes: []Node{
			{ID: 0, CPUs: []int{0, 1, 4, 5}, MemTotal: 16384000 << 10, Distances: []int{10, 21}},
			{ID: 1, CPUs: []int{2, 3, 6, 7}, MemTotal: 16777216 << 10, Distances: []int{21, 10}},
		},
		CPUs: []CPU{
			{ID: 0, Core: 0, Socket: 0, Node: 0},
			{ID: 1, Core: 1, Socket: 0, Node: 0},
			{ID: 2, Core: 0, Socket: 1, Node: 1},
			{ID: 3, Core: 1, Socket: 1, Node: 1},
			{ID: 4, Core: 0, Socket: 0, Node: 0}, // SMT sibling of 0
			{ID: 5, Core: 1, Socket: 0, Node: 0},
			{ID: 6, Core: 0, Socket: 1, Node: 1},
			{ID: 7, Core: 1, Socket: 1, Node: 1},
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
		Online: []int{0, 1, 2, 3},
		Nodes:  []Node{{ID: 0, CPUs: []int{0, 1, 2, 3}, MemTotal: 8000000 << 10, Distances: []int{10}}},
		CPUs: []CPU{
			{ID: 0, Core: 0}, {ID: 1, Core: 1}, {ID: 2, Core: 2}, {ID: 3, Core: 3},
		},
	}
	if !reflect.DeepEqual(topo, want) {
		t.Errorf("Discover(nonode) =\n%+v\nwant\n%+v", topo, want)
	}
	checkInvariants(t, topo)
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
	t.Logf("%d nodes, online CPUs %s", len(topo.Nodes), FormatCPUList(topo.Online))
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
	if !slices.IsSorted(topo.Online) {
		t.Errorf("Online %v not ascending", topo.Online)
	}
	in := map[int]int{} // CPU -> number of nodes holding it
	for i, n := range topo.Nodes {
		if i > 0 && n.ID <= topo.Nodes[i-1].ID {
			t.Errorf("nodes not ascending by ID")
		}
		if !slices.IsSorted(n.CPUs) {
			t.Errorf("node %d CPUs %v not ascending", n.ID, n.CPUs)
		}
		for _, c := range n.CPUs {
			in[c]++
		}
	}
	for i, c := range topo.CPUs {
		if c.ID != topo.Online[i] {
			t.Errorf("CPUs[%d].ID = %d; Online[%d] = %d", i, c.ID, i, topo.Online[i])
		}
		if in[c.ID] != 1 {
			t.Errorf("online CPU %d is in %d nodes; want exactly 1", c.ID, in[c.ID])
		}
		if node := topo.Nodes[slices.IndexFunc(topo.Nodes, func(n Node) bool { return n.ID == c.Node })]; !slices.Contains(node.CPUs, c.ID) {
			t.Errorf("CPU %d says node %d, which does not list it", c.ID, c.Node)
		}
		if c.Core < 0 || c.Socket < 0 {
			t.Errorf("CPU %+v: negative core or socket", c)
		}
	}
	if len(in) != len(topo.Online) {
		t.Errorf("nodes hold %d CPUs; %d are online", len(in), len(topo.Online))
	}
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
				Online: []int{0, 1},
				Nodes:  []Node{{ID: 0, CPUs: []int{0, 1}, Distances: []int{10}}},
				CPUs:   []CPU{{ID: 0, Core: 0}, {ID: 1, Core: 1}},
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
				CPUs: []CPU{{ID: 0, Core: 0}, {ID: 1, Core: 1}, {ID: 2, Core: 2, Node: 1}, {ID: 3, Core: 3}},
			},
		},
		{
			name: "node listed online but missing",
			files: map[string]string{
				cpuD + "online": "0", nodeD + "online": "0-1", nodeD + "node1/cpulist": "0",
			},
			want: &Topology{
				Online: []int{0},
				Nodes:  []Node{{ID: 1, CPUs: []int{0}}},
				CPUs:   []CPU{{ID: 0, Node: 1}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := Discover(writeTree(t, tt.files))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(topo, tt.want) {
				t.Errorf("got\n%+v\nwant\n%+v", topo, tt.want)
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

func TestParseMemTotal(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"MemTotal:        8000000 kB\nMemFree: 1 kB\n", 8000000 << 10, true},
		{"Node 0 MemTotal:       4024524 kB\nNode 0 MemFree: 3 kB\n", 4024524 << 10, true},
		{"Node 1 MemFree: 3 kB\nNode 1 MemTotal: 0 kB\n", 0, true},
		{"MemTotal: 12", 12, true},
		{"MemFree: 3 kB\n", 0, false},
		{"", 0, false},
		{"MemTotal:", 0, false},
		{"MemTotal: -1 kB", 0, false},
		{"MemTotal: x kB", 0, false},
		{"MemTotal: 1 MB", 0, false},
		{"MemTotal: 9223372036854775807 kB", 0, false},
		{"MemTotal: 9007199254740991 kB", 9007199254740991 << 10, true},
	}
	for _, tt := range tests {
		got, err := parseMemTotal(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseMemTotal(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
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
	f.Add("Node 0 MemTotal:       4024524 kB\n")
	f.Add("MemTotal: 9223372036854775807 kB")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseMemTotal(s)
		if err == nil && n < 0 {
			t.Fatalf("parseMemTotal(%q) = %d", s, n)
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
