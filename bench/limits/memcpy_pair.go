package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
)

// runMemcpyPair measures two copies at once, one on each of two CPUs,
// of one source into two destinations: the data movement of a 2-PE
// broadcast of a large buffer, in which the root fills its own dst from
// its source while the other PE copies the same source into its dst.
// The two copies share the last-level cache and the memory bus, so
// each may run slower than the lone copy of the memcpy test, which a
// broadcast judged in memcpy's terms does not account for. A row
// is the size over the time both copies took (the slower thread's
// elapsed time per iteration; the two start each copy together), the
// best method of copyMethods.
func runMemcpyPair(args []string) (*table, error) {
	c, minSize, maxSize, methods, err := parseCopyFlags("memcpy_pair", args, 65536)
	if err != nil {
		return nil, err
	}
	a, b, warns, err := pickCPUs(c.cpus)
	if err != nil {
		return nil, err
	}
	t := &table{test: "memcpy_pair", cols: [2]string{"Size", "Bandwidth (MB/s)"}, prec: 2}
	t.notes = append(t.notes, warns...)
	how := fmt.Sprintf("iterations scaled to >= %v per run (a lone copy's)", c.dur)
	if c.iters > 0 {
		how = fmt.Sprintf("%d iterations per run", c.iters)
	}
	t.notes = append(t.notes,
		fmt.Sprintf("cpus: %d and %d, one thread each, copying one source (Go heap) into a destination of their own at the same time", a, b),
		fmt.Sprintf("MB = 1e6 bytes per copy over the slower thread's time per copy; %s; %s of %d runs after a warm-up run", how, c.stat(), c.reps))
	src := make([]byte, maxSize)
	for i := range src {
		src[i] = byte(i)
	}
	d0, d1 := make([]byte, maxSize), make([]byte, maxSize)
	err = bestPerSize(t, minSize, maxSize, len(methods), func(n, i int) (float64, string, error) {
		bw, err := pairBandwidth(d0[:n], d1[:n], src[:n], a, b, c, methods[i].Loop)
		return bw, methods[i].Name, err
	})
	return t, err
}

// bestPerSize adds to t a row per power-of-two size n from minSize to
// maxSize, the highest bandwidth that measure(n, i) returns for the
// variants i < variants, and a note naming the fastest variant per
// size (measure's label).
func bestPerSize(t *table, minSize, maxSize, variants int, measure func(n, i int) (float64, string, error)) error {
	var winners []string
	for n := minSize; n <= maxSize; n *= 2 {
		best, who := 0.0, ""
		for i := range variants {
			bw, label, err := measure(n, i)
			if err != nil {
				return err
			}
			if bw > best {
				best, who = bw, label
			}
		}
		t.rows = append(t.rows, row{strconv.Itoa(n), best})
		winners = append(winners, fmt.Sprintf("%d=%s", n, who))
	}
	t.notes = append(t.notes, "fastest method per size: "+strings.Join(winners, " "))
	return nil
}

// pairBandwidth returns the median (or best) over c.reps runs of the
// bandwidth in MB/s of two concurrent copy loops, src into d0 on CPU a
// and into d1 on CPU b.
func pairBandwidth(d0, d1, src []byte, a, b int, c common, loop func(dst, src []byte, iters int)) (float64, error) {
	return twoCPUBandwidth(d0, src, c, loop, func(iters int) (time.Duration, error) {
		return pairRun(d0, d1, src, a, b, iters, loop)
	})
}

// twoCPUBandwidth returns the median (or best) over c.reps runs of
// run(iters), after a warm-up run, as MB/s of len(src) bytes per
// iteration: iters is c.iters, or what a lone loop from src to dst
// needs to last c.dur.
func twoCPUBandwidth(dst, src []byte, c common, loop func(dst, src []byte, iters int), run func(iters int) (time.Duration, error)) (float64, error) {
	iters := c.iters
	if iters == 0 {
		iters = calibrate(dst, src, c.dur, loop)
	}
	if _, err := run(iters); err != nil { // warm-up
		return 0, err
	}
	mbs := make([]float64, c.reps)
	for r := range mbs {
		el, err := run(iters)
		if err != nil {
			return 0, err
		}
		mbs[r] = float64(len(src)) * float64(iters) / max(el.Seconds(), 1e-9) / 1e6
	}
	return c.summarize(mbs, false), nil
}

// pairRun runs loop iters times on each of two threads bound to CPUs a
// and b, and returns the longer of their times. The threads start each
// copy together, after a spinning barrier, as the two PEs of a
// broadcast do after its synchronization: left to drift apart, two
// loops of copies overlap less and read the source at different
// places, which no broadcast does. The threads end with their
// goroutines (locked, so the runtime drops them with their CPU
// binding).
func pairRun(d0, d1, src []byte, a, b, iters int, loop func(dst, src []byte, iters int)) (time.Duration, error) {
	var arrived atomic.Int64
	return onTwoCPUs(a, b, func(side int) {
		dst := d0
		if side == 1 {
			dst = d1
		}
		for i := range int64(iters) {
			arrived.Add(1)
			spinUntil(func() bool { return arrived.Load() >= 2*(i+1) })
			loop(dst, src, 1)
		}
	})
}

// onTwoCPUs runs body(0) and body(1) on two threads bound to CPUs a
// and b, started together once both are bound, and returns the longer
// of the two bodies' times. The threads end with their goroutines
// (locked, so the runtime drops them with their CPU binding).
func onTwoCPUs(a, b int, body func(side int)) (time.Duration, error) {
	var ready atomic.Int64
	type out struct {
		el  time.Duration
		err error
	}
	res := make(chan out, 2)
	for side, cpu := range []int{a, b} {
		go func() {
			runtime.LockOSThread()
			err := numa.Bind([]int{cpu})
			ready.Add(1)
			if err != nil {
				res <- out{err: err}
				return
			}
			spinUntil(func() bool { return ready.Load() >= 2 })
			start := time.Now()
			body(side)
			res <- out{el: time.Since(start)}
		}()
	}
	var longest time.Duration
	var err error
	for range 2 {
		o := <-res
		longest = max(longest, o.el)
		if o.err != nil {
			err = o.err
		}
	}
	return longest, err
}

// spinUntil polls cond until it holds, yielding the CPU every 1024 polls
// (both threads may be bound to one CPU: -cpus a,a).
func spinUntil(cond func() bool) {
	for n := 1; !cond(); n++ {
		if n%1024 == 0 {
			sys.SchedYield()
		}
	}
}
