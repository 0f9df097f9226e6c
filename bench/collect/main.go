// Command collect is the OSU-style collect latency test
// (osu_oshm_collect with goshmem.Collect on TeamWorld):
//
//	go run ./cmd/oshrun -n 2 ./bench/collect [-m [min:]max] [-i N] [-w N] [-f]
//
// For each message size (bytes of a []uint8 that each PE contributes,
// default 1 to 4 MiB, doubling), every PE does the warm-up collects,
// then times iterations of goshmem.Collect(TeamWorld, dst[:n*size],
// src[:size]) back to back (no barrier between them: team collectives
// need none); each PE's latency is its time divided by the iterations.
// The row is PE 0's latency; with -f the minimum and maximum over all
// PEs and the iterations. A BarrierAll separates the sizes. src (the
// maximum size) and dst (n times it) are symmetric, touched before
// timing; after each size every PE checks its dst.
//
// Defaults: -i 10000, -w 1000 for sizes up to 64 KiB, a tenth above, a
// hundredth above 1 MiB (at least 1). Runs with any number of PEs.
// Output (PE 0, stdout):
//
//	# OSU-style goshmem Collect Test
//	# PEs: 2  iterations: 10000  warmup: 1000
//	# Size          Latency (us)
//	1                          0.500
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations". The format
// is the package doc of bench/internal/osu; the C peer is
// bench/peer/collect.c (shmem_collect64).
package main

import (
	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

func main() {
	osu.Main("collect", "Collect", 1, osu.CollectiveDefaults, func(b *osu.Bench) {
		osu.Gather("collect", b, goshmem.Collect[uint8])
	})
}
