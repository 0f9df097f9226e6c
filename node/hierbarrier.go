package node

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/shm"
)

// hierBarrier is the world barrier of a job across hosts, level by
// level: the PEs of each host arrive at their leader, the leaders run
// the dissemination barrier among themselves over the transport, and
// each leader then releases its host's PEs. Only leaders send across
// hosts, ceil(log2 H) flags each for H hosts, where the flat
// dissemination barrier over all N PEs has every PE send a flag in each
// of its ceil(log2 N) rounds, most of them to another host and, from a
// non-leader, through its leader's queue: 2 hosts of 2 PEs each send 2
// frames per barrier instead of 6, 16 hosts of 64 PEs 64 instead of
// about 10,000.
//
// Inside a host it is a central counter: a non-leader adds one to
// arrivals (its leader's Slot.Epoch in the host's control block, which
// the central barrier of a one-host job uses and a job across hosts
// does not) and rings the leader, then waits until release (the
// leader's Slot.Group) reaches the barrier's number; the leader waits
// until arrivals counts every host-mate (mates) for every barrier so
// far. The
// counters only grow, so a barrier's arrivals cannot be mistaken for an
// earlier one's, and a host-mate that races ahead into the next barrier
// only adds to the next count. Among the leaders the round-r flag is
// the leader's barrier flag r (the flags of the start-up barrier, which
// stays flat), written by the partner leader as a control-block store
// (xCtl) that this host's leader receives and rings; its value is the
// leader's epoch, which every leader advances alike.
type hierBarrier struct {
	leader int            // this host's leader PE
	mates  []int          // the leader's: the host's other PEs
	arr    *atomic.Uint64 // arrivals, counting every barrier
	rel    *atomic.Uint64 // the last barrier released
	passed uint64         // barriers this PE has entered
	to     []int          // the leader's: round r's partner leader
	ctlOff []uintptr      // the leader's: offset of the partner's flag r
	in     []*shm.Uint32  // the leader's: its own flag r
}

// newHierBarrier returns PE me's part of the hierarchical world barrier
// of job j, which spans x's hosts.
func newHierBarrier(j *Job, x *xhost, me int) *hierBarrier {
	leaders := x.cl.Leaders
	lead := leaders[x.host]
	h := &hierBarrier{
		leader: lead,
		arr:    &j.ctl.Slot(lead).Epoch,
		rel:    &j.ctl.Slot(lead).Group,
	}
	if me != lead {
		return h
	}
	for _, q := range x.local {
		if q != me {
			h.mates = append(h.mates, q)
		}
	}
	for r := 0; 1<<r < len(leaders); r++ {
		partner := leaders[(x.host+1<<r)%len(leaders)]
		h.to = append(h.to, partner)
		h.ctlOff = append(h.ctlOff, j.ctlOffset(j.ctl.Flag(partner, r)))
		h.in = append(h.in, j.ctl.Flag(me, r))
	}
	return h
}

// hierSync is the world barrier of a job across hosts (hierBarrier).
// As the central barrier, a PE does not arrive in a failed job: its
// arrival would count towards a barrier that the others left with a
// *JobError.
func (p *PE) hierSync(routine string) {
	h := p.hier
	p.CheckAbort(routine)
	h.passed++
	e := h.passed
	if p.me != h.leader {
		h.arr.Add(1) // a locked add: the arrival is ordered before the ring's load
		wait.Ring(p.peers[h.leader].door)
		if int64(h.rel.Load()-e) < 0 {
			p.waitCount(routine, h.rel, e, p.policy)
		}
		return
	}
	if all := e * uint64(len(h.mates)); int64(h.arr.Load()-all) < 0 {
		p.waitCount(routine, h.arr, all, p.policy)
	}
	p.epoch++
	f := p.epoch
	for r, to := range h.to {
		p.xctl(routine, to, h.ctlOff[r], f)
		if in := &h.in[r].Uint32; int32(in.Load()-f) < 0 {
			p.waitFlag(routine, in, f)
		}
	}
	h.rel.Store(e) // an XCHG: ordered before the rings' loads
	for _, q := range h.mates {
		wait.Ring(p.peers[q].door)
	}
}
