package node

import (
	"errors"
	"fmt"
	"reflect"

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

// Malloc allocates n elements of T on every PE (shmem_malloc) and
// returns this PE's copy. T must hold no Go pointers. n == 0 returns nil.
func Malloc[T any](p *PE, n int) ([]T, error) {
	return allocate[T](p, "Malloc", n, 0, false)
}

// Calloc is Malloc with the memory zeroed (shmem_calloc).
func Calloc[T any](p *PE, n int) ([]T, error) {
	return allocate[T](p, "Calloc", n, 0, true)
}

// Align is Malloc with the first element aligned to align bytes, a
// power of two (shmem_align).
func Align[T any](p *PE, align, n int) ([]T, error) {
	if align <= 0 || align&(align-1) != 0 {
		panicf("Align: alignment %d is not a positive power of two", align)
	}
	return allocate[T](p, "Align", n, uintptr(align), false)
}

func allocate[T any](p *PE, routine string, n int, align uintptr, zero bool) ([]T, error) {
	size := elemBytes[T](routine, n)
	if align < mem.AlignOf[T]() {
		align = mem.AlignOf[T]()
	}
	off, err := p.alloc.Alloc(size, align)
	var s []T
	if err == nil && off != symalloc.NoOffset {
		s = mem.Slice[T](p.heap.Base, off, n)
		if zero {
			clear(s) // before the barrier: nobody writes into the block before
		}
	}
	p.allocSync(routine)
	if err != nil {
		return nil, p.heapError(routine, err)
	}
	return s, nil
}

// Realloc resizes a symmetric allocation on every PE (shmem_realloc),
// keeping the first min(len(s), n) elements, and returns the new slice.
// s must be a slice returned by Malloc, Calloc, Align or Realloc (or nil).
func Realloc[T any](p *PE, s []T, n int) ([]T, error) {
	size := elemBytes[T]("Realloc", n)
	off := symalloc.NoOffset
	if len(s) > 0 {
		off = p.blockOffset("Realloc", mem.Addr(s))
	}
	p.SyncAll() // nobody still reads or writes the old block elsewhere
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
			return s, p.heapError("Realloc", err)
		}
		panicf("Realloc: %v", err)
	}
	if newOff == symalloc.NoOffset {
		return nil, nil
	}
	return mem.Slice[T](p.heap.Base, newOff, n), nil
}

// Free releases a symmetric allocation on every PE (shmem_free). It
// waits for every PE to call it first, so no PE still uses the block.
func Free[T any](p *PE, s []T) {
	if len(s) == 0 && cap(s) == 0 {
		p.SyncAll()
		return
	}
	off := p.blockOffset("Free", mem.Addr(s))
	p.SyncAll()
	if err := p.alloc.Free(off); err != nil {
		panicf("Free: %v (the slice must come from Malloc, Calloc, Align or Realloc and be freed once)", err)
	}
	p.publishAlloc()
	if p.job.cfg.Debug {
		p.SyncAll()
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

func elemBytes[T any](routine string, n int) uintptr {
	if n < 0 {
		panicf("%s: negative element count %d", routine, n)
	}
	t := reflect.TypeFor[T]()
	if hasPointers(t) {
		panicf("%s: element type %v holds Go pointers, which cannot live in the symmetric heap (the garbage collector does not scan it, and other PEs cannot follow them)", routine, t)
	}
	size := mem.SizeOf[T]()
	if size != 0 && uintptr(n) > ^uintptr(0)/size {
		panicf("%s: %d elements of %d bytes overflow", routine, n, size)
	}
	return uintptr(n) * size
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Slice, reflect.String,
		reflect.Chan, reflect.Func, reflect.Interface:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
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
	p.SyncAll()
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
