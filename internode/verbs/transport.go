package verbs

// The verbs backend of internode: the leaders exchange frames as RC
// SENDs over one queue pair per pair of leaders.
//
// # Connections
//
// At Open a leader makes one RC queue pair for every other leader,
// posts its receive buffers, puts each queue pair's Endpoint in the
// Exchange (key "iv<peer index>"), fences, gets from every peer the
// endpoint of the queue pair that peer made for it, and connects. A
// queue pair must be connected at both ends before traffic, and the
// Exchange allows one fence, so the set-up is eager: H-1 queue pairs
// and H-1 PMI gets per leader (0.1-0.2 ms each: about 1 s at 5,000
// hosts). At scale, lazy connections need a second channel (a UD
// queue pair, or the TCP backend's listener) to ask a peer to connect:
// docs/design.md.
//
// # Messages and credits
//
// Each queue pair has slots receive buffers of slotSize bytes and as
// many send buffers, in registered memory that Alloc maps (never the
// Go heap). A message starts with an 8-byte prefix: the credits it
// returns (uint32: receive buffers the sender reposted since its last
// message) and its kind. A frame goes as one kFrame message (prefix,
// the 40-byte header, the payload's first bytes) and as many kMore
// messages as the rest of its payload needs; the receiver copies the
// payload into the slice Sink.Buffer gives and calls Deliver when it is
// whole. RC delivers a queue pair's messages in order, and a peer's
// frames are sent one after the other, so there is one frame in
// progress per peer.
//
// A sender may have as many messages unconsumed at the receiver as the
// receiver has buffers (its credits). Every message costs a credit;
// every message also returns the credits its sender owes, so traffic
// both ways returns them for free. A frame needs two credits, a
// control message (credit return, goodbye, abort) one: the last credit
// is kept for returning credits, so that two leaders that have used up
// each other's buffers can always tell each other so. A receiver that
// owes half its buffers and has nothing to send returns them in a
// kCredit message.
//
// Send copies the payload into send buffers while there are credits
// and free buffers, from the caller's goroutine (a ping-pong costs no
// hand-off); what does not fit waits in the peer's queue, and whoever
// reaps the completion that frees a buffer or returns credits posts
// more. Flush waits until the queue is empty: every payload is then
// copied, and the caller may reuse it.
//
// # RDMA WRITE and READ
//
// Expose registers memory (the core's heaps) and announces its address,
// length and rkey to every peer in a kReg message, queued like a frame:
// a peer knows the region before any later frame. Write and Read are
// queue entries too, posted in their turn between the frames, so RC's
// order holds: the responder executes a WRITE before a later SEND, and
// a READ after an earlier WRITE. A WRITE of 256 KiB or more from
// exposed memory posts the caller's bytes (Flush then also waits for
// its completion: the NIC has read them); a smaller one, or one from
// elsewhere, is copied into send buffers, as a frame's payload is. A READ goes straight into exposed memory, or
// into the peer's read buffer, which the caller copies out itself.
// Writes and reads use no credits (no receive buffer at the peer), but
// take send-queue entries: at most slots in flight from the caller's
// memory, besides the send buffers. Work requests on a send queue
// complete in the order posted, so counters of posted and completed
// ones tell a Read or Flush when its own are done.
//
// # Completions
//
// One completion queue serves every queue pair, sends and receives.
// It is reaped by the transport's progress goroutine and by callers of
// Poll (a waiting leader), one at a time under a lock. The progress
// goroutine reaps while work comes; when the queue is empty it arms
// the queue's completion channel and sleeps in the Go runtime's
// network poller (no OS thread held, no CPU used) until a completion
// comes or the next idle probe is due; while a PE polls it keeps out
// of its way (see progress).
//
// # Failures
//
// A send that fails (RC gave up after its retries) reports the peer
// lost. So does a peer that sent nothing for deadAfter (1.5 s): an
// idle link is probed, the progress goroutine looking every idleProbe
// (0.5 s) and sending a credit message to every peer it sent nothing
// to since its last look, so a live peer is never silent that long,
// and a dead one (its process or host gone, its queue pairs with it)
// is noticed within about 2 s (deadAfter/idleProbe looks in a row that
// find nothing received), whether or not anything is sent to it. The
// looks compare message counts: no clock is read per message. (RC's
// own retries cannot be relied on for that: soft-RoCE never completes
// a send to a destroyed queue pair, and an idle link sends nothing.)
//
// Close sends goodbye after what is queued (a clean end is not a
// failure for the peer) and waits, at most 2 s, for its goodbye to be
// acknowledged and for the peer's: a peer destroys its queue pair only
// after both, so nothing either sent is lost. Abort sends an abort with
// the reason, which the peer's Sink.Failed gets, and waits only 0.2 s.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internode"
)

// Name is this backend's name in SHMEM_INTERNODE.
const Name = "verbs"

// Backend returns this backend for internode.Open.
func Backend() internode.Backend { return internode.Backend{Name: Name, Open: OpenTransport} }

const (
	slotSize    = 64 << 10 // bytes of one message buffer
	slots       = 16       // receive buffers per queue pair (the peer's credits), and send buffers
	prefixSize  = 8        // credits returned (4), kind (1), zero (3)
	firstChunk  = slotSize - prefixSize - internode.HeaderSize
	moreChunk   = slotSize - prefixSize
	pollGrace   = time.Millisecond       // the progress goroutine keeps out of the way of a PE that polled this recently
	cqEvery     = 8                      // a Poll that sees no message (arrived) reads the completion queue only every cqEvery-th time (send and RDMA completions)
	markPeers   = 32                     // with more peers, arrived's load per peer costs more than a read of the queue: Poll always reads it
	idleProbe   = 500 * time.Millisecond // an idle link is probed this often
	deadAfter   = 3 * idleProbe          // a peer silent this long is lost
	closeWait   = 2 * time.Second        // Close's bound on writing what is queued
	abortWait   = 200 * time.Millisecond
	recvBit     = 1
	statusFlush = 5     // IBV_WC_WR_FLUSH_ERR: a work request flushed after its queue pair failed
	noSlot      = slots // the slot of a work request that uses no send buffer (a write or read of the caller's memory)
	sqDepth     = 2 * slots
	maxWR       = 1 << 30 // bytes of one RDMA WRITE or READ of the caller's memory
	regSize     = 24      // a kReg body: id (4), rkey (4), address (8), length (8)
	rdSize      = 1 << 20 // bytes of a peer's read buffer (rdBuf)
	deferMax    = 1 << 10 // the largest payload Defer holds back (internode.ArenaBytes per peer)
	// zeroCopyMin is the smallest write that goes from the caller's
	// exposed memory without a copy: the caller's Flush then waits for
	// the peer's acknowledgment, a round trip a copy into send buffers
	// does not wait for. Measured in the guest, 2-4 MiB puts moved
	// 0.90-0.91 of ib_write_bw without the copy and 0.69-0.73 with it;
	// an 8-32 KiB put ping-pong took longer without (docs/performance.md).
	zeroCopyMin = 256 << 10
)

