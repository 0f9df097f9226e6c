package goshmem

// HierarchyLevels makes t's hierarchy (a collective over t) and returns
// the world PE numbers of this PE's team at each level, nil for the
// levels it is not in. For tests of the hierarchy's shape.
func HierarchyLevels(t *Team) [][]int {
	h := t.hierarchy("HierarchyLevels")
	out := make([][]int, len(h.levels))
	for i, lt := range h.levels {
		if lt != nil {
			out[i] = lt.worlds
		}
	}
	return out
}

// SyncRounds returns how many team barriers (Sync, or a collective's
// internal synchronization round) this PE has run on t.
func SyncRounds(t *Team) uint32 { return t.epoch }

// BroadcastRing is the depth of the ring of dropboxes of broadcasts of
// up to 8 bytes: how many of them a root may run ahead of its slowest
// reader.
const BroadcastRing = bcastTiny

// BroadcastLines is the number of lines of the ring of dropboxes of
// broadcasts of 9 to BroadcastMax bytes (64 data bytes each), and
// BroadcastRuns the lengths of its two runs of consecutive lines (a
// dropbox never crosses from one to the other).
const (
	BroadcastLines = bcastLines
	BroadcastMax   = bcastData
)

var BroadcastRuns = [2]int{bcastLinesLow, bcastLines - bcastLinesLow}
