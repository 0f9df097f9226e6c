package symalloc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// check verifies the segment invariants and the InUse counter.
func (a *Allocator) check() error {
	var next, used uintptr
	for i, s := range a.segs {
		if s.off != next {
			return fmt.Errorf("segment %d starts at %#x, want %#x", i, s.off, next)
		}
		if s.size == 0 || s.off%a.minAlign != 0 || s.size%a.minAlign != 0 {
			return fmt.Errorf("segment %d = %+v: empty or not a multiple of %d", i, s, a.minAlign)
		}
		if i > 0 && s.free && a.segs[i-1].free {
			return fmt.Errorf("segments %d and %d are both free (not coalesced)", i-1, i)
		}
		if !s.free {
			used += s.size
		}
		next = s.off + s.size
	}
	if next != a.limit {
		return fmt.Errorf("segments end at %#x, heap at %#x", next, a.limit)
	}
	if used != a.inUse {
		return fmt.Errorf("InUse = %d, segments hold %d", a.inUse, used)
	}
	return nil
}

// topBit is 1<<63 on 64-bit platforms.
const topBit = ^uintptr(0)>>1 + 1

func mustCheck(t testing.TB, a *Allocator) {
	t.Helper()
	if err := a.check(); err != nil {
		t.Fatalf("invariant broken: %v\nsegments: %+v", err, a.segs)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		size, minAlign    uintptr
		wantSize, wantMin uintptr
	}{
		{1024, 64, 1024, 64},
		{1000, 64, 960, 64},
		{1000, 0, 960, DefaultMinAlign},
		{63, 64, 0, 64},
		{0, 8, 0, 8},
		{7, 1, 7, 1},
		{^uintptr(0), 64, ^uintptr(0) &^ 63, 64},
	}
	for _, tt := range tests {
		a := New(tt.size, tt.minAlign)
		if a.Size() != tt.wantSize || a.MinAlign() != tt.wantMin {
			t.Errorf("New(%d, %d): Size, MinAlign = %d, %d; want %d, %d",
				tt.size, tt.minAlign, a.Size(), a.MinAlign(), tt.wantSize, tt.wantMin)
		}
		if a.InUse() != 0 || a.Largest() != tt.wantSize || a.Seq() != 0 {
			t.Errorf("New(%d, %d): InUse %d Largest %d Seq %d", tt.size, tt.minAlign, a.InUse(), a.Largest(), a.Seq())
		}
		mustCheck(t, a)
	}
	for _, bad := range []uintptr{3, 48, 1<<10 + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(1024, %d) did not panic", bad)
				}
			}()
			New(1024, bad)
		}()
	}
}

func TestTinyHeap(t *testing.T) {
	a := New(63, 64)
	off, err := a.Alloc(1, 0)
	var ns *ErrNoSpace
	if off != NoOffset || !errors.As(err, &ns) {
		t.Fatalf("Alloc on empty heap = %#x, %v", off, err)
	}
	if ns.HeapSize != 63 || ns.Largest != 0 || ns.InUse != 0 || ns.Request != 1 || ns.Align != 64 {
		t.Errorf("ErrNoSpace = %+v", *ns)
	}
	if err := a.Free(0); !errors.Is(err, ErrNotAllocated) {
		t.Errorf("Free(0) on empty heap: %v", err)
	}
	if off, err := a.Alloc(0, 0); off != NoOffset || err != nil {
		t.Errorf("Alloc(0) = %#x, %v", off, err)
	}
}

// step is one operation in a table-driven sequence.
type step struct {
	op       string // "alloc", "free", "realloc", "sizeof"
	x, y     uintptr
	want     uintptr // offset (alloc/realloc) or size (sizeof)
	moved    bool    // realloc
	err      error   // sentinel (errors.Is) or nil
	noSpace  bool    // want *ErrNoSpace
	inUse    uintptr
	largest  uintptr
	noCheckL bool // skip InUse/Largest comparison
}

