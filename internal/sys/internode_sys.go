package sys

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IOVMax is the most buffers one writev takes (Linux's IOV_MAX).
const IOVMax = 1024

// Writev makes non-blocking writev calls on a socket for internode/tcp:
// a sender writes from its own goroutine only what the kernel takes at
// once, and hands the rest to its writer goroutine, so that it never
// waits on the network. A Writev is reused call after call (no
// allocation per call) by one goroutine at a time.
type Writev struct {
	iov []unix.Iovec
	n   int
	err error
	fn  func(uintptr) bool
}

// NewWritev returns a Writev.
func NewWritev() *Writev {
	w := &Writev{iov: make([]unix.Iovec, 0, 64)}
	w.fn = w.do
	return w
}

// Try writes bufs (the first IOVMax of them) with one writev on rc's
// descriptor and returns the bytes written: 0, nil when the socket's
// buffer is full. It never waits for the socket.
func (w *Writev) Try(rc syscall.RawConn, bufs [][]byte) (int, error) {
	w.iov = w.iov[:0]
	for _, b := range bufs {
		if len(w.iov) == IOVMax {
			break
		}
		if len(b) == 0 {
			continue
		}
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		w.iov = append(w.iov, v)
	}
	if len(w.iov) == 0 {
		return 0, nil
	}
	w.n, w.err = 0, nil
	err := rc.Write(w.fn)
	clear(w.iov) // keep no references to the caller's buffers
	if err != nil {
		return 0, err
	}
	return w.n, w.err
}

// do is one writev; it returns true (done) whatever happened, so that
// RawConn.Write does not wait for the socket to become writable.
func (w *Writev) do(fd uintptr) bool {
	for {
		n, _, e := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(len(w.iov)))
		switch e {
		case 0:
			w.n = int(n)
		case unix.EINTR:
			continue
		case unix.EAGAIN:
		default:
			w.err = e
		}
		return true
	}
}

// SetTCPUserTimeout bounds how long data sent on rc's TCP socket may
// stay unacknowledged before the kernel drops the connection
// (TCP_USER_TIMEOUT): a peer host that dies with data in flight is
// noticed after d, not after the default retransmissions (~15 min).
func SetTCPUserTimeout(rc syscall.RawConn, d time.Duration) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d/time.Millisecond))
	})
	if err != nil {
		return err
	}
	return serr
}

// Recv is one non-blocking read from fd (a socket in non-blocking mode,
// as the runtime's network poller keeps them) into b, for a reader that
// polls: n > 0 bytes read; n == 0 with again (nothing there now); n ==
// 0, !again and err == nil at the end of the stream. It makes a raw
// system call: it never blocks, so the scheduler need not know.
func Recv(fd uintptr, b []byte) (n int, again bool, err error) {
	if len(b) == 0 {
		return 0, true, nil
	}
	for {
		r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch e {
		case 0:
			return int(r), false, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, true, nil
		}
		return 0, false, e
	}
}
