//go:build cgo

package copyref

/*
#include <string.h>

// glibc_memcpy_loop copies n bytes from s to d iters times with the C
// library's memcpy (the one the C peer's programs call); the empty asm
// keeps the compiler from merging the copies.
static void glibc_memcpy_loop(void *d, const void *s, size_t n, long iters) {
	for (long i = 0; i < iters; i++) {
		memcpy(d, s, n);
		__asm__ volatile("" ::: "memory");
	}
}
*/
import "C"

import "unsafe"

// glibcLoop is the C library's memcpy, called iters times from one C
// loop (one cgo call per run, not per copy). dst and src hold no Go
// pointers.
func glibcLoop(dst, src []byte, iters int) {
	if len(src) == 0 {
		return
	}
	C.glibc_memcpy_loop(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), C.size_t(len(src)), C.long(iters))
}

// HaveGlibc tells whether the C library's memcpy is among Methods
// (the program was built with cgo).
const HaveGlibc = true
