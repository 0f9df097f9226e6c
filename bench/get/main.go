// Command get is the OSU-style get latency test (osu_oshm_get):
//
//	go run ./cmd/oshrun -n 2 ./bench/get [-m [min:]max] [-i N] [-w N] [-f]
//
// For each message size (bytes of a []uint8, default 1 to 4 MiB,
// doubling), PE 0 does the warm-up iterations, then times iterations of
// goshmem.Get of size bytes from PE 1's copy of a symmetric buffer; the
// latency is the time divided by the iterations. Get is blocking, so
// there is no Quiet (as in OSU). PE 1 (and any further PE) only waits in
// BarrierAll, which separates the sizes. Source and destination are
// symmetric (goshmem.Malloc) buffers of the maximum size, touched before
// timing.
//
// Defaults: -i 10000, -w 1000 for sizes up to 64 KiB, a tenth above,
// a hundredth above 1 MiB (at least 1). Output (PE 0, stdout):
//
//	# OSU-style goshmem Get Test
//	# PEs: 2  iterations: 10000  warmup: 1000
//	# Size          Latency (us)
//	1                           0.01
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations"; only PE 0
// times, so min = max = latency. The format is the package doc of
// bench/internal/osu. Needs at least 2 PEs.
package main

import (
	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

func main() {
	osu.Main("get", "Get", 2, osu.LatencyDefaults, func(b *osu.Bench) {
		src, dst := b.Buffers(b.MaxSize)
		b.Out.Columns(osu.Size, osu.LatencyUs)
		b.Sweep(b.Me == 0, func(size, iters, warm int) float64 {
			d, s := dst[:size], src[:size]
			return osu.Time(warm, iters, func(n int) {
				for range n {
					goshmem.Get(b.Ctx, d, s, 1)
				}
			}) / float64(iters)
		})
	})
}
