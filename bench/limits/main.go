// Command limits measures the limits of the machine it runs on that
// goshmem's own benchmarks are judged against: how fast one core copies
// memory, how long a cache line takes to travel from one core to the
// other, and what an atomic fetch-add costs when the other core owns the
// line. goshmem cannot put or get faster than memcpy, nor signal a PE
// faster than a cache-line hand-off.
//
// Usage:
//
//	go run ./bench/limits memcpy     [-t 20ms] [-i 0] [-r 5] [-best] [-min 1] [-max 16777216] [-method m] [-cpus a]
//	go run ./bench/limits memcpy_shm [same flags as memcpy]
//	go run ./bench/limits memcpy_pair [same flags as memcpy; -cpus a,b]
//	go run ./bench/limits memcpy_split [same flags as memcpy; -cpus a,b]
//	go run ./bench/limits memcpy_pingpong [same flags as memcpy; -cpus a,b]
//	go run ./bench/limits handoff    [-i 1000000] [-t 1s] [-r 5] [-best] [-w 10000] [-cpus a,b]
//	go run ./bench/limits atomic     [-i 1000000] [-t 1s] [-r 5] [-best] [-w 10000] [-gap 400] [-cpus a,b]
//	go run ./bench/limits lines      [-k 0,1,2,4,...] [-i 200000] [-t 500ms] [-r 5] [-best] [-w 10000] [-cpus a,b]
//	go run ./bench/limits exchange   [-k 1,2,3,5,9] [-method m] [-i 200000] [-t 500ms] [-r 5] [-best] [-w 10000] [-cpus a,b]
//	go run ./bench/limits all        [-cpus a,b]
//
// Each test prints one table in the format of the OSU micro-benchmarks
// and of goshmem's own (bench/internal/osu): a title line
// "# goshmem machine limits: <test>", possibly "# warning: ..." lines
// and other "# ...: ..." comment lines that say how the figures were
// taken (every comment line contains a colon), then the column line,
// "# " + the key column's name padded to 16 characters, then the value
// column's name (no colon; columns separated by two or more spaces),
// then one row per measurement: the key left-aligned in 16 characters,
// the value right-aligned in 16 (%16.2f for MB/s, %16.4f for us).
// "all" prints the four tables one after the other.
//
// The tests:
//
//   - memcpy: single-thread copy bandwidth between two distinct
//     buffers on the Go heap, for sizes from -min to -max bytes in
//     powers of two: the best of every copy this machine can do (the
//     fastest is the limit), namely Go's copy (runtime memmove), REP
//     MOVSB, the AVX2 temporal and non-temporal loops of goshmem's copy
//     engine (internal/mem; with AVX2), the engine with this machine's
//     plan (mem.Copy), and the C library's memcpy that the C peer calls
//     (through cgo; left out, with a note, when built without cgo). A
//     comment line names the fastest method per size, another the
//     kernel the engine uses at each size (mem.CopyPlan.Method: memmove,
//     movsb, avx2 or nt), so that a gap between the engine and the
//     limit shows whether the engine chose wrong; -method m measures
//     only m. Rows are
//     "<size in bytes>  <MB/s>", MB = 10^6 bytes; bandwidth counts the
//     bytes copied (not read plus written). For each size and method
//     the iteration count is scaled until one run lasts at least -t (or
//     fixed by -i), that calibration run is discarded, and the figure
//     is the median of -r further runs: the steady state, with the
//     source and destination as warm as the size allows (in L1 for
//     small sizes, in the last-level cache or DRAM for the largest).
//   - memcpy_shm: the same between two memfd segments (shm.Create and
//     Map), the memory goshmem's symmetric heaps live in; it should
//     match memcpy.
//   - memcpy_pair: two copies at once, one thread bound to each of the
//     two CPUs, of one source into a destination of each thread's own:
//     what a 2-PE broadcast of a large buffer moves (the root fills its
//     own dst while the other PE copies the root's source). A row is
//     the size over the slower thread's time per copy, best method, as
//     memcpy; the two copies share the last-level cache and the memory
//     bus, which the lone copy of memcpy does not.
//   - memcpy_split: one copy made by two CPUs at once, a thread bound
//     to each copying its half (cut at a cache line), both halves
//     started together after a spinning barrier: what a put or get
//     moves when the PE waiting for it copies part of it (goshmem's
//     shared copies, SHMEM_COPY_SHARE). A row is the size over the
//     slower thread's time per copy, best method, as memcpy. From some
//     size up it beats every lone copy, so the bandwidth programs' limit
//     is the better of memcpy and memcpy_split.
//   - memcpy_pingpong: a put ping-pong with nothing but copies and a
//     flag: two threads bound to the two CPUs take turns, A copying
//     its source into B's destination and storing B's flag, B waiting
//     for it, then copying its source into A's destination and storing
//     A's flag (four memfd segments). A row is the size over the
//     one-way time (a round trip / 2), the best of every copy method
//     and of two ways to wait (a pause per poll, or a sched_yield per
//     poll). Its copies keep four buffers in the caches where memcpy's
//     keep two, and each trip hands a line over: the reference that
//     explains the put ping-pong's bandwidth against a lone copy.
//   - handoff: one-way latency of a cache-line hand-off between two
//     processes bound to two CPUs (-cpus a,b: this process on a, a copy
//     of itself started as the second process on b, sharing a memfd
//     segment). Row same_line: one 8-byte counter on one line; each
//     side waits until the counter reaches its value, then stores the
//     next value. Row separate_lines: a flag line that only a writes
//     and b reads, and an answer line that only b writes and a reads
//     (the layout of goshmem's put ping-pong and 2-PE barrier). In both
//     a waiting side polls the word with one CPU pause instruction per
//     poll (internal/wait.Relax), the spin goshmem's own waits
//     (WaitUntil, barriers: node.PE.WaitSlow) use; rows same_tight and
//     separate_tight are the same layouts polled back to back without
//     a pause. Row min is the minimum over those four: the limit. (The
//     old limit was the median of separate_lines alone, polled without
//     a pause, taken once: on the project's KVM machine the hand-off
//     moves between about 0.03 and 0.4 us with the machine's state, and
//     that figure read 0.25 us while goshmem's ping-pong took 0.071 us.
//     Which spin is faster depends on the machine; the minimum covers
//     both.)
//     Each row is round-trip time / 2 in microseconds, the median (with
//     -best: the minimum) of -r blocks of at least -i/-r round trips
//     and -t/-r seconds, after -w warm-up round trips. This is the floor
//     for any goshmem operation that one PE waits for another to see
//     (wait_until, barriers, a put followed by a flag); bench/compare
//     runs it with -best, as a lower bound should be taken.
//   - atomic: row local_fetch_add is an uncontended atomic fetch-add
//     (LOCK XADD on amd64) on a line this core owns: back-to-back adds,
//     time / count. Row remote_fetch_add is the same instruction on a
//     line the other core owns: the second process spins doing
//     fetch-adds on it, pulling it back, while this one times single
//     fetch-adds, each after -gap steps of register work that give the
//     other core time to take the line (the work depends on the
//     previous add and the add on the clock reading, so the core
//     overlaps neither). Only adds that find the other core's adds
//     since this core's previous one count; the row is their median
//     time minus the median time of reading the clock twice, measured
//     the same way with the other process idle. Comment lines give the
//     clock's overhead, the share of adds that found the line taken
//     (low when the other vCPU was descheduled or -gap is too small)
//     and a local add timed the same way, as a check. Both in
//     microseconds, medians of -r blocks. This is what goshmem's AMOs
//     on a word another PE is using cost at least.
//
// Flags: -i is the minimum iteration count (memcpy: iterations per run,
// 0 = scale to -t; atomic: per kind of loop), -t the minimum duration
// (memcpy: per run and size; atomic: per kind of loop), -r the number
// of timed blocks that -i and -t are split into and whose median is
// reported (with -best: the best block, which on a noisy machine is
// nearer to what the hardware can do), -w the warm-up, -cpus the two
// CPUs (default: the first two this process may use; memcpy uses the
// first). With only one allowed CPU both processes share it and the
// output says so in a warning line: the figures then measure the
// scheduler, not the caches.
//
// The machine is noisy (a VM with 2 vCPUs shares its host): run each
// test twice and distrust differences below 10-20%.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem/numa"
)

