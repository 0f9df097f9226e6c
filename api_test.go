package goshmem_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// ---------------------------------------------------------------------
// Helpers shared by the tests of package goshmem_test.

// testHeap is the symmetric heap size of most tests: small, so that
// creating a job is cheap.
const testHeap = 1 << 20

// run runs fn on n in-process PEs with a heap of heap bytes and fails
// the test if the job fails or does not finish within jobTimeout.
func run(t *testing.T, n int, heap int64, fn func(p *goshmem.PE)) {
	t.Helper()
	runCfg(t, node.Config{HeapSize: heap}, n, fn)
}

// runCfg is run with an explicit configuration.
func runCfg(t *testing.T, cfg node.Config, n int, fn func(p *goshmem.PE)) {
	t.Helper()
	if err := runErrCfg(t, cfg, n, fn); err != nil {
		t.Fatalf("RunLocal(%d PEs): %v", n, err)
	}
}

const jobTimeout = 30 * time.Second

// runErr runs fn on n in-process PEs and returns the job's error.
func runErr(t *testing.T, n int, heap int64, fn func(p *goshmem.PE)) error {
	t.Helper()
	return runErrCfg(t, node.Config{HeapSize: heap}, n, fn)
}

// runErrCfg is runErr with an explicit configuration; a job that hangs
// fails the test (its goroutines are leaked).
func runErrCfg(t *testing.T, cfg node.Config, n int, fn func(p *goshmem.PE)) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- goshmem.RunLocalConfig(cfg, n, fn) }()
	select {
	case err := <-done:
		return err
	case <-time.After(jobTimeout):
		t.Fatalf("RunLocal(%d PEs) did not finish within %v", n, jobTimeout)
		return nil
	}
}

// modes are the configurations the data path has distinct code for:
// the mapped fast path, SHMEM_DEBUG (every operation through the
// checked slow path) and SHMEM_TRANSPORT=cma (AMOs serialized by a lock
// per PE).
var modes = []struct {
	name string
	cfg  node.Config
}{
	{"mapped", node.Config{HeapSize: testHeap}},
	{"debug", node.Config{HeapSize: testHeap, Debug: true}},
	{"cma", node.Config{HeapSize: testHeap, Transport: "cma"}},
}

// mustMalloc is goshmem.Malloc that panics (failing the job) on error.
func mustMalloc[T any](p *goshmem.PE, n int) []T {
	x, err := goshmem.Malloc[T](p, n)
	if err != nil {
		panic(err)
	}
	return x
}

// mustCalloc is goshmem.Calloc that panics on error.
func mustCalloc[T any](p *goshmem.PE, n int) []T {
	x, err := goshmem.Calloc[T](p, n)
	if err != nil {
		panic(err)
	}
	return x
}

// addr returns the address of the first element of s.
func addr[T any](s []T) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }

// byteView returns the bytes of s.
func byteView[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// panicOf runs fn and returns what it panicked with (nil if it did not).
func panicOf(fn func()) (v any) {
	defer func() { v = recover() }()
	fn()
	return nil
}

// panicError extracts the *PanicError of a failed job.
func panicError(t *testing.T, err error) *goshmem.PanicError {
	t.Helper()
	var pe *goshmem.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("job error = %v (%T), want a *goshmem.PanicError", err, err)
	}
	return pe
}

// checkContains fails the test unless msg contains every string of want.
func checkContains(t *testing.T, what, msg string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: message %q does not contain %q", what, msg, w)
		}
	}
}

// elem describes an element type of the RMA tests: how to draw a random
// value and how to compare two (bitwise for floats, so that NaNs
// compare).
type elem[T any] struct {
	name string
	gen  func(r *rand.Rand) T // nil: random bits
	eq   func(a, b T) bool
}

// data returns n random elements, a pure function of (pe, salt, n).
func data[T any](e elem[T], pe, salt, n int) []T {
	r := rand.New(rand.NewPCG(uint64(pe)+1, uint64(salt)<<20|uint64(n)))
	s := make([]T, n)
	if e.gen != nil {
		for i := range s {
			s[i] = e.gen(r)
		}
		return s
	}
	b := byteView(s)
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, r.Uint64())
		b = b[8:]
	}
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return s
}

