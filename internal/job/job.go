// Package job defines what a goshmem job shares on a node: the control
// block (one shared segment with a header and a slot per PE), the
// symmetric heap segments, and the protocol by which a launcher hands
// them to PE processes (environment variables and inherited
// descriptors). The launcher (internal/launch), the in-process runner
// and the PE runtime (node) all go through this package, so the layout
// is written down once.
//
// # Bootstrap protocol
//
// A launcher creates the control segment and the heaps segment (every
// PE's heap, PE i's at offset i*Stride, Stride = the segment's size /
// NPEs) with Create, then starts each PE process with:
//
//	GOSHMEM_JOB_ID      job id (hex), unique per launch
//	GOSHMEM_NPES        number of PEs in the job
//	GOSHMEM_PE          first PE hosted by this process
//	GOSHMEM_LOCAL_PES   number of PEs hosted by this process (consecutive)
//	GOSHMEM_FD          descriptor of the control segment; the heaps
//	                    segment is descriptor GOSHMEM_FD+1
//	GOSHMEM_NUMA_NODES  (optional) home NUMA node of each PE hosted by this
//	                    process, comma-separated, in PE order; -1 for none
//
// and the two segments as inherited descriptors in that order (os/exec
// ExtraFiles: control at 3, heaps at 4), whatever the number of PEs:
// start-up work and descriptors per process do not grow with the job's
// size beyond one mapping per PE. A process without
// GOSHMEM_JOB_ID is a one-PE job that creates its own segments.
//
// # Control block
//
// Header (4 cache lines), then NPEs slots of SlotSize bytes. Every word
// that one PE writes and others read sits alone on its cache line. The
// header's Abort record is written by whoever first sees the job fail
// (launcher, in-process supervisor, or a process that saw a peer
// process die); every wait in the runtime reads it after each wake-up,
// and whoever writes it rings every doorbell and wakes every slot's
// Watch word.
package job

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/shm"
)

// Environment variable names of the bootstrap protocol.
const (
	EnvJobID     = "GOSHMEM_JOB_ID"
	EnvNPEs      = "GOSHMEM_NPES"
	EnvPE        = "GOSHMEM_PE"
	EnvLocalPEs  = "GOSHMEM_LOCAL_PES"
	EnvFD        = "GOSHMEM_FD"
	EnvLauncher  = "GOSHMEM_LAUNCHER_PID"
	EnvNUMANodes = "GOSHMEM_NUMA_NODES"
	FirstFD      = 3                   // descriptor of the control segment under os/exec ExtraFiles
	magic        = 0x01_6d656d68736f67 // "goshmem\x01" little-endian
	layoutVer    = 5                   // 2: team slots of 128 lines (push boxes); 3: deeper broadcast rings (the meaning of slot lines 64-127 changed); 4: the task board; 5: team pools staggered by PE
	headerLines  = 4
	fixedLines   = 7 // identity, doorbell, alloc check, lock, AMO emulation lock, task, task completions
	maxBarRounds = 32
)

// The team pool: every heap segment holds, after the user's symmetric
// heap, TeamSlots synchronization slots of TeamSlotBytes each, which
// back the PE's teams (see package teamshared). It is outside the range
// user RMA may address.
//
// PE q's slots start TeamStagger(q) bytes into the pool, not at its
// start. Without that, the word a PE polls in its own slot and the word
// it writes in a team-mate's slot (a barrier flag, an exchange
// dropbox) sit at the same offset of their 4 KiB pages (most likely
// the CPU's 4 KiB aliasing: a load whose address matches an older
// store's in bits 0-11 waits for it). Measured on the AMD EPYC
// development machine (2 PEs, oshrun --bind-to core): the PE barrier's
// own code took 78-83 ns per barrier with its flags at one offset of
// both heaps and 57-61 ns with them 1 KiB apart, as with its usual
// flags in the control block (58-64 ns), in 3 of 4 rounds; the fourth,
// in the machine's fastest state, showed no difference.
//
// The pool stays 2 MiB (one huge page): 255 slots, the 256th slot's
// room holding the staggers.
const (
	TeamSlots        = 255
	TeamSlotBytes    = 128 * shm.CacheLine
	teamStaggers     = 32
	TeamStaggerBytes = 2 * shm.CacheLine // two lines: also apart for the adjacent-line prefetcher
	PoolBytes        = (TeamSlots + 1) * TeamSlotBytes
)

