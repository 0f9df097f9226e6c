package goshmem_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/node"
)

// symCheck checks that every PE got a at the same offset from anchor
// (the address of the job's first allocation) and returns a message
// for the first PE that did not. It is collective.
func symCheck(p *goshmem.PE, table []uint64, anchor, a uintptr) string {
	c := p.Ctx()
	off := uint64(a - anchor)
	goshmem.P(c, &table[p.MyPE()], off, 0)
	p.BarrierAll()
	msg := ""
	if p.MyPE() == 0 {
		for q := 1; q < p.NPEs(); q++ {
			if table[q] != table[0] {
				msg = fmt.Sprintf("PE %d at offset %#x, PE 0 at %#x", q, table[q], table[0])
				break
			}
		}
	}
	p.BarrierAll()
	return msg
}

// TestSymmetricOffsets: a sequence of Malloc, Calloc, Align, Realloc and
// Free gives the same offsets on every PE, and Ptr to the PE itself is
// the slice itself.
func TestSymmetricOffsets(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		run(t, n, testHeap, func(p *goshmem.PE) {
			table := mustCalloc[uint64](p, n)
			anchor := addr(table)
			type step struct {
				name string
				a    uintptr
			}
			var live [][]byte
			var steps []step
			for i, size := range []int{1, 64, 65, 1000, 4096, 3, 70000} {
				b := mustMalloc[byte](p, size)
				if len(b) != size || cap(b) != size {
					t.Errorf("Malloc(%d): len %d cap %d", size, len(b), cap(b))
				}
				live = append(live, b)
				steps = append(steps, step{"Malloc " + strconv.Itoa(size), addr(b)})
				if i%3 == 1 {
					goshmem.Free(p, live[i-1])
				}
			}
			c := mustCalloc[int32](p, 33)
			steps = append(steps, step{"Calloc", addr(c)})
			al, err := goshmem.Align[int64](p, 1024, 5)
			if err != nil {
				panic(err)
			}
			steps = append(steps, step{"Align", addr(al)})
			r, err := goshmem.Realloc(p, c, 5000)
			if err != nil {
				panic(err)
			}
			steps = append(steps, step{"Realloc", addr(r)})
			for _, s := range steps {
				if msg := symCheck(p, table, anchor, s.a); msg != "" {
					t.Errorf("n=%d %s: %s", n, s.name, msg)
				}
			}
			if got := goshmem.Ptr(p, r, p.MyPE()); addr(got) != addr(r) {
				t.Errorf("Ptr to self = %#x, want %#x", addr(got), addr(r))
			}
		})
	}
}

// TestMallocZeroAndFreeNil: Malloc(0) returns nil without error; Free
// and Realloc accept nil.
func TestMallocZeroAndFreeNil(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		for _, f := range []func() ([]int64, error){
			func() ([]int64, error) { return goshmem.Malloc[int64](p, 0) },
			func() ([]int64, error) { return goshmem.Calloc[int64](p, 0) },
			func() ([]int64, error) { return goshmem.Align[int64](p, 256, 0) },
			func() ([]int64, error) { return goshmem.Realloc[int64](p, nil, 0) },
		} {
			if x, err := f(); x != nil || err != nil {
				t.Errorf("zero-size allocation = %v, %v; want nil, nil", x, err)
			}
		}
		goshmem.Free[int64](p, nil)
		x := mustMalloc[int64](p, 1)
		if len(x) != 1 {
			t.Errorf("Malloc(1) has %d elements", len(x))
		}
	})
}

// TestCallocZeroesReusedMemory: Calloc returns zeroed memory even where
// a freed block was dirtied, locally and by a peer.
func TestCallocZeroesReusedMemory(t *testing.T) {
	for _, size := range []int{1, 100, 4096, 1 << 16} {
		run(t, 2, testHeap, func(p *goshmem.PE) {
			c := p.Ctx()
			d := mustMalloc[byte](p, size)
			for i := range d {
				d[i] = 0xff
			}
			// Dirty the peer's copy too, remotely.
			goshmem.Put(c, d[:size/2], d[:size/2], 1-p.MyPE())
			where := addr(d)
			goshmem.Free(p, d)
			z := mustCalloc[byte](p, size)
			if addr(z) != where {
				t.Errorf("size %d: Calloc did not reuse the freed block (%#x, freed %#x); the test is void", size, addr(z), where)
			}
			for i, b := range z {
				if b != 0 {
					t.Errorf("size %d: PE %d: Calloc byte %d = %#x, want 0", size, p.MyPE(), i, b)
					break
				}
			}
			// Calloc of a typed slice too.
			goshmem.Free(p, z)
			for i := range d { // d is stale but still maps the same heap bytes
				d[i] = 0xee
			}
			p.BarrierAll()
			zz := mustCalloc[complex128](p, (size+15)/16)
			for i, v := range zz {
				if v != 0 {
					t.Errorf("size %d: PE %d: Calloc[complex128] element %d = %v, want 0", size, p.MyPE(), i, v)
					break
				}
			}
		})
	}
}

// TestAlign: the first element is aligned as asked (absolute address
// and offset), after an allocation that leaves the heap misaligned.
func TestAlign(t *testing.T) {
	run(t, 2, 4<<20, func(p *goshmem.PE) {
		table := mustCalloc[uint64](p, p.NPEs())
		anchor := addr(table)
		for _, align := range []int{1, 2, 8, 64, 128, 256, 512, 1024, 2048, 4096} {
			pad := mustMalloc[byte](p, 64*3) // misalign the next free offset
			x, err := goshmem.Align[int32](p, align, 10)
			if err != nil {
				panic(err)
			}
			if len(x) != 10 {
				t.Errorf("Align(%d): %d elements, want 10", align, len(x))
			}
			if addr(x)%uintptr(align) != 0 {
				t.Errorf("Align(%d): address %#x is not aligned", align, addr(x))
			}
			if addr(x)%4 != 0 {
				t.Errorf("Align(%d): address %#x not aligned for int32", align, addr(x))
			}
			if msg := symCheck(p, table, anchor, addr(x)); msg != "" {
				t.Errorf("Align(%d): %s", align, msg)
			}
			// The memory is usable remotely.
			goshmem.P(p.Ctx(), &x[9], int32(align), 1-p.MyPE())
			p.BarrierAll()
			if x[9] != int32(align) {
				t.Errorf("Align(%d): x[9] = %d after the peer's P", align, x[9])
			}
			goshmem.Free(p, pad)
		}
	})
}

