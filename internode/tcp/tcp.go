// Package tcp is the TCP backend of internode: the leaders of a job's
// hosts exchange frames over TCP connections.
//
// # Connections
//
// Each leader listens on one port and puts its address in the job's
// Exchange (key "internode-tcp"). A leader dials a peer the first time
// it sends to it (getting the address then), unless the peer has
// connected first; each pair of leaders then uses that one connection
// in both directions. Why one, not one per direction: a frame that
// arrives alone on a connection is acknowledged by a TCP segment of its
// own, while on a connection that carries the answer back the
// acknowledgment rides on the answer. On loopback, where the receiver's
// half of the stack runs in the sender's system call, a bare
// acknowledgment costs about as much as a frame: a polling ping-pong
// of 96 bytes between two processes took 8.6 us one way over two
// one-way connections and 6.1-6.6 us over one (3 runs); goshmem's
// 8-byte put ping-pong between two hosts went from 8.6-10.5 to 6.7-8.8
// us (3 adjacent pairs). When two leaders dial each other at once,
// the lower index's connection stays: the other's acceptor refuses
// the higher index's dial (status "use mine", before any frame is
// written on it), and the higher index waits for the lower's
// connection, which its own acceptor takes. Lazy dialing opens only the
// connections the job's traffic needs, and fetches only those peers'
// addresses from the Exchange (a PMI get costs 0.1-0.2 ms: 1-2 s for
// all of 10,000 hosts).
//
// Scale: a leader that talks to every other host of a 10,000-host job
// holds 9,999 sockets (plus its listener and a handful of others):
// raise the descriptor limit (ulimit -n, often 1,024 by default) above
// 10,000. Idle, a socket costs a few KiB of kernel memory; busy, its
// buffers autotune up to 4-6 MiB (tens of GiB if all streamed at once,
// which the traffic of one leader cannot do). Each connection costs a
// writer goroutine and one that waits for its end (a single goroutine
// reads them all): ~20,000 goroutines, ~0.2 GiB of stacks, at 10,000
// hosts. Verbs with one queue pair per peer and no kernel buffers takes
// over at scale.
//
// # Wire format
//
// A connection starts with the hello (hello.go): magic, protocol
// version, a hash of the job id, the sender's leader index, the index
// it takes the receiver for, the number of leaders and its host name.
// The acceptor always answers with its own hello and a status, then
// closes the connection if it refuses it (anything differs, a second
// connection from one leader, or "use mine"); the dialer's error says
// which leader, which host and what differs. Then both sides write
// frames: a 40-byte internode.Header and Header.Len payload bytes. A
// header with Len 0xFFFFFFFF is a control frame of this backend: Op 1
// is goodbye (Close: the end is clean), Op 2 is abort, with Arg0 bytes
// of reason after it.
//
// # Sending
//
// Send queues a frame. If the connection is idle it then writes the
// queue at once from the sender's goroutine with one non-blocking
// writev (a ping-pong costs no hand-off); what the kernel does not take
// at once, and every frame queued while a write is in flight, is left
// to the connection's writer goroutine, which writes all of it with
// writev, waiting for room in poll(2): the frames queued during a write
// go out in one system call. A payload is written from the caller's
// slice, never copied. Send never waits on the network, so a Sink may
// answer from Deliver; it waits only while more than Config.QueueBytes
// (headers and payloads) are queued unwritten for the peer (Reply never
// does). Flush waits until what was queued has been written.
//
// # Receiving
//
// Each incoming connection has a reader (recv.go) that reads headers
// through a 64 KiB buffer (many small frames per system call) and each
// payload straight into the slice the Sink gives: the part already
// buffered is copied, a large rest the kernel writes directly into the
// Sink's slice. It allocates nothing per frame. Two kinds of goroutine
// run it: the transport's receiving goroutine, and any caller of Poll
// (internode.Poller: a leader PE that waits for another host reads its
// sockets itself, so that the frame it waits for needs no goroutine to
// be woken and scheduled first). They share a reader under a try-lock;
// whoever finds it taken leaves word, and the holder reads once more
// before it lets go.
//
// The incoming sockets are not in the runtime's network poller, which
// would wake one of its threads for every frame even while a PE reads
// it (on a host whose CPUs all run PEs, that thread preempts one for
// several microseconds per frame: measured, an 8-byte PutSignal
// ping-pong between two hosts took 14-16 us one way with it and 8-10
// without). They are in an epoll instance of the transport's own, which
// Poll asks, without waiting, which sockets have bytes; the receiving
// goroutine waits, through the runtime's poller, on a one-shot second
// instance that holds the first. Once the polls get the frames that
// come, Poll disarms that one, and the goroutine then only looks every
// pollGrace (250 us; about a millisecond with the runtime's timers)
// whether the polls still get frames; when they did not, it arms it
// again, and a frame that came in the meantime is read at once (polls
// that find nothing leave it armed). While a leader polls, an incoming
// frame so costs one epoll_pwait and one read, and wakes nobody; after
// its last poll, a frame waits at most two looks, and not at all after
// PollIdle (a poller going to sleep).
//
// # Failures
//
// A broken connection, an abort or a host that stops answering is
// reported once per peer to Sink.Failed: at once for a closed or reset
// connection (every connection is read, by the receiving goroutine when
// no PE polls, so even a peer this leader only sends to is noticed), and
// within about 10 s for a host that vanished, idle (TCP keepalive probes
// every second, given up after TCP_USER_TIMEOUT) or with data in flight
// or unread (TCP_USER_TIMEOUT, 10 s: a leader must keep reading; the
// Sink must not block for seconds). A peer's goodbye makes its end
// clean: no report.
//
// An idle transport uses no CPU: its goroutines block in the runtime's
// poller, on channels or on condition variables.
package tcp

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internode"
)

