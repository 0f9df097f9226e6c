package node

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/symalloc"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/shm"
)

// ThreadLevel is an OpenSHMEM thread-support level.
type ThreadLevel int

const (
	ThreadSingle ThreadLevel = iota
	ThreadFunneled
	ThreadSerialized
	ThreadMultiple
)

func (l ThreadLevel) String() string {
	switch l {
	case ThreadSingle:
		return "SINGLE"
	case ThreadFunneled:
		return "FUNNELED"
	case ThreadSerialized:
		return "SERIALIZED"
	case ThreadMultiple:
		return "MULTIPLE"
	}
	return "ThreadLevel(?)"
}

// peer is what a PE needs to reach another PE of the node.
type peer struct {
	base mem.Base  // where this process maps the peer's heap; nil: CMA
	door wait.Bell // the peer's doorbell
}

// PE is one processing element. It is a value: a process may host
// several, and all of them may run concurrently. The methods of a PE
// may be called from any goroutine (the runtime provides
// ThreadMultiple); the default context's ordering guarantees, like
// OpenSHMEM's, are per calling thread of control.
type PE struct {
	job  *Job
	me   int
	npes int
	heap mem.Region // this PE's own heap, as mapped here
	// waitHeap is heap, or the empty region under SHMEM_DEBUG: the
	// inline fast paths of waits (InWaitHeap) then leave every
	// variable to the outlined checks, which look for one live
	// allocation.
	waitHeap mem.Region
	peers    []peer
	slot     *job.Slot
	door     wait.Bell // this PE's own doorbell, on which its waits sleep
	// nonzero is 1 from the PE's start on: the Quiet gate of its
	// contexts whose Quiet always takes the slow path (Ctx.quietGate).
	nonzero atomic.Uint32
	policy  *wait.Policy
	thread  ThreadLevel

	alloc *symalloc.Allocator
	// isolated holds the heap offsets of the live blocks of
	// AllocIsolated (MallocWithHints), which Realloc keeps isolated.
	isolated map[uintptr]bool
	// collScratch is this PE's part of the collectives' symmetric
	// scratch, CollScratchBlocks blocks (CollScratch), nil in a job on
	// one host.
	collScratch []byte

	// barrier: out[r] is the flag this PE sets in round r, in[r] the one
	// it waits on.
	barOut  []*shm.Uint32
	barIn   []*shm.Uint32
	barDoor []wait.Bell
	// barTo[r] is round r's partner when it is on another host (its
	// barOut[r] is then nil, and barCtl[r] the flag's offset in the
	// control block), -1 otherwise.
	barTo  []int
	barCtl []uintptr
	x      *xpe // operations on other hosts (nil: the job is on one host)
	epoch  uint32
	// syncs counts this PE's barriers of the whole job (sync), and
	// syncWait is the number of the one it is in (0: none): a waiter
	// whose peer finalized after fewer fails the job (checkFinalized).
	// Atomic because another goroutine of the PE may be waiting too.
	syncs    uint64
	syncWait atomic.Uint64
	// hier is the world barrier of a job across hosts (nil: on one
	// host, the flat or central barrier).
	hier *hierBarrier
	// the central barrier (Job.central): arrivals counts every PE's
	// arrivals at every barrier (PE 0's Slot.Epoch), and this PE has
	// passed that many barriers. With CPU groups (see cpuGroups),
	// arrivals counts groups, group the arrivals of this PE's group
	// (its lowest PE's Slot.Group), of groupSize PEs out of groups.
	arrivals  *atomic.Uint64
	passed    uint64
	grouped   int8 // 1: CPU groups; -1: none (set at start-up, see cpuGroups)
	group     *atomic.Uint64
	groupSize uint64
	groups    uint64
	spin      wait.Policy // the policy of a PE whose CPU nobody else needs
	mates     []int       // the other PEs of this PE's CPU group (nil: no groups)

	ctx       Ctx // the default context
	finalized atomic.Bool
	// finals is the header's Finalized and Finalizing counts as one
	// word: a completed barrier (sync, checkFinalizeMet) and a wait's
	// slow path (warnLone) test it.
	finals *uint64

	extOnce sync.Once
	ext     any // package goshmem's per-PE state (teams)

	// shareable are the PE's live contexts made without CtxPrivate, and
	// atFinalize what the API layer runs at Finalize (OnFinalize):
	// Finalize destroys every team the program made, and so every
	// shareable context (OpenSHMEM 1.5, shmem_finalize).
	endMu      sync.Mutex
	shareable  map[weak.Pointer[Ctx]]struct{}
	atFinalize []func()
	// teamFinal is the API layer's check of its teams against PEs
	// that entered Finalize (SetTeamFinal; nil before it has teams).
	teamFinal atomic.Pointer[TeamFinal]

	task tasks // tasks it executes and steals (task.go)

	// copier makes the large copies of this PE's puts and gets
	// (CopyLarge).
	copier *mem.Tuner
	// shareCopier chooses the kernel of this PE's shared copies
	// (sharecopy.go), over a wider band than copier's.
	shareCopier *mem.Tuner

	// anyTurn is where the next search for any satisfying element
	// starts (AnyStart). Alone on its cache line: a loop polling TestAny
	// bumps it, and the fields above are read by every put.
	_       [shm.CacheLine]byte
	anyTurn atomic.Uint32
	_       [shm.CacheLine - 4]byte
}

