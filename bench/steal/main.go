// Command steal measures tasks that waiting PEs steal (goshmem.Task,
// SHMEM_TASK_STEAL) against the same jobs with stealing off, and checks
// the targets of the feature:
//
//	go run ./bench/steal [-rounds R] [-iters I] [-cells C] [-cost K] [-idle=false]
//
// Imbalance. examples/imbalance runs under oshrun at 2, 4 and 8 PEs, as
// processes (n x 1), as goroutines of one process (1 x n) and mixed
// (n/2 processes of 2, from 4 PEs), with one PE that has 4x the cells
// of the others and with balanced work (-heavy 1). Each round runs the
// job with stealing on, then off, then the same work serially in one
// goroutine (-serial): the ratios are of adjacent runs, and the report
// gives for each configuration the median over the rounds and the
// spread (min-max) of
//
//	on/perfect   time with stealing on over perfect balance: the
//	             serial time divided by min(CPUs, PEs)
//	off/on       how much faster stealing makes the job
//	bound        off/perfect: what off/on could at best be (no
//	             stealing beats perfect balance)
//	on/even      time with stealing on over the same total work split
//	             evenly over the PEs (stealing off): perfect balance as
//	             this machine runs it, its parallel efficiency included
//
// Targets: with 4x imbalance, on/perfect <= 1.15 and off/on >= 1.5;
// balanced, on/off <= 1.03.
//
// Idle steal check. With no task active a wait checks the host's task
// count every 8 spins and after each yield. One job (2 PEs as
// processes, then 8 goroutine PEs) times BarrierAll, an 8-byte
// SumReduce and a WaitUntil ping-pong (P then WaitUntil, PEs 0 and 1)
// in blocks of 5000, alternately with stealing on and off on every PE
// (PE.SetTaskSteal; the order flips from pair to pair), 20x -rounds
// pairs; target: on/off <= 1.02 (median of the pairs). Separate jobs
// per setting differ by more than that from placement and machine
// state alone.
//
// Everything is built once into a temporary directory. The figures
// depend on the machine's state: compare only the ratios.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem"
)

var (
	rounds = flag.Int("rounds", 5, "adjacent pairs per configuration")
	iters  = flag.Int("iters", 20, "iterations of examples/imbalance per run")
	cells  = flag.Int("cells", 256, "cells of a light PE per iteration")
	cost   = flag.Int("cost", 2000, "rounds of the cell function")
	chunk  = flag.Int("chunk", 4, "cells per chunk")
	idle   = flag.Bool("idle", true, "measure the idle steal check too")
	imb    = flag.Bool("imbalance", true, "measure the imbalanced and balanced jobs")
	peIdle = flag.Bool("pe-idle", false, "(internal) run as a PE of the idle check")
)

var bin string

func main() {
	flag.Parse()
	if *peIdle {
		goshmem.Main(idlePE)
		return
	}
	dir, err := os.MkdirTemp("", "goshmem-steal")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	bin = dir
	for _, p := range []string{"cmd/oshrun", "examples/imbalance", "bench/steal"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, filepath.Base(p)), "./"+p).CombinedOutput()
		if err != nil {
			fatal(fmt.Errorf("go build ./%s: %v\n%s", p, err, out))
		}
	}
	ncpu := runtime.NumCPU()
	fmt.Printf("# bench/steal: %d CPUs, %d rounds, imbalance -i %d -cells %d -cost %d -chunk %d\n", ncpu, *rounds, *iters, *cells, *cost, *chunk)
	misses := 0
	if *imb {
		misses += imbalance(ncpu)
	}
	if *idle {
		misses += idleCheck()
	}
	if misses > 0 {
		fmt.Printf("\n%d targets missed\n", misses)
	} else {
		fmt.Println("\nall targets met")
	}
}

type layout struct {
	name      string
	npes, ppp int
}

func layouts() []layout {
	var ls []layout
	for _, n := range []int{2, 4, 8} {
		ls = append(ls, layout{"processes", n, 1}, layout{"goroutines", n, n})
		if n >= 4 {
			ls = append(ls, layout{"mixed", n, 2})
		}
	}
	return ls
}

var timeRE = regexp.MustCompile(`time per iteration: ([0-9.]+) ms`)

