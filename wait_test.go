package goshmem_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// waitCase: ivar starts at init, which does not satisfy (cmp, v); the
// peer stores final, which does.
type waitCase struct {
	cmp            goshmem.Cmp
	init, v, final int64
}

// Signed cases use negative numbers, so an unsigned comparison would
// give the wrong answer.
var signedWaitCases = []waitCase{
	{cmp: goshmem.CmpEQ, init: 0, v: -7, final: -7},
	{cmp: goshmem.CmpNE, init: -3, v: -3, final: 3},
	{cmp: goshmem.CmpGT, init: -10, v: -2, final: -1},
	{cmp: goshmem.CmpGE, init: -10, v: -2, final: -2},
	{cmp: goshmem.CmpLT, init: 5, v: -1, final: -5},
	{cmp: goshmem.CmpLE, init: 5, v: -1, final: -1},
}

// Unsigned cases use the top bit, so a signed comparison would give the
// wrong answer.
var unsignedWaitCases = []waitCase{
	{cmp: goshmem.CmpEQ, init: 0, v: 7, final: 7},
	{cmp: goshmem.CmpNE, init: 3, v: 3, final: 4},
	{cmp: goshmem.CmpGT, init: 5, v: 5, final: -1}, // all ones > 5
	{cmp: goshmem.CmpGE, init: 4, v: -16, final: -16},
	{cmp: goshmem.CmpLT, init: -1, v: 100, final: 99}, // all ones is not < 100
	{cmp: goshmem.CmpLE, init: -2, v: 100, final: 100},
}

// waitSuite: for every case PE 0 checks Test before and after, and waits
// in WaitUntil while PE 1 stores the final value after a delay, with P
// or with set (every other case; nil: P only).
func waitSuite[T goshmem.SyncInteger](t *testing.T, p *goshmem.PE, typ string, cases []waitCase, set func(c *goshmem.Ctx, dst *T, v T, pe int)) {
	c := p.Ctx()
	ivars := mustCalloc[T](p, len(cases))
	if p.MyPE() == 0 {
		for i, tc := range cases {
			ivars[i] = T(tc.init)
			if goshmem.Test(p, &ivars[i], tc.cmp, T(tc.v)) {
				t.Errorf("%s %v: Test(%d %v %d) = true before the store", typ, tc.cmp, T(tc.init), tc.cmp, T(tc.v))
			}
		}
	}
	p.BarrierAll()
	switch p.MyPE() {
	case 0:
		for i, tc := range cases {
			goshmem.WaitUntil(p, &ivars[i], tc.cmp, T(tc.v))
			if got := goshmem.G(c, &ivars[i], 0); got != T(tc.final) {
				t.Errorf("%s WaitUntil(%v %d) returned with the ivar at %d, want the peer's %d", typ, tc.cmp, T(tc.v), got, T(tc.final))
			}
			if !goshmem.Test(p, &ivars[i], tc.cmp, T(tc.v)) {
				t.Errorf("%s %v: Test(%d %v %d) = false after the store", typ, tc.cmp, T(tc.final), tc.cmp, T(tc.v))
			}
		}
	case 1:
		for i, tc := range cases {
			time.Sleep(2 * time.Millisecond)
			if i%2 == 0 || set == nil {
				goshmem.P(c, &ivars[i], T(tc.final), 0)
			} else {
				set(c, &ivars[i], T(tc.final), 0)
			}
		}
	}
	p.BarrierAll()
	goshmem.Free(p, ivars)
}

func TestWaitUntilCmp(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		waitSuite(t, p, "int32", signedWaitCases, goshmem.AtomicSet[int32])
		waitSuite(t, p, "int64", signedWaitCases, goshmem.AtomicSet[int64])
		waitSuite(t, p, "int", signedWaitCases, goshmem.AtomicSet[int])
		waitSuite(t, p, "uint32", unsignedWaitCases, goshmem.AtomicSet[uint32])
		waitSuite(t, p, "uint64", unsignedWaitCases, goshmem.AtomicSet[uint64])
		waitSuite(t, p, "uint", unsignedWaitCases, goshmem.AtomicSet[uint])
		waitSuite(t, p, "uintptr", unsignedWaitCases, goshmem.AtomicSet[uintptr])
		// OpenSHMEM's short and unsigned short (no AMOs: P only).
		waitSuite[int16](t, p, "int16", signedWaitCases, nil)
		waitSuite[uint16](t, p, "uint16", unsignedWaitCases, nil)
	})
}

// TestWait16: the 16-bit waits and tests read each element alone, in
// either half of its 4-byte word, while the neighbour in the other half
// changes: vectors of int16 and uint16 whose even elements PE 1 sets
// one by one (P), its odd ones churning meanwhile; in every mode (CMA
// too, where P is a process_vm_writev of 2 bytes).
func TestWait16(t *testing.T) {
	forModes(t, testHeap, []int{2}, func(t *testing.T, cfg node.Config, n int) {
		runCfg(t, cfg, n, func(p *goshmem.PE) {
			wait16[int16](t, p, -5, 7)
			wait16[uint16](t, p, 0xfffe, 3)
		})
	})
}