func newPE(j *Job, me int) *PE {
	p := &PE{job: j, me: me, npes: j.npes, policy: &j.policy, thread: ThreadMultiple}
	p.heap = mem.Region{Base: j.bases[me], Size: j.heapSize}
	if !j.cfg.Debug {
		p.waitHeap = p.heap
	}
	p.copier = mem.NewTuner(mem.DefaultCopyPlan(), !j.cfg.CopyNoAdapt)
	p.slot = j.ctl.Slot(me)
	p.door = j.bell(me)
	p.peers = make([]peer, j.npes)
	for q := range p.peers {
		base := j.bases[q]
		if j.cfg.Transport == "cma" && q != me {
			base = nil // every peer through process_vm_readv/writev, even in this process
		}
		p.peers[q] = peer{base: base, door: j.bell(q)}
	}
	if j.x != nil {
		p.x = j.x.newXpe(me)
	}
	for r := 0; r < j.ctl.Rounds; r++ {
		partner := (me + 1<<r) % j.npes
		out, to := j.ctl.Flag(partner, r), -1
		if j.x != nil && j.x.remote(partner) {
			out, to = nil, partner
		}
		p.barOut = append(p.barOut, out)
		p.barTo = append(p.barTo, to)
		p.barCtl = append(p.barCtl, j.ctlOffset(j.ctl.Flag(partner, r)))
		p.barIn = append(p.barIn, j.ctl.Flag(me, r))
		p.barDoor = append(p.barDoor, j.bell(partner))
	}
	if j.x != nil && len(j.x.cl.Leaders) > 1 && j.cfg.BarrierAlgorithm != "dissemination" {
		p.hier = newHierBarrier(j, j.x, me)
	}
	p.arrivals = &j.ctl.Slot(0).Epoch
	p.alloc = symalloc.New(j.heapSize, allocAlign)
	if j.x != nil {
		// The first allocation of every PE, so at the same offset
		// everywhere (SOS also takes its teams' pSync arrays from the
		// symmetric heap at start-up); a heap too small for it leaves
		// the collectives their flat algorithms. Only across hosts:
		// on one host the user gets the whole heap.
		size := CollScratchSize(j.npes) * CollScratchBlocks
		if off, err := p.alloc.Alloc(size, allocAlign); err == nil && off != symalloc.NoOffset {
			p.collScratch = mem.ByteSlice(p.heap.Base, off, int(size))
		}
	}
	p.nonzero.Store(1)
	p.finals = mem.U64(&j.ctl.Header.Finalized) // (Finalizing follows it: job's TestFieldLines)
	p.ctx = Ctx{pe: p, peers: p.peers, isDefault: true, slow: j.cfg.Debug, quietGate: &j.ctl.Header.Abort.State}
	if p.x != nil {
		p.ctx.opts = ctxHosts
		p.ctx.quietGate = &p.nonzero
		p.ctx.x = j.x.newCtxHosts()
	}
	p.initTasks()
	p.initShare()
	return p
}

// CollScratchSize is the size of a PE's block of the collectives'
// symmetric scratch in a job of npes PEs that spans hosts, taken from
// the symmetric heap at start-up: a uint64 per PE (Collect's lengths), then
// CollScratchData bytes (the small collectives that gather as a
// bitwise or reduction: Collect's lengths, scans, Alltoall).
func CollScratchSize(npes int) uintptr {
	return (uintptr(npes)*8+shm.CacheLine-1)&^(shm.CacheLine-1) + CollScratchData
}

// CollScratchData is the size of the data part of CollScratch.
const CollScratchData = 1 << 10

// CollScratchBlocks is the number of blocks of the collectives'
// symmetric scratch: the team layer gives one to each team that spans
// hosts while it has one free on every member, so that collectives on
// different teams can run at once in goroutines of one PE (the
// specification allows it); a team without one uses the algorithms
// that need no scratch.
const CollScratchBlocks = 8

// CollScratch returns block b of this PE's part of the collectives'
// symmetric scratch (CollScratchSize bytes at the same offset of every
// PE's heap), or nil when b is not a block, the job runs on one host or
// the heap had no room for the scratch. A team's collectives use its
// block one at a time; a collective's last access to another member's
// block happens before that member returns from it.
func (p *PE) CollScratch(b int) []byte {
	if p.collScratch == nil || b < 0 || b >= CollScratchBlocks {
		return nil
	}
	size := len(p.collScratch) / CollScratchBlocks
	return p.collScratch[b*size : (b+1)*size : (b+1)*size]
}

// allocAlign is the alignment of every symmetric allocation: a cache
// line, so that separately allocated objects never share one.
const allocAlign = shm.CacheLine

// MyPE returns this PE's number (shmem_my_pe).
func (p *PE) MyPE() int { return p.me }

// NPEs returns the number of PEs in the job (shmem_n_pes).
func (p *PE) NPEs() int { return p.npes }

// Ctx returns the PE's default context (SHMEM_CTX_DEFAULT).
func (p *PE) Ctx() *Ctx { return &p.ctx }

