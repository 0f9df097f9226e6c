package node_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

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
