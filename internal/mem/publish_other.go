//go:build !amd64 || race

package mem

import "sync/atomic"

// Publish stores v into *w with release ordering: every store this
// goroutine made before is visible to a reader that loads v from *w
// (atomically). Here (not amd64, or under the race detector) it is
// atomic.Uint32.Store; on amd64 it is one plain MOV (see
// publish_amd64.go).
func Publish(w *atomic.Uint32, v uint32) { w.Store(v) }