// Quiet completes every put, AMO and signal this PE issued on its
// default context (shmem_quiet); it is p.Ctx().Quiet().
func (p *PE) Quiet() { p.ctx.Quiet() }

// Fence orders the puts, AMOs and signals this PE issued on its default
// context to each PE (shmem_fence); it is p.Ctx().Fence().
func (p *PE) Fence() { p.ctx.Fence() }

// ThreadLevel returns the thread level provided (shmem_query_thread).
func (p *PE) ThreadLevel() ThreadLevel { return p.thread }

// HeapSize returns the size of each PE's symmetric heap in bytes.
func (p *PE) HeapSize() int { return int(p.heap.Size) }

// Transport reports how this PE's process reaches its peers' heaps.
func (p *PE) Transport() Transport { return p.job.transport }

// WaitFenced reports whether this PE's waits fence with membarrier
// before they sleep, so that flags are published with plain stores
// (SHMEM_WAIT_FENCE; internal/wait's doorbell contract).
func (p *PE) WaitFenced() bool { return p.policy.Fenced }

// PEAccessible reports whether pe is a valid PE that this PE can reach
// (shmem_pe_accessible): every PE of the job is, by mapping or CMA, or
// through the hosts' leaders.
func (p *PE) PEAccessible(pe int) bool { return uint(pe) < uint(p.npes) }

// AddrAccessible reports whether the object at addr (in this PE's heap)
// can be reached on pe (shmem_addr_accessible).
func (p *PE) AddrAccessible(addr uintptr, pe int) bool {
	return p.PEAccessible(pe) && p.heap.Contains(addr)
}

// PtrAccessible reports whether PE pe's heap is mapped into this
// process, so that Ptr returns a direct pointer into it.
func (p *PE) PtrAccessible(pe int) bool {
	return uint(pe) < uint(p.npes) && p.peers[pe].base != nil
}

// Translate translates [addr, addr+n) of this PE's heap into PE pe's
// heap as mapped in this process (the base of that mapping and the
// offset); ok is false when it cannot. It is the core of Ptr.
func (p *PE) Translate(addr, n uintptr, pe int) (mem.Base, uintptr, bool) {
	off, in := p.heap.Offset(addr, n)
	if !in || uint(pe) >= uint(len(p.peers)) || p.peers[pe].base == nil {
		return nil, 0, false
	}
	return p.peers[pe].base, off, true
}

// SyncAll waits until every PE has called SyncAll (shmem_sync_all).
// When the PEs fit their CPUs it is a dissemination barrier on per-PE
// flags, each alone on its cache line: round r tells PE me+2^r and
// waits for PE me-2^r, so no word is written by more than one PE and no
// central counter is contended. When they outnumber them it is a
// central counter barrier (see centralSync).
func (p *PE) SyncAll() { p.sync("SyncAll") }

// SyncAs is SyncAll on behalf of routine (named if the job fails): the
// world team's barrier (TeamSync, TeamBarrier and the collectives'
// synchronization on TeamWorld) is this one.
func (p *PE) SyncAs(routine string) { p.sync(routine) }

// sync is SyncAll on behalf of routine (named if the job fails).
func (p *PE) sync(routine string) {
	if p.finalized.Load() {
		afterFinalize(routine, p.me)
	}
	p.syncs++
	p.syncWait.Store(p.syncs)
	p.syncIn(routine)
	p.syncWait.Store(0)
	if atomic.LoadUint64(p.finals) != 0 && routine != "Finalize" {
		p.checkFinalizeMet(routine)
	}
}

// loneWarnAfter is how long a wait of the program (WaitUntil, a
// signal, a lock) waits while every other PE is in Finalize before it
// says so (PE.warnLone).
const loneWarnAfter = 5 * time.Second

// loneWait is what warnLone keeps per wait.
type loneWait struct {
	since  time.Time // when every other PE was first seen in Finalize
	warned bool
}

// warnLone prints, once per wait, that a wait of the program (not one
// of the runtime's synchronization, whose checks fail the job) has
// waited loneWarnAfter while every other PE of the job had entered
// Finalize, after which no PE puts, signals or updates again: only
// this PE's own goroutines can still satisfy it, and most likely the
// program hangs because a PE returned early. It is a warning, not a
// failure: a program may satisfy the wait by a store of its own.
//
//go:noinline
func (p *PE) warnLone(routine string, l *loneWait) {
	if p.slot.State.Load() != job.StateRunning {
		l.warned = true // its own Finalize's waits: the checks there fail the job
		return
	}
	for q := range p.npes {
		if st := p.job.ctl.Slot(q).State.Load(); q != p.me && st != job.StateFinalizing && st != job.StateFinalized {
			l.since = time.Time{}
			return
		}
	}
	after, out := loneWarnAfter, io.Writer(os.Stderr)
	if p.job.cfg.loneWarn > 0 {
		after, out = p.job.cfg.loneWarn, p.job.cfg.loneOut
	}
	switch {
	case p.npes == 1:
		l.warned = true // nobody else could ever have satisfied it
	case l.since.IsZero():
		l.since = time.Now()
	case time.Since(l.since) >= after:
		l.warned = true
		fmt.Fprintf(out, "goshmem: warning: %s on PE %d has waited %v while every other PE has entered Finalize, after which they put, signal and update nothing: only PE %d's own goroutines can still satisfy it (did a PE return early from the function Main or Run runs?)\n",
			routine, p.me, after.Round(time.Millisecond), p.me)
	}
}

