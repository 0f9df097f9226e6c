package osu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/copyref"
	"github.com/goshmem/goshmem/internal/mem"
)

// Buffers allocates the source (MaxSize bytes) and destination (dstBytes)
// symmetric buffers of a size-sweeping program and touches them, so
// that no page fault lands in a timed loop.
func (b *Bench) Buffers(dstBytes int) (src, dst []uint8) {
	src = Malloc[uint8](b, b.MaxSize)
	dst = Malloc[uint8](b, dstBytes)
	Fill(src, 'a')
	Fill(dst, 'b')
	return src, dst
}

// Sweep is the skeleton every size-sweeping program shares: for each
// size, a barrier; then, on the PEs where timed is true, measure(size,
// iters, warmup) with the iteration counts scaled for that size; another
// barrier; and the row, with -f the min and max over the timing PEs.
// measure returns the row's figure.
func (b *Bench) Sweep(timed bool, measure func(size, iters, warmup int) float64) {
	b.SweepSizes(b.Sizes(), timed, measure)
}

// SweepSizes is Sweep over the given sizes (a subset of b.Sizes(), for
// programs that cannot run every size; see Multiples). Before the
// first size, its loop settles (settle).
func (b *Bench) SweepSizes(sizes []int, timed bool, measure func(size, iters, warmup int) float64) {
	if len(sizes) > 0 {
		b.settle(sizes[0], timed, measure, SettleTime)
	}
	for _, size := range sizes {
		iters, warm := b.ItersFor(size), b.WarmupFor(size)
		var v float64
		b.PE.BarrierAll()
		if timed {
			v = measure(size, iters, warm)
		}
		b.PE.BarrierAll()
		var st Stats
		if b.Full {
			st = b.Collect(v, timed)
		}
		b.Out.Result(Key(size), v, st, iters)
	}
	if !b.VsBarrier {
		return
	}
	// After the whole sweep, so that the table's figures are taken
	// exactly as the peer's program takes its own.
	var vs []string
	for _, size := range sizes {
		r := b.vsBarrier(size, b.ItersFor(size), timed, measure)
		vs = append(vs, fmt.Sprintf("%s %.2f [%.2f-%.2f]", Key(size), Median(r), slices.Min(r), slices.Max(r)))
	}
	b.Out.Comment("%s%s", VsBarrierPrefix, strings.Join(vs, "; "))
}

// SettleTime is how long the first size's loop runs untimed before a
// sweep (settle).
const SettleTime = 20 * time.Millisecond

// settle runs the loop of size untimed, in blocks of its warm-up count
// (measure with no warm-up, its figure dropped), until PE 0 has spent d
// in it; PE 0 decides after each block and broadcasts the decision, so
// every PE runs the same blocks (the collectives' loops need it). It
// returns at once with a warm-up of 0 (-w 0: nothing untimed).
//
// A Go process's runtime monitor (sysmon) wakes every 20 us (about 80
// with the kernel's timer slack) until it has had 50 rounds with
// nothing to retake, so for the first 4-5 ms of a PE's process it takes
// the PE's CPU in the middle of hand-offs (docs/performance.md, "A
// start-up transient"); a sweep's first size then ran 1.3-1.8 times
// slower than when it came second (2-PE broadcast of 8 and of 16 B,
// each first and second, 3 runs each, -w 50000), and the compare
// report held it against the peer, whose C processes have no such
// monitor. Warm-ups counted in calls end inside it when calls are
// short (50000 broadcasts of 8 B take 2.5 ms); 20 ms of them leave it
// behind.
func (b *Bench) settle(size int, timed bool, measure func(size, iters, warmup int) float64, d time.Duration) {
	n := b.WarmupFor(size)
	if n == 0 {
		return
	}
	more := Malloc[int64](b, 1)
	defer goshmem.Free(b.PE, more)
	team := goshmem.TeamWorld(b.PE)
	t0 := Now()
	for {
		if timed {
			measure(size, n, 0)
		}
		if b.Me == 0 {
			more[0] = 0
			if time.Since(t0) < d {
				more[0] = 1
			}
		}
		goshmem.Broadcast(team, more, more, 0)
		if more[0] == 0 {
			return
		}
	}
}

// VsBarrierPrefix starts -vs-barrier's closing comment: per size, the
// median [min-max] of the ratios of VsBarrierPairs block pairs,
// "vs barrier, interleaved: 8 1.12 [1.05-1.30]; 16 1.08 [...]; ...".
const VsBarrierPrefix = "vs barrier, interleaved: "

// VsBarrierPairs is the number of block pairs per size of -vs-barrier.
const VsBarrierPairs = 6

// vsBarrier times VsBarrierPairs pairs of blocks of iters iterations:
// the test (measure, no warm-up) and BarrierAll, in alternating order,
// and returns the ratios test/barrier of each pair as this PE timed
// them. The machine's state can change within seconds (the same 2-PE
// barrier takes 0.08 us in one second and 0.3 in the next): a ratio of
// blocks taken milliseconds apart compares one state.
func (b *Bench) vsBarrier(size, iters int, timed bool, measure func(size, iters, warmup int) float64) []float64 {
	r := make([]float64, 0, VsBarrierPairs)
	for i := range VsBarrierPairs {
		var v, bar float64
		test := func() {
			b.PE.BarrierAll()
			if timed {
				v = measure(size, iters, 0)
			}
		}
		barrier := func() {
			b.PE.BarrierAll()
			bar = Time(0, iters, func(n int) {
				for range n {
					b.PE.BarrierAll()
				}
			}) / float64(iters)
		}
		if i%2 == 0 {
			test()
			barrier()
		} else {
			barrier()
			test()
		}
		if bar > 0 {
			r = append(r, v/bar)
		}
	}
	if len(r) == 0 {
		r = append(r, 0)
	}
	return r
}

