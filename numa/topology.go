package numa

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Topology is the layout of a machine's online CPUs and NUMA nodes.
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
	// ascending (nil when none).
	Offline []int
	// Sockets are the physical packages holding online CPUs, by
	// ascending ID.
	Sockets []Socket
	// Caches are the CPU caches, each listed once (a cache shared by
	// several CPUs appears once), by level, then type, then first CPU.
	// nil when sysfs does not describe them.
	Caches []Cache
	// Cpuset is the CPUs the process's cgroup cpuset allows (cgroup v2
	// cpuset.cpus.effective, or v1 cpuset.effective_cpus or
	// cpuset.cpus), intersected with Online; nil when no cpuset
	// restricts the process (no cpuset controller, or the root cgroup).
	Cpuset []int
	// CpusetMems is the NUMA nodes the cgroup cpuset lets the process
	// allocate from; nil when unrestricted.
	CpusetMems []int
}

// Node is a NUMA node.
type Node struct {
	ID int
	// CPUs are the node's online CPUs, ascending.
	CPUs []int
	// MemTotal is the node's memory in bytes; 0 when unknown or when
	// the node has no memory.
	MemTotal int64
	// MemFree is the node's free memory in bytes when Discover ran; 0
	// when unknown.
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
	// sysfs does not say.
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
	// CPUs are the online CPUs sharing the cache, ascending.
	CPUs []int
}

// NodeOf returns the node of an online CPU, or -1 if cpu is not online.
func (t *Topology) NodeOf(cpu int) int {
	i, ok := slices.BinarySearchFunc(t.CPUs, cpu, func(c CPU, id int) int { return c.ID - id })
	if !ok {
		return -1
	}
	return t.CPUs[i].Node
}

// Discover reads the topology from sysfs under root: the directories
// root/sys/devices/system/cpu and root/sys/devices/system/node. root ""
// (or "/") is this machine; tests pass a copy of a sysfs tree. Without
// the node directory (a kernel without NUMA support) the machine has
// one node, 0, holding every online CPU, with MemTotal from
// root/proc/meminfo.
func Discover(root string) (*Topology, error) {
	if root == "" {
		root = "/"
	}
	cpuDir := filepath.Join(root, "sys/devices/system/cpu")
	nodeDir := filepath.Join(root, "sys/devices/system/node")

	online, err := onlineCPUs(cpuDir)
	if err != nil {
		return nil, err
	}
	t := &Topology{Online: online, CPUs: make([]CPU, len(online))}
	for i, id := range online {
		c, err := readCPU(cpuDir, id)
		if err != nil {
			return nil, err
		}
		t.CPUs[i] = c
	}

	nodes, err := readNodes(nodeDir)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		mem, _ := readMemTotal(filepath.Join(root, "proc/meminfo"))
		nodes = []Node{{ID: 0, MemTotal: mem, Distances: []int{10}}}
	}
	assignNodes(t, nodes)
	return t, nil
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

// readCPU reads the topology of one online CPU. Missing topology files
// (some virtual machines and containers) give Core = ID and Socket 0.
func readCPU(cpuDir string, id int) (CPU, error) {
	c := CPU{ID: id, Core: id}
	dir := filepath.Join(cpuDir, "cpu"+strconv.Itoa(id), "topology")
	for _, f := range []struct {
		name string
		dst  *int
	}{{"core_id", &c.Core}, {"physical_package_id", &c.Socket}} {
		path := filepath.Join(dir, f.name)
		s, err := readTrimmed(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return c, fmt.Errorf("numa: %w", err)
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return c, fmt.Errorf("numa: %s holds %q, not a number", path, s)
		}
		*f.dst = max(n, 0) // physical_package_id is -1 where firmware does not say
	}
	return c, nil
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
	nodes := make([]Node, 0, len(ids))
	for _, id := range ids {
		dir := filepath.Join(nodeDir, "node"+strconv.Itoa(id))
		if _, err := os.Stat(dir); err != nil {
			continue // listed online, but gone
		}
		n := Node{ID: id}
		path := filepath.Join(dir, "cpulist")
		if data, err := os.ReadFile(path); err == nil {
			if n.CPUs, err = ParseCPUList(string(data)); err != nil {
				return nil, fmt.Errorf("numa: %s: %w", path, err)
			}
		}
		n.MemTotal, _ = readMemTotal(filepath.Join(dir, "meminfo"))
		path = filepath.Join(dir, "distance")
		if data, err := os.ReadFile(path); err == nil {
			if n.Distances, err = parseDistances(string(data)); err != nil {
				return nil, fmt.Errorf("numa: %s: %w", path, err)
			}
		}
		nodes = append(nodes, n)
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

// readMemTotal reads the MemTotal line of a meminfo file.
func readMemTotal(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseMemTotal(string(data))
}

// parseMemTotal finds "MemTotal: N kB" in the text of /proc/meminfo or
// of a node's meminfo ("Node 0 MemTotal: N kB") and returns N KiB in
// bytes.
func parseMemTotal(text string) (int64, error) {
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		i := slices.Index(f, "MemTotal:")
		if i < 0 {
			continue
		}
		if i+1 >= len(f) {
			return 0, fmt.Errorf("MemTotal line %q has no value", strings.TrimSpace(line))
		}
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("MemTotal line %q: bad number %q", strings.TrimSpace(line), f[i+1])
		}
		unit := int64(1)
		if i+2 < len(f) {
			switch f[i+2] {
			case "kB":
				unit = 1024
			default:
				return 0, fmt.Errorf("MemTotal line %q: unknown unit %q", strings.TrimSpace(line), f[i+2])
			}
		}
		if n > math.MaxInt64/unit {
			return 0, fmt.Errorf("MemTotal line %q: too large", strings.TrimSpace(line))
		}
		return n * unit, nil
	}
	return 0, errors.New("no MemTotal line")
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
