package launch

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
)

// The test binary doubles as a fake PE: Run starts it with
// GOSHMEM_TEST_FAKEPE=1 and TestMain turns into fakePE.
const (
	envFake = "GOSHMEM_TEST_FAKEPE"
	envMode = "GOSHMEM_TEST_MODE" // e.g. "0:ok,1:sigkill-self,*:hang"
	envDir  = "GOSHMEM_TEST_DIR"  // where fake PEs leave pid and time files
	envVar  = "GOSHMEM_TEST_PRINTENV"

	envChild     = "GOSHMEM_TEST_CHILD"      // a fake PE's child: sleep, ignoreterm or fork
	envChildFile = "GOSHMEM_TEST_CHILD_FILE" // where the child writes its pid once ready
)

// childMain is a process a fake PE started (or its grandchild): it
// writes its pid (or its own child's, for fork) to $GOSHMEM_TEST_CHILD_FILE
// once ready and sleeps; fork starts a grandchild in a new session
// (escaping the PE's process group) and exits, orphaning it.
func childMain(mode string) int {
	file := os.Getenv(envChildFile)
	switch mode {
	case "ignoreterm":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	case "fork":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envChild+"=sleep")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fake PE's child:", err)
			return 1
		}
		return 0 // the grandchild writes the file
	}
	os.WriteFile(file+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o644)
	os.Rename(file+".tmp", file)
	for {
		time.Sleep(time.Hour)
	}
}

// startChild starts the test binary as a child of this fake PE in the
// given child mode (setsid: in a session of its own) and waits until
// the process that stays (the child, or its orphaned grandchild for
// fork) has written its pid to file.
func startChild(mode, file string, setsid bool) error {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+mode, envChildFile+"="+file)
	if setsid {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if mode == "fork" {
		cmd.Wait()
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			return nil
		}
	}
	return fmt.Errorf("child %s did not start", mode)
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		os.Exit(childMain(mode))
	}
	if os.Getenv(envFake) == "1" {
		os.Exit(fakePE())
	}
	os.Exit(m.Run())
}

// modeFor returns the mode of the process hosting PEs [first,
// first+n): the first mode given for one of them by number, else "*".
func modeFor(spec string, first, n int) string {
	modes := map[string]string{}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(part, ":")
		if !ok {
			k, v = "*", part
		}
		modes[k] = v
	}
	for pe := first; pe < first+n; pe++ {
		if m, ok := modes[strconv.Itoa(pe)]; ok {
			return m
		}
	}
	return modes["*"]
}

