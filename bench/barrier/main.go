// Command barrier is the OSU-style barrier latency test
// (osu_oshm_barrier with BarrierAll):
//
//	go run ./cmd/oshrun -n 8 ./bench/barrier [-i N] [-w N] [-f] [-host] [-handoff]
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
//
// -handoff (2 PEs) adds, after the row, the bare exchange of two words
// timed next to the barrier: 20 rounds of one block of -i barriers and one block of -i
// bare barriers of each way, each round starting with another kind. In
// a bare barrier each PE stores the barrier's number into the word its
// partner polls (through the pointer goshmem.PtrTo returns, with a
// plain or an exchanging store), then polls its own word with one CPU
// pause per load (the spin of goshmem's waits); the two words lie in
// the two PEs' heaps at the same offset, or in two lines 128 bytes
// apart in PE 0's heap, or in one line of it. A round's ratio is
// the barrier's time over the fastest bare way's. A 2-PE barrier is
// such an exchange plus the library's work, yet on the development
// machine the ratio fell below 1 in some runs (0.75-0.83: in some
// states no bare layout is as fast as the barrier's own flags), so it
// is a reference, not a bound; a hand-off measured by another program
// at another moment is not even that, since the machine changes state
// within seconds. PE 0 prints
//
//	# interleaved barrier: barrier 0.0573 us  bare 0.0426 us  ratio 1.34 [1.24-1.44] over 20 rounds (bare barrier, us:  heaps/store 0.0803  heaps/xchg 0.0884  lines/store 0.0511  lines/xchg 0.0530  line/store 0.0426  line/xchg 0.0440)
//
// (medians over the blocks; the ratio is the median of the rounds'
// ratios, with their range), or why it did not measure.
package main

import (
	"flag"
	"sync/atomic"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
	"github.com/goshmem/goshmem/internal/wait"
)

// interleavedPrefix starts -handoff's comment.
const interleavedPrefix = "interleaved barrier: "

// interleavedRounds is the number of rounds of -handoff.
const interleavedRounds = 20

func main() {
	var host, handoff bool
	x := osu.Extra{
		Usage: "[-host] [-handoff]",
		Register: func(fs *flag.FlagSet) {
			fs.BoolVar(&host, "host", false, "time the sync of a team of each PE's host's PEs (split from TeamHost) instead of BarrierAll")
			fs.BoolVar(&handoff, "handoff", false, "with 2 PEs, time the barrier in blocks interleaved with the bare exchange of two words through PtrTo")
		},
	}
	osu.MainExtra("barrier", "Barrier", 1, osu.LatencyDefaults, x, func(b *osu.Bench) {
		b.Out.Columns(osu.PEs, osu.LatencyUs)
		barrier := b.PE.BarrierAll
		if host {
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
		if handoff {
			interleaved(b, barrier)
		}
	})
}

// interleaved is -handoff (see the package comment).
func interleaved(b *osu.Bench, barrier func()) {
	// Words of the bare barriers (the heap's allocations are aligned to
	// a cache line): word[0] of each heap; word[16] and word[32] of PE
	// 0's, two lines 128 bytes apart (past the adjacent-line
	// prefetcher's pair); word[48] and word[49] of PE 0's, one line.
	word := osu.Calloc[int64](b, 64)
	b.PE.BarrierAll()
	defer b.PE.BarrierAll()
	if b.N != 2 {
		if b.Me == 0 {
			b.Out.Comment("%snot measured: %d PEs (the bare barrier is of 2)", interleavedPrefix, b.N)
		}
		return
	}
	other := 1 - b.Me
	at := func(i, pe int) *int64 { return goshmem.PtrTo(b.PE, &word[i], pe) }
	if at(0, other) == nil {
		if b.Me == 0 {
			b.Out.Comment("%snot measured: the partner's heap is not mapped", interleavedPrefix)
		}
		return
	}
	// The layouts of the two words, as (the word this PE polls, the
	// one it stores into): each in its own PE's heap, at the same
	// offset; two lines of one page of PE 0's heap; one line of it.
	// Where the words lie changes what the exchange costs, by up to 3x
	// on the AMD EPYC development machine, one line being the fastest
	// (docs/performance.md).
	layouts := []struct {
		name         string
		mine, theirs *int64
	}{
		{"heaps", at(0, b.Me), at(0, other)},
		{"lines", at(16+16*b.Me, 0), at(16+16*other, 0)},
		{"line", at(48+b.Me, 0), at(48+other, 0)},
	}
	n := max(b.Iters, 1)
	var k int64 // bare barriers so far, the same count on both PEs
	bare := func(mine, theirs *int64, xchg bool) func() {
		return func() {
			for range n {
				k++
				if xchg {
					atomic.StoreInt64(theirs, k) // XCHG on amd64
				} else {
					*theirs = k
				}
				// The partner may be a barrier ahead already: it
				// stored k+1 once it saw k.
				for atomic.LoadInt64(mine) < k {
					wait.Relax()
				}
			}
		}
	}
	ways := []osu.Way{{Name: "barrier", Run: func() {
		for range n {
			barrier()
		}
	}}}
	for _, l := range layouts {
		ways = append(ways, osu.Way{Name: l.name + "/store", Run: bare(l.mine, l.theirs, false)},
			osu.Way{Name: l.name + "/xchg", Run: bare(l.mine, l.theirs, true)})
	}
	v := osu.Fastest(ways, osu.Interleaved(interleavedRounds, float64(n), ways))
	if b.Me == 0 {
		b.Out.Comment("%sbarrier %.4f us  bare %.4f us  %s (bare barrier, us:%s)", interleavedPrefix, v.Loop, v.Bare, v.Ratio(), v.EachWay())
	}
}
