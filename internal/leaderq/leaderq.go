// Package leaderq is the queue through which the PEs of a host hand
// their cross-host operations to the host's leader: a bounded
// multi-producer, single-consumer ring of fixed-size slots in memory
// that every process of the host maps (a shared segment).
//
// # Algorithm
//
// Dmitry Vyukov's bounded queue, with one consumer. Every slot has a
// sequence word. A producer reads the tail, and if the slot there has
// sequence == tail it claims the slot with a compare-and-swap of the
// tail, copies its message in, and publishes it by storing sequence =
// tail+1; if the slot's sequence is behind, the ring is full. The
// consumer reads the slot at its head; when the slot's sequence is
// head+1 the message is complete, and after copying it out the
// consumer frees the slot for the next lap by storing sequence = head +
// slots. No lock, and no system call on either side while the consumer
// is awake.
//
// # Waking the leader
//
// The consumer (the leader's progress goroutine) sleeps when the queue
// stays empty, on a doorbell in the queue's header, with the contract
// of internal/wait: a producer rings it after publishing (one load when
// nobody sleeps: the enqueue path makes no system call while the
// leader is awake), and the consumer sleeps only after registering and
// re-checking the queue. So an idle leader burns no CPU that the PEs
// need.
package leaderq

import (
	"fmt"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/shm"
)

const magic = 0x716c7367 // "gslq"

// header is the queue's first cache lines: one writer each.
type header struct {
	Magic     uint32
	SlotBytes uint32 // bytes per slot, header included
	Slots     uint64 // a power of two
	_         [shm.CacheLine - 16]byte
	Tail      shm.Uint64   // producers' next position
	Head      shm.Uint64   // the consumer's next position (read by producers only for Len)
	Door      job.Doorbell // the consumer sleeps here
}

// slotHeader starts every slot.
type slotHeader struct {
	Seq atomic.Uint64
	Len uint32
	_   uint32
}

const slotHeaderSize = 16

// Queue is one process's view of a queue. Several producers in any
// processes may Push at once; one consumer Pops.
type Queue struct {
	hdr   *header
	base  mem.Base // the region
	first uintptr  // offset of slot 0
	mask  uint64
	size  uintptr // bytes per slot
	max   int     // message bytes per slot
	bell  wait.Bell
	slots uint64
}

// Size returns the bytes a queue of slots slots of msgBytes message
// bytes each needs.
func Size(slots, msgBytes int) int {
	return int(mem.SizeOf[header]()) + slots*slotBytes(msgBytes)
}

func slotBytes(msgBytes int) int {
	return (slotHeaderSize + msgBytes + shm.CacheLine - 1) / shm.CacheLine * shm.CacheLine
}

// Init lays out a queue of slots slots (a power of two) for messages of
// up to msgBytes in region (at least Size(slots, msgBytes) bytes,
// zeroed, cache-line aligned), and returns the creator's view.
func Init(region []byte, slots, msgBytes int) (*Queue, error) {
	if slots < 2 || slots&(slots-1) != 0 || msgBytes < 1 {
		return nil, fmt.Errorf("leaderq: %d slots of %d bytes: the slots must be a power of two >= 2, the size >= 1", slots, msgBytes)
	}
	if len(region) < Size(slots, msgBytes) {
		return nil, fmt.Errorf("leaderq: a %d-byte region for a queue of %d bytes", len(region), Size(slots, msgBytes))
	}
	h := shm.View[header](region, 0)
	h.SlotBytes = uint32(slotBytes(msgBytes))
	h.Slots = uint64(slots)
	q := view(region, h)
	for i := range uint64(slots) {
		q.slot(i).Seq.Store(i)
	}
	atomic.StoreUint32(&h.Magic, magic) // last: Open checks it
	return q, nil
}