// mismatch describes the first difference between got and want, or
// returns "".
func mismatch[T any](eq func(a, b T) bool, got, want []T) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	if bytes.Equal(byteView(got), byteView(want)) {
		return "" // equal bits are equal values (padding aside, which eq ignores)
	}
	for i := range got {
		if !eq(got[i], want[i]) {
			return fmt.Sprintf("element %d is %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

type small struct {
	A int16
	B float32
	C uint64
	D [3]byte
}

var (
	elemInt8    = elem[int8]{"int8", nil, func(a, b int8) bool { return a == b }}
	elemInt32   = elem[int32]{"int32", nil, func(a, b int32) bool { return a == b }}
	elemFloat64 = elem[float64]{"float64", nil, // random bits: NaNs, infinities, subnormals
		func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }}
	elemSmall = elem[small]{"struct", func(r *rand.Rand) small {
		return small{int16(r.Uint32()), float32(r.NormFloat64()), r.Uint64(), [3]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())}}
	}, func(a, b small) bool { return a == b }}
	elemComplex = elem[complex128]{"complex128", nil, func(a, b complex128) bool {
		return math.Float64bits(real(a)) == math.Float64bits(real(b)) && math.Float64bits(imag(a)) == math.Float64bits(imag(b))
	}}
)

var rmaLengths = []int{0, 1, 7, 1000, 1 << 16}

// rmaShortLengths are for the slow-path modes, where the long transfer
// exercises nothing the mapped mode does not.
var rmaShortLengths = []int{0, 1, 7, 1000}

// rmaSuite checks Put, Get, P, G, PutNBI, GetNBI, PutBytes and GetBytes
// of element type T between every PE and its right neighbour, for every
// length. It is run by all PEs of a job; every check is exact.
func rmaSuite[T any](t *testing.T, p *goshmem.PE, e elem[T], lengths []int) {
	c := p.Ctx()
	me, n := p.MyPE(), p.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	for _, l := range lengths {
		buf := mustMalloc[T](p, l)
		if l > 0 && len(buf) != l {
			t.Errorf("%s: Malloc(%d) returned %d elements", e.name, l, len(buf))
		}
		check := func(op string, got, want []T) {
			if m := mismatch(e.eq, got, want); m != "" {
				t.Errorf("n=%d %s len %d %s: PE %d: %s", n, e.name, l, op, me, m)
			}
		}

		// Put: my data into my right neighbour's buf.
		goshmem.Put(c, buf, data(e, me, 1, l), right)
		p.BarrierAll()
		check("Put", buf, data(e, left, 1, l))
		p.BarrierAll()

		// Get: everybody fills its own buf; read the right neighbour's.
		copy(buf, data(e, me, 2, l))
		p.BarrierAll()
		got := make([]T, l)
		goshmem.Get(c, got, buf, right)
		check("Get", got, data(e, right, 2, l))
		p.BarrierAll()

		// PutNBI + Quiet.
		goshmem.PutNBI(c, buf, data(e, me, 3, l), right)
		c.Quiet()
		p.BarrierAll()
		check("PutNBI", buf, data(e, left, 3, l))
		// GetNBI of what the right neighbour received from me.
		got = make([]T, l)
		goshmem.GetNBI(c, got, buf, right)
		c.Quiet()
		check("GetNBI", got, data(e, me, 3, l))
		p.BarrierAll()

		// PutBytes / GetBytes on the byte views.
		goshmem.PutBytes(c, byteView(buf), byteView(data(e, me, 4, l)), right)
		p.BarrierAll()
		check("PutBytes", buf, data(e, left, 4, l))
		got = make([]T, l)
		goshmem.GetBytes(c, byteView(got), byteView(buf), left)
		check("GetBytes", got, data(e, (left+n-1)%n, 4, l))
		p.BarrierAll()

		// P and G, element by element (not on the longest length).
		if l <= 1000 {
			src := data(e, me, 5, l)
			for i := range src {
				goshmem.P(c, &buf[i], src[i], right)
			}
			p.BarrierAll()
			check("P", buf, data(e, left, 5, l))
			got = make([]T, l)
			for i := range got {
				got[i] = goshmem.G(c, &buf[i], right)
			}
			check("G", got, src)
			p.BarrierAll()
		}
		goshmem.Free(p, buf)
	}
}

