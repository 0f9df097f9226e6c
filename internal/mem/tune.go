package mem

import (
	"math"
	"sync/atomic"
	"time"
	"unsafe"
)

// Whether a large copy should keep its destination in the cache
// depends on what the program does next, which the copy cannot see.
// A put of 8 MiB on a machine with a 32 MiB last-level cache shows
// both cases (AMD EPYC Zen 4, 3 alternated pairs each):
//
//   - put_bw puts the same 8 MiB into the same destination again and
//     again: source and destination (16 MiB) stay in the cache, and a
//     temporal copy (REP MOVSB) ran at 27-31 GB/s against 25-27 for
//     streaming stores;
//   - a ping-pong puts 8 MiB each way between two PEs: four buffers,
//     32 MiB, which the cache cannot hold, so a temporal copy reads
//     every destination line from memory before it overwrites it (and
//     writes it back later), and streaming stores took 336-343 us one
//     way against 534-636 us.
//
// No fixed threshold serves both. A Tuner therefore times the copies
// in the band where either kernel can win, the sizes from half the
// threshold to the threshold (above it streaming stores won both
// cases: 12 MiB lone copies 27-28 against 21-26 GB/s, 16 MiB 24
// against 10-17). It keeps a running cost per byte of each kernel,
// copies with the one it chose, and now and then makes a short burst
// with the other, after which it chooses again. The bursts come rarely
// while the choice holds (their period doubles up to tuneMaxPeriod
// copies) and often after it changed. Outside the band the plan's
// choice is right, and copies are not timed.

// Tuner parameters.
const (
	// A burst with one kernel is tuneBurstT (temporal) or tuneBurstNT
	// (streaming) copies long, and its first tuneSettleT or
	// tuneSettleNT copies are not timed, nor are the first copies with
	// the chosen kernel after a burst: a switch has a cost of its own.
	// A temporal copy after streaming stores finds its destination in
	// memory, and the last-level cache (a victim cache on AMD, filled
	// by what the core's L2 evicts) takes several copies to hold it
	// again (8 MiB, GB/s per copy after streaming copies: 19 22 25 31
	// 35 36 36 35, and sometimes longer); a streaming copy after
	// temporal ones settles at once (23 27 28 28).
	tuneBurstT, tuneSettleT   = 16, 10
	tuneBurstNT, tuneSettleNT = 3, 1
	// The copies between two bursts: tuneMinPeriod after the choice
	// changed (and after the first choice), doubling after each burst
	// that left it as it was, up to tuneMaxPeriod. (A temporal burst in
	// an 8 MiB ping-pong, where temporal copies lose, costs about 1% of
	// the longest period.)
	tuneMinPeriod, tuneMaxPeriod = 64, 1024
	// tuneMargin is how much cheaper the other kernel must have been
	// for a burst to change the choice.
	tuneMargin = 0.05
	// A copy with the chosen kernel moves its running cost by
	// tuneDown of the difference when it was cheaper, by tuneUp when
	// it was dearer: the cost tracks what the kernel does when nothing
	// else gets in its way. What gets in its way only ever adds time
	// (another program's, or another pattern's, lines to evict first;
	// a context switch), and a choice made on such times would follow
	// the accident, not the kernel.
	tuneDown, tuneUp = 0.5, 0.125
)

// Tuner is a copy engine that chooses between temporal and streaming
// stores by timing its own copies near the plan's non-temporal
// threshold (see above); elsewhere it is the plan's Copy. One Tuner
// serves one PE; its methods may be called by several goroutines at
// once (its state is atomic words; a lost update only delays a
// choice). A Tuner of a plan without a non-temporal threshold, or made
// with adapt false, copies as the plan does.
type Tuner struct {
	plan   CopyPlan
	lo, hi uintptr // the band: lo < n <= hi
	// bands are the band's power-of-two classes, each choosing on its
	// own: (lo, 2lo] and, for a shared Tuner, (2lo, 4lo].
	bands [2]tuneBand
}

// class returns the class of the band that n falls in.
func (t *Tuner) class(n uintptr) uint8 {
	if n > 2*t.lo {
		return 1
	}
	return 0
}

// tuneBand is the state of the band.
type tuneBand struct {
	// copies counts the copies in the band (a copy's index is the
	// count before it).
	copies atomic.Uint64
	// next is the index of the copy that starts the next burst
	// (0: none scheduled yet), period the copies between the last two
	// bursts, and copies before quiet are not timed (the chosen kernel
	// settles after a burst of the other).
	next, period, quiet atomic.Uint64
	// chosen is the kernel copies use outside bursts (0 temporal, 1
	// streaming), burst the kernel of the current or last burst.
	chosen, burst atomic.Uint32
	// cost[k] is the running cost of kernel k in nanoseconds per byte,
	// as float64 bits; seen[k] counts its samples.
	cost [2]atomic.Uint64
	seen [2]atomic.Uint64
}

