package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/launch"
	"github.com/goshmem/goshmem/internal/sys"
)

// The test binary runs as oshrun itself when OSHRUN_TEST_MAIN=1, and as
// a real goshmem program (a PE) when OSHRUN_TEST_PE names what its last
// PE does.
func TestMain(m *testing.M) {
	if os.Getenv("OSHRUN_TEST_MAIN") == "1" {
		main()
		return
	}
	if mode := os.Getenv(envPE); mode != "" {
		testPE(mode)
		return
	}
	os.Exit(m.Run())
}

const envPE = "OSHRUN_TEST_PE"

// testPE is a goshmem program whose last PE fails as mode says, after a
// barrier, while the others wait in the next one.
func testPE(mode string) {
	goshmem.Main(func(pe *goshmem.PE) {
		pe.BarrierAll()
		if pe.MyPE() == pe.NPEs()-1 {
			switch mode {
			case "panic":
				panic("test PE panics")
			case "exit3":
				os.Exit(3)
			case "sigkill":
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			case "globalexit7":
				pe.GlobalExit(7)
			case "logfatal":
				log.Fatal("test PE calls log.Fatal")
			}
		}
		pe.BarrierAll()
	})
}

// TestExitCodeOfFirstFailure checks that oshrun exits with the code of
// the PE that failed first, however it failed, whatever its peers did
// when they noticed, and however PEs share processes.
func TestExitCodeOfFirstFailure(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode string
		code int
		line string // what the cause line says
	}{
		{"panic", 2, "panicked"},
		{"exit3", 3, "exited with code 3"},
		{"sigkill", 128 + 9, "was killed by SIGKILL"},
		{"globalexit7", 7, "called GlobalExit(7)"},
		{"logfatal", 1, "exited with code 1"},
	} {
		for _, shape := range []struct{ npes, ppp int }{{1, 1}, {2, 1}, {4, 1}, {2, 2}, {4, 2}} {
			t.Run(fmt.Sprintf("%s/n=%d/ppp=%d", tc.mode, shape.npes, shape.ppp), func(t *testing.T) {
				var out, errOut bytes.Buffer
				args := []string{"-n", strconv.Itoa(shape.npes), "--pes-per-proc", strconv.Itoa(shape.ppp), "--timeout", "20s",
					"-x", "SHMEM_SYMMETRIC_SIZE=1M", "-x", envPE + "=" + tc.mode, exe}
				code := oshrun(args, &out, &errOut, os.LookupEnv, false)
				if code != tc.code {
					t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.code, errOut.String())
				}
				// The failing PE is the last. A panic and GlobalExit are
				// recorded by the PE, which is named; the exit of a
				// process of several PEs names the process, since which
				// of its PEs exited cannot be known.
				who := fmt.Sprintf("PE %d", shape.npes-1)
				if shape.ppp > 1 && tc.mode != "panic" && tc.mode != "globalexit7" {
					who = fmt.Sprintf("the process of PEs %d-%d", shape.npes-shape.ppp, shape.npes-1)
				}
				lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
				if last := lines[len(lines)-1]; !strings.HasPrefix(last, "oshrun: "+who+" (pid ") || !strings.HasSuffix(last, ") "+tc.line) {
					t.Errorf("last line %q, want oshrun: %s (pid p) %s", last, who, tc.line)
				}
				if tc.mode == "panic" && !strings.Contains(errOut.String(), "panicked: test PE panics\n\ngoroutine ") {
					t.Errorf("the panic's stack is missing:\n%s", errOut.String())
				}
			})
		}
	}
}