// fakePE behaves as a PE process according to GOSHMEM_TEST_MODE.
func fakePE() int {
	spec, ok, err := job.SpecFromEnv(os.Getenv)
	if !ok || err != nil {
		fmt.Fprintln(os.Stderr, "fake PE: not started by a launcher:", err)
		return 99
	}
	segs, err := spec.Adopt()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake PE:", err)
		return 99
	}
	m, err := segs.Ctl.Map(0, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake PE:", err)
		return 99
	}
	ctl, err := job.OpenControl(m.Bytes(), spec.NPEs, 0, spec.JobID, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake PE:", err)
		return 99
	}
	pid := os.Getpid()
	dir := os.Getenv(envDir)
	mode := modeFor(os.Getenv(envMode), spec.FirstPE, spec.LocalPEs)
	local := func(f func(pe int)) {
		for pe := spec.FirstPE; pe < spec.FirstPE+spec.LocalPEs; pe++ {
			f(pe)
		}
	}
	note := func(name string, v int64) {
		if dir != "" {
			os.WriteFile(filepath.Join(dir, name), []byte(strconv.FormatInt(v, 10)), 0o644)
		}
	}
	failing := func() { note(fmt.Sprintf("fail-%d", spec.FirstPE), time.Now().UnixNano()) }
	finalize := func() int {
		local(func(pe int) { ctl.Slot(pe).State.Store(job.StateFinalized) })
		return 0
	}
	note(fmt.Sprintf("pid-%d", spec.FirstPE), int64(pid))
	if mode == "wait" || mode == "ignoreterm" {
		signal.Ignore(syscall.SIGTERM) // before joining: see awaitAll
	}
	switch mode {
	case "child", "child-ignoreterm", "setsid-child", "double-fork", "child-hang":
		// Leave a process behind: a child in the PE's process group, one
		// that ignores SIGTERM, one in a session of its own, or an
		// orphaned grandchild in a session of its own. Before joining,
		// so that it exists once every PE has joined.
		cmode, setsid := map[string]string{"child-ignoreterm": "ignoreterm", "double-fork": "fork"}[mode], mode == "setsid-child"
		if err := startChild(cmp.Or(cmode, "sleep"), filepath.Join(dir, fmt.Sprintf("child-%d", spec.FirstPE)), setsid); err != nil {
			fmt.Fprintln(os.Stderr, "fake PE:", err)
			return 97
		}
	}
	if mode != "plain" {
		local(func(pe int) {
			ctl.Slot(pe).Pid.Store(int32(pid))
			ctl.Slot(pe).State.Store(job.StateRunning)
		})
	}
	// awaitAll waits until every PE has joined, as a start-up barrier
	// would; failing modes fail only then.
	awaitAll := func() {
		for pe := range spec.NPEs {
			for ctl.Slot(pe).State.Load() == job.StateStarting {
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	forever := func() {
		for {
			time.Sleep(time.Hour)
		}
	}
	switch mode {
	case "ok":
		return finalize()
	case "slow":
		time.Sleep(300 * time.Millisecond)
		return finalize()
	case "exit3":
		awaitAll()
		failing()
		return 3
	case "sigkill-self":
		awaitAll()
		failing()
		p, _ := os.FindProcess(pid)
		p.Kill()
		forever()
	case "hang":
		forever()
	case "ignoreterm":
		forever()
	case "wait":
		// Sleep on the doorbell like the runtime does; leave when the
		// job is aborted (only then: SIGTERM is ignored).
		d := &ctl.Slot(spec.FirstPE).Door
		for {
			seq := d.Seq.Load()
			if _, _, _, _, ok := ctl.Header.Abort.Get(); ok {
				note(fmt.Sprintf("woke-%d", spec.FirstPE), time.Now().UnixNano())
				return 1
			}
			d.Sleepers.Add(1)
			sys.FutexWait(mem.U32(&d.Seq), seq, 0)
			d.Sleepers.Add(^uint32(0))
		}
	case "watch":
		// Detect dead peers without the launcher's help, as the
		// runtime does: a pidfd turns readable when its process exits
		// (kill(pid, 0) would still find the zombie the launcher keeps
		// until the end).
		pidfds := map[int]int{}
		exited := func(p int) bool {
			fd, ok := pidfds[p]
			if !ok {
				var err error
				if fd, err = sys.PidfdOpen(p); err != nil {
					return !sys.ProcessAlive(p)
				}
				pidfds[p] = fd
			}
			return sys.PidfdExited(fd)
		}
		for {
			if _, _, _, _, ok := ctl.Header.Abort.Get(); ok {
				return 1
			}
			for pe := range spec.NPEs {
				s := ctl.Slot(pe)
				p := int(s.Pid.Load())
				if p > 0 && p != pid && s.State.Load() != job.StateFinalized && exited(p) {
					ctl.Header.Abort.Set(job.AbortLost, pe, p, 0)
					note(fmt.Sprintf("detected-%d", spec.FirstPE), int64(pe))
					return 1
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	case "nofinalize":
		awaitAll()
		failing()
		return 0
	case "plain":
		return 0
	case "globalexit":
		awaitAll()
		failing()
		ctl.Header.Abort.Set(job.AbortGlobalExit, spec.FirstPE, pid, 5)
		for pe := range spec.NPEs {
			wake(&ctl.Slot(pe).Door)
		}
		return 5
	case "panic":
		// Like goshmem.Main: record the panic, wake the peers (who exit
		// 1 at once), print the stack for a while, exit 2.
		awaitAll()
		failing()
		ctl.Header.Abort.Set(job.AbortPanic, spec.FirstPE, pid, 0)
		for pe := range spec.NPEs {
			wake(&ctl.Slot(pe).Door)
		}
		time.Sleep(100 * time.Millisecond)
		return 2
	case "child", "child-ignoreterm", "setsid-child", "double-fork", "child-hang":
		// The child started before joining (see above).
		if mode == "child-hang" {
			forever()
		}
		return finalize()
	case "catch":
		// Report the first stop signal the launcher sends.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		note(fmt.Sprintf("ready-%d", spec.FirstPE), 1)
		note(fmt.Sprintf("sig-%d", spec.FirstPE), int64(sys.SignalNumber(<-sigs)))
		return 1
	case "env":
		name := os.Getenv(envVar)
		fmt.Printf("PE %d: %s=%s\n", spec.FirstPE, name, os.Getenv(name))
		return finalize()
	case "print":
		fmt.Printf("out 1 from %d\nout 2 from %d\n", spec.FirstPE, spec.FirstPE)
		fmt.Fprintf(os.Stderr, "err from %d\n", spec.FirstPE)
		fmt.Printf("partial from %d", spec.FirstPE)
		return finalize()
	case "affinity":
		cpus, err := sys.Affinity(0)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Printf("PE %d cpus %s gomaxprocs %d homes %s\n", spec.FirstPE, numa.FormatCPUList(cpus),
			runtime.GOMAXPROCS(0), os.Getenv(job.EnvNUMANodes))
		return finalize()
	}
	fmt.Fprintf(os.Stderr, "fake PE: unknown mode %q\n", mode)
	return 98
}

// result is what runJob observed.
type result struct {
	code           int
	err            error
	stdout, stderr string
	start, end     time.Time
	dir            string
	pids           map[int]int // first PE of a process -> pid
}

// file reads a number a fake PE left in the test directory.
func (r *result) file(name string) (int64, bool) {
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

// failedAt returns when the process hosting first said it was failing.
func (r *result) failedAt(t *testing.T, first int) time.Time {
	t.Helper()
	v, ok := r.file(fmt.Sprintf("fail-%d", first))
	if !ok {
		t.Fatalf("PE %d left no failure time", first)
	}
	return time.Unix(0, v)
}

// shmEntries lists goshmem's files in /dev/shm (the file fallback names
// them goshmem-*; what other programs on the machine create there, an
// Open MPI run's vader segments say, is not a leftover of ours).
func shmEntries(t *testing.T) []string {
	ents, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "goshmem") {
			names = append(names, e.Name())
		}
	}
	return names
}

// memfds counts this process's goshmem memfd descriptors.
func memfds(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "goshmem") {
			n++
		}
	}
	return n
}

// testEnv returns the Env entries that make the test binary a fake PE.
func testEnv(mode, dir string) []string {
	// Under -race a process exiting 0 sleeps a second for late reports
	// (GORACE atexit_sleep_ms): that would be measured as stop latency.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return []string{envFake + "=1", envMode + "=" + mode, envDir + "=" + dir, "SHMEM_SYMMETRIC_SIZE=1M", "GORACE=" + gorace}
}

// runJob runs cfg with the test binary as the program, in the given
// mode, and checks that nothing is left behind.
func runJob(t *testing.T, ctx context.Context, cfg Config, mode string) *result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &result{dir: t.TempDir(), pids: map[int]int{}}
	if cfg.Program == "" {
		cfg.Program = exe
	}
	cfg.Env = append(testEnv(mode, r.dir), cfg.Env...)
	var stdout, stderr bytes.Buffer
	if cfg.Stdout == nil {
		cfg.Stdout = &stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = &stderr
	}
	shmBefore := shmEntries(t)
	fdsBefore := memfds(t)
	r.start = time.Now()
	r.code, r.err = Run(ctx, cfg)
	r.end = time.Now()
	r.stdout, r.stderr = stdout.String(), stderr.String()
	t.Logf("exit %d err %v in %v; stderr:\n%s", r.code, r.err, r.end.Sub(r.start), r.stderr)

	// Nothing left: processes, descriptors, /dev/shm entries.
	ppp := max(cfg.PEsPerProc, 1)
	for first := 0; first < cfg.NPEs; first += ppp {
		if pid, ok := r.file(fmt.Sprintf("pid-%d", first)); ok {
			r.pids[first] = int(pid)
			if sys.ProcessAlive(int(pid)) {
				t.Errorf("PE %d (pid %d) still exists after Run returned", first, pid)
			}
		}
	}
	if n := memfds(t); n != fdsBefore {
		t.Errorf("launcher holds %d goshmem descriptors after Run, %d before", n, fdsBefore)
	}
	if added := newEntries(shmBefore, shmEntries(t)); len(added) > 0 {
		time.Sleep(100 * time.Millisecond) // ignore other tests' short-lived files
		if added = newEntries(shmBefore, shmEntries(t)); len(added) > 0 {
			t.Errorf("left in /dev/shm: %v", added)
		}
	}
	return r
}

func newEntries(before, after []string) []string {
	var added []string
	for _, n := range after {
		if !slices.Contains(before, n) {
			added = append(added, n)
		}
	}
	return added
}

func TestSuccess(t *testing.T) {
	for _, ppp := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("pes-per-proc=%d", ppp), func(t *testing.T) {
			r := runJob(t, context.Background(), Config{NPEs: 4, PEsPerProc: ppp}, "ok")
			if r.err != nil || r.code != 0 {
				t.Fatalf("Run = %d, %v; want 0, nil", r.code, r.err)
			}
			if r.stderr != "" {
				t.Errorf("stderr = %q, want nothing", r.stderr)
			}
			if want := (4 + ppp - 1) / ppp; len(r.pids) != want {
				t.Errorf("%d processes ran, want %d", len(r.pids), want)
			}
		})
	}
}

