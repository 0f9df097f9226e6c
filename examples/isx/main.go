// Command isx is the ISx integer-sort pattern on goshmem: a distributed
// bucket sort whose all-to-all exchange of variable-size buckets is
// done with non-blocking puts on per-goroutine private contexts (the
// multithreaded ISx of "Contexts in OSSS-UCX" and the integer sort of
// Dinan and Flajslik's contexts paper).
//
//	go run ./cmd/oshrun -n 4 ./examples/isx
//	go run ./cmd/oshrun -n 4 --pes-per-proc 2 ./examples/isx -n 100000 -t 2 -i 3
//
// Flags:
//
//	-n N       keys per PE (default 1<<20)
//	-maxkey K  keys are in [0, K) (default 0: NPEs*N, so that each PE's
//	           key range is N wide, ISx's weak "isobucket" scaling; at
//	           most 1<<32)
//	-t T       goroutines per PE, each with its own context (default
//	           runtime.GOMAXPROCS(0))
//	-slack S   receive buffer slack factor (default 1.25, see below)
//	-i I       iterations; the timings are averages (default 1)
//	-seed S
//
// One iteration, on every PE, with T persistent worker goroutines:
//
//  1. generate: N keys, key i of PE p a hash of (seed, p, i) mapped to
//     [0, K); the keys depend neither on T nor on how PEs are packed
//     into processes.
//  2. bucket: PE q owns the keys [q*W, (q+1)*W), W = ceil(K/NPEs). Each
//     worker counts its chunk of the keys per destination, and then
//     scatters it into a send buffer laid out bucket by bucket, and
//     within a bucket worker by worker (a parallel counting sort by
//     destination).
//  3. counts: the bucket sizes are exchanged with Alltoall; each PE
//     turns what it will receive into offsets in its receive buffer
//     (in sender order) and sends each sender its offset with a second
//     Alltoall. No PE has to ask a target for space (the ISx code of
//     the contexts paper uses a fetch-add there).
//  4. exchange: each worker puts its own part of every bucket straight
//     into the destination's receive buffer with PutNBI on its own
//     context (created with CtxPrivate by that goroutine), visiting the
//     destinations round-robin from a start staggered by PE and worker
//     so that no PE is everybody's first target, then Quiets its
//     context; a BarrierAll then makes every key visible. Sending each
//     worker's own keys to every PE, as the multithreaded ISx does,
//     keeps the workers equally busy whatever T and NPEs are.
//  5. sort: each PE counting-sorts what it received, in place in the
//     receive buffer: the keys are first split among the workers by
//     sub-range (the same parallel scatter as step 2), then each worker
//     counts its sub-range and writes it back in order.
//
// Verification (not timed): every PE checks that its keys lie in its
// range and are sorted; a SumReduce adds up the key counts (which must
// be NPEs*N) and two order-independent checksums, of the generated and
// of the sorted keys (which must be equal: no key lost, duplicated or
// altered).
//
// The receive buffer is symmetric, so its allocation is collective and
// of the same size on every PE: ceil(S*N)+256 keys. A PE receives
// Binomial(NPEs*N, 1/NPEs) keys when K is a multiple of NPEs: mean N,
// standard deviation below sqrt(N), so the default slack 1.25 leaves
// more than 250 standard deviations at N = 1<<20 and 9 at N = 1000.
// Because the sizes are exchanged before any key moves, an overflow
// (an uneven key range, a tiny N) is caught in step 3: the largest
// receive count is found with MaxReduce and every PE grows the buffer
// to it together (Free, then Malloc of the same size everywhere); PE 0
// reports it.
//
// Output (all from PE 0, so that it comes out in order): the
// parameters; every PE's phase timings (averages over the iterations,
// gathered with FCollect) and how many keys it received; the maximum
// over PEs of each phase (MaxReduce) and of the totals; and "verified" when every check
// passed on every PE (otherwise the failures go to stderr, PE 0 prints
// "VERIFICATION FAILED" and the job exits with status 1).
package main

import (
	"flag"
	"fmt"
	"math"
	"math/bits"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/goshmem/goshmem"
)