// Message kinds.
const (
	kFrame  = 1 + iota // a frame's header and its payload's first bytes
	kMore              // more of the frame in progress's payload
	kCredit            // credits only (also the idle probe)
	kBye               // Close: the end is clean
	kAbort             // Abort: the reason follows
	kReg               // Expose: a region the peer may write and read (regSize bytes)
	kFrames            // several whole frames, each a header and its payload

	// Queue entries that are not messages: an RDMA WRITE or READ.
	qWrite
	qRead
)

// Transport is the verbs transport of one leader.
type Transport struct {
	cfg   internode.Config
	dev   *Device
	cq    *CQ
	peers []*peer // nil for this leader

	rx      sync.Mutex // one reaper of cq at a time
	wc      [16]Completion
	closing atomic.Bool // set under rx: no more Sink calls
	ended   sync.Once
	done    chan struct{}
	// polling: a PE polls (Poll was called, and neither PollIdle nor a
	// look of the progress goroutine that found no poll since the one
	// before came after it). Counters and flags, not clock reads, on
	// the paths of every poll and message: a clock read is a system
	// call where the clock source is not the TSC (the soft-RoCE
	// guest's HPET).
	polling atomic.Bool
	idle    chan struct{} // PollIdle's wake-up of the progress goroutine
	quit    chan struct{} // closed by Close and Abort
	stats   stats

	// Exposed memory (Expose): this leader's regions, read without a
	// lock by senders looking for a source that needs no copy.
	regMu sync.Mutex
	local atomic.Pointer[[]localReg]

	anyHeld atomic.Bool // a peer may hold frames back (Defer)
	// wakeReq: Defer asks the progress goroutine, which may be asleep
	// on the CQ until the next idle probe, to come back within a look.
	// onCQ: the progress goroutine is in (or about to enter) its Wait.
	wakeReq, onCQ atomic.Bool
}

// localReg is a region this leader exposed.
type localReg struct {
	id uint32
	mr *MR
}

// region is a region a peer exposed.
type region struct {
	addr, len uint64
	rkey      uint32
}

// stats counts what the transport did, printed at Close when SHMEM_INFO
// is on (where the time goes: who reaped, how often the progress
// goroutine woke).
type stats struct {
	polls, pollFrames, pollBusy       atomic.Uint64
	wakes, deadlines, progFrames, arm atomic.Uint64
	looks                             atomic.Uint64
	sends, writes, reads, zeroCopy    atomic.Uint64
}

type peer struct {
	t   *Transport
	idx int
	qp  *RC
	smr *MR // slots send buffers
	rmr *MR // slots receive buffers

	mu      sync.Mutex
	cond    sync.Cond // queue drained, queue space, or lost
	q       []qframe
	head    int
	sent    int // payload bytes of q[head] already posted
	started bool
	queued  int // header and payload bytes in q
	avail   int // credits: messages the peer can still take
	owed    int // receive buffers reposted, credits not yet returned
	free    []int
	posted  int   // sends posted, not completed
	err     error // the peer is lost (or this transport ended)
	// rxMark[s] is the word at bytes 4-7 of receive buffer s: a
	// message's kind (never 0) and three zero bytes, cleared before the
	// buffer is posted again. RC fills a queue pair's receive buffers
	// in the order they were posted, which is the ring order (complete
	// reposts each in the order they are filled), so the peer's next
	// message lands in buffer nextRx: a load tells a poll whether a
	// message came, without a call into the provider (Poll).
	rxMark []*atomic.Uint32
	nextRx atomic.Uint32
	// sendN counts the messages posted to the peer, rxN those received
	// from it; probe compares them with what it saw at its last look
	// (probeSent, rxSeen; rxQuiet counts its looks since rxN last
	// moved, rxAt is when it saw that).
	sendN     uint64
	rxN       atomic.Uint64
	probeSent uint64
	rxSeen    uint64
	rxQuiet   int
	rxAt      time.Time
	bye       bool // the peer said goodbye
	failed    bool // Sink.Failed was called

	// RDMA WRITE and READ. Work requests on a queue pair's send queue
	// complete in the order posted, so counting them tells a caller
	// when its own have completed.
	regs     map[uint32]region // the regions the peer exposed
	wrPosted uint64            // send-queue work requests posted
	wrDone   uint64            // and completed
	zcLast   uint64            // wrPosted of the last write from the caller's memory (Flush waits for it)
	enq, deq uint64            // queue entries appended, and fully posted

	// Defer: while holding, every entry of q is a frame held back
	// (its payload copied into arena), and nothing is posted until the
	// next frame, write or read for this peer, or Kick.
	holding bool
	arena   internode.Arena

	// rdMu serializes the reads into rdBuf (mapped at the first read
	// into memory that is not exposed), which their callers copy out.
	rdMu  sync.Mutex
	rdBuf *MR

	// Receiving (under t.rx).
	rxh   internode.Header
	rxbuf []byte
	rxgot int
}

type qframe struct {
	kind    uint8
	h       internode.Header
	payload []byte // a frame's payload; a write's source; a read's destination
	// A write or read: the peer's address and key, and the registration
	// that holds payload when it needs no send buffer (nil: copied
	// through send buffers).
	raddr uint64
	rkey  uint32
	mr    *MR
}

