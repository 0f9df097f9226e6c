// Command imbalance is a bulk-synchronous program whose PEs get unequal
// work, the rand_work pattern of the Pure paper: in each iteration
// every PE computes its cells, then the PEs sum their results with a
// reduction. One PE (the heavy one) has several times the cells of the
// others, so without help the others wait for it in the reduction.
// Each PE computes its cells as a goshmem.Task, and the waiting PEs run
// chunks of the heavy PE's task (SHMEM_TASK_STEAL, on by default).
//
//	go run ./cmd/oshrun -n 2 ./examples/imbalance
//	go run ./cmd/oshrun -n 4 --pes-per-proc 2 ./examples/imbalance -heavy 4 -rotate
//	go run ./cmd/oshrun -n 2 -x SHMEM_TASK_STEAL=off ./examples/imbalance
//	go run ./examples/imbalance -serial -n 2    # the same work, serially
//
// Flags:
//
//	-i I       iterations (default 20)
//	-cells C   cells of a light PE per iteration (default 256)
//	-heavy H   the heavy PE has H times as many (default 4; 1: balanced)
//	-rotate    the heavy PE is iteration%NPEs, not always PE 0
//	-cost K    rounds of the cell function (default 2000, a few us)
//	-chunk K   cells per chunk of a task (default 4)
//	-check     recompute the whole job serially on PE 0 and compare (default true)
//	-serial    run the job's work in this process, in one goroutine,
//	           for -n PEs, and print its time (no goshmem)
//	-n N       with -serial: the number of PEs to do the work of
//
// Cell j of PE p in iteration it is f(seed(p, it, j)), f being -cost
// rounds of a xorshift-multiply mix. A chunk's body reaches the owner's
// cells through goshmem.Ptr and reads the owner's iteration and cell
// count from the owner's heap, where the owner stores them before
// Execute: that is how a task gets per-execution arguments. The
// checksum is the sum (mod 2^64) of every cell of every iteration, so
// it does not depend on who computed what: PE 0 compares it with a
// serial recomputation. Output (PE 0):
//
//	PEs 2  iterations 20  heavy PE 0 x4  cells 256  chunk 4  cost 2000  steal on  GOMAXPROCS 2
//	time per iteration: 2.716 ms
//	chunks run by other PEs than their owner: 1402
//	checksum 0x1b8c1e2d6a5f2e11
//	check: ok
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem"
)

type params struct {
	iters, cells, heavy, cost, chunk int
	rotate                           bool
}

// cellsOf returns how many cells PE p computes in iteration it.
func (pr params) cellsOf(p, it, npes int) int {
	h := 0
	if pr.rotate {
		h = it % npes
	}
	if p == h {
		return pr.cells * pr.heavy
	}
	return pr.cells
}

// cell is the work of one cell.
func cell(p, it, j, cost int) uint64 {
	x := uint64(p)<<40 ^ uint64(it)<<20 ^ uint64(j) ^ 0x9e3779b97f4a7c15
	for range cost {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		x *= 0x2545f4914f6cdd1d
	}
	return x
}

// serial computes the checksum of the whole job in one goroutine.
func serial(pr params, npes int) uint64 {
	var sum uint64
	for it := range pr.iters {
		for p := range npes {
			for j := range pr.cellsOf(p, it, npes) {
				sum += cell(p, it, j, pr.cost)
			}
		}
	}
	return sum
}

