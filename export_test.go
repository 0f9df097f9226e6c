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

// BroadcastMax is the largest broadcast that goes through a ring of
// dropboxes.
const BroadcastMax = bcastData

// BroadcastDepth is how many broadcasts of b bytes a root of t may run
// ahead of its slowest reader: the depth of the ring they go through.
func BroadcastDepth(t *Team, b int) int {
	switch {
	case b <= 8:
		return bcastTiny
	case !t.centralSync:
		return bcastBoxesN
	}
	l := (b + 63) / 64
	return bcastLinesLow/l + (bcastLines-bcastLinesLow)/l
}

// LaterRank is laterRank, for its test.
var LaterRank = laterRank
