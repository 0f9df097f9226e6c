package numa_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
)

// sharedPages maps n pages of a fresh memfd, shared, as a goshmem heap
// is mapped.
func sharedPages(t *testing.T, n int) []byte {
	t.Helper()
	size := n * os.Getpagesize()
	fd, err := sys.MemfdCreate("numatest", false)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	if err := sys.Ftruncate(fd, int64(size)); err != nil {
		t.Fatal(err)
	}
	b, err := sys.Mmap(fd, 0, size, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Munmap(b) })
	return b
}

// skipNoNUMA skips when the kernel has no NUMA support.
func skipNoNUMA(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, sys.ErrNoSys) {
		t.Skipf("the kernel has no NUMA support (CONFIG_NUMA off): %v", err)
	}
}

func TestParseMemPolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want numa.MemPolicy
	}{
		{"none", numa.MemDefault}, {"local", numa.MemLocal}, {"interleave", numa.MemInterleave},
		{"LOCAL", numa.MemLocal}, {"Interleave", numa.MemInterleave},
	} {
		p, err := numa.ParseMemPolicy(tc.in)
		if err != nil || p != tc.want {
			t.Errorf("ParseMemPolicy(%q) = %v, %v; want %v", tc.in, p, err, tc.want)
		}
		if strings.ToLower(tc.in) != p.String() {
			t.Errorf("%v.String() = %q, want %q", p, p.String(), strings.ToLower(tc.in))
		}
	}
	for _, bad := range []string{"", "default", "bind", " local", "preferred"} {
		if _, err := numa.ParseMemPolicy(bad); err == nil || !strings.Contains(err.Error(), "use none, local or interleave") {
			t.Errorf("ParseMemPolicy(%q) = %v; want an error listing the values", bad, err)
		}
	}
	if s := numa.MemPolicy(7).String(); s != "MemPolicy(7)" {
		t.Errorf("MemPolicy(7).String() = %q", s)
	}
}

// TestSetMemPolicy sets each policy on node 0 (every Linux machine has
// it), reads it back, and checks where touched pages went.
func TestSetMemPolicy(t *testing.T) {
	for _, tc := range []struct {
		p     numa.MemPolicy
		nodes []int
		want  []int
	}{
		{numa.MemLocal, []int{0}, []int{0}},
		{numa.MemLocal, []int{0, 5}, []int{0}}, // only nodes[0] counts
		{numa.MemInterleave, []int{0}, []int{0}},
		{numa.MemDefault, []int{0}, nil}, // nodes ignored
	} {
		b := sharedPages(t, 16)
		p, nodes, err := numa.MemPolicyOf(b)
		skipNoNUMA(t, err)
		if err != nil || p != numa.MemDefault || nodes != nil {
			t.Fatalf("fresh memory: MemPolicyOf = %v %v %v, want none", p, nodes, err)
		}
		err = numa.SetMemPolicy(b, tc.p, tc.nodes)
		skipNoNUMA(t, err)
		if err != nil {
			t.Fatalf("SetMemPolicy(%v, %v): %v", tc.p, tc.nodes, err)
		}
		if p, nodes, err := numa.MemPolicyOf(b[len(b)-1:]); err != nil || p != tc.p || !slices.Equal(nodes, tc.want) {
			t.Errorf("after SetMemPolicy(%v, %v): MemPolicyOf = %v %v %v, want %v %v", tc.p, tc.nodes, p, nodes, err, tc.p, tc.want)
		}
		count, err := numa.PageNodes(b)
		if err != nil || len(count) != 0 {
			t.Errorf("PageNodes before any touch = %v, %v; want no pages", count, err)
		}
		for i := 0; i < len(b)/2; i += os.Getpagesize() {
			b[i] = 1
		}
		count, err = numa.PageNodes(b)
		if err != nil || len(count) != 1 || count[0] != 8 {
			t.Errorf("PageNodes after touching 8 pages = %v, %v; want map[0:8]", count, err)
		}
	}
}

func TestSetMemPolicyErrors(t *testing.T) {
	b := sharedPages(t, 2)
	if _, _, err := numa.MemPolicyOf(b); errors.Is(err, sys.ErrNoSys) {
		t.Skipf("the kernel has no NUMA support (CONFIG_NUMA off): %v", err)
	}
	topo, err := numa.Discover("")
	if err != nil {
		t.Fatal(err)
	}
	absent := 63
	for _, n := range topo.Nodes {
		if n.ID == absent {
			t.Skipf("this machine has a node %d", absent)
		}
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		p     numa.MemPolicy
		nodes []int
		want  string
	}{
		{"absent node", b, numa.MemLocal, []int{absent}, "cannot set memory policy local on node(s) 63 for 8192 bytes"},
		{"absent interleave node", b, numa.MemInterleave, []int{absent}, "interleave on node(s) 63"},
		{"unaligned", b[1:], numa.MemLocal, []int{0}, "page-aligned"},
	} {
		err := numa.SetMemPolicy(tc.b, tc.p, tc.nodes)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "have memory") {
			t.Errorf("%s: SetMemPolicy = %v; want an error containing %q and advice", tc.name, err, tc.want)
		}
		if !errors.Is(err, sys.ErrInval) {
			t.Errorf("%s: error %v does not wrap EINVAL", tc.name, err)
		}
	}
	if p, _, err := numa.MemPolicyOf(b); err != nil || p != numa.MemDefault {
		t.Errorf("failed calls changed the policy: %v %v", p, err)
	}
	// Nodes the process cannot allocate on are dropped, as long as one
	// is left.
	if err := numa.SetMemPolicy(b, numa.MemInterleave, []int{0, absent}); err != nil {
		t.Errorf("SetMemPolicy(interleave on 0 and absent %d) = %v, want the absent node dropped", absent, err)
	}
	if p, nodes, err := numa.MemPolicyOf(b); err != nil || p != numa.MemInterleave || !slices.Equal(nodes, []int{0}) {
		t.Errorf("after interleave on [0 %d]: MemPolicyOf = %v %v %v, want interleave [0]", absent, p, nodes, err)
	}
	// A policy MemPolicy cannot express.
	if err := sys.Mbind(b, sys.MPOL_BIND, []int{0}, 0); err != nil {
		t.Fatal(err)
	}
	if _, nodes, err := numa.MemPolicyOf(b); err == nil || !strings.Contains(err.Error(), "MPOL_BIND") || !slices.Equal(nodes, []int{0}) {
		t.Errorf("MemPolicyOf(bound memory) = %v, %v; want an error naming MPOL_BIND", nodes, err)
	}
}

func TestMemPolicyPanics(t *testing.T) {
	b := sharedPages(t, 1)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"local without nodes", func() { numa.SetMemPolicy(b, numa.MemLocal, nil) }, "numa.SetMemPolicy: MemLocal with no nodes"},
		{"interleave without nodes", func() { numa.SetMemPolicy(b, numa.MemInterleave, []int{}) }, "numa.SetMemPolicy: MemInterleave with no nodes"},
		{"negative node", func() { numa.SetMemPolicy(b, numa.MemInterleave, []int{0, -1}) }, "node -1 in nodes [0 -1]"},
		{"unknown policy", func() { numa.SetMemPolicy(b, numa.MemPolicy(9), []int{0}) }, "unknown policy 9"},
		{"empty range", func() { numa.MemPolicyOf(nil) }, "numa.MemPolicyOf: b is empty"},
	} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Errorf("%s: panic %v, want one containing %q", tc.name, r, tc.want)
				}
			}()
			tc.f()
		}()
	}
}
