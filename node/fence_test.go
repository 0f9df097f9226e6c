package node_test

import (
	"fmt"
	"math/rand/v2"
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
// PE reports the contract it used. A lost wake-up would cost a sleep of
// up to SHMEM_WAIT_SLEEP (500 ms here) and show in the elapsed time.
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

// TestGoroutinePEsDoNotFence: goroutine PEs park in the process, so
// their waits never pay membarrier, and flags stay atomic exchanges.
func TestGoroutinePEsDoNotFence(t *testing.T) {
	err := goshmem.RunLocalConfig(longSleep, 2, func(pe *goshmem.PE) {
		if pe.WaitFenced() {
			panic("goroutine PEs' waits fence")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
