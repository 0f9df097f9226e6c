package node

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/goshmem/goshmem/internal/env"
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
	NoFence   bool          // SHMEM_WAIT_FENCE=off: no membarrier, flags published with XCHG

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
	// PMI is SHMEM_PMI, the PMI protocol under a cluster launcher ("",
	// "auto", "pmi1", "pmi2").
	PMI string
	// Host is SHMEM_HOST: this process's host name for grouping PEs
	// under a cluster launcher ("": the launcher's mapping, else the
	// host name).
	Host string
	// Internode is SHMEM_INTERNODE, the transport between hosts' leaders
	// ("" or "tcp"); InternodeIface is SHMEM_INTERNODE_IFACE.
	Internode, InternodeIface string
	// InternodeNoPoll is SHMEM_INTERNODE_POLL=0: the leader PE's waits
	// do not read the transport's connections themselves.
	InternodeNoPoll bool
	// InternodeNoHold is SHMEM_INTERNODE_HOLD=0: no put is held back to
	// leave with what follows it.
	InternodeNoHold bool
	// TaskNoSteal is SHMEM_TASK_STEAL=0: waiting PEs of this process
	// run no chunk of another PE's task, and its PEs run every chunk of
	// their own tasks.
	TaskNoSteal bool
	// CopyNoAdapt is SHMEM_COPY_ADAPT=0: large puts and gets use the
	// copy engine's fixed non-temporal threshold (mem.Tuner).
	CopyNoAdapt bool
	// CopyShare is SHMEM_COPY_SHARE: the smallest put or get (bytes)
	// whose copy waiting host-mates help with; 0: none (CopyLarge).
	CopyShare int64
	// InternodeNoRDMA is SHMEM_INTERNODE_RDMA=0: leaders expose no
	// heap, and every put and get across hosts is a frame.
	InternodeNoRDMA bool
	// InternodeRDMAMin is SHMEM_INTERNODE_RDMA_MIN: the smallest put
	// from a leader's process that goes as an RDMA WRITE (bytes; 0: the
	// default, 8 KiB).
	InternodeRDMAMin int64
	// NUMANodes, when set (in-process jobs and tests), is the home NUMA
	// node of every PE of the job, by world PE number; it overrides what
	// the launcher says (GOSHMEM_NUMA_NODES) and what the PE would
	// discover from its CPU affinity. The nodes need not exist on this
	// machine: tests use it to run fake topologies.
	NUMANodes []int

	// mapFault, set only by tests, makes mapping a peer's heap fail, to
	// exercise the automatic CMA fallback.
	mapFault func(pe int) error
	// cmaFault, set only by tests, replaces the result of the start-up
	// probe of process_vm_readv (PE.probeCMA), to exercise its failure.
	cmaFault error
	// beforeStart, set only by tests, runs on each PE of this process
	// right before the start-up barrier (a PE that dies there).
	beforeStart func(p *PE)
	// loneWarn and loneOut, set only by tests, replace loneWarnAfter
	// and stderr for the warning of a wait that only this PE can still
	// satisfy (PE.warnLone).
	loneWarn time.Duration
	loneOut  io.Writer
}

// DefaultHeapSize is the symmetric heap size per PE when
// SHMEM_SYMMETRIC_SIZE is not set.
const DefaultHeapSize = 512 << 20

// Validate checks every field of c that has constrained values, against
// the same tables internal/env parses the SHMEM_* variables with (one
// list of valid names): the transport, the heap policy, the collective
// algorithms and SHMEM_NUMA_COLLECTIVES must be "" (the default) or one
// of the variable's values, exactly (lower case); HeapSize must be
// positive and at most env.MaxSymmetricSize; WaitSpin, WaitYield and
// SimDomains must be in [0, env.MaxCount];
// WaitSleep must be 0 (the default) or in (0, env.MaxWaitSleep]. (Per-PE
// NUMANodes are checked at start-up, against the job size.) The error
// names each bad field, its value and what is valid, joined with
// errors.Join. RunLocal, Main and Init call it before they start
// anything.
func (c Config) Validate() error {
	knobs := map[string]env.Knob{}
	for _, k := range env.Knobs() {
		knobs[k.Name] = k
	}
	var errs []error
	bad := func(field, variable string, value any, accept string) {
		errs = append(errs, fmt.Errorf("goshmem: Config.%s = %v is invalid; %s (what %s takes)", field, value, accept, variable))
	}
	for _, f := range []struct {
		what, field, variable, value string
	}{
		{"transport", "Transport", env.VarTransport, c.Transport},
		{"heap policy", "HeapPolicy", env.VarHeapPolicy, c.HeapPolicy},
		{"barrier algorithm", "BarrierAlgorithm", env.VarBarrierAlg, c.BarrierAlgorithm},
		{"reduce algorithm", "ReduceAlgorithm", env.VarReduceAlg, c.ReduceAlgorithm},
		{"broadcast algorithm", "BcastAlgorithm", env.VarBcastAlg, c.BcastAlgorithm},
		{"fcollect algorithm", "FCollectAlgorithm", env.VarFCollectAlg, c.FCollectAlgorithm},
		{"NUMA collectives mode", "NUMACollectives", env.VarNUMAColl, c.NUMACollectives},
		{"PMI protocol", "PMI", env.VarPMI, c.PMI},
		{"transport between hosts", "Internode", env.VarInternode, c.Internode},
	} {
		k := knobs[f.variable]
		if f.value != "" && !slices.Contains(k.Values, f.value) {
			vs := k.Values
			errs = append(errs, fmt.Errorf("goshmem: unknown %s %q in Config.%s; set %s to %s or %s (or leave it empty for the default, %s)",
				f.what, f.value, f.field, f.variable, strings.Join(vs[:len(vs)-1], ", "), vs[len(vs)-1], k.Default))
		}
	}
	switch {
	case c.HeapSize <= 0:
		bad("HeapSize", env.VarSymmetricSize, c.HeapSize, "set the heap size in bytes, more than 0, e.g. 64 MiB")
	case c.HeapSize > env.MaxSymmetricSize:
		bad("HeapSize", env.VarSymmetricSize, c.HeapSize, fmt.Sprintf("lower %s (here Config.HeapSize) to at most %d bytes (256t, more than any machine's memory)",
			env.VarSymmetricSize, int64(env.MaxSymmetricSize)))
	}
	for _, f := range []struct {
		field, variable string
		value           int
	}{
		{"WaitSpin", env.VarWaitSpin, c.WaitSpin},
		{"WaitYield", env.VarWaitYield, c.WaitYield},
		{"SimDomains", env.VarSimDomains, c.SimDomains},
	} {
		if f.value < 0 || f.value > env.MaxCount {
			bad(f.field, f.variable, f.value, fmt.Sprintf("use 0 (auto, or off) or a positive count up to %d", env.MaxCount))
		}
	}
	if c.WaitSleep < 0 || c.WaitSleep > env.MaxWaitSleep {
		bad("WaitSleep", env.VarWaitSleep, c.WaitSleep.String(), fmt.Sprintf("use 0 (the default) or a duration more than 0 and at most %v", env.MaxWaitSleep))
	}
	return errors.Join(errs...)
}
