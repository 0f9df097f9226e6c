package goshmem_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/node"
)

// fixture is what the programmer-error cases work on: x at the start of
// the heap, tail filling the rest of it (so that its end is the heap's
// end), and Go memory that is not in the heap.
type fixture struct {
	p     *goshmem.PE
	c     *goshmem.Ctx
	x     []int64
	tail  []int64
	past  []int64 // the last 2 elements of tail and 2 more past the heap's end
	goMem []int64
	goVar *int64
	base  uintptr // the heap's range
	end   uintptr
}

func newFixture(p *goshmem.PE) *fixture {
	x := mustMalloc[int64](p, 16)
	tail := mustMalloc[int64](p, (p.HeapSize()-16*8)/8)
	f := &fixture{p: p, c: p.Ctx(), x: x, tail: tail, goMem: make([]int64, 4), goVar: new(int64)}
	f.past = unsafe.Slice(&tail[len(tail)-2], 4)
	f.base = addr(x)
	f.end = f.base + uintptr(p.HeapSize())
	return f
}

// notInHeap is the message of an address range outside the heap.
func (f *fixture) notInHeap(routine, arg string, a, n uintptr) string {
	return fmt.Sprintf("goshmem.%s: %s [%#x, %#x) is not inside the symmetric heap [%#x, %#x) of PE 0",
		routine, arg, a, a+n, f.base, f.end)
}

type errCase struct {
	name string
	npes int                       // 1 or 2
	fn   func(f *fixture)          // runs on PE 0
	want func(f *fixture) []string // substrings of the panic message
}

func strs(s ...string) func(*fixture) []string { return func(*fixture) []string { return s } }

func badPECases() []errCase {
	var cs []errCase
	for _, pe := range []int{-1, 2, 1 << 40} {
		rng := fmt.Sprintf("PE %d out of range [0, 2)", pe)
		add := func(routine string, fn func(f *fixture)) {
			cs = append(cs, errCase{name: fmt.Sprintf("%s PE %d", routine, pe), npes: 2, fn: fn, want: strs("goshmem."+routine+": ", rng)})
		}
		add("Put", func(f *fixture) { goshmem.Put(f.c, f.x[:2], []int64{1, 2}, pe) })
		add("Get", func(f *fixture) { goshmem.Get(f.c, make([]int64, 2), f.x[:2], pe) })
		add("P", func(f *fixture) { goshmem.P(f.c, &f.x[0], 1, pe) })
		add("G", func(f *fixture) { goshmem.G(f.c, &f.x[0], pe) })
		add("AtomicFetchAdd", func(f *fixture) { goshmem.AtomicFetchAdd(f.c, &f.x[0], 1, pe) })
		add("AtomicFetch", func(f *fixture) { goshmem.AtomicFetch(f.c, &f.x[0], pe) })
		add("AtomicSet", func(f *fixture) { goshmem.AtomicSet(f.c, &f.x[0], 1, pe) })
		add("AtomicSwap", func(f *fixture) { goshmem.AtomicSwap(f.c, &f.x[0], 3, pe) })
		add("AtomicCompareSwap", func(f *fixture) { goshmem.AtomicCompareSwap(f.c, &f.x[0], 0, 3, pe) })
		add("AtomicFetchXor", func(f *fixture) { goshmem.AtomicFetchXor(f.c, (*uint32)(unsafe.Pointer(&f.x[1])), 3, pe) })
	}
	// A zero-length transfer still checks its PE.
	cs = append(cs, errCase{name: "Put empty PE 2", npes: 2, fn: func(f *fixture) { goshmem.Put(f.c, f.x[:0], nil, 2) },
		want: strs("goshmem.Put: ", "PE 2 out of range [0, 2)")})
	cs = append(cs, errCase{name: "Get nil PE -1", npes: 1, fn: func(f *fixture) { goshmem.Get[int64](f.c, nil, nil, -1) },
		want: strs("goshmem.Get: ", "PE -1 out of range [0, 1)")})
	return cs
}

func addrCases() []errCase {
	return []errCase{
		{name: "Put dest Go slice", npes: 2, fn: func(f *fixture) { goshmem.Put(f.c, f.goMem, []int64{1, 2, 3, 4}, 1) },
			want: func(f *fixture) []string { return []string{f.notInHeap("Put", "dest", addr(f.goMem), 32)} }},
		{name: "Get source Go slice", npes: 2, fn: func(f *fixture) { goshmem.Get(f.c, make([]int64, 4), f.goMem, 1) },
			want: func(f *fixture) []string { return []string{f.notInHeap("Get", "source", addr(f.goMem), 32)} }},
		{name: "P dest Go var", npes: 2, fn: func(f *fixture) { goshmem.P(f.c, f.goVar, 1, 1) },
			want: func(f *fixture) []string {
				return []string{f.notInHeap("P", "dest", uintptr(unsafe.Pointer(f.goVar)), 8)}
			}},
		{name: "G source Go var", npes: 2, fn: func(f *fixture) { goshmem.G(f.c, f.goVar, 1) },
			want: func(f *fixture) []string {
				return []string{f.notInHeap("G", "source", uintptr(unsafe.Pointer(f.goVar)), 8)}
			}},
		{name: "AtomicFetchAdd dest Go var", npes: 2, fn: func(f *fixture) { goshmem.AtomicFetchAdd(f.c, f.goVar, 1, 1) },
			want: func(f *fixture) []string {
				return []string{f.notInHeap("AtomicFetchAdd", "dest", uintptr(unsafe.Pointer(f.goVar)), 8)}
			}},
		{name: "Put dest past heap end", npes: 2, fn: func(f *fixture) { goshmem.Put(f.c, f.past, make([]int64, 4), 1) },
			want: func(f *fixture) []string { return []string{f.notInHeap("Put", "dest", addr(f.past), 32)} }},
		{name: "Get source past heap end", npes: 2, fn: func(f *fixture) { goshmem.Get(f.c, make([]int64, 4), f.past, 0) },
			want: func(f *fixture) []string { return []string{f.notInHeap("Get", "source", addr(f.past), 32)} }},
		{name: "Put dest past heap end to self", npes: 1, fn: func(f *fixture) { goshmem.Put(f.c, f.past, make([]int64, 4), 0) },
			want: func(f *fixture) []string { return []string{f.notInHeap("Put", "dest", addr(f.past), 32)} }},
		{name: "Put dest in a peer's heap", npes: 2, fn: func(f *fixture) {
			goshmem.Put(f.c, goshmem.Ptr(f.p, f.x[:2], 1), []int64{1, 2}, 1)
		}, want: strs("goshmem.Put: dest", "is not inside the symmetric heap")},
		{name: "AtomicFetchAdd misaligned", npes: 2, fn: func(f *fixture) {
			goshmem.AtomicFetchAdd(f.c, (*int64)(unsafe.Add(unsafe.Pointer(&f.x[2]), 4)), 1, 1)
		}, want: func(f *fixture) []string {
			return []string{fmt.Sprintf("goshmem.AtomicFetchAdd: dest %#x is not aligned to 8 bytes", addr(f.x[2:])+4)}
		}},
		{name: "WaitUntil ivar Go var", npes: 1, fn: func(f *fixture) { goshmem.WaitUntil(f.p, f.goVar, goshmem.CmpEQ, 0) },
			want: func(f *fixture) []string {
				return []string{f.notInHeap("WaitUntil", "ivar", uintptr(unsafe.Pointer(f.goVar)), 8)}
			}},
		{name: "WaitUntil ivar in a peer's heap", npes: 2, fn: func(f *fixture) {
			goshmem.WaitUntil(f.p, goshmem.PtrTo(f.p, &f.x[0], 1), goshmem.CmpEQ, 0)
		}, want: strs("goshmem.WaitUntil: ivar", "is not inside the symmetric heap")},
		{name: "Test ivar Go var", npes: 1, fn: func(f *fixture) { goshmem.Test(f.p, f.goVar, goshmem.CmpEQ, 0) },
			want: func(f *fixture) []string {
				return []string{f.notInHeap("Test", "ivar", uintptr(unsafe.Pointer(f.goVar)), 8)}
			}},
		{name: "WaitUntilAll ivars past heap end", npes: 1, fn: func(f *fixture) {
			goshmem.WaitUntilAll(f.p, f.past, nil, goshmem.CmpEQ, 0)
		}, want: func(f *fixture) []string { return []string{f.notInHeap("WaitUntilAll", "ivars", addr(f.past), 32)} }},
		{name: "SignalFetch Go var", npes: 1, fn: func(f *fixture) {
			goshmem.SignalFetch(f.p, (*uint64)(unsafe.Pointer(f.goVar)))
		}, want: strs("goshmem.SignalFetch: sig", "is not inside the symmetric heap")},
		{name: "SetLock Go var", npes: 1, fn: func(f *fixture) { f.p.SetLock(f.goVar) },
			want: func(f *fixture) []string {
				return []string{f.notInHeap("SetLock", "lock", uintptr(unsafe.Pointer(f.goVar)), 8)}
			}},
		{name: "PutSignal sig Go var", npes: 2, fn: func(f *fixture) {
			goshmem.PutSignal(f.c, f.x[:1], []int64{1}, (*uint64)(unsafe.Pointer(f.goVar)), 1, goshmem.SignalSet, 1)
		}, want: strs("goshmem.PutSignal: sig [", "is not inside the symmetric heap")},
	}
}