// checkFinalizeMet fails the job when the barrier this PE just left
// (not Finalize's) was completed by another PE's Finalize: a PE that
// entered Finalize stores first how many barriers of the job it will
// have made (FinalSyncs, before its arrival), so a barrier that met it
// has that number. The program's PEs made different collective calls;
// without this the barrier would return as if every PE had called it,
// and the job would fail at the next barrier, or hang if this PE then
// waited for that PE in a WaitUntil. A PE of another host has its
// slot here marked (xFinal) before any host hears of its arrival
// (xpublishFinal).
//
//go:noinline
func (p *PE) checkFinalizeMet(routine string) {
	e := p.syncs
	for q := range p.npes {
		s := p.job.ctl.Slot(q)
		if st := s.State.Load(); q != p.me && (st == job.StateFinalizing || st == job.StateFinalized) && s.FinalSyncs.Load() == e {
			p.job.fail(job.AbortFinalizeMet, q, int(s.Pid.Load()), int(min(e, math.MaxInt32)))
			p.checkAbort(routine)
		}
	}
	// Another PE may have found it first: the job has failed, and the
	// finalizing PE, stopped in its Finalize, is dead now (StateDead),
	// so the loop above no longer sees it.
	p.checkAbort(routine)
}

// syncIn is sync's barrier.
func (p *PE) syncIn(routine string) {
	if p.x != nil {
		// Across hosts a PE arrives only once its own writes on other
		// hosts are complete (one round trip to each host it wrote
		// since its last Quiet, none if it wrote nowhere). The
		// collectives put and then sync without a Quiet, and the
		// barrier's flags reach a host along other connections than
		// the puts: from 4 hosts up, a host could hear of every
		// arrival while a put to it was still unread in its socket
		// (the flat barrier as much as the hierarchical one; found by
		// xhost-teams on 4 hosts of 1 PE, whose collect and alltoall
		// read stale blocks). So SyncAll across hosts also completes
		// the PE's puts, which the specification allows.
		p.xquiet(nil)
	}
	if p.hier != nil {
		p.hierSync(routine)
		return
	}
	if p.job.central {
		p.centralSync(routine)
		return
	}
	p.epoch++
	e := p.epoch
	for r, out := range p.barOut {
		if out != nil {
			out.Store(e) // an XCHG: plain stores measured no faster where the PE waits next
			wait.Ring(p.barDoor[r])
		} else {
			p.xctl(routine, p.barTo[r], p.barCtl[r], e)
		}
		in := &p.barIn[r].Uint32
		if int32(in.Load()-e) < 0 {
			p.waitFlag(routine, in, e)
		}
	}
}

// centralSync is the central counter barrier: every PE adds one to a
// single counter that only grows (npes per barrier), and leaves when it
// has reached npes times the barriers this PE has passed; the last
// arriver rings every doorbell. With more PEs than CPUs every PE then
// needs a CPU once to arrive and once to leave, where the dissemination
// barrier's rounds each wait for one given peer, which may need a turn
// on the CPU of its own. The atomic add orders the arrival before the
// ring (the doorbell contract's Dekker handshake), so no wake-up is
// lost.
//
// A later barrier's arrivals count towards an earlier one, which is
// sound only while every PE leaves a barrier by its end: a PE that left
// by a *JobError (the job failed) must not arrive again, or it would
// complete the barrier the others still wait in. So a PE does not
// arrive in a failed job (like every wait, the barrier then panics).
//
// When every PE's process is bound (oshrun --bind-to core with more PEs
// than cores), the PEs sharing a CPU (a set of CPUs) form a group: a PE
// arrives at its group's counter, and the last of a group arrives at
// the central counter for the group. A PE whose group has not all
// arrived waits yielding its CPU, since a group mate needs it; the last
// of a group waits spinning first (the fitting job's policy), since
// nobody else on its CPU has anything to do before the release, so
// yielding would only pass the CPU back and forth between PEs that
// wait. Each CPU then changes PEs about once per barrier. The groups
// come from the CPUs the PEs published before the start-up barrier, so
// every PE makes the same ones whatever the PEs do to their binding
// later (which only costs speed).
func (p *PE) centralSync(routine string) {
	p.CheckAbort(routine)
	p.passed++
	if p.grouped <= 0 {
		all := p.passed * uint64(p.npes)
		if p.arrivals.Add(1) == all {
			p.ringAll()
			return
		}
		if int64(p.arrivals.Load()-all) < 0 {
			p.waitCount(routine, p.arrivals, all, p.policy)
		}
		return
	}
	all := p.passed * p.groups
	if p.group.Add(1) != p.passed*p.groupSize {
		// A group mate has yet to arrive: it needs this CPU.
		if int64(p.arrivals.Load()-all) < 0 {
			p.waitCount(routine, p.arrivals, all, p.policy)
		}
		return
	}
	if p.arrivals.Add(1) == all {
		p.ringAll()
		return
	}
	if int64(p.arrivals.Load()-all) < 0 {
		p.waitCount(routine, p.arrivals, all, &p.spin)
	}
}