func wait16[T int16 | uint16](t *testing.T, p *goshmem.PE, mark, other T) {
	const n = 8
	c := p.Ctx()
	x := mustCalloc[T](p, n)
	done := mustCalloc[int64](p, 1)
	p.BarrierAll()
	if p.MyPE() == 1 {
		for i := 0; i < n; i += 2 {
			for k := range 200 { // the neighbours change; the even ones stay 0
				goshmem.P(c, &x[i+1], other+T(k), 0)
			}
			goshmem.P(c, &x[i], mark, 0)
			goshmem.WaitUntil(p, &done[0], goshmem.CmpGE, int64(i/2+1))
		}
	}
	if p.MyPE() == 0 {
		even := make([]int32, n) // status: the odd elements excluded
		for i := 1; i < n; i += 2 {
			even[i] = 1
		}
		for i := 0; i < n; i += 2 {
			if got := goshmem.WaitUntilAny(p, x, even, goshmem.CmpEQ, mark); got != i {
				t.Errorf("%T: WaitUntilAny on the even elements = %d, want %d", mark, got, i)
			}
			if !goshmem.Test(p, &x[i], goshmem.CmpEQ, mark) || goshmem.Test(p, &x[i], goshmem.CmpNE, mark) {
				t.Errorf("%T: Test of element %d after it was set disagrees", mark, i)
			}
			if i+2 < n && goshmem.Test(p, &x[i+2], goshmem.CmpEQ, mark) {
				t.Errorf("%T: element %d compares equal before it was set", mark, i+2)
			}
			even[i] = 1
			goshmem.P(c, &done[0], int64(i/2+1), 1)
		}
		idx := goshmem.TestSome(p, x, nil, goshmem.CmpEQ, mark, nil)
		if !slices.Equal(idx, []int{0, 2, 4, 6}) {
			t.Errorf("%T: TestSome = %v, want [0 2 4 6]", mark, idx)
		}
		if !goshmem.TestAll(p, x, []int32{0, 1, 0, 1, 0, 1, 0, 1}, goshmem.CmpEQ, mark) {
			t.Errorf("%T: TestAll of the even elements = false", mark)
		}
		if goshmem.TestAny(p, x, []int32{1, 0, 1, 0, 1, 0, 1, 0}, goshmem.CmpEQ, mark) != -1 {
			t.Errorf("%T: TestAny of the odd elements found one equal to %d", mark, mark)
		}
	}
	p.BarrierAll()
	goshmem.Free(p, done)
	goshmem.Free(p, x)
}

// TestTestExact checks Test for every comparison on both sides of the
// boundary, without waiting.
func TestTestExact(t *testing.T) {
	type tc struct {
		a    int64
		cmp  goshmem.Cmp
		b    int64
		want bool
	}
	var cases []tc
	cmpRef := map[goshmem.Cmp]func(a, b int64) bool{
		goshmem.CmpEQ: func(a, b int64) bool { return a == b },
		goshmem.CmpNE: func(a, b int64) bool { return a != b },
		goshmem.CmpGT: func(a, b int64) bool { return a > b },
		goshmem.CmpGE: func(a, b int64) bool { return a >= b },
		goshmem.CmpLT: func(a, b int64) bool { return a < b },
		goshmem.CmpLE: func(a, b int64) bool { return a <= b },
	}
	for cmp, f := range cmpRef {
		for _, a := range []int64{-2, -1, 0, 1, 2} {
			for _, b := range []int64{-1, 0, 1} {
				cases = append(cases, tc{a, cmp, b, f(a, b)})
			}
		}
	}
	run(t, 1, testHeap, func(p *goshmem.PE) {
		x := mustMalloc[int64](p, 1)
		y := mustMalloc[int32](p, 1)
		for _, c := range cases {
			x[0], y[0] = c.a, int32(c.a)
			if got := goshmem.Test(p, &x[0], c.cmp, c.b); got != c.want {
				t.Errorf("int64 Test(%d %v %d) = %v, want %v", c.a, c.cmp, c.b, got, c.want)
			}
			if got := goshmem.Test(p, &y[0], c.cmp, int32(c.b)); got != c.want {
				t.Errorf("int32 Test(%d %v %d) = %v, want %v", c.a, c.cmp, c.b, got, c.want)
			}
		}
	})
}

// oneOf is the expected result of a TestAny that may return any of
// several indices.
type oneOf []int

