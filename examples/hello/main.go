// Command hello is the smallest goshmem program: every PE says hello,
// then each PE puts its number into its right neighbour's heap and
// prints what its left neighbour put into its own.
//
//	go run ./cmd/oshrun -n 4 ./examples/hello
//	go run ./examples/hello              # a one-PE job
package main

import (
	"fmt"

	"github.com/goshmem/goshmem"
)

func main() {
	goshmem.Main(func(pe *goshmem.PE) {
		me, n := pe.MyPE(), pe.NPEs()
		fmt.Printf("Hello from PE %d of %d\n", me, n)

		x, err := goshmem.Malloc[int64](pe, 1)
		if err != nil {
			panic(err)
		}
		goshmem.P(pe.Ctx(), &x[0], int64(me), (me+1)%n)
		pe.BarrierAll()
		fmt.Printf("PE %d: my left neighbour is PE %d\n", me, x[0])
		goshmem.Free(pe, x)
	})
}
