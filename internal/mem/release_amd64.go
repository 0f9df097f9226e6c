//go:build amd64 && !race

package mem

import (
	"sync/atomic"
	"unsafe"
)

// StoreRelease stores v into w with release order only: every earlier
// store of this goroutine becomes visible to other CPUs no later than
// v, but a later load may run before v is visible (no fence). On amd64
// (TSO) that is a plain MOV, where w.Store is an XCHG that waits until
// the line is owned. Waiters that may sleep must then fence on their
// side (internal/wait: Policy.Fenced).
//
// The Go compiler keeps stores in program order, and an atomic load
// that follows is not moved before this store.
func StoreRelease(w *atomic.Uint32, v uint32) {
	*(*uint32)(unsafe.Pointer(w)) = v
}

// StoreRelease64 is StoreRelease of a 64-bit word.
func StoreRelease64(w *atomic.Uint64, v uint64) {
	*(*uint64)(unsafe.Pointer(w)) = v
}