// TeamStagger is the offset of PE q's first team slot from the start of
// its team pool.
func TeamStagger(q int) uintptr { return uintptr(q%teamStaggers) * TeamStaggerBytes }

// PE states in Slot.State.
const (
	StateStarting  = 0
	StateRunning   = 1
	StateFinalized = 2
	StateDead      = 3
	// StateFinalizing: in Finalize, before its barrier. The PE makes no
	// collective call on a team again; node's API layer has stored, in
	// each of its teams' slots, how many it made (see node.PE.Finalize).
	StateFinalizing = 4
)

// Abort kinds in Abort.Kind.
const (
	AbortNone        = 0
	AbortExit        = 1  // a PE exited with a non-zero code (Code) or without finalizing
	AbortSignal      = 2  // a PE died by signal Code
	AbortGlobalExit  = 3  // a PE called GlobalExit(Code)
	AbortTimeout     = 4  // the launcher's --timeout expired
	AbortInterrupted = 5  // the launcher got SIGINT/SIGTERM (signal Code)
	AbortPanic       = 6  // an in-process PE panicked
	AbortLost        = 7  // a PE's process vanished (found by a peer)
	AbortHost        = 8  // another host was lost: PE is its leader, Code its index
	AbortTorn        = 9  // a failure whose record was claimed and never published (Settled)
	AbortStart       = 10 // a PE's start-up failed (its Init returned the error, or Main's PE panicked with it)
	AbortFinalized   = 11 // a PE finalized after Code barriers of the job while another waited in a later one
	AbortTeamFinal   = 12 // a PE entered Finalize after Code collective calls on a team while another member had made more
	AbortFinalizeMet = 13 // a PE's Finalize barrier met another PE's BarrierAll, SyncAll or collective allocation, the Code-th barrier of the job
)

// Header is the start of the control block.
type Header struct {
	Magic    uint64
	Version  uint32
	NPEs     uint32
	HeapSize uint64
	JobID    uint64
	// AMOLocked is non-zero when some PE pair cannot map each other's
	// heaps: then every AMO takes the target's lock (see node).
	AMOLocked atomic.Uint32
	// CPUs is how many CPUs the job may use (the creator's affinity):
	// the wait policy compares it with NPEs to know whether PEs
	// outnumber CPUs, which a PE bound to one core cannot see.
	CPUs  uint32
	_     [shm.CacheLine - 40]byte
	Abort Abort
	_     [shm.CacheLine - abortSize]byte
	// Finalized counts PEs that have finalized (for the launcher), and
	// Finalizing the PEs that have entered Finalize: a waiter looks at
	// their teams' final call counts only when it is not 0 (node:
	// checkTeamsFinal). In a job across hosts each also counts what the
	// other hosts' PEs told this host when they entered Finalize (their
	// barriers, their teams' call counts; node's xFinal, xTeamFinal).
	// They are written once per PE or message, so they share a line.
	Finalized  atomic.Uint32
	Finalizing atomic.Uint32
	// Destroys and Destroyed count the TeamDestroy calls of this host's
	// PEs started and ended: while they differ, a PE in Finalize looks
	// for a member of a team it never destroyed that waits in that
	// team's TeamDestroy (node: checkTeamsDestroyed).
	Destroys  atomic.Uint32
	Destroyed atomic.Uint32
	_         [shm.CacheLine - 16]byte
	// Tasks counts the tasks of this host's PEs that have chunks left
	// to claim (see Task): a waiting PE looks for one to steal from
	// only when it is not 0, so an idle steal check is one load of a
	// line that is written only when a task starts and when its last
	// chunk is claimed.
	Tasks shm.Uint32
}

const abortSize = 24

