package node

import (
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/wait"
)

// TestAutoPolicy: the waiting mode follows where the PEs are, and the
// job is oversubscribed when its PEs outnumber the job's CPUs or a
// process hosts more PEs than it runs goroutines at once.
func TestAutoPolicy(t *testing.T) {
	cases := []struct {
		name                                      string
		npes, localPEs, jobCPUs, numCPU, maxprocs int
		mode                                      wait.Mode
		oversub                                   bool
		helpers                                   int // leaders' transports on this machine
		shared                                    bool
	}{
		{"2 processes on 2 CPUs", 2, 1, 2, 2, 2, wait.Processes, false, 0, false},
		{"4 processes on 2 CPUs", 4, 1, 2, 2, 2, wait.Processes, true, 0, false},
		{"8 processes on 2 CPUs", 8, 1, 2, 2, 2, wait.Processes, true, 0, false},
		{"8 processes, job CPUs unknown, 16 here", 8, 1, 0, 16, 16, wait.Processes, false, 0, false},
		{"8 goroutine PEs, GOMAXPROCS 2", 8, 8, 2, 2, 2, wait.Goroutines, true, 0, false},
		{"4 goroutine PEs on 8 CPUs, GOMAXPROCS 8", 4, 4, 8, 8, 8, wait.Goroutines, false, 0, false},
		{"4 goroutine PEs on 8 CPUs, GOMAXPROCS 2", 4, 4, 8, 8, 2, wait.Goroutines, true, 0, false},
		{"1 PE", 1, 1, 1, 1, 1, wait.Processes, false, 0, false},
		{"16 PEs, 4 per process, 64 CPUs", 16, 4, 64, 64, 64, wait.Mixed, false, 0, false},
		{"16 PEs, 4 per process, GOMAXPROCS 2", 16, 4, 64, 64, 2, wait.Mixed, true, 0, false},
		{"16 PEs, 4 per process, 8 CPUs", 16, 4, 8, 64, 64, wait.Mixed, true, 0, false},
		// Across hosts: the leaders' transports wake on frames.
		{"2 PEs and a leader on 2 CPUs", 2, 1, 2, 2, 2, wait.Processes, true, 1, true},
		{"1 PE and a leader on 2 CPUs", 1, 1, 2, 2, 2, wait.Processes, false, 1, false},
		{"64 PEs and a leader on 64 CPUs", 64, 1, 64, 64, 64, wait.Processes, true, 1, true},
		{"3 PEs and 2 leaders on 2 CPUs", 3, 1, 2, 2, 2, wait.Processes, true, 2, false},
		{"2 goroutine PEs and a leader, GOMAXPROCS 2", 2, 2, 2, 2, 2, wait.Goroutines, true, 1, true},
	}
	for _, c := range cases {
		p := autoPolicy(c.npes, c.helpers, c.localPEs, c.jobCPUs, c.numCPU, c.maxprocs)
		fit := wait.Auto(1, 1, c.mode)
		if p.Mode != c.mode {
			t.Errorf("%s: mode %v, want %v", c.name, p.Mode, c.mode)
		}
		if got := p.Spin < fit.Spin; got != c.oversub {
			t.Errorf("%s: policy %+v, oversubscribed %v, want %v", c.name, p, got, c.oversub)
		}
		// Shared: spins some polls (more than oversubscribed, fewer
		// than fitting), then yields as long as oversubscribed.
		over := wait.Auto(2, 1, c.mode)
		if got := p.Spin > over.Spin && p.Spin < fit.Spin && p.Yield == over.Yield; got != c.shared {
			t.Errorf("%s: policy %+v, shared %v, want %v", c.name, p, got, c.shared)
		}
	}
}

func TestWatcherP(t *testing.T) {
	for _, c := range []struct {
		localPEs, gomaxprocs int
		env                  string
		want                 bool
	}{
		{1, 1, "", true},   // a process bound to one CPU
		{1, 2, "", false},  // already a P to spare
		{1, 1, "1", false}, // the user's choice
		{4, 1, "", false},  // goroutine PEs: their waits yield the P
		{2, 2, "", false},
	} {
		if got := watcherP(c.localPEs, c.gomaxprocs, c.env); got != c.want {
			t.Errorf("watcherP(%d, %d, %q) = %v, want %v", c.localPEs, c.gomaxprocs, c.env, got, c.want)
		}
	}
}

// TestHotPolicy: where transport helpers share the CPUs (wait.Shared),
// a wait that reads the transport itself while its process talks to
// other hosts spins as PEs that fit their CPUs do; where the policy
// spins fully already, or the PEs are oversubscribed anyway, nothing
// changes.
func TestHotPolicy(t *testing.T) {
	for _, c := range []struct {
		name                                               string
		npes, helpers, localPEs, jobCPUs, numCPU, maxprocs int
		hot                                                bool
	}{
		{"2 one-PE hosts on 2 CPUs", 2, 2, 1, 2, 2, 2, true},
		{"64 PEs and a leader on 64 CPUs", 64, 1, 1, 64, 64, 64, true},
		{"1 PE and a leader on 2 CPUs", 1, 1, 1, 2, 2, 2, false},
		{"3 PEs and 2 leaders on 2 CPUs", 3, 2, 1, 2, 2, 2, false},
		{"one host", 2, 0, 1, 2, 2, 2, false},
	} {
		pol := autoPolicy(c.npes, c.helpers, c.localPEs, c.jobCPUs, c.numCPU, c.maxprocs)
		hotPol, hot := hotPolicy(c.npes, c.helpers, c.localPEs, c.jobCPUs, c.numCPU, c.maxprocs)
		if hot != c.hot {
			t.Errorf("%s: hot %v (policy %+v, without helpers %+v), want %v", c.name, hot, pol, hotPol, c.hot)
		}
		if hot && (hotPol.Spin != wait.Auto(1, 1, pol.Mode).Spin || hotPol.Mode != pol.Mode) {
			t.Errorf("%s: hot policy %+v, want the fitting policy's spins (%d) in mode %v", c.name, hotPol, wait.Auto(1, 1, pol.Mode).Spin, pol.Mode)
		}
	}
}

// TestWaitTornAbortRecord: a failure record that its writer claimed
// and never published (the writer's process died between the two) does
// not hold a waiting PE forever: the wait ends with a JobError that
// says so, within about job.TornAfter.
func TestWaitTornAbortRecord(t *testing.T) {
	var got any
	start := time.Now()
	err := RunLocal(Config{HeapSize: 1 << 20}, 1, func(p *PE) {
		defer func() { got = recover() }()
		p.job.ctl.Header.Abort.State.Store(1) // claimed, never published
		p.WaitSlow("WaitUntil", func() bool { return false })
	})
	if took := time.Since(start); took > 2*time.Second+job.TornAfter {
		t.Errorf("the wait ended after %v", took)
	}
	je, ok := got.(*JobError)
	if !ok {
		t.Fatalf("the wait ended with %v (job error %v); want a *JobError", got, err)
	}
	if je.Kind != job.AbortTorn || !strings.Contains(je.Error(), "died while recording") || !strings.Contains(je.Error(), "WaitUntil") {
		t.Errorf("JobError %q (kind %d); want the torn record named, in WaitUntil", je.Error(), je.Kind)
	}
}
