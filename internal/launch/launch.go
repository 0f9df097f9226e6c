// Package launch starts a goshmem job on this node: the launcher of
// cmd/oshrun as a library, so that tests anywhere can start a program
// (typically their own test binary) as a set of PEs.
//
// Run creates the job's control block and symmetric heaps (package job),
// starts ceil(NPEs/PEsPerProc) processes that inherit them, and then
// supervises the job until every process has exited:
//
//   - A process that exits non-zero, is killed by a signal, or exits 0
//     while a PE it hosts has not called Finalize, fails the job; so does
//     a failure that a PE recorded itself in the control block (for
//     example GlobalExit), the Config's Timeout, and cancellation of the
//     context (SIGINT, SIGTERM or SIGHUP in oshrun).
//   - On the first failure Run records it in the control block (unless a
//     PE recorded one first: the first record wins), rings every PE's
//     doorbell so that sleeping PEs see it, sends SIGTERM to the process
//     group of every PE process and SIGKILL 500 ms later. When the
//     launcher was interrupted (a SignalError), the PEs get that signal
//     instead of SIGTERM: each PE process leads a process group of its
//     own, so a terminal's ^C or hang-up reaches only the launcher,
//     which passes it on. All PEs are gone well within a second of the
//     failure.
//   - When every PE process has exited, Run stops what they left
//     running, as Slurm and Open MPI end a job step, whether the job
//     failed or succeeded (a success stays a success): the rest of each
//     PE's process group, and, when the calling process is a child
//     subreaper (oshrun is; see sys.SetChildSubreaper), the processes
//     reparented to it that carry the job's GOSHMEM_JOB_ID in their
//     environment, that is descendants that left their group (setsid,
//     setpgid, a double fork) and lost their parent. SIGTERM (or the
//     interrupt's signal) first, SIGKILL after 500 ms. What escapes: a
//     descendant that leaves its group and also drops GOSHMEM_JOB_ID
//     from its environment, or one orphaned while the launcher is not a
//     subreaper; and everything below the PEs if the launcher itself is
//     SIGKILLed (the PEs die with it, their descendants do not; only a
//     cgroup would hold them).
//   - When everything has exited, Run prints exactly one line naming the
//     cause (for example "oshrun: PE 3 (pid 4567) was killed by SIGKILL")
//     and returns the job's exit code: that of the PE that failed first
//     (the root cause, not the peers that stopped because of it), that
//     is the exit code of its process (2 for a panic in goshmem.Main,
//     whether or not a peer noticed first), 128+signal for a death by
//     signal, the code given to GlobalExit; 124 for a timeout, and
//     128+signal when the launcher was interrupted. When the job's
//     output cannot be written any more because its reader is gone
//     (EPIPE: oshrun ... | head -1), the job stops the same way, with
//     141 (128+SIGPIPE), rather than the launcher dying of SIGPIPE. A process that
//     recorded its own panic or GlobalExit is not sent SIGTERM: it is
//     exiting by itself (printing the panic's stack), and gets SIGKILL
//     only if it is still there after the grace period. After a
//     GlobalExit no PE process gets SIGTERM: each one's exit watcher
//     ends it with the GlobalExit status (see package node).
//
// Nothing outlives Run: the segments are memfds (nothing in /dev/shm),
// every PE process is reaped (only at the end: until then its zombie
// keeps its pid and group id from being reused, so that signalling its
// group never hits a stranger), PE processes die with the launcher
// (PR_SET_PDEATHSIG), and a program built from a package directory is
// deleted.
//
// A program that never joins the job (not a goshmem program: echo,
// hostname, a shell script) may exit 0 without Finalize, as long as no
// PE of the job has joined; otherwise its peers would wait for it
// forever, and that is a failure too.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
)