// Abort records the first failure of the job.
type Abort struct {
	// State: 0 none, 1 being written, 2 published.
	State atomic.Uint32
	Kind  atomic.Uint32
	PE    atomic.Int32
	Pid   atomic.Int32
	Code  atomic.Int32
	// Exit is set (and woken) when this host's processes may exit for
	// a GlobalExit of a job that spans hosts: once the leader has told
	// every other host and has no request to the launcher in flight
	// (node's xhost.go says why). Single-host jobs do not use it.
	Exit atomic.Uint32
}

// Set records a failure unless one is recorded already; it reports
// whether this call recorded it.
func (a *Abort) Set(kind uint32, pe, pid, code int) bool {
	if !a.State.CompareAndSwap(0, 1) {
		return false
	}
	a.Kind.Store(kind)
	a.PE.Store(int32(pe))
	a.Pid.Store(int32(pid))
	a.Code.Store(int32(code))
	a.State.Store(2)
	return true
}

// Get returns the recorded failure, if published.
func (a *Abort) Get() (kind uint32, pe, pid, code int, ok bool) {
	if a.State.Load() != 2 {
		return 0, 0, 0, 0, false
	}
	return a.Kind.Load(), int(a.PE.Load()), int(a.Pid.Load()), int(a.Code.Load()), true
}

// TornAfter is how long Settled waits for a record that is being
// written: its writer makes four stores between claiming and
// publishing it, so a record still unpublished after this long has a
// writer that died in between (its process killed, say by the OOM
// killer).
const TornAfter = 100 * time.Millisecond

// Settled is Get for a reader that knows the job has failed (State is
// not 0): while the record is being written it waits for it, and when
// the writer never publishes it (TornAfter) it reports a failure of
// kind AbortTorn rather than none, so that no wait spins forever on a
// dead writer's half-written record.
func (a *Abort) Settled() (kind uint32, pe, pid, code int, ok bool) {
	if a.State.Load() == 1 {
		start := time.Now()
		for a.State.Load() == 1 && time.Since(start) < TornAfter {
			runtime.Gosched() // the writer's four stores
		}
	}
	if a.State.Load() == 1 {
		return AbortTorn, -1, 0, 0, true
	}
	return a.Get()
}

// ExitStatus is the status a process exits with for a GlobalExit(code)
// and the one the launcher returns: the low 8 bits, as the kernel keeps
// of any exit status, except that a non-zero code whose low 8 bits are
// 0 (256, 512, ...) gives 1, not the 0 of a success.
func ExitStatus(code int) int {
	if s := code & 0xff; s != 0 || code == 0 {
		return s
	}
	return 1
}

// Describe renders an abort record for messages.
func Describe(kind uint32, pe, pid, code int) string {
	who := fmt.Sprintf("PE %d", pe)
	if pid > 0 {
		who += fmt.Sprintf(" (pid %d)", pid)
	}
	switch kind {
	case AbortExit:
		if code == 0 {
			return who + " exited without calling Finalize"
		}
		return fmt.Sprintf("%s exited with code %d", who, code)
	case AbortSignal:
		return fmt.Sprintf("%s was killed by %s", who, signalName(code))
	case AbortGlobalExit:
		return fmt.Sprintf("%s called GlobalExit(%d)", who, code)
	case AbortTimeout:
		return "the job's time limit expired"
	case AbortInterrupted:
		return fmt.Sprintf("the launcher was stopped by %s", signalName(code))
	case AbortPanic:
		return who + " panicked"
	case AbortStart:
		return who + " failed to start (its Init returned the error, which its process reports)"
	case AbortLost:
		return who + " died (its process is gone)"
	case AbortFinalized:
		n := "barriers"
		if code == 1 {
			n = "barrier"
		}
		return fmt.Sprintf("%s called Finalize after %d %s of the whole job (BarrierAll, SyncAll, collective allocations and Finalize count), while another PE waits in a later one, which PE %d will never join: the PEs made different collective calls (did PE %d return early from the function Main or Run runs?)", who, code, n, pe, pe)
	case AbortTeamFinal:
		n := "calls"
		if code == 1 {
			n = "call"
		}
		return fmt.Sprintf("%s called Finalize after %d collective %s on a team it belongs to (Team.Sync, Team.Barrier, the collectives, splits and Team.Destroy count), while another member of that team had made more and waits in one that PE %d will never make: the PEs made different collective calls (did PE %d return early from the function Main or Run runs?)", who, code, n, pe, pe)
	case AbortFinalizeMet:
		n := "barriers"
		if code == 1 {
			n = "barrier"
		}
		return fmt.Sprintf("%s called Finalize after %d %s of the whole job (BarrierAll, SyncAll, collective allocations and Finalize count), the last of them Finalize's own, which met another PE's barrier (a BarrierAll, SyncAll or collective allocation) in its place: PE %d never called that one, the PEs made different collective calls (did PE %d return early from the function Main or Run runs?)", who, code, n, pe, pe)
	case AbortTorn:
		return "a PE failed, and its process died while recording how"
	case AbortHost:
		return fmt.Sprintf("the connection to host %d (leader PE %d) was lost: a PE there died, or the host did", code, pe)
	}
	return fmt.Sprintf("%s failed (kind %d, code %d)", who, kind, code)
}