// TestAlignLarge: alignments above the page size must be honoured too
// (Align documents no upper bound, and shmem_align has none).
func TestAlignLarge(t *testing.T) {
	// A large, sparse heap: the kernel may place it on a 2 MiB boundary
	// by chance, but not on a 64 MiB one.
	run(t, 2, 160<<20, func(p *goshmem.PE) {
		table := mustCalloc[uint64](p, p.NPEs())
		anchor := addr(table)
		for _, align := range []int{8192, 64 << 10, 1 << 20, 16 << 20, 64 << 20} {
			x, err := goshmem.Align[byte](p, align, 100)
			if err != nil {
				t.Errorf("Align(%d): %v", align, err)
				continue
			}
			if a := addr(x); a%uintptr(align) != 0 {
				t.Errorf("PE %d: Align(%d) returned %#x, which is %#x past an aligned address (heap base %#x)",
					p.MyPE(), align, a, a%uintptr(align), anchor)
			}
			if msg := symCheck(p, table, anchor, addr(x)); msg != "" {
				t.Errorf("Align(%d): %s", align, msg)
			}
		}
	})
}

func TestAlignBad(t *testing.T) {
	for _, align := range []int{0, -64, 3, 96, 4097} {
		err := runErr(t, 1, testHeap, func(p *goshmem.PE) {
			_, _ = goshmem.Align[byte](p, align, 8)
		})
		pe := panicError(t, err)
		checkContains(t, "Align", fmt.Sprint(pe.Value), "goshmem.Align", fmt.Sprintf("alignment %d", align), "power of two")
	}
}

// TestRealloc: grow in place, grow by moving, shrink, nil input, size 0;
// contents are kept and the results are symmetric.
func TestRealloc(t *testing.T) {
	run(t, 3, testHeap, func(p *goshmem.PE) {
		me := p.MyPE()
		table := mustCalloc[uint64](p, p.NPEs())
		anchor := addr(table)
		fill := func(s []int64, k int) {
			for i := range s {
				s[i] = int64(me*1_000_000 + k*1000 + i)
			}
		}
		check := func(what string, s []int64, k, n int) {
			if len(s) < n {
				t.Errorf("%s: %d elements, want at least %d", what, len(s), n)
				return
			}
			for i := 0; i < n; i++ {
				if s[i] != int64(me*1_000_000+k*1000+i) {
					t.Errorf("PE %d %s: element %d = %d, want %d", me, what, i, s[i], me*1_000_000+k*1000+i)
					return
				}
			}
		}
		a := mustMalloc[int64](p, 100)
		fill(a, 1)
		// Grow: the space after a is free, so in place.
		a2, err := goshmem.Realloc(p, a, 300)
		if err != nil || len(a2) != 300 {
			t.Fatalf("Realloc grow: %d elements, %v", len(a2), err)
		}
		check("grow", a2, 1, 100)
		if msg := symCheck(p, table, anchor, addr(a2)); msg != "" {
			t.Errorf("grow: %s", msg)
		}
		// Block the space after a2 and grow: a2 must move.
		blocker := mustMalloc[byte](p, 64)
		fill(a2, 2)
		a3, err := goshmem.Realloc(p, a2, 5000)
		if err != nil || len(a3) != 5000 {
			t.Fatalf("Realloc move: %d elements, %v", len(a3), err)
		}
		if addr(a3) == addr(a2) {
			t.Errorf("Realloc past a live block did not move (%#x)", addr(a3))
		}
		check("move", a3, 2, 300)
		if msg := symCheck(p, table, anchor, addr(a3)); msg != "" {
			t.Errorf("move: %s", msg)
		}
		// The moved block is usable remotely at its new place.
		goshmem.P(p.Ctx(), &a3[4999], int64(me), (me+1)%3)
		p.BarrierAll()
		if want := int64((me + 2) % 3); a3[4999] != want {
			t.Errorf("PE %d: after move a3[4999] = %d, want %d", me, a3[4999], want)
		}
		// Shrink: the prefix kept.
		fill(a3, 3)
		a4, err := goshmem.Realloc(p, a3, 10)
		if err != nil || len(a4) != 10 {
			t.Fatalf("Realloc shrink: %d elements, %v", len(a4), err)
		}
		if msg := symCheck(p, table, anchor, addr(a4)); msg != "" {
			t.Errorf("shrink: %s", msg)
		}
		check("shrink", a4, 3, 10)
		// nil input allocates.
		b, err := goshmem.Realloc[int64](p, nil, 16)
		if err != nil || len(b) != 16 {
			t.Fatalf("Realloc(nil, 16): %d elements, %v", len(b), err)
		}
		if msg := symCheck(p, table, anchor, addr(b)); msg != "" {
			t.Errorf("Realloc(nil): %s", msg)
		}
		// n == 0 frees: the same block comes back from the next Malloc.
		where := addr(b)
		z, err := goshmem.Realloc(p, b, 0)
		if err != nil || z != nil {
			t.Errorf("Realloc(b, 0) = %v, %v; want nil, nil", z, err)
		}
		b2 := mustMalloc[int64](p, 16)
		if addr(b2) != where {
			t.Errorf("Realloc(b, 0) did not free b: Malloc gave %#x, b was %#x", addr(b2), where)
		}
		// Failure: too big; the old slice comes back unchanged.
		fill(a4, 4)
		a5, err := goshmem.Realloc(p, a4, 1<<20)
		if err == nil {
			t.Errorf("Realloc beyond the heap succeeded")
		} else {
			checkContains(t, "Realloc error", err.Error(), "goshmem.Realloc", "SHMEM_SYMMETRIC_SIZE", strconv.Itoa(8<<20))
		}
		if addr(a5) != addr(a4) || len(a5) != len(a4) {
			t.Errorf("failed Realloc returned %#x/%d, want the old %#x/%d", addr(a5), len(a5), addr(a4), len(a4))
		}
		check("failed Realloc", a5, 4, 10)
		goshmem.Free(p, blocker)
		goshmem.Free(p, a5)
	})
}

