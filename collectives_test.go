package goshmem_test

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// The collectives are checked against naive references: every PE's
// contribution is a pure function of (world PE, index, seed), so the
// expected result of a collective is a plain loop over the members'
// contributions. Every call gets a new seed, so a stale result from an
// earlier call cannot pass. Reduction values are chosen so that the
// floating-point results are exact (small integers, products of ±1 and
// ±2), hence independent of the order of the fold; integer results
// wrap the same way in the reference and the library.

// ---------------------------------------------------------------------
// Contributions.

// mix is a SplitMix64-style hash of (pe, i, seed).
func mix(pe, i int, seed uint64) uint64 {
	x := seed*0x9e3779b97f4a7c15 ^ uint64(pe)*0xbf58476d1ce4e5b9 ^ uint64(i)*0x94d049bb133111eb
	return remix(x)
}

func remix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// junkSalt makes the values dst holds before a collective, to tell
// elements it wrote from elements it left alone.
const junkSalt = 0x6a756e6b6a756e6b

// redOp is a reduction: the library routine, the reference operator,
// and the contributions that keep it exact.
type redOp[T comparable] struct {
	name string
	lib  func(t *goshmem.Team, dst, src []T)
	fold func(a, b T) T
	gen  func(h uint64) T
}

var prodValues = [4]int64{-2, -1, 1, 2}

func arithOps[T goshmem.Summable](of func(int64) T) []redOp[T] {
	return []redOp[T]{
		{"sum", goshmem.SumReduce[T], func(a, b T) T { return a + b }, func(h uint64) T { return of(int64(h%101) - 50) }},
		{"prod", goshmem.ProdReduce[T], func(a, b T) T { return a * b }, func(h uint64) T { return of(prodValues[h%4]) }},
	}
}

func orderOps[T goshmem.Ordered](of func(int64) T) []redOp[T] {
	gen := func(h uint64) T { return of(int64(h%201) - 100) }
	return []redOp[T]{
		{"min", goshmem.MinReduce[T], func(a, b T) T { return min(a, b) }, gen},
		{"max", goshmem.MaxReduce[T], func(a, b T) T { return max(a, b) }, gen},
	}
}

func bitOps[T goshmem.Bitwise](of func(int64) T) []redOp[T] {
	return []redOp[T]{
		// Mostly ones, so that the and of up to 8 PEs is not all zero.
		{"and", goshmem.AndReduce[T], func(a, b T) T { return a & b }, func(h uint64) T {
			return of(int64(h | remix(h) | remix(h+1) | remix(h+2)))
		}},
		// Mostly zeros, so that the or is not all ones.
		{"or", goshmem.OrReduce[T], func(a, b T) T { return a | b }, func(h uint64) T {
			return of(int64(h & remix(h) & remix(h+1)))
		}},
		{"xor", goshmem.XorReduce[T], func(a, b T) T { return a ^ b }, func(h uint64) T { return of(int64(h)) }},
	}
}

func intOps[T goshmem.Bitwise](of func(int64) T) []redOp[T] {
	return slices.Concat(arithOps(of), orderOps(of), bitOps(of))
}

func floatOps[T ~float32 | ~float64](of func(int64) T) []redOp[T] {
	return slices.Concat(arithOps(of), orderOps(of))
}

// ---------------------------------------------------------------------
// The per-job context of a suite.

// refCache shares the references among the PEs of an in-process job:
// the first member of a team to need one computes it, the last one to
// use it drops it.
type refCache struct {
	mu sync.Mutex
	m  map[string]*refEntry
}

type refEntry struct {
	once  sync.Once
	v     any
	users int
}

func (c *refCache) get(key string, users int, compute func() any) any {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*refEntry{}
	}
	e := c.m[key]
	if e == nil {
		e = &refEntry{users: users}
		c.m[key] = e
	}
	e.users--
	if e.users == 0 {
		delete(c.m, key)
	}
	c.mu.Unlock()
	e.once.Do(func() { e.v = compute() })
	return e.v
}

// collRun is one PE's view of a suite on one team shape.
type collRun struct {
	t     *testing.T
	p     *goshmem.PE
	shape teamShape
	cache *refCache
	seed  uint64 // the same sequence on every member
	big   bool   // only the long (100003-element) reductions
	fast  bool   // fewer sizes and types (slow transports, sub-teams)
	few   bool   // fewer element types
	errs  int
}

func (r *collRun) member() bool { return r.shape.team != nil }

// idx is this PE's number in the team.
func (r *collRun) idx() int { return r.shape.team.MyPE() }

func (r *collRun) next() uint64 {
	r.seed++
	return r.seed
}