// Slot is the per-PE part of the control block. Its fixed part is
// followed by Rounds barrier flags, each on its own line.
type Slot struct {
	// Line 0: identity, written at start-up.
	Pid   atomic.Int32
	State atomic.Uint32
	// HeapAddr is where the owner process mapped this PE's heap (for
	// the process_vm_readv/writev fallback).
	HeapAddr atomic.Uint64
	// Mapped is 1 once the process hosting this PE has mapped every
	// peer's heap, 2 if it could not map some of them.
	Mapped atomic.Uint32
	// Node is the PE's home NUMA node plus one, published by the
	// process hosting the PE before the start-up barrier; 0 (not yet
	// published, or no home node) reads as node -1.
	Node atomic.Int32
	// Watch is the futex word on which the exit watcher of the process
	// hosting this PE sleeps (only the slot of the process's first PE is
	// used): whoever records a failure bumps and wakes it, so that a
	// GlobalExit ends the process even while its PEs compute.
	Watch atomic.Uint32
	// CPUs identifies the set of CPUs the process hosting this PE may
	// run on (a hash of the list, never 0), published before the
	// start-up barrier; 0 when the process hosts several PEs or its
	// set is unknown. The central barrier groups the PEs that share a
	// set by it.
	CPUs atomic.Uint32
	// FinalSyncs is how many barriers of the whole job (node's
	// PE.sync: BarrierAll, SyncAll, collective allocation, Finalize) the
	// PE had made when it finalized, stored before State becomes
	// StateFinalized. A PE waiting in a later one waits for a PE that
	// will never arrive (AbortFinalized).
	FinalSyncs atomic.Uint64
	_          [shm.CacheLine - 40]byte

	// Line 1: the doorbell. A PE about to sleep in a wait increments
	// Sleepers, re-checks its condition, and futex-waits on Seq; anyone
	// who changes memory the PE may wait on and sees Sleepers != 0
	// increments Seq and wakes it. See internal/wait.
	Door Doorbell

	// Line 2: the collective-allocation check: the sequence number and
	// running hash of this PE's allocations, and its latest call
	// (symalloc.Call.Words), in two slots by parity.
	AllocSeq  [2]atomic.Uint64
	AllocHash [2]atomic.Uint64
	AllocLast [2][2]atomic.Uint64

	// Line 3: the central barrier's counters: Epoch (PE 0's slot)
	// counts the arrivals at every barrier; Group (in the slot of the
	// lowest PE of each group of PEs bound to one CPU) those of the
	// group.
	Epoch atomic.Uint64
	Group atomic.Uint64
	_     [shm.CacheLine - 16]byte

	// Line 4: lock serializing emulated AMOs on this PE's heap (only
	// used when AMOLocked is set).
	AMOLock atomic.Uint32
	_       [shm.CacheLine - 4]byte

	// Line 5: the task this PE executes, open for stealing by its
	// host-mates (see Task).
	Task Task
	// Line 6: how many chunks of the current task other PEs have run.
	TaskDone shm.Uint64
}