// Name is this backend's name in SHMEM_INTERNODE.
const Name = "tcp"

// exchangeKey is the key of a leader's address in the Exchange.
const exchangeKey = "internode-tcp"

const (
	ctlLen    = 0xFFFFFFFF // Header.Len of a control frame
	ctlBye    = 1
	ctlAbort  = 2
	reasonMax = 4096
	readBuf   = 64 << 10
	dialWait  = 10 * time.Second
	closeWait = 2 * time.Second // Close and Abort give the peers this long
	// userTimeout bounds how long data may stay unacknowledged or a
	// peer's window closed, and (Linux, tcp(7)) also when keepalive
	// gives up: it overrides the probe count, so a host that vanished
	// while idle is noticed after about userTimeout whatever the probes
	// (10.6 s, a test host's veth set down under hydra). 2 s made that
	// 2.26 s, but also reset connections to live peers: under -race in
	// CI, TestFramesInOrder's receivers (frames up to 8 MiB, three
	// transports in one process on 2 CPUs) fell 2 s behind. A shorter
	// bound on a vanished idle host needs probes of the transport's own
	// (verbs has them), not this timeout.
	userTimeout = 10 * time.Second
	// keepIdle is the keepalive's idle time and probe interval.
	keepIdle = time.Second
)

// Backend returns this backend for internode.Open.
func Backend() internode.Backend { return internode.Backend{Name: Name, Open: Open} }

// Transport is the TCP transport of one leader.
type Transport struct {
	cfg   internode.Config
	ln    net.Listener
	mine  hello // this leader's hello (to is set per connection)
	exMu  sync.Mutex
	out   []*peer
	wg    sync.WaitGroup
	mu    sync.Mutex
	hs    map[net.Conn]bool // accepted connections still in the hello
	rx    *rxSet            // the connections' readers
	state []uint8           // per peer: peerBye, peerFailed
	done  bool              // Close finished its goodbyes: report nothing
	ended bool              // Close or Abort started

	// Deferred frames (Defer): the peers that hold some, and whether
	// any does (read without dmu by Kick).
	dmu         sync.Mutex
	dlist       []int
	anyDeferred atomic.Bool

	// writes, if set, is called after each write system call of frames
	// (tests count them).
	writes func()
	// afterAgain, if set, is called by a reader that holds a
	// connection's busy flag right after a read found nothing (tests).
	afterAgain func()
}

const (
	peerBye    = 1 // the peer said goodbye: its end is clean
	peerFailed = 2 // reported to the Sink
)

// peer is this leader's side of its connection with one other leader:
// one TCP connection per pair of leaders, used in both directions (see
// Connections), read by an rx and written by whoever sends.
type peer struct {
	t     *Transport
	index int
	mu    sync.Mutex
	cond  sync.Cond // work for the writer; progress for Flush and Send
	queue []frame   // not yet given to a write
	spare []frame
	bytes int // queued or in flight, not yet written
	// queued and written count frames.
	queued, written uint64
	err             error
	started         bool // run is started (it dials, then writes)
	writing         bool // a goroutine owns the connection's write side
	// The connection: up once fd (this leader's descriptor of the
	// socket, not in the runtime's poller) is set, by run's dial or by
	// an accepted connection; pending while an accepted one is being
	// answered; dialing while run dials; closed once its reader ended
	// and fd was closed.
	up, pending, dialing, closed bool
	fd                           int
	x                            *rx
	dead                         atomic.Bool  // err is set (read by a writer without mu)
	deadline                     atomic.Int64 // writes give up then (unix ns; 0: never): Close and Abort
	cur                          []frame      // the batch rest belongs to
	rest                         net.Buffers  // what an inline write left to the writer
	bufs                         net.Buffers  // storage for the batch's buffers
	wv                           *sys.Writev
	waiters                      int // goroutines in Flush or waiting for queue space
	// arena holds the payloads of deferred frames until they are
	// written (reset when the queue empties).
	arena  internode.Arena
	inList bool // in t.dlist (t.dmu held)
}

