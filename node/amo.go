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

// op is an entry of the AMO operator table. Every AMO routine is one
// generic function (amo) applied to one of these.
type op uint8

const (
	opFetch op = iota
	opSet
	opSwap
	opCSwap
	opAdd
	opAnd
	opOr
	opXor
)

var opNames = [...]string{"AtomicFetch", "AtomicSet", "AtomicSwap", "AtomicCompareSwap", "AtomicFetchAdd", "AtomicFetchAnd", "AtomicFetchOr", "AtomicFetchXor"}

// apply32 and apply64 execute an operator with the CPU's atomics and
// return the previous value.
func apply32(o op, p *uint32, v, cmp uint32) uint32 {
	switch o {
	case opFetch:
		return atomic.LoadUint32(p)
	case opSet:
		atomic.StoreUint32(p, v)
		return 0
	case opSwap:
		return atomic.SwapUint32(p, v)
	case opCSwap:
		for {
			if old := atomic.LoadUint32(p); old != cmp || atomic.CompareAndSwapUint32(p, old, v) {
				return old
			}
		}
	case opAdd:
		return atomic.AddUint32(p, v) - v
	case opAnd:
		return atomic.AndUint32(p, v)
	case opOr:
		return atomic.OrUint32(p, v)
	}
	for { // opXor
		old := atomic.LoadUint32(p)
		if atomic.CompareAndSwapUint32(p, old, old^v) {
			return old
		}
	}
}

