#include "textflag.h"

// func repMovsb(dst, src unsafe.Pointer, n uintptr)
//
// REP MOVSB, forward. The Go ABI keeps the direction flag clear.
TEXT ·repMovsb(SB), NOSPLIT, $0-24
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), CX
	REP;	MOVSB
	RET

// Software prefetch in the main loop: the temporal loop asks for the
// source 8 lines ahead into all cache levels; the non-temporal loop
// asks for nothing. Its copies are larger than a quarter of the
// last-level cache, a sequential stream the hardware prefetchers
// follow by themselves, and PREFETCHT0 would pull every source line
// into L1 and L2 for one read, evicting lines that are used again
// (measured on AMD EPYC Zen 4 at 16-64 MiB: 2-5% slower with it;
// internal/mem BenchmarkCopy/cold/nt).
#define PREFETCH_T0 PREFETCHT0 512(SI); PREFETCHT0 576(SI)
#define PREFETCH_NONE

// COPYBODY copies BX >= 256 bytes from SI to DI, forward, with the
// stores of the middle part (64-byte aligned on the destination) done
// by STORE (VMOVDQA or VMOVNTDQ) and PF (PREFETCH_T0 or PREFETCH_NONE)
// at the top of each 128-byte step. The first and last 64 bytes are
// loaded before anything is stored and written last with unaligned
// temporal stores, so the destination needs no alignment and the
// length no rounding.
#define COPYBODY(STORE, PF) \
	VMOVDQU	(SI), Y4; \
	VMOVDQU	32(SI), Y5; \
	VMOVDQU	-64(SI)(BX*1), Y6; \
	VMOVDQU	-32(SI)(BX*1), Y7; \
	LEAQ	(DI)(BX*1), R8; \
	MOVQ	DI, R9; \
	MOVQ	DI, AX; \
	NEGQ	AX; \
	ANDQ	$63, AX; \
	ADDQ	AX, DI; \
	ADDQ	AX, SI; \
	SUBQ	AX, BX; \
	CMPQ	BX, $128; \
	JB	tail64; \
loop128: \
	PF; \
	VMOVDQU	(SI), Y0; \
	VMOVDQU	32(SI), Y1; \
	VMOVDQU	64(SI), Y2; \
	VMOVDQU	96(SI), Y3; \
	STORE	Y0, (DI); \
	STORE	Y1, 32(DI); \
	STORE	Y2, 64(DI); \
	STORE	Y3, 96(DI); \
	ADDQ	$128, SI; \
	ADDQ	$128, DI; \
	SUBQ	$128, BX; \
	CMPQ	BX, $128; \
	JAE	loop128; \
tail64: \
	CMPQ	BX, $64; \
	JB	done; \
	VMOVDQU	(SI), Y0; \
	VMOVDQU	32(SI), Y1; \
	STORE	Y0, (DI); \
	STORE	Y1, 32(DI); \
done: \
	VMOVDQU	Y4, (R9); \
	VMOVDQU	Y5, 32(R9); \
	VMOVDQU	Y6, -64(R8); \
	VMOVDQU	Y7, -32(R8)

// func avx2Copy(dst, src unsafe.Pointer, n uintptr)
//
// Temporal AVX2 copy of n >= 256 bytes, forward (no overlap).
TEXT ·avx2Copy(SB), NOSPLIT, $0-24
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), BX
	COPYBODY(VMOVDQA, PREFETCH_T0)
	VZEROUPPER
	RET

// func ntCopy(dst, src unsafe.Pointer, n uintptr)
//
// Non-temporal AVX2 copy of n >= 256 bytes, forward (no overlap). It
// ends with SFENCE: the weakly ordered streaming stores are globally
// visible before any store the caller makes afterwards (a flag or a
// signal that publishes the data).
TEXT ·ntCopy(SB), NOSPLIT, $0-24
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), BX
	COPYBODY(VMOVNTDQ, PREFETCH_NONE)
	SFENCE
	VZEROUPPER
	RET

// func cpuidLeaf7EDX() uint32
TEXT ·cpuidLeaf7EDX(SB), NOSPLIT, $0-4
	MOVL	$7, AX
	XORL	CX, CX
	CPUID
	MOVL	DX, ret+0(FP)
	RET

// func Prefetch(p unsafe.Pointer)
//
// PREFETCHT0: ask for p's cache line into every cache level without
// waiting for it (a hint: no fault, no effect on program order).
TEXT ·Prefetch(SB), NOSPLIT, $0-8
	MOVQ	p+0(FP), AX
	PREFETCHT0	(AX)
	RET
