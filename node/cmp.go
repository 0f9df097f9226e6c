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

// CheckLocal checks that [addr, addr+n), the routine's argument arg
// ("ivar", "ivars", "sig"), lies in the calling PE's heap, as the
// variables of waits and signals must, and that cmp is known.
func (p *PE) CheckLocal(routine, arg string, addr, n uintptr, cmp Cmp) {
	if _, in := p.heap.Offset(addr, n); !in || uint(cmp) > uint(CmpLE) {
		p.badLocal(routine, arg, addr, n, cmp)
	}
}

//go:noinline
func (p *PE) badLocal(routine, arg string, addr, n uintptr, cmp Cmp) {
	if uint(cmp) > uint(CmpLE) {
		panicf("%s: unknown comparison %d; use CmpEQ, CmpNE, CmpGT, CmpGE, CmpLT or CmpLE", routine, int(cmp))
	}
	badAddr(routine, arg, addr, n, p)
}
