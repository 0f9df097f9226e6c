// Package numa discovers the CPU and NUMA-node layout of a machine and
// binds threads to CPUs, for the launcher's --bind-to options and for
// runtime decisions such as how long to spin.
//
// This is the basic layer: Linux CPU lists (ParseCPUList,
// FormatCPUList), the topology, the process's allowed CPUs and thread
// binding (Allowed, Bind), CPU counts, the cache line size and CPU
// features. On top of Topology: placement of PEs (Place, DefaultBinding)
// with readable binding maps (BindingMap, Describe), text renderings of
// the machine (WriteHardware, WriteTree), and memory policy for heap
// pages (SetMemPolicy, MemPolicyOf, PageNodes).
//
// Discover reads the topology into a Topology:
//
//   - CPUs: the online ones, each with its core, socket (physical
//     package), node and SMT siblings, and the present CPUs that are
//     offline;
//   - sockets: their CPUs, nodes and number of cores;
//   - NUMA nodes: their CPUs, total and free memory and distances,
//     including nodes with CPUs but no memory and nodes with memory but
//     no CPUs (CXL memory, for example);
//   - caches: level, type, size, line size and the CPUs sharing each,
//     every cache listed once;
//   - the cgroup cpuset (v1 or v2) confining the process, as CPUs and
//     memory nodes, when it restricts them.
//
// DiscoverNodes reads only the nodes, the CPUs' nodes and the cpuset,
// for start-up paths that place memory and need nothing else.
//
// Topology.Usable combines the online CPUs, the cpuset and an affinity
// (what Allowed returns) into the CPUs a job may use; Topology.CPU,
// Topology.Node and Topology.NodeOf look up CPUs and nodes.
//
// CPUModel and CPUFeatures describe the processor from the CPUID
// instruction (amd64 only), for reports and benchmark records.
//
// System calls go through internal/sys; everything else is read from
// sysfs, procfs and the cgroup file system under a root directory, so
// Discover can be tested on copies of those trees (see testdata, where
// mktrees.sh rebuilds the generated ones).
package numa
