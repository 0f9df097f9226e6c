// Package verbs is the RDMA verbs layer of goshmem's leader transport:
// the device, memory registration, completion queues and reliable
// connected (RC) queue pairs that the internode backend over InfiniBand
// and RoCE is built from, through libibverbs.
//
// All cgo of the package is in one file, verbs_cgo.go, built only with
// the build tag verbs (go build -tags verbs; it needs Debian's
// libibverbs-dev and, at run time, a provider from ibverbs-providers).
// Without the tag the package is pure Go: Open returns an error that
// says how to build it, and nothing links libibverbs.
//
// # What it offers
//
// Open finds the device (SHMEM_VERBS_DEVICE, or the first one with an
// active port), its port (SHMEM_VERBS_PORT, or the first active one)
// and, for RoCE, the GID (SHMEM_VERBS_GID_INDEX, default 0), and
// allocates a protection domain. Register registers memory for local
// use and for remote RDMA WRITE and READ; the memory must not be
// Go-allocated (the Go heap moves nothing, but its pages may be reused
// by the runtime after the buffer is dead, under the NIC's feet): a
// symmetric heap, or a mapping of the caller's. NewCQ and NewRC make
// a completion queue and an RC queue pair; an RC queue pair is
// connected with the peer's Endpoint (its queue pair number, packet
// sequence number, LID and GID, exchanged through the job's wire-up)
// by Connect. PostWrite, PostRead and PostSend queue work requests,
// PostRecv receive buffers, and CQ.Poll reaps completions.
//
// The knobs are declared in the runtime's knob table (internal/env,
// printed by oshinfo) and read by ConfigFromEnv.
//
// # Errors
//
// When there is no device, Open's error names what was looked for and
// how to choose another transport (SHMEM_INTERNODE=tcp). A failed
// memory registration names the locked-memory limit (ulimit -l), the
// usual cause.
package verbs

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/internal/env"
)

// ErrNoDevice is wrapped by Open's error when no RDMA device is usable.
var ErrNoDevice = errors.New("no RDMA device")

// ErrNotBuilt is wrapped by Open's error in a build without the verbs
// tag.
var ErrNotBuilt = errors.New("goshmem was built without RDMA verbs support")

// Config chooses the device, port and GID. The zero value means: the
// first device with an active port, its first active port, GID index 0.
type Config struct {
	Device   string // SHMEM_VERBS_DEVICE, e.g. "mlx5_0" or "rxe0"
	Port     int    // SHMEM_VERBS_PORT, from 1; 0: the first active port
	GIDIndex int    // SHMEM_VERBS_GID_INDEX (RoCE); default 0
}

// ConfigFromEnv reads SHMEM_VERBS_DEVICE, SHMEM_VERBS_PORT and
// SHMEM_VERBS_GID_INDEX from getenv (os.Getenv when nil), through the
// runtime's knob table (internal/env, printed by oshinfo).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	e, err := env.LoadOnly(getenv, env.VarVerbsDevice, env.VarVerbsPort, env.VarVerbsGIDIndex)
	if err != nil {
		return Config{}, err
	}
	c := Config{Device: e.VerbsDevice, Port: e.VerbsPort, GIDIndex: e.VerbsGIDIndex}
	if c.Device == "auto" {
		c.Device = ""
	}
	return c, nil
}

// Endpoint is what a peer needs to connect an RC queue pair to this
// one: exchanged through the job's wire-up (PMI), encoded with String
// as printable ASCII.
type Endpoint struct {
	QPN uint32   // queue pair number (24 bits)
	PSN uint32   // first packet sequence number (24 bits)
	LID uint16   // port LID (InfiniBand; 0 on RoCE)
	GID [16]byte // port GID (RoCE: required; InfiniBand: used across subnets)
}

// String encodes e as "qpn.psn.lid.gid" in hex: printable, 51 bytes at
// most, as PMI values must be.
func (e Endpoint) String() string {
	return fmt.Sprintf("%x.%x.%x.%s", e.QPN, e.PSN, e.LID, hex.EncodeToString(e.GID[:]))
}

// ParseEndpoint decodes what Endpoint.String wrote.
func ParseEndpoint(s string) (Endpoint, error) {
	f := strings.Split(s, ".")
	var e Endpoint
	if len(f) != 4 {
		return e, fmt.Errorf("verbs endpoint %q: want qpn.psn.lid.gid", s)
	}
	var n [3]uint64
	for i, bits := range []int{24, 24, 16} {
		v, err := strconv.ParseUint(f[i], 16, bits)
		if err != nil {
			return e, fmt.Errorf("verbs endpoint %q: field %d: %v", s, i+1, err)
		}
		n[i] = v
	}
	g, err := hex.DecodeString(f[3])
	if err != nil || len(g) != 16 {
		return e, fmt.Errorf("verbs endpoint %q: the GID must be 32 hex digits", s)
	}
	e.QPN, e.PSN, e.LID = uint32(n[0]), uint32(n[1]), uint16(n[2])
	copy(e.GID[:], g)
	return e, nil
}

// hasGID reports whether the endpoint carries a GID (not all zero).
func (e Endpoint) hasGID() bool {
	return binary.LittleEndian.Uint64(e.GID[:8])|binary.LittleEndian.Uint64(e.GID[8:]) != 0
}

// Access flags of a memory registration.
type Access int

const (
	LocalWrite  Access = 1 << 0 // IBV_ACCESS_LOCAL_WRITE
	RemoteWrite Access = 1 << 1 // IBV_ACCESS_REMOTE_WRITE
	RemoteRead  Access = 1 << 2 // IBV_ACCESS_REMOTE_READ
)

// Opcode is the kind of a completed work request.
type Opcode int

const (
	OpSend Opcode = iota
	OpWrite
	OpRead
	OpRecv
)

func (o Opcode) String() string {
	switch o {
	case OpSend:
		return "SEND"
	case OpWrite:
		return "RDMA WRITE"
	case OpRead:
		return "RDMA READ"
	case OpRecv:
		return "RECV"
	}
	return "opcode " + strconv.Itoa(int(o))
}

// Completion is one reaped work completion.
type Completion struct {
	ID     uint64 // the work request's ID
	Op     Opcode
	Bytes  int    // bytes received (OpRecv)
	Status int    // 0: success; else ibv_wc_status
	Err    string // the status's text when not 0
}

// noDevice is Open's error when nothing usable was found.
func noDevice(c Config, found []string) error {
	what := "any RDMA device with an active port"
	if c.Device != "" {
		what = "RDMA device " + strconv.Quote(c.Device) + " (SHMEM_VERBS_DEVICE)"
	}
	have := "no devices in /sys/class/infiniband"
	if len(found) > 0 {
		have = "devices: " + strings.Join(found, ", ")
	}
	return fmt.Errorf("%w: looked for %s; %s. Choose another transport with SHMEM_INTERNODE=tcp, or another device with SHMEM_VERBS_DEVICE", ErrNoDevice, what, have)
}
