// Package symalloc is the deterministic allocator behind goshmem's
// collective symmetric-heap routines (shmem_malloc, shmem_calloc,
// shmem_align, shmem_realloc and shmem_free).
//
// Every PE runs its own Allocator over its own copy of the metadata,
// which lives in ordinary Go memory and never in the symmetric heap
// itself. Symmetric addressing works only because every PE, fed the same
// sequence of calls, computes the same offsets: the algorithm is
// therefore a pure function of the call sequence. It uses no maps, no
// clocks and no randomness, and its only state is a slice of segments.
//
// # Algorithm
//
// The heap [0, Size()) is described by a slice of segments sorted by
// offset that tile it exactly; each segment is either one allocated
// block or a maximal run of free space (two free segments are never
// adjacent: Free coalesces with both neighbours at once). Every segment
// starts on a multiple of the minimum alignment and has a size that is a
// multiple of it; request sizes are rounded up to it.
//
// Alloc is address-ordered first fit: it walks the segments from offset
// 0 and takes the first free one that can hold the request at the
// requested alignment, placing the block at the lowest aligned offset in
// it. Because free runs are maximal, the result is exactly the lowest
// offset at which the request fits. Alignment padding in front of the
// block stays free and remains usable by later, smaller requests.
//
// Alloc, Free and Realloc are O(number of segments) at worst (a scan,
// or a binary search plus a memmove of the slice); they allocate no Go
// memory once the segment slice has grown to its high-water mark (error
// values aside).
//
// # Collective consistency check
//
// Seq and Hash summarise every operation performed so far, including
// failed ones: Seq counts them and Hash is an FNV-1a/64 hash over each
// operation's kind, arguments, result offset and outcome. PEs that made
// the same calls in the same order have equal Seq and Hash; comparing
// them (for example in a debug-mode barrier) detects programs whose PEs
// diverged in their collective allocation sequence. Queries (SizeOf,
// InUse, Largest, ...) are not recorded.
//
// An Allocator is not safe for concurrent use; the caller serialises
// calls (collective allocation is serialised by definition).
package symalloc

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/goshmem/goshmem/internal/env"
)

// NoOffset is the offset returned for a zero-size request (malloc(0)
// returns NULL) and on failure. Free(NoOffset) is a no-op, and
// Realloc(NoOffset, n) behaves as Alloc(n, 0).
const NoOffset = ^uintptr(0)

// DefaultMinAlign is the minimum alignment New uses when given 0: one
// cache line.
const DefaultMinAlign = 64

// Errors returned by Alloc, Free and Realloc wrap one of these (test with
// errors.Is), except for heap exhaustion, which is an *ErrNoSpace.
var (
	// ErrBadAlign: the requested alignment is not a power of two.
	ErrBadAlign = errors.New("alignment is not a power of two")
	// ErrNotAllocated: the offset is outside the heap, or inside an
	// allocated block but not at its start.
	ErrNotAllocated = errors.New("not the start of an allocated block")
	// ErrDoubleFree: the offset lies in free space, most likely because
	// the block that started there has already been freed.
	ErrDoubleFree = errors.New("not allocated: it lies in free space (double free?)")
)

// ErrNoSpace reports a request that does not fit in the heap. The heap
// may be fragmented: Largest can exceed Request when the alignment
// cannot be met inside that block.
type ErrNoSpace struct {
	Request  uintptr // size asked for, before rounding
	Align    uintptr // effective alignment (at least the minimum alignment)
	HeapSize uintptr // heap size as given to New
	Largest  uintptr // size of the largest free block at the time of failure
	InUse    uintptr // bytes allocated at the time of failure
}

func (e *ErrNoSpace) Error() string {
	return fmt.Sprintf("symmetric heap exhausted: a request of %s, aligned to %d, does not fit in the heap of %s, "+
		"with %d bytes in use and a largest free block of %d bytes; raise SHMEM_SYMMETRIC_SIZE",
		env.FormatSize(uint64(e.Request)), e.Align, env.FormatSize(uint64(e.HeapSize)), e.InUse, e.Largest)
}

// seg is one segment of the heap: an allocated block or a maximal free
// run.
type seg struct {
	off, size uintptr
	free      bool
}

