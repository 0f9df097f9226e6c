package job_test

import (
	"fmt"

	"github.com/goshmem/goshmem/internal/job"
)

func ExampleLayoutFor() {
	for _, n := range []int{1, 2, 8, 1000} {
		l := job.LayoutFor(n)
		fmt.Printf("%4d PEs: %2d barrier rounds, %4d-byte slots, %6d bytes\n", n, l.Rounds, l.SlotSize, l.Size)
	}
	// Output:
	//    1 PEs:  0 barrier rounds,  448-byte slots,    704 bytes
	//    2 PEs:  1 barrier rounds,  512-byte slots,   1280 bytes
	//    8 PEs:  3 barrier rounds,  640-byte slots,   5376 bytes
	// 1000 PEs: 10 barrier rounds, 1088-byte slots, 1088256 bytes
}

func ExampleDescribe() {
	fmt.Println(job.Describe(job.AbortSignal, 3, 4242, 9))
	fmt.Println(job.Describe(job.AbortExit, 0, 0, 0))
	fmt.Println(job.Describe(job.AbortGlobalExit, 1, 0, 2))
	// Output:
	// PE 3 (pid 4242) was killed by SIGKILL
	// PE 0 exited without calling Finalize
	// PE 1 called GlobalExit(2)
}

func ExampleSpecFromEnv() {
	env := map[string]string{
		job.EnvJobID: "c0ffee", job.EnvNPEs: "4", job.EnvPE: "2",
		job.EnvLocalPEs: "2", job.EnvFD: "3",
	}
	spec, ok, err := job.SpecFromEnv(func(k string) string { return env[k] })
	fmt.Printf("%+v %v %v\n", spec, ok, err)

	_, ok, err = job.SpecFromEnv(func(string) string { return "" })
	fmt.Println(ok, err)
	// Output:
	// {JobID:12648430 NPEs:4 FirstPE:2 LocalPEs:2 FD:3 LauncherPid:0} true <nil>
	// false <nil>
}
