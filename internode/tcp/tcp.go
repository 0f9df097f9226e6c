// Package tcp is the TCP backend of internode: the leaders of a job's
// hosts exchange frames over TCP connections.
//
// # Connections
//
// Each leader listens on one port and publishes its address. A leader
// dials a peer the first time it sends to it, and uses that connection
// only for what it sends; what the peer sends comes on the connection
// the peer dialed. Two one-way connections per pair mean that no
// simultaneous dial needs a tie-break and that each direction keeps its
// order; lazy dialing means a job opens only the connections its
// traffic needs. A leader that talks to every other host of a
// 10,000-host job holds 2 x 9,999 sockets (about 20,000 descriptors and
// some 40 MB of socket buffers at Linux's defaults), which is why the
// verbs backend, with one queue pair per peer and no kernel buffers,
// takes over at scale. The first bytes of every connection are a hello
// (magic, version, a hash of the job id, the dialer's index) that the
// acceptor checks and answers with its own; a mismatch fails the
// connection with a message naming both leaders.
//
// # Sending
//
// Send queues a frame; one writer goroutine per outgoing connection
// drains the queue with writev (net.Buffers): every frame queued while
// a write was in flight goes out in the next single system call, and a
// payload is written from the caller's slice, never copied. Flush
// waits until what was queued has been written. The queue is not
// bounded: the core bounds what it has in flight (its contexts' quiet
// points).
//
// # Receiving
//
// One reader goroutine per incoming connection reads each header
// through a 64 KiB buffer (many small frames per system call) and each
// payload straight into the slice the Sink gives (a payload larger than
// the buffer is read by the kernel directly into it). An idle
// transport uses no CPU: its goroutines block in the runtime's poller.
package tcp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"sync"
	"time"

	"github.com/goshmem/goshmem/internode"
)

const (
	magic     = 0x74736f67 // "gost"
	version   = 1
	helloSize = 24
)

// Backend is this transport for internode.Listen.
var Backend = internode.Backend{Name: "tcp", Listen: Listen}

// Transport is the TCP transport of one leader.
type Transport struct {
	cfg   internode.Config
	ln    net.Listener
	job   uint64
	mu    sync.Mutex
	addrs []string
	out   []*peer
	in    map[net.Conn]bool
	done  bool
	wg    sync.WaitGroup

	// writes counts the system calls that wrote frames (tests).
	writes func()
}

// peer is the outgoing side towards one leader.
type peer struct {
	t       *Transport
	index   int
	mu      sync.Mutex
	cond    sync.Cond
	queue   []frame
	spare   []frame
	queued  uint64
	written uint64
	err     error
	started bool
	writing bool // a write is in flight (by the writer or an inline Send)
	conn    net.Conn
	bufs    net.Buffers
}

type frame struct {
	hdr     [internode.HeaderSize]byte
	payload []byte
}

// Listen starts listening for cfg and returns the address to publish.
func Listen(cfg internode.Config) (internode.Transport, string, error) {
	ip, err := listenIP(cfg.Iface)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, "", fmt.Errorf("internode/tcp: listening on %s: %v", ip, err)
	}
	h := fnv.New64a()
	h.Write([]byte(cfg.JobID))
	t := &Transport{cfg: cfg, ln: ln, job: h.Sum64(), in: map[net.Conn]bool{}}
	t.out = make([]*peer, cfg.Leaders)
	for i := range t.out {
		p := &peer{t: t, index: i}
		p.cond.L = &p.mu
		t.out[i] = p
	}
	t.wg.Add(1)
	go t.accept()
	return t, ln.Addr().String(), nil
}

// listenIP picks the address to listen on: iface as an IP, or the
// first IPv4 address of the interface so named, or ("") the first
// non-loopback IPv4 address of an interface that is up.
func listenIP(iface string) (string, error) {
	if ip := net.ParseIP(iface); ip != nil {
		return ip.String(), nil
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("internode/tcp: listing interfaces: %v", err)
	}
	for _, i := range ifs {
		if iface != "" && i.Name != iface || iface == "" && (i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0) {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				return n.IP.String(), nil
			}
		}
	}
	if iface != "" {
		return "", fmt.Errorf("internode/tcp: no interface %q with an IPv4 address; set SHMEM_INTERNODE_IFACE to an interface or address of this host", iface)
	}
	return "127.0.0.1", nil // a host without a network: only itself to talk to
}