// TestOutOfHeap: a request larger than the heap fails on every PE with a
// message naming the heap size, the request and SHMEM_SYMMETRIC_SIZE;
// the heap stays usable.
func TestOutOfHeap(t *testing.T) {
	for _, n := range []int{1, 3} {
		fails := make([]int, n)
		run(t, n, testHeap, func(p *goshmem.PE) {
			hs := p.HeapSize()
			first := mustMalloc[int64](p, 8)
			for _, tc := range []struct {
				name    string
				request int
				alloc   func() error
			}{
				{"Malloc", hs + 1, func() error { _, err := goshmem.Malloc[byte](p, hs+1); return err }},
				{"Calloc", 8 * (hs / 8), func() error { _, err := goshmem.Calloc[int64](p, hs/8); return err }},
				{"Align", 2 * hs, func() error { _, err := goshmem.Align[int32](p, 4096, hs/2); return err }},
				{"Realloc", 3 * hs, func() error { _, err := goshmem.Realloc(p, first, 3*hs/8); return err }},
			} {
				err := tc.alloc()
				if err == nil {
					t.Errorf("n=%d PE %d: %s of %d bytes in a %d-byte heap succeeded", n, p.MyPE(), tc.name, tc.request, hs)
					continue
				}
				fails[p.MyPE()]++
				checkContains(t, tc.name, err.Error(), "goshmem."+tc.name, strconv.Itoa(hs), strconv.Itoa(tc.request), "SHMEM_SYMMETRIC_SIZE")
			}
			// Still usable, and still symmetric.
			x := mustMalloc[int64](p, 1000)
			goshmem.P(p.Ctx(), &x[999], int64(p.MyPE()), 0)
			p.BarrierAll()
			if p.MyPE() == 0 && x[999] < 0 {
				t.Errorf("x[999] = %d", x[999])
			}
		})
		for pe, k := range fails {
			if k != 4 {
				t.Errorf("n=%d: PE %d saw %d of 4 allocation failures", n, pe, k)
			}
		}
	}
}

// TestHeapExactFit: the whole heap can be allocated, and one more byte
// cannot.
func TestHeapExactFit(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		all, err := goshmem.Malloc[byte](p, p.HeapSize())
		if err != nil || len(all) != p.HeapSize() {
			t.Fatalf("Malloc of the whole heap: %d bytes, %v", len(all), err)
		}
		if _, err := goshmem.Malloc[byte](p, 1); err == nil {
			t.Errorf("Malloc(1) in a full heap succeeded")
		}
		goshmem.Free(p, all)
		again := mustMalloc[byte](p, p.HeapSize())
		if addr(again) != addr(all) {
			t.Errorf("whole heap reallocated at %#x, was %#x", addr(again), addr(all))
		}
	})
}

// TestMismatchedAllocation: PEs that allocate different sizes make the
// job fail with a message naming the mismatch.
func TestMismatchedAllocation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alloc func(p *goshmem.PE)
		want  []string
	}{
		{"Malloc sizes", func(p *goshmem.PE) { mustMalloc[byte](p, 64*(p.MyPE()+1)) },
			[]string{"goshmem.Malloc", "differ", "PE 0", "PE 1"}},
		{"Calloc sizes", func(p *goshmem.PE) { mustCalloc[int64](p, 10+p.MyPE()) },
			[]string{"goshmem.Calloc", "differ"}},
		{"Align alignments", func(p *goshmem.PE) { _, _ = goshmem.Align[byte](p, 128<<p.MyPE(), 8) },
			[]string{"goshmem.Align", "differ"}},
		{"Free of different blocks", func(p *goshmem.PE) {
			a, b := mustMalloc[byte](p, 64), mustMalloc[byte](p, 64)
			goshmem.Free(p, [][]byte{a, b}[p.MyPE()])
			mustMalloc[byte](p, 64)
		}, []string{"goshmem.Malloc", "differ"}},
		{"Realloc sizes", func(p *goshmem.PE) {
			x := mustMalloc[byte](p, 64)
			_, _ = goshmem.Realloc(p, x, 1000*(p.MyPE()+1))
		}, []string{"goshmem.Realloc", "differ"}},
		// PE 1 returns: its Finalize's barrier meets PE 0's Malloc.
		{"extra Malloc", func(p *goshmem.PE) {
			mustMalloc[byte](p, 64)
			if p.MyPE() == 0 {
				mustMalloc[byte](p, 64)
			}
		}, []string{"Malloc on PE 0", "PE 1", "called Finalize", "collective allocation"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runErr(t, 2, testHeap, tc.alloc)
			if tc.name == "extra Malloc" {
				var je *goshmem.JobError
				if !errors.As(err, &je) {
					t.Fatalf("job error = %v (%T), want a *goshmem.JobError", err, err)
				}
				checkContains(t, tc.name, err.Error(), tc.want...)
				return
			}
			pe := panicError(t, err)
			checkContains(t, tc.name, pe.Error(), tc.want...)
		})
	}
}

type withPtr struct {
	A int
	B *int
}

type deep struct {
	A [4]struct {
		X int
		S []byte
	}
}