// Allocator is one PE's copy of the symmetric-heap metadata. The zero
// value is not usable; call New.
//
// Alloc, Free and Realloc must not run concurrently with each other
// (they are collective calls, in one order on every PE), but Block and
// SizeOf may run concurrently with any of them: SHMEM_DEBUG checks the
// RMA of every goroutine of a PE against the live blocks while another
// goroutine of that PE allocates (OpenSHMEM's SHMEM_THREAD_MULTIPLE).
type Allocator struct {
	mu       sync.RWMutex // Alloc, Free and Realloc write segs; Block and SizeOf read it
	heapSize uintptr      // as given to New
	limit    uintptr      // managed bytes: heapSize rounded down to minAlign
	minAlign uintptr
	segs     []seg // tiles [0, limit), sorted by off, no two adjacent free
	inUse    uintptr
	seq      uint64
	hash     uint64
	last     Call
}

// New returns an allocator for a heap of size bytes whose blocks all
// start on multiples of minAlign and have sizes rounded up to it.
// minAlign must be a power of two (0 means DefaultMinAlign); New panics
// otherwise. Only the first size&^(minAlign-1) bytes (size rounded down
// to a multiple of minAlign) are ever handed out.
func New(size uintptr, minAlign uintptr) *Allocator {
	if minAlign == 0 {
		minAlign = DefaultMinAlign
	}
	if minAlign&(minAlign-1) != 0 {
		panic(fmt.Sprintf("symalloc: minimum alignment %d is not a power of two", minAlign))
	}
	a := &Allocator{
		heapSize: size,
		limit:    size &^ (minAlign - 1),
		minAlign: minAlign,
		hash:     fnvOffset,
	}
	if a.limit > 0 {
		a.segs = append(a.segs, seg{off: 0, size: a.limit, free: true})
	}
	return a
}

// Size returns the number of bytes the allocator manages: the heap size
// given to New rounded down to the minimum alignment.
func (a *Allocator) Size() uintptr { return a.limit }

// MinAlign returns the minimum alignment (and size granule) of blocks.
func (a *Allocator) MinAlign() uintptr { return a.minAlign }

// InUse returns the number of bytes in live blocks (usable sizes, that is
// after rounding; alignment padding between blocks is not counted).
func (a *Allocator) InUse() uintptr { return a.inUse }

// Largest returns the size of the largest free block, an upper bound on
// the largest request that can currently succeed.
func (a *Allocator) Largest() uintptr {
	var m uintptr
	for _, s := range a.segs {
		if s.free && s.size > m {
			m = s.size
		}
	}
	return m
}

// SizeOf returns the usable size of the live block starting at off (the
// requested size rounded up to the minimum alignment, or more after an
// in-place Realloc), and false if no live block starts there.
func (a *Allocator) SizeOf(off uintptr) (uintptr, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	i := a.find(off)
	if i < 0 || a.segs[i].free || a.segs[i].off != off {
		return 0, false
	}
	return a.segs[i].size, true
}

// Check returns nil if a live block starts at off, else why not: an
// error wrapping ErrDoubleFree (off lies in free space) or
// ErrNotAllocated (outside the heap, or inside a block, named), as Free
// would return, without freeing anything.
func (a *Allocator) Check(off uintptr) error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	_, err := a.lookup(off)
	return err
}

// Seq returns the number of Alloc, Free and Realloc calls made so far,
// successful or not.
func (a *Allocator) Seq() uint64 { return a.seq }

// Hash returns a running FNV-1a/64 hash over every Alloc, Free and
// Realloc call so far: its kind, its arguments, the offset it returned
// and whether (and how) it failed. Allocators fed the same call sequence
// have equal hashes; any difference in kinds, sizes, alignments, offsets
// or order changes it (with overwhelming probability). The heap size is
// not hashed.
func (a *Allocator) Hash() uint64 { return a.hash }

// Last returns the latest Alloc, Free or Realloc call (the zero Call
// before the first): what a consistency check names when Hash differs.
func (a *Allocator) Last() Call { return a.last }

// Call is one Alloc, Free or Realloc call, as the consistency check
// names it: Alloc(Arg0 = size, Arg1 = align), Free(Arg0 = off),
// Realloc(Arg0 = off, Arg1 = size).
type Call struct {
	Kind       byte // CallAlloc, CallFree or CallRealloc; 0: none
	Arg0, Arg1 uintptr
}