// Start records every leader's address.
func (t *Transport) Start(addrs []string) error {
	if len(addrs) != t.cfg.Leaders {
		return fmt.Errorf("internode/tcp: %d addresses for %d leaders", len(addrs), t.cfg.Leaders)
	}
	t.mu.Lock()
	t.addrs = append([]string(nil), addrs...)
	t.mu.Unlock()
	return nil
}

func (t *Transport) hello(index int) []byte {
	b := make([]byte, helloSize)
	binary.LittleEndian.PutUint32(b[0:], magic)
	binary.LittleEndian.PutUint32(b[4:], version)
	binary.LittleEndian.PutUint64(b[8:], t.job)
	binary.LittleEndian.PutUint32(b[16:], uint32(index))
	return b
}

// checkHello checks a hello from the leader that should be want (-1:
// any valid index) and returns its index.
func (t *Transport) checkHello(b []byte, want int) (int, error) {
	if binary.LittleEndian.Uint32(b[0:]) != magic {
		return 0, errors.New("not a goshmem leader (bad magic)")
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != version {
		return 0, fmt.Errorf("protocol version %d, this leader speaks %d: run the same goshmem on every host", v, version)
	}
	if binary.LittleEndian.Uint64(b[8:]) != t.job {
		return 0, errors.New("a leader of another job")
	}
	i := int(binary.LittleEndian.Uint32(b[16:]))
	if i >= t.cfg.Leaders || want >= 0 && i != want {
		return 0, fmt.Errorf("claims leader index %d, want %d of %d", i, want, t.cfg.Leaders)
	}
	return i, nil
}

// Send queues a frame for leader to.
func (t *Transport) Send(to int, h *internode.Header, payload []byte) error {
	if to < 0 || to >= len(t.out) {
		panic(fmt.Sprintf("internode/tcp: Send to leader %d of %d", to, len(t.out)))
	}
	if int(h.Len) != len(payload) {
		panic(fmt.Sprintf("internode/tcp: Send: header length %d, payload %d bytes", h.Len, len(payload)))
	}
	p := t.out[to]
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return p.err
	}
	if !p.started {
		// The first frame to this peer: the writer dials it.
		p.started = true
		t.wg.Add(1)
		go p.run()
	}
	var f frame
	h.Encode(f.hdr[:])
	f.payload = payload
	p.queue = append(p.queue, f)
	p.queued++
	if p.conn == nil || p.writing {
		p.cond.Broadcast() // the writer dials, or takes it after the write in flight
		p.mu.Unlock()
		return nil
	}
	// Connected and idle: write from this goroutine, without a hand-off
	// to the writer.
	p.writing = true
	err := p.writeQueued()
	p.writing = false
	if err != nil {
		p.fail(err)
		return fmt.Errorf("internode/tcp: to leader %d: %w", to, err)
	}
	if len(p.queue) > 0 {
		p.cond.Broadcast() // queued during the write: the writer takes it
	}
	p.mu.Unlock()
	return nil
}

// Flush waits until every frame queued for leader to has been written.
func (t *Transport) Flush(to int) error {
	p := t.out[to]
	p.mu.Lock()
	defer p.mu.Unlock()
	target := p.queued
	for p.written < target && p.err == nil {
		p.cond.Wait()
	}
	return p.err
}

// run dials the peer and writes its queue until the transport closes.
// A Send that finds the connection up and idle writes inline instead
// (writeQueued): the writer only takes what is queued while a write is
// in flight.
func (p *peer) run() {
	defer p.t.wg.Done()
	conn, err := p.dial()
	p.mu.Lock()
	p.conn = conn
	for err == nil && p.err == nil {
		for (len(p.queue) == 0 || p.writing) && p.err == nil && !p.t.closed() {
			p.cond.Wait()
		}
		if len(p.queue) == 0 || p.err != nil {
			break
		}
		p.writing = true
		err = p.writeQueued()
		p.writing = false
	}
	p.fail(err)
}