func argCases() []errCase {
	return []errCase{
		{name: "Put lengths", npes: 2, fn: func(f *fixture) { goshmem.Put(f.c, f.x[:3], make([]int64, 4), 1) },
			want: strs("goshmem.Put: dest has 3 elements but source has 4")},
		{name: "Get lengths", npes: 2, fn: func(f *fixture) { goshmem.Get(f.c, make([]int64, 5), f.x[:2], 1) },
			want: strs("goshmem.Get: dest has 5 elements but source has 2")},
		{name: "PutBytes lengths", npes: 1, fn: func(f *fixture) { goshmem.PutBytes(f.c, byteView(f.x[:1]), make([]byte, 9), 0) },
			want: strs("dest has 8 elements but source has 9")},
		{name: "IPut dst stride -1", npes: 2, fn: func(f *fixture) { goshmem.IPut(f.c, f.x, make([]int64, 4), -1, 1, 4, 1) },
			want: strs("goshmem.IPut: ", "strides must be >= 0", "dst stride -1")},
		{name: "IGet src stride -2", npes: 2, fn: func(f *fixture) { goshmem.IGet(f.c, make([]int64, 4), f.x, 1, -2, 4, 1) },
			want: strs("goshmem.IGet: ", "strides must be >= 0", "src stride -2")},
		{name: "IPut stride 0, empty source", npes: 2, fn: func(f *fixture) { goshmem.IPut(f.c, f.x, []int64{}, 1, 0, 4, 1) },
			want: strs("goshmem.IPut: source has 0 elements, 1 needed for 4 elements at stride 0")},
		{name: "IPut n -1", npes: 2, fn: func(f *fixture) { goshmem.IPut(f.c, f.x, make([]int64, 4), 1, 1, -1, 1) },
			want: strs("goshmem.IPut: ", "n >= 0", "n -1")},
		{name: "IPut dest short", npes: 2, fn: func(f *fixture) { goshmem.IPut(f.c, f.x[:5], make([]int64, 4), 2, 1, 4, 1) },
			want: strs("goshmem.IPut: dest has 5 elements, 7 needed for 4 elements at stride 2")},
		{name: "IGet source short", npes: 2, fn: func(f *fixture) { goshmem.IGet(f.c, make([]int64, 4), f.x[:5], 1, 3, 4, 1) },
			want: strs("goshmem.IGet: source has 5 elements, 10 needed for 4 elements at stride 3")},
		{name: "WaitUntil Cmp(42)", npes: 1, fn: func(f *fixture) { goshmem.WaitUntil(f.p, &f.x[0], goshmem.Cmp(42), 0) },
			want: strs("goshmem.WaitUntil: unknown comparison 42", "CmpEQ", "CmpLE")},
		{name: "Test Cmp(42)", npes: 1, fn: func(f *fixture) { goshmem.Test(f.p, &f.x[0], goshmem.Cmp(42), 0) },
			want: strs("goshmem.Test: unknown comparison 42", "CmpEQ", "CmpLE")},
		{name: "Test Cmp(-1)", npes: 1, fn: func(f *fixture) { goshmem.Test(f.p, &f.x[0], goshmem.Cmp(-1), 0) },
			want: strs("goshmem.Test: unknown comparison -1")},
		{name: "SignalWaitUntil Cmp(6)", npes: 1, fn: func(f *fixture) {
			goshmem.SignalWaitUntil(f.p, (*uint64)(unsafe.Pointer(&f.x[0])), goshmem.Cmp(6), 0)
		}, want: strs("unknown comparison 6")},
		{name: "TestAll Cmp(42)", npes: 1, fn: func(f *fixture) { goshmem.TestAll(f.p, f.x[:4], nil, goshmem.Cmp(42), 0) },
			want: strs("goshmem.TestAll: unknown comparison 42")},
		{name: "WaitUntilAny Cmp(42)", npes: 1, fn: func(f *fixture) { goshmem.WaitUntilAny(f.p, f.x[:4], nil, goshmem.Cmp(42), 0) },
			want: strs("goshmem.WaitUntilAny: unknown comparison 42")},
		{name: "TestAll status length", npes: 1, fn: func(f *fixture) {
			goshmem.TestAll(f.p, f.x[:4], []int32{0, 0}, goshmem.CmpEQ, 0)
		}, want: strs("goshmem.TestAll: status has 2 elements but ivars has 4")},
		{name: "WaitUntilSomeVector values length", npes: 1, fn: func(f *fixture) {
			goshmem.WaitUntilSomeVector(f.p, f.x[:4], nil, goshmem.CmpEQ, []int64{0, 0, 0}, nil)
		}, want: strs("goshmem.WaitUntilSomeVector: values has 3 elements but ivars has 4")},
		{name: "TestAnyVector nil values", npes: 1, fn: func(f *fixture) {
			goshmem.TestAnyVector(f.p, f.x[:4], nil, goshmem.CmpEQ, nil)
		}, want: strs("goshmem.TestAnyVector: values has 0 elements but ivars has 4")},
		{name: "PutSignal op", npes: 2, fn: func(f *fixture) {
			goshmem.PutSignal(f.c, f.x[:1], []int64{1}, (*uint64)(unsafe.Pointer(&f.x[2])), 1, goshmem.SignalOp(7), 1)
		}, want: strs("goshmem.PutSignal: unknown signal operation 7")},
		{name: "CtxCreate options", npes: 1, fn: func(f *fixture) { _, _ = f.p.CtxCreate(goshmem.CtxOptions(1 << 5)) },
			want: strs("goshmem.CtxCreate: unknown option bits 0x20")},
		{name: "Team.CtxCreate options", npes: 1, fn: func(f *fixture) { _, _ = goshmem.TeamWorld(f.p).CtxCreate(goshmem.CtxOptions(1 << 5)) },
			want: strs("goshmem.Team.CtxCreate: unknown option bits 0x20")},
		{name: "SetThreadLevel", npes: 1, fn: func(f *fixture) { f.p.SetThreadLevel(goshmem.ThreadLevel(9)) },
			want: strs("goshmem.InitThread: unknown thread level 9", "ThreadSingle", "ThreadMultiple")},
	}
}

func ctxCases() []errCase {
	dead := func(f *fixture) *goshmem.Ctx {
		c, err := f.p.CtxCreate(0)
		if err != nil {
			panic(err)
		}
		c.Destroy()
		return c
	}
	msg := func(routine string) func(*fixture) []string {
		return strs("goshmem."+routine+": the context was destroyed", "CtxCreate")
	}
	return []errCase{
		{name: "Put on destroyed ctx", npes: 2, fn: func(f *fixture) { goshmem.Put(dead(f), f.x[:1], []int64{1}, 1) }, want: msg("Put")},
		{name: "empty Put on destroyed ctx", npes: 2, fn: func(f *fixture) { goshmem.Put(dead(f), f.x[:0], nil, 1) }, want: msg("Put")},
		{name: "Get on destroyed ctx", npes: 2, fn: func(f *fixture) { goshmem.Get(dead(f), make([]int64, 1), f.x[:1], 1) }, want: msg("Get")},
		{name: "P on destroyed ctx", npes: 2, fn: func(f *fixture) { goshmem.P(dead(f), &f.x[0], 1, 1) }, want: msg("P")},
		{name: "G on destroyed ctx", npes: 2, fn: func(f *fixture) { goshmem.G(dead(f), &f.x[0], 1) }, want: msg("G")},
		{name: "AtomicFetchAdd on destroyed ctx", npes: 2, fn: func(f *fixture) { goshmem.AtomicFetchAdd(dead(f), &f.x[0], 1, 1) },
			want: msg("AtomicFetchAdd")},
		{name: "Quiet on destroyed ctx", npes: 1, fn: func(f *fixture) { dead(f).Quiet() }, want: msg("Quiet")},
		{name: "Fence on destroyed ctx", npes: 1, fn: func(f *fixture) { dead(f).Fence() }, want: msg("Fence")},
		{name: "Destroy twice", npes: 1, fn: func(f *fixture) { dead(f).Destroy() }, want: msg("CtxDestroy")},
		{name: "Destroy default ctx", npes: 1, fn: func(f *fixture) { f.p.Ctx().Destroy() },
			want: strs("goshmem.CtxDestroy: the default context cannot be destroyed")},
	}
}

// runErrCase runs c and returns the panic message of PE 0.
func runErrCase(t *testing.T, c errCase) (string, *fixture) {
	t.Helper()
	var fx *fixture
	err := runErr(t, c.npes, testHeap, func(p *goshmem.PE) {
		f := newFixture(p)
		if p.MyPE() == 0 {
			fx = f
			c.fn(f)
		}
	})
	if err == nil {
		t.Fatalf("%s: the job did not fail", c.name)
	}
	pe := panicError(t, err)
	if pe.PE != 0 {
		t.Errorf("%s: PanicError.PE = %d, want 0", c.name, pe.PE)
	}
	if !strings.Contains(pe.Error(), "PE 0 panicked") {
		t.Errorf("%s: PanicError.Error() = %q, want it to say PE 0 panicked", c.name, pe.Error())
	}
	if len(pe.Stack) == 0 {
		t.Errorf("%s: PanicError has no stack", c.name)
	}
	return fmt.Sprint(pe.Value), fx
}

// TestProgrammerErrors: every misuse panics on the PE that made it, and
// the message names the routine, the bad argument and the valid range.
func TestProgrammerErrors(t *testing.T) {
	var cases []errCase
	cases = append(cases, badPECases()...)
	cases = append(cases, addrCases()...)
	cases = append(cases, argCases()...)
	cases = append(cases, ctxCases()...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg, fx := runErrCase(t, c)
			checkContains(t, c.name, msg, c.want(fx)...)
		})
	}
}

// TestErrorRoutineNames: the derived forms (strided, non-blocking,
// byte, signal and non-fetching AMO routines) must name themselves, not
// the routine they are built on, when they reject an argument.
func TestErrorRoutineNames(t *testing.T) {
	cases := []struct {
		routine string
		fn      func(f *fixture)
	}{
		{"IPut", func(f *fixture) { goshmem.IPut(f.c, f.x, make([]int64, 4), 2, 1, 4, 5) }},
		{"IGet", func(f *fixture) { goshmem.IGet(f.c, make([]int64, 4), f.x, 1, 2, 4, -1) }},
		{"IPut", func(f *fixture) { goshmem.IPut(f.c, f.goMem, make([]int64, 4), 1, 1, 2, 1) }},
		{"IGet", func(f *fixture) { goshmem.IGet(f.c, make([]int64, 4), f.goMem, 1, 1, 2, 1) }},
		{"PutNBI", func(f *fixture) { goshmem.PutNBI(f.c, f.x[:1], []int64{1}, 5) }},
		{"GetNBI", func(f *fixture) { goshmem.GetNBI(f.c, make([]int64, 1), f.x[:1], 5) }},
		{"PutBytes", func(f *fixture) { goshmem.PutBytes(f.c, byteView(f.x[:1]), make([]byte, 8), 5) }},
		{"GetBytes", func(f *fixture) { goshmem.GetBytes(f.c, make([]byte, 8), byteView(f.x[:1]), 5) }},
		{"PutSignal", func(f *fixture) {
			goshmem.PutSignal(f.c, f.x[:1], []int64{1}, (*uint64)(unsafe.Pointer(&f.x[2])), 1, goshmem.SignalSet, 5)
		}},
		{"AtomicAdd", func(f *fixture) { goshmem.AtomicAdd(f.c, &f.x[0], 1, 5) }},
		{"AtomicInc", func(f *fixture) { goshmem.AtomicInc(f.c, &f.x[0], 5) }},
		{"AtomicFetchInc", func(f *fixture) { goshmem.AtomicFetchInc(f.c, &f.x[0], 5) }},
		{"AtomicAnd", func(f *fixture) { goshmem.AtomicAnd(f.c, &f.x[0], 1, 5) }},
		{"PutSignal", func(f *fixture) {
			goshmem.PutSignal(f.c, f.x[:1], []int64{1}, (*uint64)(unsafe.Pointer(f.goVar)), 1, goshmem.SignalAdd, 1)
		}},
		{"SignalWaitUntil", func(f *fixture) {
			goshmem.SignalWaitUntil(f.p, (*uint64)(unsafe.Pointer(&f.x[0])), goshmem.Cmp(42), 0)
		}},
		{"SignalWaitUntil", func(f *fixture) {
			goshmem.SignalWaitUntil(f.p, (*uint64)(unsafe.Pointer(f.goVar)), goshmem.CmpEQ, 0)
		}},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d-%s", i, c.routine), func(t *testing.T) {
			msg, _ := runErrCase(t, errCase{name: c.routine, npes: 2, fn: c.fn})
			if !strings.HasPrefix(msg, "goshmem."+c.routine+": ") {
				t.Errorf("%s: panic message %q does not name goshmem.%s", c.routine, msg, c.routine)
			}
		})
	}
}