// Config describes a job to launch.
type Config struct {
	// NPEs is the number of PEs (>= 1).
	NPEs int
	// PEsPerProc is the number of PEs each process hosts (0 means 1);
	// process k hosts PEs [k*PEsPerProc, min((k+1)*PEsPerProc, NPEs)).
	PEsPerProc int
	// Program is an executable path, a name looked up in $PATH, or a Go
	// main package directory (a path with a slash, or ".", or a directory
	// of .go files that is not a command in $PATH), which Run builds once
	// with the go command into a temporary directory.
	Program string
	// Args are the program's arguments (without argv[0]).
	Args []string
	// Env holds extra VAR=value entries for every PE process, on top of
	// the launcher's own environment. They also count for the launcher's
	// own reading of SHMEM_SYMMETRIC_SIZE and
	// SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES.
	Env []string
	// MapBy is how PEs are spread over the machine (numa.Place): "core"
	// (or "": packed, consecutive PEs on consecutive cores), "numa" or
	// "socket" (round robin across NUMA nodes or sockets). A PE's home
	// NUMA node, where its heap lives, is the node it is mapped to.
	MapBy string
	// BindTo is what each PE process is bound to: "none", "core",
	// "numa" or "socket" (the core, node or socket it is mapped to; a
	// process hosting several PEs gets the union). "" is Open MPI's
	// rule, numa.DefaultBinding: core for up to 2 PEs, numa above, none
	// when the PEs outnumber the cores. Processes are bound before they
	// start, so the Go runtime sizes GOMAXPROCS to the binding.
	BindTo string
	// ReportBindings prints one line per PE to Stderr saying where it
	// runs, with a map of the machine's cores (numa.BindingMap).
	ReportBindings bool
	// Topology, when set, is used instead of this machine's topology,
	// with all of its online CPUs usable (tests: with a binding other
	// than none its CPUs must exist here).
	Topology *numa.Topology
	// TagOutput prefixes every line a PE process writes with "[PE n] "
	// (or "[PE a-b] " for a process hosting several PEs).
	TagOutput bool
	// Timeout bounds the job (0: no limit).
	Timeout time.Duration
	// Stdout and Stderr receive the PE processes' output and the
	// launcher's messages (nil: os.Stdout and os.Stderr). An *os.File is
	// inherited by the PE processes directly; any other writer is fed
	// through pipes.
	Stdout, Stderr io.Writer
	// NoSupervise turns off the reaction to a PE process's failure: the
	// launcher neither records it nor stops the other PEs, it only waits
	// for them (tests use it to check that PEs detect dead peers by
	// themselves). Timeout and cancellation still stop the job, and the
	// result is still reported. The zero Config supervises.
	NoSupervise bool
	// Background moves the calling process's threads to SCHED_BATCH once
	// every PE process has started (sys.BatchThreads; the PEs keep their
	// policy). The launcher then no longer preempts a PE when it wakes:
	// its supervision ticks, and the Go runtime's monitor thread, which
	// after each of them polls every 20 us for a while, wait for the
	// CPU's next scheduler tick or for a PE to yield it. Set it only when
	// the launcher is the process's whole job (cmd/oshrun does): every
	// thread of the process keeps the policy after Run returns. Where the
	// kernel refuses, the launcher runs on as it was.
	Background bool
}

// SignalError is the cancellation cause that tells Run which signal
// stopped the launcher: cancel Run's context with
// context.WithCancelCause and &SignalError{sig} (cmd/oshrun does so on
// SIGINT and SIGTERM). Run then reports "interrupted by SIGINT" and
// returns 128+signal. A context canceled for another cause is reported
// as canceled (exit code 128+SIGTERM), a context whose deadline passed as
// a timeout (124).
type SignalError struct {
	Signal os.Signal
}

func (e *SignalError) Error() string {
	return "received " + sys.SignalName(sys.SignalNumber(e.Signal))
}

// Exit codes of Run besides those of the PEs.
const (
	ExitFailure = 1   // the launcher could not start the job (Run returns an error)
	ExitUsage   = 2   // the Config is invalid (Run returns an error)
	ExitTimeout = 124 // the job's time limit expired (like timeout(1))
)

// Timing of the stop sequence.
const (
	termGrace = 500 * time.Millisecond // SIGTERM to SIGKILL
	// reportGrace is how long a timed-out job's PEs have to say where
	// they waited ("goshmem: SumReduce on PE 1 stopped: the job's time
	// limit expired", the one clue to where a hung job hung) before
	// SIGTERM: a waiting PE sees the abort at once (its doorbell is
	// rung) and exits by itself.
	reportGrace = 300 * time.Millisecond
	pollEvery   = 10 * time.Millisecond // checks while stopping
	// superviseEvery spaces the checks of the control block while the job
	// runs: each wakes the launcher (and its Go runtime's monitor thread),
	// which takes a CPU from a PE for a moment (Config.Background).
	superviseEvery = 100 * time.Millisecond
	drainWait      = 250 * time.Millisecond // output still open after every process exited
)

// failure is one way the job failed, in the terms of the control
// block's Abort record.
type failure struct {
	kind          uint32
	pe, pid, code int
}

// proc is one PE process.
type proc struct {
	first, n int              // hosted PEs [first, first+n)
	cpus     []int            // binding; nil when not bound
	places   []numa.Placement // of the hosted PEs
	cmd      *exec.Cmd
	pid      int
	started  bool
	pipes    []*os.File // the launcher's read ends
	childFds []*os.File // write ends for the child, closed after start

	// reaped is set once p has been waited for: at the end of Run, after
	// the sweep (until then the exited process stays a zombie, which
	// keeps its pid and process group id from being reused), or by the
	// waiter goroutine when waiting without reaping failed.
	reaped atomic.Bool

	done      bool
	code, sig int
	lost      bool // the process could not be waited for
	signaled  bool // the launcher sent a signal to it
}

// name returns "PE 4" or "PE 4-7" for messages and tags.
func (p *proc) name() string {
	if p.n == 1 {
		return fmt.Sprintf("PE %d", p.first)
	}
	return fmt.Sprintf("PE %d-%d", p.first, p.first+p.n-1)
}

// launcher is the state of one Run.
type launcher struct {
	cfg       Config
	ppp       int
	prog      string
	stdout    io.Writer
	stderr    io.Writer
	outMu     sync.Mutex // serializes every write to stdout and stderr
	readers   sync.WaitGroup
	segs      *job.Segments
	ctl       *job.Control
	procs     []*proc
	exited    chan exit
	outBroken chan error     // an output's reader is gone (EPIPE)
	jobTag    string         // GOSHMEM_JOB_ID=... in the environment of the job's processes
	topo      *numa.Topology // where the PEs are placed
	usable    []int          // the CPUs the job may use
	bindTo    string         // the binding in force
	running   int
	stopping  bool
	termSig   int // the first signal of a stop: SIGTERM, or the one that interrupted the launcher
	killT     *time.Timer
	killC     <-chan time.Time
	termT     *time.Timer      // a timeout's SIGTERM, after reportGrace
	termC     <-chan time.Time //
	spared    *proc            // the process that recorded the failure: it exits by itself, SIGKILL only
	first     *failure         // first failure seen (what NoSupervise reports)
	unjoined  []*proc          // exited 0 without ever joining the job
	stopMsg   string           // the launcher's own cause (timeout, interrupt)
	// spareAll: the job ended by GlobalExit, and every PE process exits
	// by itself with its status (its exit watcher sees the record), so
	// none gets SIGTERM, which would end it by a signal instead.
	spareAll bool
}

// Run launches the job cfg describes and supervises it until every PE
// process has exited (see the package documentation). It returns the
// job's exit code. err is non-nil only when the job could not be
// started (exitCode is then ExitUsage or ExitFailure); a job that
// started and failed returns its exit code and a nil error, after
// printing its one-line cause to cfg.Stderr.
func Run(ctx context.Context, cfg Config) (exitCode int, err error) {
	l := &launcher{cfg: cfg, ppp: cfg.PEsPerProc, stdout: cfg.Stdout, stderr: cfg.Stderr}
	if l.ppp == 0 {
		l.ppp = 1
	}
	if l.stdout == nil {
		l.stdout = os.Stdout
	}
	if l.stderr == nil {
		l.stderr = os.Stderr
	}
	if err := cfg.check(); err != nil {
		return ExitUsage, err
	}
	heap, err := env.Load(lookup(cfg.Env))
	if err != nil {
		return ExitFailure, fmt.Errorf("%w\n(set these variables in the environment or with -x VAR=value)", err)
	}

	prog, cleanup, err := resolveProgram(ctx, cfg.Program)
	if err != nil {
		if code, msg := ctxCause(ctx); msg != "" {
			return code, fmt.Errorf("%s while preparing %s: %w", msg, cfg.Program, err)
		}
		return ExitFailure, err
	}
	defer cleanup()
	l.prog = prog
	if code, msg := ctxCause(ctx); msg != "" {
		return code, fmt.Errorf("%s before the job started", msg)
	}

	nprocs := (cfg.NPEs + l.ppp - 1) / l.ppp
	for k := range nprocs {
		first := k * l.ppp
		l.procs = append(l.procs, &proc{first: first, n: min(l.ppp, cfg.NPEs-first)})
	}
	if err := l.place(); err != nil {
		return ExitFailure, err
	}

	segs, err := job.Create(cfg.NPEs, heap.SymmetricSize, job.CreateOptions{Huge: heap.HugePages})
	if err != nil {
		return ExitFailure, err
	}
	l.segs = segs
	m, err := segs.Ctl.Map(0, 0)
	if err != nil {
		segs.Close()
		return ExitFailure, err
	}
	defer m.Close()
	l.ctl, err = job.OpenControl(m.Bytes(), cfg.NPEs, uint64(segs.HeapSize), segs.JobID, false)
	if err != nil {
		segs.Close()
		return ExitFailure, err
	}

	l.exited = make(chan exit, nprocs)
	l.outBroken = make(chan error, 1)
	l.jobTag = job.EnvJobID + "=" + strconv.FormatUint(segs.JobID, 16)
	l.termSig = sys.SIGTERM
	startErr := l.startAll()
	// The processes hold their own copies now; the launcher keeps only
	// the mapping of the control block.
	segs.Close()
	if startErr != nil {
		l.stop(&failure{kind: job.AbortLost, pe: startErr.pe, code: 127})
	} else if cfg.Background {
		sys.BatchThreads() // best effort: see Config.Background
	}
	l.supervise(ctx)
	l.sweep()
	l.drain()
	l.reapAll()
	if startErr != nil {
		return ExitFailure, startErr.err
	}

	f := l.result()
	if f == nil {
		return 0, nil
	}
	msg, code := l.render(f)
	l.outMu.Lock()
	fmt.Fprintf(l.stderr, "oshrun: %s\n", msg)
	l.outMu.Unlock()
	return code, nil
}

