package sys_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// TestBatchThreads runs batchThreadsChild in a process of its own (it
// changes the policy of every thread of its process) and checks its
// report.
func TestBatchThreads(t *testing.T) {
	if os.Getenv("GOSHMEM_TEST_BATCH") == "1" {
		batchThreadsChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBatchThreads$", "-test.v")
	cmd.Env = append(os.Environ(), "GOSHMEM_TEST_BATCH=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestBatchThreads") {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
}

// batchThreadsChild: a child started before BatchThreads and a thread
// under SCHED_IDLE keep their policies; every other thread of the
// process, and one made afterwards, is SCHED_BATCH.
func batchThreadsChild(t *testing.T) {
	if p, err := sys.SchedPolicy(0); err != nil || p != sys.SchedOther {
		t.Fatalf("the test thread's policy is %d, %v; the test needs SCHED_OTHER (%d)", p, err, sys.SchedOther)
	}
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()

	// A thread under SCHED_IDLE (5), which BatchThreads must not touch.
	idle, release := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread() // the thread exits with the goroutine
		tid := sys.Gettid()
		if err := unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0); err != nil {
			t.Errorf("SCHED_IDLE: %v", err)
		}
		idle <- tid
		<-release
	}()
	idleTid := <-idle
	defer close(release)

	if err := sys.BatchThreads(); err != nil {
		t.Fatal(err)
	}
	// Threads made now: locked goroutines that stay blocked, so that
	// each needs a thread of its own.
	const extra = 4
	made, hold := make(chan int), make(chan struct{})
	for range extra {
		go func() {
			runtime.LockOSThread()
			made <- sys.Gettid()
			<-hold
		}()
	}
	for range extra {
		<-made
	}
	defer close(hold)

	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	batch := 0
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		p, err := sys.SchedPolicy(tid)
		switch {
		case err != nil:
			t.Errorf("thread %d: %v", tid, err)
		case tid == idleTid && p != unix.SCHED_IDLE:
			t.Errorf("the SCHED_IDLE thread %d has policy %d after BatchThreads", tid, p)
		case tid != idleTid && p != sys.SchedBatch:
			t.Errorf("thread %d has policy %d after BatchThreads, want SCHED_BATCH (%d)", tid, p, sys.SchedBatch)
		case tid != idleTid:
			batch++
		}
	}
	if batch < extra+1 {
		t.Errorf("%d threads are SCHED_BATCH; want at least the %d made afterwards and this one", batch, extra)
	}
	if p, err := sys.SchedPolicy(child.Process.Pid); err != nil || p != sys.SchedOther {
		t.Errorf("the child started before BatchThreads has policy %d, %v; want SCHED_OTHER", p, err)
	}
}