// Call kinds (as hashed).
const (
	CallAlloc   = opAlloc
	CallFree    = opFree
	CallRealloc = opRealloc
)

// callArgBits is how many bits of Arg0 Words keeps: an Arg0 of
// callArgMax-1 or more stores callArgMax, which String names as too
// large, and NoOffset stores callArgMax-1.
const (
	callArgBits = 56
	callArgMax  = 1<<callArgBits - 1
)

// Words encodes c in two words for another process to read (the kind
// and Arg0 in the first, Arg0 saturated at 2^56-1; Arg1 in the second).
func (c Call) Words() [2]uint64 {
	a := uint64(c.Arg0)
	switch {
	case c.Arg0 == NoOffset:
		a = callArgMax - 1
	case a >= callArgMax-1:
		a = callArgMax
	}
	return [2]uint64{uint64(c.Kind)<<callArgBits | a, uint64(c.Arg1)}
}

// CallFromWords decodes what Words encoded.
func CallFromWords(w [2]uint64) Call {
	c := Call{Kind: byte(w[0] >> callArgBits), Arg0: uintptr(w[0] & callArgMax), Arg1: uintptr(w[1])}
	if w[0]&callArgMax == callArgMax-1 {
		c.Arg0 = NoOffset
	}
	return c
}

// String names the call as a user made it: "an allocation of 64 bytes"
// (its alignment is Arg1), "a Free of the block at heap offset 0x40", "a
// Realloc of the block at heap offset 0x40 to 128 bytes".
func (c Call) String() string {
	size := func(n uintptr) string {
		if n >= callArgMax {
			return "more than 2^56 bytes"
		}
		return fmt.Sprintf("%d bytes", n)
	}
	block := func(off uintptr) string {
		switch {
		case off == NoOffset:
			return "no block"
		case off >= callArgMax:
			return "an offset beyond 2^56"
		}
		return fmt.Sprintf("the block at heap offset %#x", off)
	}
	switch c.Kind {
	case CallAlloc:
		return "an allocation of " + size(c.Arg0)
	case CallFree:
		return "a Free of " + block(c.Arg0)
	case CallRealloc:
		return fmt.Sprintf("a Realloc of %s to %d bytes", block(c.Arg0), c.Arg1)
	}
	return "no call"
}

// Alloc allocates a block of at least size bytes whose offset is a
// multiple of align and returns its offset. align 0 means the minimum
// alignment, and alignments below it are raised to it; an align that is
// not a power of two fails with an error wrapping ErrBadAlign. size 0
// returns (NoOffset, nil) and allocates nothing. When no free block can
// hold the request Alloc returns NoOffset and an *ErrNoSpace; requests
// whose rounded size would overflow a uintptr fail the same way.
func (a *Allocator) Alloc(size, align uintptr) (off uintptr, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	off, err = a.alloc(size, align)
	a.record(opAlloc, size, align, off, err)
	return off, err
}

// Free releases the live block that starts at off and coalesces it with
// free neighbours. Free(NoOffset) is a no-op. Any other offset that is
// not the start of a live block leaves the allocator unchanged and
// returns an error wrapping ErrDoubleFree (off lies in free space) or
// ErrNotAllocated (off is outside the heap or inside a block), so the
// caller can report it under its own routine name.
func (a *Allocator) Free(off uintptr) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.free(off)
	a.record(opFree, off, 0, 0, err)
	return err
}

// Realloc resizes the live block at off to at least size bytes and
// returns its offset, which is off itself unless moved is true.
//
//   - Realloc(NoOffset, size) behaves as Alloc(size, 0); moved is false.
//   - Realloc(off, 0) behaves as Free(off) and returns (NoOffset, false, err).
//   - Shrinking always happens in place; the released tail becomes free.
//   - Growing happens in place when the free space right after the
//     block is large enough.
//   - Otherwise the block moves to the lowest free offset (aligned to
//     the minimum alignment only, as for shmem_malloc; a larger
//     alignment the block was allocated with is not preserved) that does
//     not overlap the old block. Failing that, it moves to the start of
//     the free run formed by the old block and its free neighbours; then
//     newOff < off and the two ranges may overlap.
//
// When moved is true the old block has already been released in the
// metadata, but the allocator never touches heap memory, so its bytes
// are intact: the caller must copy min(old usable size, new usable size)
// bytes from off to newOff with memmove semantics (Go's built-in copy is
// fine) before anything else allocates in the heap. Obtain the old usable
// size with SizeOf(off) before calling Realloc.
//
// On failure the old block is left allocated and unchanged, and Realloc
// returns (NoOffset, false, err): an *ErrNoSpace when the heap has no room,
// or an error wrapping ErrNotAllocated or ErrDoubleFree when off is not
// the start of a live block.
func (a *Allocator) Realloc(off, size uintptr) (newOff uintptr, moved bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	newOff, moved, err = a.realloc(off, size)
	a.record(opRealloc, off, size, newOff, err)
	return newOff, moved, err
}

