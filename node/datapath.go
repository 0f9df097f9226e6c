package node

import (
	"errors"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
)

// This file is the untyped data path that package goshmem builds its
// typed RMA, AMO and wait routines on.

// Target translates [addr, addr+n) of the calling PE's heap into PE
// pe's mapped heap. ok is false whenever the fast path cannot serve the
// call: a nil or destroyed context, a bad PE, an address outside the
// heap, or a peer reached through CMA. It inlines into every RMA
// routine.
func (c *Ctx) Target(addr, n uintptr, pe int) (mem.Base, uintptr, bool) {
	if c == nil {
		return nil, 0, false // the slow path names the routine
	}
	off, in := c.pe.heap.Offset(addr, n)
	if !in || uint(pe) >= uint(len(c.peers)) || c.slow {
		return nil, 0, false
	}
	b := c.peers[pe].base
	return b, off, b != nil
}

// CopyLarge copies src into dst (raw bytes, at least mem.LargeCopy of
// them, no Go pointers) for a put (put true: dst is at offset off of
// PE pe's heap) or a get (src is there) of this context: the copy
// engine, with the kernel chosen by the PE's timings near the
// non-temporal threshold (mem.Tuner); from SHMEM_COPY_SHARE bytes up,
// a copy between symmetric buffers may be shared with host-mates that
// wait meanwhile (sharecopy.go).
//
// It checks that the job is alive first (one load, against a copy of
// at least mem.LargeCopy bytes): a PE that only streams large puts and
// quiets, and never waits, would otherwise go on after a failure until
// the launcher kills it, or forever without one.
func (c *Ctx) CopyLarge(dst, src []byte, pe int, off uintptr, put bool) {
	p := c.pe
	if p.job.ctl.Header.Abort.State.Load() != 0 {
		routine := "Get"
		if put {
			routine = "Put"
		}
		p.checkAbort(routine)
	}
	if s := p.task.share; s != 0 && len(src) >= s {
		if c.world != nil {
			pe = c.world[pe] // a team context's PE number
		}
		p.copyMaybeShared(dst, src, pe, off, put)
		return
	}
	p.copier.Copy(dst, src)
}

// Ring wakes PE pe if it sleeps in a wait: call it after every store
// into pe's heap. It inlines to one load and a branch.
func (c *Ctx) Ring(pe int) { wait.Ring(c.peers[pe].door) }

// RingData is Ring after a write of data into PE pe's heap (a put, an
// AMO): it does not wake a PE asleep in a control-only wait, such as a
// barrier (wait.RingData).
func (c *Ctx) RingData(pe int) { wait.RingData(c.peers[pe].door) }

// RMASlow serves what the fast path refused: it panics for programmer
// errors and moves the bytes with process_vm_readv/writev for a peer
// that is not mapped. sym is the symmetric address, local the local
// buffer.
//
//go:noinline
func (c *Ctx) RMASlow(routine string, put bool, sym uintptr, local []byte, pe, ndst, nsrc int) {
	c.live(routine)
	p := c.pe
	pe = c.worldPE(routine, pe)
	if ndst != nsrc {
		badLen(routine, ndst, nsrc)
	}
	if len(local) == 0 {
		return
	}
	off := p.symOffset(routine, symArg(put), sym, uintptr(len(local)))
	if p.peers[pe].base != nil {
		// Mapped: the context is in SHMEM_DEBUG mode.
		b := mem.ByteSlice(p.peers[pe].base, off, len(local))
		if put {
			p.copier.Copy(b, local)
		} else {
			p.copier.Copy(local, b)
		}
		return
	}
	p.cma(c, routine, put, off, local, pe)
}

// PutSignalAcross serves PutSignal (ndst and nsrc elements, src as
// bytes) when PE pe is on another host: the data and then the signal
// (v set, or added when add, into the 8-byte word at symmetric address
// sig) go in one frame, the signal with the last piece of a large put,
// and the target host's leader applies them in that order. It reports
// false, and does nothing, when pe is not on another host: the caller
// then puts and posts the signal itself. The caller has checked sig and
// the operation.
//
//go:noinline
func (c *Ctx) PutSignalAcross(routine string, dst uintptr, src []byte, ndst, nsrc int, sig uintptr, v uint64, add bool, pe int) bool {
	if c == nil || c.pe.job.x == nil {
		return false
	}
	c.live(routine)
	p := c.pe
	w := c.worldPE(routine, pe)
	if !p.job.x.remote(w) {
		return false
	}
	if ndst != nsrc {
		badLen(routine, ndst, nsrc)
	}
	var off uintptr
	if len(src) > 0 {
		off = p.symOffset(routine, "dest", dst, uintptr(len(src)))
	}
	p.xputSignal(c, routine, w, off, src, p.symOffset(routine, "sig", sig, 8), v, add)
	return true
}

// CheckRMA panics unless an RMA on c that reaches the n bytes at
// symmetric address sym on PE pe is valid: a live context, a PE of the
// context, [sym, sym+n) inside the heap (and, under SHMEM_DEBUG, inside
// one live allocation). Routines that move their data in several steps
// call it first, so that a call that is going to fail fails before it
// has changed any memory. put tells whether sym is the dest (put) or
// the source (get), for the message.
//
//go:noinline
func (c *Ctx) CheckRMA(routine string, put bool, sym, n uintptr, pe int) {
	c.live(routine)
	c.worldPE(routine, pe)
	if n > 0 {
		c.pe.symOffset(routine, symArg(put), sym, n)
	}
}

// symArg names the symmetric argument of an RMA: the dest of a put,
// the source of a get.
func symArg(put bool) string {
	if put {
		return "dest"
	}
	return "source"
}

// symOffset returns the offset of [sym, sym+n) in this PE's heap, or
// panics naming routine and its argument arg when it is not inside the
// heap (or, under SHMEM_DEBUG, not inside one live allocation).
func (p *PE) symOffset(routine, arg string, sym, n uintptr) uintptr {
	off, in := p.heap.Offset(sym, n)
	if !in {
		badAddr(routine, arg, sym, n, p)
	}
	if p.job.cfg.Debug {
		p.checkAllocated(routine, arg, sym, off, n)
	}
	return off
}

// cma moves bytes to or from PE pe's heap in its own process, or on
// its host when that is another.
func (p *PE) cma(c *Ctx, routine string, put bool, off uintptr, local []byte, pe int) {
	if x := p.job.x; x != nil && x.remote(pe) {
		if put {
			p.xput(c, routine, pe, off, local)
		} else {
			p.xget(routine, pe, off, local)
		}
		return
	}
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
		p.job.checkPeer(pe)
		p.checkAbort(routine)
		hint := ""
		if errors.Is(err, sys.ErrPerm) {
			hint = " (process_vm_readv/writev needs ptrace access to the peer: the same user and kernel.yama.ptrace_scope 0, " +
				"or CAP_SYS_PTRACE; or map the heaps instead: SHMEM_TRANSPORT=auto or xpmem)"
		}
		panicf("%s: CMA transfer with PE %d (pid %d) failed: %v%s", routine, pe, pid, err, hint)
	}
}

// checkAllocated panics unless [off, off+n) lies inside one live
// symmetric allocation (SHMEM_DEBUG).
func (p *PE) checkAllocated(routine, arg string, addr, off, n uintptr) {
	start, size, ok := p.alloc.Block(off)
	if !ok || off+n > start+size {
		panicf("%s: %s [%#x, %#x) is inside the symmetric heap but not inside one live allocation (SHMEM_DEBUG); was it freed, or does it run past the end of its block?",
			routine, arg, addr, addr+n)
	}
}
