package goshmem

import (
	"math"
	"strconv"

	"github.com/goshmem/goshmem/internal/mem"
)

// Put copies src into dst on PE pe (shmem_put): dst is a symmetric
// slice of the calling PE, of the same length as src.
func Put[T any](c *Ctx, dst, src []T, pe int) { put(c, "Put", dst, src, pe) }

func put[T any](c *Ctx, routine string, dst, src []T, pe int) {
	base, off, ok := c.Target(mem.Addr(dst), uintptr(len(dst))*mem.SizeOf[T](), pe)
	if !ok || len(dst) != len(src) {
		c.RMASlow(routine, true, mem.Addr(dst), mem.Bytes(src), pe, len(dst), len(src))
		return
	}
	d := mem.Slice[T](base, off, len(src))
	if uintptr(len(src))*mem.SizeOf[T]() < mem.LargeCopy {
		copy(d, src) // inline: the small-put fast path
	} else {
		rmaLarge(c, d, src, pe, off, true)
	}
	c.RingData(pe)
}

// Get copies src on PE pe into dst (shmem_get): src is a symmetric
// slice of the calling PE, of the same length as dst.
func Get[T any](c *Ctx, dst, src []T, pe int) { get(c, "Get", dst, src, pe) }

func get[T any](c *Ctx, routine string, dst, src []T, pe int) {
	base, off, ok := c.Target(mem.Addr(src), uintptr(len(src))*mem.SizeOf[T](), pe)
	if !ok || len(dst) != len(src) {
		c.RMASlow(routine, false, mem.Addr(src), mem.Bytes(dst), pe, len(dst), len(src))
		return
	}
	s := mem.Slice[T](base, off, len(src))
	if uintptr(len(src))*mem.SizeOf[T]() < mem.LargeCopy {
		copy(dst, s) // inline: the small-get fast path
	} else {
		rmaLarge(c, dst, s, pe, off, false)
	}
}

// copyData copies src into dst as the built-in copy does: with copy
// below mem.LargeCopy bytes of src, where memmove is as fast as
// anything, and with the copy engine (copyLarge, outlined) from there
// up. It serves the data movement of collectives, whose memory holds
// no Go pointers (the symmetric heap rejects such types). (It is a
// call, not inlined: put and get, whose small-size path must stay
// inline, make the same size check themselves.)
func copyData[T any](dst, src []T) {
	if uintptr(len(src))*mem.SizeOf[T]() < mem.LargeCopy {
		copy(dst, src)
		return
	}
	copyLarge(dst, src)
}

// rmaLarge is the large case of put and get: the context's copy
// engine (Ctx.CopyLarge) on the bytes; the symmetric side is at off in
// PE pe's heap (dst for a put, src for a get).
//
//go:noinline
func rmaLarge[T any](c *Ctx, dst, src []T, pe int, off uintptr, put bool) {
	c.CopyLarge(mem.Bytes(dst), mem.Bytes(src), pe, off, put)
}

// copyLarge is copyData's large case: mem.Copy on the bytes.
//
//go:noinline
func copyLarge[T any](dst, src []T) { mem.Copy(mem.Bytes(dst), mem.Bytes(src)) }

// P stores v into *dst on PE pe (shmem_p).
func P[T any](c *Ctx, dst *T, v T, pe int) { p(c, "P", dst, v, pe) }

func p[T any](c *Ctx, routine string, dst *T, v T, pe int) {
	base, off, ok := c.Target(mem.PtrAddr(dst), mem.SizeOf[T](), pe)
	if !ok {
		c.RMASlow(routine, true, mem.PtrAddr(dst), mem.ValueBytes(&v), pe, 1, 1)
		return
	}
	*mem.At[T](base, off) = v
	c.RingData(pe)
}

// G loads *src from PE pe (shmem_g).
func G[T any](c *Ctx, src *T, pe int) T { return g(c, "G", src, pe) }

func g[T any](c *Ctx, routine string, src *T, pe int) T {
	base, off, ok := c.Target(mem.PtrAddr(src), mem.SizeOf[T](), pe)
	if !ok {
		var v T
		c.RMASlow(routine, false, mem.PtrAddr(src), mem.ValueBytes(&v), pe, 1, 1)
		return v
	}
	return *mem.At[T](base, off)
}

// PutNBI is the non-blocking Put (shmem_put_nbi). On mapped memory the
// copy is done before it returns; Quiet orders it like any put.
func PutNBI[T any](c *Ctx, dst, src []T, pe int) { put(c, "PutNBI", dst, src, pe) }

