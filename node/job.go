package node

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
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
	npes     int
	firstPE  int // first PE hosted here
	localPEs int
	heapSize uintptr
	ctl      *job.Control
	ctlMap   *shm.Mapping
	window   []byte     // the address space the heaps are mapped into
	heaps    [][]byte   // per PE: its heap and team pool; nil where not mapped
	bases    []mem.Base // per PE; nil where not mapped
	policy   wait.Policy

	transport Transport
	amoLocked bool
	placement []HeapPlacement // per local PE: SHMEM_HEAP_POLICY's outcome

	peersOnce sync.Once
	// procs is published once, after the start-up barrier; live() may
	// run concurrently (a PE still in that barrier) and sees nil until
	// then.
	procs atomic.Pointer[procTable]
	// lastLive is when live last checked the processes, in nanoseconds
	// since opened (monotonic); a PE claims a check by moving it.
	opened   time.Time
	lastLive atomic.Int64

	// process is set when the job is this process's (Main, Init): a
	// GlobalExit then ends the process. It is false for RunLocal.
	process bool

	closeOnce sync.Once
}

// procTable is what a process knows about the other PE processes.
type procTable struct {
	pids   []int // per PE
	pidfds []int // per PE in another process; -1 otherwise
	ownFds []int // the distinct pidfds, to close
}

// openJob maps the segments, sets the memory policy of the local PEs'
// heaps and prepares their slots. envNodes is GOSHMEM_NUMA_NODES ("" if
// unset or not applicable).
func openJob(cfg Config, segs *job.Segments, firstPE, localPEs int, envNodes string) (*Job, error) {
	j := &Job{cfg: cfg, npes: segs.NPEs, firstPE: firstPE, localPEs: localPEs,
		heapSize: uintptr(segs.HeapSize), opened: time.Now()}
	j.lastLive.Store(-int64(liveEvery))
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
	failed, err := j.mapHeaps(cfg, segs)
	if err != nil {
		j.close()
		return nil, err
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
	for pe := firstPE; pe < firstPE+localPEs; pe++ {
		s := j.ctl.Slot(pe)
		s.Pid.Store(int32(pid))
		s.Node.Store(int32(home[pe-firstPE] + 1))
		s.HeapAddr.Store(uint64(uintptr(j.bases[pe])))
		s.Mapped.Store(mapped)
		s.State.Store(job.StateRunning)
	}
	ncpu := int(j.ctl.Header.CPUs)
	if ncpu == 0 {
		ncpu = runtime.NumCPU()
	}
	j.policy = wait.Auto(j.npes, ncpu)
	if cfg.WaitSpin > 0 {
		j.policy.Spin = cfg.WaitSpin
	}
	if cfg.WaitYield > 0 {
		j.policy.Yield = cfg.WaitYield
	}
	if cfg.WaitSleep > 0 {
		j.policy.MaxSleep = cfg.WaitSleep
	}
	return j, nil
}

// mapHeaps maps the heaps of the job into one reservation of address
// space, PE pe's at pe*span, where span is the heap's stride in the
// segment rounded up to heapAlign: one mapping per PE, from the one
// heaps descriptor. It returns why the heaps of peers that could not be
// mapped were not (they are reached with CMA), and an error when a
// local heap cannot be mapped or SHMEM_TRANSPORT=xpmem cannot be met.
func (j *Job) mapHeaps(cfg Config, segs *job.Segments) (failed []string, err error) {
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
	fd := segs.Heaps.Fd()
	for pe := 0; pe < j.npes; pe++ {
		local := pe >= j.firstPE && pe < j.firstPE+j.localPEs
		if !local && cfg.Transport == "cma" {
			continue
		}
		at := j.window[uintptr(pe)*span:][:segs.Stride:segs.Stride]
		var err error
		if cfg.mapFault != nil && !local {
			err = cfg.mapFault(pe)
		}
		if err == nil {
			err = sys.MapFixed(fd, segs.HeapOffset(pe), at)
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
// maps every heap of size bytes: the smallest power of two that holds
// the heap, between 2 MiB (which also lets the kernel use huge pages)
// and job.MaxMapAlign (1 GiB). An offset aligned to up to that many bytes is aligned in
// every PE's mapping, which is what Align needs. It costs only address
// space, reserved and trimmed at start-up.
func heapAlign(size int64) uintptr {
	a := uintptr(2 << 20)
	for a < uintptr(size) && a < job.MaxMapAlign {
		a <<= 1
	}
	return a
}

// attach maps a heap segment through the XPMEM model.
func attach(seg *shm.Segment, size int64, align uintptr) (*xpmem.Attachment, error) {
	acc, err := xpmem.Local(seg)
	if err != nil {
		return nil, err
	}
	defer acc.Release()
	return acc.AttachAligned(0, size, align)
}

// afterStart runs once per process after the start-up barrier: every
// PE's slot is filled in, so peers' pids and mapping results are known.
func (j *Job) afterStart() {
	j.peersOnce.Do(func() {
		t := &procTable{pids: make([]int, j.npes), pidfds: make([]int, j.npes)}
		self := os.Getpid()
		byPid := map[int]int{}
		for pe := 0; pe < j.npes; pe++ {
			s := j.ctl.Slot(pe)
			t.pids[pe] = int(s.Pid.Load())
			t.pidfds[pe] = -1
			if s.Mapped.Load() == 2 {
				j.amoLocked = true
			}
			pid := t.pids[pe]
			if pid == self || pid <= 0 {
				continue
			}
			if fd, ok := byPid[pid]; ok {
				t.pidfds[pe] = fd
				continue
			}
			if fd, err := sys.PidfdOpen(pid); err == nil {
				t.pidfds[pe] = fd
				byPid[pid] = fd
				t.ownFds = append(t.ownFds, fd)
			}
		}
		j.procs.Store(t)
	})
}

// liveEvery is the shortest interval between two checks of the peers'
// processes by one process.
const liveEvery = 50 * time.Millisecond

// live checks, at most every liveEvery per process, that the processes
// of the other PEs still run; every waiting PE calls it after each
// sleep, so a death is seen within SHMEM_WAIT_SLEEP + liveEvery (a PE
// that wakes less than liveEvery after the last check sleeps once more).
// A process that is gone while one of its PEs has not finalized fails
// the job: the abort record is written (first failure wins) and every
// PE is woken.
func (j *Job) live() {
	t := j.procs.Load()
	if t == nil {
		return
	}
	now := int64(time.Since(j.opened))
	last := j.lastLive.Load()
	if now-last < int64(liveEvery) || !j.lastLive.CompareAndSwap(last, now) {
		return // checked recently, or another PE of this process checks now
	}
	for pe, fd := range t.pidfds {
		if fd < 0 || !sys.PidfdExited(fd) {
			continue
		}
		if j.ctl.Slot(pe).State.Load() == job.StateFinalized {
			continue
		}
		j.fail(job.AbortLost, pe, t.pids[pe], 0)
		return
	}
}

// fail records a job failure and wakes every PE of the node.
func (j *Job) fail(kind uint32, pe, pid, code int) {
	j.ctl.Header.Abort.Set(kind, pe, pid, code)
	for q := 0; q < j.npes; q++ {
		wait.WakeAll(&j.ctl.Slot(q).Door)
	}
}

func (j *Job) close() {
	j.closeOnce.Do(func() {
		sys.Unreserve(j.window)
		j.ctlMap.Close()
		if t := j.procs.Load(); t != nil {
			for _, fd := range t.ownFds {
				sys.Close(fd)
			}
		}
	})
}
