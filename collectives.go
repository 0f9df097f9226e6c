package goshmem

import (
	"math"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/node"
)

// Team collectives (OpenSHMEM 1.5). Every member calls them with the
// same arguments (and symmetric dst and src); they return when this
// PE's part is complete: dst holds the result and src may be reused.
// The result's length follows from src (nelems is len(src)); dst must
// be at least that long, and a longer dst keeps its elements past the
// result untouched. A dst too short is a programmer error (a panic
// naming the routine).
//
// Inside a team whose heaps are all mapped here (Team.shared), data
// moves by plain copies between the mapped heaps: a receiver copies
// straight from the root's buffer, a reducer reads every member's
// source in place, and results are written once into each destination.
// Otherwise the same algorithms move the data with Get and Put, which
// reach peers through CMA. Small collectives inside such a team (up to
// 632 bytes per member, broadcasts up to 312) run no barrier: each
// member publishes its data with the call's epoch in its own dropbox and
// the others read it there (see exchange). The others synchronize with
// the team's dissemination barrier. Every flag is per member and per
// team, so back-to-back collectives need no care from the caller.

// Summable is the set of element types of SumReduce and ProdReduce.
type Summable interface {
	Ordered | ~complex64 | ~complex128
}

// Ordered is the set of element types of MinReduce and MaxReduce.
type Ordered interface {
	Bitwise | ~float32 | ~float64
}

// Bitwise is the set of element types of AndReduce, OrReduce and
// XorReduce: every integer width.
type Bitwise interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint | ~uintptr
}

// The reduction operator table: each kernel sets dst[i] to a[i] op
// b[i], a the earlier members' and b the later one's, for i up to
// len(dst); dst may be a or b (the same elements, not shifted). Three
// operands rather than an accumulator: the exchange's first fold reads
// members 0 and 1 and writes dst once, with no copy of member 0's
// contribution into dst before it.

func sumK[T Summable](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func prodK[T Summable](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

func minK[T Ordered](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = min(a[i], b[i])
	}
}

func maxK[T Ordered](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = max(a[i], b[i])
	}
}

func andK[T Bitwise](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] & b[i]
	}
}

func orK[T Bitwise](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] | b[i]
	}
}

func xorK[T Bitwise](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] ^ b[i]
	}
}

// SumReduce sets dst, on every member, to the element-wise sum of the
// members' src (shmem_sum_reduce). dst may be src (in place).
func SumReduce[T Summable](t *Team, dst, src []T) { reduce(t, "SumReduce", dst, src, sumK[T]) }

// ProdReduce is the element-wise product (shmem_prod_reduce).
func ProdReduce[T Summable](t *Team, dst, src []T) { reduce(t, "ProdReduce", dst, src, prodK[T]) }

// MinReduce is the element-wise minimum (shmem_min_reduce).
func MinReduce[T Ordered](t *Team, dst, src []T) { reduce(t, "MinReduce", dst, src, minK[T]) }

// MaxReduce is the element-wise maximum (shmem_max_reduce).
func MaxReduce[T Ordered](t *Team, dst, src []T) { reduce(t, "MaxReduce", dst, src, maxK[T]) }

// AndReduce is the element-wise bitwise and (shmem_and_reduce).
func AndReduce[T Bitwise](t *Team, dst, src []T) { reduce(t, "AndReduce", dst, src, andK[T]) }

// OrReduce is the element-wise bitwise or (shmem_or_reduce).
func OrReduce[T Bitwise](t *Team, dst, src []T) { reduce(t, "OrReduce", dst, src, orK[T]) }

// XorReduce is the element-wise bitwise xor (shmem_xor_reduce).
func XorReduce[T Bitwise](t *Team, dst, src []T) { reduce(t, "XorReduce", dst, src, xorK[T]) }

// rdMax is the largest reduction, in bytes, done by recursive doubling
// on a team that cannot share memory; above it, Rabenseifner's
// algorithm (power-of-two teams) or the ring. Measured with
// BenchmarkReduceCMA (2 and 4 PEs, every peer through CMA): recursive
// doubling is fastest at 64 B and, with 4 PEs, still at 16 KiB; ring and
// Rabenseifner win from 16 KiB with 2 PEs and at 256 KiB with both.
const rdMax = 16 << 10

// flatMax is the largest reduction, in bytes, done by one PE (flat
// combining); larger ones are partitioned across the members. Measured
// with BenchmarkReduce (2 PEs, 2 cores): flat is faster up to 1 KiB,
// the two are even at 4 KiB, partitioned wins from 16 KiB.
const flatMax = 1 << 10

// reduce runs a reduction. Small ones inside a shared-memory domain go
// through the exchange (reduceDropbox, chosen first: smallReduce); the
// rest are reduceAny's.
func reduce[T any](t *Team, routine string, dst, src []T, fold func(dst, a, b []T)) {
	t.enter(routine)
	dst = fitDest(routine, dst, len(src))
	checkSym(t, routine, dst, src)
	if t.smallReduce && len(src) > 0 && fitsDropbox[T](t, len(src)) {
		if t.combine {
			reduceCombining(t, routine, dst, src, fold)
			return
		}
		reduceDropbox(t, routine, dst, src, fold)
		return
	}
	reduceAny(t, routine, dst, src, fold)
}

// reduceAny is reduce once its arguments are checked, when the small
// path (smallReduce) does not take it: level by level (hierarchical),
// by recursive doubling, Rabenseifner's algorithm or the ring between
// domains, or after a team sync either the team's PE 0 folds every
// member's source (flat combining, for small vectors) or each member
// folds its cache-line-aligned slice of the vector across all members
// (partitioned, for large ones); the reducer writes the result once
// into every member's dst, and a second sync completes it. The reducer
// folds into its own dst, starting from its own source, so dst may
// alias src.
//
//go:noinline
func reduceAny[T any](t *Team, routine string, dst, src []T, fold func(dst, a, b []T)) {
	n, members := len(src), t.NPEs()
	size := mem.SizeOf[T]()
	if t.hierarchical(uintptr(n) * size) {
		// Up the levels (NUMA node, node leaders, domain leaders), each
		// level's leaders reducing the results of the level below; the
		// top level ends with the result everywhere in it; then back down
		// from each group's leader.
		h := t.hierarchy(routine)
		if h == nil {
			reduceAny(t, routine, dst, src, fold) // flat from now on
			return
		}
		top := 0
		reduce(h.levels[0], routine, dst, src, fold)
		for i := 1; i < len(h.levels) && h.levels[i] != nil; i++ {
			reduce(h.levels[i], routine, dst, dst, fold)
			top = i
		}
		for i := min(top, len(h.levels)-2); i >= 0; i-- {
			Broadcast(h.levels[i], dst, dst, 0)
		}
		return
	}
	auto := t.alg.reduce == "" || t.alg.reduce == "auto"
	switch {
	case n == 0:
		t.sync(routine)
		t.sync(routine)
		return
	case !t.shared && (t.alg.reduce == "recursive-doubling" || auto) && uintptr(n)*size <= uintptr(t.pushMax):
		// (Never on a team that maps each other: there the push boxes'
		// lines hold broadcast dropboxes.)
		reducePushed(t, routine, dst, src, fold)
		return
	case t.alg.reduce == "recursive-doubling" || auto && !t.shared && uintptr(n)*size <= rdMax:
		reduceRecursiveDoubling(t, routine, dst, src, fold)
		return
	case (t.alg.reduce == "rabenseifner" || auto && !t.shared) && members&(members-1) == 0:
		reduceRabenseifner(t, routine, dst, src, fold)
		return
	case t.alg.reduce == "ring" || t.alg.reduce == "rabenseifner" || auto && !t.shared:
		reduceRing(t, routine, dst, src, fold) // (Rabenseifner needs a power of two)
		return
	}
	t.sync(routine)
	flat := t.alg.reduce == "flat" || t.alg.reduce != "partitioned" && uintptr(n)*size <= flatMax
	var lo, hi int
	switch {
	case n == 0:
	case flat || members == 1:
		if t.me == 0 {
			lo, hi = 0, n
		}
	default:
		// Slices of whole cache lines, as even as possible.
		per := max(1, int(64/max(size, 1)))
		lines := (n + per - 1) / per
		l0 := lines * t.me / members
		l1 := lines * (t.me + 1) / members
		lo, hi = min(l0*per, n), min(l1*per, n)
	}
	if hi > lo {
		// Fold straight into this PE's own dst slice, starting from its
		// own source (so that dst may alias src): nobody else reads or
		// writes [lo, hi) of this PE's buffers until the closing sync.
		// Then write the slice once into every other member's dst.
		acc := dst[lo:hi]
		copyData(acc, src[lo:hi])
		buf := scratch[T](t, 0, hi-lo)
		for m := 0; m < members; m++ {
			if m != t.me {
				fold(acc, acc, view(t, routine, src[lo:hi], m, buf))
			}
		}
		for m := 0; m < members; m++ {
			if m != t.me {
				write(t, routine, dst[lo:hi], acc, m)
			}
		}
	}
	t.sync(routine)
}

