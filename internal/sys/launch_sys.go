package sys

// Process control for the launcher (internal/launch): how PE processes
// are started, waited for and signalled.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/mem"
)

// Signal numbers the launcher sends or reports.
const (
	SIGHUP  = int(unix.SIGHUP)
	SIGINT  = int(unix.SIGINT)
	SIGKILL = int(unix.SIGKILL)
	SIGPIPE = int(unix.SIGPIPE)
	SIGTERM = int(unix.SIGTERM)
)

// IsBrokenPipe reports whether err is a write to a pipe (or socket)
// whose reader is gone (EPIPE).
func IsBrokenPipe(err error) bool { return errors.Is(err, unix.EPIPE) }

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

// si_code values of SIGCHLD's siginfo (waitid).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// WaitStatus blocks until child pid has terminated, without reaping it
// (as WaitExited), and returns how it ended, as ExitStatus does: sig is
// the signal that killed it, or 0 when it exited with code. The zombie
// keeps pid, and the process group pid leads, from being reused until
// the caller reaps it.
func WaitStatus(pid int) (code, sig int, err error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		// The SIGCHLD part of siginfo_t: si_pid, si_uid, si_status
		// after the three header ints and their padding.
		status := int(int32(binary.NativeEndian.Uint32(mem.ValueBytes(&info)[24:])))
		switch info.Code {
		case cldExited:
			return status, 0, nil
		case cldKilled, cldDumped:
			return -1, status, nil
		}
		return 0, 0, fmt.Errorf("waitid on pid %d: unexpected si_code %d", pid, info.Code)
	}
}

// Reap reaps child pid if it has terminated (wait4 with WNOHANG) and
// reports whether it did.
func Reap(pid int) bool {
	var ws unix.WaitStatus
	for {
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && got == pid
	}
}

// SetChildSubreaper makes the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER): a process orphaned anywhere below it is
// reparented to it instead of to init, so that it can find, stop and
// reap what its children leave behind (a double fork or setsid does not
// escape it). The setting holds for the whole process; on false turns
// it off.
func SetChildSubreaper(on bool) error {
	v := uintptr(0)
	if on {
		v = 1
	}
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, v, 0, 0, 0)
}

// IsChildSubreaper reports whether the calling process is a child
// subreaper.
func IsChildSubreaper() bool {
	var v int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(mem.PtrAddr(&v)), 0, 0, 0)
	return err == nil && v != 0
}

// ProcInfo is what /proc/PID/stat says of a process.
type ProcInfo struct {
	Pid, PPid, Pgrp, Session int
	State                    byte // R, S, D, Z, T, ...
}

// Processes lists every process in /proc (a process that exits while
// it is listed may be missing).
func Processes() ([]ProcInfo, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	var list []ProcInfo
	buf := make([]byte, 512)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if pi, ok := procStat(pid, buf); ok {
			list = append(list, pi)
		}
	}
	return list, nil
}

// Running reports whether process pid exists and is not a zombie (an
// exited process not yet reaped).
func Running(pid int) bool {
	pi, ok := procStat(pid, make([]byte, 512))
	return ok && pi.State != 'Z'
}

// procStat reads /proc/pid/stat: "pid (comm) state ppid pgrp session ...".
func procStat(pid int, buf []byte) (ProcInfo, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcInfo{}, false
	}
	n, _ := f.Read(buf)
	f.Close()
	s := string(buf[:n])
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ProcInfo{}, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 4 || len(fields[0]) != 1 {
		return ProcInfo{}, false
	}
	pi := ProcInfo{Pid: pid, State: fields[0][0]}
	var e1, e2, e3 error
	pi.PPid, e1 = strconv.Atoi(fields[1])
	pi.Pgrp, e2 = strconv.Atoi(fields[2])
	pi.Session, e3 = strconv.Atoi(fields[3])
	return pi, e1 == nil && e2 == nil && e3 == nil
}

// EnvironHas reports whether the environment process pid was started
// with (/proc/PID/environ) holds the entry kv ("NAME=value").
func EnvironHas(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for len(b) > 0 {
		entry, rest, _ := bytes.Cut(b, []byte{0})
		if string(entry) == kv {
			return true
		}
		b = rest
	}
	return false
}

// Kill sends signal sig to process pid.
func Kill(pid, sig int) error {
	if pid <= 0 {
		return unix.EINVAL
	}
	return unix.Kill(pid, unix.Signal(sig))
}

// Scheduling policies (sched(7)) that SchedPolicy reports.
const (
	SchedOther = unix.SCHED_NORMAL
	SchedBatch = unix.SCHED_BATCH
)

// BatchThreads moves every thread of the calling process that runs
// under SCHED_OTHER to SCHED_BATCH, keeping its nice value; threads the
// process creates later inherit the policy from their creator. A
// SCHED_BATCH thread that wakes does not preempt the thread running on
// its CPU (sched(7): "mildly disfavored in scheduling decisions"); it
// runs at that CPU's next scheduler tick, or as soon as the CPU idles.
// Threads under another policy (set by chrt, say) are left alone. The
// process's children are not touched, but a child forked afterwards
// inherits its forking thread's policy. A thread that exits meanwhile
// is skipped; the list is read again until a pass finds no thread left
// to move, so that a thread created during a pass is not missed.
func BatchThreads() error {
	for pass := 0; pass < 10; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("sched_setattr: listing the threads: %w", err)
		}
		moved := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			a, err := unix.SchedGetAttr(tid, 0)
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			if err != nil {
				return fmt.Errorf("sched_getattr(%d): %w", tid, err)
			}
			if a.Policy != unix.SCHED_NORMAL {
				continue
			}
			a.Size, a.Policy = unix.SizeofSchedAttr, unix.SCHED_BATCH
			if err := unix.SchedSetAttr(tid, a, 0); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("sched_setattr(%d, SCHED_BATCH): %w", tid, err)
			}
			moved++
		}
		if moved == 0 {
			return nil
		}
	}
	return nil
}

// SchedPolicy returns the scheduling policy of thread (or process) tid
// (0: the calling thread), e.g. SchedOther or SchedBatch.
func SchedPolicy(tid int) (int, error) {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, fmt.Errorf("sched_getattr(%d): %w", tid, err)
	}
	return int(a.Policy), nil
}
