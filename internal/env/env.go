// Package env declares every environment variable that tunes goshmem,
// once, in the style of Sandia OpenSHMEM's shmem_env_defs.h: each knob
// has a name, a type, a default and a help text. Load parses them all
// into a typed Config, Print shows them (cmd/oshinfo, and at start-up
// when SHMEM_INFO is set), and Knobs lists them for anything else that
// wants to document them.
//
// The variables of the launcher-to-PE bootstrap protocol
// (GOSHMEM_JOB_ID, GOSHMEM_NPES, ...) are not knobs a user sets; they
// are declared with the protocol in internal/job.
//
// # Types
//
//	size      bytes, with an optional suffix k, m, g or t (powers of
//	          1024) and an optional fraction: 4096, 64k, 1.5G (ParseSize)
//	bool      1/0, y/n, yes/no, true/false, on/off, any case (ParseBool)
//	int       a decimal integer
//	enum      one of the knob's Values, any case
//	duration  a Go duration with a unit: 10ms, 500us, 0.2s
//
// An unset or empty (or all-blank) variable means the knob's default.
// Surrounding blanks are ignored.
//
// # Deprecated names
//
// OpenSHMEM 1.4 renamed the four variables of the specification from
// SGI SHMEM's SMA_ prefix to SHMEM_ and deprecated the old names; a
// program or job script written for an older library may still set
// them. A knob with such a name (Knob.Deprecated: SMA_SYMMETRIC_SIZE,
// SMA_DEBUG, SMA_INFO, SMA_VERSION) reads it when its own variable is
// unset or blank; the SHMEM_ name wins when both are set.
package env

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Names of the knobs.
const (
	VarSymmetricSize    = "SHMEM_SYMMETRIC_SIZE"
	VarDebug            = "SHMEM_DEBUG"
	VarInfo             = "SHMEM_INFO"
	VarVersion          = "SHMEM_VERSION"
	VarHugePages        = "SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES"
	VarHeapPolicy       = "SHMEM_HEAP_POLICY"
	VarTransport        = "SHMEM_TRANSPORT"
	VarWaitSpin         = "SHMEM_WAIT_SPIN"
	VarWaitYield        = "SHMEM_WAIT_YIELD"
	VarWaitSleep        = "SHMEM_WAIT_SLEEP"
	VarWaitFence        = "SHMEM_WAIT_FENCE"
	VarBarrierAlg       = "SHMEM_BARRIER_ALGORITHM"
	VarReduceAlg        = "SHMEM_REDUCE_ALGORITHM"
	VarBcastAlg         = "SHMEM_BCAST_ALGORITHM"
	VarFCollectAlg      = "SHMEM_FCOLLECT_ALGORITHM"
	VarSimDomains       = "GOSHMEM_SIM_DOMAINS"
	VarNUMAColl         = "SHMEM_NUMA_COLLECTIVES"
	VarPMI              = "SHMEM_PMI"
	VarHost             = "SHMEM_HOST"
	VarInternode        = "SHMEM_INTERNODE"
	VarInternodeIf      = "SHMEM_INTERNODE_IFACE"
	VarInternodePoll    = "SHMEM_INTERNODE_POLL"
	VarInternodeHold    = "SHMEM_INTERNODE_HOLD"
	VarInternodeRDMA    = "SHMEM_INTERNODE_RDMA"
	VarInternodeRDMAMin = "SHMEM_INTERNODE_RDMA_MIN"
	VarVerbsDevice      = "SHMEM_VERBS_DEVICE"
	VarVerbsPort        = "SHMEM_VERBS_PORT"
	VarVerbsGIDIndex    = "SHMEM_VERBS_GID_INDEX"
	VarTaskSteal        = "SHMEM_TASK_STEAL"
	VarCopyAdapt        = "SHMEM_COPY_ADAPT"
	VarCopyShare        = "SHMEM_COPY_SHARE"
)

// CopyShareDefault is SHMEM_COPY_SHARE's default: puts and gets from
// this size up are shared with waiting host-mates.
const CopyShareDefault = "64k"

// Knob types, the values of Knob.Type.
const (
	TypeSize     = "size"
	TypeBool     = "bool"
	TypeInt      = "int"
	TypeEnum     = "enum"
	TypeDuration = "duration"
	TypeString   = "string"
)

// Transport selects how a PE reaches the symmetric heaps of the other
// PEs on its node.
type Transport string

// Values of SHMEM_TRANSPORT.
const (
	// TransportAuto picks the best transport that works here.
	TransportAuto Transport = "auto"
	// TransportXPMEM maps the peers' heaps into this process (XPMEM).
	TransportXPMEM Transport = "xpmem"
	// TransportCMA copies with process_vm_readv/process_vm_writev.
	TransportCMA Transport = "cma"
)

