package symalloc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// model is a naive reference allocator over a small heap: one owner entry
// per minimum-alignment unit. It implements the documented placement
// policy directly (lowest offset that fits, at the requested alignment),
// so the allocator's results can be predicted exactly, and it holds
// simulated heap contents to catch overlapping blocks.
type model struct {
	unit, limit, heapSize uintptr
	owner                 []int // per unit: -1 free, else first unit of the owning block
	units                 []int // per unit: block length in units, valid at a block's first unit
	inUse                 uintptr

	mem  []byte    // simulated heap contents, one byte per unit
	tag  []byte    // per unit: fill byte of the block starting there
	next byte      // next fill byte
	live []uintptr // live block offsets, in allocation order
}

const (
	kOK = iota
	kNoSpace
	kBadAlign
	kNotAlloc
	kDoubleFree
)

func kindOf(err error) int {
	var ns *ErrNoSpace
	switch {
	case err == nil:
		return kOK
	case errors.As(err, &ns):
		return kNoSpace
	case errors.Is(err, ErrBadAlign):
		return kBadAlign
	case errors.Is(err, ErrDoubleFree):
		return kDoubleFree
	case errors.Is(err, ErrNotAllocated):
		return kNotAlloc
	}
	return -1
}

func newModel(heapSize, unit uintptr) *model {
	limit := heapSize / unit * unit
	n := int(limit / unit)
	m := &model{unit: unit, limit: limit, heapSize: heapSize,
		owner: make([]int, n), units: make([]int, n), tag: make([]byte, n), mem: make([]byte, n)}
	for i := range m.owner {
		m.owner[i] = -1
	}
	return m
}

// runs returns, per unit, the length of the free run starting there.
func (m *model) runs() []int {
	r := make([]int, len(m.owner)+1)
	for i := len(m.owner) - 1; i >= 0; i-- {
		if m.owner[i] < 0 {
			r[i] = r[i+1] + 1
		}
	}
	return r
}