func apply64(o op, p *uint64, v, cmp uint64) uint64 {
	switch o {
	case opFetch:
		return atomic.LoadUint64(p)
	case opSet:
		atomic.StoreUint64(p, v)
		return 0
	case opSwap:
		return atomic.SwapUint64(p, v)
	case opCSwap:
		for {
			if old := atomic.LoadUint64(p); old != cmp || atomic.CompareAndSwapUint64(p, old, v) {
				return old
			}
		}
	case opAdd:
		return atomic.AddUint64(p, v) - v
	case opAnd:
		return atomic.AndUint64(p, v)
	case opOr:
		return atomic.OrUint64(p, v)
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
func applyPlain(o op, old, v, cmp uint64) uint64 {
	switch o {
	case opFetch:
		return old
	case opSet, opSwap:
		return v
	case opCSwap:
		if old == cmp {
			return v
		}
		return old
	case opAdd:
		return old + v
	case opAnd:
		return old & v
	case opOr:
		return old | v
	}
	return old ^ v
}

// amo runs operator o on *dst at PE pe and returns the previous value.
// Arithmetic is done on the bits, which is two's complement arithmetic
// for every integer type and exact for the bit moves of fetch, set and
// swap on floats.
func amo[T Standard](c *Ctx, o op, dst *T, v, cmp T, pe int) T {
	size := mem.SizeOf[T]()
	base, off, ok := c.target(mem.PtrAddr(dst), size, pe)
	if !ok || off&(size-1) != 0 || c.pe.job.amoLocked {
		return amoSlow(c, o, dst, v, cmp, pe)
	}
	var old T
	if size == 4 {
		old = mem.As[T](apply32(o, mem.At[uint32](base, off), mem.As[uint32](v), mem.As[uint32](cmp)))
	} else {
		old = mem.As[T](apply64(o, mem.At[uint64](base, off), mem.As[uint64](v), mem.As[uint64](cmp)))
	}
	if o != opFetch {
		wait.Ring(c.pe.peers[pe].door)
	}
	return old
}

// amoSlow checks the arguments and runs the AMO under the target's
// lock in the control block (when some PEs reach others through CMA,
// where no CPU atomic can span processes).
//
//go:noinline
func amoSlow[T Standard](c *Ctx, o op, dst *T, v, cmp T, pe int) T {
	routine := opNames[o]
	c.live(routine)
	p := c.pe
	if uint(pe) >= uint(p.npes) {
		badPE(routine, pe, p.npes)
	}
	size := mem.SizeOf[T]()
	off, in := p.heap.Offset(mem.PtrAddr(dst), size)
	if !in {
		badAddr(routine, "dest", mem.PtrAddr(dst), size, p)
	}
	if off&(size-1) != 0 {
		panicf("%s: dest %#x is not aligned to %d bytes", routine, mem.PtrAddr(dst), size)
	}
	lock := &p.job.ctl.Slot(pe).AMOLock
	for !lock.CompareAndSwap(0, 1) {
		wait.Relax()
		p.checkAbort(routine)
	}
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
	if o != opFetch {
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
	p.cma(routine, put, off, b, pe)
}

// AtomicFetch returns *src on PE pe (shmem_atomic_fetch).
func AtomicFetch[T Standard](c *Ctx, src *T, pe int) T {
	var z T
	return amo(c, opFetch, src, z, z, pe)
}

// AtomicSet stores v into *dst on PE pe (shmem_atomic_set).
func AtomicSet[T Standard](c *Ctx, dst *T, v T, pe int) { amo(c, opSet, dst, v, v, pe) }

// AtomicSwap stores v into *dst on PE pe and returns the previous value.
func AtomicSwap[T Standard](c *Ctx, dst *T, v T, pe int) T { return amo(c, opSwap, dst, v, v, pe) }

// AtomicCompareSwap stores v into *dst on PE pe if it equals cond, and
// returns the previous value (shmem_atomic_compare_swap).
func AtomicCompareSwap[T Integer](c *Ctx, dst *T, cond, v T, pe int) T {
	return amo(c, opCSwap, dst, v, cond, pe)
}

// AtomicFetchAdd adds v to *dst on PE pe and returns the previous value.
func AtomicFetchAdd[T Integer](c *Ctx, dst *T, v T, pe int) T { return amo(c, opAdd, dst, v, v, pe) }

// AtomicAdd adds v to *dst on PE pe.
func AtomicAdd[T Integer](c *Ctx, dst *T, v T, pe int) { amo(c, opAdd, dst, v, v, pe) }

// AtomicFetchInc increments *dst on PE pe and returns the previous value.
func AtomicFetchInc[T Integer](c *Ctx, dst *T, pe int) T { return amo(c, opAdd, dst, 1, 1, pe) }

// AtomicInc increments *dst on PE pe.
func AtomicInc[T Integer](c *Ctx, dst *T, pe int) { amo(c, opAdd, dst, 1, 1, pe) }

// AtomicFetchAnd ands v into *dst on PE pe and returns the previous value.
func AtomicFetchAnd[T Integer](c *Ctx, dst *T, v T, pe int) T { return amo(c, opAnd, dst, v, v, pe) }

// AtomicAnd ands v into *dst on PE pe.
func AtomicAnd[T Integer](c *Ctx, dst *T, v T, pe int) { amo(c, opAnd, dst, v, v, pe) }

// AtomicFetchOr ors v into *dst on PE pe and returns the previous value.
func AtomicFetchOr[T Integer](c *Ctx, dst *T, v T, pe int) T { return amo(c, opOr, dst, v, v, pe) }

// AtomicOr ors v into *dst on PE pe.
func AtomicOr[T Integer](c *Ctx, dst *T, v T, pe int) { amo(c, opOr, dst, v, v, pe) }

// AtomicFetchXor xors v into *dst on PE pe and returns the previous value.
func AtomicFetchXor[T Integer](c *Ctx, dst *T, v T, pe int) T { return amo(c, opXor, dst, v, v, pe) }

// AtomicXor xors v into *dst on PE pe.
func AtomicXor[T Integer](c *Ctx, dst *T, v T, pe int) { amo(c, opXor, dst, v, v, pe) }

// The non-blocking fetching AMOs (shmem_atomic_*_nbi) store the fetched
// value into *fetch; on mapped memory they complete before returning.

// AtomicFetchNBI is the non-blocking AtomicFetch.
func AtomicFetchNBI[T Standard](c *Ctx, fetch *T, src *T, pe int) { *fetch = AtomicFetch(c, src, pe) }

// AtomicSwapNBI is the non-blocking AtomicSwap.
func AtomicSwapNBI[T Standard](c *Ctx, fetch *T, dst *T, v T, pe int) {
	*fetch = AtomicSwap(c, dst, v, pe)
}

// AtomicCompareSwapNBI is the non-blocking AtomicCompareSwap.
func AtomicCompareSwapNBI[T Integer](c *Ctx, fetch *T, dst *T, cond, v T, pe int) {
	*fetch = AtomicCompareSwap(c, dst, cond, v, pe)
}

// AtomicFetchAddNBI is the non-blocking AtomicFetchAdd.
func AtomicFetchAddNBI[T Integer](c *Ctx, fetch *T, dst *T, v T, pe int) {
	*fetch = AtomicFetchAdd(c, dst, v, pe)
}

// AtomicFetchIncNBI is the non-blocking AtomicFetchInc.
func AtomicFetchIncNBI[T Integer](c *Ctx, fetch *T, dst *T, pe int) { *fetch = AtomicFetchInc(c, dst, pe) }

// AtomicFetchAndNBI is the non-blocking AtomicFetchAnd.
func AtomicFetchAndNBI[T Integer](c *Ctx, fetch *T, dst *T, v T, pe int) {
	*fetch = AtomicFetchAnd(c, dst, v, pe)
}

// AtomicFetchOrNBI is the non-blocking AtomicFetchOr.
func AtomicFetchOrNBI[T Integer](c *Ctx, fetch *T, dst *T, v T, pe int) {
	*fetch = AtomicFetchOr(c, dst, v, pe)
}

// AtomicFetchXorNBI is the non-blocking AtomicFetchXor.
func AtomicFetchXorNBI[T Integer](c *Ctx, fetch *T, dst *T, v T, pe int) {
	*fetch = AtomicFetchXor(c, dst, v, pe)
}
