package sys_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// TestWaitStatus checks that WaitStatus reports how a child ended
// without reaping it: its process stays in /proc as a zombie until Reap.
func TestWaitStatus(t *testing.T) {
	for _, c := range []struct {
		script    string
		code, sig int
	}{
		{"exit 0", 0, 0},
		{"exit 7", 7, 0},
		{"kill -KILL $$", -1, sys.SIGKILL},
		{"kill -TERM $$", -1, sys.SIGTERM},
	} {
		cmd := exec.Command("sh", "-c", c.script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		code, sig, err := sys.WaitStatus(pid)
		if err != nil || code != c.code || sig != c.sig {
			t.Errorf("%s: WaitStatus = %d, %d, %v; want %d, %d", c.script, code, sig, err, c.code, c.sig)
		}
		list, err := sys.Processes()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list, func(pi sys.ProcInfo) bool { return pi.Pid == pid })
		if i < 0 || list[i].State != 'Z' || list[i].PPid != os.Getpid() || list[i].Pgrp != syscall.Getpgrp() {
			t.Errorf("%s: after WaitStatus, /proc says %+v; want a zombie child of this process", c.script, list[max(i, 0)])
		}
		if !sys.Reap(pid) {
			t.Errorf("%s: Reap found nothing to reap", c.script)
		}
		if sys.Reap(pid) {
			t.Errorf("%s: Reap reaped twice", c.script)
		}
	}
}

func TestEnvironHas(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"GOSHMEM_JOB_ID=abc", "OTHER=1"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	// Until the child has exec'd sleep and the kernel has set up its new
	// stack, /proc/PID/environ still shows this process's environment
	// (fork copies it): poll, with a deadline.
	for deadline := time.Now().Add(10 * time.Second); !sys.EnvironHas(cmd.Process.Pid, "GOSHMEM_JOB_ID=abc"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid))
			t.Fatalf("EnvironHas misses GOSHMEM_JOB_ID=abc after 10 s; environ %q", strings.ReplaceAll(string(env), "\x00", " "))
		}
	}
	if sys.EnvironHas(cmd.Process.Pid, "GOSHMEM_JOB_ID=ab") || sys.EnvironHas(cmd.Process.Pid, "OTHER=") {
		t.Error("EnvironHas matches a prefix")
	}
}

func TestChildSubreaper(t *testing.T) {
	if sys.IsChildSubreaper() {
		t.Fatal("a test binary is a subreaper from the start")
	}
	if err := sys.SetChildSubreaper(true); err != nil {
		t.Fatal(err)
	}
	if !sys.IsChildSubreaper() {
		t.Error("IsChildSubreaper false after SetChildSubreaper(true)")
	}
	sys.SetChildSubreaper(false)
	if sys.IsChildSubreaper() {
		t.Error("IsChildSubreaper true after SetChildSubreaper(false)")
	}
}
