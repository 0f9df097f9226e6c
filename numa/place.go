package numa

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Mapping and binding policies, spelled as the launcher's --map-by and
// --bind-to flags spell them (after Open MPI's mpirun).
const (
	// MapCore packs PEs onto cores in order: sockets ascending, then
	// NUMA nodes, then cores.
	MapCore = "core"
	// MapNUMA deals PEs round robin across the NUMA nodes.
	MapNUMA = "numa"
	// MapSocket deals PEs round robin across the sockets.
	MapSocket = "socket"

	// BindNone leaves PEs free to run on any usable CPU.
	BindNone = "none"
	// BindCore binds a PE to the usable hardware threads of its core.
	BindCore = "core"
	// BindNUMA binds a PE to the usable CPUs of its NUMA node.
	BindNUMA = "numa"
	// BindSocket binds a PE to the usable CPUs of its socket.
	BindSocket = "socket"
)

// MapNames and BindNames list the mapping and binding policies, for
// usage and error messages.
const (
	MapNames  = "core, numa or socket"
	BindNames = "none, core, numa or socket"
)

// ValidMap reports whether mapBy names a mapping policy.
func ValidMap(mapBy string) bool {
	return mapBy == MapCore || mapBy == MapNUMA || mapBy == MapSocket
}

// ValidBind reports whether bindTo names a binding policy.
func ValidBind(bindTo string) bool {
	return bindTo == BindNone || bindTo == BindCore || bindTo == BindNUMA || bindTo == BindSocket
}

// Placement is where one PE runs.
type Placement struct {
	CPU    int   // the hardware thread the PE is mapped to (its home CPU)
	Core   int   // its core_id (CPU.Core)
	Socket int   // its socket
	Node   int   // its NUMA node: the PE's home node
	Bind   []int // CPUs it is bound to, ascending; nil when not bound
}

// MaxPlacedPEs is the most PEs Place places: 2^20, far above what a
// machine runs (a larger count is a mistake, whose placements alone
// would exhaust the memory).
const MaxPlacedPEs = 1 << 20

// Place maps npes PEs onto the usable CPUs of t and binds them, as
// mpirun --map-by mapBy --bind-to bindTo does. usable is the CPUs the
// PEs may use (typically Allowed()); every one must be online in t.
//
// The unit of mapping is the core: a core is usable when at least one
// of its hardware threads is, and a PE mapped to a core runs on the
// core's lowest usable hardware thread, its home CPU. Cores are ordered
// by socket, then NUMA node, then core_id, then lowest CPU. The mapping
// policies are
//
//   - MapCore: PE i takes the i-th usable core (packed: the first
//     socket fills before the second gets a PE).
//   - MapNUMA: round robin across the NUMA nodes that have usable cores,
//     by ascending node ID: PE 0 takes the first core of the first
//     node, PE 1 the first core of the second node, ..., then the
//     second core of each node; a node whose cores are all taken is
//     skipped.
//   - MapSocket: the same round robin across sockets.
//
// When the PEs outnumber the usable cores (oversubscription) the
// mapping starts again from its first core once every core has a PE:
// with n usable cores, PE i goes to the same core as PE i mod n. The
// k-th PE on a core (k = i / n, from 0) gets the core's usable hardware
// threads in turn as its home CPU: thread k mod (usable threads of the
// core), so a second PE on a 2-way SMT core gets the other thread, and
// on a core with one usable thread every PE shares it.
//
// Binding: BindCore binds a PE to the usable hardware threads of its
// core, BindNUMA to the usable CPUs of its home node, BindSocket to the
// usable CPUs of its socket, and BindNone not at all (Bind nil). Place
// binds even when oversubscribed; DefaultBinding chooses BindNone then.
//
// Place is deterministic, returns only CPUs in usable, and gives each
// PE its own Bind slice.
func Place(t *Topology, usable []int, npes int, mapBy, bindTo string) ([]Placement, error) {
	if !ValidMap(mapBy) {
		return nil, fmt.Errorf("numa: unknown mapping %q; map PEs by %q, %q or %q", mapBy, MapCore, MapNUMA, MapSocket)
	}
	if !ValidBind(bindTo) {
		return nil, fmt.Errorf("numa: unknown binding %q; bind PEs to %q, %q, %q or %q", bindTo, BindNone, BindCore, BindNUMA, BindSocket)
	}
	if npes < 1 || npes > MaxPlacedPEs {
		return nil, fmt.Errorf("numa: cannot place %d PEs; ask for 1 to %d PEs", npes, MaxPlacedPEs)
	}
	if t == nil {
		return nil, errors.New("numa: cannot place PEs without a topology; pass the one Discover returns")
	}
	use, err := t.checkUsable(usable)
	if err != nil {
		return nil, err
	}
	cores := t.placeCores(use)
	var order []placeCore
	switch mapBy {
	case MapCore:
		order = cores
	case MapNUMA:
		order = roundRobin(cores, func(c placeCore) int { return c.node })
	case MapSocket:
		order = roundRobin(cores, func(c placeCore) int { return c.socket })
	}

	out := make([]Placement, npes)
	for i := range out {
		c := order[i%len(order)]
		k := i / len(order)
		p := Placement{CPU: c.usable[k%len(c.usable)], Core: c.id, Socket: c.socket, Node: c.node}
		switch bindTo {
		case BindCore:
			p.Bind = slices.Clone(c.usable)
		case BindNUMA:
			p.Bind = t.usableWhere(use, func(x CPU) bool { return x.Node == c.node })
		case BindSocket:
			p.Bind = t.usableWhere(use, func(x CPU) bool { return x.Socket == c.socket })
		}
		out[i] = p
	}
	return out, nil
}

