package node_test

// Strided RMA across hosts (IPut and IGet), against a naive reference:
// every PE puts into and gets from every other PE, with strides and
// counts drawn per pair, element types of 1, 6 and 8 bytes, and counts
// large enough to take several frames from a non-leader (whose frames
// are a queue slot) and several of the leaders' 16 KiB packs. Every
// element outside the strided positions must keep its old value.

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/goshmem/goshmem"
)

func init() {
	scenarios["xhost-strided"] = func(pe *goshmem.PE) {
		for round := range 3 {
			checkStrided[uint64](pe, round, 2500)
			checkStrided[[3]uint16](pe, round, 3000)
			checkStrided[uint8](pe, round, 5000)
		}
		fmt.Printf("PE %d ok strided\n", pe.MyPE())
	}
}

// stridedArgs are the strides and count of the transfers between PEs
// from and to in a round (the same on every PE).
func stridedArgs(round, from, to, maxN int) (ds, ss, n int) {
	r := rand.New(rand.NewPCG(uint64(round), uint64(from*1000+to)))
	return r.IntN(4), r.IntN(4), 1 + r.IntN(maxN) // strides 0 (one element repeated) to 3
}

func checkStrided[T any](pe *goshmem.PE, round, maxN int) {
	me, npes := pe.MyPE(), pe.NPEs()
	ext := (maxN-1)*3 + 1 // the most elements a strided side spans
	src, err1 := goshmem.Malloc[T](pe, ext)
	dst, err2 := goshmem.Malloc[T](pe, npes*ext) // a region per sender
	if err1 != nil || err2 != nil {
		fail(pe, "allocation failed: %v %v", err1, err2)
	}
	defer func() {
		pe.BarrierAll()
		goshmem.Free(pe, dst)
		goshmem.Free(pe, src)
	}()
	seed := uint64(round*7919 + len(rawBytes(make([]T, 1))))
	fillRandom(src, me, seed)
	fillRandom(dst, me, seed^0x5eed)
	c := pe.Ctx()
	var zero T
	pe.BarrierAll()
	for k := 1; k < npes; k++ {
		q := (me + k) % npes
		ds, ss, n := stridedArgs(round, me, q, maxN)
		goshmem.IPut(c, dst[me*ext:(me+1)*ext], src, ds, ss, n, q)
	}
	pe.BarrierAll()
	theirs := make([]T, ext)
	want := make([]T, ext)
	for q := range npes {
		if q == me {
			continue
		}
		ds, ss, n := stridedArgs(round, q, me, maxN)
		fillRandom(theirs, q, seed)
		all := make([]T, npes*ext)
		fillRandom(all, me, seed^0x5eed)
		copy(want, all[q*ext:(q+1)*ext])
		for i := range n {
			want[i*ds] = theirs[i*ss]
		}
		if !bytes.Equal(rawBytes(dst[q*ext:(q+1)*ext]), rawBytes(want)) {
			fail(pe, "IPut of %d elements of %T from PE %d (dst stride %d, src stride %d): the region differs", n, zero, q, ds, ss)
		}
	}
	// IGet from every other PE, into a private buffer.
	local := make([]T, ext)
	for k := 1; k < npes; k++ {
		q := (me + k) % npes
		ds, ss, n := stridedArgs(round, q, me, maxN)
		fillRandom(local, me, seed^0x10ca1)
		copy(want, local)
		fillRandom(theirs, q, seed)
		for i := range n {
			want[i*ds] = theirs[i*ss]
		}
		goshmem.IGet(c, local, src, ds, ss, n, q)
		if !bytes.Equal(rawBytes(local), rawBytes(want)) {
			fail(pe, "IGet of %d elements of %T from PE %d (dst stride %d, src stride %d) differs", n, zero, q, ds, ss)
		}
	}
}
