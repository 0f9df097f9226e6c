// Command put_pingpong is the OSU-style put ping-pong test: the
// one-way latency of a put answered by a put.
//
//	go run ./cmd/oshrun -n 2 ./bench/put_pingpong [-m [min:]max] [-i N] [-w N] [-f] [-peer N] [-signal] [-handoff] [-copy]
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
// -handoff adds, after the sweep, the interleaved hand-off measurement:
// 20 rounds of blocks of -i round trips of 8 bytes, each round one block
// of this program's loop (Put, Fence, P, WaitUntil) and one of each
// bare cache-line hand-off on the same two flag words of the same two
// PEs (a plain or an exchanging store through the pointer
// goshmem.PtrTo returns; a poll with one CPU pause per load, the spin
// of goshmem's waits, or without), each round starting with another
// kind. A round's ratio is the loop's time over that of the bare way
// with the least median over the rounds (the target's reference); the
// ratio to each round's fastest bare block comes last (the limit
// check's: a loop that beats it in every round beats every way).
// The machine changes state on the scale of seconds here (the same
// hand-off takes 0.03 us in one second and 0.25 us in the next), so a
// hand-off limit measured by another program at another moment is no
// reference; the blocks of a round run within milliseconds of each
// other. PE 0 prints
//
//	# interleaved 8 B: put_pingpong 0.0612 us  hand-off 0.0601 us  ratio 1.01 [0.96-1.09] over 20 rounds (hand-off per way, us:  store+pause 0.0625  xchg+pause 0.0614  store+tight 0.0610  xchg+tight 0.0625; each round's fastest way: ratio 1.03 [0.98-1.12])
//
// (medians over the blocks; the ratio is the median of the rounds'
// ratios, with their range). Needs mapped PEs (PtrTo non-nil).
//
// -copy adds, after the sweep, the bare ping-pong timed next to this
// one: for each size from 64 KiB, copyref.Rounds rounds of one block of
// round trips of this program's loop and one block of the same round
// trips made bare by each copy method of bench/internal/copyref (the
// method copies the size into the partner's buffer through goshmem.Ptr,
// then a store through PtrTo hands the turn over, polled with a pause
// per load), and by six split ways (split-t, split-nt: the sender
// hands the turn over, copies the first half and says so; the receiver
// copies the second half from the sender's source; chunks-t,
// chunks-nt: both claim chunks from a counter instead; guided-t,
// guided-nt: the sender claims shares from the front, the receiver
// from the back: goshmem's shared copy, bare), each block after an
// untimed one of its kind. A round's
// ratio is this loop's one-way bandwidth over the fastest bare way's;
// PE 0 prints, per size, the median and range of the ratios and the
// medians of both bandwidths in MB/s:
//
//	# vs bare ping-pong, interleaved: 65536 0.950 [0.900-0.990] 20000 21000; ...
//
// It is the ping-pong's own reference (bench/limits memcpy_pingpong)
// taken in the same moments.
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
	"sync/atomic"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/copyref"
	"github.com/goshmem/goshmem/bench/internal/osu"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/wait"
)

func main() {
	peer, signal, handoff, vsPattern := 1, false, false, false
	x := osu.Extra{
		Usage: "[-peer N] [-signal] [-handoff] [-copy]",
		Register: func(fs *flag.FlagSet) {
			fs.IntVar(&peer, "peer", peer, "PE 0's partner `PE`")
			fs.BoolVar(&signal, "signal", signal, "send with PutSignal (one call) instead of Put, Fence, P")
			fs.BoolVar(&handoff, "handoff", handoff, "after the sweep, time 8-byte round trips interleaved with the bare cache-line hand-off on the same words")
			fs.BoolVar(&vsPattern, "copy", vsPattern, "after the sweep, time each size from 64 KiB in blocks of round trips interleaved with blocks of the bare ping-pong (every lone copy method and a bare flag) on the same buffers")
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
			d, s := dst[:size], src[:size]
			other, _ := partner(b, peer) // (only the partners time)
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
		if handoff {
			interleaved(b, peer, dst, src, flag, &k)
		}
		if vsPattern {
			bare(b, peer, dst, src, flag, &k)
		}
	})
}

// interleavedRounds is the number of rounds of -handoff.
const interleavedRounds = 20

