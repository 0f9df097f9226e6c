package sys

// Watching other processes for their exit without polling: a pidfd
// becomes readable when its process exits, and the Go runtime's poller
// (epoll) can wait for that like for a socket, so a goroutine blocked in
// ProcessWatch.Wait holds no OS thread and costs no CPU until then.

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ProcessWatch is a pidfd of another process, registered with the Go
// runtime's poller.
type ProcessWatch struct {
	f *os.File
}

// WatchProcess opens a pidfd for pid (close-on-exec, non-blocking). A
// process that has already exited and been reaped, or never existed,
// gives an error that wraps ErrSrch.
func WatchProcess(pid int) (*ProcessWatch, error) {
	fd, err := PidfdOpen(pid)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &ProcessWatch{f: os.NewFile(uintptr(fd), "pidfd")}, nil
}

// ErrWatchClosed is what Wait returns when the watch was closed.
var ErrWatchClosed = os.ErrClosed

// Wait blocks until the process exits (nil) or until Close is called
// (ErrWatchClosed). It waits in the runtime's poller; where the kernel
// cannot poll a pidfd with epoll it falls back to a blocking poll(2) in
// slices of a second.
func (w *ProcessWatch) Wait() error {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return ErrWatchClosed
	}
	err = rc.Read(func(fd uintptr) bool { return PidfdExited(int(fd)) })
	if err == nil || errors.Is(err, os.ErrClosed) {
		return err
	}
	// Not pollable by epoll: poll(2) with a timeout, so that Close can
	// stop it within a second.
	for {
		exited, closed := false, false
		if err := rc.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, _ := unix.Poll(fds, int(time.Second/time.Millisecond))
			exited = n > 0
		}); err != nil {
			closed = true
		}
		switch {
		case closed:
			return ErrWatchClosed
		case exited:
			return nil
		}
	}
}

// Close closes the pidfd and ends a Wait in progress.
func (w *ProcessWatch) Close() error { return w.f.Close() }

// ProcessExited reports whether process pid has exited (it may still be
// an unreaped zombie) or does not exist: one pidfd_open, poll and close.
// Unlike kill(pid, 0) it sees a zombie as gone.
func ProcessExited(pid int) bool {
	fd, err := PidfdOpen(pid)
	if err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	return PidfdExited(fd)
}