// TestMallocPointerTypes: element types holding Go pointers are refused
// with a message naming the type, by every allocation routine.
func TestMallocPointerTypes(t *testing.T) {
	cases := []struct {
		typ   reflect.Type
		alloc func(p *goshmem.PE)
	}{
		{reflect.TypeFor[*int](), func(p *goshmem.PE) { _, _ = goshmem.Malloc[*int](p, 4) }},
		{reflect.TypeFor[string](), func(p *goshmem.PE) { _, _ = goshmem.Malloc[string](p, 4) }},
		{reflect.TypeFor[[]int](), func(p *goshmem.PE) { _, _ = goshmem.Calloc[[]int](p, 4) }},
		{reflect.TypeFor[map[int]int](), func(p *goshmem.PE) { _, _ = goshmem.Align[map[int]int](p, 64, 4) }},
		{reflect.TypeFor[withPtr](), func(p *goshmem.PE) { _, _ = goshmem.Malloc[withPtr](p, 4) }},
		{reflect.TypeFor[deep](), func(p *goshmem.PE) { _, _ = goshmem.Realloc[deep](p, nil, 4) }},
		{reflect.TypeFor[any](), func(p *goshmem.PE) { _, _ = goshmem.Malloc[any](p, 1) }},
		{reflect.TypeFor[chan int](), func(p *goshmem.PE) { _, _ = goshmem.Malloc[chan int](p, 1) }},
		{reflect.TypeFor[func()](), func(p *goshmem.PE) { _, _ = goshmem.Malloc[func()](p, 1) }},
	}
	for _, tc := range cases {
		t.Run(tc.typ.String(), func(t *testing.T) {
			pe := panicError(t, runErr(t, 1, testHeap, tc.alloc))
			checkContains(t, tc.typ.String(), fmt.Sprint(pe.Value), tc.typ.String(), "pointers")
		})
	}
	// Pointer-free types, including a zero-length array of pointers, are fine.
	run(t, 1, testHeap, func(p *goshmem.PE) {
		mustMalloc[[0]*int](p, 4)
		mustMalloc[struct {
			A [3]float64
			B complex64
		}](p, 4)
		mustMalloc[[2][3]uint16](p, 4)
	})
}

func TestMallocNegative(t *testing.T) {
	pe := panicError(t, runErr(t, 1, testHeap, func(p *goshmem.PE) { _, _ = goshmem.Malloc[int64](p, -3) }))
	checkContains(t, "Malloc(-3)", fmt.Sprint(pe.Value), "goshmem.Malloc", "-3")
}

func TestFreeBad(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(p *goshmem.PE)
		want []string
	}{
		{"Go slice", func(p *goshmem.PE) { goshmem.Free(p, make([]int64, 4)) }, []string{"goshmem.Free", "the slice at 0x", "not in the symmetric heap", "Malloc"}},
		{"empty Go slice", func(p *goshmem.PE) { goshmem.Free(p, []byte{}) }, []string{"goshmem.Free", "the slice at 0x", "not in the symmetric heap"}},
		{"interior", func(p *goshmem.PE) { x := mustMalloc[int64](p, 64); goshmem.Free(p, x[8:]) }, []string{"goshmem.Free", "does not start", "inside the 512-byte block at"}},
		{"double free", func(p *goshmem.PE) {
			x := mustMalloc[int64](p, 64)
			goshmem.Free(p, x)
			goshmem.Free(p, x)
		}, []string{"goshmem.Free", "does not start", "double free?"}},
		{"Realloc of a freed block", func(p *goshmem.PE) {
			x := mustMalloc[int64](p, 64)
			goshmem.Free(p, x)
			goshmem.Realloc(p, x, 128)
		}, []string{"goshmem.Realloc", "double free?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := panicError(t, runErr(t, 1, testHeap, tc.fn))
			checkContains(t, tc.name, fmt.Sprint(pe.Value), tc.want...)
		})
	}
}

// TestReallocOverlappingMove: when the only room is the free run made of
// the block and the free space before it, Realloc moves the block down
// over itself; the contents must survive the overlapping copy.
func TestReallocOverlappingMove(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		hs := p.HeapSize()
		a := mustMalloc[byte](p, 16<<10)    // [0, 16K)
		b := mustMalloc[byte](p, 64<<10)    // [16K, 80K)
		c := mustMalloc[byte](p, hs-80<<10) // the rest: nothing free after b
		for i := range b {
			b[i] = byte(i*7 + p.MyPE())
		}
		goshmem.Free(p, a)
		b2, err := goshmem.Realloc(p, b, 72<<10) // fits only in [0, 80K)
		if err != nil {
			t.Fatalf("Realloc: %v", err)
		}
		if addr(b2) != addr(a) {
			t.Errorf("Realloc placed the block at %#x, want the start of the free run %#x", addr(b2), addr(a))
		}
		for i := 0; i < 64<<10; i++ {
			if b2[i] != byte(i*7+p.MyPE()) {
				t.Errorf("PE %d: byte %d = %#x after the overlapping move, want %#x", p.MyPE(), i, b2[i], byte(i*7+p.MyPE()))
				break
			}
		}
		// The moved block is symmetric: a remote store lands in it.
		goshmem.P(p.Ctx(), &b2[len(b2)-1], 0x5a, 1-p.MyPE())
		p.BarrierAll()
		if b2[len(b2)-1] != 0x5a {
			t.Errorf("PE %d: remote store into the moved block not seen", p.MyPE())
		}
		goshmem.Free(p, c)
	})
}

