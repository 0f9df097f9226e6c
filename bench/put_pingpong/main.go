// Command put_pingpong is the OSU-style put ping-pong test: the
// one-way latency of a put answered by a put.
//
//	go run ./cmd/oshrun -n 2 ./bench/put_pingpong [-m [min:]max] [-i N] [-w N] [-f] [-peer N] [-signal]
//
// For each message size (bytes of a []uint8, default 1 to 4 MiB,
// doubling), PE 0 and PE 1 exchange warm-up plus timed round trips. In
// round trip k (k = 1, 2, ... counted over the whole run, never reset),
// PE 0 puts size bytes into PE 1's data buffer, calls ctx.Fence, stores
// k into PE 1's flag with goshmem.P, and waits with
// WaitUntil(flag, CmpEQ, k) on its own flag; PE 1 waits for its flag
// to equal k, then answers the same way (put size bytes, Fence, P k into
// PE 0's flag). PE 0 times the timed round trips; the latency is the
// time divided by 2*iterations. Further PEs only wait in BarrierAll,
// which separates the sizes. Data buffers and the int64 flag are
// symmetric (goshmem.Malloc, goshmem.Calloc).
//
// -peer N makes PE N, not PE 1, PE 0's partner (PE 1 then only waits
// in BarrierAll): across hosts, with PE N a leader or not, it measures
// what a non-leader PE's cross-host put costs (bench/compare -hosts).
//
// -signal sends each message with goshmem.PutSignal (data, then k set
// into the flag word) and waits with SignalWaitUntil, instead of Put,
// Fence and P: across hosts PutSignal is one frame. (The peer, Open MPI
// 4.1's OSHMEM, has no shmem_put_signal, so bench/compare does not use
// it.)
//
// Defaults: -i 10000, -w 1000 for sizes up to 64 KiB, a tenth above,
// a hundredth above 1 MiB (at least 1). Output (PE 0, stdout):
//
//	# OSU-style goshmem Put Ping-Pong Test
//	# PEs: 2  iterations: 10000  warmup: 1000
//	# Size          Latency (us)
//	1                           0.15
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations"; only PE 0
// times, so min = max = latency. The format is the package doc of
// bench/internal/osu. Needs at least 2 PEs.
package main

import (
	"flag"
	"fmt"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

func main() {
	peer, signal := 1, false
	x := osu.Extra{
		Usage: "[-peer N] [-signal]",
		Register: func(fs *flag.FlagSet) {
			fs.IntVar(&peer, "peer", peer, "PE 0's partner `PE`")
			fs.BoolVar(&signal, "signal", signal, "send with PutSignal (one call) instead of Put, Fence, P")
		},
		Check: func(osu.Config) error {
			if peer < 1 {
				return fmt.Errorf("-peer %d: PE 0's partner is a PE from 1 up", peer)
			}
			return nil
		},
	}
	osu.MainExtra("put_pingpong", "Put Ping-Pong", 2, osu.LatencyDefaults, x, func(b *osu.Bench) {
		if peer >= b.N {
			if b.Me == 0 {
				fmt.Printf("# -peer %d: the job has PEs 0 to %d\n", peer, b.N-1)
				b.PE.GlobalExit(1)
			}
			return
		}
		src, dst := b.Buffers(b.MaxSize)
		flag := osu.Calloc[int64](b, 1)
		sig := osu.Calloc[uint64](b, 1)
		b.Out.Columns(osu.Size, osu.LatencyUs)
		var k int64 // round trips so far, the same count on PE 0 and its partner
		b.Sweep(b.Me == 0 || b.Me == peer, func(size, iters, warm int) float64 {
			d, s, other := dst[:size], src[:size], peer
			if b.Me != 0 {
				other = 0
			}
			t0 := osu.Now()
			for i := 0; i < warm+iters; i++ {
				if i == warm {
					t0 = osu.Now()
				}
				k++
				if signal {
					if b.Me == 0 {
						goshmem.PutSignal(b.Ctx, d, s, &sig[0], uint64(k), goshmem.SignalSet, other)
						goshmem.SignalWaitUntil(b.PE, &sig[0], goshmem.CmpEQ, uint64(k))
					} else {
						goshmem.SignalWaitUntil(b.PE, &sig[0], goshmem.CmpEQ, uint64(k))
						goshmem.PutSignal(b.Ctx, d, s, &sig[0], uint64(k), goshmem.SignalSet, other)
					}
					continue
				}
				if b.Me == 0 {
					goshmem.Put(b.Ctx, d, s, other)
					b.Ctx.Fence()
					goshmem.P(b.Ctx, &flag[0], k, other)
					goshmem.WaitUntil(b.PE, &flag[0], goshmem.CmpEQ, k)
				} else {
					goshmem.WaitUntil(b.PE, &flag[0], goshmem.CmpEQ, k)
					goshmem.Put(b.Ctx, d, s, other)
					b.Ctx.Fence()
					goshmem.P(b.Ctx, &flag[0], k, other)
				}
			}
			return osu.Micros(t0, osu.Now()) / float64(2*iters)
		})
	})
}