func (a *Allocator) alloc(size, align uintptr) (uintptr, error) {
	if align&(align-1) != 0 {
		return NoOffset, fmt.Errorf("%w: %d", ErrBadAlign, align)
	}
	if align < a.minAlign {
		align = a.minAlign
	}
	if size == 0 {
		return NoOffset, nil
	}
	if r, ok := a.round(size); ok {
		if i, at := a.fit(r, align); i >= 0 {
			a.take(i, at, r)
			return at, nil
		}
	}
	return NoOffset, a.noSpace(size, align)
}

func (a *Allocator) free(off uintptr) error {
	if off == NoOffset {
		return nil
	}
	i, err := a.lookup(off)
	if err != nil {
		return err
	}
	a.release(i)
	return nil
}

func (a *Allocator) realloc(off, size uintptr) (uintptr, bool, error) {
	if off == NoOffset {
		o, err := a.alloc(size, 0)
		return o, false, err
	}
	if size == 0 {
		return NoOffset, false, a.free(off)
	}
	i, err := a.lookup(off)
	if err != nil {
		return NoOffset, false, err
	}
	r, ok := a.round(size)
	if !ok {
		return NoOffset, false, a.noSpace(size, a.minAlign)
	}
	cur := a.segs[i].size
	if r <= cur {
		a.shrink(i, r)
		return off, false, nil
	}
	extra := r - cur
	hasNext := i+1 < len(a.segs) && a.segs[i+1].free
	if hasNext && a.segs[i+1].size >= extra {
		a.segs[i].size = r
		a.inUse += extra
		if a.segs[i+1].size == extra {
			a.segs = slices.Delete(a.segs, i+1, i+2)
		} else {
			a.segs[i+1].off += extra
			a.segs[i+1].size -= extra
		}
		return off, false, nil
	}
	if j, at := a.fit(r, a.minAlign); j >= 0 {
		a.take(j, at, r)
		if err := a.free(off); err != nil {
			panic("symalloc: internal error: " + err.Error())
		}
		return at, true, nil
	}
	// Only the free run around the old block is left. Its start is below
	// off (without a free predecessor the run is the block plus its
	// free successor, already found too small above).
	lo, hi := i, i+1
	start, run := off, cur
	if i > 0 && a.segs[i-1].free {
		lo = i - 1
		start = a.segs[lo].off
		run += a.segs[lo].size
	}
	if hasNext {
		hi = i + 2
		run += a.segs[i+1].size
	}
	if run < r {
		return NoOffset, false, a.noSpace(size, a.minAlign)
	}
	a.inUse += extra
	repl := [2]seg{{off: start, size: r}, {off: start + r, size: run - r, free: true}}
	n := 1
	if run > r {
		n = 2
	}
	a.segs = slices.Replace(a.segs, lo, hi, repl[:n]...)
	return start, true, nil
}

// round rounds size up to the minimum alignment, reporting false on
// overflow or when the result cannot fit in the heap at all.
func (a *Allocator) round(size uintptr) (uintptr, bool) {
	if size > a.limit {
		return 0, false
	}
	return (size + a.minAlign - 1) &^ (a.minAlign - 1), true
}

// fit returns the index of the first free segment that can hold r bytes
// at alignment align, and the aligned offset in it; -1 if none.
func (a *Allocator) fit(r, align uintptr) (int, uintptr) {
	for i, s := range a.segs {
		if !s.free {
			continue
		}
		pad := -s.off & (align - 1)
		if pad <= s.size && r <= s.size-pad {
			return i, s.off + pad
		}
	}
	return -1, 0
}