// TestAllocationOverflow: a request whose byte size overflows, or whose
// alignment no PE's heap mapping carries, is a request the heap cannot
// honour: like heap exhaustion (a null return in shmem_calloc,
// shmem_malloc, shmem_align and shmem_realloc) it fails with an error on
// every PE, leaves the heap as it was (the next Malloc lands where it
// would have landed, on every PE) and keeps the PEs in step.
func TestAllocationOverflow(t *testing.T) {
	const overInt64 = math.MaxInt/4 + 1 // 2^61 int64s: 2^64 bytes
	for _, n := range []int{2, 4} {
		cases := []struct {
			name  string
			want  []string
			alloc func(p *goshmem.PE, x []int64) error
		}{
			{"Calloc", []string{"goshmem.Calloc", strconv.Itoa(overInt64) + " elements of 8 bytes", "SHMEM_SYMMETRIC_SIZE"},
				func(p *goshmem.PE, x []int64) error { _, err := goshmem.Calloc[int64](p, overInt64); return err }},
			{"Calloc MaxInt", []string{"goshmem.Calloc", "elements of 8 bytes"},
				func(p *goshmem.PE, x []int64) error { _, err := goshmem.Calloc[int64](p, math.MaxInt); return err }},
			{"Malloc", []string{"goshmem.Malloc", "elements of 1048576 bytes"},
				func(p *goshmem.PE, x []int64) error { _, err := goshmem.Malloc[[1 << 20]byte](p, 1<<50); return err }},
			{"Align overflow", []string{"goshmem.Align", "elements of 8 bytes"},
				func(p *goshmem.PE, x []int64) error { _, err := goshmem.Align[int64](p, 64, overInt64); return err }},
			{"Realloc", []string{"goshmem.Realloc", "elements of 8 bytes"},
				func(p *goshmem.PE, x []int64) error { _, err := goshmem.Realloc(p, x, overInt64); return err }},
			{"Realloc nil", []string{"goshmem.Realloc", "elements of 8 bytes"},
				func(p *goshmem.PE, x []int64) error { _, err := goshmem.Realloc[int64](p, nil, overInt64); return err }},
			{"Align 1<<40", []string{"goshmem.Align", "alignment 1099511627776", "at most 2097152"},
				func(p *goshmem.PE, x []int64) error { _, err := goshmem.Align[int64](p, 1<<40, 1); return err }},
			{"Align 1<<62", []string{"goshmem.Align", "alignment 4611686018427387904", "at most 2097152"},
				func(p *goshmem.PE, x []int64) error { _, err := goshmem.Align[byte](p, 1<<62, 100); return err }},
			{"Align 4 MiB", []string{"goshmem.Align", "alignment 4194304", "at most 2097152"},
				func(p *goshmem.PE, x []int64) error { _, err := goshmem.Align[byte](p, 4<<20, 8); return err }},
		}
		fails := make([][]int, len(cases))
		for i := range fails {
			fails[i] = make([]int, n)
		}
		run(t, n, testHeap, func(p *goshmem.PE) {
			table := mustCalloc[uint64](p, n)
			anchor := addr(table)
			x := mustMalloc[int64](p, 16)
			for i := range x {
				x[i] = int64(i)
			}
			for i, tc := range cases {
				probe := mustMalloc[byte](p, 1) // where the next allocation goes
				where := addr(probe)
				goshmem.Free(p, probe)
				err := tc.alloc(p, x)
				if err == nil {
					t.Errorf("n=%d PE %d: %s succeeded", n, p.MyPE(), tc.name)
				} else {
					fails[i][p.MyPE()]++
					checkContains(t, tc.name, err.Error(), tc.want...)
				}
				after := mustMalloc[byte](p, 1)
				if addr(after) != where {
					t.Errorf("n=%d PE %d: after the failed %s, Malloc gave %#x, want %#x (the heap changed)", n, p.MyPE(), tc.name, addr(after), where)
				}
				if msg := symCheck(p, table, anchor, addr(after)); msg != "" {
					t.Errorf("n=%d: Malloc after the failed %s: %s", n, tc.name, msg)
				}
				goshmem.Free(p, after)
			}
			for i := range x {
				if x[i] != int64(i) {
					t.Errorf("PE %d: x[%d] = %d after the failed Realloc, want %d", p.MyPE(), i, x[i], i)
					break
				}
			}
			// Sizes that do not overflow but exceed the heap fail the
			// same way, as heap exhaustion.
			if _, err := goshmem.Malloc[int64](p, 1<<60); err == nil {
				t.Errorf("Malloc of 2^63 bytes succeeded")
			}
			if _, err := goshmem.Calloc[byte](p, math.MaxInt); err == nil {
				t.Errorf("Calloc of MaxInt bytes succeeded")
			} else {
				checkContains(t, "Calloc(MaxInt)", err.Error(), "SHMEM_SYMMETRIC_SIZE")
			}
			// A zero-size request with any power-of-two alignment does
			// nothing (shmem_align with size 0).
			if z, err := goshmem.Align[int64](p, 1<<62, 0); z != nil || err != nil {
				t.Errorf("Align(1<<62, 0) = %v, %v; want nil, nil", z, err)
			}
		})
		for i, tc := range cases {
			for pe, k := range fails[i] {
				if k != 1 {
					t.Errorf("n=%d %s: PE %d failed %d times, want once", n, tc.name, pe, k)
				}
			}
		}
	}
}

// TestAllocationOverflowMismatch: a PE whose request overflows while
// another PE's succeeds has broken the collective: the job fails with
// the mismatch named, instead of the PEs going on with different heaps.
func TestAllocationOverflowMismatch(t *testing.T) {
	err := runErr(t, 2, testHeap, func(p *goshmem.PE) {
		n := 8
		if p.MyPE() == 1 {
			n = math.MaxInt/4 + 1
		}
		_, _ = goshmem.Calloc[int64](p, n)
	})
	checkContains(t, "mismatched overflow", fmt.Sprint(panicError(t, err).Value), "goshmem.Calloc", "symmetric allocations differ")
}

// TestMallocZeroSizeType: n elements of a zero-size type are n
// elements, as for make; only n == 0 gives nil.
func TestMallocZeroSizeType(t *testing.T) {
	run(t, 1, testHeap, func(p *goshmem.PE) {
		x, err := goshmem.Malloc[struct{}](p, 5)
		if err != nil || len(x) != 5 {
			t.Errorf("Malloc[struct{}](5) = %d elements, %v; want 5", len(x), err)
		}
		y, err := goshmem.Calloc[[0]int64](p, 3)
		if err != nil || len(y) != 3 {
			t.Errorf("Calloc[[0]int64](3) = %d elements, %v; want 3", len(y), err)
		}
	})
}

// TestFreeZeroByteAllocation: an allocation of zero bytes is the
// specification's null pointer (shmem_malloc: "When size is zero, the
// shmem_malloc routine performs no action and returns a null pointer";
// shmem_free: "If ptr is a null pointer, no action is performed"), even
// when it is n elements of a zero-size type. Freeing or resizing it
// must leave every other allocation alone, on 2 PEs, whatever block
// starts where the zero-byte slice points.
func TestFreeZeroByteAllocation(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		a, err := goshmem.Malloc[int64](p, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			a[i] = int64(100 + i)
		}
		z, _ := goshmem.Malloc[struct{}](p, 3)
		goshmem.Free(p, z)
		w, _ := goshmem.Calloc[[0]int64](p, 2)
		w2, err := goshmem.Realloc(p, w, 0)
		if err != nil || len(w2) != 0 {
			t.Errorf("Realloc of a zero-byte allocation to 0: %d elements, %v", len(w2), err)
		}
		v, _ := goshmem.Malloc[struct{}](p, 2)
		v2, err := goshmem.Realloc(p, v, 7)
		if err != nil || len(v2) != 7 {
			t.Errorf("Realloc of a zero-byte allocation to 7 zero-size elements: %d elements, %v", len(v2), err)
		}
		// a is still allocated: the next allocation must not reuse it.
		b, err := goshmem.Malloc[int64](p, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b {
			b[i] = -1
		}
		if &b[0] == &a[0] {
			t.Errorf("a new allocation reuses a block that was never freed")
		}
		for i, x := range a {
			if x != int64(100+i) {
				t.Errorf("a[%d] = %d after freeing a zero-byte allocation; want %d", i, x, 100+i)
			}
		}
		p.BarrierAll()
		goshmem.Free(p, b)
		goshmem.Free(p, a)
	})
}