func runSteps(t *testing.T, a *Allocator, steps []step) {
	t.Helper()
	for i, s := range steps {
		var got uintptr
		var moved bool
		var err error
		switch s.op {
		case "alloc":
			got, err = a.Alloc(s.x, s.y)
		case "free":
			err = a.Free(s.x)
		case "realloc":
			got, moved, err = a.Realloc(s.x, s.y)
		case "sizeof":
			var ok bool
			got, ok = a.SizeOf(s.x)
			if !ok {
				err = ErrNotAllocated
			}
		default:
			t.Fatalf("bad op %q", s.op)
		}
		desc := fmt.Sprintf("step %d: %s(%#x, %#x)", i, s.op, s.x, s.y)
		if s.noSpace {
			var ns *ErrNoSpace
			if !errors.As(err, &ns) {
				t.Fatalf("%s: err = %v, want *ErrNoSpace", desc, err)
			}
		} else if s.err != nil {
			if !errors.Is(err, s.err) {
				t.Fatalf("%s: err = %v, want %v", desc, err, s.err)
			}
		} else if err != nil {
			t.Fatalf("%s: unexpected error %v", desc, err)
		}
		if s.op != "free" && (err == nil || s.op != "sizeof") && got != s.want {
			t.Fatalf("%s = %#x, want %#x", desc, got, s.want)
		}
		if moved != s.moved {
			t.Fatalf("%s: moved = %v, want %v", desc, moved, s.moved)
		}
		if !s.noCheckL && (a.InUse() != s.inUse || a.Largest() != s.largest) {
			t.Fatalf("%s: InUse, Largest = %d, %d; want %d, %d (segs %+v)",
				desc, a.InUse(), a.Largest(), s.inUse, s.largest, a.segs)
		}
		mustCheck(t, a)
	}
}

func TestAlloc(t *testing.T) {
	tests := []struct {
		name  string
		heap  uintptr
		steps []step
	}{
		{"sequential", 1024, []step{
			{op: "alloc", x: 1, want: 0, inUse: 64, largest: 960},
			{op: "alloc", x: 64, want: 64, inUse: 128, largest: 896},
			{op: "alloc", x: 65, want: 128, inUse: 256, largest: 768},
			{op: "alloc", x: 768, want: 256, inUse: 1024, largest: 0},
			{op: "alloc", x: 1, want: NoOffset, noSpace: true, inUse: 1024, largest: 0},
		}},
		{"zero size", 1024, []step{
			{op: "alloc", x: 0, want: NoOffset, largest: 1024},
			{op: "alloc", x: 0, y: 4096, want: NoOffset, largest: 1024},
			{op: "free", x: NoOffset, largest: 1024},
		}},
		{"whole heap", 1024, []step{
			{op: "alloc", x: 1024, want: 0, inUse: 1024},
			{op: "free", x: 0, largest: 1024},
			{op: "alloc", x: 1025, want: NoOffset, noSpace: true, largest: 1024},
		}},
		{"alignment padding stays free", 4096, []step{
			{op: "alloc", x: 64, want: 0, inUse: 64, largest: 4032},
			{op: "alloc", x: 100, y: 1024, want: 1024, inUse: 192, largest: 2944},
			// The padding [64, 1024) is the first fit for small requests.
			{op: "alloc", x: 64, want: 64, inUse: 256, largest: 2944},
			{op: "alloc", x: 896, want: 128, inUse: 1152, largest: 2944},
			{op: "alloc", x: 1, y: 2048, want: 2048, inUse: 1216, largest: 1984},
			{op: "alloc", x: 1, y: 8192, want: NoOffset, noSpace: true, inUse: 1216, largest: 1984},
		}},
		{"small align raised to minimum", 1024, []step{
			{op: "alloc", x: 8, y: 1, want: 0, inUse: 64, largest: 960},
			{op: "alloc", x: 8, y: 8, want: 64, inUse: 128, largest: 896},
		}},
		{"align larger than heap", 1024, []step{
			{op: "alloc", x: 64, y: 1 << 20, want: 0, inUse: 64, largest: 960},
			{op: "alloc", x: 64, y: 1 << 20, want: NoOffset, noSpace: true, inUse: 64, largest: 960},
			{op: "alloc", x: 64, y: topBit, want: NoOffset, noSpace: true, inUse: 64, largest: 960},
		}},
		{"bad align", 1024, []step{
			{op: "alloc", x: 64, y: 3, want: NoOffset, err: ErrBadAlign, largest: 1024},
			{op: "alloc", x: 64, y: 96, want: NoOffset, err: ErrBadAlign, largest: 1024},
			{op: "alloc", x: 0, y: 96, want: NoOffset, err: ErrBadAlign, largest: 1024},
			{op: "alloc", x: 64, y: ^uintptr(0), want: NoOffset, err: ErrBadAlign, largest: 1024},
		}},
		{"overflowing sizes", 1024, []step{
			{op: "alloc", x: ^uintptr(0), want: NoOffset, noSpace: true, largest: 1024},
			{op: "alloc", x: ^uintptr(0) - 62, want: NoOffset, noSpace: true, largest: 1024},
			{op: "alloc", x: topBit, y: topBit, want: NoOffset, noSpace: true, largest: 1024},
		}},
		{"first fit reuses freed hole", 1024, []step{
			{op: "alloc", x: 128, want: 0, inUse: 128, largest: 896},
			{op: "alloc", x: 128, want: 128, inUse: 256, largest: 768},
			{op: "alloc", x: 128, want: 256, inUse: 384, largest: 640},
			{op: "free", x: 128, inUse: 256, largest: 640},
			{op: "alloc", x: 64, want: 128, inUse: 320, largest: 640},
			{op: "alloc", x: 128, want: 384, inUse: 448, largest: 512},
			{op: "alloc", x: 64, want: 192, inUse: 512, largest: 512},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, New(tt.heap, 64), tt.steps)
		})
	}
}

