package node

import (
	"io"
	"time"

	"github.com/goshmem/goshmem/internal/wait"
)

// WithMapFault returns cfg with mapping of the heaps of the PEs for
// which fail returns an error made to fail (tests of the CMA fallback).
func WithMapFault(cfg Config, fail func(pe int) error) Config {
	cfg.mapFault = fail
	return cfg
}

// WithCMAFault returns cfg with the start-up probe of process_vm_readv
// made to fail with err (tests of the probe's failure).
func WithCMAFault(cfg Config, err error) Config {
	cfg.cmaFault = err
	return cfg
}

// WithBeforeStart returns cfg with f run on each PE of the process
// right before the start-up barrier (tests of a PE that dies there).
func WithBeforeStart(cfg Config, f func(p *PE)) Config {
	cfg.beforeStart = f
	return cfg
}

// EndPMI finalizes this process's connection to its cluster
// launcher's PMI, if any, as Finalize does: a test PE that then dies
// is not taken for a crash by a launcher that watches the connection
// (hydra ends the whole job on it, even with -disable-auto-cleanup).
func (p *PE) EndPMI() {
	if c := p.job.pmi; c != nil {
		p.job.pmiEnd.Do(func() { c.Finalize() })
	}
}

// TakeAMOLock takes the lock that serializes emulated (CMA) AMOs on PE
// pe's heap and never releases it: tests of a PE that dies holding it.
func (p *PE) TakeAMOLock(pe int) {
	for !p.job.ctl.Slot(pe).AMOLock.CompareAndSwap(0, 1) {
	}
}

// Sleepers returns what PE q's doorbell counts as asleep: 1 per thread
// in a futex wait, wait.ParkUnit per goroutine parked in its process.
func (p *PE) Sleepers(q int) uint32 { return p.job.ctl.Slot(q).Door.Sleepers.Load() }

// WaitPolicy returns the policy the PE's waits follow.
func (p *PE) WaitPolicy() wait.Policy { return *p.policy }

// BarrierArrivals returns the central barrier's arrival counter (PE 0's
// control slot): one per group (BarrierGroups) per barrier when the job
// uses that barrier, 0 when it uses the dissemination barrier.
func (p *PE) BarrierArrivals() uint64 { return p.job.ctl.Slot(0).Epoch.Load() }

// BarrierGroups returns how many arrivals the central barrier counts
// per barrier: the number of CPU groups, or npes without them (also
// before the first central barrier).
func (p *PE) BarrierGroups() int {
	if p.grouped > 0 {
		return int(p.groups)
	}
	return p.npes
}

// CPUSetID is cpuSetID.
var CPUSetID = cpuSetID

// XQuiets returns how many Quiet round trips to other hosts this PE
// has made (0 in a job on one host).
func (p *PE) XQuiets() uint64 {
	if p.x == nil {
		return 0
	}
	p.x.mu.Lock()
	defer p.x.mu.Unlock()
	return p.x.quiets
}

// XQuietAnswers returns how many answers to counted Quiet round trips
// this PE's mailbox has received.
func (p *PE) XQuietAnswers() uint64 {
	if p.x == nil {
		return 0
	}
	return uint64(p.x.box.Acks.Load())
}

// XQuietWaits returns how many Quiets of this PE waited for answers
// from other hosts (one per Quiet, however many hosts it asked).
func (p *PE) XQuietWaits() uint64 {
	if p.x == nil {
		return 0
	}
	p.x.mu.Lock()
	defer p.x.mu.Unlock()
	return p.x.quietWaits
}

// Shareable returns how many shareable contexts the PE keeps a record
// of for Finalize.
func (p *PE) Shareable() int {
	p.endMu.Lock()
	defer p.endMu.Unlock()
	return len(p.shareable)
}

// WithLoneWarn returns cfg with the warning of a wait that only its
// own PE can still satisfy given after d, written to w.
func WithLoneWarn(cfg Config, d time.Duration, w io.Writer) Config {
	cfg.loneWarn, cfg.loneOut = d, w
	return cfg
}
