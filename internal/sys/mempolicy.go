package sys

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// NUMA memory policy of address ranges (mbind(2), get_mempolicy(2))
// and where pages live (move_pages(2) used as a status query).
// golang.org/x/sys/unix defines the constants and system call numbers
// but has no wrappers for these calls.

// Memory policy modes (linux/mempolicy.h), for Mbind and
// GetMempolicyAddr.
const (
	MPOL_DEFAULT             = unix.MPOL_DEFAULT             // the process policy (first touch, normally)
	MPOL_PREFERRED           = unix.MPOL_PREFERRED           // try the one node given first, then the others
	MPOL_BIND                = unix.MPOL_BIND                // only the nodes given
	MPOL_INTERLEAVE          = unix.MPOL_INTERLEAVE          // page by page across the nodes given
	MPOL_LOCAL               = unix.MPOL_LOCAL               // the node of the CPU that faults the page
	MPOL_PREFERRED_MANY      = unix.MPOL_PREFERRED_MANY      // try the nodes given first, then the others
	MPOL_WEIGHTED_INTERLEAVE = unix.MPOL_WEIGHTED_INTERLEAVE // interleave by per-node weights
)

// Flags of Mbind.
const (
	MPOL_MF_STRICT = unix.MPOL_MF_STRICT // fail if pages already in the range break the policy
	MPOL_MF_MOVE   = unix.MPOL_MF_MOVE   // move the range's pages mapped only by this process to comply
)

// MaxNodes bounds the node numbers Mbind and GetMempolicyAddr handle:
// nodes 0 to MaxNodes-1. It is the largest MAX_NUMNODES Linux can be
// built with (NODES_SHIFT 10).
const MaxNodes = 1024

// nodemask is a kernel node bitmap of MaxNodes bits (unsigned longs;
// uint64 words are the same on every 64-bit Linux).
type nodemask [MaxNodes / 64]uint64

// Mbind sets the memory policy of the pages of b (mbind(2)): mode is an
// MPOL_* mode, nodes the node numbers it names (none for MPOL_DEFAULT
// and MPOL_LOCAL), flags MPOL_MF_* or 0. b must start on a page
// boundary; the range ends at the end of b's last page. For a shared
// mapping of a memfd or tmpfs file this sets the shared policy of that
// range of the file, which every process that maps it follows when it
// faults a page in; for other mappings, the policy of this process's
// mapping only. It changes where pages already there live only with
// MPOL_MF_MOVE.
func Mbind(b []byte, mode int, nodes []int, flags int) error {
	if len(b) == 0 {
		return nil
	}
	var mask nodemask
	bits := 0
	for _, n := range nodes {
		if n < 0 || n >= MaxNodes {
			return fmt.Errorf("mbind: node %d outside [0, %d): %w", n, MaxNodes, unix.EINVAL)
		}
		mask[n/64] |= 1 << (n % 64)
		bits = max(bits, n+1)
	}
	var maskp unsafe.Pointer
	var maxnode uintptr
	if bits > 0 {
		maskp = unsafe.Pointer(&mask[0])
		// The kernel reads maxnode-1 bits of the mask (get_nodes in
		// mm/mempolicy.c starts with --maxnode), hence the +1, which is
		// also what libnuma passes.
		maxnode = uintptr((bits+63)/64*64 + 1)
	}
	addr := unsafe.Pointer(unsafe.SliceData(b))
	_, _, e := unix.Syscall6(unix.SYS_MBIND, uintptr(addr), uintptr(len(b)), uintptr(mode),
		uintptr(maskp), maxnode, uintptr(flags))
	runtime.KeepAlive(b)
	if e != 0 {
		return fmt.Errorf("mbind(%#x, %d bytes, mode %d, nodes %v): %w", uintptr(addr), len(b), mode, nodes, e)
	}
	return nil
}

// GetMempolicyAddr returns the memory policy that governs the page
// holding b[0] (get_mempolicy(2) with MPOL_F_ADDR): the mode, without
// the mode flags (MPOL_F_STATIC_NODES and the like), and its nodes,
// ascending (nil for MPOL_DEFAULT and MPOL_LOCAL). A range nobody set a
// policy on reports MPOL_DEFAULT, whatever the process policy.
func GetMempolicyAddr(b []byte) (mode int, nodes []int, err error) {
	if len(b) == 0 {
		return 0, nil, fmt.Errorf("get_mempolicy: empty range: %w", unix.EINVAL)
	}
	var mask nodemask
	var m int32
	addr := unsafe.Pointer(unsafe.SliceData(b))
	_, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&mask[0])),
		MaxNodes+1, uintptr(addr), unix.MPOL_F_ADDR, 0)
	runtime.KeepAlive(b)
	if e != 0 {
		return 0, nil, fmt.Errorf("get_mempolicy(MPOL_F_ADDR, %#x): %w", uintptr(addr), e)
	}
	for w, word := range mask {
		for bit := 0; word != 0; bit++ {
			if word&1 != 0 {
				nodes = append(nodes, w*64+bit)
			}
			word >>= 1
		}
	}
	return int(m) &^ unix.MPOL_MODE_FLAGS, nodes, nil
}

// pageChunk is how many pages PageNodes asks about per move_pages call.
const pageChunk = 4096

// PageNodes returns, for each page of pageSize bytes (a power of two)
// that b touches, the node it lives on, or a negative errno when it has
// none: -ENOENT for a page this process has not faulted in, -EFAULT for
// an address that is not mapped or maps the shared zero page. It is
// move_pages(2) of this process with no target nodes, which only
// queries. b should be mapped memory (mmap), not Go-managed memory.
func PageNodes(b []byte, pageSize int) ([]int, error) {
	if pageSize <= 0 || pageSize&(pageSize-1) != 0 {
		return nil, fmt.Errorf("move_pages: page size %d is not a power of two: %w", pageSize, unix.EINVAL)
	}
	if len(b) == 0 {
		return nil, nil
	}
	first := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	ps := uintptr(pageSize)
	start := first &^ (ps - 1)
	n := int((first + uintptr(len(b)) - start + ps - 1) / ps)
	out := make([]int, n)
	pages := make([]uintptr, min(n, pageChunk))
	status := make([]int32, len(pages))
	for i := 0; i < n; i += pageChunk {
		k := min(pageChunk, n-i)
		for j := range k {
			pages[j] = start + uintptr(i+j)*ps
		}
		_, _, e := unix.Syscall6(unix.SYS_MOVE_PAGES, 0, uintptr(k), uintptr(unsafe.Pointer(&pages[0])),
			0, uintptr(unsafe.Pointer(&status[0])), 0)
		if e != 0 {
			runtime.KeepAlive(b)
			return nil, fmt.Errorf("move_pages(status of %d pages at %#x): %w", k, pages[0], e)
		}
		for j := range k {
			out[i+j] = int(status[j])
		}
	}
	runtime.KeepAlive(b)
	return out, nil
}
