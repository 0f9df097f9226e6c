// Command alltoall is the OSU-style all-to-all latency test
// (osu_oshm_alltoall with goshmem.Alltoall on TeamWorld):
//
//	go run ./cmd/oshrun -n 2 ./bench/alltoall [-m [min:]max] [-i N] [-w N] [-f] [-s stride]
//
// For each message size (bytes of a []uint8 sent to each destination
// PE, default 1 to 4 MiB, doubling), every PE does the warm-up
// exchanges, then times iterations of goshmem.Alltoall(TeamWorld,
// dst[:n*size], src[:n*size], size) back to back (no barrier between
// them: team collectives need none); each PE's latency is its time
// divided by the iterations. The row is PE 0's latency; with -f the
// minimum and maximum over all PEs and the iterations. A BarrierAll
// separates the sizes. src and dst (n times the maximum size each) are
// symmetric, touched before timing; after each size every PE checks its
// dst. With -s, goshmem.Alltoalls with that stride on both sides
// (each PE's buffers stride times longer).
//
// Defaults: -i 10000, -w 1000 for sizes up to 64 KiB, a tenth above, a
// hundredth above 1 MiB (at least 1). Runs with any number of PEs.
// Output (PE 0, stdout):
//
//	# OSU-style goshmem Alltoall Test
//	# PEs: 2  iterations: 10000  warmup: 1000
//	# Size          Latency (us)
//	1                          0.500
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations". The format
// is the package doc of bench/internal/osu; the C peer is
// bench/peer/alltoall.c (shmem_alltoall64).
package main

import (
	"flag"
	"fmt"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

func main() {
	stride := 1
	x := osu.Extra{
		Usage: "[-s stride]",
		Register: func(fs *flag.FlagSet) {
			fs.IntVar(&stride, "s", 1, "time Alltoalls with this `stride` on both sides (1: Alltoall)")
		},
		Check: func(osu.Config) error {
			if stride < 1 {
				return fmt.Errorf("-s %d: the stride is at least 1", stride)
			}
			return nil
		},
	}
	osu.MainExtra("alltoall", "Alltoall", 1, osu.CollectiveDefaults, x, func(b *osu.Bench) {
		team := goshmem.TeamWorld(b.PE)
		src := osu.Malloc[uint8](b, b.N*b.MaxSize*stride)
		dst := osu.Malloc[uint8](b, b.N*b.MaxSize*stride)
		osu.Fill(dst, 0)
		if stride > 1 {
			b.Out.Comment("Alltoalls, stride %d on both sides", stride)
		}
		b.Out.Columns(osu.Size, osu.LatencyUs)
		b.Sweep(true, func(size, iters, warm int) float64 {
			d, s := dst[:b.N*size*stride], src[:b.N*size*stride]
			// Block j of src, for PE j, is tagged with (sender, receiver):
			// block j of dst must then hold (j, me).
			for j := range b.N {
				osu.Fill(s[j*size*stride:(j+1)*size*stride], tag(b.Me, j))
			}
			lat := osu.Time(warm, iters, func(n int) {
				for range n {
					if stride == 1 {
						goshmem.Alltoall(team, d, s, size)
					} else {
						goshmem.Alltoalls(team, d, s, stride, stride, size)
					}
				}
			}) / float64(iters)
			for j := range b.N {
				first, last := j*size*stride, ((j+1)*size-1)*stride
				if want := tag(j, b.Me); d[first] != want || d[last] != want {
					panic(fmt.Sprintf("alltoall: PE %d: block %d of dst (%d bytes each, stride %d) does not hold PE %d's block for it", b.Me, j, size, stride, j))
				}
			}
			return lat
		})
	})
}

// tag is the byte that the block from PE from to PE to is filled with.
func tag(from, to int) byte { return byte(from*31 + to*7 + 1) }
