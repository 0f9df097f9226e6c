// Command put_mr is the OSU-style put message-rate test
// (osu_oshm_put_mr, with windows):
//
//	go run ./cmd/oshrun -n 2 ./bench/put_mr [-m [min:]max] [-i N] [-w N] [-f]
//
// The PEs form pairs as in OSU: with P = NPEs/2, PE i < P sends to PE
// i+P (with an odd count the last PE only waits). For each message size
// (bytes of a []uint8, default 1 to 4 MiB, doubling), every sending PE
// issues windows of 64 goshmem.Put of size bytes to its partner, each
// window ended by one ctx.Quiet: first the warm-up windows, then the
// timed ones. Put j of a window (j = 0..63) goes to offset
// (j mod slots)*size of the partner's window buffer, where the buffer
// has B = max(maxSize, min(64*maxSize, 64 MiB)) bytes and
// slots = min(64, B/size): distinct destinations, as OSU's offsets,
// within a bounded buffer (64 MiB plus a maxSize source per PE at
// most). Each sender's rate is 64*windows messages over its time; the
// row is the sum over the senders in messages per second (as OSU's
// sum_to_all). BarrierAll separates the sizes.
//
// -i and -w count windows. Defaults: -i 1000, -w 100 for sizes up to
// 64 KiB, a tenth above, a hundredth above 1 MiB (at least 1). Output
// (PE 0, stdout):
//
//	# OSU-style goshmem Put Message Rate Test
//	# PEs: 2  iterations: 1000  warmup: 100
//	# Size          Messages/s
//	1                    25000000.00
//
// -f adds "Min Messages/s  Max Messages/s  Iterations": the smallest and
// largest rate of one sender, and the timed windows. The format is the
// package doc of bench/internal/osu. Needs at least 2 PEs.
package main

import (
	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

// window is the number of puts between two Quiets.

// maxWindowBuf bounds the window buffer (B above).
const maxWindowBuf = 64 << 20

func main() {
	osu.Main("put_mr", "Put Message Rate", 2, osu.MessageRateDefaults, func(b *osu.Bench) {
		bufBytes := max(b.MaxSize, min(osu.Window*b.MaxSize, maxWindowBuf))
		src, dst := b.Buffers(bufBytes)
		pairs := b.N / 2
		sender := b.Me < pairs
		partner := b.Me + pairs
		b.Out.Columns(osu.Size, osu.MessagesPS)
		for _, size := range b.Sizes() {
			iters, warm := b.ItersFor(size), b.WarmupFor(size)
			slots := min(osu.Window, bufBytes/size)
			var rate float64
			b.PE.BarrierAll()
			if sender {
				s := src[:size]
				us := osu.Time(warm, iters, func(n int) {
					for range n {
						for j := range osu.Window {
							off := j % slots * size
							goshmem.Put(b.Ctx, dst[off:off+size], s, partner)
						}
						b.Ctx.Quiet()
					}
				})
				rate = float64(osu.Window) * float64(iters) * 1e6 / us
			}
			b.PE.BarrierAll()
			// The row is the job's rate: the sum over the senders.
			st := b.Collect(rate, sender)
			b.Out.Result(osu.Key(size), st.Sum, st, iters)
		}
	})
}