// ringAll rings every PE's doorbell: the last arrival at a central
// barrier releases it.
func (p *PE) ringAll() {
	for q := range p.peers {
		wait.Ring(p.peers[q].door)
	}
}

// cpuGroups sets up the CPU groups of the central barrier: when every
// PE published the CPU set its process may run on (job.Slot.CPUs),
// there are several sets and some set holds several PEs, the PEs of
// each set are a group, counted in the Slot.Group of its lowest PE.
// Otherwise (some PE hosted with others or its set unknown, every PE
// alone on its set, or one set for all) there are none. Sets are
// assumed disjoint or equal, as a launcher's bindings are: if they
// overlap the barrier stays correct, only slower.
//
//go:noinline
func (p *PE) cpuGroups() {
	p.grouped = -1
	first := make(map[uint32]int) // set -> lowest PE on it
	var size uint64
	var mine uint32
	for q := 0; q < p.npes; q++ {
		c := p.job.ctl.Slot(q).CPUs.Load()
		if c == 0 {
			return
		}
		if _, ok := first[c]; !ok {
			first[c] = q
		}
		if q == p.me {
			mine = c
		}
	}
	if len(first) == p.npes || len(first) == 1 {
		return
	}
	for q := 0; q < p.npes; q++ {
		if p.job.ctl.Slot(q).CPUs.Load() == mine {
			size++
			if q != p.me {
				p.mates = append(p.mates, q)
			}
		}
	}
	p.grouped = 1
	p.group = &p.job.ctl.Slot(first[mine]).Group
	p.groupSize = size
	p.groups = uint64(len(first))
	p.spin = wait.Auto(1, 1, p.policy.Mode)
	p.spin.MaxSleep = p.policy.MaxSleep
	p.spin.Abort = p.policy.Abort
}

// CPUMates returns the other PEs that share this PE's CPU set when
// every PE is a process bound to a set and some set holds several PEs
// (the central barrier's CPU groups), nil otherwise. Collectives use it
// to wait without yielding once every PE of the CPU waits too. It must
// be called after Init (the sets are published before the start-up
// barrier); the slice must not be modified.
func (p *PE) CPUMates() []int { return p.mates }

// WaitSpinning is WaitSlow for a PE whose CPU no other PE needs (its
// CPU mates all wait too): it spins first, as when PEs fit their CPUs,
// instead of yielding at once.
//
// Its condition must read only control words, as WaitControl's.
func (p *PE) WaitSpinning(routine string, cond func() bool) {
	pol := p.policy
	if p.grouped > 0 {
		pol = &p.spin
	}
	p.waitLoop(routine, pol, true, cond)
}

// waitCount waits until the central barrier's counter w has reached v.
// Control-only, as waitFlag: only arrivals (atomic adds) and the last
// arrival's Ring change it.
//
//go:noinline
func (p *PE) waitCount(routine string, w *atomic.Uint64, v uint64, pol *wait.Policy) {
	p.waitLoop(routine, pol, true, func() bool { return int64(w.Load()-v) >= 0 })
}

// BarrierAll completes this PE's outstanding operations on the default
// context and then synchronizes all PEs (shmem_barrier_all).
func (p *PE) BarrierAll() {
	p.ctx.Quiet()
	p.sync("BarrierAll")
}

// waitFlag waits until the word w has reached e (counting with
// wrap-around). w is a control word (a barrier flag, a team word, a mailbox's
// sequence number), which only the runtime's synchronization writes,
// ringing with wait.Ring: the wait is control-only, so puts and AMOs
// that other PEs stream into this PE's heap meanwhile do not wake it
// (wait.RingData; internal/wait, "Control-only sleepers").
//
//go:noinline
func (p *PE) waitFlag(routine string, w *atomic.Uint32, e uint32) {
	p.WaitControl(routine, func() bool { return int32(w.Load()-e) >= 0 })
}

// WaitSlow is the outlined part of every wait: spin, yield, sleep on
// this PE's doorbell. It returns right after a call of cond that
// reported true, and calls cond no more, so cond may record what it saw.
//
// A failure of the job is noticed every 64 spins and after every yield
// and every sleep, by one load of the abort record: whoever records a
// failure (a process's ring watcher that saw a peer process die, the
// launcher, a PE that panicked or called GlobalExit) rings every
// doorbell, which ends the sleep at once (see watch.go). The sleep's
// timeout (the policy's MaxSleep, SHMEM_WAIT_SLEEP) only bounds how late
// a wake-up lost to a plain store (put) can be.
func (p *PE) WaitSlow(routine string, cond func() bool) { p.waitSlow(routine, p.policy, cond) }