// TestVectorTests covers TestAll, TestAny, TestSome and their Vector
// forms, with and without status masks, on fixed contents.
func TestVectorTests(t *testing.T) {
	run(t, 1, testHeap, func(p *goshmem.PE) {
		iv := mustMalloc[int64](p, 6)
		copy(iv, []int64{5, 0, 5, -1, 5, 7})
		none := []int32{0, 0, 0, 0, 0, 0}
		excl := []int32{0, 1, 0, 1, 0, 1} // only 0, 2, 4 (the 5s) count
		all := []int32{1, 1, 1, 1, 1, 1}
		only3 := []int32{1, 1, 1, 0, 1, 1}
		eq := goshmem.CmpEQ
		vals := []int64{5, 1, 5, -1, 0, 7} // matches at 0, 2, 3, 5
		prefix := []int{99}
		type tc struct {
			name string
			got  any
			want any
		}
		cases := []tc{
			{"TestAll nil status", goshmem.TestAll(p, iv, nil, eq, 5), false},
			{"TestAll zero status", goshmem.TestAll(p, iv, none, eq, 5), false},
			{"TestAll masked", goshmem.TestAll(p, iv, excl, eq, 5), true},
			{"TestAll all excluded", goshmem.TestAll(p, iv, all, eq, 12345), true},
			{"TestAll GE", goshmem.TestAll(p, iv, nil, goshmem.CmpGE, -1), true},
			{"TestAll GT", goshmem.TestAll(p, iv, nil, goshmem.CmpGT, -1), false},
			{"TestAll empty", goshmem.TestAll(p, iv[:0], nil, eq, 1), true},
			{"TestAny nil status", goshmem.TestAny(p, iv, nil, eq, 5), oneOf{0, 2, 4}},
			{"TestAny masked", goshmem.TestAny(p, iv, []int32{1, 0, 1, 0, 0, 0}, eq, 5), oneOf{4}},
			{"TestAny only 3", goshmem.TestAny(p, iv, only3, goshmem.CmpLT, 0), oneOf{3}},
			{"TestAny none", goshmem.TestAny(p, iv, nil, eq, 6), -1},
			{"TestAny excluded match", goshmem.TestAny(p, iv, excl, eq, 7), -1},
			{"TestAny all excluded", goshmem.TestAny(p, iv, all, eq, 5), -1},
			{"TestSome nil status", goshmem.TestSome(p, iv, nil, eq, 5, nil), []int{0, 2, 4}},
			{"TestSome appends", goshmem.TestSome(p, iv, excl, goshmem.CmpNE, 5, slices.Clone(prefix)), []int{99}},
			{"TestSome NE", goshmem.TestSome(p, iv, nil, goshmem.CmpNE, 5, slices.Clone(prefix)), []int{99, 1, 3, 5}},
			{"TestSome all excluded", goshmem.TestSome(p, iv, all, eq, 5, slices.Clone(prefix)), []int{99}},
			{"TestSome none", goshmem.TestSome(p, iv, nil, eq, 42, nil), []int(nil)},
			{"TestAllVector", goshmem.TestAllVector(p, iv, nil, eq, vals), false},
			{"TestAllVector masked", goshmem.TestAllVector(p, iv, []int32{0, 1, 0, 0, 1, 0}, eq, vals), true},
			{"TestAllVector LE", goshmem.TestAllVector(p, iv, nil, goshmem.CmpLE, []int64{5, 0, 6, 0, 5, 7}), true},
			{"TestAnyVector", goshmem.TestAnyVector(p, iv, nil, eq, vals), oneOf{0, 2, 3, 5}},
			{"TestAnyVector masked", goshmem.TestAnyVector(p, iv, []int32{1, 0, 1, 0, 0, 0}, eq, vals), oneOf{3, 5}},
			{"TestAnyVector all excluded", goshmem.TestAnyVector(p, iv, all, eq, vals), -1},
			{"TestAnyVector none", goshmem.TestAnyVector(p, iv, nil, goshmem.CmpGT, []int64{5, 0, 5, -1, 5, 7}), -1},
			{"TestSomeVector", goshmem.TestSomeVector(p, iv, nil, eq, vals, nil), []int{0, 2, 3, 5}},
			{"TestSomeVector masked", goshmem.TestSomeVector(p, iv, excl, eq, vals, slices.Clone(prefix)), []int{99, 0, 2}},
			{"TestSomeVector all excluded", goshmem.TestSomeVector(p, iv, all, eq, vals, slices.Clone(prefix)), []int{99}},
		}
		for _, c := range cases {
			if w, ok := c.want.(oneOf); ok {
				if !slices.Contains(w, c.got.(int)) {
					t.Errorf("%s = %v, want one of %v", c.name, c.got, w)
				}
				continue
			}
			if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		// 32-bit ivars.
		iv32 := mustMalloc[uint32](p, 4)
		copy(iv32, []uint32{1, 1 << 31, 3, 1 << 31})
		if got := goshmem.TestSome(p, iv32, nil, goshmem.CmpGT, 3, nil); !slices.Equal(got, []int{1, 3}) {
			t.Errorf("uint32 TestSome(GT 3) = %v, want [1 3]", got)
		}
		if got := goshmem.TestAny(p, iv32, []int32{0, 1, 0, 0}, goshmem.CmpGE, 3); got != 2 && got != 3 {
			t.Errorf("uint32 TestAny(GE 3, 1 excluded) = %d, want 2 or 3", got)
		}
	})
}

// TestVectorWaits: PE 1 sets the elements after delays while PE 0 waits
// with WaitUntilAll/Any/Some (and Vector forms); excluded elements are
// never set and must be ignored.
func TestVectorWaits(t *testing.T) {
	const m = 6
	type step struct {
		name   string
		status []int32
		excl   int64         // stored at once into the excluded elements: satisfies the wait
		sets   map[int]int64 // index -> value PE 1 stores after a delay
		wait   func(p *goshmem.PE, iv []int64, status []int32) any
		check  func(iv []int64, got any) string
	}
	excl := []int32{0, 1, 0, 1, 0, 0} // 1 and 3 never become ready
	steps := []step{
		{"WaitUntilAll", excl, 1, map[int]int64{0: 1, 2: 1, 4: 1, 5: 1},
			func(p *goshmem.PE, iv []int64, st []int32) any {
				goshmem.WaitUntilAll(p, iv, st, goshmem.CmpEQ, 1)
				return nil
			},
			func(iv []int64, _ any) string {
				if !slices.Equal(iv, []int64{1, 0, 1, 0, 1, 1}) {
					return fmt.Sprintf("returned with ivars %v, want [1 0 1 0 1 1]", iv)
				}
				return ""
			}},
		{"WaitUntilAllVector", excl, 99, map[int]int64{0: 10, 2: 12, 4: 14, 5: 15},
			func(p *goshmem.PE, iv []int64, st []int32) any {
				goshmem.WaitUntilAllVector(p, iv, st, goshmem.CmpGE, []int64{10, 99, 12, 99, 14, 15})
				return nil
			},
			func(iv []int64, _ any) string {
				if !slices.Equal(iv, []int64{10, 0, 12, 0, 14, 15}) {
					return fmt.Sprintf("returned with ivars %v", iv)
				}
				return ""
			}},
		{"WaitUntilAny", excl, 1234, map[int]int64{4: 3},
			func(p *goshmem.PE, iv []int64, st []int32) any {
				return goshmem.WaitUntilAny(p, iv, st, goshmem.CmpNE, 0)
			},
			func(iv []int64, got any) string {
				if got != 4 || iv[4] != 3 {
					return fmt.Sprintf("returned %v with ivars %v, want 4", got, iv)
				}
				return ""
			}},
		{"WaitUntilAnyVector", nil, 0, map[int]int64{2: 7},
			func(p *goshmem.PE, iv []int64, st []int32) any {
				return goshmem.WaitUntilAnyVector(p, iv, st, goshmem.CmpEQ, []int64{1, 1, 7, 1, 1, 1})
			},
			func(iv []int64, got any) string {
				if got != 2 || iv[2] != 7 {
					return fmt.Sprintf("returned %v with ivars %v, want 2", got, iv)
				}
				return ""
			}},
		{"WaitUntilSome", excl, -1234, map[int]int64{5: -1},
			func(p *goshmem.PE, iv []int64, st []int32) any {
				return goshmem.WaitUntilSome(p, iv, st, goshmem.CmpLT, 0, []int{-9})
			},
			func(iv []int64, got any) string {
				if !slices.Equal(got.([]int), []int{-9, 5}) {
					return fmt.Sprintf("returned %v, want [-9 5]", got)
				}
				return ""
			}},
		{"WaitUntilSomeVector", nil, 0, map[int]int64{3: 4},
			func(p *goshmem.PE, iv []int64, st []int32) any {
				return goshmem.WaitUntilSomeVector(p, iv, st, goshmem.CmpGT, []int64{0, 0, 0, 3, 0, 0}, nil)
			},
			func(iv []int64, got any) string {
				if !slices.Equal(got.([]int), []int{3}) {
					return fmt.Sprintf("returned %v, want [3]", got)
				}
				return ""
			}},
	}
	run(t, 2, testHeap, func(p *goshmem.PE) {
		c := p.Ctx()
		iv := mustCalloc[int64](p, m)
		for _, s := range steps {
			p.BarrierAll()
			if p.MyPE() == 1 {
				// Excluded elements are set at once to values that
				// would satisfy the wait: they must be ignored.
				for i, st := range s.status {
					if st != 0 {
						goshmem.P(c, &iv[i], s.excl, 0)
					}
				}
				for i := 0; i < m; i++ {
					if v, ok := s.sets[i]; ok {
						time.Sleep(time.Millisecond)
						goshmem.AtomicSet(c, &iv[i], v, 0)
					}
				}
			} else {
				got := s.wait(p, iv, s.status)
				// Hide the excluded elements for the check.
				view := slices.Clone(iv)
				for i, st := range s.status {
					if st != 0 && view[i] == s.excl {
						view[i] = 0
					}
				}
				if msg := s.check(view, got); msg != "" {
					t.Errorf("%s: %s", s.name, msg)
				}
			}
			p.BarrierAll()
			clear(iv)
		}
	})
}

// TestVectorWaitsAllExcluded: with every element excluded the waits
// return at once: WaitUntilAny -1, WaitUntilSome idx unchanged.
func TestVectorWaitsAllExcluded(t *testing.T) {
	run(t, 1, testHeap, func(p *goshmem.PE) {
		iv := mustCalloc[int32](p, 4)
		all := []int32{1, 1, 1, 1}
		done := make(chan []any, 1)
		go func() {
			idx := []int{7, 8}
			done <- []any{
				goshmem.WaitUntilAny(p, iv, all, goshmem.CmpEQ, 1),
				goshmem.WaitUntilAnyVector(p, iv, all, goshmem.CmpEQ, []int32{1, 1, 1, 1}),
				goshmem.WaitUntilSome(p, iv, all, goshmem.CmpEQ, 1, idx),
				goshmem.WaitUntilSomeVector(p, iv, all, goshmem.CmpEQ, []int32{1, 1, 1, 1}, nil),
			}
			goshmem.WaitUntilAll(p, iv, all, goshmem.CmpEQ, 1)
			goshmem.WaitUntilAllVector(p, iv, all, goshmem.CmpEQ, []int32{1, 1, 1, 1})
			goshmem.WaitUntilAll(p, iv[:0], nil, goshmem.CmpEQ, 1)
		}()
		select {
		case got := <-done:
			want := []any{-1, -1, []int{7, 8}, []int(nil)}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("all excluded: got %v, want %v", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("waits with every element excluded did not return")
		}
	})
}

// TestPutSignal: a PE that sees the signal sees the whole payload, for
// SignalSet and SignalAdd, blocking and NBI, over many rounds.
func TestPutSignal(t *testing.T) {
	const words = 1 << 15
	const rounds = 20
	for _, tc := range []struct {
		name string
		op   goshmem.SignalOp
		nbi  bool
	}{
		{"Set", goshmem.SignalSet, false},
		{"Add", goshmem.SignalAdd, false},
		{"SetNBI", goshmem.SignalSet, true},
		{"AddNBI", goshmem.SignalAdd, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, 2, 2<<20, func(p *goshmem.PE) {
				c := p.Ctx()
				buf := mustCalloc[uint64](p, words)
				sig := mustCalloc[uint64](p, 2) // [0]: data signal on PE 0, [1]: ack on PE 1
				src := make([]uint64, words)
				for r := uint64(1); r <= rounds; r++ {
					// Signal value seen by PE 0 after round r.
					want := r * 1000
					if tc.op == goshmem.SignalAdd {
						want = r * (r + 1) / 2
					}
					switch p.MyPE() {
					case 1:
						for i := range src {
							src[i] = r<<32 | uint64(i)
						}
						signal := r * 1000
						if tc.op == goshmem.SignalAdd {
							signal = r
						}
						if tc.nbi {
							goshmem.PutSignalNBI(c, buf, src, &sig[0], signal, tc.op, 0)
							c.Quiet()
						} else {
							goshmem.PutSignal(c, buf, src, &sig[0], signal, tc.op, 0)
						}
						goshmem.WaitUntil(p, &sig[1], goshmem.CmpEQ, r) // PE 0 has checked
					case 0:
						if got := goshmem.SignalWaitUntil(p, &sig[0], goshmem.CmpEQ, want); got != want {
							t.Errorf("round %d: SignalWaitUntil returned %d, want %d", r, got, want)
						}
						if got := goshmem.SignalFetch(p, &sig[0]); got != want {
							t.Errorf("round %d: SignalFetch = %d, want %d", r, got, want)
						}
						for i, v := range buf {
							if v != r<<32|uint64(i) {
								t.Errorf("round %d: payload word %d = %#x when the signal arrived, want %#x", r, i, v, r<<32|uint64(i))
								break
							}
						}
						goshmem.AtomicSet(c, &sig[1], r, 1)
					}
				}
			})
		})
	}
}

