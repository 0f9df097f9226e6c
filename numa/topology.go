package numa

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Topology is the layout of a machine's online CPUs and NUMA nodes, as
// Discover reads it. Every list of IDs in it is ascending, without
// repeats, and not shared with another field.
type Topology struct {
	// Nodes are the online NUMA nodes, by ascending ID. A machine
	// without NUMA support has one node, 0, holding every online CPU.
	// Every online CPU is in exactly one node; a node may have no CPUs
	// (memory-only nodes) or no memory (MemTotal 0: CPU-only nodes).
	Nodes []Node
	// CPUs are the online CPUs, by ascending ID.
	CPUs []CPU
	// Online is the IDs of the online CPUs, ascending.
	Online []int
	// Offline is the IDs of CPUs that are present but offline,
	// ascending (nil when none). Present is cpu/present, else
	// cpu/possible, else the cpu<N> directories.
	Offline []int
	// Sockets are the physical packages holding online CPUs, by
	// ascending ID. Every online CPU is in exactly one socket.
	Sockets []Socket
	// Caches are the CPU caches of the online CPUs, each listed once (a
	// cache shared by several CPUs appears once: same level, type and
	// set of CPUs), by level, then type, then first CPU. nil when sysfs
	// does not describe them.
	Caches []Cache
	// Cpuset is the CPUs the process's cgroup cpuset allows (cgroup v2
	// cpuset.cpus.effective, or v1 cpuset.effective_cpus or
	// cpuset.cpus), intersected with Online; nil when no cpuset
	// restricts the process: no cpuset controller or file, a cpuset
	// holding every online CPU (the root cgroup), or one holding none
	// of them. The process's affinity is within it; see Usable.
	Cpuset []int
	// CpusetMems is the NUMA nodes the cgroup cpuset lets the process
	// allocate from (cpuset.mems.effective, or v1 cpuset.effective_mems
	// or cpuset.mems), intersected with the IDs of Nodes; nil when
	// unrestricted, as for Cpuset.
	CpusetMems []int
}

// Node is a NUMA node.
type Node struct {
	ID int
	// CPUs are the node's online CPUs, ascending.
	CPUs []int
	// MemTotal is the node's memory in bytes (node<N>/meminfo); 0 when
	// unknown or when the node has no memory (node/has_memory, where
	// it exists, does not list it).
	MemTotal int64
	// MemFree is the node's free memory in bytes when Discover ran, at
	// most MemTotal; 0 when unknown (as it is when MemTotal is).
	MemFree int64
	// Distances are the kernel's relative access costs from this node
	// to each online node, in the order of Topology.Nodes (10 is local;
	// the file node<N>/distance). nil when unknown.
	Distances []int
}

// CPU is one logical CPU (a hardware thread).
type CPU struct {
	ID int
	// Core is the kernel's core_id: hardware threads of one core share
	// it. It is unique only within a Socket.
	Core int
	// Socket is the physical package (physical_package_id).
	Socket int
	// Node is the NUMA node the CPU belongs to.
	Node int
	// Siblings are the online hardware threads of this CPU's core,
	// this one included, ascending (thread_siblings_list); [ID] when
	// sysfs does not say. The relation is symmetric and siblings share
	// Core and Socket: a CPU sysfs names that does not name this one
	// back, or has another core or socket, is left out.
	Siblings []int
}

// Socket is a physical package.
type Socket struct {
	ID int
	// CPUs are the socket's online CPUs, ascending.
	CPUs []int
	// Nodes are the NUMA nodes holding the socket's CPUs, ascending.
	Nodes []int
	// Cores is how many distinct cores the socket's online CPUs have.
	Cores int
}

// Cache is one CPU cache (cpu<N>/cache/index<K>).
type Cache struct {
	Level int    // 1, 2, 3, ...
	Type  string // "Data", "Instruction" or "Unified"
	Size  int64  // bytes; 0 when unknown
	// LineSize is the coherency line size in bytes; 0 when unknown.
	LineSize int
	// CPUs are the online CPUs sharing the cache, ascending
	// (shared_cpu_list; the CPU itself when that is missing).
	CPUs []int
}

