//go:build amd64 && !race

#include "textflag.h"

// func publish32(w *atomic.Uint32, v uint32)
//
// One MOVL: a store with release ordering under x86-TSO. Being an
// assembly function it is a compiler barrier too: the Go compiler
// neither moves the caller's earlier stores after the call nor inlines
// it.
TEXT ·publish32(SB), NOSPLIT, $0-12
	MOVQ w+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET
