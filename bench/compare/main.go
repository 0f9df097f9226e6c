// Command compare runs goshmem's OSU-style benchmarks and their C peers
// against Open MPI's OpenSHMEM alternately on this machine, measures the
// machine's limits, and writes a report with the figures, the ratios,
// the performance targets and plots:
//
//	go run ./bench/compare [-rounds 3] [-quick] [-only put,get,...] [-pes 2,4,8,8g | -np N] [-strict] [-out bench/results] [-tag T] [-peer=false] [-timeout D] [-x VAR=value ...]
//	go run ./bench/compare -hosts N [-ns | -iface IF] [-rounds 3] [-quick] [-out DIR] [-tag T] [-peer=false] [-x VAR=value ...]
//
// The second form is the cross-host mode (xhost.go): goshmem across N
// hosts of one PE each (SHMEM_HOST under MPICH's mpiexec.hydra) against
// raw TCP (bench/limits tcp) and the peer forced onto TCP, over the
// interface IF (default: the default route's), with the issue's
// cross-host targets, in <out>/<date>-xhost[-tag].md and .raw.txt.
// With -ns the hosts are the network-namespace test hosts of
// scripts/cluster (brought up and removed by the run; root), goshmem
// runs under scripts/cluster/mpiexec.sh and raw TCP between h1 and hN;
// the peer is skipped there (Open MPI over UCX TCP takes 4 ms per
// message across them).
//
// It builds everything once into a temporary directory: goshmem's
// launcher (cmd/oshrun), the selected programs bench/<name> and
// bench/limits with go build, and the peer's programs with
// bench/peer/build.sh, if Open MPI's oshcc and oshrun are installed
// (otherwise it says "peer skipped: Open MPI not installed" and the
// report has goshmem's figures only). It runs the machine limits that do
// not move with the machine's state once (bench/limits memcpy, atomic,
// memcpy_pair for the 2-PE broadcast, and lines, for the small
// collectives' cost model), then -rounds rounds. Each round first measures the cache-line
// hand-off limit (bench/limits handoff -best: the fastest of one line
// and two, polled with goshmem's spin and without a pause), the best
// copy again, for the bulk transfers the copy split over the two CPUs
// (bench/limits memcpy_split: a put or get that the waiting PE helps
// with is bounded by it, not by a lone copy), and for put_pingpong its own reference (bench/limits
// memcpy_pingpong: the same ping-pong with the machine's best copy and
// a bare flag, which explains its miss against a lone copy), then runs
// every job, goshmem and then the peer, an adjacent pair:
//
//	goshmem: oshrun -n NP --bind-to core bench/<name> ARGS
//	         oshrun -n NP --pes-per-proc NP bench/<name> ARGS   (goroutine PEs)
//	peer:    NP=NP bench/peer/run.sh <name> ARGS               (--oversubscribe above the CPU count)
//
// with the same ARGS on both sides (goshmem's put_pingpong also gets
// -handoff: after its sweep it times its 8-byte loop in blocks
// interleaved with the bare hand-off on the same words of the same
// PEs, and the hand-off target and the limit check use that pair; its
// barrier gets -handoff too, which at 2 PEs times it between blocks of
// the bare exchange of two words in three layouts, shown in the
// barrier's table: the machine's state changes within seconds here,
// so the limit of another program at another moment is no reference). The jobs: every selected benchmark
// at the base PE count (the first process count of -pes, default 2),
// with the programs' defaults spelled out (or with -quick sizes up to
// 64 KiB and a tenth of the iterations; the team collectives run
// trimmed sizes and iterations, see specs); then barrier, reduce and
// broadcast (8-256 B, fewer iterations) at each further configuration
// of -pes: "N" for N processes, "Ng" for N goroutine PEs in one process
// (goshmem only: the peer has none). The default -pes 2,4,8,8g runs the
// issue's PE counts: on a 2-core machine 4 and 8 PEs oversubscribe the
// cores on both sides. -np N runs N processes only.
//
// Every figure keeps its value per round. A target's ratio is the
// median of the pairwise ratios of the rounds (goshmem/peer of one
// round's adjacent runs; goshmem/goshmem of the same round, as a
// collective against the barrier or 8 goroutine PEs against 8
// processes; goshmem/limit), with their range (the spread): a change of
// the machine's state between rounds moves both sides of a pair. A
// round whose hand-off limit, or goshmem's or the peer's base barrier,
// lies more than 1.5x from that figure's median over the rounds is
// flagged: the machine changed state (on the development VM the 2-PE
// barrier moves between about 0.08 and 0.32 us from run to run). It
// writes
//
//	<out>/<YYYY-MM-DD>[-<tag>].md     the report (overwritten)
//	<out>/<YYYY-MM-DD>[-<tag>]/*.png  latency against size (log-log) for
//	                                  put, get, put_pingpong, broadcast and
//	                                  reduce, bandwidth against size for
//	                                  put_bw and get_bw
//	<out>/<YYYY-MM-DD>[-<tag>]/raw.txt  every run's command and output
//
// The report names the machine, the peer's configuration and the command
// lines; the limit check (every goshmem figure that has a machine
// limit, its best round against the limit: a latency below its limit,
// or a bandwidth above the copy limit, is a FAIL line, since a limit
// that goshmem beats is a broken measurement); the machine's state per round; the targets (PASS or
// MISS with the ratio and its spread, a cause where the data show one
// and "cause: not analysed yet" otherwise); and one table per benchmark
// and configuration. On a terminal the progress is one updating line,
// otherwise one line per step.
//
// Exit status: 0 when the report is written, whatever the targets say (a
// MISS is a measurement, not a failure) and, without -strict, even with
// FAIL lines (.ci/run runs a quick comparison on a shared machine,
// where one noisy round must not fail the build); with -strict a FAIL
// exits with status 1. Failures of the tool itself (build, flags) exit
// with status 1 too.
//
// Other flags: -rounds R (default 3), -only put,get,... (a subset, in
// the usual order; only the limits those need are run), -out DIR
// (default bench/results of the module), -tag T (report <date>-T.md),
// -peer=false (goshmem only), -timeout D (per run: default 10m, 3m with
// -quick; a run that times out or fails is reported and the other
// rounds still count), -x VAR=value (repeatable: an environment
// variable for goshmem's PEs only, passed as oshrun -x; the report's
// goshmem command shows it).
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
// Durations on the project's 2-core development machine: the quick CI
// run (-quick -rounds 1 -only put,barrier, all four PE configurations)
// took 18 s under a load average of 8 from other work. Under heavy load
// the peer's ping-pong, whose PEs spin, can take minutes for the large
// sizes (once 400 s for one run while other jobs kept both cores
// busy): run on a quiet machine.
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
	if c.Hosts > 0 {
		return c.crossHosts(ctx, stdout, tty)
	}
	return c.compare(ctx, stdout, tty)
}
