//go:build !(verbs && cgo && linux)

package verbs

import (
	"errors"
	"strings"
	"testing"
)

// TestOpenWithoutTag: a build without the verbs tag says how to get
// verbs support, and links no libibverbs.
func TestOpenWithoutTag(t *testing.T) {
	_, err := Open(Config{})
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "-tags verbs") || !strings.Contains(err.Error(), "SHMEM_INTERNODE=tcp") {
		t.Fatalf("Open: %v", err)
	}
}
