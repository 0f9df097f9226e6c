package node

import (
	"math/bits"
	"time"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
)

// Shared copies: a large put or get whose both buffers are symmetric
// is the built-in copy task, whose chunks the caller and host-mates
// that wait meanwhile copy (the task board of task.go). In a
// ping-pong, and while the target of a stream of puts waits in a
// barrier, the target's core would otherwise idle while the caller's
// core copies alone; two cores move a large copy 1.2-1.9 times as fast
// as one (docs/performance.md, "The waiting PE copies half").
//
// The caller publishes the copy's arguments on its task entry
// (job.Task: the two PEs and heap offsets, the length, the chunk size
// and the kernel), and runs TaskExecute's protocol with batches on both
// ends (job.Task): it claims shares of what is left from the front,
// thieves from the back, and it returns once every chunk is copied. A
// thief's chunk is ordered before the caller's return by the thief's
// atomic add to the caller's TaskDone, so a flag
// that the caller stores afterwards (Fence and P, a barrier)
// publishes the whole copy, as after a copy of its own.
//
// Both buffers must be in heaps: a thief in another process reaches
// them only through its own mappings (a private buffer of a goroutine
// PE might even live on its goroutine's stack, which moves). And every
// PE of the host must have a CPU of its own (Job.fit): a thief that
// loses its CPU in the middle of a chunk would hold the caller for a
// time slice.

// Whether sharing pays depends on the machine's state and the program.
// On 2 vCPUs of an AMD EPYC (Zen 4) put_bw at 64 KiB ran at 66-67 GB/s
// shared against 55 alone while the 2-PE barrier took 0.06 us, and
// at 256 KiB at 37-38 against 38-56 GB/s while it took 0.28 us (the
// machine's slow state, where a cache line moves between the two
// cores several times slower); from 1 MiB up sharing won in both
// states (60-82 against 48 GB/s). So copies below 4 MiB choose by
// timing, per power-of-two size class (a mem.Chooser: adjacent blocks
// of shared and lone copies now and then), and copies from 4 MiB up
// are always shared.
const (
	shareTunedMax = 4 << 20
	// shareTuned is the number of size classes that choose:
	// [64 KiB, 128 KiB), ..., [2 MiB, 4 MiB).
	shareTuned = 6
)

// copyChunkMin is the smallest chunk of a shared copy, and
// copyChunkDiv the number of chunks a copy is cut into when its
// chunks are larger: a thief arriving late, or the caller, waits for
// at most one chunk of the other's.
const (
	copyChunkMin = 16 << 10
	copyChunkDiv = 16
)

// initShare prepares p's shared copies once its task state is known.
func (p *PE) initShare() {
	p.task.copy = task{fn: p.copyChunks, name: "goshmem copy (a shared put or get)", hash: job.TaskCopyFn}
	// Every host-mate must map every heap: p maps each of them (its
	// victims are those it maps), and the job maps all or none
	// (SHMEM_TRANSPORT).
	mates := p.npes
	if p.job.host != nil {
		mates = len(p.job.host)
	}
	if p.job.cfg.CopyShare > 0 && p.task.board != nil && p.job.fit && len(p.task.victims) == mates-1 {
		p.task.share = int(max(p.job.cfg.CopyShare, mem.LargeCopy))
		p.shareCopier = mem.NewSharedTuner(mem.DefaultCopyPlan(), !p.job.cfg.CopyNoAdapt)
		for i := range p.task.tune {
			p.task.tune[i] = mem.NewChooser(1) // kind 1: shared
		}
	}
}

