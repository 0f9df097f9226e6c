// Package mem holds goshmem's pointer arithmetic: turning addresses in
// mapped shared memory into typed pointers and slices, translating a
// symmetric address of one PE's heap into the same object in another
// PE's mapping, and the bounds checks that guard both. It is the only
// package besides internal/sys that imports unsafe for arithmetic, so
// that a reviewer can audit all of it in one file.
//
// Every function in mem.go is small enough to inline into the RMA and
// AMO fast paths. The copy engine (copy*.go: Copy, CopyPlan, and the
// amd64 assembly kernels) moves the bytes of large puts, gets and
// collectives; callers reach it only from LargeCopy bytes up.
package mem

import (
	"sync/atomic"
	"unsafe"
)

// Addr returns the address of the first element of s (0 for a nil or
// empty slice with no backing array).
func Addr[T any](s []T) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
}

// PtrAddr returns the address p points at.
func PtrAddr[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }

// SizeOf returns the size of T in bytes.
func SizeOf[T any]() uintptr {
	var z T
	return unsafe.Sizeof(z)
}

// AlignOf returns the alignment of T in bytes.
func AlignOf[T any]() uintptr {
	var z T
	return unsafe.Alignof(z)
}

// Overlaps reports whether the memory of a and b overlaps (empty slices
// overlap nothing).
func Overlaps[T any](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	size := unsafe.Sizeof(a[0])
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b))*size && pb < pa+uintptr(len(a))*size
}

// Bytes returns the len(s)*sizeof(T) bytes of s.
func Bytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*SizeOf[T]())
}

// ValueBytes returns the bytes of *p.
func ValueBytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), SizeOf[T]())
}

// Base is the start of a mapping that the Go garbage collector does
// not manage (mmapped shared memory). Keeping it as unsafe.Pointer, and
// offsets as uintptr, keeps all arithmetic in unsafe.Add.
type Base = unsafe.Pointer

// Region is a range of mapped memory [Base, Base+Size).
type Region struct {
	Base Base
	Size uintptr
}

// RegionOf returns the region covered by b.
func RegionOf(b []byte) Region {
	return Region{Base: unsafe.Pointer(unsafe.SliceData(b)), Size: uintptr(len(b))}
}

// Offset returns the offset of [addr, addr+n) in r and whether the whole
// range lies inside r. It is written so that the compiler can inline it
// and so that no overflow lets an out-of-range access through.
func (r Region) Offset(addr, n uintptr) (uintptr, bool) {
	off := addr - uintptr(r.Base)
	return off, n <= r.Size && off <= r.Size-n
}

// Contains reports whether addr lies inside r.
func (r Region) Contains(addr uintptr) bool { return addr-uintptr(r.Base) < r.Size }

// Bytes returns the region as a byte slice.
func (r Region) Bytes() []byte { return unsafe.Slice((*byte)(r.Base), r.Size) }

// Slice returns the n elements of type T at byte offset off from base.
// The caller has checked the bounds.
func Slice[T any](base Base, off uintptr, n int) []T {
	return unsafe.Slice((*T)(unsafe.Add(base, off)), n)
}

// Add returns the address off bytes past base. The caller has checked
// the bounds.
func Add(base Base, off uintptr) Base { return unsafe.Add(base, off) }

// At returns a *T at byte offset off from base. The caller has checked
// the bounds and alignment.
func At[T any](base Base, off uintptr) *T {
	return (*T)(unsafe.Add(base, off))
}

// U32 views a 4-byte value as a *uint32 for the CPU atomics.
func U32[T any](p *T) *uint32 { return (*uint32)(unsafe.Pointer(p)) }

// U16 views a 2-byte value as a *uint16 (for Load16).
func U16[T any](p *T) *uint16 { return (*uint16)(unsafe.Pointer(p)) }

// Load16 reads the aligned 2-byte value at p atomically. Go has no
// 16-bit atomics: it loads the aligned 4-byte word that holds the value
// (an aligned 2-byte value never straddles one; heaps start and end on
// pages, so that word is in the same heap) and picks the value's half,
// whatever the byte order.
func Load16(p *uint16) uint16 {
	half := uintptr(unsafe.Pointer(p)) & 2
	w := atomic.LoadUint32((*uint32)(unsafe.Add(unsafe.Pointer(p), -int(half))))
	return *(*uint16)(unsafe.Add(unsafe.Pointer(&w), half))
}

// U64 views an 8-byte value as a *uint64 for the CPU atomics.
func U64[T any](p *T) *uint64 { return (*uint64)(unsafe.Pointer(p)) }

// As reinterprets the bits of v (of the same size as R) as an R.
func As[R, T any](v T) R { return *(*R)(unsafe.Pointer(&v)) }

// Zero clears b.
func Zero(b []byte) { clear(b) }

// ByteSlice returns the n bytes at byte offset off from base.
func ByteSlice(base Base, off uintptr, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(base, off)), n)
}

// Halves returns the low and high 32-bit halves of *p (little-endian).
func Halves(p *int64) (lo, hi *uint32) {
	h := (*[2]uint32)(unsafe.Pointer(p))
	return &h[0], &h[1]
}

// NoEscape returns p hidden from escape analysis, as the runtime's
// noescape does: passing it to an interface method (a transport's Send)
// does not move *p to the heap. Only for pointers the callee does not
// keep after it returns (the caller flushes before it returns).
//
//go:nosplit
func NoEscape[T any](p *T) *T {
	var a [1]uintptr // the address as an integer: escape analysis loses it
	a[0] = uintptr(unsafe.Pointer(p))
	return *(**T)(unsafe.Pointer(&a))
}

// NoEscapeBytes is NoEscape for the backing array of b.
// (Written out, not through the generic NoEscape: under -race the
// generic function's shape is not inlined and its parameter is taken
// to leak.)
func NoEscapeBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	var a [1]uintptr
	a[0] = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&a)), len(b))
}
