package shm_test

import (
	"fmt"

	"github.com/goshmem/goshmem/shm"
)

// Two mappings of one segment are two views of the same memory, as
// they are when two PE processes each map the segment.
func Example() {
	seg, err := shm.Create("example", 4096, shm.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	a, _ := seg.Map(0, 0)
	b, _ := seg.Map(0, 0)
	seg.Close() // the mappings keep the memory alive
	defer a.Close()
	defer b.Close()

	shm.View[shm.Uint64](a.Bytes(), 64).Store(42)
	fmt.Println(shm.View[shm.Uint64](b.Bytes(), 64).Load(), seg.Kind(), b.Len())
	// Output: 42 memfd 4096
}

func ExampleCreate_size() {
	_, err := shm.Create("heap", 0, shm.Options{})
	fmt.Println(err)
	// Output: shm.Create heap: size 0 must be positive
}
