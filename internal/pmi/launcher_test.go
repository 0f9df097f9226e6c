package pmi

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/testcluster"
)

// childVar makes the test binary a PMI client under a real launcher.
const childVar = "GOSHMEM_PMI_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childVar) != "" {
		if err := child(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is one rank under a real launcher: it puts a long binary value
// and its host name, fences, reads every rank's and prints a summary.
func child() error {
	c, ok, err := FromEnv(os.Getenv, 30*time.Second)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("not started by a PMI launcher")
	}
	val := func(r int) []byte { return bytes.Repeat([]byte{byte(r), ';', ' ', '=', 0}, 700) }
	host, _ := os.Hostname()
	if err := c.Put("v", val(c.Rank())); err != nil {
		return err
	}
	if err := c.Put("host", []byte(host)); err != nil {
		return err
	}
	if err := c.Fence(); err != nil {
		return err
	}
	m, mapped, err := c.ProcessMapping()
	if err != nil {
		return err
	}
	for r := range c.Size() {
		got, err := c.Get(r, "v")
		if err != nil {
			return err
		}
		if !bytes.Equal(got, val(r)) {
			return fmt.Errorf("rank %d's value: %d bytes, want %d", r, len(got), len(val(r)))
		}
		// The ranks the mapping puts on this node have this host name.
		h, err := c.Get(r, "host")
		if err != nil || len(h) == 0 || (mapped && m[r] == m[c.Rank()] && string(h) != host) {
			return fmt.Errorf("rank %d's host %q, %v; want %q", r, h, err, host)
		}
	}
	fmt.Printf("rank %d of %d version %d launcher %s job %q mapping %v %v\n", c.Rank(), c.Size(), c.Version(), c.Launcher(), c.JobID(), mapped, m)
	return c.Finalize()
}

// TestHydra runs 3 ranks under MPICH's hydra on this host with each
// protocol: every rank must read every other's values.
func TestHydra(t *testing.T) {
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("MPICH's mpiexec.hydra is not installed (apt-get install mpich)")
	}
	for _, v := range []string{"pmi1", "pmi2", "auto"} {
		t.Run(v, func(t *testing.T) {
			cmd := exec.Command(hydra, "-n", "3", os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childVar+"=1", EnvChoice+"="+v)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			want := map[string]string{"pmi1": "version 1", "pmi2": "version 2", "auto": "version 2"}[v]
			for r := range 3 {
				line := fmt.Sprintf("rank %d of 3 %s launcher hydra", r, want)
				if !strings.Contains(string(out), line) {
					t.Errorf("output has no line %q:\n%s", line, out)
				}
			}
			if !strings.Contains(string(out), "mapping true [0 0 0]") {
				t.Errorf("want every rank on node 0 from PMI_process_mapping:\n%s", out)
			}
		})
	}
}

// TestSlurm runs 3 ranks on 2 test hosts under a real Slurm (srun
// --mpi=pmi2, whose plugin serves PMI-2 and PMI-1, each request taken
// from one read): the long values, split across keys, arrive whole,
// and the process mapping puts ranks 0-1 and 2 on two nodes.
func TestSlurm(t *testing.T) {
	testcluster.Slurm(t, 2)
	for _, v := range []string{"pmi1", "pmi2", "auto"} {
		t.Run(v, func(t *testing.T) {
			out, err := testcluster.Run(t, time.Minute, []string{childVar + "=1", EnvChoice + "=" + v},
				"slurm.sh", "srun", "--mpi=pmi2", "-N", "2", "-n", "3", "-m", "block", "-O", os.Args[0], "-test.run=^$")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			want := map[string]string{"pmi1": "version 1", "pmi2": "version 2", "auto": "version 2"}[v]
			for r := range 3 {
				line := fmt.Sprintf("rank %d of 3 %s launcher slurm", r, want)
				if !strings.Contains(out, line) {
					t.Errorf("output has no line %q:\n%s", line, out)
				}
			}
			if !strings.Contains(out, "mapping true [0 0 1]") {
				t.Errorf("want ranks 0-1 on node 0 and rank 2 on node 1 from PMI_process_mapping:\n%s", out)
			}
		})
	}
}
