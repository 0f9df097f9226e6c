package node

// Strided transfers to PEs of other hosts (IPut, IGet, and the strided
// collectives' blocks): the elements travel packed, as xIPut frames of
// whole elements that the target host's leader scatters, and as xIGet
// requests answered with the elements packed, not one message each.

import (
	"math/bits"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/internode"
)

// stridedStage is the most bytes of elements StridedAcross packs at a
// time, on its stack: a put's frame, or a get's round trip.
const stridedStage = 16 << 10

// StridedAcross serves IPut and IGet when PE pe is on another host: n
// elements of size bytes, the symmetric side's at sym, sym+symDist, ...,
// the local side's at local[0:], local[localDist:], ...; they travel
// packed, in frames of whole elements that the target's host scatters
// (a put) or in one answer per stridedStage bytes (a get), not in one
// message each. It reports false, having done nothing, when pe is not
// on another host or an element is larger than stridedStage (the
// caller then moves the elements one at a time). The caller has
// checked the arguments with CheckRMA.
func (c *Ctx) StridedAcross(routine string, put bool, sym, symDist uintptr, local []byte, localDist, size uintptr, n, pe int) bool {
	p := c.pe
	pe = c.worldPE(routine, pe)
	if x := p.job.x; x == nil || !x.remote(pe) || size == 0 || size > stridedStage || n <= 0 {
		return false
	}
	if put && size > uintptr(p.xmax()) {
		return false
	}
	off := p.symOffset(routine, symArg(put), sym, uintptr(n-1)*symDist+size)
	var stage [stridedStage]byte
	per := int(stridedStage / size)
	for i := 0; i < n; i += per {
		k := min(per, n-i)
		buf := stage[:uintptr(k)*size]
		at := off + uintptr(i)*symDist
		if put {
			for e := range k {
				copy(buf[uintptr(e)*size:], local[uintptr(i+e)*localDist:][:size])
			}
			p.xiput(c, routine, pe, at, symDist, size, buf)
			continue
		}
		p.xiget(routine, pe, at, symDist, size, buf)
		for e := range k {
			copy(local[uintptr(i+e)*localDist:][:size], buf[uintptr(e)*size:])
		}
	}
	return true
}

// xiput writes the elements of size bytes packed in data to offsets
// off, off+dist, ... of PE pe's heap segment (another host's), as
// frames of whole elements (xIPut). size is at most xmax.
func (p *PE) xiput(c *Ctx, routine string, pe int, off, dist, size uintptr, data []byte) {
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	per := uintptr(p.xmax()) / size
	for len(data) > 0 {
		k := min(uintptr(len(data))/size, per)
		h := internode.Header{Op: xIPut, PE: uint32(pe), Off: uint64(off), Arg0: uint64(dist), Arg1: uint64(size)}
		p.xsend(routine, &h, data[:k*size])
		data, off = data[k*size:], off+k*dist
	}
	p.xdirty(c, pe)
}

// xiget reads elements of size bytes at offsets off, off+dist, ... of
// PE pe's heap segment (another host's) into buf, packed: one round
// trip per window of them (xIGet).
func (p *PE) xiget(routine string, pe int, off, dist, size uintptr, buf []byte) {
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	per := xWindow / size
	for len(buf) > 0 {
		k := min(uintptr(len(buf))/size, per)
		h := internode.Header{Op: xIGet, PE: uint32(pe), Off: uint64(off), Arg0: uint64(dist), Arg1: uint64(size)<<32 | uint64(k)}
		p.xrequest(routine, &h)
		copy(buf[:k*size], xp.window[:k*size])
		buf, off = buf[k*size:], off+k*dist
	}
}

// stridedTarget is target for n >= 1 elements of size >= 1 bytes at
// off, off+dist, ... (dist >= size).
func (x *xsink) stridedTarget(pe uint32, off, dist, size, n uint64) (mem.Base, bool) {
	heap := uint64(x.j.heapSize) + job.PoolBytes
	if n == 0 || size == 0 || dist != 0 && dist < size || dist > heap || n > heap {
		return nil, false
	}
	hi, ext := bits.Mul64(n-1, dist)
	if hi != 0 || ext > heap {
		return nil, false
	}
	return x.target(pe, off, ext+size)
}

// scatter applies an xIPut frame: its elements, packed in buf, into
// PE h.PE's heap segment at h.Off, h.Off+h.Arg0, ...
func (x *xsink) scatter(from int, h *internode.Header, buf []byte) {
	size := h.Arg1
	b, ok := x.stridedTarget(h.PE, h.Off, h.Arg0, size, uint64(h.Len)/max(size, 1))
	if !ok || uint64(h.Len)%size != 0 {
		x.bad(from, h)
		return
	}
	for i := uint64(0); i < uint64(h.Len); i += size {
		copy(mem.ByteSlice(b, uintptr(h.Off+i/size*h.Arg0), int(size)), buf[i:i+size])
	}
	wait.RingData(x.j.bell(int(h.PE)))
}

// gather answers an xIGet request with the elements packed.
func (x *xsink) gather(from int, h *internode.Header) {
	size, n := h.Arg1>>32, h.Arg1&0xffffffff
	b, ok := x.stridedTarget(h.PE, h.Off, h.Arg0, size, n)
	if !ok || n*size > xWindow {
		x.bad(from, h)
		return
	}
	out := make([]byte, n*size) // (its own: the transport may send it later)
	for i := uint64(0); i < n; i++ {
		copy(out[i*size:(i+1)*size], mem.ByteSlice(b, uintptr(h.Off+i*h.Arg0), int(size)))
	}
	x.reply(from, h, 0, out)
}
