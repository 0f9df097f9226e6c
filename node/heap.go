package node

import (
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/symalloc"
	"github.com/goshmem/goshmem/numa"
	"github.com/goshmem/goshmem/shm"
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

// Alloc allocates n elements of elem bytes each, aligned to align, on
// every PE (the collective behind Malloc, Calloc, Align and
// MallocWithHints) and returns this PE's block; nil for a zero-byte
// request. zero clears the block before the closing barrier.
//
// A request no heap can honour - n*elem overflows a uintptr, or align
// exceeds the alignment of the heap mappings (heapAlign) - fails with
// an error on every PE, as heap exhaustion does (shmem_malloc,
// shmem_calloc and shmem_align return a null pointer): it is still a
// collective call, with its closing barrier and the check that every PE
// made the same sequence of calls, and it leaves the heap unchanged.
func (p *PE) Alloc(routine string, n, elem, align uintptr, zero bool) (mem.Base, error) {
	return p.allocate(routine, n, elem, align, 1, zero)
}

// AllocIsolated is Alloc for data that PEs of other processes update
// with atomics or signals (MallocWithHints): the block starts on a
// multiple of IsolationLine and its size is rounded up to one, so no
// other allocation shares the lines it is on, and the coherence traffic
// of its atomics does not slow down a neighbour's loads and stores (nor
// theirs its atomics).
func (p *PE) AllocIsolated(routine string, n, elem, align uintptr) (mem.Base, error) {
	b, err := p.allocate(routine, n, elem, align, IsolationLine(), false)
	if b != nil {
		if p.isolated == nil {
			p.isolated = map[uintptr]bool{}
		}
		off, _ := p.heap.Offset(uintptr(b), 1)
		p.isolated[off] = true // Realloc keeps the hint
	}
	return b, err
}

// IsolationLine is the granule of AllocIsolated: 128 bytes, or the
// CPU's cache line if that is larger. Every allocation is already
// aligned to a 64-byte line; 128 also keeps apart the pair of lines
// that the adjacent-line prefetcher of x86 CPUs fetches together (so
// that two lines of one 128-byte block still interfere), and is the
// line of POWER and of some arm64 CPUs. Every PE of a node computes the
// same value.
func IsolationLine() uintptr {
	return uintptr(max(2*shm.CacheLine, numa.CacheLineSize()))
}

// allocate is Alloc with the size rounded up to a multiple of granule
// (a power of two) and the block aligned to at least granule. A request
// of zero bytes does nothing, not even the barrier (shmem_malloc: "When
// no action is performed, these routines return without performing a
// barrier"): every PE makes the same request, so every PE skips it.
func (p *PE) allocate(routine string, n, elem, align, granule uintptr, zero bool) (mem.Base, error) {
	size, ok := bytesOf(n, elem)
	if ok && size == 0 {
		return nil, nil
	}
	if ok && size > ^uintptr(0)-(granule-1) {
		ok = false
	}
	if !ok || size > 0 && align > p.mapAlign() {
		p.allocSync(routine)
		return nil, p.refuse(routine, n, elem, align, ok)
	}
	size = (size + granule - 1) &^ (granule - 1)
	off, err := p.alloc.Alloc(size, max(align, granule))
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

// bytesOf returns n*elem, and false when it overflows a uintptr.
func bytesOf(n, elem uintptr) (uintptr, bool) {
	if elem != 0 && n > ^uintptr(0)/elem {
		return 0, false
	}
	return n * elem, true
}

// mapAlign is the largest alignment an offset in the heap carries over
// to the heap's address in every PE's mapping.
func (p *PE) mapAlign() uintptr { return heapAlign(int64(p.heap.Size)) }

// refuse is the error of a request that no heap can honour: the byte
// size overflows (sizeOK false) or the alignment is too large.
func (p *PE) refuse(routine string, n, elem, align uintptr, sizeOK bool) error {
	if !sizeOK {
		return fmt.Errorf("goshmem.%s: %d elements of %d bytes are more bytes than the address space holds, so no symmetric heap can hold them "+
			"(SHMEM_SYMMETRIC_SIZE is %s per PE); allocate fewer elements", routine, n, elem, env.FormatSize(uint64(p.heap.Size)))
	}
	a := p.mapAlign()
	return fmt.Errorf("goshmem.%s: alignment %d is larger than the %d bytes to which every PE's heap mapping is aligned "+
		"(for a %d-byte heap, SHMEM_SYMMETRIC_SIZE), so no offset is aligned to it on every PE; use an alignment of at most %d",
		routine, align, a, p.heap.Size, a)
}

func (p *PE) blockAt(off uintptr) mem.Base { return mem.Base(mem.At[byte](p.heap.Base, off)) }

// Realloc resizes the block at addr (0: none) to n elements of elem
// bytes on every PE (shmem_realloc), keeping its contents, and returns
// the new block (nil for a zero-byte size). On failure, including a
// size that overflows, the old block stays. A block of AllocIsolated
// stays isolated (shmem_realloc preserves allocation hints): it moves,
// if it must, to a block of AllocIsolated's alignment and granule, and
// when there is no room for one the old block stays. No block and no
// bytes is no action, without a barrier, as for Alloc.
func (p *PE) Realloc(addr, n, elem uintptr) (mem.Base, error) {
	off := symalloc.NoOffset
	if addr != 0 {
		off = p.blockOffset("Realloc", addr)
	}
	size, ok := bytesOf(n, elem)
	if addr == 0 && ok && size == 0 {
		return nil, nil
	}
	p.sync("Realloc") // nobody still reads or writes the old block elsewhere
	if !ok {
		p.allocSync("Realloc")
		return nil, p.refuse("Realloc", n, elem, 0, false)
	}
	old, _ := p.alloc.SizeOf(off)
	var newOff uintptr
	var moved bool
	var err error
	if p.isolated[off] && size > 0 {
		newOff, moved, err = p.reallocIsolated(off, old, size)
	} else {
		newOff, moved, err = p.alloc.Realloc(off, size)
	}
	if err == nil && moved && off != symalloc.NoOffset {
		keep := min(old, size)
		copy(mem.ByteSlice(p.heap.Base, newOff, int(keep)), mem.ByteSlice(p.heap.Base, off, int(keep)))
	}
	if err == nil && off != symalloc.NoOffset && p.isolated[off] {
		delete(p.isolated, off)
		if newOff != symalloc.NoOffset {
			p.isolated[newOff] = true
		}
	}
	p.allocSync("Realloc")
	if err != nil {
		var ns *symalloc.ErrNoSpace
		if errors.As(err, &ns) {
			return nil, p.heapError("Realloc", err)
		}
		panicf("Realloc: block at heap offset %#x (to %d bytes): %v", off, size, err)
	}
	if newOff == symalloc.NoOffset {
		return nil, nil
	}
	return p.blockAt(newOff), nil
}

// reallocIsolated is Realloc of a block of AllocIsolated at off (old
// usable bytes) to size bytes, keeping it on lines of its own: in place
// when the granule-rounded size fits the block (the allocator shrinks in
// place), else in a new block of the granule's alignment, the old block
// freed after it was taken (moved: the caller copies). On failure the
// old block stays.
func (p *PE) reallocIsolated(off, old, size uintptr) (uintptr, bool, error) {
	g := IsolationLine()
	if size <= ^uintptr(0)-(g-1) { // else Alloc fails with ErrNoSpace
		size = (size + g - 1) &^ (g - 1)
	}
	if size <= old {
		newOff, _, err := p.alloc.Realloc(off, size)
		return newOff, false, err
	}
	newOff, err := p.alloc.Alloc(size, g)
	if err != nil {
		return symalloc.NoOffset, false, err
	}
	if err := p.alloc.Free(off); err != nil {
		return symalloc.NoOffset, false, err
	}
	return newOff, true, nil
}

// Free releases the block at addr on every PE (shmem_free). It waits
// for every PE to call it first, so no PE still uses the block. No
// block (addr 0) is no action, without a barrier.
func (p *PE) Free(addr uintptr) {
	if addr == 0 {
		return
	}
	off := p.blockOffset("Free", addr)
	p.sync("Free")
	delete(p.isolated, off)
	if err := p.alloc.Free(off); err != nil {
		panicf("Free: %v (the slice must come from Malloc, Calloc, Align or Realloc and be freed once)", err)
	}
	p.publishAlloc("Free")
	if p.job.cfg.Debug {
		p.sync("Free")
		p.checkAlloc("Free")
	}
}

func (p *PE) blockOffset(routine string, addr uintptr) uintptr {
	off, in := p.heap.Offset(addr, 1)
	if !in {
		h := p.heap
		panicf("%s: the slice at %#x is not in the symmetric heap [%#x, %#x) of PE %d; give it what Malloc, Calloc, Align or Realloc returned",
			routine, addr, uintptr(h.Base), uintptr(h.Base)+h.Size, p.me)
	}
	if err := p.alloc.Check(off); err != nil {
		panicf("%s: the slice at %#x does not start a live symmetric allocation: %v; give it what Malloc, Calloc, Align or Realloc returned, once", routine, addr, err)
	}
	return off
}

func (p *PE) heapError(routine string, err error) error {
	var ns *symalloc.ErrNoSpace
	if errors.As(err, &ns) {
		return fmt.Errorf("goshmem.%s: %w", routine, err) // (the heap's size is in err)
	}
	return fmt.Errorf("goshmem.%s: %w", routine, err)
}

// lastCall reads the latest allocation call that slot s published for
// call number seq.
func lastCall(s *job.Slot, seq uint64) symalloc.Call {
	return symalloc.CallFromWords([2]uint64{s.AllocLast[seq&1][0].Load(), s.AllocLast[seq&1][1].Load()})
}

// allocDiff says how PE q's allocation calls differ from PE me's, which
// made seq calls, the latest mine: q made at calls, the latest theirs.
// Every call but Free without SHMEM_DEBUG is checked, so when both made
// the same number of calls and their latest ones are alike the
// difference lies in an earlier Free.
func allocDiff(me, q int, seq, at uint64, mine, theirs symalloc.Call) string {
	switch {
	case at != seq:
		return fmt.Sprintf("PE %d has made %d allocation calls (the latest %v), PE %d %d (the latest %v)", me, seq, mine, q, at, theirs)
	case mine.Kind == symalloc.CallAlloc && theirs.Kind == symalloc.CallAlloc && mine.Arg0 == theirs.Arg0 && mine.Arg1 != theirs.Arg1:
		return fmt.Sprintf("call %d of each was %v aligned to %d bytes on PE %d but aligned to %d on PE %d", seq, mine, mine.Arg1, me, theirs.Arg1, q)
	case mine != theirs:
		return fmt.Sprintf("call %d of each was %v on PE %d but %v on PE %d", seq, mine, me, theirs, q)
	}
	return fmt.Sprintf("after %d calls, the latest %v on both, their histories differ: an earlier call differed "+
		"(a Free is compared with the other PEs' at once only under SHMEM_DEBUG)", seq, mine)
}

// allocSync publishes this PE's allocation state, waits for every PE,
// and checks that all made the same sequence of calls.
func (p *PE) allocSync(routine string) {
	p.publishAlloc(routine)
	p.sync(routine)
	p.checkAlloc(routine)
}

// publishAlloc publishes this PE's allocation state (how many
// collective allocation calls it made, and a hash of their history) in
// its slot, for checkAlloc. In a job across hosts a host's leader also
// writes it into its slot in every other host's control block
// (xpublishAlloc), which the next barrier completes: every PE then
// compares itself with the PEs of its host and with every host's
// leader, so a mismatch between hosts is caught too.
func (p *PE) publishAlloc(routine string) {
	seq := p.alloc.Seq()
	last := p.alloc.Last().Words()
	p.slot.AllocLast[seq&1][0].Store(last[0])
	p.slot.AllocLast[seq&1][1].Store(last[1])
	p.slot.AllocHash[seq&1].Store(p.alloc.Hash())
	p.slot.AllocSeq[seq&1].Store(seq)
	if x := p.job.x; x != nil && x.cl.Leaders[x.host] == p.me {
		p.xpublishAlloc(routine, seq, p.alloc.Hash(), last)
	}
}

func (p *PE) checkAlloc(routine string) {
	seq, hash := p.alloc.Seq(), p.alloc.Hash()
	for q := 0; q < p.npes; q++ {
		if x := p.job.x; x != nil && x.remote(q) && x.cl.Leaders[x.hostOf[q]] != q {
			continue // other hosts' leaders only: their other PEs publish on their host
		}
		s := p.job.ctl.Slot(q)
		qs, qh := s.AllocSeq[seq&1].Load(), s.AllocHash[seq&1].Load()
		if qs != seq || qh != hash {
			// The slot of this parity holds q's state only when q made
			// as many calls; its latest state is the larger of the two.
			at := max(s.AllocSeq[0].Load(), s.AllocSeq[1].Load())
			panicf("%s: symmetric allocations differ between PE %d and PE %d: %s; "+
				"every PE must call Malloc, Calloc, Align, Realloc and Free in the same order with the same sizes (and one goroutine of a PE at a time)",
				routine, p.me, q, allocDiff(p.me, q, seq, at, p.alloc.Last(), lastCall(s, at)))
		}
	}
}
