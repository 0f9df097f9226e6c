package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
)

// NUMANode returns the home NUMA node of world PE q: the node its heap
// pages live on and that TeamNUMA and the NUMA level of hierarchical
// collectives group it by; -1 when unknown (a PE not bound inside one
// node). Every PE of the job returns the same for the same q.
//
// The home node comes from Config.NUMANodes when set, else from the
// launcher (GOSHMEM_NUMA_NODES, for the PEs of each process), else from
// the CPUs the hosting process may run on, when they all lie in one
// node. Each process publishes the home nodes of its PEs in their
// control slots before the start-up barrier, so that every PE reads the
// same answer afterwards.
func (p *PE) NUMANode(q int) int {
	if q < 0 || q >= p.NPEs() {
		badPE("NUMANode", q, p.NPEs())
	}
	if nodes := p.job.cfg.NUMANodes; nodes != nil {
		return nodes[q]
	}
	return int(p.job.ctl.Slot(q).Node.Load()) - 1
}

// HeapPlacement is what start-up did about where a PE's heap pages live
// (SHMEM_HEAP_POLICY). The policy covers the PE's whole heap segment:
// the symmetric heap and the team pool after it.
type HeapPlacement struct {
	PE     int
	Policy string // "local", "interleave" or "none"
	// Nodes are the nodes of the memory policy set on the heap: the
	// PE's home node (local) or the nodes with memory this process may
	// use (interleave); nil when no policy was set.
	Nodes []int
	// Note says why the policy was not set, or what limits it here;
	// empty when it was set as asked.
	Note string
}

// String renders h for SHMEM_INFO, e.g. "local (PE 0 on node 0)".
func (h HeapPlacement) String() string {
	var s string
	switch {
	case h.Policy == "none":
		s = "none (first touch)"
	case h.Nodes == nil:
		return fmt.Sprintf("%s, not applied to PE %d: %s", h.Policy, h.PE, h.Note)
	case h.Policy == "local":
		s = fmt.Sprintf("local (PE %d on node %d)", h.PE, h.Nodes[0])
	default:
		s = fmt.Sprintf("%s (PE %d across nodes %s)", h.Policy, h.PE, numa.FormatCPUList(h.Nodes))
	}
	if h.Note != "" {
		s += "; " + h.Note
	}
	return s
}

// HeapPlacement reports what start-up did about where this PE's heap
// pages live (SHMEM_HEAP_POLICY): the policy set, on which nodes, or
// why none was.
func (p *PE) HeapPlacement() HeapPlacement {
	h := p.job.placement[p.me-p.job.firstPE]
	h.Nodes = slices.Clone(h.Nodes)
	return h
}

// homeNodes returns the home node of each PE hosted by this process
// (PEs firstPE to firstPE+localPEs-1), from cfg.NUMANodes, else from
// envNodes (the value of GOSHMEM_NUMA_NODES, "" when unset), else from
// this process's CPUs (see NUMANode). topo is called at most once, only
// for the last.
func homeNodes(cfg Config, npes, firstPE, localPEs int, envNodes string, topo func() (*numa.Topology, error)) ([]int, error) {
	if cfg.NUMANodes != nil {
		if len(cfg.NUMANodes) != npes {
			return nil, fmt.Errorf("goshmem: Config.NUMANodes lists %d home nodes for a job of %d PEs; list one per PE (-1 for none), or leave it nil", len(cfg.NUMANodes), npes)
		}
		for q, n := range cfg.NUMANodes {
			if n < -1 || n >= sys.MaxNodes {
				return nil, fmt.Errorf("goshmem: Config.NUMANodes[%d] = %d; a home node is -1 (none) or a node number from 0 to %d", q, n, sys.MaxNodes-1)
			}
		}
		return slices.Clone(cfg.NUMANodes[firstPE : firstPE+localPEs]), nil
	}
	if envNodes != "" {
		return parseNUMANodes(envNodes, localPEs)
	}
	home := -1
	if t, err := topo(); err == nil {
		home = processNode(t)
	}
	nodes := make([]int, localPEs)
	for i := range nodes {
		nodes[i] = home
	}
	return nodes, nil
}

// processNode returns the node holding every CPU this process may run
// on, or -1 when they span several nodes (or cannot be read).
func processNode(t *numa.Topology) int {
	cpus, err := numa.Allowed()
	if err != nil || len(cpus) == 0 {
		return -1
	}
	node := t.NodeOf(cpus[0])
	for _, c := range cpus[1:] {
		if t.NodeOf(c) != node {
			return -1
		}
	}
	return node
}

// parseNUMANodes parses GOSHMEM_NUMA_NODES for a process hosting n PEs:
// n node numbers, comma-separated, each -1 (none) or from 0 to
// sys.MaxNodes-1; blanks around a number are allowed.
func parseNUMANodes(s string, n int) ([]int, error) {
	fields := strings.Split(s, ",")
	bad := func(problem string) error {
		example := strings.TrimSuffix(strings.Repeat("0,", n), ",")
		return fmt.Errorf("goshmem: bad launcher variable %s=%q: %s; it lists the home NUMA node of each of the %d PEs of this process, comma-separated, -1 for none (e.g. %s); start PEs with oshrun, or unset it",
			job.EnvNUMANodes, s, problem, n, example)
	}
	if len(fields) != n {
		return nil, bad(fmt.Sprintf("%d entries for %d PEs", len(fields), n))
	}
	nodes := make([]int, n)
	for i, f := range fields {
		f = strings.TrimSpace(f)
		v, err := strconv.Atoi(f)
		switch {
		case f == "":
			return nil, bad(fmt.Sprintf("entry %d is empty", i))
		case err != nil:
			return nil, bad(fmt.Sprintf("entry %d, %q, is not a whole number", i, f))
		case v < -1 || v >= sys.MaxNodes:
			return nil, bad(fmt.Sprintf("entry %d, %d, is not -1 or a node number from 0 to %d", i, v, sys.MaxNodes-1))
		}
		nodes[i] = v
	}
	return nodes, nil
}

