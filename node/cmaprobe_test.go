package node_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// TestStartCMAProbe: a PE that reaches a host-mate with
// process_vm_readv/writev and is not allowed to (the probe's read fails
// with EPERM, as under kernel.yama.ptrace_scope 1 between sibling
// processes) fails at start-up, before the program's function runs,
// with an error that names the peer and says what to do; a job whose
// heaps are mapped does not probe, and a permitted probe (every job
// with SHMEM_TRANSPORT=cma in the other tests) passes.
func TestStartCMAProbe(t *testing.T) {
	for _, c := range []struct {
		transport   string
		fault, fail bool // the probe's read made to fail; the job must fail
	}{
		{"cma", true, true},
		{"auto", true, false}, // heaps mapped: no probe, so the fault is never seen
		{"cma", false, false},
	} {
		cfg := node.Config{HeapSize: 1 << 20, Transport: c.transport}
		if c.fault {
			cfg = node.WithCMAFault(cfg, syscall.EPERM)
		}
		ran := make(chan int, 2)
		err := node.RunLocal(cfg, 2, func(p *node.PE) { ran <- p.MyPE() })
		switch {
		case c.fail:
			if err == nil || !errors.Is(err, syscall.EPERM) {
				t.Fatalf("transport %s with a failing probe: err %v, want one wrapping EPERM", c.transport, err)
			}
			for _, want := range []string{"process_vm_readv", "ptrace_scope", "SHMEM_TRANSPORT=auto"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("transport %s: error %q does not say %q", c.transport, err, want)
				}
			}
			if len(ran) != 0 {
				t.Errorf("transport %s: the program ran on %d PEs after the probe failed", c.transport, len(ran))
			}
		case err != nil:
			t.Errorf("transport %s (probe fault set: %v): %v", c.transport, c.fault, err)
		case len(ran) != 2:
			t.Errorf("transport %s: the program ran on %d PEs, want 2", c.transport, len(ran))
		}
	}
}

func init() { processScenarios["init-cmafault"] = initCMAFault }

// initCMAFault is a PE process that starts with node.Init (one PE per
// process, as shmem_init), SHMEM_TRANSPORT=cma, and a probe made to fail
// with EPERM on the PE named by GOSHMEM_TEST_FAULT_PE (-1: none): Init
// must return the probe's error there, and the program must not get
// past its first barrier anywhere.
func initCMAFault() {
	cfg, err := goshmem.LoadConfig()
	if err != nil {
		panic(err)
	}
	if os.Getenv("GOSHMEM_PE") == os.Getenv("GOSHMEM_TEST_FAULT_PE") {
		cfg = node.WithCMAFault(cfg, syscall.EPERM)
	}
	p, err := node.Init(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Init of PE %s: %v (EPERM: %v)\n", os.Getenv("GOSHMEM_PE"), err, errors.Is(err, syscall.EPERM))
		os.Exit(3)
	}
	p.BarrierAll()
	fmt.Printf("PE %d past its first barrier\n", p.MyPE())
	p.Finalize()
}

// TestInitCMAProbe: with node.Init (a process per PE), a PE whose
// start-up probe of process_vm_readv fails gets the error from Init,
// and the job stops: no PE gets past its first barrier, and the job
// ends soon with a failure, not at the launcher's time limit, also
// when the launcher does not supervise the PEs (they must notice on
// their own). Without the fault the same job runs.
func TestInitCMAProbe(t *testing.T) {
	for _, c := range []struct {
		faultPE     int // -1: none
		noSupervise bool
	}{{1, false}, {0, false}, {1, true}, {-1, false}} {
		t.Run(fmt.Sprintf("fault-on-PE-%d/unsupervised=%v", c.faultPE, c.noSupervise), func(t *testing.T) {
			r := runJob(t, "init-cmafault", 3, 1, c.noSupervise, "SHMEM_TRANSPORT=cma", fmt.Sprintf("GOSHMEM_TEST_FAULT_PE=%d", c.faultPE))
			if c.faultPE < 0 {
				if r.code != 0 || strings.Count(r.stdout, "past its first barrier") != 3 {
					t.Fatalf("without a fault: code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
				}
				return
			}
			if r.code == 0 {
				t.Fatalf("job succeeded with a failing probe on PE %d\nstdout:\n%s\nstderr:\n%s", c.faultPE, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout, "past its first barrier") {
				t.Errorf("a PE got past its first barrier:\n%s", r.stdout)
			}
			want := fmt.Sprintf("Init of PE %d: ", c.faultPE)
			i := strings.Index(r.stderr, want)
			if i < 0 {
				t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
			}
			line, _, _ := strings.Cut(r.stderr[i:], "\n")
			for _, s := range []string{"process_vm_readv", "ptrace_scope", "(EPERM: true)"} {
				if !strings.Contains(line, s) {
					t.Errorf("Init's error does not say %q: %s", s, line)
				}
			}
			// A PE whose own start saw the failure names it, not a
			// read of the failed PE's gone process; so does the launcher,
			// which exits with the failed PE's own code.
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.HasPrefix(l, "Init of PE ") && !strings.HasPrefix(l, want) &&
					!strings.Contains(l, fmt.Sprintf("PE %d (pid", c.faultPE)) {
					t.Errorf("another PE's Init error does not name PE %d: %s", c.faultPE, l)
				}
			}
			if !strings.Contains(r.stderr, fmt.Sprintf("PE %d (pid", c.faultPE)) || !strings.Contains(r.stderr, "failed to start") || r.code != 3 {
				t.Errorf("the launcher's report does not say PE %d failed to start, or exit code %d is not its 3:\n%s", c.faultPE, r.code, r.stderr)
			}
			if r.elapsed > 20*time.Second {
				t.Errorf("the job took %v to stop", r.elapsed)
			}
		})
	}
}
