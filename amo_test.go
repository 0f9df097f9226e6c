package goshmem_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// amoOp is one AMO routine with its sequential reference: given the old
// value, the operand v and the comparand cond, the new value and, for
// fetching forms, the value returned.
type amoOp[T goshmem.Integer] struct {
	name  string
	fetch bool // returns (or stores into *fetch) the old value
	do    func(c *goshmem.Ctx, dst *T, v, cond T, pe int) T
	ref   func(old, v, cond T) T // new value
}

func amoOps[T goshmem.Integer]() []amoOp[T] {
	keep := func(old, v, cond T) T { return old }
	set := func(old, v, cond T) T { return v }
	cswap := func(old, v, cond T) T {
		if old == cond {
			return v
		}
		return old
	}
	add := func(old, v, cond T) T { return old + v }
	inc := func(old, v, cond T) T { return old + 1 }
	and := func(old, v, cond T) T { return old & v }
	or := func(old, v, cond T) T { return old | v }
	xor := func(old, v, cond T) T { return old ^ v }
	nbi := func(f func(c *goshmem.Ctx, fetch, dst *T, v, cond T, pe int)) func(c *goshmem.Ctx, dst *T, v, cond T, pe int) T {
		return func(c *goshmem.Ctx, dst *T, v, cond T, pe int) T {
			var fetched T
			f(c, &fetched, dst, v, cond, pe)
			c.Quiet()
			return fetched
		}
	}
	return []amoOp[T]{
		{"AtomicFetch", true, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { return goshmem.AtomicFetch(c, d, pe) }, keep},
		{"AtomicSet", false, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { goshmem.AtomicSet(c, d, v, pe); return 0 }, set},
		{"AtomicSwap", true, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { return goshmem.AtomicSwap(c, d, v, pe) }, set},
		{"AtomicCompareSwap", true, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T {
			return goshmem.AtomicCompareSwap(c, d, cond, v, pe)
		}, cswap},
		{"AtomicFetchAdd", true, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { return goshmem.AtomicFetchAdd(c, d, v, pe) }, add},
		{"AtomicAdd", false, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { goshmem.AtomicAdd(c, d, v, pe); return 0 }, add},
		{"AtomicFetchInc", true, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { return goshmem.AtomicFetchInc(c, d, pe) }, inc},
		{"AtomicInc", false, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { goshmem.AtomicInc(c, d, pe); return 0 }, inc},
		{"AtomicFetchAnd", true, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { return goshmem.AtomicFetchAnd(c, d, v, pe) }, and},
		{"AtomicAnd", false, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { goshmem.AtomicAnd(c, d, v, pe); return 0 }, and},
		{"AtomicFetchOr", true, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { return goshmem.AtomicFetchOr(c, d, v, pe) }, or},
		{"AtomicOr", false, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { goshmem.AtomicOr(c, d, v, pe); return 0 }, or},
		{"AtomicFetchXor", true, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { return goshmem.AtomicFetchXor(c, d, v, pe) }, xor},
		{"AtomicXor", false, func(c *goshmem.Ctx, d *T, v, cond T, pe int) T { goshmem.AtomicXor(c, d, v, pe); return 0 }, xor},
		{"AtomicFetchNBI", true, nbi(func(c *goshmem.Ctx, f, d *T, v, cond T, pe int) { goshmem.AtomicFetchNBI(c, f, d, pe) }), keep},
		{"AtomicSwapNBI", true, nbi(func(c *goshmem.Ctx, f, d *T, v, cond T, pe int) { goshmem.AtomicSwapNBI(c, f, d, v, pe) }), set},
		{"AtomicCompareSwapNBI", true, nbi(func(c *goshmem.Ctx, f, d *T, v, cond T, pe int) {
			goshmem.AtomicCompareSwapNBI(c, f, d, cond, v, pe)
		}), cswap},
		{"AtomicFetchAddNBI", true, nbi(func(c *goshmem.Ctx, f, d *T, v, cond T, pe int) { goshmem.AtomicFetchAddNBI(c, f, d, v, pe) }), add},
		{"AtomicFetchIncNBI", true, nbi(func(c *goshmem.Ctx, f, d *T, v, cond T, pe int) { goshmem.AtomicFetchIncNBI(c, f, d, pe) }), inc},
		{"AtomicFetchAndNBI", true, nbi(func(c *goshmem.Ctx, f, d *T, v, cond T, pe int) { goshmem.AtomicFetchAndNBI(c, f, d, v, pe) }), and},
		{"AtomicFetchOrNBI", true, nbi(func(c *goshmem.Ctx, f, d *T, v, cond T, pe int) { goshmem.AtomicFetchOrNBI(c, f, d, v, pe) }), or},
		{"AtomicFetchXorNBI", true, nbi(func(c *goshmem.Ctx, f, d *T, v, cond T, pe int) { goshmem.AtomicFetchXorNBI(c, f, d, v, pe) }), xor},
	}
}

