package tcp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internode"
)

// pollGrace is how long the receiving goroutine keeps out of the way
// after the polls last got a frame: while they keep getting them,
// frames wake no goroutine (the PE reads them); once the polls stop,
// the goroutine takes over again within two pollGraces (the runtime's
// timers round each to about a millisecond), and a frame that came in
// the meantime is read then.
const pollGrace = 250 * time.Microsecond

// rxSet is the receiving side of a Transport. The sockets of the
// incoming connections are not in the runtime's network poller: each
// is in ready, a level-triggered epoll instance, which is itself in
// wake, a one-shot instance that the receiving goroutine (run) waits
// on in the runtime's poller. Two kinds of reader share the sockets:
//
//   - the receiving goroutine, woken when wake is armed and a socket
//     has bytes;
//   - any caller of Transport.Poll (a leader PE that waits for another
//     host), which asks ready which sockets have bytes and reads them
//     itself.
//
// A socket in the runtime's poller wakes a thread of the runtime for
// every frame that arrives, even while a PE reads the frame itself: on
// a host whose CPUs all run PEs that thread preempts one of them, for
// several microseconds per frame. So once frames come to a polling PE
// (a Poll delivered one, or the goroutine was woken for one while a PE
// polls), wake is disarmed, and the receiving goroutine, instead of
// waiting for the sockets, looks every pollGrace whether the polls got
// frames since its last look; when they did not (the PE stopped, or
// its polls find nothing), it arms wake again (arming reports a socket
// that is readable already). Polls that find nothing never disarm: a
// leader whose waits are for its own host leaves the goroutine asleep
// (no looks). Between two waits of a PE nothing is lost: a frame that
// arrives then is read by the PE's next Poll, or by the goroutine at
// most two pollGraces later.
type rxSet struct {
	t      *Transport
	ready  *sys.Epoll // the sockets, level-triggered
	wake   *sys.Epoll // ready, one-shot
	file   *os.File   // wake, in the runtime's poller
	rc     syscall.RawConn
	byFrom []atomic.Pointer[rx] // key (sending leader) to reader
	polls  atomic.Uint64        // Poll calls
	// gotPolls counts the Poll calls that delivered a frame.
	gotPolls atomic.Uint64
	lastPoll atomic.Int64  // when Poll was last called (unix ns)
	graceN   atomic.Int64  // pollGrace, unless a test set another (ns)
	idle     atomic.Uint64 // polls at the last PollIdle
	wakes    atomic.Uint64 // wake-ups of run by a readable socket
	looks    atomic.Uint64 // wake-ups of run, for a socket or a look
	rearms   atomic.Uint64 // times run armed wake again
	armed    atomic.Bool   // wake is armed
	armMu    sync.Mutex    // orders arming, disarming and the deadline
	stop     atomic.Bool
	// polling counts the Poll calls under way (close waits for them
	// before it closes ready).
	polling atomic.Int32
	waitFn  func(uintptr) bool
	evs     [64]sys.EpollEvent // run's
}

func newRxSet(t *Transport) (*rxSet, error) {
	ready, err := sys.NewEpoll()
	if err != nil {
		return nil, fmt.Errorf("internode/tcp: %w", err)
	}
	wake, err := sys.NewEpoll()
	if err != nil {
		ready.Close()
		return nil, fmt.Errorf("internode/tcp: %w", err)
	}
	if err := wake.AddEpoll(ready, 0); err != nil {
		ready.Close()
		wake.Close()
		return nil, fmt.Errorf("internode/tcp: %w", err)
	}
	s := &rxSet{t: t, ready: ready, wake: wake, byFrom: make([]atomic.Pointer[rx], t.cfg.Leaders)}
	s.armed.Store(true)
	s.graceN.Store(int64(pollGrace))
	s.file = wake.File("internode-tcp-receive")
	s.rc, err = s.file.SyscallConn()
	if err != nil {
		s.file.Close()
		ready.Close()
		return nil, fmt.Errorf("internode/tcp: %w", err)
	}
	s.waitFn = func(uintptr) bool {
		var ev [1]sys.EpollEvent
		return s.wake.Ready(ev[:]) > 0 || s.stop.Load()
	}
	return s, nil
}