// DefaultBinding is the binding used when the user names none, Open
// MPI's rule: BindNone when the PEs outnumber the usable cores
// (oversubscribed: binding would pin PEs that must share onto each
// other's CPUs), else BindCore when npes <= 2 and BindNUMA otherwise.
// A core is usable when one of its hardware threads is in usable; usable
// CPUs t does not know are ignored here (Place reports them).
func DefaultBinding(t *Topology, usable []int, npes int) string {
	n := t.UsableCores(usable)
	switch {
	case npes > n:
		return BindNone
	case npes <= 2:
		return BindCore
	default:
		return BindNUMA
	}
}

// UsableCores returns how many cores of t have a hardware thread in
// usable: the cores Place maps PEs onto (0 for a nil t).
func (t *Topology) UsableCores(usable []int) int {
	if t == nil {
		return 0
	}
	set := make(map[int]bool, len(usable))
	for _, c := range usable {
		set[c] = true
	}
	return len(t.placeCores(set))
}

// BindingMap draws the CPUs of t as Open MPI's --report-bindings does:
// one bracket per socket (ascending), holding the socket's cores
// separated by '/' (in the order Place maps them), each core one
// character per hardware thread in ascending CPU order: 'B' for a CPU
// in bound, '.' for another CPU in usable, '-' for a CPU not usable.
// For 2 sockets of 2 cores of 2 threads, bound to the first core:
// "[BB/..][../..]".
//
// Only the CPUs in t.CPUs are drawn: sysfs does not say which core an
// offline CPU belongs to, so an offline hardware thread leaves no mark
// and its core shows only its online threads.
func (t *Topology) BindingMap(bound, usable []int) string {
	if t == nil {
		return ""
	}
	isBound := make(map[int]bool, len(bound))
	for _, c := range bound {
		isBound[c] = true
	}
	all := make(map[int]bool, len(t.CPUs))
	for _, c := range t.CPUs {
		all[c.ID] = true
	}
	isUsable := make(map[int]bool, len(usable))
	for _, c := range usable {
		isUsable[c] = true
	}
	var b strings.Builder
	cores := t.placeCores(all)
	for i, c := range cores {
		switch {
		case i == 0:
			b.WriteByte('[')
		case c.socket != cores[i-1].socket:
			b.WriteString("][")
		default:
			b.WriteByte('/')
		}
		for _, id := range c.usable { // every thread: all CPUs were usable
			switch {
			case isBound[id]:
				b.WriteByte('B')
			case isUsable[id]:
				b.WriteByte('.')
			default:
				b.WriteByte('-')
			}
		}
	}
	if len(cores) > 0 {
		b.WriteByte(']')
	}
	return b.String()
}

