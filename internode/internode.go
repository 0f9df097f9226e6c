// Package internode is the transport between the leader PEs of a
// goshmem job that spans hosts: on each host one leader PE carries all
// the traffic to and from other hosts, so that a host opens one set of
// connections, not one per PE. The runtime core (node) encodes its
// cross-host operations as frames and applies the frames it receives;
// a backend only moves frames between leaders, in order per pair.
//
// The package is a small core with the transports outside it (the
// style of etcd-io/raft): this package holds the types every backend
// shares and a function that opens one by name; each backend is a
// package of its own (internode/tcp, and internode/verbs for RDMA,
// built with -tags verbs). Optional abilities are small separate
// interfaces that the core asks for with a type assertion (the style of
// wireguard-go's conn.Bind), so a backend implements only what its
// hardware does.
//
// # Opening
//
// The core opens a backend by the name in SHMEM_INTERNODE with Open and
// a table of backends (internode/backends has the standard one; there
// is no package-level registry to mutate). Leaders learn each other's
// addresses through the Exchange the caller gives (the launcher's PMI):
// Open puts this leader's address and fences; a backend gets a peer's
// address only when it first talks to it, so a leader of a job of H
// hosts that talks to k of them makes k gets, not H (a PMI get costs
// 0.1-0.2 ms: 1-2 s for every address at 10,000 hosts).
//
// # Frames
//
// A frame is a fixed 40-byte Header and an optional payload of
// Header.Len bytes (at most MaxPayload). The header is the core's: a
// backend reads only Len. It is encoded little-endian:
//
//	offset size field
//	     0    1 Op     the core's operation code
//	     1    1 Flags  the core's flags
//	     2    2 Ctx    the sender's context
//	     4    4 PE     the target PE (or the source, in a reply)
//	     8    8 Off    offset in the target's symmetric heap
//	    16    4 Len    payload bytes that follow the header
//	    20    4 Seq    the sender's sequence number
//	    24    8 Arg0   operands (AMO values, signal values, ...)
//	    32    8 Arg1
//
// # Sending
//
// Send queues a frame after every frame queued for the same peer
// before it (from any goroutine: frames of one goroutine keep their
// order). It does not copy the payload: a large put is written from
// the caller's slice. The caller may reuse or change the payload only
// after Flush(peer) returns. Many frames queued while a write is in
// flight go out together in the next write.
//
// SendBatch queues many frames for one peer and writes them with one
// system call when the connection is idle; Send writes at once when it
// is idle (the latency of a ping-pong), and queues behind a write in
// flight otherwise.
//
// Backpressure: Send blocks while more than Config.QueueBytes bytes
// (headers and payloads) wait unwritten for that peer. Reply is Send
// for frames sent from inside Sink.Deliver (the answer to a get, a
// fetching AMO): it never blocks, because a receiving goroutine that
// waited for its own connection's writer could deadlock two leaders
// that answer each other. What Reply queues is bounded by what the
// peer asked for, which its own QueueBytes bounds.
//
// # Receiving
//
// A backend hands each frame to the Sink in two steps: Buffer with the
// header, which returns the slice the payload goes into (e.g. the
// target PE's heap, so that a large put lands there without a staging
// copy; the backend reads the socket or DMAs straight into it), then
// Deliver. Frames from one peer come one at a time and in order;
// frames from different peers may come concurrently.
//
// # Failures
//
// Sink.Failed is called once per lost peer: its connection broke, its
// host stopped answering, or it called Abort (the error then carries
// its reason). The core sets the job's abort record and wakes every PE.
// A peer that calls Close says goodbye first, so that a clean end is
// not a failure.
//
// # Capabilities
//
// RemoteMemory (one-sided writes and reads of memory a peer exposed:
// RDMA WRITE and READ) is what the verbs backend adds: the target's CPU
// does not take part. A leader exposes every heap of its host under an
// id the core chooses (the PE number); the backend tells its peers the
// address and key itself, in order before every later frame, so the
// core needs no extra round of the Exchange. The core writes large
// puts and reads gets with it, and sends a frame after a write for
// what the target's CPU must still do (ring the doorbell, store a
// flag). tcp does not implement it: its puts are frames that the
// target's leader copies from the socket into the heap (with no
// staging copy).
//
// RemoteAtomics is NIC atomics. goshmem runs a remote AMO on the
// target host's CPU (the target's leader applies it with the CPU's
// atomic instructions), so that it stays atomic with that host's own
// CPU atomics on the same word: NIC atomics are not atomic with CPU
// atomics on most hardware, which is why SOS and UCX refuse to mix
// them on one object. A backend's RemoteAtomics is therefore only for
// objects that every access reaches through the NIC, and the core does
// not use it otherwise.
package internode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// HeaderSize is the size of an encoded Header.
const HeaderSize = 40

