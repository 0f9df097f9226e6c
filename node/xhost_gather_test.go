package node_test

// Small collectives across hosts (FCollect, Broadcast, Collect,
// Alltoall(s), the scans), against a naive reference
// on random inputs: every PE can compute every member's source (a
// seeded generator of raw bytes, so floats include NaNs and negative
// zeros, and element types of odd sizes), so each checks every block
// of its result bit for bit. The sizes straddle the thresholds where
// the algorithms change (a push box of 64 bytes, the or-gather's 1 KiB,
// the flat algorithms above), on the world, on a strided team taken
// backwards, and on the rows of a 2-D split (teams whose members span
// hosts in other orders).

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"unsafe"

	"github.com/goshmem/goshmem"
)

func init() {
	scenarios["xhost-gather"] = func(pe *goshmem.PE) {
		me, n := pe.MyPE(), pe.NPEs()
		const maxElems = 400 // per member
		b8 := gatherBufs[uint8](pe, 3*n*maxElems)
		bf := gatherBufs[float64](pe, 3*n*maxElems)
		b6 := gatherBufs[[3]uint16](pe, 3*n*maxElems)
		b4 := gatherBufs[int32](pe, 3*n*maxElems)

		type team struct {
			name    string
			tm      *goshmem.Team
			members []int
		}
		w := goshmem.TeamWorld(pe)
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		teams := []team{{"world", w, all}}
		back, backPEs := backwardsTeam(pe)
		teams = append(teams, team{"backwards", back, backPEs})
		xr := 2
		if n < 4 {
			xr = 1
		}
		row, col, err := w.Split2D(xr, nil, nil)
		if err != nil {
			fail(pe, "Split2D: %v", err)
		}
		var rowPEs, colPEs []int
		for q := 0; q < n; q++ {
			if q/xr == me/xr {
				rowPEs = append(rowPEs, q)
			}
			if q%xr == me%xr {
				colPEs = append(colPEs, q)
			}
		}
		teams = append(teams, team{"row", row, rowPEs}, team{"column", col, colPEs})

		for round := 1; round <= 6; round++ {
			for ti, tc := range teams {
				if tc.tm == nil {
					continue // not a member
				}
				// Every member draws the same sizes and roots.
				r := rand.New(rand.NewPCG(uint64(round), uint64(ti)))
				for _, elems := range []int{1, 2, 3, 5, 8, 13, 40, 100, 200, 1 + r.IntN(maxElems)} {
					root := r.IntN(tc.tm.NPEs())
					seed := uint64(round*1000 + ti*100 + elems)
					checkGather(pe, tc.name, tc.tm, tc.members, b8, elems, root, seed)
					checkGather(pe, tc.name, tc.tm, tc.members, bf, elems, root, seed+1)
					checkGather(pe, tc.name, tc.tm, tc.members, b6, elems, root, seed+2)
					checkGather(pe, tc.name, tc.tm, tc.members, b4, elems, root, seed+3)
					checkScan(pe, tc.name, tc.tm, tc.members, b4, elems, seed+4, func(r *rand.Rand) int32 { return int32(r.Uint32()) })
					checkScan(pe, tc.name, tc.tm, tc.members, bf, elems, seed+5, func(r *rand.Rand) float64 { return r.Float64()*2 - 1 })
				}
			}
			// Runs of collectives back to back on different teams, each
			// team's members in step; resynchronize the world.
			pe.BarrierAll()
		}
		fmt.Printf("PE %d ok gather\n", me)
	}
}

// gather is a pair of symmetric buffers of one element type.
type gather[T any] struct{ src, dst []T }

func gatherBufs[T any](pe *goshmem.PE, n int) gather[T] {
	src, err1 := goshmem.Malloc[T](pe, n)
	dst, err2 := goshmem.Malloc[T](pe, n)
	if err1 != nil || err2 != nil {
		fail(pe, "allocation failed: %v %v", err1, err2)
	}
	return gather[T]{src, dst}
}

// rawBytes is s's memory.
func rawBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// fillRandom fills s with the raw random bytes of PE q in a call seed.
func fillRandom[T any](s []T, q int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, uint64(q)))
	b := rawBytes(s)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// checkGather runs FCollect and then Broadcast from root, of elems