type frame struct {
	hdr     [internode.HeaderSize]byte
	payload []byte
}

// Open listens for cfg (checked by internode.Open), puts this leader's
// address in cfg.Exchange and fences.
func Open(cfg internode.Config) (internode.Transport, error) {
	t, err := listen(cfg)
	if err != nil {
		return nil, err
	}
	if err := cfg.Exchange.Put(exchangeKey, []byte(t.ln.Addr().String())); err != nil {
		t.Close()
		return nil, fmt.Errorf("internode/tcp: publishing this leader's address: %w", err)
	}
	if err := cfg.Exchange.Fence(); err != nil {
		t.Close()
		return nil, fmt.Errorf("internode/tcp: fence after publishing the address: %w", err)
	}
	return t, nil
}

func listen(cfg internode.Config) (*Transport, error) {
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = internode.DefaultQueueBytes
	}
	ip, err := listenIP(cfg.Iface, cfg.Leaders)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("internode/tcp: listening on %s: %v (set SHMEM_INTERNODE_IFACE to an interface or address of this host)", ip, err)
	}
	host, _ := os.Hostname()
	jh := fnv.New64a()
	jh.Write([]byte(cfg.JobID))
	t := &Transport{
		cfg:   cfg,
		ln:    ln,
		mine:  hello{version: version, job: jh.Sum64(), from: uint32(cfg.Index), leaders: uint32(cfg.Leaders), host: host},
		hs:    map[net.Conn]bool{},
		state: make([]uint8, cfg.Leaders),
		out:   make([]*peer, cfg.Leaders),
	}
	if t.rx, err = newRxSet(t); err != nil {
		ln.Close()
		return nil, err
	}
	for i := range t.out {
		p := &peer{t: t, index: i, fd: -1}
		p.cond.L = &p.mu
		t.out[i] = p
	}
	t.wg.Add(2)
	go t.rx.run()
	go t.accept()
	return t, nil
}

// Addr is the address this leader listens on.
func (t *Transport) Addr() string { return t.ln.Addr().String() }

// listenIP picks the address to listen on: iface as an IP, or the
// first address of the interface so named, or ("") the interface of
// the default route, else the first non-loopback interface that is up.
// Only a single-leader job may fall back to loopback.
func listenIP(iface string, leaders int) (string, error) {
	if ip := net.ParseIP(iface); ip != nil {
		return ip.String(), nil
	}
	if iface != "" {
		i, err := net.InterfaceByName(iface)
		if err != nil {
			return "", fmt.Errorf("internode/tcp: SHMEM_INTERNODE_IFACE=%s: %v; set it to an interface or address of this host", iface, err)
		}
		if ip := ifaceIP(i); ip != "" {
			return ip, nil
		}
		return "", fmt.Errorf("internode/tcp: interface %s has no IP address; set SHMEM_INTERNODE_IFACE to another", iface)
	}
	if b, err := os.ReadFile("/proc/net/route"); err == nil {
		if name := defaultRouteIface(string(b)); name != "" {
			if i, err := net.InterfaceByName(name); err == nil {
				if ip := ifaceIP(i); ip != "" {
					return ip, nil
				}
			}
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("internode/tcp: listing interfaces: %v", err)
	}
	for k := range ifs {
		i := &ifs[k]
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		if ip := ifaceIP(i); ip != "" {
			return ip, nil
		}
	}
	if leaders == 1 {
		return "127.0.0.1", nil
	}
	return "", errors.New("internode/tcp: this host has no network interface with an address but the job spans hosts; set SHMEM_INTERNODE_IFACE to the interface or address the hosts reach each other on")
}

// ifaceIP is i's first IPv4 address, else its first global IPv6 one.
func ifaceIP(i *net.Interface) string {
	addrs, _ := i.Addrs()
	v6 := ""
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP.String()
		}
		if v6 == "" && n.IP.IsGlobalUnicast() {
			v6 = n.IP.String()
		}
	}
	return v6
}