// amoValues returns edge values and random values of T.
func amoValues[T goshmem.Integer](seed uint64) []T {
	var zero T
	bits := 8 * int(unsafe.Sizeof(zero))
	top := T(1) << (bits - 1) // the minimum of a signed T
	pat := uint64(0x5a5a5a5a5a5a5a5a)
	vals := []T{zero, 1, ^zero, top, top - 1, 2, T(pat), T(^pat)}
	r := rand.New(rand.NewPCG(seed, 17))
	for range 4 {
		vals = append(vals, T(r.Uint64()))
	}
	return vals
}

// amoSuite runs every integer AMO on a word of the right neighbour (one
// word per acting PE, so the PEs do not interfere) for every pair of
// (initial value, operand), with cond both equal and unequal to the
// initial value, and compares the returned and resulting values with
// the sequential reference. At the end the owner checks its copy.
func amoSuite[T goshmem.Integer](t *testing.T, p *goshmem.PE, typ string) {
	c := p.Ctx()
	me, n := p.MyPE(), p.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	x := mustCalloc[T](p, n)
	dst := &x[me]
	vals := amoValues[T](uint64(me))
	errs := 0
	fail := func(format string, args ...any) {
		if errs++; errs <= 5 {
			t.Errorf("n=%d PE %d %s: "+format, append([]any{n, me, typ}, args...)...)
		}
	}
	for _, op := range amoOps[T]() {
		for _, init := range vals {
			for vi, v := range vals {
				for _, cond := range []T{init, init ^ T(vi+1)} {
					goshmem.AtomicSet(c, dst, init, right)
					got := op.do(c, dst, v, cond, right)
					want := op.ref(init, v, cond)
					if now := goshmem.AtomicFetch(c, dst, right); now != want {
						fail("%s(old %#x, v %#x, cond %#x): new value %#x, want %#x", op.name, init, v, cond, now, want)
					}
					if op.fetch && got != init {
						fail("%s(old %#x, v %#x, cond %#x) returned %#x, want the old value %#x", op.name, init, v, cond, got, init)
					}
					if g := goshmem.G(c, dst, right); g != want {
						fail("%s(old %#x, v %#x, cond %#x): G afterwards = %#x, want %#x", op.name, init, v, cond, g, want)
					}
				}
			}
		}
	}
	// A last distinctive value, for the owner to check in its own copy.
	goshmem.AtomicSet(c, dst, vals[8], right)
	goshmem.AtomicFetchAdd(c, dst, T(me+1), right)
	p.BarrierAll()
	if want := amoValues[T](uint64(left))[8] + T(left+1); x[left] != want {
		fail("own x[%d] = %#x after PE %d's AMOs, want %#x", left, x[left], left, want)
	}
	p.BarrierAll()
	goshmem.Free(p, x)
}

func TestAMOIntegers(t *testing.T) {
	forModes(t, testHeap, []int{1, 2, 3}, func(t *testing.T, cfg node.Config, n int) {
		runCfg(t, cfg, n, func(p *goshmem.PE) {
			amoSuite[int32](t, p, "int32")
			amoSuite[int64](t, p, "int64")
			amoSuite[uint32](t, p, "uint32")
			amoSuite[uint64](t, p, "uint64")
			amoSuite[int](t, p, "int")
			amoSuite[uint](t, p, "uint")
			amoSuite[uintptr](t, p, "uintptr")
		})
	})
}

// floatSuite checks AtomicFetch, AtomicSet, AtomicSwap and their NBI
// forms on float bit patterns, which must move unchanged (NaN payloads,
// signed zeros, infinities, subnormals).
func floatSuite[F float32 | float64](t *testing.T, p *goshmem.PE, vals []F, bits func(F) uint64) {
	c := p.Ctx()
	me, n := p.MyPE(), p.NPEs()
	right := (me + 1) % n
	x := mustCalloc[F](p, n)
	dst := &x[me]
	for _, a := range vals {
		for _, b := range vals {
			goshmem.AtomicSet(c, dst, a, right)
			if got := goshmem.AtomicFetch(c, dst, right); bits(got) != bits(a) {
				t.Errorf("AtomicSet(%#x) then AtomicFetch = %#x", bits(a), bits(got))
			}
			if got := goshmem.AtomicSwap(c, dst, b, right); bits(got) != bits(a) {
				t.Errorf("AtomicSwap(%#x) over %#x returned %#x", bits(b), bits(a), bits(got))
			}
			if got := goshmem.G(c, dst, right); bits(got) != bits(b) {
				t.Errorf("after AtomicSwap(%#x): G = %#x", bits(b), bits(got))
			}
			var f F
			goshmem.AtomicSwapNBI(c, &f, dst, a, right)
			c.Quiet()
			if bits(f) != bits(b) {
				t.Errorf("AtomicSwapNBI(%#x) over %#x fetched %#x", bits(a), bits(b), bits(f))
			}
			goshmem.AtomicFetchNBI(c, &f, dst, right)
			c.Quiet()
			if bits(f) != bits(a) {
				t.Errorf("AtomicFetchNBI of %#x fetched %#x", bits(a), bits(f))
			}
		}
	}
	p.BarrierAll()
	goshmem.Free(p, x)
}

