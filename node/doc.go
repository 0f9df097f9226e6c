// Package node is the goshmem runtime of one node: it bootstraps a job
// from the launcher's segments (or creates a one-PE job, or an
// in-process job of several PEs), maps every PE's symmetric heap into
// every process of the node, and implements RMA, atomics, point-to-point
// synchronization, barriers, locks and contexts as loads, stores and CPU
// atomics on that mapped memory. Where a process cannot map a peer's
// heap it falls back to process_vm_readv/writev (CMA) for that peer and
// serializes atomics with a per-PE lock in the control block.
//
// The user-facing API is the root package goshmem, which re-exports
// these types; node keeps no package-level mutable state, so any number
// of PEs can live in one process.
//
// # Data path
//
// A symmetric address is an address inside the calling PE's own heap.
// To reach PE pe, node computes its offset in the heap (one subtraction
// and one bounds comparison) and adds it to the base at which this
// process maps pe's heap. Put and Get are then copy(), P and G single
// loads and stores, AMOs single LOCK-prefixed instructions, and the
// target's doorbell is rung only if it sleeps (see internal/wait). All
// checks that fail divert to an outlined slow path that either serves
// the CMA fallback or panics with the routine, the argument and the
// valid range.
package node
