package node

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/wait"
)

// Integer is the set of types the bitwise and arithmetic AMOs, waits
// and signals work on (OpenSHMEM's standard and extended AMO integer
// types that are 4 or 8 bytes wide).
type Integer interface {
	~int32 | ~int64 | ~uint32 | ~uint64 | ~int | ~uint | ~uintptr
}

// Standard adds the floating-point types that fetch, set and swap
// accept.
type Standard interface {
	Integer | ~float32 | ~float64
}

// Op is an entry of the AMO operator table. Every AMO routine of
// package goshmem is AMO applied to one of these.
type Op uint8

const (
	OpFetch Op = iota
	OpSet
	OpSwap
	OpCSwap
	OpAdd
	OpAnd
	OpOr
	OpXor
)

// apply32 and apply64 execute an operator with the CPU's atomics and
// return the previous value.
func apply32(o Op, p *uint32, v, cmp uint32) uint32 {
	switch o {
	case OpFetch:
		return atomic.LoadUint32(p)
	case OpSet:
		atomic.StoreUint32(p, v)
		return 0
	case OpSwap:
		return atomic.SwapUint32(p, v)
	case OpAdd:
		return atomic.AddUint32(p, v) - v
	case OpAnd:
		return atomic.AndUint32(p, v)
	case OpOr:
		return atomic.OrUint32(p, v)
	}
	return casLoop32(o, p, v, cmp)
}

// casLoop32 runs the operators without an instruction of their own
// (fetching compare-and-swap, xor) as compare-and-swap loops.
func casLoop32(o Op, p *uint32, v, cmp uint32) uint32 {
	if o == OpCSwap {
		for {
			if old := atomic.LoadUint32(p); old != cmp || atomic.CompareAndSwapUint32(p, old, v) {
				return old
			}
		}
	}
	for { // OpXor
		old := atomic.LoadUint32(p)
		if atomic.CompareAndSwapUint32(p, old, old^v) {
			return old
		}
	}
}

func apply64(o Op, p *uint64, v, cmp uint64) uint64 {
	switch o {
	case OpFetch:
		return atomic.LoadUint64(p)
	case OpSet:
		atomic.StoreUint64(p, v)
		return 0
	case OpSwap:
		return atomic.SwapUint64(p, v)
	case OpAdd:
		return atomic.AddUint64(p, v) - v
	case OpAnd:
		return atomic.AndUint64(p, v)
	case OpOr:
		return atomic.OrUint64(p, v)
	}
	return casLoop64(o, p, v, cmp)
}

// casLoop64 runs the operators without an instruction of their own
// (fetching compare-and-swap, xor) as compare-and-swap loops.
func casLoop64(o Op, p *uint64, v, cmp uint64) uint64 {
	if o == OpCSwap {
		for {
			if old := atomic.LoadUint64(p); old != cmp || atomic.CompareAndSwapUint64(p, old, v) {
				return old
			}
		}
	}
	for {
		old := atomic.LoadUint64(p)
		if atomic.CompareAndSwapUint64(p, old, old^v) {
			return old
		}
	}
}

// applyPlain computes an operator's new value from the old one, for
// AMOs emulated under a lock.
func applyPlain(o Op, old, v, cmp uint64) uint64 {
	switch o {
	case OpFetch:
		return old
	case OpSet, OpSwap:
		return v
	case OpCSwap:
		if old == cmp {
			return v
		}
		return old
	case OpAdd:
		return old + v
	case OpAnd:
		return old & v
	case OpOr:
		return old | v
	}
	return old ^ v
}

// AMO runs operator o on *dst at PE pe and returns the previous value.
// routine names the API routine in error messages.
// Arithmetic is done on the bits, which is two's complement arithmetic
// for every integer type and exact for the bit moves of fetch, set and
// swap on floats.
func AMO[T Standard](c *Ctx, routine string, o Op, dst *T, v, cmp T, pe int) T {
	size := mem.SizeOf[T]()
	base, off, ok := c.Target(mem.PtrAddr(dst), size, pe)
	if !ok || off&(size-1) != 0 || c.pe.job.amoLocked {
		return amoSlow(c, routine, o, dst, v, cmp, pe)
	}
	o &^= opPost
	old := apply(o, mem.At[T](base, off), v, cmp)
	if o != OpFetch {
		c.RingData(pe)
	}
	return old
}

// opPost marks an AMO whose result nobody reads (AtomicAdd, AtomicSet,
// the signal of PutSignal): on another host it is sent without waiting
// for an answer, and Quiet completes it.
const opPost Op = 0x80

// Post runs the non-fetching operator o (OpSet, OpAdd, OpAnd, OpOr,
// OpXor) on *dst at PE pe: AMO without the result, which lets an AMO on
// another host complete at the next Quiet instead of a round trip.
func Post[T Standard](c *Ctx, routine string, o Op, dst *T, v T, pe int) {
	AMO(c, routine, o|opPost, dst, v, v, pe)
}