// TestPutSignalAddMany: several PEs PutSignal with SignalAdd into
// disjoint parts of PE 0's buffer; when the sum arrives every part is
// there.
func TestPutSignalAddMany(t *testing.T) {
	const part = 4096
	for _, n := range []int{3, 5} {
		run(t, n, testHeap, func(p *goshmem.PE) {
			c := p.Ctx()
			me := p.MyPE()
			buf := mustCalloc[int32](p, n*part)
			sig := mustCalloc[uint64](p, 1)
			p.BarrierAll()
			if me != 0 {
				src := make([]int32, part)
				for i := range src {
					src[i] = int32(me*1_000_000 + i)
				}
				goshmem.PutSignal(c, buf[me*part:(me+1)*part], src, &sig[0], 1<<(8*me), goshmem.SignalAdd, 0)
			} else {
				var want uint64
				for q := 1; q < n; q++ {
					want += 1 << (8 * q)
				}
				got := goshmem.SignalWaitUntil(p, &sig[0], goshmem.CmpEQ, want)
				if got != want {
					t.Errorf("n=%d: signal %#x, want %#x", n, got, want)
				}
				for q := 1; q < n; q++ {
					for i := 0; i < part; i++ {
						if v := buf[q*part+i]; v != int32(q*1_000_000+i) {
							t.Errorf("n=%d: part of PE %d, element %d = %d, want %d", n, q, i, v, q*1_000_000+i)
							break
						}
					}
				}
			}
		})
	}
}