// fitDest returns the first n elements of dst, where a collective
// writes its n-element result; the rest of a longer dst is left
// untouched (the spec asks only that dest be large enough). A shorter
// dst is a programmer error.
func fitDest[T any](routine string, dst []T, n int) []T {
	if len(dst) < n {
		shortDest(routine, len(dst), n)
	}
	return dst[:n]
}

//go:noinline
func shortDest(routine string, have, need int) {
	panicf("%s: dest has %d elements but source has %d; dest must hold at least as many", routine, have, need)
}

// checkSym panics, naming routine and the argument, unless dst and src
// lie in the symmetric heap, as a collective's dest and source must:
// before any synchronization, so that every member fails alike and
// nothing has been written.
func checkSym[T any](t *Team, routine string, dst, src []T) {
	size := mem.SizeOf[T]()
	nd, ns := uintptr(len(dst))*size, uintptr(len(src))*size
	if (nd == 0 || t.pe.InHeap(mem.Addr(dst), nd)) && (ns == 0 || t.pe.InHeap(mem.Addr(src), ns)) {
		return
	}
	notSym(t, routine, mem.Addr(dst), nd, mem.Addr(src), ns)
}

// notSym is the outlined failure of checkSym: it panics for whichever
// of dst and src is outside the heap.
//
//go:noinline
func notSym(t *Team, routine string, dst, nd, src, ns uintptr) {
	for _, a := range [2]struct {
		addr, n uintptr
		dest    bool
	}{{dst, nd, true}, {src, ns, false}} {
		if a.n > 0 && !t.pe.InHeap(a.addr, a.n) {
			t.pe.Ctx().CheckRMA(routine, a.dest, a.addr, a.n, t.pe.MyPE())
		}
	}
}

// view returns member m's copy of sym: the mapped memory itself when it
// is mapped here, else a copy fetched with Get into buf.
func view[T any](t *Team, routine string, sym []T, m int, buf []T) []T {
	w := t.worlds[m]
	if r := Ptr(t.pe, sym, w); r != nil {
		return r
	}
	get(t.pe.Ctx(), routine, buf[:len(sym)], sym, w)
	return buf[:len(sym)]
}

// write stores x into member m's copy of sym.
func write[T any](t *Team, routine string, sym, x []T, m int) {
	w := t.worlds[m]
	if w == t.pe.MyPE() {
		copyData(sym, x)
		return
	}
	put(t.pe.Ctx(), routine, sym, x, w)
}

// scratch returns the team's scratch buffer i (0 or 1) as n elements of
// T, growing it if needed; it is this PE's, reused by every collective.
func scratch[T any](t *Team, i, n int) []T {
	need := n * int(mem.SizeOf[T]())
	if cap(t.scratch[i]) < need {
		// uint64 backing keeps every element type aligned.
		t.scratch[i] = mem.Bytes(make([]uint64, (need+7)/8))
	}
	if n == 0 {
		return nil
	}
	return mem.Slice[T](mem.RegionOf(t.scratch[i][:need]).Base, 0, n)
}

// Broadcast copies src of team PE root into dst of every member
// (shmem_broadcast), the root included. After a sync each member copies
// straight from the root's src (mapped here, or with Get); a second
// sync keeps the root's src in place until every member has it.
func Broadcast[T any](t *Team, dst, src []T, root int) {
	const routine = "Broadcast"
	t.enter(routine)
	t.checkPE(routine, "root PE", root)
	dst = fitDest(routine, dst, len(src))
	checkSym(t, routine, dst, src)
	switch {
	case t.multi && (t.alg.bcast == "" || t.alg.bcast == "auto") && len(src) > 0 && orGatherFits[T](len(src)):
		broadcastOr(t, routine, dst, src, root)
	case t.hierarchical(uintptr(len(src)) * mem.SizeOf[T]()):
		broadcastHier(t, dst, src, root)
	case t.shared && (t.alg.bcast == "" || t.alg.bcast == "auto") && len(src) > 0 &&
		len(src)*int(mem.SizeOf[T]()) <= bcastData:
		broadcastDropbox(t, routine, dst, src, root)
	case t.alg.bcast == "tree" || t.alg.bcast != "direct" && !t.shared:
		broadcastTree(t, routine, dst, src, root, !t.shared && t.NPEs() <= pushTreeMax)
	default:
		t.sync(routine)
		if len(src) > 0 {
			if t.me == root {
				copyData(dst, src)
			} else {
				copyData(dst, view(t, routine, src, root, dst))
			}
		}
		t.sync(routine)
	}
}

// broadcastTree is the binomial-tree broadcast: member r (relative to
// the root) gets the data from its parent (r with its highest bit
// cleared) and passes it to its children (r + 2^k for every 2^k > r),
// in one of two ways.
//
// Pulling (push false: teams that map each other, when
// SHMEM_BCAST_ALGORITHM=tree, and teams of more than pushTreeMax
// members): a member waits until its parent signals that its dst holds
// the data, copies it from there, and signals its own children; a
// closing sync keeps every dst in place until all children have copied.
//
// Pushing (teams that do not map each other, up to pushTreeMax
// members: the leaders across hosts, CMA): a member tells its parent
// that it is in the call (its dst may be written), waits until the
// parent has put the data into its dst and raised its ready word, then
// does the same for each child once that child is in the call; no
// closing sync. Below the root a level costs one message (the data,
// then the flag on the same ordered path, a Fence between), where
// pulling costs a flag, a get's round trip and, at the end, a team
// sync. The "in the call" words travel while the data comes down, so
// only a parent whose child calls later waits for them. Each member's
// word is its own, by team index, in whichever member is its parent
// (pushEntryWord + index): only that member writes it, with the number
// of the pushed broadcast it entered, so the word only grows, and a
// child cannot be past broadcast e before its parent of e has pushed e
// to it; so a parent that sees the word reach e knows that this child,
// whatever the roots of earlier calls made its parents, is in e. (A
// word per tree position would not do: with roots that change, another
// member can be that position's child in a later call while the parent
// is still in e.) The child's ready word, for the same reason, reaches
// e only when its parent of e has pushed e.
func broadcastTree[T any](t *Team, routine string, dst, src []T, root int, push bool) {
	var e uint32
	if push {
		t.bpush++
		e = t.bpush
	} else {
		t.epoch++
		e = t.epoch
	}
	n := t.NPEs()
	rel := (t.me - root + n) % n
	abs := func(r int) int { return (r + root) % n }
	if rel == 0 {
		copyData(dst, src)
	} else {
		parent := abs(rel &^ (1 << (bitLen(rel) - 1)))
		if push {
			t.pe.TeamSet(t.worlds[parent], int(t.slots[parent]), pushEntryWord+t.me, e)
		}
		t.pe.TeamWait(routine, t.slot, readyWord, e)
		if !push {
			copyData(dst, view(t, routine, dst, parent, dst))
		}
	}
	for k := bitLen(rel); rel+1<<k < n; k++ {
		m := abs(rel + 1<<k)
		if push {
			t.pe.TeamWait(routine, t.slot, pushEntryWord+m, e) // the child is in the call
			write(t, routine, dst, dst, m)
			t.pe.Ctx().Fence()
		}
		t.pe.TeamSet(t.worlds[m], int(t.slots[m]), readyWord, e)
	}
	if !push {
		t.sync(routine)
	}
}

// orGatherMax is the largest result, in bytes, that a small collective
// over a team spanning domains (hosts) gathers as a bitwise or
// reduction (orGather): the data part of the collectives' symmetric
// scratch, where Collect, the scans and Alltoall gather.
const orGatherMax = node.CollScratchData

// orGatherFits reports whether a result of n elements of T is small
// enough for orGather.
func orGatherFits[T any](n int) bool { return uint(n)*uint(mem.SizeOf[T]()) <= orGatherMax }

// orGather makes every member's dst the union of the members' parts:
// each member's dst holds its own part, written by no other member,
// and zeros everywhere else, and a bitwise or reduction of the bytes
// (exact for any T: every byte has at most one nonzero contribution)
// runs level by level like every reduction across domains (inside each
// host through the exchange, among the host leaders by recursive
// doubling, pushed up to a push box, then back down each host's dropbox
// broadcast). So a small FCollect or Broadcast across hosts costs what
// a small reduction does: no team sync, one message per leader and
// round up to a push box, where
// the flat algorithms made each member's data cross hosts on its own
// (the ring: one step across hosts per member), or, for the
// broadcast among leaders, a tree of waits and gets and a closing sync.
// It moves the whole result through every level, which only small
// results afford (orGatherMax).
func orGather[T any](t *Team, routine string, dst []T) {
	b := mem.Bytes(dst)
	reduceAny(t, routine, b, b, orK[byte])
}

// fcollectOr is FCollect as an orGather: each member clears dst and
// puts its own block in place.
func fcollectOr[T any](t *Team, routine string, dst, src []T) {
	n := len(src)
	if mem.Overlaps(dst, src) { // (keep the source before clearing dst)
		src = append(scratch[T](t, 0, n)[:0], src...)
	}
	clear(dst)
	copyData(dst[t.me*n:(t.me+1)*n], src)
	orGather(t, routine, dst)
}

