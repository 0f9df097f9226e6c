package env_test

import (
	"fmt"
	"strings"

	"github.com/goshmem/goshmem/internal/env"
)

func ExampleParseSize() {
	for _, s := range []string{"4096", "64k", "512M", "1.5g", "3.1m", "12x"} {
		n, err := env.ParseSize(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(s, "=", n)
	}
	// Output:
	// 4096 = 4096
	// 64k = 65536
	// 512M = 536870912
	// 1.5g = 1610612736
	// 3.1m = 3250586
	// unknown suffix "x" in "12x"; use k, m, g or t (powers of 1024), e.g. 512M or 1.5g
}

func ExampleParseBool() {
	for _, s := range []string{"yes", "Off", "1", ""} {
		b, _ := env.ParseBool(s)
		fmt.Printf("%q: %v\n", s, b)
	}
	// Output:
	// "yes": true
	// "Off": false
	// "1": true
	// "": false
}

func ExampleLoad() {
	vars := map[string]string{
		"SHMEM_SYMMETRIC_SIZE": "1g",
		"SHMEM_TRANSPORT":      "cma",
	}
	c, err := env.Load(func(k string) string { return vars[k] })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.SymmetricSize, c.Transport, c.WaitSleep)

	vars["SHMEM_SYMMETRIC_SIZE"] = "12x"
	vars["SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES"] = "maybe"
	_, err = env.Load(func(k string) string { return vars[k] })
	fmt.Println(err)
	// Output:
	// 1073741824 cma 10ms
	// goshmem: unknown suffix "x" in SHMEM_SYMMETRIC_SIZE="12x"; use k, m, g or t (powers of 1024), e.g. 512M or 1.5g (or unset SHMEM_SYMMETRIC_SIZE for the default, 512M)
	// goshmem: not a boolean in SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES="maybe"; use 1/0, y/n, yes/no, true/false or on/off (or unset SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES for the default, off)
}

func ExampleKnobs() {
	for _, k := range env.Knobs() {
		fmt.Println(k.Name, k.Type, k.Default, k.Values)
	}
	// Output:
	// SHMEM_SYMMETRIC_SIZE size 512M []
	// SHMEM_DEBUG bool off []
	// SHMEM_INFO bool off []
	// SHMEM_VERSION bool off []
	// SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES bool off []
	// SHMEM_HEAP_POLICY enum local [local interleave none]
	// SHMEM_TRANSPORT enum auto [auto xpmem cma]
	// SHMEM_BARRIER_ALGORITHM enum auto [auto dissemination tree central]
	// SHMEM_REDUCE_ALGORITHM enum auto [auto flat partitioned recursive-doubling ring rabenseifner]
	// SHMEM_BCAST_ALGORITHM enum auto [auto direct tree]
	// SHMEM_FCOLLECT_ALGORITHM enum auto [auto direct ring recursive-doubling]
	// SHMEM_NUMA_COLLECTIVES enum auto [auto always never]
	// SHMEM_PMI enum auto [auto pmi1 pmi2]
	// SHMEM_HOST string auto []
	// SHMEM_INTERNODE enum tcp [tcp verbs]
	// SHMEM_INTERNODE_IFACE string auto []
	// SHMEM_INTERNODE_POLL bool on []
	// SHMEM_INTERNODE_HOLD bool on []
	// SHMEM_INTERNODE_RDMA bool on []
	// SHMEM_INTERNODE_RDMA_MIN size 8k []
	// SHMEM_VERBS_DEVICE string auto []
	// SHMEM_VERBS_PORT int 0 []
	// SHMEM_VERBS_GID_INDEX int 0 []
	// GOSHMEM_SIM_DOMAINS int 0 []
	// SHMEM_WAIT_SPIN int 0 []
	// SHMEM_WAIT_YIELD int 0 []
	// SHMEM_WAIT_FENCE bool on []
	// SHMEM_TASK_STEAL bool on []
	// SHMEM_COPY_ADAPT bool on []
	// SHMEM_COPY_SHARE size 64k []
	// SHMEM_WAIT_SLEEP duration 10ms []
}

func ExamplePrint() {
	vars := map[string]string{"SHMEM_SYMMETRIC_SIZE": "2g"}
	var b strings.Builder
	env.Print(&b, func(k string) string { return vars[k] })
	// Show the first knob only.
	lines := strings.Split(b.String(), "\n")
	for _, l := range lines[:4] {
		fmt.Println(l)
	}
	// Output:
	// SHMEM_SYMMETRIC_SIZE                = 2g  [size, default 512M]
	//     Bytes of symmetric heap per PE: a number with an optional suffix k, m, g
	//     or t (powers of 1024), fractions allowed, e.g. 64m or 1.5g. All PEs on a
	//     node together need this times their number in memory (memfd segments,
}

func ExampleUnrecognized() {
	environ := []string{"SHMEM_SYMETRIC_SIZE=1g", "SHMEM_DEBUG=1", "HOME=/home/pe"}
	fmt.Println(env.Unrecognized(environ))
	// Output:
	// [SHMEM_SYMETRIC_SIZE]
}