// Describe says in words where the PE placed at p runs, for
// --report-bindings; bindTo is the binding Place was given and usable
// the CPUs it was given. A core is numbered within its socket from 0,
// in Place's order (coreIndex: hwloc's logical number, not core_id).
// For example
//
//	bound to core 0 (CPUs 0,8) of socket 0, NUMA node 0
//	bound to core 3 (CPU 3) of socket 0, NUMA node 0
//	bound to NUMA node 1 (CPUs 4-7,12-15)
//	bound to socket 1 (CPUs 8-15)
//	not bound (may use CPUs 0-15); home NUMA node 0
func (t *Topology) Describe(p Placement, bindTo string, usable []int) string {
	if p.Bind == nil || bindTo == BindNone {
		return fmt.Sprintf("not bound (may use %s); home NUMA node %d", CPUsText(usable), p.Node)
	}
	cpus := CPUsText(p.Bind)
	switch bindTo {
	case BindCore:
		return fmt.Sprintf("bound to core %d (%s) of socket %d, NUMA node %d", t.coreIndex(p), cpus, p.Socket, p.Node)
	case BindNUMA:
		return fmt.Sprintf("bound to NUMA node %d (%s)", p.Node, cpus)
	case BindSocket:
		return fmt.Sprintf("bound to socket %d (%s)", p.Socket, cpus)
	default:
		return fmt.Sprintf("bound to %s; home NUMA node %d", cpus, p.Node)
	}
}

// coreIndex is the number of p's core within its socket, counting the
// socket's online cores in Place's order from 0: hwloc's logical
// numbering, which Open MPI's --report-bindings and the brackets of
// BindingMap use. sysfs core_id may skip numbers (0-4, 8-12 on some
// Intel parts) and, on some machines, repeat within a socket, so it
// would name two cores alike. p.Core when p's CPU is not online in t.
func (t *Topology) coreIndex(p Placement) int {
	all := make(map[int]bool, len(t.CPUs))
	for _, c := range t.CPUs {
		all[c.ID] = true
	}
	n := 0
	for _, c := range t.placeCores(all) {
		if c.socket != p.Socket {
			continue
		}
		if slices.Contains(c.usable, p.CPU) {
			return n
		}
		n++
	}
	return p.Core
}

// placeCore is one core as Place sees it.
type placeCore struct {
	socket, node, id int
	// usable is the core's usable hardware threads, ascending.
	usable []int
}

// placeCores returns the cores of t with at least one CPU in use, each
// with its threads in use, ordered by socket, node, core_id and lowest
// CPU. A core is the CPUs sharing socket, node and core_id and, where t
// gives them, siblings: core_id is unique only within a socket and, on
// some machines (ARM clusters, multi-die packages), not even there,
// while thread_siblings_list is exact.
func (t *Topology) placeCores(use map[int]bool) []placeCore {
	type key struct{ socket, node, id, sibling int }
	index := make(map[key]int)
	var cores []placeCore
	cpus := slices.Clone(t.CPUs)
	slices.SortFunc(cpus, func(a, b CPU) int { return cmp.Compare(a.ID, b.ID) })
	for _, c := range cpus {
		if !use[c.ID] {
			continue
		}
		k := key{c.Socket, c.Node, c.Core, -1}
		if len(c.Siblings) > 0 {
			k.sibling = slices.Min(c.Siblings)
		}
		i, ok := index[k]
		if !ok {
			i = len(cores)
			index[k] = i
			cores = append(cores, placeCore{socket: c.Socket, node: c.Node, id: c.Core})
		}
		cores[i].usable = append(cores[i].usable, c.ID)
	}
	slices.SortStableFunc(cores, func(a, b placeCore) int {
		return cmp.Or(cmp.Compare(a.socket, b.socket), cmp.Compare(a.node, b.node),
			cmp.Compare(a.id, b.id), cmp.Compare(a.usable[0], b.usable[0]))
	})
	return cores
}