func (cfg *Config) check() error {
	if cfg.NPEs < 1 {
		return fmt.Errorf("the number of PEs must be at least 1, got %d", cfg.NPEs)
	}
	if cfg.NPEs > numa.MaxPlacedPEs {
		// Checked before anything is made per PE or process (a record
		// per process came first, and a billion of them ran the
		// machine out of memory).
		return fmt.Errorf("cannot start %d PEs on one host; ask for 1 to %d PEs", cfg.NPEs, numa.MaxPlacedPEs)
	}
	if cfg.PEsPerProc < 0 {
		return fmt.Errorf("PEs per process must be at least 1, got %d", cfg.PEsPerProc)
	}
	if cfg.Program == "" {
		return errors.New("no program to run")
	}
	if cfg.MapBy != "" && !numa.ValidMap(cfg.MapBy) {
		return fmt.Errorf("unknown mapping %q; use %s", cfg.MapBy, numa.MapNames)
	}
	if cfg.BindTo != "" && !numa.ValidBind(cfg.BindTo) {
		return fmt.Errorf("unknown binding %q; use %s", cfg.BindTo, numa.BindNames)
	}
	if cfg.Timeout < 0 {
		return fmt.Errorf("negative timeout %v", cfg.Timeout)
	}
	for _, kv := range cfg.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return fmt.Errorf("environment entry %q is not of the form VAR=value", kv)
		}
	}
	return nil
}

// lookup returns a getenv over the launcher's environment overridden by
// the entries of extra (the last one for a name wins).
func lookup(extra []string) func(string) string {
	return func(name string) string {
		for i := len(extra) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(extra[i], "="); ok && k == name {
				return v
			}
		}
		return os.Getenv(name)
	}
}

// place maps the PEs onto the CPUs this job may use (numa.Place) and
// fills in each process's placements and binding: the union of its PEs'
// (nil when not bound).
func (l *launcher) place() error {
	topo, usable := l.cfg.Topology, []int(nil)
	if topo == nil {
		var err error
		if topo, err = numa.Discover(""); err != nil {
			return fmt.Errorf("placing the PEs: %w", err)
		}
		allowed, err := numa.Allowed()
		if err != nil {
			return fmt.Errorf("placing the PEs: %w", err)
		}
		usable = topo.Usable(allowed)
	} else {
		usable = topo.Usable(nil)
	}
	if len(usable) == 0 {
		return errors.New("placing the PEs: this process may run on no online CPU; check taskset -p and the cgroup's cpuset.cpus")
	}
	mapBy, bindTo := l.cfg.MapBy, l.cfg.BindTo
	if mapBy == "" {
		mapBy = numa.MapCore
	}
	if bindTo == "" {
		bindTo = numa.DefaultBinding(topo, usable, l.cfg.NPEs)
	}
	places, err := numa.Place(topo, usable, l.cfg.NPEs, mapBy, bindTo)
	if err != nil {
		return fmt.Errorf("placing %d PEs (--map-by %s --bind-to %s): %w", l.cfg.NPEs, mapBy, bindTo, err)
	}
	l.topo, l.usable, l.bindTo = topo, usable, bindTo
	for _, p := range l.procs {
		p.places = places[p.first : p.first+p.n]
		if bindTo == numa.BindNone {
			continue
		}
		var cpus []int
		for _, pl := range p.places {
			cpus = append(cpus, pl.Bind...)
		}
		slices.Sort(cpus)
		p.cpus = slices.Compact(cpus)
	}
	return nil
}

// homes returns the GOSHMEM_NUMA_NODES entry for p: its PEs' home nodes.
func (p *proc) homes() string {
	var b strings.Builder
	b.WriteString(job.EnvNUMANodes + "=")
	for i, pl := range p.places {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(pl.Node))
	}
	return b.String()
}

// reportBindings prints where each PE of p runs: the map of the cores
// the process is bound to, and in words where the PE is mapped.
func (l *launcher) reportBindings(p *proc) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	for i, pl := range p.places {
		pe := p.first + i
		where := l.topo.Describe(pl, l.bindTo, l.usable)
		if p.n > 1 && p.cpus != nil {
			where = fmt.Sprintf("bound with PEs %d-%d of its process to CPUs %s; mapped to CPU %d, NUMA node %d",
				p.first, p.first+p.n-1, numa.FormatCPUList(p.cpus), pl.CPU, pl.Node)
		}
		fmt.Fprintf(l.stderr, "oshrun: PE %d (pid %d): %s %s\n", pe, p.pid, l.topo.BindingMap(p.cpus, l.usable), where)
	}
}

// startError is a failure to start process pe.
type startError struct {
	pe  int
	err error
}

// startAll starts every process, from a goroutine of its own: the
// parent-death signal of a child fires when the thread that forked it
// exits, and a fresh goroutine that never stays locked keeps its threads
// alive whatever the caller of Run does with its own thread.
func (l *launcher) startAll() *startError {
	errc := make(chan *startError, 1)
	go func() {
		for _, p := range l.procs {
			if err := l.start(p); err != nil {
				errc <- &startError{pe: p.first, err: err}
				return
			}
		}
		errc <- nil
	}()
	return <-errc
}