// MaxWaitSleep is the largest SHMEM_WAIT_SLEEP; the smallest is 1ns.
const MaxWaitSleep = 500 * time.Millisecond

// MaxSymmetricSize is the largest SHMEM_SYMMETRIC_SIZE: 2^48 bytes
// (256t) per PE, which is the whole user address space of a 4-level
// page table and more memory than any one machine has. The bound keeps
// every size the runtime derives from it - the heap rounded up to huge
// pages, plus the team pool, plus the address space reserved to map it
// aligned, times the PEs of a node - far from int64 overflow, so that a
// size the parser accepts either works or fails at start-up with a
// message that names SHMEM_SYMMETRIC_SIZE (not enough memory), never
// in arithmetic.
const MaxSymmetricSize = 1 << 48

// maxSymmetricSizeText is MaxSymmetricSize as a user writes it.
const maxSymmetricSizeText = "256t"

// MaxCount bounds the int knobs (SHMEM_WAIT_SPIN, SHMEM_WAIT_YIELD,
// GOSHMEM_SIM_DOMAINS), so that loop counts fit any int.
const MaxCount = 1<<31 - 1

// Knob describes one environment variable.
type Knob struct {
	Name    string   // e.g. "SHMEM_SYMMETRIC_SIZE"
	Type    string   // one of the Type constants
	Default string   // the value used when the variable is unset or empty
	Help    string   // one or more sentences for a user
	Values  []string // the allowed values of an enum, in order; nil otherwise
	// Deprecated is the specification's deprecated name of the
	// variable (SMA_...), read when Name is unset or blank; "" when it
	// has none.
	Deprecated string
}

// Config holds the value of every knob.
type Config struct {
	// SymmetricSize is SHMEM_SYMMETRIC_SIZE, bytes of symmetric heap
	// per PE (> 0).
	SymmetricSize int64
	// Debug is SHMEM_DEBUG: run extra checks.
	Debug bool
	// Info is SHMEM_INFO: print the configuration at start-up.
	Info bool
	// Version is SHMEM_VERSION: print the library version at start-up.
	Version bool
	// HugePages is SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES.
	HugePages bool
	// HeapPolicy is SHMEM_HEAP_POLICY: "local", "interleave" or "none".
	HeapPolicy string
	// Transport is SHMEM_TRANSPORT.
	Transport Transport
	// WaitSpin is SHMEM_WAIT_SPIN; 0 means auto.
	WaitSpin int
	// WaitYield is SHMEM_WAIT_YIELD; 0 means auto.
	WaitYield int
	// WaitSleep is SHMEM_WAIT_SLEEP, in (0, MaxWaitSleep].
	WaitSleep time.Duration
	// The collective algorithms ("auto": chosen by team shape and size).
	BarrierAlgorithm, ReduceAlgorithm, BcastAlgorithm, FCollectAlgorithm string
	// SimDomains is GOSHMEM_SIM_DOMAINS: 0, or the number of consecutive
	// PEs per simulated shared-memory domain.
	SimDomains int
	// NUMACollectives is SHMEM_NUMA_COLLECTIVES: "auto", "always" or
	// "never".
	NUMACollectives string
	// PMI is SHMEM_PMI: "auto", "pmi1" or "pmi2".
	PMI string
	// Host is SHMEM_HOST: the name of this process's host for grouping
	// PEs under a cluster launcher; "auto" means the launcher's process
	// mapping, else the host name.
	Host string
	// Internode is SHMEM_INTERNODE: the transport between the hosts'
	// leader PEs ("tcp" or "verbs").
	Internode string
	// InternodeIface is SHMEM_INTERNODE_IFACE: the interface or address
	// the leaders listen on ("": the default route's interface).
	InternodeIface string
	// WaitFence is SHMEM_WAIT_FENCE: sleepers fence with membarrier so
	// that writers publish flags with plain stores.
	WaitFence bool
	// InternodePoll is SHMEM_INTERNODE_POLL: a waiting leader PE reads
	// its transport's connections itself.
	InternodePoll bool
	// InternodeHold is SHMEM_INTERNODE_HOLD: a leader's process holds a
	// small put to another host back to send it with what follows.
	InternodeHold bool
	// InternodeRDMA is SHMEM_INTERNODE_RDMA: with a transport that can,
	// leaders expose their host's heaps, and large puts and gets are
	// RDMA WRITEs and READs into and from them.
	InternodeRDMA bool
	// InternodeRDMAMin is SHMEM_INTERNODE_RDMA_MIN: the smallest put
	// from a leader's process that goes as an RDMA WRITE.
	InternodeRDMAMin int64
	// VerbsDevice is SHMEM_VERBS_DEVICE: the RDMA device of the verbs
	// transport ("auto": the first with an active port).
	VerbsDevice string
	// VerbsPort is SHMEM_VERBS_PORT: its port (0: the first active).
	VerbsPort int
	// VerbsGIDIndex is SHMEM_VERBS_GID_INDEX: the GID index (RoCE).
	VerbsGIDIndex int
	// TaskSteal is SHMEM_TASK_STEAL: waiting PEs run chunks of the
	// tasks their host-mates execute.
	TaskSteal bool
	// CopyAdapt is SHMEM_COPY_ADAPT: large puts and gets near the copy
	// engine's non-temporal threshold time themselves and choose
	// between temporal and streaming stores.
	CopyAdapt bool
	// CopyShare is SHMEM_COPY_SHARE: the smallest put or get whose copy
	// waiting host-mates help with (bytes; 0: none).
	CopyShare int64
}

