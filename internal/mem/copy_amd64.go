package mem

import (
	"unsafe"

	"github.com/intel-go/cpuid"
)

//go:noescape
func repMovsb(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func avx2Copy(dst, src unsafe.Pointer, n uintptr)

//go:noescape
func ntCopy(dst, src unsafe.Pointer, n uintptr)

// Prefetch asks for the cache line at p without waiting for it
// (PREFETCHT0): a reader that knows which line it reads next starts its
// miss while it works on the current one. A hint only: p need not be
// valid memory, and nothing is ordered by it.
//
//go:noescape
func Prefetch(p unsafe.Pointer)

// cpuidLeaf7EDX returns EDX of CPUID leaf 7, sub-leaf 0 (the cpuid
// package keeps only EBX and ECX of that leaf).
func cpuidLeaf7EDX() uint32

// fsrmBit is "fast short REP MOVSB" in CPUID.(EAX=7,ECX=0):EDX.
const fsrmBit = 1 << 4

type features struct{ avx2, erms, fsrm bool }

// cpuFeatures reads the features the engine chooses by.
func cpuFeatures() features {
	f := features{
		avx2: cpuid.HasExtendedFeature(cpuid.AVX2) && cpuid.EnabledAVX,
		erms: cpuid.HasExtendedFeature(cpuid.ERMS),
	}
	f.fsrm = f.erms && cpuidLeaf7EDX()&fsrmBit != 0
	return f
}

// cpuidLLC returns the largest cache CPUID leaf 4 describes (Intel),
// in bytes; 0 when it describes none.
func cpuidLLC() int64 {
	var best cpuid.CacheDescriptor
	for _, c := range cpuid.CacheDescriptors {
		if c.LineSize > 0 && c.Level > best.Level {
			best = c
		}
	}
	return int64(best.CacheSize) << 10
}

// copyPlanned copies n >= LargeCopy bytes, d and s not overlapping.
func copyPlanned(p *CopyPlan, d, s unsafe.Pointer, n uintptr) {
	switch p.kernel(n) {
	case kNT:
		ntCopy(d, s, n)
	case kMovsb:
		repMovsb(d, s, n)
	case kAVX2:
		avx2Copy(d, s, n)
	default:
		copy(unsafe.Slice((*byte)(d), n), unsafe.Slice((*byte)(s), n))
	}
}