func TestAMOFloats(t *testing.T) {
	f64 := []float64{0, math.Copysign(0, -1), 1, -1.5, math.Inf(1), math.Inf(-1), math.NaN(),
		math.Float64frombits(0x7ff0000000000001), // signalling NaN
		math.Float64frombits(0xfff8dead0000beef), // negative quiet NaN with payload
		math.Float64frombits(1),                  // smallest subnormal
		math.MaxFloat64, math.SmallestNonzeroFloat64}
	f32 := []float32{0, float32(math.Copysign(0, -1)), 1, -1.5, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00000), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc0beef),
		math.Float32frombits(1), math.MaxFloat32}
	for _, m := range modes {
		cfg := m.cfg
		t.Run(m.name, func(t *testing.T) {
			runCfg(t, cfg, 2, func(p *goshmem.PE) {
				floatSuite(t, p, f64, func(f float64) uint64 { return math.Float64bits(f) })
				floatSuite(t, p, f32, func(f float32) uint64 { return uint64(math.Float32bits(f)) })
			})
		})
	}
}

// TestAMOConcurrentAdd: every PE adds to PE 0's counter K times; the
// total is exact and each PE sees its own fetched values increase.
func TestAMOConcurrentAdd(t *testing.T) {
	const K = 2000
	for _, m := range modes {
		cfg := m.cfg
		t.Run(m.name, func(t *testing.T) {
			for _, n := range []int{2, 3, 5} {
				runCfg(t, cfg, n, func(p *goshmem.PE) {
					c := p.Ctx()
					ctr := mustCalloc[int64](p, 2)
					ctr32 := mustCalloc[uint32](p, 1)
					p.BarrierAll()
					prev := int64(-1)
					for k := 0; k < K; k++ {
						old := goshmem.AtomicFetchAdd(c, &ctr[0], 3, 0)
						if old <= prev || old%3 != 0 {
							t.Errorf("n=%d PE %d: AtomicFetchAdd returned %d after %d", n, p.MyPE(), old, prev)
							break
						}
						prev = old
						goshmem.AtomicAdd(c, &ctr[1], -1, 0)
						goshmem.AtomicInc(c, &ctr32[0], 0)
					}
					p.BarrierAll()
					if p.MyPE() == 0 {
						if ctr[0] != int64(3*K*n) || ctr[1] != int64(-K*n) || ctr32[0] != uint32(K*n) {
							t.Errorf("n=%d: counters %d, %d, %d; want %d, %d, %d", n, ctr[0], ctr[1], ctr32[0], 3*K*n, -K*n, K*n)
						}
					}
				})
			}
		})
	}
}

// TestAMOFetchIncPermutation: the values returned by concurrent
// AtomicFetchInc calls are exactly 0..n*K-1.
func TestAMOFetchIncPermutation(t *testing.T) {
	const K = 1000
	for _, m := range modes {
		cfg := m.cfg
		t.Run(m.name, func(t *testing.T) {
			for _, n := range []int{2, 4} {
				runCfg(t, cfg, n, func(p *goshmem.PE) {
					c := p.Ctx()
					me := p.MyPE()
					ctr := mustCalloc[uint64](p, 1)
					got := mustCalloc[uint64](p, n*K) // gathered on PE 0
					mine := make([]uint64, K)
					p.BarrierAll()
					for k := range mine {
						if k%2 == 0 {
							mine[k] = goshmem.AtomicFetchInc(c, &ctr[0], 0)
						} else {
							goshmem.AtomicFetchIncNBI(c, &mine[k], &ctr[0], 0)
						}
					}
					c.Quiet()
					goshmem.Put(c, got[me*K:(me+1)*K], mine, 0)
					p.BarrierAll()
					if me == 0 {
						s := slices.Clone(got)
						slices.Sort(s)
						for i, v := range s {
							if v != uint64(i) {
								t.Errorf("n=%d: sorted fetched values[%d] = %d, want %d (not a permutation)", n, i, v, i)
								break
							}
						}
						if ctr[0] != uint64(n*K) {
							t.Errorf("n=%d: counter %d, want %d", n, ctr[0], n*K)
						}
					}
				})
			}
		})
	}
}