// def is a Knob with the code that stores its value in a Config.
type def struct {
	Knob
	set func(c *Config, v string) error
}

// defs is the single declaration of every knob. It returns a fresh
// slice on each call.
func defs() []def {
	return []def{
		sizeKnob(Knob{
			Name:       VarSymmetricSize,
			Deprecated: "SMA_SYMMETRIC_SIZE",
			Default:    "512M",
			Help: "Bytes of symmetric heap per PE: a number with an optional suffix " +
				"k, m, g or t (powers of 1024), fractions allowed, e.g. 64m or 1.5g. " +
				"All PEs on a node together need this times their number in memory " +
				"(memfd segments, backed as they are touched; start-up refuses more than " +
				"the machine's memory and swap). At most 256t.",
		}, MaxSymmetricSize, maxSymmetricSizeText, false, func(c *Config) *int64 { return &c.SymmetricSize }),
		anyKnob(Knob{
			Name:       VarDebug,
			Deprecated: "SMA_DEBUG",
			Default:    "off",
			Help: "Run checks that are too costly for the hot path: every RMA and AMO " +
				"takes the checked path, which verifies that the symmetric object lies " +
				"inside one live allocation (not just inside the heap), and every Free " +
				"verifies that all PEs freed the same blocks. Slower. Any value but " +
				"0, off, no or false turns it on (the specification's \"Any\").",
		}, func(c *Config) *bool { return &c.Debug }),
		anyKnob(Knob{
			Name:       VarInfo,
			Deprecated: "SMA_INFO",
			Default:    "off",
			Help: "Print every knob, its value, default and help at start-up (what oshinfo prints). " +
				"Any value but 0, off, no or false turns it on.",
		}, func(c *Config) *bool { return &c.Info }),
		anyKnob(Knob{
			Name:       VarVersion,
			Deprecated: "SMA_VERSION",
			Default:    "off",
			Help:       "Print the library version at start-up. Any value but 0, off, no or false turns it on.",
		}, func(c *Config) *bool { return &c.Version }),
		boolKnob(Knob{
			Name:    VarHugePages,
			Default: "off",
			Help: "Back the symmetric heap with huge pages (memfd with MFD_HUGETLB). " +
				"Needs huge pages reserved beforehand: sysctl vm.nr_hugepages=N, " +
				"see HugePages_Free in /proc/meminfo.",
		}, func(c *Config) *bool { return &c.HugePages }),
		enumKnob(Knob{
			Name: VarHeapPolicy, Default: "local", Values: []string{"local", "interleave", "none"},
			Help: "Where each PE's heap pages live. local: on the NUMA node the PE is " +
				"mapped to (its home node; mbind MPOL_PREFERRED, so a full node spills " +
				"over instead of failing); interleave: page by page across the nodes with " +
				"memory that the cgroup cpuset allows; none: where the CPU that first " +
				"touches a page runs (first touch).",
		}, func(c *Config, v string) { c.HeapPolicy = v }),
		enumKnob(Knob{
			Name:    VarTransport,
			Default: string(TransportAuto),
			Values:  []string{string(TransportAuto), string(TransportXPMEM), string(TransportCMA)},
			Help: "How a PE reaches the heaps of the other PEs on its node. " +
				"auto: the best one that works here; " +
				"xpmem: map the peers' heaps into this process (goshmem's XPMEM model over " +
				"memfd segments; no kernel module needed) and fail if that is impossible; " +
				"cma: copy with process_vm_readv/writev (needs ptrace access between PEs, " +
				"see /proc/sys/kernel/yama/ptrace_scope).",
		}, func(c *Config, v string) { c.Transport = Transport(v) }),
		enumKnob(Knob{
			Name: VarBarrierAlg, Default: "auto", Values: []string{"auto", "dissemination", "tree", "central"},
			Help: "Barrier and team sync algorithm. dissemination: log2(n) rounds, each PE " +
				"signals one peer per round (one writer per flag, no shared counter); tree: " +
				"arrivals gathered up a binomial tree and released down it (teams; the whole " +
				"job's barrier uses dissemination); central: one shared arrival counter, the " +
				"last arriver releases everyone, so each PE needs the CPU once to arrive and " +
				"once to leave; auto: central when the PEs outnumber the CPUs they run on " +
				"(the job's CPUs, or GOMAXPROCS for goroutine PEs of one process), " +
				"dissemination otherwise. In a job across hosts the whole job's barrier is " +
				"hierarchical (each host's PEs arrive at their leader, the leaders run the " +
				"dissemination barrier over the transport, each leader releases its host) " +
				"unless this is dissemination, which keeps it flat over all PEs.",
		}, func(c *Config, v string) { c.BarrierAlgorithm = v }),
		enumKnob(Knob{
			Name: VarReduceAlg, Default: "auto", Values: []string{"auto", "flat", "partitioned", "recursive-doubling", "ring", "rabenseifner"},
			Help: "Reduction algorithm inside a team. flat: one PE folds every member's " +
				"source (flat combining) and writes the result to every member; partitioned: " +
				"every PE folds its cache-line-aligned slice across all members and writes it " +
				"once to every member; recursive-doubling: log2(n) pairwise exchanges of the " +
				"whole vector, needing no shared memory; ring: reduce-scatter then allgather " +
				"around a ring, each PE moving 2(n-1)/n of the vector; rabenseifner: " +
				"reduce-scatter by recursive halving, allgather by recursive doubling " +
				"(power-of-two teams; ring otherwise); auto: inside a " +
				"shared-memory domain, dropboxes up to 632 B, flat up to 1 KiB, partitioned " +
				"above; across processes that cannot map each other, recursive doubling up to " +
				"16 KiB, then Rabenseifner on power-of-two teams and the ring otherwise. Teams that " +
				"span several shared-memory domains reduce hierarchically (inside each domain, " +
				"among the domain leaders, back inside each domain).",
		}, func(c *Config, v string) { c.ReduceAlgorithm = v }),
		enumKnob(Knob{
			Name: VarBcastAlg, Default: "auto", Values: []string{"auto", "direct", "tree"},
			Help: "Broadcast algorithm. direct: every member copies straight from the " +
				"root's source; tree: a binomial tree, inside a shared-memory domain each " +
				"member copying from its parent once the parent has the data, across " +
				"domains (teams of up to 448) each parent putting the data into its " +
				"children once they are in the call; auto: small broadcasts through " +
				"dropboxes (one host) or a gather as a bitwise-or reduction (across hosts), " +
				"direct inside a shared-memory domain, tree otherwise.",
		}, func(c *Config, v string) { c.BcastAlgorithm = v }),
		enumKnob(Knob{
			Name: VarFCollectAlg, Default: "auto", Values: []string{"auto", "direct", "ring", "recursive-doubling"},
			Help: "FCollect algorithm. direct: each member writes its block into every " +
				"member's destination; ring: n-1 steps, each member passing on the block it " +
				"received last; recursive-doubling: log2(n) swaps of doubling halves (teams of " +
				"a power-of-two size; ring otherwise); auto: direct inside a shared-memory " +
				"domain, otherwise recursive doubling up to 1 KiB per PE on power-of-two " +
				"teams and ring above.",
		}, func(c *Config, v string) { c.FCollectAlgorithm = v }),
		enumKnob(Knob{
			Name: VarNUMAColl, Default: "auto", Values: []string{"auto", "always", "never"},
			Help: "Whether reductions and broadcasts on a team whose members sit on several " +
				"NUMA nodes run level by level (inside each node, then among one leader per " +
				"node, then back down). auto: above 1 KiB with 4 or more members per node on " +
				"average, where moving each node's data " +
				"across the interconnect once beats every member reading every other " +
				"member's; always; never. Teams spanning shared-memory domains always run " +
				"level by level.",
		}, func(c *Config, v string) { c.NUMACollectives = v }),
		enumKnob(Knob{
			Name: VarPMI, Default: "auto", Values: []string{"auto", "pmi1", "pmi2"},
			Help: "Under a cluster launcher (srun --mpi=pmi2, MPICH's mpiexec), which PMI wire " +
				"protocol goshmem speaks to it: pmi2, pmi1 (the simple protocol), or auto: " +
				"PMI-2, falling back to PMI-1 when the launcher refuses it.",
		}, func(c *Config, v string) { c.PMI = v }),
		stringKnob(Knob{
			Name: VarHost, Default: "auto",
			Help: "Under a cluster launcher: the name of the host this process runs on, for " +
				"grouping the PEs that share memory. auto: the launcher's process mapping " +
				"(PMI_process_mapping), else the host name. Set it to test several \"hosts\" " +
				"on one machine.",
		}, func(c *Config) *string { return &c.Host }),
		enumKnob(Knob{
			Name: VarInternode, Default: "tcp", Values: []string{"tcp", "verbs"},
			Help: "In a job that spans hosts, the transport between the hosts' leader PEs " +
				"(one per host carries all of its host's cross-host traffic). tcp: TCP " +
				"connections made when a leader first talks to another. verbs: RDMA verbs " +
				"(InfiniBand, RoCE) through libibverbs, one reliable connected queue pair per " +
				"pair of leaders, made at start-up; only in a build with -tags verbs (see " +
				"SHMEM_VERBS_DEVICE).",
		}, func(c *Config, v string) { c.Internode = v }),
		stringKnob(Knob{
			Name: VarInternodeIf, Default: "auto",
			Help: "In a job that spans hosts, the interface name or IP address a leader PE " +
				"listens on for the other hosts' leaders. auto: the interface of the " +
				"default route, else the first one that is up and not loopback.",
		}, func(c *Config) *string { return &c.InternodeIface }),
		boolKnob(Knob{
			Name: VarInternodePoll, Default: "on",
			Help: "In a job that spans hosts, whether a leader PE that waits (for an answer, a " +
				"flag, a barrier) reads its connections to the other hosts itself, after its " +
				"first microsecond or so of waiting, instead of leaving every incoming frame " +
				"to a goroutine that the network poller must wake. on: yes (lower latency " +
				"across hosts); off: no (the leader's waits make no read system calls).",
		}, func(c *Config) *bool { return &c.InternodePoll }),
		boolKnob(Knob{
			Name: VarInternodeHold, Default: "on",
			Help: "In a job that spans hosts, whether a put of up to 1 KiB from a leader's " +
				"process to another host is held back to leave in one write with what " +
				"follows it (the flag after a Fence: one message instead of two). It leaves " +
				"at the PE's next wait, Quiet, get or flag, or within about a millisecond " +
				"if the PE computes instead; only while SHMEM_INTERNODE_POLL is on. off: " +
				"every put leaves at once.",
		}, func(c *Config) *bool { return &c.InternodeHold }),
		boolKnob(Knob{
			Name: VarInternodeRDMA, Default: "on",
			Help: "In a job that spans hosts, with a transport that has one-sided access " +
				"(verbs): whether each leader exposes (registers, so pins) every heap of its " +
				"host, so that a put of 8 KiB or more is an RDMA WRITE straight into the " +
				"target PE's heap (from a PE outside the leader's process: when the source is " +
				"in its symmetric heap, written by its leader from there) and a get an RDMA " +
				"READ (likewise: into its symmetric heap), without the target's CPU. off: every put and " +
				"get is a frame that the target's leader applies (nothing pinned but the " +
				"transport's buffers).",
		}, func(c *Config) *bool { return &c.InternodeRDMA }),
		sizeKnob(Knob{
			Name: VarInternodeRDMAMin, Default: "8k",
			Help: "With SHMEM_INTERNODE_RDMA=on: the smallest put to another host that " +
				"goes as an RDMA WRITE followed by a header-only frame (the target's leader " +
				"rings the PE's doorbell); a smaller put is one frame with its payload. " +
				"0: every put.",
		}, 1<<30, "1g", true, func(c *Config) *int64 { return &c.InternodeRDMAMin }),
		stringKnob(Knob{
			Name: VarVerbsDevice, Default: "auto",
			Help: "With SHMEM_INTERNODE=verbs: the RDMA device the leaders use, e.g. mlx5_0 " +
				"or rxe0 (the names in /sys/class/infiniband). auto: the first device " +
				"with an active port.",
		}, func(c *Config) *string { return &c.VerbsDevice }),
		rangeKnob(Knob{
			Name: VarVerbsPort, Default: "0",
			Help: "With SHMEM_INTERNODE=verbs: the device's port, from 1. 0: the first " +
				"active port.",
		}, 0, 255, func(c *Config) *int { return &c.VerbsPort }),
		rangeKnob(Knob{
			Name: VarVerbsGIDIndex, Default: "0",
			Help: "With SHMEM_INTERNODE=verbs on RoCE (Ethernet): the index of the GID the " +
				"leaders address each other by (see the port's gids in /sys/class/infiniband/" +
				"DEVICE/ports/PORT/gids; RoCE v2 over IPv4 is often 1 or 3).",
		}, 0, 1<<16-1, func(c *Config) *int { return &c.VerbsGIDIndex }),
		countKnob(Knob{
			Name: VarSimDomains, Default: "0",
			Help: "For tests and experiments: treat every run of this many consecutive PEs " +
				"as a separate shared-memory domain, so that collectives over TeamWorld run " +
				"hierarchically on one host. 0: off.",
		}, func(c *Config) *int { return &c.SimDomains }),
		countKnob(Knob{
			Name:    VarWaitSpin,
			Default: "0",
			Help: "Iterations of busy polling before a waiting PE starts to yield its CPU. " +
				"0 (or auto) picks for you: 32000 when the PEs on a node do not outnumber " +
				"the job's CPUs, 1 when they do (oversubscribed), because then a spinning " +
				"PE steals the CPU of the peer it waits for, and 32 when they fit only " +
				"without the leaders' transports of a job across hosts (which must get " +
				"a CPU when a frame arrives).",
		}, func(c *Config) *int { return &c.WaitSpin }),
		countKnob(Knob{
			Name:    VarWaitYield,
			Default: "0",
			Help: "Number of yields after spinning before a waiting PE sleeps: " +
				"sched_yield and a futex sleep for PEs in processes, runtime.Gosched " +
				"and a park in the process for PEs that are goroutines of one process. " +
				"0 (or auto) picks for you: 200 when the PEs on a node do not outnumber " +
				"the job's CPUs; when they do, 4000 for processes (a yield hands the CPU " +
				"to the PE waited for) and 32 for goroutines (parking is cheap).",
		}, func(c *Config) *int { return &c.WaitYield }),
		boolKnob(Knob{
			Name: VarWaitFence, Default: "on",
			Help: "Whether a PE about to sleep in a wait first makes every running PE " +
				"execute a memory barrier (membarrier(2), a few microseconds), so that " +
				"a put's plain stores never get a late wake-up and small broadcasts " +
				"publish with plain stores. off, or a kernel without membarrier: those " +
				"words are atomic exchanges, and a put's wake-up can be late by up to " +
				"one sleep. Set it alike for every process of a job.",
		}, func(c *Config) *bool { return &c.WaitFence }),
		boolKnob(Knob{
			Name: VarTaskSteal, Default: "on",
			Help: "Whether a PE that waits (WaitUntil and its forms, SignalWaitUntil, " +
				"locks, barriers, every collective) runs chunks of the tasks that other " +
				"PEs of its host execute (Task.Execute) between checks of what it waits " +
				"for, one chunk at a time. off: every chunk of a task is run by its owner. " +
				"Set it alike for every process of a job.",
		}, func(c *Config) *bool { return &c.TaskSteal }),
		boolKnob(Knob{
			Name:    VarCopyAdapt,
			Default: "on",
			Help: "Let large puts and gets near the copy engine's non-temporal threshold " +
				"(above an eighth of the last-level cache, up to a quarter) time themselves and " +
				"choose, per PE and size, between cached and streaming stores: cached " +
				"stores win when the program reuses its buffers, streaming stores when " +
				"its buffers do not fit the cache. off: the fixed threshold only.",
		}, func(c *Config) *bool { return &c.CopyAdapt }),
		{Knob{
			Name: VarCopyShare, Type: TypeSize, Default: CopyShareDefault,
			Help: "The smallest put or get (bytes, a size as SHMEM_SYMMETRIC_SIZE, at least " +
				"64k) whose copy PEs of the host that wait meanwhile may help with: the copy is " +
				"cut into chunks that the caller and waiting host-mates take, when both of its " +
				"buffers are symmetric and the host's PEs fit its CPUs. Below 4m each PE times " +
				"shared and lone copies of each size now and then and keeps the faster; from " +
				"4m up copies are always shared. off (or 0): every " +
				"copy is made by its caller alone, as with SHMEM_TASK_STEAL=off.",
		}, func(c *Config, v string) error {
			if b, err := ParseBool(v); err == nil && !b {
				c.CopyShare = 0
				return nil
			}
			n, err := ParseSize(v)
			if err != nil {
				if e, ok := err.(*Error); ok {
					e.Accept = "give off, or a size from 64k to 1t, e.g. " + CopyShareDefault
				}
				return err
			}
			if n == 0 {
				c.CopyShare = 0
				return nil
			}
			if n < 64<<10 || n > 1<<40 {
				return &Error{Value: v, Problem: "size out of range",
					Accept: "give off, or a size from 64k to 1t, e.g. " + CopyShareDefault}
			}
			c.CopyShare = n
			return nil
		}},
		durationKnob(Knob{
			Name:    VarWaitSleep,
			Default: "10ms",
			Help: "Longest futex sleep of a waiting PE between checks that the job is " +
				"alive; it bounds how long a dead peer can go unnoticed. A duration with " +
				"a unit, more than 0 and at most 500ms, e.g. 10ms or 200us.",
		}, 0, MaxWaitSleep, func(c *Config) *time.Duration { return &c.WaitSleep }),
	}
}