// defaultRouteIface is the interface of the IPv4 default route with the
// lowest metric in /proc/net/route's text, or "".
func defaultRouteIface(route string) string {
	best, metric := "", -1
	for _, line := range strings.Split(route, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		var m int
		fmt.Sscan(f[6], &m)
		if metric < 0 || m < metric {
			best, metric = f[0], m
		}
	}
	return best
}

// Send queues a frame for leader to; see internode.Transport.
func (t *Transport) Send(to int, h *internode.Header, payload []byte) error {
	return t.send(to, h, payload, true)
}

// Reply is Send that never waits for queue space.
func (t *Transport) Reply(to int, h *internode.Header, payload []byte) error {
	return t.send(to, h, payload, false)
}

func (t *Transport) send(to int, h *internode.Header, payload []byte, wait bool) error {
	if uint(to) >= uint(len(t.out)) || to == t.cfg.Index || int(h.Len) != len(payload) || h.Len == ctlLen {
		badSend(to, len(t.out), t.cfg.Index, h, payload)
	}
	p := t.out[to]
	if err := p.lockForQueue(internode.HeaderSize+len(payload), wait); err != nil {
		return err
	}
	p.push(h, payload)
	p.kick()
	return nil
}

// deferMax is the largest payload Defer holds back (it holds
// internode.ArenaBytes per peer).
const deferMax = 1 << 10

// Defer queues a frame with a small payload (copied) for leader to
// without writing it: it leaves with the next frame sent to to, or at
// Kick or Flush, or when the receiving goroutine next looks (within
// pollGrace). It refuses when no PE polls (the receiving goroutine
// then does not look periodically), when the payload is large or the
// peer's arena full, or when the connection is not up
// (internode.Deferrer).
func (t *Transport) Defer(to int, h *internode.Header, payload []byte) bool {
	if len(payload) > deferMax || t.rx.armed.Load() {
		return false
	}
	if uint(to) >= uint(len(t.out)) || to == t.cfg.Index || int(h.Len) != len(payload) || h.Len == ctlLen {
		badSend(to, len(t.out), t.cfg.Index, h, payload)
	}
	p := t.out[to]
	p.mu.Lock()
	if !p.up || p.err != nil || p.bytes > 0 && p.bytes+internode.HeaderSize+len(payload) > t.cfg.QueueBytes {
		p.mu.Unlock()
		return false
	}
	b, ok := p.arena.Hold(payload)
	if !ok {
		p.mu.Unlock()
		return false
	}
	p.push(h, b)
	p.mu.Unlock()
	t.dmu.Lock()
	if !p.inList {
		p.inList = true
		t.dlist = append(t.dlist, to)
	}
	t.anyDeferred.Store(true)
	t.dmu.Unlock()
	if t.rx.armed.Load() {
		// The receiving goroutine stopped looking (and wrote what was
		// held before it did, or sees this frame): write it now.
		t.Kick()
	}
	return true
}

// deferred reports whether Defer holds frames back (tests).
func (t *Transport) deferred() bool { return t.anyDeferred.Load() }

// Kick writes every frame Defer holds back.
func (t *Transport) Kick() {
	if !t.anyDeferred.Load() {
		return
	}
	t.dmu.Lock()
	t.anyDeferred.Store(false)
	for _, i := range t.dlist {
		p := t.out[i]
		p.inList = false
		p.mu.Lock()
		if len(p.queue) > 0 && p.err == nil {
			p.kick() // releases p.mu
		} else {
			p.mu.Unlock()
		}
	}
	t.dlist = t.dlist[:0]
	t.dmu.Unlock()
}

// SendBatch queues frames for leader to, in order, and writes them with
// one system call if the connection is idle.
func (t *Transport) SendBatch(to int, frames []internode.Frame) error {
	size := 0
	for i := range frames {
		f := &frames[i]
		if uint(to) >= uint(len(t.out)) || to == t.cfg.Index || int(f.Header.Len) != len(f.Payload) || f.Header.Len == ctlLen {
			badSend(to, len(t.out), t.cfg.Index, &f.Header, f.Payload)
		}
		size += internode.HeaderSize + len(f.Payload)
	}
	if len(frames) == 0 {
		return nil
	}
	p := t.out[to]
	if err := p.lockForQueue(size, true); err != nil {
		return err
	}
	for i := range frames {
		p.push(&frames[i].Header, frames[i].Payload)
	}
	p.kick()
	return nil
}

func badSend(to, n, self int, h *internode.Header, payload []byte) {
	switch {
	case to < 0 || to >= n || to == self:
		panic(fmt.Sprintf("internode/tcp: Send to leader %d: want 0 <= leader < %d, not this leader (%d)", to, n, self))
	case h.Len == ctlLen:
		panic(fmt.Sprintf("internode/tcp: Send: payload length %d, at most %d", h.Len, internode.MaxPayload))
	}
	panic(fmt.Sprintf("internode/tcp: Send: header length %d, payload %d bytes", h.Len, len(payload)))
}

