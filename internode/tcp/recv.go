package tcp

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internode"
)

// rx reads the frames of one incoming connection. Two kinds of reader
// share it: the connection's goroutine, which waits in the network
// poller (RawConn.Read) and reads when the socket becomes readable, and
// any goroutine that calls Transport.Poll (a leader PE that waits for
// another host: it reads the socket itself instead of waiting for the
// goroutine to be woken and scheduled). Whoever reads does so under
// busy, a try-lock, and reads until the socket has nothing more (a
// non-blocking read says EAGAIN), parsing frames and handing them to
// the Sink as they complete; frames are thus delivered one at a time
// and in order, whoever reads them.
//
// A reader that finds busy taken does not wait: it sets pending, and
// the holder, after it releases busy, takes it again if pending is set
// (drainLoop). So bytes whose arrival the poller announced to a reader
// that lost the race are read by the winner: the winner's last read
// happens after its release, and the release after the loser's failed
// attempt (sequentially consistent atomics), so the loser's bytes,
// which arrived before the loser's attempt, are in the socket by then.
//
// The state below busy is the holder's. When a reader other than the
// goroutine sees the connection end, it wakes the goroutine (a read
// deadline in the past), which reports the end: the goroutine is the
// only one that returns it.
type rx struct {
	t       *Transport
	from    int
	sink    internode.Sink
	conn    *net.TCPConn
	raw     syscall.RawConn
	busy    atomic.Uint32
	pending atomic.Uint32
	ended   atomic.Bool
	frames  atomic.Uint64 // frames delivered (Poll reports progress)

	buf    []byte // read buffer: buf[r:w] is read and not yet parsed
	r, w   int
	h      internode.Header
	body   []byte // the payload of h being read (Sink.Buffer's slice)
	got    int    // bytes of body read
	inBody bool
	abort  bool // body is an abort's reason
	bye    bool // the peer said goodbye
	err    error
	kickFn func(uintptr) bool
	pollFn func(uintptr)
}

func newRx(t *Transport, from int, conn *net.TCPConn, raw syscall.RawConn) *rx {
	x := &rx{t: t, from: from, sink: t.cfg.Sink, conn: conn, raw: raw, buf: make([]byte, readBuf)}
	x.kickFn = func(fd uintptr) bool {
		x.drainLoop(fd)
		return x.ended.Load()
	}
	x.pollFn = func(fd uintptr) { x.drainLoop(fd) }
	return x
}

// serve is the connection goroutine's loop: it returns the reason the
// connection ended.
func (x *rx) serve() error {
	for {
		err := x.raw.Read(x.kickFn)
		if x.ended.Load() {
			return x.err
		}
		if err != nil {
			return err
		}
	}
}

// poll reads what has arrived, from any goroutine but the connection's.
func (x *rx) poll() {
	if x.ended.Load() {
		return
	}
	x.raw.Control(x.pollFn) // an error: the connection is closed, and its goroutine says so
}

// drainLoop reads until the socket is empty, or leaves it to the reader
// that holds busy.
func (x *rx) drainLoop(fd uintptr) {
	x.pending.Store(1)
	for x.pending.Load() != 0 && !x.ended.Load() && x.busy.CompareAndSwap(0, 1) {
		x.pending.Store(0)
		x.drain(fd)
		x.busy.Store(0)
	}
}

// drain reads and delivers until a read would block or the connection
// ends. The caller holds busy.
func (x *rx) drain(fd uintptr) {
	for !x.ended.Load() {
		x.parse()
		if x.ended.Load() {
			return
		}
		// Read: a large payload's rest straight into the Sink's slice,
		// anything else into the buffer.
		var dst []byte
		direct := x.inBody && len(x.body)-x.got >= len(x.buf)/2
		if direct {
			dst = x.body[x.got:]
		} else {
			if x.r > 0 {
				x.w = copy(x.buf, x.buf[x.r:x.w])
				x.r = 0
			}
			dst = x.buf[x.w:]
		}
		n, again, err := sys.Recv(fd, dst)
		switch {
		case again:
			if h := x.t.afterAgain; h != nil {
				h() // a test's: between the last read and the release of busy
			}
			return
		case err != nil:
			x.end(err)
			return
		case n == 0:
			switch {
			case x.bye:
				x.end(errors.New("the leader closed its transport (a clean end)"))
			default:
				x.end(errors.New("the connection closed without a goodbye (the leader's process ended?)"))
			}
			return
		}
		if direct {
			x.got += n
		} else {
			x.w += n
		}
	}
}

// parse delivers every frame complete in the buffer, and moves what it
// holds of a payload into the payload's slice.
func (x *rx) parse() {
	for !x.ended.Load() {
		if x.inBody {
			if x.got < len(x.body) && x.w > x.r {
				n := copy(x.body[x.got:], x.buf[x.r:x.w])
				x.got += n
				x.r += n
			}
			if x.got < len(x.body) {
				return
			}
			x.inBody = false
			if x.abort {
				x.t.report(x.from, fmt.Errorf("internode/tcp: leader %d aborted the job: %s", x.from, x.body), true)
				x.end(errors.New("aborted"))
				return
			}
			x.frames.Add(1)
			x.sink.Deliver(x.from, &x.h, x.body)
			x.body = nil
			continue
		}
		if x.w-x.r < internode.HeaderSize {
			return
		}
		x.h.Decode(x.buf[x.r : x.r+internode.HeaderSize])
		x.r += internode.HeaderSize
		if x.h.Len == ctlLen {
			switch x.h.Op {
			case ctlBye:
				x.t.goodbye(x.from)
				x.bye = true
				continue
			case ctlAbort:
				x.body, x.got, x.inBody, x.abort = make([]byte, min(x.h.Arg0, reasonMax)), 0, true, true
				continue
			}
			x.end(fmt.Errorf("unknown control frame %d", x.h.Op))
			return
		}
		if x.h.Len == 0 {
			x.frames.Add(1)
			x.sink.Deliver(x.from, &x.h, nil)
			continue
		}
		x.body = x.sink.Buffer(x.from, &x.h)
		if len(x.body) != int(x.h.Len) {
			x.end(fmt.Errorf("the Sink gave a %d-byte buffer for a %d-byte payload", len(x.body), x.h.Len))
			return
		}
		x.got, x.inBody, x.abort = 0, true, false
	}
}

// end records why the connection ended and makes its goroutine return
// (it may be waiting in the poller, its last wake-up spent by another
// reader): a read deadline in the past ends that wait.
func (x *rx) end(err error) {
	x.err = err
	x.ended.Store(true)
	x.conn.SetReadDeadline(time.Unix(1, 0))
}

// Poll reads what has arrived on every incoming connection and hands
// its frames to the Sink, from the calling goroutine, without waiting
// (internode.Poller). It reports whether it delivered a frame. A
// connection that another reader is reading at that moment is left to
// it.
func (t *Transport) Poll() bool {
	p := t.rxs.Load()
	if p == nil {
		return false
	}
	got := false
	for _, x := range *p {
		n := x.frames.Load()
		x.poll()
		got = got || x.frames.Load() != n
	}
	return got
}

// addRx and dropRx keep the list Poll reads (copied on change: Poll
// takes no lock).
func (t *Transport) addRx(x *rx) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var l []*rx
	if p := t.rxs.Load(); p != nil {
		l = append(l, *p...)
	}
	l = append(l, x)
	t.rxs.Store(&l)
}

func (t *Transport) dropRx(x *rx) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var l []*rx
	for _, y := range *t.rxs.Load() {
		if y != x {
			l = append(l, y)
		}
	}
	t.rxs.Store(&l)
}