func TestFree(t *testing.T) {
	// Layout before each case: A=[0,128) B=[128,256) C=[256,320) free=[320,1024).
	setup := func() *Allocator {
		a := New(1024, 64)
		for _, n := range []uintptr{128, 128, 64} {
			if _, err := a.Alloc(n, 0); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"free last coalesces with tail", []step{
			{op: "free", x: 256, inUse: 256, largest: 768},
		}},
		{"free middle then neighbours", []step{
			{op: "free", x: 128, inUse: 192, largest: 704},
			{op: "free", x: 0, inUse: 64, largest: 704},
			{op: "free", x: 256, inUse: 0, largest: 1024},
			{op: "alloc", x: 1024, want: 0, inUse: 1024, largest: 0},
		}},
		{"free first then last then middle", []step{
			{op: "free", x: 0, inUse: 192, largest: 704},
			{op: "free", x: 256, inUse: 128, largest: 768},
			{op: "free", x: 128, inUse: 0, largest: 1024},
		}},
		{"double free", []step{
			{op: "free", x: 128, inUse: 192, largest: 704},
			{op: "free", x: 128, err: ErrDoubleFree, inUse: 192, largest: 704},
		}},
		{"double free after coalescing", []step{
			{op: "free", x: 256, inUse: 256, largest: 768},
			{op: "free", x: 256, err: ErrDoubleFree, inUse: 256, largest: 768},
		}},
		{"never allocated free space", []step{
			{op: "free", x: 512, err: ErrDoubleFree, inUse: 320, largest: 704},
		}},
		{"inside a block", []step{
			{op: "free", x: 64, err: ErrNotAllocated, inUse: 320, largest: 704},
			{op: "free", x: 1, err: ErrNotAllocated, inUse: 320, largest: 704},
			{op: "free", x: 255, err: ErrNotAllocated, inUse: 320, largest: 704},
		}},
		{"outside the heap", []step{
			{op: "free", x: 1024, err: ErrNotAllocated, inUse: 320, largest: 704},
			{op: "free", x: topBit >> 1, err: ErrNotAllocated, inUse: 320, largest: 704},
			{op: "free", x: NoOffset - 1, err: ErrNotAllocated, inUse: 320, largest: 704},
		}},
		{"NoOffset is a no-op", []step{
			{op: "free", x: NoOffset, inUse: 320, largest: 704},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, setup(), tt.steps)
		})
	}
}