// roundRobin orders cores for a round robin across the groups group
// gives, by ascending group: the first core of each group, then the
// second of each group that has one, and so on. cores is in Place's
// order, and so is each group.
func roundRobin(cores []placeCore, group func(placeCore) int) []placeCore {
	byGroup := make(map[int][]placeCore)
	var ids []int
	for _, c := range cores {
		g := group(c)
		if _, ok := byGroup[g]; !ok {
			ids = append(ids, g)
		}
		byGroup[g] = append(byGroup[g], c)
	}
	slices.Sort(ids)
	out := make([]placeCore, 0, len(cores))
	for k := 0; len(out) < len(cores); k++ {
		for _, g := range ids {
			if k < len(byGroup[g]) {
				out = append(out, byGroup[g][k])
			}
		}
	}
	return out
}

// usableWhere returns the CPUs of t in use for which f holds,
// ascending.
func (t *Topology) usableWhere(use map[int]bool, f func(CPU) bool) []int {
	var out []int
	for _, c := range t.CPUs {
		if use[c.ID] && f(c) {
			out = append(out, c.ID)
		}
	}
	slices.Sort(out)
	return out
}

// checkUsable returns usable as a set after checking that it is not
// empty and that t knows every CPU in it as online.
func (t *Topology) checkUsable(usable []int) (map[int]bool, error) {
	if len(usable) == 0 {
		return nil, errors.New("numa: no usable CPU to place PEs on; pass the CPUs the PEs may use (numa.Allowed), and check the taskset or cgroup cpuset the launcher runs under")
	}
	online := make(map[int]bool, len(t.Online))
	for _, c := range t.Online {
		online[c] = true
	}
	known := make(map[int]bool, len(t.CPUs))
	for _, c := range t.CPUs {
		known[c.ID] = true
	}
	use := make(map[int]bool, len(usable))
	var offline, unknown []int
	for _, c := range usable {
		switch {
		case !online[c]:
			offline = append(offline, c)
		case !known[c]:
			unknown = append(unknown, c)
		}
		use[c] = true
	}
	if offline != nil {
		return nil, fmt.Errorf("numa: usable CPUs %s are not online (online: %s); use only online CPUs, or bring them online (/sys/devices/system/cpu/cpuN/online)",
			cpuNames(offline), FormatCPUList(t.Online))
	}
	if unknown != nil {
		return nil, fmt.Errorf("numa: usable CPUs %s are online but the topology has no core, socket or node for them; build the topology with Discover",
			cpuNames(unknown))
	}
	return use, nil
}

// cpuNames writes CPU numbers for an error message: as a CPU list, or
// one by one when some are negative (which a CPU list cannot show).
func cpuNames(cpus []int) string {
	s := slices.Clone(cpus)
	slices.Sort(s)
	s = slices.Compact(s)
	if len(s) > 0 && s[0] < 0 {
		return strings.Trim(fmt.Sprint(s), "[]")
	}
	return FormatCPUList(s)
}

// CPUsText names a set of CPUs for a sentence: "CPU 3", "CPUs 0-3,8",
// or "no CPUs".
func CPUsText(cpus []int) string {
	switch len(cpus) {
	case 0:
		return "no CPUs"
	case 1:
		return "CPU " + FormatCPUList(cpus)
	}
	return "CPUs " + FormatCPUList(cpus)
}
