package numa

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU is the largest CPU number ParseCPUList accepts. Linux supports
// at most 8192 CPUs today (NR_CPUS); the bound keeps a typo such as
// 0-99999999 from allocating a huge list.
const MaxCPU = 1 << 20

const cpuListAdvice = "write CPU numbers and ranges separated by commas, " +
	"e.g. 0-3,8,10-11, or a range with a stride, e.g. 0-7:2"

// ParseCPUList parses a Linux CPU list, the format of
// /sys/devices/system/cpu/online, taskset -c, cpuset.cpus and the
// kernel command line: comma-separated items, each a CPU number N, a
// range A-B (A <= B), a range with a stride A-B:S (every S-th CPU from
// A), or the kernel's group form A-B:U/G (the first U of every G CPUs
// from A). Blanks around the list and around items are ignored; an
// empty list is valid and gives an empty result.
//
// The result is the set of CPUs named, ascending and without repeats.
// Numbers above MaxCPU, descending ranges, a stride of 0 and empty
// items are errors.
func ParseCPUList(s string) ([]int, error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return []int{}, nil
	}
	var set cpuSet
	for item := range strings.SplitSeq(v, ",") {
		if err := set.addItem(strings.TrimSpace(item)); err != nil {
			return nil, fmt.Errorf("numa: bad CPU list %s: %v; %s", quote(s), err, cpuListAdvice)
		}
	}
	return set.list(), nil
}

// addItem adds the CPUs of one list item.
func (set *cpuSet) addItem(item string) error {
	if item == "" {
		return fmt.Errorf("empty item")
	}
	rng, group, hasGroup := strings.Cut(item, ":")
	lo, hi, isRange := strings.Cut(rng, "-")
	first, err := cpuNumber(lo, item)
	if err != nil {
		return err
	}
	last := first
	if isRange {
		if last, err = cpuNumber(hi, item); err != nil {
			return err
		}
		if last < first {
			return fmt.Errorf("descending range %s (write %d-%d)", quote(item), last, first)
		}
	}
	used, size := 1, 1
	if hasGroup {
		if !isRange {
			return fmt.Errorf("stride without a range in %s", quote(item))
		}
		u, g, hasSlash := strings.Cut(group, "/")
		if !hasSlash { // A-B:S, every S-th CPU
			u, g = "1", u
		}
		what := "group size"
		if !hasSlash {
			what = "stride"
		}
		if used, err = count(u, "used count", item); err != nil {
			return err
		}
		if size, err = count(g, what, item); err != nil {
			return err
		}
		if used > size {
			return fmt.Errorf("group %s uses more CPUs than it has in %s", quote(group), quote(item))
		}
	}
	for start := first; start <= last; start += size {
		for c := start; c < start+used && c <= last; c++ {
			set.add(c)
		}
	}
	return nil
}

// cpuNumber parses a CPU number in [0, MaxCPU].
func cpuNumber(s, item string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%s is not a CPU number (in %s)", quote(s), quote(item))
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > MaxCPU {
		return 0, fmt.Errorf("CPU number %s is above %d (in %s)", quote(s), MaxCPU, quote(item))
	}
	return n, nil
}

// count parses a stride, group size or used count (what) in
// [1, MaxCPU+1].
func count(s, what, item string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%s is not a %s (in %s)", quote(s), what, quote(item))
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > MaxCPU+1 {
		return 0, fmt.Errorf("%s %s is above %d (in %s)", what, quote(s), MaxCPU+1, quote(item))
	}
	if n == 0 {
		return 0, fmt.Errorf("%s of 0 in %s", what, quote(item))
	}
	return n, nil
}

// quote quotes s for an error message, shortened when long.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}

// FormatCPUList formats cpus as a Linux CPU list, ascending, with runs
// of consecutive CPUs as ranges: [0 1 2 3 8 10 11] is "0-3,8,10-11". It
// ignores repeats and negative numbers and does not change cpus. An
// empty set is "".
func FormatCPUList(cpus []int) string {
	s := slices.Clone(cpus)
	slices.Sort(s)
	s = slices.Compact(s)
	i, _ := slices.BinarySearch(s, 0)
	s = s[i:]
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}

// cpuSet is a growable bitmap of CPU numbers.
type cpuSet []uint64

func (set *cpuSet) add(c int) {
	w := c / 64
	if w >= len(*set) {
		*set = append(*set, make([]uint64, w+1-len(*set))...)
	}
	(*set)[w] |= 1 << (c % 64)
}

func (set cpuSet) has(c int) bool {
	w := c / 64
	return c >= 0 && w < len(set) && set[w]&(1<<(c%64)) != 0
}

func (set cpuSet) list() []int {
	n := 0
	for _, w := range set {
		n += bits.OnesCount64(w)
	}
	out := make([]int, 0, n)
	for i, w := range set {
		for w != 0 {
			out = append(out, i*64+bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
	return out
}