func TestFreeErrorMessages(t *testing.T) {
	a := New(1024, 64)
	a.Alloc(128, 0)
	for _, tt := range []struct {
		off  uintptr
		want string
	}{
		{64, "offset 0x40: not the start of an allocated block (it is inside the 128-byte block at 0x0)"},
		{512, "offset 0x200: not allocated: it lies in free space (double free?)"},
		{4096, "offset 0x1000: not the start of an allocated block (outside the 1024-byte heap)"},
	} {
		if err := a.Free(tt.off); err == nil || err.Error() != tt.want {
			t.Errorf("Free(%#x) = %v, want %q", tt.off, err, tt.want)
		}
	}
}

func TestRealloc(t *testing.T) {
	tests := []struct {
		name  string
		setup []uintptr // sizes allocated in order from offset 0
		frees []uintptr // then freed
		steps []step
	}{
		{"NoOffset allocates", nil, nil, []step{
			{op: "realloc", x: NoOffset, y: 100, want: 0, inUse: 128, largest: 896},
			{op: "realloc", x: NoOffset, y: 0, want: NoOffset, inUse: 128, largest: 896},
			{op: "realloc", x: NoOffset, y: 2048, want: NoOffset, noSpace: true, inUse: 128, largest: 896},
		}},
		{"size 0 frees", []uintptr{128}, nil, []step{
			{op: "realloc", x: 0, y: 0, want: NoOffset, inUse: 0, largest: 1024},
			{op: "realloc", x: 0, y: 0, want: NoOffset, err: ErrDoubleFree, inUse: 0, largest: 1024},
		}},
		{"same rounded size", []uintptr{128}, nil, []step{
			{op: "realloc", x: 0, y: 65, want: 0, inUse: 128, largest: 896},
			{op: "realloc", x: 0, y: 128, want: 0, inUse: 128, largest: 896},
		}},
		{"shrink in place into new free segment", []uintptr{256, 64}, nil, []step{
			{op: "realloc", x: 0, y: 64, want: 0, inUse: 128, largest: 704},
			{op: "sizeof", x: 0, want: 64, inUse: 128, largest: 704},
			{op: "alloc", x: 192, want: 64, inUse: 320, largest: 704},
		}},
		{"shrink in place merges with following free", []uintptr{256}, nil, []step{
			{op: "realloc", x: 0, y: 1, want: 0, inUse: 64, largest: 960},
		}},
		{"grow in place", []uintptr{128, 128, 64}, []uintptr{128}, []step{
			{op: "realloc", x: 0, y: 200, want: 0, inUse: 320, largest: 704},
			{op: "realloc", x: 0, y: 256, want: 0, inUse: 320, largest: 704},
			{op: "sizeof", x: 0, want: 256, inUse: 320, largest: 704},
		}},
		{"grow in place at end of heap", []uintptr{128}, nil, []step{
			{op: "realloc", x: 0, y: 1024, want: 0, inUse: 1024, largest: 0},
			{op: "realloc", x: 0, y: 1025, want: NoOffset, noSpace: true, inUse: 1024, largest: 0},
		}},
		{"move to first fit elsewhere", []uintptr{128, 128, 128}, []uintptr{0}, []step{
			// B at 128 cannot grow (C follows); first fit for 256 is at 384.
			{op: "realloc", x: 128, y: 256, want: 384, moved: true, inUse: 384, largest: 384},
			{op: "sizeof", x: 128, err: ErrNotAllocated, inUse: 384, largest: 384},
			{op: "sizeof", x: 384, want: 256, inUse: 384, largest: 384},
			// The freed block coalesced with the hole at 0.
			{op: "alloc", x: 256, want: 0, inUse: 640, largest: 384},
		}},
		{"move to disjoint hole before the block", []uintptr{256, 64, 128, 512}, []uintptr{0}, []step{
			{op: "realloc", x: 320, y: 192, want: 0, moved: true, inUse: 768, largest: 128},
		}},
		{"move overlapping into free predecessor", []uintptr{256, 128, 128, 512}, []uintptr{0}, []step{
			// B=[256,384) wants 320; only [0,384) (hole + B) can hold it.
			{op: "realloc", x: 256, y: 320, want: 0, moved: true, inUse: 960, largest: 64},
			{op: "sizeof", x: 0, want: 320, inUse: 960, largest: 64},
			{op: "free", x: 320, err: ErrDoubleFree, inUse: 960, largest: 64},
		}},
		{"move overlapping into predecessor and successor", []uintptr{128, 128, 128, 128, 512}, []uintptr{0, 256}, []step{
			{op: "realloc", x: 128, y: 384, want: 0, moved: true, inUse: 1024, largest: 0},
		}},
		{"no room leaves block unchanged", []uintptr{128, 128, 128, 128, 512}, []uintptr{0, 256}, []step{
			{op: "realloc", x: 128, y: 448, want: NoOffset, noSpace: true, inUse: 768, largest: 128},
			{op: "sizeof", x: 128, want: 128, inUse: 768, largest: 128},
			{op: "realloc", x: 128, y: ^uintptr(0), want: NoOffset, noSpace: true, inUse: 768, largest: 128},
			{op: "realloc", x: 128, y: ^uintptr(0) - 63, want: NoOffset, noSpace: true, inUse: 768, largest: 128},
		}},
		{"bad offsets", []uintptr{128}, nil, []step{
			{op: "realloc", x: 64, y: 64, want: NoOffset, err: ErrNotAllocated, inUse: 128, largest: 896},
			{op: "realloc", x: 256, y: 64, want: NoOffset, err: ErrDoubleFree, inUse: 128, largest: 896},
			{op: "realloc", x: 4096, y: 64, want: NoOffset, err: ErrNotAllocated, inUse: 128, largest: 896},
			{op: "realloc", x: 64, y: 0, want: NoOffset, err: ErrNotAllocated, inUse: 128, largest: 896},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(1024, 64)
			// The steps' offsets assume the setup blocks lie back to
			// back from 0, as first fit on an empty heap puts them.
			var next uintptr
			for _, n := range tt.setup {
				off, err := a.Alloc(n, 0)
				if err != nil {
					t.Fatal(err)
				}
				if off != next {
					t.Fatalf("setup: Alloc(%d) = %#x, want %#x (back to back)", n, off, next)
				}
				next += n
			}
			for _, off := range tt.frees {
				if err := a.Free(off); err != nil {
					t.Fatal(err)
				}
			}
			runSteps(t, a, tt.steps)
		})
	}
}

