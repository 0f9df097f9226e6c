package node_test

// The rest of the public API across hosts, each PE with a partner on
// another host (and, for the waits, every other PE): the non-blocking
// RMA and AMOs, every fetching AMO, the vector and any/some waits and
// tests, PutSignal with SignalFetch and SignalWaitUntil, Align and
// Realloc (symmetric across hosts), and TeamPtr (nil for another host's
// PE).

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/goshmem/goshmem"
)

func init() {
	scenarios["xhost-api"] = func(pe *goshmem.PE) {
		me, n := pe.MyPE(), pe.NPEs()
		c := pe.Ctx()
		words, err := goshmem.Calloc[int64](pe, 16*n)
		if err != nil {
			fail(pe, "%v", err)
		}
		probe := words[:1]
		partner := -1
		for k := 1; k < n && partner < 0; k++ {
			if q := (me + k) % n; goshmem.Ptr(pe, probe, q) == nil {
				partner = q
			}
		}
		if partner < 0 {
			fail(pe, "no PE on another host")
		}
		if goshmem.TeamPtr(goshmem.TeamWorld(pe), probe, partner) != nil {
			fail(pe, "TeamPtr to PE %d on another host is not nil", partner)
		}
		pe.BarrierAll()

		// Non-blocking RMA: my block of the partner's words, and back.
		mine := words[16*me : 16*me+16]
		src := make([]int64, 16)
		for i := range src {
			src[i] = int64(me*1000 + i)
		}
		goshmem.PutNBI(c, mine, src, partner)
		c.Quiet()
		got := make([]int64, 16)
		goshmem.GetNBI(c, got, mine, partner)
		c.Quiet()
		if !slices.Equal(got, src) {
			fail(pe, "PutNBI then GetNBI with PE %d: %v, want %v", partner, got, src)
		}

		// A window of non-blocking puts large enough to be RDMA WRITEs
		// over verbs (SHMEM_INTERNODE_RDMA_MIN, 8 KiB; from the heap
		// without a copy from 256 KiB), one from private memory above
		// what a stack may hold (128 KiB), then one Quiet: it completes
		// them all, and only then are the sources overwritten. (In the
		// soft-RoCE guest a WRITE is sent within its post, so there this
		// checks the data path, not that a source is read before Quiet:
		// overwritten before Quiet, the sources still arrived intact.)
		sizes := []int{8 << 10, 40 << 10, 260 << 10, 140 << 10}
		total := 0
		for _, s := range sizes {
			total += s
		}
		big, err := goshmem.Calloc[byte](pe, n*total)
		if err != nil {
			fail(pe, "%v", err)
		}
		heapSrc, err := goshmem.Malloc[byte](pe, total-sizes[3])
		if err != nil {
			fail(pe, "%v", err)
		}
		private := make([]byte, sizes[3])
		pattern := func(k, i int) byte { return byte(me*31 + k*7 + i*13 + i>>8) }
		wantBig := make([]byte, 0, total)
		at, h := me*total, 0
		for k, s := range sizes {
			src := private
			if k < 3 {
				src = heapSrc[h : h+s]
				h += s
			}
			for i := range src {
				src[i] = pattern(k, i)
			}
			wantBig = append(wantBig, src...)
			goshmem.PutNBI(c, big[at:at+s], src, partner)
			at += s
		}
		c.Quiet()
		for i := range heapSrc {
			heapSrc[i] = 0xee
		}
		for i := range private {
			private[i] = 0xee
		}
		pe.BarrierAll()
		back := make([]byte, total)
		goshmem.Get(c, back, big[me*total:(me+1)*total], partner)
		for j := range back {
			if back[j] != wantBig[j] {
				fail(pe, "a window of large PutNBI to PE %d, then Quiet: byte %d of %d is %#x, want %#x", partner, j, total, back[j], wantBig[j])
			}
		}
		goshmem.Free(pe, heapSrc)
		goshmem.Free(pe, big)

		// Every fetching AMO on word 0 of my block on the partner
		// (only I touch it), then the NBI forms on word 1.
		w := &mine[0]
		goshmem.AtomicSet(c, w, 0b1100, partner)
		check := func(what string, got, want int64) {
			if got != want {
				fail(pe, "%s on PE %d: %d, want %d", what, partner, got, want)
			}
		}
		check("AtomicSwap", goshmem.AtomicSwap(c, w, 0b1010, partner), 0b1100)
		check("AtomicCompareSwap (no match)", goshmem.AtomicCompareSwap(c, w, 7, 99, partner), 0b1010)
		check("AtomicCompareSwap (match)", goshmem.AtomicCompareSwap(c, w, 0b1010, 0b0110, partner), 0b1010)
		check("AtomicFetchInc", goshmem.AtomicFetchInc(c, w, partner), 0b0110)
		check("AtomicFetchAnd", goshmem.AtomicFetchAnd(c, w, 0b0101, partner), 0b0111)
		check("AtomicFetchOr", goshmem.AtomicFetchOr(c, w, 0b1000, partner), 0b0101)
		check("AtomicFetchXor", goshmem.AtomicFetchXor(c, w, 0b1111, partner), 0b1101)
		check("AtomicFetch", goshmem.AtomicFetch(c, w, partner), 0b0010)
		goshmem.AtomicInc(c, w, partner)
		goshmem.AtomicAnd(c, w, 0b0111, partner)
		goshmem.AtomicOr(c, w, 0b10000, partner)
		goshmem.AtomicXor(c, w, 0b1, partner)
		check("AtomicInc, And, Or, Xor", goshmem.AtomicFetch(c, w, partner), 0b10010)
		var f [6]int64
		w1 := &mine[1]
		goshmem.AtomicSet(c, w1, 40, partner)
		c.Quiet()
		goshmem.AtomicFetchAddNBI(c, &f[0], w1, 2, partner)
		c.Quiet()
		goshmem.AtomicFetchIncNBI(c, &f[1], w1, partner)
		c.Quiet()
		goshmem.AtomicSwapNBI(c, &f[2], w1, 8, partner)
		c.Quiet()
		goshmem.AtomicCompareSwapNBI(c, &f[3], w1, 8, 9, partner)
		c.Quiet()
		goshmem.AtomicFetchOrNBI(c, &f[4], w1, 6, partner)
		c.Quiet()
		goshmem.AtomicFetchNBI(c, &f[5], w1, partner)
		c.Quiet()
		if want := [6]int64{40, 42, 43, 8, 9, 15}; f != want {
			fail(pe, "NBI AMOs on PE %d fetched %v, want %v", partner, f, want)
		}

		// Waits: every PE sets flag me of every other PE; each waits
		// with Any/Some until it has seen some, then for all, with
		// its own flag excluded through status.
		flags, err := goshmem.Calloc[int64](pe, n)
		if err != nil {
			fail(pe, "%v", err)
		}
		status := make([]int32, n)
		status[me] = 1
		pe.BarrierAll()
		for k := 1; k < n; k++ {
			goshmem.AtomicSet(c, &flags[me], int64(me+1), (me+k)%n)
		}
		if i := goshmem.WaitUntilAny(pe, flags, status, goshmem.CmpNE, 0); i == me || i < 0 || flags[i] != int64(i+1) {
			fail(pe, "WaitUntilAny returned %d (flags %v)", i, flags)
		}
		some := goshmem.WaitUntilSome(pe, flags, status, goshmem.CmpNE, 0, nil)
		if len(some) == 0 || slices.Contains(some, me) {
			fail(pe, "WaitUntilSome returned %v", some)
		}
		want := make([]int64, n)
		for q := range want {
			want[q] = int64(q + 1)
		}
		goshmem.WaitUntilAllVector(pe, flags, status, goshmem.CmpEQ, want)
		if !goshmem.TestAll(pe, flags, status, goshmem.CmpNE, 0) || goshmem.TestAny(pe, flags, status, goshmem.CmpEQ, 0) >= 0 {
			fail(pe, "TestAll/TestAny after every flag came: flags %v", flags)
		}

		// Who sends to whom: every PE's partner, gathered.
		part, err := goshmem.Calloc[int64](pe, n+1)
		if err != nil {
			fail(pe, "%v", err)
		}
		part[n] = int64(partner)
		goshmem.FCollect(goshmem.TeamWorld(pe), part[:n], part[n:])
		var senders []int64 // PEs whose partner I am
		for q, r := range part[:n] {
			if r == int64(me) {
				senders = append(senders, int64(q))
			}
		}

		// PutSignal from every PE to its partner, added on one word.
		sig, err := goshmem.Calloc[uint64](pe, 1)
		if err != nil {
			fail(pe, "%v", err)
		}
		data, err := goshmem.Calloc[int64](pe, 4*n)
		if err != nil {
			fail(pe, "%v", err)
		}
		pe.BarrierAll()
		for r := range 3 {
			block := []int64{int64(me), int64(r), int64(me * r), -1}
			goshmem.PutSignal(c, data[4*me:4*me+4], block, &sig[0], 1, goshmem.SignalAdd, partner)
		}
		want3 := uint64(3 * len(senders))
		if v := goshmem.SignalWaitUntil(pe, &sig[0], goshmem.CmpGE, want3); v < want3 {
			fail(pe, "SignalWaitUntil returned %d, want >= %d", v, want3)
		}
		if v := goshmem.SignalFetch(pe, &sig[0]); v != want3 {
			fail(pe, "SignalFetch: %d, want %d (3 signals from each of PEs %v)", v, want3, senders)
		}
		for _, q := range senders {
			// The last block: data before the signal.
			if got, want := data[4*q:4*q+4], []int64{q, 2, 2 * q, -1}; !slices.Equal(got, want) {
				fail(pe, "PutSignal's data from PE %d: %v, want %v", q, got, want)
			}
		}
		pe.BarrierAll()

		// Align and Realloc: symmetric on every host, so puts to the
		// partner's copy land where its own code finds them, and
		// Realloc keeps the data.
		a, err := goshmem.Align[int64](pe, 4096, 8)
		if err != nil {
			fail(pe, "Align: %v", err)
		}
		if len(a) != 8 || uintptr(unsafe.Pointer(&a[0]))%4096 != 0 {
			fail(pe, "Align(4096, 8) returned %d elements at %p", len(a), a)
		}
		a[0] = -1
		pe.BarrierAll()
		goshmem.Put(c, a[:1], []int64{int64(me) + 7}, partner)
		pe.BarrierAll()
		b, err := goshmem.Realloc(pe, a, 4096)
		if err != nil {
			fail(pe, "Realloc: %v", err)
		}
		b[4095] = -1
		pe.BarrierAll()
		goshmem.Put(c, b[4095:], []int64{int64(me) + 9}, partner)
		pe.BarrierAll()
		ok0, okEnd := len(senders) == 0 && b[0] == -1, len(senders) == 0 && b[4095] == -1
		for _, q := range senders {
			ok0 = ok0 || b[0] == q+7
			okEnd = okEnd || b[4095] == q+9
		}
		if !ok0 || !okEnd {
			fail(pe, "after Align, a put, Realloc and a put from PEs %v: first %d, last %d", senders, b[0], b[4095])
		}
		// Every reduction operator across hosts, on integers and
		// floats, at sizes on both sides of the pushed reduction's box,
		// against the naive fold in team order.
		for _, elems := range []int{1, 5, 40, 700} {
			checkReductions[int32](pe, elems, func(q, i int) int32 { return int32((q*7919+i*104729)%61 - 30) })
			checkReductions[uint16](pe, elems, func(q, i int) uint16 { return uint16(q*7919 + i*104729) })
			checkReductions[float64](pe, elems, func(q, i int) float64 { return float64((q*31+i*17)%13) * 0.25 })
		}

		// Bad input aimed at another host's PE: the same panics, naming
		// the routine and the argument, as on one host, and nothing
		// sent.
		for _, bad := range []struct {
			name string
			call func()
			want []string
		}{
			{"a Go slice as the dest", func() { goshmem.Put(c, make([]int64, 4), src[:4], partner) },
				[]string{"Put: dest", "is not inside the symmetric heap"}},
			{"a PE past the last", func() { goshmem.Put(c, mine[:4], src[:4], n+3) },
				[]string{"Put", fmt.Sprint(n + 3)}},
			{"a Go variable to an AMO", func() { var x int64; goshmem.AtomicFetchAdd(c, &x, 1, partner) },
				[]string{"AtomicFetchAdd", "symmetric heap"}},
		} {
			msg := func() (msg string) {
				defer func() { msg = fmt.Sprint(recover()) }()
				bad.call()
				return "no panic"
			}()
			for _, w := range bad.want {
				if !strings.Contains(msg, w) {
					fail(pe, "%s to PE %d on another host: %q does not say %q", bad.name, partner, msg, w)
				}
			}
		}
		pe.BarrierAll()
		fmt.Printf("PE %d ok api\n", me)
	}
}