// TestSignalWaitUntilCmp checks the value SignalWaitUntil returns for
// a few comparisons with the signal already satisfying them.
func TestSignalWaitUntilCmp(t *testing.T) {
	run(t, 1, testHeap, func(p *goshmem.PE) {
		sig := mustCalloc[uint64](p, 1)
		goshmem.PutSignal(p.Ctx(), []byte(nil), nil, &sig[0], 40, goshmem.SignalSet, 0)
		goshmem.PutSignal(p.Ctx(), []byte(nil), nil, &sig[0], 2, goshmem.SignalAdd, 0)
		for _, tc := range []struct {
			cmp goshmem.Cmp
			v   uint64
		}{{goshmem.CmpEQ, 42}, {goshmem.CmpNE, 0}, {goshmem.CmpGT, 41}, {goshmem.CmpGE, 42}, {goshmem.CmpLT, 43}, {goshmem.CmpLE, 42}} {
			if got := goshmem.SignalWaitUntil(p, &sig[0], tc.cmp, tc.v); got != 42 {
				t.Errorf("SignalWaitUntil(%v %d) = %d, want 42", tc.cmp, tc.v, got)
			}
		}
		if got := goshmem.SignalFetch(p, &sig[0]); got != 42 {
			t.Errorf("SignalFetch = %d, want 42", got)
		}
	})
}

// TestWaitWakesOnStores: a PE asleep in WaitUntil (the peer delays long
// enough for it to reach the futex) wakes for a P, an AMO, and a plain
// store through Ptr, which rings no doorbell and is seen at the next
// timed wake-up. Times are taken from the store, not from the start of
// the wait: on a loaded machine the waiter may start late (it measured
// 35 ms of a 50 ms delay once in CI, with other jobs on both CPUs).
func TestWaitWakesOnStores(t *testing.T) {
	for _, how := range []string{"P", "AtomicAdd", "Ptr"} {
		t.Run(how, func(t *testing.T) {
			var stored, woke time.Time
			run(t, 2, testHeap, func(p *goshmem.PE) {
				x := mustCalloc[int64](p, 1)
				if p.MyPE() == 0 {
					goshmem.WaitUntil(p, &x[0], goshmem.CmpEQ, 5)
					woke = time.Now()
					return
				}
				time.Sleep(50 * time.Millisecond)
				stored = time.Now()
				switch how {
				case "P":
					goshmem.P(p.Ctx(), &x[0], 5, 0)
				case "AtomicAdd":
					goshmem.AtomicAdd(p.Ctx(), &x[0], 5, 0)
				default:
					*goshmem.PtrTo(p, &x[0], 0) = 5
				}
			})
			if late := woke.Sub(stored); late < 0 || late > 2*time.Second {
				t.Errorf("WaitUntil returned %v after the store, want after it and within 2 s", late)
			}
		})
	}
}