// run is the receiving goroutine. It waits for wake (armed: for a
// socket with bytes) or, while Poll is being called, for the next look
// at the poll count, and reads what the sockets hold when wake fires.
func (s *rxSet) run() {
	defer s.t.wg.Done()
	seenGot, seenAt := s.gotPolls.Load(), time.Now()
	for {
		err := s.rc.Read(s.waitFn)
		if s.stop.Load() {
			return
		}
		fired := err == nil
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return // the file is closed: the transport is ending
		}
		s.looks.Add(1)
		s.t.Kick() // frames held back (Defer) wait at most one look
		contended := false
		if fired { // wake is disarmed now (one-shot)
			s.wakes.Add(1)
			contended = s.drainReady()
		}
		s.armMu.Lock()
		now := time.Now()
		p, g := s.polls.Load(), s.gotPolls.Load()
		quiet := false
		switch {
		case p == s.idle.Load():
			quiet = true // the poller said it stopped (PollIdle)
		case g != seenGot || fired && (contended || now.UnixNano()-s.lastPoll.Load() < int64(s.grace())):
			// Polls deliver frames, or a frame came while a PE polls
			// (its last poll within a pollGrace, or a poll is reading
			// that socket now): leave the frames to the polls. (A
			// socket that a poll holds stays readable until the poll
			// reads it: armed again at once, wake would fire again at
			// once, and this goroutine spun on it while the poller,
			// descheduled on a loaded machine, held the socket: 3,000
			// wake-ups in a second for 200 frames.)
			seenAt = now
		default:
			// Quiet after a whole pollGrace without a frame for the
			// polls: a poller between two polls (sending, say) is no
			// reason to take over, and a poller that finds nothing (a
			// leader whose waits are for its own host) no reason to
			// stay away.
			quiet = now.Sub(seenAt) >= s.grace()
		}
		if quiet && s.held() {
			// A Poll is reading a connection (its goroutine may be
			// descheduled mid-read): it reads what comes there before
			// it lets go. Armed now, wake would fire at once for that
			// socket and again after every look: look again a
			// pollGrace from now.
			quiet, seenAt = false, now
		}
		seenGot = g
		switch {
		case quiet && (fired || !s.armed.Load()):
			// Nobody polls: wait for the sockets.
			s.rearms.Add(1)
			s.wake.ArmEpoll(s.ready, 0, true)
			s.armed.Store(true)
			s.file.SetReadDeadline(time.Time{})
		case !quiet:
			// A PE polls: look again a pollGrace after the last frame
			// the polls got.
			if s.armed.Load() && !fired {
				s.wake.ArmEpoll(s.ready, 0, false)
			}
			s.armed.Store(false)
			s.file.SetReadDeadline(seenAt.Add(s.grace()))
		}
		s.armMu.Unlock()
		if s.armed.Load() {
			s.t.Kick() // Defer refuses from now on: write what it holds
		}
	}
}

// grace is pollGrace (a test may set a longer one: a loaded machine
// may not run a polling goroutine every 250 us).
func (s *rxSet) grace() time.Duration { return time.Duration(s.graceN.Load()) }

// held reports whether a reader (a Poll) holds some connection that
// has not ended (an ended one's busy is held for good: closeFD).
func (s *rxSet) held() bool {
	for i := range s.byFrom {
		if x := s.byFrom[i].Load(); x != nil && x.busy.Load() != 0 && !x.ended.Load() && !x.closed.Load() {
			return true
		}
	}
	return false
}

// drainReady reads every socket that has bytes, to the end of what it
// holds; contended: some socket was left to a Poll that was reading it.
func (s *rxSet) drainReady() (contended bool) {
	for {
		n := s.ready.Ready(s.evs[:])
		for _, ev := range s.evs[:n] {
			if x := s.byFrom[ev.Fd].Load(); x != nil && !x.drainLoop(true) {
				contended = true
			}
		}
		if n < len(s.evs) {
			return contended
		}
	}
}

