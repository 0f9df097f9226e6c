package node

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/pmi"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/shm"
)

// PanicError is how RunLocal and Main report a PE that panicked.
type PanicError struct {
	PE    int
	Value any
	Stack []byte
	// reported: printed with its stack when the PE panicked (Reported).
	reported bool
}

// Reported tells that the runtime printed the error and its stack to
// standard error when the PE panicked: in a process of several PEs
// (oshrun --pes-per-proc), whose other PEs may compute for long before
// they notice the failure and the process can end, or be ended by the
// launcher before Main prints anything. Main then does not print it
// again.
func (e *PanicError) Reported() bool { return e.reported }

func (e *PanicError) Error() string {
	return fmt.Sprintf("goshmem: PE %d panicked: %v", e.PE, e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// GlobalExitError is what RunLocal returns when a PE of the in-process
// job called GlobalExit: the job ended with status Code. A job of
// processes never returns it: there GlobalExit ends every PE's process
// with the status (see PE.GlobalExit).
type GlobalExitError struct {
	PE   int // the PE that called GlobalExit
	Code int // the status it gave
}

func (e *GlobalExitError) Error() string {
	return fmt.Sprintf("goshmem: PE %d called GlobalExit(%d)", e.PE, e.Code)
}

// startProcess maps this process's share of the job: the launcher's
// segments when started by oshrun, a new one-PE job otherwise.
func startProcess(cfg Config) (*Job, error) {
	spec, launched, err := job.SpecFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	var segs *job.Segments
	var pc *pmi.Client
	var cluster *Cluster
	var xseg *shm.Segment
	if launched {
		segs, err = spec.Adopt()
	} else if pc, launched, err = pmi.FromEnv(pmiEnv(cfg), wireupTimeout); launched {
		if err == nil {
			segs, spec, cluster, xseg, err = startPMI(cfg, pc)
		}
		if err != nil && pc != nil {
			// Tell the launcher, so that it ends the job rather than
			// leave the other processes waiting in a fence; it may kill
			// this process before the caller prints err, so print it
			// first.
			err = abortPMI(pc, err)
		}
		if err != nil {
			return nil, err
		}
	} else if what := pmi.Unserved(os.Getenv); err == nil && what != "" {
		err = errors.New(what)
	} else if err == nil {
		spec = job.Spec{NPEs: 1, LocalPEs: 1}
		segs, err = job.Create(1, cfg.HeapSize, job.CreateOptions{Huge: cfg.Huge})
	}
	if err != nil {
		return nil, err
	}
	defer segs.Close() // the mappings keep the memory
	var host []int
	busy, helpers := 0, 0
	if xseg != nil {
		busy, helpers = cluster.busyPEs(cluster.HostOf[spec.FirstPE])
		defer xseg.Close()
		for q, h := range cluster.HostOf {
			if h == cluster.HostOf[spec.FirstPE] {
				host = append(host, q)
			}
		}
	}
	j, err := openJob(cfg, segs, spec.FirstPE, spec.LocalPEs, os.Getenv(job.EnvNUMANodes), host, busy, helpers)
	if j != nil {
		j.process = true
		j.pmi, j.cluster = pc, cluster
		if xseg != nil {
			if j.x, err = newXhost(j, cluster, spec.FirstPE, xseg); err == nil {
				cluster.Transport = j.x.name
				err = j.x.open(pc)
			}
			if err != nil {
				j.close()
				j = nil
				return nil, abortPMI(pc, err)
			}
		}
		if j.localPEs < j.npes {
			j.startExitWatch()
		}
	} else if pc != nil {
		err = abortPMI(pc, err)
	}
	return j, err
}

// abortPMI ends a job that failed to start under a cluster launcher:
// it prints err, gives the launcher a moment to forward the output (it
// kills every process of the job on the abort, this one too), then asks
// it to end the job, so that no process is left waiting in a fence.
//
// It returns err marked as printed (ReportedError), so that Main does
// not print it a second time if the launcher is slow to kill.
func abortPMI(pc *pmi.Client, err error) error {
	fmt.Fprintln(os.Stderr, err)
	time.Sleep(200 * time.Millisecond)
	pc.Abort(1, err.Error())
	pc.Close()
	return &ReportedError{err}
}

// AbortLaunch ends, because of err, a job that a cluster launcher
// started this process in, as a failed start-up does (abortPMI: it
// prints err, gives the launcher a moment to forward it, and asks the
// launcher through PMI to end the job). It returns false, having done
// nothing, when the environment names no launcher's PMI or it cannot
// be reached. Package goshmem uses it for a bad SHMEM_* value, found
// before any PMI connection.
func AbortLaunch(err error) bool {
	pc, ok, perr := pmi.FromEnv(os.Getenv, 5*time.Second)
	if !ok || perr != nil {
		return false
	}
	abortPMI(pc, err)
	return true
}

// ReportedError is a start-up error that the runtime has already
// printed to stderr (before it asked the cluster launcher to end the
// job): a caller that prints errors should not print it again. It
// unwraps to the error itself.
type ReportedError struct{ Err error }

func (e *ReportedError) Error() string { return e.Err.Error() }
func (e *ReportedError) Unwrap() error { return e.Err }

// pmiEnv is the environment the PMI client reads, with SHMEM_PMI from
// the configuration.
func pmiEnv(cfg Config) func(string) string {
	return func(k string) string {
		if k == pmi.EnvChoice {
			return cfg.PMI
		}
		return os.Getenv(k)
	}
}

// Cluster returns what the PE learned from its cluster launcher's PMI
// at start-up, or nil when oshrun (or nothing) started it.
func (p *PE) Cluster() *Cluster { return p.job.cluster }

// localJob creates an in-process job of n PEs.
func localJob(cfg Config, n int, kinds []shm.Kind) (*Job, error) {
	segs, err := job.Create(n, cfg.HeapSize, job.CreateOptions{Huge: cfg.Huge, Kind: kinds})
	if err != nil {
		return nil, err
	}
	defer segs.Close()
	return openJob(cfg, segs, 0, n, "", nil, 0, 0)
}

// start is each PE's start-up: wait for every PE of the job to have
// mapped the heaps and filled its slot, then learn the peers, and check
// that those reached with process_vm_readv/writev can be (probeCMA).
func (p *PE) start() error {
	if f := p.job.cfg.beforeStart; f != nil {
		f(p)
	}
	p.syncStart()
	p.cpuGroups() // every PE's CPU set is published now
	p.job.afterStart()
	return p.probeCMA()
}

// probeCMA reads one byte of the heap of a host-mate that this PE
// reaches with process_vm_readv/writev (SHMEM_TRANSPORT=cma, or heaps
// that could not be mapped), in another process if there is one: the
// kernel allows it only with ptrace access (the same user and
// kernel.yama.ptrace_scope 0, or a parent, or CAP_SYS_PTRACE), which
// is the same for every process of the job on a host, so one read
// answers for all. Without it every put and get to such a PE would
// panic at its first use; this returns an error that says what to do,
// at start-up. Every host-mate has published its pid and heap by now.
func (p *PE) probeCMA() error {
	target, own := -1, os.Getpid()
	for q := range p.peers {
		if q == p.me || p.peers[q].base != nil || p.job.x != nil && p.job.x.remote(q) {
			continue
		}
		target = q
		if int(p.job.ctl.Slot(q).Pid.Load()) != own {
			break // another process: the read that needs the permission
		}
	}
	if target < 0 {
		return nil
	}
	s := p.job.ctl.Slot(target)
	pid, base := int(s.Pid.Load()), uintptr(s.HeapAddr.Load())
	var b [1]byte
	err := sys.ProcessVMRead(pid, b[:], base)
	if p.job.cfg.cmaFault != nil {
		err = p.job.cfg.cmaFault
	}
	if err == nil {
		return nil
	}
	if je := abortError("Init", p.me, p.job); je != nil {
		// The job failed meanwhile (the peer's own start failed, and its
		// process may be gone): that failure, not this read's, is the
		// cause.
		return je
	}
	hint := ""
	if errors.Is(err, sys.ErrPerm) {
		hint = ": it needs ptrace access to the peer (the same user and kernel.yama.ptrace_scope 0, see /proc/sys/kernel/yama/ptrace_scope, or CAP_SYS_PTRACE)"
	}
	return fmt.Errorf("goshmem: PE %d reaches PE %d (pid %d) with process_vm_readv/writev (%s), which fails: %w%s; or let the PEs map each other's heaps: SHMEM_TRANSPORT=auto or xpmem",
		p.me, target, pid, p.job.transport.Name, err, hint)
}

// Finalize ends the PE's participation (shmem_finalize): it lets the
// API layer publish its teams' call counts (TeamFinal) and marks the PE
// StateFinalizing, destroys the PE's shareable contexts (those made
// without CtxPrivate; each completes its operations), waits for every
// PE, runs what the API layer registered with OnFinalize (it destroys
// the program's teams), then marks this PE finished. Contexts made
// with CtxPrivate are the program's to destroy before. Calling
// Finalize twice is harmless.
func (p *PE) Finalize() {
	if p.finalized.Load() {
		return
	}
	// From here on this PE makes no collective call on a team: a member
	// waiting in one it never made learns so (TeamFinal).
	if f := p.teamFinal.Load(); f != nil {
		f.Publish()
	}
	if p.slot.State.Load() == job.StateRunning {
		// How many barriers of the job it will have made, before it
		// says it finalizes: a BarrierAll that its barrier completes
		// learns it (checkFinalizeMet).
		p.slot.FinalSyncs.Store(p.syncs + 1)
		p.slot.State.Store(job.StateFinalizing)
		p.job.ctl.Header.Finalizing.Add(1)
		p.job.eachHostPE(func(q int) { wait.WakeAll(p.job.bell(q)) })
		if p.x != nil {
			p.xpublishFinal(p.syncs + 1) // (Finalize's barrier is one more)
		}
	}
	p.endMu.Lock()
	ctxs := make([]*Ctx, 0, len(p.shareable))
	for w := range p.shareable {
		if c := w.Value(); c != nil {
			ctxs = append(ctxs, c)
		}
	}
	p.endMu.Unlock()
	for _, c := range ctxs {
		c.Destroy()
	}
	p.ctx.Quiet()
	if p.x != nil {
		p.xquiet(nil) // every context's writes on other hosts
	}
	p.sync("Finalize")
	p.endMu.Lock()
	fs := p.atFinalize
	p.atFinalize = nil
	p.endMu.Unlock()
	for _, f := range fs {
		f()
	}
	p.finalized.Store(true)
	p.slot.FinalSyncs.Store(p.syncs)
	p.slot.State.Store(job.StateFinalized)
	p.job.ctl.Header.Finalized.Add(1)
	// A PE still waiting in a barrier of the job that this PE will not
	// make (a program whose PEs made different collective calls) looks
	// at the finalized PEs on the slow path of its wait: wake the
	// sleepers of this host, whose control-only waits may park without
	// a timer.
	p.job.eachHostPE(func(q int) { wait.WakeAll(p.job.bell(q)) })
	if x := p.job.x; x != nil {
		x.close(p) // the leader: once its host's PEs have finalized
	}
	if j := p.job; j.finalizedHere.Add(1) == int32(j.localPEs) && j.prevProcs > 0 {
		// The job raised GOMAXPROCS for its own goroutines (a bound
		// PE's watchers, a leader's transport): the program's value
		// from here on, for what it does after Finalize.
		runtime.GOMAXPROCS(j.prevProcs)
	}
	if c := p.job.pmi; c != nil {
		// The launcher sees a clean end; an error here changes nothing.
		p.job.pmiEnd.Do(func() { c.Finalize() })
	}
	p.ctx.slow = true // RMA and AMOs from here on panic (Ctx.live)
}

// OnFinalize registers f to run once in Finalize, after its barrier.
func (p *PE) OnFinalize(f func()) {
	p.endMu.Lock()
	p.atFinalize = append(p.atFinalize, f)
	p.endMu.Unlock()
}

// GlobalExit ends the job with status code (shmem_global_exit). It
// does not return, and no PE returns from Main, Run or RunLocal as if
// the job had finished.
//
// In a job of processes (oshrun, or a program on its own) every PE's
// process exits with status code at once: this one here, every other
// one from its exit watcher (watch.go), even while its PEs compute and
// never call into the runtime. Main and Run do not return there, so no
// user code runs after them, and oshrun exits with code. An exit status
// keeps code's low 8 bits, and a non-zero code whose low 8 bits are 0
// (256, say) exits with 1, never with the 0 of a success
// (job.ExitStatus). RunLocal's GlobalExitError carries code whole.
//
// In an in-process job (RunLocal) the process belongs to the caller of
// RunLocal, so GlobalExit ends the job, not the process: the calling
// goroutine stops (runtime.Goexit: its deferred calls run, it cannot be
// recovered), the other PEs stop at their next wait, barrier, collective
// or Finalize, and RunLocal returns a *GlobalExitError carrying code.
func (p *PE) GlobalExit(code int) {
	j := p.job
	j.fail(job.AbortGlobalExit, p.me, os.Getpid(), code)
	if j.process {
		j.exit(code)
	}
	if j.x != nil {
		j.x.forwardAbort() // the other hosts (a leader's; see exitWatch)
	}
	runtime.Goexit()
}

// globalExit ends this process with the job's GlobalExit status when
// this process is the job's (and so the PE's) to end; a PE of an
// in-process job gets the *JobError like any other failure.
func (j *Job) globalExit(e *JobError) {
	if j.process && e.Kind == job.AbortGlobalExit {
		j.exit(e.Code)
	}
}

// exit ends this process with status code after a GlobalExit: at once
// in a job on one host, and in a job that spans hosts once the leaders
// have settled the end of the job among themselves (xhost.beforeExit).
func (j *Job) exit(code int) {
	if j.x != nil {
		j.x.beforeExit()
	}
	j.endPMI()
	os.Exit(job.ExitStatus(code))
}

// endPMI finalizes this process's PMI connection before it exits for a
// GlobalExit, when no PMI request is in flight (the exchange of a job
// that spans hosts is then held: quiescePMI), within pmiEndWait.
//
// Why: a launcher takes a PMI connection that closes without finalize
// for a crash. MPICH's hydra (4.0) then kills the host's other
// processes and records status 1 for the process; when it reaps the
// process before it reads the closed connection, that 1 overwrites the
// real status, and mpiexec reports the process "killed by signal 1"
// and exits 255 instead of GlobalExit's code (1 run in 20 across the
// namespace test hosts). Finalized, the process's exit status is what
// the launcher reports, and every process of the job exits by itself
// (exitWatch).
func (j *Job) endPMI() {
	c := j.pmi
	if c == nil {
		return
	}
	if j.x != nil {
		j.x.quiescePMI()
		if !j.x.pmiHeld {
			return // a request in flight: the connection is not ours to use
		}
	}
	j.pmiEnd.Do(func() { c.FinalizeWithin(pmiEndWait) })
}

// pmiEndWait bounds how long a process waits for its launcher's answer
// to PMI finalize at a GlobalExit.
const pmiEndWait = time.Second

// runPEs runs fn on every PE hosted by j, one goroutine each, and
// returns the root cause of a failure: a GlobalExit (when it ended the
// job) or the first panic of a PE rather than the JobErrors it caused
// elsewhere.
func runPEs(j *Job, fn func(*PE)) error {
	pes := make([]*PE, j.localPEs)
	for i := range pes {
		pes[i] = newPE(j, j.firstPE+i)
	}
	errs := make([]error, len(pes))
	var wg sync.WaitGroup
	for i, p := range pes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.runPE(p, fn, &errs[i]) // sets errs[i] after a runtime.Goexit too
		}()
	}
	wg.Wait()
	kind, pe, _, code, failed := j.ctl.Header.Abort.Settled()
	j.close()
	if failed && kind == job.AbortGlobalExit {
		return &GlobalExitError{PE: pe, Code: code}
	}
	var first error
	for _, err := range errs {
		var pe *PanicError
		if errors.As(err, &pe) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	if j.process {
		// The caller reports the first; where the process's other PEs
		// stopped is as much a clue to where a hung or failed job was
		// (each PE of its own process reports its own).
		for _, err := range errs {
			var je *JobError
			if err != first && errors.As(err, &je) {
				fmt.Fprintln(os.Stderr, err)
			}
		}
	}
	return first
}

// runPE runs fn as PE p and stores its outcome in *out: nil when it
// finished, else why not. It stores through out, not as a result,
// because a PE that calls runtime.Goexit never returns.
func (j *Job) runPE(p *PE, fn func(*PE), out *error) {
	done := false
	var err error
	defer func() { *out = err }() // runs last: after the recovery below
	defer func() {
		r := recover()
		if r == nil {
			if done {
				return
			}
			if kind, _, _, _, ok := j.ctl.Header.Abort.Settled(); ok && kind == job.AbortGlobalExit {
				// GlobalExit in an in-process job: runPEs reports it.
				p.slot.State.Store(job.StateDead)
				return
			}
			// runtime.Goexit (t.FailNow in a test): the PE is gone
			// without finishing; its peers must not wait for it.
			r = fmt.Sprintf("PE %d stopped its goroutine (runtime.Goexit, e.g. t.FailNow) before finishing", p.me)
		}
		if je, ok := r.(*JobError); ok {
			err = je
		} else {
			pe := &PanicError{PE: p.me, Value: r, Stack: debug.Stack()}
			msg := fmt.Sprint(r)
			if len(msg) > 500 {
				msg = msg[:500] + "..."
			}
			if j.process && j.localPEs > 1 {
				// The other PEs of this process may compute for long
				// before they notice (and the launcher ends a failed
				// job's processes): tell now, not when all are back.
				fmt.Fprintf(os.Stderr, "%v\n\n%s", pe, pe.Stack)
				pe.reported = true
			}
			err = pe
			j.panicked.CompareAndSwap(nil, &msg)
			j.fail(job.AbortPanic, p.me, os.Getpid(), 0)
		}
		p.slot.State.Store(job.StateDead)
	}()
	if err := p.start(); err != nil {
		// The job fails as after a PE's panic, recorded as a failed
		// start; RunLocal and Main return the error (PanicError wraps
		// it), and the PEs of this process name it in their JobErrors.
		msg := err.Error()
		j.panicked.CompareAndSwap(nil, &msg)
		j.fail(job.AbortStart, p.me, os.Getpid(), 0)
		panic(err)
	}
	fn(p)
	p.Finalize()
	done = true
}

// RunLocal runs an in-process job of n PEs, each a goroutine with its
// own symmetric heap in a shared segment, and returns when all have
// returned from fn (and implicitly finalized). If a PE panics, the
// others are stopped at their next wait and RunLocal returns a
// *PanicError; if a PE calls GlobalExit, they are stopped the same way
// and RunLocal returns a *GlobalExitError.
func RunLocal(cfg Config, n int, fn func(*PE)) error {
	if n < 1 {
		return fmt.Errorf("goshmem.RunLocal: need at least 1 PE, got %d", n)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	j, err := localJob(cfg, n, nil)
	if err != nil {
		return err
	}
	return runPEs(j, fn)
}

// Main runs fn on every PE this process hosts: the PEs the launcher
// assigned to it (several with oshrun --pes-per-proc), or one PE when
// the program was started on its own. When the job ends by GlobalExit,
// Main does not return: the process exits with the GlobalExit status.
func Main(cfg Config, fn func(*PE)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	j, err := startProcess(cfg)
	if err != nil {
		return err
	}
	return runPEs(j, fn)
}

// Init starts the one PE this process hosts (shmem_init); use Main or
// RunLocal for processes that host several. Call Finalize at the end.
func Init(cfg Config) (*PE, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	j, err := startProcess(cfg)
	if err != nil {
		return nil, err
	}
	if j.localPEs != 1 {
		j.close()
		return nil, fmt.Errorf("goshmem.Init: this process hosts %d PEs (oshrun --pes-per-proc); use goshmem.Main, which runs one goroutine per PE", j.localPEs)
	}
	p := newPE(j, j.firstPE)
	if err := p.start(); err != nil {
		// The other PEs stop at their next wait, as after a panic.
		j.fail(job.AbortStart, p.me, os.Getpid(), 0)
		p.slot.State.Store(job.StateDead)
		j.close()
		return nil, err
	}
	return p, nil
}

// SetThreadLevel records the thread level the program asked for
// (shmem_init_thread). Every level up to ThreadMultiple is provided: no
// routine takes a lock shared between threads.
func (p *PE) SetThreadLevel(l ThreadLevel) ThreadLevel {
	if l < ThreadSingle || l > ThreadMultiple {
		panicf("InitThread: unknown thread level %d; use ThreadSingle (%d), ThreadFunneled, ThreadSerialized or ThreadMultiple (%d)",
			int(l), int(ThreadSingle), int(ThreadMultiple))
	}
	p.thread = l
	return l
}
