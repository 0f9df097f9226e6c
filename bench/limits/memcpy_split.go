package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/bench/internal/copyref"
)

// runMemcpySplit measures one copy made by two CPUs at once: one thread
// bound to each copies its part of the bytes (halves, cut at a cache
// line; chunks both claim from a counter; or guided shares, claimed
// from both ends as goshmem's shared copies do: copyref's Ways), both
// starting each copy together after a spinning barrier. It is the best
// a put or get can do when the PE that waits for it copies part of it
// (goshmem's shared copies, SHMEM_COPY_SHARE), with one synchronization
// per copy as they have: from some size up it beats every lone copy,
// and a limit that left it out would be beaten. A row is the size over
// the slower thread's time per copy, the best method of copyMethods.
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
		fmt.Sprintf("cpus: %d and %d, one thread each, copying parts of one source (Go heap) into one destination, started together: halves (cut at a cache line), chunks (a sixteenth, at least 16 KiB) that both claim from a counter, or guided shares of the chunks (the first half, then half of what is left) claimed from both ends", a, b),
		fmt.Sprintf("MB = 1e6 bytes per copy over the slower thread's time per copy; %s; %s of %d runs after a warm-up run", how, c.stat(), c.reps))
	src := make([]byte, maxSize)
	for i := range src {
		src[i] = byte(i)
	}
	dst := make([]byte, maxSize)
	ways := []string{"halves", "chunks", "guided"}
	err = bestPerSize(t, minSize, maxSize, len(ways)*len(methods), func(n, i int) (float64, string, error) {
		m, w := methods[i/len(ways)], copyref.Way(i%len(ways))
		bw, err := splitBandwidth(dst[:n], src[:n], a, b, c, m.Loop, w)
		return bw, m.Name + "/" + ways[w], err
	})
	return t, err
}

// splitBandwidth returns the median (or best) over c.reps runs of the
// bandwidth in MB/s of split copies of src into dst on CPUs a and b.
func splitBandwidth(dst, src []byte, a, b int, c common, loop func(dst, src []byte, iters int), w copyref.Way) (float64, error) {
	return twoCPUBandwidth(dst, src, c, loop, func(iters int) (time.Duration, error) {
		return splitRun(dst, src, a, b, iters, loop, w)
	})
}

// splitRun makes iters split copies of src into dst on threads bound
// to CPUs a and b, each copy started together, and returns the longer
// of the threads' times. The thread on a is side 0 of copyref.PartWith
// for way w: halves (the first on a, the rest on b), chunks of
// copyref.ChunkSize bytes that both claim from one counter, or guided
// shares (its first half of the chunks, then shares from the front; the
// other from the back), every copy by loop (the method).
func splitRun(dst, src []byte, a, b, iters int, loop func(dst, src []byte, iters int), w copyref.Way) (time.Duration, error) {
	n := len(src)
	var arrived atomic.Int64
	// Copies alternate two claim words by parity: side 0 resets the
	// word of copy i before it arrives at copy i's start, when the other
	// side has finished copy i-2, the last to use that word.
	var claims [2]int64
	cp := func(d, s []byte) { loop(d, s, 1) }
	return onTwoCPUs(a, b, func(side int) {
		for i := range int64(iters) {
			if side == 0 {
				copyref.Reset(&claims[i%2], w, n)
			}
			arrived.Add(1)
			spinUntil(func() bool { return arrived.Load() >= 2*(i+1) })
			copyref.PartWith(dst, src, w, side, &claims[i%2], cp)
		}
	})
}