// TestFailures checks, for each way a PE can fail, the exit code, the
// one line, and that every other PE is gone within a second.
func TestFailures(t *testing.T) {
	tests := []struct {
		name     string
		npes     int
		ppp      int
		mode     string
		failed   int    // first PE of the failing process
		line     string // %d is the failing process's pid
		code     int
		minStop  time.Duration // the stop takes at least this long
		maxStop  time.Duration // and at most this long (default 1s)
		noSuperv bool
	}{
		{name: "exit", npes: 4, mode: "1:exit3,*:hang", failed: 1,
			line: "oshrun: PE 1 (pid %d) exited with code 3", code: 3},
		{name: "signal", npes: 4, mode: "3:sigkill-self,*:hang", failed: 3,
			line: "oshrun: PE 3 (pid %d) was killed by SIGKILL", code: 128 + 9},
		{name: "nofinalize", npes: 4, mode: "2:nofinalize,*:hang", failed: 2,
			line: "oshrun: PE 2 (pid %d) exited without calling Finalize", code: 1},
		{name: "globalexit", npes: 4, mode: "2:globalexit,*:hang", failed: 2,
			line: "oshrun: PE 2 (pid %d) called GlobalExit(5)", code: 5},
		{name: "panic", npes: 4, mode: "1:panic,*:wait", failed: 1,
			line: "oshrun: PE 1 (pid %d) panicked", code: 2},
		// os.Exit cannot be told from PE to PE: the process is named.
		{name: "multi-pe-process", npes: 4, ppp: 2, mode: "3:exit3,*:hang", failed: 2,
			line: "oshrun: the process of PEs 2-3 (pid %d) exited with code 3", code: 3},
		{name: "multi-pe-process-signal", npes: 4, ppp: 2, mode: "1:sigkill-self,*:hang", failed: 0,
			line: "oshrun: the process of PEs 0-1 (pid %d) was killed by SIGKILL", code: 128 + 9},
		{name: "doorbell", npes: 4, mode: "0:exit3,*:wait", failed: 0,
			line: "oshrun: PE 0 (pid %d) exited with code 3", code: 3, maxStop: termGrace / 2},
		{name: "sigterm-ignored", npes: 3, mode: "0:sigkill-self,*:ignoreterm", failed: 0,
			line: "oshrun: PE 0 (pid %d) was killed by SIGKILL", code: 128 + 9, minStop: termGrace},
		{name: "plain-among-joined", npes: 3, mode: "0:plain,*:hang", failed: 0,
			line: "oshrun: PE 0 (pid %d) exited without calling Finalize", code: 1},
		{name: "unsupervised", npes: 4, mode: "0:sigkill-self,*:watch", failed: 0,
			line: "oshrun: PE 0 (pid %d) was killed by SIGKILL", code: 128 + 9, noSuperv: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			timely(t, func() string {
				cfg := Config{NPEs: tc.npes, PEsPerProc: tc.ppp, NoSupervise: tc.noSuperv, Timeout: 20 * time.Second}
				r := runJob(t, context.Background(), cfg, tc.mode)
				if r.err != nil {
					t.Fatalf("Run: %v", r.err)
				}
				if r.code != tc.code {
					t.Errorf("exit code %d, want %d", r.code, tc.code)
				}
				want := fmt.Sprintf(tc.line, r.pids[tc.failed]) + "\n"
				if r.stderr != want {
					t.Errorf("stderr = %q, want %q", r.stderr, want)
				}
				var since time.Time
				if tc.mode == "0:plain,*:hang" {
					since = r.start // fails at once
				} else {
					since = r.failedAt(t, tc.failed)
				}
				stop := r.end.Sub(since)
				t.Logf("all PEs gone %v after the failure", stop)
				if stop < tc.minStop {
					t.Errorf("PEs gone %v after the failure, want >= %v", stop, tc.minStop)
				}
				switch tc.name {
				case "doorbell":
					for pe := 1; pe < tc.npes; pe++ {
						if _, ok := r.file(fmt.Sprintf("woke-%d", pe)); !ok {
							t.Errorf("PE %d did not see the abort on its doorbell", pe)
						}
					}
				case "unsupervised":
					n := 0
					for pe := 1; pe < tc.npes; pe++ {
						if _, ok := r.file(fmt.Sprintf("detected-%d", pe)); ok {
							n++
						}
					}
					if n == 0 {
						t.Errorf("no PE detected the dead peer by itself")
					}
				}
				if tc.maxStop == 0 {
					tc.maxStop = time.Second
				}
				if stop > tc.maxStop {
					return fmt.Sprintf("PEs gone %v after the failure, want < %v", stop, tc.maxStop)
				}
				return ""
			})
		})
	}
}