// errorf reports a failure; a run stops reporting after a few.
func (r *collRun) errorf(format string, args ...any) {
	r.t.Helper()
	r.errs++
	if r.errs <= 5 {
		r.t.Errorf("n=%d %s(%v) PE %d: %s", r.p.NPEs(), r.shape.name, r.shape.members, r.p.MyPE(), fmt.Sprintf(format, args...))
	}
}

// diff returns the first index where got and want differ, or -1.
func diff[T comparable](got, want []T) int {
	if len(got) != len(want) {
		return min(len(got), len(want))
	}
	if bytes.Equal(byteView(got), byteView(want)) {
		return -1
	}
	for i := range got {
		if got[i] != want[i] {
			return i
		}
	}
	return -1
}

// genSlice returns gen(mix(pe, i, seed)) for i in [from, from+n).
func genSlice[T any](gen func(uint64) T, pe, from, n int, seed uint64) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = gen(mix(pe, from+i, seed))
	}
	return out
}

func fill[T any](dst []T, gen func(uint64) T, pe int, seed uint64) {
	for i := range dst {
		dst[i] = gen(mix(pe, i, seed))
	}
}

func sizeOf[T any]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// ---------------------------------------------------------------------
// Reductions.

// bigReductions are the (type, operator) pairs also run on 100003
// elements (odd, partitioned).
var bigReductions = map[string]bool{
	"int64/sum": true, "float64/max": true, "uint8/xor": true, "complex64/prod": true,
	"int16/min": true, "float32/sum": true, "uint32/and": true, "int32/or": true,
	"complex128/sum": true, "uint64/prod": true,
}

