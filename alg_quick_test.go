package goshmem_test

import (
	"fmt"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

func TestAlgorithmsQuick(t *testing.T) {
	for _, cfg := range []node.Config{
		{HeapSize: 1 << 20, BarrierAlgorithm: "tree", BcastAlgorithm: "tree", FCollectAlgorithm: "ring"},
		{HeapSize: 1 << 20, SimDomains: 2},
		{HeapSize: 1 << 20, SimDomains: 3, ReduceAlgorithm: "partitioned"},
		{HeapSize: 1 << 20, Transport: "cma"},
	} {
		for _, n := range []int{1, 2, 3, 5, 7} {
			name := fmt.Sprintf("%+v/n=%d", cfg, n)
			err := goshmem.RunLocalConfig(cfg, n, func(pe *goshmem.PE) {
				w := goshmem.TeamWorld(pe)
				src, _ := goshmem.Malloc[int64](pe, 1000)
				dst, _ := goshmem.Malloc[int64](pe, 1000)
				all, _ := goshmem.Malloc[int64](pe, 1000*n)
				for it := 0; it < 20; it++ {
					for i := range src {
						src[i] = int64(pe.MyPE()*1000 + i + it)
					}
					goshmem.SumReduce(w, dst, src)
					for i := range dst {
						want := int64(0)
						for q := 0; q < n; q++ {
							want += int64(q*1000 + i + it)
						}
						if dst[i] != want {
							t.Errorf("%s it %d PE %d: sum[%d]=%d want %d", name, it, pe.MyPE(), i, dst[i], want)
							return
						}
					}
					root := it % n
					goshmem.Broadcast(w, dst, src, root)
					if dst[7] != int64(root*1000+7+it) {
						t.Errorf("%s it %d PE %d: bcast %d", name, it, pe.MyPE(), dst[7])
						return
					}
					goshmem.FCollect(w, all, src)
					for q := 0; q < n; q++ {
						if all[q*1000+5] != int64(q*1000+5+it) {
							t.Errorf("%s it %d PE %d: fcollect block %d = %d", name, it, pe.MyPE(), q, all[q*1000+5])
							return
						}
					}
					w.Sync()
				}
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
}
