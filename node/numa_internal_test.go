package node

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
)

func TestParseNUMANodes(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want []int
	}{
		{"0", 1, []int{0}},
		{"-1", 1, []int{-1}},
		{"0,1,-1,3", 4, []int{0, 1, -1, 3}},
		{" 2 , 1023", 2, []int{2, 1023}},
	} {
		got, err := parseNUMANodes(tc.s, tc.n)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseNUMANodes(%q, %d) = %v, %v; want %v", tc.s, tc.n, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 1, "entry 0 is empty"},
		{"0,1", 1, "2 entries for 1 PEs"},
		{"0", 2, "1 entries for 2 PEs"},
		{"0,,1", 3, "entry 1 is empty"},
		{"0,x", 2, `entry 1, "x", is not a whole number`},
		{"0.5", 1, "not a whole number"},
		{"-2", 1, "entry 0, -2, is not -1 or a node number from 0 to 1023"},
		{"1024", 1, "is not -1 or a node number"},
		{"99999999999999999999", 1, "not a whole number"},
		{"0;1", 2, "1 entries for 2 PEs"},
	} {
		_, err := parseNUMANodes(tc.s, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), job.EnvNUMANodes+"="+strconv.Quote(tc.s)) {
			t.Errorf("parseNUMANodes(%q, %d) = %v; want an error naming %s and saying %q", tc.s, tc.n, err, job.EnvNUMANodes, tc.want)
		}
	}
}

// FuzzParseNUMANodes: the parser never panics; what it accepts has one
// node per PE, each -1 or a valid node number, and reads back the same
// when formatted; what it rejects is an error naming the variable.
func FuzzParseNUMANodes(f *testing.F) {
	for _, s := range []string{"0", "-1", "0,1", "3,-1,0,2", " 1 ,2", "", ",", "0,,", "x", "-0", "+1", "1024", "0x1", "1e3"} {
		f.Add(s, uint8(len(strings.Split(s, ","))))
	}
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		if n == 0 {
			n = 1
		}
		nodes, err := parseNUMANodes(s, int(n))
		if err != nil {
			if !strings.Contains(err.Error(), job.EnvNUMANodes+"=") || nodes != nil {
				t.Fatalf("parseNUMANodes(%q, %d) = %v, %v: the error must name %s", s, n, nodes, err, job.EnvNUMANodes)
			}
			return
		}
		if len(nodes) != int(n) {
			t.Fatalf("parseNUMANodes(%q, %d) = %v: %d nodes", s, n, nodes, len(nodes))
		}
		parts := make([]string, len(nodes))
		for i, v := range nodes {
			if v < -1 || v >= sys.MaxNodes {
				t.Fatalf("parseNUMANodes(%q, %d) = %v: node %d out of range", s, n, nodes, v)
			}
			parts[i] = strconv.Itoa(v)
		}
		again, err := parseNUMANodes(strings.Join(parts, ","), int(n))
		if err != nil || !slices.Equal(again, nodes) {
			t.Fatalf("parseNUMANodes(%q) = %v, but its formatting reads back as %v, %v", s, nodes, again, err)
		}
	})
}

