// Package osu is the shared part of goshmem's OSU-style benchmark
// programs (bench/put, bench/get, bench/put_pingpong, bench/put_bw,
// bench/get_bw, bench/put_mr, bench/atomics, bench/ptr, bench/barrier,
// and the team collectives bench/broadcast, bench/reduce,
// bench/collect, bench/fcollect, bench/alltoall, bench/team_create):
// flag parsing into a Config, the message-size list, iteration scaling,
// the output format, a timer, and the gathering of per-PE results on
// PE 0. Each program is run with the launcher, for example
//
//	go run ./cmd/oshrun -n 2 ./bench/put -m 1:1024 -i 1000
//
// A C version of every program (against Open MPI's OpenSHMEM) prints the
// same format with the same measurement loops, and a compare tool parses
// both (ParseOutput reads this format).
//
// # Output
//
// Only PE 0 prints, to stdout:
//
//	# OSU-style goshmem <Name> Test
//	# PEs: <n>  iterations: <i>  warmup: <w>
//	# Size          Latency (us)
//	1                           0.05
//	2                           0.05
//
// Line 1 names the test (Put, Get, Put Ping-Pong, Put Bandwidth, Get
// Bandwidth, Put Message Rate, Atomics, Ptr, Barrier, Broadcast, Reduce,
// Collect, FCollect, Alltoall, Team Create). Line 2 repeats
// the number of PEs and the -i and -w values (before size scaling). A
// table header is a line "# " + first column name padded with spaces to
// 16 characters, then the other column names joined by two spaces. Each
// data row is the key (a size in bytes, an operation name, or the number
// of PEs, or of teams) left-aligned in 16 characters (`%-16d` or `%-16s`), then each
// value right-aligned in 16 characters with three decimals (`%16.3f`);
// the Iterations column of -f output is an integer (`%16d`). Other
// lines starting with "#" are comments: they contain a colon, which no
// header does (atomics ends with "# add_rate: <x> Mops/s", ptr's first
// table with "# ns per store: ...", team_create with "# destroy: <x> us
// per team"; reduce prints "# type: int64" before its header, and a
// program that cannot run some of -m's sizes lists them before its
// header: "# skipped sizes: 1 2 4 (why)"). Microseconds are 1e-6 s; MB/s is
// 1e6 bytes per second. A program that needs two PEs and runs on one
// prints only "# <Name> needs at least 2 PEs" and exits with status 1.
//
// With -f (full) every main metric column is followed by "Min <metric>",
// "Max <metric>" and "Iterations": the minimum and maximum of the metric
// over the PEs that time (each PE's own value, gathered on PE 0 with P),
// and the number of timed iterations for that row (after size scaling;
// windows for the bandwidth and message-rate tests, sweeps for Ptr).
// In put, get, put_pingpong, put_bw, get_bw, atomics and ptr only PE 0
// times, so min = max = the value; in put_mr every sending PE times
// (the value is their sum), in barrier and the collectives every PE (the
// value is PE 0's).
//
// # Flags
//
// Every program accepts the same flags (all PEs parse them; only the
// process hosting PE 0 prints usage errors):
//
//	-m [min:]max  message sizes in bytes: min, 2*min, 4*min, ... up to
//	              max; "max" and ":max" mean 1:max, "min:" means min up
//	              to the default maximum. 1 <= min <= max <= 1 GiB.
//	-i N          iterations for sizes up to 64 KiB (N >= 1)
//	-w N          warm-up iterations for sizes up to 64 KiB (N >= 0)
//	-f            full output: min, max, iterations
//	-vs-barrier   after the sweep, for each size, 6 pairs of blocks of
//	              the test and of BarrierAll, in alternating order; a
//	              closing comment
//	              "vs barrier, interleaved: 8 1.12 [1.05-1.30]; ..."
//	              gives per size the median [min-max] of the ratios
//	              (the machine's state changes within seconds, so a
//	              barrier timed by another run is no reference)
//
// Before the first size of a sweep, its loop runs untimed in blocks of
// its warm-up count until PE 0 has spent 20 ms in them (SettleTime; not
// with -w 0): a Go process's runtime monitor wakes every 20-80 us in
// its first milliseconds, and a first size of short calls timed inside
// that ran up to 1.8 times slower than the same size timed second.
//
// Sizes above 64 KiB run N/10 iterations (and warm-ups), sizes above
// 1 MiB N/100, but at least 1 (a zero -w stays zero); see Scale.
// (OSU switches from 10000/1000 to 100/10 above 8 KiB; this split keeps
// more iterations for medium sizes, which are cheap on shared memory.)
// Programs without sizes (atomics, barrier, the first Ptr table,
// team_create) use N as is; -m is then accepted and ignored, except
// that ptr prints its bulk-copy table only when -m is given. A program
// may add flags of its own (reduce's -t; ParseExtra).
//
// -x is not a benchmark flag: oshrun uses it for environment variables.
//
// Defaults:
//
//	program                  -m             -i      -w
//	put, get, put_pingpong   1:4194304      10000   1000
//	put_bw, get_bw           1:16777216     1000    100   (windows of 64)
//	put_mr                   1:4194304      1000    100   (windows of 64)
//	atomics                  (ignored)      10000   1000
//	ptr                      (table 2 only) 10000   1000  (sweeps of 64)
//	barrier                  (ignored)      10000   1000
//	broadcast, collect,      1:4194304      10000   1000
//	fcollect, alltoall
//	reduce                   8:4194304      10000   1000  (-t int64|float64)
//	team_create              (ignored)      100     10    (rounds of 64 creations)
//
// reduce's sizes are bytes of whole 8-byte elements: "max" and ":max"
// mean 8:max there (Defaults.MinSize), and sizes that are not multiples
// of 8 are skipped. The collectives run on TeamWorld with every PE
// timing back-to-back calls; their algorithms are goshmem's choice or
// the SHMEM_*_ALGORITHM variables in the PEs' environment (oshrun -x),
// which the programs leave alone.
//
// # Memory
//
// Buffers come from goshmem.Malloc. The largest use is put_bw/get_bw
// (two buffers of the maximum size: 32 MiB by default) and put_mr (a
// window buffer of at most 64 MiB plus a source of the maximum size),
// well inside the launcher's default SHMEM_SYMMETRIC_SIZE of 512M per
// PE (collect, fcollect and alltoall use n times the maximum size per
// buffer: 4 MiB x n PEs by default); -m up to 1 GiB needs a larger SHMEM_SYMMETRIC_SIZE (oshrun -x).
package osu

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Size limits of -m.
const (
	MinSize = 1       // the smallest message size
	MaxSize = 1 << 30 // the largest message size (1 GiB)
)

