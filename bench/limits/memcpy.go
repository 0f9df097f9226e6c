package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem/bench/internal/copyref"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/numa"
	"github.com/goshmem/goshmem/shm"
)

// copyMethod is one way of copying memory that the memcpy limit
// considers (copyref.Methods: Go's copy, REP MOVSB, the engine's AVX2
// loops, the engine, the C library's memcpy with cgo).
type copyMethod = copyref.Method

// copyMethods returns the copies this machine can do.
func copyMethods() []copyMethod { return copyref.Methods() }

// runMemcpy measures copy bandwidth between two heap buffers (test
// "memcpy") or two memfd segments ("memcpy_shm").
func runMemcpy(test string, args []string) (*table, error) {
	c, minSize, maxSize, methods, err := parseCopyFlags(test, args, 1)
	if err != nil {
		return nil, err
	}
	cpu, _, _, err := pickCPUs(c.cpus)
	if err != nil {
		return nil, err
	}

	t := &table{test: test, cols: [2]string{"Size", "Bandwidth (MB/s)"}, prec: 2}
	var src, dst []byte
	switch test {
	case "memcpy":
		src, dst = make([]byte, maxSize), make([]byte, maxSize)
		t.notes = append(t.notes, "buffers: two Go heap slices")
	case "memcpy_shm":
		var closeAll func()
		src, dst, closeAll, err = mapPair(int64(maxSize))
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
	plan := mem.DefaultCopyPlan()
	names := make([]string, len(methods))
	for i, m := range methods {
		names[i] = m.Name
	}
	t.notes = append(t.notes, "methods: "+strings.Join(names, ", ")+"; each row is the best of them (the fastest copy is the limit)")
	if !copyref.HaveGlibc {
		t.notes = append(t.notes, "glibc: not measured (built without cgo)")
	}
	for i := range src {
		src[i] = byte(i)
	}
	clear(dst)

	var winners, picks []string
	err = onLockedThread(func() error {
		if err := numa.Bind([]int{cpu}); err != nil {
			return err
		}
		for n := minSize; n <= maxSize; n *= 2 {
			best, who := 0.0, ""
			for _, m := range methods {
				if bw := copyBandwidth(dst[:n], src[:n], c, m.Loop); bw > best {
					best, who = bw, m.Name
				}
			}
			t.rows = append(t.rows, row{strconv.Itoa(n), best})
			winners = append(winners, fmt.Sprintf("%d=%s", n, who))
			picks = append(picks, fmt.Sprintf("%d=%s", n, plan.Method(n)))
		}
		return nil
	})
	t.notes = append(t.notes, "fastest method per size: "+strings.Join(winners, " "))
	t.notes = append(t.notes, "engine's kernel per size: "+strings.Join(picks, " "))
	return t, err
}

func pow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// parseCopyFlags parses the flags of the copy tests (memcpy,
// memcpy_shm, memcpy_pair): the common ones, -min (default minDefault)
// and -max in powers of two, and -method, which leaves one of
// copyMethods instead of all.
func parseCopyFlags(test string, args []string, minDefault int) (c common, minSize, maxSize int, methods []copyMethod, err error) {
	fs := flag.NewFlagSet(test, flag.ContinueOnError)
	c.register(fs, 0, 20*time.Millisecond)
	fs.IntVar(&minSize, "min", minDefault, "smallest size in bytes (a power of two)")
	fs.IntVar(&maxSize, "max", 16<<20, "largest size in bytes (a power of two)")
	only := fs.String("method", "", "measure only this `method` (copy, movsb, avx2, nt, engine, glibc) instead of the best of all")
	if err = fs.Parse(args); err != nil {
		return
	}
	if err = c.check(fs); err != nil {
		return
	}
	if !pow2(minSize) || !pow2(maxSize) || minSize > maxSize {
		err = fmt.Errorf("%s: -min %d and -max %d must be powers of two with -min <= -max", test, minSize, maxSize)
		return
	}
	methods = copyMethods()
	if *only != "" {
		i := slices.IndexFunc(methods, func(m copyMethod) bool { return m.Name == *only })
		if i < 0 {
			err = fmt.Errorf("%s: -method %q is not one of this machine's methods", test, *only)
			return
		}
		methods = methods[i : i+1]
	}
	return
}

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
// dst (same length) with loop over c.reps runs, after a calibration run.
func copyBandwidth(dst, src []byte, c common, loop func(dst, src []byte, iters int)) float64 {
	iters := c.iters
	if iters == 0 {
		iters = calibrate(dst, src, c.dur, loop)
	} else {
		copyLoop(dst, src, iters, loop) // warm-up
	}
	mbs := make([]float64, c.reps)
	for r := range mbs {
		el := copyLoop(dst, src, iters, loop)
		mbs[r] = float64(len(src)) * float64(iters) / max(el.Seconds(), 1e-9) / 1e6
	}
	return c.summarize(mbs, false)
}

// calibrate returns an iteration count for which copyLoop lasts at
// least d, growing it as testing.B does. The runs warm the buffers.
func calibrate(dst, src []byte, d time.Duration, loop func(dst, src []byte, iters int)) int {
	const maxIters = 1 << 34
	n := 1
	for {
		el := copyLoop(dst, src, n, loop)
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

// copyLoop copies src to dst iters times with loop and returns the
// time taken.
func copyLoop(dst, src []byte, iters int, loop func(dst, src []byte, iters int)) time.Duration {
	if len(dst) != len(src) {
		panic(errors.New("copyLoop: lengths differ"))
	}
	start := time.Now()
	loop(dst, src, iters)
	return time.Since(start)
}
