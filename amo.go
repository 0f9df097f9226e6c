package goshmem

import "github.com/goshmem/goshmem/node"

// The AMOs are one generic routine over one operator table
// (node.AMO); each name below selects an operator. dst must be a
// symmetric object of the calling PE, aligned to its size; the
// operation happens on PE pe's copy with the CPU's atomic instructions.

// AtomicFetch returns *src on PE pe (shmem_atomic_fetch).
func AtomicFetch[T Standard](c *Ctx, src *T, pe int) T {
	var z T
	return node.AMO(c, "AtomicFetch", node.OpFetch, src, z, z, pe)
}

// AtomicSet stores v into *dst on PE pe (shmem_atomic_set).
func AtomicSet[T Standard](c *Ctx, dst *T, v T, pe int) {
	node.Post(c, "AtomicSet", node.OpSet, dst, v, pe)
}

// AtomicSwap stores v into *dst on PE pe and returns the previous value.
func AtomicSwap[T Standard](c *Ctx, dst *T, v T, pe int) T {
	return node.AMO(c, "AtomicSwap", node.OpSwap, dst, v, v, pe)
}

// AtomicCompareSwap stores v into *dst on PE pe if it equals cond, and
// returns the previous value (shmem_atomic_compare_swap).
func AtomicCompareSwap[T Integer](c *Ctx, dst *T, cond, v T, pe int) T {
	return node.AMO(c, "AtomicCompareSwap", node.OpCSwap, dst, v, cond, pe)
}

// AtomicFetchAdd adds v to *dst on PE pe and returns the previous value.
func AtomicFetchAdd[T Integer](c *Ctx, dst *T, v T, pe int) T {
	return node.AMO(c, "AtomicFetchAdd", node.OpAdd, dst, v, v, pe)
}

// AtomicAdd adds v to *dst on PE pe.
func AtomicAdd[T Integer](c *Ctx, dst *T, v T, pe int) {
	node.Post(c, "AtomicAdd", node.OpAdd, dst, v, pe)
}

// AtomicFetchInc increments *dst on PE pe and returns the previous value.
func AtomicFetchInc[T Integer](c *Ctx, dst *T, pe int) T {
	return node.AMO(c, "AtomicFetchInc", node.OpAdd, dst, 1, 1, pe)
}

// AtomicInc increments *dst on PE pe.
func AtomicInc[T Integer](c *Ctx, dst *T, pe int) {
	node.Post(c, "AtomicInc", node.OpAdd, dst, 1, pe)
}

// AtomicFetchAnd ands v into *dst on PE pe and returns the previous value.
func AtomicFetchAnd[T Integer](c *Ctx, dst *T, v T, pe int) T {
	return node.AMO(c, "AtomicFetchAnd", node.OpAnd, dst, v, v, pe)
}

// AtomicAnd ands v into *dst on PE pe.
func AtomicAnd[T Integer](c *Ctx, dst *T, v T, pe int) {
	node.Post(c, "AtomicAnd", node.OpAnd, dst, v, pe)
}

// AtomicFetchOr ors v into *dst on PE pe and returns the previous value.
func AtomicFetchOr[T Integer](c *Ctx, dst *T, v T, pe int) T {
	return node.AMO(c, "AtomicFetchOr", node.OpOr, dst, v, v, pe)
}

// AtomicOr ors v into *dst on PE pe.
func AtomicOr[T Integer](c *Ctx, dst *T, v T, pe int) {
	node.Post(c, "AtomicOr", node.OpOr, dst, v, pe)
}

// AtomicFetchXor xors v into *dst on PE pe and returns the previous value.
func AtomicFetchXor[T Integer](c *Ctx, dst *T, v T, pe int) T {
	return node.AMO(c, "AtomicFetchXor", node.OpXor, dst, v, v, pe)
}

// AtomicXor xors v into *dst on PE pe.
func AtomicXor[T Integer](c *Ctx, dst *T, v T, pe int) {
	node.Post(c, "AtomicXor", node.OpXor, dst, v, pe)
}

// The non-blocking fetching AMOs (shmem_atomic_*_nbi) store the fetched
// value into *fetch; on mapped memory they complete before returning.
// A nil fetch panics before the AMO changes anything.

// checkFetch panics if fetch is nil.
func checkFetch[T any](routine string, fetch *T) {
	if fetch == nil {
		nilFetch(routine)
	}
}

//go:noinline
func nilFetch(routine string) {
	panicf("%s: fetch is nil; pass the address of a local variable to store the fetched value in", routine)
}

// AtomicFetchNBI is the non-blocking AtomicFetch.
func AtomicFetchNBI[T Standard](c *Ctx, fetch *T, src *T, pe int) {
	checkFetch("AtomicFetchNBI", fetch)
	var z T
	*fetch = node.AMO(c, "AtomicFetchNBI", node.OpFetch, src, z, z, pe)
}

// AtomicSwapNBI is the non-blocking AtomicSwap.
func AtomicSwapNBI[T Standard](c *Ctx, fetch *T, dst *T, v T, pe int) {
	checkFetch("AtomicSwapNBI", fetch)
	*fetch = node.AMO(c, "AtomicSwapNBI", node.OpSwap, dst, v, v, pe)
}

// AtomicCompareSwapNBI is the non-blocking AtomicCompareSwap.
func AtomicCompareSwapNBI[T Integer](c *Ctx, fetch *T, dst *T, cond, v T, pe int) {
	checkFetch("AtomicCompareSwapNBI", fetch)
	*fetch = node.AMO(c, "AtomicCompareSwapNBI", node.OpCSwap, dst, v, cond, pe)
}

// AtomicFetchAddNBI is the non-blocking AtomicFetchAdd.
func AtomicFetchAddNBI[T Integer](c *Ctx, fetch *T, dst *T, v T, pe int) {
	checkFetch("AtomicFetchAddNBI", fetch)
	*fetch = node.AMO(c, "AtomicFetchAddNBI", node.OpAdd, dst, v, v, pe)
}

// AtomicFetchIncNBI is the non-blocking AtomicFetchInc.
func AtomicFetchIncNBI[T Integer](c *Ctx, fetch *T, dst *T, pe int) {
	checkFetch("AtomicFetchIncNBI", fetch)
	*fetch = node.AMO(c, "AtomicFetchIncNBI", node.OpAdd, dst, 1, 1, pe)
}

// AtomicFetchAndNBI is the non-blocking AtomicFetchAnd.
func AtomicFetchAndNBI[T Integer](c *Ctx, fetch *T, dst *T, v T, pe int) {
	checkFetch("AtomicFetchAndNBI", fetch)
	*fetch = node.AMO(c, "AtomicFetchAndNBI", node.OpAnd, dst, v, v, pe)
}

// AtomicFetchOrNBI is the non-blocking AtomicFetchOr.
func AtomicFetchOrNBI[T Integer](c *Ctx, fetch *T, dst *T, v T, pe int) {
	checkFetch("AtomicFetchOrNBI", fetch)
	*fetch = node.AMO(c, "AtomicFetchOrNBI", node.OpOr, dst, v, v, pe)
}

// AtomicFetchXorNBI is the non-blocking AtomicFetchXor.
func AtomicFetchXorNBI[T Integer](c *Ctx, fetch *T, dst *T, v T, pe int) {
	checkFetch("AtomicFetchXorNBI", fetch)
	*fetch = node.AMO(c, "AtomicFetchXorNBI", node.OpXor, dst, v, v, pe)
}