// NodeOf returns the node of an online CPU, or -1 if cpu is not online
// (or t is nil).
func (t *Topology) NodeOf(cpu int) int {
	c, ok := t.CPU(cpu)
	if !ok {
		return -1
	}
	return c.Node
}

// CPU returns the online CPU id, and false if id is not online (or t
// is nil). The result shares its Siblings with t.
func (t *Topology) CPU(id int) (CPU, bool) {
	if t == nil {
		return CPU{}, false
	}
	i, ok := slices.BinarySearchFunc(t.CPUs, id, func(c CPU, id int) int { return cmp.Compare(c.ID, id) })
	if !ok {
		return CPU{}, false
	}
	return t.CPUs[i], true
}

// Node returns the online node id, and false if there is none (or t
// is nil). The result shares its CPUs and Distances with t.
func (t *Topology) Node(id int) (Node, bool) {
	if t == nil {
		return Node{}, false
	}
	i, ok := slices.BinarySearchFunc(t.Nodes, id, func(n Node, id int) int { return cmp.Compare(n.ID, id) })
	if !ok {
		return Node{}, false
	}
	return t.Nodes[i], true
}

// Usable returns the CPUs a job may use, ascending: the online CPUs
// that are in affinity (typically Allowed's result; nil means no
// restriction) and, when the cgroup restricts the process, in Cpuset.
// affinity may be in any order and hold repeats and CPUs that are not
// online; it is not changed. The result is nil when no CPU qualifies
// (and for a nil t).
func (t *Topology) Usable(affinity []int) []int {
	if t == nil || len(t.Online) == 0 {
		return nil
	}
	var allow cpuSet
	if affinity != nil {
		last := t.Online[len(t.Online)-1]
		for _, c := range affinity {
			if c >= 0 && c <= last {
				allow.add(c)
			}
		}
	}
	var out []int
	for _, c := range t.Online {
		if affinity != nil && !allow.has(c) {
			continue
		}
		if t.Cpuset != nil {
			if _, ok := slices.BinarySearch(t.Cpuset, c); !ok {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// Discover reads the topology of the machine whose root directory is
// root: "" (or "/") is this machine; tests pass a directory holding a
// copy of the files below. It reads
//
//   - root/sys/devices/system/cpu: the online CPUs (online), the present
//     ones (present, else possible, else the cpu<N> directories) to
//     find Offline, each online CPU's topology (core_id,
//     physical_package_id, thread_siblings_list) and caches
//     (cache/index<K>: level, type, size, coherency_line_size,
//     shared_cpu_list);
//   - root/sys/devices/system/node: the online nodes (online, else the
//     node<N> directories) with their CPUs (cpulist), memory (meminfo,
//     and has_memory where present) and distances (distance). Without
//     this directory (a kernel without NUMA support) the machine has
//     one node, 0, holding every online CPU, with its memory from
//     root/proc/meminfo;
//   - root/proc/self/cgroup and the process's cgroup cpuset under
//     root/sys/fs/cgroup (see Topology.Cpuset).
//
// Missing files give defaults (see each field); a file that exists but
// cannot be read or parsed is an error naming it.
func Discover(root string) (*Topology, error) {
	if root == "" {
		root = "/"
	}
	cpuDir := filepath.Join(root, "sys/devices/system/cpu")

	online, err := onlineCPUs(cpuDir)
	if err != nil {
		return nil, err
	}
	t := &Topology{Online: online, CPUs: make([]CPU, len(online))}
	for i, id := range online {
		c, err := readCPU(cpuDir, id, online)
		if err != nil {
			return nil, err
		}
		t.CPUs[i] = c
	}
	fixSiblings(t.CPUs)
	if t.Offline, err = offlineCPUs(cpuDir, online); err != nil {
		return nil, err
	}
	if t.Caches, err = readCaches(cpuDir, online); err != nil {
		return nil, err
	}

	nodes, err := readNodesOrOne(root)
	if err != nil {
		return nil, err
	}
	assignNodes(t, nodes)
	t.Sockets = socketsOf(t.CPUs)
	if err := readCpuset(root, t); err != nil {
		return nil, err
	}
	return t, nil
}

// DiscoverNodes reads the part of the topology that placing memory
// needs, much faster than Discover on large machines (it reads no
// per-CPU or cache files): Nodes (with memory and distances), Online,
// CPUs with only ID and Node set (Core is the ID, Socket 0, Siblings
// the CPU itself), Cpuset and CpusetMems. Offline, Sockets and Caches
// are left nil. Every PE process calls it at start-up.
func DiscoverNodes(root string) (*Topology, error) {
	if root == "" {
		root = "/"
	}
	online, err := onlineCPUs(filepath.Join(root, "sys/devices/system/cpu"))
	if err != nil {
		return nil, err
	}
	t := &Topology{Online: online, CPUs: make([]CPU, len(online))}
	for i, id := range online {
		t.CPUs[i] = CPU{ID: id, Core: id, Siblings: []int{id}}
	}
	nodes, err := readNodesOrOne(root)
	if err != nil {
		return nil, err
	}
	assignNodes(t, nodes)
	if err := readCpuset(root, t); err != nil {
		return nil, err
	}
	return t, nil
}

// readNodesOrOne reads the online nodes under root, or, without NUMA
// support in the kernel, makes the one node 0 with the memory of
// root/proc/meminfo.
func readNodesOrOne(root string) ([]Node, error) {
	nodes, err := readNodes(filepath.Join(root, "sys/devices/system/node"))
	if err != nil || len(nodes) > 0 {
		return nodes, err
	}
	n := Node{ID: 0, Distances: []int{10}}
	path := filepath.Join(root, "proc/meminfo")
	if data, ok, err := readOptional(path); err != nil {
		return nil, err
	} else if ok {
		if n.MemTotal, n.MemFree, err = parseMeminfo(data); err != nil {
			return nil, fmt.Errorf("numa: %s: %w", path, err)
		}
	}
	return []Node{n}, nil
}

// onlineCPUs reads cpu/online, or, where it is missing, lists the cpu<N>
// directories whose online file (absent for CPUs that cannot go
// offline) does not say 0.
func onlineCPUs(cpuDir string) ([]int, error) {
	path := filepath.Join(cpuDir, "online")
	data, err := os.ReadFile(path)
	if err == nil {
		cpus, err := ParseCPUList(string(data))
		if err != nil {
			return nil, fmt.Errorf("numa: %s: %w", path, err)
		}
		if len(cpus) == 0 {
			return nil, fmt.Errorf("numa: %s lists no CPUs; is sysfs mounted properly?", path)
		}
		return cpus, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("numa: cannot read the online CPUs: %w", err)
	}
	ids, err := numberedDirs(cpuDir, "cpu")
	if err != nil || len(ids) == 0 {
		return nil, fmt.Errorf("numa: cannot find the CPUs in %s (%v); is sysfs mounted at %s?",
			cpuDir, err, filepath.Dir(filepath.Dir(filepath.Dir(cpuDir))))
	}
	var cpus []int
	for _, id := range ids {
		s, err := readTrimmed(filepath.Join(cpuDir, "cpu"+strconv.Itoa(id), "online"))
		if err != nil || s != "0" {
			cpus = append(cpus, id)
		}
	}
	return cpus, nil
}

// offlineCPUs returns the present CPUs that are not online: present is
// cpu/present, else cpu/possible, else the cpu<N> directories.
func offlineCPUs(cpuDir string, online []int) ([]int, error) {
	var present []int
	found := false
	for _, name := range []string{"present", "possible"} {
		path := filepath.Join(cpuDir, name)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("numa: %w", err)
		}
		if present, err = ParseCPUList(string(data)); err != nil {
			return nil, fmt.Errorf("numa: %s: %w", path, err)
		}
		found = true
		break
	}
	if !found {
		present, _ = numberedDirs(cpuDir, "cpu") // none when unreadable: nothing known offline
	}
	var off []int
	for _, c := range present {
		if _, ok := slices.BinarySearch(online, c); !ok {
			off = append(off, c)
		}
	}
	return off, nil
}

// readCPU reads the topology of one online CPU. Missing topology files
// (some virtual machines and containers) give Core = ID, Socket 0 and
// Siblings [ID]. Siblings is thread_siblings_list restricted to online,
// with id in it; fixSiblings makes the lists agree.
func readCPU(cpuDir string, id int, online []int) (CPU, error) {
	c := CPU{ID: id, Core: id, Siblings: []int{id}}
	dir := filepath.Join(cpuDir, "cpu"+strconv.Itoa(id), "topology")
	for _, f := range []struct {
		name string
		dst  *int
	}{{"core_id", &c.Core}, {"physical_package_id", &c.Socket}} {
		path := filepath.Join(dir, f.name)
		s, ok, err := readOptional(path)
		if err != nil {
			return c, err
		}
		if !ok {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return c, fmt.Errorf("numa: %s holds %q, not a number", path, s)
		}
		*f.dst = max(n, 0) // physical_package_id is -1 where firmware does not say
	}
	path := filepath.Join(dir, "thread_siblings_list")
	s, ok, err := readOptional(path)
	if err != nil {
		return c, err
	}
	if ok {
		list, err := ParseCPUList(s)
		if err != nil {
			return c, fmt.Errorf("numa: %s: %w", path, err)
		}
		c.Siblings = intersect(list, online)
		if i, found := slices.BinarySearch(c.Siblings, id); !found {
			c.Siblings = slices.Insert(c.Siblings, i, id)
		}
	}
	return c, nil
}

// fixSiblings keeps in each CPU's Siblings only the CPU itself and the
// CPUs of the same core and socket that list it in turn, so that the
// sibling relation is symmetric even where sysfs contradicts itself.
func fixSiblings(cpus []CPU) {
	find := func(id int) (CPU, bool) {
		i, ok := slices.BinarySearchFunc(cpus, id, func(c CPU, id int) int { return cmp.Compare(c.ID, id) })
		if !ok {
			return CPU{}, false
		}
		return cpus[i], true
	}
	fixed := make([][]int, len(cpus))
	for i, c := range cpus {
		keep := make([]int, 0, len(c.Siblings))
		for _, s := range c.Siblings {
			d, ok := find(s)
			if s == c.ID || ok && d.Core == c.Core && d.Socket == c.Socket && slices.Contains(d.Siblings, c.ID) {
				keep = append(keep, s)
			}
		}
		fixed[i] = keep
	}
	for i := range cpus {
		cpus[i].Siblings = fixed[i]
	}
}

// readCaches reads the cache/index<K> directories of the online CPUs
// and lists each cache once: caches with the same level, type and set
// of (online) CPUs are one. It returns nil when sysfs describes none.
func readCaches(cpuDir string, online []int) ([]Cache, error) {
	seen := map[string]bool{}
	var caches []Cache
	for _, id := range online {
		dir := filepath.Join(cpuDir, "cpu"+strconv.Itoa(id), "cache")
		idx, err := numberedDirs(dir, "index")
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("numa: %w", err)
		}
		for _, k := range idx {
			c, ok, err := readCache(filepath.Join(dir, "index"+strconv.Itoa(k)), id, online)
			if err != nil {
				return nil, err
			}
			key := strconv.Itoa(c.Level) + " " + c.Type + " " + FormatCPUList(c.CPUs)
			if !ok || seen[key] {
				continue
			}
			seen[key] = true
			caches = append(caches, c)
		}
	}
	slices.SortFunc(caches, func(a, b Cache) int {
		return cmp.Or(cmp.Compare(a.Level, b.Level), strings.Compare(a.Type, b.Type), slices.Compare(a.CPUs, b.CPUs))
	})
	return caches, nil
}

// readCache reads one cache/index<K> directory of online CPU cpu. It
// returns false when the directory has no level or type file.
func readCache(dir string, cpu int, online []int) (Cache, bool, error) {
	var c Cache
	level, ok, err := readOptional(filepath.Join(dir, "level"))
	if err != nil || !ok {
		return c, false, err
	}
	if c.Level, err = strconv.Atoi(level); err != nil || c.Level < 1 {
		return c, false, fmt.Errorf("numa: %s holds %q, not a cache level (1, 2, ...)", filepath.Join(dir, "level"), level)
	}
	if c.Type, ok, err = readOptional(filepath.Join(dir, "type")); err != nil || !ok {
		return c, false, err
	}
	switch c.Type {
	case "Data", "Instruction", "Unified":
	default:
		return c, false, fmt.Errorf("numa: %s holds %q, not a cache type (Data, Instruction or Unified)", filepath.Join(dir, "type"), c.Type)
	}
	path := filepath.Join(dir, "size")
	size, ok, err := readOptional(path)
	if err != nil {
		return c, false, err
	}
	if ok {
		if c.Size, err = parseCacheSize(size); err != nil {
			return c, false, fmt.Errorf("numa: %s: %w", path, err)
		}
	}
	path = filepath.Join(dir, "coherency_line_size")
	line, ok, err := readOptional(path)
	if err != nil {
		return c, false, err
	}
	if ok {
		if c.LineSize, err = strconv.Atoi(line); err != nil || c.LineSize < 0 {
			return c, false, fmt.Errorf("numa: %s holds %q, not a line size in bytes", path, line)
		}
	}
	c.CPUs = []int{cpu}
	path = filepath.Join(dir, "shared_cpu_list")
	shared, ok, err := readOptional(path)
	if err != nil {
		return c, false, err
	}
	if ok {
		list, err := ParseCPUList(shared)
		if err != nil {
			return c, false, fmt.Errorf("numa: %s: %w", path, err)
		}
		c.CPUs = intersect(list, online)
		if i, found := slices.BinarySearch(c.CPUs, cpu); !found {
			c.CPUs = slices.Insert(c.CPUs, i, cpu)
		}
	}
	return c, true, nil
}

// parseCacheSize parses a cache size file: a number of bytes with an
// optional binary unit K, M or G ("32K", "1024K", "32M"; the kernel
// writes K).
func parseCacheSize(s string) (int64, error) {
	v := strings.TrimSpace(s)
	num := strings.TrimRight(v, "KMGkmg")
	unit := int64(1)
	switch strings.ToUpper(v[len(num):]) {
	case "":
	case "K":
		unit = 1 << 10
	case "M":
		unit = 1 << 20
	case "G":
		unit = 1 << 30
	default:
		return 0, fmt.Errorf("cache size %s: unknown unit; want a number with K, M or G", quote(s))
	}
	if num == "" || strings.Trim(num, "0123456789") != "" {
		return 0, fmt.Errorf("cache size %s is not a number with K, M or G", quote(s))
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("cache size %s is too large", quote(s))
	}
	return n * unit, nil
}

// socketsOf groups cpus by Socket.
func socketsOf(cpus []CPU) []Socket {
	var ids []int
	for _, c := range cpus {
		ids = append(ids, c.Socket)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]Socket, len(ids))
	for i, id := range ids {
		s := Socket{ID: id}
		var cores []int
		for _, c := range cpus {
			if c.Socket == id {
				s.CPUs = append(s.CPUs, c.ID)
				s.Nodes = append(s.Nodes, c.Node)
				cores = append(cores, c.Core)
			}
		}
		slices.Sort(s.Nodes)
		s.Nodes = slices.Compact(s.Nodes)
		slices.Sort(cores)
		s.Cores = len(slices.Compact(cores))
		out[i] = s
	}
	return out
}

// readNodes reads the online nodes, or returns none when nodeDir does
// not exist.
func readNodes(nodeDir string) ([]Node, error) {
	if _, err := os.Stat(nodeDir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var ids []int
	path := filepath.Join(nodeDir, "online")
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if ids, err = ParseCPUList(string(data)); err != nil { // same format
			return nil, fmt.Errorf("numa: %s: %w", path, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		if ids, err = numberedDirs(nodeDir, "node"); err != nil {
			return nil, fmt.Errorf("numa: %w", err)
		}
	default:
		return nil, fmt.Errorf("numa: %w", err)
	}
	// has_memory lists the nodes with memory; where it exists, the
	// others have none whatever their meminfo says.
	var hasMemory []int
	path = filepath.Join(nodeDir, "has_memory")
	s, knowMemory, err := readOptional(path)
	if err != nil {
		return nil, err
	}
	if knowMemory {
		if hasMemory, err = ParseCPUList(s); err != nil {
			return nil, fmt.Errorf("numa: %s: %w", path, err)
		}
	}
	nodes := make([]Node, 0, len(ids))
	for _, id := range ids {
		dir := filepath.Join(nodeDir, "node"+strconv.Itoa(id))
		if _, err := os.Stat(dir); err != nil {
			continue // listed online, but gone
		}
		n := Node{ID: id}
		path := filepath.Join(dir, "cpulist")
		if data, ok, err := readOptional(path); err != nil {
			return nil, err
		} else if ok {
			if n.CPUs, err = ParseCPUList(data); err != nil {
				return nil, fmt.Errorf("numa: %s: %w", path, err)
			}
		}
		if _, found := slices.BinarySearch(hasMemory, id); found || !knowMemory {
			path = filepath.Join(dir, "meminfo")
			if data, ok, err := readOptional(path); err != nil {
				return nil, err
			} else if ok {
				if n.MemTotal, n.MemFree, err = parseMeminfo(data); err != nil {
					return nil, fmt.Errorf("numa: %s: %w", path, err)
				}
			}
		}
		path = filepath.Join(dir, "distance")
		if data, ok, err := readOptional(path); err != nil {
			return nil, err
		} else if ok {
			if n.Distances, err = parseDistances(data); err != nil {
				return nil, fmt.Errorf("numa: %s: %w", path, err)
			}
			// One distance per online node, in their order; keep those
			// to the nodes that are here (Node.Distances follows Nodes).
			if len(n.Distances) != len(ids) {
				return nil, fmt.Errorf("numa: %s: %d distances for %d online nodes (%s)", path, len(n.Distances), len(ids), FormatCPUList(ids))
			}
		}
		nodes = append(nodes, n)
	}
	if len(nodes) < len(ids) {
		// Nodes listed online but gone: drop the distances to them.
		present := make([]bool, len(ids))
		for i, id := range ids {
			present[i] = slices.ContainsFunc(nodes, func(n Node) bool { return n.ID == id })
		}
		for i := range nodes {
			if d := nodes[i].Distances; d != nil {
				kept := make([]int, 0, len(nodes))
				for j, v := range d {
					if present[j] {
						kept = append(kept, v)
					}
				}
				nodes[i].Distances = kept
			}
		}
	}
	return nodes, nil
}

// assignNodes sets t.Nodes to nodes, keeping in each node only the
// online CPUs not already in an earlier node, and giving the CPUs no
// node claims to the first node, so that every online CPU is in exactly
// one node. It fills in CPU.Node.
func assignNodes(t *Topology, nodes []Node) {
	slices.SortFunc(nodes, func(a, b Node) int { return a.ID - b.ID })
	node := make(map[int]int, len(t.Online)) // CPU -> node ID
	for i := range nodes {
		var mine []int
		for _, c := range nodes[i].CPUs {
			_, taken := node[c]
			if _, online := slices.BinarySearch(t.Online, c); taken || !online {
				continue
			}
			node[c] = nodes[i].ID
			mine = append(mine, c)
		}
		nodes[i].CPUs = mine
	}
	for _, c := range t.Online {
		if _, ok := node[c]; !ok {
			node[c] = nodes[0].ID
			nodes[0].CPUs = append(nodes[0].CPUs, c)
		}
	}
	for i := range nodes {
		slices.Sort(nodes[i].CPUs)
		if nodes[i].CPUs == nil {
			nodes[i].CPUs = []int{}
		}
	}
	for i := range t.CPUs {
		t.CPUs[i].Node = node[t.CPUs[i].ID]
	}
	t.Nodes = nodes
}

// cgroupPaths is what /proc/self/cgroup says of the process's cpuset:
// its cgroup in the v1 cpuset hierarchy and in the v2 unified
// hierarchy, each a cleaned absolute path, "" when there is none.
type cgroupPaths struct {
	v1Cpuset string
	v2       string
}

// parseProcCgroup parses /proc/<pid>/cgroup: lines
// "hierarchy-ID:controller-list:cgroup-path", where the v2 hierarchy
// is "0::path" and a v1 hierarchy with the cpuset controller has
// cpuset in its comma-separated controller list.
func parseProcCgroup(text string) (cgroupPaths, error) {
	var p cgroupPaths
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return cgroupPaths{}, fmt.Errorf("line %s is not hierarchy-ID:controllers:path", quote(line))
		}
		id, err := strconv.Atoi(parts[0])
		if err != nil || id < 0 {
			return cgroupPaths{}, fmt.Errorf("line %s: hierarchy ID %s is not a number", quote(line), quote(parts[0]))
		}
		cg := path.Clean("/" + parts[2])
		switch {
		case id == 0 && parts[1] == "":
			p.v2 = cg
		case slices.Contains(strings.Split(parts[1], ","), "cpuset"):
			p.v1Cpuset = cg
		}
	}
	return p, nil
}

// readCpuset sets t.Cpuset and t.CpusetMems from the process's cgroup
// cpuset: a v1 cpuset hierarchy, mounted at root/sys/fs/cgroup/cpuset,
// if /proc/self/cgroup names one (the cpuset controller then is not in
// v2), else the v2 hierarchy mounted at root/sys/fs/cgroup. Where the
// cgroup's directory or file is missing (cpuset not enabled there, or
// a container that mounts its own cgroup as the root) it reads the
// nearest ancestor's, up to the root of the mount.
func readCpuset(root string, t *Topology) error {
	file := filepath.Join(root, "proc/self/cgroup")
	s, ok, err := readOptional(file)
	if err != nil || !ok {
		return err
	}
	cg, err := parseProcCgroup(s)
	if err != nil {
		return fmt.Errorf("numa: %s: %w", file, err)
	}
	var base, dir string
	var cpuFiles, memFiles []string
	switch {
	case cg.v1Cpuset != "":
		base, dir = filepath.Join(root, "sys/fs/cgroup/cpuset"), cg.v1Cpuset
		cpuFiles = []string{"cpuset.effective_cpus", "cpuset.cpus"}
		memFiles = []string{"cpuset.effective_mems", "cpuset.mems"}
	case cg.v2 != "":
		base, dir = filepath.Join(root, "sys/fs/cgroup"), cg.v2
		cpuFiles = []string{"cpuset.cpus.effective"}
		memFiles = []string{"cpuset.mems.effective"}
	default:
		return nil
	}
	cpus, err := readCgroupList(base, dir, cpuFiles)
	if err != nil {
		return err
	}
	mems, err := readCgroupList(base, dir, memFiles)
	if err != nil {
		return err
	}
	nodes := make([]int, len(t.Nodes))
	for i, n := range t.Nodes {
		nodes[i] = n.ID
	}
	t.Cpuset = restriction(cpus, t.Online)
	t.CpusetMems = restriction(mems, nodes)
	return nil
}

// readCgroupList reads the first of names that exists in base/dir or,
// failing that, in the nearest ancestor of dir, and parses it as a
// list. It returns nil when none exists.
func readCgroupList(base, dir string, names []string) ([]int, error) {
	for {
		for _, name := range names {
			file := filepath.Join(base, filepath.FromSlash(dir), name)
			s, ok, err := readOptional(file)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			list, err := ParseCPUList(s)
			if err != nil {
				return nil, fmt.Errorf("numa: %s: %w", file, err)
			}
			return list, nil
		}
		if dir == "/" {
			return nil, nil
		}
		dir = path.Dir(dir)
	}
}

// restriction returns list ∩ all when that restricts all: nil when
// list is nil, when the intersection is all of all, or when it is
// empty (a cgroup view Discover cannot make sense of).
func restriction(list, all []int) []int {
	r := intersect(list, all)
	if len(r) == 0 || slices.Equal(r, all) {
		return nil
	}
	return r
}

// intersect returns the members of a that are in the ascending list
// b, in a's order; a fresh slice, non-nil.
func intersect(a, b []int) []int {
	out := []int{}
	for _, c := range a {
		if _, ok := slices.BinarySearch(b, c); ok {
			out = append(out, c)
		}
	}
	return out
}

// numberedDirs returns the N of the entries prefixN in dir, ascending.
func numberedDirs(dir, prefix string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n <= MaxCPU {
			ids = append(ids, n)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func readTrimmed(path string) (string, error) {
	data, err := os.ReadFile(path)
	return strings.TrimSpace(string(data)), err
}

// readOptional reads a file that may be missing: its trimmed text and
// true, or false when it does not exist; other failures are errors.
func readOptional(path string) (string, bool, error) {
	s, err := readTrimmed(path)
	switch {
	case err == nil:
		return s, true, nil
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	default:
		return "", false, fmt.Errorf("numa: %w", err)
	}
}

// parseMeminfo returns the MemTotal and MemFree of a meminfo file's
// text, 0 where unknown. MemFree is known only with MemTotal, and at
// most MemTotal.
//
// A line that is there but malformed is an error.
func parseMeminfo(text string) (total, free int64, err error) {
	total, err = parseMeminfoField(text, "MemTotal")
	if errors.Is(err, errNoField) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	free, err = parseMeminfoField(text, "MemFree")
	if errors.Is(err, errNoField) {
		return total, 0, nil
	}
	return total, min(free, total), err
}

// errNoField is parseMeminfoField's error for a field without a line.
var errNoField = errors.New("no such line")

// parseMeminfoField finds the line "field: N kB" in the text of
// /proc/meminfo or of a node's meminfo ("Node 0 MemTotal: N kB") and
// returns N KiB in bytes (N when the line has no unit).
func parseMeminfoField(text, field string) (int64, error) {
	key := field + ":"
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		i := slices.Index(f, key)
		if i < 0 {
			continue
		}
		if i+1 >= len(f) {
			return 0, fmt.Errorf("%s line %q has no value", field, strings.TrimSpace(line))
		}
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s line %q: bad number %q", field, strings.TrimSpace(line), f[i+1])
		}
		unit := int64(1)
		if i+2 < len(f) {
			switch f[i+2] {
			case "kB":
				unit = 1024
			default:
				return 0, fmt.Errorf("%s line %q: unknown unit %q", field, strings.TrimSpace(line), f[i+2])
			}
		}
		if n > math.MaxInt64/unit {
			return 0, fmt.Errorf("%s line %q: too large", field, strings.TrimSpace(line))
		}
		return n * unit, nil
	}
	return 0, fmt.Errorf("%s: %w", field, errNoField)
}

// parseDistances parses a node's distance file: blank-separated
// non-negative numbers.
func parseDistances(text string) ([]int, error) {
	f := strings.Fields(text)
	if len(f) == 0 {
		return nil, errors.New("no distances")
	}
	d := make([]int, len(f))
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 255 {
			return nil, fmt.Errorf("distance %q is not a number from 0 to 255", s)
		}
		d[i] = n
	}
	return d, nil
}
