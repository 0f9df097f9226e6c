package osu

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/job"
)

// Bench is what a program's body gets on every PE.
type Bench struct {
	PE     *goshmem.PE
	Ctx    *goshmem.Ctx // pe.Ctx()
	Me, N  int          // pe.MyPE(), pe.NPEs()
	Config              // the command line
	Out    *Printer     // enabled on PE 0 only

	gather []float64 // symmetric, N elements: Collect's inbox on PE 0
}

// Main parses the command line with the defaults d (exiting with status
// 2 on a bad one, 0 after -h), starts the PEs with goshmem.Main, checks
// that there are at least minPEs of them (otherwise PE 0 prints
// "# <name> needs at least <minPEs> PEs" and the job exits with status
// 1), prints lines 1 and 2 of the output, and runs body on every PE.
// prog is the program's name for usage messages, name the test's name
// in the title.
func Main(prog, name string, minPEs int, d Defaults, body func(b *Bench)) {
	MainExtra(prog, name, minPEs, d, Extra{}, body)
}

// MainExtra is Main with a program's own flags x (ParseExtra).
func MainExtra(prog, name string, minPEs int, d Defaults, x Extra, body func(b *Bench)) {
	var profiling atomic.Bool // a PE of this process took the profile
	out := io.Discard
	if hostsPE0(os.Getenv) {
		out = os.Stderr
	}
	c, err := ParseExtra(prog, os.Args[1:], d, x, out)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	goshmem.Main(func(pe *goshmem.PE) {
		b := &Bench{PE: pe, Ctx: pe.Ctx(), Me: pe.MyPE(), N: pe.NPEs(), Config: c,
			Out: &Printer{W: os.Stdout, On: pe.MyPE() == 0, Full: c.Full}}
		if b.N < minPEs {
			if b.Me == 0 {
				fmt.Printf("# %s needs at least %d PEs\n", name, minPEs)
				pe.GlobalExit(1)
			}
			return
		}
		b.gather = Malloc[float64](b, b.N)
		b.Out.Start(name, b.N, c)
		if stop := startProfile(os.Getenv(EnvCPUProfile), b.Me, &profiling); stop != nil {
			defer stop()
		}
		body(b)
	})
}

// EnvCPUProfile names the environment variable that asks the
// benchmarks for a CPU profile: GOSHMEM_BENCH_CPUPROFILE=PATH writes,
// from the first PE of each process to get there, PATH.peN (N its PE
// number), covering the run of body (go tool pprof PROGRAM PATH.peN).
const EnvCPUProfile = "GOSHMEM_BENCH_CPUPROFILE"

// startProfile starts the CPU profile that path asks for, once per
// process (claimed through taken), and returns what stops it; nil when
// there is none to take.
func startProfile(path string, me int, taken *atomic.Bool) func() {
	if path == "" || !taken.CompareAndSwap(false, true) {
		return nil
	}
	f, err := os.Create(fmt.Sprintf("%s.pe%d", path, me))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "# %s: %v\n", EnvCPUProfile, err)
		return nil
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// hostsPE0 reports whether this process hosts PE 0: a process started
// by oshrun knows its first PE from GOSHMEM_PE; one started alone is
// PE 0.
func hostsPE0(getenv func(string) string) bool {
	v := getenv(job.EnvPE)
	return v == "" || v == "0"
}

// Malloc is goshmem.Malloc for a benchmark: collective, and when the
// heap cannot hold the request (on every PE alike) PE 0 prints the error,
// which names SHMEM_SYMMETRIC_SIZE, and stops the job with status 1.
func Malloc[T any](b *Bench, n int) []T {
	x, err := goshmem.Malloc[T](b.PE, n)
	if err != nil {
		b.fatal(err)
	}
	return x
}

// Calloc is Malloc with the memory zeroed.
func Calloc[T any](b *Bench, n int) []T {
	x, err := goshmem.Calloc[T](b.PE, n)
	if err != nil {
		b.fatal(err)
	}
	return x
}

// fatal prints err on PE 0 (to stderr) and stops the job with status
// 1: PE 0 calls GlobalExit, the other PEs wait until it has. Every PE
// must call it.
func (b *Bench) fatal(err error) {
	if b.Me == 0 {
		fmt.Fprintln(os.Stderr, err)
		b.PE.GlobalExit(1)
	}
	for {
		b.PE.BarrierAll() // ends with PE 0's GlobalExit
	}
}

// Stats are the values of one metric over the PEs that timed it.
type Stats struct {
	N             int // number of PEs that timed
	Min, Max, Sum float64
}

// Avg returns Sum/N (0 when N is 0).
func (s Stats) Avg() float64 {
	if s.N == 0 {
		return 0
	}
	return s.Sum / float64(s.N)
}

// Collect gathers v from every PE on PE 0 and returns, on PE 0, the
// statistics over the PEs that pass timed (the zero Stats elsewhere). It
// is collective: every PE calls it, each with its own v. Each PE stores
// its value into PE 0's inbox with P (NaN when it did not time), then a
// BarrierAll completes the stores; a second BarrierAll after PE 0 read
// the inbox makes it reusable.
func (b *Bench) Collect(v float64, timed bool) Stats {
	if !timed {
		v = math.NaN()
	}
	goshmem.P(b.Ctx, &b.gather[b.Me], v, 0)
	b.PE.BarrierAll()
	var s Stats
	if b.Me == 0 {
		s = stats(b.gather)
	}
	b.PE.BarrierAll()
	return s
}

// stats summarizes the non-NaN values of vs.
func stats(vs []float64) Stats {
	var s Stats
	for _, v := range vs {
		if math.IsNaN(v) {
			continue
		}
		if s.N == 0 || v < s.Min {
			s.Min = v
		}
		if s.N == 0 || v > s.Max {
			s.Max = v
		}
		s.Sum += v
		s.N++
	}
	return s
}

// Now returns the current time; with Micros it is the benchmarks' timer
// (monotonic clock, nanosecond resolution; OSU's TIME() in us).
func Now() time.Time { return time.Now() }

// Micros returns the microseconds from t0 to t1.
func Micros(t0, t1 time.Time) float64 { return float64(t1.Sub(t0).Nanoseconds()) / 1e3 }

// MBps returns the bandwidth of bytes moved in us microseconds, in MB/s
// (1e6 bytes per second): bytes per microsecond.
func MBps(bytes float64, us float64) float64 { return bytes / us }

// Fill sets every byte of b to c (touching the pages before timing).
func Fill(b []byte, c byte) {
	for i := range b {
		b[i] = c
	}
}

// Key returns the row key of a message size.
func Key(size int) string { return strconv.Itoa(size) }