// forModes runs f for n in ns in the mapped mode, and for n in
// {2, 3} in the other modes.
func forModes(t *testing.T, heap int64, ns []int, f func(t *testing.T, cfg node.Config, n int)) {
	for _, m := range modes {
		for _, n := range ns {
			if m.name != "mapped" && n != 2 && n != 3 {
				continue
			}
			cfg := m.cfg
			cfg.HeapSize = heap
			t.Run(fmt.Sprintf("%s/n=%d", m.name, n), func(t *testing.T) { f(t, cfg, n) })
		}
	}
}

func TestRMA(t *testing.T) {
	forModes(t, 4<<20, []int{1, 2, 3, 5}, func(t *testing.T, cfg node.Config, n int) {
		lengths := rmaLengths
		if cfg.Debug || cfg.Transport != "" {
			lengths = rmaShortLengths
		}
		runCfg(t, cfg, n, func(p *goshmem.PE) {
			rmaSuite(t, p, elemInt8, lengths)
			rmaSuite(t, p, elemInt32, lengths)
			rmaSuite(t, p, elemFloat64, lengths)
			rmaSuite(t, p, elemSmall, lengths)
			rmaSuite(t, p, elemComplex, lengths)
		})
	})
}

// naiveStrided is the reference of IPut and IGet: dst with n elements
// of src copied, dst[i*ds] = src[i*ss].
func naiveStrided[T any](dst, src []T, ds, ss, n int) []T {
	out := append([]T(nil), dst...)
	for i := 0; i < n; i++ {
		out[i*ds] = src[i*ss]
	}
	return out
}

// (A stride of 0 repeats one element: the spec's strides are any
// ptrdiff_t, and goshmem's are any that a slice can reach, >= 0.)
var strides = []struct{ ds, ss int }{{1, 1}, {1, 3}, {2, 1}, {3, 5}, {7, 2}, {16, 16}, {1, 0}, {0, 1}, {0, 0}, {3, 0}}

// stridedSuite checks IPut and IGet of type T for several strides and
// element counts against naiveStrided, the untouched elements included.
func stridedSuite[T any](t *testing.T, p *goshmem.PE, e elem[T]) {
	c := p.Ctx()
	me, n := p.MyPE(), p.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	for si, st := range strides {
		for _, cnt := range []int{0, 1, 7, 100} {
			dl, sl := max((cnt-1)*st.ds+1, 1), max((cnt-1)*st.ss+1, 1)
			salt := 100 + si*1000 + cnt
			check := func(op string, got, want []T) {
				if m := mismatch(e.eq, got, want); m != "" {
					t.Errorf("n=%d %s %s strides dst %d src %d n %d: PE %d: %s", n, e.name, op, st.ds, st.ss, cnt, me, m)
				}
			}
			// IPut: dst is symmetric, pre-filled by its owner.
			dst := mustMalloc[T](p, dl)
			copy(dst, data(e, me, salt, dl))
			p.BarrierAll()
			goshmem.IPut(c, dst, data(e, me, salt+1, sl), st.ds, st.ss, cnt, right)
			p.BarrierAll()
			check("IPut", dst, naiveStrided(data(e, me, salt, dl), data(e, left, salt+1, sl), st.ds, st.ss, cnt))
			p.BarrierAll()
			goshmem.Free(p, dst)

			// IGet: src is symmetric, filled by its owner.
			src := mustMalloc[T](p, sl)
			copy(src, data(e, me, salt+2, sl))
			p.BarrierAll()
			local := data(e, me, salt+3, dl)
			goshmem.IGet(c, local, src, st.ds, st.ss, cnt, right)
			check("IGet", local, naiveStrided(data(e, me, salt+3, dl), data(e, right, salt+2, sl), st.ds, st.ss, cnt))
			p.BarrierAll()
			goshmem.Free(p, src)
		}
	}
}

