package main

import (
	"flag"
	"fmt"
	"sync/atomic"
	"time"
)

// runAtomic measures an uncontended atomic fetch-add and one on a line
// the other core keeps taking back.
func runAtomic(args []string) (*table, error) {
	fs := flag.NewFlagSet("atomic", flag.ContinueOnError)
	var c common
	c.register(fs, 1000000, time.Second)
	fs.IntVar(&c.warm, "w", 10000, "warm-up fetch-adds before each contended block")
	gap := fs.Int("gap", 200, "steps of dependent register work between two contended fetch-adds")
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
	local := make([]float64, c.reps)
	remote := make([]float64, c.reps)
	gapNs := make([]float64, c.reps)
	var pulled, total int
	err = onLockedThread(func() error {
		p, err := startPair(roleHammer, a, b)
		if err != nil {
			return err
		}
		for r := range c.reps {
			// The child idles, spinning on the phase word.
			if err := p.setPhase(uint64(2 * r)); err != nil {
				p.kill()
				return err
			}
			iters, el, err := timeBlock(n, d, func(n int) error {
				localAdds(p.w.x, n)
				return nil
			})
			if err != nil {
				p.kill()
				return err
			}
			local[r] = el.Seconds() / float64(iters) * 1e9
			gapLoop := func(n int) error {
				k, _ := gapAdds(p.w.x, n, *gap)
				pulled += k
				total += n
				return nil
			}
			iters, el, _ = timeBlock(n, d, gapLoop)
			alone := el.Seconds() / float64(iters) * 1e9

			// The child hammers the line with fetch-adds.
			if err := p.setPhase(uint64(2*r + 1)); err != nil {
				p.kill()
				return err
			}
			gapAdds(p.w.x, c.warm, *gap)
			pulled, total = 0, 0
			iters, el, _ = timeBlock(n, d, gapLoop)
			contended := el.Seconds() / float64(iters) * 1e9
			if err := p.alive(); err != nil {
				p.kill()
				return err
			}
			remote[r] = local[r] + contended - alone
			gapNs[r] = alone - local[r]
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
			fmt.Sprintf("cpus %d (this process, fetch-adds) and %d (second process, hammering the line); %s of %d blocks of >= %d adds and >= %v",
				a, b, c.stat(), c.reps, n, d),
			fmt.Sprintf("remote = local + (contended - idle) per add; gap of %d steps costs %.4f us; the other core took the line back before %.1f%% of the adds in the last block",
				*gap, median(gapNs)/1e3, 100*share),
			fmt.Sprintf("blocks ranged (us): local_fetch_add %s, remote_fetch_add %s", spread(us(local)), spread(us(remote))),
		},
		cols: [2]string{"Operation", "Latency (us)"},
		prec: 4,
	}
	lo, re := c.summarize(us(local), true), c.summarize(us(remote), true)
	if share < 0.9 {
		t.warnings = append(t.warnings, fmt.Sprintf(
			"the other core took the line back before only %.1f%% of the remote adds; raise -gap", 100*share))
	}
	if re < lo {
		t.warnings = append(t.warnings, fmt.Sprintf(
			"remote_fetch_add came out below local_fetch_add (%.4f us); the machine was too noisy, reporting the local figure", re))
		re = lo
	}
	t.rows = []row{{"local_fetch_add", lo}, {"remote_fetch_add", re}}
	return t, nil
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

// gapAdds does n fetch-adds on x, each followed by gap steps of
// register work that depend on its result and feed the next add, so
// that neither overlaps an add. This side adds in the high half of x
// and the child in the low half; pulled counts the adds that found the
// low half changed since this side's previous add, that is after the
// child had taken the line.
func gapAdds(x *atomic.Uint64, n, gap int) (pulled int, g uint64) {
	prev := uint32(x.Load())
	for range n {
		v := x.Add(1<<32 + g&zero)
		if uint32(v) != prev {
			pulled++
			prev = uint32(v)
		}
		g = v
		for range gap {
			g = g*3 + 1
		}
	}
	sink += g
	return pulled, g
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
