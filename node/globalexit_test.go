package node_test

// GlobalExit (shmem_global_exit): every PE of the job terminates with
// the status, and no PE returns from Run as if the job had ended.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/launch"
	"github.com/goshmem/goshmem/node"
)

// processScenarios own the whole PE process (TestMain runs them instead
// of goshmem.Main).
var processScenarios = map[string]func(){
	"globalexit-run":  globalExitRun,
	"gomaxprocs-init": gomaxprocsInit,
}

// globalExitBody is the job of the GlobalExit tests: PE 1 (of every 4)
// calls GlobalExit(7) after a random delay while PE 0 waits in a
// barrier, PE 2 in WaitUntil on a word nobody sets, and PE 3 computes
// for a random time and returns. ran counts code that runs where it
// must not: after GlobalExit, or after a wait that cannot complete.
func globalExitBody(pe *goshmem.PE, ran *atomic.Int32) {
	flag, err := goshmem.Calloc[int64](pe, 1)
	if err != nil {
		panic(err)
	}
	pe.BarrierAll()
	spin := func() {
		until := time.Now().Add(time.Duration(rand.IntN(3000)) * time.Microsecond)
		for time.Now().Before(until) {
		}
	}
	switch pe.MyPE() % 4 {
	case 0:
		pe.BarrierAll()
		ran.Add(1)
	case 1:
		spin()
		pe.GlobalExit(7)
		ran.Add(1)
	case 2:
		goshmem.WaitUntil(pe, &flag[0], goshmem.CmpEQ, 1)
		ran.Add(1)
	case 3:
		spin() // then return: Finalize must not complete
	}
}

// globalExitRun is a PE process that uses Run and goes on after it:
// the "after" line must never be printed.
func globalExitRun() {
	var ran atomic.Int32
	err := goshmem.Run(func(pe *goshmem.PE) { globalExitBody(pe, &ran) })
	fmt.Printf("after Run in the process of PE %s: %v (ran %d)\n", os.Getenv("GOSHMEM_PE"), err, ran.Load())
}

// globalExitJob runs the "globalexit-run" scenario. wrap runs each PE
// process under sh, which prints "exit <first PE> <status>" when it
// ends, so that every process's own exit status is seen.
func globalExitJob(t *testing.T, npes, ppp int, noSupervise, wrap bool) result {
	t.Helper()
	var out, errb bytes.Buffer
	cfg := launch.Config{NPEs: npes, PEsPerProc: ppp, NoSupervise: noSupervise,
		Program: os.Args[0], Args: []string{"-test.run=^$"},
		Env:    []string{scenarioVar + "=globalexit-run", "SHMEM_SYMMETRIC_SIZE=1m"},
		Stdout: &out, Stderr: &errb, Timeout: 30 * time.Second}
	if wrap {
		cfg.Program = "/bin/sh"
		cfg.Args = []string{"-c", `"$0" -test.run='^$'; echo "exit $GOSHMEM_PE $?"`, os.Args[0]}
	}
	start := time.Now()
	code, err := launch.Run(context.Background(), cfg)
	return result{code, err, out.String(), errb.String(), time.Since(start)}
}

// TestGlobalExitEndsEveryProcess: PE 1 calls GlobalExit(7) while the
// other PEs wait in a barrier, in WaitUntil, or compute and return
// from Run. Every PE process must exit with status 7 by itself (the
// launcher does not stop them: NoSupervise), and none may return from
// Run. Repeated, since which PE notices first is a race.
func TestGlobalExitEndsEveryProcess(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh to report each process's exit status")
	}
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	for _, tc := range []struct {
		name      string
		npes, ppp int
		rounds    int
	}{
		{"4x1", 4, 1, rounds},
		{"4x2", 4, 2, rounds / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nprocs := (tc.npes + tc.ppp - 1) / tc.ppp
			for i := range tc.rounds {
				r := globalExitJob(t, tc.npes, tc.ppp, true, true)
				if r.err != nil || r.code != 7 {
					t.Fatalf("round %d: oshrun code %d err %v, want 7\nstdout:\n%s\nstderr:\n%s", i, r.code, r.err, r.stdout, r.stderr)
				}
				if strings.Contains(r.stdout, "after Run") {
					t.Fatalf("round %d: a PE returned from Run after GlobalExit:\n%s", i, r.stdout)
				}
				for k := range nprocs {
					if want := fmt.Sprintf("exit %d 7\n", k*tc.ppp); !strings.Contains(r.stdout, want) {
						t.Fatalf("round %d: the process of PE %d did not exit with 7 (want %q):\n%s\nstderr:\n%s", i, k*tc.ppp, want, r.stdout, r.stderr)
					}
				}
			}
		})
	}
}

// TestGlobalExitSupervised is the same job under oshrun's supervision,
// which also stops the PEs: the job's code is 7, and no PE returns from
// Run before it is stopped.
func TestGlobalExitSupervised(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	for i := range rounds {
		r := globalExitJob(t, 4, 1+i%2, false, false)
		if r.err != nil || r.code != 7 {
			t.Fatalf("round %d: oshrun code %d err %v, want 7\nstderr:\n%s", i, r.code, r.err, r.stderr)
		}
		if !strings.Contains(r.stderr, "PE 1") || !strings.Contains(r.stderr, "GlobalExit(7)") {
			t.Errorf("round %d: stderr does not name PE 1 and GlobalExit(7):\n%s", i, r.stderr)
		}
		if strings.Contains(r.stdout, "after Run") {
			t.Fatalf("round %d: a PE returned from Run after GlobalExit:\n%s", i, r.stdout)
		}
	}
}

