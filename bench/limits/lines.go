package main

import (
	"flag"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/numa"
)

// linesStride is the default distance between two of the k lines: a
// page and a line, far enough that the adjacent-line prefetcher does
// not fetch one with another, and not a multiple of 4 KiB, so that the
// lines fall into different sets of the L1 cache (lines 4 KiB apart
// share one set of a 32 KiB 8-way L1, and more than 8 of them evict
// each other: -stride 4096 shows that cost).
const linesStride = 4096 + 64

// runLines measures what moving k cache lines from one core to another
// costs on top of the hand-off that announces them: the writer (second
// CPU) stores a round number into each of k lines linesStride apart,
// then into a flag line; the reader (first CPU) waits for the flag,
// reads the k lines and answers on its own line; the writer waits for
// the answer before the next round. A row is the time of one round for
// k lines; row "per_line" is the least-squares slope over the rows,
// the cost of one more line (the writer's ownership request plus the
// reader's miss, overlapped as far as the core overlaps them). This is
// the (p-1) term of the cost model of goshmem's exchange collectives
// (docs/performance.md, "Cost model").
func runLines(args []string) (*table, error) {
	fs := flag.NewFlagSet("lines", flag.ContinueOnError)
	var c common
	c.register(fs, 200000, 500*time.Millisecond)
	fs.IntVar(&c.warm, "w", 10000, "warm-up rounds")
	ks := fs.String("k", "0,1,2,4,8,16,32,64", "comma-separated line counts")
	stride := fs.Int("stride", linesStride, "bytes between two lines (a multiple of 64, at least 128)")
	readOnly := fs.Bool("read", false, "time only the reader's loads of the k lines (after the flag arrived), not the round")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := c.check(fs); err != nil {
		return nil, err
	}
	counts, err := lineCounts("lines", *ks, 0, 1024)
	if err != nil {
		return nil, err
	}
	if *stride < 128 || *stride%64 != 0 || *stride > 1<<20 {
		return nil, fmt.Errorf("lines: -stride %d: want a multiple of 64 from 128 to 1048576", *stride)
	}
	a, b, warnings, err := pickCPUs(c.cpus)
	if err != nil {
		return nil, err
	}
	n, d := c.perBlock()
	t := &table{
		test:     "lines",
		warnings: warnings,
		notes: []string{fmt.Sprintf("cpus: reader %d, writer %d (threads of this process); lines %d B apart; %s of %d blocks of >= %d rounds and >= %v after %d warm-up",
			a, b, *stride, c.stat(), c.reps, n, d, c.warm),
			"a round: the writer stores into k lines and a flag line, the reader waits for the flag, reads the k lines and answers; per_line is the least-squares slope of round time over k"},
		cols: [2]string{"Lines", "Round (us)"},
		prec: 4,
	}
	if *readOnly {
		t.notes = append(t.notes, "read: rows time only the reader's loads of the k lines (between two clock readings, whose cost is in every row, k = 0 included); per_line is then the cost of one more line read while its writer waits")
		t.cols[1] = "Read (us)"
	}
	var xs, ys []float64
	for _, k := range counts {
		lat, err := linesBlocks(k, *stride, a, b, *readOnly, &c)
		if err != nil {
			return nil, err
		}
		us := c.summarize(lat, true)
		t.rows = append(t.rows, row{strconv.Itoa(k), us})
		xs, ys = append(xs, float64(k)), append(ys, us)
	}
	if len(xs) >= 2 {
		t.rows = append(t.rows, row{"per_line", slope(xs, ys)})
	}
	return t, nil
}

// slope is the least-squares slope of y over x.
func slope(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var num, den float64
	for i := range x {
		num += (x[i] - mx) * (y[i] - my)
		den += (x[i] - mx) * (x[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// linesBlocks returns the round time of each of c.reps blocks for k
// lines, in microseconds.
func linesBlocks(k, stride, a, b int, readOnly bool, c *common) ([]float64, error) {
	// k data lines, then the flag and the answer, each on its own page.
	buf := make([]atomic.Uint64, (k+2)*stride/8)
	line := func(i int) *atomic.Uint64 { return &buf[i*stride/8] }
	flag, answer := line(k), line(k+1)
	n, d := c.perBlock()
	// On one CPU the two sides take turns: a waiter yields it.
	relax := wait.Relax
	if a == b {
		relax = func() { sys.SchedYield() }
	}
	var stop atomic.Bool
	writerErr := make(chan error, 1)
	go func() {
		writerErr <- onLockedThread(func() error {
			if err := numa.Bind([]int{b}); err != nil {
				return err
			}
			for r := uint64(1); ; r++ {
				for i := 0; i < k; i++ {
					line(i).Store(r)
				}
				flag.Store(r)
				for answer.Load() != r {
					if stop.Load() {
						return nil
					}
					relax()
				}
			}
		})
	}()
	lat := make([]float64, c.reps)
	var sink uint64
	err := onLockedThread(func() error {
		if err := numa.Bind([]int{a}); err != nil {
			return err
		}
		var r uint64
		var reading time.Duration
		chunk := func(n int) error {
			for range n {
				r++
				for flag.Load() != r {
					relax()
				}
				var t0 time.Time
				if readOnly {
					t0 = time.Now()
				}
				for i := 0; i < k; i++ {
					sink += line(i).Load()
				}
				if readOnly {
					reading += time.Since(t0)
				}
				answer.Store(r)
			}
			return nil
		}
		if err := chunk(c.warm); err != nil {
			return err
		}
		for i := range lat {
			reading = 0
			iters, el, err := timeBlock(n, d, chunk)
			if err != nil {
				return err
			}
			if readOnly {
				el = reading
			}
			lat[i] = el.Seconds() / float64(iters) * 1e6
		}
		return nil
	})
	stop.Store(true)
	if werr := <-writerErr; err == nil {
		err = werr
	}
	if sink == 1 { // keep the reads
		fmt.Print("")
	}
	return lat, err
}