// TestEmptyIvarsUnknownCmp: the vector forms check the comparison even
// when there is no element (sync.go says so: "panics with the
// comparison named").
func TestEmptyIvarsUnknownCmp(t *testing.T) {
	for _, c := range []errCase{
		{name: "TestAll", npes: 1, fn: func(f *fixture) { goshmem.TestAll[int64](f.p, nil, nil, goshmem.Cmp(42), 0) }},
		{name: "TestSome", npes: 1, fn: func(f *fixture) { goshmem.TestSome(f.p, f.x[:0], nil, goshmem.Cmp(42), 0, nil) }},
		{name: "WaitUntilAny", npes: 1, fn: func(f *fixture) { goshmem.WaitUntilAny[int64](f.p, nil, nil, goshmem.Cmp(42), 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg, _ := runErrCase(t, c)
			checkContains(t, c.name, msg, "goshmem."+c.name+": unknown comparison 42")
		})
	}
}

// TestMisuseDoesNotPanicOnValidCalls makes sure the error cases are
// errors because of the bad argument: the same calls with the argument
// fixed succeed.
func TestMisuseDoesNotPanicOnValidCalls(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		f := newFixture(p)
		if p.MyPE() != 0 {
			return
		}
		c, _ := p.CtxCreate(0)
		for _, fn := range []func(){
			func() { goshmem.Put(f.c, f.x[:2], []int64{1, 2}, 1) },
			func() { goshmem.Get(f.c, make([]int64, 2), f.x[:2], 1) },
			func() { goshmem.Put(f.c, f.tail[len(f.tail)-2:], make([]int64, 2), 1) }, // the heap's last bytes
			func() { goshmem.IPut(f.c, f.x, make([]int64, 4), 1, 1, 4, 1) },
			func() { goshmem.IPut(f.c, f.x, make([]int64, 4), 0, 1, 0, 1) }, // n == 0: nothing to check
			func() { goshmem.AtomicFetchAdd(f.c, &f.x[0], 1, 1) },
			func() { goshmem.Put(c, f.x[:1], []int64{1}, 1) },
			func() { c.Quiet(); c.Fence(); c.Destroy() },
		} {
			if v := panicOf(fn); v != nil {
				t.Errorf("valid call panicked: %v", v)
			}
		}
	})
}

// TestDeadPE: PE 2 panics while PEs 0 and 1 wait in BarrierAll; the
// job ends quickly with PE 2's PanicError, and the waiting PEs see a
// *JobError that names PE 2.
func TestDeadPE(t *testing.T) {
	jobErrs := make([]*goshmem.JobError, 3)
	start := time.Now()
	err := runErr(t, 3, testHeap, func(p *goshmem.PE) {
		if p.MyPE() == 2 {
			time.Sleep(50 * time.Millisecond) // let the others block in the barrier
			panic("PE 2 gives up")
		}
		func() {
			defer func() {
				r := recover()
				je, ok := r.(*goshmem.JobError)
				if !ok {
					t.Errorf("PE %d: BarrierAll panicked with %v (%T), want a *JobError", p.MyPE(), r, r)
					return
				}
				jobErrs[p.MyPE()] = je
			}()
			p.BarrierAll()
		}()
	})
	elapsed := time.Since(start)
	if elapsed > time.Second+50*time.Millisecond {
		t.Errorf("RunLocal returned after %v, want < 1s", elapsed)
	}
	pe := panicError(t, err)
	if pe.PE != 2 || pe.Value != "PE 2 gives up" {
		t.Errorf("PanicError = PE %d, value %v; want PE 2, \"PE 2 gives up\"", pe.PE, pe.Value)
	}
	if want := "goshmem: PE 2 panicked: PE 2 gives up"; pe.Error() != want {
		t.Errorf("PanicError.Error() = %q, want %q", pe.Error(), want)
	}
	if pe.Unwrap() != nil {
		t.Errorf("Unwrap of a string panic = %v, want nil", pe.Unwrap())
	}
	for me := 0; me < 2; me++ {
		je := jobErrs[me]
		if je == nil {
			t.Errorf("PE %d saw no JobError", me)
			continue
		}
		if je.PE != me || je.Failed != 2 {
			t.Errorf("PE %d: JobError PE %d Failed %d, want PE %d Failed 2", me, je.PE, je.Failed, me)
		}
		msg := je.Error()
		checkContains(t, "JobError", msg, fmt.Sprintf("on PE %d stopped", me), "PE 2", "panicked")
		if !strings.HasPrefix(msg, "goshmem: ") {
			t.Errorf("JobError message %q does not start with goshmem:", msg)
		}
		if je.Routine != "BarrierAll" && je.Routine != "SyncAll" {
			t.Errorf("JobError.Routine = %q, want the barrier", je.Routine)
		}
	}
}

// TestDeadPEInWait: a PE dying while another waits in WaitUntil or
// SetLock stops the waiter with a JobError naming the dead PE.
func TestDeadPEInWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(p *goshmem.PE, x []int64)
	}{
		{"WaitUntil", func(p *goshmem.PE, x []int64) { goshmem.WaitUntil(p, &x[0], goshmem.CmpEQ, 1) }},
		{"WaitUntilAll", func(p *goshmem.PE, x []int64) { goshmem.WaitUntilAll(p, x[:2], nil, goshmem.CmpEQ, 1) }},
		{"SignalWaitUntil", func(p *goshmem.PE, x []int64) {
			goshmem.SignalWaitUntil(p, (*uint64)(unsafe.Pointer(&x[0])), goshmem.CmpEQ, 1)
		}},
		{"SetLock", func(p *goshmem.PE, x []int64) { p.SetLock(&x[2]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var je *goshmem.JobError
			start := time.Now()
			err := runErr(t, 2, testHeap, func(p *goshmem.PE) {
				// x[0], x[1]: waited on; x[2]: a lock; x[3]: PE 1 holds it.
				x := mustCalloc[int64](p, 4)
				if p.MyPE() == 1 {
					p.SetLock(&x[2]) // hold the lock, never release it
					goshmem.AtomicSet(p.Ctx(), &x[3], 1, 0)
					time.Sleep(20 * time.Millisecond)
					panic(errors.New("PE 1 failed"))
				}
				goshmem.WaitUntil(p, &x[3], goshmem.CmpEQ, 1)
				defer func() {
					je, _ = recover().(*goshmem.JobError)
				}()
				tc.wait(p, x)
			})
			if d := time.Since(start); d > time.Second {
				t.Errorf("the job took %v to fail", d)
			}
			pe := panicError(t, err)
			if pe.PE != 1 || pe.Unwrap() == nil || pe.Unwrap().Error() != "PE 1 failed" {
				t.Errorf("PanicError = PE %d, %v; want PE 1 with the error", pe.PE, pe.Value)
			}
			if je == nil {
				t.Fatalf("PE 0 was not stopped with a *JobError")
			}
			if je.Failed != 1 || je.PE != 0 {
				t.Errorf("JobError PE %d Failed %d, want PE 0 Failed 1", je.PE, je.Failed)
			}
			checkContains(t, "JobError", je.Error(), "PE 1", "panicked")
		})
	}
}

// TestQuietNoticesFailure: a PE that only puts and calls Quiet, never
// waiting, stops with a *JobError once another PE has failed, as a wait
// does (Quiet looks at the job's abort state), on the default context
// and on one it created.
func TestQuietNoticesFailure(t *testing.T) {
	for _, m := range modes {
		for _, own := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/own context %v", m.name, own), func(t *testing.T) {
				var je *goshmem.JobError
				start := time.Now()
				err := runErrCfg(t, m.cfg, 2, func(p *goshmem.PE) {
					x := mustCalloc[int64](p, 1)
					c := p.Ctx()
					if own {
						var err error
						if c, err = p.CtxCreate(0); err != nil {
							panic(err)
						}
					}
					p.BarrierAll()
					if p.MyPE() == 1 {
						panic(errors.New("PE 1 failed"))
					}
					defer func() {
						je, _ = recover().(*goshmem.JobError)
					}()
					for i := int64(0); time.Since(start) < 10*time.Second; i++ {
						goshmem.P(c, &x[0], i, 1)
						c.Quiet()
					}
				})
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("the job took %v to stop PE 0", d)
				}
				if pe := panicError(t, err); pe.PE != 1 {
					t.Errorf("PanicError of PE %d, want PE 1", pe.PE)
				}
				if je == nil || je.PE != 0 || je.Routine != "Quiet" {
					t.Fatalf("PE 0 stopped with %v; want a *JobError of its Quiet", je)
				}
				checkContains(t, "JobError", je.Error(), "PE 1", "panicked")
			})
		}
	}
}