// NewTuner returns a Tuner over plan p; adapt false makes it p's Copy
// everywhere (SHMEM_COPY_ADAPT=off).
func NewTuner(p CopyPlan, adapt bool) *Tuner {
	t := &Tuner{plan: p}
	if adapt && p.NTThreshold >= 2*LargeCopy {
		t.lo, t.hi = p.NTThreshold/2, p.NTThreshold
	}
	return t
}

// NewSharedTuner returns a Tuner for copies that two or more cores
// make together (node's shared copies), whose band reaches twice the
// plan's threshold: (threshold/2, 2 x threshold]. Two cores keep more
// misses in flight than one, and temporal stores then win above the
// lone copy's threshold when the buffers are reused: put_bw of 16 MiB
// shared between 2 PEs on AMD EPYC Zen 4 (32 MiB L3, threshold 8 MiB)
// ran at 29-37 GB/s with temporal stores against 27-28 with streaming
// ones (3 alternated pairs), while a 16 MiB ping-pong (four buffers,
// twice the cache) took 776-949 us one way with temporal stores
// against 618-646 with streaming ones: the band's timing chooses, in
// each of its two power-of-two classes on its own (one choice for both
// carried an 8 MiB ping-pong's over to 16 MiB puts, and back). The
// class above the threshold starts on streaming stores, the plan's
// choice there, and makes its first burst (of temporal stores) only at
// its tuneSharedFirst-th copy: a 16 MiB ping-pong of 110 copies per PE
// spent 16 of them in the opening burst of temporal stores, 7-10%
// slower than with streaming stores alone, while a stream of 16 MiB
// puts still learns within its first 300 copies.
func NewSharedTuner(p CopyPlan, adapt bool) *Tuner {
	t := NewTuner(p, adapt)
	if t.hi > 0 {
		t.hi = 2 * p.NTThreshold
		t.bands[1].chosen.Store(1)
		t.bands[1].next.Store(tuneSharedFirst)
	}
	return t
}

// tuneSharedFirst is the copy at which a shared Tuner's upper class
// makes its first burst.
const tuneSharedFirst = 256

// Band returns the sizes the Tuner chooses for: lo < n <= hi; 0, 0
// when it never does.
func (t *Tuner) Band() (lo, hi int) { return int(t.lo), int(t.hi) }

// Copy copies min(len(dst), len(src)) bytes from src to dst, as the
// built-in copy does, and returns the count: the plan's Copy, except in
// the band, where the kernel is the Tuner's choice. As Copy, it fences
// streaming stores before it returns, and moves raw bytes.
func (t *Tuner) Copy(dst, src []byte) int {
	n := uintptr(min(len(dst), len(src)))
	if n <= t.lo || n > t.hi {
		return t.plan.Copy(dst, src)
	}
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	if overlap(uintptr(d), uintptr(s), n) {
		return copy(dst[:n], src[:n])
	}
	c := t.Pick(int(n))
	p := kindPlan(t.plan, c.NT)
	if !c.Timed() {
		copyPlanned(&p, d, s, n)
		return int(n)
	}
	start := time.Now()
	copyPlanned(&p, d, s, n)
	t.Done(c, time.Since(start))
	return int(n)
}

// Choice is the Tuner's choice for one copy (Pick): its kernel, and
// whether and how its time counts.
type Choice struct {
	NT bool // streaming stores (CopyKind's nt)
	k  uint32
	s  sample
	b  uint8   // the band's class
	n  uintptr // 0: outside the band
}

// Timed reports whether the copy's time should go to Done.
func (c Choice) Timed() bool { return c.n != 0 && c.s != untimed }

// Pick chooses the kernel of a copy of n non-overlapping bytes that
// the caller makes itself with CopyKind, in parts or with helpers (a
// shared put): the plan's choice outside the band, the Tuner's in it.
// When the Choice is Timed, the caller times the whole copy and passes
// the time to Done.
func (t *Tuner) Pick(n int) Choice {
	if uintptr(n) <= t.lo || uintptr(n) > t.hi {
		return Choice{NT: n >= LargeCopy && t.plan.kernel(uintptr(n)) == kNT}
	}
	b := t.class(uintptr(n))
	band := &t.bands[b]
	k, s := band.pick(band.copies.Add(1) - 1)
	return Choice{NT: k == 1, k: k, s: s, b: b, n: uintptr(n)}
}

// Done records the time d of a copy made on choice c (a no-op unless
// c is Timed).
func (t *Tuner) Done(c Choice, d time.Duration) {
	if c.Timed() {
		t.bands[c.b].record(c.k, float64(d)/float64(c.n), c.s)
	}
}

// kindPlan is plan p restricted to temporal (nt false) or streaming
// stores at every size; streaming stores only where p has the AVX2
// loop (elsewhere nt is ignored: the non-temporal loop needs AVX2).
func kindPlan(p CopyPlan, nt bool) CopyPlan {
	p.NTThreshold = 0 // temporal: REP MOVSB or the AVX2 loop, as the plan says
	if nt && p.AVX2 {
		p.NTThreshold = 1
	}
	return p
}