// Knobs returns every knob, in declaration order, as a fresh slice.
func Knobs() []Knob {
	ds := defs()
	ks := make([]Knob, len(ds))
	for i, d := range ds {
		ks[i] = d.Knob
		ks[i].Values = append([]string(nil), d.Values...)
	}
	return ks
}

// Load reads every knob through getenv (os.Getenv, or a map lookup in
// tests). A variable that is unset, empty or blank takes its default.
// Every invalid variable is reported, joined with errors.Join; each
// error is an *Error naming the variable, its value, what is accepted
// and the default. On error the returned Config holds the defaults in
// place of the invalid values.
func Load(getenv func(string) string) (Config, error) {
	var c Config
	var errs []error
	for _, d := range defs() {
		name, raw := d.lookup(getenv)
		v := strings.TrimSpace(raw)
		if v != "" {
			err := d.set(&c, v)
			if err == nil {
				continue
			}
			var e *Error
			if !errors.As(err, &e) {
				e = &Error{Problem: err.Error()}
			}
			e.Name, e.Value, e.Default = name, raw, d.Default
			errs = append(errs, e)
		}
		if err := d.set(&c, d.Default); err != nil {
			panic(fmt.Sprintf("env: default %q of %s does not parse: %v", d.Default, d.Name, err))
		}
	}
	return c, errors.Join(errs...)
}