// imbalanceRun runs examples/imbalance and returns its time per
// iteration in ms.
func imbalanceRun(l layout, heavy int, steal string) float64 {
	args := []string{"-n", strconv.Itoa(l.npes), "--pes-per-proc", strconv.Itoa(l.ppp),
		"-x", "SHMEM_TASK_STEAL=" + steal, "-x", "SHMEM_SYMMETRIC_SIZE=16m",
		filepath.Join(bin, "imbalance")}
	args = append(args, imbalanceArgs(heavy)...)
	return parseTime(run(filepath.Join(bin, "oshrun"), args...))
}

func imbalanceArgs(heavy int) []string {
	return argsFor(heavy, *cells)
}

func argsFor(heavy, cells int) []string {
	return []string{"-check=false", "-heavy", strconv.Itoa(heavy), "-i", strconv.Itoa(*iters),
		"-cells", strconv.Itoa(cells), "-cost", strconv.Itoa(*cost), "-chunk", strconv.Itoa(*chunk)}
}

// evenRun runs the imbalanced job's total work split evenly over the
// PEs, stealing off: what the machine does with perfectly balanced
// work, its parallel efficiency included. ok is false when the work
// does not split evenly.
func evenRun(l layout, heavy int) (ms float64, ok bool) {
	total := *cells * (heavy + l.npes - 1)
	if total%l.npes != 0 {
		return 0, false
	}
	args := []string{"-n", strconv.Itoa(l.npes), "--pes-per-proc", strconv.Itoa(l.ppp),
		"-x", "SHMEM_TASK_STEAL=off", "-x", "SHMEM_SYMMETRIC_SIZE=16m", filepath.Join(bin, "imbalance")}
	args = append(args, argsFor(1, total/l.npes)...)
	return parseTime(run(filepath.Join(bin, "oshrun"), args...)), true
}

func serialRun(npes, heavy int) float64 {
	args := append([]string{"-serial", "-n", strconv.Itoa(npes)}, imbalanceArgs(heavy)...)
	return parseTime(run(filepath.Join(bin, "imbalance"), args...))
}