func TestStrided(t *testing.T) {
	forModes(t, testHeap, []int{1, 2, 3, 5}, func(t *testing.T, cfg node.Config, n int) {
		runCfg(t, cfg, n, func(p *goshmem.PE) {
			stridedSuite(t, p, elemInt8)
			stridedSuite(t, p, elemInt32)
			stridedSuite(t, p, elemFloat64)
			stridedSuite(t, p, elemSmall)
			stridedSuite(t, p, elemComplex)
		})
	})
}

// TestRMAToSelf checks that every routine also works with the calling
// PE as the target, on overlapping-free ranges of one allocation.
func TestRMAToSelf(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		c := p.Ctx()
		me := p.MyPE()
		x := mustCalloc[int64](p, 64)
		src := data(elem[int64]{}, me, 9, 64)
		goshmem.Put(c, x[:32], src[:32], me)
		goshmem.P(c, &x[40], -7, me)
		if got := goshmem.G(c, &x[40], me); got != -7 {
			t.Errorf("PE %d: G of own P = %d, want -7", me, got)
		}
		got := make([]int64, 32)
		goshmem.Get(c, got, x[:32], me)
		for i := range got {
			if got[i] != src[i] || x[i] != src[i] {
				t.Fatalf("PE %d: element %d: Get %d, local %d, want %d", me, i, got[i], x[i], src[i])
			}
		}
	})
}

// ---------------------------------------------------------------------
// Ptr, PtrTo and the accessibility queries.

func TestPtrAllPairs(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			run(t, n, testHeap, func(p *goshmem.PE) {
				me := p.MyPE()
				// x[i] on PE j is written by PE i through Ptr.
				x := mustCalloc[int64](p, n)
				y := mustCalloc[int32](p, n)
				for j := 0; j < n; j++ {
					r := goshmem.Ptr(p, x, j)
					if r == nil || len(r) != n || cap(r) != n {
						t.Errorf("PE %d: Ptr(x, %d) = len %d cap %d nil=%v, want %d elements", me, j, len(r), cap(r), r == nil, n)
						continue
					}
					r[me] = int64(1000*me + j)
					q := goshmem.PtrTo(p, &y[me], j)
					if q == nil {
						t.Errorf("PE %d: PtrTo(&y[%d], %d) = nil", me, me, j)
						continue
					}
					*q = int32(-(100*me + j))
					if j == me {
						if addr(r) != addr(x) || q != &y[me] {
							t.Errorf("PE %d: Ptr to itself is %#x/%p, want %#x/%p", me, addr(r), q, addr(x), &y[me])
						}
					}
					// PtrTo of an element agrees with Ptr of the slice.
					if got, want := goshmem.PtrTo(p, &x[n-1], j), &r[n-1]; got != want {
						t.Errorf("PE %d: PtrTo(&x[%d], %d) = %p, Ptr gives %p", me, n-1, j, got, want)
					}
				}
				p.BarrierAll()
				for i := 0; i < n; i++ {
					if x[i] != int64(1000*i+me) {
						t.Errorf("PE %d: x[%d] = %d, want %d (store of PE %d through Ptr)", me, i, x[i], 1000*i+me, i)
					}
					if y[i] != int32(-(100*i + me)) {
						t.Errorf("PE %d: y[%d] = %d, want %d (store of PE %d through PtrTo)", me, i, y[i], -(100*i + me), i)
					}
				}
				p.BarrierAll()
				// Stores by the owner are seen through Ptr by everybody.
				x[0] = int64(-me - 1)
				p.BarrierAll()
				for j := 0; j < n; j++ {
					if got := goshmem.Ptr(p, x, j)[0]; got != int64(-j-1) {
						t.Errorf("PE %d: Ptr(x, %d)[0] = %d, want %d", me, j, got, -j-1)
					}
				}
				p.BarrierAll()
			})
		})
	}
}

