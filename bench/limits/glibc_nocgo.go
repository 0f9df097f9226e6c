//go:build !cgo

package main

// Without cgo the C library's memcpy cannot be called: the memcpy
// limit is then the best of the Go methods, and the table says so.
func glibcLoop(dst, src []byte, iters int) { panic("glibcLoop without cgo") }

const haveGlibc = false
