package node_test

// Real multi-process tests: the test binary re-runs itself as the PEs
// of a job started with internal/launch (the library behind oshrun), the
// way os/exec's tests use helper processes.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/launch"
	"github.com/goshmem/goshmem/internal/testcluster"
	"github.com/goshmem/goshmem/node"
)

const scenarioVar = "GOSHMEM_TEST_SCENARIO"

func TestMain(m *testing.M) {
	if s := os.Getenv(scenarioVar); s != "" {
		if s == "rma-mapfault" {
			// Heaps of the last PE cannot be mapped by other processes:
			// start-up must fall back to CMA for it, automatically.
			cfg, err := goshmem.LoadConfig()
			if err != nil {
				panic(err)
			}
			last, _ := strconv.Atoi(os.Getenv("GOSHMEM_NPES"))
			cfg = node.WithMapFault(cfg, func(pe int) error {
				if pe == last-1 {
					return errors.New("injected mapping failure")
				}
				return nil
			})
			if err := node.Main(cfg, scenarioRMA); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		if run := processScenarios[s]; run != nil {
			run()
			os.Exit(0)
		}
		goshmem.Main(scenarios[s])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var scenarios = map[string]func(pe *goshmem.PE){
	"rma":        scenarioRMA,
	"sigkill":    scenarioSigkill,
	"globalexit": scenarioGlobalExit,
	"barriers":   func(pe *goshmem.PE) { barriers(pe, 2000) },
	// PE 1 returns (Finalize) after two reductions on TeamShared while
	// the others make a third: they must fail naming it, not hang.
	"team-finalize-early": func(pe *goshmem.PE) {
		x, err := goshmem.Calloc[int64](pe, 2)
		if err != nil {
			panic(err)
		}
		tm := goshmem.TeamShared(pe)
		for i := range 3 {
			if i == 2 && pe.MyPE() == 1 {
				return
			}
			goshmem.SumReduce(tm, x[:1], x[1:])
		}
	},
	// PE 0 panics while PE 1, in the same process under -pes-per-proc
	// 2, computes for 30 s without calling goshmem: the launcher ends
	// the process long before PE 1 comes back.
	"panic-busy-sibling": func(pe *goshmem.PE) {
		pe.BarrierAll()
		if pe.MyPE() == 0 {
			time.Sleep(200 * time.Millisecond) // PE 1 computes by now
			panic("victim panics on purpose")
		}
		for start := time.Now(); time.Since(start) < 30*time.Second; {
		}
	},
	// Two goroutines of each PE: one makes a team, runs a reduction
	// (which makes its levels when the team spans domains) and destroys
	// it, the other makes and destroys teams meanwhile.
	"destroy-levels": func(pe *goshmem.PE) {
		w := goshmem.TeamWorld(pe)
		n := pe.NPEs()
		ta, _ := w.SplitStrided(0, 1, n, nil)
		tb, _ := w.SplitStrided(0, 1, n, nil)
		buf, _ := goshmem.Malloc[int64](pe, 2)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 300 {
				t, err := ta.SplitStrided(0, 1, n, nil)
				if err != nil {
					panic(err)
				}
				buf[0] = 1
				goshmem.SumReduce(t, buf[1:], buf[:1])
				if buf[1] != int64(n) {
					panic(fmt.Sprintf("PE %d: sum %d, want %d", pe.MyPE(), buf[1], n))
				}
				t.Destroy()
			}
		}()
		go func() {
			defer wg.Done()
			for range 900 {
				t, err := tb.SplitStrided(0, 1, n, nil)
				if err != nil {
					panic(err)
				}
				t.Destroy()
			}
		}()
		wg.Wait()
		pe.BarrierAll()
		fmt.Printf("PE %d done\n", pe.MyPE())
	},
	"goexit": func(pe *goshmem.PE) {
		if pe.MyPE() == pe.NPEs()-1 {
			runtime.Goexit()
		}
		pe.BarrierAll()
	},
	"gomaxprocs": func(pe *goshmem.PE) { fmt.Printf("PE %d GOMAXPROCS %d\n", pe.MyPE(), runtime.GOMAXPROCS(0)) },
	"goroutine-ring": func(pe *goshmem.PE) {
		fmt.Printf("PE %d hop %d ns\n", pe.MyPE(), goroutineRing(pe, 3, 300).Nanoseconds())
	},
	"barrier-phases": func(pe *goshmem.PE) {
		barrierPhases(pe, 300)
		if alg := os.Getenv("SHMEM_BARRIER_ALGORITHM"); pe.MyPE() == 0 {
			fmt.Printf("central-barrier arrivals %d groups %d (%s)\n", pe.BarrierArrivals(), pe.BarrierGroups(), alg)
		}
	},
}

// fail makes the PE process exit non-zero with a message on stderr.
func fail(pe *goshmem.PE, format string, args ...any) {
	panic(fmt.Sprintf("PE %d: %s", pe.MyPE(), fmt.Sprintf(format, args...)))
}

// scenarioRMA exercises the data path across processes: puts to the
// right neighbour, gets, AMOs on PE 0, a lock, a signal, and Ptr.
func scenarioRMA(pe *goshmem.PE) {
	me, n := pe.MyPE(), pe.NPEs()
	c := pe.Ctx()
	buf, _ := goshmem.Calloc[int64](pe, 1024)
	ctr, _ := goshmem.Calloc[int64](pe, 3)
	lock, _ := goshmem.Calloc[int64](pe, 1)
	sig, _ := goshmem.Calloc[uint64](pe, 1)
	right, left := (me+1)%n, (me+n-1)%n
	src := make([]int64, 1024)
	for i := range src {
		src[i] = int64(me*10000 + i)
	}
	goshmem.Put(c, buf, src, right)
	goshmem.AtomicFetchAdd(c, &ctr[0], int64(me+1), 0)
	goshmem.AtomicAdd(c, &ctr[2], int64(me+1), 0) // no result: completed by BarrierAll's Quiet
	goshmem.AtomicInc(c, &ctr[2], 0)
	pe.BarrierAll()
	if me == 0 && ctr[2] != int64(n*(n+1)/2+n) {
		fail(pe, "AtomicAdd/AtomicInc counter = %d, want %d", ctr[2], n*(n+1)/2+n)
	}
	for i, v := range buf {
		if v != int64(left*10000+i) {
			fail(pe, "buf[%d] = %d, want %d", i, v, left*10000+i)
		}
	}
	got := make([]int64, 1024)
	goshmem.Get(c, got, buf, right)
	if got[5] != int64(me*10000+5) {
		fail(pe, "Get from PE %d: got[5] = %d", right, got[5])
	}
	if me == 0 && ctr[0] != int64(n*(n+1)/2) {
		fail(pe, "counter = %d, want %d", ctr[0], n*(n+1)/2)
	}
	for i := 0; i < 50; i++ {
		pe.SetLock(&lock[0])
		v := goshmem.G(c, &ctr[1], 0)
		goshmem.P(c, &ctr[1], v+1, 0)
		pe.ClearLock(&lock[0])
	}
	pe.BarrierAll()
	if me == 0 && ctr[1] != int64(50*n) {
		fail(pe, "lock-protected counter = %d, want %d", ctr[1], 50*n)
	}
	// Signal the right neighbour, wait for the left one.
	goshmem.PutSignal(c, buf[:4], src[:4], &sig[0], 1, goshmem.SignalAdd, right)
	goshmem.SignalWaitUntil(pe, &sig[0], goshmem.CmpGE, 1)
	if buf[3] != int64(left*10000+3) {
		fail(pe, "data not there with the signal: %d", buf[3])
	}
	// PutSignal rounds with both operations, one payload larger than a
	// leader-queue message (several frames across hosts, the signal
	// with the last): the data must be there when the signal shows.
	big, _ := goshmem.Calloc[int64](pe, 3000)
	bsig, _ := goshmem.Calloc[uint64](pe, 2)
	bsrc := make([]int64, 3000)
	for r := int64(1); r <= 4; r++ {
		for i := range bsrc {
			bsrc[i] = int64(me)*1_000_000 + r*10_000 + int64(i)
		}
		n := []int{1, 3000, 7, 600}[r-1]
		if r%2 == 1 {
			goshmem.PutSignal(c, big[:n], bsrc[:n], &bsig[0], uint64(r), goshmem.SignalSet, right)
			goshmem.SignalWaitUntil(pe, &bsig[0], goshmem.CmpEQ, uint64(r))
		} else {
			goshmem.PutSignal(c, big[:n], bsrc[:n], &bsig[1], 5, goshmem.SignalAdd, right)
			goshmem.SignalWaitUntil(pe, &bsig[1], goshmem.CmpEQ, uint64(5*r/2))
		}
		if want := int64(left)*1_000_000 + r*10_000 + int64(n-1); big[n-1] != want || big[0] != want-int64(n-1) {
			fail(pe, "PutSignal round %d (%d elements): data not there with the signal: [0] %d, [%d] %d, want %d", r, n, big[0], n-1, big[n-1], want)
		}
		pe.BarrierAll() // the left neighbour's next round overwrites big
	}
	// Heap-to-heap: a put, a PutSignal and a get of 320 KiB, from and
	// into the symmetric heap (across hosts: RDMA WRITEs from the
	// source heap, for a non-leader PE by its leader, and an RDMA READ,
	// where the transport has them; frames otherwise).
	const hn = 40000
	hsrc, _ := goshmem.Calloc[int64](pe, hn)
	hdst, _ := goshmem.Calloc[int64](pe, hn)
	hsig, _ := goshmem.Calloc[uint64](pe, 1)
	for i := range hsrc {
		hsrc[i] = int64(me)*10_000_000 + int64(i)
	}
	goshmem.Put(c, hdst, hsrc, right)
	pe.BarrierAll()
	for i, v := range hdst {
		if want := int64(left)*10_000_000 + int64(i); v != want {
			fail(pe, "heap-to-heap put from PE %d: [%d] = %d, want %d", left, i, v, want)
		}
	}
	pe.BarrierAll()
	for i := range hsrc {
		hsrc[i] = -hsrc[i]
	}
	goshmem.PutSignal(c, hdst, hsrc, &hsig[0], 1, goshmem.SignalSet, right)
	goshmem.SignalWaitUntil(pe, &hsig[0], goshmem.CmpEQ, 1)
	for i, v := range hdst {
		if want := -(int64(left)*10_000_000 + int64(i)); v != want {
			fail(pe, "heap-to-heap PutSignal from PE %d: [%d] = %d with the signal, want %d", left, i, v, want)
		}
	}
	pe.BarrierAll()
	goshmem.Get(c, hsrc, hdst, right) // right's copy holds what this PE sent it
	for i, v := range hsrc {
		if want := -(int64(me)*10_000_000 + int64(i)); v != want {
			fail(pe, "heap-to-heap get from PE %d: [%d] = %d, want %d", right, i, v, want)
		}
	}
	pe.BarrierAll()
	mapfault := os.Getenv(scenarioVar) == "rma-mapfault"
	for q := 0; q < n; q++ {
		hq, across := pe.HostOf(q)
		hme, _ := pe.HostOf(me)
		want := q == me || os.Getenv("SHMEM_TRANSPORT") != "cma" && !(mapfault && q == n-1) && (!across || hq == hme)
		if p := goshmem.Ptr(pe, buf, q); (p != nil) != want {
			fail(pe, "Ptr to PE %d = %v, want mapped=%v", q, p != nil, want)
		}
	}
	fmt.Printf("PE %d ok %s\n", me, pe.Transport().Name)
}

func scenarioSigkill(pe *goshmem.PE) {
	if pe.MyPE() == 2 {
		time.Sleep(100 * time.Millisecond)
		fmt.Fprintf(os.Stderr, "PE 2 kills itself at %d\n", time.Now().UnixNano())
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	for {
		pe.BarrierAll()
	}
}

func scenarioGlobalExit(pe *goshmem.PE) {
	if pe.MyPE() == 1 {
		pe.GlobalExit(7)
	}
	for {
		pe.BarrierAll()
	}
}

func barriers(pe *goshmem.PE, n int) {
	for i := 0; i < n; i++ {
		pe.BarrierAll()
	}
}

type result struct {
	code           int
	err            error
	stdout, stderr string
	elapsed        time.Duration
}

func runJob(t *testing.T, scenario string, npes, ppp int, noSupervise bool, env ...string) result {
	t.Helper()
	return runJobConfig(t, scenario, launch.Config{NPEs: npes, PEsPerProc: ppp, NoSupervise: noSupervise, Env: env})
}

// runJobConfig is runJob with the launcher's configuration spelled out
// (program, output and time limit are filled in).
func runJobConfig(t *testing.T, scenario string, cfg launch.Config) result {
	t.Helper()
	var out, errb bytes.Buffer
	cfg.Program, cfg.Args = os.Args[0], []string{"-test.run=^$"}
	cfg.Env = append([]string{scenarioVar + "=" + scenario, "SHMEM_SYMMETRIC_SIZE=8m"}, cfg.Env...)
	cfg.Stdout, cfg.Stderr, cfg.Timeout = &out, &errb, 60*time.Second
	start := time.Now()
	code, err := launch.Run(context.Background(), cfg)
	return result{code, err, out.String(), errb.String(), time.Since(start)}
}

// shmEntries lists goshmem's files in /dev/shm (the file fallback names
// them goshmem-*; other programs' files there are not our leftovers).
func shmEntries(t *testing.T) []string {
	t.Helper()
	names, _ := filepath.Glob("/dev/shm/goshmem*")
	return names
}

func TestMultiProcessRMA(t *testing.T) {
	for _, tc := range []struct {
		name      string
		npes, ppp int
		env       []string
		transport string
	}{
		{"4x1-xpmem", 4, 1, nil, "xpmem"},
		{"5x2-mixed", 5, 2, nil, "xpmem"},
		{"3x1-cma", 3, 1, []string{"SHMEM_TRANSPORT=cma"}, "cma"},
		{"4x2-cma", 4, 2, []string{"SHMEM_TRANSPORT=cma"}, "cma"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runJob(t, "rma", tc.npes, tc.ppp, false, tc.env...)
			if r.err != nil || r.code != 0 {
				t.Fatalf("code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
			}
			for pe := 0; pe < tc.npes; pe++ {
				if want := fmt.Sprintf("PE %d ok %s", pe, tc.transport); !strings.Contains(r.stdout, want) {
					t.Errorf("missing %q in output:\n%s", want, r.stdout)
				}
			}
		})
	}
}

// TestAutomaticCMAFallback: when a process cannot map a peer's heap,
// start-up reaches that peer through CMA and serializes AMOs, without
// the user asking; everything else stays mapped.
func TestAutomaticCMAFallback(t *testing.T) {
	r := runJob(t, "rma-mapfault", 4, 1, false)
	if r.err != nil || r.code != 0 {
		t.Fatalf("code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
	}
	// PEs 0-2 cannot map PE 3: mixed; PE 3 maps everyone else: xpmem.
	for pe, tr := range []string{"mixed", "mixed", "mixed", "xpmem"} {
		if want := fmt.Sprintf("PE %d ok %s", pe, tr); !strings.Contains(r.stdout, want) {
			t.Errorf("missing %q in output:\n%s", want, r.stdout)
		}
	}
}

// TestKilledPE kills a PE with SIGKILL while the others wait in a
// barrier: the launcher must stop the job within a second, name the PE
// and the signal, exit 128+9, and leave no process and nothing in
// /dev/shm behind.
func TestKilledPE(t *testing.T) {
	before := shmEntries(t)
	checkKilled(t, runJob(t, "sigkill", 4, 1, false), 2)
	checkNoLeftovers(t, before)
}

// checkKilled checks that a job in which PE pe killed itself with
// SIGKILL ended with the launcher's status 137, a message naming the
// PE and the signal, and soon after the kill.
func checkKilled(t *testing.T, r result, pe int) {
	t.Helper()
	if r.code != 128+9 {
		t.Fatalf("exit code %d, want 137; err %v\nstderr:\n%s", r.code, r.err, r.stderr)
	}
	if who := fmt.Sprintf("PE %d", pe); !strings.Contains(r.stderr, who) || !strings.Contains(r.stderr, "SIGKILL") {
		t.Errorf("stderr does not name %s and SIGKILL:\n%s", who, r.stderr)
	}
	checkStoppedSoon(t, r)
}

// TestDeadPeerWithoutLauncher turns the launcher's supervision off: the
// surviving PEs must notice the dead peer on their own (pidfd) within a
// second and stop with a message naming it.
func TestDeadPeerWithoutLauncher(t *testing.T) {
	before := shmEntries(t)
	r := runJob(t, "sigkill", 3, 1, true)
	if r.code == 0 {
		t.Fatalf("job succeeded; stderr:\n%s", r.stderr)
	}
	if n := strings.Count(r.stderr, "PE 2 (pid"); n < 2 {
		t.Errorf("want both survivors to name the dead PE 2, got %d mentions:\n%s", n, r.stderr)
	}
	checkStoppedSoon(t, r)
	checkNoLeftovers(t, before)
}

func TestGlobalExit(t *testing.T) {
	r := runJob(t, "globalexit", 3, 1, false)
	if r.code != 7 {
		t.Fatalf("exit code %d, want 7; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "GlobalExit(7)") {
		t.Errorf("stderr does not mention GlobalExit(7):\n%s", r.stderr)
	}
}

// TestPanicWithBusySibling: in a process of several PEs, a PE's panic
// is printed with its value and stack at once, although a PE of the same
// process computes on and the process ends only when the launcher kills
// it (the message came only after every PE of the process had
// returned, so never).
func TestPanicWithBusySibling(t *testing.T) {
	r := runJob(t, "panic-busy-sibling", 2, 2, false)
	if r.code == 0 || !strings.Contains(r.stderr, "goshmem: PE 0 panicked: victim panics on purpose") || !strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("exit code %d, stderr:\n%s\nwant a failure, the panic's value and its stack", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "victim panics on purpose"); n != 1 {
		t.Errorf("the panic is printed %d times:\n%s", n, r.stderr)
	}
	if r.elapsed > 20*time.Second {
		t.Errorf("the job took %v to end", r.elapsed)
	}
}

// TestDestroyLevelsWhileSplitting: Destroy of a team with levels (a
// team spanning the processes of goroutine PEs over CMA) while another
// goroutine of each PE makes and destroys teams. Destroy freed the
// levels before the team's own sync ran over them, and a team made
// meanwhile reused a level's slot: a PE hung in Destroy within a few
// hundred iterations.
func TestDestroyLevelsWhileSplitting(t *testing.T) {
	r := runJob(t, "destroy-levels", 4, 2, false, "SHMEM_TRANSPORT=cma")
	if r.code != 0 || strings.Count(r.stdout, " done") != 4 {
		t.Fatalf("exit code %d after %v, stdout:\n%s\nstderr:\n%s", r.code, r.elapsed, r.stdout, r.stderr)
	}
}

// TestGoexitFails: a PE that ends its goroutine with runtime.Goexit has
// not finished: its process fails saying so (Run returned nil, so the
// process exited 0 and said nothing), alone or with a peer process.
func TestGoexitFails(t *testing.T) {
	for _, n := range []int{1, 2} {
		r := runJob(t, "goexit", n, 1, false)
		if r.code == 0 || !strings.Contains(r.stderr, fmt.Sprintf("PE %d stopped its goroutine (runtime.Goexit", n-1)) {
			t.Errorf("%d PEs: exit code %d, stderr:\n%s\nwant a failure naming PE %d's runtime.Goexit", n, r.code, r.stderr, n-1)
		}
	}
}

// TestFinalizeEarlyTeamProcesses: PEs in processes of their own (with
// the dissemination and the central barrier): a PE that finalizes after
// two collective calls on TeamShared, while the others wait in a
// third, ends the job with a message naming it; it hung before.
func TestFinalizeEarlyTeamProcesses(t *testing.T) {
	for _, env := range [][]string{nil, {"SHMEM_BARRIER_ALGORITHM=central"}} {
		r := runJob(t, "team-finalize-early", 3, 1, false, env...)
		want := "called Finalize after 2 collective calls on a team it belongs to"
		if r.code == 0 || !strings.Contains(r.stderr, "PE 1") || !strings.Contains(r.stderr, want) {
			t.Errorf("%v: exit code %d after %v, stderr:\n%s\nwant a failure saying PE 1 %s", env, r.code, r.elapsed, r.stderr, want)
		}
		if r.elapsed > 20*time.Second {
			t.Errorf("%v: the job took %v to end", env, r.elapsed)
		}
	}
}

// TestOversubscribedBarriers runs 8 PEs on this machine's CPUs (more
// PEs than cores is the normal case here): waiting must not starve the
// PE being waited for.
func TestOversubscribedBarriers(t *testing.T) {
	r := runJob(t, "barriers", 8, 1, false)
	if r.code != 0 {
		t.Fatalf("code %d err %v stderr:\n%s", r.code, r.err, r.stderr)
	}
	t.Logf("8 PEs x 2000 BarrierAll: %v (including start-up)", r.elapsed)
	if r.elapsed > 20*time.Second {
		t.Errorf("too slow: %v", r.elapsed)
	}
}

// TestBarrierPhasesProcesses checks the barrier algorithms across
// processes (one PE each, and several PEs per process in unequal
// numbers: mixed waiting) against their definition, with random delays
// (barrierPhases), and that with the default algorithm a job of more
// PEs than this machine's CPUs uses the central barrier: every process
// must choose the same algorithm.
func TestBarrierPhasesProcesses(t *testing.T) {
	ncpu := runtime.NumCPU()
	for _, c := range []struct {
		npes, ppp int
		alg       string
		bind      string
	}{
		{8, 1, "auto", ""}, {8, 1, "central", ""}, {8, 3, "auto", ""}, {8, 3, "central", ""}, {5, 2, "dissemination", ""},
		{ncpu + 1, 1, "auto", ""}, {ncpu + 2, 2, "auto", ""},
		// Bound to cores, more PEs than CPUs: the central barrier with
		// CPU groups (several PEs on one core), of uneven sizes too.
		{ncpu + 1, 1, "auto", "core"}, {2 * ncpu, 1, "auto", "core"}, {2*ncpu + 1, 1, "central", "core"},
	} {
		t.Run(fmt.Sprintf("%d PEs %d per process %s bind %q", c.npes, c.ppp, c.alg, c.bind), func(t *testing.T) {
			r := runJobConfig(t, "barrier-phases", launch.Config{NPEs: c.npes, PEsPerProc: c.ppp, BindTo: c.bind,
				Env: []string{"SHMEM_BARRIER_ALGORITHM=" + c.alg}})
			if r.code != 0 {
				t.Fatalf("code %d err %v stderr:\n%s", r.code, r.err, r.stderr)
			}
			central := c.alg == "central" || (c.alg == "auto" && c.npes > ncpu)
			// PE 0 prints after its 601st barrier (Calloc's, then 2 per
			// round); the others may have arrived at a later one
			// (Finalize's). The counter counts one arrival per CPU group
			// per barrier.
			var got, groups int
			if _, err := fmt.Sscanf(r.stdout, "central-barrier arrivals %d groups %d", &got, &groups); err != nil {
				t.Fatalf("stdout %q: %v", r.stdout, err)
			}
			if bound := c.bind == "core" && c.ppp == 1; bound != (groups < c.npes) {
				t.Errorf("%d groups of %d PEs; want groups (fewer than PEs) exactly when every PE is bound to a core: %v", groups, c.npes, bound)
			}
			lo, hi := 0, 0
			if central {
				lo, hi = 601*groups, 602*groups-1
			}
			if got < lo || got > hi {
				t.Errorf("%d central-barrier arrivals after 601 barriers, want %d..%d (central barrier %v, %d groups)", got, lo, hi, central, groups)
			}
		})
	}
}

// TestBoundPEHasWatcherP: a PE process bound to one CPU gets a second P
// (GOMAXPROCS 2), so that the job's watcher goroutines, which block in
// system calls, never hold the P the PE's goroutine runs on; a
// GOMAXPROCS the user set is kept.
// gomaxprocsInit prints GOMAXPROCS while the PE (from goshmem.Init)
// runs and after its Finalize.
func gomaxprocsInit() {
	pe, err := goshmem.Init()
	if err != nil {
		panic(err)
	}
	during := runtime.GOMAXPROCS(0)
	pe.BarrierAll()
	pe.Finalize()
	fmt.Printf("PE %d GOMAXPROCS %d, after Finalize %d\n", pe.MyPE(), during, runtime.GOMAXPROCS(0))
}

// TestGOMAXPROCSGivenBack: the second P that a bound PE's process gets
// for the runtime's watchers is given back at Finalize, so a program
// that goes on after it runs with its own GOMAXPROCS.
func TestGOMAXPROCSGivenBack(t *testing.T) {
	r := runJobConfig(t, "gomaxprocs-init", launch.Config{NPEs: 2, PEsPerProc: 1, BindTo: "core"})
	if r.code != 0 {
		t.Fatalf("code %d err %v stderr:\n%s", r.code, r.err, r.stderr)
	}
	for pe := 0; pe < 2; pe++ {
		if want := fmt.Sprintf("PE %d GOMAXPROCS 2, after Finalize 1\n", pe); !strings.Contains(r.stdout, want) {
			t.Errorf("stdout %q, want a line %q", r.stdout, want)
		}
	}
}

func TestBoundPEHasWatcherP(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want int
	}{
		{nil, 2},
		{[]string{"GOMAXPROCS=1"}, 1},
		{[]string{"GOMAXPROCS=3"}, 3},
	} {
		t.Run(fmt.Sprint(c.env), func(t *testing.T) {
			r := runJobConfig(t, "gomaxprocs", launch.Config{NPEs: 2, PEsPerProc: 1, BindTo: "core", Env: c.env})
			if r.code != 0 {
				t.Fatalf("code %d err %v stderr:\n%s", r.code, r.err, r.stderr)
			}
			for pe := 0; pe < 2; pe++ {
				if want := fmt.Sprintf("PE %d GOMAXPROCS %d\n", pe, c.want); !strings.Contains(r.stdout, want) {
					t.Errorf("stdout %q, want a line %q", r.stdout, want)
				}
			}
		})
	}
}

// TestWaitHandsOverToGoroutinesAcrossProcesses is
// TestWaitHandsOverToGoroutines (goroutine_wait_test.go) with each PE a
// process bound to a core, which runs two Ps on it (TestBoundPEHasWatcherP):
// a spinning waiter must let the thread of the other P run too. Before,
// a hand-off took 2-3 ms.
func TestWaitHandsOverToGoroutinesAcrossProcesses(t *testing.T) {
	r := runJobConfig(t, "goroutine-ring", launch.Config{NPEs: 2, PEsPerProc: 1, BindTo: "core"})
	if r.code != 0 {
		t.Fatalf("code %d err %v stderr:\n%s", r.code, r.err, r.stderr)
	}
	for pe := 0; pe < 2; pe++ {
		var ns int64
		i := strings.Index(r.stdout, fmt.Sprintf("PE %d hop", pe))
		if i < 0 {
			t.Fatalf("stdout %q has no line for PE %d", r.stdout, pe)
		}
		if _, err := fmt.Sscanf(r.stdout[i:], "PE %d hop %d ns", new(int), &ns); err != nil {
			t.Fatalf("stdout %q: %v", r.stdout, err)
		}
		if time.Duration(ns) > handOverWithin {
			t.Errorf("PE %d: a hand-off between goroutines of the PE took %v, want at most %v", pe, time.Duration(ns), handOverWithin)
		}
	}
}

// TestCPUSetID checks the identity of a CPU set that groups the PEs of
// the central barrier: equal sets alike, different ones apart (also
// where a byte-wise hash without separators would merge them), never 0.
func TestCPUSetID(t *testing.T) {
	sets := [][]int{{0}, {1}, {0, 1}, {1, 2}, {258}, {1, 2, 0}, {2, 1}, {0, 64}, {64}, {1023}, {}}
	seen := map[uint32][]int{}
	for _, s := range sets {
		id := node.CPUSetID(s)
		if id == 0 {
			t.Errorf("cpuSetID(%v) = 0; 0 means unknown", s)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("cpuSetID(%v) = cpuSetID(%v) = %#x", s, other, id)
		}
		seen[id] = s
		if again := node.CPUSetID(slices.Clone(s)); again != id {
			t.Errorf("cpuSetID(%v) not stable: %#x then %#x", s, id, again)
		}
	}
}

// checkStoppedSoon checks that the job ended within a second of the
// kill, using the kill time PE 2 printed.
func checkStoppedSoon(t *testing.T, r result) {
	t.Helper()
	i := strings.Index(r.stderr, "kills itself at ")
	if i < 0 {
		t.Fatalf("no kill time in stderr:\n%s", r.stderr)
	}
	f := strings.Fields(r.stderr[i+len("kills itself at "):])
	ns, _ := strconv.ParseInt(f[0], 10, 64)
	if d := time.Since(time.Unix(0, ns)); d > 1500*time.Millisecond {
		// Run returned more than 1.5 s after the kill (1 s budget plus
		// the time since Run returned).
		t.Errorf("job stopped %v after the kill", d)
	}
}

func checkNoLeftovers(t *testing.T, before []string) {
	t.Helper()
	after := shmEntries(t)
	if len(after) > len(before) {
		t.Errorf("/dev/shm grew: before %v after %v", before, after)
	}
	// No process of the job may remain: every PE is a child of this test
	// process's launcher and would show up as a child here.
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", os.Getpid(), os.Getpid()))
	if s := strings.TrimSpace(string(kids)); s != "" {
		t.Errorf("child processes left: %s", s)
	}
}

// hydra returns MPICH's mpiexec.hydra, or skips the test.
func hydra(t *testing.T) string {
	h, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("MPICH's mpiexec.hydra is not installed (apt-get install mpich): the cluster-launcher path is not tested here")
	}
	return h
}

// runHydra runs the test binary as PEs under mpiexec.hydra with args
// (its options and executables, each followed by the test flags).
func runHydra(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(hydra(t), args...)
	cmd.Env = append(os.Environ(), "SHMEM_SYMMETRIC_SIZE=8m")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second // PEs that outlive a killed mpiexec hold the output
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done // the output's copy ends with Wait: read it after
		t.Fatalf("mpiexec.hydra %v did not end within 60 s:\n%s", args, out.String())
		return "", nil
	}
}

// TestUnderHydra: PEs started by MPICH's mpiexec (no oshrun) wire up
// through PMI, get the host's segments from the leader over a Unix
// socket, and map every heap: the RMA scenario (puts, gets, AMOs, a
// lock, a signal, Ptr to every PE) passes with either protocol, over
// the inherited PMI_FD and over PMI_PORT, and SHMEM_INFO names the
// protocol used.
func TestUnderHydra(t *testing.T) {
	for _, v := range []string{"pmi1", "pmi2"} {
		// PMI_FD (hydra's default), and PMI_PORT with PMI_ID (-pmi-port:
		// a TCP connection, PMI-1's initack).
		for _, port := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pmi-port=%t", v, port), func(t *testing.T) {
				args := []string{"-n", "3", "-genv", scenarioVar, "rma", "-genv", "SHMEM_PMI", v, "-genv", "SHMEM_INFO", "1"}
				if port {
					args = append([]string{"-pmi-port"}, args...)
				}
				out, err := runHydra(t, append(args, os.Args[0], "-test.run=^$")...)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				wantOK(t, out, 3, "ok xpmem")
				want := map[string]string{"pmi1": "over PMI-1", "pmi2": "over PMI-2"}[v]
				if !strings.Contains(out, "launcher hydra "+want) {
					t.Errorf("SHMEM_INFO does not say %q:\n%s", "launcher hydra "+want, out)
				}
			})
		}
	}
}

