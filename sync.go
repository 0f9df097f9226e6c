package goshmem

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/node"
)

func compare[T SyncInteger](a T, c Cmp, b T) bool {
	switch c {
	case CmpEQ:
		return a == b
	case CmpNE:
		return a != b
	case CmpGT:
		return a > b
	case CmpGE:
		return a >= b
	case CmpLT:
		return a < b
	}
	return a <= b
}

// load reads *p atomically.
func load[T SyncInteger](p *T) T {
	switch mem.SizeOf[T]() {
	case 2:
		return T(mem.Load16(mem.U16(p)))
	case 4:
		return T(atomic.LoadUint32(mem.U32(p)))
	}
	return T(atomic.LoadUint64(mem.U64(p)))
}

// WaitUntil blocks until *ivar, a symmetric variable of the calling PE,
// compares to v by cmp (shmem_wait_until).
func WaitUntil[T SyncInteger](p *PE, ivar *T, cmp Cmp, v T) {
	if !p.InWaitHeap(mem.PtrAddr(ivar), mem.SizeOf[T]()) || mem.PtrAddr(ivar)&(mem.SizeOf[T]()-1) != 0 ||
		uint(cmp) > uint(CmpLE) || !compare(load(ivar), cmp, v) {
		waitUntil(p, ivar, cmp, v)
	}
}

// waitUntil is WaitUntil's outlined slow path.
func waitUntil[T SyncInteger](p *PE, ivar *T, cmp Cmp, v T) {
	p.CheckLocal("WaitUntil", "ivar", mem.PtrAddr(ivar), mem.SizeOf[T](), mem.SizeOf[T](), cmp)
	p.WaitSlow("WaitUntil", func() bool { return compare(load(ivar), cmp, v) })
}

// Test reports whether *ivar compares to v by cmp (shmem_test).
func Test[T SyncInteger](p *PE, ivar *T, cmp Cmp, v T) bool {
	p.CheckLocal("Test", "ivar", mem.PtrAddr(ivar), mem.SizeOf[T](), mem.SizeOf[T](), cmp)
	return compare(load(ivar), cmp, v)
}

// vector forms: status[i] != 0 excludes ivars[i]; status may be nil.
// values is nil for the scalar forms (every element compares to v).

func checkVec[T SyncInteger](p *PE, routine string, ivars []T, status []int32, cmp Cmp, values []T) {
	if len(ivars) > 0 {
		p.CheckLocal(routine, "ivars", mem.Addr(ivars), uintptr(len(ivars))*mem.SizeOf[T](), mem.SizeOf[T](), cmp)
	} else if uint(cmp) > uint(CmpLE) {
		p.CheckLocal(routine, "ivars", 0, 0, 1, cmp) // panics with the comparison named
	}
	if status != nil && len(status) != len(ivars) {
		panicf("%s: status has %d elements but ivars has %d", routine, len(status), len(ivars))
	}
	if values != nil && len(values) != len(ivars) {
		panicf("%s: values has %d elements but ivars has %d", routine, len(values), len(ivars))
	}
}

func ready[T SyncInteger](ivars []T, i int, cmp Cmp, v T, values []T) bool {
	if values != nil {
		v = values[i]
	}
	return compare(load(&ivars[i]), cmp, v)
}

func included(status []int32, i int) bool { return status == nil || status[i] == 0 }

func testAll[T SyncInteger](ivars []T, status []int32, cmp Cmp, v T, values []T) bool {
	for i := range ivars {
		if included(status, i) && !ready(ivars, i, cmp, v, values) {
			return false
		}
	}
	return true
}

// testAny returns the index of an included element that is ready, or
// -1, looking from start (in [0, len(ivars)]) round to start-1.
func testAny[T SyncInteger](ivars []T, status []int32, cmp Cmp, v T, values []T, start int) int {
	if i := firstReady(ivars, status, cmp, v, values, start, len(ivars)); i >= 0 {
		return i
	}
	return firstReady(ivars, status, cmp, v, values, 0, start)
}

func firstReady[T SyncInteger](ivars []T, status []int32, cmp Cmp, v T, values []T, lo, hi int) int {
	for i := lo; i < hi; i++ {
		if included(status, i) && ready(ivars, i, cmp, v, values) {
			return i
		}
	}
	return -1
}

func testSome[T SyncInteger](ivars []T, status []int32, cmp Cmp, v T, values []T, idx []int) []int {
	for i := range ivars {
		if included(status, i) && ready(ivars, i, cmp, v, values) {
			idx = append(idx, i)
		}
	}
	return idx
}

func anyIncluded(n int, status []int32) bool {
	for i := 0; i < n; i++ {
		if included(status, i) {
			return true
		}
	}
	return false
}