func (m *model) largest() uintptr {
	best, run := 0, 0
	for _, o := range m.owner {
		if o < 0 {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return uintptr(best) * m.unit
}

// lowestFit returns the lowest unit index, a multiple of step units,
// starting a free run of n units; -1 if none.
func (m *model) lowestFit(n int, step uintptr) int {
	r := m.runs()
	for s := uintptr(0); s < uintptr(len(m.owner)); s += step {
		if r[s] >= n {
			return int(s)
		}
		if s+step < s {
			break
		}
	}
	return -1
}

func (m *model) mark(start, n int, tag byte) {
	for i := start; i < start+n; i++ {
		m.owner[i] = start
	}
	m.units[start] = n
	m.tag[start] = tag
	m.inUse += uintptr(n) * m.unit
}

func (m *model) unmark(start int) {
	n := m.units[start]
	for i := start; i < start+n; i++ {
		m.owner[i] = -1
	}
	m.inUse -= uintptr(n) * m.unit
}

// fill sets units [start+from, start+to) of the simulated heap to tag.
func (m *model) fill(start, from, to int, tag byte) {
	for i := start + from; i < start+to; i++ {
		m.mem[i] = tag
	}
}

func (m *model) newTag() byte {
	m.next++
	if m.next == 0 {
		m.next = 1
	}
	return m.next
}

func (m *model) removeLive(off uintptr) {
	for i, o := range m.live {
		if o == off {
			m.live = append(m.live[:i], m.live[i+1:]...)
			return
		}
	}
	panic("not live")
}

// unitsFor returns the request size in units, or -1 if it cannot fit.
func (m *model) unitsFor(size uintptr) int {
	if size > m.limit {
		return -1
	}
	return int((size + m.unit - 1) / m.unit)
}

func (m *model) noSpace(size, align uintptr) *ErrNoSpace {
	return &ErrNoSpace{Request: size, Align: align, HeapSize: m.heapSize, Largest: m.largest(), InUse: m.inUse}
}

func (m *model) alloc(size, align uintptr) (uintptr, int, *ErrNoSpace) {
	if align&(align-1) != 0 {
		return NoOffset, kBadAlign, nil
	}
	align = max(align, m.unit)
	if size == 0 {
		return NoOffset, kOK, nil
	}
	n := m.unitsFor(size)
	s := -1
	if n >= 0 {
		s = m.lowestFit(n, align/m.unit)
	}
	if s < 0 {
		return NoOffset, kNoSpace, m.noSpace(size, align)
	}
	tag := m.newTag()
	m.mark(s, n, tag)
	off := uintptr(s) * m.unit
	m.fill(s, 0, n, tag)
	m.live = append(m.live, off)
	return off, kOK, nil
}

// validate classifies off as Free would.
func (m *model) validate(off uintptr) int {
	if off >= m.limit {
		return kNotAlloc
	}
	u := int(off / m.unit)
	switch {
	case m.owner[u] < 0:
		return kDoubleFree
	case m.owner[u] != u || off%m.unit != 0:
		return kNotAlloc
	}
	return kOK
}

func (m *model) free(off uintptr) int {
	if off == NoOffset {
		return kOK
	}
	if k := m.validate(off); k != kOK {
		return k
	}
	m.unmark(int(off / m.unit))
	m.removeLive(off)
	return kOK
}

func (m *model) realloc(off, size uintptr) (uintptr, bool, int, *ErrNoSpace) {
	if off == NoOffset {
		o, k, ns := m.alloc(size, 0)
		return o, false, k, ns
	}
	if size == 0 {
		return NoOffset, false, m.free(off), nil
	}
	if k := m.validate(off); k != kOK {
		return NoOffset, false, k, nil
	}
	n := m.unitsFor(size)
	if n < 0 {
		return NoOffset, false, kNoSpace, m.noSpace(size, m.unit)
	}
	start := int(off / m.unit)
	cur := m.units[start]
	tag := m.tag[start]
	if n <= cur {
		m.unmark(start)
		m.mark(start, n, tag)
		return off, false, kOK, nil
	}
	if start+n <= len(m.owner) && m.runs()[start+cur] >= n-cur {
		m.unmark(start)
		m.mark(start, n, tag)
		m.fill(start, cur, n, tag)
		return off, false, kOK, nil
	}
	s := m.lowestFit(n, 1)
	if s < 0 {
		// Only the run around the old block can help.
		m.unmark(start)
		s = m.lowestFit(n, 1)
		if s < 0 {
			m.mark(start, cur, tag)
			return NoOffset, false, kNoSpace, m.noSpace(size, m.unit)
		}
	} else {
		m.unmark(start)
	}
	m.mark(s, n, tag)
	newOff := uintptr(s) * m.unit
	// What the caller of Realloc does: memmove the old contents.
	copy(m.mem[s:s+cur], m.mem[start:start+cur])
	m.fill(s, cur, n, tag)
	m.removeLive(off)
	m.live = append(m.live, newOff)
	return newOff, true, kOK, nil
}

// verify compares the allocator's observable state with the model's.
func (m *model) verify(t testing.TB, a *Allocator, desc string) {
	t.Helper()
	if err := a.check(); err != nil {
		t.Fatalf("%s: invariant broken: %v\nsegments: %+v", desc, err, a.segs)
	}
	if a.InUse() != m.inUse || a.Largest() != m.largest() {
		t.Fatalf("%s: InUse, Largest = %d, %d; model %d, %d", desc, a.InUse(), a.Largest(), m.inUse, m.largest())
	}
	for _, off := range m.live {
		u := int(off / m.unit)
		want := uintptr(m.units[u]) * m.unit
		if got, ok := a.SizeOf(off); !ok || got != want {
			t.Fatalf("%s: SizeOf(%#x) = %d, %v; model %d", desc, off, got, ok, want)
		}
		if off%m.unit != 0 || off+want > m.limit {
			t.Fatalf("%s: block %#x+%d misaligned or out of bounds", desc, off, want)
		}
		for i := u; i < u+m.units[u]; i++ {
			if m.mem[i] != m.tag[u] {
				t.Fatalf("%s: heap unit %d of block %#x = %d, want %d (overlap or lost data)", desc, i, off, m.mem[i], m.tag[u])
			}
		}
	}
}

func checkNoSpace(t testing.TB, desc string, err error, want *ErrNoSpace) {
	t.Helper()
	var ns *ErrNoSpace
	if !errors.As(err, &ns) || *ns != *want {
		t.Fatalf("%s: err = %#v, model %+v", desc, err, *want)
	}
}

// byteSrc hands out bytes of an op program, then zeros.
type byteSrc struct {
	b []byte
	i int
}

func (s *byteSrc) more() bool { return s.i < len(s.b) }

func (s *byteSrc) next() byte {
	if s.i >= len(s.b) {
		return 0
	}
	s.i++
	return s.b[s.i-1]
}

// runProgram interprets data as a heap geometry followed by a sequence of
// operations, applies them to an Allocator and to the reference model,
// and fails t on any difference or broken invariant.
func runProgram(t testing.TB, data []byte) {
	src := &byteSrc{b: data}
	unit := uintptr(1) << (src.next() % 7)
	nunits := uintptr(src.next())
	heapSize := nunits*unit + uintptr(src.next())%unit
	a := New(heapSize, unit)
	m := newModel(heapSize, unit)

	size := func() uintptr {
		mode, v := src.next(), uintptr(src.next())
		switch mode % 8 {
		case 0:
			return 0
		case 1, 2, 3:
			return v + 1
		case 4, 5:
			return v * unit
		case 6:
			if v > heapSize {
				return heapSize
			}
			return heapSize - v
		}
		return ^uintptr(0) - v
	}
	align := func() uintptr {
		mode := src.next()
		switch mode % 16 {
		case 0:
			return 0
		case 1:
			return 3 << (mode >> 4)
		case 2:
			return topBit
		case 3:
			return 1 << (src.next() % 64)
		}
		return 1 << (mode%16 - 4)
	}
	offset := func() uintptr {
		mode, v := src.next(), uintptr(src.next())
		switch mode % 4 {
		case 0:
			return NoOffset
		case 1:
			return v * unit
		case 2:
			return v*unit + uintptr(mode>>2)%unit
		}
		return heapSize + v
	}
	pick := func() uintptr {
		b := int(src.next())
		if len(m.live) == 0 || b == 255 {
			return NoOffset
		}
		return m.live[b%len(m.live)]
	}

	for step := 0; src.more(); step++ {
		op := src.next() % 8
		var desc string
		switch op {
		case 0, 1:
			sz, al := size(), align()
			desc = fmt.Sprintf("step %d: Alloc(%#x, %#x)", step, sz, al)
			got, err := a.Alloc(sz, al)
			want, k, ns := m.alloc(sz, al)
			if got != want || kindOf(err) != k {
				t.Fatalf("%s = %#x, %v; model %#x, kind %d", desc, got, err, want, k)
			}
			if ns != nil {
				checkNoSpace(t, desc, err, ns)
			}
		case 2, 3, 4:
			off := pick()
			if op == 4 {
				off = offset()
			}
			desc = fmt.Sprintf("step %d: Free(%#x)", step, off)
			err := a.Free(off)
			if k := m.free(off); kindOf(err) != k {
				t.Fatalf("%s = %v; model kind %d", desc, err, k)
			}
		case 5, 6, 7:
			off := pick()
			if op == 7 {
				off = offset()
			}
			sz := size()
			oldSz, _ := a.SizeOf(off)
			desc = fmt.Sprintf("step %d: Realloc(%#x, %#x)", step, off, sz)
			got, moved, err := a.Realloc(off, sz)
			want, wmoved, k, ns := m.realloc(off, sz)
			if got != want || moved != wmoved || kindOf(err) != k {
				t.Fatalf("%s = %#x, %v, %v; model %#x, %v, kind %d", desc, got, moved, err, want, wmoved, k)
			}
			if ns != nil {
				checkNoSpace(t, desc, err, ns)
			}
			if moved && got > off && got < off+oldSz {
				t.Fatalf("%s: moved up into an overlapping range", desc)
			}
		}
		m.verify(t, a, desc)
		if a.Seq() != uint64(step+1) {
			t.Fatalf("%s: Seq = %d", desc, a.Seq())
		}
	}

	// Free everything: the heap must coalesce back into one block.
	for len(m.live) > 0 {
		off := m.live[len(m.live)/2]
		if err := a.Free(off); err != nil {
			t.Fatalf("final Free(%#x): %v", off, err)
		}
		m.free(off)
	}
	m.verify(t, a, "after freeing everything")
	if len(a.segs) > 1 || a.InUse() != 0 || a.Largest() != a.Size() {
		t.Fatalf("after freeing everything: segments %+v", a.segs)
	}
	if a.Size() > 0 {
		if off, err := a.Alloc(a.Size(), 0); off != 0 || err != nil {
			t.Fatalf("full-size Alloc(%d) = %#x, %v", a.Size(), off, err)
		}
	}
}

func TestAgainstModel(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := 0; seed < seeds; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 42))
		data := make([]byte, 500+r.IntN(6000))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		// Mostly moderately sized heaps with a real unit.
		data[0] = byte(3 + seed%4)
		data[1] = byte(16 + r.IntN(240))
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runProgram(t, data) })
	}
}

// FuzzAllocator interprets the fuzz input as a heap geometry and an
// operation sequence (see runProgram) and checks the allocator against
// the reference model.
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{6, 16, 0, 0, 1, 10, 0, 0, 4, 3, 0, 2, 0})
	f.Add([]byte{0, 0, 0, 0, 7, 0, 0})
	f.Add([]byte{3, 100, 5,
		0, 4, 20, 4, // alloc 20 units, align 1
		0, 4, 10, 9, // alloc 10 units, align 32
		2, 0, // free first
		5, 0, 4, 60, // realloc second to 60 units
		7, 1, 0, 0, 0, // realloc offset 0 to size 0
		4, 1, 20, // free offset 20 units
	})
	f.Add([]byte{2, 255, 3, 0, 6, 0, 0, 0, 7, 0, 0, 1, 2, 5, 1, 5, 10})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 2048 { // keep executions (and minimisation) fast
			return
		}
		runProgram(t, data)
	})
}
