package numa

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/internal/sys"
)

// MemPolicy is where the pages of a memory range are allocated when
// they are first touched: the subset of Linux's memory policies
// (mbind(2)) that goshmem uses for symmetric heaps.
type MemPolicy int

const (
	// MemDefault sets no policy: a page is allocated by the policy of
	// the process that first touches it (normally on that CPU's node).
	MemDefault MemPolicy = iota
	// MemLocal prefers one node (MPOL_PREFERRED): pages go to the node
	// given, and to other nodes only when it is full. For a heap, the
	// node is its owner's home node.
	MemLocal
	// MemInterleave spreads the pages round robin, page by page, across
	// the nodes given (MPOL_INTERLEAVE).
	MemInterleave
)

// String returns "none", "local" or "interleave" (the values of
// SHMEM_HEAP_POLICY).
func (p MemPolicy) String() string {
	switch p {
	case MemDefault:
		return "none"
	case MemLocal:
		return "local"
	case MemInterleave:
		return "interleave"
	}
	return "MemPolicy(" + strconv.Itoa(int(p)) + ")"
}

// ParseMemPolicy parses "none", "local" or "interleave", in any case.
func ParseMemPolicy(s string) (MemPolicy, error) {
	for _, p := range []MemPolicy{MemDefault, MemLocal, MemInterleave} {
		if strings.EqualFold(s, p.String()) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("numa: unknown memory policy %q; use none, local or interleave", s)
}

// SetMemPolicy sets the memory policy of b, which must start on a page
// boundary of a mapping of this process (the range extends to the end
// of b's last page). MemLocal prefers nodes[0]; MemInterleave spreads
// over nodes; MemDefault removes any policy and ignores nodes. The
// kernel drops the nodes this process may not allocate on (offline,
// without memory, outside its cpuset) and fails only when none is left.
//
// For a shared mapping of a memfd or tmpfs file (every goshmem heap),
// the policy belongs to that range of the file: every process mapping
// it follows it when it faults a page in. Only pages allocated after
// the call follow it; pages already there stay where they are.
// Hugetlbfs files (huge-page heaps) keep no such shared policy: the
// policy is then this process's mapping's only, and huge pages reserved
// when the file was created are already placed.
func SetMemPolicy(b []byte, p MemPolicy, nodes []int) error {
	var mode int
	switch p {
	case MemDefault:
		mode, nodes = sys.MPOL_DEFAULT, nil
	case MemLocal:
		if len(nodes) == 0 {
			panic("numa.SetMemPolicy: MemLocal with no nodes; pass the node to prefer as nodes[0]")
		}
		mode, nodes = sys.MPOL_PREFERRED, nodes[:1]
	case MemInterleave:
		if len(nodes) == 0 {
			panic("numa.SetMemPolicy: MemInterleave with no nodes; pass the nodes to interleave across")
		}
		mode = sys.MPOL_INTERLEAVE
	default:
		panic(fmt.Sprintf("numa.SetMemPolicy: unknown policy %d; use MemDefault, MemLocal or MemInterleave", int(p)))
	}
	for _, n := range nodes {
		if n < 0 || n >= sys.MaxNodes {
			panic(fmt.Sprintf("numa.SetMemPolicy: node %d in nodes %v is outside [0, %d)", n, nodes, sys.MaxNodes))
		}
	}
	if err := sys.Mbind(b, mode, nodes, 0); err != nil {
		what := p.String()
		if len(nodes) > 0 {
			what += " on node(s) " + FormatCPUList(nodes)
		}
		return fmt.Errorf("numa: cannot set memory policy %s for %d bytes: %w; %s", what, len(b), err, memPolicyAdvice(err))
	}
	return nil
}

// memPolicyAdvice says what to do about a failed mbind or
// get_mempolicy.
func memPolicyAdvice(err error) string {
	switch {
	case errors.Is(err, sys.ErrNoSys):
		return "this kernel has no NUMA support (CONFIG_NUMA); set SHMEM_HEAP_POLICY=none"
	case errors.Is(err, sys.ErrInval):
		return "name nodes that are online, have memory (/sys/devices/system/node/has_memory) and are in this process's cpuset (Mems_allowed_list in /proc/self/status), and pass page-aligned memory"
	case errors.Is(err, sys.ErrPerm):
		return "the policy or the cpuset forbids it; check Mems_allowed_list in /proc/self/status, or set SHMEM_HEAP_POLICY=none"
	case errors.Is(err, sys.ErrNoMem):
		return "the kernel is out of memory for the policy; set SHMEM_HEAP_POLICY=none"
	}
	return "pass memory this process has mapped (mmap), or set SHMEM_HEAP_POLICY=none"
}

// MemPolicyOf returns the memory policy of the page holding b[0] and
// the nodes it names (nil for MemDefault). Memory no policy was set on
// reports MemDefault. A policy goshmem does not set (MPOL_BIND, for
// one) is an error that names it.
func MemPolicyOf(b []byte) (MemPolicy, []int, error) {
	if len(b) == 0 {
		panic("numa.MemPolicyOf: b is empty; pass at least one byte of the range")
	}
	mode, nodes, err := sys.GetMempolicyAddr(b)
	if err != nil {
		return 0, nil, fmt.Errorf("numa: cannot read the memory policy: %w; %s", err, memPolicyAdvice(err))
	}
	switch {
	case mode == sys.MPOL_DEFAULT:
		return MemDefault, nil, nil
	case mode == sys.MPOL_PREFERRED && len(nodes) == 1:
		return MemLocal, nodes, nil
	case mode == sys.MPOL_INTERLEAVE && len(nodes) > 0:
		return MemInterleave, nodes, nil
	}
	return 0, nodes, fmt.Errorf("numa: the memory has policy %s (nodes %s), which MemPolicy cannot express; set one with SetMemPolicy",
		modeName(mode), FormatCPUList(nodes))
}

// modeName names an MPOL_* mode.
func modeName(mode int) string {
	switch mode {
	case sys.MPOL_PREFERRED:
		return "MPOL_PREFERRED"
	case sys.MPOL_BIND:
		return "MPOL_BIND"
	case sys.MPOL_INTERLEAVE:
		return "MPOL_INTERLEAVE"
	case sys.MPOL_LOCAL:
		return "MPOL_LOCAL"
	case sys.MPOL_PREFERRED_MANY:
		return "MPOL_PREFERRED_MANY"
	case sys.MPOL_WEIGHTED_INTERLEAVE:
		return "MPOL_WEIGHTED_INTERLEAVE"
	}
	return "mode " + strconv.Itoa(mode)
}

// PageNodes counts the pages of b this process has faulted in, by the
// node they live on. Pages not faulted in here (never touched, or
// touched only by other processes) are not counted.
func PageNodes(b []byte) (map[int]int, error) {
	st, err := sys.PageNodes(b, os.Getpagesize())
	if err != nil {
		return nil, fmt.Errorf("numa: cannot find where the pages live: %w; %s", err, memPolicyAdvice(err))
	}
	count := make(map[int]int)
	for _, n := range st {
		if n >= 0 {
			count[n]++
		}
	}
	return count, nil
}