// orScratch returns n elements of T in the data part of the team's
// block of the collectives' symmetric scratch (Team.collBlock,
// node.PE.CollScratch), and false when the team has none or n do not
// fit (alike on every member).
func orScratch[T any](t *Team, n int) ([]T, bool) {
	s := t.pe.CollScratch(t.collBlock)
	if s == nil || !orGatherFits[T](n) {
		return nil, false
	}
	data := s[len(s)-orGatherMax:]
	return mem.Slice[T](mem.RegionOf(data).Base, 0, n), true
}

// orCounts returns the count words of the team's scratch, one per team
// member, and false when it has none.
func orCounts(t *Team) ([]uint64, bool) {
	s := t.pe.CollScratch(t.collBlock)
	if s == nil {
		return nil, false
	}
	return mem.Slice[uint64](mem.RegionOf(s).Base, 0, t.NPEs()), true
}

// collectOr is Collect on a team spanning domains: the lengths gather
// through the scratch's count words (orGather), then the data through
// dst when the result is small (orGather again), or else each member
// writes its block into every member's dst and a sync completes it
// (after the lengths' gather every member is in the call).
func collectOr[T any](t *Team, routine string, dst, src []T, counts []uint64) {
	clear(counts)
	counts[t.me] = uint64(len(src))
	orGather(t, routine, counts)
	off, total := 0, 0
	for m, c := range counts {
		if m < t.me {
			off += int(c)
		}
		total += int(c)
	}
	if len(dst) < total {
		collectShort(routine, len(dst), total) // (every member sees the same lengths)
	}
	if total == 0 {
		return
	}
	if orGatherFits[T](total) {
		if mem.Overlaps(dst, src) {
			src = append(scratch[T](t, 0, len(src))[:0], src...)
		}
		clear(dst[:total])
		copyData(dst[off:off+len(src)], src)
		orGather(t, routine, dst[:total])
		return
	}
	flat := func() {
		for m := 0; m < t.NPEs() && len(src) > 0; m++ {
			write(t, routine, dst[off:off+len(src)], src, m)
		}
		t.sync(routine)
	}
	if !t.numaSpan {
		gatherHier(t, routine, dst[:total], src, func(j int) (lo, hi int) {
			for _, c := range counts[:j] {
				lo += int(c)
			}
			return lo, lo + int(counts[j])
		}, "", flat)
		return
	}
	flat()
}

// broadcastOr is Broadcast as an orGather: the root's dst holds the
// data, every other member's zeros.
func broadcastOr[T any](t *Team, routine string, dst, src []T, root int) {
	if t.me == root {
		copyData(dst, src)
	} else {
		clear(dst)
	}
	orGather(t, routine, dst)
}

// broadcastHier broadcasts level by level: up the chain of groups that
// hold the root (the root's bottom group, then the group of that
// group's leader one level up, ...), each broadcasting from the member
// that has the data; then down, each other group from its leader, which
// got the data one level up.
func broadcastHier[T any](t *Team, dst, src []T, root int) {
	h := t.hierarchy("Broadcast")
	if h == nil {
		Broadcast(t, dst, src, root) // flat from now on
		return
	}
	carrier := root // team index of the member holding the data at level i
	var carriers [maxLevels]int
	for i, lt := range h.levels {
		carriers[i] = carrier
		if lt != nil && h.keys[i][t.me] == h.keys[i][carrier] {
			from := src // the symmetric source: the same on every member
			if i > 0 {
				from = dst
			}
			Broadcast(lt, dst, from, lt.members.Index(t.worlds[carrier]))
		}
		// One level up, the data is with the leader (first member) of
		// the carrier's group.
		carrier = slices.Index(h.keys[i], h.keys[i][carrier])
	}
	for i := len(h.levels) - 2; i >= 0; i-- {
		if lt := h.levels[i]; lt != nil && h.keys[i][t.me] != h.keys[i][carriers[i]] {
			Broadcast(lt, dst, dst, 0)
		}
	}
}

// FCollect concatenates the members' src, all of the same length, in
// team order into every member's dst (shmem_fcollect), which must hold
// at least NPEs times len(src) elements: each member writes its block
// directly into every member's dst.
func FCollect[T any](t *Team, dst, src []T) {
	const routine = "FCollect"
	t.enter(routine)
	n := len(src)
	if len(dst) < n*t.NPEs() {
		panicf("%s: dest has %d elements, want at least %d (%d PEs x %d)", routine, len(dst), n*t.NPEs(), t.NPEs(), n)
	}
	dst = dst[:n*t.NPEs()]
	checkSym(t, routine, dst, src)
	pow2 := t.NPEs()&(t.NPEs()-1) == 0
	auto := t.alg.fcollect == "" || t.alg.fcollect == "auto"
	switch {
	case n > 0 && auto && fitsDropbox[T](t, n):
		fcollectDropbox(t, routine, dst, src)
		return
	case n > 0 && auto && t.multi && orGatherFits[T](n*t.NPEs()) &&
		(!pow2 || uint(n*t.NPEs())*uint(mem.SizeOf[T]()) <= uint(t.leadersPushMax())):
		// (Up to a push box of the leaders' team the leaders' or
		// reduction is one message per round; above, it pulls, and on
		// a power-of-two team the flat recursive doubling below was
		// the faster one.)
		fcollectOr(t, routine, dst, src)
		return
	case n > 0 && t.multi && !t.numaSpan:
		// Level by level; a forced algorithm runs among the leaders.
		gatherHier(t, routine, dst, src, func(j int) (int, int) { return j * n, (j + 1) * n }, t.alg.fcollect,
			func() { FCollect(t, dst, src) }) // (flat from now on)
		return
	case n > 0 && pow2 && (t.alg.fcollect == "recursive-doubling" || auto && !t.shared && uintptr(n)*mem.SizeOf[T]() <= flatMax):
		fcollectRecursiveDoubling(t, dst, src)
		return
	case n > 0 && (t.alg.fcollect == "ring" || t.alg.fcollect == "recursive-doubling" || auto && !t.shared):
		fcollectRing(t, dst, src) // (recursive doubling needs a power of two)
		return
	}
	t.sync(routine)
	for m := 0; m < t.NPEs() && n > 0; m++ {
		write(t, routine, dst[t.me*n:(t.me+1)*n], src, m)
	}
	t.sync(routine)
}

// gatherHier is the data movement of FCollect and of a large Collect
// on a team spanning domains (hosts), level by level: dst is the whole
// result, at(j) the place [lo, hi) of team member j's block in it.
// Once every member of a host is in the call (a host sync), each writes
// its block into its host leader's dst (a copy: the host maps it), and
// a second host sync completes them; once every leader is in the call
// (a sync of the leaders), each leader puts its host's blocks, runs of
// consecutive team positions at a time, into every other leader's dst,
// and a second sync of the leaders completes them; then each host
// broadcasts its leader's dst. Each host's data crosses to each other
// host once and only the leaders send, where the flat algorithms take
// one step across hosts per member (the ring) or send every member's
// blocks through its leader's queue. alg, a forced SHMEM_FCOLLECT_ALGORITHM,
// sets the leaders' exchange: "ring" (hosts-1 steps, each leader
// passing on the blocks it got in the step before), "recursive-doubling"
// (log2 of the hosts' number steps, the blocks held so far to the
// leader 2^k away; the ring when that number is not a power of two),
// else the direct puts above; each step ends with a sync of the
// leaders.
func gatherHier[T any](t *Team, routine string, dst, src []T, at func(j int) (lo, hi int), alg string, flat func()) {
	h := t.hierarchy(routine)
	if h == nil {
		flat()
		return
	}
	host, leaders := h.levels[0], h.levels[1]
	host.sync(routine)
	lo, hi := at(t.me)
	write(host, routine, dst[lo:hi], src, 0) // (member 0 of the host level is its leader)
	host.sync(routine)
	if leaders != nil {
		leaders.sync(routine)
		// hostOf[l] are the team indices of leader l's host members, in
		// team order; putHost puts them, as runs of consecutive team
		// positions, into team member to's dst.
		nl, me := leaders.NPEs(), leaders.MyPE()
		hostOf := h.groups(t)
		putHost := func(l, to int) {
			mates := hostOf[l]
			for a := 0; a < len(mates); {
				b := a + 1
				for b < len(mates) && mates[b] == mates[b-1]+1 {
					b++
				}
				lo, _ := at(mates[a])
				_, hi := at(mates[b-1])
				write(t, routine, dst[lo:hi], dst[lo:hi], to)
				a = b
			}
		}
		teamOf := func(l int) int { return hostOf[l][0] } // (a host's leader is its first member)
		switch {
		case alg == "recursive-doubling" && nl&(nl-1) == 0:
			// Step k: the blocks of the 2^k hosts this leader holds go to
			// the leader 2^k away, which holds as many others.
			for k := 1; k < nl; k <<= 1 {
				to := teamOf(me ^ k)
				for l := me &^ (k - 1); l < me&^(k-1)+k; l++ {
					putHost(l, to)
				}
				leaders.sync(routine)
			}
		case alg == "ring" || alg == "recursive-doubling":
			// Step s: the blocks of the host s places to the left go to
			// the right neighbour.
			right := teamOf((me + 1) % nl)
			for s := 0; s < nl-1; s++ {
				putHost((me-s+nl)%nl, right)
				leaders.sync(routine)
			}
		default:
			// Direct: every leader puts its host's blocks into every
			// other leader's dst.
			for l := range nl {
				if l != me {
					putHost(me, teamOf(l))
				}
			}
			leaders.sync(routine)
		}
	}
	Broadcast(host, dst, dst, 0)
}

