package node_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/sys"
)

// scenarioSleepyPublish makes every wait sleep at once (the test runs
// it with SHMEM_WAIT_SPIN=1 SHMEM_WAIT_YIELD=1) while PEs publish with
// Policy.Publish: broadcasts from alternating roots, each root late by
// up to 200 us so that the others are asleep when it publishes, and a
// barrier every 16 rounds. Every PE checks every value and prints
// whether its waits fence.
func scenarioSleepyPublish(pe *goshmem.PE) {
	fmt.Printf("PE %d fenced %v\n", pe.MyPE(), pe.WaitFenced())
	w := goshmem.TeamWorld(pe)
	src, err := goshmem.Calloc[uint64](pe, 1)
	if err != nil {
		fail(pe, "%v", err)
	}
	dst, err := goshmem.Calloc[uint64](pe, 1)
	if err != nil {
		fail(pe, "%v", err)
	}
	rng := rand.New(rand.NewPCG(uint64(pe.MyPE()), 7))
	for i := uint64(1); i <= 400; i++ {
		root := int(i) % pe.NPEs()
		if pe.MyPE() == root {
			src[0] = i*1000 + uint64(root)
			time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		}
		goshmem.Broadcast(w, dst, src, root)
		if want := i*1000 + uint64(root); dst[0] != want {
			fail(pe, "broadcast %d from PE %d: got %d, want %d", i, root, dst[0], want)
		}
		if i%16 == 0 {
			pe.BarrierAll()
		}
	}
}

func init() { scenarios["sleepy-publish"] = scenarioSleepyPublish }

// TestFencedPublication: processes that sleep at every wait still get
// every broadcast and barrier, with the fenced contract (the default
// where the kernel has membarrier) and with SHMEM_WAIT_FENCE=off; each
// PE reports the contract it used, and a job stuck in its waits fails
// the time bound. It checks the data and the contract chosen, not lost
// wake-ups: a wait's first sleeps are short (50 us, doubling), so one
// lost here costs too little to see; TestNoLostWakeupPlainStores
// (internal/wait) tests that with 5-second sleeps.
func TestFencedPublication(t *testing.T) {
	haveFence := sys.MembarrierRegister() == nil
	for _, tc := range []struct {
		name  string
		env   []string
		fence bool
	}{
		{"default", nil, haveFence},
		{"off", []string{"SHMEM_WAIT_FENCE=off"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"SHMEM_WAIT_SPIN=1", "SHMEM_WAIT_YIELD=1", "SHMEM_WAIT_SLEEP=500ms"}, tc.env...)
			r := runJob(t, "sleepy-publish", 3, 1, false, env...)
			if r.code != 0 {
				t.Fatalf("code %d err %v stderr:\n%s", r.code, r.err, r.stderr)
			}
			for pe := range 3 {
				if want := fmt.Sprintf("PE %d fenced %v\n", pe, tc.fence); !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			t.Logf("400 broadcasts, 25 barriers, waits asleep at once: %v (including start-up)", r.elapsed)
			if r.elapsed > 15*time.Second {
				t.Errorf("too slow for 400 broadcasts: %v (lost wake-ups?)", r.elapsed)
			}
		})
	}
	if !haveFence {
		t.Log("this kernel has no membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED): only the unfenced contract ran")
	}
}

// TestGoroutinePEsFence: goroutine PEs that fit their threads spin
// long and rarely park, so they fence like processes (where the kernel
// has membarrier); goroutine PEs that outnumber them park at almost
// every hand-over, so they do not pay a system call there and publish
// with atomic exchanges.
func TestGoroutinePEsFence(t *testing.T) {
	haveFence := sys.MembarrierRegister() == nil
	for _, tc := range []struct {
		npes, procs int
		want        bool
	}{
		{2, 2, haveFence},
		{8, 2, false},
	} {
		t.Run(fmt.Sprintf("%d-PEs-on-%d-threads", tc.npes, tc.procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tc.procs))
			err := goshmem.RunLocalConfig(longSleep, tc.npes, func(pe *goshmem.PE) {
				if got := pe.WaitFenced(); got != tc.want {
					panic(fmt.Sprintf("PE %d: WaitFenced() = %v, want %v (policy %+v)", pe.MyPE(), got, tc.want, pe.WaitPolicy()))
				}
				// Every call below publishes under that contract.
				w := goshmem.TeamWorld(pe)
				x, _ := goshmem.Calloc[int64](pe, 1)
				y, _ := goshmem.Calloc[int64](pe, 1)
				for i := range 200 {
					x[0] = int64(i + pe.MyPE())
					goshmem.SumReduce(w, y, x)
					if want := int64(tc.npes*i + tc.npes*(tc.npes-1)/2); y[0] != want {
						panic(fmt.Sprintf("PE %d: reduction %d = %d, want %d", pe.MyPE(), i, y[0], want))
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