// OpenTransport opens the device that SHMEM_VERBS_DEVICE, _PORT and
// _GID_INDEX choose, makes a queue pair for every other leader and
// connects them through cfg.Exchange (see the file's comment).
func OpenTransport(cfg internode.Config) (internode.Transport, error) {
	vc, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	dev, err := Open(vc)
	if err != nil {
		return nil, err
	}
	t := &Transport{cfg: cfg, dev: dev, peers: make([]*peer, cfg.Leaders), done: make(chan struct{}),
		idle: make(chan struct{}, 1), quit: make(chan struct{})}
	if err := t.setup(); err != nil {
		t.destroy()
		return nil, err
	}
	go t.progress()
	return t, nil
}

// setup makes the queue pairs and buffers, publishes the endpoints,
// fences and connects.
func (t *Transport) setup() error {
	cq, err := t.dev.NewNotifyCQ(max((sqDepth+slots)*(t.cfg.Leaders-1), 16))
	if err != nil {
		return err
	}
	t.cq = cq
	for i := range t.peers {
		if i == t.cfg.Index {
			continue
		}
		p := &peer{t: t, idx: i, avail: slots, free: make([]int, 0, slots), q: make([]qframe, 0, 16)}
		p.cond.L = &p.mu
		t.peers[i] = p
		if p.qp, err = t.dev.NewRC(cq, cq, sqDepth+1); err != nil {
			return err
		}
		if p.smr, err = t.dev.Alloc(slots*slotSize, LocalWrite); err != nil {
			return err
		}
		if p.rmr, err = t.dev.Alloc(slots*slotSize, LocalWrite); err != nil {
			return err
		}
		base := mem.RegionOf(p.rmr.Bytes()).Base
		for s := range slots {
			p.free = append(p.free, s)
			p.rxMark = append(p.rxMark, mem.At[atomic.Uint32](base, uintptr(s*slotSize+4)))
			if err := p.qp.PostRecv(p.id(s, true), p.rmr, p.slot(p.rmr, s)); err != nil {
				return err
			}
		}
		if err := t.cfg.Exchange.Put(key(i), []byte(p.qp.Endpoint().String())); err != nil {
			return fmt.Errorf("verbs: publishing the endpoint for leader %d: %w", i, err)
		}
	}
	if err := t.cfg.Exchange.Fence(); err != nil {
		return fmt.Errorf("verbs: PMI fence after the endpoints: %w", err)
	}
	for i, p := range t.peers {
		if p == nil {
			continue
		}
		v, err := t.cfg.Exchange.Get(t.cfg.Rank(i), key(t.cfg.Index))
		if err != nil {
			return fmt.Errorf("verbs: leader %d's endpoint: %w", i, err)
		}
		e, err := ParseEndpoint(string(v))
		if err != nil {
			return fmt.Errorf("verbs: leader %d's endpoint: %w", i, err)
		}
		if err := p.qp.Connect(e); err != nil {
			return fmt.Errorf("verbs: connecting to leader %d (%v): %w", i, e, err)
		}
		p.rxAt = time.Now()
	}
	return nil
}

// String describes the transport for SHMEM_INFO: the device and port,
// the queue pairs and buffers, and where remote AMOs run.
func (t *Transport) String() string {
	link := "InfiniBand"
	if t.dev.LinkETH {
		link = fmt.Sprintf("RoCE, GID index %d", t.dev.GIDIndex)
	}
	return fmt.Sprintf("verbs on %s port %d (%s): one RC queue pair per other leader (%d), frames as SENDs through %d x %d KiB buffers each way, RDMA WRITE and READ into the heaps the leaders expose; remote AMOs run on the target host's CPU (its leader applies them), never as NIC atomics",
		t.dev.Name, t.dev.Port, link, t.cfg.Leaders-1, slots, slotSize>>10)
}

// key is the Exchange key of a leader's endpoint for leader i.
func key(i int) string { return "iv" + strconv.Itoa(i) }

func (p *peer) id(slot int, recv bool) uint64 {
	id := uint64(p.idx)<<32 | uint64(slot)<<1
	if recv {
		id |= recvBit
	}
	return id
}

func (p *peer) slot(m *MR, s int) []byte { return m.Bytes()[s*slotSize : (s+1)*slotSize] }

// Send queues a frame for leader to; see internode.Transport.
func (t *Transport) Send(to int, h *internode.Header, payload []byte) error {
	return t.send(to, kFrame, h, payload, true)
}

// Reply is Send that never waits for queue space.
func (t *Transport) Reply(to int, h *internode.Header, payload []byte) error {
	return t.send(to, kFrame, h, payload, false)
}

// SendBatch is Send for each frame, in order.
func (t *Transport) SendBatch(to int, frames []internode.Frame) error {
	for i := range frames {
		if err := t.send(to, kFrame, &frames[i].Header, frames[i].Payload, true); err != nil {
			return err
		}
	}
	return nil
}

func (t *Transport) peer(routine string, to int) *peer {
	if to < 0 || to >= len(t.peers) || t.peers[to] == nil {
		panic(fmt.Sprintf("verbs.%s: leader %d, want 0 <= leader < %d and not this leader (%d)", routine, to, len(t.peers), t.cfg.Index))
	}
	return t.peers[to]
}

func (t *Transport) send(to int, kind uint8, h *internode.Header, payload []byte, wait bool) error {
	p := t.peer("Send", to)
	if kind == kFrame && int(h.Len) != len(payload) {
		panic(fmt.Sprintf("verbs.Send: header Len %d for a payload of %d bytes", h.Len, len(payload)))
	}
	size := internode.HeaderSize + len(payload)
	p.mu.Lock()
	if wait {
		t.await(p, func() bool { return p.queued == 0 || p.queued+size <= t.cfg.QueueBytes })
	}
	if p.err != nil {
		err := p.err
		p.mu.Unlock()
		return err
	}
	f := qframe{kind: kind, payload: payload}
	if h != nil {
		f.h = *h
	}
	p.enqueue(f, false) // what was held back goes with this frame
	p.pump()
	p.mu.Unlock()
	return nil
}