// WaitControl is WaitSlow for a condition that reads only control
// words: words that only the runtime's synchronization writes, with an
// atomic store or add (or PE.Publish) before it wakes this PE (Wake), as
// the collectives' dropbox sequence numbers and done words are. Puts
// and AMOs into this PE's heap then do not wake the wait, and goroutine
// PEs park without a timer (internal/wait, "Control-only sleepers").
// A condition that reads anything a put, an AMO or a signal can write
// must use WaitSlow.
func (p *PE) WaitControl(routine string, cond func() bool) {
	p.waitLoop(routine, p.policy, true, cond)
}

// waitSlow is WaitSlow with the policy pol.
//
// On a leader of a job that spans hosts, the wait also reads the
// transport's sockets itself (internode.Poller) and sends what its
// host's PEs queued if the progress goroutine is not at it (xhost's
// pollWait), every 64 spins and after every yield and sleep, but not in
// its first 64 polls (while its process talks to other hosts, in the
// last millisecond: xhost.talking, also every 8 spins; otherwise it
// reads the sockets only at every 8th yield): what another host sends,
// even to this PE, then
// needs no receiving goroutine to be woken, nor a host-mate's frame the
// progress goroutine, while a wait that an on-host store ends within
// about a microsecond never pays for a system call. Before it waits, a
// PE whose put the transport holds back has it written (Deferrer); a
// leader that polled and now goes to sleep tells the transport
// (PollIdle), whose receiver then reads for it.
//
// Every 64 spins, and after every yield and sleep, while a PE of its
// host executes a task with chunks left, the wait runs one of them
// (steal, task.go) and checks cond again: a satisfied wait is delayed
// by one chunk at most. With no such task, the check costs one load of
// a line that only task starts and ends write.
func (p *PE) waitSlow(routine string, pol *wait.Policy, cond func() bool) {
	p.waitLoop(routine, pol, false, cond)
}

// waitLoop is waitSlow; ctl marks a control-only wait (waitFlag).
func (p *PE) waitLoop(routine string, pol *wait.Policy, ctl bool, cond func() bool) {
	if p.x != nil && p.x.held.Load() {
		p.x.held.Store(false)
		p.job.x.kick() // no wait may depend on a frame held back
	}
	abort := &p.job.ctl.Header.Abort.State
	polled := false
	board := p.task.from.Load()
	stole := false
	// hot: this PE polls and its process talks to other hosts, so its
	// spins read the sockets every 8 polls rather than every 64
	// (xhost.talking); looked at again every 64 polls. A hot wait
	// spins as long as PEs that fit their CPUs do (Job.hotPolicy),
	// where the policy yields early so that woken transport helpers get
	// a CPU: the answer it waits for comes through its own polls.
	hot := p.x != nil && p.job.x.polls && p.job.x.talking()
	if hot && pol == &p.job.policy && p.job.hot {
		pol = &p.job.hotPolicy
	}
	b := wait.Start(pol)
	if ctl {
		b.ControlOnly()
	}
	var lone loneWait
	for n := 0; !cond(); n++ {
		if stole {
			// It ran a chunk: look for the next one at once, not 64
			// spins later (fine chunks would go one per spin round).
			if stole = board.Load() != 0 && p.steal(); stole {
				continue
			}
			b = wait.Start(pol) // busy until now: idle from here
			if ctl {
				b.ControlOnly()
			}
		}
		ph := b.Pause()
		if ph == wait.Spinning && n&63 != 0 {
			// Tasks, shared copies above all, are looked for at every
			// spin (one load of a line that changes only when a task
			// opens or closes): a thief's first claim of a 64 KiB
			// copy came 145-155 ns after its publication when it looked
			// every 8 spins, 125 ns at every spin (put_bw, 2 PEs, fast
			// state), and a thief that comes a microsecond late finds
			// the copy done.
			if board != nil && board.Load() != 0 && p.steal() {
				stole = true
				continue
			}
			if hot && n&7 == 0 && p.job.x.pollWait(true) && cond() {
				return
			}
			continue
		}
		if board != nil && board.Load() != 0 && p.steal() {
			stole = true
			continue
		}
		if ph == wait.Sleeping {
			if polled {
				// Asleep, this PE reads no socket: the transport's
				// own receiver takes over at once.
				p.job.x.pollIdle()
				polled = false
			}
			// A PE that enters or ends Finalize rings every doorbell
			// of its host, so that waiters run the checks below; its
			// ring may come before this one registers, and the sleep
			// of a control-only wait in process has no timer. So the
			// sleep's re-check also counts those entries and exits
			// (atomic adds before the ring: the handshake of
			// internal/wait holds).
			ends := p.finalEvents()
			if b.Sleep(p.door, func() bool { return cond() || p.finalEvents() != ends }) && cond() {
				return
			}
		}
		if abort.Load() != 0 {
			p.checkAbort(routine)
		}
		if p.syncWait.Load() != 0 && p.job.ctl.Header.Finalized.Load() != 0 {
			p.checkFinalized(routine)
		}
		if !ctl && !lone.warned && atomic.LoadUint64(p.finals) != 0 {
			p.warnLone(routine, &lone)
		}
		if h := p.job.ctl.Header; h.Finalizing.Load() != 0 {
			p.checkTeamsFinal(routine)
			if h.Destroys.Load() != h.Destroyed.Load() && p.slot.State.Load() == job.StateFinalizing {
				p.checkTeamsDestroyed(routine)
			}
		}
		if p.x != nil && n > 0 && p.job.x.polls {
			polled = true
			hot = p.job.x.talking()
			if p.job.x.pollWait(hot || n%netIdleEvery == 0) && cond() {
				return
			}
		}
	}
}

