package node

import (
	"testing"
)

func testCfg() Config { return Config{HeapSize: 1 << 20} }

func TestSmokeLocal(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 8} {
		err := RunLocal(testCfg(), n, func(p *PE) {
			x, err := Malloc[int64](p, 4)
			if err != nil {
				panic(err)
			}
			c := p.Ctx()
			right := (p.MyPE() + 1) % p.NPEs()
			P(c, &x[0], int64(p.MyPE()+100), right)
			AtomicAdd(c, &x[1], 1, 0)
			p.BarrierAll()
			left := (p.MyPE() + p.NPEs() - 1) % p.NPEs()
			if x[0] != int64(left+100) {
				t.Errorf("n=%d PE %d: x[0]=%d want %d", n, p.MyPE(), x[0], left+100)
			}
			if p.MyPE() == 0 && x[1] != int64(p.NPEs()) {
				t.Errorf("PE 0: counter %d want %d", x[1], p.NPEs())
			}
			for i := 0; i < 1000; i++ {
				p.BarrierAll()
			}
			Free(p, x)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
