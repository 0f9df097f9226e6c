package goshmem_test

import (
	"testing"

	"github.com/goshmem/goshmem"
)

func TestSmokeLocal(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 8} {
		err := goshmem.RunLocal(n, func(p *goshmem.PE) {
			x, err := goshmem.Malloc[int64](p, 4)
			if err != nil {
				panic(err)
			}
			c := p.Ctx()
			right := (p.MyPE() + 1) % p.NPEs()
			goshmem.P(c, &x[0], int64(p.MyPE()+100), right)
			goshmem.AtomicAdd(c, &x[1], 1, 0)
			p.BarrierAll()
			left := (p.MyPE() + p.NPEs() - 1) % p.NPEs()
			if x[0] != int64(left+100) {
				t.Errorf("n=%d PE %d: x[0]=%d want %d", n, p.MyPE(), x[0], left+100)
			}
			if p.MyPE() == 0 && x[1] != int64(p.NPEs()) {
				t.Errorf("PE 0: counter %d want %d", x[1], p.NPEs())
			}
			goshmem.Free(p, x)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
