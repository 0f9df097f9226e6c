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

// CheckLocal checks that p points into the calling PE's heap, as the
// variables of waits and signals must, and that cmp is known.
func (p *PE) CheckLocal(routine string, addr, n uintptr, cmp Cmp) {
	if _, in := p.heap.Offset(addr, n); !in {
		badAddr(routine, "ivar", addr, n, p)
	}
	if uint(cmp) > uint(CmpLE) {
		badCmp(routine, cmp)
	}
}

//go:noinline
func badCmp(routine string, c Cmp) {
	panicf("%s: unknown comparison %d; use CmpEQ, CmpNE, CmpGT, CmpGE, CmpLT or CmpLE", routine, int(c))
}