// MaxPayload is the largest payload of one frame; the core splits
// larger transfers. (Len 0xFFFFFFFF is kept for backends' own control
// frames.)
const MaxPayload = 1<<32 - 2

// Header is the fixed part of a frame. Its fields are the core's: the
// transport reads only Len (the payload's length).
type Header struct {
	Op    uint8  // the operation (the core's codes)
	Flags uint8  // the core's flags
	Ctx   uint16 // the sender's context (ordering and completion)
	PE    uint32 // the target PE (or the source, in a reply)
	Off   uint64 // offset in the target's symmetric heap
	Len   uint32 // payload bytes that follow the header
	Seq   uint32 // the sender's sequence number (completion, replies)
	Arg0  uint64 // operands (AMO values, signal values, ...)
	Arg1  uint64
}

// Encode writes h into b (at least HeaderSize bytes).
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	b[0], b[1] = h.Op, h.Flags
	binary.LittleEndian.PutUint16(b[2:], h.Ctx)
	binary.LittleEndian.PutUint32(b[4:], h.PE)
	binary.LittleEndian.PutUint64(b[8:], h.Off)
	binary.LittleEndian.PutUint32(b[16:], h.Len)
	binary.LittleEndian.PutUint32(b[20:], h.Seq)
	binary.LittleEndian.PutUint64(b[24:], h.Arg0)
	binary.LittleEndian.PutUint64(b[32:], h.Arg1)
}

// Decode reads h from b (at least HeaderSize bytes).
func (h *Header) Decode(b []byte) {
	_ = b[HeaderSize-1]
	h.Op, h.Flags = b[0], b[1]
	h.Ctx = binary.LittleEndian.Uint16(b[2:])
	h.PE = binary.LittleEndian.Uint32(b[4:])
	h.Off = binary.LittleEndian.Uint64(b[8:])
	h.Len = binary.LittleEndian.Uint32(b[16:])
	h.Seq = binary.LittleEndian.Uint32(b[20:])
	h.Arg0 = binary.LittleEndian.Uint64(b[24:])
	h.Arg1 = binary.LittleEndian.Uint64(b[32:])
}

// Frame is a header and its payload, for SendBatch.
type Frame struct {
	Header  Header
	Payload []byte
}

// Sink receives frames. A backend calls it from its receiving
// goroutines: frames from one peer one at a time and in the order sent,
// frames from different peers concurrently. Its methods must not block
// on the transport (no Send or Flush: use Reply).
type Sink interface {
	// Buffer returns where the payload of the frame h from leader from
	// goes: a slice of exactly h.Len bytes (the backend reads into it).
	// It is called only when h.Len > 0.
	Buffer(from int, h *Header) []byte
	// Deliver tells that the frame h from leader from has arrived, its
	// payload in buf (what Buffer returned; nil when h.Len is 0). h is
	// valid only during the call.
	Deliver(from int, h *Header, buf []byte)
	// Failed tells that leader peer is lost (its connection broke, its
	// host stopped answering, or it aborted); no more frames come from
	// it. It is called at most once per peer, never after Close.
	Failed(peer int, err error)
}

// Exchange is the job's key-value exchange (the launcher's PMI): each
// leader puts its values, every leader fences, then any leader gets any
// other's. The transport calls Get from its own goroutines, one call at
// a time, until Close.
type Exchange interface {
	Put(key string, val []byte) error
	Fence() error
	Get(rank int, key string) ([]byte, error)
}

