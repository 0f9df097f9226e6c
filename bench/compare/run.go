package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/bench/internal/osu"
)

// modulePath is the module the tool must run in.
const modulePath = "github.com/goshmem/goshmem"

// config is the parsed command line.
type config struct {
	Rounds  int
	Quick   bool
	Only    string
	Out     string
	Tag     string
	Peer    bool
	NP      int
	Timeout time.Duration // per run
	Args    []string      // the command line, for the report
	GoshEnv []string      // -x VAR=value: passed to goshmem's PEs only

	root  string  // the module's root directory
	specs []*spec // the selected benchmarks
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{Args: args}
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds per benchmark; each round runs goshmem, then the peer")
	fs.BoolVar(&c.Quick, "quick", false, "small sizes (up to 64 KiB) and a tenth of the iterations: a fast smoke run")
	fs.StringVar(&c.Only, "only", "", "comma-separated benchmarks to run (default all): "+strings.Join(specNames(), ","))
	fs.StringVar(&c.Out, "out", "", "directory for the report and plots (default bench/results of the module)")
	fs.StringVar(&c.Tag, "tag", "", "suffix of the report's name: <date>-<tag>.md")
	fs.BoolVar(&c.Peer, "peer", true, "run the peer (Open MPI's OpenSHMEM) too")
	fs.IntVar(&c.NP, "np", 2, "number of PEs")
	fs.DurationVar(&c.Timeout, "timeout", 0, "stop a run after this long (default 10m, 3m with -quick)")
	fs.Func("x", "`VAR=value` for goshmem's PEs only (oshrun -x), e.g. SHMEM_REDUCE_ALGORITHM=flat; repeatable", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return fmt.Errorf("want VAR=value")
		}
		c.GoshEnv = append(c.GoshEnv, v)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./bench/compare [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.Rounds < 1 {
		return nil, fmt.Errorf("-rounds %d: need at least 1", c.Rounds)
	}
	if c.NP < 2 {
		return nil, fmt.Errorf("-np %d: the benchmarks need at least 2 PEs", c.NP)
	}
	if strings.ContainsAny(c.Tag, "/\\ ") {
		return nil, fmt.Errorf("-tag %q: no slashes or spaces", c.Tag)
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
		if c.Quick {
			c.Timeout = 3 * time.Minute
		}
	}
	var err error
	if c.specs, err = selectSpecs(c.Only); err != nil {
		return nil, err
	}
	return c, nil
}

// findRoot returns the directory of the module's go.mod, searching up
// from the working directory.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("run inside the %s module (no go.mod of it above the working directory)", modulePath)
		}
		dir = up
	}
}

// runOut is what one command did.
type runOut struct {
	Stdout, Stderr string
	Err            error
	Took           time.Duration
}

// execute runs a command in its own process group with a timeout; on
// timeout or cancellation the group gets SIGTERM, then SIGKILL.
func execute(ctx context.Context, timeout time.Duration, dir string, env []string, name string, args ...string) runOut {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	if ctx.Err() != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever of the group is left
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %v (-timeout)", timeout)
		} else {
			err = ctx.Err()
		}
	}
	return runOut{Stdout: out.String(), Stderr: errb.String(), Err: err, Took: took}
}

// failure describes a failed run in one line.
func failure(o runOut) string {
	s := o.Err.Error()
	if t := lastLines(o.Stderr, 3); t != "" {
		s += ": " + t
	}
	return s
}

// lastLines returns the last n non-empty lines of s joined by " / ".
func lastLines(s string, n int) string {
	var ls []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " / ")
}