func TestSizeOf(t *testing.T) {
	a := New(4096, 64)
	off, _ := a.Alloc(1, 0)
	off2, _ := a.Alloc(1000, 512)
	for _, tt := range []struct {
		off  uintptr
		want uintptr
		ok   bool
	}{
		{off, 64, true},
		{off2, 1024, true},
		{off + 64, 0, false}, // alignment padding (free)
		{off2 + 64, 0, false},
		{4096, 0, false},
		{NoOffset, 0, false},
	} {
		if got, ok := a.SizeOf(tt.off); got != tt.want || ok != tt.ok {
			t.Errorf("SizeOf(%#x) = %d, %v; want %d, %v", tt.off, got, ok, tt.want, tt.ok)
		}
	}
}

func TestErrNoSpace(t *testing.T) {
	a := New(1<<20+7, 64)
	a.Alloc(1<<19, 0)
	a.Alloc(1000, 0)
	_, err := a.Alloc(1<<19, 4096)
	var ns *ErrNoSpace
	if !errors.As(err, &ns) {
		t.Fatalf("err = %v", err)
	}
	want := ErrNoSpace{Request: 1 << 19, Align: 4096, HeapSize: 1<<20 + 7, Largest: 1<<19 - 1024, InUse: 1<<19 + 1024}
	if *ns != want {
		t.Errorf("ErrNoSpace = %+v, want %+v", *ns, want)
	}
	msg := "symmetric heap exhausted: a request of 524288 bytes (512 KiB), aligned to 4096, does not fit in the heap of 1048583 bytes (1 MiB), " +
		"with 525312 bytes in use and a largest free block of 523264 bytes; raise SHMEM_SYMMETRIC_SIZE"
	if err.Error() != msg {
		t.Errorf("Error() = %q\nwant      %q", err.Error(), msg)
	}
	_, err = a.Alloc(^uintptr(0), 0)
	if !errors.As(err, &ns) || ns.Request != ^uintptr(0) || !strings.Contains(err.Error(), fmt.Sprintf("request of %d bytes", ^uintptr(0))) {
		t.Errorf("huge request: %v", err)
	}
}