// copyMaybeShared is CopyLarge of n >= p.task.share bytes (pe a world
// PE number): shared from shareTunedMax up, below as its size class's
// Chooser says (kind 1 shared, 0 alone); a copy that cannot be shared
// is made alone.
//
//go:noinline
func (p *PE) copyMaybeShared(dst, src []byte, pe int, off uintptr, put bool) {
	n := min(len(dst), len(src))
	if n >= shareTunedMax {
		if !p.copyShared(dst, src, pe, off, put) {
			p.copier.Copy(dst, src)
		}
		return
	}
	ch := p.task.tune[bits.Len(uint(n))-17] // 2^16 <= n < 2^22
	k := ch.Pick()
	var start time.Time
	if k.Timed {
		start = time.Now()
	}
	if k.Kind == 0 || !p.copyShared(dst, src, pe, off, put) {
		p.copier.Copy(dst, src)
	}
	if k.Timed {
		ch.Done(k, time.Since(start))
	}
}

// copyShared copies src into dst for a put (dst at off in PE pe's
// heap, src local) or a get (src at off in PE pe's heap, dst local)
// as a shared copy, and reports whether it did; false: the caller
// copies alone (a local buffer outside the heap, overlapping buffers,
// or the PE busy with another task or copy).
func (p *PE) copyShared(dst, src []byte, pe int, off uintptr, put bool) bool {
	n := min(len(dst), len(src))
	local := mem.Addr(src)
	if !put {
		local = mem.Addr(dst)
	}
	loff, in := p.heap.Offset(local, uintptr(n))
	if !in || mem.Overlaps(dst[:n], src[:n]) || !p.task.busy.CompareAndSwap(0, busyCopy) {
		return false
	}
	// The arguments go out with plain stores (release order on amd64;
	// executeShared publishes them with Claim): an XCHG each waited in
	// turn for the entry line, which the last copy's thief holds after
	// its claim.
	e := &p.slot.Task
	spe, soff, dpe, doff := uint32(p.me), uint64(loff), uint32(pe), uint64(off)
	if !put {
		spe, soff, dpe, doff = uint32(pe), uint64(off), uint32(p.me), uint64(loff)
	}
	chunk := min(max(copyChunkMin, (n/copyChunkDiv+4095)&^4095), 1<<30)
	c := p.shareCopier.Pick(n)
	kind := uint32(0)
	if c.NT {
		kind = 1
	}
	mem.StoreRelease(&e.SrcPE, spe)
	mem.StoreRelease64(&e.SrcOff, soff)
	mem.StoreRelease(&e.DstPE, dpe)
	mem.StoreRelease64(&e.DstOff, doff)
	mem.StoreRelease64(&e.Len, uint64(n))
	mem.StoreRelease(&e.Chunk, uint32(chunk))
	mem.StoreRelease(&e.Kind, kind)
	var start time.Time
	if c.Timed() {
		start = time.Now()
	}
	p.executeShared(&p.task.copy, int(job.TaskCopy), (n+chunk-1)/chunk, true) // clears busy
	if c.Timed() {
		p.shareCopier.Done(c, time.Since(start))
	}
	return true
}

// copyChunks is the body of the built-in copy task: it copies chunks
// [lo, hi) of the copy that PE owner executes, on the owner or on a
// thief.
func (p *PE) copyChunks(owner, lo, hi int) {
	e := &p.job.ctl.Slot(owner).Task
	n, chunk := e.Len.Load(), uint64(e.Chunk.Load())
	from, to := uint64(lo)*chunk, min(uint64(hi)*chunk, n)
	if from >= to {
		return
	}
	sb, db := p.peers[e.SrcPE.Load()].base, p.peers[e.DstPE.Load()].base
	if sb == nil || db == nil {
		panicf("shared copy of PE %d: PE %d does not map PE %d's or PE %d's heap (SHMEM_TRANSPORT must map every heap of the host)",
			owner, p.me, e.SrcPE.Load(), e.DstPE.Load())
	}
	mem.CopyKind(mem.ByteSlice(db, uintptr(e.DstOff.Load()+from), int(to-from)),
		mem.ByteSlice(sb, uintptr(e.SrcOff.Load()+from), int(to-from)), e.Kind.Load() == 1)
}
