// Command put_bw is the OSU-style put bandwidth test:
//
//	go run ./cmd/oshrun -n 2 ./bench/put_bw [-m [min:]max] [-i N] [-w N] [-f] [-copy]
//
// For each message size (bytes of a []uint8, default 1 to 16 MiB,
// doubling), PE 0 issues windows of 64 goshmem.PutNBI of size bytes, all
// into the same destination (PE 1's copy of a symmetric buffer, as OSU
// does), each window ended by one ctx.Quiet: first the warm-up windows,
// then the timed ones. The bandwidth is size*64*windows bytes over the
// time, in MB/s (1e6 bytes per second). PE 1 (and any further PE) only
// waits in BarrierAll, which separates the sizes. Source and destination
// are symmetric (goshmem.Malloc) buffers of the maximum size, touched
// before timing: 32 MiB of heap per PE by default.
//
// -i and -w count windows. Defaults: -i 1000, -w 100 for sizes up to
// 64 KiB, a tenth above, a hundredth above 1 MiB (at least 1). Output
// (PE 0, stdout):
//
//	# OSU-style goshmem Put Bandwidth Test
//	# PEs: 2  iterations: 1000  warmup: 100
//	# Size          Bandwidth (MB/s)
//	1                          51.20
//
// -copy adds, after the sweep, the comparison with the machine's best
// copy in the same moments: for each size from 64 KiB, blocks of puts
// (windows of 64, each ended by Quiet) alternate with blocks of lone
// copies of the same bytes (PE 1's heap through Ptr) by every copy
// method of bench/internal/copyref, and a closing comment gives the
// median and range of the per-round ratios (see osu.Bench.VsCopy).
//
// -f adds "Min Bandwidth (MB/s)  Max Bandwidth (MB/s)  Iterations"
// (iterations = timed windows); only PE 0 times, so min = max =
// bandwidth. The format is the package doc of bench/internal/osu. Needs
// at least 2 PEs.
package main

import (
	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

func main() {
	vsCopy, x := osu.BoolFlag("copy", "after the sweep, time each size from 64 KiB in blocks interleaved with blocks of every lone copy of the same bytes and print the ratios in a closing comment")
	osu.MainExtra("put_bw", "Put Bandwidth", 2, osu.BandwidthDefaults, x, func(b *osu.Bench) {
		src, dst := b.Buffers(b.MaxSize)
		b.Out.Columns(osu.Size, osu.BandwidthMBs)
		b.Sweep(b.Me == 0, func(size, iters, warm int) float64 {
			d, s := dst[:size], src[:size]
			us := osu.Time(warm, iters, func(n int) {
				for range n {
					for range osu.Window {
						goshmem.PutNBI(b.Ctx, d, s, 1)
					}
					b.Ctx.Quiet()
				}
			})
			return osu.MBps(float64(size)*osu.Window*float64(iters), us)
		})
		if *vsCopy {
			b.VsCopy(goshmem.Ptr(b.PE, dst, 1), src, dst, goshmem.Ptr(b.PE, src, 0), func(size int) {
				goshmem.PutNBI(b.Ctx, dst[:size], src[:size], 1)
			})
		}
	})
}