// lookup returns the variable that sets k and its value: Name, or
// Deprecated when Name is unset or blank (and Deprecated is set).
func (k Knob) lookup(getenv func(string) string) (name, value string) {
	value = getenv(k.Name)
	if strings.TrimSpace(value) == "" && k.Deprecated != "" {
		if v := getenv(k.Deprecated); strings.TrimSpace(v) != "" {
			return k.Deprecated, v
		}
	}
	return k.Name, value
}

// Default returns the Config of an empty environment.
func Default() Config {
	c, err := Load(func(string) string { return "" })
	if err != nil {
		panic(err) // unreachable: Load panics first on a bad default
	}
	return c
}

// Error reports a value that cannot be used.
type Error struct {
	Name    string // the variable, e.g. "SHMEM_SYMMETRIC_SIZE"; empty when the value came from elsewhere
	Value   string // the value as given
	Problem string // what is wrong, e.g. `unknown suffix "x"`
	Accept  string // what would be accepted instead
	Default string // the knob's default; empty when Name is empty
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Name != "" {
		b.WriteString("goshmem: ")
	}
	b.WriteString(e.Problem)
	b.WriteString(" in ")
	if e.Name != "" {
		b.WriteString(e.Name)
		b.WriteByte('=')
	}
	b.WriteString(strconv.Quote(e.Value))
	if e.Accept != "" {
		b.WriteString("; ")
		b.WriteString(e.Accept)
	}
	if e.Name != "" && e.Default != "" {
		fmt.Fprintf(&b, " (or unset %s for the default, %s)", e.Name, e.Default)
	}
	return b.String()
}