func TestPtrNil(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		x := mustMalloc[int64](p, 8)
		whole := mustMalloc[byte](p, p.HeapSize()-64) // the rest of the heap
		goSlice := make([]int64, 8)
		var goVar int64
		past := unsafe.Slice(&whole[len(whole)-4], 8) // runs 4 bytes past the heap's end
		cases := []struct {
			name string
			got  bool // Ptr returned nil
		}{
			{"Go slice", goshmem.Ptr(p, goSlice, 0) == nil},
			{"Go slice, target 1", goshmem.Ptr(p, goSlice, 1) == nil},
			{"nil slice", goshmem.Ptr[int64](p, nil, 0) == nil},
			{"empty heap slice", goshmem.Ptr(p, x[:0], 1) == nil},
			{"target -1", goshmem.Ptr(p, x, -1) == nil},
			{"target npes", goshmem.Ptr(p, x, 2) == nil},
			{"past heap end", goshmem.Ptr(p, past, 1) == nil},
			{"PtrTo Go var", goshmem.PtrTo(p, &goVar, 0) == nil},
			{"PtrTo nil", goshmem.PtrTo[int64](p, nil, 0) == nil},
			{"PtrTo target -1", goshmem.PtrTo(p, &x[0], -1) == nil},
			{"PtrTo target npes", goshmem.PtrTo(p, &x[0], 2) == nil},
			{"PtrTo past heap end", goshmem.PtrTo(p, (*[8]byte)(unsafe.Pointer(&whole[len(whole)-4])), 1) == nil},
		}
		for _, c := range cases {
			if !c.got {
				t.Errorf("PE %d: %s: Ptr is not nil", p.MyPE(), c.name)
			}
		}
		// The last bytes of the heap are still reachable.
		if r := goshmem.Ptr(p, whole[len(whole)-8:], 1); r == nil || len(r) != 8 {
			t.Errorf("PE %d: Ptr of the heap's last 8 bytes = %v", p.MyPE(), r)
		}
	})
}

func TestAccessible(t *testing.T) {
	for _, n := range []int{1, 3} {
		run(t, n, testHeap, func(p *goshmem.PE) {
			x := mustMalloc[int64](p, 4)
			heapAddrs := []uintptr{addr(x), addr(x[3:])}
			goAddr := addr(make([]int64, 4))
			for pe := -2; pe <= n+1; pe++ {
				valid := pe >= 0 && pe < n
				if got := p.PEAccessible(pe); got != valid {
					t.Errorf("n=%d PE %d: PEAccessible(%d) = %v, want %v", n, p.MyPE(), pe, got, valid)
				}
				if got := p.PtrAccessible(pe); got != valid {
					t.Errorf("n=%d PE %d: PtrAccessible(%d) = %v, want %v", n, p.MyPE(), pe, got, valid)
				}
				if got := goshmem.Ptr(p, x, pe) != nil; got != p.PtrAccessible(pe) {
					t.Errorf("n=%d PE %d: Ptr(x, %d) != nil is %v but PtrAccessible is %v", n, p.MyPE(), pe, got, !got)
				}
				for _, a := range heapAddrs {
					if got := p.AddrAccessible(a, pe); got != valid {
						t.Errorf("n=%d PE %d: AddrAccessible(heap %#x, %d) = %v, want %v", n, p.MyPE(), a, pe, got, valid)
					}
				}
				if p.AddrAccessible(goAddr, pe) {
					t.Errorf("n=%d PE %d: AddrAccessible(Go heap %#x, %d) = true", n, p.MyPE(), goAddr, pe)
				}
				if p.AddrAccessible(0, pe) {
					t.Errorf("n=%d PE %d: AddrAccessible(0, %d) = true", n, p.MyPE(), pe)
				}
			}
		})
	}
}

// TestAddrAccessibleSlice: the slice form agrees with where the slice
// lies and with the PE range.
func TestAddrAccessibleSlice(t *testing.T) {
	run(t, 3, testHeap, func(p *goshmem.PE) {
		x := mustMalloc[int64](p, 4)
		whole := mustMalloc[byte](p, p.HeapSize()-64)
		past := unsafe.Slice(&whole[len(whole)-1], 2)
		for pe := -1; pe <= 3; pe++ {
			valid := pe >= 0 && pe < 3
			for _, tc := range []struct {
				name string
				got  bool
				want bool
			}{
				{"heap slice", goshmem.AddrAccessible(p, x, pe), valid},
				{"heap tail", goshmem.AddrAccessible(p, whole[len(whole)-1:], pe), valid},
				{"empty heap slice", goshmem.AddrAccessible(p, x[:0], pe), false},
				{"Go slice", goshmem.AddrAccessible(p, make([]int64, 4), pe), false},
				{"past the heap's end", goshmem.AddrAccessible(p, past, pe), false},
			} {
				if tc.got != tc.want {
					t.Errorf("PE %d: AddrAccessible(%s, %d) = %v, want %v", p.MyPE(), tc.name, pe, tc.got, tc.want)
				}
			}
		}
	})
}

