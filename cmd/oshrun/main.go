// Command oshrun runs a goshmem program as a job of PEs on this node.
//
// Usage:
//
//	oshrun [options] PROGRAM [ARGS...]
//
// PROGRAM is an executable, a command in $PATH, or a Go main package
// directory (built once before the job starts). oshrun starts the PEs,
// hands them the job's shared segments, and supervises them: when one
// fails, it stops all the others within a second, prints one line
// naming the cause, and exits with the failed PE's code (128+signal for
// a PE killed by a signal, 124 when --timeout expires, 128+signal when
// oshrun itself is interrupted). Run "oshrun -h" for the options.
//
// The work is done by package internal/launch; this command only parses
// the command line and turns SIGINT and SIGTERM into an orderly stop.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem/internal/launch"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
)

const usage = `Usage: oshrun [options] PROGRAM [ARGS...]

Runs PROGRAM as a goshmem job of N PEs on this node and waits for it.
PROGRAM is an executable, a command in $PATH, or a Go main package
directory such as ./examples/hello, which oshrun builds first.
Options end at PROGRAM; everything after it is passed to PROGRAM.
Options take one or two dashes (-np 4 or --np 4, --timeout=30s).

Options:
  -n N, -np N             number of PEs (default 1)
  --pes-per-proc K        PEs hosted by each process (default 1); process
                          k runs PEs k*K .. k*K+K-1
  --map-by core|numa|socket
                          spread PEs over cores in order (core, the
                          default), or round robin across NUMA nodes or
                          sockets; a PE's heap lives on the NUMA node it
                          is mapped to
  --bind-to none|core|numa|socket
                          bind each PE to the core, NUMA node or socket
                          it is mapped to (default: core for up to 2 PEs,
                          numa above, none when PEs outnumber cores);
                          PEs start bound, and GOMAXPROCS follows (at
                          least 2 for a PE alone in its process)
  --report-bindings       print where each PE runs, with a map of the
                          cores ([B./..]: B bound, . free, - unusable)
  --tag-output            prefix every output line with "[PE n] "
  --timeout D             stop the job after D (e.g. 90s, 5m; a plain
                          number is seconds); exit code 124
  -x VAR=value            set VAR in every PE's environment (repeatable)
  -x VAR                  pass oshrun's own value of VAR
  -h, --help              print this help

The symmetric heap size comes from SHMEM_SYMMETRIC_SIZE (e.g. 1G) in
oshrun's environment or given with -x; huge pages from
SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES.

When a PE fails (exits non-zero, dies by a signal, exits without
Finalize, or calls GlobalExit), oshrun stops every other PE within a
second, prints one line naming the cause, and exits with the PE's exit
code (1 for a PE that exited 0 without Finalize), 128+signal for a
death by signal, or the GlobalExit code.
^C (SIGINT), SIGTERM or SIGHUP stops the whole job the same way: oshrun
passes the signal on to every PE, SIGKILL follows 0.5 s later; exit
128+signal. Each PE runs in a process group of its own; when the job
ends, whatever the PEs started and left running (also after a double
fork or setsid, as long as GOSHMEM_JOB_ID stays in its environment) is
stopped too, SIGTERM then SIGKILL; a job whose PEs all succeeded still
exits 0.

Examples:
  oshrun -np 4 ./hello
  oshrun -n 8 --tag-output ./examples/hello
  oshrun -np 16 --map-by numa --bind-to core --report-bindings ./bench
  oshrun -np 16 --pes-per-proc 4 --bind-to socket ./hybrid
  oshrun -n 2 -x SHMEM_SYMMETRIC_SIZE=2G -x GOMAXPROCS --timeout 5m ./solver input.dat

Across hosts, start the same program with the cluster's launcher
instead (goshmem speaks PMI to it; no flag needed): the PEs of each
host share memory as under oshrun, and one leader PE per host carries
the traffic to the other hosts over TCP (SHMEM_INTERNODE_IFACE picks
the interface):
  mpiexec.hydra -hosts h1,h2 -n 8 -ppn 4 ./hello
  srun --mpi=pmi2 -N 2 -n 8 --kill-on-bad-exit=1 ./hello
`

func main() {
	// Whatever the PEs leave behind reparents to oshrun, not to init,
	// even after a double fork or setsid, so that oshrun can stop it
	// when the job ends (see launch.Run). Without it (an old kernel),
	// only what stays in a PE's process group is stopped.
	sys.SetChildSubreaper(true)
	os.Exit(oshrun(os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv, true))
}

// oshrun is the whole command; it returns the exit code. background is
// launch.Config.Background: true when oshrun is the whole process (main),
// so that its wake-ups do not preempt the PEs; the policy it sets lasts
// for the process's life.
func oshrun(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool), background bool) int {
	cfg, err := parseArgs(args, lookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "oshrun: %v\nRun 'oshrun -h' for usage.\n", err)
		return launch.ExitUsage
	}
	cfg.Stdout, cfg.Stderr = stdout, stderr
	cfg.Background = background

	// SIGINT, SIGTERM and SIGHUP stop the job in order: launch passes
	// the signal on to the PEs' process groups (a terminal's ^C or
	// hang-up reaches only oshrun's), then SIGKILL; it reports the
	// signal and exits 128+signal. Until Run returns they do not kill
	// oshrun.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, sys.Signal(sys.SIGINT), sys.Signal(sys.SIGTERM), sys.Signal(sys.SIGHUP))
	defer signal.Stop(sigs)
	// A write to a closed pipe on stdout or stderr (oshrun ... | head -1)
	// returns EPIPE instead of killing oshrun with SIGPIPE, so that it
	// stops the job and removes what it built (launch.Run stops the job
	// on EPIPE). The PEs keep the default SIGPIPE action.
	brokenPipe := make(chan os.Signal, 1)
	signal.Notify(brokenPipe, sys.Signal(sys.SIGPIPE))
	defer signal.Stop(brokenPipe)
	go func() {
		select {
		case s := <-sigs:
			cancel(&launch.SignalError{Signal: s})
		case <-ctx.Done():
		}
	}()

	code, err := launch.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "oshrun: %v\n", err)
	}
	return code
}