// timely runs attempt until its timing holds, at most 3 times. Other
// checks fail the test at once; but a machine loaded by other tests can
// stretch a latency, so a timing miss (attempt returns what missed)
// fails the test only the third time.
func timely(t *testing.T, attempt func() string) {
	t.Helper()
	for i := 1; ; i++ {
		miss := attempt()
		if miss == "" || t.Failed() {
			return
		}
		if i == 3 {
			t.Errorf("%s (3 attempts)", miss)
			return
		}
		t.Logf("attempt %d: %s; retrying", i, miss)
	}
}

func TestTimeout(t *testing.T) {
	const limit = 300 * time.Millisecond
	timely(t, func() string {
		r := runJob(t, context.Background(), Config{NPEs: 3, Timeout: limit}, "hang")
		if r.err != nil || r.code != ExitTimeout {
			t.Fatalf("Run = %d, %v; want %d, nil", r.code, r.err, ExitTimeout)
		}
		if want := "oshrun: job timed out after 300ms\n"; r.stderr != want {
			t.Errorf("stderr = %q, want %q", r.stderr, want)
		}
		took := r.end.Sub(r.start)
		t.Logf("job stopped %v after its start (limit %v)", took, limit)
		if took < limit {
			t.Errorf("job took %v, less than its limit %v", took, limit)
		}
		if took > limit+time.Second {
			return fmt.Sprintf("job took %v, want within a second after %v", took, limit)
		}
		return ""
	})
}

