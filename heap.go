package goshmem

import (
	"reflect"

	"github.com/goshmem/goshmem/internal/mem"
)

// Symmetric allocation is collective: every PE must make the same calls
// in the same order (see node's heap.go for how a mismatch is caught).
// The element type T must hold no Go pointers: the garbage collector
// does not scan the symmetric heap, and other PEs could not follow them.

// Malloc allocates n elements of T on every PE (shmem_malloc) and
// returns this PE's copy. A request of zero bytes returns nil (or, for
// an element type of size 0, n elements at the heap's start, which
// Free and Realloc treat as nil) and does nothing else, not even the
// barrier of an allocation. It fails, on every PE,
// when the heap cannot hold the request, including when n elements of
// T are more bytes than a uintptr can count. A negative n panics.
func Malloc[T any](p *PE, n int) ([]T, error) {
	return allocate[T](p, "Malloc", n, 0, false)
}

// Calloc is Malloc with the memory zeroed (shmem_calloc). As for
// Malloc, a count whose byte size overflows fails on every PE with an
// error (shmem_calloc returns a null pointer).
func Calloc[T any](p *PE, n int) ([]T, error) {
	return allocate[T](p, "Calloc", n, 0, true)
}

// Align is Malloc with the first element aligned to align bytes, a
// power of two (shmem_align); any other align panics (the
// specification leaves it undefined). An alignment larger than the one
// every PE's heap mapping has (the smallest power of two that holds the
// heap, between 2 MiB and 1 GiB) cannot be honoured on every PE: Align
// then fails on every PE with an error that names the largest usable
// alignment.
func Align[T any](p *PE, align, n int) ([]T, error) {
	if align <= 0 || align&(align-1) != 0 {
		panicf("Align: alignment %d is not a positive power of two", align)
	}
	return allocate[T](p, "Align", n, uintptr(align), false)
}

// MallocHints are the usage hints of MallocWithHints, to be combined
// with | (SHMEM_MALLOC_*).
type MallocHints uint

const (
	// MallocAtomicsRemote: the memory is used mostly for atomic
	// operations by PEs that cannot load and store it directly
	// (SHMEM_MALLOC_ATOMICS_REMOTE).
	MallocAtomicsRemote MallocHints = 1 << iota
	// MallocSignalRemote: the memory is used for signals of
	// PutSignal (SHMEM_MALLOC_SIGNAL_REMOTE).
	MallocSignalRemote
)

// MallocWithHints is Malloc with usage hints (shmem_malloc_with_hints):
// hints 0 is exactly Malloc. With MallocAtomicsRemote or
// MallocSignalRemote the block is placed on cache lines of its own: it
// starts on a multiple of 128 bytes (or of the CPU's cache line, if
// larger; see node.IsolationLine) and its size is rounded up to one, so
// no other allocation shares its lines and its atomics do not contend
// with a neighbour's data (false sharing). Unknown hint bits panic (the
// specification defines only these two). Realloc keeps such a block on
// lines of its own.
func MallocWithHints[T any](p *PE, n int, hints MallocHints) ([]T, error) {
	const routine = "MallocWithHints"
	if bad := hints &^ (MallocAtomicsRemote | MallocSignalRemote); bad != 0 {
		panicf("%s: unknown hint bits %#x in %#x; use 0, MallocAtomicsRemote, MallocSignalRemote or both", routine, uint(bad), uint(hints))
	}
	if hints == 0 {
		return allocate[T](p, routine, n, 0, false)
	}
	elem := elemSize[T](routine, n)
	b, err := p.AllocIsolated(routine, uintptr(n), elem, mem.AlignOf[T]())
	return allocated[T](p, n, b, err)
}

func allocate[T any](p *PE, routine string, n int, align uintptr, zero bool) ([]T, error) {
	elem := elemSize[T](routine, n)
	b, err := p.Alloc(routine, uintptr(n), elem, max(align, mem.AlignOf[T]()), zero)
	return allocated[T](p, n, b, err)
}

// allocated turns the outcome of an allocation of n elements of T into
// the slice the caller gets.
func allocated[T any](p *PE, n int, b mem.Base, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	if b == nil {
		if n > 0 { // zero-size elements: nothing to allocate, but n of them
			return mem.Slice[T](p.HeapBase(), 0, n), nil
		}
		return nil, nil
	}
	return mem.Slice[T](b, 0, n), nil
}

// Realloc resizes a symmetric allocation on every PE (shmem_realloc),
// keeping the first min(len(s), n) elements, and returns the new slice.
// s must be a slice returned by Malloc, Calloc, Align, MallocWithHints
// or Realloc, or nil. On failure (the heap has no room, or n elements
// of T overflow a uintptr) s is returned unchanged with the error, on
// every PE. The hints of MallocWithHints are kept (the block stays on
// lines of its own); otherwise the new block is aligned as Malloc
// aligns, and a larger alignment s was allocated with (Align) is not
// kept. Realloc of nil to 0 elements does nothing, without a barrier.
// A slice of a zero-size element type holds no allocation (it is the
// specification's null pointer, whatever its length): Realloc treats it
// as nil.
func Realloc[T any](p *PE, s []T, n int) ([]T, error) {
	elem := elemSize[T]("Realloc", n)
	if elem == 0 {
		return allocated[T](p, n, nil, nil)
	}
	b, err := p.Realloc(mem.Addr(s), uintptr(n), elem)
	if err != nil {
		return s, err
	}
	if b == nil {
		return nil, nil
	}
	return mem.Slice[T](b, 0, n), nil
}

// Free releases a symmetric allocation on every PE (shmem_free). It
// waits for every PE to call it first, so no PE still uses the block.
// Free of nil does nothing, without a barrier, and so does Free of a
// slice of a zero-size element type (an allocation of zero bytes, which
// holds nothing: the specification's null pointer).
func Free[T any](p *PE, s []T) {
	if mem.SizeOf[T]() == 0 {
		return
	}
	p.Free(mem.Addr(s))
}

// elemSize checks the programmer errors of an allocation of n elements
// of T (a negative count, a type holding Go pointers) and returns the
// size of T. Whether n of them fit is the collective's business.
func elemSize[T any](routine string, n int) uintptr {
	if n < 0 {
		panicf("%s: negative element count %d", routine, n)
	}
	t := reflect.TypeFor[T]()
	if hasPointers(t) {
		panicf("%s: element type %v holds Go pointers, which cannot live in the symmetric heap (the garbage collector does not scan it, and other PEs cannot follow them)", routine, t)
	}
	return mem.SizeOf[T]()
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
