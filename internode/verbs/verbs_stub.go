//go:build !(verbs && cgo && linux)

package verbs

import "fmt"

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

// Close does nothing in this build.
func (d *Device) Close() error { return nil }