// sizeKnob is a size knob in [1, max]; maxText is max as a user writes
// it.
func sizeKnob(k Knob, max int64, maxText string, zeroOK bool, field func(*Config) *int64) def {
	k.Type = TypeSize
	return def{k, func(c *Config, v string) error {
		tooLarge := func() error {
			return &Error{Value: v, Problem: problemTooLarge,
				Accept: fmt.Sprintf("use at most %s (%d bytes), e.g. %s", maxText, max, k.Default)}
		}
		n, err := ParseSize(v)
		if e, ok := err.(*Error); ok && e.Problem == problemTooLarge {
			return tooLarge() // beyond the parser too: the knob's limit is the advice
		}
		if err != nil {
			return err
		}
		if n == 0 && !zeroOK {
			return &Error{Value: v, Problem: "zero size", Accept: "give at least 1 byte, e.g. " + k.Default}
		}
		if n > max {
			return tooLarge()
		}
		*field(c) = n
		return nil
	}}
}

// stringKnob is a free-form string knob: any value without control
// characters.
func stringKnob(k Knob, field func(*Config) *string) def {
	k.Type = TypeString
	return def{k, func(c *Config, v string) error {
		if strings.IndexFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
			return &Error{Value: v, Problem: "control character", Accept: "use printable characters"}
		}
		*field(c) = v
		return nil
	}}
}

