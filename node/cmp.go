package node

// Cmp is a point-to-point comparison (SHMEM_CMP_*).
type Cmp int

const (
	CmpEQ Cmp = iota
	CmpNE
	CmpGT
	CmpGE
	CmpLT
	CmpLE
)

func (c Cmp) String() string {
	if uint(c) <= uint(CmpLE) {
		return [...]string{"CmpEQ", "CmpNE", "CmpGT", "CmpGE", "CmpLT", "CmpLE"}[c]
	}
	return "Cmp(?)"
}

// InHeap reports whether [addr, addr+n) lies in the calling PE's heap.
func (p *PE) InHeap(addr, n uintptr) bool {
	_, in := p.heap.Offset(addr, n)
	return in
}

// InWaitHeap is InHeap for the inline fast path of a wait or test: false
// under SHMEM_DEBUG, whose check (one live allocation, CheckLocal) the
// outlined path makes, also for a variable that already compares true.
func (p *PE) InWaitHeap(addr, n uintptr) bool {
	_, in := p.waitHeap.Offset(addr, n)
	return in
}

// CheckLocal checks that [addr, addr+n), the routine's argument arg
// ("ivar", "ivars", "sig"), lies in the calling PE's heap, as the
// variables of waits and signals must, aligned to elem bytes (the size
// of one variable, a power of two: a misaligned word is not read
// atomically), under SHMEM_DEBUG inside one live allocation, and that
// cmp is known.
func (p *PE) CheckLocal(routine, arg string, addr, n, elem uintptr, cmp Cmp) {
	if _, in := p.heap.Offset(addr, n); !in || addr&(elem-1) != 0 || uint(cmp) > uint(CmpLE) || p.job.cfg.Debug {
		p.badLocal(routine, arg, addr, n, elem, cmp)
	}
}

// badLocal is CheckLocal's outlined test: it panics for what is wrong
// (in debug mode it also runs for arguments that are right, and
// returns).
//
//go:noinline
func (p *PE) badLocal(routine, arg string, addr, n, elem uintptr, cmp Cmp) {
	if uint(cmp) > uint(CmpLE) {
		panicf("%s: unknown comparison %d; use CmpEQ, CmpNE, CmpGT, CmpGE, CmpLT or CmpLE", routine, int(cmp))
	}
	p.symOffset(routine, arg, addr, n)
	if addr&(elem-1) != 0 {
		panicf("%s: %s %#x is not aligned to %d bytes", routine, arg, addr, elem)
	}
}