// fcollectRing runs members-1 steps. Each member first puts its own
// block in its dst and tells its right neighbour; in step s it waits
// until its left neighbour has announced step s, copies from the left
// neighbour's dst the block that neighbour got in step s-1 (its own
// block for s = 0), and announces step s+1 to its right. The counter in
// ringWord only grows (every member takes the same number of steps per
// call). A closing sync keeps every dst in place until its right
// neighbour has read it.
func fcollectRing[T any](t *Team, dst, src []T) {
	const routine = "FCollect"
	n, members := len(src), t.NPEs()
	left, right := (t.me+members-1)%members, (t.me+1)%members
	c0 := t.ring
	t.ring += uint32(members)
	copyData(dst[t.me*n:(t.me+1)*n], src)
	announce := func(v uint32) { t.pe.TeamSet(t.worlds[right], int(t.slots[right]), ringWord, v) }
	announce(c0 + 1)
	for s := 0; s < members-1; s++ {
		t.pe.TeamWait(routine, t.slot, ringWord, c0+1+uint32(s))
		b := (left - s + members) % members
		blk := dst[b*n : (b+1)*n]
		copyData(blk, view(t, routine, blk, left, blk))
		if s < members-2 {
			announce(c0 + 2 + uint32(s))
		}
	}
	t.sync(routine)
}

// Collect concatenates the members' src, of any lengths, in team order
// into every member's dst (shmem_collect): members publish their
// lengths in their team slot, compute their offset, and write their
// block directly into every member's dst. dst must hold the total.
func Collect[T any](t *Team, dst, src []T) {
	const routine = "Collect"
	t.enter(routine)
	if uint64(len(src)) > math.MaxUint32 {
		collectTooLong(routine, len(src)) // (the members publish their counts as 32-bit words)
	}
	checkSym(t, routine, dst, src)
	if t.shared {
		collectDropbox(t, routine, dst, src)
		return
	}
	if counts, ok := orCounts(t); ok && t.multi {
		collectOr(t, routine, dst, src, counts)
		return
	}
	t.pe.TeamSet(t.pe.MyPE(), t.slot, countWord, uint32(len(src)))
	t.sync(routine)
	off, total := 0, 0
	for m := 0; m < t.NPEs(); m++ {
		c := int(t.pe.TeamLoad(t.worlds[m], int(t.slots[m]), countWord))
		if m < t.me {
			off += c
		}
		total += c
	}
	if len(dst) < total {
		t.sync(routine) // keep the team in step before failing
		collectShort(routine, len(dst), total)
	}
	for m := 0; m < t.NPEs() && len(src) > 0; m++ {
		write(t, routine, dst[off:off+len(src)], src, m)
	}
	t.sync(routine)
}

//go:noinline
func collectTooLong(routine string, n int) {
	panicf("%s: source has %d elements; a member's source may have at most %d", routine, n, uint32(math.MaxUint32))
}

// collectDropbox is Collect inside a shared-memory domain. Every
// member publishes its length through the exchange, and its source too
// when that fits a dropbox; every member then copies the published
// blocks into its own dst. Only when some source is too big for its
// dropbox (every member sees the same lengths, so every member knows)
// does each such member write its block into every member's dst, after
// which a sync completes the call.
func collectDropbox[T any](t *Team, routine string, dst, src []T) {
	size := uint(mem.SizeOf[T]())
	inBox := func(c int) bool { return uint(c)*size <= exchangeData }
	n := len(src)
	e, off := t.xstart(exchangeData) // (the members' lengths differ: the dropbox of every length)
	box := boxAt(t.slotBase[t.me], off)
	if inBox(n) {
		fill(box, src)
	}
	t.seal(box, uint32(n), e)
	at, total, big := 0, 0, false
	for m := 0; m < t.n; m++ {
		c := n // this member's own count, without reading its own dropbox back (see reduceDropbox)
		if m != t.me {
			b, ok := t.boxReady(m, off, e)
			if !ok {
				awaitSlow(t, routine, m, off, e)
			}
			c = int(*mem.At[uint32](b, 4))
		}
		if m < t.me {
			at += c
		}
		total += c
		big = big || !inBox(c)
	}
	if len(dst) < total {
		if big {
			t.sync(routine) // keep the team in step before failing
		}
		collectShort(routine, len(dst), total)
	}
	mine := at
	at = 0
	for m := 0; m < t.n; m++ {
		if m == t.me {
			copySmall(dst[at:at+n], src)
			at += n
			continue
		}
		b := boxAt(t.slotBase[m], off) // published: seen above
		c := int(*mem.At[uint32](b, 4))
		if inBox(c) {
			copySmall(dst[at:at+c], mem.Slice[T](b, 8, c))
		}
		at += c
	}
	if !big {
		return
	}
	if !inBox(n) {
		for m := 0; m < t.n; m++ {
			if m != t.me {
				write(t, routine, dst[mine:mine+n], src, m)
			}
		}
	}
	t.sync(routine)
}

//go:noinline
func collectShort(routine string, have, total int) {
	panicf("%s: dest has %d elements, the members' sources total %d", routine, have, total)
}

// Alltoall sends block j (n elements) of src to member j, which stores
// it as block me of its dst (shmem_alltoall); src and dst hold NPEs
// blocks of n elements.
func Alltoall[T any](t *Team, dst, src []T, n int) {
	alltoalls(t, "Alltoall", dst, src, 1, 1, n)
}

// Alltoalls is Alltoall with strides (shmem_alltoalls): element i of
// block j is src[(j*n+i)*sst] on the sender and lands at
// dst[(me*n+i)*dst] on member j.
func Alltoalls[T any](t *Team, dst, src []T, dstStride, srcStride, n int) {
	alltoalls(t, "Alltoalls", dst, src, dstStride, srcStride, n)
}

func alltoalls[T any](t *Team, routine string, dst, src []T, dstStride, srcStride, n int) {
	t.enter(routine)
	members := t.NPEs()
	if dstStride < 1 || srcStride < 1 || n < 0 {
		panicf("%s: strides must be >= 1 and n >= 0 (got dst stride %d, src stride %d, n %d)", routine, dstStride, srcStride, n)
	}
	if n > 0 {
		// members*n elements at each stride, counted without overflow
		// (and without a division, on the way to publishing).
		if hi, all := bits.Mul(uint(n), uint(members)); hi != 0 || all > math.MaxInt {
			panicf("%s: n %d elements per PE for %d PEs are more than fit in an int", routine, n, members)
		}
		checkStrided(routine, "dest", len(dst), members*n, dstStride)
		checkStrided(routine, "source", len(src), members*n, srcStride)
	}
	checkSym(t, routine, dst, src)
	if n > 0 && fitsDropbox[T](t, members*n) { // (members*n fits an int: checked above)
		alltoallDropbox(t, routine, dst, src, dstStride, srcStride, n)
		return
	}
	// Across hosts, a small one as an or-gather, while the leaders'
	// round is one message (up to a push box of the leaders' team:
	// above, the pulling reduction costs more than the puts and syncs
	// below; measured on 2 hosts of 2 PEs at 1 KiB, 1.35x).
	if hi, all := bits.Mul(uint(members*n), uint(members)); n > 0 && t.multi && hi == 0 &&
		all*uint(mem.SizeOf[T]()) <= uint(t.leadersPushMax()) && orGatherFits[T](int(all)) {
		if all, ok := orScratch[T](t, members*members*n); ok {
			alltoallOr(t, routine, dst, src, dstStride, srcStride, n, all)
			return
		}
	}
	if n > 0 && t.multi && !t.numaSpan {
		alltoallHier(t, routine, dst, src, dstStride, srcStride, n)
		return
	}
	t.sync(routine)
	for j := 0; j < members && n > 0; j++ {
		sendBlock(t, routine, dst, t.me, src, j, dstStride, srcStride, n, j)
	}
	t.sync(routine)
}

