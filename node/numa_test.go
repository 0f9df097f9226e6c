package node_test

// Home NUMA nodes and the heap memory policy (SHMEM_HEAP_POLICY), in
// process and across processes.

import (
	"errors"
	"fmt"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/launch"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/node"
	"github.com/goshmem/goshmem/numa"
)

func init() {
	scenarios["numa"] = scenarioNUMA
}

// usableNodes returns the nodes of this machine with memory that this
// process may allocate on: where a heap policy can put pages.
func usableNodes(t testing.TB) []int {
	topo, err := numa.Discover("")
	if err != nil {
		t.Fatal(err)
	}
	var nodes []int
	for _, n := range topo.Nodes {
		if n.MemTotal > 0 && (topo.CpusetMems == nil || slices.Contains(topo.CpusetMems, n.ID)) {
			nodes = append(nodes, n.ID)
		}
	}
	return nodes
}

// appliedNote is the note of a heap policy set as asked: on a machine
// with one NUMA node, that it changes nothing; otherwise none.
func appliedNote(t testing.TB) string {
	topo, err := numa.Discover("")
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Nodes) == 1 {
		return "this machine has one NUMA node, so the policy places nothing differently"
	}
	return ""
}

// requireNUMAPolicy skips when the kernel has no NUMA memory policy.
func requireNUMAPolicy(t *testing.T) {
	t.Helper()
	b, err := sys.Mmap(memfdForTest(t), 0, os.Getpagesize(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(b)
	if _, _, err := numa.MemPolicyOf(b); errors.Is(err, sys.ErrNoSys) {
		t.Skipf("the kernel has no NUMA support (CONFIG_NUMA off): %v", err)
	}
}

func memfdForTest(t *testing.T) int {
	t.Helper()
	fd, err := sys.MemfdCreate("numa-probe", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close(fd) })
	if err := sys.Ftruncate(fd, int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	return fd
}

// processHome is the home node an in-process job discovers: the node
// holding all of this process's CPUs, or -1.
func processHome(t *testing.T) int {
	topo, err := numa.Discover("")
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := numa.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	home := topo.NodeOf(cpus[0])
	for _, c := range cpus {
		if topo.NodeOf(c) != home {
			return -1
		}
	}
	return home
}

// heapOf is PE pe's whole symmetric heap as mapped here.
func heapOf(pe *goshmem.PE) []byte { return mem.ByteSlice(pe.HeapBase(), 0, pe.HeapSize()) }

// checkPolicy fails the PE unless b's memory policy is p on nodes.
func checkPolicy(pe *goshmem.PE, what string, b []byte, p numa.MemPolicy, nodes []int) {
	got, gotNodes, err := numa.MemPolicyOf(b)
	if err != nil || got != p || !slices.Equal(gotNodes, nodes) {
		panic(fmt.Sprintf("PE %d: %s: MemPolicyOf = %v %v %v, want %v %v", pe.MyPE(), what, got, gotNodes, err, p, nodes))
	}
}

// touchAndCount writes one byte per page of a fresh page-aligned block
// of n pages and returns where this process's faults put them.
func touchAndCount(pe *goshmem.PE, n int) map[int]int {
	ps := os.Getpagesize()
	buf, err := goshmem.Align[byte](pe, ps, n*ps)
	if err != nil {
		panic(err)
	}
	for i := 0; i < len(buf); i += ps {
		buf[i] = 1
	}
	count, err := numa.PageNodes(buf)
	if err != nil {
		panic(err)
	}
	return count
}

// TestHeapPolicy runs in-process jobs under each policy and checks the
// policy of every PE's heap (the user heap and the team pool after it)
// and where touched pages went.
func TestHeapPolicy(t *testing.T) {
	requireNUMAPolicy(t)
	usable := usableNodes(t)
	home := processHome(t)
	note := appliedNote(t)
	for _, tc := range []struct {
		name      string
		cfg       node.Config
		home      []int // by PE
		want      numa.MemPolicy
		wantNodes func(pe int) []int
	}{
		{"local discovered", node.Config{HeapPolicy: "local"}, []int{home, home, home}, numa.MemLocal, func(int) []int { return []int{home} }},
		{"default is local", node.Config{}, []int{home, home, home}, numa.MemLocal, func(int) []int { return []int{home} }},
		{"local NUMANodes", node.Config{HeapPolicy: "local", NUMANodes: []int{usable[0], usable[0], usable[0]}},
			[]int{usable[0], usable[0], usable[0]}, numa.MemLocal, func(int) []int { return []int{usable[0]} }},
		{"interleave", node.Config{HeapPolicy: "interleave"}, []int{home, home, home}, numa.MemInterleave, func(int) []int { return usable }},
		{"none", node.Config{HeapPolicy: "none"}, []int{home, home, home}, numa.MemDefault, func(int) []int { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if slices.Contains(tc.home, -1) && tc.want == numa.MemLocal {
				t.Skipf("this process's CPUs span several NUMA nodes: no home node to prefer")
			}
			tc.cfg.HeapSize = 4 << 20
			err := goshmem.RunLocalConfig(tc.cfg, 3, func(pe *goshmem.PE) {
				me := pe.MyPE()
				for q := range pe.NPEs() {
					if got := pe.NUMANode(q); got != tc.home[q] {
						panic(fmt.Sprintf("PE %d: NUMANode(%d) = %d, want %d", me, q, got, tc.home[q]))
					}
				}
				h := pe.HeapPlacement()
				wantNote := note
				if tc.want == numa.MemDefault {
					wantNote = ""
				}
				if h.PE != me || h.Policy != tc.want.String() || !slices.Equal(h.Nodes, tc.wantNodes(me)) || h.Note != wantNote {
					panic(fmt.Sprintf("PE %d: HeapPlacement = %+v, want policy %v on %v, note %q", me, h, tc.want, tc.wantNodes(me), wantNote))
				}
				heap := heapOf(pe)
				checkPolicy(pe, "heap start", heap, tc.want, tc.wantNodes(me))
				checkPolicy(pe, "heap end", heap[len(heap)-1:], tc.want, tc.wantNodes(me))
				checkPolicy(pe, "team pool end", pe.TeamBytes(me, job.TeamSlots-1, job.TeamSlotBytes-1, 1), tc.want, tc.wantNodes(me))
				// Every other PE's heap, as mapped here, has its owner's policy.
				for q := range pe.NPEs() {
					if b := goshmem.Ptr(pe, heap[:1], q); b != nil {
						checkPolicy(pe, fmt.Sprintf("heap of PE %d", q), b, tc.want, tc.wantNodes(q))
					}
				}
				count := touchAndCount(pe, 32)
				total := 0
				for n, c := range count {
					total += c
					if tc.want != numa.MemDefault && !slices.Contains(tc.wantNodes(me), n) {
						panic(fmt.Sprintf("PE %d: %d touched pages on node %d, outside the policy's nodes %v", me, c, n, tc.wantNodes(me)))
					}
				}
				if total != 32 {
					panic(fmt.Sprintf("PE %d: PageNodes counts %d touched pages (%v), want 32", me, total, count))
				}
				pe.BarrierAll()
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestHeapPolicyAbsentNode: Config.NUMANodes may name nodes this
// machine lacks (fake topologies in tests): the job runs, NUMANode
// reports them, and the heap policy is skipped for those PEs with a
// note saying why.
func TestHeapPolicyAbsentNode(t *testing.T) {
	requireNUMAPolicy(t)
	usable := usableNodes(t)
	absent := 3
	for slices.Contains(usable, absent) {
		absent++
	}
	nodes := []int{usable[0], absent, -1}
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20, NUMANodes: nodes}, 3, func(pe *goshmem.PE) {
		me := pe.MyPE()
		for q := range pe.NPEs() {
			if got := pe.NUMANode(q); got != nodes[q] {
				panic(fmt.Sprintf("PE %d: NUMANode(%d) = %d, want %d", me, q, got, nodes[q]))
			}
		}
		h := pe.HeapPlacement()
		switch me {
		case 0:
			if h.Note != appliedNote(t) || !slices.Equal(h.Nodes, []int{usable[0]}) {
				panic(fmt.Sprintf("PE 0: %+v, want local on node %d", h, usable[0]))
			}
			checkPolicy(pe, "heap", heapOf(pe), numa.MemLocal, []int{usable[0]})
			want := fmt.Sprintf("local (PE 0 on node %d)", usable[0])
			if n := appliedNote(t); n != "" {
				want += "; " + n
			}
			if s := h.String(); s != want {
				panic(fmt.Sprintf("PE 0: HeapPlacement().String() = %q", s))
			}
		case 1:
			want := fmt.Sprintf("its home node %d is not a NUMA node of this machine with memory", absent)
			if h.Nodes != nil || !strings.Contains(h.Note, want) {
				panic(fmt.Sprintf("PE 1: %+v, want no policy and a note containing %q", h, want))
			}
			if s := h.String(); !strings.HasPrefix(s, "local, not applied to PE 1: its home node") {
				panic(fmt.Sprintf("PE 1: HeapPlacement().String() = %q", s))
			}
			checkPolicy(pe, "heap", heapOf(pe), numa.MemDefault, nil)
		case 2:
			if h.Nodes != nil || !strings.Contains(h.Note, "no home node") {
				panic(fmt.Sprintf("PE 2: %+v, want no policy and a note about the missing home node", h))
			}
			checkPolicy(pe, "heap", heapOf(pe), numa.MemDefault, nil)
		}
		// The job works.
		x, _ := goshmem.Calloc[int64](pe, 1)
		goshmem.AtomicAdd(pe.Ctx(), &x[0], 1, 0)
		pe.BarrierAll()
		if me == 0 && x[0] != 3 {
			panic(fmt.Sprintf("counter %d, want 3", x[0]))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestHeapPolicyConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  node.Config
		want string
	}{
		{node.Config{HeapPolicy: "bind"}, `unknown heap policy "bind" in Config.HeapPolicy; set SHMEM_HEAP_POLICY to local, interleave or none`},
		{node.Config{NUMANodes: []int{0}}, "Config.NUMANodes lists 1 home nodes for a job of 2 PEs"},
		{node.Config{NUMANodes: []int{0, -2}}, "Config.NUMANodes[1] = -2"},
	} {
		tc.cfg.HeapSize = 1 << 20
		err := goshmem.RunLocalConfig(tc.cfg, 2, func(pe *goshmem.PE) { panic("the job started") })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RunLocalConfig(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// scenarioNUMA runs in every PE process of TestMultiProcessNUMA: each
// PE checks that it sees its home node and its peers' as their hosts
// published them, and that every heap mapped here carries its owner's
// policy (set by another process for peers elsewhere), then prints what
// it saw for the parent to compare.
func scenarioNUMA(pe *goshmem.PE) {
	me, n := pe.MyPE(), pe.NPEs()
	topo, err := numa.Discover("")
	if err != nil {
		fail(pe, "%v", err)
	}
	var usable []int
	for _, nd := range topo.Nodes {
		if nd.MemTotal > 0 && (topo.CpusetMems == nil || slices.Contains(topo.CpusetMems, nd.ID)) {
			usable = append(usable, nd.ID)
		}
	}
	nodes := make([]string, n)
	for q := range n {
		nodes[q] = strconv.Itoa(pe.NUMANode(q))
	}
	buf, err := goshmem.Calloc[byte](pe, 1)
	if err != nil {
		fail(pe, "%v", err)
	}
	for q := range n {
		b := goshmem.Ptr(pe, buf, q)
		if b == nil {
			continue // not mapped here (CMA)
		}
		want, wantNodes := numa.MemDefault, []int(nil)
		if h := pe.NUMANode(q); slices.Contains(usable, h) {
			want, wantNodes = numa.MemLocal, []int{h}
		}
		got, gotNodes, err := numa.MemPolicyOf(b)
		if err != nil || got != want || !slices.Equal(gotNodes, wantNodes) {
			fail(pe, "heap of PE %d (home node %d): policy %v %v %v, want %v %v", q, pe.NUMANode(q), got, gotNodes, err, want, wantNodes)
		}
	}
	// TeamNUMA, and a reduction over the world (level by level when
	// the job runs with SHMEM_NUMA_COLLECTIVES=always and PEs on several
	// nodes), checked against the sum of the inputs.
	tn := goshmem.TeamNUMA(pe)
	var members []int
	for i := range tn.NPEs() {
		members = append(members, tn.WorldPE(i))
	}
	src, _ := goshmem.Malloc[int64](pe, 5000)
	dst, _ := goshmem.Malloc[int64](pe, 5000)
	for i := range src {
		src[i] = int64(me*7919 + i)
	}
	goshmem.SumReduce(goshmem.TeamWorld(pe), dst, src)
	for i := range dst {
		if want := int64(7919*n*(n-1)/2 + n*i); dst[i] != want {
			fail(pe, "world sum[%d] = %d, want %d", i, dst[i], want)
		}
	}
	pe.BarrierAll()
	fmt.Printf("PE %d env %q nodes %s teamnuma %v placement %s\n", me, os.Getenv(job.EnvNUMANodes), strings.Join(nodes, ","), members, pe.HeapPlacement())
}

// TestMultiProcessNUMA: every PE of a multi-process job agrees on every
// PE's home node, whether the launcher gives it (GOSHMEM_NUMA_NODES,
// from its placement on a fake two-socket machine here) or each process
// discovers it from its CPUs; TeamNUMA and reductions level by level
// work across processes.
func TestMultiProcessNUMA(t *testing.T) {
	requireNUMAPolicy(t)
	usable := usableNodes(t)
	t.Run("launcher", func(t *testing.T) {
		topo, err := numa.Discover("../numa/testdata/2socket-smt")
		if err != nil {
			t.Fatal(err)
		}
		// --map-by socket: PEs 0 and 2 on node 0, 1 and 3 on node 1; two
		// PEs per process, so each process hosts PEs of both nodes.
		r := runJobConfig(t, "numa", launch.Config{NPEs: 4, PEsPerProc: 2, MapBy: "socket", BindTo: "none", Topology: topo,
			Env: []string{"SHMEM_NUMA_COLLECTIVES=always"}})
		if r.err != nil || r.code != 0 {
			t.Fatalf("code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
		}
		lines := numaLines(t, r.stdout, 4)
		for pe, l := range lines {
			if !strings.Contains(l, `env "0,1" nodes 0,1,0,1 `) {
				t.Errorf("PE %d: %q, want the launcher's home nodes 0,1,0,1", pe, l)
			}
			home := pe % 2
			if !slices.Contains(usable, home) && !strings.Contains(l, fmt.Sprintf("local, not applied to PE %d: its home node %d", pe, home)) {
				t.Errorf("PE %d: %q: want the policy skipped for node %d, absent here", pe, l, home)
			}
			if want := fmt.Sprintf("teamnuma %v", []int{pe % 2, pe%2 + 2}); !strings.Contains(l, want) {
				t.Errorf("PE %d: %q, want %q", pe, l, want)
			}
		}
	})
	t.Run("discovered", func(t *testing.T) {
		r := runJob(t, "numa", 3, 1, false, "SHMEM_INFO=1")
		if r.err != nil || r.code != 0 {
			t.Fatalf("code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
		}
		numaLines(t, r.stdout, 3)
		if !strings.Contains(r.stderr, "heap policy: local") {
			t.Errorf("SHMEM_INFO output lacks the heap policy line:\n%s", r.stderr)
		}
		if len(usable) == 1 && !strings.Contains(r.stderr, fmt.Sprintf("heap policy: local (PE 0 on node %d)", usable[0])) &&
			!strings.Contains(r.stderr, "heap policy: local, not applied to PE 0: no home node") {
			t.Errorf("SHMEM_INFO heap policy line is not the expected one:\n%s", r.stderr)
		}
		// SHMEM_INFO prints what oshinfo does: every knob with its help,
		// the transport, once per job.
		for _, k := range env.Knobs() {
			if strings.Count(r.stderr, k.Name+" ") != 1 {
				t.Errorf("SHMEM_INFO output names %s %d times, want once:\n%s", k.Name, strings.Count(r.stderr, k.Name+" "), r.stderr)
			}
		}
		if !strings.Contains(r.stderr, "on-node transport: ") {
			t.Errorf("SHMEM_INFO output lacks the transport:\n%s", r.stderr)
		}
	})
}

// numaLines returns the scenarioNUMA line of each of npes PEs, by PE,
// and checks that all PEs print the same home nodes.
func numaLines(t *testing.T, stdout string, npes int) []string {
	t.Helper()
	lines := make([]string, npes)
	nodes := ""
	for _, l := range strings.Split(stdout, "\n") {
		var pe int
		if _, err := fmt.Sscanf(l, "PE %d env", &pe); err != nil || pe < 0 || pe >= npes {
			continue
		}
		lines[pe] = l
		_, rest, _ := strings.Cut(l, " nodes ")
		ns, _, _ := strings.Cut(rest, " ")
		if nodes == "" {
			nodes = ns
		} else if ns != nodes {
			t.Errorf("PEs disagree on the home nodes: %q vs %q", ns, nodes)
		}
	}
	for pe, l := range lines {
		if l == "" {
			t.Fatalf("no line from PE %d in:\n%s", pe, stdout)
		}
	}
	return lines
}