// startSleep is the longest sleep of a PE in the start-up barrier, and
// so how long a death there may go unnoticed without a launcher.
const startSleep = time.Second

// syncStart is the start-up barrier (SyncAll's dissemination barrier).
// Processes start one after the other, so PEs may wait in it for long;
// its flags are set with atomic stores, so no wake-up is lost (see
// internal/wait), and a waiter sleeps up to startSleep rather than
// SHMEM_WAIT_SLEEP: N waiters waking every few milliseconds cost
// CPU that the processes still starting need. Before it ends the pids
// of the peers are not all known, so there is no ring watcher yet:
// after each sleep the waiter checks processes it can see (startCheck)
// and fails the job if one has exited. A death in the barrier is so
// seen within about startSleep, without a launcher; oshrun sees it at
// once (and a process that dies before it has published its pid is
// only seen by the launcher).
func (p *PE) syncStart() {
	p.epoch++
	e := p.epoch
	pol := *p.policy
	pol.MaxSleep = max(pol.MaxSleep, startSleep)
	pol.MinSleep = pol.MaxSleep
	for r, out := range p.barOut {
		if out != nil {
			out.Store(e) // an XCHG: plain stores measured no faster where the PE waits next
			wait.Ring(p.barDoor[r])
		} else {
			p.xctl("Init", p.barTo[r], p.barCtl[r], e)
		}
		in := &p.barIn[r].Uint32
		if int32(in.Load()-e) >= 0 {
			continue
		}
		from := (p.me - 1<<r%p.npes + p.npes) % p.npes
		cond := func() bool { return int32(in.Load()-e) >= 0 }
		b := wait.Start(&pol)
		for !cond() {
			if b.Pause() == wait.Sleeping {
				if b.Sleep(p.door, cond) {
					break
				}
				p.startCheck(from)
			}
			if p.job.ctl.Header.Abort.State.Load() != 0 {
				p.checkAbort("Init")
			}
		}
	}
}

// startCheck is what a PE waiting in the start-up barrier for PE from
// checks after each sleep: only the processes of its own host, the
// pids in this host's control block (another host's slots hold none).
//
//   - On one host: the process of from, the PE it waits for in this
//     round. Every dead PE is so seen: the barrier cannot complete
//     without it, so the PEs stuck wait, round after round, on
//     earlier rounds of other PEs, down to the one that waits on the
//     dead PE directly.
//   - Across hosts, that chain may leave the host: the PE that waits on
//     a dead PE directly may be on another host, which cannot check
//     it. So the leader PE, which carries its host's traffic, checks
//     every PE of its host (its host-mates' deaths keep the barrier
//     from completing, so it waits too), and fails the job, which its
//     progress goroutine forwards to the other hosts' leaders; a
//     non-leader checks from when from is on its host, and its leader
//     otherwise (a dead leader forwards nothing). The other hosts see a
//     dead leader through their connection to it: the PE before it in
//     PE order, on another host, dials it in the first round.
//
// That is one check per sleep of startSleep, and on a leader one per
// PE of its host: a few system calls a second.
func (p *PE) startCheck(from int) {
	j, x := p.job, p.job.x
	if x == nil {
		j.checkPeer(from)
		return
	}
	leader := x.cl.Leaders[x.host]
	switch {
	case p.me == leader:
		for _, q := range x.local {
			j.checkPeer(q) // (not itself: checkPeer skips this process)
		}
	case x.remote(from):
		j.checkPeer(leader)
	default:
		j.checkPeer(from)
	}
}

// checkFinalized fails the job when this PE waits in a barrier of the
// whole job (sync) that a PE will never join: one that finalized after
// fewer of them. It runs on the slow path of a wait only once some PE
// has finalized; Finalize rings every doorbell of its host, so a
// sleeper looks at once. A PE of another host has no state here until
// it enters Finalize: then its host tells this one how many barriers
// it will have made, into its slot here (xpublishFinal), and this
// host's sleepers are woken.
//
//go:noinline
func (p *PE) checkFinalized(routine string) {
	e := p.syncWait.Load()
	for q := range p.npes {
		s := p.job.ctl.Slot(q)
		if s.State.Load() == job.StateFinalized && s.FinalSyncs.Load() < e {
			p.job.fail(job.AbortFinalized, q, int(s.Pid.Load()), int(min(s.FinalSyncs.Load(), math.MaxInt32)))
			p.checkAbort(routine)
		}
	}
}