// TestDebugChecks: with SHMEM_DEBUG, accesses inside the heap but
// outside any live allocation are caught, and so is a mismatched Free.
func TestDebugChecks(t *testing.T) {
	cfg := node.Config{HeapSize: testHeap, Debug: true}
	for _, tc := range []struct {
		name string
		fn   func(p *goshmem.PE)
		want []string
	}{
		{"Put into freed block", func(p *goshmem.PE) {
			x := mustMalloc[int64](p, 16)
			goshmem.Free(p, x)
			if p.MyPE() == 0 {
				goshmem.Put(p.Ctx(), x[:4], make([]int64, 4), 1)
			}
		}, []string{"goshmem.Put: ", "not inside one live allocation", "SHMEM_DEBUG"}},
		{"Get past the end of a block", func(p *goshmem.PE) {
			x := mustMalloc[int64](p, 8) // 64 bytes: exactly one block
			if p.MyPE() == 0 {
				goshmem.Get(p.Ctx(), make([]int64, 9), unsafe.Slice(&x[0], 9), 1)
			}
		}, []string{"goshmem.Get: ", "not inside one live allocation"}},
		{"AtomicFetchAdd on freed word", func(p *goshmem.PE) {
			x := mustMalloc[int64](p, 1)
			goshmem.Free(p, x)
			if p.MyPE() == 0 {
				goshmem.AtomicFetchAdd(p.Ctx(), &x[0], 1, 1)
			}
		}, []string{"goshmem.AtomicFetchAdd: ", "not inside one live allocation"}},
		{"Test on freed word", func(p *goshmem.PE) {
			x := mustMalloc[int64](p, 1)
			goshmem.Free(p, x)
			if p.MyPE() == 0 {
				goshmem.Test(p, &x[0], goshmem.CmpEQ, 0)
			}
		}, []string{"goshmem.Test: ", "not inside one live allocation"}},
		// A wait whose condition already holds still checks (the
		// inline fast path leaves it to the checked path).
		{"WaitUntil on freed word, already true", func(p *goshmem.PE) {
			x := mustMalloc[int64](p, 1)
			goshmem.Free(p, x)
			if p.MyPE() == 0 {
				goshmem.WaitUntil(p, &x[0], goshmem.CmpEQ, 0)
			}
		}, []string{"goshmem.WaitUntil: ", "not inside one live allocation"}},
		{"SignalWaitUntil on freed word, already true", func(p *goshmem.PE) {
			x := mustMalloc[uint64](p, 1)
			goshmem.Free(p, x)
			if p.MyPE() == 0 {
				goshmem.SignalWaitUntil(p, &x[0], goshmem.CmpEQ, 0)
			}
		}, []string{"goshmem.SignalWaitUntil: ", "not inside one live allocation"}},
		{"SignalFetch on freed word", func(p *goshmem.PE) {
			x := mustMalloc[uint64](p, 1)
			goshmem.Free(p, x)
			if p.MyPE() == 0 {
				goshmem.SignalFetch(p, &x[0])
			}
		}, []string{"goshmem.SignalFetch: ", "not inside one live allocation"}},
		{"mismatched Free", func(p *goshmem.PE) {
			a, b := mustMalloc[byte](p, 64), mustMalloc[byte](p, 64)
			goshmem.Free(p, [][]byte{a, b}[p.MyPE()])
			p.BarrierAll()
		}, []string{"goshmem.Free: ", "differ"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := panicError(t, runErrCfg(t, cfg, 2, tc.fn))
			checkContains(t, tc.name, fmt.Sprint(pe.Value), tc.want...)
		})
	}
	// The same accesses on live memory are fine in debug mode.
	runCfg(t, cfg, 2, func(p *goshmem.PE) {
		x := mustMalloc[int64](p, 8)
		goshmem.Put(p.Ctx(), x, make([]int64, 8), 1-p.MyPE())
		goshmem.Get(p.Ctx(), make([]int64, 8), x, 1-p.MyPE())
		goshmem.AtomicFetchAdd(p.Ctx(), &x[7], 1, 1-p.MyPE())
		p.BarrierAll()
		goshmem.WaitUntil(p, &x[7], goshmem.CmpEQ, 1)
		u := mustMalloc[uint64](p, 1)
		u[0] = 3
		if got := goshmem.SignalWaitUntil(p, &u[0], goshmem.CmpGE, 2); got != 3 {
			t.Errorf("SignalWaitUntil in debug mode returned %d, want 3", got)
		}
		goshmem.Free(p, u)
		goshmem.Free(p, x)
	})
}