// anyKnob is a switch that the specification turns on with "Any"
// value (SHMEM_VERSION, SHMEM_INFO, SHMEM_DEBUG): a value ParseBool
// reads as false (0, off, no, false) turns it off, every other one,
// "verbose" or "2" too, on.
func anyKnob(k Knob, field func(*Config) *bool) def {
	k.Type = TypeBool
	return def{k, func(c *Config, v string) error {
		b, err := ParseBool(v)
		*field(c) = b || err != nil
		return nil
	}}
}

func boolKnob(k Knob, field func(*Config) *bool) def {
	k.Type = TypeBool
	return def{k, func(c *Config, v string) error {
		b, err := ParseBool(v)
		if err != nil {
			return err
		}
		*field(c) = b
		return nil
	}}
}

func enumKnob(k Knob, set func(c *Config, v string)) def {
	k.Type = TypeEnum
	values := append([]string(nil), k.Values...)
	return def{k, func(c *Config, v string) error {
		for _, a := range values {
			if strings.EqualFold(v, a) {
				set(c, a)
				return nil
			}
		}
		return &Error{Value: v, Problem: "unknown value", Accept: "use one of " + strings.Join(values, ", ")}
	}}
}

// rangeKnob is an int knob from lo to hi.
func rangeKnob(k Knob, lo, hi int, field func(*Config) *int) def {
	k.Type = TypeInt
	return def{k, func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return &Error{Value: v, Problem: "not a number in range", Accept: fmt.Sprintf("use a whole number from %d to %d", lo, hi)}
		}
		*field(c) = n
		return nil
	}}
}

