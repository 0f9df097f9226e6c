package mem_test

import (
	"bytes"
	"math"
	"math/big"
	"testing"
	"unsafe"

	"github.com/goshmem/goshmem/internal/mem"
)

const maxUintptr = ^uintptr(0)

// sink makes buffers escape: a buffer whose address is kept as a
// uintptr must not live on a goroutine stack, which may move.
var sink [][]byte

func heapBytes(n int) []byte {
	b := make([]byte, n)
	sink = append(sink, b)
	return b
}

// fakeRegion builds a Region whose Base is the address base, which need
// not point at anything: Offset and Contains only do arithmetic on it.
// The pointer is made by reinterpreting the bits of a uintptr, not by a
// conversion, so that checkptr (-race) does not inspect it; callers keep
// base at 0 or in the upper half of the address space, where no Go
// object lives, so that the garbage collector ignores it as well.
func fakeRegion(base, size uintptr) mem.Region {
	return mem.Region{Base: *(*unsafe.Pointer)(unsafe.Pointer(&base)), Size: size}
}

func TestRegionOffset(t *testing.T) {
	buf := heapBytes(64)
	real := mem.RegionOf(buf)
	b := mem.Addr(buf)

	const top = uintptr(1) << 63 // a base in the upper half
	cases := []struct {
		name   string
		r      mem.Region
		addr   uintptr
		n      uintptr
		wantOK bool
		want   uintptr // checked only when wantOK
	}{
		{"whole region", real, b, 64, true, 0},
		{"first byte", real, b, 1, true, 0},
		{"last byte", real, b + 63, 1, true, 63},
		{"exactly fitting tail", real, b + 56, 8, true, 56},
		{"exactly fitting middle", real, b + 8, 48, true, 8},
		{"n==0 at base", real, b, 0, true, 0},
		{"n==0 at the end", real, b + 64, 0, true, 64},
		{"n==0 past the end", real, b + 65, 0, false, 0},
		{"one byte past the end", real, b + 64, 1, false, 0},
		{"straddles the end", real, b + 60, 8, false, 0},
		{"one byte too long", real, b, 65, false, 0},
		{"addr one below base", real, b - 1, 1, false, 0},
		{"addr below base, range reaches into region", real, b - 8, 16, false, 0},
		{"addr far below base, n==0", real, b - 4096, 0, false, 0},
		{"addr 0", real, 0, 1, false, 0},
		{"n > size", real, b, 1 << 20, false, 0},
		{"n is max uintptr", real, b, maxUintptr, false, 0},
		{"off+n wraps to inside", real, b + 8, maxUintptr - 3, false, 0},
		{"off+n wraps to exactly 0", real, b + 8, maxUintptr - 7, false, 0},
		{"off+n wraps, n==max-off+1", real, b + 63, maxUintptr - 62, false, 0},
		{"addr max uintptr", real, maxUintptr, 1, false, 0},
		{"addr max uintptr, n==0", real, maxUintptr, 0, false, 0},

		{"empty region, n==0 at base", fakeRegion(top, 0), top, 0, true, 0},
		{"empty region, n==1", fakeRegion(top, 0), top, 1, false, 0},
		{"region ending at 2^64, last byte", fakeRegion(maxUintptr-4095, 4096), maxUintptr, 1, true, 4095},
		{"region ending at 2^64, whole", fakeRegion(maxUintptr-4095, 4096), maxUintptr - 4095, 4096, true, 0},
		{"region ending at 2^64, addr 0 n 1", fakeRegion(maxUintptr-4095, 4096), 0, 1, false, 0},
		{"region ending at 2^64, 2 bytes at last", fakeRegion(maxUintptr-4095, 4096), maxUintptr, 2, false, 0},
		{"region at 0, whole", fakeRegion(0, 4096), 0, 4096, true, 0},
		{"region at 0, addr max", fakeRegion(0, 4096), maxUintptr, 1, false, 0},
		{"region at 0, size max, all but 1 byte", fakeRegion(0, maxUintptr), 1, maxUintptr - 1, true, 1},
		{"region at 0, size max, too long", fakeRegion(0, maxUintptr), 1, maxUintptr, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			off, ok := c.r.Offset(c.addr, c.n)
			if ok != c.wantOK {
				t.Fatalf("Region{%#x, %d}.Offset(%#x, %d) ok = %v, want %v (off %#x)",
					uintptr(c.r.Base), c.r.Size, c.addr, c.n, ok, c.wantOK, off)
			}
			if ok && off != c.want {
				t.Fatalf("Region{%#x, %d}.Offset(%#x, %d) = %d, want %d",
					uintptr(c.r.Base), c.r.Size, c.addr, c.n, off, c.want)
			}
		})
	}
}

