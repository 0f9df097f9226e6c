package node

import (
	"slices"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/job"
)

// TestNearFirst: thieves look at the victims on their NUMA node first.
func TestNearFirst(t *testing.T) {
	nodes := []int{0, 1, 0, 1, -1, 0}
	nodeOf := func(q int) int { return nodes[q] }
	for _, tc := range []struct {
		victims  []int
		node     int
		want     []int
		wantNear int
	}{
		{[]int{1, 2, 3, 4, 5}, 0, []int{2, 4, 5, 1, 3}, 3}, // PE 4's node unknown: near
		{[]int{0, 2, 3, 4, 5}, 1, []int{3, 4, 0, 2, 5}, 2},
		{[]int{1, 2, 3}, -1, []int{1, 2, 3}, 3}, // this PE on no known node: all near
		{[]int{1, 3}, 0, []int{1, 3}, 0},
		{nil, 0, []int{}, 0},
	} {
		got, near := nearFirst(tc.victims, tc.node, nodeOf)
		if !slices.Equal(got, tc.want) || near != tc.wantNear {
			t.Errorf("nearFirst(%v, node %d) = %v, %d; want %v, %d", tc.victims, tc.node, got, near, tc.want, tc.wantNear)
		}
	}
}

// TestEndFailedCountsThievesChunks: after the owner's chunk panicked,
// endFailed waits for every chunk thieves claimed, also when the
// owner's last claim, made from a stale back, ran past the back: there
// the claim word's front (10) lies beyond where the owner's chunks end
// (6), and counting the thieves' chunks as n - max(front, back) gave 6
// where they had claimed 10, so the owner stopped waiting while a thief
// still ran its chunks.
func TestEndFailedCountsThievesChunks(t *testing.T) {
	err := RunLocal(Config{HeapSize: 1 << 20}, 2, func(p *PE) {
		// PE 1 only keeps the board (a host of one PE has none) and
		// steals nothing: the claim word below names no task.
		if p.me == 1 {
			p.SetTaskSteal(false)
		}
		p.BarrierAll()
		defer p.BarrierAll()
		if p.me == 1 {
			return
		}
		for _, c := range []struct {
			name               string
			n, front, back, hi int
			thieves            uint64
		}{
			{"overshoot", 16, 10, 4, 6, 10}, // owner [0,6), thieves [6,16)
			{"unclaimed left", 16, 5, 12, 5, 4},
			{"met", 16, 8, 8, 8, 8},
		} {
			e := &p.slot.Task
			e.Claim.Store(job.TaskClaim(c.front, c.back, true))
			done := &p.slot.TaskDone.Uint64
			done.Store(0)
			p.task.busy.Store(busyTask)
			p.task.board.Add(1)
			ended := make(chan struct{})
			go func() {
				p.endFailed(e, c.n, c.hi)
				close(ended)
			}()
			for i := uint64(1); i <= c.thieves; i++ {
				time.Sleep(2 * time.Millisecond)
				select {
				case <-ended:
					t.Fatalf("%s: endFailed returned with %d of the thieves' %d chunks done", c.name, i-1, c.thieves)
				default:
				}
				done.Add(1)
				p.Wake(p.me)
			}
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: endFailed still waits with all %d of the thieves' chunks done", c.name, c.thieves)
			}
			if p.task.busy.Load() != 0 {
				t.Errorf("%s: the PE stays busy", c.name)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