type options struct {
	n      int
	maxKey uint64
	t      int
	slack  float64
	iters  int
	seed   uint64
}

// maxWidth bounds a PE's key range: the counting sort's histogram has
// one uint32 per key value of the range.
const maxWidth = 1 << 26

func main() {
	var o options
	flag.IntVar(&o.n, "n", 1<<20, "keys per PE")
	flag.Uint64Var(&o.maxKey, "maxkey", 0, "keys are in [0, maxkey) (0: NPEs * keys per PE)")
	flag.IntVar(&o.t, "t", runtime.GOMAXPROCS(0), "goroutines (each with a private context) per PE")
	flag.Float64Var(&o.slack, "slack", 1.25, "receive buffer slack factor")
	flag.IntVar(&o.iters, "i", 1, "iterations")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the keys")
	flag.Parse()
	if o.n < 1 || o.t < 1 || o.iters < 1 || o.slack < 1 || o.maxKey > 1<<32 || o.n > math.MaxInt32 {
		fmt.Fprintln(os.Stderr, "isx: need -n in [1, 2^31), -t >= 1, -i >= 1, -slack >= 1, -maxkey <= 2^32")
		os.Exit(2)
	}
	goshmem.Main(func(pe *goshmem.PE) { run(pe, o) })
}

// mix is SplitMix64's finalizer: a bijective 64-bit hash.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// check is the checksum term of a key: summed over a set of keys it
// does not depend on their order.
func check(k uint32) uint64 { return mix(uint64(k) ^ 0x5bd1e9955bd1e995) }

// workers are T goroutines, each with its own private context, that
// run the parallel parts of every phase.
type workers struct {
	jobs  []chan func(w int, ctx *goshmem.Ctx)
	wg    sync.WaitGroup
	quit  sync.WaitGroup
	mu    sync.Mutex
	panic any
}

func startWorkers(pe *goshmem.PE, t int) *workers {
	ws := &workers{jobs: make([]chan func(int, *goshmem.Ctx), t)}
	ready := make(chan error, t)
	for w := range t {
		ch := make(chan func(int, *goshmem.Ctx))
		ws.jobs[w] = ch
		ws.quit.Add(1)
		go func() {
			defer ws.quit.Done()
			// CtxPrivate: only this goroutine ever uses the context.
			ctx, err := pe.CtxCreate(goshmem.CtxPrivate)
			ready <- err
			if err != nil {
				return
			}
			for f := range ch {
				ws.do(f, w, ctx)
			}
			ctx.Destroy()
		}()
	}
	for range t {
		if err := <-ready; err != nil {
			panic(fmt.Sprintf("isx: CtxCreate: %v", err))
		}
	}
	return ws
}

func (ws *workers) do(f func(int, *goshmem.Ctx), w int, ctx *goshmem.Ctx) {
	defer ws.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			ws.mu.Lock()
			if ws.panic == nil {
				ws.panic = fmt.Sprintf("worker %d: %v", w, r)
			}
			ws.mu.Unlock()
		}
	}()
	f(w, ctx)
}

// run runs f on every worker and waits; a worker's panic is re-raised
// on the PE's goroutine, where goshmem.Main reports it.
func (ws *workers) run(f func(w int, ctx *goshmem.Ctx)) {
	ws.wg.Add(len(ws.jobs))
	for _, ch := range ws.jobs {
		ch <- f
	}
	ws.wg.Wait()
	if ws.panic != nil {
		panic(ws.panic)
	}
}

func (ws *workers) stop() {
	for _, ch := range ws.jobs {
		close(ch)
	}
	ws.quit.Wait()
}

func (ws *workers) n() int { return len(ws.jobs) }

// chunk returns worker w's share [lo, hi) of n items.
func chunk(n, w, t int) (int, int) { return n * w / t, n * (w + 1) / t }

// layout is the result of a parallel scatter into nb buckets: bucket b
// is out[base[b]:base[b]+total[b]], and worker w's part of it starts
// pre[w][b] into it and holds cnt[w][b] keys.
type layout struct {
	cnt, pre [][]int
	base     []int
	total    []int
	bad      int // keys outside [lo, lo+span), dropped
}

