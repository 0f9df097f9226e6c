package mem

import (
	"sync/atomic"
	"time"
)

// Chooser chooses between two ways of doing one thing (kind 0 and kind
// 1; for a large put, copying alone or sharing the copy with waiting
// host-mates) by timing them in adjacent blocks: now and then a trial
// times chooseBlock calls with the chosen kind and then chooseBlock
// with the other, and the other takes over when the least time of its
// block is below the chosen kind's by more than chooseMargin. Only the
// trials' calls are timed. Trials come chooseMinPeriod calls after a
// change (and the first at once), and the gap doubles up to
// chooseMaxPeriod calls while the choice holds.
//
// Adjacent blocks compare the two kinds in one state of the machine
// and of the program (whether the partner is idle, where the lines
// are), which running costs kept from trials long apart would not.
// A Chooser may be used by several goroutines at once: its state is
// atomic words, and a lost update only delays a decision.
type Chooser struct {
	calls  atomic.Uint64 // calls so far (a call's index is the count before it)
	next   atomic.Uint64 // index of the next trial's first call
	period atomic.Uint64
	chosen atomic.Uint32
	least  [2]atomic.Int64 // the trial's least time of each kind, ns (0: none yet)
}

// Chooser parameters.
const (
	chooseBlock     = 8 // calls of each kind in a trial
	chooseSettle    = 2 // of them untimed: the first after a switch pays for it
	chooseMinPeriod = 64
	chooseMaxPeriod = 1024
	chooseMargin    = 0.05
)

// ChooseCall is one call's kind, and whether it is timed (its time goes
// to Done).
type ChooseCall struct {
	Kind  uint32
	Timed bool
	i     uint64
}

// NewChooser returns a Chooser that starts with kind first.
func NewChooser(first uint32) *Chooser {
	c := &Chooser{}
	c.chosen.Store(first & 1)
	c.period.Store(chooseMinPeriod)
	return c
}

// Pick returns the kind of the next call.
func (c *Chooser) Pick() ChooseCall {
	i := c.calls.Add(1) - 1
	next := c.next.Load()
	cur := c.chosen.Load()
	if i < next || i >= next+2*chooseBlock {
		return ChooseCall{Kind: cur}
	}
	p := i - next
	k := cur
	if p >= chooseBlock {
		k = 1 - cur
	}
	return ChooseCall{Kind: k, Timed: p%chooseBlock >= chooseSettle, i: i}
}

// Done records the time d of call k (a no-op unless it was Timed), and
// after the trial's last call chooses.
func (c *Chooser) Done(k ChooseCall, d time.Duration) {
	if !k.Timed {
		return
	}
	ns := max(int64(d), 1)
	l := &c.least[k.Kind]
	if old := l.Load(); old == 0 || ns < old {
		l.Store(ns)
	}
	if k.i-c.next.Load() != 2*chooseBlock-1 {
		return
	}
	// The trial's last call: choose, and schedule the next trial.
	cur := c.chosen.Load()
	mine, other := c.least[cur].Load(), c.least[1-cur].Load()
	period := min(2*c.period.Load(), chooseMaxPeriod)
	if mine > 0 && other > 0 && float64(other) < (1-chooseMargin)*float64(mine) {
		cur, period = 1-cur, chooseMinPeriod
		c.chosen.Store(cur)
	}
	c.least[0].Store(0)
	c.least[1].Store(0)
	c.period.Store(period)
	c.next.Store(k.i + 1 + period)
}

// Chosen returns the kind calls use outside trials.
func (c *Chooser) Chosen() uint32 { return c.chosen.Load() }
