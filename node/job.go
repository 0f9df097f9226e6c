package node

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/pmi"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/numa"
	"github.com/goshmem/goshmem/shm"
	"github.com/goshmem/goshmem/xpmem"
)

// Transport names how this process reaches its peers' heaps.
type Transport struct {
	Name   string // "xpmem" (mapped) or "cma" (process_vm_readv/writev), or "mixed"
	Reason string // why it was chosen
}

// Job is the part of a goshmem job that one process holds: the control
// block and the mappings of every heap of the node. It is shared by the
// PEs the process hosts.
type Job struct {
	cfg      Config
	pmi      *pmi.Client // the cluster launcher's PMI (nil under oshrun)
	pmiEnd   sync.Once   // finalizes pmi once (Finalize, or a GlobalExit's exit)
	cluster  *Cluster    // what PMI told (nil under oshrun)
	npes     int
	firstPE  int // first PE hosted here
	localPEs int
	// prevProcs is GOMAXPROCS before the job raised it (0: unchanged):
	// restored once every PE of this process has finalized
	// (finalizedHere), when no wait of the job needs the extra P.
	prevProcs     int
	finalizedHere atomic.Int32
	heapSize      uintptr
	// panicked is what the first PE of this process that panicked
	// panicked with (a string, runPE): the errors of the PEs that the
	// panic stops name it (abortError), so that a goroutine that dies of
	// one before Main reports the panic does not lose its cause.
	panicked atomic.Pointer[string]
	ctl      *job.Control
	ctlMap   *shm.Mapping
	window   []byte     // the address space the heaps are mapped into
	heaps    [][]byte   // per PE: its heap and team pool; nil where not mapped
	bases    []mem.Base // per PE; nil where not mapped
	// serve: per PE of this host in a job that spans hosts, its heap as
	// this process maps it to serve the other hosts' RMA and AMOs when
	// it is the host's leader (xsink): bases[pe], or under
	// SHMEM_TRANSPORT=cma, where the PEs reach each other through CMA,
	// a mapping that only the leader's service uses. serveErr: why a
	// heap could not be mapped for it (newXhost reports it when this
	// process leads).
	serve    []mem.Base
	serveErr []error
	policy   wait.Policy
	// central: SyncAll and BarrierAll use the central counter barrier
	// (centralBarrier), the same choice in every process of the job.
	central bool
	// hotPolicy, when hot is set, is what a wait follows instead of
	// policy while this process talks to other hosts and the wait
	// reads the transport itself (see waitSlow): policy without the
	// helpers, which that wait does not need (the leaders' transports
	// wake only to receive, and it receives).
	hotPolicy wait.Policy
	hot       bool
	// fit: the PEs of this host, with the leaders' transport helpers,
	// fit the CPUs they may use (they all run at once).
	fit bool
	// notify: per local PE, the in-process list its goroutines park on
	// when every PE of the job is a goroutine of this process (policy
	// mode wait.Goroutines); nil otherwise.
	notify []wait.Notify

	transport Transport
	amoLocked bool
	placement []HeapPlacement // per local PE: SHMEM_HEAP_POLICY's outcome

	peersOnce sync.Once

	// host: the PEs of this host when the job spans hosts (nil
	// otherwise); x: the cross-host part (xhost.go).
	host []int
	x    *xhost

	// process is set when the job is this process's (Main, Init): a
	// GlobalExit then ends the process, and the watchers run (watch.go).
	// It is false for RunLocal.
	process bool
	watch   watchers

	closeOnce sync.Once
}

