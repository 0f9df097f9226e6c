package symalloc_test

import (
	"fmt"

	"github.com/goshmem/goshmem/internal/symalloc"
)

func Example() {
	// Every PE builds the same allocator over its own copy of the heap
	// metadata and makes the same calls, so offsets agree everywhere.
	a := symalloc.New(1<<20, 64)

	x, _ := a.Alloc(100, 0)  // shmem_malloc(100)
	y, _ := a.Alloc(8, 4096) // shmem_align(4096, 8)
	z, _ := a.Alloc(0, 0)    // shmem_malloc(0) returns NULL
	fmt.Println(x, y, z == symalloc.NoOffset)

	// shmem_realloc: the caller copies the data when the block moves.
	heap := make([]byte, a.Size()) // stands in for this PE's mapped heap
	copy(heap[x:], "hello")
	old, _ := a.SizeOf(x)
	nx, moved, _ := a.Realloc(x, 8000) // y is in the way: the block moves
	if moved {
		n, _ := a.SizeOf(nx)
		copy(heap[nx:nx+min(old, n)], heap[x:x+old])
	}
	fmt.Println(old, nx, moved, string(heap[nx:nx+5]))

	fmt.Println(a.Free(nx), a.Free(y), a.InUse())
	fmt.Println(a.Free(y)) // the caller panics with its own routine name

	_, err := a.Alloc(2<<20, 0)
	fmt.Println(err)
	fmt.Println(a.Seq())

	// Output:
	// 0 4096 true
	// 128 4160 true hello
	// <nil> <nil> 0
	// offset 0x1000: not allocated: it lies in free space (double free?)
	// symmetric heap exhausted: a request of 2097152 bytes (2 MiB), aligned to 64, does not fit in the heap of 1048576 bytes (1 MiB), with 0 bytes in use and a largest free block of 1048576 bytes; raise SHMEM_SYMMETRIC_SIZE
	// 8
}