// start starts process p.
func (l *launcher) start(p *proc) error {
	env := append(os.Environ(), l.cfg.Env...)
	env = append(env, l.segs.Env(p.first, p.n)...)
	env = append(env, p.homes())
	p.cmd = &exec.Cmd{
		Path:        l.prog,
		Args:        append([]string{l.cfg.Program}, l.cfg.Args...),
		Env:         env,
		ExtraFiles:  l.segs.Files(),
		SysProcAttr: sys.ChildAttr(),
	}
	var err error
	tag := ""
	if l.cfg.TagOutput {
		tag = "[" + p.name() + "] "
	}
	if p.cmd.Stdout, err = l.output(p, l.stdout, tag); err == nil {
		p.cmd.Stderr, err = l.output(p, l.stderr, tag)
	}
	if err == nil {
		if p.cpus != nil {
			err = startBound(p.cmd, p.cpus)
		} else {
			err = p.cmd.Start()
		}
	}
	for _, f := range p.childFds {
		f.Close()
	}
	p.childFds = nil
	if err != nil {
		for _, f := range p.pipes {
			f.Close()
		}
		p.pipes = nil
		return fmt.Errorf("starting %s (%s): %w", p.name(), l.cfg.Program, err)
	}
	p.started = true
	p.pid = p.cmd.Process.Pid
	l.running++
	go func() {
		e := exit{p: p}
		var err error
		if e.code, e.sig, err = sys.WaitStatus(p.pid); err != nil {
			// Reap it then: its group id is no longer reserved, and
			// the sweep leaves its group alone.
			p.cmd.Wait()
			p.reaped.Store(true)
			if ps := p.cmd.ProcessState; ps != nil {
				e.code, e.sig = sys.ExitStatus(ps)
			} else {
				e.lost = true
			}
		}
		l.exited <- e
	}()
	if l.cfg.ReportBindings {
		l.reportBindings(p)
	}
	return nil
}

// startBound starts cmd bound to cpus: the child inherits the affinity
// of the thread that forks it.
func startBound(cmd *exec.Cmd, cpus []int) error {
	runtime.LockOSThread()
	// Unlock only after restoring the affinity; and never exit the
	// goroutine while locked (that would end the thread, and the
	// parent-death signal would kill the child).
	defer runtime.UnlockOSThread()
	orig, err := sys.Affinity(0)
	if err != nil {
		return err
	}
	if err := sys.SetAffinity(0, cpus); err != nil {
		return fmt.Errorf("binding to CPUs %s: %w", numa.FormatCPUList(cpus), err)
	}
	err = cmd.Start()
	if rerr := sys.SetAffinity(0, orig); rerr != nil && err == nil {
		// The thread keeps the narrower set: slower, not wrong.
		_ = rerr
	}
	return err
}