// lockForQueue locks p, waits (if wait) until size bytes fit in the
// queue's bound (a frame alone in the queue always fits), and starts
// the writer on the first frame. It returns with p.mu held, or the
// peer's error with p.mu released.
func (p *peer) lockForQueue(size int, wait bool) error {
	p.mu.Lock()
	for wait && p.err == nil && p.bytes > 0 && p.bytes+size > p.t.cfg.QueueBytes {
		p.waiters++
		p.cond.Wait()
		p.waiters--
	}
	if p.err != nil {
		err := p.err
		p.mu.Unlock()
		return err
	}
	p.ensureRun()
	return nil
}

// ensureRun starts the goroutine that dials (unless the connection is
// up or coming) and writes what inline writes leave (p.mu held).
func (p *peer) ensureRun() {
	if !p.started {
		p.started = true
		p.t.wg.Add(1)
		go p.run()
	}
}

// push appends a frame to the queue (p.mu held).
func (p *peer) push(h *internode.Header, payload []byte) {
	p.queue = append(p.queue, frame{payload: payload})
	h.Encode(p.queue[len(p.queue)-1].hdr[:])
	p.queued++
	p.bytes += internode.HeaderSize + len(payload)
}

// kick writes the queue at once if the connection is idle, else leaves
// it to the writer; it releases p.mu.
func (p *peer) kick() {
	if !p.up || p.closed || p.writing || len(p.rest) > 0 {
		p.cond.Broadcast() // the writer dials, or takes it after the write in flight
	} else {
		p.writeInline()
	}
	p.mu.Unlock()
}

// writeInline writes the queue with one non-blocking writev from the
// calling goroutine and leaves what the kernel did not take to the
// writer. It is called and returns with p.mu held.
func (p *peer) writeInline() {
	p.writing = true
	batch := p.takeQueue()
	p.mu.Unlock()
	bufs := p.buffers(batch)
	n, err := p.wv.Try(p.fd, bufs)
	if p.t.writes != nil {
		p.t.writes()
	}
	rest := consume(bufs, n)
	p.mu.Lock()
	p.writing = false
	switch {
	case err != nil:
		p.failLocked(err)
	case len(rest) == 0:
		p.completed(batch)
	default:
		p.cur, p.rest = batch, rest
	}
	if len(p.queue) > 0 || len(p.rest) > 0 || err != nil || p.waiters > 0 {
		p.cond.Broadcast()
	}
}

// takeQueue takes the queue as the next batch (p.mu held).
func (p *peer) takeQueue() []frame {
	batch := p.queue
	p.queue, p.spare = p.spare[:0], nil
	return batch
}

// buffers lists batch's headers and payloads in p.bufs (the caller owns
// the write side).
func (p *peer) buffers(batch []frame) net.Buffers {
	p.bufs = p.bufs[:0]
	for i := range batch {
		p.bufs = append(p.bufs, batch[i].hdr[:])
		if len(batch[i].payload) > 0 {
			p.bufs = append(p.bufs, batch[i].payload)
		}
	}
	return p.bufs
}

// consume drops the first n bytes of b.
func consume(b net.Buffers, n int) net.Buffers {
	for n > 0 {
		if n < len(b[0]) {
			b[0] = b[0][n:]
			break
		}
		n -= len(b[0])
		b = b[1:]
	}
	return b
}

// completed records batch as written and recycles it (p.mu held).
func (p *peer) completed(batch []frame) {
	for i := range batch {
		p.bytes -= internode.HeaderSize + len(batch[i].payload)
	}
	p.written += uint64(len(batch))
	clear(batch)
	p.spare = batch[:0]
	if len(p.queue) == 0 {
		p.arena.Reset() // every deferred payload is written
	}
	// Wake only Flush and Send waiting for space, never the idle
	// writer: an inline write leaves the writer nothing to do, and
	// readying it costs a thread wake-up (a futex call here, and a
	// thread the two CPUs must then run). Measured across two
	// processes (bench/put_pingpong between two 1-PE hosts on a 2-CPU
	// VM, 4 adjacent pairs), the 8 B one-way latency went from 58-62 us
	// with a Broadcast after every write to 22-25 us without.
	if p.waiters > 0 {
		p.cond.Broadcast()
	}
}

