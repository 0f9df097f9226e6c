package node

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/internode"
)

// The team pool: each heap segment holds, after the user's heap,
// TeamSlots slots of TeamSlotWords 32-bit words that back the teams of
// its PE (their barrier flags and exchange words; the layout of a slot
// belongs to package goshmem's teams). These primitives reach any PE's
// pool, mapped or through CMA; user RMA cannot address it.

// TeamSlots is the number of team slots of each PE.
const TeamSlots = job.TeamSlots

// TeamSlotWords is the number of 32-bit words of a slot.
const TeamSlotWords = job.TeamSlotBytes / 4

// teamOff returns the offset of word w of slot s of PE q from the
// start of q's heap segment (the pools are staggered by PE: see
// job.TeamStagger).
func (p *PE) teamOff(routine string, q, slot, w int) uintptr {
	if uint(slot) >= TeamSlots || uint(w) >= TeamSlotWords {
		panicf("%s: team slot %d word %d outside [0, %d) x [0, %d)", routine, slot, w, TeamSlots, TeamSlotWords)
	}
	return p.heap.Size + job.TeamStagger(q) + uintptr(slot)*job.TeamSlotBytes + uintptr(w)*4
}

// teamBytesOff returns the offset of the n bytes at byte offset off of
// slot s of PE q from the start of q's heap segment.
func (p *PE) teamBytesOff(routine string, q, slot, off, n int) uintptr {
	if off < 0 || n < 0 || off+n > job.TeamSlotBytes {
		panicf("%s: [%d, %d) outside a %d-byte team slot", routine, off, off+n, job.TeamSlotBytes)
	}
	return p.teamOff(routine, q, slot, 0) + uintptr(off)
}

// TeamSet stores v into word w of slot slot of PE q and wakes q if it
// sleeps. Every team word has a single writer, so a store suffices.
func (p *PE) TeamSet(q, slot, w int, v uint32) {
	off := p.teamOff("TeamSet", q, slot, w)
	if b := p.peers[q].base; b != nil {
		atomic.StoreUint32(mem.At[uint32](b, off), v)
		wait.Ring(p.peers[q].door)
		return
	}
	if x := p.job.x; x != nil && x.remote(q) {
		// A posted atomic store on q's host (a put's bytes may land in
		// any order; a flag must change in one store).
		p.xamo(&p.ctx, "team synchronization", q, off, 4, OpSet, uint64(v), 0, false)
		return
	}
	p.cma(&p.ctx, "team synchronization", true, off, mem.ValueBytes(&v), q)
}

// TeamFinalAcross tells member q of a team, a PE of another host, that
// this PE entered Finalize after calls collective calls on the team,
// whose slot on q is slot: q's host's leader keeps, in the 8-byte word
// that starts at word w of that slot, the least such count of the
// team's members on other hosts, as calls<<32 | (PE+1) (TeamLoad64
// reads it; 0: none). It reports false, and sends nothing, when q is
// not on another host. Finalize's callers send it before Finalize's
// barrier, which every host is still in.
func (p *PE) TeamFinalAcross(q, slot, w int, calls uint32) bool {
	x := p.job.x
	if x == nil || !x.remote(q) {
		return false
	}
	off := p.teamOff("Finalize", q, slot, w)
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	h := internode.Header{Op: xTeamFinal, PE: uint32(q), Off: uint64(off), Arg0: uint64(calls), Arg1: uint64(p.me)}
	p.xsend("Finalize", &h, nil)
	return true
}

// TeamLoad64 returns the 8-byte word that starts at word w of slot slot
// of PE q, and true, when q's heap is mapped here (false otherwise).
func (p *PE) TeamLoad64(q, slot, w int) (uint64, bool) {
	off := p.teamOff("TeamLoad64", q, slot, w)
	b := p.peers[q].base
	if b == nil || off%8 != 0 {
		return 0, false
	}
	return mem.At[atomic.Uint64](b, off).Load(), true
}