// elements of T on tm, and fails the PE unless every block of the
// results is, byte for byte, the source of the member it came from.
func checkGather[T any](pe *goshmem.PE, name string, tm *goshmem.Team, members []int, g gather[T], elems, root int, seed uint64) {
	tn, me := tm.NPEs(), pe.MyPE()
	var zero T
	want := make([]T, elems)

	fillRandom(g.src[:elems], me, seed)
	fillRandom(g.dst[:tn*elems], me, seed^0xdead) // garbage where the blocks go
	tm.Barrier()                                  // (the members may be in the collective already: the specification leaves such writes undefined)
	goshmem.FCollect(tm, g.dst[:tn*elems], g.src[:elems])
	for j, q := range members {
		fillRandom(want, q, seed)
		if got := rawBytes(g.dst[j*elems : (j+1)*elems]); !bytes.Equal(got, rawBytes(want)) {
			fail(pe, "%s: FCollect of %d elements of %T: block %d (PE %d) differs", name, elems, zero, j, q)
		}
	}

	// Collect: lengths 0 to 2*elems, some members empty.
	lenOf := func(j int) int { return int((seed + uint64(j)*2654435761) % uint64(2*elems+1)) }
	fillRandom(g.src[:lenOf(tm.MyPE())], me, seed+3)
	fillRandom(g.dst[:2*elems*tn], me, seed^0xc0ffee)
	tm.Barrier()
	goshmem.Collect(tm, g.dst[:2*elems*tn], g.src[:lenOf(tm.MyPE())])
	off := 0
	for j, q := range members {
		w := make([]T, lenOf(j))
		fillRandom(w, q, seed+3)
		if !bytes.Equal(rawBytes(g.dst[off:off+len(w)]), rawBytes(w)) {
			fail(pe, "%s: Collect of up to %d elements of %T: block %d (PE %d, %d elements at %d) differs", name, 2*elems, zero, j, q, len(w), off)
		}
		off += len(w)
	}

	// Alltoall of blocks of k = elems/tn + 1 elements, then Alltoalls
	// with strides 2 (dest) and 3 (source).
	k := elems/tn + 1
	if 3*tn*k <= len(g.src) {
		row := make([]T, tn*k)
		fillRandom(g.src[:tn*k], me, seed+5)
		fillRandom(g.dst[:tn*k], me, seed^0xfeed)
		tm.Barrier()
		goshmem.Alltoall(tm, g.dst[:tn*k], g.src[:tn*k], k)
		for j, q := range members {
			fillRandom(row, q, seed+5)
			if !bytes.Equal(rawBytes(g.dst[j*k:(j+1)*k]), rawBytes(row[tm.MyPE()*k:(tm.MyPE()+1)*k])) {
				fail(pe, "%s: Alltoall of %d elements of %T per PE: block %d (PE %d) differs", name, k, zero, j, q)
			}
		}
		full := make([]T, 3*tn*k)
		fillRandom(g.src[:3*tn*k], me, seed+6)
		fillRandom(g.dst[:2*tn*k], me, seed^0xface)
		tm.Barrier()
		goshmem.Alltoalls(tm, g.dst[:2*tn*k], g.src[:3*tn*k], 2, 3, k)
		for j, q := range members {
			fillRandom(full, q, seed+6)
			for i := 0; i < k; i++ {
				got := rawBytes(g.dst[(j*k+i)*2 : (j*k+i)*2+1])
				want := rawBytes(full[((tm.MyPE()*k + i) * 3) : (tm.MyPE()*k+i)*3+1])
				if !bytes.Equal(got, want) {
					fail(pe, "%s: Alltoalls of %d elements of %T per PE: block %d (PE %d) element %d differs", name, k, zero, j, q, i)
				}
			}
		}
	}

	fillRandom(g.src[:elems], me, seed+7)
	fillRandom(g.dst[:elems], me, seed^0xbeef)
	tm.Barrier()
	goshmem.Broadcast(tm, g.dst[:elems], g.src[:elems], root)
	fillRandom(want, members[root], seed+7)
	if !bytes.Equal(rawBytes(g.dst[:elems]), rawBytes(want)) {
		fail(pe, "%s: Broadcast of %d elements of %T from team PE %d (PE %d) differs", name, elems, zero, root, members[root])
	}
}

// checkScan runs SumInscan and SumExscan of elems elements on tm (the
// sources drawn by gen from each member's generator) and checks each
// member's result against the sum of the sources before it, added in
// team order as the specification's reference loop does.
func checkScan[T int32 | float64](pe *goshmem.PE, name string, tm *goshmem.Team, members []int, g gather[T], elems int, seed uint64, gen func(*rand.Rand) T) {
	src := func(q int) []T {
		r := rand.New(rand.NewPCG(seed, uint64(q)))
		s := make([]T, elems)
		for i := range s {
			s[i] = gen(r)
		}
		return s
	}
	copy(g.src[:elems], src(pe.MyPE()))
	for _, inclusive := range []bool{true, false} {
		fillRandom(g.dst[:elems], pe.MyPE(), seed^0xabba)
		tm.Barrier()
		if inclusive {
			goshmem.SumInscan(tm, g.dst[:elems], g.src[:elems])
		} else {
			goshmem.SumExscan(tm, g.dst[:elems], g.src[:elems])
		}
		want := make([]T, elems)
		last := tm.MyPE()
		if !inclusive {
			last--
		}
		for j := 0; j <= last; j++ {
			for i, v := range src(members[j]) {
				want[i] += v
			}
		}
		if !bytes.Equal(rawBytes(g.dst[:elems]), rawBytes(want)) {
			fail(pe, "%s: scan (inclusive %v) of %d elements of %T differs: %v, want %v", name, inclusive, elems, want[0], g.dst[:min(elems, 4)], want[:min(elems, 4)])
		}
		// In place: dst is src, as the reductions allow.
		copy(g.dst[:elems], src(pe.MyPE()))
		tm.Barrier()
		if inclusive {
			goshmem.SumInscan(tm, g.dst[:elems], g.dst[:elems])
		} else {
			goshmem.SumExscan(tm, g.dst[:elems], g.dst[:elems])
		}
		if !bytes.Equal(rawBytes(g.dst[:elems]), rawBytes(want)) {
			fail(pe, "%s: scan (inclusive %v) in place of %d elements of %T differs: %v, want %v", name, inclusive, elems, want[0], g.dst[:min(elems, 4)], want[:min(elems, 4)])
		}
	}
}