// benchOne runs body on a one-PE in-process job with a zeroed symmetric
// array of n elements; the timer covers only body.
func benchOne[T goshmem.Integer](b *testing.B, n int, body func(b *testing.B, p *goshmem.PE, x []T)) {
	b.Helper()
	err := goshmem.RunLocalConfig(node.Config{HeapSize: testHeap}, 1, func(p *goshmem.PE) {
		x, err := goshmem.Calloc[T](p, n)
		if err != nil {
			panic(err)
		}
		b.ResetTimer()
		body(b, p, x)
		b.StopTimer()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// The ready paths of the waits and tests: the condition already holds,
// which is what a wait costs when the data has arrived.

func BenchmarkWaitUntilReady(b *testing.B) {
	benchOne(b, 1, func(b *testing.B, p *goshmem.PE, x []int64) {
		x[0] = 1
		for b.Loop() {
			goshmem.WaitUntil(p, &x[0], goshmem.CmpEQ, 1)
		}
	})
}

func BenchmarkSignalWaitUntilReady(b *testing.B) {
	benchOne(b, 1, func(b *testing.B, p *goshmem.PE, x []uint64) {
		x[0] = 1
		var s uint64
		for b.Loop() {
			s += goshmem.SignalWaitUntil(p, &x[0], goshmem.CmpEQ, 1)
		}
		if s == 0 {
			b.Fatal("no signal")
		}
	})
}

func BenchmarkTestAny(b *testing.B) {
	benchAnyReady(b, func(p *goshmem.PE, x []int64) int { return goshmem.TestAny(p, x, nil, goshmem.CmpEQ, 1) })
}

func BenchmarkWaitUntilAnyReady(b *testing.B) {
	benchAnyReady(b, func(p *goshmem.PE, x []int64) int { return goshmem.WaitUntilAny(p, x, nil, goshmem.CmpEQ, 1) })
}

// benchAnyReady times an "any" routine on 8 elements that all satisfy it.
func benchAnyReady(b *testing.B, call func(p *goshmem.PE, x []int64) int) {
	benchOne(b, 8, func(b *testing.B, p *goshmem.PE, x []int64) {
		for i := range x {
			x[i] = 1
		}
		s := 0
		for b.Loop() {
			s += call(p, x)
		}
		_ = s
	})
}

func BenchmarkWaitUntilSomeReady(b *testing.B) {
	benchOne(b, 8, func(b *testing.B, p *goshmem.PE, x []int64) {
		x[3] = 1
		idx := make([]int, 0, 8)
		for b.Loop() {
			idx = goshmem.WaitUntilSome(p, x, nil, goshmem.CmpEQ, 1, idx[:0])
		}
	})
}

// BenchmarkPutSignal is PutSignal of one 8-byte element to the peer.
func BenchmarkPutSignal(b *testing.B) {
	benchPair(b, "xpmem", 2, func(b *testing.B, c *goshmem.Ctx, x []uint64) {
		src := []uint64{7}
		for b.Loop() {
			goshmem.PutSignal(c, x[:1], src, &x[1], 1, goshmem.SignalAdd, 1)
		}
	})
}

// TestSignalWaitUntilReturnsSatisfyingValue: while PE 1 keeps
// put-signalling SignalSet 1 and 2, every SignalWaitUntil(CmpEQ, 1) of
// PE 0 must return 1, the value that satisfied it (shmem_signal_wait_until
// returns "the contents of the signal data object, sig_addr, at the
// calling PE that satisfies the wait condition"), never a later 2.
func TestSignalWaitUntilReturnsSatisfyingValue(t *testing.T) {
	const budget = 500 * time.Millisecond
	const maxCalls = 50_000_000
	run(t, 2, testHeap, func(p *goshmem.PE) {
		c := p.Ctx()
		sig := mustCalloc[uint64](p, 1)
		stop := mustCalloc[int64](p, 1)
		p.BarrierAll()
		if p.MyPE() == 1 {
			for !goshmem.Test(p, &stop[0], goshmem.CmpNE, 0) {
				goshmem.PutSignal(c, []byte(nil), nil, &sig[0], 1, goshmem.SignalSet, 0)
				goshmem.PutSignal(c, []byte(nil), nil, &sig[0], 2, goshmem.SignalSet, 0)
			}
		} else {
			calls, bad := 0, 0
			var first uint64
			for start := time.Now(); calls < maxCalls && time.Since(start) < budget; {
				for range 1000 {
					calls++
					if got := goshmem.SignalWaitUntil(p, &sig[0], goshmem.CmpEQ, 1); got != 1 {
						if bad == 0 {
							first = got
						}
						bad++
					}
				}
			}
			goshmem.AtomicSet(c, &stop[0], 1, 1)
			if bad > 0 {
				t.Errorf("SignalWaitUntil(CmpEQ, 1) returned a value other than 1 in %d of %d calls (first: %d)", bad, calls, first)
			}
			t.Logf("%d calls", calls)
		}
		p.BarrierAll()
	})
}

// TestWaitArgumentNames: a wait or signal routine given a variable
// outside the symmetric heap panics naming the routine and the argument
// by its OpenSHMEM name (ivar, ivars, sig).
func TestWaitArgumentNames(t *testing.T) {
	var goVar uint64
	goSlice := make([]int64, 4)
	sig := &goVar
	for _, tc := range []struct {
		name string
		fn   func(p *goshmem.PE)
		want string
	}{
		{"WaitUntil", func(p *goshmem.PE) { goshmem.WaitUntil(p, &goSlice[0], goshmem.CmpEQ, 0) }, "goshmem.WaitUntil: ivar ["},
		{"Test", func(p *goshmem.PE) { goshmem.Test(p, &goSlice[0], goshmem.CmpEQ, 0) }, "goshmem.Test: ivar ["},
		{"WaitUntilAll", func(p *goshmem.PE) { goshmem.WaitUntilAll(p, goSlice, nil, goshmem.CmpEQ, 0) }, "goshmem.WaitUntilAll: ivars ["},
		{"TestAnyVector", func(p *goshmem.PE) { goshmem.TestAnyVector(p, goSlice, nil, goshmem.CmpEQ, goSlice) }, "goshmem.TestAnyVector: ivars ["},
		{"SignalWaitUntil", func(p *goshmem.PE) { goshmem.SignalWaitUntil(p, sig, goshmem.CmpEQ, 0) }, "goshmem.SignalWaitUntil: sig ["},
		{"SignalFetch", func(p *goshmem.PE) { goshmem.SignalFetch(p, sig) }, "goshmem.SignalFetch: sig ["},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, 1, testHeap, func(p *goshmem.PE) {
				v := panicOf(func() { tc.fn(p) })
				msg, _ := v.(string)
				if !strings.HasPrefix(msg, tc.want) || !strings.Contains(msg, "is not inside the symmetric heap") {
					t.Errorf("panic %v, want a message starting %q", v, tc.want)
				}
			})
		})
	}
}

