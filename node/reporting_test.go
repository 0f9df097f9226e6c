package node_test

// What a job reports when a program goes wrong: a wait that only
// finalized PEs could satisfy, a time limit that expires, a bad SHMEM_*
// value under a cluster launcher.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/launch"
	"github.com/goshmem/goshmem/node"
)

// syncBuffer is a bytes.Buffer safe for the PEs' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLoneWaitWarns: a PE that waits in WaitUntil while every other PE
// has returned (and so entered Finalize, after which no PE puts or
// updates again) hangs unless one of its own goroutines satisfies the
// wait; the wait says so once, naming itself, after the set time. It
// must not fail the job: here the PE's own goroutine stores the value
// later, and the job ends well. A wait satisfied while other PEs still
// run says nothing.
func TestLoneWaitWarns(t *testing.T) {
	for _, lone := range []bool{true, false} {
		var out syncBuffer
		cfg := node.WithLoneWarn(node.Config{HeapSize: 1 << 20}, 150*time.Millisecond, &out)
		err := goshmem.RunLocalConfig(cfg, 3, func(pe *goshmem.PE) {
			x, _ := goshmem.Calloc[int64](pe, 1)
			if pe.MyPE() != 0 {
				if !lone {
					time.Sleep(600 * time.Millisecond)
					goshmem.P(pe.Ctx(), &x[0], 1, 0)
				}
				return
			}
			if lone {
				go func() {
					time.Sleep(600 * time.Millisecond)
					atomic.StoreInt64(&x[0], 1) // (goshmem.P from here would be a second thread on the PE)
				}()
			}
			goshmem.WaitUntil(pe, &x[0], goshmem.CmpEQ, 1)
		})
		if err != nil {
			t.Fatalf("lone %v: the job failed: %v", lone, err)
		}
		got := out.String()
		if want := "goshmem: warning: WaitUntil on PE 0 has waited 150ms while every other PE has entered Finalize"; lone && (!strings.Contains(got, want) || strings.Count(got, "warning") != 1) {
			t.Errorf("lone: the output is %q, want one warning %q", got, want)
		}
		if !lone && got != "" {
			t.Errorf("a wait satisfied by a running PE warned: %q", got)
		}
	}
}

func init() {
	// hang-wait: every PE waits for a value nobody sets (a deadlock of
	// the program), until the launcher's time limit.
	scenarios["hang-wait"] = func(pe *goshmem.PE) {
		x, _ := goshmem.Calloc[int64](pe, 1)
		goshmem.WaitUntil(pe, &x[0], goshmem.CmpEQ, 42)
	}
}

// TestTimeoutSaysWhere: when a hung job reaches the launcher's time
// limit, every PE waiting in the runtime says where ("WaitUntil on PE
// 2 stopped: the job's time limit expired"), the one clue to where the
// job hung, before the launcher signals the processes (before, the
// signal came at once and killed most of them before they could).
func TestTimeoutSaysWhere(t *testing.T) {
	for _, ppp := range []int{1, 2} {
		var out, errb bytes.Buffer
		cfg := launch.Config{NPEs: 4, PEsPerProc: ppp, Program: os.Args[0], Args: []string{"-test.run=^$"},
			Env:    []string{scenarioVar + "=hang-wait", "SHMEM_SYMMETRIC_SIZE=8m"},
			Stdout: &out, Stderr: &errb, Timeout: 2 * time.Second}
		code, err := launch.Run(context.Background(), cfg)
		if code != launch.ExitTimeout {
			t.Fatalf("%d PEs per process: exit %d (%v), want %d\n%s", ppp, code, err, launch.ExitTimeout, errb.String())
		}
		for pe := range 4 {
			if want := fmt.Sprintf("WaitUntil on PE %d stopped: the job's time limit expired", pe); !strings.Contains(errb.String(), want) {
				t.Errorf("%d PEs per process: no %q in:\n%s", ppp, want, errb.String())
			}
		}
	}
}

// TestUnderHydraConfigError: a bad SHMEM_* value in a job that MPICH's
// hydra started is reported once, by rank 0, which ends the job (the
// other ranks, which find the same error, wait a moment for that end
// instead of repeating it); a value bad on one later rank only is
// reported by that rank, which ends the job, instead of leaving rank 0
// waiting for it in the wire-up until the launcher's timeout.
func TestUnderHydraConfigError(t *testing.T) {
	hydra(t)
	const msg = `unknown suffix "x" in SHMEM_SYMMETRIC_SIZE="12x"`
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"every rank", []string{"-n", "4", "-genv", scenarioVar, "rma", "-genv", "SHMEM_SYMMETRIC_SIZE", "12x", os.Args[0], "-test.run=^$"}},
		{"rank 2 only", []string{"-n", "2", "-genv", scenarioVar, "rma", os.Args[0], "-test.run=^$",
			":", "-n", "1", "-env", scenarioVar, "rma", "-env", "SHMEM_SYMMETRIC_SIZE", "12x", os.Args[0], "-test.run=^$"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			cmd := exec.Command(hydra(t), tc.args...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the job succeeded:\n%s", out)
			}
			if n := strings.Count(string(out), msg); n != 1 {
				t.Errorf("the error was printed %d times, want once:\n%s", n, out)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the job took %v to end", d)
			}
		})
	}
}