func TestTimeoutNotReached(t *testing.T) {
	r := runJob(t, context.Background(), Config{NPEs: 2, Timeout: 10 * time.Second}, "slow")
	if r.err != nil || r.code != 0 || r.stderr != "" {
		t.Fatalf("Run = %d, %v, stderr %q; want 0", r.code, r.err, r.stderr)
	}
}

func TestInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sys.SignalName(int(sig)), func(t *testing.T) {
			timely(t, func() string {
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				var at time.Time
				time.AfterFunc(300*time.Millisecond, func() {
					at = time.Now()
					cancel(&SignalError{Signal: sig})
				})
				r := runJob(t, ctx, Config{NPEs: 4, PEsPerProc: 2}, "*:hang")
				if r.err != nil || r.code != 128+int(sig) {
					t.Fatalf("Run = %d, %v; want %d", r.code, r.err, 128+int(sig))
				}
				if want := "oshrun: interrupted by " + sys.SignalName(int(sig)) + "\n"; r.stderr != want {
					t.Errorf("stderr = %q, want %q", r.stderr, want)
				}
				stop := r.end.Sub(at)
				t.Logf("PEs gone %v after the cancellation", stop)
				if stop > time.Second {
					return fmt.Sprintf("stop took %v", stop)
				}
				return ""
			})
		})
	}
	t.Run("plain-cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		r := runJob(t, ctx, Config{NPEs: 2}, "hang")
		if r.err != nil || r.code != 128+sys.SIGTERM {
			t.Fatalf("Run = %d, %v", r.code, r.err)
		}
		if want := "oshrun: interrupted (context canceled)\n"; r.stderr != want {
			t.Errorf("stderr = %q, want %q", r.stderr, want)
		}
	})
}

func TestTagOutput(t *testing.T) {
	for _, tc := range []struct {
		ppp  int
		tags []string
	}{{1, []string{"[PE 0] ", "[PE 1] ", "[PE 2] "}}, {2, []string{"[PE 0-1] ", "[PE 0-1] ", "[PE 2] "}}} {
		t.Run(fmt.Sprintf("pes-per-proc=%d", tc.ppp), func(t *testing.T) {
			r := runJob(t, context.Background(), Config{NPEs: 3, PEsPerProc: tc.ppp, TagOutput: true}, "print")
			if r.err != nil || r.code != 0 {
				t.Fatalf("Run = %d, %v", r.code, r.err)
			}
			outLines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			errLines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			for pe := 0; pe < 3; pe += tc.ppp {
				tag := tc.tags[pe]
				for _, want := range []string{
					fmt.Sprintf("%sout 1 from %d", tag, pe),
					fmt.Sprintf("%sout 2 from %d", tag, pe),
					fmt.Sprintf("%spartial from %d", tag, pe),
				} {
					if !slices.Contains(outLines, want) {
						t.Errorf("stdout lacks line %q:\n%s", want, r.stdout)
					}
				}
				if want := fmt.Sprintf("%serr from %d", tag, pe); !slices.Contains(errLines, want) {
					t.Errorf("stderr lacks line %q:\n%s", want, r.stderr)
				}
			}
			for _, l := range append(outLines, errLines...) {
				if !strings.HasPrefix(l, "[PE ") {
					t.Errorf("untagged line %q", l)
				}
			}
		})
	}
}