func TestHomeNodesSources(t *testing.T) {
	calls := 0
	topo := func() (*numa.Topology, error) {
		calls++
		return nil, errors.New("no topology in this test")
	}
	// Config.NUMANodes wins over the launcher's variable.
	got, err := homeNodes(Config{NUMANodes: []int{5, 6, 7, 8}}, 4, 2, 2, "0,0", topo)
	if err != nil || !slices.Equal(got, []int{7, 8}) {
		t.Errorf("homeNodes(NUMANodes) = %v, %v; want [7 8]", got, err)
	}
	// The launcher's variable: the PEs of this process, in order.
	got, err = homeNodes(Config{}, 4, 2, 2, "1,-1", topo)
	if err != nil || !slices.Equal(got, []int{1, -1}) {
		t.Errorf("homeNodes(env) = %v, %v; want [1 -1]", got, err)
	}
	if _, err := homeNodes(Config{}, 4, 2, 2, "1", topo); err == nil || !strings.Contains(err.Error(), job.EnvNUMANodes) {
		t.Errorf("homeNodes(bad env) = %v; want an error naming %s", err, job.EnvNUMANodes)
	}
	if calls != 0 {
		t.Errorf("the topology was read %d times; only discovery needs it", calls)
	}
	// Discovery without a topology: no home node.
	got, err = homeNodes(Config{}, 3, 0, 3, "", topo)
	if err != nil || !slices.Equal(got, []int{-1, -1, -1}) || calls != 1 {
		t.Errorf("homeNodes(discover, no topology) = %v, %v (%d reads); want [-1 -1 -1] after one read", got, err, calls)
	}
	// Discovery on this machine: the node holding all of this process's CPUs.
	real, err := numa.Discover("")
	if err != nil {
		t.Fatal(err)
	}
	got, err = homeNodes(Config{}, 1, 0, 1, "", func() (*numa.Topology, error) { return real, nil })
	if err != nil || got[0] != processNode(real) {
		t.Errorf("homeNodes(discover) = %v, %v; want [%d]", got, err, processNode(real))
	}
	cpus, _ := numa.Allowed()
	if n := processNode(real); n >= 0 {
		for _, c := range cpus {
			if real.NodeOf(c) != n {
				t.Errorf("processNode = %d but allowed CPU %d is on node %d", n, c, real.NodeOf(c))
			}
		}
	}
}

func TestMemNodes(t *testing.T) {
	topo := &numa.Topology{Nodes: []numa.Node{
		{ID: 0, MemTotal: 1 << 30}, {ID: 1}, {ID: 2, MemTotal: 1 << 30}, {ID: 5, MemTotal: 1 << 30},
	}}
	if got := memNodes(topo); !slices.Equal(got, []int{0, 2, 5}) {
		t.Errorf("memNodes = %v; want the nodes with memory [0 2 5]", got)
	}
	topo.CpusetMems = []int{1, 2, 5}
	if got := memNodes(topo); !slices.Equal(got, []int{2, 5}) {
		t.Errorf("memNodes with cpuset mems 1,2,5 = %v; want [2 5]", got)
	}
	topo.CpusetMems = []int{1}
	if got := memNodes(topo); len(got) != 0 {
		t.Errorf("memNodes with cpuset mems 1 (no memory) = %v; want none", got)
	}
	unknown := &numa.Topology{Nodes: []numa.Node{{ID: 0}, {ID: 1}}}
	if got := memNodes(unknown); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("memNodes with unknown sizes = %v; want every node", got)
	}
}

// TestPlaceHeapNotes: the cases where start-up leaves the heap to first
// touch, each with a note; nothing here calls mbind.
func TestPlaceHeapNotes(t *testing.T) {
	topo := &numa.Topology{Nodes: []numa.Node{{ID: 0, MemTotal: 1 << 30}, {ID: 1}}, CpusetMems: []int{1}}
	have := func() (*numa.Topology, error) { return topo, nil }
	broken := func() (*numa.Topology, error) { return nil, errors.New("sysfs is gone") }
	for _, tc := range []struct {
		policy numa.MemPolicy
		home   int
		topo   func() (*numa.Topology, error)
		want   string
	}{
		{numa.MemLocal, -1, have, "no home node"},
		{numa.MemLocal, 1, have, "its home node 1 is not a NUMA node of this machine with memory that this process may use (there are none)"},
		{numa.MemLocal, 0, have, "its home node 0 is not"}, // outside the cpuset
		{numa.MemLocal, 5, func() (*numa.Topology, error) { topo := *topo; topo.CpusetMems = nil; return &topo, nil }, "(those are 0)"},
		{numa.MemInterleave, 0, have, "may use no NUMA node with memory"},
		{numa.MemLocal, 0, broken, "cannot read the NUMA topology: sysfs is gone"},
	} {
		h := placeHeap(nil, tc.policy, tc.home, tc.topo, false)
		if h.Nodes != nil || !strings.Contains(h.Note, tc.want) || h.Policy != tc.policy.String() {
			t.Errorf("placeHeap(%v, home %d) = %+v; want no nodes and a note containing %q", tc.policy, tc.home, h, tc.want)
		}
	}
	if h := placeHeap(nil, numa.MemDefault, 0, broken, true); h.Policy != "none" || h.Nodes != nil || h.Note != "" {
		t.Errorf("placeHeap(none) = %+v; want nothing done and no note", h)
	}
}