// TestAMOCompareSwapMutex: a spin lock made of AtomicCompareSwap guards
// a non-atomic read-modify-write of a counter on PE 0.
func TestAMOCompareSwapMutex(t *testing.T) {
	const K = 300
	for _, m := range modes {
		cfg := m.cfg
		t.Run(m.name, func(t *testing.T) {
			for _, n := range []int{2, 4} {
				runCfg(t, cfg, n, func(p *goshmem.PE) {
					c := p.Ctx()
					me := p.MyPE()
					lock := mustCalloc[int32](p, 1)
					ctr := mustCalloc[int64](p, 1)
					p.BarrierAll()
					for k := 0; k < K; k++ {
						for goshmem.AtomicCompareSwap(c, &lock[0], 0, int32(me+1), 0) != 0 {
							runtime.Gosched()
						}
						v := goshmem.G(c, &ctr[0], 0)
						runtime.Gosched() // invite a race if the lock did not work
						goshmem.P(c, &ctr[0], v+1, 0)
						c.Quiet()
						if old := goshmem.AtomicSwap(c, &lock[0], 0, 0); old != int32(me+1) {
							t.Errorf("n=%d PE %d: lock held by %d when releasing", n, me, old-1)
						}
					}
					p.BarrierAll()
					if me == 0 && ctr[0] != int64(n*K) {
						t.Errorf("n=%d: counter %d, want %d", n, ctr[0], n*K)
					}
				})
			}
		})
	}
}

// TestAMOConcurrentBitwise: concurrent xor, and, or (fetching and not)
// from every PE into words of PE 0 give the sequential result.
func TestAMOConcurrentBitwise(t *testing.T) {
	const K = 500
	for _, m := range modes {
		cfg := m.cfg
		t.Run(m.name, func(t *testing.T) {
			for _, n := range []int{2, 3} {
				runCfg(t, cfg, n, func(p *goshmem.PE) {
					c := p.Ctx()
					me := p.MyPE()
					w := mustCalloc[uint64](p, 3)
					v32 := mustCalloc[int32](p, 3)
					if me == 0 {
						w[1], v32[1] = ^uint64(0), -1 // and starts from all ones
					}
					p.BarrierAll()
					for k := 0; k < K; k++ {
						x, y, z := opVals(me, k)
						if k%2 == 0 {
							goshmem.AtomicXor(c, &w[0], x, 0)
							goshmem.AtomicAnd(c, &w[1], y, 0)
							goshmem.AtomicOr(c, &w[2], z, 0)
						} else {
							goshmem.AtomicFetchXor(c, &w[0], x, 0)
							goshmem.AtomicFetchAnd(c, &w[1], y, 0)
							goshmem.AtomicFetchOr(c, &w[2], z, 0)
						}
						goshmem.AtomicFetchXor(c, &v32[0], int32(x), 0)
						goshmem.AtomicAnd(c, &v32[1], int32(y), 0)
						goshmem.AtomicFetchOr(c, &v32[2], int32(z), 0)
					}
					p.BarrierAll()
					if me != 0 {
						return
					}
					var rx, ry, rz uint64 = 0, ^uint64(0), 0
					for pe := 0; pe < n; pe++ {
						for k := 0; k < K; k++ {
							x, y, z := opVals(pe, k)
							rx, ry, rz = rx^x, ry&y, rz|z
						}
					}
					if w[0] != rx || w[1] != ry || w[2] != rz {
						t.Errorf("n=%d: xor/and/or = %#x %#x %#x, want %#x %#x %#x", n, w[0], w[1], w[2], rx, ry, rz)
					}
					if v32[0] != int32(rx) || v32[1] != int32(ry) || v32[2] != int32(rz) {
						t.Errorf("n=%d: int32 xor/and/or = %#x %#x %#x, want %#x %#x %#x", n, v32[0], v32[1], v32[2], int32(rx), int32(ry), int32(rz))
					}
				})
			}
		})
	}
}

// opVals are the operands of TestAMOConcurrentBitwise: random xor
// operands, and-masks that each clear few bits, or-masks that each set
// one bit.
func opVals(pe, k int) (x, y, z uint64) {
	r := rand.New(rand.NewPCG(uint64(pe), uint64(k)))
	x = r.Uint64()
	y = ^(uint64(1) << r.IntN(64) & r.Uint64() & r.Uint64())
	z = uint64(1) << r.IntN(64) & r.Uint64()
	return
}
