// Command compare runs goshmem's OSU-style benchmarks and their C peers
// against Open MPI's OpenSHMEM alternately on this machine, measures the
// machine's limits, and writes a report with the figures, the ratios,
// the performance targets and plots:
//
//	go run ./bench/compare [-rounds 3] [-quick] [-only put,get,...] [-out bench/results] [-tag T] [-peer=false] [-np 2] [-timeout D] [-x VAR=value ...]
//
// It builds everything once into a temporary directory: goshmem's
// launcher (cmd/oshrun), the selected programs bench/<name> and
// bench/limits with go build, and the peer's programs with
// bench/peer/build.sh, if Open MPI's oshcc and oshrun are installed
// (otherwise it says "peer skipped: Open MPI not installed" and the
// report has goshmem's figures only). Then it runs the machine limits
// the selected benchmarks are judged against (bench/limits memcpy,
// handoff, atomic), and each benchmark for -rounds rounds, goshmem then
// the peer (A, B, A, B, ...), both bound to cores:
//
//	goshmem: oshrun -n NP --bind-to core bench/<name> ARGS
//	peer:    NP=NP bench/peer/run.sh <name> ARGS
//
// with the same ARGS on both sides (the programs' defaults spelled out,
// or with -quick sizes up to 64 KiB and a tenth of the iterations; the
// team collectives broadcast, reduce, collect, fcollect, alltoall and
// team_create run trimmed sizes and iterations, see specs). It keeps
// each figure's median and range over the rounds and writes
//
//	<out>/<YYYY-MM-DD>[-<tag>].md     the report (overwritten)
//	<out>/<YYYY-MM-DD>[-<tag>]/*.png  latency against size (log-log) for
//	                                  put, get, put_pingpong, broadcast and
//	                                  reduce, bandwidth against size for
//	                                  put_bw and get_bw
//	<out>/<YYYY-MM-DD>[-<tag>]/raw.txt  every run's command and output
//
// The report names the machine, the peer's configuration and both
// command lines, evaluates the targets (goshmem/peer and goshmem/limit
// ratios in the same run; PASS or MISS, with a cause where the data show
// one and "cause: not analysed yet" otherwise), and has one table per
// benchmark. On a terminal the progress is one updating line, otherwise
// one line per step.
//
// Other flags: -rounds R (default 3), -only put,get,... (a subset, in
// the usual order; only the limits those need are run), -out DIR
// (default bench/results of the module), -tag T (report <date>-T.md),
// -peer=false (goshmem only), -np N (default 2; the targets are for 2),
// -timeout D (per run: default 10m, 3m with -quick; a run that times out
// or fails is reported and the other rounds still count), -x VAR=value
// (repeatable: an environment variable for goshmem's PEs only, passed
// as oshrun -x; the report's goshmem command shows it).
//
// goshmem's collective algorithms are picked by SHMEM_BARRIER_ALGORITHM,
// SHMEM_REDUCE_ALGORITHM, SHMEM_BCAST_ALGORITHM and
// SHMEM_FCOLLECT_ALGORITHM: set them with -x to compare one algorithm
// with the peer (go run ./bench/compare -only reduce -x
// SHMEM_REDUCE_ALGORITHM=flat -tag flat), or in the environment (the
// peer's run.sh then sees them too, and ignores them). The report lists
// the SHMEM_* variables goshmem's PEs inherited. The peer's
// team_create says that OSHMEM 4.1 (OpenSHMEM 1.4) has no teams: the
// report shows that line instead of peer figures, not as a failure.
//
// A full run (3 rounds, every benchmark) took 1m35s on the project's
// 2-core development machine with light load before the team
// collectives were added, 2m14s with them (under a load average of 3 to
// 5 from other work); -quick takes about 30 s.
// Under heavy load the peer's ping-pong, whose PEs spin, can take
// minutes for the large sizes (once 400 s for one run here while other
// jobs kept both cores busy): run on a quiet machine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tty := isTerminal(os.Stdout)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, tty)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// run parses the command line and does the comparison; tty says whether
// stdout is a terminal.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	return c.compare(ctx, stdout, tty)
}
