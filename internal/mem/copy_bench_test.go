package mem

import (
	"fmt"
	"testing"
	"unsafe"
)

// BenchmarkCopy measures each kernel at sizes from 4 KiB to 64 MiB,
// with the buffers cache-resident (the same source and destination
// every time) or cold (the next slot of arenas four times the
// last-level cache, so that each copy reads and writes memory that has
// left the cache):
//
//	go test -run X -bench 'Copy/(warm|cold)' -benchtime 100ms ./internal/mem
//
// copy is the built-in copy (the runtime's memmove), movsb REP MOVSB,
// avx2 the temporal AVX2 loop, nt the non-temporal loop, engine Copy
// with this machine's plan. The kernels are called directly, so sizes
// below LargeCopy measure them too.
func BenchmarkCopy(b *testing.B) {
	plan := DefaultCopyPlan()
	kernels := []struct {
		name string
		f    func(d, s unsafe.Pointer, n uintptr)
	}{
		{"copy", func(d, s unsafe.Pointer, n uintptr) { copyPlanned(&CopyPlan{}, d, s, n) }},
		{"movsb", func(d, s unsafe.Pointer, n uintptr) { copyPlanned(&CopyPlan{RepMovsb: true}, d, s, n) }},
		{"avx2", func(d, s unsafe.Pointer, n uintptr) { copyPlanned(&CopyPlan{AVX2: true}, d, s, n) }},
		{"nt", func(d, s unsafe.Pointer, n uintptr) { copyPlanned(&CopyPlan{AVX2: true, NTThreshold: 1}, d, s, n) }},
		{"engine", func(d, s unsafe.Pointer, n uintptr) {
			plan.Copy(unsafe.Slice((*byte)(d), n), unsafe.Slice((*byte)(s), n))
		}},
	}
	if !plan.AVX2 {
		kernels = append(kernels[:2], kernels[4])
	}
	arena := int(max(4*plan.LLC, 64<<20))
	for _, mode := range []string{"warm", "cold"} {
		for n := 4 << 10; n <= 64<<20; n *= 4 {
			size := n
			if mode == "cold" {
				size = max(arena, 2*n)
			}
			src, dst := make([]byte, size), make([]byte, size)
			for i := range src { // fault the pages in before timing
				src[i], dst[i] = byte(i), 1
			}
			for _, k := range kernels {
				b.Run(fmt.Sprintf("%s/%s/%dK", mode, k.name, n>>10), func(b *testing.B) {
					b.SetBytes(int64(n))
					off := 0
					for b.Loop() {
						k.f(unsafe.Pointer(&dst[off]), unsafe.Pointer(&src[off]), uintptr(n))
						if off += n; off+n > size {
							off = 0
						}
					}
				})
			}
		}
	}
}
