package numa_test

import (
	"fmt"
	"os"

	"github.com/goshmem/goshmem/numa"
)

func ExampleParseCPUList() {
	for _, s := range []string{"0-3,8,10-11\n", "0-7:2", "0-15:2/4", "", "3-1"} {
		cpus, err := numa.ParseCPUList(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(cpus)
	}
	// Output:
	// [0 1 2 3 8 10 11]
	// [0 2 4 6]
	// [0 1 4 5 8 9 12 13]
	// []
	// numa: bad CPU list "3-1": descending range "3-1" (write 1-3); write CPU numbers and ranges separated by commas, e.g. 0-3,8,10-11, or a range with a stride, e.g. 0-7:2
}

func ExampleFormatCPUList() {
	fmt.Println(numa.FormatCPUList([]int{11, 0, 1, 2, 3, 8, 10}))
	// Output: 0-3,8,10-11
}

func ExampleDiscover() {
	topo, err := numa.Discover("testdata/2node") // a copy of a 2-socket machine's sysfs
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range topo.Nodes {
		fmt.Printf("node %d: CPUs %s, %d MiB, distances %v\n", n.ID, numa.FormatCPUList(n.CPUs), n.MemTotal>>20, n.Distances)
	}
	for _, c := range topo.CPUs[:2] {
		fmt.Printf("cpu %d: core %d socket %d node %d\n", c.ID, c.Core, c.Socket, c.Node)
	}
	// Output:
	// node 0: CPUs 0-1,4-5, 16000 MiB, distances [10 21]
	// node 1: CPUs 2-3,6-7, 16384 MiB, distances [21 10]
	// cpu 0: core 0 socket 0 node 0
	// cpu 1: core 1 socket 0 node 0
}

func ExampleCacheLineSize() {
	fmt.Println(numa.CacheLineSize() >= 16)
	// Output: true
}

func ExamplePlace() {
	// A machine of 2 sockets, each a NUMA node of 2 cores with 2
	// hardware threads: core 0 of socket 0 holds CPUs 0 and 4.
	topo := &numa.Topology{
		CPUs: []numa.CPU{
			{ID: 0, Core: 0, Socket: 0, Node: 0, Siblings: []int{0, 4}},
			{ID: 1, Core: 1, Socket: 0, Node: 0, Siblings: []int{1, 5}},
			{ID: 2, Core: 0, Socket: 1, Node: 1, Siblings: []int{2, 6}},
			{ID: 3, Core: 1, Socket: 1, Node: 1, Siblings: []int{3, 7}},
			{ID: 4, Core: 0, Socket: 0, Node: 0, Siblings: []int{0, 4}},
			{ID: 5, Core: 1, Socket: 0, Node: 0, Siblings: []int{1, 5}},
			{ID: 6, Core: 0, Socket: 1, Node: 1, Siblings: []int{2, 6}},
			{ID: 7, Core: 1, Socket: 1, Node: 1, Siblings: []int{3, 7}},
		},
		Online: []int{0, 1, 2, 3, 4, 5, 6, 7},
		Nodes: []numa.Node{
			{ID: 0, CPUs: []int{0, 1, 4, 5}, Distances: []int{10, 21}},
			{ID: 1, CPUs: []int{2, 3, 6, 7}, Distances: []int{21, 10}},
		},
		Sockets: []numa.Socket{
			{ID: 0, CPUs: []int{0, 1, 4, 5}, Nodes: []int{0}, Cores: 2},
			{ID: 1, CPUs: []int{2, 3, 6, 7}, Nodes: []int{1}, Cores: 2},
		},
	}
	usable := topo.Online
	fmt.Println("default binding for 4 PEs:", numa.DefaultBinding(topo, usable, 4))

	// mpirun --map-by socket --bind-to core --report-bindings
	places, err := numa.Place(topo, usable, 4, numa.MapSocket, numa.BindCore)
	if err != nil {
		fmt.Println(err)
		return
	}
	for pe, p := range places {
		fmt.Printf("PE %d: %s %s\n", pe, topo.BindingMap(p.Bind, usable), topo.Describe(p, numa.BindCore, usable))
	}
	// Output:
	// default binding for 4 PEs: numa
	// PE 0: [BB/..][../..] bound to core 0 (CPUs 0,4) of socket 0, NUMA node 0
	// PE 1: [../..][BB/..] bound to core 0 (CPUs 2,6) of socket 1, NUMA node 1
	// PE 2: [../BB][../..] bound to core 1 (CPUs 1,5) of socket 0, NUMA node 0
	// PE 3: [../..][../BB] bound to core 1 (CPUs 3,7) of socket 1, NUMA node 1
}

func ExampleTopology_WriteHardware() {
	// A copy of the sysfs tree of a two-socket machine (see testdata).
	topo, err := numa.Discover("testdata/2socket-smt")
	if err != nil {
		fmt.Println(err)
		return
	}
	topo.WriteHardware(os.Stdout)
	// Output:
	// available: 2 nodes (0-1)
	// node 0 cpus: 0 1 2 3 8 9 10 11
	// node 0 size: 64000 MB
	// node 0 free: 58593 MB
	// node 1 cpus: 4 5 6 7 12 13 14 15
	// node 1 size: 64000 MB
	// node 1 free: 48828 MB
	// node distances:
	// node   0   1
	//   0:  10  21
	//   1:  21  10
}