func TestRegionContains(t *testing.T) {
	buf := heapBytes(16)
	r := mem.RegionOf(buf)
	b := mem.Addr(buf)
	top := fakeRegion(maxUintptr-15, 16)
	cases := []struct {
		r    mem.Region
		addr uintptr
		want bool
	}{
		{r, b, true},
		{r, b + 15, true},
		{r, b + 16, false},
		{r, b - 1, false},
		{r, 0, false},
		{r, maxUintptr, false},
		{mem.Region{Base: r.Base, Size: 0}, b, false},
		{top, maxUintptr, true},
		{top, maxUintptr - 15, true},
		{top, maxUintptr - 16, false},
		{top, 0, false},
	}
	for _, c := range cases {
		if got := c.r.Contains(c.addr); got != c.want {
			t.Errorf("Region{%#x, %d}.Contains(%#x) = %v, want %v", uintptr(c.r.Base), c.r.Size, c.addr, got, c.want)
		}
	}
}

// refOffset is Offset computed on unbounded integers: [addr, addr+n)
// must lie inside [base, base+size).
func refOffset(base, size, addr, n uint64) (uint64, bool) {
	B := new(big.Int).SetUint64(base)
	end := new(big.Int).Add(B, new(big.Int).SetUint64(size))
	A := new(big.Int).SetUint64(addr)
	aend := new(big.Int).Add(A, new(big.Int).SetUint64(n))
	if A.Cmp(B) < 0 || aend.Cmp(end) > 0 {
		return 0, false
	}
	return addr - base, true
}

func FuzzRegionOffset(f *testing.F) {
	const m = math.MaxUint64
	seeds := [][4]uint64{
		{0x1000, 64, 0x1000, 64},
		{0x1000, 64, 0x1040, 0},
		{0x1000, 64, 0x1041, 0},
		{0x1000, 64, 0xfff, 1},
		{0x1000, 64, 0x1008, m - 3},
		{0x1000, 64, 0x1008, m},
		{m - 4095, 4096, m, 1},
		{m - 4095, 4096, 0, 0},
		{m - 4095, 8192, 0, 1}, // invalid region: clipped to end at 2^64-1
		{0, m, 1, m - 1},
		{0, 0, 0, 0},
		{1 << 63, 1 << 62, 1<<63 + 1<<62, 0},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, base, size, addr, n uint64) {
		if unsafe.Sizeof(uintptr(0)) != 8 {
			t.Skip("the reference assumes 64-bit addresses")
		}
		// A mapped region cannot wrap around the address space, and its
		// end address must be representable (a region ending at 2^64
		// would make the empty range at its end, address 0, ambiguous).
		if size > m-base {
			size = m - base
		}
		wantOff, wantOK := refOffset(base, size, addr, n)
		wantIn := addr >= base && addr-base < size

		// Offset and Contains only use differences modulo 2^64, so
		// shifting base and addr by the same k changes nothing; shift
		// into the upper half so that fakeRegion's pointer is inert.
		k := uint64(0)
		if base != 0 && base < 1<<63 {
			k = 1 << 63
		}
		r := fakeRegion(uintptr(base+k), uintptr(size))
		off, ok := r.Offset(uintptr(addr+k), uintptr(n))
		if ok != wantOK || (ok && uint64(off) != wantOff) {
			t.Fatalf("Region{%#x, %#x}.Offset(%#x, %#x) = %#x, %v; want %#x, %v",
				base, size, addr, n, off, ok, wantOff, wantOK)
		}
		if in := r.Contains(uintptr(addr + k)); in != wantIn {
			t.Fatalf("Region{%#x, %#x}.Contains(%#x) = %v, want %v", base, size, addr, in, wantIn)
		}
	})
}

