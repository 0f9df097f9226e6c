package osu

import (
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
)

// TestSettle: before a sweep's first size, every PE runs the same
// number of untimed blocks (the collectives' loops need it), each of
// the size's warm-up count and with no warm-up of its own, until PE 0
// has spent the settle time in them; PEs that do not time run none but
// still follow PE 0's decision; -w 0 settles nothing.
func TestSettle(t *testing.T) {
	const d = 15 * time.Millisecond
	for _, tc := range []struct {
		name   string
		warmup int
		timed  func(me int) bool
	}{
		{"every PE times", 7, func(int) bool { return true }},
		{"only PE 0 times", 7, func(me int) bool { return me == 0 }},
		{"only PE 2 times", 3, func(me int) bool { return me == 2 }},
		{"no warm-up", 0, func(int) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			var blocks [n]atomic.Int64
			var spent [n]time.Duration
			var bad atomic.Value
			err := goshmem.RunLocal(n, func(pe *goshmem.PE) {
				b := &Bench{PE: pe, Ctx: pe.Ctx(), Me: pe.MyPE(), N: pe.NPEs(),
					Config: Config{Iters: 10, Warmup: tc.warmup}, Out: &Printer{W: io.Discard}}
				team := goshmem.TeamWorld(pe)
				x := Malloc[int64](b, 1)
				t0 := time.Now()
				b.settle(64, tc.timed(b.Me), func(size, iters, warm int) float64 {
					if size != 64 || iters != tc.warmup || warm != 0 {
						bad.Store([3]int{size, iters, warm})
					}
					blocks[b.Me].Add(1)
					if tc.timed(0) && tc.timed(1) {
						goshmem.SumReduce(team, x, x) // a collective in the loop
					}
					return 1
				}, d)
				spent[b.Me] = time.Since(t0)
			})
			if err != nil {
				t.Fatal(err)
			}
			if v := bad.Load(); v != nil {
				t.Errorf("measure called with size, iters, warm-up %v; want 64, %d, 0", v, tc.warmup)
			}
			var runs int64 = -1
			for me := range n {
				got := blocks[me].Load()
				switch {
				case tc.warmup == 0 || !tc.timed(me):
					if got != 0 {
						t.Errorf("PE %d ran %d blocks; want none", me, got)
					}
				case runs == -1:
					runs = got
				case got != runs:
					t.Errorf("PE %d ran %d blocks, another timing PE %d: every timing PE runs the same", me, got, runs)
				}
			}
			if tc.warmup == 0 {
				if spent[0] >= d {
					t.Errorf("-w 0 settled for %v", spent[0])
				}
				return
			}
			if runs < 1 {
				t.Errorf("no block ran")
			}
			for me := range n {
				if spent[me] < d {
					t.Errorf("PE %d left after %v; want at least %v (PE 0's decision)", me, spent[me], d)
				}
			}
		})
	}
}