func main() {
	var pr params
	flag.IntVar(&pr.iters, "i", 20, "iterations")
	flag.IntVar(&pr.cells, "cells", 256, "cells of a light PE per iteration")
	flag.IntVar(&pr.heavy, "heavy", 4, "the heavy PE has this many times the cells")
	flag.BoolVar(&pr.rotate, "rotate", false, "the heavy PE is iteration%NPEs")
	flag.IntVar(&pr.cost, "cost", 2000, "rounds of the cell function")
	flag.IntVar(&pr.chunk, "chunk", 4, "cells per chunk")
	check := flag.Bool("check", true, "compare with a serial recomputation on PE 0")
	ser := flag.Bool("serial", false, "run the work serially, without goshmem")
	n := flag.Int("n", 1, "with -serial: PEs whose work to do")
	flag.Parse()
	if pr.iters < 1 || pr.cells < 1 || pr.heavy < 1 || pr.cost < 0 || pr.chunk < 1 || *n < 1 {
		fmt.Fprintln(os.Stderr, "imbalance: -i, -cells, -heavy, -chunk and -n must be at least 1, -cost at least 0")
		os.Exit(2)
	}
	if *ser {
		t0 := time.Now()
		sum := serial(pr, *n)
		fmt.Printf("serial: PEs %d  iterations %d  heavy x%d  cells %d  cost %d\n", *n, pr.iters, pr.heavy, pr.cells, pr.cost)
		fmt.Printf("time per iteration: %.3f ms\n", float64(time.Since(t0).Microseconds())/1000/float64(pr.iters))
		fmt.Printf("checksum %#016x\n", sum)
		return
	}
	goshmem.Main(func(pe *goshmem.PE) { run(pe, pr, *check) })
}

func run(pe *goshmem.PE, pr params, check bool) {
	me, npes := pe.MyPE(), pe.NPEs()
	maxCells := pr.cells * pr.heavy
	out, err := goshmem.Malloc[uint64](pe, maxCells)
	if err != nil {
		panic(err)
	}
	arg, err := goshmem.Calloc[int64](pe, 2) // the owner's iteration and cell count
	if err != nil {
		panic(err)
	}
	sum, err := goshmem.Calloc[uint64](pe, 2) // this PE's sum, the reduction's result
	if err != nil {
		panic(err)
	}
	var stolen atomic.Int64
	task := goshmem.NewTask(pe, func(owner, lo, hi int) {
		a := goshmem.Ptr(pe, arg, owner)
		it, cells := int(atomic.LoadInt64(&a[0])), int(atomic.LoadInt64(&a[1]))
		o := goshmem.Ptr(pe, out, owner)
		for j := lo * pr.chunk; j < min(hi*pr.chunk, cells); j++ {
			o[j] = cell(owner, it, j, pr.cost)
		}
		if owner != pe.MyPE() {
			stolen.Add(int64(hi - lo))
		}
	})
	var total uint64
	world := goshmem.TeamWorld(pe)
	pe.BarrierAll()
	t0 := time.Now()
	for it := range pr.iters {
		cells := pr.cellsOf(me, it, npes)
		atomic.StoreInt64(&arg[0], int64(it))
		atomic.StoreInt64(&arg[1], int64(cells))
		task.Execute((cells + pr.chunk - 1) / pr.chunk)
		var s uint64
		for _, v := range out[:cells] {
			s += v
		}
		sum[0] = s
		goshmem.SumReduce(world, sum[1:2], sum[0:1]) // the light PEs wait here
		total += sum[1]
	}
	pe.BarrierAll()
	dt := time.Since(t0)
	task.Destroy()
	all, err := goshmem.Calloc[int64](pe, 2)
	if err != nil {
		panic(err)
	}
	all[0] = stolen.Load()
	goshmem.SumReduce(world, all[1:2], all[0:1])
	if me != 0 {
		return
	}
	steal := os.Getenv("SHMEM_TASK_STEAL")
	if steal == "" {
		steal = "on"
	}
	who := "PE 0"
	if pr.rotate {
		who = "rotating"
	}
	fmt.Printf("PEs %d  iterations %d  heavy %s x%d  cells %d  chunk %d  cost %d  steal %s  GOMAXPROCS %d\n",
		npes, pr.iters, who, pr.heavy, pr.cells, pr.chunk, pr.cost, steal, runtime.GOMAXPROCS(0))
	fmt.Printf("time per iteration: %.3f ms\n", float64(dt.Microseconds())/1000/float64(pr.iters))
	fmt.Printf("chunks run by other PEs than their owner: %d\n", all[1])
	fmt.Printf("checksum %#016x\n", total)
	if check {
		if want := serial(pr, npes); want != total {
			fmt.Printf("check: MISMATCH, serial %#016x\n", want)
			os.Exit(1)
		}
		fmt.Println("check: ok")
	}
}