// compare does the whole comparison and writes the report.
func (c *config) compare(ctx context.Context, stdout io.Writer, tty bool) error {
	start := time.Now()
	root, err := findRoot()
	if err != nil {
		return err
	}
	c.root = root
	out := c.Out
	if out == "" {
		out = filepath.Join(root, "bench", "results")
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	stem := start.Format("2006-01-02")
	if c.Tag != "" {
		stem += "-" + c.Tag
	}
	assets := filepath.Join(out, stem)
	if err := os.MkdirAll(assets, 0o755); err != nil {
		return err
	}

	pr := &progress{w: stdout, tty: tty}
	rep := &report{
		Command: "go run ./bench/compare" + argString(c.Args), Quick: c.Quick, Rounds: c.Rounds, NP: c.NP,
		Machine: readMachine(), Results: map[string]*result{}, Limits: limits{}, Plots: map[string]string{},
		LoadStart: math.NaN(), LoadEnd: math.NaN(), Specs: c.specs,
		GoshCmd: fmt.Sprintf("oshrun -n %d --bind-to core%s PROG ARGS", c.NP, xFlags(c.GoshEnv)),
		GoshEnv: shmemEnv(),
	}
	if v, ok := loadAvg(); ok {
		rep.LoadStart = v
	}

	// The peer: installed? wanted?
	if c.Peer {
		rep.Peer = findPeer()
	} else {
		rep.Peer.Skipped = "-peer=false"
	}
	if !rep.Peer.Enabled {
		pr.msg("peer skipped: %s", rep.Peer.Skipped)
	}

	lims := neededLimits(c.specs)
	sides := 1
	if rep.Peer.Enabled {
		sides = 2
	}
	pr.total = 1 + (sides - 1) + len(lims) + len(c.specs)*c.Rounds*sides + 1

	tmp, err := os.MkdirTemp("", "goshmem-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	peerBin := filepath.Join(tmp, "peer")

	// Build goshmem's side once.
	pr.step("building goshmem (oshrun, %d benchmark program(s)%s)", len(c.specs), map[bool]string{true: ", limits"}[len(lims) > 0])
	pkgs := []string{"./cmd/oshrun"}
	for _, s := range c.specs {
		pkgs = append(pkgs, "./bench/"+s.Name)
	}
	if len(lims) > 0 {
		pkgs = append(pkgs, "./bench/limits")
	}
	if o := execute(ctx, 10*time.Minute, root, nil, "go", append([]string{"build", "-o", bin + string(filepath.Separator)}, pkgs...)...); o.Err != nil {
		pr.done()
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), o.Err, o.Stderr)
	}

	// Build the peer once.
	if rep.Peer.Enabled {
		pr.step("building the peer (bench/peer/build.sh)")
		o := execute(ctx, 10*time.Minute, root, []string{"OSHCC=" + envOr("OSHCC", "oshcc")}, "sh", filepath.Join(root, "bench", "peer", "build.sh"), peerBin)
		if o.Err != nil {
			if ctx.Err() != nil {
				pr.done()
				return ctx.Err()
			}
			rep.Peer.Enabled = false
			rep.Peer.Skipped = "bench/peer/build.sh failed: " + failure(o)
			pr.msg("peer skipped: %s", rep.Peer.Skipped)
			pr.total -= len(c.specs) * c.Rounds
		} else {
			rep.Peer.Build = "`" + envOr("OSHCC", "oshcc") + " -O2 -Wall -Wextra` (bench/peer/build.sh)"
		}
	}
	if rep.Peer.Enabled {
		rep.PeerCmd = fmt.Sprintf("NP=%d bench/peer/run.sh NAME ARGS", c.NP)
		rep.PeerExpand, rep.PeerEnv = peerExpansion(rep.Peer.Oshrun, c.NP, rep.Machine.CPUs)
	}

	var raw strings.Builder
	logRun := func(what string, cmdline string, o runOut) {
		fmt.Fprintf(&raw, "=== %s: %s (%.2f s)\n%s", what, cmdline, o.Took.Seconds(), o.Stdout)
		if o.Stderr != "" {
			fmt.Fprintf(&raw, "--- stderr\n%s", o.Stderr)
		}
		if o.Err != nil {
			fmt.Fprintf(&raw, "--- error: %v\n", o.Err)
		}
		raw.WriteString("\n")
	}

	// The machine limits the benchmarks are judged against.
	maxBW := bandwidthMax(c.specs, c.Quick)
	for _, name := range lims {
		pr.step("limits %s", name)
		a := limitArgs(name, c.Quick, maxBW)
		o := execute(ctx, c.Timeout, root, nil, filepath.Join(bin, "limits"), a...)
		logRun("limits "+name, "limits "+strings.Join(a, " "), o)
		t := &limitTable{Test: name}
		if o.Err == nil {
			tables, err := parseLimits(o.Stdout)
			switch {
			case err != nil:
				t.Err = "cannot read its output: " + err.Error()
			case len(tables) != 1 || tables[0].Test != name:
				t.Err = fmt.Sprintf("want one table %q, got %d", name, len(tables))
			default:
				t = tables[0]
			}
		} else {
			if ctx.Err() != nil {
				pr.done()
				return ctx.Err()
			}
			t.Err = failure(o)
		}
		t.Args = a
		if t.Err != "" {
			pr.msg("limits %s failed: %s", name, t.Err)
		}
		rep.Limits[name] = t
		rep.LimitOrder = append(rep.LimitOrder, name)
	}

	// The benchmarks, alternating goshmem and the peer.
	for _, s := range c.specs {
		args := s.args(c.Quick)
		res := newResult(s, args)
		rep.Results[s.Name] = res
		for round := 1; round <= c.Rounds; round++ {
			for sd := gosh; sd < side(sides); sd++ {
				if sd == peer && !rep.Peer.Enabled {
					continue
				}
				pr.step("%s round %d/%d (%s)", s.Name, round, c.Rounds, sd)
				var o runOut
				var cmdline string
				if sd == gosh {
					a := []string{"-n", strconv.Itoa(c.NP), "--bind-to", "core"}
					for _, kv := range c.GoshEnv {
						a = append(a, "-x", kv)
					}
					a = append(append(a, filepath.Join(bin, s.Name)), args...)
					cmdline = "oshrun " + strings.Join(a, " ")
					o = execute(ctx, c.Timeout, root, nil, filepath.Join(bin, "oshrun"), a...)
				} else {
					a := append([]string{filepath.Join(root, "bench", "peer", "run.sh"), s.Name}, args...)
					cmdline = fmt.Sprintf("NP=%d BIN=%s sh %s", c.NP, peerBin, strings.Join(a, " "))
					o = execute(ctx, c.Timeout, root, []string{"NP=" + strconv.Itoa(c.NP), "BIN=" + peerBin, "OSHRUN=" + rep.Peer.Oshrun}, "sh", a...)
				}
				logRun(fmt.Sprintf("%s round %d %s", s.Name, round, sd), cmdline, o)
				res.Runs[sd]++
				if ctx.Err() != nil {
					pr.done()
					return ctx.Err()
				}
				if o.Err != nil {
					f := fmt.Sprintf("round %d: %s", round, failure(o))
					res.Fails[sd] = append(res.Fails[sd], f)
					pr.msg("%s round %d/%d (%s) failed: %s", s.Name, round, c.Rounds, sd, failure(o))
					continue
				}
				pts, err := s.parse(o.Stdout)
				var u *unsupported
				if errors.As(err, &u) {
					if res.Unsupported[sd] == "" {
						pr.msg("%s (%s): %s", s.Name, sd, u.Msg)
					}
					res.Unsupported[sd] = u.Msg
					continue
				}
				if err != nil {
					f := fmt.Sprintf("round %d: cannot read the output: %v", round, err)
					res.Fails[sd] = append(res.Fails[sd], f)
					pr.msg("%s round %d/%d (%s): %s", s.Name, round, c.Rounds, sd, f)
					continue
				}
				res.add(sd, pts)
			}
		}
	}

	// Targets, plots, report.
	pr.step("writing the report")
	if v, ok := loadAvg(); ok {
		rep.LoadEnd = v
	}
	ev := evaluation{Results: rep.Results, Limits: rep.Limits, NP: c.NP, Peer: rep.Peer.Enabled, PeerWhy: rep.Peer.Skipped}
	rep.Targets = ev.targets()
	for _, s := range c.specs {
		ch, ok := chartFor(rep.Results[s.Name], rep.Limits, c.NP)
		if !ok {
			continue
		}
		png := filepath.Join(assets, s.Name+".png")
		if err := ch.save(png); err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("no plot for %s: %v", s.Name, err))
			continue
		}
		rep.Plots[s.Name] = stem + "/" + s.Name + ".png"
	}
	rawPath := filepath.Join(assets, "raw.txt")
	if err := os.WriteFile(rawPath, []byte(raw.String()), 0o644); err != nil {
		return err
	}
	rep.RawLog = stem + "/raw.txt"
	rep.Date = start
	rep.Elapsed = time.Since(start)
	var md bytes.Buffer
	if err := writeReport(&md, rep); err != nil {
		return err
	}
	mdPath := filepath.Join(out, stem+".md")
	if err := os.WriteFile(mdPath, md.Bytes(), 0o644); err != nil {
		return err
	}
	pr.done()

	// A summary on stdout.
	fmt.Fprintf(stdout, "report: %s (plots and raw outputs in %s/), %s\n", mdPath, assets, rep.Elapsed.Round(time.Second))
	for _, t := range rep.Targets {
		switch t.Status {
		case statusNA:
			fmt.Fprintf(stdout, "  %-4s %s: %s\n", t.Status, t.Name, t.Why)
		default:
			fmt.Fprintf(stdout, "  %-4s %s: %s (wanted %s)\n", t.Status, t.Name, fmtRatio(t.Ratio), t.wants())
		}
	}
	return nil
}