// Config is what a backend needs.
type Config struct {
	Index   int    // this leader's index among the leaders
	Leaders int    // the number of leaders (hosts)
	JobID   string // the same on every leader; connections check it
	// Ranks[i] is leader i's rank in Exchange (nil: i).
	Ranks    []int
	Exchange Exchange
	Sink     Sink
	// Iface is the address or interface name to listen on
	// (SHMEM_INTERNODE_IFACE); "" picks the address of the interface of
	// the default route.
	Iface string
	// QueueBytes bounds what Send lets wait unwritten per peer (0:
	// DefaultQueueBytes).
	QueueBytes int
}

// DefaultQueueBytes is Config.QueueBytes's default.
const DefaultQueueBytes = 64 << 20

// Rank returns the Exchange rank of leader i.
func (c *Config) Rank(i int) int {
	if i < 0 || i >= c.Leaders {
		panic(fmt.Sprintf("internode.Config.Rank: leader %d out of range [0, %d)", i, c.Leaders))
	}
	if c.Ranks == nil {
		return i
	}
	return c.Ranks[i] // Open checked that there is one per leader
}

// Transport moves frames between leaders.
type Transport interface {
	// Send queues frame (h, payload) for leader peer, after every frame
	// queued for it before; h.Len must be len(payload). It does not copy
	// payload: the caller must not change it until Flush(peer) returns.
	// It blocks while more than Config.QueueBytes wait for peer, and
	// returns an error once peer is lost.
	Send(peer int, h *Header, payload []byte) error
	// SendBatch is Send for each of frames, in order, with one write
	// for all of them if the connection is idle (a leader that drains
	// its host's queue sends what it found for a peer at once). It
	// copies the headers, not the payloads.
	SendBatch(peer int, frames []Frame) error
	// Reply is Send without the wait for queue space, for frames sent
	// from Sink.Deliver.
	Reply(peer int, h *Header, payload []byte) error
	// Flush waits until every frame queued for peer so far is written
	// (handed to the kernel or the NIC): their payloads may be reused.
	Flush(peer int) error
	// Abort tells every peer this leader is connected with that the job
	// ends with reason (their Sink.Failed gets it), then closes. The
	// launcher's abort reaches the other hosts.
	Abort(reason string)
	// Close writes what is queued, says goodbye to the peers (a clean
	// end, not a failure for them) and ends every connection; the Sink
	// gets no more calls.
	Close() error
}

// Poller is the capability of receiving from the caller's goroutine: a
// leader PE that waits for another host calls Poll between checks of
// its condition, so that a frame for it is read and delivered by the
// waiter itself, not by a receiving goroutine that must first be woken
// and scheduled. Poll never blocks; it reports whether it delivered a
// frame. Frames stay in order per peer, whoever delivers them (the Sink
// may be called from the Poll caller's goroutine). While Poll is being
// called, the transport may stop waking a receiving goroutine of its
// own for incoming frames (the poller reads them); it must resume
// within a bounded time after the last Poll, so that frames never wait
// for a poller that has gone (tcp: about two milliseconds at most); and at once after
// PollIdle, which a poller calls when it stops polling for a while (a
// waiter that goes to sleep). tcp has it.
type Poller interface {
	Poll() bool
	PollIdle()
}

// Deferrer is the capability of holding small frames back so that they
// leave with the next one: a put and the flag that a Fence orders
// after it go out in one write, as one message on the wire. Defer
// queues h and a copy of payload for peer to, or refuses (false: send
// it with Send); a deferred frame is written with the next frame sent
// to that peer, by Kick or Flush, and in any case within a bounded
// time (tcp: Defer refuses unless a PE polls, and the receiving
// goroutine writes what is held every pollGrace). The core calls Kick
// before a wait of a PE that had a frame held, so no wait depends on a
// frame held back. tcp has it.
type Deferrer interface {
	Defer(to int, h *Header, payload []byte) bool
	Kick()
}

// Arena holds copies of the payloads a Deferrer holds back for one
// peer, until they are written: Hold copies, Reset frees them all
// (once none is queued any more). The zero Arena is empty; its buffer
// of ArenaBytes is made at the first Hold.
type Arena struct {
	buf []byte
	n   int
}

// ArenaBytes is the payload bytes an Arena holds.
const ArenaBytes = 16 << 10