// TestGlobalExitRunLocal: in an in-process job GlobalExit ends the job,
// not the process: RunLocal returns a *GlobalExitError with the status,
// and no PE runs on past GlobalExit or a wait that cannot complete.
func TestGlobalExitRunLocal(t *testing.T) {
	for i := range 30 {
		var ran atomic.Int32
		err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 4, func(pe *goshmem.PE) {
			globalExitBody(pe, &ran)
		})
		var ge *goshmem.GlobalExitError
		if !errors.As(err, &ge) {
			t.Fatalf("round %d: RunLocal returned %v (%T), want a *GlobalExitError", i, err, err)
		}
		if ge.PE != 1 || ge.Code != 7 {
			t.Fatalf("round %d: GlobalExitError PE %d code %d, want PE 1 code 7", i, ge.PE, ge.Code)
		}
		if want := "goshmem: PE 1 called GlobalExit(7)"; ge.Error() != want {
			t.Errorf("Error() = %q, want %q", ge.Error(), want)
		}
		if n := ran.Load(); n != 0 {
			t.Fatalf("round %d: %d PEs ran on past GlobalExit or a wait that could not complete", i, n)
		}
	}
}

func init() { scenarios["globalexit-busy"] = scenarioGlobalExitBusy }

// scenarioGlobalExitBusy: PE 1 calls GlobalExit(7) while PE 0 computes
// in a loop that never calls into the goshmem runtime (nor blocks); PEs
// 2 and 3 wait in a barrier. If PE 0 is still computing after 5 s it
// exits with 3.
func scenarioGlobalExitBusy(pe *goshmem.PE) {
	pe.BarrierAll()
	switch pe.MyPE() {
	case 0:
		start := time.Now()
		x := uint64(1)
		for i := 0; ; i++ {
			x = x*6364136223846793005 + 1442695040888963407
			if i&(1<<20-1) == 0 && time.Since(start) > 5*time.Second {
				fmt.Printf("PE 0 still computing after 5 s (%d)\n", x)
				os.Exit(3)
			}
		}
	case 1:
		time.Sleep(200 * time.Millisecond)
		fmt.Printf("PE 1 calls GlobalExit at %d\n", time.Now().UnixNano())
		pe.GlobalExit(7)
	default:
		pe.BarrierAll()
	}
}

// TestGlobalExitEndsBusyProcess: PE 1 calls GlobalExit(7) while PE 0
// computes without ever calling into the runtime. PE 0's process must
// exit with 7 by itself (the launcher does not stop it: NoSupervise),
// within tens of milliseconds, as must every other process; under
// supervision, oshrun must not end any of them by SIGTERM either.
func TestGlobalExitEndsBusyProcess(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh to report each process's exit status")
	}
	const bound = 100 * time.Millisecond // exit watcher wake-up, process exit, sh and date, a loaded machine
	callRe := regexp.MustCompile(`PE 1 calls GlobalExit at (\d+)`)
	exitRe := regexp.MustCompile(`exit (\d) (\d+) (\d+)`)
	for _, supervised := range []bool{false, true} {
		t.Run(fmt.Sprintf("supervised=%v", supervised), func(t *testing.T) {
			var out, errb bytes.Buffer
			cfg := launch.Config{NPEs: 4, PEsPerProc: 1, NoSupervise: !supervised,
				Program: "/bin/sh",
				Args:    []string{"-c", `"$0" -test.run='^$'; echo "exit $GOSHMEM_PE $? $(date +%s%N)"`, os.Args[0]},
				Env:     []string{scenarioVar + "=globalexit-busy", "SHMEM_SYMMETRIC_SIZE=1m"},
				Stdout:  &out, Stderr: &errb, Timeout: 30 * time.Second}
			code, err := launch.Run(context.Background(), cfg)
			stdout := out.String()
			if err != nil || code != 7 {
				t.Fatalf("oshrun code %d err %v, want 7\nstdout:\n%s\nstderr:\n%s", code, err, stdout, errb.String())
			}
			m := callRe.FindStringSubmatch(stdout)
			if m == nil {
				t.Fatalf("no GlobalExit time in stdout:\n%s", stdout)
			}
			called, _ := strconv.ParseInt(m[1], 10, 64)
			exits := exitRe.FindAllStringSubmatch(stdout, -1)
			if len(exits) != 4 {
				t.Fatalf("%d of 4 processes reported their exit:\n%s\nstderr:\n%s", len(exits), stdout, errb.String())
			}
			for _, e := range exits {
				at, _ := strconv.ParseInt(e[3], 10, 64)
				if e[2] != "7" {
					t.Errorf("the process of PE %s exited with %s, want 7\nstdout:\n%s", e[1], e[2], stdout)
				}
				if e[1] == "0" {
					d := time.Duration(at - called)
					t.Logf("the busy PE's process ended %v after GlobalExit", d)
					if d > bound {
						t.Errorf("the busy PE's process ended %v after GlobalExit, want within %v", d, bound)
					}
				}
			}
		})
	}
}
