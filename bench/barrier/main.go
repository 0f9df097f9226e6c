// Command barrier times BarrierAll across the PEs of a job:
//
//	go run ./cmd/oshrun -n 8 ./bench/barrier -i 10000
//
// PE 0 prints the iteration count, the total time and the mean latency.
package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/goshmem/goshmem"
)

func main() {
	iters := flag.Int("i", 10000, "number of barriers")
	warm := flag.Int("w", 100, "warm-up barriers (not timed)")
	flag.Parse()
	goshmem.Main(func(pe *goshmem.PE) {
		for i := 0; i < *warm; i++ {
			pe.BarrierAll()
		}
		start := time.Now()
		for i := 0; i < *iters; i++ {
			pe.BarrierAll()
		}
		el := time.Since(start)
		if pe.MyPE() == 0 {
			fmt.Printf("# goshmem BarrierAll: %d PEs, %d barriers in %.3f s, %.2f us per barrier\n",
				pe.NPEs(), *iters, el.Seconds(), float64(el.Microseconds())/float64(*iters))
		}
	})
}