// disarm stops the wake-ups of the receiving goroutine (the caller
// polls) and has it look at the poll count after pollGrace.
//
//go:noinline
func (s *rxSet) disarm() {
	s.armMu.Lock()
	if s.armed.Load() && !s.stop.Load() {
		s.wake.ArmEpoll(s.ready, 0, false)
		s.armed.Store(false)
		s.file.SetReadDeadline(time.Now().Add(s.grace()))
	}
	s.armMu.Unlock()
}

// stopRun makes the receiving goroutine return.
func (s *rxSet) stopRun() {
	s.stop.Store(true)
	s.file.SetReadDeadline(time.Unix(1, 0))
}

// PollIdle tells the transport that the caller stops polling for a
// while (a leader PE that goes to sleep in its wait): the receiving
// goroutine takes over at once, instead of within two pollGraces
// (internode.Poller).
func (t *Transport) PollIdle() {
	s := t.rx
	s.armMu.Lock()
	s.idle.Store(s.polls.Load())
	if !s.armed.Load() && !s.stop.Load() {
		s.wake.ArmEpoll(s.ready, 0, true)
		s.armed.Store(true)
		s.file.SetReadDeadline(time.Time{})
	}
	s.armMu.Unlock()
	t.Kick() // Defer refuses from now on
}

// close closes both epoll instances (the sockets are their readers')
// once the receiving goroutine has returned and no Poll is under way.
// A later Poll does nothing.
func (s *rxSet) close() {
	s.stop.Store(true)
	for s.polling.Load() != 0 {
		runtime.Gosched()
	}
	s.armMu.Lock() // a PollIdle may be arming
	s.file.Close()
	s.ready.Close()
	s.armMu.Unlock()
}

// directPoll is the most leaders (this one included) for which Poll
// reads every incoming connection directly, one non-blocking read each,
// instead of asking the ready set which are readable (one epoll_pwait,
// then a read of each): with one or two other hosts a look costs one
// system call per connection either way when nothing came, and a frame
// is read by the look that finds it rather than by a second call.
const directPoll = 3

// Poll reads what has arrived on every incoming connection and hands
// its frames to the Sink, from the calling goroutine, without waiting
// (internode.Poller). It reports whether it delivered a frame. A
// connection that another reader is reading at that moment is left to
// it. While Poll is called at least every pollGrace and gets the
// frames that come, no goroutine of the transport is woken for them.
func (t *Transport) Poll() bool {
	s := t.rx
	s.polling.Add(1)
	if s.stop.Load() {
		s.polling.Add(-1)
		return false
	}
	s.polls.Add(1)
	s.lastPoll.Store(time.Now().UnixNano())
	got := false
	look := func(x *rx) {
		f := x.frames.Load()
		x.drainLoop(false)
		got = got || x.frames.Load() != f
	}
	if len(s.byFrom) <= directPoll {
		for i := range s.byFrom {
			if x := s.byFrom[i].Load(); x != nil {
				look(x)
			}
		}
	} else {
		var evs [16]sys.EpollEvent
		n := s.ready.Ready(evs[:])
		for _, ev := range evs[:n] {
			if x := s.byFrom[ev.Fd].Load(); x != nil {
				look(x)
			}
		}
	}
	if got {
		s.gotPolls.Add(1)
		if s.armed.Load() {
			s.disarm() // frames come to a polling PE: leave them to it
		}
	}
	s.polling.Add(-1)
	return got
}

// add starts reading x's socket; drop stops it.
func (s *rxSet) add(x *rx) error {
	s.byFrom[x.from].Store(x)
	if err := s.ready.Add(x.fd, int32(x.from), false); err != nil {
		s.byFrom[x.from].CompareAndSwap(x, nil)
		return err
	}
	return nil
}