// alltoallHier is Alltoall(s) on a team spanning domains (hosts) with
// only the leaders sending across hosts: once every member of a host
// is in the call (a host sync), each member copies its blocks for its
// host-mates into their dst (mapped); once every leader is in the call
// (a sync of the leaders, so every member of the team is), each leader
// puts every block its host's members send to other hosts straight
// from their sources (mapped) into the receivers' dst, and a second
// sync of the leaders completes them; a last host sync releases the
// host. The blocks cross hosts once each, as in the flat Alltoall, but
// without each member's blocks going through its leader's queue.
// Strided blocks take IPut's path (packed across hosts: xIPut).
func alltoallHier[T any](t *Team, routine string, dst, src []T, dstStride, srcStride, n int) {
	h := t.hierarchy(routine)
	if h == nil {
		alltoalls(t, routine, dst, src, dstStride, srcStride, n) // flat from now on
		return
	}
	host, leaders := h.levels[0], h.levels[1]
	host.sync(routine)
	mates := h.teamIndex(t, 0)
	for _, d := range mates {
		sendBlock(t, routine, dst, t.me, src, d, dstStride, srcStride, n, d)
	}
	if leaders != nil {
		leaders.sync(routine)
		mine := h.keys[0][t.me]
		ext := (n-1)*srcStride + 1 // one block of src, strided
		buf := scratch[T](t, 1, ext)
		for d := range t.NPEs() {
			if h.keys[0][d] == mine {
				continue
			}
			for i, j := range mates {
				from := view(host, routine, src[d*n*srcStride:d*n*srcStride+ext], i, buf)
				sendBlock(t, routine, dst, j, from, 0, dstStride, srcStride, n, d)
			}
		}
		leaders.sync(routine)
	}
	host.sync(routine)
}

// sendBlock writes block b of src (n elements at srcStride) as block a
// of team member m's dst (at dstStride).
func sendBlock[T any](t *Team, routine string, dst []T, a int, src []T, b, dstStride, srcStride, n, m int) {
	to, from := dst[a*n*dstStride:], src[b*n*srcStride:]
	if dstStride == 1 && srcStride == 1 {
		write(t, routine, to[:n], from[:n], m)
		return
	}
	strided(t.pe.Ctx(), routine, to, from, dstStride, srcStride, n, t.worlds[m], true)
}

// alltoallOr is a small Alltoall(s) on a team spanning domains: every
// member's whole source gathers as row me of a members x members
// matrix of blocks in the scratch (orGather, level by level), and each
// member takes column me.
func alltoallOr[T any](t *Team, routine string, dst, src []T, dstStride, srcStride, n int, all []T) {
	members := t.NPEs()
	clear(all)
	row := all[t.me*members*n : (t.me+1)*members*n]
	for i := range row {
		row[i] = src[i*srcStride]
	}
	orGather(t, routine, all)
	for j := 0; j < members; j++ {
		col := all[(j*members+t.me)*n : (j*members+t.me+1)*n]
		for i, v := range col {
			dst[(j*n+i)*dstStride] = v
		}
	}
}

// SumInscan sets dst, on team member r, to the element-wise sum of the
// src of members 0..r (an inclusive prefix sum; the OpenSHMEM 1.6
// shmem_sum_inscan, an extension here).
func SumInscan[T Summable](t *Team, dst, src []T) { scan(t, "SumInscan", dst, src, true) }

// SumExscan is SumInscan over members 0..r-1 (exclusive; zero on
// member 0).
func SumExscan[T Summable](t *Team, dst, src []T) { scan(t, "SumExscan", dst, src, false) }

// scan folds, on each member, the sources of the members before it
// (read in place where mapped), into a scratch buffer, then writes dst.
func scan[T Summable](t *Team, routine string, dst, src []T, inclusive bool) {
	t.enter(routine)
	dst = fitDest(routine, dst, len(src))
	checkSym(t, routine, dst, src)
	n := len(src)
	last := t.me - 1
	if inclusive {
		last = t.me
	}
	acc := scratch[T](t, 0, n)
	clear(acc)
	if all, ok := orScratch[T](t, n*t.NPEs()); ok && t.multi && n > 0 {
		// Across domains: every member's source gathers in the
		// scratch (orGather), level by level, and each member folds
		// the ones before it.
		clear(all)
		copyData(all[t.me*n:(t.me+1)*n], src)
		orGather(t, routine, all)
		for m := 0; m <= last; m++ {
			sumK(acc, acc, all[m*n:(m+1)*n])
		}
		copyData(dst, acc)
		return
	}
	if t.multi && !t.numaSpan && n > 0 {
		scanHier(t, routine, dst, src, inclusive)
		return
	}
	t.sync(routine)
	buf := scratch[T](t, 1, n)
	for m := 0; m <= last; m++ {
		sumK(acc, acc, view(t, routine, src, m, buf))
	}
	t.sync(routine) // every member has read every source it needs
	copyData(dst, acc)
}

// scanHier is a scan on a team spanning domains (hosts), computed by
// the leaders: once every member of the team is in the call (a team
// sync), each leader walks the team's positions up to its host's last
// member, adding every source into one accumulator (its host-mates'
// read in place, the other hosts' fetched with one get each, which
// their leaders serve), and at each position of its host writes the
// running sum into that member's dst, before adding its source
// (exclusive) or after (inclusive). The sums are the reference's, in
// team order, for any order of the hosts in the team. A second team
// sync keeps every source in place until every leader has read it, and
// gives the members their results; when dst and src overlap, the
// leader holds the results until then, writes them, and a host sync
// releases the host. The sources cross hosts once per leader that
// needs them, from the leader itself, where each member of the flat
// scan fetches every source before it through its leader's queue.
func scanHier[T Summable](t *Team, routine string, dst, src []T, inclusive bool) {
	h := t.hierarchy(routine)
	if h == nil {
		scan(t, routine, dst, src, inclusive) // flat from now on
		return
	}
	n := len(src)
	same := mem.Overlaps(dst, src)
	t.sync(routine)
	var held []T               // the results, when dst overlaps src
	mates := h.teamIndex(t, 0) // in team order
	if h.levels[1] != nil {
		acc := scratch[T](t, 0, n)
		clear(acc)
		buf := scratch[T](t, 1, n)
		if same {
			held = make([]T, len(mates)*n)
		}
		emit := func(i int) {
			if same {
				copyData(held[i*n:(i+1)*n], acc)
			} else {
				write(t, routine, dst, acc, mates[i])
			}
		}
		i, last := 0, mates[len(mates)-1]
		for k := 0; k <= last; k++ {
			mate := mates[i] == k
			if mate && !inclusive {
				emit(i)
				if k == last {
					break
				}
			}
			sumK(acc, acc, view(t, routine, src, k, buf))
			if mate {
				if inclusive {
					emit(i)
				}
				i++
			}
		}
	}
	t.sync(routine) // every source read; without overlap, every result written
	if same {
		if held != nil { // (a leader's)
			for i, j := range mates {
				write(t, routine, dst, held[i*n:(i+1)*n], j)
			}
		}
		h.levels[0].sync(routine)
	}
}

// The dropbox exchange: the small-message path of every collective in
// which each member contributes data and reads every other member's
// (reductions, FCollect, Collect, Alltoall), inside a shared-memory
// domain. It is Pure's sequenced dropbox without a leader: each member
// copies its contribution (at most exchangeData bytes) into its own
// dropbox, writes a header word (Collect's length) and then the call's
// sequence number, which shares the cache line with the header and the
// first 56 bytes of data, and wakes members that sleep; then it waits
// for each member's sequence number and reads that member's dropbox in
// place. The sequence number is the only synchronization: a call costs
// one publication (this PE's dropbox lines, written once) and one read
// of each other member's (a cache-line hand-off per line, one line up
// to 56 bytes), and no barrier.
//
// Reuse. Each member has two exchange dropboxes, used by call parity
// (the team's exchange counter xbox, the same on every member, since
// every member makes the same calls). A member publishes into dropbox
// e&1 in call e only when every reader is done with what it published
// there in call e-2: the member is in call e, so it has returned from
// call e-1, in which it waited for every member's publication of e-1;
// each member published e-1 after it had returned from call e-2, that
// is after its last read of anybody's call e-2 data. (In the Go memory
// model: those reads are sequenced before the atomic store of e-1, which
// synchronizes with the atomic load that saw it, so they happen before
// this member's writes of call e.) The next call's own wait is thus the
// acknowledgement of the previous one, and two dropboxes suffice; a
// dropbox is cleared only when its slot is taken for a new team, and
// its sequence number only grows. Every
// kind of exchange shares the counter and the dropboxes: the argument
// needs only that every call of each kind waits for every member's
// publication. (Broadcasts, whose root waits for nobody, have dropboxes
// of their own.)

// The primitives below are small enough to inline, and every exchange
// and dropbox broadcast writes them out in place (a helper that did
// boxReady and awaitSlow together would cost 123 in the compiler's
// inlining budget of 80, and stay a call): the instructions
// between seeing the last member's publication and publishing the next
// call are what a small collective costs beyond its hand-offs, and on
// the development machine they cost far more than their count suggests
// (writing out reduce's calls of exchange, publish and await took the
// 8 B reduction at 2 PEs from 1.47-1.59 to 1.18-1.49 barriers, 6
// adjacent pairs). Publishing is
//
//	e, off := t.xstart(bytes)
//	box := boxAt(t.slotBase[t.me], off)
//	fill(box, src) // the data
//	t.seal(box, hdr, e)
//
// and reading member m's part is
//
//	b, ok := t.boxReady(m, off, e)
//	if !ok {
//		awaitSlow(t, routine, m, off, e)
//	}
//	// the header is *mem.At[uint32](b, 4), the data at b+8