// TestWaitAlignment: the variables of waits, tests and signals must be
// aligned to their size (a misaligned word is not read atomically), as
// the words of atomics must; a misaligned one is a programmer error
// named like theirs.
func TestWaitAlignment(t *testing.T) {
	// odd returns a word of x's block 4 bytes past its start: inside
	// the heap, misaligned.
	odd := func(x []uint64) *uint64 { return (*uint64)(unsafe.Add(unsafe.Pointer(&x[0]), 4)) }
	oddInt := func(x []uint64) *int64 { return (*int64)(unsafe.Add(unsafe.Pointer(&x[0]), 4)) }
	for _, tc := range []struct {
		name string
		fn   func(p *goshmem.PE, x []uint64)
	}{
		{"Test", func(p *goshmem.PE, x []uint64) { goshmem.Test(p, oddInt(x), goshmem.CmpEQ, 0) }},
		{"WaitUntil", func(p *goshmem.PE, x []uint64) { goshmem.WaitUntil(p, oddInt(x), goshmem.CmpEQ, 0) }},
		{"TestAll", func(p *goshmem.PE, x []uint64) {
			goshmem.TestAll(p, unsafe.Slice(oddInt(x), 2), nil, goshmem.CmpEQ, 0)
		}},
		{"SignalFetch", func(p *goshmem.PE, x []uint64) { goshmem.SignalFetch(p, odd(x)) }},
		{"SignalWaitUntil", func(p *goshmem.PE, x []uint64) { goshmem.SignalWaitUntil(p, odd(x), goshmem.CmpEQ, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := panicError(t, runErrCfg(t, node.Config{HeapSize: testHeap}, 1, func(p *goshmem.PE) {
				x := mustMalloc[uint64](p, 4) // zero: every wait would be satisfied at once
				tc.fn(p, x)
			}))
			checkContains(t, tc.name, fmt.Sprint(pe.Value), "goshmem."+tc.name+": ", "is not aligned to 8 bytes")
		})
	}
}

// TestCollectTooLong: a source of 2^32 elements or more is refused with
// a message (members publish their counts as 32-bit words; a longer
// one would be cut and the blocks land at wrong offsets). The slice is
// only a header: nothing reads it.
func TestCollectTooLong(t *testing.T) {
	pe := panicError(t, runErrCfg(t, node.Config{HeapSize: testHeap}, 1, func(p *goshmem.PE) {
		x := mustMalloc[int8](p, 8)
		huge := unsafe.Slice(&x[0], 1<<32)
		goshmem.Collect(goshmem.TeamWorld(p), huge, huge)
	}))
	checkContains(t, "Collect", fmt.Sprint(pe.Value), "goshmem.Collect: ", "4294967296 elements", "at most 4294967295")
}

// TestRunLocalArgs: a job needs at least one PE, and a bad SHMEM_*
// variable is an error that names it.
func TestRunLocalArgs(t *testing.T) {
	for _, n := range []int{0, -3} {
		err := goshmem.RunLocalConfig(node.Config{HeapSize: testHeap}, n, func(*goshmem.PE) { t.Errorf("fn ran with %d PEs", n) })
		if err == nil {
			t.Errorf("RunLocal(%d) succeeded", n)
			continue
		}
		checkContains(t, "RunLocal", err.Error(), "at least 1 PE", fmt.Sprint(n))
	}
	t.Setenv("SHMEM_SYMMETRIC_SIZE", "lots")
	err := goshmem.RunLocal(1, func(*goshmem.PE) { t.Errorf("fn ran with a bad environment") })
	if err == nil {
		t.Fatalf("RunLocal with SHMEM_SYMMETRIC_SIZE=lots succeeded")
	}
	checkContains(t, "bad env", err.Error(), "SHMEM_SYMMETRIC_SIZE", "lots")
	if _, err := goshmem.LoadConfig(); err == nil {
		t.Errorf("LoadConfig with SHMEM_SYMMETRIC_SIZE=lots succeeded")
	}
}

// TestConfigBadHeapSize: a configuration without a usable heap size
// either falls back to the default or fails with an error that says
// what to set (the package promises environment errors "that say what to
// do"), not with a message about an internal segment.
func TestConfigBadHeapSize(t *testing.T) {
	for _, hs := range []int64{0, -5} {
		err := goshmem.RunLocalConfig(node.Config{HeapSize: hs}, 1, func(p *goshmem.PE) {
			if hs == 0 && p.HeapSize() != node.DefaultHeapSize {
				t.Errorf("HeapSize 0: heap of %d bytes, want the default %d", p.HeapSize(), node.DefaultHeapSize)
			}
		})
		if err != nil && !strings.Contains(err.Error(), "SHMEM_SYMMETRIC_SIZE") && !strings.Contains(err.Error(), "HeapSize") {
			t.Errorf("HeapSize %d: error %q names neither SHMEM_SYMMETRIC_SIZE nor HeapSize", hs, err)
		}
		if hs < 0 && err == nil {
			t.Errorf("HeapSize %d: RunLocal succeeded", hs)
		}
	}
}

// TestEnvHeapSize: SHMEM_SYMMETRIC_SIZE sets the heap of RunLocal.
func TestEnvHeapSize(t *testing.T) {
	t.Setenv("SHMEM_SYMMETRIC_SIZE", "3m")
	cfg, err := goshmem.LoadConfig()
	if err != nil || cfg.HeapSize != 3<<20 {
		t.Fatalf("LoadConfig = %+v, %v; want HeapSize 3 MiB", cfg, err)
	}
	if err := goshmem.RunLocal(2, func(p *goshmem.PE) {
		if p.HeapSize() != 3<<20 {
			t.Errorf("HeapSize = %d, want %d", p.HeapSize(), 3<<20)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// TestFinalizeExplicit: PEs may call Finalize themselves, even twice,
// before returning.
func TestFinalizeExplicit(t *testing.T) {
	run(t, 3, testHeap, func(p *goshmem.PE) {
		x := mustCalloc[int64](p, 1)
		goshmem.AtomicInc(p.Ctx(), &x[0], 0)
		p.Finalize()
		p.Finalize()
		if p.MyPE() == 0 && x[0] != 3 {
			t.Errorf("counter after Finalize = %d, want 3", x[0])
		}
	})
}

// TestPanicErrorWrapsError: a PE panicking with an error is reported
// with errors.Is/As reaching that error.
func TestPanicErrorWrapsError(t *testing.T) {
	sentinel := errors.New("sentinel failure")
	err := runErr(t, 2, testHeap, func(p *goshmem.PE) {
		if p.MyPE() == 1 {
			panic(fmt.Errorf("wrapped: %w", sentinel))
		}
		p.BarrierAll()
	})
	if !errors.Is(err, sentinel) {
		t.Errorf("errors.Is(%v, sentinel) = false", err)
	}
	pe := panicError(t, err)
	if pe.PE != 1 {
		t.Errorf("PanicError.PE = %d, want 1", pe.PE)
	}
}

// TestJobErrorRoutine: the JobError of a PE stopped in a blocking
// routine names that routine (JobError.Routine's documentation gives
// "BarrierAll" as its example) and the failed PE.
func TestJobErrorRoutine(t *testing.T) {
	for _, tc := range []struct {
		routine string
		block   func(p *goshmem.PE, x []int64)
	}{
		{"BarrierAll", func(p *goshmem.PE, x []int64) { p.BarrierAll() }},
		{"SyncAll", func(p *goshmem.PE, x []int64) { p.SyncAll() }},
		{"WaitUntil", func(p *goshmem.PE, x []int64) { goshmem.WaitUntil(p, &x[0], goshmem.CmpEQ, 1) }},
		{"WaitUntilAll", func(p *goshmem.PE, x []int64) { goshmem.WaitUntilAll(p, x[:2], nil, goshmem.CmpEQ, 1) }},
		{"WaitUntilAny", func(p *goshmem.PE, x []int64) { goshmem.WaitUntilAny(p, x[:2], nil, goshmem.CmpEQ, 1) }},
		{"SignalWaitUntil", func(p *goshmem.PE, x []int64) {
			goshmem.SignalWaitUntil(p, (*uint64)(unsafe.Pointer(&x[0])), goshmem.CmpEQ, 1)
		}},
		{"SetLock", func(p *goshmem.PE, x []int64) { p.SetLock(&x[2]) }},
		{"Malloc", func(p *goshmem.PE, x []int64) { _, _ = goshmem.Malloc[byte](p, 64) }},
		{"Calloc", func(p *goshmem.PE, x []int64) { _, _ = goshmem.Calloc[byte](p, 64) }},
		{"Free", func(p *goshmem.PE, x []int64) { goshmem.Free(p, x) }},
		{"Finalize", func(p *goshmem.PE, x []int64) { p.Finalize() }},
	} {
		t.Run(tc.routine, func(t *testing.T) {
			var je *goshmem.JobError
			err := runErr(t, 2, testHeap, func(p *goshmem.PE) {
				x := mustCalloc[int64](p, 4)
				if p.MyPE() == 1 {
					p.SetLock(&x[2])
					goshmem.AtomicSet(p.Ctx(), &x[3], 1, 0)
					time.Sleep(10 * time.Millisecond)
					panic("PE 1 fails")
				}
				goshmem.WaitUntil(p, &x[3], goshmem.CmpEQ, 1)
				defer func() { je, _ = recover().(*goshmem.JobError) }()
				tc.block(p, x)
			})
			if pe := panicError(t, err); pe.PE != 1 {
				t.Errorf("PanicError of PE %d, want PE 1", pe.PE)
			}
			if je == nil {
				t.Fatalf("PE 0 was not stopped with a *JobError")
			}
			if je.Routine != tc.routine || je.Failed != 1 || je.PE != 0 {
				t.Errorf("JobError{Routine %q, PE %d, Failed %d}, want {%q, 0, 1}", je.Routine, je.PE, je.Failed, tc.routine)
			}
			checkContains(t, "JobError", je.Error(), "goshmem: "+tc.routine+" on PE 0 stopped: ", "PE 1", "panicked")
		})
	}
}

// TestGoexitInPE: a PE goroutine that ends with runtime.Goexit (as
// t.FailNow, t.Fatal and t.SkipNow do when called inside the PE
// function) must fail the job, not leave the other PEs waiting forever.
func TestGoexitInPE(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- goshmem.RunLocalConfig(node.Config{HeapSize: testHeap}, 2, func(p *goshmem.PE) {
			if p.MyPE() == 1 {
				runtime.Goexit()
			}
			p.BarrierAll()
		})
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("RunLocal = nil, want an error naming PE 1")
		} else {
			checkContains(t, "Goexit", err.Error(), "PE 1")
		}
	case <-time.After(3 * time.Second):
		t.Errorf("RunLocal hangs when a PE calls runtime.Goexit: PE 0 waits in BarrierAll forever (goroutines leaked)")
	}
}

// TestLockMisaligned: a lock word inside the heap but not 8-byte
// aligned is rejected with a message about alignment (like the AMOs'),
// not one claiming the word is outside the heap.
func TestLockMisaligned(t *testing.T) {
	for _, routine := range []string{"SetLock", "TestLock", "ClearLock"} {
		t.Run(routine, func(t *testing.T) {
			var a uintptr
			msg, _ := runErrCase(t, errCase{name: routine, npes: 1, fn: func(f *fixture) {
				lock := (*int64)(unsafe.Add(unsafe.Pointer(&f.x[0]), 4))
				a = uintptr(unsafe.Pointer(lock))
				switch routine {
				case "SetLock":
					f.p.SetLock(lock)
				case "TestLock":
					f.p.TestLock(lock)
				default:
					f.p.ClearLock(lock)
				}
			}})
			checkContains(t, routine, msg, "goshmem."+routine+": ", fmt.Sprintf("%#x", a), "aligned")
			if strings.Contains(msg, "not inside the symmetric heap") {
				t.Errorf("%s: message %q claims an address inside the heap is outside it", routine, msg)
			}
		})
	}
}

// TestConfigValidate: a Config field with a value its SHMEM_* variable
// would reject makes RunLocalConfig fail before any PE runs, with an
// error naming the field, the value and the valid values, as the same
// value in the environment does; every value the variable accepts is
// accepted in the Config too (one list of names, internal/env's).
func TestConfigValidate(t *testing.T) {
	base := node.Config{HeapSize: testHeap}
	for _, c := range []struct {
		field string
		set   func(c *node.Config)
		want  []string
	}{
		{"ReduceAlgorithm", func(c *node.Config) { c.ReduceAlgorithm = "bogus" }, []string{"Config.ReduceAlgorithm", "bogus", "rabenseifner", "SHMEM_REDUCE_ALGORITHM"}},
		{"BarrierAlgorithm", func(c *node.Config) { c.BarrierAlgorithm = "bogus" }, []string{"Config.BarrierAlgorithm", "dissemination, tree or central"}},
		{"BcastAlgorithm", func(c *node.Config) { c.BcastAlgorithm = "Tree" }, []string{"Config.BcastAlgorithm", "Tree", "direct or tree"}},
		{"FCollectAlgorithm", func(c *node.Config) { c.FCollectAlgorithm = "bogus" }, []string{"Config.FCollectAlgorithm", "recursive-doubling"}},
		{"Transport", func(c *node.Config) { c.Transport = "tcp" }, []string{"Config.Transport", "tcp", "auto, xpmem or cma"}},
		{"HeapPolicy", func(c *node.Config) { c.HeapPolicy = "spread" }, []string{"Config.HeapPolicy", "spread", "local, interleave or none"}},
		{"NUMACollectives", func(c *node.Config) { c.NUMACollectives = "sometimes" }, []string{"Config.NUMACollectives", "auto, always or never"}},
		{"HeapSize", func(c *node.Config) { c.HeapSize = -5 }, []string{"Config.HeapSize", "-5", "SHMEM_SYMMETRIC_SIZE"}},
		{"WaitSpin", func(c *node.Config) { c.WaitSpin = -1 }, []string{"Config.WaitSpin", "-1"}},
		{"WaitYield", func(c *node.Config) { c.WaitYield = -1 }, []string{"Config.WaitYield", "-1"}},
		{"SimDomains", func(c *node.Config) { c.SimDomains = -2 }, []string{"Config.SimDomains", "-2"}},
		{"WaitSleep", func(c *node.Config) { c.WaitSleep = time.Second }, []string{"Config.WaitSleep", "1s", "500ms"}},
		{"WaitSleep", func(c *node.Config) { c.WaitSleep = -time.Millisecond }, []string{"Config.WaitSleep", "-1ms"}},
	} {
		cfg := base
		c.set(&cfg)
		err := goshmem.RunLocalConfig(cfg, 2, func(*goshmem.PE) { t.Errorf("%s: fn ran with an invalid Config", c.field) })
		if err == nil {
			t.Errorf("RunLocalConfig with a bad %s succeeded", c.field)
			continue
		}
		checkContains(t, c.field, err.Error(), c.want...)
	}
	// The variables' upper bounds hold for the fields too: Validate
	// refuses what the environment refuses, and accepts the largest
	// values it accepts.
	for _, c := range []struct {
		field    string
		set      func(c *node.Config, over int64)
		max      int64
		variable string
	}{
		{"HeapSize", func(c *node.Config, v int64) { c.HeapSize = v }, env.MaxSymmetricSize, "SHMEM_SYMMETRIC_SIZE"},
		{"WaitSpin", func(c *node.Config, v int64) { c.WaitSpin = int(v) }, env.MaxCount, "SHMEM_WAIT_SPIN"},
		{"WaitYield", func(c *node.Config, v int64) { c.WaitYield = int(v) }, env.MaxCount, "SHMEM_WAIT_YIELD"},
		{"SimDomains", func(c *node.Config, v int64) { c.SimDomains = int(v) }, env.MaxCount, "GOSHMEM_SIM_DOMAINS"},
	} {
		cfg := base
		c.set(&cfg, c.max)
		if err := cfg.Validate(); err != nil {
			t.Errorf("Config.%s = %d (the largest %s accepts): %v", c.field, c.max, c.variable, err)
		}
		c.set(&cfg, c.max+1)
		if err := cfg.Validate(); err == nil {
			t.Errorf("Config.%s = %d (more than %s accepts) validates", c.field, c.max+1, c.variable)
		} else {
			checkContains(t, c.field, err.Error(), "Config."+c.field, fmt.Sprint(c.max+1), c.variable, fmt.Sprint(c.max))
		}
	}
	// Two bad fields: both named.
	cfg := base
	cfg.ReduceAlgorithm, cfg.Transport = "bogus", "tcp"
	if err := cfg.Validate(); err == nil {
		t.Errorf("Validate with two bad fields succeeded")
	} else {
		checkContains(t, "two fields", err.Error(), "Config.ReduceAlgorithm", "Config.Transport")
	}
	// Every value of every enum variable, and the defaults, are valid.
	fields := map[string]func(c *node.Config, v string){
		env.VarTransport:   func(c *node.Config, v string) { c.Transport = v },
		env.VarHeapPolicy:  func(c *node.Config, v string) { c.HeapPolicy = v },
		env.VarBarrierAlg:  func(c *node.Config, v string) { c.BarrierAlgorithm = v },
		env.VarReduceAlg:   func(c *node.Config, v string) { c.ReduceAlgorithm = v },
		env.VarBcastAlg:    func(c *node.Config, v string) { c.BcastAlgorithm = v },
		env.VarFCollectAlg: func(c *node.Config, v string) { c.FCollectAlgorithm = v },
		env.VarNUMAColl:    func(c *node.Config, v string) { c.NUMACollectives = v },
		env.VarPMI:         func(c *node.Config, v string) { c.PMI = v },
		env.VarInternode:   func(c *node.Config, v string) { c.Internode = v },
	}
	for _, k := range env.Knobs() {
		if k.Type != env.TypeEnum {
			continue
		}
		set, ok := fields[k.Name]
		if !ok {
			t.Errorf("enum variable %s has no Config field in this test", k.Name)
			continue
		}
		for _, v := range append([]string{""}, k.Values...) {
			cfg := base
			set(&cfg, v)
			if err := cfg.Validate(); err != nil {
				t.Errorf("%s=%q as a Config: %v", k.Name, v, err)
			}
		}
	}
	if lc, err := goshmem.LoadConfig(); err != nil || lc.Validate() != nil {
		t.Errorf("the default environment's Config does not validate: %v, %v", err, lc.Validate())
	}
}

// TestFailBeforeStore: a call that is going to fail fails before it
// changes any memory, and names the argument that is wrong: a strided
// put whose last elements run past the heap's end leaves the elements
// that would fit untouched on the target; a strided get leaves the
// local dest untouched; a non-blocking fetching AMO with a nil fetch
// does not run the AMO. On mapped peers, through CMA, and to self.
func TestFailBeforeStore(t *testing.T) {
	const sentinel = int64(0x5a5a)
	for _, cfg := range []node.Config{{HeapSize: testHeap}, {HeapSize: testHeap, Transport: "cma"}} {
		for _, npes := range []int{1, 2} {
			name := fmt.Sprintf("transport=%q/npes=%d", cfg.Transport, npes)
			runCfg(t, cfg, npes, func(p *goshmem.PE) {
				f := newFixture(p)
				target := npes - 1
				last := f.tail[len(f.tail)-2:] // the part of f.past inside the heap
				reset := func() {
					p.BarrierAll()
					last[0], last[1] = sentinel, sentinel
					f.x[0] = sentinel
					p.BarrierAll()
				}
				type tc struct {
					routine, want string
					fn            func()
					local         []int64 // local memory that must stay as it was
				}
				loc := []int64{sentinel, sentinel, sentinel, sentinel, sentinel, sentinel, sentinel}
				src := []int64{1, 2, 3, 4, 5, 6, 7}
				cases := []tc{
					{"IPut", f.notInHeap("IPut", "dest", addr(f.past), 32),
						func() { goshmem.IPut(f.c, f.past, src, 1, 1, 4, target) }, nil},
					{"IPut", f.notInHeap("IPut", "dest", addr(f.past[:3]), 24),
						func() { goshmem.IPut(f.c, f.past[:3], src, 2, 1, 2, target) }, nil},
					{"IGet", f.notInHeap("IGet", "source", addr(f.past), 32),
						func() { goshmem.IGet(f.c, loc, f.past, 2, 1, 4, target) }, loc},
					{"Put", f.notInHeap("Put", "dest", addr(f.past), 32),
						func() { goshmem.Put(f.c, f.past, src[:4], target) }, nil},
					{"PutNBI", f.notInHeap("PutNBI", "dest", addr(f.past), 32),
						func() { goshmem.PutNBI(f.c, f.past, src[:4], target) }, nil},
					{"GetNBI", f.notInHeap("GetNBI", "source", addr(f.past), 32),
						func() { goshmem.GetNBI(f.c, loc[:4], f.past, target) }, loc},
					{"AtomicFetchAddNBI", "goshmem.AtomicFetchAddNBI: fetch is nil",
						func() { goshmem.AtomicFetchAddNBI(f.c, nil, &f.x[0], 1, target) }, nil},
					{"AtomicSwapNBI", "goshmem.AtomicSwapNBI: fetch is nil",
						func() { goshmem.AtomicSwapNBI(f.c, nil, &f.x[0], 1, target) }, nil},
				}
				for _, c := range cases {
					reset()
					if p.MyPE() == 0 {
						if msg := panicMsg(c.fn); !strings.HasPrefix(msg, c.want) {
							t.Errorf("%s: %s: panic %q, want %q", name, c.routine, msg, c.want)
						}
						for i, v := range c.local {
							if v != sentinel {
								t.Errorf("%s: %s failed but changed local dest[%d] to %d", name, c.routine, i, v)
							}
						}
					}
					p.BarrierAll()
					if p.MyPE() == target && (last[0] != sentinel || last[1] != sentinel || f.x[0] != sentinel) {
						t.Errorf("%s: %s failed but changed the target's memory: %d %d, x[0] %d", name, c.routine, last[0], last[1], f.x[0])
					}
				}
			})
		}
	}
}

// TestMessagesNameRoutineAndArgument: every public RMA, AMO, team and
// collective routine, given one bad argument, panics with a message
// that starts with goshmem.<Routine>: and names that argument (never
// the routine it is built on, nor "collective"). Every PE makes the same
// call, as a collective needs; the check comes before any
// synchronization, so the job stays in step.
func TestMessagesNameRoutineAndArgument(t *testing.T) {
	const big = 1024 // above the dropbox and flat sizes: the general paths
	type call struct {
		routine, arg string
		fn           func(c *goshmem.Ctx, w *goshmem.Team, x, goMem []int64, xv, gv *int64)
	}
	var calls []call
	add := func(routine, arg string, fn func(c *goshmem.Ctx, w *goshmem.Team, x, goMem []int64, xv, gv *int64)) {
		calls = append(calls, call{routine, arg, fn})
	}
	type C = goshmem.Ctx
	type T = goshmem.Team
	// RMA: the symmetric argument outside the heap.
	add("Put", "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.Put(c, g, x, 0) })
	add("Get", "source", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.Get(c, x, g, 0) })
	add("P", "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.P(c, gv, 1, 0) })
	add("G", "source", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.G(c, gv, 0) })
	add("PutNBI", "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.PutNBI(c, g, x, 0) })
	add("GetNBI", "source", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.GetNBI(c, x, g, 0) })
	add("PutBytes", "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.PutBytes(c, byteView(g), byteView(x), 0) })
	add("GetBytes", "source", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.GetBytes(c, byteView(x), byteView(g), 0) })
	add("IPut", "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.IPut(c, g, x, 2, 1, 4, 0) })
	add("IGet", "source", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.IGet(c, x, g, 1, 2, 4, 0) })
	add("IPut", "source", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.IPut(c, x, x[:2], 1, 1, 4, 0) })
	add("IGet", "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.IGet(c, x[:2], x, 1, 1, 4, 0) })
	// AMOs: the target outside the heap; the fetch routines read a source.
	add("AtomicFetch", "source", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.AtomicFetch(c, gv, 0) })
	add("AtomicFetchNBI", "source", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.AtomicFetchNBI(c, xv, gv, 0) })
	add("AtomicFetchNBI", "fetch", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.AtomicFetchNBI(c, nil, xv, 0) })
	for _, a := range []struct {
		routine string
		fn      func(c *C, dst *int64)
	}{
		{"AtomicSet", func(c *C, d *int64) { goshmem.AtomicSet(c, d, 1, 0) }},
		{"AtomicSwap", func(c *C, d *int64) { goshmem.AtomicSwap(c, d, 1, 0) }},
		{"AtomicCompareSwap", func(c *C, d *int64) { goshmem.AtomicCompareSwap(c, d, 0, 1, 0) }},
		{"AtomicFetchAdd", func(c *C, d *int64) { goshmem.AtomicFetchAdd(c, d, 1, 0) }},
		{"AtomicAdd", func(c *C, d *int64) { goshmem.AtomicAdd(c, d, 1, 0) }},
		{"AtomicFetchInc", func(c *C, d *int64) { goshmem.AtomicFetchInc(c, d, 0) }},
		{"AtomicInc", func(c *C, d *int64) { goshmem.AtomicInc(c, d, 0) }},
		{"AtomicFetchAnd", func(c *C, d *int64) { goshmem.AtomicFetchAnd(c, d, 1, 0) }},
		{"AtomicAnd", func(c *C, d *int64) { goshmem.AtomicAnd(c, d, 1, 0) }},
		{"AtomicFetchOr", func(c *C, d *int64) { goshmem.AtomicFetchOr(c, d, 1, 0) }},
		{"AtomicOr", func(c *C, d *int64) { goshmem.AtomicOr(c, d, 1, 0) }},
		{"AtomicFetchXor", func(c *C, d *int64) { goshmem.AtomicFetchXor(c, d, 1, 0) }},
		{"AtomicXor", func(c *C, d *int64) { goshmem.AtomicXor(c, d, 1, 0) }},
		{"AtomicSwapNBI", func(c *C, d *int64) { var f int64; goshmem.AtomicSwapNBI(c, &f, d, 1, 0) }},
		{"AtomicCompareSwapNBI", func(c *C, d *int64) { var f int64; goshmem.AtomicCompareSwapNBI(c, &f, d, 0, 1, 0) }},
		{"AtomicFetchAddNBI", func(c *C, d *int64) { var f int64; goshmem.AtomicFetchAddNBI(c, &f, d, 1, 0) }},
		{"AtomicFetchIncNBI", func(c *C, d *int64) { var f int64; goshmem.AtomicFetchIncNBI(c, &f, d, 0) }},
		{"AtomicFetchAndNBI", func(c *C, d *int64) { var f int64; goshmem.AtomicFetchAndNBI(c, &f, d, 1, 0) }},
		{"AtomicFetchOrNBI", func(c *C, d *int64) { var f int64; goshmem.AtomicFetchOrNBI(c, &f, d, 1, 0) }},
		{"AtomicFetchXorNBI", func(c *C, d *int64) { var f int64; goshmem.AtomicFetchXorNBI(c, &f, d, 1, 0) }},
	} {
		add(a.routine, "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { a.fn(c, gv) })
	}
	// Collectives: dest, then source, outside the heap; bad roots.
	for _, r := range []struct {
		routine string
		fn      func(w *T, dst, src []int64)
	}{
		{"SumReduce", goshmem.SumReduce[int64]},
		{"ProdReduce", goshmem.ProdReduce[int64]},
		{"MinReduce", goshmem.MinReduce[int64]},
		{"MaxReduce", goshmem.MaxReduce[int64]},
		{"AndReduce", goshmem.AndReduce[int64]},
		{"OrReduce", goshmem.OrReduce[int64]},
		{"XorReduce", goshmem.XorReduce[int64]},
		{"SumInscan", goshmem.SumInscan[int64]},
		{"SumExscan", goshmem.SumExscan[int64]},
		{"Broadcast", func(w *T, d, s []int64) { goshmem.Broadcast(w, d, s, 0) }},
		{"FCollect", func(w *T, d, s []int64) { goshmem.FCollect(w, d, s[:big/2]) }},
		{"Collect", func(w *T, d, s []int64) { goshmem.Collect(w, d, s[:big/2]) }},
		{"Alltoall", func(w *T, d, s []int64) { goshmem.Alltoall(w, d, s, big/2) }},
		{"Alltoalls", func(w *T, d, s []int64) { goshmem.Alltoalls(w, d, s, 1, 1, big/2) }},
	} {
		add(r.routine, "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { r.fn(w, g, x) })
		add(r.routine, "source", func(c *C, w *T, x, g []int64, xv, gv *int64) { r.fn(w, x, g) })
	}
	add("Broadcast", "root", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.Broadcast(w, x, x, 2) })
	add("Broadcast", "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.Broadcast(w, x[:1], x[:2], 0) })
	add("SumReduce", "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.SumReduce(w, x[:1], x[:2]) })
	add("FCollect", "dest", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.FCollect(w, x[:3], x[:2]) })
	add("Alltoalls", "strides", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.Alltoalls(w, x, x, 0, 1, 1) })
	// Team routines.
	add("TeamWorldPE", "PE", func(c *C, w *T, x, g []int64, xv, gv *int64) { w.WorldPE(7) })
	add("TeamPtr", "PE", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.TeamPtr(w, x, -1) })
	add("Team.Sync", "team", func(c *C, w *T, x, g []int64, xv, gv *int64) { (*goshmem.Team)(nil).Sync() })
	add("Team.Barrier", "team", func(c *C, w *T, x, g []int64, xv, gv *int64) { (*goshmem.Team)(nil).Barrier() })
	add("SumReduce", "team", func(c *C, w *T, x, g []int64, xv, gv *int64) { goshmem.SumReduce(nil, x, x) })
	add("Team.Destroy", "TeamWorld", func(c *C, w *T, x, g []int64, xv, gv *int64) { w.Destroy() })

	for _, cfg := range []node.Config{{HeapSize: testHeap}, {HeapSize: testHeap, Transport: "cma"}} {
		runCfg(t, cfg, 2, func(p *goshmem.PE) {
			x := mustCalloc[int64](p, big)
			goMem := make([]int64, big)
			goVar := new(int64)
			w := goshmem.TeamWorld(p)
			for _, c := range calls {
				msg := panicMsg(func() { c.fn(p.Ctx(), w, x, goMem, &x[0], goVar) })
				prefix := "goshmem." + c.routine + ": "
				if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg[len(prefix):], c.arg) {
					t.Errorf("transport %q: %s with a bad %s: panic %q, want it to start with %q and name %s",
						cfg.Transport, c.routine, c.arg, msg, prefix, c.arg)
				}
			}
			// In step: a collective still works.
			x[0] = int64(p.MyPE() + 1)
			goshmem.SumReduce(w, x[1:2], x[:1])
			if x[1] != 3 {
				t.Errorf("sum after the bad calls = %d, want 3", x[1])
			}
		})
	}
}