func (s *rxSet) drop(x *rx) {
	s.ready.Del(x.fd)
	s.byFrom[x.from].CompareAndSwap(x, nil)
}

// rx reads the frames of one incoming connection, whose socket (fd)
// this reader owns. Whoever reads (the receiving goroutine, or a PE in
// Poll) does so under busy, a try-lock, parsing frames and handing them
// to the Sink as they complete; frames are thus delivered one at a
// time and in order, whoever reads them.
//
// A reader that finds busy taken does not wait: it sets pending, and
// the holder, after it releases busy, takes it again if pending is set
// (drainLoop), so the bytes whose arrival sent the loser are read. The
// holder reads until the socket is empty (the goroutine), or until a
// read returns less than it asked for (a PE: one read per frame that
// arrives alone, not two); bytes that come later are announced again,
// the sockets' instance being level-triggered.
//
// The state below busy is the holder's. The end of the connection is
// recorded by the holder (end), which closes done; the connection's
// goroutine (Transport.serve) then takes busy for good, closes the
// socket and reports the end.
type rx struct {
	t       *Transport
	from    int
	sink    internode.Sink
	fd      int
	busy    atomic.Uint32
	pending atomic.Uint32
	ended   atomic.Bool
	closed  atomic.Bool   // fd is closed (busy is held for good)
	frames  atomic.Uint64 // frames delivered (Poll reports progress)
	done    chan struct{} // closed by end

	buf    []byte // read buffer: buf[r:w] is read and not yet parsed
	r, w   int
	h      internode.Header
	body   []byte // the payload of h being read (Sink.Buffer's slice)
	got    int    // bytes of body read
	inBody bool
	abort  bool // body is an abort's reason
	bye    bool // the peer said goodbye
	err    error
}

func newRx(t *Transport, from int, fd int) *rx {
	return &rx{t: t, from: from, sink: t.cfg.Sink, fd: fd, buf: make([]byte, readBuf), done: make(chan struct{})}
}

// drainLoop reads what the socket holds, or leaves it to the reader
// that holds busy; all: until the socket is empty. It reports false
// when it left the socket to that reader without reading (the reader
// then reads it again: pending).
func (x *rx) drainLoop(all bool) (drained bool) {
	x.pending.Store(1)
	for x.pending.Load() != 0 && !x.ended.Load() && x.busy.CompareAndSwap(0, 1) {
		x.pending.Store(0)
		x.drain(all)
		x.busy.Store(0)
		drained = true
	}
	return drained || x.ended.Load()
}

// drain reads and delivers until a read would block, or (!all) returns
// less than it asked for and ends a frame, or the connection ends. The
// caller holds busy.
func (x *rx) drain(all bool) {
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
		n, again, err := sys.Recv(uintptr(x.fd), dst)
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
		if !all && n < len(dst) {
			// The socket held less than asked: it is probably empty.
			// Stop if that ends a frame (one read per small frame, not
			// a second that finds nothing); a frame in the middle
			// reads on, so that a stream does not wait for the next
			// poll.
			x.parse()
			if !x.inBody && x.r == x.w {
				return
			}
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

// end records why the connection ended (the caller holds busy) and
// tells the connection's goroutine.
func (x *rx) end(err error) {
	if x.ended.Load() {
		return
	}
	x.err = err
	x.ended.Store(true)
	close(x.done)
}

// lock takes busy, waiting for the reader that holds it; false: the
// socket is closed.
func (x *rx) lock() bool {
	for !x.busy.CompareAndSwap(0, 1) {
		if x.closed.Load() {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// shut ends the connection from this side (Close, Abort).
func (x *rx) shut(err error) {
	if !x.lock() {
		return
	}
	if !x.ended.Load() {
		sys.ShutdownSocket(x.fd)
		x.end(err)
	}
	x.busy.Store(0)
}

// closeFD takes busy for good and closes the socket: no reader touches
// fd after that (its number may be reused).
func (x *rx) closeFD() {
	x.lock()
	x.closed.Store(true)
	sys.Close(x.fd)
}