// reduceSizes are the vector lengths of a reduction of elements of
// the given size: empty, one, odd, 511, and around the boundaries
// between the dropbox, flat and partitioned algorithms; in a big
// run, 100003 (odd, partitioned) for the pairs of bigReductions only.
func (r *collRun) reduceSizes(elem int, key string) []int {
	if r.big {
		if bigReductions[key] {
			return []int{100003}
		}
		return nil
	}
	// Around the boundaries the algorithms may switch at: the 632-byte
	// exchange dropboxes, 1 KiB and 4 KiB (flat combining and partitioned).
	box, k1, k4 := 632/elem, 1024/elem, 4096/elem
	sizes := []int{0, 1, 7, box, box + 1, 511, k1, k1 + 1, k4, k4 + 1, 4*k4 + 3} // 4*k4+3: several partitions, a ragged tail
	if r.fast {
		sizes = []int{1, box + 1, k1 + 1, k4 + 1}
	}
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

func reduceSuite[T comparable](r *collRun, typ string, ops []redOp[T]) {
	maxN := -1
	for _, op := range ops {
		for _, n := range r.reduceSizes(sizeOf[T](), typ+"/"+op.name) {
			maxN = max(maxN, n)
		}
	}
	if maxN < 0 {
		return
	}
	src := mustMalloc[T](r.p, maxN+2)
	dst := mustMalloc[T](r.p, maxN+2)
	me := r.p.MyPE()
	for _, op := range ops {
		key := typ + "/" + op.name
		for _, n := range r.reduceSizes(sizeOf[T](), key) {
			for _, inPlace := range []bool{false, true} {
				seed := r.next()
				if !r.member() {
					continue
				}
				// The vector, with one element of margin each side.
				src, dst := src[:n+2], dst[:n+2]
				fill(src, op.gen, me, seed)
				fill(dst, op.gen, me, seed^junkSalt)
				orig, junk := slices.Clone(src), slices.Clone(dst)
				s, d := src[1:n+1], dst[1:n+1]
				if inPlace {
					d = s
				}
				op.lib(r.shape.team, d, s)
				members := r.shape.members
				ref := r.cache.get(fmt.Sprint(seed, members), len(members), func() any {
					out := make([]T, n)
					for i := range out {
						acc := op.gen(mix(members[0], i+1, seed))
						for _, q := range members[1:] {
							acc = op.fold(acc, op.gen(mix(q, i+1, seed)))
						}
						out[i] = acc
					}
					return out
				}).([]T)
				what := fmt.Sprintf("%s %s of %d (in place %v)", typ, op.name, n, inPlace)
				if i := diff(d, ref); i >= 0 {
					r.errorf("%s: element %d = %v, want %v", what, i, d[i], ref[i])
				}
				if !inPlace {
					if i := diff(src, orig); i >= 0 {
						r.errorf("%s: source element %d changed to %v", what, i-1, src[i])
					}
					if dst[0] != junk[0] || dst[n+1] != junk[n+1] {
						r.errorf("%s: wrote outside dest", what)
					}
				} else if src[0] != orig[0] || src[n+1] != orig[n+1] || diff(dst, junk) >= 0 {
					r.errorf("%s: in place, wrote outside the vector", what)
				}
			}
		}
	}
	goshmem.Free(r.p, dst)
	goshmem.Free(r.p, src)
}

type (
	myInt  int32 // named types reduce like their underlying ones
	myUint uint16
)

// reduceAll runs the reductions of every element type and operator.
func reduceAll(r *collRun) {
	reduceSuite(r, "int64", intOps(func(k int64) int64 { return k }))
	reduceSuite(r, "float64", floatOps(func(k int64) float64 { return float64(k) }))
	reduceSuite(r, "complex128", arithOps(func(k int64) complex128 { return complex(float64(k), float64(k%3-1)) }))
	reduceSuite(r, "uint8", intOps(func(k int64) uint8 { return uint8(k) }))
	reduceSuite(r, "int8", intOps(func(k int64) int8 { return int8(k) }))
	if r.fast || r.few {
		return
	}
	reduceSuite(r, "int16", intOps(func(k int64) int16 { return int16(k) }))
	reduceSuite(r, "int32", intOps(func(k int64) int32 { return int32(k) }))
	reduceSuite(r, "uint16", intOps(func(k int64) uint16 { return uint16(k) }))
	reduceSuite(r, "uint32", intOps(func(k int64) uint32 { return uint32(k) }))
	reduceSuite(r, "uint64", intOps(func(k int64) uint64 { return uint64(k) }))
	reduceSuite(r, "int", intOps(func(k int64) int { return int(k) }))
	reduceSuite(r, "uint", bitOps(func(k int64) uint { return uint(k) }))
	reduceSuite(r, "uintptr", bitOps(func(k int64) uintptr { return uintptr(k) }))
	reduceSuite(r, "myInt", intOps(func(k int64) myInt { return myInt(k) }))
	reduceSuite(r, "myUint", bitOps(func(k int64) myUint { return myUint(k) }))
	reduceSuite(r, "float32", floatOps(func(k int64) float32 { return float32(k) }))
	reduceSuite(r, "complex64", arithOps(func(k int64) complex64 { return complex(float32(k), float32(k%3-1)) }))
}

// scanSuite checks SumInscan and SumExscan (prefix sums over the
// members in team order; zero on member 0 for the exclusive one).
func scanSuite[T goshmem.Summable](r *collRun, typ string, of func(int64) T) {
	sizes := []int{0, 1, 7, 15, 16, 300}
	src := mustMalloc[T](r.p, 302)
	dst := mustMalloc[T](r.p, 302)
	me := r.p.MyPE()
	gen := func(h uint64) T { return of(int64(h%101) - 50) }
	for _, n := range sizes {
		for _, inclusive := range []bool{true, false} {
			for _, inPlace := range []bool{false, true} {
				seed := r.next()
				if !r.member() {
					continue
				}
				src, dst := src[:n+2], dst[:n+2]
				fill(src, gen, me, seed)
				fill(dst, gen, me, seed^junkSalt)
				orig, junk := slices.Clone(src), slices.Clone(dst)
				s, d := src[1:n+1], dst[1:n+1]
				if inPlace {
					d = s
				}
				name := "SumExscan"
				if inclusive {
					goshmem.SumInscan(r.shape.team, d, s)
					name = "SumInscan"
				} else {
					goshmem.SumExscan(r.shape.team, d, s)
				}
				last := r.idx() - 1
				if inclusive {
					last++
				}
				want := make([]T, n)
				for i := range want {
					for _, q := range r.shape.members[:last+1] {
						want[i] += gen(mix(q, i+1, seed))
					}
				}
				what := fmt.Sprintf("%s %s of %d (in place %v)", name, typ, n, inPlace)
				if i := diff(d, want); i >= 0 {
					r.errorf("%s: element %d = %v, want %v", what, i, d[i], want[i])
				}
				if !inPlace && (diff(src, orig) >= 0 || dst[0] != junk[0] || dst[n+1] != junk[n+1]) {
					r.errorf("%s: changed the source or wrote outside dest", what)
				}
				if inPlace && (src[0] != orig[0] || src[n+1] != orig[n+1] || diff(dst, junk) >= 0) {
					r.errorf("%s: in place, wrote outside the vector", what)
				}
			}
		}
	}
	goshmem.Free(r.p, dst)
	goshmem.Free(r.p, src)
}

// ---------------------------------------------------------------------
// Broadcast, collects, all-to-all.

// rec is a struct element with padding-free fields of several sizes.
type rec struct {
	A int32
	B uint16
	C int8
	D uint8
	E float64
}

func genRec(h uint64) rec {
	return rec{int32(h), uint16(h >> 32), int8(h >> 48), uint8(h >> 56), float64(h%1000) / 8}
}

func genI64(h uint64) int64 { return int64(h) }
func genI32(h uint64) int32 { return int32(h) }
func genByte(h uint64) byte { return byte(h) }

func broadcastSuite[T comparable](r *collRun, typ string, gen func(uint64) T, sizes []int) {
	maxN := slices.Max(sizes)
	src := mustMalloc[T](r.p, maxN+2)
	dst := mustMalloc[T](r.p, maxN+2)
	me := r.p.MyPE()
	for _, n := range sizes {
		for _, inPlace := range []bool{false, true} {
			for root := range r.shape.members {
				seed := r.next()
				if !r.member() {
					continue
				}
				src, dst := src[:n+2], dst[:n+2]
				fill(src, gen, me, seed)
				fill(dst, gen, me, seed^junkSalt)
				orig, junk := slices.Clone(src), slices.Clone(dst)
				s, d := src[1:n+1], dst[1:n+1]
				if inPlace {
					d = s
				}
				goshmem.Broadcast(r.shape.team, d, s, root)
				what := fmt.Sprintf("Broadcast %s of %d from %d (world %d), in place %v", typ, n, root, r.shape.members[root], inPlace)
				if i := diff(d, genSlice(gen, r.shape.members[root], 1, n, seed)); i >= 0 {
					r.errorf("%s: element %d = %v, want %v", what, i, d[i], gen(mix(r.shape.members[root], i+1, seed)))
				}
				if !inPlace {
					if i := diff(src, orig); i >= 0 {
						r.errorf("%s: source element %d changed", what, i-1)
					}
					if dst[0] != junk[0] || dst[n+1] != junk[n+1] {
						r.errorf("%s: wrote outside dest", what)
					}
				} else if src[0] != orig[0] || src[n+1] != orig[n+1] || diff(dst, junk) >= 0 {
					r.errorf("%s: in place, wrote outside the vector", what)
				}
			}
		}
	}
	goshmem.Free(r.p, dst)
	goshmem.Free(r.p, src)
}

// collectLens are the per-member lengths of Collect patterns.
var collectLens = []func(j, tn int) int{
	func(j, tn int) int { return (j*5 + 3) % 7 },         // varied, some 0
	func(j, tn int) int { return 150 * ((j*3 + 1) % 4) }, // long, some 0
	func(j, tn int) int { return 0 },                     // all empty
	func(j, tn int) int { // only the last
		if j == tn-1 {
			return 9
		}
		return 0
	},
	func(j, tn int) int { // all but the first
		if j == 0 {
			return 0
		}
		return j + 1
	},
}

func gatherSuite[T comparable](r *collRun, typ string, gen func(uint64) T) {
	n := r.p.NPEs() // no team is larger
	me := r.p.MyPE()
	ks := []int{0, 1, 7, 1000}
	if r.fast {
		ks = []int{0, 1, 7, 100}
	}
	src := mustMalloc[T](r.p, n*1000*3+8)
	dst := mustMalloc[T](r.p, n*1000*3+8)
	tn := len(r.shape.members)
	// prepare fills the first ns elements of src and nd+4 of dst (the
	// dest and its margin) for a call with seed.
	prepare := func(ns, nd int, seed uint64) {
		fill(src[:ns], gen, me, seed)
		fill(dst[:nd+4], gen, me, seed^junkSalt)
	}
	// check compares dst[1:1+len(want)] with want, and checks that
	// the margin around it still holds what prepare put there.
	check := func(what string, want []T, seed uint64) {
		d := dst[1 : 1+len(want)]
		if i := diff(d, want); i >= 0 {
			r.errorf("%s: element %d = %v, want %v", what, i, d[i], want[i])
		}
		junk := genSlice(gen, me, 0, len(want)+4, seed^junkSalt)
		if dst[0] != junk[0] || diff(dst[1+len(want):len(want)+4], junk[1+len(want):]) >= 0 {
			r.errorf("%s: wrote outside dest[1:%d]", what, 1+len(want))
		}
	}

	// FCollect.
	for _, k := range ks {
		seed := r.next()
		if !r.member() {
			continue
		}
		prepare(k, tn*k, seed)
		goshmem.FCollect(r.shape.team, dst[1:1+tn*k], src[:k])
		var want []T
		for _, q := range r.shape.members {
			want = append(want, genSlice(gen, q, 0, k, seed)...)
		}
		check(fmt.Sprintf("FCollect %s of %d", typ, k), want, seed)
		if i := diff(src[:k], genSlice(gen, me, 0, k, seed)); i >= 0 {
			r.errorf("FCollect %s of %d: source element %d changed", typ, k, i)
		}
	}

	// Collect.
	for pi, lens := range collectLens {
		for _, scale := range []int{1, 3} {
			seed := r.next()
			if !r.member() {
				continue
			}
			var want []T
			for j, q := range r.shape.members {
				want = append(want, genSlice(gen, q, 0, scale*lens(j, tn), seed)...)
			}
			mine := scale * lens(r.idx(), tn)
			prepare(mine, len(want), seed)
			// dest longer than the total: the rest stays as it was.
			goshmem.Collect(r.shape.team, dst[1:1+len(want)+2], src[:mine])
			check(fmt.Sprintf("Collect %s pattern %d x%d", typ, pi, scale), want, seed)
		}
	}

	// Alltoall: block j of member q's source goes to member j, as block
	// q of its dest.
	for _, k := range ks {
		k = min(k, 300)
		seed := r.next()
		if !r.member() {
			continue
		}
		prepare(tn*k, tn*k, seed)
		goshmem.Alltoall(r.shape.team, dst[1:1+tn*k], src[:tn*k], k)
		var want []T
		for _, q := range r.shape.members {
			want = append(want, genSlice(gen, q, r.idx()*k, k, seed)...)
		}
		check(fmt.Sprintf("Alltoall %s of %d", typ, k), want, seed)
		if i := diff(src[:tn*k], genSlice(gen, me, 0, tn*k, seed)); i >= 0 {
			r.errorf("Alltoall %s of %d: source element %d changed", typ, k, i)
		}
	}

	// Alltoalls: element i of block j is src[(j*k+i)*ss] on the sender
	// and lands at dst[(sender*k+i)*ds] on member j; the elements in
	// between keep what they held.
	for _, st := range []struct{ ds, ss int }{{1, 1}, {2, 1}, {1, 3}, {2, 3}, {3, 2}} {
		for _, k := range []int{0, 1, 5} {
			seed := r.next()
			if !r.member() {
				continue
			}
			dlen, slen := 0, 0
			if k > 0 {
				dlen, slen = (tn*k-1)*st.ds+1, (tn*k-1)*st.ss+1
			}
			prepare(slen, dlen, seed)
			goshmem.Alltoalls(r.shape.team, dst[1:1+dlen], src[:slen], st.ds, st.ss, k)
			want := genSlice(gen, me, 0, dlen+4, seed^junkSalt)
			for j, q := range r.shape.members {
				for i := 0; i < k; i++ {
					want[1+(j*k+i)*st.ds] = gen(mix(q, (r.idx()*k+i)*st.ss, seed))
				}
			}
			if i := diff(dst[:dlen+4], want); i >= 0 {
				r.errorf("Alltoalls %s of %d, strides %d, %d: dst[%d] = %v, want %v", typ, k, st.ds, st.ss, i, dst[i], want[i])
			}
		}
	}
	goshmem.Free(r.p, dst)
	goshmem.Free(r.p, src)
}

// collectivesOn runs every suite on every shape of the job, one shape
// at a time (a world barrier in between: the shapes share buffers).
func collectivesOn(t *testing.T, p *goshmem.PE, cache *refCache, opts collOpts) {
	shapes := makeShapes(t, p)
	for _, s := range shapes {
		if opts.only != nil && !opts.only[s.name] {
			continue
		}
		r := &collRun{t: t, p: p, shape: s, cache: cache, big: opts.big, fast: opts.fast || s.name != "world", few: opts.fewTypes}
		if opts.reduce {
			reduceAll(r)
			if !opts.big && (!r.fast || s.name == "odd" || s.name == "reversed" || s.name == "row3") {
				scanSuite(r, "int64", func(k int64) int64 { return k })
				scanSuite(r, "complex64", func(k int64) complex64 { return complex(float32(k), float32(k%3-1)) })
				if !r.fast {
					scanSuite(r, "float64", func(k int64) float64 { return float64(k) })
				}
			}
		}
		if opts.bcast {
			// 78 and 79 int32: either side of the 312-byte broadcast dropboxes.
			sizes := []int{0, 1, 78, 79, 1000, 1 << 16}
			if r.fast {
				sizes = []int{0, 1, 79, 1000}
			}
			broadcastSuite(r, "int32", genI32, sizes)
			broadcastSuite(r, "rec", genRec, []int{0, 1, 7, 8, 1001})
			if !r.fast {
				broadcastSuite(r, "byte", genByte, []int{3, 120, 121, 4097})
			}
		}
		if opts.gather {
			gatherSuite(r, "int64", genI64)
			if !r.fast {
				gatherSuite(r, "rec", genRec)
				gatherSuite(r, "byte", genByte)
			}
		}
		p.BarrierAll()
	}
	destroyShapes(shapes)
}

type collOpts struct {
	reduce, bcast, gather bool
	big                   bool            // only the 100003-element reductions
	fast                  bool            // fewer sizes and types
	fewTypes              bool            // fewer element types
	only                  map[string]bool // shapes to run (nil: all)
}

// collCfg is the configuration of the collective tests: room for the
// 100003-element reductions of complex128.
var collCfg = node.Config{HeapSize: 8 << 20}

func runColl(t *testing.T, cfg node.Config, ns []int, opts collOpts) {
	for _, n := range ns {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			cache := &refCache{}
			runCfg(t, cfg, n, func(p *goshmem.PE) { collectivesOn(t, p, cache, opts) })
		})
	}
}

