// Package internode is the transport between the leader PEs of a
// goshmem job that spans hosts: on each host one leader PE carries all
// the traffic to and from other hosts, so that a host opens one set of
// connections, not one per PE. The runtime core (node) encodes its
// cross-host operations as frames and applies the frames it receives;
// a backend only moves frames between leaders, in order per pair.
//
// Backends are chosen at run time by name (SHMEM_INTERNODE): "tcp"
// (internode/tcp) is the first; an RDMA verbs backend comes next and
// adds capabilities through the small optional interfaces below, which
// the core asks for with a type assertion.
//
// # Frames
//
// A frame is a fixed 40-byte Header and an optional payload of
// Header.Len bytes. A sender hands the payload slice to Send without a
// copy; it must not change it until Flush for that peer returns. A
// receiver's Sink is asked for the slice to read each payload into
// (e.g. the target PE's heap, so that a large put lands there without a
// staging copy), then told the frame arrived.
//
// # Remote atomics
//
// goshmem runs a remote AMO on the target host's CPU (the target's
// leader applies it with the CPU's atomic instructions), so that it
// stays atomic with that host's own CPU atomics on the same word: NIC
// atomics are not atomic with CPU atomics on most hardware, which is
// why SOS and UCX refuse to mix them on one object. A backend's
// RemoteAtomics capability is therefore only for objects that every PE
// reaches through the NIC, and the core does not use it otherwise.
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

// Sink receives frames. A backend calls it from its receiving
// goroutines: frames from one peer one at a time and in the order sent,
// frames from different peers concurrently.
type Sink interface {
	// Buffer returns where the payload of the frame h from leader from
	// goes: a slice of exactly h.Len bytes (the backend reads into it).
	Buffer(from int, h *Header) []byte
	// Deliver tells that the frame h from leader from has arrived, its
	// payload in buf (what Buffer returned; nil when h.Len is 0).
	Deliver(from int, h *Header, buf []byte)
	// Failed tells that leader peer is lost (its connection broke or it
	// aborted); no more frames come from it.
	Failed(peer int, err error)
}

// Config is what a backend needs.
type Config struct {
	Index   int    // this leader's index among the leaders
	Leaders int    // the number of leaders (hosts)
	JobID   string // the same on every leader; connections check it
	Sink    Sink
	Iface   string // address or interface name to listen on ("": the host's first non-loopback IPv4)
}

// Transport moves frames between leaders. It is made in two steps:
// the backend's Listen returns it with the address this leader
// publishes (through the launcher's PMI, in the core's wire-up), then
// Start takes every leader's address.
type Transport interface {
	// Start learns every leader's address, by index; connections are
	// made when first needed.
	Start(addrs []string) error
	// Send queues frame (h, payload) for leader peer, after every frame
	// queued for it before. It does not copy payload: the caller must
	// not change it until Flush(peer) returns.
	Send(peer int, h *Header, payload []byte) error
	// Flush waits until every frame queued for peer so far is written
	// (handed to the kernel or the NIC).
	Flush(peer int) error
	// Close ends every connection; Sink gets no more frames.
	Close() error
}

// RemoteWriter is the capability of writing into a peer's registered
// memory without the peer's CPU (RDMA write): verbs will have it, tcp
// does not.
type RemoteWriter interface {
	Register(b []byte) (key uint64, err error)
	Write(peer int, key uint64, off uint64, data []byte) error
}

// RemoteAtomics is the capability of NIC atomics; see the package
// comment for when the core may use it.
type RemoteAtomics interface {
	FetchAdd(peer int, key uint64, off uint64, v uint64) (uint64, error)
}

// Backend is one transport the core can open by name.
type Backend struct {
	Name   string
	Listen func(Config) (t Transport, addr string, err error)
}

// Listen opens the backend called name from backends, or says which
// names there are.
func Listen(backends []Backend, name string, cfg Config) (Transport, string, error) {
	if cfg.Sink == nil || cfg.Index < 0 || cfg.Index >= cfg.Leaders {
		return nil, "", errors.New("internode: Listen needs a Sink and an Index in [0, Leaders)")
	}
	var names []string
	for _, b := range backends {
		if b.Name == name {
			return b.Listen(cfg)
		}
		names = append(names, b.Name)
	}
	sort.Strings(names)
	return nil, "", fmt.Errorf("internode: no transport %q; SHMEM_INTERNODE takes %s", name, strings.Join(names, ", "))
}