// take carves the block [at, at+r) out of free segment i.
func (a *Allocator) take(i int, at, r uintptr) {
	s := a.segs[i]
	pre := at - s.off
	post := s.size - pre - r
	var repl [3]seg
	n := 0
	if pre > 0 {
		repl[n] = seg{off: s.off, size: pre, free: true}
		n++
	}
	repl[n] = seg{off: at, size: r}
	n++
	if post > 0 {
		repl[n] = seg{off: at + r, size: post, free: true}
		n++
	}
	a.segs = slices.Replace(a.segs, i, i+1, repl[:n]...)
	a.inUse += r
}

// release frees the block in segment i and coalesces it.
func (a *Allocator) release(i int) {
	a.inUse -= a.segs[i].size
	a.segs[i].free = true
	if i+1 < len(a.segs) && a.segs[i+1].free {
		a.segs[i].size += a.segs[i+1].size
		a.segs = slices.Delete(a.segs, i+1, i+2)
	}
	if i > 0 && a.segs[i-1].free {
		a.segs[i-1].size += a.segs[i].size
		a.segs = slices.Delete(a.segs, i, i+1)
	}
}

// shrink reduces the block in segment i to r <= its size bytes, giving
// the tail to the following free segment or a new one.
func (a *Allocator) shrink(i int, r uintptr) {
	tail := a.segs[i].size - r
	if tail == 0 {
		return
	}
	a.segs[i].size = r
	a.inUse -= tail
	if i+1 < len(a.segs) && a.segs[i+1].free {
		a.segs[i+1].off -= tail
		a.segs[i+1].size += tail
		return
	}
	a.segs = slices.Insert(a.segs, i+1, seg{off: a.segs[i].off + r, size: tail, free: true})
}

// find returns the index of the segment containing off, or -1 when off
// is outside the heap.
func (a *Allocator) find(off uintptr) int {
	if off >= a.limit {
		return -1
	}
	// Largest i with segs[i].off <= off; segs[0].off == 0 <= off.
	lo, hi := 0, len(a.segs)
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if a.segs[m].off <= off {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// lookup returns the index of the live block starting at off, or an
// error saying why there is none.
func (a *Allocator) lookup(off uintptr) (int, error) {
	i := a.find(off)
	switch {
	case i < 0:
		return -1, fmt.Errorf("offset %#x: %w (outside the %d-byte heap)", off, ErrNotAllocated, a.limit)
	case a.segs[i].free:
		return -1, fmt.Errorf("offset %#x: %w", off, ErrDoubleFree)
	case a.segs[i].off != off:
		return -1, fmt.Errorf("offset %#x: %w (it is inside the %d-byte block at %#x)",
			off, ErrNotAllocated, a.segs[i].size, a.segs[i].off)
	}
	return i, nil
}

func (a *Allocator) noSpace(size, align uintptr) error {
	return &ErrNoSpace{Request: size, Align: align, HeapSize: a.heapSize, Largest: a.Largest(), InUse: a.inUse}
}

// Operation kinds and outcomes, as hashed.
const (
	opAlloc   = 1
	opFree    = 2
	opRealloc = 3

	outOK         = 0
	outNoSpace    = 1
	outBadAlign   = 2
	outNotAlloc   = 3
	outDoubleFree = 4
)

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (a *Allocator) record(op byte, x, y, result uintptr, err error) {
	out := byte(outOK)
	if err != nil {
		var ns *ErrNoSpace
		switch {
		case errors.As(err, &ns):
			out = outNoSpace
		case errors.Is(err, ErrBadAlign):
			out = outBadAlign
		case errors.Is(err, ErrDoubleFree):
			out = outDoubleFree
		default:
			out = outNotAlloc
		}
	}
	h := a.hash
	h = (h ^ uint64(op)) * fnvPrime
	for _, v := range [3]uint64{uint64(x), uint64(y), uint64(result)} {
		for k := 0; k < 64; k += 8 {
			h = (h ^ (v >> k & 0xff)) * fnvPrime
		}
	}
	h = (h ^ uint64(out)) * fnvPrime
	a.hash = h
	a.seq++
	a.last = Call{Kind: op, Arg0: x, Arg1: y}
}
