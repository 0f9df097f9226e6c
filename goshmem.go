// Package goshmem is an OpenSHMEM-style PGAS runtime for Go.
//
// A goshmem program is SPMD: the same code runs as several PEs
// (processing elements), each with a symmetric heap in which collective
// allocations (Malloc, Calloc, Align) sit at the same offset on every
// PE. A PE reads and writes the heaps of the others with one-sided
// operations (Put, Get, P, G, the strided and non-blocking forms,
// PutSignal), updates them with atomics (AtomicFetchAdd and friends),
// waits for its own heap to change (WaitUntil, SignalWaitUntil), and
// synchronizes with barriers and locks.
//
// On a node, every process maps the heap of every PE (the XPMEM model),
// so these operations are plain loads, stores and CPU atomics, and Ptr
// hands out slices that point straight into another PE's heap.
//
// # Starting PEs
//
//	func main() {
//		goshmem.Main(func(pe *goshmem.PE) {
//			fmt.Printf("hello from PE %d of %d\n", pe.MyPE(), pe.NPEs())
//		})
//	}
//
// Run it with the launcher, `go run ./cmd/oshrun -n 4 ./examples/hello`,
// or on its own as a one-PE job. RunLocal runs a job of several PEs as
// goroutines of one process (tests, threads-as-ranks codes); oshrun
// --pes-per-proc mixes both.
//
// # Errors
//
// Programmer errors (a PE out of range, an address outside the
// symmetric heap, slices of different lengths, an unknown comparison, a
// destroyed context) panic with a message that names the routine, the
// argument and the valid range. Environment errors (heap exhausted,
// limits, bad SHMEM_* values) are returned as errors that say what to
// do. A wait that cannot finish because a PE died panics with a
// *JobError naming the dead PE; Main and RunLocal report it.
// GlobalExit(code) ends every PE's process with status code (Main and
// Run do not return); in RunLocal it ends the job, which returns a
// *GlobalExitError.
package goshmem

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/node"
)

// Version is the library version.
const Version = "0.1.0"

// SpecVersion is the OpenSHMEM specification version the API follows.
const SpecVersion = "1.5"

type (
	// PE is one processing element; see node.PE, where its methods
	// are documented (`go doc github.com/goshmem/goshmem/node PE`, or
	// `go doc github.com/goshmem/goshmem/node PE.BarrierAll`: go doc
	// does not list the methods of an alias here). Among its methods
	// are the runtime layer's primitives that this package's teams,
	// collectives and contexts are built on (TeamSet, TeamPut,
	// TeamPutSet, TeamLoad, TeamClear, Wake, Translate, ...): they
	// check their arguments only against the runtime's own layout, not
	// against the teams in use, and programs must not call them; the
	// routines of this package are the API.
	PE = node.PE
	// Ctx is a communication context (shmem_ctx_t).
	Ctx = node.Ctx
	// CtxOptions are the options of PE.CtxCreate.
	CtxOptions = node.CtxOptions
	// Cmp is a point-to-point comparison.
	Cmp = node.Cmp
	// ThreadLevel is an OpenSHMEM thread-support level.
	ThreadLevel = node.ThreadLevel
	// JobError is the panic value (and Main/RunLocal error) of a routine
	// that cannot complete because the job failed.
	JobError = node.JobError
	// PanicError reports a PE that panicked.
	PanicError = node.PanicError
	// GlobalExitError is RunLocal's error when a PE called GlobalExit.
	GlobalExitError = node.GlobalExitError
	// Transport tells how a process reaches its peers' heaps.
	Transport = node.Transport
	// Integer is the set of element types of the integer AMOs (4 and 8
	// bytes wide). The bitwise AMOs (AtomicAnd, AtomicOr, AtomicXor and
	// their fetching forms) take the same set: OpenSHMEM's bitwise table
	// leaves out C's int, long and size_t, whose width and bit pattern
	// C does not fix, where Go's int and uintptr are two's-complement
	// words of a known width, so the operations mean the same on them.
	Integer = node.Integer
	// Standard adds float32 and float64 for fetch, set and swap.
	Standard = node.Standard
)

// SyncInteger is the set of element types of the point-to-point
// synchronization routines (WaitUntil, Test and their vector forms):
// Integer and the 16-bit integers (OpenSHMEM's short and unsigned
// short).
type SyncInteger interface {
	Integer | ~int16 | ~uint16
}

// Comparisons (SHMEM_CMP_*).
const (
	CmpEQ = node.CmpEQ
	CmpNE = node.CmpNE
	CmpGT = node.CmpGT
	CmpGE = node.CmpGE
	CmpLT = node.CmpLT
	CmpLE = node.CmpLE
)

// Thread levels (SHMEM_THREAD_*).
const (
	ThreadSingle     = node.ThreadSingle
	ThreadFunneled   = node.ThreadFunneled
	ThreadSerialized = node.ThreadSerialized
	ThreadMultiple   = node.ThreadMultiple
)

// Context options (SHMEM_CTX_*).
const (
	CtxSerialized = node.CtxSerialized
	CtxPrivate    = node.CtxPrivate
	CtxNostore    = node.CtxNostore
)