// TestSymmetricSizeLimits: SHMEM_SYMMETRIC_SIZE at the parser's own
// maximum is refused by the parser, with the variable named; a heap
// size set in code beyond what the runtime supports, or accepted by the
// parser but more than this machine can back, fails the job at start-up
// with a message that names SHMEM_SYMMETRIC_SIZE and says to lower it.
func TestSymmetricSizeLimits(t *testing.T) {
	t.Setenv("SHMEM_SYMMETRIC_SIZE", "9223372036854775807")
	if _, err := goshmem.LoadConfig(); err == nil {
		t.Errorf("LoadConfig accepted SHMEM_SYMMETRIC_SIZE=9223372036854775807")
	} else {
		checkContains(t, "LoadConfig", err.Error(), `SHMEM_SYMMETRIC_SIZE="9223372036854775807"`, "size too large", "at most 256t")
	}
	sizes := []int64{math.MaxInt64, math.MaxInt64 - 1<<19, env.MaxSymmetricSize + 1}
	if job.CheckBacking(1, env.MaxSymmetricSize) != nil {
		sizes = append(sizes, env.MaxSymmetricSize) // accepted by the parser; too much for this machine
	}
	for _, size := range sizes {
		err := runErrCfg(t, node.Config{HeapSize: size}, 1, func(p *goshmem.PE) {
			t.Errorf("a job with a %d-byte heap started", size)
		})
		if err == nil {
			continue
		}
		msg := err.Error()
		checkContains(t, fmt.Sprintf("heap of %d bytes", size), msg, "SHMEM_SYMMETRIC_SIZE", "lower SHMEM_SYMMETRIC_SIZE")
		if strings.Contains(msg, " -") {
			t.Errorf("heap of %d bytes: message %q holds a wrapped, negative size", size, msg)
		}
	}
}

// TestMallocWithHints: hints 0 is Malloc; the atomics and signal hints
// give blocks on cache lines of their own (aligned to node's isolation
// line and padded to whole lines), so two consecutive hinted blocks,
// and a plain Malloc after them, never share a line with a hinted
// block; the blocks are symmetric, remotely usable by atomics, and
// freed like any other.
func TestMallocWithHints(t *testing.T) {
	line := node.IsolationLine()
	if line < 128 || line&(line-1) != 0 {
		t.Fatalf("IsolationLine() = %d, want a power of two >= 128", line)
	}
	lines := func(a, size uintptr) (first, last uintptr) { return a / line, (a + size - 1) / line }
	for _, n := range []int{2, 4} {
		run(t, n, testHeap, func(p *goshmem.PE) {
			table := mustCalloc[uint64](p, n)
			anchor := addr(table)
			// 0 is Malloc: the block lands where Malloc's would.
			probe := mustMalloc[int64](p, 3)
			where := addr(probe)
			goshmem.Free(p, probe)
			z, err := goshmem.MallocWithHints[int64](p, 3, 0)
			if err != nil || addr(z) != where || len(z) != 3 {
				t.Errorf("MallocWithHints(3, 0) = %#x/%d, %v; want Malloc's %#x", addr(z), len(z), err, where)
			}
			mustMalloc[byte](p, 8) // leave the next free offset on an odd 64-byte line

			a, err := goshmem.MallocWithHints[int64](p, 1, goshmem.MallocAtomicsRemote)
			if err != nil {
				t.Fatalf("MallocWithHints(atomics): %v", err)
			}
			b, err := goshmem.MallocWithHints[uint64](p, 3, goshmem.MallocSignalRemote)
			if err != nil {
				t.Fatalf("MallocWithHints(signal): %v", err)
			}
			c, err := goshmem.MallocWithHints[int32](p, 5, goshmem.MallocAtomicsRemote|goshmem.MallocSignalRemote)
			if err != nil {
				t.Fatalf("MallocWithHints(both): %v", err)
			}
			plain := mustMalloc[byte](p, 1)
			for _, blk := range []struct {
				name string
				a    uintptr
			}{{"atomics", addr(a)}, {"signal", addr(b)}, {"both", addr(c)}} {
				if blk.a%line != 0 {
					t.Errorf("PE %d: %s block at %#x is not aligned to %d", p.MyPE(), blk.name, blk.a, line)
				}
				if msg := symCheck(p, table, anchor, blk.a); msg != "" {
					t.Errorf("%s block: %s", blk.name, msg)
				}
			}
			_, aLast := lines(addr(a), 8)
			bFirst, bLast := lines(addr(b), 24)
			cFirst, cLast := lines(addr(c), 20)
			pFirst, _ := lines(addr(plain), 1)
			if bFirst <= aLast || cFirst <= bLast {
				t.Errorf("PE %d: consecutive hinted blocks share a %d-byte line: lines [..%d] [%d..%d] [%d..%d]", p.MyPE(), line, aLast, bFirst, bLast, cFirst, cLast)
			}
			if pFirst == cLast {
				t.Errorf("PE %d: Malloc after a hinted block shares its last %d-byte line %d (%#x, block at %#x)", p.MyPE(), line, cLast, addr(plain), addr(c))
			}
			// Remote atomics on the hinted block.
			goshmem.AtomicAdd(p.Ctx(), &a[0], 1, 0)
			goshmem.AtomicFetchInc(p.Ctx(), &c[4], 0)
			p.BarrierAll()
			if p.MyPE() == 0 && (a[0] != int64(n) || c[4] != int32(n)) {
				t.Errorf("PE 0: a[0] = %d, c[4] = %d after %d remote increments each", a[0], c[4], n)
			}
			p.BarrierAll()
			goshmem.Free(p, a)
			goshmem.Free(p, b)
			goshmem.Free(p, c)
			if x, err := goshmem.MallocWithHints[int64](p, 0, goshmem.MallocAtomicsRemote); x != nil || err != nil {
				t.Errorf("MallocWithHints(0, atomics) = %v, %v; want nil, nil", x, err)
			}
			// A request the heap cannot hold fails on every PE.
			if _, err := goshmem.MallocWithHints[byte](p, p.HeapSize(), goshmem.MallocAtomicsRemote); err == nil {
				t.Errorf("MallocWithHints of the whole heap with other blocks live succeeded")
			} else {
				checkContains(t, "MallocWithHints too large", err.Error(), "goshmem.MallocWithHints", "SHMEM_SYMMETRIC_SIZE")
			}
			if _, err := goshmem.MallocWithHints[int64](p, math.MaxInt/4+1, goshmem.MallocSignalRemote); err == nil {
				t.Errorf("MallocWithHints of 2^64 bytes succeeded")
			}
			mustMalloc[int64](p, 1) // still symmetric
		})
	}
}

