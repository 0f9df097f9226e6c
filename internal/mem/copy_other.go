//go:build !amd64

package mem

import "unsafe"

type features struct{ avx2, erms, fsrm bool }

// cpuFeatures reports no features: outside amd64 the engine is the
// built-in copy.
func cpuFeatures() features { return features{} }

func cpuidLLC() int64 { return 0 }

// copyPlanned copies with the built-in copy (memmove).
func copyPlanned(_ *CopyPlan, d, s unsafe.Pointer, n uintptr) {
	copy(unsafe.Slice((*byte)(d), n), unsafe.Slice((*byte)(s), n))
}

// Prefetch is a hint that does nothing on this architecture.
func Prefetch(p unsafe.Pointer) {}
