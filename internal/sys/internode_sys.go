package sys

import (
	"fmt"
	"os"
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
}

// NewWritev returns a Writev.
func NewWritev() *Writev {
	return &Writev{iov: make([]unix.Iovec, 0, 64)}
}

// Try writes bufs (the first IOVMax of them) with one non-blocking
// writev on the socket fd and returns the bytes written: 0, nil when
// the socket's buffer is full. It never waits for the socket.
func (w *Writev) Try(fd int, bufs [][]byte) (int, error) {
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
	w.do(uintptr(fd))
	clear(w.iov) // keep no references to the caller's buffers
	return w.n, w.err
}

// WaitWritable waits until the socket fd can take more bytes, it fails,
// or d has passed (it then returns nil: the caller checks its own
// deadline and state). It blocks the calling thread in poll(2).
func WaitWritable(fd int, d time.Duration) error {
	ms := int(d / time.Millisecond)
	if ms <= 0 {
		ms = 1
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	if _, err := unix.Poll(pfd, ms); err != nil && err != unix.EINTR {
		return fmt.Errorf("poll: %w", err)
	}
	return nil
}

// do is one writev (a raw system call: a non-blocking socket never
// blocks it).
func (w *Writev) do(fd uintptr) {
	for {
		n, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(len(w.iov)))
		switch e {
		case 0:
			w.n = int(n)
		case unix.EINTR:
			continue
		case unix.EAGAIN:
		default:
			w.err = e
		}
		return
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

// DupConn returns a new descriptor (close-on-exec) for rc's socket. The
// caller owns it; closing rc afterwards takes rc's descriptor out of the
// runtime's network poller, and the socket lives on in the new one
// (internode/tcp reads its incoming connections that way, outside the
// poller: see Epoll).
func DupConn(rc syscall.RawConn) (int, error) {
	nfd, err := -1, error(nil)
	cerr := rc.Control(func(fd uintptr) {
		nfd, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	if cerr != nil {
		return -1, cerr
	}
	if err != nil {
		return -1, fmt.Errorf("dup of a socket: %w", err)
	}
	return nfd, nil
}

// Epoll is an epoll instance that its owner arms and disarms itself,
// unlike the runtime's poller, which watches every descriptor it has
// for good: internode/tcp keeps its incoming sockets in one (level
// triggered, so a poller that asks finds every socket with bytes
// waiting) and that one in a second, one-shot, which its receiving
// goroutine waits on in the runtime's poller (File). Disarming the
// second stops the wake-ups of that goroutine while a PE polls the
// sockets itself.
type Epoll struct {
	fd int
}

// NewEpoll creates an epoll instance (close-on-exec, non-blocking, so
// that File can hand it to the runtime's poller).
func NewEpoll() (*Epoll, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("epoll: setting non-blocking mode: %w", err)
	}
	return &Epoll{fd: fd}, nil
}

// readable is the interest of Add and ArmEpoll: bytes to read, or the end of
// the peer's side or of the connection.
const readable = unix.EPOLLIN | unix.EPOLLRDHUP

// Add watches fd for reading, level-triggered, or with oneShot armed
// once; key comes back from Ready.
func (e *Epoll) Add(fd int, key int32, oneShot bool) error {
	ev := unix.EpollEvent{Events: readable, Fd: key}
	if oneShot {
		ev.Events |= unix.EPOLLONESHOT
	}
	if err := unix.EpollCtl(e.fd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl ADD: %w", err)
	}
	return nil
}

// AddEpoll watches the epoll instance inner, one-shot (see Arm).
func (e *Epoll) AddEpoll(inner *Epoll, key int32) error { return e.Add(inner.fd, key, true) }

// ArmEpoll arms (on) or disarms the one-shot inner instance added with
// key. Arming an instance that has a ready descriptor reports it at
// once.
func (e *Epoll) ArmEpoll(inner *Epoll, key int32, on bool) error {
	ev := unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: key}
	if on {
		ev.Events |= readable
	}
	if err := unix.EpollCtl(e.fd, unix.EPOLL_CTL_MOD, inner.fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl MOD: %w", err)
	}
	return nil
}

// Del stops watching fd.
func (e *Epoll) Del(fd int) error {
	if err := unix.EpollCtl(e.fd, unix.EPOLL_CTL_DEL, fd, nil); err != nil {
		return fmt.Errorf("epoll_ctl DEL: %w", err)
	}
	return nil
}

// EpollEvent is a ready descriptor reported by Ready (its key is in
// Fd).
type EpollEvent = unix.EpollEvent

// Ready fills evs with the descriptors ready now, without waiting, and
// returns how many. It makes a raw system call (it never blocks) and
// may be called from several goroutines at once, each with its own evs.
func (e *Epoll) Ready(evs []EpollEvent) int {
	if len(evs) == 0 {
		return 0
	}
	for {
		r, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(e.fd), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0 // EBADF after Close; the owner knows
		}
		return int(r)
	}
}

// File hands the instance to the runtime's poller: the file is
// readable when a descriptor in the instance is ready. The file owns
// the descriptor from then on (close the file, not the Epoll).
func (e *Epoll) File(name string) *os.File { return os.NewFile(uintptr(e.fd), name) }

// Close closes an instance that was not handed over with File.
func (e *Epoll) Close() error { return unix.Close(e.fd) }

// ShutdownSocket ends both directions of the socket fd (the peer reads
// the end; a reader of fd reads it too).
func ShutdownSocket(fd int) error { return unix.Shutdown(fd, unix.SHUT_RDWR) }