// writeQueued writes every queued frame in one writev. It is called with
// p.mu held and p.writing set by the caller, and returns with p.mu held.
func (p *peer) writeQueued() error {
	batch := p.queue
	p.queue, p.spare = p.spare[:0], nil
	p.mu.Unlock()
	p.bufs = p.bufs[:0]
	for i := range batch {
		p.bufs = append(p.bufs, batch[i].hdr[:])
		if len(batch[i].payload) > 0 {
			p.bufs = append(p.bufs, batch[i].payload)
		}
	}
	bufs := p.bufs // WriteTo consumes its receiver
	_, err := bufs.WriteTo(p.conn)
	if p.t.writes != nil {
		p.t.writes()
	}
	clear(batch)
	p.mu.Lock()
	p.spare = batch[:0]
	if err == nil {
		p.written += uint64(len(batch))
	}
	p.cond.Broadcast()
	return err
}

// fail records err (if any, and the transport is not closing) as the
// peer's failure and tells the Sink. It is called with p.mu held and
// releases it.
func (p *peer) fail(err error) {
	if err == nil || p.err != nil || p.t.closed() {
		p.mu.Unlock()
		return
	}
	p.err = fmt.Errorf("internode/tcp: to leader %d: %w", p.index, err)
	p.cond.Broadcast()
	p.mu.Unlock()
	p.t.cfg.Sink.Failed(p.index, p.err)
}

func (p *peer) dial() (net.Conn, error) {
	t := p.t
	t.mu.Lock()
	addr := ""
	if t.addrs != nil {
		addr = t.addrs[p.index]
	}
	t.mu.Unlock()
	if addr == "" {
		return nil, errors.New("no address (Start was not called)")
	}
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(t.hello(t.cfg.Index)); err != nil {
		conn.Close()
		return nil, err
	}
	ack := make([]byte, helloSize)
	if _, err := io.ReadFull(conn, ack); err != nil {
		conn.Close()
		return nil, fmt.Errorf("no answer to the hello from %s: %w (a mismatch is explained in that leader's error)", addr, err)
	}
	if _, err := t.checkHello(ack, p.index); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// accept serves incoming connections until the listener closes.
func (t *Transport) accept() {
	defer t.wg.Done()
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			return
		}
		t.mu.Lock()
		if t.done {
			t.mu.Unlock()
			conn.Close()
			return
		}
		t.in[conn] = true
		t.wg.Add(1)
		t.mu.Unlock()
		go t.read(conn)
	}
}

// read checks a connection's hello, answers it, and delivers its frames.
func (t *Transport) read(conn net.Conn) {
	defer t.wg.Done()
	defer func() {
		conn.Close()
		t.mu.Lock()
		delete(t.in, conn)
		t.mu.Unlock()
	}()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, helloSize)
	if _, err := io.ReadFull(conn, b); err != nil {
		return
	}
	from, err := t.checkHello(b, -1)
	if err != nil {
		// Not one of ours: nothing to report to the core.
		return
	}
	if _, err := conn.Write(t.hello(t.cfg.Index)); err != nil {
		return
	}
	conn.SetDeadline(time.Time{})
	r := bufio.NewReaderSize(conn, 64<<10)
	var hb [internode.HeaderSize]byte
	var h internode.Header
	for {
		if _, err = io.ReadFull(r, hb[:]); err != nil {
			break
		}
		h.Decode(hb[:])
		var buf []byte
		if h.Len > 0 {
			buf = t.cfg.Sink.Buffer(from, &h)
			if len(buf) != int(h.Len) {
				err = fmt.Errorf("the core gave a %d-byte buffer for a %d-byte payload", len(buf), h.Len)
				break
			}
			if _, err = io.ReadFull(r, buf); err != nil {
				break
			}
		}
		t.cfg.Sink.Deliver(from, &h, buf)
	}
	if !t.closed() {
		if errors.Is(err, io.EOF) {
			err = errors.New("the connection closed")
		}
		t.cfg.Sink.Failed(from, fmt.Errorf("internode/tcp: from leader %d: %w", from, err))
	}
}

func (t *Transport) closed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done
}

// Close ends every connection and waits for the goroutines.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return nil
	}
	t.done = true
	for c := range t.in {
		c.Close()
	}
	t.mu.Unlock()
	t.ln.Close()
	for _, p := range t.out {
		p.mu.Lock()
		if p.conn != nil {
			p.conn.Close()
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	t.wg.Wait()
	return nil
}
