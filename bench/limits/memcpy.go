package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/goshmem/goshmem/numa"
	"github.com/goshmem/goshmem/shm"
)

// runMemcpy measures copy bandwidth between two heap buffers (test
// "memcpy") or two memfd segments ("memcpy_shm").
func runMemcpy(test string, args []string) (*table, error) {
	fs := flag.NewFlagSet(test, flag.ContinueOnError)
	var c common
	c.register(fs, 0, 20*time.Millisecond)
	minSize := fs.Int("min", 1, "smallest size in bytes (a power of two)")
	maxSize := fs.Int("max", 16<<20, "largest size in bytes (a power of two)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := c.check(fs); err != nil {
		return nil, err
	}
	if !pow2(*minSize) || !pow2(*maxSize) || *minSize > *maxSize {
		return nil, fmt.Errorf("%s: -min %d and -max %d must be powers of two with -min <= -max", test, *minSize, *maxSize)
	}
	cpu, _, _, err := pickCPUs(c.cpus)
	if err != nil {
		return nil, err
	}

	t := &table{test: test, cols: [2]string{"Size", "Bandwidth (MB/s)"}, prec: 2}
	var src, dst []byte
	switch test {
	case "memcpy":
		src, dst = make([]byte, *maxSize), make([]byte, *maxSize)
		t.notes = append(t.notes, "buffers: two Go heap slices")
	case "memcpy_shm":
		var closeAll func()
		src, dst, closeAll, err = mapPair(int64(*maxSize))
		if err != nil {
			return nil, err
		}
		defer closeAll()
		t.notes = append(t.notes, "buffers: two memfd segments (shm.Create + Map)")
	}
	how := fmt.Sprintf("iterations scaled to >= %v per run", c.dur)
	if c.iters > 0 {
		how = fmt.Sprintf("%d iterations per run", c.iters)
	}
	t.notes = append(t.notes, fmt.Sprintf("cpu: %d; MB = 1e6 bytes copied; %s; %s of %d runs after a calibration run",
		cpu, how, c.stat(), c.reps))
	for i := range src {
		src[i] = byte(i)
	}
	clear(dst)

	err = onLockedThread(func() error {
		if err := numa.Bind([]int{cpu}); err != nil {
			return err
		}
		for n := *minSize; n <= *maxSize; n *= 2 {
			t.rows = append(t.rows, row{strconv.Itoa(n), copyBandwidth(dst[:n], src[:n], c)})
		}
		return nil
	})
	return t, err
}

func pow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// mapPair maps two distinct memfd segments of size bytes each.
func mapPair(size int64) (src, dst []byte, closeAll func(), err error) {
	var maps []*shm.Mapping
	closeAll = func() {
		for _, m := range maps {
			m.Close()
		}
	}
	for _, name := range []string{"goshmem-limits-src", "goshmem-limits-dst"} {
		seg, err := shm.Create(name, size, shm.Options{})
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		m, err := seg.Map(0, 0)
		seg.Close()
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		maps = append(maps, m)
	}
	return maps[0].Bytes()[:size], maps[1].Bytes()[:size], closeAll, nil
}

// copyBandwidth returns the median (or best) bandwidth in MB/s of copying src to
// dst (same length) over c.reps runs, after a calibration run.
func copyBandwidth(dst, src []byte, c common) float64 {
	iters := c.iters
	if iters == 0 {
		iters = calibrate(dst, src, c.dur)
	} else {
		copyLoop(dst, src, iters) // warm-up
	}
	mbs := make([]float64, c.reps)
	for r := range mbs {
		el := copyLoop(dst, src, iters)
		mbs[r] = float64(len(src)) * float64(iters) / max(el.Seconds(), 1e-9) / 1e6
	}
	return c.summarize(mbs, false)
}

// calibrate returns an iteration count for which copyLoop lasts at
// least d, growing it as testing.B does. The runs warm the buffers.
func calibrate(dst, src []byte, d time.Duration) int {
	const maxIters = 1 << 34
	n := 1
	for {
		el := copyLoop(dst, src, n)
		if el >= d || n >= maxIters {
			return n
		}
		next := 100 * n
		if el > 0 {
			next = int(1.2 * float64(n) * float64(d) / float64(el))
		}
		n = min(max(next, n+1), 100*n, maxIters)
	}
}

// copyLoop copies src to dst iters times and returns the time taken.
func copyLoop(dst, src []byte, iters int) time.Duration {
	if len(dst) != len(src) {
		panic(errors.New("copyLoop: lengths differ"))
	}
	start := time.Now()
	for range iters {
		copy(dst, src)
	}
	return time.Since(start)
}