func TestUntaggedOutputToWriter(t *testing.T) {
	r := runJob(t, context.Background(), Config{NPEs: 2}, "print")
	if r.err != nil || r.code != 0 {
		t.Fatalf("Run = %d, %v", r.code, r.err)
	}
	for pe := range 2 {
		if want := fmt.Sprintf("out 1 from %d\n", pe); !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q: %q", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "[PE") {
		t.Errorf("tagged output without TagOutput: %q", r.stdout)
	}
}

func TestEnv(t *testing.T) {
	r := runJob(t, context.Background(), Config{NPEs: 2, Env: []string{envVar + "=MY_VAR", "MY_VAR=hello world"}}, "env")
	if r.err != nil || r.code != 0 {
		t.Fatalf("Run = %d, %v", r.code, r.err)
	}
	for pe := range 2 {
		if want := fmt.Sprintf("PE %d: MY_VAR=hello world\n", pe); !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q: %q", want, r.stdout)
		}
	}
}

func TestBadHeapSettings(t *testing.T) {
	for _, kv := range []string{"SHMEM_SYMMETRIC_SIZE=lots", "SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES=perhaps"} {
		name, _, _ := strings.Cut(kv, "=")
		code, err := Run(context.Background(), Config{NPEs: 1, Program: "true", Env: []string{kv}})
		if err == nil || code != ExitFailure || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: Run = %d, %v; want an error naming %s", kv, code, err, name)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{NPEs: 0, Program: "true"}, "at least 1"},
		{Config{NPEs: numa.MaxPlacedPEs + 1, Program: "true"}, "cannot start 1048577 PEs on one host"}, // checked first: -n 1000000000 ran out of memory

		{Config{NPEs: 1, PEsPerProc: -1, Program: "true"}, "at least 1"},
		{Config{NPEs: 1}, "no program"},
		{Config{NPEs: 1, Program: "true", BindTo: "hwthread"}, "use none, core, numa or socket"},
		{Config{NPEs: 1, Program: "true", MapBy: "board"}, "use core, numa or socket"},
		{Config{NPEs: 1, Program: "true", Env: []string{"NOEQUALS"}}, "VAR=value"},
	} {
		code, err := Run(context.Background(), tc.cfg)
		if err == nil || code != ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v) = %d, %v; want %d and an error containing %q", tc.cfg, code, err, ExitUsage, tc.want)
		}
	}
	code, err := Run(context.Background(), Config{NPEs: 1, Program: "no-such-program-goshmem"})
	if err == nil || code != ExitFailure || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing program: Run = %d, %v", code, err)
	}
	code, err = Run(context.Background(), Config{NPEs: 1, Program: t.TempDir()})
	if err == nil || code != ExitFailure || !strings.Contains(err.Error(), "without Go files") {
		t.Errorf("empty directory: Run = %d, %v", code, err)
	}
}

// TestPlainProgram runs programs that never join the job: fine as long
// as no PE joins.
func TestPlainProgram(t *testing.T) {
	var out bytes.Buffer
	code, err := Run(context.Background(), Config{NPEs: 3, Program: "sh", Args: []string{"-c", `echo "pe $GOSHMEM_PE of $GOSHMEM_NPES"`},
		Stdout: &out, Stderr: &out, TagOutput: true, Env: []string{"SHMEM_SYMMETRIC_SIZE=1M"}})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v; output %q", code, err, out.String())
	}
	for pe := range 3 {
		if want := fmt.Sprintf("[PE %d] pe %d of 3\n", pe, pe); !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q: %q", want, out.String())
		}
	}
	var errOut bytes.Buffer
	code, err = Run(context.Background(), Config{NPEs: 2, Program: "sh", Args: []string{"-c", "exit $((GOSHMEM_PE + 6))"},
		Stdout: &errOut, Stderr: &errOut, Env: []string{"SHMEM_SYMMETRIC_SIZE=1M"}})
	if err != nil || (code != 6 && code != 7) {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if !regexp.MustCompile(`^oshrun: PE [01] \(pid \d+\) exited with code [67]\n$`).MatchString(errOut.String()) {
		t.Errorf("output %q", errOut.String())
	}
}

// TestBuildPackage runs a Go package directory: built once, removed
// afterwards.
func TestBuildPackage(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var out bytes.Buffer
	code, err := Run(context.Background(), Config{NPEs: 2, Program: "./testdata/hello", Args: []string{"a", "b"},
		Stdout: &out, Stderr: &out, TagOutput: true, Env: []string{"SHMEM_SYMMETRIC_SIZE=1M"}})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v; output %q", code, err, out.String())
	}
	for pe := range 2 {
		if want := fmt.Sprintf("[PE %d] hello from PE %d of 2, args [a b]\n", pe, pe); !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q: %q", want, out.String())
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("build directory left in $TMPDIR: %v", left[0].Name())
	}

	code, err = Run(context.Background(), Config{NPEs: 1, Program: "./testdata/library", Stderr: &out})
	if err == nil || code != ExitFailure || !strings.Contains(err.Error(), "not a main package") {
		t.Errorf("library package: Run = %d, %v; want an error saying it is not a main package", code, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("library package: build directory left in $TMPDIR: %v", left[0].Name())
	}

	code, err = Run(context.Background(), Config{NPEs: 1, Program: "./testdata/broken", Stderr: &out})
	if err == nil || code != ExitFailure || !strings.Contains(err.Error(), "undefined") {
		t.Errorf("broken package: Run = %d, %v", code, err)
	}
}

