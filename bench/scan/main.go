// Command scan is an OSU-style prefix-sum latency test
// (goshmem.SumInscan, or SumExscan with -x, on TeamWorld; OpenSHMEM
// 1.6's shmem_sum_inscan, which OSU and Open MPI's OSHMEM do not have,
// so there is no C peer):
//
//	go run ./cmd/oshrun -n 2 ./bench/scan [-m [min:]max] [-i N] [-w N] [-f] [-x]
//
// For each message size in bytes (default 8 to 4 MiB, doubling; the
// vector has size/8 float64s), every PE does the warm-up scans, then
// times iterations of goshmem.SumInscan(TeamWorld, dst, src) back to
// back; each PE's latency is its time divided by the iterations. The
// row is PE 0's latency; with -f the minimum and maximum over all PEs
// and the iterations. A BarrierAll separates the sizes. src and dst are
// distinct symmetric buffers of the maximum size; after each size every
// PE checks its result. Sizes that are not a multiple of 8 bytes are
// skipped, and a comment before the header lists them. Across hosts
// (srun, mpiexec) it measures the leaders' scan (docs/design.md,
// "Across hosts").
//
// Defaults: as bench/reduce. Output (PE 0, stdout):
//
//	# OSU-style goshmem Scan Test
//	# PEs: 2  iterations: 10000  warmup: 1000
//	# inclusive
//	# Size          Latency (us)
//	8                          0.400
package main

import (
	"fmt"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

func main() {
	exclusive, x := osu.BoolFlag("x", "time SumExscan (exclusive) instead of SumInscan")
	osu.MainExtra("scan", "Scan", 1, osu.ReduceDefaults, x, func(b *osu.Bench) {
		team := goshmem.TeamWorld(b.PE)
		n := b.MaxSize / 8
		src := osu.Malloc[float64](b, n)
		dst := osu.Malloc[float64](b, n)
		for i := range src {
			src[i] = float64(i%7 + 1) // small integers: the sums are exact
			dst[i] = 0
		}
		kind, members := "inclusive", b.Me+1
		if *exclusive {
			kind, members = "exclusive", b.Me
		}
		b.Out.Comment("%s", kind)
		sizes, skipped := osu.Multiples(b.Sizes(), 8)
		if len(skipped) > 0 {
			b.Out.Comment("%s", osu.SkipComment(skipped, "not whole 8-byte elements"))
		}
		b.Out.Columns(osu.Size, osu.LatencyUs)
		b.SweepSizes(sizes, true, func(size, iters, warm int) float64 {
			k := size / 8
			d, s := dst[:k], src[:k]
			lat := osu.Time(warm, iters, func(n int) {
				for range n {
					if *exclusive {
						goshmem.SumExscan(team, d, s)
					} else {
						goshmem.SumInscan(team, d, s)
					}
				}
			}) / float64(iters)
			for _, i := range []int{0, k - 1} {
				if want := float64(members) * s[i]; d[i] != want {
					panic(fmt.Sprintf("scan: PE %d: dst[%d] = %v after a %s scan of %d elements, want %v", b.Me, i, d[i], kind, k, want))
				}
			}
			return lat
		})
	})
}