// LoadConfig reads the SHMEM_* environment (see cmd/oshinfo for the
// list); an invalid value is an error that names it.
func LoadConfig() (node.Config, error) {
	c, err := env.Load(os.Getenv)
	if err != nil {
		return node.Config{}, err
	}
	return node.Config{
		HeapSize:  c.SymmetricSize,
		Huge:      c.HugePages,
		Debug:     c.Debug,
		Info:      c.Info,
		Version:   c.Version,
		Transport: string(c.Transport),
		WaitSpin:  c.WaitSpin,
		WaitYield: c.WaitYield,
		WaitSleep: c.WaitSleep,
		NoFence:   !c.WaitFence,

		BarrierAlgorithm:  c.BarrierAlgorithm,
		ReduceAlgorithm:   c.ReduceAlgorithm,
		BcastAlgorithm:    c.BcastAlgorithm,
		FCollectAlgorithm: c.FCollectAlgorithm,
		SimDomains:        c.SimDomains,
		NUMACollectives:   c.NUMACollectives,
		HeapPolicy:        c.HeapPolicy,
		PMI:               c.PMI,
		Host:              c.Host,
		Internode:         c.Internode,
		InternodeIface:    c.InternodeIface,
		InternodeNoPoll:   !c.InternodePoll,
		InternodeNoHold:   !c.InternodeHold,
		InternodeNoRDMA:   !c.InternodeRDMA,
		InternodeRDMAMin:  max(c.InternodeRDMAMin, 1), // 0 in the variable: every put (of at least a byte)
		TaskNoSteal:       !c.TaskSteal,
		CopyNoAdapt:       !c.CopyAdapt,
		CopyShare:         c.CopyShare,
	}, nil
}

// banner prints what SHMEM_VERSION and SHMEM_INFO ask for, once per job
// (PE 0): the version line, and for SHMEM_INFO the knob table, the
// unknown SHMEM_* names and the transport lines, worded as cmd/oshinfo
// words its Environment and On-node transport sections (where they are
// indented by two blanks), with the transport and heap policy this job
// actually got.
func banner(cfg node.Config, pe *PE) {
	if pe.MyPE() != 0 {
		return
	}
	if cfg.Version || cfg.Info {
		fmt.Fprintf(os.Stderr, "goshmem %s (OpenSHMEM %s API)\n", Version, SpecVersion)
	}
	if cfg.Info {
		env.Print(os.Stderr, os.Getenv)
		if extra := env.Unrecognized(os.Environ()); len(extra) > 0 {
			fmt.Fprintln(os.Stderr, "unknown SHMEM_* variables (typos?): "+strings.Join(extra, ", "))
		}
		t := pe.Transport()
		fmt.Fprintf(os.Stderr, "on-node transport: %s (%s)\n", t.Name, t.Reason)
		fmt.Fprintf(os.Stderr, "heap policy: %s\n", pe.HeapPlacement())
		if pe.WaitFenced() {
			fmt.Fprintln(os.Stderr, "waits: a waiter fences (membarrier) before it sleeps; flags are published with plain stores")
		} else {
			fmt.Fprintln(os.Stderr, "waits: flags are published with atomic exchanges (no membarrier fence: SHMEM_WAIT_FENCE=off, goroutine PEs, or a kernel without it)")
		}
		if c := pe.Cluster(); c != nil {
			fmt.Fprintf(os.Stderr, "cluster: %s\n", c)
		}
	}
}

// Run runs fn on every PE this process hosts (one, or several with
// oshrun --pes-per-proc; a program started without oshrun is a one-PE
// job), finalizes them, and returns the first failure.
//
// A job ended by GlobalExit is not a failure Run returns: as
// shmem_global_exit requires, every PE's process exits with the
// GlobalExit status, so Run does not return and no code after it runs
// (see PE.GlobalExit).
func Run(fn func(pe *PE)) error {
	cfg, err := LoadConfig()
	if err != nil {
		return &configError{err}
	}
	return node.Main(cfg, func(pe *PE) {
		banner(cfg, pe)
		fn(pe)
	})
}

// Main is Run for func main: on failure it prints the error (and the
// stack of a panicking PE) and exits with status 1, or 2 for a panic.
func Main(fn func(pe *PE)) {
	if err := Run(fn); err != nil {
		exit(err)
	}
}

// panicf panics with a message that starts with the routine's name.
func panicf(format string, args ...any) {
	panic(fmt.Sprintf("goshmem."+format, args...))
}

// configError is a bad SHMEM_* value found by Run: every process of a
// job started by a cluster launcher finds the same one.
type configError struct{ error }

func (e *configError) Unwrap() error { return e.error }

// laterRank reports whether this process is a rank other than 0 of a
// job that a cluster launcher started (PMI_RANK, or Slurm's
// SLURM_PROCID), read from the environment without a PMI connection.
func laterRank(getenv func(string) string) bool {
	if getenv("PMI_FD") == "" && getenv("PMI_PORT") == "" {
		return false
	}
	r := getenv("PMI_RANK")
	if r == "" {
		r = getenv("SLURM_PROCID")
	}
	n, err := strconv.Atoi(strings.TrimSpace(r))
	return err == nil && n > 0
}

