package main

// The two-process harness of handoff and atomic: this process creates a
// memfd segment, starts a copy of its own executable with the segment
// as descriptor 3 and the environment variable childEnv saying what to
// do, and both map the segment. The child binds its main thread to its
// CPU, says it is ready, and plays its part until the parent stores
// the stop value.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
	"github.com/goshmem/goshmem/shm"
)

// childEnv tells the executable (this command, or the test binary, see
// TestMain) to run as the second process:
// "<role>,<cpu>,<yield>,<spin>" (spin: spinPause or spinTight).
const childEnv = "GOSHMEM_LIMITS_CHILD"

// childFD is the segment's descriptor in the child (ExtraFiles[0]).
const childFD = 3

// Layout of the shared segment: each word on a page of its own, so that
// neither the adjacent-line prefetcher nor false sharing links them.
const (
	page     = 4096
	offCtl   = 0 * page    // child -> parent: 1 when ready; 2+phase as acknowledgement in atomic
	offAux   = offCtl + 64 // parent -> child, between measurements: relay's spin count
	offX     = 1 * page    // the measured line (same_line counter, separate_lines flag, atomic target)
	offY     = 2 * page    // separate_lines answer; atomic phase
	segBytes = 3 * page
)

// stop is the value the parent stores to end the child. The counters
// never reach it.
const stop = 1 << 63

// Child roles.
const (
	roleSame     = "same"
	roleSeparate = "separate"
	roleHammer   = "hammer"
	roleRelay    = "relay" // tcp's relayed ping-pong: answers x in y (childRelay)
)

// words are the shared words as mapped by one process.
type words struct {
	ctl, aux, x, y *atomic.Uint64
}

func wordsOf(b []byte) words {
	return words{
		ctl: &shm.View[shm.Uint64](b, offCtl).Uint64,
		aux: shm.View[atomic.Uint64](b, offAux),
		x:   &shm.View[shm.Uint64](b, offX).Uint64,
		y:   &shm.View[shm.Uint64](b, offY).Uint64,
	}
}

// Spin methods of a wait loop between two polls of a word.
const (
	// spinPause is goshmem's: one CPU pause instruction (wait.Relax)
	// per poll, as the spinning phase of internal/wait.Backoff.Pause
	// that node.PE.WaitSlow (WaitUntil, barriers) runs. Without the
	// pause the poller keeps re-requesting the line the other core is
	// trying to write, and on an SMT core (or a vCPU whose host thread
	// shares a core) takes the sibling's issue slots.
	spinPause = "pause"
	// spinTight polls back to back, without a pause.
	spinTight = "tight"
)

// spinner bounds how a wait loop spins. After each poll that did not
// find what it waits for, the loop executes a CPU pause instruction if
// relax (the spinPause method), and every mask+1 polls it calls slow,
// which yields the CPU when both sides share one, and every 65536 polls
// checks that the other side is alive.
type spinner struct {
	mask  uint64
	yield bool
	relax bool
	alive func() error
}

func newSpinner(yield bool, spin string, alive func() error) *spinner {
	s := &spinner{mask: 1<<12 - 1, yield: yield, relax: spin == spinPause, alive: alive}
	if yield {
		s.mask = 0
	}
	return s
}

func (s *spinner) slow(n uint64) error {
	if s.yield {
		sys.SchedYield()
	}
	if n&(1<<16-1) == 0 {
		return s.alive()
	}
	return nil
}

// pair is the parent's side of a two-process measurement.
type pair struct {
	m      *shm.Mapping
	w      words
	cmd    *exec.Cmd
	done   chan struct{}
	exited atomic.Bool
	err    error // the child's exit error, valid after done is closed
	sp     *spinner
}