// decimal returns a flag's parser of a decimal integer into *v: the
// flag package's IntVar also reads 010 as 8 and 0x10 as 16.
func decimal(name string, v *int) func(string) error {
	return func(s string) error {
		n, err := strconv.ParseInt(s, 10, 0)
		if err != nil {
			return fmt.Errorf("%s %q is not a decimal number", name, s)
		}
		*v = int(n)
		return nil
	}
}

// parseArgs turns the command line (without argv[0]) into a launch
// configuration. It returns flag.ErrHelp for -h/--help.
func parseArgs(args []string, lookupEnv func(string) (string, bool)) (launch.Config, error) {
	var cfg launch.Config
	fs := flag.NewFlagSet("oshrun", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	cfg.NPEs, cfg.PEsPerProc = 1, 1
	fs.Func("n", "number of PEs", decimal("-n", &cfg.NPEs))
	fs.Func("np", "number of PEs", decimal("-np", &cfg.NPEs))
	fs.Func("pes-per-proc", "PEs per process", decimal("--pes-per-proc", &cfg.PEsPerProc))
	fs.StringVar(&cfg.MapBy, "map-by", "core", "core, numa or socket")
	fs.StringVar(&cfg.BindTo, "bind-to", "", "none, core, numa or socket")
	fs.BoolVar(&cfg.ReportBindings, "report-bindings", false, "print bindings")
	fs.BoolVar(&cfg.TagOutput, "tag-output", false, "tag output lines")
	fs.Func("timeout", "job time limit", func(s string) error {
		d, err := parseTimeout(s)
		cfg.Timeout = d
		return err
	})
	fs.Func("x", "VAR[=value] for the PEs' environment", func(s string) error {
		name, _, hasValue := strings.Cut(s, "=")
		if !isVarName(name) {
			return fmt.Errorf("bad variable %q: a name is letters, digits and _, not starting with a digit; use -x VAR=value or -x VAR before the program", s)
		}
		if hasValue {
			cfg.Env = append(cfg.Env, s)
		} else if v, ok := lookupEnv(name); ok {
			cfg.Env = append(cfg.Env, name+"="+v)
		}
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	rest := fs.Args()
	switch {
	case len(rest) == 0:
		return cfg, errors.New("no program given; usage: oshrun [options] PROGRAM [ARGS...], e.g. oshrun -np 4 ./hello")
	case cfg.NPEs < 1:
		return cfg, fmt.Errorf("the number of PEs (-n/-np) must be at least 1, got %d", cfg.NPEs)
	case cfg.PEsPerProc < 1:
		return cfg, fmt.Errorf("--pes-per-proc must be at least 1, got %d", cfg.PEsPerProc)
	case !numa.ValidMap(cfg.MapBy):
		return cfg, fmt.Errorf("--map-by must be %s, got %q", numa.MapNames, cfg.MapBy)
	case cfg.BindTo != "" && !numa.ValidBind(cfg.BindTo):
		return cfg, fmt.Errorf("--bind-to must be %s, got %q", numa.BindNames, cfg.BindTo)
	}
	cfg.Program, cfg.Args = rest[0], rest[1:]
	return cfg, nil
}

// isVarName reports whether s is an environment variable name as
// shells take them: letters, digits and _, not starting with a digit.
func isVarName(s string) bool {
	for i, r := range s {
		if r != '_' && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') && (i == 0 || !('0' <= r && r <= '9')) {
			return false
		}
	}
	return s != ""
}

// isSeconds reports whether s is a plain decimal number (of seconds):
// digits with at most one decimal point, a sign allowed.
func isSeconds(s string) bool {
	s = strings.TrimLeft(s, "+-")
	digits := strings.Trim(s, "0123456789")
	return s != "" && s != "." && (digits == "" || (digits == "." && strings.Count(s, ".") == 1))
}

// parseTimeout parses a --timeout value: a Go duration (90s, 5m, 1h30m)
// or a number of seconds (90, 1.5).
func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil && isSeconds(s) {
		d, err = time.ParseDuration(s + "s")
	}
	if err != nil && strings.Contains(err.Error(), "invalid duration") && (isSeconds(s) || isSeconds(strings.TrimRight(s, "smhµun"))) {
		return 0, fmt.Errorf("%q is too long a time limit (at most about 292 years); use e.g. 30s, 5m, 1h, or 0 for no limit", s)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; use e.g. 30s, 5m, 1h or a number of seconds", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative; use e.g. 30s, or 0 for no limit", s)
	}
	return d, nil
}