// WaitUntilAll blocks until every included ivars[i] compares to v
// (shmem_wait_until_all).
func WaitUntilAll[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, v T) {
	waitAll(p, "WaitUntilAll", ivars, status, cmp, v, nil)
}

// WaitUntilAllVector is WaitUntilAll with one value per element.
func WaitUntilAllVector[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, values []T) {
	var z T
	waitAll(p, "WaitUntilAllVector", ivars, status, cmp, z, orEmpty(values))
}

func waitAll[T SyncInteger](p *PE, routine string, ivars []T, status []int32, cmp Cmp, v T, values []T) {
	checkVec(p, routine, ivars, status, cmp, values)
	if !testAll(ivars, status, cmp, v, values) {
		p.WaitSlow(routine, func() bool { return testAll(ivars, status, cmp, v, values) })
	}
}

// WaitUntilAny blocks until some included ivars[i] compares to v and
// returns i (shmem_wait_until_any); -1 when every element is excluded.
// When several do, which one is returned rotates from call to call (see
// node.PE.AnyStart), so that a series of calls returns every satisfying
// index and none starves.
func WaitUntilAny[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, v T) int {
	return waitAny(p, "WaitUntilAny", ivars, status, cmp, v, nil)
}

// WaitUntilAnyVector is WaitUntilAny with one value per element.
func WaitUntilAnyVector[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, values []T) int {
	var z T
	return waitAny(p, "WaitUntilAnyVector", ivars, status, cmp, z, orEmpty(values))
}

func waitAny[T SyncInteger](p *PE, routine string, ivars []T, status []int32, cmp Cmp, v T, values []T) int {
	checkVec(p, routine, ivars, status, cmp, values)
	if !anyIncluded(len(ivars), status) {
		return -1
	}
	start := p.AnyStart(len(ivars))
	i := testAny(ivars, status, cmp, v, values, start)
	if i < 0 {
		p.WaitSlow(routine, func() bool { i = testAny(ivars, status, cmp, v, values, start); return i >= 0 })
	}
	return i
}

// WaitUntilSome blocks until at least one included ivars[i] compares to
// v and appends to idx the indices of all that did, in one test of every
// included element during the call (shmem_wait_until_some): at least one
// index is appended, though the elements may have changed since. It
// returns idx unchanged when every element is excluded.
func WaitUntilSome[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, v T, idx []int) []int {
	return waitSome(p, "WaitUntilSome", ivars, status, cmp, v, nil, idx)
}

// WaitUntilSomeVector is WaitUntilSome with one value per element.
func WaitUntilSomeVector[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, values []T, idx []int) []int {
	var z T
	return waitSome(p, "WaitUntilSomeVector", ivars, status, cmp, z, orEmpty(values), idx)
}

func waitSome[T SyncInteger](p *PE, routine string, ivars []T, status []int32, cmp Cmp, v T, values []T, idx []int) []int {
	checkVec(p, routine, ivars, status, cmp, values)
	if !anyIncluded(len(ivars), status) {
		return idx
	}
	// The indices returned are those of one pass over ivars that found
	// at least one: testing again after the wait could find none.
	n := len(idx)
	if idx = testSome(ivars, status, cmp, v, values, idx); len(idx) == n {
		p.WaitSlow(routine, func() bool {
			idx = testSome(ivars, status, cmp, v, values, idx[:n])
			return len(idx) > n
		})
	}
	return idx
}

// TestAll reports whether every included ivars[i] compares to v.
func TestAll[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, v T) bool {
	checkVec(p, "TestAll", ivars, status, cmp, nil)
	return testAll(ivars, status, cmp, v, nil)
}

// TestAllVector is TestAll with one value per element.
func TestAllVector[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, values []T) bool {
	var z T
	checkVec(p, "TestAllVector", ivars, status, cmp, orEmpty(values))
	return testAll(ivars, status, cmp, z, orEmpty(values))
}

// TestAny returns the index of an included ivars[i] that compares to v,
// or -1 (shmem_test_any). When several do, which one is returned rotates
// from call to call, as for WaitUntilAny.
func TestAny[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, v T) int {
	checkVec(p, "TestAny", ivars, status, cmp, nil)
	return testAny(ivars, status, cmp, v, nil, p.AnyStart(len(ivars)))
}

// TestAnyVector is TestAny with one value per element.
func TestAnyVector[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, values []T) int {
	var z T
	checkVec(p, "TestAnyVector", ivars, status, cmp, orEmpty(values))
	return testAny(ivars, status, cmp, z, orEmpty(values), p.AnyStart(len(ivars)))
}

