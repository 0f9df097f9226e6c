//go:build !cgo

package copyref

// Without cgo the C library's memcpy cannot be called: the memcpy
// limit is then the best of the Go methods, and the programs say so.
func glibcLoop(dst, src []byte, iters int) { panic("glibcLoop without cgo") }

// HaveGlibc tells whether the C library's memcpy is among Methods
// (the program was built with cgo).
const HaveGlibc = false