// TeamFinal is how the API layer, which keeps the teams, lets a PE
// notice a member that entered Finalize while it waits in a collective
// call on their team that the member never made (the world team's
// barriers have checkFinalized): without it the two wait for each
// other for ever, the member in Finalize's barrier.
//
//   - Publish runs first in Finalize: it stores, in a word of each of
//     the PE's teams' slots, how many collective calls the PE made on
//     that team (all it will ever make). The PE then becomes
//     StateFinalizing and wakes its host's sleepers.
//   - Check runs on the slow path of a wait while some PE of the host
//     is in Finalize (and this one is not): for each of this PE's
//     teams, a member that entered Finalize having made fewer calls
//     on it than this PE never makes the one this PE is in. Check then
//     calls FailTeamFinal. In a program whose PEs make the same
//     collective calls no member has made fewer, so Check never fails
//     it, whatever this PE waits for.
//   - Destroyed runs on the slow path of a wait of this PE while it is
//     in Finalize and some TeamDestroy of the host is under way: a
//     member of a team this PE never destroyed that waits in its
//     TeamDestroy waits for a call this PE never makes (Check leaves
//     teams being destroyed out). Destroyed then calls FailTeamFinal
//     for this PE.
type TeamFinal struct {
	Publish   func()
	Check     func(routine string)
	Destroyed func(routine string)
}

// SetTeamFinal installs the API layer's TeamFinal (once it has teams).
func (p *PE) SetTeamFinal(f *TeamFinal) { p.teamFinal.Store(f) }

// finalEvents counts the entries into Finalize and the ends of it of
// this host's PEs, and the TeamDestroy calls they started.
func (p *PE) finalEvents() uint32 {
	h := p.job.ctl.Header
	return h.Finalizing.Load() + h.Finalized.Load() + h.Destroys.Load()
}

// checkTeamsDestroyed is the wait's call of TeamFinal.Destroyed.
//
//go:noinline
func (p *PE) checkTeamsDestroyed(routine string) {
	if f := p.teamFinal.Load(); f != nil && f.Destroyed != nil {
		f.Destroyed(routine)
	}
}

// DestroyBegins and DestroyEnds bracket a TeamDestroy of this PE (the
// API layer's): a PE of the host in Finalize that never destroyed the
// team must learn that a member waits for it there (TeamFinal.Destroyed);
// one may sleep in Finalize's barrier, so they are woken.
func (p *PE) DestroyBegins() {
	h := p.job.ctl.Header
	h.Destroys.Add(1)
	if h.Finalizing.Load() != 0 {
		p.job.eachHostPE(func(q int) { wait.WakeAll(p.job.bell(q)) })
	}
}

// DestroyEnds: see DestroyBegins.
func (p *PE) DestroyEnds() { p.job.ctl.Header.Destroyed.Add(1) }

// OnHost reports whether PE q shares this PE's host (every PE does in a
// job on one host).
func (p *PE) OnHost(q int) bool {
	if x := p.job.x; x != nil {
		return !x.remote(q)
	}
	return uint(q) < uint(p.npes)
}

// checkTeamsFinal is the wait's call of TeamFinal.Check.
//
//go:noinline
func (p *PE) checkTeamsFinal(routine string) {
	if f := p.teamFinal.Load(); f != nil && p.slot.State.Load() != job.StateFinalizing {
		f.Check(routine)
	}
}

// FinalWord returns word w of team slot slot of PE q, and true, when q
// is a PE of this host that has entered Finalize (see TeamFinal): read
// where its heap is mapped here, else with CMA while q is still in
// Finalize (once it has finalized its process may be gone). A PE of
// another host is not looked at: this host's control block holds no
// state for it.
func (p *PE) FinalWord(q, slot, w int) (uint32, bool) {
	if uint(q) >= uint(p.npes) {
		return 0, false
	}
	switch st := p.job.ctl.Slot(q).State.Load(); {
	case p.peers[q].base != nil && (st == job.StateFinalizing || st == job.StateFinalized),
		st == job.StateFinalizing:
		return p.TeamLoad(q, slot, w), true
	}
	return 0, false
}

// FailTeamFinal fails the job because PE q entered Finalize after
// calls collective calls on a team in whose later call this PE waits
// (TeamFinal), and panics with the job's error on behalf of routine.
func (p *PE) FailTeamFinal(routine string, q int, calls uint32) {
	p.job.fail(job.AbortTeamFinal, q, int(p.job.ctl.Slot(q).Pid.Load()), int(min(calls, math.MaxInt32)))
	p.checkAbort(routine)
}

// checkAbort panics with a *JobError if the job has failed.
//
//go:noinline
func (p *PE) checkAbort(routine string) {
	if e := abortError(routine, p.me, p.job); e != nil {
		p.job.globalExit(e)
		panic(e)
	}
}

// AnyStart returns the index, in [0, n), at which a search of n
// elements for any one that satisfies a condition starts (TestAny,
// WaitUntilAny): OpenSHMEM requires that a series of such calls
// eventually return every satisfying index, so the lowest must not
// always win. Successive calls on this PE, from any goroutine, take
// successive points of a Weyl sequence (multiples of 2^32 divided by
// the golden ratio), which spread evenly over [0, n) even when the
// calls on one array are interleaved with calls on others. It costs
// one uncontended atomic add.
func (p *PE) AnyStart(n int) int {
	x := p.anyTurn.Add(0x9e3779b9)
	hi, _ := bits.Mul64(uint64(x)<<32, uint64(n)) // x/2^32 * n
	return int(hi)
}

// HeapBase returns the start of this PE's heap as mapped here.
func (p *PE) HeapBase() mem.Base { return p.heap.Base }