var worldOnly = map[string]bool{"world": true}

// shapes8 are the team shapes run on 8 PEs (all of them run on 5).
var shapes8 = map[string]bool{"odd": true, "split-of-reversed": true, "row3": true, "col3": true, "tail-row2": true, "tail-col2": true}

// reduceShapes5 and reduceShapes8 are the shapes of the reductions on
// sub-teams: strided both ways, without PE 0, a split of a split,
// one-PE teams, rows (the last one short) and columns.
var (
	reduceShapes5 = map[string]bool{"reversed": true, "odd": true, "tail": true, "even-backwards": true,
		"split-of-reversed": true, "row1": true, "col2": true, "row3": true, "tail-row2": true}
	reduceShapes8 = map[string]bool{"odd": true, "col3": true, "tail-col2": true}
)

// allShapes are every shape but the world.
var allShapes = map[string]bool{"reversed": true, "odd": true, "tail": true, "even-backwards": true, "split-of-reversed": true,
	"row1": true, "col1": true, "row2": true, "col2": true, "row3": true, "col3": true, "tail-row2": true, "tail-col2": true}

func TestReduceWorld(t *testing.T) {
	// Every element type on 3 and 5 PEs, the main ones on the others.
	runColl(t, collCfg, []int{3, 5}, collOpts{reduce: true, only: worldOnly})
	runColl(t, collCfg, []int{1, 2, 8}, collOpts{reduce: true, fewTypes: true, only: worldOnly})
	runColl(t, collCfg, []int{5}, collOpts{reduce: true, big: true, only: worldOnly})
}