func TestBindings(t *testing.T) {
	topo, err := numa.Discover("")
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := numa.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	usable := topo.Usable(allowed)
	// GOMAXPROCS follows the binding unless the environment sets it.
	_, fixedProcs := os.LookupEnv("GOMAXPROCS")
	for _, tc := range []struct {
		npes, ppp     int
		mapBy, bindTo string
	}{
		{2, 1, "", ""}, // the default binding
		{2, 1, "core", "core"},
		{3, 1, "numa", "numa"},
		{2, 1, "socket", "socket"},
		{2, 2, "core", "core"}, // one process, the union of its PEs' cores
		{4, 1, "core", "none"},
		{5, 1, "", ""}, // oversubscribed here: the default is none
	} {
		name := fmt.Sprintf("n=%d/ppp=%d/map=%s/bind=%s", tc.npes, tc.ppp, tc.mapBy, tc.bindTo)
		t.Run(name, func(t *testing.T) {
			cfg := Config{NPEs: tc.npes, PEsPerProc: tc.ppp, MapBy: tc.mapBy, BindTo: tc.bindTo, ReportBindings: true}
			mapBy, bindTo := cmp.Or(tc.mapBy, "core"), cmp.Or(tc.bindTo, numa.DefaultBinding(topo, usable, tc.npes))
			places, err := numa.Place(topo, usable, tc.npes, mapBy, bindTo)
			if err != nil {
				t.Fatal(err)
			}
			r := runJob(t, context.Background(), cfg, "affinity")
			if r.err != nil || r.code != 0 {
				t.Fatalf("Run = %d, %v", r.code, r.err)
			}
			ppp := max(tc.ppp, 1)
			for first := 0; first < tc.npes; first += ppp {
				n := min(ppp, tc.npes-first)
				var cpus []int
				var homes []string
				for _, p := range places[first : first+n] {
					cpus = append(cpus, p.Bind...)
					homes = append(homes, strconv.Itoa(p.Node))
				}
				slices.Sort(cpus)
				cpus = slices.Compact(cpus)
				bound := cpus
				if bindTo == "none" {
					bound, cpus = nil, allowed
				}
				procs := len(cpus)
				if fixedProcs {
					procs = runtime.GOMAXPROCS(0) // unchecked: the user fixed it
				}
				want := fmt.Sprintf("PE %d cpus %s gomaxprocs %d homes %s\n", first, numa.FormatCPUList(cpus), procs, strings.Join(homes, ","))
				if fixedProcs {
					want = fmt.Sprintf("PE %d cpus %s gomaxprocs ", first, numa.FormatCPUList(cpus))
				}
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
				line := fmt.Sprintf("oshrun: PE %d (pid %d): %s ", first, r.pids[first], topo.BindingMap(bound, usable))
				if !strings.Contains(r.stderr, line) {
					t.Errorf("stderr lacks %q:\n%s", line, r.stderr)
				}
				if n == 1 && !strings.Contains(r.stderr, line+topo.Describe(places[first], bindTo, usable)+"\n") {
					t.Errorf("stderr lacks the description of PE %d (%s):\n%s", first, topo.Describe(places[first], bindTo, usable), r.stderr)
				}
			}
			if got := strings.Count(r.stderr, "oshrun: PE "); got != tc.npes {
				t.Errorf("%d binding lines, want one per PE (%d):\n%s", got, tc.npes, r.stderr)
			}
			// The launcher's own threads keep their affinity.
			if now, err := sys.Affinity(0); err != nil || !slices.Equal(now, allowed) {
				t.Errorf("launcher affinity %v after binding, was %v", now, allowed)
			}
		})
	}
}