func main() {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec))
	}
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

// cli runs limits with args (the command line after the program name)
// and returns its exit status: 0 when the test ran, and after -h (the
// usage on stderr, as the flag package's -h does); 2 with the error on
// stderr otherwise.
func cli(args []string, stdout, stderr io.Writer) int {
	err := run(args, stdout)
	var h *helpError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &h):
		fmt.Fprintln(stderr, h.usage)
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0 // a test's -h: the flag package has printed its usage
	}
	fmt.Fprintln(stderr, "limits:", err)
	return 2
}

// helpError is run's answer to -h, -help, --help or help in place of a
// test: a request for the usage, not a mistake (it wraps flag.ErrHelp).
type helpError struct{ usage string }

func (e *helpError) Error() string { return e.usage }
func (e *helpError) Unwrap() error { return flag.ErrHelp }

const usage = `usage: limits <test> [flags]
tests:
  memcpy      copy bandwidth between two Go heap buffers (MB/s per size)
  memcpy_shm  the same between two memfd segments
  memcpy_pair two copies at once of one source, on two CPUs (a 2-PE broadcast)
  memcpy_split
              one copy made by two CPUs, a half each, started together: the
              best of a put or get that the waiting PE helps with (MB/s)
  memcpy_pingpong
              two CPUs take turns copying n bytes into each other's buffer,
              a flag per turn: the best put ping-pong (MB/s one way)
  handoff     one-way cache-line hand-off latency between two processes (us)
  atomic      local and cross-core atomic fetch-add latency (us)
  lines       cost of moving k more cache lines from one core to another (us)
  exchange    two cores exchanging k cache lines both ways at once: the bare
              2-PE small collective (us per round)
  tcp         TCP ping-pong latency (us) and stream bandwidth (MB/s) to another
              host (-listen ADDR there, -connect ADDR here): the cross-host limit
  all         all four with default flags (only -cpus is accepted)
run "limits <test> -h" for a test's flags`