// xstart begins this member's part of the team's next exchange: it
// returns the call's sequence number and the offset of its dropbox.
// Every member of the call publishes bytes bytes of data (the same on
// every member: Collect, whose lengths differ, passes exchangeData); up
// to exchangeSmallData of them go to the small dropbox of the call's
// parity.
func (t *Team) xstart(bytes uintptr) (uint32, uintptr) {
	t.xbox++
	if bytes <= exchangeSmallData {
		return t.xbox, exchangeSmallBox(t.xbox)
	}
	return t.xbox, exchangeBox(t.xbox)
}

// exchangeBox is the byte offset of the exchange dropbox of call e.
func exchangeBox(e uint32) uintptr { return exchangeBoxes + uintptr(e&1)*exchangeBytes }

// exchangeSmallBox is the byte offset of the small exchange dropbox of
// call e: the two parities share one line. Measured with bench/limits
// exchange (one line per side, 24 data bytes, both parities in it,
// against a line per parity): 0.059-0.065 against 0.072 us in the
// machine's fast state, 0.12-0.18 against 0.19-0.21 in its slow one; a
// member's line stays the one line its partner polls, where two lines
// that alternate move between the cores' caches in turn. The
// reuse argument above holds for each dropbox: a member writes the
// half of parity e&1 only in calls of that parity.
func exchangeSmallBox(e uint32) uintptr { return exchangeSmall + uintptr(e&1)*32 }

// exchangeCall reports whether off is an exchange dropbox of call e
// (not a broadcast's).
func exchangeCall(off uintptr, e uint32) bool {
	return off == exchangeBox(e) || off == exchangeSmallBox(e)
}

// seal completes a publication in this member's dropbox box, whose
// data is in place: it writes header word hdr, then sequence number e
// with an XCHG, and wakes the team's other members that sleep.
func (t *Team) seal(box mem.Base, hdr, e uint32) {
	*mem.At[uint32](box, 4) = hdr          // ordered before e like the data
	mem.At[atomic.Uint32](box, 0).Store(e) // an XCHG: the doorbell contract needs the store ordered before the Wake loads
	t.wakeOthers()
}

// sealPlain is seal with a plain store of e where the job's sleepers
// fence (PE.Publish; internal/wait's doorbell contract). Broadcast
// roots use it: a root does not wait next, and its XCHG waited for the
// line that its reader polls (the plain store took the 2-PE 8 B
// broadcast to 0.83 of the time, and 0.92 in the slow state). For
// broadcasts of more lines it measured no faster until readers
// prefetched the root's next dropbox (bcastPrefetch), which the root's
// XCHG then waited to take back: with the plain store, 64-256 B
// broadcasts went from 1.00-1.33 to 0.71-1.20 barriers (performance.md,
// "A broadcast reader prefetches"). Where a member waits right after
// publishing (exchanges, barriers), plain stores measured no faster
// (performance.md, "Publishing without a fence"), so those keep the
// XCHG.
func (t *Team) sealPlain(box mem.Base, hdr, e uint32) {
	*mem.At[uint32](box, 4) = hdr
	t.pe.Publish(mem.At[atomic.Uint32](box, 0), e)
	t.wakeOthers()
}

// wakeOthers wakes the team's other members that sleep.
func (t *Team) wakeOthers() {
	for _, q := range t.others {
		t.pe.Wake(q)
	}
}

// boxReady returns member m's dropbox at off and whether it holds call
// e (or a later one).
func (t *Team) boxReady(m int, off uintptr, e uint32) (mem.Base, bool) {
	b := boxAt(t.slotBase[m], off)
	return b, int32(mem.At[atomic.Uint32](b, 0).Load()-e) >= 0
}

// headData is the data bytes a dropbox's head line holds after its
// 8-byte head (sequence number and header word).
const headData = 64 - 8

// fill copies src into this member's dropbox box, after its 8-byte
// head. Data past the head's line is written first and the head line's
// 56 bytes last, right before seal: the readers poll the head line, and
// a reader that reads it back between this member's first store to it
// and the sequence number makes that store's line travel twice.
func fill[T any](box mem.Base, src []T) {
	n := len(src)
	if uintptr(n)*mem.SizeOf[T]() <= headData {
		copySmall(mem.Slice[T](box, 8, n), src)
		return
	}
	b := mem.Bytes(src)
	copy(mem.ByteSlice(box, 64, len(b)-headData), b[headData:])
	copy(mem.ByteSlice(box, 8, headData), b[:headData])
}

// copySmall is copy for the few elements of a dropbox: up to 8 of
// them, an inline loop rather than a call of runtime.memmove.
func copySmall[T any](dst, src []T) {
	if len(src) > 8 {
		copy(dst, src)
		return
	}
	for i := range src {
		dst[i] = src[i]
	}
}

// fitsDropbox reports whether the small path takes n elements of T on
// t: a team inside one shared-memory domain, at most exchangeData bytes.
func fitsDropbox[T any](t *Team, n int) bool {
	return t.shared && uint(n)*uint(mem.SizeOf[T]()) <= exchangeData
}

// reduceDropbox is flat combining through the exchange: every member
// folds every member's published source into its dst (which may alias
// src), in team order, so every member computes the same result bit for
// bit.
func reduceDropbox[T any](t *Team, routine string, dst, src []T, fold func(dst, a, b []T)) {
	// exchange, publish and await written out: the path from seeing
	// the last member's publication to publishing the next call is
	// what a small collective costs beyond its hand-offs.
	n, members := len(src), t.n
	e, off := t.xstart(uintptr(n) * mem.SizeOf[T]())
	box := boxAt(t.slotBase[t.me], off)
	fill(box, src)
	t.seal(box, uint32(n), e) // (the header: the count, which every member checks)
	// src is in this member's dropbox now. This member's own
	// contribution comes from src unless dst overlaps it: reading its
	// own dropbox back costs a cache-line hand-off whenever the other
	// members are polling that line (measured: 8 B, 2 PEs, 0.5 us
	// against 0.14 us). The first fold reads members 0 and 1 before it
	// writes dst, so dst (even if it is src) needs no copy first.
	mine := src
	if mem.Overlaps(dst, src) {
		mine = mem.Slice[T](box, 8, n)
	}
	var first []T
	for m := 0; m < members; m++ {
		x := mine
		if m != t.me {
			b, ok := t.boxReady(m, off, e)
			if !ok {
				awaitSlow(t, routine, m, off, e)
			}
			checkCount(t, routine, b, m, n)
			x = mem.Slice[T](b, 8, n)
		}
		switch m {
		case 0:
			first = x
		case 1:
			fold(dst, first, x)
		default:
			fold(dst, dst, x)
		}
	}
	if members == 1 {
		copySmall(dst, first)
	}
}

// reduceCombining is a small reduction on a team of goroutine PEs
// that outnumber their CPUs (Team.combine): flat combining on the
// central barrier's counter. Every member arrives (one atomic add); the last to arrive
// folds every member's source, read in place, in team order, into its
// own exchange dropbox of the call, records its team index in the
// combiner word of member 0's slot and releases the others with one
// more add; each member then copies the result from the combiner's
// dropbox. Each member waits once, as in the central barrier, where
// the exchange (reduceDropbox) waits for each member in turn: with
// more PEs than CPUs, every wait can cost a turn on the CPU.
//
// The counter grows by members+1 per call (the arrivals and the
// release), by members per barrier: every member makes the same calls,
// so every member knows what it will read (t.central). The dropbox is
// the exchange's of the call's parity (t.xstart), whose reuse argument
// holds here too: the combiner writes it once every member has arrived,
// and it is next written in call e+2, which a member starts only after
// every member has finished call e (a combining call e+1 released
// after every arrival; an exchange e+1 read every member's publication
// of e+1). The combiner word is written once every member has arrived
// and read by them before they arrive at a later call.
func reduceCombining[T any](t *Team, routine string, dst, src []T, fold func(dst, a, b []T)) {
	t.pe.CheckAbort(routine) // a PE that left by a JobError must not arrive
	n, members := len(src), t.n
	_, off := t.xstart(uintptr(n) * mem.SizeOf[T]())
	t.central += uint32(members) + 1
	release := t.central
	q, s := t.worlds[0], int(t.slots[0])
	if t.pe.TeamFetchAdd(q, s, arrivalsWord, 1) == release-1 {
		// Every member's source is in place: their adds came before
		// this one's.
		res := mem.Slice[T](boxAt(t.slotBase[t.me], off), 8, n)
		buf := scratch[T](t, 0, n)
		for m := 0; m < members; m++ {
			x := src
			if m != t.me {
				x = view(t, routine, src, m, buf)
			}
			if m == 0 {
				copySmall(res, x)
			} else {
				fold(res, res, x)
			}
		}
		// (No ring: the release's wakes follow.)
		mem.At[atomic.Uint32](t.slotBase[0], combinerWord*4).Store(uint32(t.me))
		t.pe.TeamFetchAdd(q, s, arrivalsWord, 1)
		for _, w := range t.worlds {
			if w != t.pe.MyPE() {
				t.pe.Wake(w)
			}
		}
		copySmall(dst, res)
		return
	}
	t.pe.TeamWaitOn(routine, q, s, arrivalsWord, release)
	c := int(mem.At[atomic.Uint32](t.slotBase[0], combinerWord*4).Load())
	copySmall(dst, mem.Slice[T](boxAt(t.slotBase[c], off), 8, n))
}