func parseTime(out string) float64 {
	m := timeRE.FindStringSubmatch(out)
	if m == nil {
		fatal(fmt.Errorf("no time in output:\n%s", out))
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func imbalance(ncpu int) (misses int) {
	fmt.Println("\n## Imbalanced (one PE 4x) and balanced work: examples/imbalance, stealing on vs off")
	fmt.Println("| PEs | layout | work | on ms | off ms | perfect ms | on/perfect | off/on | bound off/perfect | on/even | target |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, l := range layouts() {
		for _, heavy := range []int{4, 1} {
			var on, off, perf, onPerf, offOn, bound, onEven []float64
			for range *rounds {
				a := imbalanceRun(l, heavy, "on")
				b := imbalanceRun(l, heavy, "off")
				s := serialRun(l.npes, heavy) / float64(min(ncpu, l.npes))
				on, off, perf = append(on, a), append(off, b), append(perf, s)
				onPerf, offOn, bound = append(onPerf, a/s), append(offOn, b/a), append(bound, b/s)
				if heavy > 1 {
					if e, ok := evenRun(l, heavy); ok {
						onEven = append(onEven, a/e)
					}
				}
			}
			even := "-"
			if len(onEven) > 0 {
				even = stat(onEven)
			}
			work := "4x"
			var verdict string
			if heavy == 1 {
				work = "balanced"
				onOff := make([]float64, len(offOn))
				for i, r := range offOn {
					onOff[i] = 1 / r
				}
				verdict = check("on/off <= 1.03", median(onOff) <= 1.03, &misses) + " on/off " + stat(onOff)
			} else {
				v1 := check("on/perfect <= 1.15", median(onPerf) <= 1.15, &misses)
				v2 := check("off/on >= 1.5", median(offOn) >= 1.5, &misses)
				if median(offOn) < 1.5 && median(bound) < 1.5 {
					// Stealing cannot beat perfect balance.
					v2 += fmt.Sprintf(" (unreachable here: off/perfect %.2f)", median(bound))
				}
				verdict = v1 + ", " + v2
			}
			fmt.Printf("| %d | %s (%dx%d) | %s | %.3f | %.3f | %.3f | %s | %s | %s | %s | %s |\n",
				l.npes, l.name, l.npes/l.ppp, l.ppp, work, median(on), median(off), median(perf),
				stat(onPerf), stat(offOn), stat(bound), even, verdict)
		}
	}
	return misses
}

func idleCheck() (misses int) {
	fmt.Println("\n## Idle steal check (no task active): SetTaskSteal on vs off, adjacent blocks in one job")
	fmt.Println("| benchmark | PEs | on us | off us | on/off | target |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, l := range []layout{{"processes", 2, 1}, {"goroutines", 8, 8}} {
		out := run(filepath.Join(bin, "oshrun"), "-n", strconv.Itoa(l.npes), "--pes-per-proc", strconv.Itoa(l.ppp),
			filepath.Join(bin, "steal"), "-pe-idle", "-rounds", strconv.Itoa(*rounds*20))
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Split(line, "\t") // name, on us, off us, ratios
			if len(f) != 4 {
				fatal(fmt.Errorf("bad line %q from the idle check:\n%s", line, out))
			}
			var ratio []float64
			for _, r := range strings.Fields(f[3]) {
				v, _ := strconv.ParseFloat(r, 64)
				ratio = append(ratio, v)
			}
			fmt.Printf("| %s | %d (%s) | %s | %s | %s | %s |\n", f[0], l.npes, l.name, f[1], f[2],
				stat(ratio), check("on/off <= 1.02", median(ratio) <= 1.02, &misses))
		}
	}
	return misses
}

// idlePE is the PE program of the idle check: each measurement runs in
// blocks of iterations, alternately with stealing on and off on every
// PE (the order flips from pair to pair), and PE 0 prints, per
// measurement, the median times and each pair's ratio on/off.
func idlePE(pe *goshmem.PE) {
	me := pe.MyPE()
	world := goshmem.TeamWorld(pe)
	src, _ := goshmem.Calloc[int64](pe, 1)
	dst, _ := goshmem.Calloc[int64](pe, 1)
	flag, _ := goshmem.Calloc[int64](pe, 1)
	var k int64
	benches := []struct {
		name  string
		iters int
		fn    func()
	}{
		{"BarrierAll", 5000, pe.BarrierAll},
		{"SumReduce 8 B", 5000, func() { goshmem.SumReduce(world, dst, src) }},
		{"WaitUntil (put ping-pong 8 B, PEs 0 and 1)", 5000, func() {
			k++
			switch me {
			case 0:
				goshmem.P(pe.Ctx(), &flag[0], k, 1)
				goshmem.WaitUntil(pe, &flag[0], goshmem.CmpEQ, k)
			case 1:
				goshmem.WaitUntil(pe, &flag[0], goshmem.CmpEQ, k)
				goshmem.P(pe.Ctx(), &flag[0], k, 0)
			}
		}},
	}
	for _, b := range benches {
		for range b.iters / 10 {
			b.fn()
		}
		var on, off, ratio []float64
		for r := range *rounds {
			var t [2]float64
			for i := range 2 {
				steal := (i+r)%2 == 0
				pe.SetTaskSteal(steal)
				pe.BarrierAll()
				t0 := time.Now()
				for range b.iters {
					b.fn()
				}
				us := float64(time.Since(t0).Nanoseconds()) / 1e3 / float64(b.iters)
				if steal {
					t[0] = us
				} else {
					t[1] = us
				}
			}
			on, off, ratio = append(on, t[0]), append(off, t[1]), append(ratio, t[0]/t[1])
		}
		pe.SetTaskSteal(true)
		pe.BarrierAll()
		if me == 0 {
			rs := make([]string, len(ratio))
			for i, r := range ratio {
				rs[i] = strconv.FormatFloat(r, 'f', 4, 64)
			}
			fmt.Printf("%s\t%.3f\t%.3f\t%s\n", b.name, median(on), median(off), strings.Join(rs, " "))
		}
	}
}

func run(prog string, args ...string) string {
	var out, errb bytes.Buffer
	cmd := exec.Command(prog, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		fatal(fmt.Errorf("%s %s: %v\n%s%s", filepath.Base(prog), strings.Join(args, " "), err, out.String(), errb.String()))
	}
	return out.String()
}

func check(what string, ok bool, misses *int) string {
	if ok {
		return "PASS " + what
	}
	*misses++
	return "MISS " + what
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// stat renders the median and the range.
func stat(v []float64) string {
	return fmt.Sprintf("%.2f [%.2f-%.2f]", median(v), slices.Min(v), slices.Max(v))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "steal:", err)
	os.Exit(1)
}
