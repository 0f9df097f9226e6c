package node

import (
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/symalloc"
)

// Symmetric allocation is collective: every PE runs the same
// deterministic allocator (internal/symalloc) on its own metadata, so
// the same sequence of calls gives the same offsets everywhere. After
// each call a PE publishes the allocator's sequence number and running
// hash in its control slot; the barrier that ends Malloc, Calloc, Align
// and Realloc is followed by a comparison with every other PE, which
// turns a mismatched sequence into a panic naming both PEs instead of
// silent corruption. Free has no trailing barrier (as in OpenSHMEM); a
// mismatched Free is caught at the next allocation, or at once when
// SHMEM_DEBUG is set.

// Alloc allocates size bytes aligned to align on every PE (the
// collective behind Malloc, Calloc and Align) and returns this PE's
// block; nil for size 0. zero clears the block before the closing
// barrier.
func (p *PE) Alloc(routine string, size, align uintptr, zero bool) (mem.Base, error) {
	if a := heapAlign(int64(p.heap.Size)); align > a {
		panicf("%s: alignment %d is larger than the alignment of every heap's mapping (%d bytes for a %d-byte heap); use at most %d", routine, align, a, p.heap.Size, a)
	}
	off, err := p.alloc.Alloc(size, align)
	var b mem.Base
	if err == nil && off != symalloc.NoOffset {
		b = p.blockAt(off)
		if zero {
			clear(mem.ByteSlice(p.heap.Base, off, int(size))) // before the barrier: nobody writes into it before
		}
	}
	p.allocSync(routine)
	if err != nil {
		return nil, p.heapError(routine, err)
	}
	return b, nil
}

func (p *PE) blockAt(off uintptr) mem.Base { return mem.Base(mem.At[byte](p.heap.Base, off)) }

// Realloc resizes the block at addr (0: none) to size bytes on every PE
// (shmem_realloc), keeping its contents, and returns the new block (nil
// for size 0). On failure the old block stays.
func (p *PE) Realloc(addr, size uintptr) (mem.Base, error) {
	off := symalloc.NoOffset
	if addr != 0 {
		off = p.blockOffset("Realloc", addr)
	}
	p.sync("Realloc") // nobody still reads or writes the old block elsewhere
	old, _ := p.alloc.SizeOf(off)
	newOff, moved, err := p.alloc.Realloc(off, size)
	if err == nil && moved && off != symalloc.NoOffset {
		keep := min(old, size)
		copy(mem.ByteSlice(p.heap.Base, newOff, int(keep)), mem.ByteSlice(p.heap.Base, off, int(keep)))
	}
	p.allocSync("Realloc")
	if err != nil {
		var ns *symalloc.ErrNoSpace
		if errors.As(err, &ns) {
			return nil, p.heapError("Realloc", err)
		}
		panicf("Realloc: %v", err)
	}
	if newOff == symalloc.NoOffset {
		return nil, nil
	}
	return p.blockAt(newOff), nil
}

// Free releases the block at addr (0: none) on every PE (shmem_free).
// It waits for every PE to call it first, so no PE still uses the block.
func (p *PE) Free(addr uintptr) {
	if addr == 0 {
		p.sync("Free")
		return
	}
	off := p.blockOffset("Free", addr)
	p.sync("Free")
	if err := p.alloc.Free(off); err != nil {
		panicf("Free: %v (the slice must come from Malloc, Calloc, Align or Realloc and be freed once)", err)
	}
	p.publishAlloc()
	if p.job.cfg.Debug {
		p.sync("Free")
		p.checkAlloc("Free")
	}
}

func (p *PE) blockOffset(routine string, addr uintptr) uintptr {
	off, in := p.heap.Offset(addr, 1)
	if !in {
		badAddr(routine, "slice", addr, 1, p)
	}
	if _, ok := p.alloc.SizeOf(off); !ok {
		panicf("%s: the slice at %#x does not start a live symmetric allocation", routine, addr)
	}
	return off
}

func (p *PE) heapError(routine string, err error) error {
	var ns *symalloc.ErrNoSpace
	if errors.As(err, &ns) {
		return fmt.Errorf("goshmem.%s: %w (SHMEM_SYMMETRIC_SIZE is %d bytes per PE)", routine, err, p.heap.Size)
	}
	return fmt.Errorf("goshmem.%s: %w", routine, err)
}

// allocSync publishes this PE's allocation state, waits for every PE,
// and checks that all made the same sequence of calls.
func (p *PE) allocSync(routine string) {
	p.publishAlloc()
	p.sync(routine)
	p.checkAlloc(routine)
}

func (p *PE) publishAlloc() {
	seq := p.alloc.Seq()
	p.slot.AllocHash[seq&1].Store(p.alloc.Hash())
	p.slot.AllocSeq[seq&1].Store(seq)
}

func (p *PE) checkAlloc(routine string) {
	seq, hash := p.alloc.Seq(), p.alloc.Hash()
	for q := 0; q < p.npes; q++ {
		s := p.job.ctl.Slot(q)
		qs, qh := s.AllocSeq[seq&1].Load(), s.AllocHash[seq&1].Load()
		if qs != seq || qh != hash {
			panicf("%s: symmetric allocations differ between PE %d and PE %d: after %d allocation calls on PE %d, PE %d is at call %d with a different history; "+
				"every PE must call Malloc, Calloc, Align, Realloc and Free in the same order with the same sizes",
				routine, p.me, q, seq, p.me, q, qs)
		}
	}
}