// fcollectDropbox is FCollect through the exchange: every member reads
// each member's block from its dropbox into its own dst.
func fcollectDropbox[T any](t *Team, routine string, dst, src []T) {
	n := len(src)
	e, off := t.xstart(uintptr(n) * mem.SizeOf[T]())
	box := boxAt(t.slotBase[t.me], off)
	fill(box, src)
	t.seal(box, uint32(n), e)
	for m := 0; m < t.n; m++ {
		if m == t.me {
			copySmall(dst[m*n:(m+1)*n], src)
			continue
		}
		b, ok := t.boxReady(m, off, e)
		if !ok {
			awaitSlow(t, routine, m, off, e)
		}
		checkCount(t, routine, b, m, n)
		copySmall(dst[m*n:(m+1)*n], mem.Slice[T](b, 8, n))
	}
}

// alltoallDropbox is Alltoall(s) through the exchange: every member
// publishes its whole source (members blocks of n, packed), and reads
// block me of every member's.
func alltoallDropbox[T any](t *Team, routine string, dst, src []T, dstStride, srcStride, n int) {
	members := t.NPEs()
	data := src[:members*n]
	if srcStride != 1 {
		data = scratch[T](t, 1, members*n)
		for i := range data {
			data[i] = src[i*srcStride]
		}
	}
	e, off := t.xstart(uintptr(len(data)) * mem.SizeOf[T]())
	box := boxAt(t.slotBase[t.me], off)
	fill(box, data)
	t.seal(box, uint32(n), e)
	for m := 0; m < members; m++ {
		var blk []T
		if m == t.me {
			blk = data[m*n : (m+1)*n]
		} else {
			b, ok := t.boxReady(m, off, e)
			if !ok {
				awaitSlow(t, routine, m, off, e)
			}
			checkCount(t, routine, b, m, n)
			blk = mem.Slice[T](b, 8+uintptr(t.me*n)*mem.SizeOf[T](), n)
		}
		if dstStride == 1 {
			copySmall(dst[m*n:(m+1)*n], blk)
			continue
		}
		for i, x := range blk {
			dst[(m*n+i)*dstStride] = x
		}
	}
}

// checkCount panics unless member m's published dropbox box (of this
// call) holds count n in its header, as this member's does: the
// members of a collective call pass the same count (OpenSHMEM leaves a
// program that does not undefined; here it would read the wrong
// number of elements). One load of the line this member has just read.
func checkCount(t *Team, routine string, box mem.Base, m, n int) {
	if c := *mem.At[uint32](box, 4); c != uint32(n) {
		countMismatch(t, routine, m, int(c), n)
	}
}

//go:noinline
func countMismatch(t *Team, routine string, m, theirs, mine int) {
	panicf("%s: PE %d passed a count of %d and PE %d passed %d: every member of a collective call must pass the same count (for Broadcast, the same number of elements as the root)",
		routine, t.pe.MyPE(), mine, t.worlds[m], theirs)
}

// boxAt is the address off bytes past base (inside a team slot).
func boxAt(base mem.Base, off uintptr) mem.Base { return mem.Add(base, off) }

// awaitSlow waits until member m's dropbox at off in its slot holds
// call e; an exchange's wait (awaitExchange) also watches the
// member's exchange dropbox of the other size, where a member that
// passed another count publishes, and fails the call naming both.
//
//go:noinline
func awaitSlow(t *Team, routine string, m int, off uintptr, e uint32) {
	seq := mem.At[atomic.Uint32](boxAt(t.slotBase[m], off), 0)
	ready := func() bool { return int32(seq.Load()-e) >= 0 }
	if !exchangeCall(off, e) { // a broadcast: its readers wait for its root only
		t.pe.WaitControl(routine, ready)
		return
	}
	// A member whose count puts its part in the exchange dropbox of the
	// other size (a program whose members pass different counts)
	// publishes call e there, and would be waited for in vain: the wait
	// looks at that one too, and fails naming both counts.
	alt := exchangeBox(e)
	if off == alt {
		alt = exchangeSmallBox(e)
	}
	altBox := boxAt(t.slotBase[m], alt)
	altSeq := mem.At[atomic.Uint32](altBox, 0)
	either := func() bool { return ready() || int32(altSeq.Load()-e) >= 0 }
	awaitExchange(t, routine, off, e, either)
	if !ready() {
		mine := *mem.At[uint32](boxAt(t.slotBase[t.me], off), 4) // (sealed before this wait)
		countMismatch(t, routine, m, int(*mem.At[uint32](altBox, 4)), int(mine))
	}
}

// awaitExchange waits until ready, for a member's publication of
// exchange call e (in its dropbox at off). In an exchange with more PEs
// than CPUs and the PEs bound (t.mates), it yields while a PE sharing
// this CPU has yet to publish call e in the same dropbox (that PE needs
// the CPU), and spins once they all have: then every PE of this CPU
// waits for a PE of another CPU, and yielding would only pass the CPU
// back and forth between waiters (the central barrier's CPU groups,
// node/pe.go).
func awaitExchange(t *Team, routine string, off uintptr, e uint32, ready func() bool) {
	if t.mates == nil {
		t.pe.WaitControl(routine, ready)
		return
	}
	matesIn := func() bool {
		for _, i := range t.mates {
			if int32(mem.At[atomic.Uint32](boxAt(t.slotBase[i], off), 0).Load()-e) < 0 {
				return false
			}
		}
		return true
	}
	if !matesIn() {
		t.pe.WaitControl(routine, func() bool { return ready() || matesIn() })
		if ready() {
			return
		}
	}
	t.pe.WaitSpinning(routine, ready)
}

// broadcastDropbox is Broadcast through rings of dropboxes in the
// root's slot, for at most bcastData bytes inside a shared-memory
// domain. It is eager, as a small broadcast in MPI is: the root copies
// the data into the next dropbox of its ring, publishes the call's
// sequence number e (the team's broadcast count, the same on every
// member) and returns; each other member waits for that number, copies,
// and stores e into its own done word (one line of its own slot, which
// stays in its cache until a root reads it).
//
// There are two rings, by size. The tiny ring holds bcastTiny (148)
// dropboxes of 16 bytes (up to 8 data bytes after the dropbox's own
// sequence number, four to a line: 36 in lines 55-63 of the slot, the
// rest in lines 100-127); every dropbox starts at the same offset, so a
// sequence number is only ever read from a sequence word, never from
// stale data. The large ring takes lines 44-53 and the lines that teams
// that do not map each other use for push boxes (64-98), in one of two
// layouts for the team's life. Where the PEs fit their CPUs they are
// bcastBoxesN (9) dropboxes of five lines, each with its sequence
// number in its first word, like the tiny ring's: a reader that waits
// fetches the number with the first 56 data bytes. Where they do not
// (the team's barrier is the central one, t.centralSync), they are a
// ring of 44 lines of data (broadcastLines) in which a broadcast of b
// bytes takes ceil(b/64) lines, so that 44 broadcasts of up to 64 bytes
// can be in flight. Every member knows where each root's next broadcast
// goes, since every member sees the same broadcasts with the same
// sizes. The root records which broadcast last used each dropbox or
// line, and before it overwrites one it waits until every reader's done
// word has reached that broadcast. It keeps the least done word it saw,
// so that it reads the readers' lines about once per trip around the
// ring: a root runs up to a ring's depth of broadcasts ahead of its
// slowest reader, and a reader that gets its CPU late consumes them in
// a batch without waiting. With more PEs than CPUs the depth is what
// the broadcast runs on: every trip around the ring costs the root a
// wait for its readers to get a CPU (8 PEs on 2 CPUs, 16-64 B: 3.0 us
// with a ring of 3 dropboxes, 1.1 us with 9, 0.32-0.41 us with the ring
// of lines); with a CPU each, the line fewer per broadcast counts (2
// PEs, 64-256 B: 0.73-1.11 barriers with the five-line dropboxes,
// 0.73-1.28 with the ring of lines; docs/performance.md). A reader's
// done word covers every root, because every member takes part in
// every broadcast in the same order: having finished broadcast e it has
// finished every broadcast before it.
func broadcastDropbox[T any](t *Team, routine string, dst, src []T, root int) {
	bytes := len(src) * int(mem.SizeOf[T]())
	if t.bpos == nil {
		t.bpos = make([]bcastPos, t.NPEs())
	}
	t.bbox++
	e := t.bbox
	ring, boxes, first := 0, bcastTiny, 0
	if bytes > 8 {
		if t.centralSync {
			broadcastLines(t, routine, dst, src, root, bytes, e)
			return
		}
		ring, boxes, first = 1, bcastBoxesN, bcastTiny
	}
	k := int(t.bpos[root].at[ring])
	next := k + 1 // (no % boxes: a division on the way to publishing)
	if next == boxes {
		next = 0
	}
	t.bpos[root].at[ring] = uint8(next)
	off := bcastOff(ring, k)
	if t.me == root {
		last := &t.blast[first+k]
		if int32(*last-t.backed) > 0 {
			t.backed = awaitDone(t, routine, *last)
		}
		box := boxAt(t.slotBase[t.me], off)
		fill(box, src)
		t.sealPlain(box, uint32(len(src)), e)
		*last = e
		copySmall(dst, src)
		return
	}
	b, ok := t.boxReady(root, off, e)
	if !ok {
		awaitBroadcast(t, routine, b, root, ring, e, len(dst))
	}
	checkCount(t, routine, b, root, len(dst))
	bcastPrefetch(t, root, ring, k, next, bytes)
	copySmall(dst, mem.Slice[T](b, 8, len(dst)))
	t.pe.Publish(mem.At[atomic.Uint32](t.slotBase[t.me], doneWord*4), e)
	t.pe.Wake(t.worlds[root])
}

