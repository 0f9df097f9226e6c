package numa

import "github.com/intel-go/cpuid"

// hardwareCacheLine is the CLFLUSH line size from CPUID leaf 1; 0 when
// the CPU does not report it.
func hardwareCacheLine() int { return int(cpuid.CacheLineSize) }
