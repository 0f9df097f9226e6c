// Package numa discovers the CPU and NUMA-node layout of a machine and
// binds threads to CPUs, for the launcher's --bind-to options and for
// runtime decisions such as how long to spin.
//
// This is the basic layer: Linux CPU lists (ParseCPUList,
// FormatCPUList), the topology read from sysfs (Discover: nodes with
// their CPUs, memory and distances; CPUs with core, socket and node),
// the process's allowed CPUs and thread binding (Allowed, Bind), CPU
// counts and the cache line size, and one placement policy
// (PlaceCores). Topology-aware placement and memory policy build on
// Topology without changing these.
//
// System calls go through internal/sys; everything else is read from
// sysfs, so Discover can be tested on copies of sysfs trees (see
// testdata).
package numa
