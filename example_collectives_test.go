package goshmem_test

import (
	"fmt"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// Every PE contributes a vector; SumReduce leaves the element-wise sum
// in every PE's dst.
func ExampleSumReduce() {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 4, func(pe *goshmem.PE) {
		src, _ := goshmem.Malloc[int64](pe, 3)
		dst, _ := goshmem.Malloc[int64](pe, 3)
		me := int64(pe.MyPE())
		src[0], src[1], src[2] = 1, me, me*me
		goshmem.SumReduce(goshmem.TeamWorld(pe), dst, src)
		pe.BarrierAll()
		if pe.MyPE() == 0 {
			fmt.Println("count, sum of PE numbers, sum of squares:", dst)
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: count, sum of PE numbers, sum of squares: [4 6 14]
}

// Broadcast copies the root's src into every member's dst.
func ExampleBroadcast() {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 3, func(pe *goshmem.PE) {
		msg, _ := goshmem.Malloc[byte](pe, 5)
		got, _ := goshmem.Calloc[byte](pe, 5)
		copy(msg, fmt.Sprintf("hi %d!", pe.MyPE()))
		goshmem.Broadcast(goshmem.TeamWorld(pe), got, msg, 2) // from PE 2
		// Gather what each PE received on PE 0.
		all, _ := goshmem.Malloc[byte](pe, 15)
		goshmem.FCollect(goshmem.TeamWorld(pe), all, got)
		pe.BarrierAll()
		if pe.MyPE() == 0 {
			for q := 0; q < 3; q++ {
				fmt.Printf("PE %d got %q\n", q, all[q*5:q*5+5])
			}
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// PE 0 got "hi 2!"
	// PE 1 got "hi 2!"
	// PE 2 got "hi 2!"
}

// SplitStrided makes a team of the odd PEs, walked backwards: world PE
// 5 is its PE 0. A reduction over it sums the odd PE numbers; the even
// PEs are not members and get the invalid team.
func ExampleTeam_SplitStrided() {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 6, func(pe *goshmem.PE) {
		world := goshmem.TeamWorld(pe)
		odd, err := world.SplitStrided(5, -2, 3, nil)
		if err != nil {
			panic(err)
		}
		x, _ := goshmem.Malloc[int64](pe, 1)
		sum, _ := goshmem.Malloc[int64](pe, 1)
		report, _ := goshmem.Calloc[int64](pe, 6*2) // on PE 0: team PE and sum, per PE
		x[0] = int64(pe.MyPE())
		if odd != nil {
			goshmem.SumReduce(odd, sum, x)
			goshmem.Put(pe.Ctx(), report[2*pe.MyPE():2*pe.MyPE()+2], []int64{int64(odd.MyPE()), sum[0]}, 0)
			odd.Destroy()
		} else {
			goshmem.Put(pe.Ctx(), report[2*pe.MyPE():2*pe.MyPE()+2], []int64{int64(odd.MyPE()), 0}, 0)
		}
		pe.BarrierAll()
		if pe.MyPE() == 0 {
			for q := 0; q < 6; q++ {
				if report[2*q] < 0 {
					fmt.Printf("PE %d: not a member\n", q)
				} else {
					fmt.Printf("PE %d: team PE %d, sum %d\n", q, report[2*q], report[2*q+1])
				}
			}
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// PE 0: not a member
	// PE 1: team PE 2, sum 9
	// PE 2: not a member
	// PE 3: team PE 1, sum 9
	// PE 4: not a member
	// PE 5: team PE 0, sum 9
}

// TeamNUMA groups the PEs by home NUMA node. oshrun gives each PE the
// node it maps it to (--map-by); here an in-process job says where its
// 4 PEs sit, as on a two-socket machine with --map-by socket.
func ExampleTeamNUMA() {
	cfg := node.Config{HeapSize: 1 << 20, NUMANodes: []int{0, 1, 0, 1}, HeapPolicy: "none"}
	members := make([][]int, 4)
	err := goshmem.RunLocalConfig(cfg, 4, func(pe *goshmem.PE) {
		t := goshmem.TeamNUMA(pe)
		for i := range t.NPEs() {
			members[pe.MyPE()] = append(members[pe.MyPE()], t.WorldPE(i))
		}
	})
	if err != nil {
		fmt.Println(err)
	}
	for pe, m := range members {
		fmt.Printf("PE %d (node %d): TeamNUMA %v\n", pe, cfg.NUMANodes[pe], m)
	}
	// Output:
	// PE 0 (node 0): TeamNUMA [0 2]
	// PE 1 (node 1): TeamNUMA [1 3]
	// PE 2 (node 0): TeamNUMA [0 2]
	// PE 3 (node 1): TeamNUMA [1 3]
}