// openJob maps the segments, sets the memory policy of the local PEs'
// heaps and prepares their slots. envNodes is GOSHMEM_NUMA_NODES ("" if
// unset or not applicable).
//
// host, in a job that spans hosts, lists the PEs of this host: the
// heaps of the others are not reached through this mapping (their
// bases stay nil), and the waiting policy counts busy PEs (see
// Cluster.busyPEs).
func openJob(cfg Config, segs *job.Segments, firstPE, localPEs int, envNodes string, host []int, busy, helpers int) (*Job, error) {
	j := &Job{cfg: cfg, npes: segs.NPEs, firstPE: firstPE, localPEs: localPEs,
		heapSize: uintptr(segs.HeapSize), host: host}
	m, err := segs.Ctl.Map(0, 0)
	if err != nil {
		return nil, err
	}
	j.ctlMap = m
	if j.ctl, err = job.OpenControl(m.Bytes(), segs.NPEs, uint64(segs.HeapSize), segs.JobID, false); err != nil {
		m.Close()
		return nil, err
	}
	j.heapSize = uintptr(j.ctl.Header.HeapSize) // the user's heap; the team pool follows it
	failed, err := j.mapHeaps(cfg, segs, host)
	if err != nil {
		j.close()
		return nil, err
	}
	if host != nil {
		on := make([]bool, j.npes)
		for _, q := range host {
			on[q] = true
		}
		for q := range j.bases {
			if !on[q] {
				j.heaps[q], j.bases[q], j.serve[q] = nil, nil, nil // another host's PE
			}
		}
	}
	switch {
	case cfg.Transport == "cma" && j.npes > 1:
		j.transport = Transport{"cma", "SHMEM_TRANSPORT=cma: peers in other processes are reached with process_vm_readv/writev"}
	case len(failed) > 0:
		j.transport = Transport{"mixed", "some heaps could not be mapped, CMA for those: " + strings.Join(failed, "; ")}
	default:
		j.transport = Transport{"xpmem", "every heap of the node is mapped into this process (zero-copy loads, stores and CPU atomics)"}
	}
	mapped := uint32(1)
	if cfg.Transport == "cma" || len(failed) > 0 {
		mapped = 2
	}
	// Home nodes and heap policy: before the slots are published (and so
	// before the start-up barrier), while nothing has touched the heaps.
	topo := lazyTopology()
	home, err := homeNodes(cfg, j.npes, firstPE, localPEs, envNodes, topo)
	if err == nil {
		j.placeHeaps(home, topo) // cannot fail: the policy passed Config.Validate
	}
	if err != nil {
		j.close()
		return nil, err
	}
	pid := os.Getpid()
	var cpus uint32 // see job.Slot.CPUs
	if localPEs == 1 {
		if set, err := numa.Allowed(); err == nil {
			cpus = cpuSetID(set)
		}
	}
	for pe := firstPE; pe < firstPE+localPEs; pe++ {
		s := j.ctl.Slot(pe)
		s.Pid.Store(int32(pid))
		s.CPUs.Store(cpus)
		s.Node.Store(int32(home[pe-firstPE] + 1))
		s.HeapAddr.Store(uint64(uintptr(j.bases[pe])))
		s.Mapped.Store(mapped)
		s.State.Store(job.StateRunning)
	}
	npes := j.npes
	if host != nil {
		npes = busy // the PEs that share this machine's CPUs
	}
	j.policy = autoPolicy(npes, helpers, j.localPEs, int(j.ctl.Header.CPUs), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	// Copies are shared only when every PE of the host has a CPU: a
	// helper that loses its CPU in the middle of a chunk would hold the
	// copy's owner for a time slice.
	j.fit = npes+helpers <= runCPUs(npes, j.localPEs, int(j.ctl.Header.CPUs), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	j.hotPolicy, j.hot = hotPolicy(npes, helpers, j.localPEs, int(j.ctl.Header.CPUs), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	if j.policy.Mode == wait.Goroutines {
		j.notify = make([]wait.Notify, localPEs)
	}
	// The central barrier counts in PE 0's slot of one host's control
	// block: not across hosts.
	j.central = host == nil && centralBarrier(cfg.BarrierAlgorithm, j.npes, j.localPEs, int(j.ctl.Header.CPUs), runtime.GOMAXPROCS(0))
	if watcherP(localPEs, runtime.GOMAXPROCS(0), os.Getenv("GOMAXPROCS")) {
		j.prevProcs = runtime.GOMAXPROCS(2) // given back when this process's PEs have finalized
	}
	if cfg.WaitSpin > 0 {
		j.policy.Spin = cfg.WaitSpin
		j.hot = false // the user's choice, hot or not
	}
	if cfg.WaitYield > 0 {
		// The user's yields, also before a goroutine PE's timer-free
		// parks (wait.Policy.ParkYield).
		j.policy.Yield, j.policy.ParkYield = cfg.WaitYield, cfg.WaitYield
		j.hotPolicy.Yield, j.hotPolicy.ParkYield = cfg.WaitYield, cfg.WaitYield
	}
	if cfg.WaitSleep > 0 {
		j.policy.MaxSleep = cfg.WaitSleep
		j.hotPolicy.MaxSleep = cfg.WaitSleep
	}
	// The asymmetric fence of the doorbell contract (internal/wait):
	// registering is one system call per process.
	fenced := !cfg.NoFence && sys.MembarrierRegister() == nil
	j.policy.SetFenced(fenced)
	j.hotPolicy.SetFenced(fenced)
	// Goroutine PEs' control-only waits park without a timer, and
	// read the failure record once armed (wait.Policy.Abort).
	j.policy.Abort = &j.ctl.Header.Abort.State
	j.hotPolicy.Abort = &j.ctl.Header.Abort.State
	return j, nil
}

// cpuSetID identifies a set of CPUs (ascending numbers) for
// job.Slot.CPUs: an FNV-1a hash of the numbers, never 0.
func cpuSetID(cpus []int) uint32 {
	h := uint32(2166136261)
	for _, c := range cpus {
		for v := uint32(c); ; v >>= 8 {
			h = (h ^ (v & 0xff)) * 16777619
			if v < 256 {
				break
			}
		}
		h = (h ^ 0xff) * 16777619 // separator: {1, 2} is not {258}
	}
	return max(h, 1)
}

// centralBarrier reports whether the job's barrier (SyncAll,
// BarrierAll) is the central counter barrier rather than the
// dissemination barrier, for the SHMEM_BARRIER_ALGORITHM value alg
// ("" or "auto": chosen here), npes PEs, localPEs of them in this
// process, jobCPUs CPUs usable by the job (the control block's record)
// and this process's GOMAXPROCS.
//
// What a barrier costs when PEs outnumber CPUs is how many times each
// PE must get a CPU: the dissemination barrier waits for a given peer
// in each of its log2(npes) rounds, and each round may need the peers
// sharing a CPU to take turns again; the central barrier needs every PE
// to run once to arrive (one atomic add) and once to see the last
// arrival. When PEs fit their CPUs the dissemination barrier is faster
// (no contended line; every PE spins on its own flag).
//
// Every process of the job must choose the same, so the choice rests
// only on what they share: npes against the job's CPUs, or, when every
// PE is a goroutine of this process, npes against GOMAXPROCS.
func centralBarrier(alg string, npes, localPEs, jobCPUs, gomaxprocs int) bool {
	switch alg {
	case "central":
		return npes > 1
	case "dissemination", "tree":
		return false
	}
	if npes <= 1 {
		return false
	}
	if jobCPUs > 0 && npes > jobCPUs {
		return true
	}
	return localPEs == npes && npes > gomaxprocs
}

// watcherP reports whether a process hosting localPEs PEs, running
// goroutines on gomaxprocs Ps, should get a second P for the job's
// watchers (GOMAXPROCS 2): when it hosts one PE on one P, as when
// oshrun binds it to one CPU, and the user did not set GOMAXPROCS
// (env, the variable's value).
//
// The exit watcher (watch.go) blocks in a futex system call (the ring
// watcher waits in the runtime's poller, which holds no P). A goroutine
// in a blocking system call keeps its P until the runtime's sysmon takes
// the P back, on its next tick: up to 10 ms later once sysmon has been
// idle a while. With one P, the watcher, started at Init, ran when the
// PE's goroutine was preempted and blocked holding the only P; the PE's
// goroutine waited behind it for sysmon, and its peers waited for the
// PE: in 2-PE jobs bound to cores, one 0.15 us reduction took 8 to 20 ms
// once in every run of 200,000 (100 blocks of 2,000; each of 4 runs had
// one such block, none of 4 runs with a second P). With a second P the
// watcher sleeps on it and the PE's goroutine keeps its own. The second
// P costs nothing while the watcher sleeps: the threads still share the
// CPUs the process is bound to.
func watcherP(localPEs, gomaxprocs int, env string) bool {
	return localPEs == 1 && gomaxprocs == 1 && env == ""
}

// autoPolicy chooses how the PEs of a job wait, from facts: npes PEs
// on the node, localPEs of them in this process, jobCPUs CPUs usable by
// the job (the launcher's affinity, recorded in the control block; 0:
// unknown, then numCPU, this process's), and gomaxprocs, the threads
// that run this process's goroutines at once. The PEs are oversubscribed
// when they outnumber the job's CPUs, or when this process hosts more
// PEs than it runs goroutines at once; then a waiter hands its CPU over
// at once (wait.Auto). helpers are the leaders' transports on this
// machine (a job across hosts): when the PEs fit the CPUs only without
// them, a waiter spins briefly and then yields (wait.Shared). The mode
// follows from where the PEs are: goroutines of this process only,
// processes only, or both.
func autoPolicy(npes, helpers, localPEs, jobCPUs, numCPU, gomaxprocs int) wait.Policy {
	ncpu := runCPUs(npes, localPEs, jobCPUs, numCPU, gomaxprocs)
	mode := wait.Mixed
	switch {
	case localPEs <= 1:
		mode = wait.Processes
	case localPEs == npes:
		mode = wait.Goroutines
	}
	if npes <= ncpu && npes+helpers > ncpu {
		return wait.Shared(mode)
	}
	return wait.Auto(npes, ncpu, mode)
}

// runCPUs returns how many of the npes PEs can run at once, for the
// facts autoPolicy takes: the PEs are oversubscribed when it is below
// npes.
func runCPUs(npes, localPEs, jobCPUs, numCPU, gomaxprocs int) int {
	ncpu := jobCPUs
	if ncpu <= 0 {
		ncpu = numCPU
	}
	if localPEs > 1 && localPEs > gomaxprocs {
		ncpu = min(ncpu, npes*gomaxprocs/localPEs)
	}
	return ncpu
}

// hotPolicy returns the policy of a wait that reads the transport
// itself while its process talks to other hosts (see PE.waitSlow), for
// the same facts as autoPolicy, and whether it differs from
// autoPolicy's: the policy without the helpers, which such a wait does
// not need (a leader's transport wakes only to receive, and the wait
// receives). It differs where the helpers alone make the PEs share
// their CPUs (wait.Shared): a hot wait then spins as PEs that fit do,
// instead of yielding after a microsecond.
func hotPolicy(npes, helpers, localPEs, jobCPUs, numCPU, gomaxprocs int) (wait.Policy, bool) {
	pol := autoPolicy(npes, 0, localPEs, jobCPUs, numCPU, gomaxprocs)
	return pol, helpers > 0 && pol.Spin > autoPolicy(npes, helpers, localPEs, jobCPUs, numCPU, gomaxprocs).Spin
}

// bell returns how this process rings PE q's doorbell: with q's Notify
// when q's goroutines park here.
func (j *Job) bell(q int) wait.Bell {
	b := wait.Bell{Door: &j.ctl.Slot(q).Door}
	if i := q - j.firstPE; j.notify != nil && i >= 0 && i < j.localPEs {
		b.Local = &j.notify[i]
	}
	return b
}

// mapHeaps maps the heaps of the job into one reservation of address
// space, PE pe's at pe*span, where span is the heap's stride in the
// segment rounded up to heapAlign. When the stride is span already (a
// padded memfd: job.Create) the whole segment is mapped at once: one
// mmap per process whatever the number of PEs. Otherwise, and when that
// fails, each heap is mapped on its own. It returns why the heaps of
// peers that could not be mapped were not (they are reached with CMA),
// and an error when a local heap cannot be mapped or
// SHMEM_TRANSPORT=xpmem cannot be met.
//
// In a job that spans hosts (host lists this host's PEs) it also fills
// serve: under SHMEM_TRANSPORT=cma the heaps of this host's other
// processes are mapped too, for the leader's service only.
func (j *Job) mapHeaps(cfg Config, segs *job.Segments, host []int) (failed []string, err error) {
	align := heapAlign(int64(j.heapSize))
	span := (uintptr(segs.Stride) + align - 1) &^ (align - 1)
	if span > uintptr(math.MaxInt)/uintptr(j.npes) {
		return nil, fmt.Errorf("goshmem: %d heaps of %d bytes do not fit in the address space; lower SHMEM_SYMMETRIC_SIZE", j.npes, segs.Stride)
	}
	if j.window, err = sys.Reserve(int(span)*j.npes, align); err != nil {
		return nil, fmt.Errorf("goshmem: reserving address space for %d symmetric heaps of %d bytes: %w", j.npes, segs.Stride, err)
	}
	j.heaps = make([][]byte, j.npes)
	j.bases = make([]mem.Base, j.npes)
	j.serve, j.serveErr = make([]mem.Base, j.npes), make([]error, j.npes)
	onHost := make([]bool, j.npes)
	for _, q := range host {
		onHost[q] = true
	}
	fd := segs.Heaps.Fd()
	// used: what of each stride holds the heap and its team pool.
	used := uintptr(segs.Stride)
	if span == used && !segs.Heaps.Huge() {
		used = min(used, uintptr(job.StrideFor(int64(j.heapSize), int64(os.Getpagesize()))))
	}
	if span == uintptr(segs.Stride) && cfg.Transport != "cma" && cfg.mapFault == nil &&
		sys.MapFixed(fd, 0, j.window) == nil {
		for pe := 0; pe < j.npes; pe++ {
			j.heaps[pe] = j.window[uintptr(pe)*span:][:used:used]
			j.bases[pe] = mem.RegionOf(j.heaps[pe]).Base
			j.serve[pe] = j.bases[pe]
		}
		return nil, nil
	}
	for pe := 0; pe < j.npes; pe++ {
		local := pe >= j.firstPE && pe < j.firstPE+j.localPEs
		serveOnly := !local && cfg.Transport == "cma"
		if serveOnly && !onHost[pe] {
			continue
		}
		at := j.window[uintptr(pe)*span:][:used:used]
		var err error
		if cfg.mapFault != nil && !local {
			err = cfg.mapFault(pe)
		}
		if err == nil {
			err = sys.MapFixed(fd, segs.HeapOffset(pe), at)
		}
		if err == nil {
			j.serve[pe] = mem.RegionOf(at).Base
		} else {
			j.serveErr[pe] = err
		}
		if serveOnly {
			continue // the PEs of this process reach it through CMA
		}
		if err != nil {
			if local {
				return nil, fmt.Errorf("goshmem: mapping the symmetric heap of PE %d: %w", pe, err)
			}
			if cfg.Transport == "xpmem" {
				return nil, fmt.Errorf("goshmem: SHMEM_TRANSPORT=xpmem but the heap of PE %d cannot be mapped: %w", pe, err)
			}
			failed = append(failed, fmt.Sprintf("PE %d: %v", pe, err))
			continue
		}
		j.heaps[pe] = at
		j.bases[pe] = mem.RegionOf(at).Base
	}
	return failed, nil
}

// heapAlign is the alignment of the address at which every process
// maps every heap of size bytes (job.MapAlign): the smallest power of
// two that holds the heap, between 2 MiB (which also lets the kernel use
// huge pages) and job.MaxMapAlign (1 GiB). An offset aligned to up to
// that many bytes is aligned in every PE's mapping, which is what Align
// needs. It costs only address space, reserved at start-up.
func heapAlign(size int64) uintptr { return uintptr(job.MapAlign(size)) }

// attach maps a heap segment through the XPMEM model.
func attach(seg *shm.Segment, size int64, align uintptr) (*xpmem.Attachment, error) {
	acc, err := xpmem.Local(seg)
	if err != nil {
		return nil, err
	}
	defer acc.Release()
	return acc.AttachAligned(0, size, align)
}

// someUnmapped reports whether the process of some PE of this host
// could not map every peer's heap (its slot's Mapped is 2: CMA), so
// that the host's AMOs are emulated under the targets' locks. The slots
// of other hosts' PEs are never marked so here.
func (j *Job) someUnmapped() bool {
	for pe := 0; pe < j.npes; pe++ {
		if j.ctl.Slot(pe).Mapped.Load() == 2 {
			return true
		}
	}
	return false
}

// afterStart runs once per process after the start-up barrier: every
// PE's slot is filled in, so peers' pids and mapping results are known.
// A process of a multi-process job then starts watching the next
// process of the ring (watch.go).
func (j *Job) afterStart() {
	j.peersOnce.Do(func() {
		j.amoLocked = j.someUnmapped()
		if j.process {
			j.startRingWatch()
		}
	})
}

// eachHostPE calls f with every PE of this host, the PEs whose slots
// this host's control block holds.
func (j *Job) eachHostPE(f func(q int)) {
	if j.host != nil {
		for _, q := range j.host {
			f(q)
		}
		return
	}
	for q := range j.npes {
		f(q)
	}
}

// fail records a job failure (the first one wins) and wakes every PE of
// the node and every process's exit watcher. It wakes them also when
// the record was there already: its writer may have died before
// waking anyone.
func (j *Job) fail(kind uint32, pe, pid, code int) {
	j.ctl.Header.Abort.Set(kind, pe, pid, code)
	for q := 0; q < j.npes; q++ {
		wait.WakeAll(j.bell(q))
		wakeWatch(j.ctl.Slot(q))
	}
	if j.x != nil {
		j.x.q.Wake() // the leader forwards the failure to the other hosts
	}
}

func (j *Job) close() {
	j.closeOnce.Do(func() {
		if j.x != nil {
			j.x.shutdown() // its goroutines read the control block and heaps
		}
		j.stopWatchers() // they read the control block: before it is unmapped
		sys.Unreserve(j.window)
		j.ctlMap.Close()
	})
}