// Flush waits until every frame queued for leader to has been written.
func (t *Transport) Flush(to int) error {
	if uint(to) >= uint(len(t.out)) {
		panic(fmt.Sprintf("internode/tcp: Flush leader %d: want 0 <= leader < %d", to, len(t.out)))
	}
	p := t.out[to]
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 { // deferred frames: write them now
		if p.up && !p.closed && !p.writing && len(p.rest) == 0 && p.err == nil {
			p.writeInline()
		} else {
			p.cond.Broadcast()
		}
	}
	target := p.queued
	for p.written < target && p.err == nil {
		p.waiters++
		p.cond.Wait()
		p.waiters--
	}
	if p.written >= target {
		return nil
	}
	return p.err
}

// run dials the peer, unless the connection is up or coming, and
// writes what inline writes leave until the connection fails or the
// transport closes.
func (p *peer) run() {
	defer p.t.wg.Done()
	p.mu.Lock()
	p.connect()
	for p.err == nil {
		for p.err == nil && (p.writing || len(p.rest) == 0 && len(p.queue) == 0) {
			p.cond.Wait()
		}
		if p.err != nil {
			break
		}
		p.writing = true
		batch, bufs := p.cur, p.rest
		p.cur, p.rest = nil, nil
		if len(bufs) == 0 {
			batch = p.takeQueue()
		}
		p.mu.Unlock()
		if len(bufs) == 0 {
			bufs = p.buffers(batch)
		}
		err := p.writeAll(bufs)
		p.mu.Lock()
		p.writing = false
		if err != nil {
			p.failLocked(err)
			break
		}
		p.completed(batch)
		if p.waiters > 0 {
			p.cond.Broadcast()
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// connect makes the connection up (p.mu held, and held again on
// return): it dials, unless an accepted connection is up or being
// answered; when the peer refuses the dial for its own (both dialed at
// once: the lower index's connection is kept) it waits for that one.
func (p *peer) connect() {
	if !p.up && !p.pending && p.err == nil {
		p.dialing = true
		p.mu.Unlock()
		conn, status, err := p.dial()
		fd := -1
		if err == nil {
			fd, err = detach(conn)
		}
		p.mu.Lock()
		p.dialing = false
		switch {
		case err == nil && !p.up && !p.pending && p.err == nil:
			p.install(fd)
		case err == nil:
			sys.Close(fd) // (an accepted connection won meanwhile)
		case (status == statusUseMine || status == statusDuplicate) && (p.up || p.pending):
			// Ours lost to the peer's, which is up or being answered.
		case status == statusUseMine:
			// The peer, dialing too, keeps its own connection: wait
			// for it.
			p.waitUp(err.Error())
		default:
			p.failLocked(err)
		}
	}
	for !p.up && p.err == nil {
		p.cond.Wait() // an accepted connection being answered
	}
}

// waitUp waits up to dialWait for the peer's connection (p.mu held).
func (p *peer) waitUp(why string) {
	tm := time.AfterFunc(dialWait, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer tm.Stop()
	deadline := time.Now().Add(dialWait)
	for !p.up && p.err == nil && time.Now().Before(deadline) {
		p.cond.Wait()
	}
	if !p.up && !p.pending && p.err == nil {
		p.failLocked(fmt.Errorf("%s, and its own connection did not come within %v", why, dialWait))
	}
}

// install makes fd the connection (p.mu held): its reader starts, and a
// goroutine waits for its end.
func (p *peer) install(fd int) {
	t := p.t
	p.fd, p.up, p.pending = fd, true, false
	p.wv = sys.NewWritev()
	x := newRx(t, p.index, fd)
	p.x = x
	if err := t.rx.add(x); err != nil {
		p.failLocked(err)
	}
	t.wg.Add(1)
	go p.serveConn(x)
	p.ensureRun()
	p.cond.Broadcast()
	t.mu.Lock()
	done := t.done
	t.mu.Unlock()
	if done { // Close ran past this peer while it connected
		go x.shut(errors.New("the transport is closed"))
	}
}

// serveConn waits for the end of the connection read by x, records it
// as the peer's failure (reported unless the transport is closing or
// the peer said goodbye), waits for the write in progress, and closes
// the socket.
func (p *peer) serveConn(x *rx) {
	defer p.t.wg.Done()
	<-x.done
	p.t.rx.drop(x)
	p.mu.Lock()
	p.failLocked(x.err)
	for p.writing {
		p.waiters++
		p.cond.Wait()
		p.waiters--
	}
	p.closed = true
	p.mu.Unlock()
	x.closeFD()
}

// writeAll writes bufs on the connection, waiting for room, until all
// of it is written, the connection fails, or the write deadline
// (Close, Abort) passes. The caller owns the write side.
func (p *peer) writeAll(bufs net.Buffers) error {
	for {
		n, err := p.wv.Try(p.fd, bufs)
		if p.t.writes != nil {
			p.t.writes()
		}
		if err != nil {
			return err
		}
		bufs = consume(bufs, n)
		if len(bufs) == 0 {
			return nil
		}
		if n > 0 {
			continue
		}
		if p.dead.Load() {
			return errors.New("the connection is closed")
		}
		wait := 100 * time.Millisecond
		if d := p.deadline.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				return fmt.Errorf("write: %w", os.ErrDeadlineExceeded)
			}
			wait = min(wait, left)
		}
		if err := sys.WaitWritable(p.fd, wait); err != nil {
			return err
		}
	}
}

// failLocked records err as the peer's failure (p.mu held) and reports
// it unless the transport is closing or the peer said goodbye.
func (p *peer) failLocked(err error) {
	if p.err != nil {
		return
	}
	p.err = fmt.Errorf("internode/tcp: to leader %d: %w", p.index, err)
	p.dead.Store(true)
	p.cond.Broadcast()
	// Report without p.mu (the Sink may call back into the transport),
	// and not once Close has begun (its Wait must not race an Add).
	t := p.t
	t.mu.Lock()
	if !t.ended {
		t.wg.Add(1)
		go func(err error) {
			defer t.wg.Done()
			t.report(p.index, err, false)
		}(p.err)
	}
	t.mu.Unlock()
}

// report tells the Sink that peer is lost, once, unless the transport
// is closing or (for a lost connection, not an abort) the peer said
// goodbye.
func (t *Transport) report(peer int, err error, abort bool) {
	t.mu.Lock()
	if t.ended || t.state[peer]&peerFailed != 0 || !abort && t.state[peer]&peerBye != 0 {
		t.mu.Unlock()
		return
	}
	t.state[peer] |= peerFailed
	t.mu.Unlock()
	t.cfg.Sink.Failed(peer, err)
}

func (t *Transport) goodbye(peer int) {
	t.mu.Lock()
	t.state[peer] |= peerBye
	t.mu.Unlock()
}

// dial connects to the peer and exchanges hellos. It returns the
// connection, or the peer's refusal (status) and an error that says
// what went wrong.
func (p *peer) dial() (*net.TCPConn, uint8, error) {
	t := p.t
	t.exMu.Lock()
	a, err := t.cfg.Exchange.Get(t.cfg.Rank(p.index), exchangeKey)
	t.exMu.Unlock()
	if err != nil {
		return nil, 0, fmt.Errorf("getting its address from the exchange (rank %d): %w", t.cfg.Rank(p.index), err)
	}
	addr := string(a)
	c, err := net.DialTimeout("tcp", addr, dialWait)
	if err != nil {
		return nil, 0, fmt.Errorf("dialing %s: %w (is a firewall in the way? SHMEM_INTERNODE_IFACE picks the interface each leader listens on)", addr, err)
	}
	conn := c.(*net.TCPConn)
	if err := setup(conn); err != nil {
		conn.Close()
		return nil, 0, err
	}
	conn.SetDeadline(time.Now().Add(dialWait))
	var b [helloSize]byte
	mine := t.mine
	mine.to = uint32(p.index)
	mine.encode(b[:])
	if _, err := conn.Write(b[:]); err != nil {
		conn.Close()
		return nil, 0, fmt.Errorf("%s: sending the hello: %w", addr, err)
	}
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		conn.Close()
		return nil, 0, fmt.Errorf("%s did not answer the hello: %w", addr, err)
	}
	their, err := decodeHello(b[:])
	status := uint8(0)
	if err == nil {
		status = their.status
		if d := differs(mine, their, uint32(p.index)); d != "" {
			err = fmt.Errorf("leader at %s (host %s) %s", addr, their.host, d)
		} else if their.status == statusDuplicate {
			err = fmt.Errorf("leader at %s (host %s) refused: it already has a connection from leader %d (two leaders have the same index?)", addr, their.host, mine.from)
		} else if their.status == statusUseMine {
			err = fmt.Errorf("leader at %s (host %s) refused: it is dialing this leader too, and keeps its own connection", addr, their.host)
		} else if their.status != statusOK {
			err = fmt.Errorf("leader at %s (host %s) refused the connection (status %d)", addr, their.host, their.status)
		}
	} else {
		err = fmt.Errorf("%s: %w", addr, err)
	}
	if err != nil {
		conn.Close()
		return nil, status, err
	}
	conn.SetDeadline(time.Time{})
	return conn, 0, nil
}

// detach takes conn's socket out of the runtime's poller: it returns a
// descriptor of its own for it and closes conn.
func detach(conn *net.TCPConn) (int, error) {
	defer conn.Close()
	rc, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	return sys.DupConn(rc)
}

// setup sets a connection's options: no Nagle delay, keepalive probes
// every keepIdle, and a bound on unacknowledged data (userTimeout).
func setup(c *net.TCPConn) error {
	if err := c.SetNoDelay(true); err != nil {
		return err
	}
	if err := c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: keepIdle, Interval: keepIdle, Count: 3}); err != nil {
		return err
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	return sys.SetTCPUserTimeout(rc, userTimeout)
}