// Defer holds a frame with a payload of up to 1 KiB back (a copy of
// it), to be posted in one message with the next frame, write or read
// for leader to, or by Kick (internode.Deferrer). It refuses unless a
// PE polls (then the progress goroutine posts what is held every
// pollGrace at the latest), while something else is queued for to, or
// when its 16 KiB of held payloads are full.
func (t *Transport) Defer(to int, h *internode.Header, payload []byte) bool {
	if len(payload) > deferMax || !t.polling.Load() {
		return false
	}
	p := t.peer("Defer", to)
	if int(h.Len) != len(payload) {
		panic(fmt.Sprintf("verbs.Defer: header Len %d for a payload of %d bytes", h.Len, len(payload)))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil || !p.holding && p.head < len(p.q) {
		return false
	}
	if !p.holding {
		p.arena.Reset() // nothing held is still queued
	}
	b, ok := p.arena.Hold(payload)
	if !ok {
		return false
	}
	p.enqueue(qframe{kind: kFrame, h: *h, payload: b}, true)
	if !t.anyHeld.Load() {
		t.anyHeld.Store(true)
		// The progress goroutine may have gone to sleep on the CQ
		// before this PE polled: it must look again within the bound.
		// Wake (a deadline set, a clock read) only if it sleeps there:
		// if it sleeps after the load, its Wait's skip sees wakeReq.
		t.wakeReq.Store(true)
		if t.onCQ.Load() {
			t.cq.Wake()
		}
	}
	return true
}

// Kick posts every frame held back (internode.Deferrer).
func (t *Transport) Kick() {
	if !t.anyHeld.Load() || !t.anyHeld.Swap(false) {
		return
	}
	for _, p := range t.peers {
		if p != nil {
			p.mu.Lock()
			if p.holding {
				p.holding = false
				p.pump()
			}
			p.mu.Unlock()
		}
	}
}

// enqueue appends f to the queue (counted in queued as a header and its
// payload, whatever its kind) and sets whether the queue is held back
// (Defer) or not (everything else releases what was held). p.mu held.
func (p *peer) enqueue(f qframe, hold bool) {
	p.q = append(p.q, f)
	p.queued += internode.HeaderSize + len(f.payload)
	p.enq++
	p.holding = hold
}

// pump posts queued messages, writes and reads while credits, send
// buffers and send-queue room allow, and returns owed credits when half
// the buffers are owed. p.mu held.
func (p *peer) pump() {
	moved := false
loop:
	for p.head < len(p.q) && p.err == nil && !p.holding {
		f := &p.q[p.head]
		done := true
		switch f.kind {
		case qWrite, qRead:
			if f.mr == nil && len(p.free) == 0 || f.mr != nil && p.posted >= slots {
				break loop
			}
			var ok bool
			if ok, done = p.postRDMA(f); !ok {
				return
			}
		default:
			if len(p.free) == 0 || p.avail < 1+b2n(f.kind == kFrame) {
				break loop
			}
			s, b := p.take()
			n := prefixSize
			switch {
			case f.kind != kFrame:
				b[4] = f.kind
				n += copy(b[n:], f.payload)
			case !p.started && p.whole(f, n) && p.head+1 < len(p.q) && p.whole(&p.q[p.head+1], n+internode.HeaderSize+len(f.payload)):
				// Whole frames that fit one buffer go together; the
				// last packed is retired below.
				b[4] = kFrames
				for {
					f = &p.q[p.head]
					f.h.Encode(b[n:])
					n += internode.HeaderSize
					n += copy(b[n:], f.payload)
					if p.head+1 == len(p.q) || !p.whole(&p.q[p.head+1], n) {
						break
					}
					p.queued -= internode.HeaderSize + len(f.payload)
					p.q[p.head] = qframe{}
					p.head++
					p.deq++
				}
			case !p.started:
				b[4] = kFrame
				f.h.Encode(b[n:])
				n += internode.HeaderSize
				c := copy(b[n:], f.payload)
				n += c
				p.sent, p.started = c, true
				done = p.sent == len(f.payload)
			default:
				b[4] = kMore
				c := copy(b[n:], f.payload[p.sent:])
				n += c
				p.sent += c
				done = p.sent == len(f.payload)
			}
			if !p.post(s, b, n) {
				return
			}
		}
		if done {
			p.queued -= internode.HeaderSize + len(f.payload)
			p.q[p.head] = qframe{}
			p.head++
			p.deq++
			p.sent, p.started = 0, false
			moved = true
		}
	}
	if p.head == len(p.q) && p.head > 0 {
		p.q, p.head = p.q[:0], 0
	}
	if moved {
		p.cond.Broadcast()
	}
	if p.owed >= slots/2 && p.avail >= 1 && len(p.free) > 0 && p.err == nil {
		p.control(kCredit)
	}
}

// whole reports whether queue entry f is a frame that fits whole after
// n bytes of a message buffer.
func (p *peer) whole(f *qframe, n int) bool {
	return f.kind == kFrame && n+internode.HeaderSize+len(f.payload) <= slotSize
}

// postRDMA posts the next piece of the write or read f: all of it (up
// to maxWR) from or into f.mr when f.mr holds it, else (a write) a
// send buffer's worth copied into a send buffer. A read always has
// f.mr (see Read). It reports whether it posted, and whether f is
// done. p.mu held; a send buffer is free when f.mr is nil.
func (p *peer) postRDMA(f *qframe) (ok, done bool) {
	rest := f.payload[p.sent:]
	raddr := f.raddr + uint64(p.sent)
	s, m := noSlot, f.mr
	var local []byte
	if m != nil {
		local = rest[:min(len(rest), maxWR)]
	} else {
		s = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		local, m = p.slot(p.smr, s)[:min(len(rest), slotSize)], p.smr
		copy(local, rest)
	}
	var err error
	if f.kind == qWrite {
		err = p.qp.PostWrite(p.id(s, false), m, local, raddr, f.rkey)
		p.t.stats.writes.Add(1)
	} else {
		err = p.qp.PostRead(p.id(s, false), m, local, raddr, f.rkey)
		p.t.stats.reads.Add(1)
	}
	if err != nil {
		if s != noSlot {
			p.free = append(p.free, s)
		}
		what := "READ from"
		if f.kind == qWrite {
			what = "WRITE to"
		}
		p.lostLocked(fmt.Errorf("verbs: RDMA %s leader %d: %w", what, p.idx, err))
		return false, false
	}
	p.posted++
	p.wrPosted++
	if f.mr != nil {
		p.zcLast = p.wrPosted
	}
	p.sent += len(local)
	return true, p.sent == len(f.payload)
}

// control posts a message of kind with no body. p.mu held, p.avail >= 1,
// len(p.free) > 0.
func (p *peer) control(kind uint8) {
	s, b := p.take()
	b[4] = kind
	p.post(s, b, prefixSize)
}

// take returns a free send buffer and its index, the prefix cleared.
// p.mu held, len(p.free) > 0.
func (p *peer) take() (int, []byte) {
	s := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	b := p.slot(p.smr, s)
	clear(b[:prefixSize])
	return s, b
}

// post sends the first n bytes of send buffer s (b), returning the
// credits owed in its prefix. p.mu held.
func (p *peer) post(s int, b []byte, n int) bool {
	binary.LittleEndian.PutUint32(b, uint32(p.owed))
	if err := p.qp.PostSend(p.id(s, false), p.smr, b[:n]); err != nil {
		p.free = append(p.free, s)
		p.lostLocked(fmt.Errorf("verbs: sending to leader %d: %w", p.idx, err))
		return false
	}
	p.owed = 0
	p.avail--
	p.posted++
	p.wrPosted++
	p.t.stats.sends.Add(1)
	p.sendN++
	return true
}

func b2n(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Flush waits until every frame queued for leader to is copied into
// send buffers and posted: their payloads may be reused.
func (t *Transport) Flush(to int) error {
	p := t.peer("Flush", to)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holding { // what is held back is queued too
		p.holding = false
		p.pump()
	}
	t.await(p, func() bool { return p.head == len(p.q) })
	if p.head < len(p.q) {
		return p.err
	}
	if z := p.zcLast; p.wrDone < z { // writes from the caller's memory: wait until the NIC has read it
		t.await(p, func() bool { return p.wrDone >= z })
		if p.wrDone < z {
			return p.err
		}
	}
	return nil
}

// Expose registers b as region id and announces it to every peer
// (internode.RemoteMemory). An id may be exposed once.
func (t *Transport) Expose(id uint32, b []byte) error {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	var old []localReg
	if l := t.local.Load(); l != nil {
		old = *l
	}
	for _, r := range old {
		if r.id == id {
			return fmt.Errorf("verbs.Expose: region %d is already exposed", id)
		}
	}
	m, err := t.dev.Register(b, LocalWrite|RemoteWrite|RemoteRead)
	if err != nil {
		return err
	}
	next := append(old[:len(old):len(old)], localReg{id: id, mr: m})
	t.local.Store(&next)
	body := make([]byte, regSize)
	binary.LittleEndian.PutUint32(body[0:], id)
	binary.LittleEndian.PutUint32(body[4:], m.RKey)
	binary.LittleEndian.PutUint64(body[8:], uint64(m.Addr))
	binary.LittleEndian.PutUint64(body[16:], uint64(m.Len))
	for _, p := range t.peers {
		if p != nil {
			t.send(p.idx, kReg, nil, body, false) // an error: the peer is lost, and told
		}
	}
	return nil
}

// localMR returns the registration of an exposed region that holds b,
// or nil.
func (t *Transport) localMR(b []byte) *MR {
	if l := t.local.Load(); l != nil {
		for _, r := range *l {
			if r.mr.Contains(b) {
				return r.mr
			}
		}
	}
	return nil
}

// lookup returns peer to and the address and key of [off, off+n) of its
// region id, with p.mu held; ok is false (p.mu not held) when the peer
// has not exposed that much.
func (t *Transport) lookup(routine string, to int, id uint32, off uint64, n int) (p *peer, addr uint64, rkey uint32, ok bool) {
	p = t.peer(routine, to)
	p.mu.Lock()
	r, ok := p.regs[id]
	if !ok || off > r.len || uint64(n) > r.len-off {
		p.mu.Unlock()
		return p, 0, 0, false
	}
	return p, r.addr + off, r.rkey, true
}

// Write queues an RDMA WRITE of data at off of leader to's region id,
// ordered with the frames queued for it (internode.RemoteMemory).
func (t *Transport) Write(to int, id uint32, off uint64, data []byte) (bool, error) {
	p, addr, rkey, ok := t.lookup("Write", to, id, off, len(data))
	if !ok {
		return false, nil
	}
	size := internode.HeaderSize + len(data)
	t.await(p, func() bool { return p.queued == 0 || p.queued+size <= t.cfg.QueueBytes })
	err := p.err
	if err == nil && len(data) > 0 {
		var m *MR
		if len(data) >= zeroCopyMin {
			if m = t.localMR(data); m != nil {
				t.stats.zeroCopy.Add(1)
			}
		}
		p.enqueue(qframe{kind: qWrite, payload: data, raddr: addr, rkey: rkey, mr: m}, false)
		p.pump()
	}
	p.mu.Unlock()
	return true, err
}

// Read reads len(dst) bytes at off of leader to's region id into dst,
// after what is queued for it, and returns when dst is filled
// (internode.RemoteMemory). Into exposed memory it reads directly;
// elsewhere through the peer's read buffer, which this goroutine
// copies out: no other goroutine ever holds dst (it may be on the
// caller's stack, which moves).
func (t *Transport) Read(to int, id uint32, off uint64, dst []byte) (bool, error) {
	p, addr, rkey, ok := t.lookup("Read", to, id, off, len(dst))
	if !ok {
		return false, nil
	}
	if p.err != nil || len(dst) == 0 {
		err := p.err
		p.mu.Unlock()
		return true, err
	}
	if m := t.localMR(dst); m != nil {
		t.stats.zeroCopy.Add(1)
		err := t.read(p, dst, addr, rkey, m)
		p.mu.Unlock()
		return true, err
	}
	p.mu.Unlock()
	p.rdMu.Lock()
	defer p.rdMu.Unlock()
	if p.rdBuf == nil {
		b, err := t.dev.Alloc(rdSize, LocalWrite)
		if err != nil {
			return true, err
		}
		p.rdBuf = b
	}
	for len(dst) > 0 {
		b := p.rdBuf.Bytes()[:min(len(dst), rdSize)]
		p.mu.Lock()
		err := t.read(p, b, addr, rkey, p.rdBuf)
		p.mu.Unlock()
		if err != nil {
			return true, err
		}
		n := copy(dst, b)
		dst, addr = dst[n:], addr+uint64(n)
	}
	return true, nil
}

// read queues a read of len(b) bytes at raddr into b (inside m) and
// waits until it is done. p.mu held.
func (t *Transport) read(p *peer, b []byte, raddr uint64, rkey uint32, m *MR) error {
	p.enqueue(qframe{kind: qRead, payload: b, raddr: raddr, rkey: rkey, mr: m}, false)
	mine := p.enq
	p.pump()
	t.await(p, func() bool { return p.deq >= mine })
	if p.deq < mine {
		return p.err
	}
	z := p.wrPosted // every piece of the read is posted: when the send queue's count reaches this, they are done
	t.await(p, func() bool { return p.wrDone >= z })
	if p.wrDone < z {
		return p.err
	}
	return nil
}

// awaitPolls is how many times await reaps the completion queue itself
// before it sleeps.
const awaitPolls = 1000

// await waits until done (called with p.mu held) or p is lost. It
// reaps the completion queue itself first (Poll, then a yield when
// nothing came): the completions that free send buffers and bring
// credits are what it waits for, and the progress goroutine keeps out
// of the way of a PE that polls (see progress), so a Flush that only
// slept would wait for the goroutine's next look each time it runs out
// of credits (measured in the guest: 1 MiB puts at 20 MB/s). After
// awaitPolls rounds it hands reaping back (PollIdle) and sleeps until
// a completion's pump wakes it. p.mu is held on entry and on return.
func (t *Transport) await(p *peer, done func() bool) {
	for n := 0; p.err == nil && !done(); n++ {
		if n < awaitPolls {
			p.mu.Unlock()
			if !t.poll(true) {
				runtime.Gosched()
			}
			p.mu.Lock()
			continue
		}
		if n == awaitPolls {
			t.PollIdle()
		}
		p.cond.Wait()
	}
}

// Poll reaps the completion queue from the caller's goroutine (a
// waiting leader) and reports whether it delivered a frame; it never
// blocks (internode.Poller). While no message has come (arrived) it
// reads the queue only at every cqEvery-th call: an empty queue costs
// a call into the provider, a look at the next receive buffers a load
// per peer (so with more than markPeers peers it always reads it).
func (t *Transport) Poll() bool { return t.poll(false) }

// poll is Poll; always reads the completion queue, as await's polls do
// (they wait for send completions and credits, not for messages).
func (t *Transport) poll(always bool) bool {
	n := t.stats.polls.Add(1)
	if !t.polling.Load() {
		t.polling.Store(true)
	}
	if !always && len(t.peers) <= markPeers && n%cqEvery != 0 && !t.arrived() {
		return false // no message came: the completion queue waits
	}
	if !t.rx.TryLock() {
		t.stats.pollBusy.Add(1)
		return false
	}
	_, frames := t.reapOnce()
	t.rx.Unlock()
	t.stats.pollFrames.Add(uint64(frames))
	return frames > 0
}

// arrived reports whether a message from a peer is in the receive
// buffer it lands in (rxMark): loads, where reading the completion
// queue is a call into the provider (through cgo). A message is seen
// as soon as the NIC has written it; its completion may come a little
// later, and the polls that follow read the queue until it is reaped.
func (t *Transport) arrived() bool {
	for _, p := range t.peers {
		if p != nil && p.rxMark[p.nextRx.Load()].Load() != 0 {
			return true
		}
	}
	return false
}

// PollIdle tells that the caller stops polling: the progress goroutine
// takes over at once (see progress).
func (t *Transport) PollIdle() {
	if t.polling.Load() {
		t.polling.Store(false)
		select {
		case t.idle <- struct{}{}:
		default:
		}
	}
}

// reap processes completions until the queue is empty: how many, and
// how many frames were delivered. t.rx held.
func (t *Transport) reap() (n, frames int) {
	for !t.closing.Load() {
		k, f := t.reapOnce()
		if k == 0 {
			return n, frames
		}
		n, frames = n+k, frames+f
	}
	return n, frames
}

// reapOnce reads the completion queue once (up to len(t.wc) entries)
// and handles what it found. A polling PE calls it rather than reap:
// a frame it delivers may be what the PE waits for, and one more read
// of an empty queue (a cgo call) would only delay its seeing that; what
// is left is read at its next poll, or by the progress goroutine.
// t.rx held.
func (t *Transport) reapOnce() (n, frames int) {
	if t.closing.Load() {
		return 0, 0
	}
	k, err := t.cq.Poll(t.wc[:])
	if err != nil {
		t.lostAll(err)
		return 0, 0
	}
	for i := range k {
		frames += t.complete(&t.wc[i])
	}
	return k, frames
}

// complete handles one completion; it returns 1 when a frame was
// delivered. t.rx held.
func (t *Transport) complete(c *Completion) int {
	idx, s, recv := int(c.ID>>32), int(c.ID>>1)&(1<<31-1), c.ID&recvBit != 0
	if idx >= len(t.peers) || t.peers[idx] == nil || s > noSlot || s == noSlot && recv {
		t.lostAll(fmt.Errorf("verbs: a completion with a foreign id %#x", c.ID))
		return 0
	}
	p := t.peers[idx]
	if c.Status != 0 {
		if c.Status != statusFlush || !p.isLost() {
			what := "send to"
			if recv {
				what = "receive from"
			}
			t.lost(p, fmt.Errorf("verbs: %s leader %d failed: %s (status %d): its process or host is gone, or the link broke", what, idx, c.Err, c.Status))
		}
		return 0
	}
	if !recv {
		p.mu.Lock()
		if s != noSlot {
			p.free = append(p.free, s)
		}
		p.posted--
		p.wrDone++
		p.pump()
		if s == noSlot { // a Flush or a Read may wait for this one
			p.cond.Broadcast()
		}
		p.mu.Unlock()
		return 0
	}
	msg := p.slot(p.rmr, s)[:c.Bytes]
	p.rxN.Add(1)
	delivered, err := t.receive(p, msg)
	if err != nil {
		t.lost(p, err)
		return delivered
	}
	p.rxMark[s].Store(0)
	p.nextRx.Store(uint32((s + 1) % slots))
	if err := p.qp.PostRecv(p.id(s, true), p.rmr, p.slot(p.rmr, s)); err != nil {
		t.lost(p, fmt.Errorf("verbs: reposting a receive buffer for leader %d: %w", idx, err))
		return delivered
	}
	p.mu.Lock()
	p.avail += int(binary.LittleEndian.Uint32(msg))
	p.owed++
	p.pump()
	p.mu.Unlock()
	return delivered
}

// receive handles one message from p. t.rx held.
func (t *Transport) receive(p *peer, msg []byte) (int, error) {
	if len(msg) < prefixSize {
		return 0, fmt.Errorf("verbs: a %d-byte message from leader %d", len(msg), p.idx)
	}
	kind, body := msg[4], msg[prefixSize:]
	if p.rxbuf != nil && kind != kMore && kind != kCredit { // credits may come between a frame's messages
		return 0, fmt.Errorf("verbs: leader %d sent a message of kind %d inside a frame's payload (%d of %d bytes)", p.idx, kind, p.rxgot, p.rxh.Len)
	}
	sink := t.cfg.Sink
	switch kind {
	case kFrame:
		if len(body) < internode.HeaderSize {
			return 0, fmt.Errorf("verbs: a frame of %d bytes from leader %d", len(body), p.idx)
		}
		p.rxh.Decode(body)
		body = body[internode.HeaderSize:]
		if len(body) > int(p.rxh.Len) {
			return 0, fmt.Errorf("verbs: leader %d sent %d payload bytes for a frame of %d", p.idx, len(body), p.rxh.Len)
		}
		if p.rxh.Len == 0 {
			sink.Deliver(p.idx, &p.rxh, nil)
			return 1, nil
		}
		buf := sink.Buffer(p.idx, &p.rxh)
		if len(buf) != int(p.rxh.Len) {
			return 0, fmt.Errorf("verbs: the sink gave %d bytes for a frame of %d from leader %d", len(buf), p.rxh.Len, p.idx)
		}
		p.rxbuf, p.rxgot = buf, copy(buf, body)
	case kMore:
		if p.rxbuf == nil || len(body) > len(p.rxbuf)-p.rxgot {
			return 0, fmt.Errorf("verbs: leader %d sent %d payload bytes outside a frame", p.idx, len(body))
		}
		p.rxgot += copy(p.rxbuf[p.rxgot:], body)
	case kCredit:
		return 0, nil
	case kFrames:
		delivered := 0
		for len(body) > 0 {
			if len(body) < internode.HeaderSize {
				return delivered, fmt.Errorf("verbs: %d bytes after the frames of a message from leader %d", len(body), p.idx)
			}
			p.rxh.Decode(body)
			body = body[internode.HeaderSize:]
			if int(p.rxh.Len) > len(body) {
				return delivered, fmt.Errorf("verbs: leader %d packed a frame of %d bytes into a message with %d left", p.idx, p.rxh.Len, len(body))
			}
			var buf []byte
			if p.rxh.Len > 0 {
				if buf = sink.Buffer(p.idx, &p.rxh); len(buf) != int(p.rxh.Len) {
					return delivered, fmt.Errorf("verbs: the sink gave %d bytes for a frame of %d from leader %d", len(buf), p.rxh.Len, p.idx)
				}
				copy(buf, body)
				body = body[p.rxh.Len:]
			}
			sink.Deliver(p.idx, &p.rxh, buf)
			delivered++
		}
		return delivered, nil
	case kReg:
		if len(body) < regSize {
			return 0, fmt.Errorf("verbs: a %d-byte region announcement from leader %d", len(body), p.idx)
		}
		r := region{addr: binary.LittleEndian.Uint64(body[8:]), len: binary.LittleEndian.Uint64(body[16:]), rkey: binary.LittleEndian.Uint32(body[4:])}
		p.mu.Lock()
		if p.regs == nil {
			p.regs = make(map[uint32]region)
		}
		p.regs[binary.LittleEndian.Uint32(body)] = r
		p.mu.Unlock()
		return 0, nil
	case kBye:
		p.mu.Lock()
		p.bye = true
		p.mu.Unlock()
		return 0, nil
	case kAbort:
		return 0, fmt.Errorf("verbs: leader %d aborted the job: %s", p.idx, body)
	default:
		return 0, fmt.Errorf("verbs: a message of unknown kind %d from leader %d", kind, p.idx)
	}
	if p.rxgot < len(p.rxbuf) {
		return 0, nil
	}
	buf := p.rxbuf
	p.rxbuf, p.rxgot = nil, 0
	sink.Deliver(p.idx, &p.rxh, buf)
	return 1, nil
}

func (p *peer) isLost() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil
}

// lost marks p lost and tells the Sink once, unless p said goodbye or
// this transport is ending.
func (t *Transport) lost(p *peer, err error) {
	p.mu.Lock()
	p.lostLocked(err)
	tell := !p.bye && !p.failed && !t.closing.Load()
	p.failed = p.failed || tell
	p.mu.Unlock()
	if tell {
		t.cfg.Sink.Failed(p.idx, err)
	}
}

func (p *peer) lostLocked(err error) {
	if p.err == nil {
		p.err = err
		p.cond.Broadcast()
	}
}

func (t *Transport) lostAll(err error) {
	for _, p := range t.peers {
		if p != nil {
			t.lost(p, err)
		}
	}
}

// progress reaps completions while they come, then sleeps; every
// idleProbe it probes idle links and looks for silent peers.
//
// It sleeps in one of two ways. While a leader PE polls (it called Poll
// in the last pollGrace, and reaps what comes), it stays out of its way:
// it sleeps on a timer and looks again after pollGrace whether the PE
// still polls, the CQ not armed, so no completion wakes it, and it
// does not reap (a goroutine that reaps takes the reaping lock from
// the polling PE, and on a host whose CPUs all run
// PEs its thread is then preempted with the lock held: measured in the
// guest, 60% of a PE's polls found the lock taken and a ping-pong took
// 1.6-3.6 ms one way). Otherwise it arms the CQ and sleeps until a
// completion comes (in the Go runtime's poller: no OS thread held). A
// PE that stops polling (PollIdle) wakes it at once.
func (t *Transport) progress() {
	defer close(t.done)
	next := time.Now().Add(idleProbe)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	skip := func() bool { return t.wakeReq.Swap(false) } // a Defer asked for a look
	var heldSince time.Time                              // when this goroutine first saw anyHeld (zero: not set)
	for !t.closing.Load() {
		now := time.Now()
		switch {
		case !t.anyHeld.Load():
			heldSince = time.Time{}
		case heldSince.IsZero():
			heldSince = now
		case now.Sub(heldSince) >= pollGrace:
			t.Kick() // what Defer held back waits at most two looks
			heldSince = time.Time{}
		}
		if !now.Before(next) {
			t.probe(now)
			next = now.Add(idleProbe)
		}
		if t.polling.Load() {
			// A PE polls and reaps: look again later, the CQ not
			// armed and the reaping lock left to the PE. No poll
			// until then: it stopped polling without PollIdle.
			polls := t.stats.polls.Load()
			timer.Reset(pollGrace)
			select {
			case <-timer.C:
				if t.stats.polls.Load() == polls {
					t.polling.Store(false)
				}
			case <-t.idle:
				timer.Stop()
			case <-t.quit:
				return
			}
			t.stats.looks.Add(1)
			continue
		}
		if !t.rx.TryLock() {
			// A PE reaps: it polls, and the next look sees it.
			t.polling.Store(true)
			continue
		}
		n, f := t.reap()
		t.rx.Unlock()
		t.stats.progFrames.Add(uint64(f))
		if n > 0 {
			continue
		}
		if err := t.cq.Arm(); err != nil {
			t.lostAll(err)
			return
		}
		t.stats.arm.Add(1)
		if !t.rx.TryLock() {
			t.polling.Store(true)
			continue
		}
		n, f = t.reap()
		t.rx.Unlock()
		t.stats.progFrames.Add(uint64(f))
		if n > 0 {
			continue
		}
		wake := next
		if t.anyHeld.Load() { // come back to post what Defer holds
			wake = now.Add(pollGrace)
		}
		t.onCQ.Store(true)
		err := t.cq.Wait(wake, skip)
		t.onCQ.Store(false)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			t.stats.deadlines.Add(1)
		case err == nil:
			t.stats.wakes.Add(1)
		case errors.Is(err, os.ErrClosed):
			return
		case err != nil:
			t.lostAll(err)
			return
		}
	}
}

