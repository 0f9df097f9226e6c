package node

import (
	"slices"
	"testing"
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