// TestReallocKeepsHints: shmem_realloc "preserves allocation hints":
// a hinted block that Realloc grows or shrinks stays on lines of its
// own, with its contents, on every PE; and a
// Realloc the heap cannot hold leaves the block as it was.
func TestReallocKeepsHints(t *testing.T) {
	line := node.IsolationLine()
	lines := func(a, size uintptr) (first, last uintptr) { return a / line, (a + size - 1) / line }
	run(t, 2, testHeap, func(p *goshmem.PE) {
		table := mustCalloc[uint64](p, 2)
		anchor := addr(table)
		a, err := goshmem.MallocWithHints[int64](p, 3, goshmem.MallocAtomicsRemote)
		if err != nil {
			t.Fatalf("MallocWithHints: %v", err)
		}
		for i := range a {
			a[i] = int64(10*p.MyPE() + i)
		}
		after := mustMalloc[byte](p, 1)
		check := func(what string, a []int64, n int) {
			t.Helper()
			if addr(a)%line != 0 {
				t.Errorf("PE %d: %s: block at %#x is not aligned to %d", p.MyPE(), what, addr(a), line)
			}
			if msg := symCheck(p, table, anchor, addr(a)); msg != "" {
				t.Errorf("%s: %s", what, msg)
			}
			for i := range min(n, 3) {
				if a[i] != int64(10*p.MyPE()+i) {
					t.Errorf("PE %d: %s: a[%d] = %d, want %d", p.MyPE(), what, i, a[i], 10*p.MyPE()+i)
				}
			}
			// No allocation shares its lines: 64 small blocks fill
			// every gap the allocator has near it (lowest offset
			// first), and none lands on a line of the block.
			first, last := lines(addr(a), uintptr(8*n))
			var smalls [][]byte
			for range 64 {
				x := mustMalloc[byte](p, 1)
				if f, _ := lines(addr(x), 1); f >= first && f <= last {
					t.Errorf("PE %d: %s: a Malloc at %#x shares a %d-byte line with the hinted block at %#x (%d bytes)", p.MyPE(), what, addr(x), line, addr(a), 8*n)
				}
				smalls = append(smalls, x)
			}
			for _, x := range smalls {
				goshmem.Free(p, x)
			}
		}
		grown, err := goshmem.Realloc(p, a, 40)
		if err != nil {
			t.Fatalf("Realloc to 40: %v", err)
		}
		check("grown", grown, 40)
		shrunk, err := goshmem.Realloc(p, grown, 2)
		if err != nil || addr(shrunk) != addr(grown) {
			t.Errorf("PE %d: Realloc to 2 = %#x, %v; want in place at %#x", p.MyPE(), addr(shrunk), err, addr(grown))
		}
		check("shrunk", shrunk, 2)
		// Remote atomics still land.
		goshmem.AtomicAdd(p.Ctx(), &shrunk[1], 100, 0)
		p.BarrierAll()
		if p.MyPE() == 0 && shrunk[1] != 1+200 {
			t.Errorf("PE 0: shrunk[1] = %d after 2 remote adds of 100, want 201", shrunk[1])
		}
		p.BarrierAll()
		// Too big: the block stays, hinted and whole.
		if same, err := goshmem.Realloc(p, shrunk, int(p.HeapSize())); err == nil || addr(same) != addr(shrunk) {
			t.Errorf("PE %d: Realloc to the whole heap = %#x, %v; want the old block and an error", p.MyPE(), addr(same), err)
		}
		goshmem.Free(p, shrunk)
		goshmem.Free(p, after)
	})
}