// probe, at looks of the progress goroutine at least idleProbe apart,
// sends a credit message to every peer nothing was sent to since the
// last probe, and reports lost every peer that sent nothing in
// deadAfter/idleProbe probes in a row: silent for deadAfter at least.
func (t *Transport) probe(now time.Time) {
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		p.mu.Lock()
		if p.err == nil && p.sendN == p.probeSent && p.head == len(p.q) && p.avail >= 1 && len(p.free) > 0 {
			p.control(kCredit)
		}
		p.probeSent = p.sendN
		p.mu.Unlock()
		if rx := p.rxN.Load(); rx != p.rxSeen {
			p.rxSeen, p.rxQuiet, p.rxAt = rx, 0, now
			continue
		}
		if p.rxQuiet++; p.rxQuiet >= int(deadAfter/idleProbe) {
			t.rx.Lock()
			t.lost(p, fmt.Errorf("verbs: leader %d sent nothing for %v (not even the idle probe, every %v): its process or host is gone, or the link is down",
				p.idx, now.Sub(p.rxAt).Round(time.Millisecond), idleProbe))
			t.rx.Unlock()
		}
	}
}

// Close writes what is queued (for at most 2 s), says goodbye to every
// peer and releases the device; see internode.Transport.
func (t *Transport) Close() error {
	t.end(kBye, "", closeWait)
	return nil
}