// TestFinalizeEarlyNoHang: a PE that returns early from its function
// (its Finalize then matches the others' BarrierAll, a program error)
// must not leave the other PEs waiting forever in their next barrier,
// nor let them past the BarrierAll its Finalize met (they would go on
// as if it had called it, and hang in a WaitUntil for it): the job
// fails in that BarrierAll, naming that PE and that it finalized, in
// every mode and with each world barrier algorithm.
func TestFinalizeEarlyNoHang(t *testing.T) {
	for _, m := range modes {
		for _, alg := range []string{"dissemination", "central"} {
			t.Run(m.name+"/"+alg, func(t *testing.T) {
				cfg := m.cfg
				cfg.BarrierAlgorithm = alg
				start := time.Now()
				err := runErrCfg(t, cfg, 3, func(p *goshmem.PE) {
					if p.MyPE() == 1 {
						return // Finalize: the others' first BarrierAll completes with it
					}
					p.BarrierAll() // met by PE 1's Finalize
					t.Errorf("PE %d passed a BarrierAll that PE 1 never called (its Finalize met it)", p.MyPE())
					p.BarrierAll() // PE 1 will never come
					t.Errorf("PE %d passed a barrier that PE 1, finalized, never made", p.MyPE())
				})
				if err == nil || !strings.Contains(err.Error(), "PE 1") || !strings.Contains(err.Error(), "called Finalize after 1 barrier") {
					t.Fatalf("job error = %v, want one naming PE 1, which called Finalize after 1 barrier", err)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("the job took %v to notice", d)
				}
			})
		}
	}
}

