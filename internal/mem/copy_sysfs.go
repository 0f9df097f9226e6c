package mem

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// sysfsLLC returns the size in bytes of the highest-level data or
// unified cache listed under dir (a cpu<N>/cache directory) and the
// number of CPUs sharing it; 0, 0 when it lists none.
func sysfsLLC(dir string) (size int64, share int) {
	level := 0
	idx, _ := filepath.Glob(filepath.Join(dir, "index*"))
	for _, d := range idx {
		l, err := strconv.Atoi(readTrim(filepath.Join(d, "level")))
		if err != nil || l <= level || readTrim(filepath.Join(d, "type")) == "Instruction" {
			continue
		}
		s, ok := parseSize(readTrim(filepath.Join(d, "size")))
		if !ok {
			continue
		}
		level, size, share = l, s, countCPUs(readTrim(filepath.Join(d, "shared_cpu_list")))
	}
	return size, share
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// parseSize parses a sysfs cache size: "32768K", "1M", "512".
func parseSize(s string) (int64, bool) {
	mul := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mul {
		return 0, false
	}
	return n * mul, true
}

// maxCPUs bounds countCPUs: no machine has more CPUs (numa.MaxCPU).
const maxCPUs = 1 << 20

// countCPUs counts the CPUs of a cpu list such as "0-3,8,10-11"; 0 when
// it cannot parse it.
func countCPUs(list string) int {
	n := 0
	for _, r := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a >= maxCPUs {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b >= maxCPUs {
				return 0
			}
		}
		n += b - a + 1
		if n > maxCPUs {
			return 0
		}
	}
	return n
}