// startPair starts a child in role on CPU cpuB and waits until it is
// bound and ready; both sides wait with the spin method spin. It must be called on a locked thread; it resets the
// thread to all allowed CPUs before starting the child (which inherits
// the binding) and binds it to cpuA afterwards. With cpuA and cpuB -1
// neither process is bound (the scheduler places them, as it places a
// job's PEs), and the caller's thread need not be locked.
func startPair(role, spin string, cpuA, cpuB int) (*pair, error) {
	bind := cpuA >= 0
	if bind {
		allowed, err := allowedCPUs()
		if err != nil {
			return nil, err
		}
		if err := numa.Bind(allowed); err != nil {
			return nil, err
		}
	}
	seg, err := shm.Create("goshmem-limits", segBytes, shm.Options{})
	if err != nil {
		return nil, err
	}
	defer seg.Close()
	m, err := seg.Map(0, 0)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("cannot find this executable to start the second process: %w", err)
	}
	yield := cpuA == cpuB
	p := &pair{m: m, w: wordsOf(m.Bytes()), done: make(chan struct{})}
	p.cmd = exec.Command(exe)
	p.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%t,%s", childEnv, role, cpuB, yield, spin))
	p.cmd.ExtraFiles = []*os.File{seg.File()}
	p.cmd.Stdout = os.Stderr
	p.cmd.Stderr = os.Stderr
	// Own process group, SIGKILL when this thread exits: the thread
	// outlives the child because finish waits for it.
	p.cmd.SysProcAttr = sys.ChildAttr()
	if err := p.cmd.Start(); err != nil {
		m.Close()
		return nil, fmt.Errorf("starting the second process: %w", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.exited.Store(true)
		close(p.done)
	}()
	p.sp = newSpinner(yield, spin, p.alive)
	if bind {
		if err := numa.Bind([]int{cpuA}); err != nil {
			p.kill()
			return nil, err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for p.w.ctl.Load() == 0 {
		if err := p.alive(); err != nil {
			p.kill()
			return nil, err
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, errors.New("the second process did not get ready in 30 s")
		}
		sys.SchedYield()
	}
	return p, nil
}

// alive returns an error once the child has exited.
func (p *pair) alive() error {
	if !p.exited.Load() {
		return nil
	}
	return fmt.Errorf("the second process exited early: %v", p.err)
}

// finish stores stop in *w, waits for the child to exit and unmaps the
// segment.
func (p *pair) finish(w *atomic.Uint64) error {
	w.Store(stop)
	var err error
	select {
	case <-p.done:
		if p.err != nil {
			err = fmt.Errorf("the second process failed: %w", p.err)
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		err = errors.New("the second process did not stop in 30 s")
	}
	p.m.Close()
	return err
}

func (p *pair) kill() {
	p.cmd.Process.Kill()
	<-p.done
	p.m.Close()
}

// childMain is the second process: spec is "<role>,<cpu>,<yield>,<spin>".
func childMain(spec string) int {
	if err := child(spec); err != nil {
		fmt.Fprintf(os.Stderr, "limits (second process): %v\n", err)
		return 1
	}
	return 0
}

func child(spec string) error {
	f := strings.Split(spec, ",")
	if len(f) != 4 || f[3] != spinPause && f[3] != spinTight {
		return fmt.Errorf("bad %s=%q", childEnv, spec)
	}
	role := f[0]
	cpu, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("bad %s=%q: %v", childEnv, spec, err)
	}
	yield := f[2] == "true"
	seg, err := shm.FromFD(childFD, "goshmem-limits")
	if err != nil {
		return err
	}
	m, err := seg.Map(0, 0)
	seg.Close()
	if err != nil {
		return err
	}
	defer m.Close()
	runtime.LockOSThread()
	if cpu >= 0 {
		if err := numa.Bind([]int{cpu}); err != nil {
			return err
		}
	}
	ppid := os.Getppid()
	sp := newSpinner(yield, f[3], func() error {
		if os.Getppid() != ppid {
			return errors.New("the measuring process died")
		}
		return nil
	})
	w := wordsOf(m.Bytes())
	w.ctl.Store(1)
	switch role {
	case roleSame:
		return childSame(w, sp)
	case roleSeparate:
		return childSeparate(w, sp)
	case roleHammer:
		return childHammer(w, sp)
	case roleRelay:
		return childRelay(w, sp.alive)
	}
	return fmt.Errorf("unknown role %q", role)
}
