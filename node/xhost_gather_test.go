package node_test

// Small FCollect and Broadcast across hosts, against a naive reference
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
		b8 := gatherBufs[uint8](pe, n*maxElems)
		bf := gatherBufs[float64](pe, n*maxElems)
		b6 := gatherBufs[[3]uint16](pe, n*maxElems)
		b4 := gatherBufs[int32](pe, n*maxElems)

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
		size := (n + 1) / 2
		back, err := w.SplitStrided(n-1, -2, size, nil)
		if err != nil {
			fail(pe, "SplitStrided: %v", err)
		}
		var backPEs []int
		for i := 0; i < size; i++ {
			backPEs = append(backPEs, n-1-2*i)
		}
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

		for round := 1; round <= 12; round++ {
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

	fillRandom(g.src[:elems], me, seed+7)
	fillRandom(g.dst[:elems], me, seed^0xbeef)
	tm.Barrier()
	goshmem.Broadcast(tm, g.dst[:elems], g.src[:elems], root)
	fillRandom(want, members[root], seed+7)
	if !bytes.Equal(rawBytes(g.dst[:elems]), rawBytes(want)) {
		fail(pe, "%s: Broadcast of %d elements of %T from team PE %d (PE %d) differs", name, elems, zero, root, members[root])
	}
}
