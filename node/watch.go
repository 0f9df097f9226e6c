package node

import (
	"os"
	"sync"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
)

// Failure notice without polling. Each process of a multi-process job
// runs two watchers, each a goroutine blocked until something happens:
//
//   - The ring watcher: the processes form a ring in PE order, and each
//     watches the next one's pidfd in the Go runtime's poller (no OS
//     thread, no CPU while it waits). When that process exits while one
//     of its PEs has not finalized, the watcher records the failure and
//     rings every doorbell (Job.fail) at once; when it exits after
//     finalizing, the watcher moves on to the process after it. A
//     process holds one pidfd whatever the number of PEs, and every
//     death is seen by its nearest predecessor that is still running.
//   - The exit watcher: sleeps on its process's Watch word (a futex in
//     the control block) without a timeout; Job.fail bumps and wakes
//     every such word. On a GlobalExit record it ends the process with
//     the GlobalExit status, even while the process's PEs compute and
//     never call into the runtime.
//
// Waits need no liveness check of their own: a waiter that sleeps is
// woken by Job.fail's doorbell ring and reads the abort record after
// every wake-up. Before the ring exists (the start-up barrier, while
// pids are still being published) see PE.syncStart.
type watchers struct {
	mu      sync.Mutex
	stopped bool
	ring    *sys.ProcessWatch // the pidfd being waited on, to close on stop
	running sync.WaitGroup
}

// wakeWatch wakes the exit watcher sleeping on s.Watch, if any.
func wakeWatch(s *job.Slot) {
	s.Watch.Add(1)
	sys.FutexWake(mem.U32(&s.Watch), 1<<30)
}

// startExitWatch starts the exit watcher of this process (Main, Init):
// before the start-up barrier, so that it runs before any PE can call
// GlobalExit.
func (j *Job) startExitWatch() {
	j.watch.running.Add(1)
	go j.exitWatch(j.ctl.Slot(j.firstPE))
}

func (j *Job) exitWatch(s *job.Slot) {
	defer j.watch.running.Done()
	a := &j.ctl.Header.Abort
	for {
		v := s.Watch.Load()
		if j.watchStopped() {
			return
		}
		if a.State.Load() != 0 {
			if kind, _, _, code, _ := a.Settled(); kind == job.AbortGlobalExit {
				j.exit(code) // the leader's forwards it to the other hosts first
			}
			return // another failure: the PEs stop at their next wait
		}
		sys.FutexWait(mem.U32(&s.Watch), v, 0)
	}
}

// startRingWatch starts the ring watcher of this process, after the
// start-up barrier (every PE's pid is published).
func (j *Job) startRingWatch() {
	if j.firstPE == 0 && j.localPEs == j.npes || j.host != nil && len(j.host) == j.localPEs {
		return // no other process
	}
	j.watch.running.Add(1)
	go j.ringWatch()
}

// ringWatch waits for the exit of the processes after this one in PE
// order, one at a time, until one exits without finalizing (the job
// fails), the ring comes back to this process (everyone else finished),
// or the job is closed. PEs [pe, end) with one pid are one process.
//
// In a job that spans hosts the ring is this host's PEs (the others are
// watched by their hosts, which report to this one through the
// leaders).
func (j *Job) ringWatch() {
	defer j.watch.running.Done()
	self := os.Getpid()
	ring := j.host
	if ring == nil {
		ring = make([]int, j.npes)
		for q := range ring {
			ring[q] = q
		}
	}
	n := len(ring)
	at := 0
	for ring[at] != j.firstPE {
		at++
	}
	i := (at + 1) % n
	for i != at {
		pe := ring[i]
		pid := int(j.ctl.Slot(pe).Pid.Load())
		end := i + 1
		for end < n && int(j.ctl.Slot(ring[end]).Pid.Load()) == pid {
			end++
		}
		if pid != self && pid > 0 {
			if !j.waitExit(pid) {
				return // stopped
			}
			for _, q := range ring[i:end] {
				if j.ctl.Slot(q).State.Load() != job.StateFinalized {
					j.fail(job.AbortLost, q, pid, 0)
					return
				}
			}
		}
		i = end % n
	}
}

// waitExit blocks until process pid has exited (true) or the watchers
// are stopped (false). A process that cannot be watched because it is
// already gone (ESRCH) has exited; one that cannot be watched for
// another reason (no pidfds: Linux before 5.3) is left to the launcher,
// and the watcher stops.
func (j *Job) waitExit(pid int) bool {
	w, err := sys.WatchProcess(pid)
	if err != nil {
		return sys.ProcessExited(pid) && !j.watchStopped()
	}
	j.watch.mu.Lock()
	if j.watch.stopped {
		j.watch.mu.Unlock()
		w.Close()
		return false
	}
	j.watch.ring = w
	j.watch.mu.Unlock()
	err = w.Wait()
	j.watch.mu.Lock()
	j.watch.ring = nil
	j.watch.mu.Unlock()
	w.Close()
	return err == nil && !j.watchStopped()
}

func (j *Job) watchStopped() bool {
	j.watch.mu.Lock()
	defer j.watch.mu.Unlock()
	return j.watch.stopped
}

// stopWatchers ends both watchers and waits for them (Job.close).
func (j *Job) stopWatchers() {
	j.watch.mu.Lock()
	j.watch.stopped = true
	if j.watch.ring != nil {
		j.watch.ring.Close()
	}
	j.watch.mu.Unlock()
	if j.process {
		wakeWatch(j.ctl.Slot(j.firstPE))
	}
	j.watch.running.Wait()
}

// checkPeer fails the job if the process of PE pe has exited while pe
// had not finalized: for a CMA transfer that failed, which may run
// before the ring watcher has seen the exit, and in the start-up
// barrier, before there is a ring watcher (PE.startCheck). It sees only
// PEs of this host: another host's PE has no pid here.
func (j *Job) checkPeer(pe int) {
	s := j.ctl.Slot(pe)
	pid := int(s.Pid.Load())
	if pid > 0 && pid != os.Getpid() && s.State.Load() != job.StateFinalized && sys.ProcessExited(pid) {
		j.fail(job.AbortLost, pe, pid, 0)
	}
}