// TestFinalizeEarlyTeamNoHang: a member that returns from its function
// (and so calls Finalize) without making a collective call on a team,
// while the other members wait in it, fails the job with a message
// naming it and the calls it made, instead of a hang in which the
// others wait in the team's call and it waits in Finalize's barrier.
// PE 1 of 3 leaves after made calls on the team; PEs 0 and 2 make
// one more.
func TestFinalizeEarlyTeamNoHang(t *testing.T) {
	ops := []struct {
		name string
		// made is how many calls PE 1 makes on the team before it leaves.
		made int
		call func(tm *goshmem.Team, x []int64)
	}{
		{"Sync", 0, func(tm *goshmem.Team, _ []int64) { tm.Sync() }},
		{"Barrier after one", 1, func(tm *goshmem.Team, _ []int64) { tm.Barrier() }},
		{"SumReduce after two", 2, func(tm *goshmem.Team, x []int64) { goshmem.SumReduce(tm, x[:1], x[1:2]) }},
		{"SumReduce of 1 KiB", 0, func(tm *goshmem.Team, x []int64) { goshmem.SumReduce(tm, x[:128], x[128:256]) }},
		{"Broadcast from PE 1", 0, func(tm *goshmem.Team, x []int64) { goshmem.Broadcast(tm, x[:1], x[1:2], 1) }},
		{"FCollect", 0, func(tm *goshmem.Team, x []int64) { goshmem.FCollect(tm, x[:3], x[3:4]) }},
		{"Collect", 0, func(tm *goshmem.Team, x []int64) { goshmem.Collect(tm, x[:3], x[3:4]) }},
		{"Alltoall", 0, func(tm *goshmem.Team, x []int64) { goshmem.Alltoall(tm, x[:3], x[3:6], 1) }},
	}
	for _, m := range modes {
		for _, team := range []string{"split", "TeamShared"} {
			if m.name == "cma" && team == "TeamShared" {
				continue // over CMA TeamShared holds the PE alone: no member to wait for
			}
			for _, op := range ops {
				t.Run(m.name+"/"+team+"/"+op.name, func(t *testing.T) {
					start := time.Now()
					err := runErrCfg(t, m.cfg, 3, func(p *goshmem.PE) {
						x := mustCalloc[int64](p, 256)
						tm := goshmem.TeamShared(p)
						if team == "split" {
							var err error
							if tm, err = goshmem.TeamWorld(p).SplitStrided(0, 1, 3, nil); err != nil {
								panic(err)
							}
						}
						if tm.NPEs() != 3 {
							panic(fmt.Sprintf("%s has %d PEs, want 3", team, tm.NPEs()))
						}
						for range op.made {
							op.call(tm, x)
						}
						if p.MyPE() == 1 {
							return // Finalize
						}
						op.call(tm, x)
						t.Errorf("PE %d finished a %s that PE 1 never called", p.MyPE(), op.name)
					})
					wantTeamFinal(t, err, op.made, start)
				})
			}
		}
	}
}

// wantTeamFinal fails t unless err, the error of a job started at
// start, says that PE 1 called Finalize after made collective calls on
// a team while another member waited in a later one, within 10 s.
func wantTeamFinal(t *testing.T, err error, made int, start time.Time) {
	t.Helper()
	calls := "calls"
	if made == 1 {
		calls = "call"
	}
	want := fmt.Sprintf("called Finalize after %d collective %s on a team", made, calls)
	if err == nil || !strings.Contains(err.Error(), "PE 1 (pid") || !strings.Contains(err.Error(), want) {
		t.Fatalf("job error = %v, want one saying PE 1 (pid N) %s", err, want)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the job took %v to notice", d)
	}
}

// TestFinalizeEarlyTeamDestroy: a member that returns from its
// function (so calls Finalize) without destroying a team that the other
// members then destroy fails the job with a message naming it, instead
// of a hang in which they wait in TeamDestroy's sync and it waits in
// Finalize's barrier. The members' own check leaves a team being
// destroyed out (its slot may already hold another team on a member
// past the sync), so the member in Finalize is the one that sees it.
// PE 1 of 3 makes made calls on the team and leaves.
func TestFinalizeEarlyTeamDestroy(t *testing.T) {
	for _, m := range modes {
		for _, made := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/after %d", m.name, made), func(t *testing.T) {
				start := time.Now()
				err := runErrCfg(t, m.cfg, 3, func(p *goshmem.PE) {
					x := mustCalloc[int64](p, 4)
					tm, err := goshmem.TeamWorld(p).SplitStrided(0, 1, 3, nil)
					if err != nil {
						panic(err)
					}
					for range made {
						goshmem.SumReduce(tm, x[:1], x[1:2])
					}
					if p.MyPE() == 1 {
						return // Finalize, the team left alive
					}
					tm.Destroy()
					t.Errorf("PE %d finished a Team.Destroy that PE 1 never called", p.MyPE())
				})
				wantTeamFinal(t, err, made, start)
			})
		}
	}
}

