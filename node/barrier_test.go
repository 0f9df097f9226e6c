package node_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/node"
)

// TestBarrierSeparatesPhases checks each barrier algorithm of the job
// (SHMEM_BARRIER_ALGORITHM: the dissemination barrier, the central
// counter barrier, and what auto chooses) against its definition, for
// every job size up to 9 (powers of two and not): no PE leaves barrier
// k before every PE has entered it (see barrierPhases).
func TestBarrierSeparatesPhases(t *testing.T) {
	for _, alg := range []string{"dissemination", "central", "auto"} {
		for n := 1; n <= 9; n++ {
			err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20, BarrierAlgorithm: alg}, n, func(pe *goshmem.PE) {
				barrierPhases(pe, 200)
			})
			if err != nil {
				t.Fatalf("%s, n=%d: %v", alg, n, err)
			}
		}
	}
}

// barrierPhases does rounds barriers and panics if one lets a PE
// through before every PE has entered it. Each PE announces its arrival
// with an atomic increment on PE 0 and checks, after the barrier, that
// all n arrivals of this round are there; PEs arrive in random order
// with random delays.
func barrierPhases(pe *goshmem.PE, rounds int64) {
	n := pe.NPEs()
	ctr, _ := goshmem.Calloc[int64](pe, 1)
	c := pe.Ctx()
	rng := rand.New(rand.NewPCG(uint64(pe.MyPE()), uint64(n)))
	for k := int64(1); k <= rounds; k++ {
		if rng.IntN(8) == 0 {
			time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		}
		goshmem.AtomicAdd(c, &ctr[0], 1, 0)
		pe.BarrierAll()
		if got := goshmem.AtomicFetch(c, &ctr[0], 0); got < k*int64(n) {
			panic("barrier let a PE through early: " + strconv.FormatInt(got, 10) + " arrivals, want " + strconv.FormatInt(k*int64(n), 10))
		}
		pe.BarrierAll() // nobody starts round k+1 before all checked round k
	}
}

// TestBarrierFollowsOversubscription: with the default
// SHMEM_BARRIER_ALGORITHM, a job whose PEs outnumber the CPUs they run
// on (here goroutine PEs beyond GOMAXPROCS) synchronizes with the
// central counter barrier, which needs every PE on a CPU about once to
// arrive and once to leave, while a job whose PEs fit keeps the
// spinning dissemination barrier. The counter the central barrier
// advances by npes per barrier tells which one ran.
func TestBarrierFollowsOversubscription(t *testing.T) {
	for _, c := range []struct {
		name      string
		npes, gmp int
		central   bool
		algorithm string
	}{
		{"8 goroutine PEs, GOMAXPROCS 2", 8, 2, true, ""},
		{"3 goroutine PEs, GOMAXPROCS 2", 3, 2, true, ""},
		{"2 goroutine PEs, GOMAXPROCS 2", 2, 2, false, ""},
		{"8 goroutine PEs, GOMAXPROCS 2, dissemination asked", 8, 2, false, "dissemination"},
		{"2 goroutine PEs, central asked", 2, 2, true, "central"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.gmp))
			const rounds = 10
			err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20, BarrierAlgorithm: c.algorithm}, c.npes, func(pe *goshmem.PE) {
				for range rounds {
					pe.BarrierAll()
				}
				got := pe.BarrierArrivals() // this job's first barriers
				want := uint64(0)
				if c.central {
					want = uint64(c.npes * rounds)
				}
				// Later PEs may be in the next barrier already: at most
				// npes-1 arrivals more.
				if got < want || (c.central && got >= want+uint64(c.npes)) || (!c.central && got != 0) {
					panic(fmt.Sprintf("PE %d: %d central-barrier arrivals in %d barriers, want %d (central barrier %v)", pe.MyPE(), got, rounds, want, c.central))
				}
				pe.BarrierAll()
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func hugePagesFree(t *testing.T) int {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Skip("no /proc/meminfo")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "HugePages_Free:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// TestHugePageHeaps asks for huge-page heaps: with too few huge pages
// in the pool it must fail at start-up with an error that says how to
// fix it; with enough, the job runs on them.
func TestHugePageHeaps(t *testing.T) {
	cfg := node.Config{HeapSize: 4 << 20, Huge: true}
	free := hugePagesFree(t)
	err := goshmem.RunLocalConfig(cfg, 2, func(pe *goshmem.PE) {
		x, err := goshmem.Malloc[int64](pe, 1024)
		if err != nil {
			panic(err)
		}
		goshmem.P(pe.Ctx(), &x[7], int64(pe.MyPE()+1), 1-pe.MyPE())
		pe.BarrierAll()
		if x[7] != int64(2-pe.MyPE()) {
			panic("wrong value on huge pages")
		}
	})
	if free >= 4 { // 2 PEs x 4 MiB in 2 MiB pages
		if err != nil {
			t.Fatalf("%d huge pages free, yet: %v", free, err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "nr_hugepages") || !strings.Contains(err.Error(), "SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES") {
		t.Fatalf("%d huge pages free: want an error naming nr_hugepages and SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES, got %v", free, err)
	}
}

// TestHeapTooLargeForMachine: heaps that cannot all be backed are an
// error at start-up, not a SIGBUS later.
func TestHeapTooLargeForMachine(t *testing.T) {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 50}, 2, func(pe *goshmem.PE) {
		t.Error("job started")
	})
	if err == nil || !strings.Contains(err.Error(), "SHMEM_SYMMETRIC_SIZE") {
		t.Fatalf("want an error naming SHMEM_SYMMETRIC_SIZE, got %v", err)
	}
}

// TestParkYield: goroutine PEs that outnumber their Ps yield once
// before a control-only wait parks (without a timer: each Gosched takes
// the scheduler's global lock, a park costs a goroutine switch), and
// SHMEM_WAIT_YIELD (Config.WaitYield) sets those yields too.
func TestParkYield(t *testing.T) {
	n := 4 * runtime.GOMAXPROCS(0) // outnumbers the Ps on any machine
	for _, tc := range []struct {
		name      string
		cfg       node.Config
		wantYield int
		wantPark  int
	}{
		{"auto", node.Config{HeapSize: 1 << 20}, -1, 1},
		{"SHMEM_WAIT_YIELD=50", node.Config{HeapSize: 1 << 20, WaitYield: 50}, 50, 50},
	} {
		err := goshmem.RunLocalConfig(tc.cfg, n, func(pe *goshmem.PE) {
			pol := pe.WaitPolicy()
			if pol.Mode != wait.Goroutines || pol.ParkYield != tc.wantPark || tc.wantYield >= 0 && pol.Yield != tc.wantYield {
				panic(fmt.Sprintf("%s: %d goroutine PEs on %d Ps wait with %+v; want mode goroutines, ParkYield %d (Yield %d, -1: auto)",
					tc.name, n, runtime.GOMAXPROCS(0), pol, tc.wantPark, tc.wantYield))
			}
			pe.BarrierAll()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
