package goshmem_test

import (
	"fmt"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// Four PEs pass their number to the right neighbour around a ring; after
// a barrier PE 0 reads what every PE received.
func ExampleRunLocal() {
	err := goshmem.RunLocal(4, func(pe *goshmem.PE) {
		me, n := pe.MyPE(), pe.NPEs()
		got, err := goshmem.Calloc[int64](pe, 1)
		if err != nil {
			panic(err)
		}
		goshmem.P(pe.Ctx(), &got[0], int64(me), (me+1)%n)
		pe.BarrierAll()
		if me == 0 {
			for q := 0; q < n; q++ {
				fmt.Printf("PE %d received %d\n", q, goshmem.G(pe.Ctx(), &got[0], q))
			}
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// PE 0 received 3
	// PE 1 received 0
	// PE 2 received 1
	// PE 3 received 2
}

// Every PE takes a ticket from a counter on PE 0; the tickets are
// distinct and the counter ends at the number of PEs.
func ExampleAtomicFetchAdd() {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 4, func(pe *goshmem.PE) {
		ctr, _ := goshmem.Calloc[int64](pe, 1)
		seen, _ := goshmem.Calloc[int64](pe, 1) // bit t set on PE 0: ticket t taken
		ticket := goshmem.AtomicFetchAdd(pe.Ctx(), &ctr[0], 1, 0)
		goshmem.AtomicOr(pe.Ctx(), &seen[0], 1<<ticket, 0)
		pe.BarrierAll()
		if pe.MyPE() == 0 {
			fmt.Printf("counter %d, tickets taken %04b\n", ctr[0], seen[0])
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: counter 4, tickets taken 1111
}

// Ptr gives a slice that loads and stores go straight to another PE's
// heap.
func ExamplePtr() {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 2, func(pe *goshmem.PE) {
		x, _ := goshmem.Calloc[int32](pe, 3)
		if pe.MyPE() == 1 {
			remote := goshmem.Ptr(pe, x, 0) // PE 0's x
			remote[0], remote[1], remote[2] = 7, 8, 9
		}
		pe.BarrierAll()
		if pe.MyPE() == 0 {
			fmt.Println("PE 0's x:", x)
			fmt.Println("Ptr of a Go slice:", goshmem.Ptr(pe, []int32{1}, 1) == nil)
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// PE 0's x: [7 8 9]
	// Ptr of a Go slice: true
}

// PE 0 waits until PE 1 has raised a flag in PE 0's heap.
func ExampleWaitUntil() {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 2, func(pe *goshmem.PE) {
		flag, _ := goshmem.Calloc[int64](pe, 1)
		switch pe.MyPE() {
		case 0:
			goshmem.WaitUntil(pe, &flag[0], goshmem.CmpGE, 42)
			fmt.Println("flag is", flag[0])
		case 1:
			goshmem.AtomicSet(pe.Ctx(), &flag[0], 42, 0)
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: flag is 42
}

// PutSignal delivers data and a signal: the receiver that sees the
// signal sees the data.
func ExamplePutSignal() {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 2, func(pe *goshmem.PE) {
		msg, _ := goshmem.Calloc[byte](pe, 5)
		sig, _ := goshmem.Calloc[uint64](pe, 1)
		switch pe.MyPE() {
		case 1:
			goshmem.PutSignal(pe.Ctx(), msg, []byte("hello"), &sig[0], 1, goshmem.SignalSet, 0)
		case 0:
			s := goshmem.SignalWaitUntil(pe, &sig[0], goshmem.CmpEQ, 1)
			fmt.Printf("signal %d: %s\n", s, msg)
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: signal 1: hello
}