// TestNoActionNoBarrier: Malloc, Calloc, Align, MallocWithHints and
// Realloc of zero bytes, Realloc of nil to zero and Free of nil perform
// no action, and then "return without performing a barrier"
// (shmem_malloc): PE 0 makes them all while PE 1 makes none, and both
// then meet in one BarrierAll. Had any of them synchronized, PE 0
// would be a barrier behind PE 1, and the job would fail or hang.
func TestNoActionNoBarrier(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- runErr(t, 2, testHeap, func(p *goshmem.PE) {
			if p.MyPE() == 0 {
				var nils []int64
				for _, f := range []func() ([]int64, error){
					func() ([]int64, error) { return goshmem.Malloc[int64](p, 0) },
					func() ([]int64, error) { return goshmem.Calloc[int64](p, 0) },
					func() ([]int64, error) { return goshmem.Align[int64](p, 256, 0) },
					func() ([]int64, error) { return goshmem.MallocWithHints[int64](p, 0, goshmem.MallocSignalRemote) },
					func() ([]int64, error) { return goshmem.Realloc(p, nils, 0) },
				} {
					if x, err := f(); x != nil || err != nil {
						t.Errorf("a zero-byte allocation = %v, %v; want nil, nil", x, err)
					}
				}
				if x, err := goshmem.Malloc[struct{}](p, 5); err != nil || len(x) != 5 {
					t.Errorf("Malloc of 5 empty structs = %d elements, %v", len(x), err)
				}
				goshmem.Free(p, nils)
			}
			p.BarrierAll()
			x := mustMalloc[int64](p, 1) // and the heaps agree
			goshmem.Free(p, x)
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the job hangs: a call that performs no action waited in a barrier")
	}
}

func TestMallocWithHintsUnknown(t *testing.T) {
	pe := panicError(t, runErr(t, 1, testHeap, func(p *goshmem.PE) {
		_, _ = goshmem.MallocWithHints[int64](p, 1, goshmem.MallocSignalRemote|4)
	}))
	checkContains(t, "unknown hint", fmt.Sprint(pe.Value), "goshmem.MallocWithHints", "unknown hint bits 0x4", "MallocAtomicsRemote")
}

func ExampleMallocWithHints() {
	err := goshmem.RunLocal(2, func(p *goshmem.PE) {
		// A counter every PE increments remotely: on lines of its own.
		counter, err := goshmem.MallocWithHints[int64](p, 1, goshmem.MallocAtomicsRemote)
		if err != nil {
			panic(err)
		}
		goshmem.AtomicAdd(p.Ctx(), &counter[0], 1, 0)
		p.BarrierAll()
		if p.MyPE() == 0 {
			fmt.Println("counter:", counter[0])
		}
		goshmem.Free(p, counter)
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: counter: 2
}

// TestAllocationMismatchSaysWhich: when the PEs' collective allocation
// calls differ, the message names the calls: how many each PE made and
// its latest (it read the slot of its own parity once, and said "PE 1
// is at call 0" of a PE that had made one call), or, at the same count,
// the call of each PE that differed (it said only "with a different
// history"). The message comes from either PE, so the wanted pieces
// read the same from both sides.
func TestAllocationMismatchSaysWhich(t *testing.T) {
	cases := []struct {
		name  string
		debug bool
		body  func(p *goshmem.PE)
		want  []string
		match string // a regexp whose two groups must differ
	}{{
		name: "counts",
		body: func(p *goshmem.PE) {
			mustMalloc[int64](p, 1)
			if p.MyPE() == 0 {
				mustMalloc[int64](p, 1) // PE 1 makes no second call
			} else {
				p.BarrierAll()
			}
		},
		want: []string{"PE 0 has made 2 allocation calls (the latest an allocation of 8 bytes), PE 1 1 (the latest an allocation of 8 bytes)"},
	}, {
		name: "sizes",
		body: func(p *goshmem.PE) { mustMalloc[int64](p, 8*(1+p.MyPE())) },
		want: []string{"call 1 of each was an allocation of ", "an allocation of 64 bytes on PE 0", "an allocation of 128 bytes on PE 1"},
	}, {
		name: "alignments",
		body: func(p *goshmem.PE) {
			if _, err := goshmem.Align[int64](p, 64<<p.MyPE(), 1); err != nil {
				panic(err)
			}
		},
		want: []string{"call 1 of each was an allocation of 8 bytes aligned to ", "aligned to 64", "aligned to 128"},
	}, {
		name:  "frees under SHMEM_DEBUG",
		debug: true,
		body: func(p *goshmem.PE) {
			a, b := mustMalloc[int64](p, 1), mustMalloc[int64](p, 1)
			goshmem.Free(p, [][]int64{a, b}[p.MyPE()])
		},
		match: `call 3 of each was a Free of the block at heap offset (0x[0-9a-f]+) on PE \d but a Free of the block at heap offset (0x[0-9a-f]+) on PE \d`,
	}, {
		name: "an unchecked free before",
		body: func(p *goshmem.PE) {
			a, b := mustMalloc[int64](p, 1), mustMalloc[int64](p, 1)
			goshmem.Free(p, [][]int64{a, b}[p.MyPE()])
			mustMalloc[int64](p, 4)
		},
		want: []string{"after 4 calls, the latest an allocation of 32 bytes on both, their histories differ: an earlier call differed", "SHMEM_DEBUG"},
	}, {
		name: "realloc",
		body: func(p *goshmem.PE) {
			a := mustMalloc[int64](p, 1)
			if _, err := goshmem.Realloc(p, a, 2+p.MyPE()); err != nil {
				panic(err)
			}
		},
		want: []string{"call 2 of each was a Realloc of the block at heap offset 0x", "to 16 bytes on PE 0", "to 24 bytes on PE 1"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var msgs [2]atomic.Value
			err := runErrCfg(t, node.Config{HeapSize: testHeap, Debug: c.debug}, 2, func(p *goshmem.PE) {
				defer func() {
					if r := recover(); r != nil {
						msgs[p.MyPE()].Store(fmt.Sprint(r))
						panic(r)
					}
				}()
				c.body(p)
			})
			if err == nil {
				t.Fatal("the job succeeded; want a mismatch panic")
			}
			got := ""
			for i := range msgs {
				if m, ok := msgs[i].Load().(string); ok && strings.Contains(m, "symmetric allocations differ") {
					got = m
					break
				}
			}
			if got == "" {
				t.Fatalf("no PE panicked with a mismatch; job error: %v", err)
			}
			checkContains(t, c.name, got, c.want...)
			if c.match != "" {
				m := regexp.MustCompile(c.match).FindStringSubmatch(got)
				if m == nil || m[1] == m[2] {
					t.Errorf("message %q does not match %q with two different offsets", got, c.match)
				}
			}
		})
	}
}

// TestHeapHoldsWhatWasAsked: a heap of SHMEM_SYMMETRIC_SIZE=4097 bytes
// holds a 4097-byte block (OpenSHMEM 1.5: the heap is at least the size
// asked for); the allocator's 64-byte granule made it hold 4096.
func TestHeapHoldsWhatWasAsked(t *testing.T) {
	for _, size := range []int64{1, 4097, 65537} {
		runCfg(t, node.Config{HeapSize: size}, 2, func(p *goshmem.PE) {
			if hs := p.HeapSize(); int64(hs) < size {
				t.Errorf("heap size %d: HeapSize() = %d, less than asked", size, hs)
			}
			x, err := goshmem.Malloc[byte](p, int(size))
			if err != nil {
				t.Errorf("heap size %d: Malloc(%d) = %v", size, size, err)
				return
			}
			goshmem.Free(p, x)
		})
	}
}