func TestReduceTeams(t *testing.T) {
	runColl(t, collCfg, []int{5}, collOpts{reduce: true, only: reduceShapes5})
	runColl(t, collCfg, []int{8}, collOpts{reduce: true, only: reduceShapes8})
}

func TestBroadcast(t *testing.T) {
	runColl(t, collCfg, []int{1, 2, 3, 5, 8}, collOpts{bcast: true, only: worldOnly})
	runColl(t, collCfg, []int{5}, collOpts{bcast: true, only: allShapes})
	runColl(t, collCfg, []int{8}, collOpts{bcast: true, only: shapes8})
}

func TestCollectAlltoall(t *testing.T) {
	runColl(t, collCfg, []int{1, 2, 3, 5, 8}, collOpts{gather: true, only: worldOnly})
	runColl(t, collCfg, []int{5}, collOpts{gather: true, only: allShapes})
	runColl(t, collCfg, []int{8}, collOpts{gather: true, only: shapes8})
}

// TestCollectivesCMA runs the suites where no peer's heap is mapped:
// every collective moves its data with Get and Put through
// process_vm_readv/writev.
func TestCollectivesCMA(t *testing.T) {
	cfg := node.Config{HeapSize: 1 << 20, Transport: "cma"}
	runColl(t, cfg, []int{2, 3, 5}, collOpts{reduce: true, bcast: true, gather: true, fast: true,
		only: map[string]bool{"world": true, "odd": true, "reversed": true, "row2": true, "col2": true}})
}