// LoadOnly is Load of the knobs named only (by Name): the others keep
// their defaults and their variables are not read (a package that
// needs a few knobs reports only its own bad values).
func LoadOnly(getenv func(string) string, names ...string) (Config, error) {
	var read []string
	for _, d := range defs() {
		if slices.Contains(names, d.Name) {
			read = append(read, d.Name)
			if d.Deprecated != "" {
				read = append(read, d.Deprecated)
			}
		}
	}
	return Load(func(k string) string {
		if slices.Contains(read, k) {
			return getenv(k)
		}
		return ""
	})
}

// countKnob is an int knob >= 0 where 0 also reads "auto".
func countKnob(k Knob, field func(*Config) *int) def {
	k.Type = TypeInt
	return def{k, func(c *Config, v string) error {
		const accept = "use a whole number from 0 to 2147483647, or auto (= 0)"
		if strings.EqualFold(v, "auto") {
			*field(c) = 0
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange), err == nil && n > MaxCount:
			return &Error{Value: v, Problem: "too large a number", Accept: accept}
		case err != nil:
			return &Error{Value: v, Problem: "not a whole number", Accept: accept}
		case n < 0:
			return &Error{Value: v, Problem: "negative number", Accept: accept}
		}
		*field(c) = int(n)
		return nil
	}}
}

// durationKnob is a duration knob in (lo, hi].
func durationKnob(k Knob, lo, hi time.Duration, field func(*Config) *time.Duration) def {
	k.Type = TypeDuration
	return def{k, func(c *Config, v string) error {
		accept := fmt.Sprintf("use a duration with a unit (ns, us, ms, s), more than %v and at most %v, e.g. 10ms", lo, hi)
		d, err := time.ParseDuration(v)
		if err != nil {
			problem := "not a duration"
			if _, e := strconv.ParseFloat(v, 64); e == nil {
				problem = "duration without a unit"
			}
			return &Error{Value: v, Problem: problem, Accept: accept}
		}
		if d <= lo || d > hi {
			return &Error{Value: v, Problem: "duration out of range", Accept: accept}
		}
		*field(c) = d
		return nil
	}}
}

// Unrecognized returns, sorted and without repeats, the names of the
// SHMEM_* variables in environ (in the "NAME=value" form of os.Environ)
// that are not knobs of goshmem: most often misspellings such as
// SHMEM_SYMETRIC_SIZE, which would otherwise be silently ignored, or
// settings meant for another OpenSHMEM library.
func Unrecognized(environ []string) []string {
	known := make(map[string]bool)
	for _, d := range defs() {
		known[d.Name] = true
	}
	var names []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SHMEM_") && !known[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
