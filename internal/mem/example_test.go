package mem_test

import (
	"fmt"

	"github.com/goshmem/goshmem/internal/mem"
)

// symmetricHeap stands for a mapped heap: like one, and unlike a
// buffer on a goroutine's stack, it never moves, so its address can be
// kept as a uintptr.
var symmetricHeap = make([]byte, 4096)

// Offset is the bounds check of every access to a symmetric heap: it
// accepts a range only if all of it lies inside the region, whatever
// the overflow.
func ExampleRegion_Offset() {
	heap := symmetricHeap
	r := mem.RegionOf(heap)
	base := mem.Addr(heap)

	fmt.Println(r.Offset(base+100, 8))         // inside
	fmt.Println(r.Offset(base+4088, 8))        // exactly fits at the end
	fmt.Println(r.Offset(base+4089, 8))        // one byte too far
	fmt.Println(r.Offset(base+4096, 0))        // empty range at the end
	fmt.Println(r.Offset(base-8, 16))          // starts below the heap
	fmt.Println(r.Offset(base+8, ^uintptr(0))) // would wrap around
	// Output:
	// 100 true
	// 4088 true
	// 4089 false
	// 4096 true
	// 18446744073709551608 false
	// 8 false
}

func ExampleAs() {
	fmt.Printf("%#x\n", mem.As[uint64](1.0))
	fmt.Println(mem.As[float32](uint32(0x40490fdb)))
	// Output:
	// 0x3ff0000000000000
	// 3.1415927
}

func ExampleHalves() {
	v := int64(0x1122334455667788)
	lo, hi := mem.Halves(&v)
	fmt.Printf("lo %#x hi %#x\n", *lo, *hi)
	// Output:
	// lo 0x55667788 hi 0x11223344
}