// TestPlacementFakeTopology places PEs on a fake 2-socket machine
// (numa/testdata) without binding: the PEs learn their home nodes, and
// the report draws the fake machine.
func TestPlacementFakeTopology(t *testing.T) {
	topo, err := numa.Discover("../../numa/testdata/2socket-smt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mapBy string
		ppp   int
		homes []string // per process
		maps  []string // per PE
	}{
		{"numa", 1, []string{"0", "1", "0", "1"}, []string{"[../../../..][../../../..]"}},
		{"core", 2, []string{"0,0", "0,0"}, nil},
		{"socket", 2, []string{"0,1", "0,1"}, nil},
	} {
		cfg := Config{NPEs: 4, PEsPerProc: tc.ppp, MapBy: tc.mapBy, BindTo: "none", Topology: topo, ReportBindings: true}
		r := runJob(t, context.Background(), cfg, "affinity")
		if r.err != nil || r.code != 0 {
			t.Fatalf("map-by %s: Run = %d, %v", tc.mapBy, r.code, r.err)
		}
		for k, h := range tc.homes {
			if want := fmt.Sprintf("PE %d cpus ", k*tc.ppp); !strings.Contains(r.stdout, want) {
				t.Errorf("map-by %s: stdout lacks %q", tc.mapBy, want)
			}
			if want := " homes " + h + "\n"; !strings.Contains(strings.Split(r.stdout[strings.Index(r.stdout, fmt.Sprintf("PE %d cpus ", k*tc.ppp)):], "\n")[0]+"\n", want) {
				t.Errorf("map-by %s: process %d lacks %q:\n%s", tc.mapBy, k, want, r.stdout)
			}
		}
		for _, m := range tc.maps {
			if !strings.Contains(r.stderr, m+" not bound") {
				t.Errorf("map-by %s: stderr lacks %q:\n%s", tc.mapBy, m+" not bound", r.stderr)
			}
		}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool { return sys.Running(pid) }

// TestLeftovers checks that nothing a PE started outlives Run: the
// children in its process group, one that ignores SIGTERM, one that
// left the group with setsid, an orphaned grandchild (double fork) in
// a session of its own; after a normal exit (which stays a success)
// and after a failure.
func TestLeftovers(t *testing.T) {
	// Orphans reparent to a subreaper; oshrun is one (for this test
	// binary, the setting lasts until the test ends).
	if err := sys.SetChildSubreaper(true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.SetChildSubreaper(false) })
	for _, tc := range []struct {
		name, mode string
		code       int
		minTook    time.Duration
	}{
		{name: "child", mode: "child"},
		{name: "child-ignoring-sigterm", mode: "child-ignoreterm", minTook: termGrace},
		{name: "setsid-child", mode: "setsid-child"},
		{name: "double-fork", mode: "double-fork"},
		{name: "failure", mode: "0:exit3,1:setsid-child,*:child-hang", code: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var children []int
			r := &result{}
			t.Cleanup(func() {
				for _, pid := range children {
					if alive(pid) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			const npes = 3
			r = runJob(t, context.Background(), Config{NPEs: npes, Timeout: 20 * time.Second}, tc.mode)
			if r.err != nil || r.code != tc.code {
				t.Errorf("Run = %d, %v; want %d", r.code, r.err, tc.code)
			}
			for pe := range npes {
				if pid, ok := r.file(fmt.Sprintf("child-%d", pe)); ok {
					children = append(children, int(pid))
				} else if pe > 0 || tc.code == 0 {
					t.Errorf("PE %d left no child pid", pe)
				}
			}
			for _, pid := range children {
				if alive(pid) {
					t.Errorf("process %d started by a PE outlived Run", pid)
				}
			}
			if took := r.end.Sub(r.start); took < tc.minTook {
				t.Errorf("Run took %v; a child ignoring SIGTERM is killed only after %v", took, tc.minTook)
			}
		})
	}
}

// TestInterruptForwarded checks that the PEs get the signal that
// interrupted the launcher (their process groups do not get the
// terminal's ^C or hang-up themselves).
func TestInterruptForwarded(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sys.SignalName(int(sig)), func(t *testing.T) {
			// A PE that got the signal has 500 ms to note it before the
			// SIGKILL: on a loaded machine a note may be missing, which
			// is retried; a wrong signal fails at once.
			timely(t, func() string { return interruptOnce(t, sig) })
		})
	}
}

func interruptOnce(t *testing.T, sig syscall.Signal) string {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	dir := t.TempDir()
	go func() {
		// Interrupt once both PEs listen for signals.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			_, e0 := os.Stat(filepath.Join(dir, "ready-0"))
			_, e1 := os.Stat(filepath.Join(dir, "ready-1"))
			if e0 == nil && e1 == nil {
				break
			}
		}
		cancel(&SignalError{Signal: sig})
	}()
	r := runJob(t, ctx, Config{NPEs: 2, Env: []string{envDir + "=" + dir}}, "catch")
	if r.err != nil || r.code != 128+int(sig) {
		t.Fatalf("Run = %d, %v; want %d", r.code, r.err, 128+int(sig))
	}
	for pe := range 2 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("sig-%d", pe)))
		if err != nil {
			return fmt.Sprintf("PE %d noted no signal", pe)
		}
		if got := string(b); got != strconv.Itoa(int(sig)) {
			t.Errorf("PE %d got signal %q, want %d (%s)", pe, got, sig, sys.SignalName(int(sig)))
		}
	}
	return ""
}