// bcastPos is where a root's next dropbox broadcast goes: a dropbox of
// its tiny ring (at[0]), a dropbox of its five-line ring or a line of
// its ring of lines (at[1]); and the last sequence number this member
// read from the root's bcastPub word.
type bcastPos struct {
	at   [2]uint8
	seen uint32
}

// awaitBroadcast waits until the dropbox box of root's ring ring holds
// broadcast e of n elements. A root whose count puts the broadcast in its other ring
// (a program whose members pass different counts) publishes e in that
// ring's next dropbox, and would be waited for in vain: the wait looks
// there too, and fails naming both counts. (Where broadcasts of more
// than 8 bytes take the ring of lines, t.centralSync, it does not.)
//
//go:noinline
func awaitBroadcast(t *Team, routine string, box mem.Base, root, ring int, e uint32, n int) {
	seq := mem.At[atomic.Uint32](box, 0)
	ready := func() bool { return int32(seq.Load()-e) >= 0 }
	if t.centralSync {
		t.pe.WaitControl(routine, ready)
		return
	}
	other := 1 - ring
	altBox := boxAt(t.slotBase[root], bcastOff(other, int(t.bpos[root].at[other])))
	altSeq := mem.At[atomic.Uint32](altBox, 0)
	t.pe.WaitControl(routine, func() bool { return ready() || int32(altSeq.Load()-e) >= 0 })
	if !ready() {
		countMismatch(t, routine, root, int(*mem.At[uint32](altBox, 4)), n)
	}
}

// broadcastLines is broadcastDropbox's large ring on a team whose PEs
// outnumber their CPUs, for 9 to bcastData bytes: broadcast e of bytes
// bytes from root, in the next ceil(bytes/64) lines of the ring, with
// no sequence number of its own: a line that held data of an older
// dropbox can begin a new one, and a reader polling it would read stale
// data as a number. The root publishes e in one word of its slot
// (bcastPub, line 44: the last broadcast of the ring it published)
// after the data. A reader reads that word only when the last number it
// read there is below e: a root that runs ahead publishes several
// broadcasts per line the reader fetches. (Having read a number >= e
// earlier, the reader's plain reads of e's data happen after the
// root's writes of it; and the root does not write those lines again
// before this reader's done word says e.)
func broadcastLines[T any](t *Team, routine string, dst, src []T, root, bytes int, e uint32) {
	l := (bytes + 63) / 64
	pos := &t.bpos[root]
	first, next := bcastPlace(int(pos.at[1]), l)
	pos.at[1] = uint8(next)
	off := bcastLineOff(first)
	if t.me == root {
		last := t.blast[bcastTiny+first : bcastTiny+first+l]
		need := last[0]
		for _, u := range last[1:] {
			if int32(u-need) > 0 {
				need = u
			}
		}
		if int32(need-t.backed) > 0 {
			t.backed = awaitDone(t, routine, need)
		}
		copySmall(mem.Slice[T](t.slotBase[t.me], off, len(src)), src)
		t.pe.Publish(mem.At[atomic.Uint32](t.slotBase[t.me], bcastPub), e)
		t.wakeOthers()
		for i := range last {
			last[i] = e
		}
		copySmall(dst, src)
		return
	}
	if int32(pos.seen-e) < 0 {
		pub := boxAt(t.slotBase[root], bcastPub)
		v := mem.At[atomic.Uint32](pub, 0).Load()
		if int32(v-e) < 0 {
			awaitSlow(t, routine, root, bcastPub, e)
			v = mem.At[atomic.Uint32](pub, 0).Load()
		}
		pos.seen = v
	}
	bcastPrefetchLines(t, root, next, l)
	copySmall(dst, mem.Slice[T](t.slotBase[root], off, len(dst)))
	t.pe.Publish(mem.At[atomic.Uint32](t.slotBase[t.me], doneWord*4), e)
	t.pe.Wake(t.worlds[root])
}

// bcastPlace returns the first line of the large-ring dropbox of l
// lines that goes at ring position pos, and the position after it: the
// dropbox's lines are consecutive in the slot, so one that would cross
// from lines 45-53 to lines 64-98, or past the ring's end, starts at
// the next run's first line instead.
func bcastPlace(pos, l int) (first, next int) {
	if pos < bcastLinesLow && pos+l > bcastLinesLow {
		pos = bcastLinesLow
	}
	if pos+l > bcastLines {
		pos = 0
	}
	next = pos + l
	if next == bcastLines {
		next = 0
	}
	return pos, next
}

// bcastPrefetch starts a reader's miss on the root's next dropbox of
// the ring while it copies this one: a root runs ahead of its readers
// (up to the ring's depth), so back-to-back broadcasts find the next
// dropbox written, and a reader that waited for each dropbox's lines
// only once it wanted them paid one cache-line hand-off per broadcast
// in series; prefetched, two overlap. The five-line ring's next dropbox
// gets the lines a broadcast of this size fills; the tiny ring's, four
// to a line, the line after this one's, once per line (k a multiple of
// four). A hint only: a dropbox not yet written is fetched again when
// the root writes it, as it would be anyway (the reader read it one
// trip around the ring before).
func bcastPrefetch(t *Team, root, ring, k, next, bytes int) {
	base := t.slotBase[root]
	if ring == 0 {
		if k&3 == 0 {
			q := k + 4
			if q >= bcastTiny {
				q -= bcastTiny
			}
			mem.Prefetch(boxAt(base, bcastOff(0, q)))
		}
		return
	}
	off := bcastOff(1, next)
	for l := 0; l*64 < bytes+8; l++ {
		mem.Prefetch(boxAt(base, off+uintptr(l)*64))
	}
}

// bcastPrefetchLines is bcastPrefetch for the ring of lines: the lines
// that a broadcast of this one's l lines would fill at position next.
func bcastPrefetchLines(t *Team, root, next, l int) {
	first, _ := bcastPlace(next, l)
	base := boxAt(t.slotBase[root], bcastLineOff(first))
	for j := 0; j < l; j++ {
		mem.Prefetch(boxAt(base, uintptr(j)*64))
	}
}

// bcastOff is the offset in a root's slot of dropbox k of ring 0 (the
// tiny one) or 1 (the five-line one).
func bcastOff(ring, k int) uintptr {
	switch {
	case ring == 0 && k >= bcastTinyLow:
		return bcastTinyMore + uintptr(k-bcastTinyLow)*16
	case ring == 0:
		return bcastTinyBoxes + uintptr(k)*16
	case k >= bcastBoxesLow:
		return bcastLargeMore + uintptr(k-bcastBoxesLow)*bcastMaxLines*64
	}
	return bcastBoxes + uintptr(k)*bcastMaxLines*64
}

// bcastLineOff is the offset in a root's slot of line i of the large
// ring.
func bcastLineOff(i int) uintptr {
	if i >= bcastLinesLow {
		return bcastLargeMore + uintptr(i-bcastLinesLow)*64
	}
	return bcastLineBoxes + uintptr(i)*64
}

// awaitDone waits until every other member's broadcast done word has
// reached need and returns the least of the words it saw (>= need).
//
//go:noinline
func awaitDone(t *Team, routine string, need uint32) uint32 {
	least := t.bbox
	for m := range t.worlds {
		if m == t.me {
			continue
		}
		done := mem.At[atomic.Uint32](t.slotBase[m], doneWord*4)
		v := done.Load()
		if int32(v-need) < 0 {
			t.pe.WaitControl(routine, func() bool { v = done.Load(); return int32(v-need) >= 0 })
		}
		if int32(v-least) < 0 {
			least = v
		}
	}
	return least
}