// Open returns another process's view of a queue that Init laid out in
// region.
func Open(region []byte) (*Queue, error) {
	h := shm.View[header](region, 0)
	if atomic.LoadUint32(&h.Magic) != magic {
		return nil, fmt.Errorf("leaderq: the region holds no queue")
	}
	if h.Slots < 2 || h.Slots&(h.Slots-1) != 0 || len(region) < int(mem.SizeOf[header]())+int(h.Slots)*int(h.SlotBytes) {
		return nil, fmt.Errorf("leaderq: a corrupt queue header (%d slots of %d bytes in %d)", h.Slots, h.SlotBytes, len(region))
	}
	return view(region, h), nil
}

func view(region []byte, h *header) *Queue {
	r := mem.RegionOf(region)
	return &Queue{
		hdr: h, base: r.Base, first: mem.SizeOf[header](), mask: h.Slots - 1,
		size: uintptr(h.SlotBytes), max: int(h.SlotBytes) - slotHeaderSize,
		bell: wait.Bell{Door: &h.Door}, slots: h.Slots,
	}
}

func (q *Queue) slot(pos uint64) *slotHeader {
	return mem.At[slotHeader](q.base, q.off(pos))
}

// off is the byte offset of position pos's slot in the region.
func (q *Queue) off(pos uint64) uintptr { return q.first + uintptr(pos&q.mask)*q.size }

// Max returns the largest message a slot holds.
func (q *Queue) Max() int { return q.max }

// TryPush appends msg (at most Max bytes) and reports whether there was
// room. It wakes the consumer if it sleeps.
func (q *Queue) TryPush(msg []byte) bool {
	if len(msg) > q.max {
		panic(fmt.Sprintf("leaderq: Push of %d bytes into %d-byte slots", len(msg), q.max))
	}
	for {
		pos := q.hdr.Tail.Load()
		s := q.slot(pos)
		switch d := int64(s.Seq.Load() - pos); {
		case d == 0:
			if !q.hdr.Tail.CompareAndSwap(pos, pos+1) {
				continue
			}
			copy(mem.ByteSlice(q.base, q.off(pos)+slotHeaderSize, len(msg)), msg)
			s.Len = uint32(len(msg))
			s.Seq.Store(pos + 1) // publishes Len and the bytes
			wait.Ring(q.bell)
			return true
		case d < 0:
			return false // full: the slot still holds the last lap's message
		}
		// Another producer took pos: try the next.
	}
}

// TryPop copies the next message into buf (at least Max bytes) and
// returns its length, or false when the queue is empty. Only one
// goroutine, in one process, may pop.
func (q *Queue) TryPop(buf []byte) (int, bool) {
	head := q.hdr.Head.Load()
	s := q.slot(head)
	if s.Seq.Load() != head+1 {
		return 0, false
	}
	n := int(s.Len)
	copy(buf[:n], mem.ByteSlice(q.base, q.off(head)+slotHeaderSize, n))
	s.Seq.Store(head + q.slots) // free for the next lap
	q.hdr.Head.Store(head + 1)
	return n, true
}

// Ready reports whether a message waits at the head. Only the
// consumer's process may call it; with several goroutines taking turns
// as the consumer (under a lock of their own), any of them may.
func (q *Queue) Ready() bool {
	head := q.hdr.Head.Load()
	return q.slot(head).Seq.Load() == head+1
}

// Wait waits until a message is there (spinning, yielding, then
// sleeping on the queue's doorbell under policy p) or stop reports true
// (checked between attempts and after every wake-up), without taking
// it: it reports true when a message was there. For a consumer role
// that several goroutines of the consumer's process share (under a
// lock of their own): the one that waits need not hold the lock.
func (q *Queue) Wait(p *wait.Policy, stop func() bool) bool {
	b := wait.Start(p)
	ready := func() bool { return q.Ready() || stop() }
	for {
		if q.Ready() {
			return true
		}
		if stop() {
			return false
		}
		if b.Pause() == wait.Sleeping {
			b.Sleep(q.bell, ready)
		}
	}
}

// Wake wakes a sleeping consumer (after stop turned true).
func (q *Queue) Wake() { wait.WakeAll(q.bell) }
