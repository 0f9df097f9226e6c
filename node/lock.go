package node

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
)

// Distributed locks (shmem_set_lock, shmem_test_lock, shmem_clear_lock)
// are MCS queue locks on a symmetric int64 that must be zero at first.
// The word is used as two 32-bit halves:
//
//	low half  on PE 0: the tail of the queue (PE+1 of the last waiter, 0: free)
//	high half on each PE: next<<2 | held<<1 | waiting, that PE's queue node
//
// A PE waits only on its own copy of the word, which its predecessor
// updates with one remote AMO, so waiting is local and wakes exactly one
// PE when the lock passes on, however many PEs queue. The held bit is
// set and cleared only by the PE itself, once it holds the lock and when
// it lets it go: ClearLock by a PE that does not hold the lock would
// otherwise wait forever for a successor's link (or free a lock another
// PE holds), so it panics instead.
const (
	lockWaiting = 1
	lockHeld    = 2
	lockNext    = 2 // shift of the successor's PE+1
)

// lockHalves checks lock, naming it, before the routine touches any
// memory, and returns its halves.
func (p *PE) lockHalves(routine string, lock *int64) (tail, node *uint32) {
	p.checkWord(routine, "lock", mem.PtrAddr(lock), 8)
	return mem.Halves(lock)
}

// SetLock acquires the lock, waiting as long as needed.
func (p *PE) SetLock(lock *int64) {
	const routine = "SetLock"
	tail, node := p.lockHalves(routine, lock)
	c := &p.ctx
	AMO(c, routine, OpSet, node, lockWaiting, 0, p.me) // waiting, no successor
	prev := AMO(c, routine, OpSwap, tail, uint32(p.me+1), 0, 0)
	if prev != 0 {
		AMO(c, routine, OpOr, node, uint32(p.me+1)<<lockNext, 0, int(prev-1))
		// The predecessor clears the waiting bit; a successor may
		// meanwhile have set the next field, so only the bit counts.
		if atomic.LoadUint32(node)&lockWaiting != 0 {
			p.WaitSlow("SetLock", func() bool { return atomic.LoadUint32(node)&lockWaiting == 0 })
		}
	}
	AMO(c, routine, OpOr, node, lockHeld, 0, p.me)
}

// TestLock acquires the lock if it is free and reports whether it was
// held (true: not acquired), as shmem_test_lock's non-zero return. A
// test of a held lock changes nothing, whoever holds it: the caller
// itself too (another goroutine of the PE, say), whose ClearLock then
// still hands the lock to the PE queued behind it.
func (p *PE) TestLock(lock *int64) bool {
	const routine = "TestLock"
	tail, node := p.lockHalves(routine, lock)
	c := &p.ctx
	// A held lock has a non-zero tail (its holder, or the last PE queued
	// behind it), and a test that fails changes nothing: above all not
	// the caller's queue node, which, if the caller is the holder, links
	// the PE queued behind it. Only a PE that is neither holding nor
	// queued gets past this load, and its node then carries nothing.
	if AMO(c, routine, OpFetch, tail, 0, 0, 0) != 0 {
		return true
	}
	AMO(c, routine, OpSet, node, 0, 0, p.me)
	if AMO(c, routine, OpCSwap, tail, uint32(p.me+1), 0, 0) != 0 {
		return true
	}
	AMO(c, routine, OpOr, node, lockHeld, 0, p.me)
	return false
}

// ClearLock releases the lock, handing it to the next waiter. It
// panics if this PE does not hold the lock.
func (p *PE) ClearLock(lock *int64) {
	const routine = "ClearLock"
	tail, node := p.lockHalves(routine, lock)
	c := &p.ctx
	v := AMO(c, routine, OpFetch, node, 0, 0, p.me)
	if v&lockHeld == 0 {
		p.notHeld(lock, v)
	}
	c.Quiet() // the critical section's stores complete before the lock passes on
	next := v >> lockNext
	if next == 0 {
		if AMO(c, routine, OpCSwap, tail, 0, uint32(p.me+1), 0) == uint32(p.me+1) {
			AMO(c, routine, OpAnd, node, 0, 0, p.me)
			return
		}
		// A successor swapped itself into the tail; wait for its link.
		p.WaitSlow("ClearLock", func() bool { return atomic.LoadUint32(node) >= 1<<lockNext })
		next = AMO(c, routine, OpFetch, node, 0, 0, p.me) >> lockNext
	}
	AMO(c, routine, OpAnd, node, 0, 0, p.me)
	AMO(c, routine, OpAnd, node, ^uint32(lockWaiting), 0, int(next-1))
}

// notHeld panics for ClearLock of a lock this PE does not hold (node is
// its queue node's value).
//
//go:noinline
func (p *PE) notHeld(lock *int64, node uint32) {
	why := "it has not set it"
	if node&lockWaiting != 0 {
		why = "it is still waiting for it in SetLock"
	}
	panicf("ClearLock: lock %p is not held by PE %d (%s); ClearLock releases a lock that this PE acquired with SetLock or TestLock", lock, p.me, why)
}
