// Package testcluster brings up the test hosts and cluster launchers of
// scripts/cluster for Go tests: network namespaces as hosts, MPICH's
// hydra across them, a real Slurm cluster. Tests skip, saying why, where
// the machine cannot run them (not root, a tool not installed:
// scripts/cluster/deps.sh installs them).
package testcluster

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Script returns the path of scripts/cluster/name, found from the
// working directory up to the module root.
func Script(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "scripts", "cluster", name)
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("testcluster: no go.mod above the working directory")
		}
		dir = up
	}
}

// Need skips t unless this process is root and every command is
// installed.
func Need(t testing.TB, commands ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("test hosts need root (network namespaces)")
	}
	for _, c := range append([]string{"ip", "nsenter", "unshare"}, commands...) {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed (scripts/cluster/deps.sh installs the cluster tools)", c)
		}
	}
}

// Run runs a script of scripts/cluster with args and returns its
// combined output; it fails t if the script is still running after
// timeout.
func Run(t testing.TB, timeout time.Duration, env []string, script string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Script(t, script), args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not end within %v:\n%s", script, args, timeout, out.String())
	}
	return out.String(), err
}

// exclusive makes t the only user of this machine's test hosts and
// Slurm cluster until it ends: go test ./... runs the test binaries of
// several packages at once, and one package's clean-up would otherwise
// take down the hosts and daemons another one's test is running on. An
// exclusive lock (flock) on a file every test binary opens, held until
// after the test's own clean-ups. A test calls Hosts or Slurm once.
func exclusive(t testing.TB) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "goshmem-testcluster.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("testcluster: locking %s: %v", path, err)
	}
	t.Cleanup(func() { f.Close() }) // registered first: runs after the clean-ups below
}

// Hosts brings up n test hosts (h1..hn and head) for the test; they
// are removed when it ends.
func Hosts(t testing.TB, n int) {
	t.Helper()
	Need(t)
	exclusive(t)
	if out, err := Run(t, time.Minute, nil, "hosts.sh", "up", strconv.Itoa(n)); err != nil {
		t.Fatalf("hosts.sh up %d: %v\n%s", n, err, out)
	}
	t.Cleanup(func() { Run(t, time.Minute, nil, "hosts.sh", "down") })
}

// Slurm brings up a Slurm cluster of n test hosts for the test; it is
// stopped, and the hosts removed, when the test ends.
func Slurm(t testing.TB, n int) {
	t.Helper()
	Need(t, "slurmctld", "slurmd", "srun", "munged")
	exclusive(t)
	if out, err := Run(t, 2*time.Minute, nil, "slurm.sh", "up", strconv.Itoa(n)); err != nil {
		t.Fatalf("slurm.sh up %d: %v\n%s", n, err, out)
	}
	t.Cleanup(func() {
		Run(t, time.Minute, nil, "slurm.sh", "down")
		Run(t, time.Minute, nil, "hosts.sh", "down")
	})
}
