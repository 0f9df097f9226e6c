package mem

import (
	"fmt"
	"sync"
	"unsafe"
)

// The copy engine moves the bytes of large puts, gets and collectives.
// Go's copy (the runtime's memmove) is fixed in how it copies: on AMD
// CPUs it switches to non-temporal stores at 1 MiB, whatever the cache,
// so a 1-8 MiB put whose data fits the last-level cache runs at
// memory speed instead of cache speed. The engine chooses by size and
// CPU instead: temporal stores up to a threshold derived from the
// last-level cache size (REP MOVSB where the CPU has fast short REP
// MOVSB, else an AVX2 loop, else memmove), non-temporal AVX2 stores
// above it (they bypass the cache, which a copy larger than the cache
// would only flush), ended by SFENCE.
//
// Small copies never reach it: callers copy up to LargeCopy bytes with
// the built-in copy inline and call Copy only above.

// LargeCopy is the size in bytes from which the RMA and collective
// routines hand a copy to Copy; smaller copies stay inline with the
// built-in copy (at such sizes memmove is as fast as anything, and
// the call would cost more than it could save).
const LargeCopy = 64 << 10

// ntMin is the least non-temporal threshold: copies of up to ntMin
// bytes are always temporal (the assembly loops need at least 256
// bytes; below a few pages streaming stores never pay).
const ntMin = 256 << 10

// The assembly loops copy at least 256 bytes; Copy hands them no less
// than LargeCopy.
const _ uint = LargeCopy - 256

// CopyPlan is how Copy copies on this machine: computed once per
// process from the CPU's features and cache sizes (DefaultCopyPlan),
// then only read.
type CopyPlan struct {
	// AVX2 tells whether the CPU and OS support AVX2 (the vector loops).
	AVX2 bool
	// RepMovsb tells whether temporal copies use REP MOVSB (the CPU
	// has ERMS and FSRM), rather than the AVX2 loop.
	RepMovsb bool
	// NTThreshold is the largest copy, in bytes, that Copy makes with
	// temporal stores: copies of more bytes use non-temporal stores; 0
	// means never (no AVX2, or no cache size).
	NTThreshold uintptr
	// LLC is the size in bytes of the last-level cache, and LLCShare
	// the number of CPUs sharing it (0 when unknown): where
	// NTThreshold comes from.
	LLC      int64
	LLCShare int
}

// PlanCopy returns the copy plan for a CPU with the given features and
// last-level cache (llc bytes shared by share CPUs; llc 0 when unknown).
// The non-temporal threshold is a quarter of the last-level cache: a
// copy of n bytes keeps 2n bytes (source and destination) in the cache,
// and the other CPUs sharing it keep theirs. A copy whose 2n bytes fit
// in half the cache stays temporal (a copy of exactly a quarter of it
// included); above that a temporal copy evicts its own data before it
// is read again, and streaming stores, which do not read the
// destination first, move a third less. (Measured on AMD EPYC Zen 4
// with a 32 MiB L3, REP MOVSB against the non-temporal loop, GB/s: 6
// MiB 36/24, 8 MiB 23-27/23-25 and 35 against 25 when the L3 was quiet,
// 10 MiB 21/25, 16 MiB 13/22.)
func PlanCopy(avx2, erms, fsrm bool, llc int64, share int) CopyPlan {
	p := CopyPlan{AVX2: avx2, RepMovsb: erms && fsrm, LLC: llc, LLCShare: share}
	if avx2 && llc > 0 {
		p.NTThreshold = uintptr(max(llc/4, ntMin))
	}
	return p
}

// DefaultCopyPlan returns this machine's copy plan: CPU features from
// the CPUID instruction (through github.com/intel-go/cpuid), the
// last-level cache from sysfs (or CPUID where sysfs has none). It is
// computed on the first call, then the same read-only value is
// returned: the process's CPU does not change under it.
var DefaultCopyPlan = sync.OnceValue(func() CopyPlan {
	f := cpuFeatures()
	llc, share := sysfsLLC("/sys/devices/system/cpu/cpu0/cache")
	if llc == 0 {
		llc, share = cpuidLLC(), 0
	}
	return PlanCopy(f.avx2, f.erms, f.fsrm, llc, share)
})