// apply runs o on *p with the CPU atomic of T's width.
func apply[T Standard](o Op, p *T, v, cmp T) T {
	if mem.SizeOf[T]() == 4 {
		return mem.As[T](apply32(o, mem.U32(p), mem.As[uint32](v), mem.As[uint32](cmp)))
	}
	return mem.As[T](apply64(o, mem.U64(p), mem.As[uint64](v), mem.As[uint64](cmp)))
}

// amoSlow checks the arguments and runs the AMO under the target's
// lock in the control block (when some PEs reach others through CMA,
// where no CPU atomic can span processes).
//
//go:noinline
func amoSlow[T Standard](c *Ctx, routine string, o Op, dst *T, v, cmp T, pe int) T {
	post := o&opPost != 0
	o &^= opPost
	c.live(routine)
	p := c.pe
	pe = c.worldPE(routine, pe)
	size := mem.SizeOf[T]()
	arg := "dest"
	if o == OpFetch {
		arg = "source" // the fetch routines read *src
	}
	off := p.checkWord(routine, arg, mem.PtrAddr(dst), size)
	if x := p.job.x; x != nil && x.remote(pe) {
		// On its host's CPU, by its leader (xhost.go).
		var vv, cc uint64
		if size == 4 {
			vv, cc = uint64(mem.As[uint32](v)), uint64(mem.As[uint32](cmp))
		} else {
			vv, cc = mem.As[uint64](v), mem.As[uint64](cmp)
		}
		old := p.xamo(c, routine, pe, off, size, o, vv, cc, !post)
		if size == 4 {
			return mem.As[T](uint32(old))
		}
		return mem.As[T](old)
	}
	if !p.job.amoLocked && p.peers[pe].base != nil {
		// SHMEM_DEBUG sent a mapped AMO here: run it with the CPU atomic.
		old := apply(o, mem.At[T](p.peers[pe].base, off), v, cmp)
		if o != OpFetch {
			wait.Ring(p.peers[pe].door)
		}
		return old
	}
	p.amoLock(routine, pe)
	lock := &p.job.ctl.Slot(pe).AMOLock
	var buf [8]byte
	b := buf[:size]
	p.amoXfer(routine, false, off, b, pe)
	var old64 uint64
	if size == 4 {
		old64 = uint64(mem.As[uint32](buf))
	} else {
		old64 = mem.As[uint64](buf)
	}
	var vv, cc uint64
	if size == 4 {
		vv, cc = uint64(mem.As[uint32](v)), uint64(mem.As[uint32](cmp))
	} else {
		vv, cc = mem.As[uint64](v), mem.As[uint64](cmp)
	}
	if o != OpFetch {
		nv := applyPlain(o, old64, vv, cc)
		if size == 4 {
			u := uint32(nv)
			copy(b, mem.ValueBytes(&u))
		} else {
			copy(b, mem.ValueBytes(&nv))
		}
		p.amoXfer(routine, true, off, b, pe)
	}
	lock.Store(0)
	if size == 4 {
		u := uint32(old64)
		return mem.As[T](u)
	}
	return mem.As[T](old64)
}

func (p *PE) amoXfer(routine string, put bool, off uintptr, b []byte, pe int) {
	if base := p.peers[pe].base; base != nil {
		r := mem.ByteSlice(base, off, len(b))
		if put {
			copy(r, b)
			wait.Ring(p.peers[pe].door)
		} else {
			copy(b, r)
		}
		return
	}
	p.cma(&p.ctx, routine, put, off, b, pe)
}

// amoLock takes the lock of PE pe's emulated AMOs. It is held for one
// CMA read and write, so a waiter spins and then yields rather than
// sleeps (releasing it rings no doorbell); it reads the abort record
// every 64 spins and after every yield, so that a holder that died is
// noticed as soon as its death is recorded (watch.go).
func (p *PE) amoLock(routine string, pe int) {
	for !p.job.takeAMOLock(pe, p.policy) {
		p.checkAbort(routine)
	}
}

// takeAMOLock takes the lock of PE pe's emulated AMOs, pausing by pol
// between tries, and reads the abort record every 64 spins and after
// every yield: it returns false, without the lock, once the job has
// failed (the holder may have died with it). PE.amoLock and the
// leader's service to other hosts (xsink.lockAMO) take it.
func (j *Job) takeAMOLock(pe int, pol *wait.Policy) bool {
	lock := &j.ctl.Slot(pe).AMOLock
	abort := &j.ctl.Header.Abort.State
	b := wait.Start(pol)
	for n := 0; !lock.CompareAndSwap(0, 1); n++ {
		if b.Pause() == wait.Spinning && n&63 != 0 {
			continue
		}
		if abort.Load() != 0 {
			return false
		}
	}
	return true
}
