package node_test

// Random point-to-point synchronization checked against a model: in
// each round every PE sets a random set of flags on random PEs to the
// round's number (P, a put, a non-blocking put, an atomic set or swap,
// a strided put), and every PE, which can replay every PE's choices,
// waits for exactly the flags it will receive, with a random one of the
// vector waits and tests (WaitUntilAll/Any/Some, their Vector forms,
// TestAny in a loop), the others excluded by the status array; every
// index returned must be one set this round, every one must be
// returned, and the flags nobody set must keep their older values.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

const rwSlots = 6 // flags per writer on each PE

// rwPlan is what writer w sets in round r: for each (target, slot) at
// most once, with a method.
func rwPlan(w, r, n int) (targets, slots, methods []int) {
	g := rand.New(rand.NewPCG(uint64(w)+7, uint64(r)+3))
	seen := map[[2]int]bool{}
	for range g.IntN(2 * rwSlots) {
		q, k := g.IntN(n), g.IntN(rwSlots)
		if seen[[2]int{q, k}] {
			continue
		}
		seen[[2]int{q, k}] = true
		targets, slots, methods = append(targets, q), append(slots, k), append(methods, g.IntN(6))
	}
	return
}

func init() { scenarios["wait-random"] = scenarioRandomWait }

func scenarioRandomWait(pe *goshmem.PE) {
	me, n := pe.MyPE(), pe.NPEs()
	rounds := testRounds(60)
	flags, _ := goshmem.Calloc[int64](pe, n*rwSlots)
	c := pe.Ctx()
	g := rand.New(rand.NewPCG(uint64(me)+11, 5))
	status := make([]int32, n*rwSlots)
	values := make([]int64, n*rwSlots)
	for r := 0; r < rounds; r++ {
		v := int64(r + 1)
		// Set this PE's flags on the others (slot k of writer me).
		ts, ks, ms := rwPlan(me, r, n)
		for i := range ts {
			at := me*rwSlots + ks[i]
			switch q := ts[i]; ms[i] {
			case 0:
				goshmem.P(c, &flags[at], v, q)
			case 1:
				goshmem.Put(c, flags[at:at+1], []int64{v}, q)
			case 2:
				goshmem.PutNBI(c, flags[at:at+1], []int64{v}, q)
			case 3:
				goshmem.AtomicSet(c, &flags[at], v, q)
			case 4:
				goshmem.AtomicSwap(c, &flags[at], v, q)
			case 5:
				goshmem.IPut(c, flags[at:at+1], []int64{v}, 1, 1, 1, q)
			}
		}
		c.Quiet()
		// What this PE receives this round.
		var want []int
		for w := range n {
			tw, kw, _ := rwPlan(w, r, n)
			for i := range tw {
				if tw[i] == me {
					want = append(want, w*rwSlots+kw[i])
				}
			}
		}
		slices.Sort(want)
		for i := range status {
			status[i], values[i] = 1, v
		}
		for _, i := range want {
			status[i] = 0
		}
		var got []int
		kind := g.IntN(6)
		switch kind {
		case 0:
			goshmem.WaitUntilAll(pe, flags, status, goshmem.CmpEQ, v)
			got = append(got, want...)
		case 1:
			goshmem.WaitUntilAllVector(pe, flags, status, goshmem.CmpGE, values)
			got = append(got, want...)
		case 2, 3: // Any until every flag came, each returned once
			for range want {
				var i int
				if kind == 2 {
					i = goshmem.WaitUntilAny(pe, flags, status, goshmem.CmpEQ, v)
				} else {
					i = goshmem.WaitUntilAnyVector(pe, flags, status, goshmem.CmpEQ, values)
				}
				if i < 0 || status[i] != 0 {
					fail(pe, "round %d: WaitUntilAny returned %d, not one of the flags still awaited %v", r, i, want)
				}
				status[i] = 1
				got = append(got, i)
			}
			if i := goshmem.WaitUntilAny(pe, flags, status, goshmem.CmpEQ, v); i != -1 {
				fail(pe, "round %d: WaitUntilAny with every flag excluded returned %d, want -1", r, i)
			}
		case 4: // Some until every flag came
			for len(got) < len(want) {
				idx := goshmem.WaitUntilSome(pe, flags, status, goshmem.CmpEQ, v, nil)
				if len(idx) == 0 {
					fail(pe, "round %d: WaitUntilSome returned no index with %v awaited", r, want)
				}
				for _, i := range idx {
					if status[i] != 0 {
						fail(pe, "round %d: WaitUntilSome returned %d, not awaited", r, i)
					}
					status[i] = 1
					got = append(got, i)
				}
			}
		case 5: // TestAny polled
			for len(got) < len(want) {
				if i := goshmem.TestAny(pe, flags, status, goshmem.CmpEQ, v); i >= 0 {
					status[i] = 1
					got = append(got, i)
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			fail(pe, "round %d: wait kind %d found flags %v, want %v", r, kind, got, want)
		}
		for i, f := range flags {
			if f > v || (f == v) != slices.Contains(want, i) {
				fail(pe, "round %d: flag %d is %d (set this round: %v)", r, i, f, slices.Contains(want, i))
			}
		}
		pe.BarrierAll() // no flag of round r+1 before every PE has checked round r
	}
	fmt.Printf("PE %d ok random wait\n", me)
}

// TestMultiProcessRandomWait runs the random synchronization on one
// host (processes, goroutine PEs, CMA, more PEs than CPUs) and in process.
func TestMultiProcessRandomWait(t *testing.T) {
	runJobCases(t, "wait-random", "ok random wait", []jobCase{
		{"4x1", 4, 1, nil},
		{"5x2", 5, 2, nil},
		{"3x1-cma", 3, 1, []string{"SHMEM_TRANSPORT=cma"}},
		{"8x4", 8, 4, nil},
	})
	if err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 4, scenarioRandomWait); err != nil {
		t.Fatal(err)
	}
}
