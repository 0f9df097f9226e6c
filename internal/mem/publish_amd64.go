//go:build amd64 && !race

package mem

import "sync/atomic"

// Publish stores v into *w with release ordering: every store this
// goroutine made before is visible to a reader that loads v from *w
// (atomically), and loads after it are not held back until the store
// completes. On amd64 every store has release ordering (TSO), so this is
// one plain MOV, where atomic.Uint32.Store is an XCHG, which waits until
// this core owns the line again; when the readers are polling the line
// that is a whole cache-line hand-off that the next load (of another
// PE's line) could otherwise overlap. Under the race detector it is
// atomic.Uint32.Store, which the detector sees as a release.
func Publish(w *atomic.Uint32, v uint32) { publish32(w, v) }

//go:noescape
func publish32(w *atomic.Uint32, v uint32)