// Abort tells every peer that the job ends with reason, then closes.
func (t *Transport) Abort(reason string) {
	t.end(kAbort, reason, abortWait)
}

func (t *Transport) end(kind uint8, reason string, bound time.Duration) {
	t.ended.Do(func() {
		if e, _ := env.LoadOnly(os.Getenv, env.VarInfo); e.Info {
			st := &t.stats
			fmt.Fprintf(os.Stderr, "verbs leader %d: polls %d (busy %d, frames %d); progress: arms %d, wakes %d, deadlines %d, looks %d, frames %d; sends %d, RDMA writes %d, reads %d (%d calls from or into exposed memory)\n",
				t.cfg.Index, st.polls.Load(), st.pollBusy.Load(), st.pollFrames.Load(), st.arm.Load(), st.wakes.Load(), st.deadlines.Load(), st.looks.Load(), st.progFrames.Load(), st.sends.Load(),
				st.writes.Load(), st.reads.Load(), st.zeroCopy.Load())
		}
		msg := []byte(reason)
		if len(msg) > moreChunk {
			msg = msg[:moreChunk]
		}
		for _, p := range t.peers {
			if p != nil {
				t.send(p.idx, kind, nil, msg, false)
			}
		}
		// Wait, within the bound, until what was sent is acknowledged
		// and, on Close, the peer said goodbye too (the progress
		// goroutine and pollers reap): a peer destroys its queue pair
		// only after our goodbye, so ours is acknowledged, and after
		// its own is, so everything it sent before is here.
		end := time.Now().Add(bound)
		for _, p := range t.peers {
			if p == nil {
				continue
			}
			for time.Now().Before(end) {
				p.mu.Lock()
				ok := p.err != nil || p.head == len(p.q) && p.posted == 0 && (kind == kAbort || p.bye)
				p.mu.Unlock()
				if ok {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		t.rx.Lock()
		t.closing.Store(true)
		t.rx.Unlock()
		close(t.quit)
		t.cq.StopWaits()
		<-t.done
		for _, p := range t.peers {
			if p != nil {
				p.mu.Lock()
				p.lostLocked(errors.New("verbs: the transport is closed"))
				p.mu.Unlock()
			}
		}
		t.destroy()
	})
}

// destroy releases the queue pairs, buffers, queue and device.
func (t *Transport) destroy() {
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		if p.qp != nil {
			p.qp.Close()
		}
		if p.smr != nil {
			p.smr.Close()
		}
		if p.rmr != nil {
			p.rmr.Close()
		}
		if p.rdBuf != nil {
			p.rdBuf.Close()
		}
	}
	if l := t.local.Load(); l != nil {
		for _, r := range *l {
			r.mr.Close()
		}
	}
	if t.cq != nil {
		t.cq.Close()
	}
	t.dev.Close()
}

var (
	_ internode.Transport    = (*Transport)(nil)
	_ internode.Poller       = (*Transport)(nil)
	_ internode.RemoteMemory = (*Transport)(nil)
	_ internode.Deferrer     = (*Transport)(nil)
)
