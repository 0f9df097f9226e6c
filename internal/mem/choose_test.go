package mem

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestChooser drives a Chooser with modelled costs: 200 random pairs of
// per-call times, 10% apart or more, with noise of up to 4% and a rare
// interruption (a call 20 times its cost). It starts on the dearer
// kind, must choose the cheaper one, make at most 3% of the later calls
// with the other kind, and follow when the costs trade places.
func TestChooser(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 200 {
		cost := [2]float64{1000 + rng.Float64()*9000, 0}
		f := 1.1 + rng.Float64()*1.5
		if rng.IntN(2) == 0 {
			cost[1] = cost[0] * f
		} else {
			cost[1] = cost[0] / f
		}
		cheap := uint32(0)
		if cost[1] < cost[0] {
			cheap = 1
		}
		c := NewChooser(1 - cheap)
		run := func(n int) (other int) {
			for range n {
				k := c.Pick()
				x := cost[k.Kind] * (1 + 0.04*rng.Float64())
				if rng.IntN(500) == 0 {
					x *= 20
				}
				c.Done(k, time.Duration(x))
				if k.Kind != c.Chosen() {
					other++
				}
			}
			return other
		}
		run(200)
		if c.Chosen() != cheap {
			t.Fatalf("trial %d: costs %.0f/%.0f ns: chose %d after 200 calls, want %d", trial, cost[0], cost[1], c.Chosen(), cheap)
		}
		if o := run(20000); o > 600 || c.Chosen() != cheap {
			t.Fatalf("trial %d: costs %.0f/%.0f: %d of 20000 calls with the other kind, chosen %d; want <= 600 and %d", trial, cost[0], cost[1], o, c.Chosen(), cheap)
		}
		cost[0], cost[1] = cost[1], cost[0]
		run(2*chooseMaxPeriod + 4*chooseBlock)
		if c.Chosen() == cheap {
			t.Fatalf("trial %d: costs traded places, the choice did not follow within %d calls", trial, 2*chooseMaxPeriod+4*chooseBlock)
		}
	}
}

// TestChooserTimesTrialsOnly: outside a trial no call is timed, inside
// a trial the first chooseSettle of each block are not.
func TestChooserTimesTrialsOnly(t *testing.T) {
	c := NewChooser(0)
	timed := 0
	for i := range 2000 {
		k := c.Pick()
		if k.Timed {
			timed++
		}
		c.Done(k, time.Microsecond)
		if p := uint64(i); p < 2*chooseBlock && k.Timed != (p%chooseBlock >= chooseSettle) {
			t.Fatalf("call %d: timed %v", i, k.Timed)
		}
	}
	// Trials at 0, then periods 128, 256, 512, 1024 (equal costs keep
	// the choice): at most 5 trials in 2000 calls.
	if max := 5 * 2 * (chooseBlock - chooseSettle); timed > max || timed == 0 {
		t.Errorf("%d timed calls of 2000, want 1..%d", timed, max)
	}
}
