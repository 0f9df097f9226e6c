// Command broadcast is the OSU-style broadcast latency test
// (osu_oshm_broadcast with goshmem.Broadcast on TeamWorld):
//
//	go run ./cmd/oshrun -n 2 ./bench/broadcast [-m [min:]max] [-i N] [-w N] [-f]
//
// For each message size (bytes of a []uint8, default 1 to 4 MiB,
// doubling), every PE does the warm-up broadcasts, then times iterations
// of goshmem.Broadcast(TeamWorld, dst[:size], src[:size], 0) back to
// back (no barrier between them: team collectives need none); each PE's
// latency is its time divided by the iterations. The row is PE 0's (the
// root's) latency; with -f the minimum and maximum over all PEs and the
// iterations. A BarrierAll separates the sizes. Source and destination
// are symmetric buffers of the maximum size, touched before timing; after
// each size every PE checks that its dst holds the root's data.
//
// The algorithm is goshmem's choice, or SHMEM_BCAST_ALGORITHM (direct,
// tree) passed to the PEs: oshrun -x SHMEM_BCAST_ALGORITHM=tree ...
//
// Defaults: -i 10000, -w 1000 for sizes up to 64 KiB, a tenth above, a
// hundredth above 1 MiB (at least 1). Runs with any number of PEs.
// Output (PE 0, stdout):
//
//	# OSU-style goshmem Broadcast Test
//	# PEs: 2  iterations: 10000  warmup: 1000
//	# Size          Latency (us)
//	1                          0.350
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations". The format
// is the package doc of bench/internal/osu; the C peer is
// bench/peer/broadcast.c.
package main

import (
	"fmt"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

func main() {
	osu.Main("broadcast", "Broadcast", 1, osu.CollectiveDefaults, func(b *osu.Bench) {
		team := goshmem.TeamWorld(b.PE)
		src, dst := b.Buffers(b.MaxSize)
		if b.Me == 0 {
			osu.Fill(src, 'r') // what only the root has
		}
		b.Out.Columns(osu.Size, osu.LatencyUs)
		b.Sweep(true, func(size, iters, warm int) float64 {
			d, s := dst[:size], src[:size]
			lat := osu.Time(warm, iters, func(n int) {
				for range n {
					goshmem.Broadcast(team, d, s, 0)
				}
			}) / float64(iters)
			if d[0] != 'r' || d[size-1] != 'r' {
				panic(fmt.Sprintf("broadcast: PE %d: dst of %d bytes does not hold the root's data", b.Me, size))
			}
			return lat
		})
	})
}
