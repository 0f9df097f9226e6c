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

// BenchmarkSmallCollectives times the small (dropbox) collectives on
// TeamWorld of an in-process job, 8 and 256 bytes of int64 per member:
// with 1 PE it is the software cost of a call (nothing to wait for),
// with 2 the hand-offs too. Sync is the yardstick.
func BenchmarkSmallCollectives(b *testing.B) {
	type op struct {
		name string
		run  func(w *goshmem.Team, dst, src []int64, n int)
	}
	ops := []op{
		{"sync", func(w *goshmem.Team, _, _ []int64, _ int) { w.Sync() }},
		{"bcast", func(w *goshmem.Team, dst, src []int64, n int) { goshmem.Broadcast(w, dst[:n], src[:n], 0) }},
		{"reduce", func(w *goshmem.Team, dst, src []int64, n int) { goshmem.SumReduce(w, dst[:n], src[:n]) }},
		{"fcollect", func(w *goshmem.Team, dst, src []int64, n int) { goshmem.FCollect(w, dst, src[:n]) }},
		{"collect", func(w *goshmem.Team, dst, src []int64, n int) { goshmem.Collect(w, dst, src[:n]) }},
		{"alltoall", func(w *goshmem.Team, dst, src []int64, n int) {
			goshmem.Alltoall(w, dst, src, max(1, n/w.NPEs()))
		}},
	}
	for _, pes := range []int{1, 2} {
		for _, size := range []int{8, 256} {
			for _, o := range ops {
				b.Run(fmt.Sprintf("pes=%d/%dB/%s", pes, size, o.name), func(b *testing.B) {
					err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, pes, func(pe *goshmem.PE) {
						w := goshmem.TeamWorld(pe)
						n := size / 8
						src, _ := goshmem.Malloc[int64](pe, 64)
						dst, _ := goshmem.Malloc[int64](pe, 64*pes)
						w.Sync()
						if pe.MyPE() == 0 {
							b.ResetTimer()
						}
						for i := 0; i < b.N; i++ {
							o.run(w, dst, src, n)
						}
						w.Sync()
						if pe.MyPE() == 0 {
							b.StopTimer()
						}
					})
					if err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}
