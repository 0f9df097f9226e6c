//go:build !amd64 || race

package mem

import "sync/atomic"

// StoreRelease stores v into w with at least release order. Outside
// amd64, and under the race detector (which must see an atomic store),
// it is w.Store.
func StoreRelease(w *atomic.Uint32, v uint32) { w.Store(v) }

// StoreRelease64 is StoreRelease of a 64-bit word.
func StoreRelease64(w *atomic.Uint64, v uint64) { w.Store(v) }
