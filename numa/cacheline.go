package numa

import (
	"os"
	"strconv"
	"strings"
)

// defaultCacheLine is the cache line size assumed when the hardware
// does not say (and the size on every x86-64 CPU).
const defaultCacheLine = 64

// CacheLineSize returns the size in bytes of a cache line: what the CPU
// reports (CPUID on amd64), else what sysfs reports for CPU 0's first
// cache, else 64.
func CacheLineSize() int {
	if n := hardwareCacheLine(); validLine(n) {
		return n
	}
	if n := sysfsCacheLine("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size"); validLine(n) {
		return n
	}
	return defaultCacheLine
}

// validLine reports whether n is a plausible line size: a power of two
// from 16 to 1024 bytes.
func validLine(n int) bool {
	return n >= 16 && n <= 1024 && n&(n-1) == 0
}

// sysfsCacheLine reads a coherency_line_size file; 0 when it cannot.
func sysfsCacheLine(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0
	}
	return n
}
