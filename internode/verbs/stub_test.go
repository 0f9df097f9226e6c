//go:build !(verbs && cgo && linux)

package verbs

import (
	"errors"
	"strings"
	"testing"

	"github.com/goshmem/goshmem/internode"
)

// TestOpenWithoutTag: a build without the verbs tag says how to get
// verbs support, and links no libibverbs.
func TestOpenWithoutTag(t *testing.T) {
	_, err := Open(Config{})
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "-tags verbs") || !strings.Contains(err.Error(), "SHMEM_INTERNODE=tcp") {
		t.Fatalf("Open: %v", err)
	}
}

// TestTransportWithoutTag: choosing SHMEM_INTERNODE=verbs in a build
// without the tag fails at start-up with the way out, not later.
func TestTransportWithoutTag(t *testing.T) {
	_, err := OpenTransport(internode.Config{Leaders: 2})
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "SHMEM_INTERNODE=tcp") {
		t.Fatalf("OpenTransport: %v", err)
	}
}