// TestUnderHydraHeapMismatch: PEs that disagree on the heap size fail
// at start-up, with a message naming the PE, both settings and the
// leader, and the launcher ends the job.
func TestUnderHydraHeapMismatch(t *testing.T) {
	out, err := runHydra(t, "-n", "1", "-env", "SHMEM_SYMMETRIC_SIZE", "8m", "-env", scenarioVar, "rma", os.Args[0], "-test.run=^$",
		":", "-n", "1", "-env", "SHMEM_SYMMETRIC_SIZE", "16m", "-env", scenarioVar, "rma", os.Args[0], "-test.run=^$")
	if err == nil {
		t.Fatalf("a job with two heap sizes succeeded:\n%s", out)
	}
	if !strings.Contains(out, "PE 1 has heap 16777216") || !strings.Contains(out, "PE 0, its host's leader, has 8388608") {
		t.Errorf("the error does not name both PEs' settings:\n%s", out)
	}
	// The job fails as the program did (status 1), not as hydra would
	// fail itself: hydra 4.0 does not know PMI-2's abort command, and
	// ended mpiexec with status 255 and internal errors when a process
	// sent it.
	for _, pmiVersion := range []string{"pmi2", "pmi1"} {
		out, err := runHydra(t, "-genv", "SHMEM_PMI", pmiVersion,
			"-n", "1", "-env", "SHMEM_SYMMETRIC_SIZE", "8m", "-env", scenarioVar, "rma", os.Args[0], "-test.run=^$",
			":", "-n", "1", "-env", "SHMEM_SYMMETRIC_SIZE", "16m", "-env", scenarioVar, "rma", os.Args[0], "-test.run=^$")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Contains(out, "Unrecognized PMI command") {
			t.Errorf("SHMEM_PMI=%s: a job with two heap sizes ended with %v, want exit status 1 and no hydra error:\n%s", pmiVersion, err, out)
		}
		if k := strings.Count(out, "PE 1 has heap 16777216"); k != 1 {
			t.Errorf("SHMEM_PMI=%s: the error was printed %d times, want once:\n%s", pmiVersion, k, out)
		}
	}
	// Across hosts: host b's leader has another heap than PE 0, on
	// host a.
	out, err = runHydra(t, "-n", "1", "-env", "SHMEM_HOST", "a", "-env", "SHMEM_SYMMETRIC_SIZE", "8m", "-env", scenarioVar, "rma", os.Args[0], "-test.run=^$",
		":", "-n", "2", "-env", "SHMEM_HOST", "b", "-env", "SHMEM_SYMMETRIC_SIZE", "16m", "-env", scenarioVar, "rma", os.Args[0], "-test.run=^$")
	if err == nil {
		t.Fatalf("a job whose hosts have two heap sizes succeeded:\n%s", out)
	}
	if !strings.Contains(out, "PE 1 (host b's leader) has heap 16777216") || !strings.Contains(out, "PE 0 (host a) has 8388608") {
		t.Errorf("the error does not name both hosts' settings:\n%s", out)
	}
}

