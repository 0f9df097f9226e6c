package shm

import (
	"fmt"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
)

// CacheLine is the cache-line size the layout of shared words assumes.
// numa reports the CPU's real line size (cpuid); on every x86-64 CPU it
// is 64 bytes.
const CacheLine = 64

// Uint32 is a 32-bit atomic word alone on its cache line, for words
// that one PE writes and others poll (flags, sequence numbers, futex
// words). Like the runtime's internal atomic types it must not be
// copied: it only makes sense at its place in shared memory.
type Uint32 struct {
	atomic.Uint32
	_ [CacheLine - 4]byte
}

// Uint64 is a 64-bit atomic word alone on its cache line.
type Uint64 struct {
	atomic.Uint64
	_ [CacheLine - 8]byte
}

// Addr returns the word's address, for futex calls.
func (w *Uint32) Addr() *uint32 { return mem.U32(w) }

// View returns a *T at byte offset off of b, checking that it fits and
// is aligned for T. T must hold no Go pointers.
func View[T any](b []byte, off uintptr) *T {
	size, align := mem.SizeOf[T](), mem.AlignOf[T]()
	r := mem.RegionOf(b)
	if _, ok := r.Offset(uintptr(r.Base)+off, size); !ok {
		panic(fmt.Sprintf("shm.View: %d bytes at offset %d outside %d-byte mapping", size, off, len(b)))
	}
	if (uintptr(r.Base)+off)%align != 0 {
		panic(fmt.Sprintf("shm.View: offset %d not aligned to %d", off, align))
	}
	return mem.At[T](r.Base, off)
}