// TeamPut writes b at byte offset off of slot slot of PE q: a copy
// when q is mapped here, else CMA or, on another host, a put through
// the leaders. A TeamSet to q after it is seen after the data.
func (p *PE) TeamPut(q, slot, off int, b []byte) {
	o := p.teamBytesOff("TeamPut", q, slot, off, len(b))
	if base := p.peers[q].base; base != nil {
		copy(mem.ByteSlice(base, o, len(b)), b)
		return
	}
	p.cma(&p.ctx, "team synchronization", true, o, b, q)
}

// TeamPutSet is TeamPut(q, slot, off, b) followed by TeamSet(q, slot,
// w, v), in one message when q is on another host (b of at most 4 KiB).
func (p *PE) TeamPutSet(q, slot, off int, b []byte, w int, v uint32) {
	if x := p.job.x; x != nil && x.remote(q) {
		o := p.teamBytesOff("TeamPutSet", q, slot, off, len(b))
		p.xputFlag(&p.ctx, "team synchronization", q, o, b, p.teamOff("TeamPutSet", q, slot, w), v)
		return
	}
	p.TeamPut(q, slot, off, b)
	p.TeamSet(q, slot, w, v)
}

// TeamLoad returns word w of slot slot of PE q.
func (p *PE) TeamLoad(q, slot, w int) uint32 {
	off := p.teamOff("TeamLoad", q, slot, w)
	if b := p.peers[q].base; b != nil {
		return atomic.LoadUint32(mem.At[uint32](b, off))
	}
	var v uint32
	p.cma(&p.ctx, "team synchronization", false, off, mem.ValueBytes(&v), q)
	return v
}

// TeamWait waits until this PE's word w of slot slot has reached v
// (counting with wrap-around: the words hold epochs that only grow).
// routine names the collective in the error if the job fails.
func (p *PE) TeamWait(routine string, slot, w int, v uint32) {
	word := mem.At[atomic.Uint32](p.heap.Base, p.teamOff(routine, p.me, slot, w))
	if int32(word.Load()-v) < 0 {
		p.waitFlag(routine, word, v)
	}
}

// WaitWord waits until *w, a word of a team slot mapped here that
// another PE raises (ringing this PE's doorbell), has reached v, counting
// with wrap-around, as TeamWait does; routine names the collective in
// the error if the job fails.
func (p *PE) WaitWord(routine string, w *atomic.Uint32, v uint32) {
	if int32(w.Load()-v) < 0 {
		p.waitFlag(routine, w, v)
	}
}

// TeamClear zeroes this PE's slot slot (before a new team uses it),
// all but word keep (-1: none): a word that only grows and that members
// of the slot's previous team may still be reading (a central barrier's
// arrival count: they may not have seen the last arrival yet, while
// this PE, which saw it, has freed the slot and taken it again).
func (p *PE) TeamClear(slot, keep int) {
	off := p.teamOff("TeamClear", p.me, slot, 0)
	b := mem.ByteSlice(p.heap.Base, off, job.TeamSlotBytes)
	if uint(keep) >= TeamSlotWords {
		clear(b)
		return
	}
	clear(b[:keep*4])
	clear(b[keep*4+4:])
}

// PtrAll reports whether this PE's process maps the heap of every PE of
// the job (and whether every other process maps every heap too): then
// the whole job is one shared-memory domain. It is false in a job that
// spans hosts.
func (p *PE) PtrAll() bool { return !p.job.amoLocked && p.job.x == nil }

// LocalPEs returns the PEs hosted by this PE's process.
func (p *PE) LocalPEs() (first, n int) { return p.job.firstPE, p.job.localPEs }

// Ext returns the value the API layer keeps with this PE, made by mk on
// first use (teams live there). It is not for hot paths.
func (p *PE) Ext(mk func() any) any {
	p.extOnce.Do(func() { p.ext = mk() })
	return p.ext
}

// Config returns the configuration the job runs with.
func (p *PE) Config() Config { return p.job.cfg }

// ProcessOf returns the pid of the process hosting PE q (0 before
// start-up has completed).
func (p *PE) ProcessOf(q int) int { return int(p.job.ctl.Slot(q).Pid.Load()) }