// Hold returns a copy of b in the arena, or false when it is full.
func (a *Arena) Hold(b []byte) ([]byte, bool) {
	if a.n+len(b) > ArenaBytes {
		return nil, false
	}
	if a.buf == nil {
		a.buf = make([]byte, ArenaBytes)
	}
	c := a.buf[a.n : a.n+len(b) : a.n+len(b)]
	copy(c, b)
	a.n += len(b)
	return c, true
}

// Reset frees what the arena holds.
func (a *Arena) Reset() { a.n = 0 }

// RemoteMemory is the capability of one-sided access to memory a peer
// exposed (RDMA WRITE and READ): verbs has it, tcp does not.
//
// Expose registers b (memory that is not the Go heap's: a mapping) as
// region id and announces it to every peer; the announcement reaches a
// peer before any frame sent after Expose returns. Exposing an id
// again replaces the region.
//
// Write queues a write of data at offset off of peer's region id, after
// every frame and write queued for peer before it: a frame sent after
// Write is delivered after the data is in place. (The data may land
// before the peer's CPU has applied the frames before it: the core
// sends frames, not writes, where a Fence orders them.) It reports false,
// queueing nothing, when peer has not announced region id (yet) or
// [off, off+len(data)) is outside it: the caller sends a frame instead.
// data may be reused after Flush(peer).
//
// Read reads len(dst) bytes at offset off of peer's region id into dst,
// after every frame and write queued for peer before it reached the
// peer's NIC, and returns when dst is filled; false as for Write. A
// frame is applied by the peer's CPU after it arrives, a Read is served
// by the NIC: a Read is ordered after earlier writes, not after what
// earlier frames make the peer's CPU do (the core reads only when the
// frames it sent to that host are known applied). dst may be on the
// caller's goroutine stack, which moves: only the calling goroutine
// may write it, and not after Read returns.
type RemoteMemory interface {
	Expose(id uint32, b []byte) error
	Write(peer int, id uint32, off uint64, data []byte) (bool, error)
	Read(peer int, id uint32, off uint64, dst []byte) (bool, error)
}

// RemoteAtomics is the capability of NIC atomics on a region of
// RemoteMemory; see the package comment for when the core may use it.
type RemoteAtomics interface {
	FetchAdd(peer int, id uint32, off uint64, v uint64) (uint64, error)
	CompareSwap(peer int, id uint32, off uint64, old, new uint64) (uint64, error)
}

// Backend is one transport the core can open by name.
type Backend struct {
	Name string
	Open func(Config) (Transport, error)
}

// Open checks cfg and opens the backend called name from backends, or
// says which names there are.
func Open(backends []Backend, name string, cfg Config) (Transport, error) {
	switch {
	case cfg.Sink == nil || cfg.Exchange == nil:
		return nil, errors.New("internode.Open: Config needs a Sink and an Exchange")
	case cfg.Leaders < 1 || cfg.Index < 0 || cfg.Index >= cfg.Leaders:
		return nil, fmt.Errorf("internode.Open: leader index %d of %d leaders, want 0 <= index < leaders", cfg.Index, cfg.Leaders)
	case cfg.Ranks != nil && len(cfg.Ranks) != cfg.Leaders:
		return nil, fmt.Errorf("internode.Open: %d ranks for %d leaders", len(cfg.Ranks), cfg.Leaders)
	case cfg.QueueBytes < 0:
		return nil, fmt.Errorf("internode.Open: QueueBytes %d, want >= 0", cfg.QueueBytes)
	}
	if cfg.Ranks != nil {
		seen := make(map[int]bool, len(cfg.Ranks))
		for i, r := range cfg.Ranks {
			if r < 0 || seen[r] {
				return nil, fmt.Errorf("internode.Open: Ranks[%d] is %d; ranks are distinct and >= 0 (each leader publishes its address under its own)", i, r)
			}
			seen[r] = true
		}
	}
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	var names []string
	for _, b := range backends {
		if b.Name == name {
			if b.Open == nil {
				return nil, fmt.Errorf("internode.Open: backend %q has no Open function", name)
			}
			return b.Open(cfg)
		}
		names = append(names, b.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("internode: no transport %q in this build; set SHMEM_INTERNODE to one of: %s", name, strings.Join(names, ", "))
}