type reducible interface{ int32 | uint16 | float64 }

// checkReductions runs every reduction the element type has on the
// world, each PE's source from val(PE, index), and checks the result
// against the fold of every PE's source in order. Sums and products of
// the floats chosen are exact (quarters, few PEs); integer products
// wrap the same way on every PE.
func checkReductions[T reducible](pe *goshmem.PE, elems int, val func(q, i int) T) {
	me, n := pe.MyPE(), pe.NPEs()
	w := goshmem.TeamWorld(pe)
	g := gatherBufs[T](pe, elems)
	src, dst := g.src, g.dst
	defer func() {
		pe.BarrierAll()
		goshmem.Free(pe, dst)
		goshmem.Free(pe, src)
	}()
	for i := range src {
		src[i] = val(me, i)
	}
	type op struct {
		name string
		run  func()
		fold func(a, b T) T
	}
	ops := []op{
		{"Sum", func() { goshmem.SumReduce(w, dst, src) }, func(a, b T) T { return a + b }},
		{"Prod", func() { goshmem.ProdReduce(w, dst, src) }, func(a, b T) T { return a * b }},
		{"Min", func() { goshmem.MinReduce(w, dst, src) }, func(a, b T) T { return min(a, b) }},
		{"Max", func() { goshmem.MaxReduce(w, dst, src) }, func(a, b T) T { return max(a, b) }},
	}
	var zero T
	if _, isFloat := any(zero).(float64); !isFloat {
		bit := func(f func(a, b uint64) uint64) func(a, b T) T {
			return func(a, b T) T { return T(f(uint64(a), uint64(b))) }
		}
		ops = append(ops,
			op{"And", func() { bitwiseReduce(w, dst, src, "And") }, bit(func(a, b uint64) uint64 { return a & b })},
			op{"Or", func() { bitwiseReduce(w, dst, src, "Or") }, bit(func(a, b uint64) uint64 { return a | b })},
			op{"Xor", func() { bitwiseReduce(w, dst, src, "Xor") }, bit(func(a, b uint64) uint64 { return a ^ b })},
		)
	}
	for _, o := range ops {
		pe.BarrierAll()
		o.run()
		for i := range elems {
			want := val(0, i)
			for q := 1; q < n; q++ {
				want = o.fold(want, val(q, i))
			}
			if dst[i] != want {
				fail(pe, "%sReduce of %d elements of %T: element %d is %v, want %v", o.name, elems, zero, i, dst[i], want)
			}
		}
	}
}

// bitwiseReduce runs AndReduce, OrReduce or XorReduce (op), which
// exist for integer types only.
func bitwiseReduce[T reducible](w *goshmem.Team, dst, src []T, op string) {
	switch d := any(dst).(type) {
	case []int32:
		bitwiseOf(w, d, any(src).([]int32), op)
	case []uint16:
		bitwiseOf(w, d, any(src).([]uint16), op)
	}
}

func bitwiseOf[T goshmem.Bitwise](w *goshmem.Team, dst, src []T, op string) {
	map[string]func(*goshmem.Team, []T, []T){"And": goshmem.AndReduce[T], "Or": goshmem.OrReduce[T], "Xor": goshmem.XorReduce[T]}[op](w, dst, src)
}
