// Package reducecheck runs small reductions back to back and checks
// them against naive values: a test helper shared by the in-process
// tests of package goshmem and the multi-process and cross-host tests
// of package node.
package reducecheck

import (
	"fmt"

	"github.com/goshmem/goshmem"
)

// Contrib is what PE q contributes at index i in call c: the same
// pseudo-random function on every PE, so each can compute every
// result.
func Contrib(q, i, c int) int64 {
	x := uint64(q*7919+i*104729+c*1299709) * 0x9E3779B97F4A7C15
	return int64(x>>40) - 1<<23
}

// BackToBack runs calls reductions (SumReduce, and MaxReduce every
// third call) of 1 to 16 int64s (8 to 128 bytes: on teams that do not
// map each other, calls up to 64 bytes push and larger ones pull, on
// the same team words) with no synchronization between them, in
// runs of 5 calls on one team (a member may start the next call while a
// partner still reads the last), alternating the world and the world
// backwards (a slot's words must not confuse two teams), and checks
// every element against the naive sum or maximum of the contributions.
// It returns an error naming the first wrong call. Every PE of the job
// calls it; callers panic on the error, so that the others stop too.
func BackToBack(pe *goshmem.PE, calls int) error {
	const maxLen = 16
	n := pe.NPEs()
	w := goshmem.TeamWorld(pe)
	back, err := w.SplitStrided(n-1, -1, n, nil)
	if err != nil {
		return fmt.Errorf("SplitStrided(%d, -1, %d): %v", n-1, n, err)
	}
	src, err := goshmem.Malloc[int64](pe, maxLen)
	if err != nil {
		return err
	}
	dst, err := goshmem.Malloc[int64](pe, maxLen)
	if err != nil {
		return err
	}
	for c := range calls {
		tm := []*goshmem.Team{w, back}[c/5%2]
		size := 1 + c%maxLen
		for i := range size {
			src[i] = Contrib(pe.MyPE(), i, c)
		}
		sum := c%3 != 0
		if sum {
			goshmem.SumReduce(tm, dst[:size], src[:size])
		} else {
			goshmem.MaxReduce(tm, dst[:size], src[:size])
		}
		for i := range size {
			want := Contrib(0, i, c)
			if sum {
				want = 0
			}
			for q := range n {
				if sum {
					want += Contrib(q, i, c)
				} else {
					want = max(want, Contrib(q, i, c))
				}
			}
			if dst[i] != want {
				// No Destroy: it is collective, and the other PEs
				// may be in a reduction.
				return fmt.Errorf("call %d (sum %v, %d elements): [%d] = %d, want %d", c, sum, size, i, dst[i], want)
			}
		}
	}
	back.Destroy()
	return nil
}
