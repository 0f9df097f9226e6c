package main

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/goshmem/goshmem/internal/wait"
)

// handoffVariant is one way of handing a line over: the layout (one
// line both sides write, or a flag line and an answer line) and the
// spin method of the waits.
type handoffVariant struct {
	label, role, spin string
}

// handoffVariants are the measured variants, goshmem's spin method
// first. The table's last row, limitRow, is the minimum over them.
var handoffVariants = [...]handoffVariant{
	{"same_line", roleSame, spinPause},
	{"separate_lines", roleSeparate, spinPause},
	{"same_tight", roleSame, spinTight},
	{"separate_tight", roleSeparate, spinTight},
}

// limitRow is the hand-off table's row with the minimum over the
// variants: the limit a goshmem latency is judged against.
const limitRow = "min"

// runHandoff measures the one-way cache-line hand-off latency between
// two processes in each handoffVariant.
func runHandoff(args []string) (*table, error) {
	fs := flag.NewFlagSet("handoff", flag.ContinueOnError)
	var c common
	c.register(fs, 1000000, time.Second)
	fs.IntVar(&c.warm, "w", 10000, "warm-up round trips")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := c.check(fs); err != nil {
		return nil, err
	}
	a, b, warnings, err := pickCPUs(c.cpus)
	if err != nil {
		return nil, err
	}
	n, d := c.perBlock()
	t := &table{
		test:     "handoff",
		warnings: warnings,
		notes: []string{fmt.Sprintf("cpus: %d (this process) and %d (second process); one-way = round trip / 2; %s of %d blocks of >= %d round trips and >= %v after %d warm-up",
			a, b, c.stat(), c.reps, n, d, c.warm),
			"spin: rows without a suffix poll with one pause instruction per poll (internal/wait.Relax, goshmem's spinning wait), _tight rows without; " + limitRow + " is the minimum over the rows"},
		cols: [2]string{"Layout", "Latency (us)"},
		prec: 4,
	}
	var spreads []string
	best := math.Inf(1)
	for _, vr := range handoffVariants {
		lat, err := handoffBlocks(vr, a, b, &c)
		if err != nil {
			return nil, fmt.Errorf("handoff %s: %w", vr.label, err)
		}
		spreads = append(spreads, vr.label+" "+spread(lat))
		us := c.summarize(lat, true)
		best = min(best, us)
		t.rows = append(t.rows, row{vr.label, us})
	}
	t.rows = append(t.rows, row{limitRow, best})
	t.notes = append(t.notes, "blocks ranged (us): "+strings.Join(spreads, ", "))
	return t, nil
}

// handoffBlocks starts a second process for vr and returns the one-way
// latency of each of c.reps timed blocks, in microseconds.
func handoffBlocks(vr handoffVariant, a, b int, c *common) ([]float64, error) {
	n, d := c.perBlock()
	lat := make([]float64, c.reps)
	err := onLockedThread(func() error {
		p, err := startPair(vr.role, vr.spin, a, b)
		if err != nil {
			return err
		}
		var v uint64 // the last value this side stored or awaited
		step := sameLineA
		if vr.role == roleSeparate {
			step = separateLinesA
		}
		chunk := func(n int) error {
			var err error
			v, err = step(p.w, v, n, p.sp)
			return err
		}
		if err := chunk(c.warm); err != nil {
			p.kill()
			return err
		}
		for r := range lat {
			iters, el, err := timeBlock(n, d, chunk)
			if err != nil {
				p.kill()
				return err
			}
			lat[r] = el.Seconds() / float64(iters) / 2 * 1e6
		}
		return p.finish(p.w.x)
	})
	return lat, err
}

// timeBlock calls chunk with counts that add up to at least minIters
// until also at least minDur has passed, and returns the total count
// and the time taken.
func timeBlock(minIters int, minDur time.Duration, chunk func(n int) error) (int, time.Duration, error) {
	// Read the clock only every 1024 iterations, unless fewer are
	// wanted and there is no minimum time.
	step := 1024
	if minDur == 0 {
		step = max(min(minIters, step), 1)
	}
	total := 0
	start := time.Now()
	for {
		if err := chunk(step); err != nil {
			return 0, 0, err
		}
		total += step
		if el := time.Since(start); total >= minIters && el >= minDur {
			return total, el, nil
		}
	}
}

// sameLineA does n round trips on one counter: this side stores v+1
// and waits for the child to store v+2. It returns the new v.
func sameLineA(w words, v uint64, n int, sp *spinner) (uint64, error) {
	x, relax, mask := w.x, sp.relax, sp.mask
	for range n {
		x.Store(v + 1)
		v += 2
		for s := uint64(1); x.Load() != v; s++ {
			if relax {
				wait.Relax()
			}
			if s&mask == 0 {
				if err := sp.slow(s); err != nil {
					return v, err
				}
			}
		}
	}
	return v, nil
}

// childSame is the child's side of sameLineA: it waits for each odd
// value and stores the next even one.
func childSame(w words, sp *spinner) error {
	x, relax, mask := w.x, sp.relax, sp.mask
	want := uint64(1)
	var s uint64
	for {
		v := x.Load()
		if v == want {
			x.Store(v + 1)
			want += 2
			continue
		}
		if v == stop {
			return nil
		}
		if relax {
			wait.Relax()
		}
		if s++; s&mask == 0 {
			if err := sp.slow(s); err != nil {
				return err
			}
		}
	}
}

// separateLinesA does n round trips on two lines: this side stores the
// next sequence number in the flag word x and waits until the child
// copies it to the answer word y. It returns the last number.
func separateLinesA(w words, k uint64, n int, sp *spinner) (uint64, error) {
	x, y, relax, mask := w.x, w.y, sp.relax, sp.mask
	for range n {
		k++
		x.Store(k)
		for s := uint64(1); y.Load() != k; s++ {
			if relax {
				wait.Relax()
			}
			if s&mask == 0 {
				if err := sp.slow(s); err != nil {
					return k, err
				}
			}
		}
	}
	return k, nil
}

// childSeparate is the child's side of separateLinesA.
func childSeparate(w words, sp *spinner) error {
	x, y, relax, mask := w.x, w.y, sp.relax, sp.mask
	want := uint64(1)
	var s uint64
	for {
		v := x.Load()
		if v == want {
			y.Store(v)
			want++
			continue
		}
		if v == stop {
			return nil
		}
		if relax {
			wait.Relax()
		}
		if s++; s&mask == 0 {
			if err := sp.slow(s); err != nil {
				return err
			}
		}
	}
}