// accept serves incoming connections until the listener closes.
func (t *Transport) accept() {
	defer t.wg.Done()
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			return
		}
		t.wg.Add(1)
		go t.serve(conn.(*net.TCPConn))
	}
}

// serve answers a connection's hello and, if it accepts it, makes it
// the connection with the dialing leader.
func (t *Transport) serve(conn *net.TCPConn) {
	defer t.wg.Done()
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		conn.Close()
		return
	}
	t.hs[conn] = true
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.hs, conn)
		t.mu.Unlock()
	}()
	if setup(conn) != nil {
		conn.Close()
		return
	}
	conn.SetDeadline(time.Now().Add(dialWait))
	var b [helloSize]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		conn.Close()
		return
	}
	their, err := decodeHello(b[:])
	if err != nil {
		conn.Close()
		return // not one of ours: nothing to answer or report
	}
	mine := t.mine
	mine.to = their.from
	if differs(mine, their, their.from) != "" || their.from >= uint32(len(t.out)) || int(their.from) == t.cfg.Index {
		mine.status = statusDiffers
	}
	from := int(their.from)
	var p *peer
	if mine.status == statusOK {
		p = t.out[from]
		p.mu.Lock()
		switch {
		case p.up || p.pending:
			mine.status = statusDuplicate
		case p.dialing && t.cfg.Index < from:
			mine.status = statusUseMine // both dial: the lower index's connection stays
		case p.err != nil:
			mine.status = statusDuplicate // (this peer failed here already)
		default:
			p.pending = true
		}
		p.mu.Unlock()
	}
	mine.encode(b[:])
	_, err = conn.Write(b[:])
	if mine.status != statusOK {
		conn.Close()
		return
	}
	fd := -1
	if err == nil {
		conn.SetDeadline(time.Time{})
		fd, err = detach(conn)
	} else {
		conn.Close()
	}
	p.mu.Lock()
	if err != nil {
		p.pending = false
		p.failLocked(fmt.Errorf("answering its hello: %w", err))
		p.cond.Broadcast()
	} else {
		p.install(fd)
	}
	p.mu.Unlock()
}