// TestUnderHydraTransportMismatch: hosts whose PEs ask for different
// transports between hosts (SHMEM_INTERNODE) fail at start-up with an
// error naming both PEs and both transports, not at the first message
// between them.
func TestUnderHydraTransportMismatch(t *testing.T) {
	hydra(t)
	for _, tc := range []struct {
		name  string
		sizes []int
		set   map[int]string // host -> SHMEM_INTERNODE
		want  []string
	}{
		{"leaders differ", []int{1, 1}, map[int]string{0: "tcp", 1: "verbs"},
			[]string{`PE 1 (host h1) uses the transport "verbs"`, `PE 0 (host h0) uses "tcp"`}},
		{"a non-leader differs from its leader", []int{1, 2}, map[int]string{0: "tcp", 1: "tcp"},
			[]string{`PE 2 (host h1) uses the transport "verbs"`, `PE 1 (host h1) uses "tcp"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for h, n := range tc.sizes {
				for i := 0; i < n; i++ {
					if len(args) > 0 {
						args = append(args, ":")
					}
					v := tc.set[h]
					if h == 1 && i == 1 {
						v = "verbs" // the non-leader of the second case
					}
					args = append(args, "-n", "1", "-env", "SHMEM_HOST", fmt.Sprintf("h%d", h), "-env", "SHMEM_INTERNODE", v,
						"-env", scenarioVar, "rma", os.Args[0], "-test.run=^$")
				}
			}
			out, err := runHydra(t, args...)
			if err == nil {
				t.Fatalf("a job with two transports between hosts succeeded:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the error does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestUnderHydraKilledPE: a PE killed under mpiexec ends the job (the
// others notice through their ring watcher, or hydra kills them), with
// a non-zero status, and no PE is left running.
func TestUnderHydraKilledPE(t *testing.T) {
	start := time.Now()
	out, err := runHydra(t, "-n", "3", "-genv", scenarioVar, "sigkill", os.Args[0], "-test.run=^$")
	if err == nil {
		t.Fatalf("a job with a killed PE exited 0:\n%s", out)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the job took %v to end after a PE was killed", took)
	}
}

// TestUnderSlurm: PEs started by a real Slurm cluster's srun
// --mpi=pmi2 (on one of its test hosts) wire up through PMI-1 or PMI-2
// and pass the RMA scenario with every heap mapped; across two of its
// three hosts they pass the RMA scenario, every collective on split
// teams, the small collectives against a naive reference, the barrier's
// promises, strided RMA, and random RMA and random collectives checked
// against a model (random_rma_test.go, random_coll_test.go); across
// three, the teams, the reductions back to back and the random
// collectives; 8 PEs on 2 hosts (4 each, on this machine's 2 CPUs) run
// 1,000 barriers; GlobalExit on one host ends every PE with its status;
// and a killed PE ends the job, also without the launcher's kill.
func TestUnderSlurm(t *testing.T) {
	testcluster.Slurm(t, 3)
	for _, v := range []string{"pmi1", "pmi2"} {
		t.Run(v, func(t *testing.T) {
			out, err := testcluster.Run(t, time.Minute, []string{scenarioVar + "=rma", "SHMEM_PMI=" + v, "SHMEM_SYMMETRIC_SIZE=8m"},
				"slurm.sh", "srun", "--mpi=pmi2", "-N", "1", "-n", "3", "-O", "--kill-on-bad-exit=1", os.Args[0], "-test.run=^$")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			wantOK(t, out, 3, "ok xpmem")
		})
	}
	// srun without a PMI plugin goshmem speaks: each task says so and
	// fails, rather than run as a one-PE job of its own.
	out, err := testcluster.Run(t, time.Minute, []string{scenarioVar + "=rma", "SHMEM_SYMMETRIC_SIZE=8m"},
		"slurm.sh", "srun", "--mpi=none", "-N", "1", "-n", "2", os.Args[0], "-test.run=^$")
	if err == nil || !strings.Contains(out, "srun --mpi=pmi2") || strings.Contains(out, "ok xpmem") {
		t.Errorf("srun --mpi=none -n 2: %v, want every task to fail naming srun --mpi=pmi2\n%s", err, out)
	}
	// A bad SHMEM_* value on every task: printed once (rank 0, which
	// ends the step through PMI), not once per task.
	out, err = testcluster.Run(t, time.Minute, []string{scenarioVar + "=rma", "SHMEM_SYMMETRIC_SIZE=12x"},
		"slurm.sh", "srun", "--mpi=pmi2", "-N", "2", "-n", "4", os.Args[0], "-test.run=^$")
	if n := strings.Count(out, `unknown suffix "x" in SHMEM_SYMMETRIC_SIZE`); err == nil || n != 1 {
		t.Errorf("a bad SHMEM_SYMMETRIC_SIZE on 4 tasks: %v, printed %d times, want a failure printed once\n%s", err, n, out)
	}
	// Across the two hosts, 2 PEs on each.
	out, err = testcluster.Run(t, time.Minute, []string{scenarioVar + "=rma", "SHMEM_SYMMETRIC_SIZE=8m"},
		"slurm.sh", "srun", "--mpi=pmi2", "-N", "2", "-n", "4", "-O", "--kill-on-bad-exit=1", os.Args[0], "-test.run=^$")
	if err != nil {
		t.Fatalf("a job across 2 hosts: %v\n%s", err, out)
	}
	wantOK(t, out, 4, "ok xpmem")
	// Every collective on split teams, the small collectives against a
	// naive reference, what a barrier promises and strided RMA, 5 PEs
	// over the two hosts (3 and 2).
	for _, sc := range []struct{ scenario, want string }{
		{"xhost-teams", "ok xpmem"}, {"xhost-gather", "ok gather"}, {"xhost-barrier-sync", "ok barrier sync"}, {"xhost-strided", "ok strided"}, {"xhost-api", "ok api"},
		{"rma-random", "ok random rma"}, {"coll-random", "ok random coll"},
	} {
		out, err := testcluster.Run(t, 2*time.Minute, []string{scenarioVar + "=" + sc.scenario, "SHMEM_SYMMETRIC_SIZE=8m"},
			"slurm.sh", "srun", "--mpi=pmi2", "-N", "2", "-n", "5", "-O", "--kill-on-bad-exit=1", os.Args[0], "-test.run=^$")
		if err != nil {
			t.Fatalf("%s across 2 hosts: %v\n%s", sc.scenario, err, out)
		}
		wantOK(t, out, 5, sc.want)
	}
	for _, sc := range []struct {
		scenario, want string
		nodes, n       int
	}{
		{"xhost-teams", "ok xpmem", 3, 5}, {"xhost-reduce", "ok reduce", 3, 4}, {"xhost-barriers", "ok barriers", 2, 8},
		{"xhost-api", "ok api", 3, 4}, {"xhost-gather", "ok gather", 3, 5}, {"xhost-strided", "ok strided", 3, 4},
		{"xhost-barrier-sync", "ok barrier sync", 3, 5}, {"coll-random", "ok random coll", 3, 5},
	} {
		out, err := testcluster.Run(t, 2*time.Minute, []string{scenarioVar + "=" + sc.scenario, "SHMEM_SYMMETRIC_SIZE=8m"},
			"slurm.sh", "srun", "--mpi=pmi2", "-N", strconv.Itoa(sc.nodes), "-n", strconv.Itoa(sc.n), "-O", "--kill-on-bad-exit=1", os.Args[0], "-test.run=^$")
		if err != nil {
			t.Fatalf("%s on %d hosts: %v\n%s", sc.scenario, sc.nodes, err, out)
		}
		wantOK(t, out, sc.n, sc.want)
	}
	// GlobalExit(7) on one host ends every PE's process on every host,
	// and srun with status 7.
	start := time.Now()
	out, err = testcluster.Run(t, time.Minute, []string{scenarioVar + "=globalexit", "SHMEM_SYMMETRIC_SIZE=8m"},
		"slurm.sh", "srun", "--mpi=pmi2", "-N", "3", "-n", "4", "-O", "--kill-on-bad-exit=1", os.Args[0], "-test.run=^$")
	wantGlobalExit7(t, out, err)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the job took %v to end after GlobalExit", took)
	}
	// A PE killed on the second host ends the job within 2 s.
	out, err = testcluster.Run(t, time.Minute, []string{scenarioVar + "=xhost-sigkill", "GOSHMEM_TEST_VICTIM=3", "SHMEM_SYMMETRIC_SIZE=8m"},
		"slurm.sh", "srun", "--mpi=pmi2", "-N", "2", "-n", "4", "-O", "--kill-on-bad-exit=1", os.Args[0], "-test.run=^$")
	if err == nil {
		t.Fatalf("a job with a killed PE exited 0:\n%s", out)
	}
	checkEndedAfterKill(t, out, time.Now())
	// Without the launcher's kill (--kill-on-bad-exit=0: srun leaves the
	// other tasks running), goshmem alone stops every survivor within
	// 2 s, each with a *JobError naming the dead PE (its host-mate, and
	// the other host through the leader's forward) or the lost host
	// (when the dead PE was its host's leader).
	for _, victim := range []int{2, 3} {
		out, err := testcluster.Run(t, time.Minute, []string{scenarioVar + "=xhost-sigkill", "GOSHMEM_TEST_VICTIM=" + strconv.Itoa(victim), "SHMEM_SYMMETRIC_SIZE=8m"},
			"slurm.sh", "srun", "--mpi=pmi2", "-N", "2", "-n", "4", "-O", "--kill-on-bad-exit=0", os.Args[0], "-test.run=^$")
		if err == nil {
			t.Fatalf("a job with PE %d killed exited 0:\n%s", victim, out)
		}
		checkEndedAfterKill(t, out, time.Now())
		for pe := range 4 {
			if pe == victim {
				continue
			}
			m := regexp.MustCompile(fmt.Sprintf(`goshmem: \w+ on PE %d stopped: (.*)`, pe)).FindStringSubmatch(out)
			switch {
			case m == nil:
				t.Errorf("PE %d did not stop with an error after PE %d was killed:\n%s", pe, victim, out)
			case !strings.Contains(m[1], fmt.Sprintf("PE %d ", victim)) && !strings.Contains(m[1], "connection to host"):
				t.Errorf("PE %d stopped with %q, which names neither PE %d nor a lost host", pe, m[1], victim)
			}
		}
	}
}

// TestUnderHydraTestHosts: hydra across test hosts (namespaces, its
// proxies started as over ssh): one host's PEs run, a job spanning two
// passes the RMA scenario through the hosts' leaders, jobs on three
// run every collective on split teams, the small collectives against a
// naive reference, the barrier's promises, Quiet to several hosts and
// strided RMA, one host over two network namespaces fetches its
// segments with pidfd_getfd, GlobalExit on one host ends every PE with
// its status (20 times: it failed 1 run in 20 while processes exited
// without PMI finalize, see Job.endPMI), and a killed PE ends the job.
func TestUnderHydraTestHosts(t *testing.T) {
	hydra(t)
	testcluster.Hosts(t, 3)
	env := []string{scenarioVar + "=rma", "SHMEM_SYMMETRIC_SIZE=8m"}
	out, err := testcluster.Run(t, time.Minute, env, "mpiexec.sh", "-hosts", "h2", "-n", "2", os.Args[0], "-test.run=^$")
	if err != nil || !strings.Contains(out, "PE 1 ok xpmem") {
		t.Fatalf("2 PEs on h2: %v\n%s", err, out)
	}
	out, err = testcluster.Run(t, time.Minute, env, "mpiexec.sh", "-hosts", "h1,h2", "-n", "4", "-ppn", "2", os.Args[0], "-test.run=^$")
	if err != nil {
		t.Fatalf("a job across 2 hosts: %v\n%s", err, out)
	}
	wantOK(t, out, 4, "ok xpmem")
	// PEs that SHMEM_HOST makes one host but that run in two network
	// namespaces: the one on h2 cannot reach its leader's socket, takes
	// the segments with pidfd_getfd, and maps every heap as its
	// host-mates do; the leader's SHMEM_INFO says which PE did.
	out, err = testcluster.Run(t, time.Minute, append(env, "SHMEM_HOST=one", "SHMEM_INFO=1"), "mpiexec.sh", "-hosts", "h1:2,h2:1", "-n", "3", os.Args[0], "-test.run=^$")
	if err != nil {
		t.Fatalf("one host over two network namespaces: %v\n%s", err, out)
	}
	wantOK(t, out, 3, "ok xpmem")
	if !strings.Contains(out, "PEs [2] fetched them with pidfd_getfd") {
		t.Errorf("SHMEM_INFO does not say that PE 2 fetched the segments:\n%s", out)
	}
	for _, sc := range []struct {
		scenario, want, hosts string
		n                     int
	}{
		{"xhost-teams", "ok xpmem", "h1:2,h2:1,h3:2", 5},
		{"xhost-gather", "ok gather", "h1:2,h2:1,h3:2", 5},
		{"xhost-barrier-sync", "ok barrier sync", "h1:2,h2:1,h3:2", 5},
		{"xhost-quiet-all", "ok quiet all", "h1:1,h2:1,h3:1", 3},
		{"xhost-strided", "ok strided", "h1:1,h2:2,h3:1", 4},
		{"xhost-api", "ok api", "h1:2,h2:1,h3:1", 4},
	} {
		out, err := testcluster.Run(t, 2*time.Minute, []string{scenarioVar + "=" + sc.scenario, "SHMEM_SYMMETRIC_SIZE=8m"},
			"mpiexec.sh", "-hosts", sc.hosts, "-n", strconv.Itoa(sc.n), os.Args[0], "-test.run=^$")
		if err != nil {
			t.Fatalf("%s on %s: %v\n%s", sc.scenario, sc.hosts, err, out)
		}
		wantOK(t, out, sc.n, sc.want)
	}
	// GlobalExit(7) by PE 1, not its host's leader, ends every PE's
	// process on every host, and mpiexec with status 7.
	for range 20 {
		start := time.Now()
		out, err = testcluster.Run(t, time.Minute, []string{scenarioVar + "=globalexit", "SHMEM_SYMMETRIC_SIZE=8m"},
			"mpiexec.sh", "-hosts", "h1:1,h2:2,h3:1", "-n", "4", os.Args[0], "-test.run=^$")
		wantGlobalExit7(t, out, err)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the job took %v to end after GlobalExit", took)
		}
		if t.Failed() {
			return
		}
	}
	// A PE killed on one host ends the job within 2 s of its death.
	out, err = testcluster.Run(t, time.Minute, []string{scenarioVar + "=xhost-sigkill", "GOSHMEM_TEST_VICTIM=3", "SHMEM_SYMMETRIC_SIZE=8m"},
		"mpiexec.sh", "-hosts", "h1:2,h2:2", "-n", "4", os.Args[0], "-test.run=^$")
	if err == nil {
		t.Fatalf("a job with a killed PE exited 0:\n%s", out)
	}
	checkEndedAfterKill(t, out, time.Now())
}

// TestUnderHydraSHMEMHost: SHMEM_HOST overrides where the launcher puts
// the ranks: ranks of this machine that name two hosts are two hosts,
// whose leaders talk over the transport (here over this machine's own
// address): the RMA scenario passes across them, with Ptr nil exactly
// for the other host's PEs.
func TestUnderHydraSHMEMHost(t *testing.T) {
	out, err := runHydra(t, "-n", "2", "-env", "SHMEM_HOST", "alpha", "-env", scenarioVar, "rma", os.Args[0], "-test.run=^$",
		":", "-n", "2", "-env", "SHMEM_HOST", "beta", "-env", scenarioVar, "rma", os.Args[0], "-test.run=^$")
	if err != nil {
		t.Fatalf("ranks naming two hosts: %v\n%s", err, out)
	}
	wantOK(t, out, 4, "ok xpmem")
}

// TestUnderHydraHostCutOff: a host that vanishes without a word (its
// link set down: no FIN, no RST, its launcher proxy cut off too) stops
// the PEs of the other host, naming the lost host, within the TCP
// transport's bound: TCP_USER_TIMEOUT (10 s), which Linux lets override
// the keepalive's probe count (measured 10.6 s).
func TestUnderHydraHostCutOff(t *testing.T) {
	hydra(t)
	testcluster.Hosts(t, 2)
	cmd := exec.Command(testcluster.Script(t, "mpiexec.sh"), "-hosts", "h1:1,h2:1", "-n", "2", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), scenarioVar+"=xhost-cut", "SHMEM_SYMMETRIC_SIZE=8m")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(ended) }()
	link := func(state string) {
		if out, err := exec.Command("ip", "link", "set", "gs-h2", state).CombinedOutput(); err != nil {
			t.Errorf("ip link set gs-h2 %s: %v %s", state, err, out)
		}
	}
	defer func() {
		link("up")
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-ended
		noLeftovers(t)
	}()
	lines := make(chan string, 100)
	var out strings.Builder
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var cut time.Time
	ready := 0
	deadline := time.After(time.Minute)
	stopped := regexp.MustCompile(`^PE 0 stopped at (\d+): (.*)`)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the job ended before PE 0 stopped:\n%s", out.String())
			}
			out.WriteString(l + "\n")
			if strings.HasSuffix(l, " ready") {
				if ready++; ready == 2 {
					time.Sleep(200 * time.Millisecond) // some barriers across the link
					cut = time.Now()
					link("down")
				}
			}
			if m := stopped.FindStringSubmatch(l); m != nil {
				if cut.IsZero() {
					t.Fatalf("PE 0 stopped before the cut:\n%s", out.String())
				}
				ns, _ := strconv.ParseInt(m[1], 10, 64)
				took := time.Unix(0, ns).Sub(cut)
				t.Logf("PE 0 stopped %v after the cut: %s", took, m[2])
				if took > 13*time.Second {
					t.Errorf("PE 0 stopped %v after its peer host's link went down, want about 10 s (TCP_USER_TIMEOUT)", took)
				}
				if !strings.Contains(m[2], "connection to host 1") {
					t.Errorf("PE 0's error does not name the lost host: %s", m[2])
				}
				return
			}
		case <-deadline:
			t.Fatalf("no stop of PE 0 within a minute (cut at %v):\n%s", cut, out.String())
		}
	}
}

// TestUnderOpenMPI: Open MPI's mpirun serves PMIx, which goshmem does
// not speak; its ranks must fail and say what to use, not run as
// separate one-PE jobs.
func TestUnderOpenMPI(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun.openmpi")
	if err != nil {
		t.Skip("Open MPI's mpirun.openmpi is not installed (apt-get install openmpi-bin)")
	}
	cmd := exec.Command(mpirun, "-n", "2", "--oversubscribe", "--allow-run-as-root", "-x", scenarioVar+"=rma", "-x", "SHMEM_SYMMETRIC_SIZE=8m",
		os.Args[0], "-test.run=^$")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Open MPI's mpirun started this process as rank") || strings.Contains(string(out), "ok xpmem") {
		t.Errorf("mpirun.openmpi -n 2: %v, want every rank to fail naming Open MPI\n%s", err, out)
	}
}

// TestUnderHydraGlobalExit: GlobalExit(7) in one PE under mpiexec ends
// every PE's process with status 7 at once, and mpiexec with it, 20
// times. (Before processes finalized PMI at a GlobalExit, hydra
// reported "signal 1" or "signal 9" in 2 runs of 20: see Job.endPMI.)
func TestUnderHydraGlobalExit(t *testing.T) {
	for range 20 {
		start := time.Now()
		out, err := runHydra(t, "-n", "3", "-genv", scenarioVar, "globalexit", os.Args[0], "-test.run=^$")
		wantGlobalExit7(t, out, err)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the job took %v to end after GlobalExit", took)
		}
		if t.Failed() {
			return
		}
	}
}

// wantOK fails t unless out has "PE q <what>" for every PE q < npes.
func wantOK(t *testing.T, out string, npes int, what string) {
	t.Helper()
	for pe := range npes {
		if want := fmt.Sprintf("PE %d %s", pe, what); !strings.Contains(out, want) {
			t.Errorf("no %q in the output:\n%s", want, out)
		}
	}
}

// wantGlobalExit7 fails t unless the launcher ended with status 7 after
// a PE's GlobalExit(7), and nothing of the job is left.
func wantGlobalExit7(t *testing.T, out string, err error) {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case !errors.As(err, &ee):
		t.Errorf("mpiexec after GlobalExit(7): %v, want exit status 7\n%s", err, out)
	case ee.ExitCode() == 7:
	default:
		t.Errorf("mpiexec after GlobalExit(7): %v, want exit status 7\n%s", ee.ProcessState, out)
	}
	noLeftovers(t)
}
