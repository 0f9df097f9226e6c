// Command reduce is the OSU-style reduction latency test
// (osu_oshm_reduce with goshmem.SumReduce on TeamWorld):
//
//	go run ./cmd/oshrun -n 2 ./bench/reduce [-m [min:]max] [-i N] [-w N] [-f] [-t int64|float64]
//
// For each message size in bytes (default 8 to 4 MiB, doubling; the
// vector has size/8 elements of -t's type, default int64), every PE does
// the warm-up reductions, then times iterations of
// goshmem.SumReduce(TeamWorld, dst, src) back to back (no barrier between
// them: team collectives need none); each PE's latency is its time
// divided by the iterations. The row is PE 0's latency; with -f the
// minimum and maximum over all PEs and the iterations. A BarrierAll
// separates the sizes. src and dst are distinct symmetric buffers of the
// maximum size, filled before timing; after each size every PE checks
// the sum. Sizes that are not a multiple of 8 bytes (from -m) are
// skipped, and a comment before the header lists them.
//
// The algorithm is goshmem's choice, or SHMEM_REDUCE_ALGORITHM (flat,
// partitioned) passed to the PEs: oshrun -x SHMEM_REDUCE_ALGORITHM=flat ...
//
// Defaults: -i 10000, -w 1000 for sizes up to 64 KiB, a tenth above, a
// hundredth above 1 MiB (at least 1). Runs with any number of PEs.
// Output (PE 0, stdout):
//
//	# OSU-style goshmem Reduce Test
//	# PEs: 2  iterations: 10000  warmup: 1000
//	# type: int64
//	# Size          Latency (us)
//	8                          0.400
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations". The format
// is the package doc of bench/internal/osu; the C peer is
// bench/peer/reduce.c (shmem_longlong_sum_to_all, shmem_double_sum_to_all).
package main

import (
	"flag"
	"fmt"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

// elemBytes is the size of both element types.
const elemBytes = 8

func main() {
	typ := "int64"
	x := osu.Extra{
		Usage:    "[-t int64|float64]",
		Register: func(fs *flag.FlagSet) { fs.StringVar(&typ, "t", typ, "element type: `int64` or float64") },
		Check: func(osu.Config) error {
			if typ != "int64" && typ != "float64" {
				return fmt.Errorf("-t %q: the type is int64 or float64", typ)
			}
			return nil
		},
	}
	osu.MainExtra("reduce", "Reduce", 1, osu.ReduceDefaults, x, func(b *osu.Bench) {
		if typ == "float64" {
			run[float64](b, typ)
		} else {
			run[int64](b, typ)
		}
	})
}

func run[T int64 | float64](b *osu.Bench, typ string) {
	team := goshmem.TeamWorld(b.PE)
	n := b.MaxSize / elemBytes
	src := osu.Malloc[T](b, n)
	dst := osu.Malloc[T](b, n)
	for i := range src {
		src[i] = T(i%7 + 1) // exact in both types: the sums are checked
		dst[i] = 0
	}
	b.Out.Comment("type: %s", typ)
	sizes, skipped := osu.Multiples(b.Sizes(), elemBytes)
	if len(skipped) > 0 {
		b.Out.Comment("%s", osu.SkipComment(skipped, "not whole 8-byte elements"))
	}
	b.Out.Columns(osu.Size, osu.LatencyUs)
	b.SweepSizes(sizes, true, func(size, iters, warm int) float64 {
		k := size / elemBytes
		d, s := dst[:k], src[:k]
		lat := osu.Time(warm, iters, func(n int) {
			for range n {
				goshmem.SumReduce(team, d, s)
			}
		}) / float64(iters)
		for _, i := range []int{0, k - 1} {
			if want := T(b.N) * s[i]; d[i] != want {
				panic(fmt.Sprintf("reduce: PE %d: dst[%d] = %v after a sum of %d elements, want %v", b.Me, i, d[i], k, want))
			}
		}
		return lat
	})
}