// Close writes what is queued (for at most 2 s per connection), says
// goodbye to every peer it is connected with, and ends every
// connection.
func (t *Transport) Close() error {
	t.end(ctlBye, "")
	return nil
}

// Abort tells every peer this leader is connected with that the job
// aborts with reason, then closes. The peers this leader receives from
// learn it at once; those it sends to after what is queued for them
// (at most 2 s, else they see the connection break).
func (t *Transport) Abort(reason string) {
	t.end(ctlAbort, reason)
}

func (t *Transport) end(op uint8, reason string) {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return
	}
	t.ended = true
	t.mu.Unlock()
	if len(reason) > reasonMax {
		reason = reason[:reasonMax]
	}
	var payload []byte
	h := internode.Header{Op: op, Len: ctlLen, Arg0: uint64(len(reason))}
	if len(reason) > 0 {
		payload = []byte(reason)
	}
	deadline := time.Now().Add(closeWait)
	for _, p := range t.out {
		p.mu.Lock()
		ok := p.started && p.err == nil
		if ok {
			p.deadline.Store(deadline.UnixNano())
			p.push(&h, payload)
			p.kick() // releases p.mu
			t.Flush(p.index)
		} else {
			p.mu.Unlock()
		}
	}
	t.ln.Close()
	t.mu.Lock()
	t.done = true
	hs := make([]net.Conn, 0, len(t.hs))
	for c := range t.hs {
		hs = append(hs, c)
	}
	t.mu.Unlock()
	for _, c := range hs {
		c.Close()
	}
	for _, p := range t.out {
		p.mu.Lock()
		x := p.x
		if p.err == nil {
			p.err = fmt.Errorf("internode/tcp: to leader %d: the transport is closed", p.index)
			p.dead.Store(true)
		}
		p.cond.Broadcast()
		p.mu.Unlock()
		if x != nil {
			x.shut(errors.New("the transport is closed"))
		}
	}
	t.rx.stopRun()
	t.wg.Wait()
	t.rx.close()
}