func fakeEnv(name string) (string, bool) {
	switch name {
	case "HOME":
		return "/home/pe", true
	case "EMPTY":
		return "", true
	}
	return "", false
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args []string
		want launch.Config
	}{
		{[]string{"./hello"},
			launch.Config{NPEs: 1, PEsPerProc: 1, MapBy: "core", Program: "./hello", Args: []string{}}},
		{[]string{"-n", "4", "./hello", "-n", "5", "--tag-output"},
			launch.Config{NPEs: 4, PEsPerProc: 1, MapBy: "core", Program: "./hello", Args: []string{"-n", "5", "--tag-output"}}},
		{[]string{"-np", "8", "prog"},
			launch.Config{NPEs: 8, PEsPerProc: 1, MapBy: "core", Program: "prog", Args: []string{}}},
		{[]string{"--np", "8", "prog"},
			launch.Config{NPEs: 8, PEsPerProc: 1, MapBy: "core", Program: "prog", Args: []string{}}},
		{[]string{"--np=3", "--pes-per-proc", "2", "--bind-to", "core", "--report-bindings", "--tag-output", "--timeout", "30s", "prog", "a"},
			launch.Config{NPEs: 3, PEsPerProc: 2, MapBy: "core", BindTo: "core", ReportBindings: true, TagOutput: true, Timeout: 30 * time.Second, Program: "prog", Args: []string{"a"}}},
		{[]string{"--map-by", "numa", "--bind-to", "socket", "prog"},
			launch.Config{NPEs: 1, PEsPerProc: 1, MapBy: "numa", BindTo: "socket", Program: "prog", Args: []string{}}},
		{[]string{"-timeout=90", "prog"},
			launch.Config{NPEs: 1, PEsPerProc: 1, MapBy: "core", Timeout: 90 * time.Second, Program: "prog", Args: []string{}}},
		{[]string{"--timeout", "1.5", "prog"},
			launch.Config{NPEs: 1, PEsPerProc: 1, MapBy: "core", Timeout: 1500 * time.Millisecond, Program: "prog", Args: []string{}}},
		{[]string{"--timeout", ".25", "prog"},
			launch.Config{NPEs: 1, PEsPerProc: 1, MapBy: "core", Timeout: 250 * time.Millisecond, Program: "prog", Args: []string{}}},
		{[]string{"-x", "_A1=1", "-x", "lower_case=2", "prog"},
			launch.Config{NPEs: 1, PEsPerProc: 1, MapBy: "core", Env: []string{"_A1=1", "lower_case=2"}, Program: "prog", Args: []string{}}},
		{[]string{"-x", "A=1", "-x", "B=x=y", "-x", "HOME", "-x", "UNSET", "-x", "EMPTY", "-x", "C=", "prog"},
			launch.Config{NPEs: 1, PEsPerProc: 1, MapBy: "core", Env: []string{"A=1", "B=x=y", "HOME=/home/pe", "EMPTY=", "C="}, Program: "prog", Args: []string{}}},
		{[]string{"-n", "2", "--", "-weird-name", "x"},
			launch.Config{NPEs: 2, PEsPerProc: 1, MapBy: "core", Program: "-weird-name", Args: []string{"x"}}},
	}
	for _, tc := range tests {
		got, err := parseArgs(tc.args, fakeEnv)
		if err != nil {
			t.Errorf("parseArgs(%q): %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseArgs(%q) =\n%+v, want\n%+v", tc.args, got, tc.want)
		}
	}
}

// TestParseArgsDecimal: -n and --pes-per-proc are decimal: 010 is ten
// PEs (the flag package's IntVar made it 8, octal).
func TestParseArgsDecimal(t *testing.T) {
	cfg, err := parseArgs([]string{"-n", "010", "--pes-per-proc", "05", "prog"}, fakeEnv)
	if err != nil || cfg.NPEs != 10 || cfg.PEsPerProc != 5 {
		t.Errorf("parseArgs(-n 010 --pes-per-proc 05) = %d PEs, %d per process, %v; want 10, 5", cfg.NPEs, cfg.PEsPerProc, err)
	}
}

func TestParseArgsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "no program given"},
		{[]string{"-n", "4"}, "no program given"},
		{[]string{"-n", "0", "prog"}, "at least 1, got 0"},
		{[]string{"-np", "-2", "prog"}, "at least 1, got -2"},
		{[]string{"-n", "four", "prog"}, "invalid value"},
		{[]string{"-np", "0x10", "prog"}, `-np "0x10" is not a decimal number`},
		{[]string{"--pes-per-proc", "0x2", "prog"}, "not a decimal number"},
		{[]string{"--timeout", "9999999999", "prog"}, "too long a time limit"},
		{[]string{"--timeout", "99999999999h", "prog"}, "too long a time limit"},
		{[]string{"-n"}, "needs an argument"},
		{[]string{"--pes-per-proc", "0", "prog"}, "--pes-per-proc must be at least 1"},
		{[]string{"--bind-to", "hwthread", "prog"}, "--bind-to must be none, core, numa or socket"},
		{[]string{"--map-by", "board", "prog"}, "--map-by must be core, numa or socket"},
		{[]string{"--timeout", "soon", "prog"}, "not a duration"},
		{[]string{"--timeout", "-5s", "prog"}, "negative"},
		{[]string{"-x", "=1", "prog"}, "bad variable"},
		{[]string{"-n", "2", "-x", "./examples/hello"}, `bad variable "./examples/hello"`},
		{[]string{"-x", "1abc", "prog"}, `bad variable "1abc"`},
		{[]string{"-x", "A-B=1", "prog"}, `bad variable "A-B=1"`},
		{[]string{"-x", "A B=1", "prog"}, "bad variable"},
		{[]string{"--timeout", "1.5.2", "prog"}, "not a duration"},
		{[]string{"--timeout", "1e3", "prog"}, "not a duration"},
		{[]string{"--timeout", "-1.5", "prog"}, "negative"},
		{[]string{"--frobnicate", "prog"}, "not defined"},
	}
	for _, tc := range tests {
		_, err := parseArgs(tc.args, fakeEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs(%q) error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	for _, h := range []string{"-h", "--help", "-help"} {
		if _, err := parseArgs([]string{h}, fakeEnv); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("parseArgs(%s) = %v, want flag.ErrHelp", h, err)
		}
	}
}

func TestCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := oshrun([]string{"--help"}, &out, &errOut, fakeEnv, false); code != 0 || !strings.Contains(out.String(), "--pes-per-proc") || !strings.Contains(out.String(), "Examples:") {
		t.Errorf("--help: exit %d, output %q", code, out.String())
	}
	for _, flag := range []string{"-np", "--pes-per-proc", "--bind-to", "--report-bindings", "--tag-output", "--timeout", "-x VAR", "-h, --help"} {
		if !strings.Contains(usage, flag) {
			t.Errorf("usage does not mention %s", flag)
		}
	}

	out.Reset()
	errOut.Reset()
	if code := oshrun([]string{"-n", "0", "true"}, &out, &errOut, fakeEnv, false); code != 2 || !strings.Contains(errOut.String(), "oshrun -h") {
		t.Errorf("misuse: exit %d, stderr %q", code, errOut.String())
	}

	out.Reset()
	errOut.Reset()
	args := []string{"-np", "3", "--tag-output", "-x", "SHMEM_SYMMETRIC_SIZE=1M", "-x", "GREETING=hi", "sh", "-c", `echo "$GREETING from $GOSHMEM_PE"`}
	if code := oshrun(args, &out, &errOut, fakeEnv, false); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	for _, want := range []string{"[PE 0] hi from 0\n", "[PE 1] hi from 1\n", "[PE 2] hi from 2\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q: %q", want, out.String())
		}
	}

	out.Reset()
	errOut.Reset()
	args = []string{"-np", "2", "-x", "SHMEM_SYMMETRIC_SIZE=1M", "sh", "-c", `[ "$GOSHMEM_PE" = 1 ] && exit 4; exec sleep 60`}
	if code := oshrun(args, &out, &errOut, fakeEnv, false); code != 4 {
		t.Errorf("exit %d, want 4; stderr %q", code, errOut.String())
	}
	if !strings.HasPrefix(errOut.String(), "oshrun: PE 1 (pid ") || !strings.HasSuffix(errOut.String(), ") exited with code 4\n") {
		t.Errorf("stderr %q", errOut.String())
	}

	out.Reset()
	errOut.Reset()
	if code := oshrun([]string{"-x", "SHMEM_SYMMETRIC_SIZE=huge", "true"}, &out, &errOut, fakeEnv, false); code != 1 || !strings.Contains(errOut.String(), "SHMEM_SYMMETRIC_SIZE") {
		t.Errorf("bad heap size: exit %d, stderr %q", code, errOut.String())
	}
}

// TestSignal sends SIGINT and SIGTERM to a real oshrun process and
// checks that it stops the job in order.
func TestSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				took := signalOnce(t, sig)
				if took <= time.Second || t.Failed() {
					return
				}
				if attempt == 3 {
					t.Fatalf("stopping took %v (3 attempts)", took)
				}
				t.Logf("stopping took %v; retrying (a loaded machine?)", took)
			}
		})
	}
}

// signalOnce starts a job, sends sig to oshrun, checks the outcome and
// returns how long oshrun took to stop.
func signalOnce(t *testing.T, sig syscall.Signal) time.Duration {
	var stderr bytes.Buffer
	cmd, pids := startPEs(t, 3, &stderr)
	sent := time.Now()
	// As a terminal does: to oshrun's process group, which the PEs
	// are not in.
	syscall.Kill(-cmd.Process.Pid, sig)
	err := cmd.Wait()
	took := time.Since(sent)
	t.Logf("oshrun exited %v after %v: %q", err, took, stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) {
		t.Errorf("exit code %d, want %d", code, 128+int(sig))
	}
	if want := "oshrun: interrupted by " + sys.SignalName(int(sig)) + "\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("PE process %d still alive", pid)
		}
	}
	return took
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool { return sys.Running(pid) }