// Iteration scaling thresholds (see Scale).
const (
	SmallMax = 64 << 10 // sizes up to this run the full -i and -w
	LargeMax = 1 << 20  // sizes up to this run a tenth; above, a hundredth
)

// Defaults are a program's defaults for the flags.
type Defaults struct {
	MaxSize int // default maximum of -m
	Iters   int // default -i
	Warmup  int // default -w
	MinSize int // default minimum of -m; 0 means MinSize (1)
}

// minSize returns the default minimum of -m.
func (d Defaults) minSize() int {
	if d.MinSize > 0 {
		return d.MinSize
	}
	return MinSize
}

// The defaults of the two kinds of programs.
var (
	// LatencyDefaults: put, get, put_pingpong, atomics, ptr, barrier.
	LatencyDefaults = Defaults{MaxSize: 4 << 20, Iters: 10000, Warmup: 1000}
	// BandwidthDefaults: put_bw, get_bw; -i and -w count windows.
	BandwidthDefaults = Defaults{MaxSize: 16 << 20, Iters: 1000, Warmup: 100}
	// MessageRateDefaults: put_mr; -i and -w count windows.
	MessageRateDefaults = Defaults{MaxSize: 4 << 20, Iters: 1000, Warmup: 100}
	// CollectiveDefaults: broadcast, collect, fcollect, alltoall.
	CollectiveDefaults = Defaults{MaxSize: 4 << 20, Iters: 10000, Warmup: 1000}
	// ReduceDefaults: reduce; sizes are whole 8-byte elements.
	ReduceDefaults = Defaults{MinSize: 8, MaxSize: 4 << 20, Iters: 10000, Warmup: 1000}
	// TeamCreateDefaults: team_create; -i and -w count rounds of
	// TeamsPerRound creations.
	TeamCreateDefaults = Defaults{MaxSize: 4 << 20, Iters: 100, Warmup: 10}
)

// TeamsPerRound is how many teams team_create creates back to back in
// one round (as the OpenSHMEM teams paper's creation benchmark).
const TeamsPerRound = 64

// Config is the parsed command line of a benchmark program.
type Config struct {
	MinSize, MaxSize int  // message sizes (-m)
	SizesSet         bool // -m was given
	Iters            int  // -i
	Warmup           int  // -w
	Full             bool // -f
	VsBarrier        bool // -vs-barrier
}

// Sizes returns the message sizes to run: MinSize, 2*MinSize, ...
// up to MaxSize.
func (c Config) Sizes() []int { return Sizes(c.MinSize, c.MaxSize) }

// ItersFor returns the number of timed iterations for a message size.
func (c Config) ItersFor(size int) int { return Scale(c.Iters, size) }

// WarmupFor returns the number of warm-up iterations for a message size.
func (c Config) WarmupFor(size int) int { return Scale(c.Warmup, size) }

// Sizes returns min, 2*min, 4*min, ... up to max (powers of two when
// min is one, as OSU's loops); nil when min < 1 or min > max.
func Sizes(min, max int) []int {
	if min < 1 || min > max {
		return nil
	}
	var s []int
	for n := min; n <= max; n *= 2 {
		s = append(s, n)
		if n > max/2 {
			break // n*2 > max, and n*2 must not overflow
		}
	}
	return s
}

// Scale returns the iteration count for a message size: n for sizes up
// to SmallMax (64 KiB), n/10 up to LargeMax (1 MiB), n/100 above, and at
// least 1 unless n itself is 0 or less (then 0).
func Scale(n, size int) int {
	if n <= 0 {
		return 0
	}
	switch {
	case size <= SmallMax:
		return n
	case size <= LargeMax:
		return max(1, n/10)
	}
	return max(1, n/100)
}