func TestRegionOfAndBytes(t *testing.T) {
	buf := []byte("0123456789")
	r := mem.RegionOf(buf)
	if uintptr(r.Base) != mem.Addr(buf) || r.Size != 10 {
		t.Fatalf("RegionOf = {%#x, %d}, want {%#x, 10}", uintptr(r.Base), r.Size, mem.Addr(buf))
	}
	rb := r.Bytes()
	if !bytes.Equal(rb, buf) || &rb[0] != &buf[0] || cap(rb) != 10 {
		t.Fatalf("Region.Bytes = %q (cap %d), not an alias of %q", rb, cap(rb), buf)
	}
	rb[3] = 'x'
	if buf[3] != 'x' {
		t.Fatal("write through Region.Bytes not visible in the original slice")
	}
	if got := mem.RegionOf(nil); got.Base != nil || got.Size != 0 {
		t.Fatalf("RegionOf(nil) = %+v, want zero", got)
	}
}

func TestAddr(t *testing.T) {
	if got := mem.Addr[int](nil); got != 0 {
		t.Errorf("Addr(nil) = %#x, want 0", got)
	}
	s := make([]uint64, 4)
	if mem.Addr(s) != uintptr(unsafe.Pointer(&s[0])) {
		t.Error("Addr(s) != &s[0]")
	}
	if mem.Addr(s[2:]) != mem.Addr(s)+16 {
		t.Errorf("Addr(s[2:]) = Addr(s)+%d, want +16", mem.Addr(s[2:])-mem.Addr(s))
	}
	if mem.PtrAddr(&s[3]) != mem.Addr(s)+24 {
		t.Error("PtrAddr(&s[3]) != Addr(s)+24")
	}
}

type pair struct {
	A uint32
	B uint64
}

func TestSizeAlign(t *testing.T) {
	cases := []struct {
		name         string
		size, align  uintptr
		wSize, wAlig uintptr
	}{
		{"byte", mem.SizeOf[byte](), mem.AlignOf[byte](), 1, 1},
		{"uint32", mem.SizeOf[uint32](), mem.AlignOf[uint32](), 4, 4},
		{"int64", mem.SizeOf[int64](), mem.AlignOf[int64](), 8, 8},
		{"complex128", mem.SizeOf[complex128](), mem.AlignOf[complex128](), 16, 8},
		{"[3]uint16", mem.SizeOf[[3]uint16](), mem.AlignOf[[3]uint16](), 6, 2},
		{"pair", mem.SizeOf[pair](), mem.AlignOf[pair](), 16, 8},
		{"struct{}", mem.SizeOf[struct{}](), mem.AlignOf[struct{}](), 0, 1},
	}
	for _, c := range cases {
		if c.size != c.wSize || c.align != c.wAlig {
			t.Errorf("%s: SizeOf, AlignOf = %d, %d; want %d, %d", c.name, c.size, c.align, c.wSize, c.wAlig)
		}
	}
}