// TestFinalizeTeamDestroyCorrect: a PE in Finalize while members of
// other teams, or of its own teams that it destroyed, are still in
// TeamDestroy is no failure. PE 1 destroys the split of all three and
// finalizes; PEs 0 and 2 then destroy a team of their own, late, and a
// team with PE 1 in it that nobody destroys stays alive.
func TestFinalizeTeamDestroyCorrect(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			err := runErrCfg(t, m.cfg, 3, func(p *goshmem.PE) {
				world := goshmem.TeamWorld(p)
				all, err := world.SplitStrided(0, 1, 3, nil)
				if err != nil {
					panic(err)
				}
				pair, err := world.SplitStrided(0, 2, 2, nil) // PEs 0 and 2
				if err != nil {
					panic(err)
				}
				kept, err := world.SplitStrided(0, 1, 2, nil) // PEs 0 and 1, never destroyed
				if err != nil {
					panic(err)
				}
				_ = kept
				all.Destroy()
				if p.MyPE() == 1 {
					return
				}
				time.Sleep(50 * time.Millisecond) // PE 1 is in Finalize by now
				pair.Destroy()
			})
			if err != nil {
				t.Fatalf("job error %v, want none", err)
			}
		})
	}
}

// TestFinalizeEarlyTeamCorrect: a PE that has made every collective
// call of a correct program and entered Finalize is no failure for
// members still waiting, in their last team call or in a wait of their
// own: the check of TestFinalizeEarlyTeamNoHang fails only a member
// that made fewer calls.
func TestFinalizeEarlyTeamCorrect(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			err := runErrCfg(t, m.cfg, 3, func(p *goshmem.PE) {
				x := mustCalloc[int64](p, 8)
				flag := mustCalloc[int64](p, 1)
				tm, err := goshmem.TeamWorld(p).SplitStrided(0, 1, 3, nil)
				if err != nil {
					panic(err)
				}
				for i := range 20 {
					x[1] = int64(i)
					goshmem.SumReduce(tm, x[:1], x[1:2])
					tm.Sync()
				}
				// PE 1 roots the last broadcast, and finalizes as soon as
				// its part is done (at once where PEs map each other);
				// PE 0 first waits for a word of PE 2's, which PE 2
				// stores late: PE 0 sleeps in a wait of its own while
				// PE 1 may be in Finalize.
				switch p.MyPE() {
				case 1:
					x[2] = 7
					goshmem.Broadcast(tm, x[3:4], x[2:3], 1)
					return
				case 2:
					time.Sleep(50 * time.Millisecond)
					goshmem.P(p.Ctx(), &flag[0], 1, 0)
					goshmem.Broadcast(tm, x[3:4], x[2:3], 1)
				case 0:
					goshmem.WaitUntil(p, &flag[0], goshmem.CmpEQ, 1)
					goshmem.Broadcast(tm, x[3:4], x[2:3], 1)
				}
				if x[3] != 7 {
					panic(fmt.Sprintf("PE %d: broadcast %d, want 7", p.MyPE(), x[3]))
				}
			})
			if err != nil {
				t.Fatalf("job error %v, want none", err)
			}
		})
	}
}

// TestNewTaskFailureNamesIt: a PE that waits in NewTask (or
// Task.Destroy) when the job fails is told so in those words, not as a
// SyncAll it never called.
func TestNewTaskFailureNamesIt(t *testing.T) {
	for _, destroy := range []bool{false, true} {
		var msg atomic.Value
		runErr(t, 2, 1<<20, func(p *goshmem.PE) {
			// Both PEs are past start-up first: a panic of PE 1 while PE
			// 0 still started made PE 0 fail there, before its function.
			p.BarrierAll()
			var task *goshmem.Task
			if destroy {
				task = goshmem.NewTask(p, func(owner, lo, hi int) {})
			}
			if p.MyPE() == 1 {
				panic("PE 1 fails on purpose")
			}
			defer func() {
				r := recover()
				msg.Store(fmt.Sprint(r))
				panic(r)
			}()
			if destroy {
				task.Destroy()
			} else {
				goshmem.NewTask(p, func(owner, lo, hi int) {})
			}
		})
		want := "NewTask on PE 0 stopped"
		if destroy {
			want = "Task.Destroy on PE 0 stopped"
		}
		if got, _ := msg.Load().(string); !strings.Contains(got, want) {
			t.Errorf("PE 0's panic %q, want it to say %q", got, want)
		}
	}
}

// TestLargePutsNoticeFailure: a PE that only streams large puts and
// quiets, and never waits, stops when the job fails (it went on until
// the launcher killed it, or forever without one). TestQuietNoticesFailure
// has small puts.
func TestLargePutsNoticeFailure(t *testing.T) {
	var msg atomic.Value
	start := time.Now()
	runErr(t, 2, 8<<20, func(p *goshmem.PE) {
		buf := mustMalloc[byte](p, 4<<20)
		p.BarrierAll()
		if p.MyPE() == 1 {
			panic("PE 1 fails on purpose")
		}
		defer func() {
			if r := recover(); r != nil {
				msg.Store(fmt.Sprint(r))
				panic(r)
			}
		}()
		for time.Since(start) < 20*time.Second {
			goshmem.Put(p.Ctx(), buf, buf, 1)
			p.Ctx().Quiet()
		}
	})
	// (Its Put or its Quiet, whichever comes first after the failure:
	// both look at the job's abort state.)
	if got, _ := msg.Load().(string); !(strings.Contains(got, "Put on PE 0 stopped") || strings.Contains(got, "Quiet on PE 0 stopped")) || !strings.Contains(got, "PE 1") {
		t.Errorf("PE 0's panic %q, want it to stop its Put or Quiet naming PE 1", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the putting PE stopped after %v", d)
	}
}

// TestCollectiveCountMismatch: members of a collective call that pass
// different counts (OpenSHMEM leaves it undefined) fail the call with
// both counts named, inside a shared-memory team, instead of reading
// the wrong number of elements (before: silently wrong results) or
// waiting in dropboxes of different sizes (before: a hang), whichever
// the counts lead to.
func TestCollectiveCountMismatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		routine string
		call    func(w *goshmem.Team, d, x []int64, n int)
		counts  [2]int
	}{
		{"reduce, both dropbox sizes", "SumReduce", func(w *goshmem.Team, d, x []int64, n int) { goshmem.SumReduce(w, d[:n], x[:n]) }, [2]int{4, 2}},
		{"reduce, one dropbox size", "SumReduce", func(w *goshmem.Team, d, x []int64, n int) { goshmem.SumReduce(w, d[:n], x[:n]) }, [2]int{10, 5}},
		{"fcollect", "FCollect", func(w *goshmem.Team, d, x []int64, n int) { goshmem.FCollect(w, d, x[:n]) }, [2]int{2, 1}},
		{"alltoall", "Alltoall", func(w *goshmem.Team, d, x []int64, n int) { goshmem.Alltoall(w, d, x, n) }, [2]int{3, 2}},
		{"broadcast, one ring", "Broadcast", func(w *goshmem.Team, d, x []int64, n int) { goshmem.Broadcast(w, d[:n], x[:n], 0) }, [2]int{2, 4}},
		{"broadcast, both rings", "Broadcast", func(w *goshmem.Team, d, x []int64, n int) { goshmem.Broadcast(w, d[:n], x[:n], 0) }, [2]int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runErr(t, 2, 1<<20, func(p *goshmem.PE) {
				x := mustCalloc[int64](p, 64)
				d := mustCalloc[int64](p, 64)
				w := goshmem.TeamWorld(p)
				for range 3 { // the dropboxes and rings in use before
					goshmem.SumReduce(w, d[:1], x[:1])
					goshmem.Broadcast(w, d[:3], x[:3], 1)
				}
				tc.call(w, d, x, tc.counts[p.MyPE()])
				if tc.routine != "Broadcast" || p.MyPE() != 0 { // (a root does not wait)
					t.Errorf("PE %d: %s with counts %v returned", p.MyPE(), tc.routine, tc.counts)
				}
			})
			pe := panicError(t, err)
			a, b := tc.counts[0], tc.counts[1]
			if !strings.Contains(pe.Error(), fmt.Sprintf("PE 0 passed a count of %d and PE 1 passed %d", a, b)) &&
				!strings.Contains(pe.Error(), fmt.Sprintf("PE 1 passed a count of %d and PE 0 passed %d", b, a)) {
				t.Errorf("%s: %q does not name both counts", tc.name, pe.Error())
			}
			checkContains(t, tc.name, pe.Error(), "goshmem."+tc.routine+": PE", "must pass the same count")
		})
	}
}

// TestAfterFinalize: a PE that communicates after its Finalize (a put,
// a get, an AMO on the default context, a barrier) panics naming the
// routine and that it finalized, instead of writing into heaps that the
// job may have unmapped, or waiting for PEs that are gone.
func TestAfterFinalize(t *testing.T) {
	runCfg(t, node.Config{HeapSize: 1 << 20}, 2, func(p *goshmem.PE) {
		x := mustCalloc[int64](p, 2)
		c := p.Ctx()
		p.Finalize()
		for _, tc := range []struct {
			name string
			fn   func()
		}{
			{"P", func() { goshmem.P(c, &x[0], 1, 1-p.MyPE()) }},
			{"Get", func() { goshmem.Get(c, make([]int64, 1), x[:1], 1-p.MyPE()) }},
			{"AtomicFetchAdd", func() { goshmem.AtomicFetchAdd(c, &x[1], 1, 1-p.MyPE()) }},
			{"BarrierAll", p.BarrierAll},
		} {
			want := fmt.Sprintf("goshmem.%s: PE %d has called Finalize", tc.name, p.MyPE())
			if msg := panicMsg(tc.fn); !strings.HasPrefix(msg, want) {
				t.Errorf("%s after Finalize: panic %q, want %q", tc.name, msg, want)
			}
		}
	})
}

// TestLaterRank: a process of a cluster launcher's job other than rank
// 0 is told from its environment alone (PMI_RANK, else Slurm's
// SLURM_PROCID), and only under a PMI launcher.
func TestLaterRank(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"PMI_RANK": "3"}, false}, // no launcher's PMI
		{map[string]string{"PMI_FD": "5", "PMI_RANK": "0"}, false},
		{map[string]string{"PMI_FD": "5", "PMI_RANK": "2"}, true},
		{map[string]string{"PMI_PORT": "h:1", "PMI_RANK": " 7 "}, true},
		{map[string]string{"PMI_FD": "5", "SLURM_PROCID": "1"}, true},
		{map[string]string{"PMI_FD": "5", "SLURM_PROCID": "0"}, false},
		{map[string]string{"PMI_FD": "5", "PMI_RANK": "x"}, false},
	} {
		if got := goshmem.LaterRank(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("laterRank(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}