// ParseSizes parses the value of -m: "max" (1:max), "min:max", "min:"
// (min up to defMax) or ":max" (1:max). Sizes are decimal integers with
// MinSize <= min <= max <= MaxSize.
func ParseSizes(s string, defMax int) (min, max int, err error) {
	return ParseSizesFrom(s, MinSize, defMax)
}

// ParseSizesFrom is ParseSizes with a default minimum: "max" and ":max"
// mean defMin:max.
func ParseSizesFrom(s string, defMin, defMax int) (min, max int, err error) {
	bad := func(why string) (int, int, error) {
		return 0, 0, fmt.Errorf("-m %q: %s; use -m [min:]max with sizes in bytes, 1 <= min <= max <= %d", s, why, MaxSize)
	}
	lo, hi, colon := strings.Cut(s, ":")
	if !colon {
		lo, hi = "", s
	}
	if lo == "" && hi == "" {
		return bad("no sizes")
	}
	min, max = defMin, defMax
	num := func(f string) (int, bool) {
		// Digits only: no sign, no spaces, no 0x, no underscores.
		if f == "" || len(f) > 10 || strings.TrimLeft(f, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.Atoi(f)
		return n, err == nil
	}
	var ok bool
	if lo != "" {
		if min, ok = num(lo); !ok {
			return bad("minimum is not a decimal number of bytes")
		}
	}
	if hi != "" {
		if max, ok = num(hi); !ok {
			return bad("maximum is not a decimal number of bytes")
		}
	}
	switch {
	case min < MinSize:
		return bad("minimum is below 1")
	case max < MinSize:
		return bad("maximum is below 1")
	case max > MaxSize:
		return bad("maximum is above 1 GiB")
	case min > max:
		return bad("minimum is above maximum")
	}
	return min, max, nil
}

// Parse parses a benchmark program's arguments (without argv[0]) with
// the defaults d. Usage and errors go to out (io.Discard to stay quiet).
// It returns flag.ErrHelp for -h and -help.
func Parse(prog string, args []string, d Defaults, out io.Writer) (Config, error) {
	return ParseExtra(prog, args, d, Extra{}, out)
}

// Extra is a program's own flags, on top of the common ones (reduce's
// -t, for example).
type Extra struct {
	Usage    string                 // appended to the usage line, e.g. "[-t int64|float64]"
	Register func(fs *flag.FlagSet) // defines the flags (nil: none)
	Check    func(c Config) error   // validates them after parsing (nil: nothing to check)
}

// BoolFlag is the Extra of a program whose own flag is one boolean
// -name, and where its value lands once parsed.
func BoolFlag(name, help string) (*bool, Extra) {
	v := new(bool)
	return v, Extra{
		Usage:    "[-" + name + "]",
		Register: func(fs *flag.FlagSet) { fs.BoolVar(v, name, false, help) },
	}
}

// ParseExtra is Parse with a program's own flags x.
func ParseExtra(prog string, args []string, d Defaults, x Extra, out io.Writer) (Config, error) {
	c := Config{MinSize: d.minSize(), MaxSize: d.MaxSize}
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(out)
	m := fs.String("m", fmt.Sprintf("%d:%d", d.minSize(), d.MaxSize), "message sizes `[min:]max` in bytes, doubling from min")
	fs.IntVar(&c.Iters, "i", d.Iters, "timed iterations for sizes up to 64 KiB (N/10 above 64 KiB, N/100 above 1 MiB)")
	fs.IntVar(&c.Warmup, "w", d.Warmup, "warm-up iterations for sizes up to 64 KiB (scaled like -i)")
	fs.BoolVar(&c.Full, "f", false, "full output: min and max over the timing PEs, iterations")
	fs.BoolVar(&c.VsBarrier, "vs-barrier", false, "after the sweep, time each size in blocks interleaved with blocks of BarrierAll and print the ratios in a closing comment")
	if x.Register != nil {
		x.Register(fs)
	}
	usage := ""
	if x.Usage != "" {
		usage = " " + x.Usage
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: oshrun -n N ./bench/%s [-m [min:]max] [-i N] [-w N] [-f]%s\n", prog, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	fail := func(err error) (Config, error) {
		fmt.Fprintln(out, err)
		fs.Usage()
		return c, err
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	fs.Visit(func(f *flag.Flag) { c.SizesSet = c.SizesSet || f.Name == "m" })
	var err error
	if c.MinSize, c.MaxSize, err = ParseSizesFrom(*m, d.minSize(), d.MaxSize); err != nil {
		return fail(err)
	}
	if c.Iters < 1 {
		return fail(fmt.Errorf("-i %d: need at least 1 iteration", c.Iters))
	}
	if c.Warmup < 0 {
		return fail(fmt.Errorf("-w %d: warm-up iterations cannot be negative", c.Warmup))
	}
	if x.Check != nil {
		if err := x.Check(c); err != nil {
			return fail(err)
		}
	}
	return c, nil
}
