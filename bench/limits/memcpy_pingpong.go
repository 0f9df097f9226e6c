package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
)

// runMemcpyPingpong measures the machine's best put ping-pong of each
// size: two threads on two CPUs take turns copying n bytes, A its
// source into B's destination, then B its source into A's destination,
// each handing the turn over with one flag store that the other polls
// (a pause per poll, as goshmem's spinning wait). It is what a put
// ping-pong costs with nothing but the copy and the flag: the copy's
// time plus a cache-line hand-off per one-way trip, with the
// ping-pong's working set (four buffers of n bytes, where a lone copy
// has two). A row is n over the one-way time, the best of
// copyMethods (both threads use the same method) and of two ways to
// wait (pingpongRun).
func runMemcpyPingpong(args []string) (*table, error) {
	c, minSize, maxSize, methods, err := parseCopyFlags("memcpy_pingpong", args, 65536)
	if err != nil {
		return nil, err
	}
	a, b, warns, err := pickCPUs(c.cpus)
	if err != nil {
		return nil, err
	}
	t := &table{test: "memcpy_pingpong", cols: [2]string{"Size", "Bandwidth (MB/s)"}, prec: 2}
	t.notes = append(t.notes, warns...)
	how := fmt.Sprintf("round trips scaled to >= %v per run", c.dur)
	if c.iters > 0 {
		how = fmt.Sprintf("%d round trips per run", c.iters)
	}
	t.notes = append(t.notes,
		fmt.Sprintf("cpus: %d and %d, one thread each; A copies its source into B's destination and stores B's flag, B waits for it, copies its source into A's destination and stores A's flag; four memfd segments", a, b),
		fmt.Sprintf("MB = 1e6 bytes over the one-way time (a round trip / 2); %s; %s of %d runs after a warm-up run", how, c.stat(), c.reps))
	// The buffers are memfd segments, shared mappings as goshmem's
	// heaps are (two of them are the heaps of a 2-PE job in one).
	var bufs [4][]byte
	s0, d0, closeA, err := mapPair(int64(maxSize))
	if err != nil {
		return nil, err
	}
	defer closeA()
	s1, d1, closeB, err := mapPair(int64(maxSize))
	if err != nil {
		return nil, err
	}
	defer closeB()
	bufs = [4][]byte{s0, d0, s1, d1}
	for i := range bufs {
		for j := range bufs[i] {
			bufs[i][j] = byte(i + j)
		}
	}
	err = bestPerSize(t, minSize, maxSize, 2*len(methods), func(n, i int) (float64, string, error) {
		m, yield := methods[i/2], i%2 == 1
		bw, err := pingpongBandwidth(bufs, n, a, b, c, yield, m.Loop)
		if yield {
			return bw, m.Name + "+yield", err
		}
		return bw, m.Name, err
	})
	return t, err
}

// pingpongBandwidth returns the median (or best) over c.reps runs of n
// bytes over the one-way time of the ping-pong of copies made with
// loop: bufs[0] and bufs[1] are A's source and destination, bufs[2]
// and bufs[3] B's; yield as pingpongRun's.
func pingpongBandwidth(bufs [4][]byte, n, a, b int, c common, yield bool, loop func(dst, src []byte, iters int)) (float64, error) {
	iters := c.iters
	if iters == 0 {
		// A round trip is two copies; calibrate on one (this thread's
		// CPU is not bound, which only sizes the run).
		iters = max(calibrate(bufs[3][:n], bufs[0][:n], c.dur, loop)/2, 1)
	}
	if _, err := pingpongRun(bufs, n, a, b, iters, yield, loop); err != nil { // warm-up
		return 0, err
	}
	mbs := make([]float64, c.reps)
	for r := range mbs {
		el, err := pingpongRun(bufs, n, a, b, iters, yield, loop)
		if err != nil {
			return 0, err
		}
		oneWay := el.Seconds() / float64(2*iters)
		mbs[r] = float64(n) / max(oneWay, 1e-12) / 1e6
	}
	return c.summarize(mbs, false), nil
}

// pingpongRun runs iters round trips of n bytes on two threads bound to
// CPUs a and b and returns the longer of the two threads' times (A's:
// it ends with the last hand-over). The flags are on lines of their
// own. A waiter polls with a pause per poll and a sched_yield every
// 1024 (both threads may be bound to one CPU: -cpus a,a), or, with
// yield, with a sched_yield per poll: a waiter that keeps its CPU in
// the kernel half the time measured faster here at 2-4 MiB (so the
// limit takes the better of the two).
func pingpongRun(bufs [4][]byte, n, a, b, iters int, yield bool, loop func(dst, src []byte, iters int)) (time.Duration, error) {
	type paddedFlag struct {
		v atomic.Int64
		_ [120]byte
	}
	var flags [2]paddedFlag // flags[0] A's, flags[1] B's
	await := func(f *atomic.Int64, k int64) {
		for p := 1; f.Load() != k; p++ {
			if yield {
				sys.SchedYield()
				continue
			}
			wait.Relax()
			if p%1024 == 0 {
				sys.SchedYield()
			}
		}
	}
	return onTwoCPUs(a, b, func(me int) {
		mine, theirs := &flags[me].v, &flags[1-me].v
		src, dst := bufs[0][:n], bufs[3][:n] // A: its source into B's destination
		if me == 1 {
			src, dst = bufs[2][:n], bufs[1][:n]
		}
		for k := int64(1); k <= int64(iters); k++ {
			if me == 1 {
				await(mine, k)
			}
			loop(dst, src, 1)
			theirs.Store(k)
			if me == 0 {
				await(mine, k)
			}
		}
	})
}