// TestJobQueries checks MyPE, NPEs, HeapSize and the thread level.
func TestJobQueries(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		seen := make([]int, n)
		run(t, n, testHeap, func(p *goshmem.PE) {
			if p.NPEs() != n {
				t.Errorf("NPEs = %d, want %d", p.NPEs(), n)
			}
			if me := p.MyPE(); me < 0 || me >= n {
				t.Errorf("MyPE = %d, out of [0, %d)", me, n)
			} else {
				seen[me]++
			}
			if p.HeapSize() < testHeap {
				t.Errorf("HeapSize = %d, want at least %d", p.HeapSize(), testHeap)
			}
			if p.ThreadLevel() != goshmem.ThreadMultiple {
				t.Errorf("ThreadLevel = %v, want MULTIPLE", p.ThreadLevel())
			}
			if p.Ctx().PE() != p {
				t.Errorf("Ctx().PE() is not the PE")
			}
		})
		for pe, k := range seen {
			if k != 1 {
				t.Errorf("n=%d: PE %d ran %d times", n, pe, k)
			}
		}
	}
}

// TestInitThread: the classic start-up gives a one-PE job (the test
// process is not started by oshrun) at the requested thread level.
func TestInitThread(t *testing.T) {
	t.Setenv("SHMEM_SYMMETRIC_SIZE", "1m")
	for _, level := range []goshmem.ThreadLevel{goshmem.ThreadSingle, goshmem.ThreadFunneled, goshmem.ThreadSerialized, goshmem.ThreadMultiple} {
		p, got, err := goshmem.InitThread(level)
		if err != nil {
			t.Fatalf("InitThread(%v): %v", level, err)
		}
		if got != level || p.ThreadLevel() != level {
			t.Errorf("InitThread(%v) provided %v, ThreadLevel %v", level, got, p.ThreadLevel())
		}
		if p.MyPE() != 0 || p.NPEs() != 1 || p.HeapSize() != 1<<20 {
			t.Errorf("InitThread: PE %d of %d, heap %d; want PE 0 of 1, heap 1 MiB", p.MyPE(), p.NPEs(), p.HeapSize())
		}
		x := mustCalloc[int64](p, 2)
		goshmem.Put(p.Ctx(), x, []int64{4, 5}, 0)
		if goshmem.AtomicFetchAdd(p.Ctx(), &x[1], 1, 0) != 5 || x[0] != 4 || x[1] != 6 {
			t.Errorf("one-PE job: x = %v, want [4 6]", x)
		}
		p.BarrierAll()
		p.Finalize()
	}
	// An unknown level is a programmer error, refused before a PE
	// starts.
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "goshmem.InitThread: unknown thread level 9; use ThreadSingle") {
				t.Errorf("InitThread(9) panicked with %v; want the level and the valid ones named", r)
			}
		}()
		goshmem.InitThread(goshmem.ThreadLevel(9))
	}()
}

// TestManyPEs: a job with many more PEs than CPUs still completes ring
// exchanges and barriers (no PE starves the one it waits for), and
// barriers separate phases.
func TestManyPEs(t *testing.T) {
	for _, n := range []int{9, 16} {
		run(t, n, 256<<10, func(p *goshmem.PE) {
			c := p.Ctx()
			me := p.MyPE()
			x := mustCalloc[int64](p, n)
			for round := int64(1); round <= 10; round++ {
				// Everybody writes its slot on every PE, then checks all.
				for q := 0; q < n; q++ {
					goshmem.P(c, &x[me], round*100+int64(me), q)
				}
				p.BarrierAll()
				for q := 0; q < n; q++ {
					if x[q] != round*100+int64(q) {
						t.Errorf("n=%d round %d PE %d: x[%d] = %d, want %d", n, round, me, q, x[q], round*100+int64(q))
					}
				}
				p.BarrierAll()
			}
		})
	}
}