// Task is a PE's entry on its host's task board: the task it executes
// (at most one at a time), whose chunks it and its host-mates claim.
//
// Claim packs the two ends of an execution's unclaimed chunks
// [front, back) (TaskClaim, TaskUnpack): the owner claims from the
// front, a batch at a time, and thieves from the back, one chunk each
// or, where the word's batch flag says so, a batch each.
// The owner writes Handle and Fn, resets TaskDone, and then publishes
// Claim with front past the owner's first batch and back at the count.
// Claiming is an atomic add: the owner adds its batch size to front
// (its chunks are [new front - batch, min(new front, back))), a thief
// subtracts from back (TaskClaimBack times k; one chunk, its
// chunk the new back if that is at least front; k chunks where the
// word's batch flag says so, its chunks [max(new back, front), new
// back + k)). Each add changes one end only and sees the other, so no
// chunk is claimed twice. An execution
// cannot end (and Handle change) while a chunk that someone claimed is
// unfinished, so a thief reads Handle and Fn after its add.
//
// Two ends keep the chunks of a copy repeated with the same sizes
// (put_bw, a ping-pong) mostly on the same core each time: the owner's
// part from the start, a thief's from the end, meeting near the same
// chunk, so the destination lines each core writes can stay in its
// cache, where claims from the front alone interleave the two cores'
// chunks differently from one copy to the next. (Measured alone, with
// single-chunk thieves, it changed little: put_bw at 256 KiB 0.67-0.85
// of the best copy against 0.74-0.85, 5 pairs; with batches it is what
// keeps each side's part in one run.)
//
// The batch flag (the built-in copy task sets it) lets thieves claim a
// share of what is left, as the owner does, instead of one chunk: in a
// 2-PE shared copy each side then claims two or three times, where one
// chunk per claim made about 15 contended adds on the entry line per
// 256 KiB copy. A user task keeps one chunk per claim, so that a
// thief's own wait is late by one chunk at most. (A thief decides from
// the word it loaded before its add; should a task without the flag
// have replaced it meanwhile, the thief runs the few chunks it got.)
//
// Adds past the other end are harmless: front moves past back by less
// than one batch (the owner stops at its first empty claim); back below
// front by less than the count (late adds come from thieves that each
// saw chunks left and took at most their share of them); back is
// signed, and the two ends sit in separate 32-bit halves (front and
// the flag in the low one, front below 2^22), so neither add carries
// into the other. The next execution stores a fresh Claim.
//
// The built-in copy task (Handle TaskCopy) is a large put or get that
// waiting host-mates help with: its arguments follow, written before
// Claim as Handle and Fn are. The source is Len bytes at SrcOff in PE
// SrcPE's heap, the destination at DstOff in PE DstPE's, chunk c the
// bytes [c*Chunk, min((c+1)*Chunk, Len)); Kind 1 copies with streaming
// stores, 0 with temporal ones.
type Task struct {
	Claim  atomic.Uint64
	Handle atomic.Uint32 // the task's handle (its registration number), or TaskCopy
	Fn     atomic.Uint32 // a hash of the body's function name, to catch mismatched registrations

	SrcPE, DstPE   atomic.Uint32
	SrcOff, DstOff atomic.Uint64
	Len            atomic.Uint64
	Chunk, Kind    atomic.Uint32
	_              [shm.CacheLine - 56]byte
}

// TaskCopy is the Handle of the built-in copy task, and TaskCopyFn its
// Fn.
const (
	TaskCopy   = ^uint32(0)
	TaskCopyFn = 0x636f7079 // "copy"
)

// TaskMaxChunks is the most chunks one execution can have.
const TaskMaxChunks = 1<<21 - 1

// TaskClaimBack is the add that takes one chunk off back (k chunks:
// k times it); an owner adds its batch size to front.
const TaskClaimBack = ^uint64(1<<32 - 1) // -(1 << 32)

// taskBatch is the flag bit of a Claim word whose thieves claim
// batches (TaskUnpack); it sits above front, which stays below 2^22.
const taskBatch = 1 << 31