// ---------------------------------------------------------------------
// Collectives back to back, and on disjoint teams at once.

// mixedRound runs collective it of a sequence that alternates reduce
// (through dropboxes, flat and partitioned, in place or not),
// broadcast, fcollect, collect and alltoall on tm (kind it%5, or kind
// if >= 0; the broadcast from root, or from it%tn if root < 0), with
// buf as dest every time and no synchronization from the caller in
// between, and checks the result.
func mixedRound(r *collRun, it, kind, root int, src, buf []int64) {
	seed := r.next()
	tm, members := r.shape.team, r.shape.members
	tn, me, idx := len(members), r.p.MyPE(), r.idx()
	gen := func(h uint64) int64 { return int64(h % 1000003) }
	fill(src[:1300], gen, me, seed)
	if kind < 0 {
		kind = it % 5
	}
	if root < 0 {
		root = it % tn
	}
	var want []int64
	var d []int64
	switch kind {
	case 0:
		n := []int{1, 15, 16, 7 + it*37%1200, 200}[it/5%5] // dropbox, flat and partitioned
		s := src[:n]
		d = buf[:n]
		if it%3 == 0 {
			d = s
		}
		if it%2 == 0 {
			goshmem.SumReduce(tm, d, s)
		} else {
			goshmem.XorReduce(tm, d, s)
		}
		want = make([]int64, n)
		for i := range want {
			for _, q := range members {
				if it%2 == 0 {
					want[i] += gen(mix(q, i, seed))
				} else {
					want[i] ^= gen(mix(q, i, seed))
				}
			}
		}
	case 1:
		n := []int{1, 15, 16, 0, it * 13 % 900}[it/5%5]
		d = buf[:n]
		s := src[:n]
		if it%4 == 1 {
			d = s
		}
		goshmem.Broadcast(tm, d, s, root)
		want = genSlice(gen, members[root], 0, n, seed)
	case 2:
		k := it % 9
		d = buf[:tn*k]
		goshmem.FCollect(tm, d, src[:k])
		for _, q := range members {
			want = append(want, genSlice(gen, q, 0, k, seed)...)
		}
	case 3:
		l := func(j int) int { return (j + it) % 4 * 3 }
		for j, q := range members {
			want = append(want, genSlice(gen, q, 0, l(j), seed)...)
		}
		d = buf[:len(want)]
		goshmem.Collect(tm, d, src[:l(idx)])
	case 4:
		k := it % 5
		d = buf[:tn*k]
		goshmem.Alltoall(tm, d, src[:tn*k], k)
		for _, q := range members {
			want = append(want, genSlice(gen, q, idx*k, k, seed)...)
		}
	}
	if i := diff(d, want); i >= 0 {
		r.errorf("round %d (kind %d): element %d of %d = %d, want %d", it, kind, i, len(d), d[i], want[i])
	}
}

