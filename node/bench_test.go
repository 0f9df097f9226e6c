package node_test

import (
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// BenchmarkWaitWake measures the wait path: PE 1 waits with WaitUntil
// for a counter that PE 0 bumps with an AMO, then answers the same way;
// "us/round-trip" is one exchange. With 2 PEs on 2 CPUs both sides spin.
func BenchmarkWaitWake(b *testing.B) {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 2, func(pe *goshmem.PE) {
		flag, _ := goshmem.Calloc[int64](pe, 1)
		c, me := pe.Ctx(), pe.MyPE()
		pe.BarrierAll()
		if me == 0 {
			b.ResetTimer()
		}
		for i := int64(1); i <= int64(b.N); i++ {
			if me == 0 {
				goshmem.AtomicAdd(c, &flag[0], 1, 1)
				goshmem.WaitUntil(pe, &flag[0], goshmem.CmpGE, i)
			} else {
				goshmem.WaitUntil(pe, &flag[0], goshmem.CmpGE, i)
				goshmem.AtomicAdd(c, &flag[0], 1, 0)
			}
		}
		if me == 0 {
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/round-trip")
		}
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSleepingWake measures the doorbell: PE 1 is asleep on its
// futex (a long spin-free policy) when PE 0 sets the flag; the metric
// is the time from the store until PE 1 is back, as seen by PE 0.
func BenchmarkSleepingWake(b *testing.B) {
	cfg := node.Config{HeapSize: 1 << 20, WaitSpin: 1, WaitYield: 1, WaitSleep: 200 * time.Millisecond}
	err := goshmem.RunLocalConfig(cfg, 2, func(pe *goshmem.PE) {
		flag, _ := goshmem.Calloc[int64](pe, 2)
		c, me := pe.Ctx(), pe.MyPE()
		pe.BarrierAll()
		var total time.Duration
		for i := int64(1); i <= int64(b.N); i++ {
			if me == 0 {
				time.Sleep(200 * time.Microsecond) // let PE 1 fall asleep
				t0 := time.Now()
				goshmem.AtomicSet(c, &flag[0], i, 1)
				goshmem.WaitUntil(pe, &flag[1], goshmem.CmpEQ, i)
				total += time.Since(t0)
			} else {
				goshmem.WaitUntil(pe, &flag[0], goshmem.CmpEQ, i)
				goshmem.AtomicSet(c, &flag[1], i, 0)
			}
		}
		if me == 0 {
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/1e3, "us/wake")
		}
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSyncAll times the dissemination barrier with in-process PEs.
func BenchmarkSyncAll(b *testing.B) {
	for _, n := range []int{2, 4} {
		b.Run(map[int]string{2: "pes=2", 4: "pes=4"}[n], func(b *testing.B) {
			err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, n, func(pe *goshmem.PE) {
				if pe.MyPE() == 0 {
					b.ResetTimer()
				}
				for i := 0; i < b.N; i++ {
					pe.SyncAll()
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
