package node_test

// Tasks across processes: thieves in other processes run chunks of an
// owner's task on the owner's heap (mapped), every chunk exactly once;
// a dead owner or a thief that panics stops the job.

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
)

func init() {
	scenarios["tasks"] = func(pe *goshmem.PE) { scenarioTasks(pe) }
	// Across hosts: every chunk is run on its owner's host.
	scenarios["xhost-tasks"] = func(pe *goshmem.PE) {
		for q := range scenarioTasks(pe) {
			if !pe.PtrAccessible(int(q)) {
				fail(pe, "PE %d, on another host, ran a chunk of PE %d's task", q, pe.MyPE())
			}
		}
		fmt.Printf("PE %d ok tasks\n", pe.MyPE())
	}
	scenarios["task-owner-dies"] = scenarioTaskOwnerDies
	scenarios["task-thief-panics"] = scenarioTaskThiefPanics
}

// burn computes for about d, as a chunk's work (a sleep would let the
// owner's CPU idle, and no thief would be needed).
func burn(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// scenarioTasks: each PE executes a task per iteration, PE 0 a large
// one with chunks of some microseconds, the others small ones, then a
// barrier. Each chunk adds one to its count in the owner's heap and
// records its runner; the owner checks that every chunk ran once and
// PE 0 prints which PEs ran its chunks. It returns how many chunks of
// this PE's tasks each other PE ran.
func scenarioTasks(pe *goshmem.PE) map[int64]int {
	const maxChunks, iters = 2000, 30
	me := pe.MyPE()
	runs, _ := goshmem.Calloc[int64](pe, maxChunks)
	who, _ := goshmem.Calloc[int64](pe, maxChunks)
	// thefts[0]: chunks of this PE's tasks that PEs of other processes
	// ran (any other PE when the job is one process); thefts[1]: this
	// PE's pid.
	thefts, _ := goshmem.Calloc[int64](pe, 2)
	thefts[1] = int64(os.Getpid())
	oneProcess := os.Getenv("GOSHMEM_LOCAL_PES") == strconv.Itoa(pe.NPEs())
	pe.BarrierAll()
	hold := me == 0 && pe.NPEs() > 1
	task := goshmem.NewTask(pe, func(owner, lo, hi int) {
		r, w := goshmem.Ptr(pe, runs, owner), goshmem.Ptr(pe, who, owner)
		if th := goshmem.Ptr(pe, thefts, owner); owner != pe.MyPE() && (oneProcess || th[1] != int64(os.Getpid())) {
			atomic.AddInt64(&th[0], 1)
		} else if owner == pe.MyPE() && lo == 0 && hold {
			// PE 0's first batch waits until a PE of another process
			// ran one of its chunks: that happens whatever the
			// machine's load.
			for end := time.Now().Add(20 * time.Second); atomic.LoadInt64(&thefts[0]) == 0; runtime.Gosched() {
				if time.Now().After(end) {
					fail(pe, "no PE stole a chunk within 20 s")
				}
			}
			hold = false
		}
		for c := lo; c < hi; c++ {
			if owner == 0 {
				burn(5 * time.Microsecond)
			}
			atomic.AddInt64(&r[c], 1)
			atomic.StoreInt64(&w[c], int64(pe.MyPE()))
		}
	})
	thieves := map[int64]int{}
	for it := 0; it < iters; it++ {
		n := 50 + (it*37+me*101)%200
		if me == 0 {
			n = maxChunks
		}
		task.Execute(n)
		pe.BarrierAll()
		for c := range maxChunks {
			want := int64(0)
			if c < n {
				want = 1
			}
			if runs[c] != want {
				fail(pe, "iteration %d: chunk %d of %d ran %d times, want %d", it, c, n, runs[c], want)
			}
			if c < n && who[c] != int64(me) {
				thieves[who[c]]++
			}
			runs[c], who[c] = 0, 0
		}
		pe.BarrierAll()
	}
	task.Destroy()
	if me == 0 {
		ts := make([]int, 0, len(thieves))
		for q := range thieves {
			ts = append(ts, int(q))
		}
		slices.Sort(ts)
		fmt.Printf("PE 0 thieves %v stolen %d\n", ts, pe.TasksStolen())
	}
	return thieves
}

// scenarioTaskOwnerDies: PE 0 is killed in the middle of its task while
// the others steal from it in a barrier.
func scenarioTaskOwnerDies(pe *goshmem.PE) {
	var ran atomic.Int64
	task := goshmem.NewTask(pe, func(owner, lo, hi int) {
		for range hi - lo {
			burn(50 * time.Microsecond)
			if pe.MyPE() == owner && ran.Add(1) == 100 {
				fmt.Fprintf(os.Stderr, "PE 0 kills itself at %d\n", time.Now().UnixNano())
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	})
	if pe.MyPE() == 0 {
		task.Execute(1 << 20)
	}
	pe.BarrierAll()
}

// scenarioTaskThiefPanics: a chunk panics on PE 2 (another process than
// the owner's).
func scenarioTaskThiefPanics(pe *goshmem.PE) {
	task := goshmem.NewTask(pe, func(owner, lo, hi int) {
		burn(time.Duration(hi-lo) * 20 * time.Microsecond)
		if pe.MyPE() == 2 {
			panic("cell out of range")
		}
	})
	if pe.MyPE() == 0 {
		task.Execute(1 << 20)
	}
	pe.BarrierAll()
}

func TestMultiProcessTasks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		npes, ppp int
	}{
		{"4x1", 4, 1},
		{"4x2-mixed", 4, 2},
		{"3x3-goroutines", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runJob(t, "tasks", tc.npes, tc.ppp, false)
			if r.err != nil || r.code != 0 {
				t.Fatalf("code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
			}
			i := strings.Index(r.stdout, "PE 0 thieves [")
			if i < 0 {
				t.Fatalf("no thieves line:\n%s", r.stdout)
			}
			line := r.stdout[i+len("PE 0 thieves ["):]
			line = line[:strings.Index(line, "]")]
			var others bool // a thief in another process than PE 0's
			for _, f := range strings.Fields(line) {
				q, _ := strconv.Atoi(f)
				others = others || q >= tc.ppp
			}
			if tc.ppp < tc.npes && !others {
				t.Errorf("no PE of another process ran a chunk of PE 0's tasks: %s", r.stdout)
			}
			if line == "" {
				t.Errorf("no PE ran a chunk of PE 0's tasks: %s", r.stdout)
			}
			t.Logf("%s", strings.TrimSpace(r.stdout[i:]))
		})
	}
}

// TestTaskOwnerKilled: the thieves of a task whose owner dies stop, and
// the job ends with the launcher's report of the death, as fast as for
// a death anywhere else.
func TestTaskOwnerKilled(t *testing.T) {
	checkKilled(t, runJob(t, "task-owner-dies", 3, 1, false), 0)
}

// TestTaskThiefPanicsInProcess: a thief's panic fails the job; its
// message names the owner, the task and the chunk.
func TestTaskThiefPanicsAcrossProcesses(t *testing.T) {
	r := runJob(t, "task-thief-panics", 3, 1, false)
	if r.code == 0 {
		t.Fatalf("job succeeded; stderr:\n%s", r.stderr)
	}
	for _, w := range []string{"of task 0", "of PE 0, run by PE 2", "cell out of range"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
		}
	}
	if r.elapsed > 10*time.Second {
		t.Errorf("the job took %v to stop", r.elapsed)
	}
}