// TestCollectivesBackToBack: 200 collectives of changing kinds and
// sizes on the same team and buffers, with no synchronization from the
// caller; then the same alternating between the world and the PE's row
// of a 2-D split, so that consecutive collectives of a PE are on teams
// whose other members are at different points.
func TestCollectivesBackToBack(t *testing.T) {
	for _, cfg := range []node.Config{collCfg, {HeapSize: 1 << 20, Transport: "cma"}} {
		ns := []int{2, 3, 5, 8}
		if cfg.Transport == "cma" {
			ns = []int{3, 4}
		}
		for _, n := range ns {
			runCfg(t, cfg, n, func(p *goshmem.PE) {
				me := p.MyPE()
				w := goshmem.TeamWorld(p)
				world := teamShape{"world", w, seqPEs(0, 1, n)}
				src := mustMalloc[int64](p, 1300*n)
				buf := mustMalloc[int64](p, 1300*n)
				rw := &collRun{t: t, p: p, shape: world}
				for it := 0; it < 200; it++ {
					mixedRound(rw, it, -1, -1, src, buf)
				}
				// Small reductions and broadcasts only (the dropbox
				// paths), the same root several times in a row.
				for it := 0; it < 300; it++ {
					mixedRound(rw, it, it%2, it/6%n, src, buf)
				}
				// Broadcasts only: a root runs ahead of its readers.
				for it := 0; it < 300; it++ {
					mixedRound(rw, it, 1, it/25%n, src, buf)
				}
				x, y, err := w.Split2D(2, nil, nil)
				if err != nil {
					panic(err)
				}
				xm, ym := of2D(seqPEs(0, 1, n), 2, me)
				rx := &collRun{t: t, p: p, shape: teamShape{"row2", x, xm}}
				ry := &collRun{t: t, p: p, shape: teamShape{"col2", y, ym}}
				for it := 0; it < 200; it++ {
					switch it % 3 {
					case 0:
						mixedRound(rw, it, -1, -1, src, buf)
					case 1:
						mixedRound(rx, it, -1, -1, src, buf)
					case 2:
						mixedRound(ry, it, -1, -1, src, buf)
					}
				}
				x.Destroy()
				y.Destroy()
			})
		}
	}
}