// startPEs starts the test binary as oshrun running npes shells that
// record their pids and sleep; it returns the command and the pids.
func startPEs(t *testing.T, npes int, stderr *bytes.Buffer) (*exec.Cmd, []int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, "-np", strconv.Itoa(npes), "-x", "SHMEM_SYMMETRIC_SIZE=1M", "sh", "-c", `echo $$ > `+dir+`/pid-$GOSHMEM_PE; exec sleep 60`)
	cmd.Env = append(os.Environ(), "OSHRUN_TEST_MAIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = stderr
	// Do not let orphans holding the stderr pipe delay Wait.
	cmd.WaitDelay = 100 * time.Millisecond
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(pids) < npes && time.Now().Before(deadline) {
		pids = pids[:0]
		for pe := range npes {
			if b, err := os.ReadFile(filepath.Join(dir, "pid-"+strconv.Itoa(pe))); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(pids) < npes {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("PEs did not start: %q", stderr.String())
	}
	return cmd, pids
}

// TestLauncherKilled checks that the PEs die with a SIGKILLed oshrun.
func TestLauncherKilled(t *testing.T) {
	var stderr bytes.Buffer
	cmd, pids := startPEs(t, 3, &stderr)
	cmd.Process.Kill()
	cmd.Wait()
	// The kernel kills them at once; allow for a loaded machine.
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("PE process %d outlived oshrun", pid)
		}
	}
}