// run runs the test named by args[0] with the flags that follow and
// writes its table to w.
func run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	test, args := args[0], args[1:]
	switch test {
	case "memcpy", "memcpy_shm":
		t, err := runMemcpy(test, args)
		if err != nil {
			return err
		}
		return t.write(w)
	case "memcpy_pair":
		t, err := runMemcpyPair(args)
		if err != nil {
			return err
		}
		return t.write(w)
	case "memcpy_split":
		t, err := runMemcpySplit(args)
		if err != nil {
			return err
		}
		return t.write(w)
	case "memcpy_pingpong":
		t, err := runMemcpyPingpong(args)
		if err != nil {
			return err
		}
		return t.write(w)
	case "handoff":
		t, err := runHandoff(args)
		if err != nil {
			return err
		}
		return t.write(w)
	case "lines":
		t, err := runLines(args)
		if err != nil {
			return err
		}
		return t.write(w)
	case "exchange":
		t, err := runExchange(args)
		if err != nil {
			return err
		}
		return t.write(w)
	case "tcp":
		t, err := runTCP(args)
		if err != nil {
			return err
		}
		return t.write(w)
	case "atomic":
		t, err := runAtomic(args)
		if err != nil {
			return err
		}
		return t.write(w)
	case "all":
		fs := flag.NewFlagSet("all", flag.ContinueOnError)
		cpus := fs.String("cpus", "", "the two CPUs `a,b` (default: the first two allowed)")
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("all: unexpected arguments %q", fs.Args())
		}
		for _, sub := range []string{"memcpy", "memcpy_shm", "handoff", "atomic"} {
			a := []string{sub}
			if *cpus != "" {
				a = append(a, "-cpus", *cpus)
			}
			if err := run(a, w); err != nil {
				return err
			}
		}
		return nil
	case "-h", "-help", "--help", "help":
		return &helpError{usage}
	}
	return fmt.Errorf("unknown test %q\n%s", test, usage)
}

// common holds the flags every test has.
type common struct {
	iters int
	dur   time.Duration
	reps  int
	warm  int
	cpus  string
	best  bool
}

func (c *common) register(fs *flag.FlagSet, iters int, dur time.Duration) {
	fs.IntVar(&c.iters, "i", iters, "minimum number of iterations")
	fs.DurationVar(&c.dur, "t", dur, "minimum duration")
	fs.IntVar(&c.reps, "r", 5, "timed blocks; the median is reported")
	fs.BoolVar(&c.best, "best", false, "report the best block (lowest latency, highest bandwidth) instead of the median")
	fs.StringVar(&c.cpus, "cpus", "", "CPUs `a,b` for the two sides (default: the first two this process may use)")
}

func (c *common) check(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", fs.Name(), fs.Args())
	}
	if c.iters < 0 || c.dur < 0 || c.reps < 1 || c.warm < 0 {
		return fmt.Errorf("%s: -i, -t and -w must not be negative and -r must be at least 1", fs.Name())
	}
	if c.iters == 0 && c.dur == 0 && fs.Name() != "memcpy" && fs.Name() != "memcpy_shm" {
		return fmt.Errorf("%s: -i and -t are both 0; give at least one", fs.Name())
	}
	return nil
}

