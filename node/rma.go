package node

import (
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
)

// target translates [addr, addr+n) of the calling PE's heap into PE
// pe's mapped heap. ok is false whenever the fast path cannot serve the
// call: a bad PE, an address outside the heap, a destroyed context, or
// a peer reached through CMA. It inlines into every RMA routine.
func (c *Ctx) target(addr, n uintptr, pe int) (mem.Base, uintptr, bool) {
	p := c.pe
	off, in := p.heap.Offset(addr, n)
	if !in || uint(pe) >= uint(len(p.peers)) || c.destroyed {
		return nil, 0, false
	}
	b := p.peers[pe].base
	return b, off, b != nil
}

// Put copies src into dst on PE pe (shmem_put): dst is a symmetric
// slice of the calling PE, of the same length as src.
func Put[T any](c *Ctx, dst, src []T, pe int) {
	base, off, ok := c.target(mem.Addr(dst), uintptr(len(dst))*mem.SizeOf[T](), pe)
	if !ok || len(dst) != len(src) {
		c.rmaSlow("Put", true, mem.Addr(dst), mem.Bytes(src), pe, len(dst), len(src))
		return
	}
	copy(mem.Slice[T](base, off, len(src)), src)
	wait.Ring(c.pe.peers[pe].door)
}

// Get copies src on PE pe into dst (shmem_get): src is a symmetric
// slice of the calling PE, of the same length as dst.
func Get[T any](c *Ctx, dst, src []T, pe int) {
	base, off, ok := c.target(mem.Addr(src), uintptr(len(src))*mem.SizeOf[T](), pe)
	if !ok || len(dst) != len(src) {
		c.rmaSlow("Get", false, mem.Addr(src), mem.Bytes(dst), pe, len(dst), len(src))
		return
	}
	copy(dst, mem.Slice[T](base, off, len(src)))
}

// P stores v into *dst on PE pe (shmem_p).
func P[T any](c *Ctx, dst *T, v T, pe int) {
	base, off, ok := c.target(mem.PtrAddr(dst), mem.SizeOf[T](), pe)
	if !ok {
		c.rmaSlow("P", true, mem.PtrAddr(dst), mem.ValueBytes(&v), pe, 1, 1)
		return
	}
	*mem.At[T](base, off) = v
	wait.Ring(c.pe.peers[pe].door)
}

// G loads *src from PE pe (shmem_g).
func G[T any](c *Ctx, src *T, pe int) T {
	base, off, ok := c.target(mem.PtrAddr(src), mem.SizeOf[T](), pe)
	if !ok {
		var v T
		c.rmaSlow("G", false, mem.PtrAddr(src), mem.ValueBytes(&v), pe, 1, 1)
		return v
	}
	return *mem.At[T](base, off)
}

// PutNBI is the non-blocking Put (shmem_put_nbi). On mapped memory the
// copy is done before it returns; Quiet orders it like any put.
func PutNBI[T any](c *Ctx, dst, src []T, pe int) { Put(c, dst, src, pe) }

// GetNBI is the non-blocking Get (shmem_get_nbi).
func GetNBI[T any](c *Ctx, dst, src []T, pe int) { Get(c, dst, src, pe) }

// IPut copies n elements of src, taken every sst elements, to dst on PE
// pe, stored every dst elements (shmem_iput).
func IPut[T any](c *Ctx, dst, src []T, dstStride, srcStride, n, pe int) {
	strided(c, "IPut", dst, src, dstStride, srcStride, n, pe, true)
}

// IGet copies n elements of src on PE pe, taken every srcStride
// elements, into dst, stored every dstStride elements (shmem_iget).
func IGet[T any](c *Ctx, dst, src []T, dstStride, srcStride, n, pe int) {
	strided(c, "IGet", dst, src, dstStride, srcStride, n, pe, false)
}

func strided[T any](c *Ctx, routine string, dst, src []T, ds, ss, n, pe int, put bool) {
	if n == 0 {
		return
	}
	if ds < 1 || ss < 1 || n < 0 {
		panicf("%s: strides must be >= 1 and n >= 0 (got dst stride %d, src stride %d, n %d)", routine, ds, ss, n)
	}
	if need := (n-1)*ds + 1; len(dst) < need {
		panicf("%s: dest has %d elements, %d needed for %d elements at stride %d", routine, len(dst), need, n, ds)
	}
	if need := (n-1)*ss + 1; len(src) < need {
		panicf("%s: source has %d elements, %d needed for %d elements at stride %d", routine, len(src), need, n, ss)
	}
	sym, stride := dst, ds
	if !put {
		sym, stride = src, ss
	}
	ext := sym[:(n-1)*stride+1]
	base, off, ok := c.target(mem.Addr(ext), uintptr(len(ext))*mem.SizeOf[T](), pe)
	if !ok {
		// CMA or a bad argument: element by element through the slow path.
		for i := 0; i < n; i++ {
			if put {
				P(c, &dst[i*ds], src[i*ss], pe)
			} else {
				dst[i*ds] = G(c, &src[i*ss], pe)
			}
		}
		return
	}
	remote := mem.Slice[T](base, off, len(ext))
	if put {
		for i := 0; i < n; i++ {
			remote[i*ds] = src[i*ss]
		}
		wait.Ring(c.pe.peers[pe].door)
	} else {
		for i := 0; i < n; i++ {
			dst[i*ds] = remote[i*ss]
		}
	}
}

// PutBytes and GetBytes are the untyped forms (shmem_putmem, shmem_getmem).
func PutBytes(c *Ctx, dst, src []byte, pe int) { Put(c, dst, src, pe) }

// GetBytes copies len(dst) bytes of src on pe into dst (shmem_getmem).
func GetBytes(c *Ctx, dst, src []byte, pe int) { Get(c, dst, src, pe) }

// rmaSlow serves what the fast path refused: it panics for programmer
// errors and moves the bytes with process_vm_readv/writev for a peer
// that is not mapped. sym is the symmetric address, local the local
// buffer.
//
//go:noinline
func (c *Ctx) rmaSlow(routine string, put bool, sym uintptr, local []byte, pe, ndst, nsrc int) {
	c.live(routine)
	p := c.pe
	if uint(pe) >= uint(p.npes) {
		badPE(routine, pe, p.npes)
	}
	if ndst != nsrc {
		badLen(routine, ndst, nsrc)
	}
	if len(local) == 0 {
		return
	}
	off, in := p.heap.Offset(sym, uintptr(len(local)))
	if !in {
		arg := "dest"
		if !put {
			arg = "source"
		}
		badAddr(routine, arg, sym, uintptr(len(local)), p)
	}
	if p.peers[pe].base != nil {
		// Mapped after all (a zero-length element type and such).
		b := mem.ByteSlice(p.peers[pe].base, off, len(local))
		if put {
			copy(b, local)
		} else {
			copy(local, b)
		}
		return
	}
	p.cma(routine, put, off, local, pe)
}

// cma moves bytes to or from PE pe's heap in its own process.
func (p *PE) cma(routine string, put bool, off uintptr, local []byte, pe int) {
	s := p.job.ctl.Slot(pe)
	pid, base := int(s.Pid.Load()), uintptr(s.HeapAddr.Load())
	var err error
	if put {
		err = sys.ProcessVMWrite(pid, local, base+off)
		wait.Ring(p.peers[pe].door)
	} else {
		err = sys.ProcessVMRead(pid, local, base+off)
	}
	if err != nil {
		p.job.live()
		p.checkAbort(routine)
		panicf("%s: CMA transfer with PE %d (pid %d) failed: %v", routine, pe, pid, err)
	}
}