// argString formats the tool's arguments for the report.
func argString(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return " " + strings.Join(args, " ")
}

// xFlags formats -x VAR=value flags for the report's command line.
func xFlags(env []string) string {
	var b strings.Builder
	for _, kv := range env {
		b.WriteString(" -x " + kv)
	}
	return b.String()
}

// shmemEnv returns the SHMEM_* variables of this process, which
// goshmem's PEs inherit (the collective algorithms among them).
func shmemEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SHMEM_") {
			env = append(env, kv)
		}
	}
	return env
}

// bandwidthMax returns the largest size the benchmarks judged against
// memcpy use (the bandwidth benchmarks and broadcast), rounded down to a
// power of two (memcpy's -max), or 64 KiB.
func bandwidthMax(sel []*spec, quick bool) int {
	best := 0
	for _, s := range sel {
		if s.Kind != bandwidth && s.Name != "broadcast" {
			continue
		}
		a := s.args(quick)
		for i := 0; i+1 < len(a); i++ {
			if a[i] == "-m" {
				if _, hi, err := osu.ParseSizes(a[i+1], osu.BandwidthDefaults.MaxSize); err == nil && hi > best {
					best = hi
				}
			}
		}
	}
	if best == 0 {
		return 64 << 10
	}
	p := 1
	for p*2 <= best {
		p *= 2
	}
	return p
}

// peerExpansion returns the command bench/peer/run.sh runs (as its
// header documents it) and the environment variables from this process
// that change it.
func peerExpansion(oshrun string, np, cpus int) (string, []string) {
	heap := envOr("SHMEM_SYMMETRIC_HEAP_SIZE", "256M")
	bind := envOr("BIND", "core")
	extra := ""
	if np > cpus {
		extra = " --oversubscribe"
		if os.Getenv("BIND") == "" {
			bind = "core:overload-allowed"
		}
	}
	if f := os.Getenv("PEER_RUN_FLAGS"); f != "" {
		extra += " " + f
	}
	cmd := fmt.Sprintf("%s -np %d --bind-to %s --allow-run-as-root%s -x SHMEM_SYMMETRIC_HEAP_SIZE=%s -x OMPI_MCA_osc=^rdma PROG ARGS",
		oshrun, np, bind, extra, heap)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "UCX_") || strings.HasPrefix(k, "OMPI_") || strings.HasPrefix(k, "SHMEM_") ||
			k == "PEER_RUN_FLAGS" || k == "BIND" {
			env = append(env, kv)
		}
	}
	return cmd, env
}
