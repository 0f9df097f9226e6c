package main

import (
	"flag"
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// runAtomic measures an uncontended atomic fetch-add and one on a line
// the other core owns.
func runAtomic(args []string) (*table, error) {
	fs := flag.NewFlagSet("atomic", flag.ContinueOnError)
	var c common
	c.register(fs, 1000000, time.Second)
	fs.IntVar(&c.warm, "w", 10000, "warm-up fetch-adds before each contended block")
	gap := fs.Int("gap", 400, "steps of dependent register work before each timed fetch-add (time for the other core to take the line)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := c.check(fs); err != nil {
		return nil, err
	}
	if *gap < 0 {
		return nil, fmt.Errorf("atomic: -gap %d must not be negative", *gap)
	}
	a, b, warnings, err := pickCPUs(c.cpus)
	if err != nil {
		return nil, err
	}
	n, d := c.perBlock()
	var (
		local, remote, timer, localTimed []float64
		pulled, total                    int
	)
	err = onLockedThread(func() error {
		p, err := startPair(roleHammer, spinTight, a, b)
		if err != nil {
			return err
		}
		var empty, loc, rem hist
		st := timedState{x: p.w.x, gap: *gap, base: time.Now()}
		for r := range c.reps {
			// The child idles, spinning on the phase word.
			if err := p.setPhase(uint64(2 * r)); err != nil {
				p.kill()
				return err
			}
			iters, el, _ := timeBlock(n, d, func(n int) error {
				localAdds(p.w.x, n)
				return nil
			})
			local = append(local, el.Seconds()/float64(iters)*1e9)
			empty.reset()
			loc.reset()
			timeBlock(n, d, func(n int) error {
				st.idle(n, &empty, &loc)
				return nil
			})

			// The child hammers the line with fetch-adds.
			if err := p.setPhase(uint64(2*r + 1)); err != nil {
				p.kill()
				return err
			}
			st.remote(c.warm, &rem)
			rem.reset()
			st.pulled, st.total = 0, 0
			timeBlock(n, d, func(n int) error {
				st.remote(n, &rem)
				return nil
			})
			if err := p.alive(); err != nil {
				p.kill()
				return err
			}
			pulled, total = pulled+st.pulled, total+st.total
			timer = append(timer, empty.median())
			localTimed = append(localTimed, loc.median()-empty.median())
			if rem.n > 0 {
				remote = append(remote, rem.median()-empty.median())
			}
		}
		return p.finish(p.w.y)
	})
	if err != nil {
		return nil, fmt.Errorf("atomic: %w", err)
	}
	share := float64(pulled) / float64(max(total, 1))
	t := &table{
		test:     "atomic",
		warnings: warnings,
		notes: []string{
			fmt.Sprintf("cpus: %d (this process, fetch-adds) and %d (second process, hammering the line); %s of %d blocks of >= %d adds and >= %v per kind",
				a, b, c.stat(), c.reps, n, d),
			fmt.Sprintf("local: back-to-back adds, time / count; remote: median time of one add that found the line taken by the other core, minus the clock's overhead (%.0f ns)",
				median(timer)),
			fmt.Sprintf("line taken: the other core had taken the line before %.1f%% of the remote adds (gap %d); check: a local add timed like remote takes %.4f us",
				100*share, *gap, median(localTimed)/1e3),
		},
		cols: [2]string{"Operation", "Latency (us)"},
		prec: 4,
	}
	lo := c.summarize(us(local), true)
	re := lo
	if len(remote) == 0 {
		t.warnings = append(t.warnings, "no add found the line taken by the other core; reporting the local figure as remote (raise -gap or -t)")
	} else {
		t.notes = append(t.notes, fmt.Sprintf("blocks ranged (us): local_fetch_add %s, remote_fetch_add %s", spread(us(local)), spread(us(remote))))
		re = c.summarize(us(remote), true)
		if len(remote) < c.reps {
			t.warnings = append(t.warnings, fmt.Sprintf("only %d of %d blocks had an add that found the line taken by the other core", len(remote), c.reps))
		}
	}
	if share < 0.5 && len(warnings) == 0 {
		t.warnings = append(t.warnings, fmt.Sprintf(
			"the other core had taken the line before only %.1f%% of the remote adds: it was descheduled or -gap is too small", 100*share))
	}
	if re < lo {
		t.warnings = append(t.warnings, fmt.Sprintf(
			"remote_fetch_add came out below local_fetch_add (%.4f us); reporting the local figure", re))
		re = lo
	}
	t.rows = []row{{"local_fetch_add", lo}, {"remote_fetch_add", re}}
	return t, nil
}

// hist is a histogram of durations in nanoseconds, with 1 ns bins; the
// last bin collects everything longer (preemptions and interrupts).
type hist struct {
	bins [4096]uint32
	n    int
}

func (h *hist) reset() { *h = hist{} }

func (h *hist) add(d time.Duration) {
	i := min(max(int(d), 0), len(h.bins)-1)
	h.bins[i]++
	h.n++
}

// median returns the median duration in nanoseconds (NaN if empty).
func (h *hist) median() float64 {
	if h.n == 0 {
		return math.NaN()
	}
	want, cum := uint32((h.n+1)/2), uint32(0)
	for i, c := range h.bins {
		if cum += c; cum >= want {
			return float64(i)
		}
	}
	return float64(len(h.bins) - 1)
}

// timedState is the state of the timed fetch-add loops. Each add is
// preceded by gap steps of register work that depend on the previous
// add's result, and its increment depends on the first clock reading,
// so that the core can overlap neither the work nor the clock with the
// add. This side adds in the high half of x, the child in the low half:
// an add that finds the low half changed since this side's previous add
// found the line last written by the child.
type timedState struct {
	x             *atomic.Uint64
	gap           int
	base          time.Time
	g             uint64
	prev          uint32 // low half of x after this side's previous add
	pulled, total int
}

// idle alternates timing nothing (the clock's overhead, into empty)
// and timing an add on a line this core owns (into loc).
func (s *timedState) idle(n int, empty, loc *hist) {
	x, g := s.x, s.g
	for i := range n {
		g = work(g, s.gap)
		t0 := time.Since(s.base)
		if i&1 == 0 {
			t1 := time.Since(s.base)
			empty.add(t1 - t0)
			g += uint64(t1) & zero
			continue
		}
		v := x.Add(1<<32 + (uint64(t0)+g)&zero) // g: the gap's work is a dependency, not dead code
		t1 := time.Since(s.base)
		loc.add(t1 - t0)
		g = v + uint64(t1)&zero
		s.prev = uint32(v)
	}
	s.g = g
}

// remote times adds while the child hammers the line, recording in h
// those that found the child's adds since this side's previous one.
func (s *timedState) remote(n int, h *hist) {
	x, g, prev := s.x, s.g, s.prev
	for range n {
		g = work(g, s.gap)
		t0 := time.Since(s.base)
		v := x.Add(1<<32 + (uint64(t0)+g)&zero) // g: the gap's work is a dependency, not dead code
		t1 := time.Since(s.base)
		if uint32(v) != prev {
			h.add(t1 - t0)
			s.pulled++
			prev = uint32(v)
		}
		g = v + uint64(t1)&zero
	}
	s.total += n
	s.g, s.prev = g, prev
}

// work does gap steps of dependent register arithmetic on g.
func work(g uint64, gap int) uint64 {
	for range gap {
		g = g*3 + 1
	}
	return g
}

// us converts nanoseconds to microseconds.
func us(ns []float64) []float64 {
	out := make([]float64, len(ns))
	for i, v := range ns {
		out[i] = v / 1e3
	}
	return out
}

// setPhase tells the hammering child to idle (even phase) or hammer
// (odd phase) and waits until it has seen the change.
func (p *pair) setPhase(ph uint64) error {
	p.w.y.Store(ph)
	var s uint64
	for p.w.ctl.Load() != 2+ph {
		if s++; s&p.sp.mask == 0 {
			if err := p.sp.slow(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// sink keeps results alive; zero is 0 but the compiler cannot know it.
var (
	sink uint64
	zero uint64
)

// localAdds does n fetch-adds on x back to back.
func localAdds(x *atomic.Uint64, n int) {
	var acc uint64
	for range n {
		acc += x.Add(1 << 32)
	}
	sink += acc
}

// childHammer is the child's side of runAtomic: it follows the phase
// in y, acknowledging each in ctl, and while the phase is odd does
// fetch-adds on x as fast as it can.
func childHammer(w words, sp *spinner) error {
	x, y, ctl, mask := w.x, w.y, w.ctl, sp.mask
	acked := uint64(1 << 62) // no phase
	var s, acc uint64
	for {
		ph := y.Load()
		if ph != acked {
			if ph == stop {
				sink += acc
				return nil
			}
			ctl.Store(2 + ph)
			acked = ph
		}
		if ph&1 == 1 {
			acc += x.Add(1)
		}
		if s++; s&mask == 0 {
			if err := sp.slow(s); err != nil {
				return err
			}
		}
	}
}
