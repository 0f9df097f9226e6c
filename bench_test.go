package goshmem_test

import (
	"fmt"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// benchPair allocates n elements of T on both PEs of a two-PE
// in-process job, then runs body on PE 0 while PE 1 waits in a barrier;
// the timer covers only body.
func benchPair[T any](b *testing.B, transport string, n int, body func(b *testing.B, c *goshmem.Ctx, x []T)) {
	b.Helper()
	cfg := node.Config{HeapSize: 64 << 20, Transport: transport}
	err := goshmem.RunLocalConfig(cfg, 2, func(pe *goshmem.PE) {
		x, err := goshmem.Malloc[T](pe, n)
		if err != nil {
			panic(err)
		}
		if pe.MyPE() == 0 {
			b.ResetTimer()
			body(b, pe.Ctx(), x)
			b.StopTimer()
		}
		pe.BarrierAll()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// perOp reports the time per operation in the benchmark's own unit
// (e.g. "ns/put"), and rate, if given, the operations per second in
// millions (e.g. "Mput/s"), so that benchstat tables read in the terms
// of the operation measured.
func perOp(b *testing.B, unit, rate string) {
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns, unit)
	if rate != "" && ns > 0 {
		b.ReportMetric(1e3/ns, rate)
	}
}

func transports(b *testing.B, f func(b *testing.B, transport string)) {
	for _, t := range []string{"xpmem", "cma"} {
		b.Run(t, func(b *testing.B) { f(b, t) })
	}
}

// BenchmarkPut is put+quiet of one 8-byte element, as OSU's put latency.
func BenchmarkPut(b *testing.B) {
	transports(b, func(b *testing.B, tr string) {
		benchPair(b, tr, 1, func(b *testing.B, c *goshmem.Ctx, x []int64) {
			src := []int64{42}
			for b.Loop() {
				goshmem.Put(c, x, src, 1)
				c.Quiet()
			}
			perOp(b, "ns/put+quiet", "")
		})
	})
}

func BenchmarkGet(b *testing.B) {
	transports(b, func(b *testing.B, tr string) {
		benchPair(b, tr, 1, func(b *testing.B, c *goshmem.Ctx, x []int64) {
			dst := []int64{0}
			for b.Loop() {
				goshmem.Get(c, dst, x, 1)
			}
			perOp(b, "ns/get", "")
		})
	})
}

func BenchmarkP(b *testing.B) {
	benchPair(b, "auto", 1, func(b *testing.B, c *goshmem.Ctx, x []int64) {
		for b.Loop() {
			goshmem.P(c, &x[0], 1, 1)
		}
		perOp(b, "ns/p", "Mp/s")
	})
}

func BenchmarkG(b *testing.B) {
	benchPair(b, "auto", 1, func(b *testing.B, c *goshmem.Ctx, x []int64) {
		var s int64
		for b.Loop() {
			s += goshmem.G(c, &x[0], 1)
		}
		perOp(b, "ns/g", "Mg/s")
		_ = s
	})
}

// BenchmarkPutBandwidth reports MB/s of nbi puts followed by one quiet.
func BenchmarkPutBandwidth(b *testing.B) {
	for _, size := range []int{8, 4 << 10, 1 << 20, 4 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			transports(b, func(b *testing.B, tr string) {
				benchPair(b, tr, size, func(b *testing.B, c *goshmem.Ctx, x []byte) {
					src := make([]byte, size)
					b.SetBytes(int64(size))
					for b.Loop() {
						goshmem.PutNBI(c, x, src, 1)
					}
					c.Quiet()
				})
			})
		})
	}
}

func BenchmarkAtomicFetchAdd(b *testing.B) {
	transports(b, func(b *testing.B, tr string) {
		benchPair(b, tr, 1, func(b *testing.B, c *goshmem.Ctx, x []int64) {
			for b.Loop() {
				goshmem.AtomicFetchAdd(c, &x[0], 1, 1)
			}
			perOp(b, "ns/fetch_add", "")
		})
	})
}

func BenchmarkAtomicCompareSwap(b *testing.B) {
	benchPair(b, "auto", 1, func(b *testing.B, c *goshmem.Ctx, x []int64) {
		var i int64
		for b.Loop() {
			goshmem.AtomicCompareSwap(c, &x[0], i, i+1, 1)
			i++
		}
		perOp(b, "ns/compare_swap", "")
	})
}

func BenchmarkAtomicAdd(b *testing.B) {
	benchPair(b, "auto", 1, func(b *testing.B, c *goshmem.Ctx, x []int64) {
		for b.Loop() {
			goshmem.AtomicAdd(c, &x[0], 1, 1)
		}
		perOp(b, "ns/add", "Madd/s")
	})
}

// BenchmarkPtrStore compares a store through Ptr with a store to a
// local Go variable (the ptr target: within 1.2x).
func BenchmarkPtrStore(b *testing.B) {
	b.Run("ptr", func(b *testing.B) {
		benchPair(b, "auto", 64, func(b *testing.B, c *goshmem.Ctx, x []int64) {
			r := goshmem.Ptr(c.PE(), x, 1)
			for i := 0; b.Loop(); i++ {
				r[i&63] = int64(i)
			}
		})
	})
	b.Run("local", func(b *testing.B) {
		r := make([]int64, 64)
		for i := 0; b.Loop(); i++ {
			r[i&63] = int64(i)
		}
	})
}

// BenchmarkPingPong is the one-way latency of put data, fence, put flag
// between two PEs, each waiting for the other's flag (OSU put_pingpong).
func BenchmarkPingPong(b *testing.B) {
	cfg := node.Config{HeapSize: 16 << 20}
	err := goshmem.RunLocalConfig(cfg, 2, func(pe *goshmem.PE) {
		data, _ := goshmem.Malloc[int64](pe, 1)
		flag, _ := goshmem.Calloc[int64](pe, 1)
		c := pe.Ctx()
		me, other := pe.MyPE(), 1-pe.MyPE()
		src := []int64{7}
		pe.BarrierAll()
		if me == 0 {
			b.ResetTimer()
		}
		n := int64(b.N)
		for i := int64(1); i <= n; i++ {
			if me == 0 {
				goshmem.Put(c, data, src, other)
				c.Fence()
				goshmem.P(c, &flag[0], i, other)
				goshmem.WaitUntil(pe, &flag[0], goshmem.CmpEQ, i)
			} else {
				goshmem.WaitUntil(pe, &flag[0], goshmem.CmpEQ, i)
				goshmem.Put(c, data, src, other)
				c.Fence()
				goshmem.P(c, &flag[0], i, other)
			}
		}
		if me == 0 {
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N)/1000, "us-one-way")
		}
		pe.BarrierAll()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkBarrierAll times BarrierAll with 2 and 8 in-process PEs.
func BenchmarkBarrierAll(b *testing.B) {
	for _, n := range []int{2, 8} {
		b.Run(fmt.Sprintf("pes=%d", n), func(b *testing.B) {
			cfg := node.Config{HeapSize: 1 << 20}
			err := goshmem.RunLocalConfig(cfg, n, func(pe *goshmem.PE) {
				if pe.MyPE() == 0 {
					b.ResetTimer()
				}
				for i := 0; i < b.N; i++ {
					pe.BarrierAll()
				}
				if pe.MyPE() == 0 {
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/barrier")
				}
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