// TestWaitUntilSomeWhileChanging: PE 1 keeps raising and lowering the
// last of many ivars; reading all the ivars takes longer than the value
// stays up, so a WaitUntilSome that tests the entries again after the
// condition held often finds none. Every WaitUntilSome and
// WaitUntilSomeVector of PE 0 must return the index that satisfied the
// condition during the call (shmem_wait_until_some returns at least one
// index, each of which satisfied the wait condition). The race needs PE 0
// and PE 1 to run at the same time, so the test runs for a while.
func TestWaitUntilSomeWhileChanging(t *testing.T) {
	const n = 1 << 12
	const budget = 500 * time.Millisecond
	run(t, 2, testHeap, func(p *goshmem.PE) {
		c := p.Ctx()
		iv := mustCalloc[int64](p, n)
		stop := mustCalloc[int64](p, 1)
		p.BarrierAll()
		if p.MyPE() == 1 {
			for !goshmem.Test(p, &stop[0], goshmem.CmpNE, 0) {
				goshmem.AtomicSet(c, &iv[n-1], 1, 0)
				goshmem.AtomicSet(c, &iv[n-1], 0, 0)
			}
		} else {
			values := make([]int64, n)
			for i := range values {
				values[i] = 1
			}
			status := make([]int32, n)
			for i := 0; i < n/2; i++ {
				status[i] = 1 // the first half excluded
			}
			idx := make([]int, 0, 4)
			calls := 0
			var bad []string
			for start := time.Now(); time.Since(start) < budget; calls++ {
				var form string
				switch calls % 3 {
				case 0:
					form, idx = "WaitUntilSome", goshmem.WaitUntilSome(p, iv, nil, goshmem.CmpEQ, 1, idx[:0])
				case 1:
					form, idx = "WaitUntilSomeVector", goshmem.WaitUntilSomeVector(p, iv, nil, goshmem.CmpEQ, values, idx[:0])
				case 2:
					form, idx = "WaitUntilSome with status", goshmem.WaitUntilSome(p, iv, status, goshmem.CmpEQ, 1, idx[:0])
				}
				if !slices.Equal(idx, []int{n - 1}) {
					bad = append(bad, fmt.Sprintf("%s returned %v", form, idx))
				}
			}
			goshmem.AtomicSet(c, &stop[0], 1, 1)
			if len(bad) > 0 {
				t.Errorf("%d of %d calls did not return the index %d that satisfied the wait, e.g. %s", len(bad), calls, n-1, bad[0])
			}
			t.Logf("%d calls", calls)
		}
		p.BarrierAll()
	})
}

