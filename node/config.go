package node

import (
	"time"
)

// Config is the runtime's view of the SHMEM_* environment (see
// internal/env, which parses and documents every variable).
type Config struct {
	HeapSize  int64         // SHMEM_SYMMETRIC_SIZE
	Huge      bool          // SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES
	Debug     bool          // SHMEM_DEBUG
	Info      bool          // SHMEM_INFO
	Version   bool          // SHMEM_VERSION
	Transport string        // SHMEM_TRANSPORT: auto, xpmem, cma
	WaitSpin  int           // SHMEM_WAIT_SPIN (0: auto)
	WaitYield int           // SHMEM_WAIT_YIELD (0: auto)
	WaitSleep time.Duration // SHMEM_WAIT_SLEEP (0: default)

	// HeapPolicy is SHMEM_HEAP_POLICY, where each PE's heap pages live:
	// "local" (also ""), "interleave" or "none" (see PE.HeapPlacement).
	HeapPolicy string

	// Collective algorithms: "", "auto", or a name from internal/env's
	// SHMEM_*_ALGORITHM knobs.
	BarrierAlgorithm, ReduceAlgorithm, BcastAlgorithm, FCollectAlgorithm string
	// SimDomains > 0 splits the job into simulated shared-memory domains
	// of that many consecutive PEs (GOSHMEM_SIM_DOMAINS).
	SimDomains int
	// NUMACollectives is SHMEM_NUMA_COLLECTIVES: when collectives on a
	// team spanning NUMA nodes run level by level ("", "auto", "always",
	// "never").
	NUMACollectives string
	// NUMANodes, when set (in-process jobs and tests), is the home NUMA
	// node of every PE of the job, by world PE number; it overrides what
	// the launcher says (GOSHMEM_NUMA_NODES) and what the PE would
	// discover from its CPU affinity. The nodes need not exist on this
	// machine: tests use it to run fake topologies.
	NUMANodes []int

	// mapFault, set only by tests, makes mapping a peer's heap fail, to
	// exercise the automatic CMA fallback.
	mapFault func(pe int) error
}

// DefaultHeapSize is the symmetric heap size per PE when
// SHMEM_SYMMETRIC_SIZE is not set.
const DefaultHeapSize = 512 << 20
