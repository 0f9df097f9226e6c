package sys

// Process control for the launcher (internal/launch): how PE processes
// are started, waited for and signalled.

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Signal numbers the launcher sends or reports.
const (
	SIGHUP  = int(unix.SIGHUP)
	SIGINT  = int(unix.SIGINT)
	SIGKILL = int(unix.SIGKILL)
	SIGTERM = int(unix.SIGTERM)
)

// ChildAttr returns the attributes of a PE process: its own process
// group (so that a terminal's ^C reaches only the launcher, which then
// stops the job in order, and so that the launcher can signal whatever
// the PE process started) and SIGKILL when the launcher dies. The
// parent-death signal fires when the OS thread that forked the child
// exits: the caller must fork from a thread that outlives the child (in
// Go: never from a goroutine that exits while locked to its thread).
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// WaitExited blocks until child pid has terminated, without reaping it
// (waitid with WNOWAIT): until the caller reaps it (os.Process.Wait),
// pid and its process group id cannot be reused, so signalling them
// stays safe.
func WaitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err
	}
}

// ExitStatus decodes how a process ended: sig is the signal that killed
// it, or 0 when it exited with code.
func ExitStatus(ps *os.ProcessState) (code, sig int) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, int(ws.Signal())
	}
	return ps.ExitCode(), 0
}

// KillGroup sends signal sig to process group pgid.
func KillGroup(pgid, sig int) error {
	if pgid <= 0 {
		return unix.EINVAL
	}
	return unix.Kill(-pgid, unix.Signal(sig))
}

// SignalNumber returns the number of s, or 0 if s is not a Unix signal.
func SignalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 0
}

// Signal returns signal number n as an os.Signal.
func Signal(n int) os.Signal { return syscall.Signal(n) }