// TaskClaim builds a Claim word of unclaimed chunks [front, back),
// whose thieves claim batches if batch.
func TaskClaim(front, back int, batch bool) uint64 {
	c := uint64(uint32(int32(back)))<<32 | uint64(uint32(front))
	if batch {
		c |= taskBatch
	}
	return c
}

// TaskUnpack splits a Claim word into front, back and the batch flag.
func TaskUnpack(c uint64) (front, back int, batch bool) {
	return int(uint32(c) &^ taskBatch), int(int32(uint32(c >> 32))), c&taskBatch != 0
}

// Doorbell is the futex word a sleeping PE waits on.
type Doorbell struct {
	Sleepers atomic.Uint32
	Seq      atomic.Uint32
	// Data counts the registered sleepers that wait for data in the
	// heap (internal/wait: every sleeper but a control-only one); a
	// put or an AMO wakes only when it is not 0.
	Data atomic.Uint32
	_    [shm.CacheLine - 12]byte
}

// Layout describes the control block of a job with NPEs PEs.
type Layout struct {
	NPEs     int
	Rounds   int     // barrier rounds: ceil(log2(NPEs))
	SlotSize uintptr // bytes per PE slot
	Size     int64   // total bytes
}

// LayoutFor returns the control-block layout for npes PEs.
func LayoutFor(npes int) Layout {
	rounds := 0
	if npes > 1 {
		rounds = bits.Len(uint(npes - 1))
	}
	slot := uintptr(fixedLines+rounds) * shm.CacheLine
	return Layout{NPEs: npes, Rounds: rounds, SlotSize: slot,
		Size: int64(headerLines*shm.CacheLine) + int64(npes)*int64(slot)}
}

// Control is a mapped control block.
type Control struct {
	Layout
	Header *Header
	b      []byte
}

// OpenControl interprets b (a mapping of a control segment) for npes
// PEs; init writes a fresh header.
func OpenControl(b []byte, npes int, heapSize uint64, jobID uint64, init bool) (*Control, error) {
	l := LayoutFor(npes)
	if int64(len(b)) < l.Size {
		return nil, fmt.Errorf("goshmem: control segment of %d bytes is too small for %d PEs (%d needed)", len(b), npes, l.Size)
	}
	c := &Control{Layout: l, Header: shm.View[Header](b, 0), b: b}
	if init {
		c.Header.Magic = magic
		c.Header.Version = layoutVer
		c.Header.NPEs = uint32(npes)
		c.Header.HeapSize = heapSize
		c.Header.JobID = jobID
		c.Header.CPUs = uint32(runtime.NumCPU())
	} else if c.Header.Magic != magic || c.Header.Version != layoutVer {
		return nil, fmt.Errorf("goshmem: the control segment is not a goshmem v%d job (magic %#x); were the PEs started by a different goshmem version?", layoutVer, c.Header.Magic)
	} else if int(c.Header.NPEs) != npes {
		return nil, fmt.Errorf("goshmem: control segment is for %d PEs, environment says %d", c.Header.NPEs, npes)
	} else if c.Header.JobID != jobID {
		return nil, fmt.Errorf("goshmem: the control segment belongs to job %x, not to job %x", c.Header.JobID, jobID)
	}
	return c, nil
}

// Slot returns PE pe's slot.
func (c *Control) Slot(pe int) *Slot {
	return shm.View[Slot](c.b, c.slotOff(pe))
}

func (c *Control) slotOff(pe int) uintptr { return c.Layout.slotOff(pe) }

func (l Layout) slotOff(pe int) uintptr {
	return headerLines*shm.CacheLine + uintptr(pe)*l.SlotSize
}

// Flag returns barrier flag round r of PE pe: a word alone on its line.
func (c *Control) Flag(pe, r int) *shm.Uint32 {
	return shm.View[shm.Uint32](c.b, c.slotOff(pe)+uintptr(fixedLines+r)*shm.CacheLine)
}

// The staggers must fit the pool's spare room.
var _ [PoolBytes - TeamSlots*TeamSlotBytes - (teamStaggers-1)*TeamStaggerBytes]struct{}