// configReportDelay is how long a rank other than 0 waits before it
// prints a configuration error: the launcher ends the job once rank 0
// has failed with the same error (hydra does; srun with
// --kill-on-bad-exit), so a job of N ranks prints it once, not N
// times; a rank whose configuration alone is bad still prints it.
const configReportDelay = time.Second

func exit(err error) {
	code := 1
	if ce := (*configError)(nil); errors.As(err, &ce) {
		if laterRank(os.Getenv) {
			time.Sleep(configReportDelay) // rank 0 reports it and ends the job
		}
		// Rank 0 of a cluster launcher's job, or a later rank still
		// alive (its configuration alone is bad: rank 0 is waiting for
		// it in the wire-up), reports it and ends the job.
		if node.AbortLaunch(err) {
			os.Exit(1)
		}
	}
	if pe, ok := err.(*PanicError); ok {
		if !pe.Reported() { // else printed when the PE panicked
			fmt.Fprintf(os.Stderr, "%v\n\n%s", pe, pe.Stack)
		}
		code = 2
	} else if r := (*node.ReportedError)(nil); !errors.As(err, &r) { // else printed already
		fmt.Fprintln(os.Stderr, err)
	}
	if os.Getenv("PMI_FD") != "" || os.Getenv("PMI_PORT") != "" {
		// A cluster launcher ends the whole job when it sees a process
		// fail, and may drop the output it has not forwarded yet: give
		// it a moment to forward the message first.
		time.Sleep(200 * time.Millisecond)
	}
	os.Exit(code)
}

// RunLocal runs an in-process job of n PEs, one goroutine each, every
// PE with its own symmetric heap in a shared segment, and returns when
// all have finished (the first failure as error). A GlobalExit ends the
// job, not the process: RunLocal returns a *GlobalExitError with its
// status.
func RunLocal(n int, fn func(pe *PE)) error {
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	return RunLocalConfig(cfg, n, fn)
}

// RunLocalConfig is RunLocal with an explicit configuration. A field
// with a value its SHMEM_* variable would not accept (an unknown
// algorithm or transport name, a heap size that is not positive, ...)
// is an error naming the field and the valid values (see
// node.Config.Validate); no PE starts. As under Run, cfg.Version and
// cfg.Info (SHMEM_VERSION, SHMEM_INFO) print the banner once per job.
func RunLocalConfig(cfg node.Config, n int, fn func(pe *PE)) error {
	if !cfg.Version && !cfg.Info {
		return node.RunLocal(cfg, n, fn)
	}
	return node.RunLocal(cfg, n, func(pe *PE) {
		banner(cfg, pe)
		fn(pe)
	})
}

// Init starts this process's PE (shmem_init) for programs written in
// the classic style; call pe.Finalize before exiting. A process that
// hosts several PEs must use Main or Run instead.
func Init() (*PE, error) {
	cfg, err := LoadConfig()
	if err != nil {
		return nil, err
	}
	pe, err := node.Init(cfg)
	if err == nil {
		banner(cfg, pe)
	}
	return pe, err
}

// InitThread is Init with a requested thread level
// (shmem_init_thread); it returns the level provided, which is the
// level requested: every level is supported.
func InitThread(level ThreadLevel) (*PE, ThreadLevel, error) {
	if level < ThreadSingle || level > ThreadMultiple {
		panic(fmt.Sprintf("goshmem.InitThread: unknown thread level %d; use ThreadSingle (%d), ThreadFunneled, ThreadSerialized or ThreadMultiple (%d)",
			int(level), int(ThreadSingle), int(ThreadMultiple)))
	}
	pe, err := Init()
	if err != nil {
		return nil, 0, err
	}
	return pe, pe.SetThreadLevel(level), nil
}

// Ptr returns x as it lives in PE pe's heap (shmem_ptr): a slice that
// loads and stores go straight to, or nil when x is not in the
// symmetric heap or pe's heap is not mapped into this process.
func Ptr[T any](pe *PE, x []T, target int) []T {
	base, off, ok := pe.Translate(mem.Addr(x), uintptr(len(x))*mem.SizeOf[T](), target)
	if !ok || len(x) == 0 {
		return nil
	}
	return mem.Slice[T](base, off, len(x))
}

// PtrTo is Ptr for a single object.
func PtrTo[T any](pe *PE, x *T, target int) *T {
	base, off, ok := pe.Translate(mem.PtrAddr(x), mem.SizeOf[T](), target)
	if !ok {
		return nil
	}
	return mem.At[T](base, off)
}

// AddrAccessible reports whether x, a slice of the calling PE, is a
// symmetric object that PE target can be reached at
// (shmem_addr_accessible): x lies in the symmetric heap and target is a
// PE of the job. An empty x holds no object and reports false. Whether
// target's copy can also be accessed directly is what Ptr tells.
func AddrAccessible[T any](pe *PE, x []T, target int) bool {
	return len(x) > 0 && pe.PEAccessible(target) &&
		pe.InHeap(mem.Addr(x), uintptr(len(x))*mem.SizeOf[T]())
}