// Median returns the median of x (the upper one of an even count),
// leaving x as it is.
func Median(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	return x[len(x)/2]
}

// Multiples splits sizes into those that are multiples of unit (whole
// elements of unit bytes) and the others, in order. A program that
// skips sizes says so in a comment line before its header (SkipComment),
// as its C peer does.
func Multiples(sizes []int, unit int) (run, skipped []int) {
	for _, s := range sizes {
		if s%unit == 0 {
			run = append(run, s)
		} else {
			skipped = append(skipped, s)
		}
	}
	return run, skipped
}

// SkipComment returns the comment that lists skipped sizes and why:
// "skipped sizes: 1 2 4 (why)".
func SkipComment(skipped []int, why string) string {
	var b strings.Builder
	b.WriteString("skipped sizes:")
	for _, s := range skipped {
		b.WriteString(" " + strconv.Itoa(s))
	}
	return b.String() + " (" + why + ")"
}

// Time runs loop(warmup) untimed, then loop(iters), and returns the
// second's duration in microseconds. loop runs its n iterations itself,
// so the measured code has no call per iteration added to it.
func Time(warmup, iters int, loop func(n int)) float64 {
	loop(warmup)
	t0 := Now()
	loop(iters)
	return Micros(t0, Now())
}

// Window is OSU's window: the number of non-blocking operations issued
// between two Quiets by the bandwidth and message-rate tests.
const Window = 64

// compile-time check that the helpers fit the API they drive.
var _ = goshmem.PutNBI[uint8]

// VsCopy is the -copy of the bandwidth programs, after the sweep: for
// each size of the sweep from mem.LargeCopy bytes up, PE 0 times
// copyref.Rounds rounds of a block of k transfers of size bytes
// (nbi(size) issues one; windows of Window, each ended by Quiet, as the
// sweep's) alternating with a block of k copies of the same bytes by
// every copyref method, from src to dst, lone and split with PE 1
// (copyref.Splitter: a put or get from SHMEM_COPY_SHARE bytes up is
// copied by both PEs), and prints the per-size ratios in one closing
// comment (copyref.Prefix). dst and src are the bytes the transfer
// writes and reads as PE 0 sees them, the partner's through Ptr (nil
// when the partner's heap is not mapped, and then the comment says
// so); helpDst and helpSrc the same bytes as PE 1 sees them. Every PE
// calls it; PE 1 waits in WaitUntil meanwhile, where it also takes
// chunks of PE 0's shared transfers.
func (b *Bench) VsCopy(dst, src, helpDst, helpSrc []uint8, nbi func(size int)) {
	req := Malloc[int64](b, 3)  // PE 1's: request, length, a word to ring it with
	done := Malloc[int64](b, 2) // PE 0's: answer, chunk counter
	clear(req)
	clear(done)
	b.PE.BarrierAll()
	defer b.PE.BarrierAll()
	mapped := dst != nil && src != nil
	if b.Me == 1 {
		if helpDst != nil && helpSrc != nil {
			copyref.Serve(func(last int64) int64 {
				goshmem.WaitUntil(b.PE, &req[0], goshmem.CmpNE, last)
				return atomic.LoadInt64(&req[0])
			}, &req[1], goshmem.PtrTo(b.PE, &done[1], 0), goshmem.PtrTo(b.PE, &done[0], 0), helpDst, helpSrc)
		}
		return
	}
	if b.Me != 0 {
		return
	}
	theirs := goshmem.Ptr(b.PE, req, 1)
	if !mapped || theirs == nil {
		b.Out.Comment("%snot measured: PE 1's heap is not mapped by PE 0", copyref.Prefix)
		if theirs != nil {
			atomic.StoreInt64(&theirs[0], copyref.SplitStop)
			goshmem.P(b.Ctx, &req[2], 1, 1)
		}
		return
	}
	sp := &copyref.Splitter{Req: &theirs[0], Len: &theirs[1], Claim: &done[1], Done: &done[0],
		Ring: func() { goshmem.P(b.Ctx, &req[2], 1, 1) }}
	defer sp.Stop()
	ms := append(copyref.Methods(), sp.Methods()...)
	var rs []copyref.Result
	for _, size := range b.Sizes() {
		if size < mem.LargeCopy {
			continue
		}
		xfer := func(k int) {
			for k > 0 {
				w := min(k, Window)
				for range w {
					nbi(size)
				}
				b.Ctx.Quiet()
				k -= w
			}
		}
		rs = append(rs, copyref.Interleave(size, copyref.Rounds, xfer, dst, src, ms))
	}
	if len(rs) == 0 {
		return
	}
	b.Out.Comment("copy methods: %s; %d rounds per size, each a block of transfers and a block of every method", copyref.Names(ms), copyref.Rounds)
	b.Out.Comment("fastest copy per size (rounds won): %s", copyref.WinsBySize(rs))
	b.Out.Comment("%s%s", copyref.Prefix, copyref.Format(rs))
	b.Out.Comment("%s%s", copyref.RoundPrefix, copyref.FormatRoundBest(rs))
}