// perBlock returns the minimum iterations and duration of one of the
// c.reps timed blocks.
func (c *common) perBlock() (int, time.Duration) {
	n := (c.iters + c.reps - 1) / c.reps
	return max(n, 1), c.dur / time.Duration(c.reps)
}

// startAllowed is the set of CPUs this process may use, read before
// anything binds a thread: numa.Allowed reads the main thread's
// affinity, and a locked goroutine that binds its thread may run on
// the main thread, which the Go runtime keeps (wedged, still bound)
// when the goroutine exits.
var startAllowed, startAllowedErr = numa.Allowed()

// allowedCPUs returns startAllowed.
func allowedCPUs() ([]int, error) {
	return slices.Clone(startAllowed), startAllowedErr
}

// pickCPUs returns the CPUs of the two sides and warnings to print.
// spec is "a,b" (or "a" for single-CPU tests); "" takes the first two
// CPUs this process may use.
func pickCPUs(spec string) (a, b int, warnings []string, err error) {
	allowed, err := allowedCPUs()
	if err != nil {
		return 0, 0, nil, err
	}
	if spec == "" {
		if len(allowed) < 2 {
			return allowed[0], allowed[0], []string{fmt.Sprintf(
				"only CPU %d is allowed (see taskset -p %d); both sides run on it, so cross-core figures measure the scheduler, not the caches",
				allowed[0], os.Getpid())}, nil
		}
		return allowed[0], allowed[1], nil, nil
	}
	parts := strings.Split(spec, ",")
	if len(parts) > 2 {
		return 0, 0, nil, fmt.Errorf("-cpus %q: give two CPU numbers a,b", spec)
	}
	var cpu [2]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return 0, 0, nil, fmt.Errorf("-cpus %q: %q is not a CPU number; give two CPU numbers a,b", spec, p)
		}
		if !slices.Contains(allowed, n) {
			return 0, 0, nil, fmt.Errorf("-cpus %q: CPU %d is not one this process may use (%s)", spec, n, numa.FormatCPUList(allowed))
		}
		cpu[i] = n
	}
	if len(parts) == 1 {
		cpu[1] = cpu[0]
		if len(allowed) > 1 {
			i := slices.Index(allowed, cpu[0])
			cpu[1] = allowed[(i+1)%len(allowed)]
		}
	}
	if cpu[0] == cpu[1] {
		warnings = append(warnings, fmt.Sprintf(
			"both sides run on CPU %d, so cross-core figures measure the scheduler, not the caches", cpu[0]))
	}
	return cpu[0], cpu[1], warnings, nil
}

// onLockedThread runs f on a new goroutine locked to its OS thread and
// returns f's error. The goroutine never unlocks the thread, so the
// thread, with whatever CPU binding f gave it, exits with it.
func onLockedThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- f()
	}()
	return <-done
}

// table is one test's output.
type table struct {
	test     string
	warnings []string
	notes    []string
	cols     [2]string
	prec     int // digits after the point
	rows     []row
}

type row struct {
	label string
	value float64
}

func (t *table) write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# goshmem machine limits: %s\n", t.test)
	for _, s := range t.warnings {
		fmt.Fprintf(&b, "# warning: %s\n", s)
	}
	for _, s := range t.notes {
		if !strings.Contains(s, ":") { // or it would read as a column line
			s = "note: " + s
		}
		fmt.Fprintf(&b, "# %s\n", s)
	}
	fmt.Fprintf(&b, "%-16s%s\n", "# "+t.cols[0], t.cols[1])
	for _, r := range t.rows {
		fmt.Fprintf(&b, "%-16s%16.*f\n", r.label, t.prec, r.value)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// stat names what summarize reports.
func (c *common) stat() string {
	if c.best {
		return "best"
	}
	return "median"
}

// summarize returns the median of v, or with -best its minimum
// (lowerIsBetter) or maximum. v is reordered.
func (c *common) summarize(v []float64, lowerIsBetter bool) float64 {
	switch {
	case !c.best:
		return median(v)
	case lowerIsBetter:
		return slices.Min(v)
	}
	return slices.Max(v)
}

// spread formats the range of v.
func spread(v []float64) string {
	return fmt.Sprintf("%.4f-%.4f", slices.Min(v), slices.Max(v))
}

// median returns the median of v (v is reordered).
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