// divider divides 32-bit numbers by a constant with a multiplication
// (Lemire, Kaser and Kurz, "Faster remainder by direct computation":
// with c = ceil(2^64/d), x/d is the high word of c*x for every x < 2^32).
type divider struct{ c uint64 }

func newDivider(d uint64) divider {
	if d == 1 {
		return divider{}
	}
	return divider{math.MaxUint64/d + 1}
}

func (v divider) div(x uint64) uint64 {
	if v.c == 0 {
		return x
	}
	hi, _ := bits.Mul64(v.c, x)
	return hi
}

// scatter distributes in into out by bucket (key-lo)/div, bucket by
// bucket and within a bucket worker by worker; keys outside [lo,
// lo+span) are counted in bad and dropped.
func scatter(ws *workers, in, out []uint32, lo, div, span uint64, nb int, l *layout) {
	t := ws.n()
	d := newDivider(div)
	if len(l.cnt) != t || len(l.base) != nb {
		l.cnt, l.pre = make([][]int, t), make([][]int, t)
		for w := range t {
			l.cnt[w], l.pre[w] = make([]int, nb), make([]int, nb)
		}
		l.base, l.total = make([]int, nb), make([]int, nb)
	}
	bad := make([]int, t)
	ws.run(func(w int, _ *goshmem.Ctx) {
		c := l.cnt[w]
		clear(c)
		a, b := chunk(len(in), w, t)
		for _, k := range in[a:b] {
			x := uint64(k) - lo // wraps for k < lo
			if x >= span {
				bad[w]++
				continue
			}
			c[d.div(x)]++
		}
	})
	l.bad = 0
	pos := 0
	for b := range nb {
		l.base[b] = pos
		sum := 0
		for w := range t {
			l.pre[w][b] = sum
			sum += l.cnt[w][b]
		}
		l.total[b] = sum
		pos += sum
	}
	for w := range t {
		l.bad += bad[w]
	}
	ws.run(func(w int, _ *goshmem.Ctx) {
		next := make([]int, nb)
		for b := range nb {
			next[b] = l.base[b] + l.pre[w][b]
		}
		a, e := chunk(len(in), w, t)
		for _, k := range in[a:e] {
			x := uint64(k) - lo
			if x >= span {
				continue
			}
			b := d.div(x)
			out[next[b]] = k
			next[b]++
		}
	})
}

func must[T any](x T, err error) T {
	if err != nil {
		panic(err)
	}
	return x
}

// phases of an iteration, in order.
var phases = []string{"generate", "bucket", "counts", "exchange", "sort"}

