package main

import (
	"fmt"
	"sync/atomic"
	"time"
)

// runMemcpySplit measures one copy made by two CPUs at once: one thread
// bound to each copies its half of the bytes (the first half, cut at a
// cache line, and the rest), both starting each copy together after a
// spinning barrier. It is the best a put or get can do when the PE that
// waits for it copies part of it (goshmem's shared copies,
// SHMEM_COPY_SHARE), with one synchronization per copy as they have:
// from some size up it beats every lone copy, and a limit that left it
// out would be beaten. A row is the size over the slower thread's time
// per copy, the best method of copyMethods.
func runMemcpySplit(args []string) (*table, error) {
	c, minSize, maxSize, methods, err := parseCopyFlags("memcpy_split", args, 65536)
	if err != nil {
		return nil, err
	}
	a, b, warns, err := pickCPUs(c.cpus)
	if err != nil {
		return nil, err
	}
	t := &table{test: "memcpy_split", cols: [2]string{"Size", "Bandwidth (MB/s)"}, prec: 2}
	t.notes = append(t.notes, warns...)
	how := fmt.Sprintf("iterations scaled to >= %v per run (a lone copy's)", c.dur)
	if c.iters > 0 {
		how = fmt.Sprintf("%d iterations per run", c.iters)
	}
	t.notes = append(t.notes,
		fmt.Sprintf("cpus: %d and %d, one thread each, copying one half each of one source (Go heap) into one destination, both halves started together", a, b),
		fmt.Sprintf("MB = 1e6 bytes per copy over the slower thread's time per copy; %s; %s of %d runs after a warm-up run", how, c.stat(), c.reps))
	src := make([]byte, maxSize)
	for i := range src {
		src[i] = byte(i)
	}
	dst := make([]byte, maxSize)
	err = bestPerSize(t, minSize, maxSize, len(methods), func(n, i int) (float64, string, error) {
		bw, err := splitBandwidth(dst[:n], src[:n], a, b, c, methods[i].Loop)
		return bw, methods[i].Name, err
	})
	return t, err
}

// splitBandwidth returns the median (or best) over c.reps runs of the
// bandwidth in MB/s of split copies of src into dst on CPUs a and b.
func splitBandwidth(dst, src []byte, a, b int, c common, loop func(dst, src []byte, iters int)) (float64, error) {
	iters := c.iters
	if iters == 0 {
		iters = calibrate(dst, src, c.dur, loop)
	}
	if _, err := splitRun(dst, src, a, b, iters, loop); err != nil { // warm-up
		return 0, err
	}
	mbs := make([]float64, c.reps)
	for r := range mbs {
		el, err := splitRun(dst, src, a, b, iters, loop)
		if err != nil {
			return 0, err
		}
		mbs[r] = float64(len(src)) * float64(iters) / max(el.Seconds(), 1e-9) / 1e6
	}
	return c.summarize(mbs, false), nil
}

// splitHalf is where a split copy of n bytes is cut: half, rounded down
// to a cache line (as bench/internal/copyref.SplitPoint).
func splitHalf(n int) int { return n / 2 &^ 63 }

// splitRun makes iters split copies of src into dst, the first half on
// a thread bound to CPU a, the rest on one bound to b, each copy
// started together, and returns the longer of the threads' times.
func splitRun(dst, src []byte, a, b, iters int, loop func(dst, src []byte, iters int)) (time.Duration, error) {
	h := splitHalf(len(src))
	var arrived atomic.Int64
	return onTwoCPUs(a, b, func(side int) {
		d, s := dst[:h], src[:h]
		if side == 1 {
			d, s = dst[h:], src[h:]
		}
		for i := range int64(iters) {
			arrived.Add(1)
			spinUntil(func() bool { return arrived.Load() >= 2*(i+1) })
			loop(d, s, 1)
		}
	})
}
