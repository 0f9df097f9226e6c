// Command interleave times goshmem's small collectives against the
// barrier in one job, in interleaved blocks, so that a change of the
// machine's state between runs (on the development machine the 2-PE
// barrier moves between about 35, 60 and 250 ns from run to run) moves
// every figure of a round alike:
//
//	go run ./cmd/oshrun -n 2 --bind-to core ./bench/interleave [-rounds 30] [-block 20000]
//
// Each round runs one block of every operation in turn; each block
// times -block back-to-back calls. PE 0 prints, per operation, the
// median time per call over the rounds with its range, and the median
// of the per-round ratios to the world team's Sync in the same round:
//
//	# goshmem interleave: 2 PEs, 30 rounds of 20000 calls
//	# op                 median ns   [min-max]        / world Sync
//	world.Sync                37.0   [34.4-60.6]      1.00
//	split.Sync                49.4   [48.0-102.3]     1.34
//	reduce 8 B                48.9   [47.7-111.6]     1.32
//	...
//
// split.Sync is the barrier of a team of the same PEs made by
// SplitStrided (its flags in the team slots, not the control block).
// The collectives run on TeamWorld with int64 elements: SumReduce,
// FCollect, Collect and Broadcast (root 0) of 8 and 256 bytes per PE,
// Broadcast of 32 bytes too (one line, like 8, but through the ring of
// larger dropboxes), and Alltoall of 8 bytes per pair.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/goshmem/goshmem"
)

func main() {
	rounds := flag.Int("rounds", 30, "rounds; each runs one block of every operation")
	block := flag.Int("block", 20000, "calls per block")
	flag.Parse()
	if *rounds < 1 || *block < 1 {
		fmt.Fprintln(os.Stderr, "interleave: -rounds and -block must be at least 1")
		os.Exit(2)
	}
	goshmem.Main(func(pe *goshmem.PE) {
		w := goshmem.TeamWorld(pe)
		s, err := w.SplitStrided(0, 1, w.NPEs(), nil)
		if err != nil {
			panic(err)
		}
		n := w.NPEs()
		src, err := goshmem.Malloc[int64](pe, 32*n)
		if err != nil {
			panic(err)
		}
		dst, err := goshmem.Malloc[int64](pe, 32*n)
		if err != nil {
			panic(err)
		}
		for i := range src {
			src[i] = int64(pe.MyPE() + i)
		}
		ops := []struct {
			name string
			f    func()
		}{
			{"world.Sync", w.Sync},
			{"split.Sync", s.Sync},
			{"reduce 8 B", func() { goshmem.SumReduce(w, dst[:1], src[:1]) }},
			{"fcollect 8 B", func() { goshmem.FCollect(w, dst[:n], src[:1]) }},
			{"collect 8 B", func() { goshmem.Collect(w, dst[:n], src[:1]) }},
			{"alltoall 8 B", func() { goshmem.Alltoall(w, dst[:n], src[:n], 1) }},
			{"broadcast 8 B", func() { goshmem.Broadcast(w, dst[:1], src[:1], 0) }},
			{"broadcast 32 B", func() { goshmem.Broadcast(w, dst[:4], src[:4], 0) }},
			{"reduce 256 B", func() { goshmem.SumReduce(w, dst[:32], src[:32]) }},
			{"fcollect 256 B", func() { goshmem.FCollect(w, dst[:32*n], src[:32]) }},
			{"collect 256 B", func() { goshmem.Collect(w, dst[:32*n], src[:32]) }},
			{"broadcast 256 B", func() { goshmem.Broadcast(w, dst[:32], src[:32], 0) }},
		}
		ns := make([][]float64, len(ops))
		for range *rounds {
			for i, o := range ops {
				w.Sync()
				t0 := time.Now()
				for range *block {
					o.f()
				}
				ns[i] = append(ns[i], float64(time.Since(t0).Nanoseconds())/float64(*block))
			}
		}
		if pe.MyPE() != 0 {
			return
		}
		fmt.Printf("# goshmem interleave: %d PEs, %d rounds of %d calls\n", n, *rounds, *block)
		fmt.Printf("# %-18s %10s   %-16s %s\n", "op", "median ns", "[min-max]", "/ world Sync")
		for i, o := range ops {
			ratio := make([]float64, len(ns[i]))
			for r := range ns[i] {
				ratio[r] = ns[i][r] / ns[0][r]
			}
			x := slices.Sorted(slices.Values(ns[i]))
			fmt.Printf("%-20s %10.1f   %-16s %.2f\n", o.name, median(ns[i]), fmt.Sprintf("[%.1f-%.1f]", x[0], x[len(x)-1]), median(ratio))
		}
	})
}

func median(v []float64) float64 {
	x := slices.Sorted(slices.Values(v))
	return x[len(x)/2]
}
