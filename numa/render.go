package numa

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// WriteHardware writes t in the style of numactl --hardware:
//
//	available: 2 nodes (0-1)
//	node 0 cpus: 0 1 2 3 8 9 10 11
//	node 0 size: 64000 MB
//	node 0 free: 58593 MB
//	node 1 cpus: 4 5 6 7 12 13 14 15
//	...
//	node distances:
//	node   0   1
//	  0:  10  21
//	  1:  21  10
//
// Sizes are in MiB, as numactl's "MB" are. A node without CPUs has an
// empty cpus line and a node without memory size 0; a distance the
// kernel does not give is "-", and "No distance information
// available." replaces the table when it gives none. Lines have no
// trailing blanks. Write errors are ignored.
func (t *Topology) WriteHardware(w io.Writer) {
	if t == nil {
		return
	}
	var b strings.Builder
	ids := make([]int, len(t.Nodes))
	for i, n := range t.Nodes {
		ids[i] = n.ID
	}
	if len(ids) == 0 {
		b.WriteString("available: 0 nodes\n")
		io.WriteString(w, b.String())
		return
	}
	fmt.Fprintf(&b, "available: %d nodes (%s)\n", len(ids), FormatCPUList(ids))
	for _, n := range t.Nodes {
		fmt.Fprintf(&b, "node %d cpus:", n.ID)
		for _, c := range n.CPUs {
			fmt.Fprintf(&b, " %d", c)
		}
		b.WriteByte('\n')
		fmt.Fprintf(&b, "node %d size: %d MB\n", n.ID, n.MemTotal>>20)
		fmt.Fprintf(&b, "node %d free: %d MB\n", n.ID, n.MemFree>>20)
	}
	b.WriteString("node distances:\n")
	known := false
	col := 3 // numactl's "% 3d"
	label := 4
	for _, n := range t.Nodes {
		col = max(col, len(strconv.Itoa(n.ID)))
		label = max(label, len(strconv.Itoa(n.ID))+1)
		for _, d := range n.Distances {
			known = true
			col = max(col, len(strconv.Itoa(d)))
		}
	}
	if !known {
		b.WriteString("No distance information available.\n")
		io.WriteString(w, b.String())
		return
	}
	fmt.Fprintf(&b, "%-*s", label, "node")
	for _, id := range ids {
		fmt.Fprintf(&b, " %*d", col, id)
	}
	b.WriteByte('\n')
	for _, n := range t.Nodes {
		fmt.Fprintf(&b, "%*s", label, strconv.Itoa(n.ID)+":")
		for j := range ids {
			if j < len(n.Distances) {
				fmt.Fprintf(&b, " %*d", col, n.Distances[j])
			} else {
				fmt.Fprintf(&b, " %*s", col, "-")
			}
		}
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

// WriteTree writes t as a tree in the style of lstopo --of console
// (plain text, two blanks of indent per level):
//
//	Machine (125GB total)
//	  Package L#0
//	    NUMANode L#0 (P#0 62GB)
//	    L3 L#0 (16MB)
//	      L2 L#0 (1024KB) + L1d L#0 (32KB) + L1i L#0 (32KB) + Core L#0
//	        PU L#0 (P#0)
//	        PU L#1 (P#8)
//	      ...
//
// Objects nest by the CPUs they cover: the machine, its packages
// (sockets), the caches, the cores and their PUs (hardware threads). L#
// is an object's logical number, counted per kind in the order the tree
// is written; P# is the operating system's number: a PU's CPU number,
// a NUMA node's node number, and a package's socket number when it
// differs from L#. As in hwloc, an object with a single child and no
// NUMA node shares its line with the child (joined by " + "), so a
// core's private caches appear on the core's line and a cache shared
// by several cores above them.
//
// A NUMA node is listed first under the object covering exactly its
// CPUs: its package, or the machine. A node covering part of a package
// (several nodes per socket) or several packages gets a "Group0"
// object of its own that holds its CPUs, and a node without CPUs is
// listed under the machine. L# of a NUMA node is its index in t.Nodes.
// Memory sizes are truncated to the largest unit of which there are at
// least 10 (GB, MB, KB), as lstopo does; a node without memory says so.
//
// When the cgroup cpuset restricts the process (t.Cpuset non-nil),
// each PU outside it is marked "not in cpuset"; offline CPUs, which
// have no place in the tree, are listed in one line at the end. Write
// errors are ignored.
func (t *Topology) WriteTree(w io.Writer) {
	if t == nil {
		return
	}
	machine := t.buildTree()
	p := treePrinter{t: t, count: map[string]int{}, nodeIndex: map[int]int{}}
	for i, n := range t.Nodes {
		p.nodeIndex[n.ID] = i
	}
	p.print(machine, 0)
	if len(t.Offline) > 0 {
		fmt.Fprintf(&p.b, "  Offline CPUs: %s\n", FormatCPUList(t.Offline))
	}
	io.WriteString(w, p.b.String())
}

// treeKind is the kind of a tree object, in the order kinds nest when
// they cover the same CPUs.
type treeKind int

const (
	objMachine treeKind = iota
	objPackage
	objGroup
	objCache
	objCore
	objPU
)

// treeObj is one object of WriteTree's tree.
type treeObj struct {
	kind     treeKind
	cpus     []int // the online CPUs it covers, ascending
	id       int   // a package's socket, a PU's CPU
	cache    Cache // a cache's description
	nodes    []Node
	children []*treeObj
}

// cacheTypeRank orders caches of one level that cover the same CPUs:
// data (or unified) outside instruction, as hwloc nests L1d above L1i.
func cacheTypeRank(typ string) int {
	switch typ {
	case "Unified":
		return 0
	case "Data":
		return 1
	case "Instruction":
		return 2
	}
	return 3
}

// nestOrder orders objects covering the same CPUs from outermost to
// innermost: by kind, and caches by descending level, then type.
func nestOrder(a, b *treeObj) int {
	if c := cmp.Compare(a.kind, b.kind); c != 0 || a.kind != objCache {
		return c
	}
	return cmp.Or(cmp.Compare(b.cache.Level, a.cache.Level),
		cmp.Compare(cacheTypeRank(a.cache.Type), cacheTypeRank(b.cache.Type)),
		strings.Compare(a.cache.Type, b.cache.Type))
}

// buildTree returns the machine object of t's tree: every object is the
// child of the smallest object holding all its CPUs (the innermost one
// by nestOrder among objects covering the same CPUs).
func (t *Topology) buildTree() *treeObj {
	machine := &treeObj{kind: objMachine, cpus: t.Online}
	var objs []*treeObj
	var packages []*treeObj
	for _, s := range t.Sockets {
		p := &treeObj{kind: objPackage, cpus: s.CPUs, id: s.ID}
		packages = append(packages, p)
		objs = append(objs, p)
	}
	for _, n := range t.Nodes {
		if len(n.CPUs) == 0 {
			machine.nodes = append(machine.nodes, n)
			continue
		}
		var host *treeObj
		for _, p := range packages {
			if slices.Equal(p.cpus, n.CPUs) {
				host = p
			}
		}
		if host == nil && slices.Equal(machine.cpus, n.CPUs) {
			host = machine
		}
		if host == nil {
			host = &treeObj{kind: objGroup, cpus: n.CPUs}
			objs = append(objs, host)
		}
		host.nodes = append(host.nodes, n)
	}
	for _, c := range t.Caches {
		if len(c.CPUs) > 0 {
			objs = append(objs, &treeObj{kind: objCache, cpus: c.CPUs, cache: c})
		}
	}
	all := make(map[int]bool, len(t.CPUs))
	for _, c := range t.CPUs {
		all[c.ID] = true
	}
	for _, c := range t.placeCores(all) {
		objs = append(objs, &treeObj{kind: objCore, cpus: c.usable})
	}
	for _, c := range t.CPUs {
		objs = append(objs, &treeObj{kind: objPU, cpus: []int{c.ID}, id: c.ID})
	}
	slices.SortStableFunc(objs, func(a, b *treeObj) int {
		return cmp.Or(cmp.Compare(len(b.cpus), len(a.cpus)), nestOrder(a, b), slices.Compare(a.cpus, b.cpus))
	})
	for _, o := range objs {
		parent := machine.deepest(o.cpus)
		parent.children = append(parent.children, o)
	}
	return machine
}

// deepest returns the innermost object of o's subtree that holds every
// CPU of cpus: o itself when no child does. Where several children
// hold them (caches that straddle packages), the smallest wins, then
// the first.
func (o *treeObj) deepest(cpus []int) *treeObj {
	for {
		var next *treeObj
		for _, c := range o.children {
			if holds(c.cpus, cpus) && (next == nil || len(c.cpus) < len(next.cpus)) {
				next = c
			}
		}
		if next == nil {
			return o
		}
		o = next
	}
}

// holds reports whether the ascending list a holds every member of the
// ascending list b.
func holds(a, b []int) bool {
	i := 0
	for _, x := range b {
		for i < len(a) && a[i] < x {
			i++
		}
		if i == len(a) || a[i] != x {
			return false
		}
	}
	return true
}

// treePrinter writes a tree, numbering objects (L#) as it goes.
type treePrinter struct {
	t         *Topology
	b         strings.Builder
	count     map[string]int // next L# per object name
	nodeIndex map[int]int    // node ID -> index in t.Nodes
}

func (p *treePrinter) print(o *treeObj, depth int) {
	line := p.label(o)
	for o.kind != objMachine && len(o.nodes) == 0 && len(o.children) == 1 {
		o = o.children[0]
		line += " + " + p.label(o)
	}
	indent := strings.Repeat("  ", depth)
	p.b.WriteString(indent + line + "\n")
	for _, n := range o.nodes {
		p.b.WriteString(indent + "  " + p.nodeLabel(n) + "\n")
	}
	slices.SortStableFunc(o.children, func(a, b *treeObj) int {
		return cmp.Or(cmp.Compare(a.cpus[0], b.cpus[0]), nestOrder(a, b))
	})
	for _, c := range o.children {
		p.print(c, depth+1)
	}
}

// logical returns the next L# of objects named name.
func (p *treePrinter) logical(name string) int {
	n := p.count[name]
	p.count[name] = n + 1
	return n
}

func (p *treePrinter) label(o *treeObj) string {
	switch o.kind {
	case objMachine:
		var total int64
		for _, n := range p.t.Nodes {
			total += n.MemTotal
		}
		if total > 0 {
			return "Machine (" + lstopoSize(total) + " total)"
		}
		return "Machine"
	case objPackage:
		l := p.logical("Package")
		if l != o.id {
			return fmt.Sprintf("Package L#%d (P#%d)", l, o.id)
		}
		return fmt.Sprintf("Package L#%d", l)
	case objGroup:
		return fmt.Sprintf("Group0 L#%d", p.logical("Group0"))
	case objCache:
		name := "L" + strconv.Itoa(o.cache.Level)
		switch o.cache.Type {
		case "Data":
			name += "d"
		case "Instruction":
			name += "i"
		}
		s := fmt.Sprintf("%s L#%d", name, p.logical(name))
		if o.cache.Size > 0 {
			s += " (" + lstopoSize(o.cache.Size) + ")"
		}
		return s
	case objCore:
		return fmt.Sprintf("Core L#%d", p.logical("Core"))
	default:
		s := fmt.Sprintf("PU L#%d (P#%d", p.logical("PU"), o.id)
		if p.t.Cpuset != nil {
			if _, ok := slices.BinarySearch(p.t.Cpuset, o.id); !ok {
				s += ", not in cpuset"
			}
		}
		return s + ")"
	}
}

func (p *treePrinter) nodeLabel(n Node) string {
	s := fmt.Sprintf("NUMANode L#%d (P#%d", p.nodeIndex[n.ID], n.ID)
	if n.MemTotal > 0 {
		s += " " + lstopoSize(n.MemTotal)
	} else {
		s += ", no memory"
	}
	if len(n.CPUs) == 0 {
		s += ", no CPUs"
	}
	return s + ")"
}

// lstopoSize writes a size in bytes as lstopo does: in the largest of
// GB, MB and KB (binary units) of which there are at least 10,
// truncated; in bytes below 10KB.
func lstopoSize(n int64) string {
	switch {
	case n >= 10<<30:
		return strconv.FormatInt(n>>30, 10) + "GB"
	case n >= 10<<20:
		return strconv.FormatInt(n>>20, 10) + "MB"
	case n >= 10<<10:
		return strconv.FormatInt(n>>10, 10) + "KB"
	}
	return strconv.FormatInt(n, 10) + "B"
}
