//go:build !(verbs && cgo && linux)

package verbs

import (
	"fmt"
	"time"
)

// Device is an open RDMA device; in this build there is none (see
// Open).
type Device struct {
	Name     string
	Port     int
	LinkETH  bool
	LID      uint16
	GID      [16]byte
	GIDIndex int
	MTU      int
}

// Open reports that this build has no verbs support: build with
// -tags verbs (and cgo, libibverbs-dev) on Linux.
func Open(c Config) (*Device, error) {
	return nil, fmt.Errorf("%w: rebuild with `go build -tags verbs` (needs cgo and Debian's libibverbs-dev), or choose SHMEM_INTERNODE=tcp", ErrNotBuilt)
}

// The rest exists so that the code over this layer (the transport)
// builds without the tag; without a Device none of it can be reached.

// Close does nothing in this build.
func (d *Device) Close() error { return nil }

// MR is a memory registration (none in this build).
type MR struct {
	Addr uintptr
	Len  int
	LKey uint32
	RKey uint32
}

// Alloc fails in this build.
func (d *Device) Alloc(n int, a Access) (*MR, error) { return nil, ErrNotBuilt }

// Register fails in this build.
func (d *Device) Register(b []byte, a Access) (*MR, error) { return nil, ErrNotBuilt }

// Contains reports false in this build.
func (m *MR) Contains(b []byte) bool { return false }

// Bytes returns nil in this build.
func (m *MR) Bytes() []byte { return nil }

// Close does nothing in this build.
func (m *MR) Close() error { return nil }

// CQ is a completion queue (none in this build).
type CQ struct{}

// NewNotifyCQ fails in this build.
func (d *Device) NewNotifyCQ(depth int) (*CQ, error) { return nil, ErrNotBuilt }

// Poll fails in this build.
func (q *CQ) Poll(out []Completion) (int, error) { return 0, ErrNotBuilt }

// Arm fails in this build.
func (q *CQ) Arm() error { return ErrNotBuilt }

// Wait fails in this build.
func (q *CQ) Wait(deadline time.Time, skip func() bool) error { return ErrNotBuilt }

// Wake does nothing in this build.
func (q *CQ) Wake() {}

// StopWaits does nothing in this build.
func (q *CQ) StopWaits() {}

// Close does nothing in this build.
func (q *CQ) Close() error { return nil }

// RC is a reliable connected queue pair (none in this build).
type RC struct{}

// NewRC fails in this build.
func (d *Device) NewRC(send, recv *CQ, depth int) (*RC, error) { return nil, ErrNotBuilt }

// Endpoint returns the zero Endpoint in this build.
func (r *RC) Endpoint() Endpoint { return Endpoint{} }

// Connect fails in this build.
func (r *RC) Connect(e Endpoint) error { return ErrNotBuilt }

// PostSend fails in this build.
func (r *RC) PostSend(id uint64, m *MR, local []byte) error { return ErrNotBuilt }

// PostWrite fails in this build.
func (r *RC) PostWrite(id uint64, m *MR, local []byte, raddr uint64, rkey uint32) error {
	return ErrNotBuilt
}

// PostRead fails in this build.
func (r *RC) PostRead(id uint64, m *MR, local []byte, raddr uint64, rkey uint32) error {
	return ErrNotBuilt
}

// PostRecv fails in this build.
func (r *RC) PostRecv(id uint64, m *MR, local []byte) error { return ErrNotBuilt }

// Close does nothing in this build.
func (r *RC) Close() error { return nil }