// output returns the file a child writes one of its streams to: dst
// itself when it is a file and lines need no tag, otherwise the write
// end of a pipe that a goroutine copies to dst.
func (l *launcher) output(p *proc, dst io.Writer, tag string) (*os.File, error) {
	if f, ok := dst.(*os.File); ok && tag == "" {
		return f, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.pipes = append(p.pipes, r)
	p.childFds = append(p.childFds, w)
	l.readers.Add(1)
	go l.copyOut(r, dst, tag)
	return w, nil
}

// supervise waits for every started process, stopping the job on the
// first failure, timeout or cancellation.
func (l *launcher) supervise(ctx context.Context) {
	tick := time.NewTicker(superviseEvery)
	defer tick.Stop()
	var timeout <-chan time.Time
	if l.cfg.Timeout > 0 {
		t := time.NewTimer(l.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	done := ctx.Done()
	for l.running > 0 {
		select {
		case e := <-l.exited:
			l.ended(e)
		case <-tick.C:
			l.poll()
		case <-timeout:
			timeout = nil
			if !l.stopping {
				l.stopMsg = "job timed out after " + l.cfg.Timeout.String()
			}
			l.stop(&failure{kind: job.AbortTimeout, pe: -1, code: int(min(l.cfg.Timeout/time.Second, 1<<30))})
		case <-done:
			done = nil
			code, msg := ctxCause(ctx)
			if !l.stopping {
				l.stopMsg = msg
				// Pass the interrupt on (^C reaches only the launcher's
				// process group): SIGINT, SIGHUP or SIGTERM first.
				var se *SignalError
				if errors.As(context.Cause(ctx), &se) && sys.SignalNumber(se.Signal) != 0 {
					l.termSig = sys.SignalNumber(se.Signal)
				}
			}
			if code == ExitTimeout {
				l.stop(&failure{kind: job.AbortTimeout, pe: -1})
			} else {
				l.stop(&failure{kind: job.AbortInterrupted, pe: -1, code: code - 128})
			}
		case err := <-l.outBroken:
			// Nobody reads the job's output any more (oshrun | head):
			// stop as a SIGPIPE would, but in order.
			if !l.stopping {
				l.stopMsg = "output closed (" + err.Error() + ")"
			}
			l.stop(&failure{kind: job.AbortInterrupted, pe: -1, code: sys.SIGPIPE})
		case <-l.termC:
			l.termC = nil
			l.terminate()
		case <-l.killC:
			l.killC = nil
			l.signalAll(sys.SIGKILL)
		}
	}
	if l.termT != nil {
		l.termT.Stop()
	}
	if l.killT != nil {
		l.killT.Stop()
	}
}

// ctxCause describes why ctx is done: the exit code and the message
// (empty while ctx is not done).
func ctxCause(ctx context.Context) (code int, msg string) {
	if ctx.Err() == nil {
		return 0, ""
	}
	cause := context.Cause(ctx)
	var se *SignalError
	switch {
	case errors.As(cause, &se):
		n := sys.SignalNumber(se.Signal)
		return 128 + n, "interrupted by " + sys.SignalName(n)
	case errors.Is(cause, context.DeadlineExceeded):
		return ExitTimeout, "job timed out (context deadline exceeded)"
	}
	return 128 + sys.SIGTERM, "interrupted (" + cause.Error() + ")"
}

// exit is how a PE process ended, from its waiter goroutine.
type exit struct {
	p         *proc
	code, sig int
	lost      bool // it could not be waited for
}

// ended records the exit of a PE process and judges it. The process
// stays a zombie until reapAll.
func (l *launcher) ended(e exit) {
	p := e.p
	l.running--
	p.done = true
	p.code, p.sig, p.lost = e.code, e.sig, e.lost
	if l.stopping {
		return
	}
	if f := l.judge(p); f != nil {
		l.fail(f)
	}
}

// judge returns the failure that p's exit is, if any.
func (l *launcher) judge(p *proc) *failure {
	if f := l.exitFailure(p); f != nil || l.joined(p) != 0 {
		return f
	}
	l.unjoined = append(l.unjoined, p)
	return l.unjoinedFailure()
}

// exitFailure returns the failure that p's exit status is: death by a
// signal, a non-zero code, or an exit 0 with a hosted PE that joined
// the job but did not finalize. It returns nil for an exit 0 after
// finalizing, and for an exit 0 of a process that never joined.
func (l *launcher) exitFailure(p *proc) *failure {
	switch {
	case p.lost:
		return &failure{kind: job.AbortLost, pe: p.first, pid: p.pid}
	case p.sig != 0:
		return &failure{kind: job.AbortSignal, pe: p.first, pid: p.pid, code: p.sig}
	case p.code != 0:
		return &failure{kind: job.AbortExit, pe: p.first, pid: p.pid, code: p.code}
	}
	finalized := 0
	for pe := p.first; pe < p.first+p.n; pe++ {
		if l.ctl.Slot(pe).State.Load() == job.StateFinalized {
			finalized++
		}
	}
	if finalized == p.n || l.joined(p) == 0 {
		return nil
	}
	return &failure{kind: job.AbortExit, pe: p.first, pid: p.pid}
}

// joined counts the PEs of p that joined the job (left StateStarting).
func (l *launcher) joined(p *proc) int {
	n := 0
	for pe := p.first; pe < p.first+p.n; pe++ {
		if l.ctl.Slot(pe).State.Load() != job.StateStarting {
			n++
		}
	}
	return n
}

// unjoinedFailure returns a failure when a process exited 0 without
// joining the job while some PE did join: that PE would wait for it.
func (l *launcher) unjoinedFailure() *failure {
	if len(l.unjoined) == 0 {
		return nil
	}
	for pe := range l.cfg.NPEs {
		if l.ctl.Slot(pe).State.Load() != job.StateStarting {
			p := l.unjoined[0]
			return &failure{kind: job.AbortExit, pe: p.first, pid: p.pid}
		}
	}
	return nil
}

// poll checks the control block for failures no exit revealed.
func (l *launcher) poll() {
	if l.stopping {
		return
	}
	if _, _, _, _, ok := l.ctl.Header.Abort.Get(); ok && !l.cfg.NoSupervise {
		l.stop(nil) // a PE recorded a failure (a panic, GlobalExit, a dead peer)
		return
	}
	if f := l.unjoinedFailure(); f != nil {
		l.fail(f)
	}
}

// fail handles a PE failure: stop the job, or under NoSupervise just
// remember the first one.
func (l *launcher) fail(f *failure) {
	if !l.cfg.NoSupervise {
		l.stop(f)
	} else if l.first == nil {
		l.first = f
	}
}

// stop records f (unless a failure is recorded already), wakes every
// PE, and terminates every remaining process: SIGTERM now, SIGKILL
// after termGrace.
func (l *launcher) stop(f *failure) {
	if l.stopping {
		return
	}
	l.stopping = true
	if f != nil {
		l.ctl.Header.Abort.Set(f.kind, f.pe, f.pid, f.code)
	}
	// A PE that recorded its own panic or GlobalExit is exiting by
	// itself, after printing the panic's stack, with its own exit code:
	// SIGTERM would cut that short and replace the code, so its process
	// gets only the SIGKILL after termGrace.
	if kind, pe, _, _, ok := l.ctl.Header.Abort.Get(); ok && (kind == job.AbortPanic || kind == job.AbortStart || kind == job.AbortGlobalExit) && pe >= 0 && pe < l.cfg.NPEs {
		l.spared = l.procs[pe/l.ppp]
		l.spareAll = kind == job.AbortGlobalExit
	}
	for pe := range l.cfg.NPEs {
		wake(&l.ctl.Slot(pe).Door)
	}
	if f != nil && f.kind == job.AbortTimeout {
		l.termT = time.NewTimer(reportGrace)
		l.termC = l.termT.C
		return
	}
	l.terminate()
}

// terminate sends the stop's first signal to every PE process and
// SIGKILL after termGrace.
func (l *launcher) terminate() {
	l.signalAll(l.termSig)
	l.killT = time.NewTimer(termGrace)
	l.killC = l.killT.C
}

// wake rings a PE's doorbell.
func wake(d *job.Doorbell) {
	d.Seq.Add(1)
	sys.FutexWake(mem.U32(&d.Seq), 1<<30)
}

// signalAll sends sig to the process group of every PE process not yet
// reaped: to the process if it still runs, and to what it started. Until
// it is reaped a process's pid (its group id) cannot be reused, so this
// never hits a stranger.
func (l *launcher) signalAll(sig int) {
	for _, p := range l.procs {
		if !p.started || p.reaped.Load() || ((p == l.spared || l.spareAll) && sig != sys.SIGKILL) {
			continue
		}
		if !p.done {
			p.signaled = true
		}
		if err := sys.KillGroup(p.pid, sig); err != nil && !p.done {
			p.cmd.Process.Signal(sys.Signal(sig))
		}
	}
}

// sweepWait bounds the sweep after its SIGKILL (a process in an
// uninterruptible sleep dies only when it wakes up).
const sweepWait = time.Second

// sweep stops, once every PE process has exited, whatever they left
// running, as Slurm and Open MPI end a job step: the rest of each PE
// process's group (its children and their children, unless they left
// the group), and, when this process is a child subreaper (oshrun is:
// sys.SetChildSubreaper), every process reparented to it that carries
// the job's GOSHMEM_JOB_ID in its environment (a descendant that left
// its group with setsid or setpgid and whose parent died: a double fork
// reparents to the subreaper, not to init). They get the stop's first
// signal (SIGTERM, or the launcher's interrupt) and SIGKILL after
// termGrace; the launcher reaps the orphans. This does not change the
// job's result: a job whose PEs all finalized and exited 0 still exits
// 0. What escapes: a descendant that leaves the group and also clears
// GOSHMEM_JOB_ID from its environment, or whose parent dies while the
// launcher is not a subreaper (it is then init's).
func (l *launcher) sweep() {
	groups := map[int]bool{}
	for _, p := range l.procs {
		if p.started && !p.reaped.Load() {
			groups[p.pid] = true
		}
	}
	stopGroups(groups, l.jobTag, l.termSig)
}

// stopGroups stops every process in the process groups led by the
// (exited, unreaped) group leaders in groups and, when this process is a
// child subreaper and tag is not empty, every child of this process
// (reparented) with tag in its environment: sig first, SIGKILL after
// termGrace; it returns when none is left (or sweepWait after the
// SIGKILL), having reaped those that were reparented to this process.
func stopGroups(groups map[int]bool, tag string, sig0 int) {
	reaper := tag != "" && sys.IsChildSubreaper()
	if len(groups) == 0 && !reaper {
		return
	}
	self := os.Getpid()
	orphans := map[int]bool{} // seen alive with the job's tag: ours to stop and reap
	sent := map[int]int{}     // target (-group or pid) -> last signal sent
	start := time.Now()
	for {
		list, err := sys.Processes()
		if err != nil {
			return
		}
		sig := sig0
		if time.Since(start) >= termGrace {
			sig = sys.SIGKILL
		}
		live := 0
		for _, pi := range list {
			if groups[pi.Pid] || pi.Pid == self {
				continue // a PE process (a zombie until reapAll)
			}
			child := pi.PPid == self
			if reaper && child && !groups[pi.Pgrp] && !orphans[pi.Pid] && pi.State != 'Z' && sys.EnvironHas(pi.Pid, tag) {
				orphans[pi.Pid] = true
			}
			if !groups[pi.Pgrp] && !orphans[pi.Pid] {
				continue
			}
			if pi.State == 'Z' {
				// Reparented to the launcher and dead: reap it (only
				// ours: in a PE's group, or seen with the job's tag).
				if child && sys.Reap(pi.Pid) {
					delete(orphans, pi.Pid)
				}
				continue
			}
			live++
			target := pi.Pid
			if groups[pi.Pgrp] {
				target = -pi.Pgrp
			}
			if sent[target] == sig {
				continue
			}
			sent[target] = sig
			if target < 0 {
				sys.KillGroup(-target, sig)
			} else {
				sys.Kill(target, sig)
			}
		}
		if live == 0 || time.Since(start) >= termGrace+sweepWait {
			break
		}
		time.Sleep(pollEvery)
	}
	for pid := range orphans {
		sys.Reap(pid)
	}
}

// reapAll reaps every PE process that is still a zombie.
func (l *launcher) reapAll() {
	for _, p := range l.procs {
		if p.started && !p.reaped.Load() {
			p.cmd.Wait()
			p.reaped.Store(true)
		}
	}
}

// drain waits for the output of every process, for at most drainWait
// after they all exited (a process's children may hold its pipes).
func (l *launcher) drain() {
	done := make(chan struct{})
	go func() {
		l.readers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(drainWait):
	}
	for _, p := range l.procs {
		for _, f := range p.pipes {
			f.Close()
		}
	}
	<-done
}

// result returns the failure of the job, if any: the control block's
// record (the first failure anyone recorded), or else the first one the
// launcher saw.
func (l *launcher) result() *failure {
	if kind, pe, pid, code, ok := l.ctl.Header.Abort.Get(); ok {
		return &failure{kind: kind, pe: pe, pid: pid, code: code}
	}
	if l.first != nil {
		return l.first
	}
	return l.unjoinedFailure()
}

// render returns the message and exit code for f. The code is that of
// the PE that failed first, the root cause: its process's own exit code
// (128+signal for a death by signal), whoever recorded the failure; not
// the code of the peers that stopped because of it.
func (l *launcher) render(f *failure) (string, int) {
	switch f.kind {
	case job.AbortTimeout:
		msg := l.stopMsg
		if msg == "" {
			msg = "job timed out after " + l.cfg.Timeout.String()
		}
		return msg, ExitTimeout
	case job.AbortInterrupted:
		msg := l.stopMsg
		if msg == "" {
			msg = "interrupted by " + sys.SignalName(f.code)
		}
		return msg, 128 + f.code
	case job.AbortLost:
		// A peer found the process gone; the launcher knows how it ended.
		if g := l.ownExit(f.pe, true); g != nil {
			g.pe = f.pe
			return l.render(g)
		}
	case job.AbortPanic, job.AbortStart:
		// The panicking PE's process exits with the code its program
		// chose (goshmem.Main: 2; after a failed Init, what the program
		// does with the error); if the launcher had to kill it, the
		// code goshmem.Main gives a panic.
		code := exitPanic
		if g := l.ownExit(f.pe, false); g != nil {
			_, code = l.render(g)
		}
		return l.describe(f), code
	}
	code := 1
	switch f.kind {
	case job.AbortExit, job.AbortGlobalExit:
		if f.code != 0 || f.kind == job.AbortGlobalExit {
			code = job.ExitStatus(f.code)
		}
	case job.AbortSignal:
		code = 128 + f.code
	}
	return l.describe(f), code
}

// describe words f as job.Describe does, except that the exit of a
// process hosting several PEs (--pes-per-proc) names the process - "the
// process of PEs 2-3 (pid 123) exited with code 3" - since which of its
// PEs called os.Exit (or drew the signal) cannot be known: only a panic,
// a GlobalExit or a lost peer is recorded by the PE itself, with its
// number.
func (l *launcher) describe(f *failure) string {
	msg := job.Describe(f.kind, f.pe, f.pid, f.code)
	if f.kind != job.AbortExit && f.kind != job.AbortSignal || f.pe < 0 || f.pe >= l.cfg.NPEs {
		return msg
	}
	p := l.procs[f.pe/l.ppp]
	if p.n == 1 {
		return msg
	}
	who := fmt.Sprintf("PE %d", f.pe)
	return fmt.Sprintf("the process of PEs %d-%d", p.first, p.first+p.n-1) + strings.TrimPrefix(msg, who)
}

// exitPanic is the exit code of a goshmem.Main program whose PE panicked.
const exitPanic = 2

// ownExit returns the failure that the exit of the process hosting pe
// is, when that process ended by itself (not by the launcher's signal)
// and failed: exited non-zero or died by a signal. Otherwise nil. dead
// says the process was gone before the launcher signalled anything (a
// peer recorded it lost before any stop), so that even a death by
// signal is its own.
func (l *launcher) ownExit(pe int, dead bool) *failure {
	if pe < 0 || pe >= l.cfg.NPEs {
		return nil
	}
	p := l.procs[pe/l.ppp]
	if !p.done || p.lost || (p.sig != 0 && p.signaled && !dead) {
		return nil
	}
	if g := l.exitFailure(p); g != nil && g.kind != job.AbortLost {
		return g
	}
	return nil
}