// TeamAdd atomically adds d to word w of slot slot of PE q and wakes q
// if it sleeps. PE q's heap must be mapped here (teams use it only
// inside a shared-memory domain).
func (p *PE) TeamAdd(q, slot, w int, d uint32) {
	off := p.teamOff("TeamAdd", q, slot, w)
	b := p.peers[q].base
	if b == nil {
		panicf("TeamAdd: PE %d is not mapped into this process", q)
	}
	atomic.AddUint32(mem.At[uint32](b, off), d)
	wait.Ring(p.peers[q].door)
}

// TeamFetchAdd atomically adds d to word w of slot slot of PE q and
// returns the new value; it wakes nobody. PE q's heap must be mapped
// here (teams use it only inside a shared-memory domain).
func (p *PE) TeamFetchAdd(q, slot, w int, d uint32) uint32 {
	off := p.teamOff("TeamFetchAdd", q, slot, w)
	b := p.peers[q].base
	if b == nil {
		panicf("TeamFetchAdd: PE %d is not mapped into this process", q)
	}
	return atomic.AddUint32(mem.At[uint32](b, off), d)
}

// TeamWaitOn waits until word w of slot slot of PE q (mapped here) has
// reached v, counting with wrap-around, like TeamWait on another PE's
// word (the teams' central barrier is its use): whoever raises it must
// do so with an atomic add or store and wake this PE. A failed job panics, also
// when the word has reached v (see CentralBarrier).
func (p *PE) TeamWaitOn(routine string, q, slot, w int, v uint32) {
	off := p.teamOff(routine, q, slot, w)
	b := p.peers[q].base
	if b == nil {
		panicf("%s: PE %d is not mapped into this process", routine, q)
	}
	word := mem.At[atomic.Uint32](b, off)
	if int32(word.Load()-v) < 0 {
		// Control-only: the teams' central barrier raises the word
		// with atomic adds, and its last arrival wakes every member.
		p.waitLoop(routine, p.policy, true, func() bool { return int32(word.Load()-v) >= 0 })
	}
}

// CentralBarrier reports whether the job's barrier is the central
// counter barrier (SHMEM_BARRIER_ALGORITHM, or chosen because the PEs
// outnumber their CPUs); every PE of the job reports the same. Team
// barriers follow it.
func (p *PE) CentralBarrier() bool { return p.job.central }

// CheckAbort panics with a *JobError naming routine if the job has
// failed. A barrier whose arrivals count towards a shared total calls
// it before arriving: a PE that left an earlier barrier by a JobError
// must not complete a barrier the others still wait in.
func (p *PE) CheckAbort(routine string) {
	if p.job.ctl.Header.Abort.State.Load() != 0 {
		p.checkAbort(routine)
	}
}

// TeamBytes returns the n bytes at byte offset off of slot slot of PE
// q as mapped here, or nil when q's heap is not mapped.
func (p *PE) TeamBytes(q, slot, off, n int) []byte {
	o := p.teamBytesOff("TeamBytes", q, slot, off, n)
	b := p.peers[q].base
	if b == nil {
		return nil
	}
	return mem.ByteSlice(b, o, n)
}

// Wake wakes PE q if it sleeps in a wait (after a store it may wait for).
func (p *PE) Wake(q int) { wait.Ring(p.peers[q].door) }

// Publish stores v into w, a word in shared memory that another PE may
// wait for, after every earlier store of this PE; a Wake of that PE
// follows. Under the job's fenced policy it is a plain store (the
// sleepers fence: internal/wait's doorbell contract), else an XCHG.
func (p *PE) Publish(w *atomic.Uint32, v uint32) { p.policy.Publish(w, v) }

// SetTeam records team, the API layer's team a context was created on
// (shmem_team_create_ctx), for CtxTeam to return, and onDestroy (may be
// nil), which Destroy calls once, after it has destroyed c: the team
// layer keeps the team's shareable contexts, which destroying the team
// destroys (shmem_team_destroy), and forgets them there.
func (c *Ctx) SetTeam(team any, onDestroy func(*Ctx)) { c.team, c.onDestroy = team, onDestroy }

// CtxTeam returns what SetTeam recorded for c: nil for the default
// context and for contexts made by PE.CtxCreate. It panics if c was
// destroyed.
func (c *Ctx) CtxTeam(routine string) any {
	c.live(routine)
	return c.team
}
