package goshmem_test

import (
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

func TestTeamSmoke(t *testing.T) {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 6, func(pe *goshmem.PE) {
		w := goshmem.TeamWorld(pe)
		if w.MyPE() != pe.MyPE() || w.NPEs() != 6 {
			t.Errorf("world: %d/%d", w.MyPE(), w.NPEs())
		}
		src, _ := goshmem.Malloc[int64](pe, 3)
		dst, _ := goshmem.Malloc[int64](pe, 3)
		for i := range src {
			src[i] = int64(pe.MyPE()*10 + i)
		}
		goshmem.SumReduce(w, dst, src)
		for i := range dst {
			if want := int64(150 + 6*i); dst[i] != want {
				t.Errorf("PE %d: sum[%d] = %d want %d", pe.MyPE(), i, dst[i], want)
			}
		}
		// Odd PEs, backwards.
		odd, err := w.SplitStrided(5, -2, 3, nil)
		if err != nil {
			t.Error(err)
			return
		}
		if pe.MyPE()%2 == 1 {
			if odd.NPEs() != 3 || odd.MyPE() != (5-pe.MyPE())/2 {
				t.Errorf("PE %d: odd team %d/%d", pe.MyPE(), odd.MyPE(), odd.NPEs())
			}
			goshmem.Broadcast(odd, dst, src, 0) // root: world PE 5
			if dst[2] != 52 {
				t.Errorf("PE %d: broadcast got %d want 52", pe.MyPE(), dst[2])
			}
			odd.Destroy()
		} else if odd != nil {
			t.Errorf("PE %d: not in the odd team but got %v", pe.MyPE(), odd)
		}
		all, _ := goshmem.Malloc[int64](pe, 18)
		goshmem.FCollect(w, all, src)
		if all[17] != 52 || all[3] != 10 {
			t.Errorf("fcollect: %v", all)
		}
		x, y, err := w.Split2D(4, nil, nil)
		if err != nil {
			t.Error(err)
			return
		}
		t.Logf("PE %d: x %d/%d y %d/%d", pe.MyPE(), x.MyPE(), x.NPEs(), y.MyPE(), y.NPEs())
		x.Sync()
		y.Sync()
		x.Destroy()
		y.Destroy()
	})
	if err != nil {
		t.Fatal(err)
	}
}