// TestCollectivesDisjointTeams: the even and the odd PEs run different
// sequences of collectives at the same time, on the same buffers.
func TestCollectivesDisjointTeams(t *testing.T) {
	for _, n := range []int{4, 7} {
		runCfg(t, collCfg, n, func(p *goshmem.PE) {
			me := p.MyPE()
			w := goshmem.TeamWorld(p)
			even, err := w.SplitStrided(0, 2, (n+1)/2, nil)
			if err != nil {
				panic(err)
			}
			odd, err := w.SplitStrided(n-1-(n%2), -2, n/2, nil) // backwards
			if err != nil {
				panic(err)
			}
			src := mustMalloc[int64](p, 1300*n)
			buf := mustMalloc[int64](p, 1300*n)
			var r *collRun
			if me%2 == 0 {
				r = &collRun{t: t, p: p, shape: teamShape{"even", even, seqPEs(0, 2, (n+1)/2)}}
			} else {
				r = &collRun{t: t, p: p, shape: teamShape{"odd-backwards", odd, seqPEs(n-1-(n%2), -2, n/2)}}
			}
			for it := 0; it < 150; it++ {
				// Different kinds at the same time on the two teams.
				mixedRound(r, it+me%2*2, -1, -1, src, buf)
			}
			p.BarrierAll()
			even.Destroy()
			odd.Destroy()
		})
	}
}

// TestCollectivesLongDest: the spec asks of every collective's dest
// only that it be large enough. Given a longer one, each collective
// writes its result into the first part and leaves the rest untouched,
// with every algorithm (dropbox, flat, partitioned, recursive doubling,
// ring, Rabenseifner, tree, hierarchical) and transport.
func TestCollectivesLongDest(t *testing.T) {
	const tail = 5
	const junk = int64(-7777)
	for _, cfg := range []node.Config{
		{HeapSize: 1 << 20},
		{HeapSize: 1 << 20, Transport: "cma"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "recursive-doubling", FCollectAlgorithm: "recursive-doubling", Transport: "cma"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "ring", FCollectAlgorithm: "ring", BcastAlgorithm: "tree"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "rabenseifner", Transport: "cma"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "partitioned", BcastAlgorithm: "direct", FCollectAlgorithm: "direct"},
		{HeapSize: 1 << 20, SimDomains: 2},
	} {
		for _, n := range []int{2, 3, 4} {
			for _, size := range []int{3, 600} { // in a dropbox; above flatMax
				name := fmt.Sprintf("%+v/n=%d/size=%d", cfg, n, size)
				runCfg(t, cfg, n, func(p *goshmem.PE) {
					w := goshmem.TeamWorld(p)
					me := p.MyPE()
					src := mustCalloc[int64](p, size*n)
					for i := range src {
						src[i] = int64((me+1)*100000 + i)
					}
					dst := mustCalloc[int64](p, size*n+tail)
					run := func(coll string, want []int64, fn func(dst []int64)) {
						for i := range dst {
							dst[i] = junk
						}
						p.BarrierAll()
						fn(dst)
						for i, v := range want {
							if dst[i] != v {
								t.Errorf("%s PE %d: %s: dst[%d] = %d, want %d", name, me, coll, i, dst[i], v)
								break
							}
						}
						for i := len(want); i < len(dst); i++ {
							if dst[i] != junk {
								t.Errorf("%s PE %d: %s wrote dst[%d] = %d past its %d-element result", name, me, coll, i, dst[i], len(want))
								break
							}
						}
						p.BarrierAll()
					}
					of := func(q, i int) int64 { return int64((q+1)*100000 + i) }
					sum := make([]int64, size)
					maxv := make([]int64, size)
					in := make([]int64, size)
					ex := make([]int64, size)
					for i := range sum {
						for q := 0; q < n; q++ {
							sum[i] += of(q, i)
							if q <= me {
								in[i] += of(q, i)
							}
							if q < me {
								ex[i] += of(q, i)
							}
						}
						maxv[i] = of(n-1, i)
					}
					root := n - 1
					bcast := make([]int64, size)
					fcoll := make([]int64, 0, size*n)
					a2a := make([]int64, 0, size*n)
					for q := 0; q < n; q++ {
						for i := 0; i < size; i++ {
							fcoll = append(fcoll, of(q, i))
							a2a = append(a2a, of(q, me*size+i))
						}
					}
					for i := range bcast {
						bcast[i] = of(root, i)
					}
					s := src[:size]
					run("SumReduce", sum, func(d []int64) { goshmem.SumReduce(w, d, s) })
					run("MaxReduce", maxv, func(d []int64) { goshmem.MaxReduce(w, d, s) })
					run("Broadcast", bcast, func(d []int64) { goshmem.Broadcast(w, d, s, root) })
					run("FCollect", fcoll, func(d []int64) { goshmem.FCollect(w, d, s) })
					run("Collect", fcoll, func(d []int64) { goshmem.Collect(w, d, s) })
					run("Alltoall", a2a, func(d []int64) { goshmem.Alltoall(w, d, src, size) })
					run("SumInscan", in, func(d []int64) { goshmem.SumInscan(w, d, s) })
					run("SumExscan", ex, func(d []int64) { goshmem.SumExscan(w, d, s) })
				})
			}
		}
	}
}