// placeHeaps applies cfg.HeapPolicy to the heap segments of the PEs
// this process hosts, whose home nodes are home, and records the
// outcome in j.placement. It runs at start-up, before the slots are
// published and so before the start-up barrier: nothing has touched
// those heaps' pages yet (memfd heaps are allocated lazily), and no
// peer touches them before the barrier.
//
// Only the owner's process sets the policy. A heap is a memfd (shmem)
// file mapped shared, so mbind through one mapping sets the shared
// policy of that range of the file, and every process's page faults on
// it follow it, wherever they run.
//
// Limits: with huge pages (SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES) the
// heap's pages are reserved with fallocate when the heap is created (so
// that a shortage fails there rather than by SIGBUS later), before any
// policy exists, and hugetlbfs keeps no shared policy at all: mbind
// then only sets this process's mapping's policy, for pages faulted
// later through it. The call is still made, and the note says so. The
// same holds for the tmpfs-file fallbacks of shm (O_TMPFILE, unlinked
// files), whose blocks are reserved at creation too. A failed mbind is
// not fatal: the job runs with first-touch placement and the note says
// why. The policy's name was checked by Config.Validate, before the job
// started.
func (j *Job) placeHeaps(home []int, topo func() (*numa.Topology, error)) {
	policy := heapPolicy(j.cfg)
	j.placement = make([]HeapPlacement, j.localPEs)
	for i := range j.placement {
		pe := j.firstPE + i
		h := placeHeap(j.heaps[pe], policy, home[i], topo, j.cfg.Huge)
		h.PE = pe
		j.placement[i] = h
	}
}

// heapPolicy is cfg.HeapPolicy as a policy ("" is local). The name must
// have passed Config.Validate, the one check of it (against
// SHMEM_HEAP_POLICY's values); any other is a bug of the caller.
func heapPolicy(cfg Config) numa.MemPolicy {
	if cfg.HeapPolicy == "" {
		return numa.MemLocal
	}
	p, err := numa.ParseMemPolicy(cfg.HeapPolicy)
	if err != nil {
		panic(fmt.Sprintf("goshmem: internal error: heap policy %q reached start-up without Config.Validate: %v", cfg.HeapPolicy, err))
	}
	return p
}

// placeHeap sets policy on heap, a heap segment whose owner's home node
// is home, and says what it did.
func placeHeap(heap []byte, policy numa.MemPolicy, home int, topo func() (*numa.Topology, error), huge bool) HeapPlacement {
	h := HeapPlacement{Policy: policy.String()}
	if policy == numa.MemDefault {
		return h
	}
	t, err := topo()
	if err != nil {
		h.Note = "cannot read the NUMA topology: " + err.Error()
		return h
	}
	usable := memNodes(t)
	var nodes []int
	switch policy {
	case numa.MemLocal:
		switch {
		case home < 0:
			h.Note = "no home node (the process's CPUs span several NUMA nodes; bind each PE inside one node, e.g. oshrun --bind-to core)"
			return h
		case !slices.Contains(usable, home):
			those := "there are none"
			if len(usable) > 0 {
				those = "those are " + numa.FormatCPUList(usable)
			}
			h.Note = fmt.Sprintf("its home node %d is not a NUMA node of this machine with memory that this process may use (%s)", home, those)
			return h
		}
		nodes = []int{home}
	case numa.MemInterleave:
		if len(usable) == 0 {
			h.Note = "this process may use no NUMA node with memory (see the cgroup's cpuset.mems)"
			return h
		}
		nodes = usable
	}
	if err := numa.SetMemPolicy(heap, policy, nodes); err != nil {
		h.Note = "first touch instead: " + err.Error()
		return h
	}
	h.Nodes = nodes
	if huge {
		h.Note = "huge pages are reserved when the heap is created and hugetlbfs keeps no shared policy, so the pages may stay where their reservation at creation put them"
	}
	if len(t.Nodes) == 1 {
		h.Note = strings.TrimPrefix(h.Note+"; this machine has one NUMA node, so the policy places nothing differently", "; ")
	}
	return h
}

// memNodes returns the nodes of t with memory (all of them if none
// reports its size) that the cgroup cpuset lets this process use.
func memNodes(t *numa.Topology) []int {
	var all, withMem []int
	for _, n := range t.Nodes {
		all = append(all, n.ID)
		if n.MemTotal > 0 {
			withMem = append(withMem, n.ID)
		}
	}
	if withMem == nil {
		withMem = all
	}
	if t.CpusetMems == nil {
		return withMem
	}
	return slices.DeleteFunc(withMem, func(n int) bool { return !slices.Contains(t.CpusetMems, n) })
}

// lazyTopology returns a function that discovers this machine's NUMA
// nodes (numa.DiscoverNodes: what placing memory needs, without the
// per-CPU and cache files) on its first call and returns the same
// result afterwards.
func lazyTopology() func() (*numa.Topology, error) {
	var t *numa.Topology
	var err error
	done := false
	return func() (*numa.Topology, error) {
		if !done {
			t, err = numa.DiscoverNodes("")
			done = true
		}
		return t, err
	}
}