// GetNBI is the non-blocking Get (shmem_get_nbi).
func GetNBI[T any](c *Ctx, dst, src []T, pe int) { get(c, "GetNBI", dst, src, pe) }

// IPut copies n elements of src, taken every srcStride elements, to dst
// on PE pe, stored every dstStride elements (shmem_iput). A stride of 0
// repeats one element: srcStride 0 writes src[0] n times, dstStride 0
// writes n elements into dst[0], the last one staying. Strides are
// never negative (a slice has no elements before its first).
func IPut[T any](c *Ctx, dst, src []T, dstStride, srcStride, n, pe int) {
	strided(c, "IPut", dst, src, dstStride, srcStride, n, pe, true)
}

// IGet copies n elements of src on PE pe, taken every srcStride
// elements, into dst, stored every dstStride elements (shmem_iget).
// Strides are as IPut's: 0 repeats one element, never negative.
func IGet[T any](c *Ctx, dst, src []T, dstStride, srcStride, n, pe int) {
	strided(c, "IGet", dst, src, dstStride, srcStride, n, pe, false)
}

func strided[T any](c *Ctx, routine string, dst, src []T, ds, ss, n, pe int, put bool) {
	if n == 0 {
		c.RMASlow(routine, put, 0, nil, pe, 0, 0) // checks the context and the PE
		return
	}
	if ds < 0 || ss < 0 || n < 0 {
		panicf("%s: strides must be >= 0 and n >= 0 (got dst stride %d, src stride %d, n %d); a slice has no elements before its first, so a negative stride has nothing to reach", routine, ds, ss, n)
	}
	checkStrided(routine, "dest", len(dst), n, ds)
	checkStrided(routine, "source", len(src), n, ss)
	sym, stride := dst, ds
	if !put {
		sym, stride = src, ss
	}
	ext := sym[:(n-1)*stride+1]
	base, off, ok := c.Target(mem.Addr(ext), uintptr(len(ext))*mem.SizeOf[T](), pe)
	if !ok {
		// CMA or a bad argument: check the whole range, so that a call
		// that fails changes no memory, then element by element through
		// the slow path.
		c.CheckRMA(routine, put, mem.Addr(ext), uintptr(len(ext))*mem.SizeOf[T](), pe)
		size := mem.SizeOf[T]()
		local, ls := src[:(n-1)*ss+1], ss
		if !put {
			local, ls = dst[:(n-1)*ds+1], ds
		}
		if c.StridedAcross(routine, put, mem.Addr(ext), uintptr(stride)*size, mem.Bytes(local), uintptr(ls)*size, size, n, pe) {
			return // another host's PE: packed
		}
		for i := 0; i < n; i++ {
			if put {
				p(c, routine, &dst[i*ds], src[i*ss], pe)
			} else {
				dst[i*ds] = g(c, routine, &src[i*ss], pe)
			}
		}
		return
	}
	remote := mem.Slice[T](base, off, len(ext))
	if put {
		for i := 0; i < n; i++ {
			remote[i*ds] = src[i*ss]
		}
		c.RingData(pe)
	} else {
		for i := 0; i < n; i++ {
			dst[i*ds] = remote[i*ss]
		}
	}
}

// checkStrided panics unless a slice of have elements holds n elements
// at stride: (n-1)*stride+1 of them (n >= 1, stride >= 0).
func checkStrided(routine, arg string, have, n, stride int) {
	if stride == 1 && have >= n && have >= 1 {
		return // (no division: collectives call this on their way to publishing)
	}
	checkStridedAny(routine, arg, have, n, stride)
}

// checkStridedAny is checkStrided at any stride.
//
//go:noinline
func checkStridedAny(routine, arg string, have, n, stride int) {
	if have < 1 || stride > 0 && n-1 > (have-1)/stride {
		panicf("%s: %s has %d elements, %s needed for %d elements at stride %d", routine, arg, have, neededStrided(n, stride), n, stride)
	}
}

// neededStrided is (n-1)*stride+1 for a message, saturated where it
// does not fit an int.
func neededStrided(n, stride int) string {
	if stride > 0 && n-1 > (math.MaxInt-1)/stride {
		return "more than fit in an int"
	}
	return strconv.Itoa((n-1)*stride + 1)
}

// PutBytes and GetBytes are the untyped forms (shmem_putmem, shmem_getmem).
func PutBytes(c *Ctx, dst, src []byte, pe int) { put(c, "PutBytes", dst, src, pe) }

// GetBytes copies len(dst) bytes of src on pe into dst (shmem_getmem).
func GetBytes(c *Ctx, dst, src []byte, pe int) { get(c, "GetBytes", dst, src, pe) }