// TestWholeAddressSpace uses a heap spanning (almost) the whole address
// space, where careless rounding would wrap.
func TestWholeAddressSpace(t *testing.T) {
	b := New(^uintptr(0), 64)
	top := ^uintptr(0) &^ 63
	if off, err := b.Alloc(1, topBit); off != 0 || err != nil {
		t.Fatalf("Alloc(1, topBit) = %#x, %v", off, err)
	}
	if off, err := b.Alloc(1, topBit); off != topBit || err != nil {
		t.Fatalf("second Alloc(1, topBit) = %#x, %v", off, err)
	}
	if off, err := b.Alloc(1, topBit); off != NoOffset || err == nil {
		t.Fatalf("third Alloc(1, topBit) = %#x, %v", off, err)
	}
	if off, err := b.Alloc(topBit-64, 0); off != 64 || err != nil {
		t.Fatalf("Alloc(rest of lower half) = %#x, %v", off, err)
	}
	if off, err := b.Alloc(top-(topBit)-64, 0); off != topBit+64 || err != nil {
		t.Fatalf("Alloc(rest of upper half) = %#x, %v", off, err)
	}
	if b.InUse() != top || b.Largest() != 0 {
		t.Fatalf("InUse %#x Largest %#x", b.InUse(), b.Largest())
	}
	if off, err := b.Alloc(^uintptr(0)-63, 0); off != NoOffset || err == nil {
		t.Fatalf("Alloc(max) = %#x, %v", off, err)
	}
	if _, _, err := b.Realloc(topBit+64, topBit); err == nil {
		t.Fatalf("Realloc past the top succeeded")
	}
	mustCheck(t, b)
	if err := b.Free(topBit + 64); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(topBit); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(0); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(64); err != nil {
		t.Fatal(err)
	}
	if off, err := b.Alloc(top, 0); off != 0 || err != nil {
		t.Fatalf("Alloc(whole) = %#x, %v", off, err)
	}
	mustCheck(t, b)
}

// randomOps returns a reproducible sequence of operations on live blocks.
type opRec struct {
	kind      byte // 'a', 'f', 'r'
	x, y      uintptr
	pick      int // index into the live list for free/realloc
	badOffset bool
}

func genOps(r *rand.Rand, n int) []opRec {
	ops := make([]opRec, n)
	for i := range ops {
		o := &ops[i]
		switch r.IntN(10) {
		case 0, 1, 2, 3:
			o.kind = 'a'
			o.x = uintptr(r.IntN(4096))
			o.y = [...]uintptr{0, 0, 64, 128, 1024, 4096, 3}[r.IntN(7)]
		case 4, 5, 6:
			o.kind = 'f'
			o.pick = r.IntN(1 << 20)
			o.badOffset = r.IntN(20) == 0
			o.x = uintptr(r.IntN(1 << 16))
		default:
			o.kind = 'r'
			o.pick = r.IntN(1 << 20)
			o.y = uintptr(r.IntN(8192))
		}
	}
	return ops
}