// Copy copies min(len(dst), len(src)) bytes from src to dst, as the
// built-in copy does, overlapping or not, and returns the count. For
// copies of at least LargeCopy bytes it follows DefaultCopyPlan; a
// copy that used non-temporal stores has fenced them (SFENCE) before
// Copy returns, so a flag stored afterwards publishes the data, as it
// does after copy.
//
// Copy moves raw bytes: the caller ensures that the memory holds no Go
// pointers (the symmetric heap cannot).
//
//go:noinline
func Copy(dst, src []byte) int {
	if min(len(dst), len(src)) < LargeCopy {
		return copy(dst, src)
	}
	return DefaultCopyPlan().Copy(dst, src)
}

// Copy is the package's Copy under plan p: the built-in copy below
// LargeCopy bytes and for overlapping ranges (memmove picks the
// direction), p's choice above. It lets tests and benchmarks run every
// path on any machine that has the features p names.
func (p CopyPlan) Copy(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < LargeCopy {
		return copy(dst, src)
	}
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	if overlap(uintptr(d), uintptr(s), uintptr(n)) {
		return copy(dst[:n], src[:n])
	}
	copyPlanned(&p, d, s, uintptr(n))
	return n
}

// kernel is one of the ways Copy copies.
type kernel uint8

const (
	kMemmove kernel = iota // the built-in copy (runtime memmove)
	kMovsb                 // REP MOVSB
	kAVX2                  // the temporal AVX2 loop
	kNT                    // the non-temporal AVX2 loop, then SFENCE
)

func (k kernel) String() string {
	switch k {
	case kMovsb:
		return "movsb"
	case kAVX2:
		return "avx2"
	case kNT:
		return "nt"
	}
	return "memmove"
}

// kernel returns the kernel p copies n >= 256 non-overlapping bytes
// with.
func (p *CopyPlan) kernel(n uintptr) kernel {
	switch {
	case p.NTThreshold != 0 && n > p.NTThreshold:
		return kNT
	case p.RepMovsb:
		return kMovsb
	case p.AVX2:
		return kAVX2
	}
	return kMemmove
}

// Method names the kernel Copy uses under plan p for a copy of n
// bytes whose source and destination do not overlap: "memmove" (the
// built-in copy, also below LargeCopy), "movsb" (REP MOVSB), "avx2"
// (temporal AVX2 loop) or "nt" (non-temporal AVX2 loop). Benchmarks
// print it next to what they measure.
func (p CopyPlan) Method(n int) string {
	if n < LargeCopy {
		return kMemmove.String()
	}
	return p.kernel(uintptr(n)).String()
}

// Describe says in words how Copy copies under plan p, and, for a
// Tuner over p made with adapt, which sizes choose by timing (what
// cmd/oshinfo prints).
func (p CopyPlan) Describe(adapt bool) string {
	q := p
	q.NTThreshold = 0
	var temporal string
	switch q.kernel(LargeCopy) {
	case kMovsb:
		temporal = "REP MOVSB"
	case kAVX2:
		temporal = "a temporal AVX2 loop"
	default:
		if p.NTThreshold == 0 {
			return "the built-in copy at every size"
		}
		temporal = "the built-in copy"
	}
	s := fmt.Sprintf("the built-in copy below %s, %s", sizeWords(LargeCopy), temporal)
	if p.NTThreshold == 0 {
		return s + " above"
	}
	s += fmt.Sprintf(" up to %s, non-temporal AVX2 stores above", sizeWords(int(p.NTThreshold)))
	if lo, hi := NewTuner(p, adapt).Band(); hi > 0 {
		_, shi := NewSharedTuner(p, adapt).Band()
		s += fmt.Sprintf("; puts and gets above %s up to %s (shared ones up to %s) choose between the two by timing (SHMEM_COPY_ADAPT)", sizeWords(lo), sizeWords(hi), sizeWords(shi))
	}
	return s
}

// sizeWords writes n bytes in KiB or MiB where it divides evenly.
func sizeWords(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// CopyKernel is Copy under plan p without the LargeCopy gate: from 256
// bytes (the least the assembly loops copy) it uses p's kernel, so that
// benchmarks (bench/limits) can measure each kernel at every size.
// Below 256 bytes and for overlapping ranges it is the built-in copy.
func (p CopyPlan) CopyKernel(dst, src []byte) int {
	n := min(len(dst), len(src))
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	if n < 256 || overlap(uintptr(d), uintptr(s), uintptr(n)) {
		return copy(dst, src)
	}
	copyPlanned(&p, d, s, uintptr(n))
	return n
}

// overlap reports whether [d, d+n) and [s, s+n) share a byte.
func overlap(d, s, n uintptr) bool { return d-s < n || s-d < n }
