package goshmem_test

import (
	"fmt"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// PE 0 has four times the work of the others. Each PE squares its
// cells as a task; the PEs that finish first wait in the reduction and
// run chunks of PE 0's task meanwhile, writing into PE 0's heap
// through Ptr. The sum does not depend on who ran which chunk.
func ExampleNewTask() {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 4, func(pe *goshmem.PE) {
		const light = 1000
		cells := light
		if pe.MyPE() == 0 {
			cells = 4 * light
		}
		x, err := goshmem.Malloc[int64](pe, 4*light)
		if err != nil {
			panic(err)
		}
		for i := range x[:cells] {
			x[i] = int64(i)
		}
		const perChunk = 50
		task := goshmem.NewTask(pe, func(owner, lo, hi int) {
			o := goshmem.Ptr(pe, x, owner) // the owner's cells, wherever this runs
			for i := lo * perChunk; i < hi*perChunk; i++ {
				o[i] *= o[i]
			}
		})
		sums, err := goshmem.Calloc[int64](pe, 2) // before Execute: Calloc is collective, and the PEs must wait in the reduction
		if err != nil {
			panic(err)
		}
		task.Execute(cells / perChunk)

		for _, v := range x[:cells] {
			sums[0] += v
		}
		goshmem.SumReduce(goshmem.TeamWorld(pe), sums[1:], sums[:1])
		if pe.MyPE() == 0 {
			fmt.Println("sum of squares:", sums[1])
		}
		task.Destroy()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// sum of squares: 22323834500
}
