package goshmem_test

import (
	"fmt"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// benchReduce times SumReduce over int64 on TeamWorld of an in-process
// job under cfg, reporting us/reduce.
func benchReduce(b *testing.B, cfg node.Config, pes, size int) {
	err := goshmem.RunLocalConfig(cfg, pes, func(pe *goshmem.PE) {
		w := goshmem.TeamWorld(pe)
		src, _ := goshmem.Malloc[int64](pe, size/8)
		dst, _ := goshmem.Malloc[int64](pe, size/8)
		w.Sync()
		if pe.MyPE() == 0 {
			b.ResetTimer()
		}
		for i := 0; i < b.N; i++ {
			goshmem.SumReduce(w, dst, src)
		}
		if pe.MyPE() == 0 {
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/reduce")
		}
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReduce measures SumReduce with each reduction algorithm for
// teams that share memory, to place the flat/partitioned crossover
// (flatMax).
func BenchmarkReduce(b *testing.B) {
	for _, pes := range []int{2, 4} {
		for _, size := range []int{64, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 1 << 20} {
			for _, alg := range []string{"auto", "flat", "partitioned"} {
				b.Run(fmt.Sprintf("pes=%d/%dB/%s", pes, size, alg), func(b *testing.B) {
					benchReduce(b, node.Config{HeapSize: 8 << 20, ReduceAlgorithm: alg}, pes, size)
				})
			}
		}
	}
}

// BenchmarkReduceCMA measures the reductions for teams that cannot
// share memory (every peer through CMA), to place the crossover between
// recursive doubling and ring or Rabenseifner (rdMax).
func BenchmarkReduceCMA(b *testing.B) {
	for _, pes := range []int{2, 4} {
		for _, size := range []int{64, 1 << 10, 16 << 10, 256 << 10} {
			for _, alg := range []string{"recursive-doubling", "ring", "rabenseifner"} {
				b.Run(fmt.Sprintf("pes=%d/%dB/%s", pes, size, alg), func(b *testing.B) {
					benchReduce(b, node.Config{HeapSize: 8 << 20, ReduceAlgorithm: alg, Transport: "cma"}, pes, size)
				})
			}
		}
	}
}

// BenchmarkReduceNUMALevel measures SumReduce on 4 PEs whose home nodes
// say they sit on 2 NUMA nodes, run level by level (always) and flat
// (never). On a machine with one real node it measures what the extra
// level costs, not what it saves (see docs/performance.md).
func BenchmarkReduceNUMALevel(b *testing.B) {
	for _, size := range []int{8, 1 << 10, 64 << 10, 1 << 20} {
		for _, mode := range []string{"never", "always"} {
			b.Run(fmt.Sprintf("pes=4/%dB/%s", size, mode), func(b *testing.B) {
				cfg := node.Config{HeapSize: 8 << 20, NUMANodes: []int{0, 0, 1, 1}, NUMACollectives: mode, HeapPolicy: "none"}
				benchReduce(b, cfg, 4, size)
			})
		}
	}
}