// TestEscapedOrphanStopped runs a real oshrun whose PEs start a process
// in a session of their own (setsid: out of the PE's process group) and
// exit 0, orphaning it: oshrun, a child subreaper, stops it when the
// job ends, and still exits 0.
func TestEscapedOrphanStopped(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := `setsid sh -c 'echo $$ > ` + dir + `/pid-$GOSHMEM_PE.tmp; mv ` + dir + `/pid-$GOSHMEM_PE.tmp ` + dir + `/pid-$GOSHMEM_PE; exec sleep 300' </dev/null >/dev/null 2>&1 &
while [ ! -s ` + dir + `/pid-$GOSHMEM_PE ]; do sleep 0.01; done`
	cmd := exec.Command(exe, "-np", "2", "-x", "SHMEM_SYMMETRIC_SIZE=1M", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "OSHRUN_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	var pids []int
	t.Cleanup(func() {
		for _, pid := range pids {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	err = cmd.Run()
	for pe := range 2 {
		b, rerr := os.ReadFile(filepath.Join(dir, "pid-"+strconv.Itoa(pe)))
		pid, aerr := strconv.Atoi(strings.TrimSpace(string(b)))
		if rerr != nil || aerr != nil {
			t.Errorf("PE %d left no pid: %v %v", pe, rerr, aerr)
			continue
		}
		pids = append(pids, pid)
	}
	if err != nil {
		t.Errorf("oshrun: %v; stderr %q", err, stderr.String())
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d, which left its PE's process group, outlived oshrun", pid)
		}
	}
}

// writeProgram writes a Go main package of its own module into a new
// directory, different each time (so that go build compiles it): with
// PROG_MODE=print it prints lines forever, otherwise it sleeps.
func writeProgram(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := `package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

const id = "` + strconv.FormatInt(time.Now().UnixNano(), 10) + `"

func main() {
	if os.Getenv("PROG_MODE") == "print" {
		line := strings.Repeat("x", 100) + id
		for {
			fmt.Println(line)
		}
	}
	time.Sleep(time.Minute)
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module prog\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// processesUsing returns the live processes whose environment mentions
// path (oshrun gives its TMPDIR to the PEs, and a directory inside it
// to go build, compile and link).
func processesUsing(t *testing.T, path string) []string {
	list, err := sys.Processes()
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, pi := range list {
		if pi.State == 'Z' || pi.Pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pi.Pid) + "/environ")
		if err == nil && bytes.Contains(env, []byte(path)) {
			cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pi.Pid) + "/cmdline")
			found = append(found, strconv.Itoa(pi.Pid)+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// oshrunIn starts oshrun (this test binary) with $TMPDIR set to tmp,
// and arranges for anything that mentions tmp to be killed when the
// test ends.
func oshrunIn(t *testing.T, tmp string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "OSHRUN_TEST_MAIN=1", "TMPDIR="+tmp)
	cmd.WaitDelay = 5 * time.Second
	t.Cleanup(func() {
		for _, p := range processesUsing(t, tmp) {
			pid, _, _ := strings.Cut(p, " ")
			n, _ := strconv.Atoi(pid)
			syscall.Kill(n, syscall.SIGKILL)
		}
	})
	return cmd
}

// checkNothingLeft checks that oshrun left nothing in tmp (its $TMPDIR)
// and no process that uses it.
func checkNothingLeft(t *testing.T, tmp string) {
	t.Helper()
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("left in $TMPDIR: %v", names)
	}
	if left := processesUsing(t, tmp); len(left) > 0 {
		t.Errorf("processes left running: %q", left)
	}
}

// TestSignalDuringBuild interrupts oshrun while it builds a package
// directory (and just after): nothing may be left, not in $TMPDIR (Go's
// go-build* work directory, oshrun-build-*) nor as a process (go,
// compile, link, a PE).
func TestSignalDuringBuild(t *testing.T) {
	for _, tc := range []struct {
		after time.Duration
		sig   syscall.Signal
	}{
		{0, syscall.SIGTERM}, {50 * time.Millisecond, syscall.SIGINT}, {100 * time.Millisecond, syscall.SIGHUP},
		{200 * time.Millisecond, syscall.SIGTERM}, {500 * time.Millisecond, syscall.SIGINT},
	} {
		t.Run(fmt.Sprintf("%v/%v", tc.after, tc.sig), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := oshrunIn(t, tmp, "-np", "2", "-x", "SHMEM_SYMMETRIC_SIZE=1M", writeProgram(t))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.after)
			cmd.Process.Signal(tc.sig)
			cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			t.Logf("exit %d (%v); stderr %q", code, cmd.ProcessState, stderr.String())
			if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); tc.after == 0 && ws.Signaled() && ws.Signal() == tc.sig {
				// Before oshrun set up its handler: it had made nothing yet.
			} else if code != 128+int(tc.sig) {
				t.Errorf("exit code %d, want %d", code, 128+int(tc.sig))
			}
			checkNothingLeft(t, tmp)
		})
	}
}

// TestOutputClosed runs oshrun ... | head -1 on a program that prints
// without end: oshrun must stop the job and exit, leaving nothing.
func TestOutputClosed(t *testing.T) {
	prog := writeProgram(t)
	for _, tag := range []bool{false, true} {
		t.Run(fmt.Sprintf("tag-output=%v", tag), func(t *testing.T) {
			tmp := t.TempDir()
			args := []string{"-np", "2", "-x", "SHMEM_SYMMETRIC_SIZE=1M", "-x", "PROG_MODE=print", prog}
			if tag {
				args = append([]string{"--tag-output"}, args...)
			}
			cmd := oshrunIn(t, tmp, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || !strings.Contains(line, "xxxx") {
				t.Errorf("first line %q, %v", line, err)
			}
			out.Close() // as head -1 does
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("oshrun still running 10 s after its output closed; stderr %q", stderr.String())
			}
			t.Logf("%v; stderr %q", cmd.ProcessState, stderr.String())
			if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGPIPE) {
				t.Errorf("exit code %d (%v), want %d", code, cmd.ProcessState, 128+int(syscall.SIGPIPE))
			}
			checkNothingLeft(t, tmp)
		})
	}
}

// TestLauncherSchedBatch checks that oshrun steps back once its PEs
// have started (launch.Config.Background): every thread of oshrun runs
// under SCHED_BATCH, while the PEs keep SCHED_OTHER.
func TestLauncherSchedBatch(t *testing.T) {
	var stderr bytes.Buffer
	cmd, pids := startPEs(t, 2, &stderr)
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	policies := func() map[int]int {
		got := map[int]int{}
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
		for _, e := range ents {
			tid, _ := strconv.Atoi(e.Name())
			if p, err := sys.SchedPolicy(tid); err == nil {
				got[tid] = p
			}
		}
		return got
	}
	var got map[int]int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		got = policies()
		batch := 0
		for _, p := range got {
			if p == sys.SchedBatch {
				batch++
			}
		}
		if len(got) > 0 && batch == len(got) {
			break
		}
	}
	for tid, p := range got {
		if p != sys.SchedBatch {
			t.Errorf("oshrun's thread %d has policy %d with its PEs running, want SCHED_BATCH (%d)", tid, p, sys.SchedBatch)
		}
	}
	if len(got) == 0 {
		t.Error("found no thread of oshrun")
	}
	for pe, pid := range pids {
		if p, err := sys.SchedPolicy(pid); err != nil || p != sys.SchedOther {
			t.Errorf("PE %d (pid %d) has policy %d, %v; want SCHED_OTHER (%d)", pe, pid, p, err, sys.SchedOther)
		}
	}
}
