// Command atomics is the OSU-style atomics latency test
// (after osu_oshm_atomics, one PE pair, int64):
//
//	go run ./cmd/oshrun -n 2 ./bench/atomics [-i N] [-w N] [-f]
//
// PE 0 times operations on one symmetric int64 on PE 1, each preceded
// by the warm-up operations; the latency is the time divided by the
// iterations:
//
//   - fetch_add: goshmem.AtomicFetchAdd(x, 1)
//   - fetch: goshmem.AtomicFetch(x)
//   - compare_swap: goshmem.AtomicCompareSwap(x, cond=k, value=k+1) for
//     k = 0, 1, ..., so every compare-and-swap succeeds
//   - add_rate: a stream of non-fetching goshmem.AtomicAdd(x, 1)
//     followed by one ctx.Quiet (timed); the row is the latency per add,
//     and a comment line after the table gives the rate in Mops/s
//     (1e6 operations per second, 1/latency).
//
// Before fetch_add, compare_swap and add_rate PE 0 sets x on PE 1 to 0
// (AtomicSet and Quiet, untimed); after each operation it checks that x
// holds warm-up + iterations, so a wrong loop cannot go unnoticed.
// PE 1 (and any further PE) only waits in BarrierAll, which separates
// the operations. -m is accepted and ignored. Defaults: -i 10000,
// -w 1000. Output (PE 0, stdout):
//
//	# OSU-style goshmem Atomics Test
//	# PEs: 2  iterations: 10000  warmup: 1000
//	# Operation     Latency (us)
//	fetch_add                   0.02
//	fetch                       0.01
//	compare_swap                0.03
//	add_rate                    0.02
//	# add_rate: 52.63 Mops/s
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations"; only PE 0
// times, so min = max = latency. The format is the package doc of
// bench/internal/osu. Needs at least 2 PEs.
package main

import (
	"fmt"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

// sink keeps fetched values alive.
var sink int64

func main() {
	osu.Main("atomics", "Atomics", 2, osu.LatencyDefaults, func(b *osu.Bench) {
		x := osu.Calloc[int64](b, 1)
		c, n, w := b.Ctx, int64(b.Iters), int64(b.Warmup)
		b.Out.Columns(osu.Operation, osu.LatencyUs)

		// run has PE 0 call reset, then ops(0, w) (warm-up) and, timed,
		// ops(w, w+n); ops(from, to) does operations k = from..to-1. PE 0
		// then checks that x on PE 1 holds w+n, and the row is printed.
		run := func(name string, reset bool, ops func(from, to int64)) float64 {
			var lat float64
			b.PE.BarrierAll()
			if b.Me == 0 {
				if reset {
					goshmem.AtomicSet(c, &x[0], 0, 1)
					c.Quiet()
				}
				ops(0, w)
				t0 := osu.Now()
				ops(w, w+n)
				lat = osu.Micros(t0, osu.Now()) / float64(n)
				if got := goshmem.AtomicFetch(c, &x[0], 1); got != w+n {
					panic(fmt.Sprintf("atomics: %s left %d on PE 1, want %d", name, got, w+n))
				}
			}
			b.PE.BarrierAll()
			var st osu.Stats
			if b.Full {
				st = b.Collect(lat, b.Me == 0)
			}
			b.Out.Result(name, lat, st, int(n))
			return lat
		}
		run("fetch_add", true, func(from, to int64) {
			var s int64
			for k := from; k < to; k++ {
				s += goshmem.AtomicFetchAdd(c, &x[0], 1, 1)
			}
			sink += s
		})
		run("fetch", false, func(from, to int64) {
			var s int64
			for k := from; k < to; k++ {
				s += goshmem.AtomicFetch(c, &x[0], 1)
			}
			sink += s
		})
		run("compare_swap", true, func(from, to int64) {
			var s int64
			for k := from; k < to; k++ {
				s += goshmem.AtomicCompareSwap(c, &x[0], k, k+1, 1)
			}
			sink += s
		})
		lat := run("add_rate", true, func(from, to int64) {
			for k := from; k < to; k++ {
				goshmem.AtomicAdd(c, &x[0], 1, 1)
			}
			c.Quiet()
		})
		b.Out.Comment("add_rate: %.2f Mops/s", 1/lat)
	})
}