func TestBytesRoundTrip(t *testing.T) {
	s := []uint32{0x04030201, 0x08070605}
	b := mem.Bytes(s)
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	if !bytes.Equal(b, want) {
		t.Fatalf("Bytes(%#x) = %v, want %v", s, b, want)
	}
	if len(b) != 8 || cap(b) != 8 {
		t.Fatalf("len, cap = %d, %d; want 8, 8", len(b), cap(b))
	}
	b[0] = 0xff
	if s[0] != 0x040302ff {
		t.Fatalf("write through Bytes: s[0] = %#x, want 0x040302ff", s[0])
	}
	if got := mem.Bytes([]uint64{}); got != nil {
		t.Errorf("Bytes(empty) = %v, want nil", got)
	}
	if got := mem.Bytes[int](nil); got != nil {
		t.Errorf("Bytes(nil) = %v, want nil", got)
	}
	if got := mem.Bytes(make([]pair, 3)); len(got) != 48 {
		t.Errorf("len(Bytes([3]pair)) = %d, want 48", len(got))
	}
}

func TestValueBytes(t *testing.T) {
	v := uint64(0x0807060504030201)
	b := mem.ValueBytes(&v)
	if !bytes.Equal(b, []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("ValueBytes = %v", b)
	}
	b[7] = 0x80
	if v != 0x8007060504030201 {
		t.Fatalf("write through ValueBytes: v = %#x", v)
	}
	var p pair
	if n := len(mem.ValueBytes(&p)); n != 16 {
		t.Fatalf("len(ValueBytes(&pair)) = %d, want 16", n)
	}
}

func TestSliceAtByteSlice(t *testing.T) {
	backing := make([]uint64, 8)
	for i := range backing {
		backing[i] = uint64(i) * 0x0101010101010101
	}
	base := mem.Base(unsafe.Pointer(&backing[0]))

	s := mem.Slice[uint64](base, 16, 3)
	if len(s) != 3 || s[0] != backing[2] || s[2] != backing[4] || &s[0] != &backing[2] {
		t.Fatalf("Slice[uint64](base, 16, 3) = %#x, want an alias of backing[2:5]", s)
	}
	s32 := mem.Slice[uint32](base, 8, 2)
	if s32[0] != 0x01010101 || s32[1] != 0x01010101 {
		t.Fatalf("Slice[uint32](base, 8, 2) = %#x", s32)
	}

	p := mem.At[uint64](base, 56)
	if p != &backing[7] {
		t.Fatal("At[uint64](base, 56) != &backing[7]")
	}
	*p = 42
	if backing[7] != 42 {
		t.Fatal("write through At not visible")
	}

	bs := mem.ByteSlice(base, 8, 8)
	if !bytes.Equal(bs, []byte{1, 1, 1, 1, 1, 1, 1, 1}) {
		t.Fatalf("ByteSlice(base, 8, 8) = %v", bs)
	}
	mem.Zero(bs)
	if backing[1] != 0 || backing[0] != 0 || backing[2] != 0x0202020202020202 {
		t.Fatalf("Zero(ByteSlice(base, 8, 8)) cleared the wrong bytes: %#x", backing[:3])
	}
	if got := mem.Slice[uint64](base, 0, 0); len(got) != 0 {
		t.Fatalf("Slice n=0 has len %d", len(got))
	}
}

func TestAs(t *testing.T) {
	if got := mem.As[uint64](1.0); got != 0x3ff0000000000000 {
		t.Errorf("As[uint64](1.0) = %#x, want 0x3ff0000000000000", got)
	}
	if got := mem.As[float64](uint64(0xc000000000000000)); got != -2 {
		t.Errorf("As[float64](0xc000000000000000) = %v, want -2", got)
	}
	if got := mem.As[uint32](float32(math.Copysign(0, -1))); got != 0x80000000 {
		t.Errorf("As[uint32](float32(-0)) = %#x, want 0x80000000", got)
	}
	if got := mem.As[int32](uint32(0xffffffff)); got != -1 {
		t.Errorf("As[int32](0xffffffff) = %d, want -1", got)
	}
	for _, v := range []float64{0, 1.5, -3.25, math.Inf(1), math.MaxFloat64, math.SmallestNonzeroFloat64} {
		if back := mem.As[float64](mem.As[uint64](v)); back != v {
			t.Errorf("As round trip of %v = %v", v, back)
		}
		if bits := mem.As[uint64](v); bits != math.Float64bits(v) {
			t.Errorf("As[uint64](%v) = %#x, want %#x", v, bits, math.Float64bits(v))
		}
	}
	if got := mem.As[[2]uint32](uint64(0x2222222211111111)); got != [2]uint32{0x11111111, 0x22222222} {
		t.Errorf("As[[2]uint32] = %#x", got)
	}
}