func run(pe *goshmem.PE, o options) {
	pe.SetThreadLevel(goshmem.ThreadMultiple) // workers call goshmem concurrently
	me, npes := pe.MyPE(), pe.NPEs()
	world := goshmem.TeamWorld(pe)
	maxKey := o.maxKey
	if maxKey == 0 {
		maxKey = uint64(npes) * uint64(o.n)
		if maxKey > 1<<32 {
			maxKey = 1 << 32
		}
	}
	width := (maxKey + uint64(npes) - 1) / uint64(npes) // keys per PE range
	if width > maxWidth {
		panic(fmt.Sprintf("isx: each PE's key range is %d wide, more than the counting sort's %d; lower -maxkey or use more PEs", width, maxWidth))
	}
	lo := min(uint64(me)*width, maxKey)
	hi := min(lo+width, maxKey)

	ws := startWorkers(pe, o.t)
	defer ws.stop()
	t := o.t

	// Symmetric objects: collective, the same size on every PE.
	capacity := int(math.Ceil(o.slack*float64(o.n))) + 256
	recv := must(goshmem.Malloc[uint32](pe, capacity))
	sendCounts := must(goshmem.Malloc[int64](pe, npes))
	recvCounts := must(goshmem.Malloc[int64](pe, npes))
	sendOffs := must(goshmem.Malloc[int64](pe, npes)) // where my bucket q goes in q's recv
	recvOffs := must(goshmem.Malloc[int64](pe, npes)) // where sender j's keys go in my recv
	red := must(goshmem.Malloc[int64](pe, len(phases)+1))
	sums := must(goshmem.Malloc[uint64](pe, 4))

	if me == 0 {
		fmt.Printf("isx: %d PEs, %d goroutines per PE (one private context each), %d keys per PE, keys in [0, %d), %d per PE range\n",
			npes, t, o.n, maxKey, width)
		fmt.Printf("isx: receive buffer %d keys per PE (ceil(%.2f*N)+256), %d iteration(s)\n", capacity, o.slack, o.iters)
	}

	keys := make([]uint32, o.n)
	send := make([]uint32, o.n)
	var tmp []uint32
	hist := make([]uint32, hi-lo)
	var sendL, sortL layout
	subw := max(1, (hi-lo+uint64(t)-1)/uint64(t)) // each worker's sub-range in the sort
	elapsed := make([]time.Duration, len(phases))
	var received, sorted int
	failures := []string{}
	fail := func(format string, args ...any) {
		if len(failures) < 5 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}

	for iter := range o.iters {
		pe.BarrierAll()
		mark := time.Now()
		lap := func(i int) {
			now := time.Now()
			elapsed[i] += now.Sub(mark)
			mark = now
		}

		// 1. generate
		s := mix(mix(o.seed) + uint64(me))
		ws.run(func(w int, _ *goshmem.Ctx) {
			a, b := chunk(o.n, w, t)
			for i := a; i < b; i++ {
				x := mix(s ^ uint64(i))
				keys[i] = uint32((x >> 32) * maxKey >> 32) // in [0, maxKey)
			}
		})
		lap(0)

		// 2. bucket by destination PE
		scatter(ws, keys, send, 0, width, maxKey, npes, &sendL)
		if sendL.bad != 0 {
			fail("PE %d: %d generated keys outside [0, %d)", me, sendL.bad, maxKey)
		}
		lap(1)

		// 3. counts: sizes, then offsets, with Alltoall
		for q := range npes {
			sendCounts[q] = int64(sendL.total[q])
		}
		goshmem.Alltoall(world, recvCounts, sendCounts, 1)
		off := int64(0)
		for j := range npes {
			recvOffs[j] = off
			off += recvCounts[j]
		}
		received = int(off)
		goshmem.Alltoall(world, sendOffs, recvOffs, 1)
		red[0] = off
		goshmem.MaxReduce(world, red[:1], red[:1])
		if most := int(red[0]); most > len(recv) {
			// Too little slack: grow together, to the same size.
			if me == 0 {
				fmt.Printf("isx: a PE receives %d keys, more than the buffer's %d: growing it on every PE\n", most, len(recv))
			}
			goshmem.Free(pe, recv)
			recv = must(goshmem.Malloc[uint32](pe, most))
		}
		lap(2)

		// 4. exchange: each worker puts its part of every bucket on its
		// own context, then completes them with its context's Quiet.
		ws.run(func(w int, ctx *goshmem.Ctx) {
			for k := range npes {
				q := (me*t + w + k) % npes
				c := sendL.cnt[w][q]
				if c == 0 {
					continue
				}
				src := sendL.base[q] + sendL.pre[w][q]
				dst := int(sendOffs[q]) + sendL.pre[w][q]
				goshmem.PutNBI(ctx, recv[dst:dst+c], send[src:src+c], q)
			}
			ctx.Quiet()
		})
		pe.BarrierAll()
		lap(3)

		// 5. local counting sort, in place in recv
		if cap(tmp) < received {
			tmp = make([]uint32, received)
		}
		tmp = tmp[:received]
		scatter(ws, recv[:received], tmp, lo, subw, hi-lo, t, &sortL)
		ws.run(func(w int, _ *goshmem.Ctx) {
			base := uint64(w) * subw
			if base >= hi-lo {
				return
			}
			h := hist[base:min(base+subw, hi-lo)]
			clear(h)
			part := tmp[sortL.base[w] : sortL.base[w]+sortL.total[w]]
			for _, k := range part {
				h[uint64(k)-lo-base]++
			}
			// Write each value count times. Most counts are small: four
			// copies are stored unconditionally (the extra ones are
			// overwritten by the next values) while they fit in this
			// worker's part, which avoids a mispredicted loop per value.
			out := recv[sortL.base[w] : sortL.base[w]+sortL.total[w]]
			p := 0
			for v, c := range h {
				k := uint32(lo + base + uint64(v))
				if p+4 <= len(out) {
					out[p], out[p+1], out[p+2], out[p+3] = k, k, k, k
					for i := p + 4; i < p+int(c); i++ {
						out[i] = k
					}
				} else {
					for i := p; i < p+int(c); i++ {
						out[i] = k
					}
				}
				p += int(c)
			}
		})
		sorted = received - sortL.bad
		lap(4)

		// Verification (not timed).
		errs := uint64(0)
		if sortL.bad != 0 {
			fail("PE %d: %d received keys outside its range [%d, %d)", me, sortL.bad, lo, hi)
			errs += uint64(sortL.bad)
		}
		sumAfter := uint64(0)
		for i, k := range recv[:sorted] {
			if uint64(k) < lo || uint64(k) >= hi || i > 0 && k < recv[i-1] {
				if errs == 0 {
					fail("PE %d: key %d at %d out of range or order", me, k, i)
				}
				errs++
			}
			sumAfter += check(k)
		}
		sumBefore := uint64(0)
		for _, k := range keys {
			sumBefore += check(k)
		}
		sums[0], sums[1], sums[2], sums[3] = uint64(sorted), sumBefore, sumAfter, errs
		goshmem.SumReduce(world, sums, sums)
		if me == 0 {
			if want := uint64(npes) * uint64(o.n); sums[0] != want {
				fail("iteration %d: %d keys in all after the sort, want %d", iter, sums[0], want)
			}
			if sums[1] != sums[2] {
				fail("iteration %d: checksum of the sorted keys %#x, of the generated keys %#x", iter, sums[2], sums[1])
			}
			if sums[3] != 0 && len(failures) == 0 {
				fail("iteration %d: %d keys out of range or order on other PEs", iter, sums[3])
			}
		}
	}

	// Timings: every PE's, gathered on PE 0 with FCollect so that they
	// print in PE order, then the maximum over PEs with MaxReduce.
	sum := func(d []int64) (total int64) {
		for i := range phases {
			total += d[i]
		}
		return total
	}
	line := func(d []int64, total int64) string {
		var b strings.Builder
		for i, name := range phases {
			fmt.Fprintf(&b, "%s %8.3f ms  ", name, float64(d[i])/1e6)
		}
		fmt.Fprintf(&b, "total %8.3f ms", float64(total)/1e6)
		return b.String()
	}
	nv := len(phases) + 1
	for i := range phases {
		red[i] = int64(elapsed[i] / time.Duration(o.iters))
	}
	red[len(phases)] = int64(received)
	all := must(goshmem.Malloc[int64](pe, npes*nv))
	goshmem.FCollect(world, all, red)
	goshmem.MaxReduce(world, red[:len(phases)], red[:len(phases)])
	// Every PE's failures decide: count them all.
	red[len(phases)] = int64(len(failures))
	goshmem.SumReduce(world, red[len(phases):], red[len(phases):])
	for _, f := range failures {
		fmt.Fprintln(os.Stderr, "isx:", f)
	}
	if me != 0 {
		return
	}
	maxTotal := int64(0) // the slowest PE's total, not the sum of the phases' maxima
	for q := range npes {
		d := all[q*nv : (q+1)*nv]
		qlo := min(uint64(q)*width, maxKey)
		fmt.Printf("PE %3d: %s  (received %d keys in [%d, %d))\n", q, line(d, sum(d)), d[len(phases)], qlo, min(qlo+width, maxKey))
		maxTotal = max(maxTotal, sum(d))
	}
	fmt.Printf("max:    %s  (over PEs, each column's own maximum; average of %d iteration(s))\n", line(red, maxTotal), o.iters)
	if red[len(phases)] != 0 {
		fmt.Println("VERIFICATION FAILED")
		pe.GlobalExit(1)
	}
	fmt.Printf("%d keys sorted; each PE's keys in its range and in order; checksums equal\n", uint64(npes)*uint64(o.n))
	fmt.Println("verified")
}