// apply runs ops on a and returns the offsets/results it produced.
func apply(a *Allocator, ops []opRec) []uintptr {
	var live []uintptr
	var out []uintptr
	for _, o := range ops {
		switch o.kind {
		case 'a':
			off, _ := a.Alloc(o.x, o.y)
			out = append(out, off)
			if off != NoOffset {
				live = append(live, off)
			}
		case 'f':
			if o.badOffset || len(live) == 0 {
				err := a.Free(o.x)
				out = append(out, uintptr(len(fmt.Sprint(err))))
				continue
			}
			k := o.pick % len(live)
			a.Free(live[k])
			live = append(live[:k], live[k+1:]...)
			out = append(out, 0)
		case 'r':
			off := NoOffset
			k := -1
			if len(live) > 0 {
				k = o.pick % len(live)
				off = live[k]
			}
			n, _, err := a.Realloc(off, o.y)
			out = append(out, n)
			if err == nil && k >= 0 {
				live = append(live[:k], live[k+1:]...)
			}
			if n != NoOffset {
				live = append(live, n)
			}
		}
	}
	return out
}

func TestDeterminism(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		ops := genOps(rand.New(rand.NewPCG(seed, 1)), 3000)
		a, b := New(1<<16, 64), New(1<<16, 64)
		ra, rb := apply(a, ops), apply(b, ops)
		for i := range ra {
			if ra[i] != rb[i] {
				t.Fatalf("seed %d: op %d gave %#x and %#x", seed, i, ra[i], rb[i])
			}
		}
		if a.Seq() != b.Seq() || a.Hash() != b.Hash() || a.Seq() != uint64(len(ops)) {
			t.Fatalf("seed %d: Seq %d/%d Hash %#x/%#x", seed, a.Seq(), b.Seq(), a.Hash(), b.Hash())
		}
		mustCheck(t, a)

		// Changing one size in the sequence changes the hash.
		i := len(ops) / 2
		for ops[i].kind != 'a' {
			i++
		}
		ops2 := append([]opRec(nil), ops...)
		ops2[i].x++
		c := New(1<<16, 64)
		apply(c, ops2)
		if c.Seq() != a.Seq() || c.Hash() == a.Hash() {
			t.Errorf("seed %d: changed size at op %d: Seq %d/%d Hash %#x/%#x", seed, i, c.Seq(), a.Seq(), c.Hash(), a.Hash())
		}
	}
}