// TestAnyNoStarvation: on [1 1 1 1] with CmpEQ 1, a series of TestAny,
// TestAnyVector, WaitUntilAny or WaitUntilAnyVector calls must return
// every included index, not always the lowest (OpenSHMEM 1.5: a series
// of calls must eventually return every satisfying index), also when the
// calls are interleaved with others of the same PE and when several
// goroutines of the PE call at once.
func TestAnyNoStarvation(t *testing.T) {
	const calls = 200
	forms := []struct {
		name string
		fn   func(p *goshmem.PE, iv []int64, status []int32) int
	}{
		{"TestAny", func(p *goshmem.PE, iv []int64, st []int32) int { return goshmem.TestAny(p, iv, st, goshmem.CmpEQ, 1) }},
		{"TestAnyVector", func(p *goshmem.PE, iv []int64, st []int32) int {
			return goshmem.TestAnyVector(p, iv, st, goshmem.CmpEQ, []int64{1, 1, 1, 1})
		}},
		{"WaitUntilAny", func(p *goshmem.PE, iv []int64, st []int32) int {
			return goshmem.WaitUntilAny(p, iv, st, goshmem.CmpEQ, 1)
		}},
		{"WaitUntilAnyVector", func(p *goshmem.PE, iv []int64, st []int32) int {
			return goshmem.WaitUntilAnyVector(p, iv, st, goshmem.CmpEQ, []int64{1, 1, 1, 1})
		}},
	}
	masks := []struct {
		status []int32
		want   []int // the included indices
	}{
		{nil, []int{0, 1, 2, 3}},
		{[]int32{0, 1, 0, 0}, []int{0, 2, 3}},
		{[]int32{1, 0, 0, 1}, []int{1, 2}},
		{[]int32{1, 1, 1, 0}, []int{3}},
	}
	// returned calls f calls times and returns the indices it returned,
	// sorted, or an error for an index outside want.
	returned := func(f func() int, want []int) ([]int, error) {
		seen := map[int]bool{}
		for range calls {
			i := f()
			if !slices.Contains(want, i) {
				return nil, fmt.Errorf("returned %d, not one of %v", i, want)
			}
			seen[i] = true
		}
		var got []int
		for i := range seen {
			got = append(got, i)
		}
		slices.Sort(got)
		return got, nil
	}
	run(t, 1, testHeap, func(p *goshmem.PE) {
		iv := mustCalloc[int64](p, 4)
		other := mustCalloc[int64](p, 3)
		for i := range iv {
			iv[i] = 1
		}
		other[1] = 1
		for _, f := range forms {
			for _, m := range masks {
				name := fmt.Sprintf("%s status %v", f.name, m.status)
				got, err := returned(func() int { return f.fn(p, iv, m.status) }, m.want)
				if err != nil || !slices.Equal(got, m.want) {
					t.Errorf("%s: %d calls returned %v (%v), want every one of %v", name, calls, got, err, m.want)
				}
				// Interleaved with a call on another array of the PE.
				got, err = returned(func() int {
					if j := goshmem.TestAny(p, other, nil, goshmem.CmpEQ, 1); j != 1 {
						t.Errorf("TestAny on [0 1 0] = %d, want 1", j)
					}
					return f.fn(p, iv, m.status)
				}, m.want)
				if err != nil || !slices.Equal(got, m.want) {
					t.Errorf("%s, interleaved: %d calls returned %v (%v), want every one of %v", name, calls, got, err, m.want)
				}
			}
		}
		// Several goroutines of the PE at once (run it with -race).
		var wg sync.WaitGroup
		for g := range 3 {
			f := forms[g%len(forms)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := returned(func() int { return f.fn(p, iv, nil) }, masks[0].want)
				if err != nil || !slices.Equal(got, masks[0].want) {
					t.Errorf("goroutine %d, %s: %d calls returned %v (%v), want every index", g, f.name, calls, got, err)
				}
			}()
		}
		wg.Wait()
	})
}

// TestPutSignalBadSigNoEffect: a PutSignal or PutSignalNBI whose signal
// word is wrong (outside the heap, misaligned, or freed under
// SHMEM_DEBUG), or whose operation is unknown, panics naming sig (or the
// operation) and leaves the destination on the target PE untouched: a
// call that fails must fail before it changes any memory.
func TestPutSignalBadSigNoEffect(t *testing.T) {
	var goVar uint64
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			runCfg(t, m.cfg, 2, func(p *goshmem.PE) {
				c := p.Ctx()
				buf := mustCalloc[int64](p, 4)
				words := mustCalloc[uint64](p, 2)
				freed := mustCalloc[uint64](p, 1)
				goshmem.Free(p, freed)
				p.BarrierAll()
				if p.MyPE() == 0 {
					type bad struct {
						name string
						sig  *uint64
						op   goshmem.SignalOp
						want string // after "goshmem.<routine>: "
					}
					cases := []bad{
						{"Go variable", &goVar, goshmem.SignalSet, "sig ["},
						{"misaligned", (*uint64)(unsafe.Add(unsafe.Pointer(&words[0]), 4)), goshmem.SignalAdd, "sig 0x"},
						{"unknown op", &words[0], goshmem.SignalOp(9), "unknown signal operation 9"},
					}
					if m.cfg.Debug {
						cases = append(cases, bad{"freed", &freed[0], goshmem.SignalSet, "sig ["})
					}
					for _, b := range cases {
						for _, routine := range []string{"PutSignal", "PutSignalNBI"} {
							v := panicOf(func() {
								src := []int64{1, 2, 3, 4}
								if routine == "PutSignal" {
									goshmem.PutSignal(c, buf, src, b.sig, 5, b.op, 1)
								} else {
									goshmem.PutSignalNBI(c, buf, src, b.sig, 5, b.op, 1)
								}
							})
							msg, _ := v.(string)
							if want := "goshmem." + routine + ": " + b.want; !strings.HasPrefix(msg, want) {
								t.Errorf("%s, %s: panic %v, want a message starting %q", routine, b.name, v, want)
							}
							c.Quiet()
							got := make([]int64, 4)
							goshmem.Get(c, got, buf, 1)
							if !slices.Equal(got, make([]int64, 4)) {
								t.Errorf("%s, %s: the destination on PE 1 became %v before the call panicked", routine, b.name, got)
								goshmem.Put(c, buf, make([]int64, 4), 1)
							}
						}
					}
				}
				p.BarrierAll()
				if words[1] != 0 {
					t.Errorf("PE %d: a signal word changed: %v", p.MyPE(), words)
				}
			})
		})
	}
}
