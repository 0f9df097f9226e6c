// Command barrier is the OSU-style barrier latency test
// (osu_oshm_barrier with BarrierAll):
//
//	go run ./cmd/oshrun -n 8 ./bench/barrier [-i N] [-w N] [-f] [-host]
//
// Every PE does the warm-up barriers, then times iterations of
// pe.BarrierAll; each PE's latency is its time divided by the
// iterations. Each PE stores its latency into an array on PE 0 with
// goshmem.P (then BarrierAll); the row is PE 0's latency, and with -f
// the minimum and maximum over all PEs and the iterations; a comment
// line after it gives the average over all PEs (what OSU prints). -m
// is accepted and ignored. Runs with any number of PEs, 1 included.
// Defaults: -i 10000, -w 1000. Output (PE 0, stdout):
//
//	# OSU-style goshmem Barrier Test
//	# PEs: 8  iterations: 10000  warmup: 1000
//	# PEs           Latency (us)
//	8                          80.20
//	# avg over PEs: 80.21 us
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations". -host
// times the sync of a team of each PE's host's PEs (split from
// goshmem.TeamHost) instead of BarrierAll: the on-host barrier, which
// bench/compare's cross-host mode times with and without a second
// host. The format is the package doc of bench/internal/osu.
package main

import (
	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

func main() {
	host, x := osu.BoolFlag("host", "time the sync of a team of each PE's host's PEs (split from TeamHost) instead of BarrierAll")
	osu.MainExtra("barrier", "Barrier", 1, osu.LatencyDefaults, x, func(b *osu.Bench) {
		b.Out.Columns(osu.PEs, osu.LatencyUs)
		barrier := b.PE.BarrierAll
		if *host {
			// A team of the host's PEs split from TeamHost, not TeamHost
			// itself: on one host TeamHost is the world and syncs with
			// the world's barrier (control block flags), across hosts
			// with team slots, and the comparison would time two
			// algorithms.
			h := goshmem.TeamHost(b.PE)
			t, err := h.SplitStrided(0, 1, h.NPEs(), nil)
			if err != nil {
				panic(err)
			}
			barrier = t.Sync
		}
		for i := 0; i < b.Warmup; i++ {
			barrier()
		}
		t0 := osu.Now()
		for i := 0; i < b.Iters; i++ {
			barrier()
		}
		lat := osu.Micros(t0, osu.Now()) / float64(b.Iters)
		st := b.Collect(lat, true)
		b.Out.Result(osu.Key(b.N), lat, st, b.Iters)
		b.Out.Comment("avg over PEs: %.2f us", st.Avg())
	})
}