// interleaved is -handoff: blocks of 8-byte round trips through the
// API, alternating with blocks of the bare hand-off on the same flag
// words (see the package comment). k is the round-trip count so far,
// shared by both kinds of block.
func interleaved(b *osu.Bench, peer int, dst, src []uint8, flag []int64, k *int64) {
	b.PE.BarrierAll() // the sweep is over on both partners
	defer b.PE.BarrierAll()
	other, ok := partner(b, peer)
	if !ok {
		return
	}
	// theirs is the partner's flag word, mapped: the hand-off stores
	// into it directly. Across hosts there is no mapping, and no
	// hand-off to compare with (both partners see the same).
	theirs := goshmem.PtrTo(b.PE, &flag[0], other)
	if theirs == nil {
		b.Out.Comment("interleaved 8 B: not measured: PE %d's heap is not mapped by PE 0", peer)
		return
	}
	mine := &flag[0]
	d, s := dst[:8], src[:8]
	n := max(b.Iters, 1)
	api := func() { trips(b, d, s, mine, other, k, n) }
	// The bare hand-off in each way of storing and polling: which is
	// fastest depends on the CPU and the moment (a poll with a pause
	// leaves the writer the line sooner on some cores; an exchanging
	// store waits for the line, a plain one does not).
	bare := func(xchg, pause bool) func() {
		store := func(v int64) {
			if xchg {
				atomic.StoreInt64(theirs, v) // XCHG on amd64
			} else {
				*theirs = v // a plain store, as goshmem.P's
			}
		}
		await := func(v int64) {
			for atomic.LoadInt64(mine) != v {
				if pause {
					wait.Relax()
				}
			}
		}
		return func() {
			for range n {
				*k++
				if b.Me == 0 {
					store(*k)
					await(*k)
				} else {
					await(*k)
					store(*k)
				}
			}
		}
	}
	ways := []osu.Way{{Name: "put_pingpong", Run: api}, {Name: "store+pause", Run: bare(false, true)}, {Name: "xchg+pause", Run: bare(true, true)},
		{Name: "store+tight", Run: bare(false, false)}, {Name: "xchg+tight", Run: bare(true, false)}}
	api() // warm-up
	v := osu.Fastest(ways, osu.Interleaved(interleavedRounds, float64(2*n), ways))
	if b.Me == 0 {
		b.Out.Comment("interleaved 8 B: put_pingpong %.4f us  hand-off %.4f us  %s (hand-off per way, us:%s; %s)", v.Loop, v.Bare, v.Ratio(), v.EachWay(), v.RoundRatio())
	}
}