func TestHalves(t *testing.T) {
	v := int64(0x1122334455667788)
	lo, hi := mem.Halves(&v)
	if *lo != 0x55667788 || *hi != 0x11223344 {
		t.Fatalf("Halves = %#x, %#x; want 0x55667788, 0x11223344", *lo, *hi)
	}
	if mem.PtrAddr(lo) != mem.PtrAddr(&v) || mem.PtrAddr(hi) != mem.PtrAddr(&v)+4 {
		t.Fatal("Halves do not alias the two halves of v")
	}
	*hi = 0xffffffff
	*lo = 0xfffffffe
	if v != -2 {
		t.Fatalf("after writing both halves v = %d, want -2", v)
	}
}

func TestU32U64(t *testing.T) {
	f := float32(1)
	p := mem.U32(&f)
	if *p != 0x3f800000 || mem.PtrAddr(p) != mem.PtrAddr(&f) {
		t.Fatalf("*U32(&1.0f) = %#x", *p)
	}
	*p = 0x40000000
	if f != 2 {
		t.Fatalf("write through U32: f = %v, want 2", f)
	}
	d := -1.0
	q := mem.U64(&d)
	if *q != 0xbff0000000000000 {
		t.Fatalf("*U64(&-1.0) = %#x", *q)
	}
	*q = 0x4008000000000000
	if d != 3 {
		t.Fatalf("write through U64: d = %v, want 3", d)
	}
	i := int32(-1)
	if *mem.U32(&i) != 0xffffffff {
		t.Fatal("U32(&int32(-1)) != 0xffffffff")
	}
}

func TestOverlaps(t *testing.T) {
	buf := make([]int64, 16)
	for _, tc := range []struct {
		name string
		a, b []int64
		want bool
	}{
		{"same", buf[2:5], buf[2:5], true},
		{"a inside b", buf[3:4], buf[0:8], true},
		{"partial", buf[0:4], buf[3:8], true},
		{"adjacent", buf[0:4], buf[4:8], false},
		{"apart", buf[0:2], buf[10:12], false},
		{"empty a", buf[3:3], buf[0:8], false},
		{"empty b", buf[0:8], buf[3:3], false},
		{"other array", buf[0:8], make([]int64, 8), false},
	} {
		if got := mem.Overlaps(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Overlaps = %v, want %v", tc.name, got, tc.want)
		}
		if got := mem.Overlaps(tc.b, tc.a); got != tc.want {
			t.Errorf("%s (swapped): Overlaps = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPrefetch: Prefetch is a hint that does not fault on an address
// that is not mapped (nil) and changes nothing.
func TestPrefetch(t *testing.T) {
	b := []byte{1, 2, 3}
	mem.Prefetch(unsafe.Pointer(&b[1]))
	mem.Prefetch(nil)
	if b[0] != 1 || b[1] != 2 || b[2] != 3 {
		t.Errorf("the prefetched bytes changed: %v", b)
	}
}

// TestLoad16 reads every element of a uint16 array, in either half of
// its 4-byte word, and none of its neighbour.
func TestLoad16(t *testing.T) {
	x := make([]uint32, 4) // 4-byte aligned backing
	h := unsafe.Slice((*uint16)(unsafe.Pointer(&x[0])), 8)
	for i := range h {
		h[i] = uint16(0xa000 + i*0x111)
	}
	for i := range h {
		if got := mem.Load16(&h[i]); got != h[i] {
			t.Errorf("Load16(&h[%d]) = %#x, want %#x", i, got, h[i])
		}
	}
}