// CopyKind copies min(len(dst), len(src)) bytes as Copy does, but with
// streaming stores (nt) or temporal ones whatever the size, as a Pick
// said: the parts of one large copy all use the kernel chosen for the
// whole. Streaming stores are fenced before it returns; on a CPU
// without AVX2 nt is ignored.
func CopyKind(dst, src []byte, nt bool) int {
	return kindPlan(DefaultCopyPlan(), nt).Copy(dst, src)
}

// Kernel names the kernel the Tuner copies n non-overlapping bytes
// with outside its bursts: what it has chosen so far in the band, the
// plan's Method elsewhere.
func (t *Tuner) Kernel(n int) string {
	if uintptr(n) <= t.lo || uintptr(n) > t.hi {
		return t.plan.Method(n)
	}
	p := kindPlan(t.plan, t.bands[t.class(uintptr(n))].chosen.Load() == 1)
	return p.Method(n)
}

// burstLen returns the length of a burst of kernel k and how many of
// its first copies are not timed.
func burstLen(k uint32) (n, settle uint64) {
	if k == 0 {
		return tuneBurstT, tuneSettleT
	}
	return tuneBurstNT, tuneSettleNT
}

// sample says what a copy's time does to its kernel's running cost.
type sample uint8

const (
	untimed sample = iota // not timed
	fresh                 // the first timed copy of a burst: it makes the cost anew
	least                 // a later one of the burst: the cost is the least of the burst's
	steady                // a copy with the chosen kernel: tuneDown, tuneUp
)

// pick returns the kernel of copy i and what its time does to the
// kernel's running cost. The first copies are a burst of each kernel
// (the temporal one first: its untimed copies also take the page faults
// of a buffer's first use); after that, bursts start at next. A
// burst makes the explored kernel's cost anew, the least of its timed
// copies: a cost from an earlier burst says how that kernel did in
// another state of the caches, not now.
func (c *tuneBand) pick(i uint64) (k uint32, s sample) {
	next := c.next.Load()
	if next == 0 {
		nN, sN := burstLen(1)
		nT, sT := burstLen(0)
		switch {
		case i < nT:
			return 0, burstSample(i, sT)
		case i < nT+nN:
			return 1, burstSample(i-nT, sN)
		case i == nT+nN:
			c.choose(i, 1)
		}
		if next = c.next.Load(); next == 0 {
			return c.chosen.Load(), untimed // (another copy is choosing)
		}
	}
	if i < next {
		return c.chosen.Load(), steadySample(i, c.quiet.Load())
	}
	p := i - next
	if p == 0 {
		c.burst.Store(1 - c.chosen.Load())
	}
	b := c.burst.Load()
	n, settle := burstLen(b)
	switch {
	case p < n:
		return b, burstSample(p, settle)
	case p == n:
		c.choose(i, b)
	}
	return c.chosen.Load(), steadySample(i, c.quiet.Load())
}

// burstSample is the sample of copy p of a burst whose first settle
// copies are not timed.
func burstSample(p, settle uint64) sample {
	switch {
	case p < settle:
		return untimed
	case p == settle:
		return fresh
	}
	return least
}

// steadySample is the sample of copy i with the chosen kernel: untimed
// before quiet.
func steadySample(i, quiet uint64) sample {
	if i < quiet {
		return untimed
	}
	return steady
}

// choose chooses the kernel at copy i, the first after a burst of
// kernel last, and schedules the next burst: copies from i on use the
// chosen kernel, untimed while it settles if it is not last's, and the
// next burst starts a period later (the shortest period after a
// change, and after the first bursts).
func (c *tuneBand) choose(i uint64, last uint32) {
	cur := c.chosen.Load()
	period := min(2*max(c.period.Load(), tuneMinPeriod/2), tuneMaxPeriod)
	if other := 1 - cur; c.seen[other].Load() > 0 && c.seen[cur].Load() > 0 &&
		math.Float64frombits(c.cost[other].Load()) < (1-tuneMargin)*math.Float64frombits(c.cost[cur].Load()) {
		cur, period = other, tuneMinPeriod
		c.chosen.Store(cur)
	}
	quiet := i
	if cur != last {
		_, settle := burstLen(cur)
		quiet += settle
	}
	c.quiet.Store(quiet)
	c.period.Store(period)
	c.next.Store(quiet + period)
}

// record adds a time of x ns per byte, a sample of kind s, to kernel
// k's running cost (the first time of k makes it).
func (c *tuneBand) record(k uint32, x float64, s sample) {
	if c.seen[k].Add(1) > 1 && s != fresh {
		old := math.Float64frombits(c.cost[k].Load())
		switch {
		case s == least:
			x = min(x, old)
		case x < old:
			x = old + tuneDown*(x-old)
		default:
			x = old + tuneUp*(x-old)
		}
	}
	c.cost[k].Store(math.Float64bits(x))
}