// TestSome appends to idx the indices of the included ivars[i] that
// compare to v (shmem_test_some). It and WaitUntilSome return every
// satisfying index of the test they make, so none can starve.
func TestSome[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, v T, idx []int) []int {
	checkVec(p, "TestSome", ivars, status, cmp, nil)
	return testSome(ivars, status, cmp, v, nil, idx)
}

// TestSomeVector is TestSome with one value per element.
func TestSomeVector[T SyncInteger](p *PE, ivars []T, status []int32, cmp Cmp, values []T, idx []int) []int {
	var z T
	checkVec(p, "TestSomeVector", ivars, status, cmp, orEmpty(values))
	return testSome(ivars, status, cmp, z, orEmpty(values), idx)
}

// orEmpty turns a nil values slice of a vector form into an empty one,
// so that "nil" keeps meaning "scalar form" inside.
func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// SignalOp is how PutSignal updates the signal word.
type SignalOp int

const (
	SignalSet SignalOp = iota // SHMEM_SIGNAL_SET
	SignalAdd                 // SHMEM_SIGNAL_ADD
)

// PutSignal copies src into dst on PE pe and then updates *sig on pe
// with signal by op; a PE that sees the signal sees the data
// (shmem_put_signal).
func PutSignal[T any](c *Ctx, dst, src []T, sig *uint64, signal uint64, op SignalOp, pe int) {
	putSignal(c, "PutSignal", dst, src, sig, signal, op, pe)
}

func putSignal[T any](c *Ctx, routine string, dst, src []T, sig *uint64, signal uint64, op SignalOp, pe int) {
	// Everything about the signal is checked before the data moves (put
	// checks its own arguments before it writes): a call that fails
	// changes no memory.
	if _, off, ok := c.Target(mem.PtrAddr(sig), 8, pe); !ok || off&7 != 0 || uint(op) > uint(SignalAdd) {
		checkSignal(c, routine, sig, op, pe)
		// On another host the data and the signal go in one message.
		if c.PutSignalAcross(routine, mem.Addr(dst), mem.Bytes(src), len(dst), len(src), mem.PtrAddr(sig), signal, op == SignalAdd, pe) {
			return
		}
	}
	put(c, routine, dst, src, pe)
	if op == SignalSet {
		node.Post(c, routine, node.OpSet, sig, signal, pe)
	} else {
		node.Post(c, routine, node.OpAdd, sig, signal, pe)
	}
}

// checkSignal is putSignal's outlined check of op and sig: it panics
// for a bad one and returns for a good one the fast path declined (a
// peer reached through CMA, SHMEM_DEBUG).
//
//go:noinline
func checkSignal(c *Ctx, routine string, sig *uint64, op SignalOp, pe int) {
	if op != SignalSet && op != SignalAdd {
		panicf("%s: unknown signal operation %d; use SignalSet or SignalAdd", routine, int(op))
	}
	c.CheckWord(routine, "sig", mem.PtrAddr(sig), 8, pe)
}

// PutSignalNBI is the non-blocking PutSignal.
func PutSignalNBI[T any](c *Ctx, dst, src []T, sig *uint64, signal uint64, op SignalOp, pe int) {
	putSignal(c, "PutSignalNBI", dst, src, sig, signal, op, pe)
}

// SignalFetch returns the value of the calling PE's signal word
// (shmem_signal_fetch).
func SignalFetch(p *PE, sig *uint64) uint64 {
	p.CheckLocal("SignalFetch", "sig", mem.PtrAddr(sig), 8, 8, CmpEQ)
	return atomic.LoadUint64(sig)
}

// SignalWaitUntil waits until *sig, a signal word of the calling PE,
// compares to v by cmp and returns the value that satisfied the
// comparison (shmem_signal_wait_until): the word is read once per test,
// and the value returned is the one tested, even if the word has changed
// since.
func SignalWaitUntil(p *PE, sig *uint64, cmp Cmp, v uint64) uint64 {
	if p.InWaitHeap(mem.PtrAddr(sig), 8) && mem.PtrAddr(sig)&7 == 0 && uint(cmp) <= uint(CmpLE) {
		if x := atomic.LoadUint64(sig); compare(x, cmp, v) {
			return x
		}
	}
	return signalWaitUntil(p, sig, cmp, v)
}

// signalWaitUntil is SignalWaitUntil's outlined slow path.
//
//go:noinline
func signalWaitUntil(p *PE, sig *uint64, cmp Cmp, v uint64) uint64 {
	p.CheckLocal("SignalWaitUntil", "sig", mem.PtrAddr(sig), 8, 8, cmp)
	var x uint64
	p.WaitSlow("SignalWaitUntil", func() bool { x = atomic.LoadUint64(sig); return compare(x, cmp, v) })
	return x // WaitSlow returns right after the call of cond that held
}