// bare is -copy: for each size from mem.LargeCopy up, rounds of a block
// of round trips through the API (Put, Fence, P, WaitUntil) and a block
// of bare round trips by each copy method on the same buffers and flag
// words (see the package comment). Both partners run the same blocks in
// the same order; PE 0 times. k is the round-trip count so far.
func bare(b *osu.Bench, peer int, dst, src []uint8, flag []int64, k *int64) {
	claims := osu.Calloc[int64](b, 1) // the chunked split ways' counter of the trips this PE sends
	b.PE.BarrierAll()
	defer b.PE.BarrierAll()
	other, ok := partner(b, peer)
	if !ok {
		return
	}
	theirs, theirDst := goshmem.PtrTo(b.PE, &flag[0], other), goshmem.Ptr(b.PE, dst, other)
	if theirs == nil || theirDst == nil {
		b.Out.Comment("%snot measured: PE %d's heap is not mapped by PE 0", copyref.PatternPrefix, peer)
		return
	}
	mine := &flag[0]
	await := func(v int64) {
		for atomic.LoadInt64(mine) != v {
			wait.Relax()
		}
	}
	// The split ways: the sender hands the turn over first ("go"),
	// copies the first half into the partner's buffer and stores
	// "complete"; the receiver, once it sees "go", copies the second
	// half from the sender's source into its own buffer, and the
	// message has arrived when it has done so and seen "complete".
	// It is the bare form of goshmem's shared copy
	// (SHMEM_COPY_SHARE), which moves a ping-pong's message with both
	// cores.
	theirSrc := goshmem.Ptr(b.PE, src, other)
	theirClaim := goshmem.PtrTo(b.PE, &claims[0], other)
	if theirSrc == nil || theirClaim == nil {
		b.Out.Comment("%snot measured: PE %d's heap is not mapped by PE 0", copyref.PatternPrefix, peer)
		return
	}
	awaitGE := func(v int64) {
		for atomic.LoadInt64(mine) < v {
			wait.Relax()
		}
	}
	ms := copyref.Methods()
	var rs []copyref.Result
	for _, size := range b.Sizes() {
		if size < mem.LargeCopy {
			continue
		}
		d, s, td, ts := dst[:size], src[:size], theirDst[:size], theirSrc[:size]
		// One way of split trip base (flag values base+1, base+2 one
		// way, base+3, base+4 back): the sender copies side 0, the
		// receiver side 1; with chunks or guided shares both claim
		// from a word in the sender's heap, which the sender resets
		// before it hands over.
		send := func(v int64, w copyref.Way, nt bool) {
			copyref.Reset(&claims[0], w, size)
			atomic.StoreInt64(theirs, v)
			copyref.Part(td, s, w, nt, 0, &claims[0])
			atomic.StoreInt64(theirs, v+1)
		}
		receive := func(v int64, w copyref.Way, nt bool) {
			awaitGE(v)
			copyref.Part(d, ts, w, nt, 1, theirClaim)
			awaitGE(v + 1)
		}
		api := func(n int) { trips(b, d, s, mine, other, k, n) }
		refs := make([]copyref.Ref, len(ms))
		for i, m := range ms {
			refs[i] = copyref.Ref{Name: m.Name, Cgo: m.Cgo, Run: func(n int) {
				for range n {
					*k++
					if b.Me == 0 {
						m.Loop(td, s, 1)
						atomic.StoreInt64(theirs, *k)
						await(*k)
					} else {
						await(*k)
						m.Loop(td, s, 1)
						atomic.StoreInt64(theirs, *k)
					}
				}
			}}
		}
		split := func(nt bool, w copyref.Way) func(n int) {
			return func(n int) {
				for range n {
					base := *k
					*k += 4
					if b.Me == 0 {
						send(base+1, w, nt)
						receive(base+3, w, nt)
					} else {
						receive(base+1, w, nt)
						send(base+3, w, nt)
					}
				}
			}
		}
		refs = append(refs, copyref.Ref{Name: "split-t", Run: split(false, copyref.Halves)}, copyref.Ref{Name: "split-nt", Run: split(true, copyref.Halves)},
			copyref.Ref{Name: "chunks-t", Run: split(false, copyref.Chunks)}, copyref.Ref{Name: "chunks-nt", Run: split(true, copyref.Chunks)},
			copyref.Ref{Name: "guided-t", Run: split(false, copyref.Guided)}, copyref.Ref{Name: "guided-nt", Run: split(true, copyref.Guided)})
		// Half a copy block's round trips: each moves the size twice.
		n := max(2, copyref.BlockCount(size)/2)
		rs = append(rs, copyref.InterleaveRefs(size, n, copyref.Rounds, 2*float64(size)*float64(n), api, refs))
	}
	if b.Me != 0 || len(rs) == 0 {
		return
	}
	b.Out.Comment("bare ping-pong methods: %s, split-t, split-nt, chunks-t, chunks-nt, guided-t, guided-nt; %d rounds per size; fastest per size (rounds won): %s", copyref.Names(ms), copyref.Rounds, copyref.WinsBySize(rs))
	b.Out.Comment("%s%s", copyref.PatternPrefix, copyref.Format(rs))
	b.Out.Comment("%s%s", copyref.RoundPrefix, copyref.FormatRoundBest(rs))
}

// trips makes n round trips through the API, numbered from *k+1: PE 0
// puts d, fences, stores the trip's number into other's flag and waits
// for its own; its partner waits, then answers the same way.
func trips(b *osu.Bench, d, s []uint8, flag *int64, other int, k *int64, n int) {
	for range n {
		*k++
		if b.Me == 0 {
			goshmem.Put(b.Ctx, d, s, other)
			b.Ctx.Fence()
			goshmem.P(b.Ctx, flag, *k, other)
			goshmem.WaitUntil(b.PE, flag, goshmem.CmpEQ, *k)
		} else {
			goshmem.WaitUntil(b.PE, flag, goshmem.CmpEQ, *k)
			goshmem.Put(b.Ctx, d, s, other)
			b.Ctx.Fence()
			goshmem.P(b.Ctx, flag, *k, other)
		}
	}
}

// partner returns the PE this one exchanges round trips with (peer for
// PE 0, PE 0 for peer), and false on the PEs that take no part.
func partner(b *osu.Bench, peer int) (int, bool) {
	switch b.Me {
	case 0:
		return peer, true
	case peer:
		return 0, true
	}
	return 0, false
}