func TestHashSensitivity(t *testing.T) {
	run := func(f func(a *Allocator)) *Allocator {
		a := New(1<<12, 64)
		f(a)
		return a
	}
	base := run(func(a *Allocator) { a.Alloc(100, 0); a.Alloc(200, 0) })
	cases := map[string]*Allocator{
		"swapped order":     run(func(a *Allocator) { a.Alloc(200, 0); a.Alloc(100, 0) }),
		"size within unit":  run(func(a *Allocator) { a.Alloc(101, 0); a.Alloc(200, 0) }),
		"explicit align":    run(func(a *Allocator) { a.Alloc(100, 64); a.Alloc(200, 0) }),
		"extra failed op":   run(func(a *Allocator) { a.Alloc(100, 0); a.Alloc(200, 0); a.Alloc(1<<20, 0) }),
		"extra free(NULL)":  run(func(a *Allocator) { a.Alloc(100, 0); a.Alloc(200, 0); a.Free(NoOffset) }),
		"realloc not alloc": run(func(a *Allocator) { a.Alloc(100, 0); a.Realloc(NoOffset, 200) }),
	}
	for name, c := range cases {
		if c.Hash() == base.Hash() {
			t.Errorf("%s: hash unchanged", name)
		}
	}
	same := run(func(a *Allocator) { a.Alloc(100, 0); a.Alloc(200, 0) })
	if same.Hash() != base.Hash() || same.Seq() != 2 {
		t.Errorf("same sequence: Hash %#x/%#x Seq %d", same.Hash(), base.Hash(), same.Seq())
	}
	// Failed operations count.
	f := New(1<<12, 64)
	h0 := f.Hash()
	f.Free(64)
	if f.Seq() != 1 || f.Hash() == h0 {
		t.Errorf("failed Free not recorded: Seq %d", f.Seq())
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	a := New(1<<20, 64)
	for i := 0; i < 100; i++ {
		a.Alloc(uintptr(i*64+1), 0)
	}
	n := testing.AllocsPerRun(1000, func() {
		off, _ := a.Alloc(100, 256)
		off2, _, _ := a.Realloc(off, 5000)
		a.Free(off2)
	})
	if n != 0 {
		t.Errorf("%v Go allocations per Alloc+Realloc+Free, want 0", n)
	}
}

func BenchmarkAllocFree(b *testing.B) {
	for _, live := range []int{0, 100, 10000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			a := New(1<<30, 64)
			// Fragment the heap: keep every other block of a run.
			var offs []uintptr
			for i := 0; i < 2*live; i++ {
				off, err := a.Alloc(uintptr(64+i%7*64), 0)
				if err != nil {
					b.Fatal(err)
				}
				offs = append(offs, off)
			}
			for i := 0; i < len(offs); i += 2 {
				a.Free(offs[i])
			}
			b.ResetTimer()
			for b.Loop() {
				off, err := a.Alloc(4096, 0)
				if err != nil {
					b.Fatal(err)
				}
				a.Free(off)
			}
		})
	}
}

// TestCallWords: Last names the latest call, and a Call survives the
// two words another process reads (Arg0 beyond 2^56 saturates and says
// so; NoOffset stays "no block").
func TestCallWords(t *testing.T) {
	a := New(1<<20, 0)
	if got := a.Last(); got != (Call{}) || got.String() != "no call" {
		t.Errorf("Last before any call = %+v (%v), want the zero Call", got, got)
	}
	off, err := a.Alloc(100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.Last(), (Call{CallAlloc, 100, 0}); got != want {
		t.Errorf("Last after Alloc = %+v, want %+v", got, want)
	}
	if err := a.Free(off); err != nil {
		t.Fatal(err)
	}
	if got, want := a.Last(), (Call{CallFree, off, 0}); got != want {
		t.Errorf("Last after Free = %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		call Call
		back Call // what the words give back
		text string
	}{
		{Call{CallAlloc, 64, 8}, Call{CallAlloc, 64, 8}, "an allocation of 64 bytes"},
		{Call{CallFree, 0x40, 0}, Call{CallFree, 0x40, 0}, "a Free of the block at heap offset 0x40"},
		{Call{CallRealloc, NoOffset, 24}, Call{CallRealloc, NoOffset, 24}, "a Realloc of no block to 24 bytes"},
		{Call{CallRealloc, 0x80, 0}, Call{CallRealloc, 0x80, 0}, "a Realloc of the block at heap offset 0x80 to 0 bytes"},
		{Call{CallAlloc, 1 << 60, 16}, Call{CallAlloc, callArgMax, 16}, "an allocation of more than 2^56 bytes"},
		{Call{CallFree, 1<<56 + 5, 0}, Call{CallFree, callArgMax, 0}, "a Free of an offset beyond 2^56"},
		{Call{CallAlloc, callArgMax - 1, 0}, Call{CallAlloc, callArgMax, 0}, "an allocation of more than 2^56 bytes"},
	} {
		back := CallFromWords(c.call.Words())
		if back != c.back {
			t.Errorf("CallFromWords(%+v.Words()) = %+v, want %+v", c.call, back, c.back)
		}
		if got := back.String(); got != c.text {
			t.Errorf("%+v: String() = %q, want %q", c.call, got, c.text)
		}
	}
}
