// Command oshinfo reports how goshmem is configured on this machine:
// the version, the CPU, the CPU and NUMA topology (as numactl
// --hardware and lstopo show it), the CPUs this process may use, where
// oshrun would place each of N PEs, every SHMEM_* environment variable
// with its value, default and meaning, and the on-node transport a job
// would use and why.
//
//	go run ./cmd/oshinfo
//	go run ./cmd/oshinfo -n 8 --map-by numa --bind-to core
//
// Flags (one or two dashes):
//
//	-n N           show where each of N PEs would run
//	--map-by P     core (default), numa or socket: oshrun's --map-by
//	--bind-to B    none, core, numa, socket, or default (the default):
//	               what oshrun does when --bind-to is not given, which
//	               is core for up to 2 PEs, numa for more, and none
//	               when the PEs outnumber the usable cores
//	--sysfs-root DIR
//	               read the topology from DIR/sys (and the cgroup
//	               cpuset from DIR/proc/self/cgroup and DIR/sys/fs/cgroup)
//	               instead of this machine's: a copy of another
//	               machine's sysfs, or the fake machines of
//	               numa/testdata. The CPUs the PEs may use are then the
//	               online CPUs of DIR's cpuset, not this process's
//	               affinity. The usage message does not list this flag.
//
// The CPU model, features and cache line size are always this
// machine's. oshinfo exits with 2 on a bad flag, 1 when the report has
// an error (a bad SHMEM_* value, which it also writes to stderr and
// with which it probes no transport; a topology --sysfs-root cannot
// give; PEs that cannot be placed), and 0 otherwise.
//
// Started by a cluster's launcher (srun --mpi=pmi2, mpiexec: PMI in
// its environment), oshinfo joins the job as a PE does and rank 0 adds
// a Job section with what the job found: the launcher and PMI version,
// the hosts with their PEs and leaders, where the grouping came from,
// and the transport between hosts:
//
//	srun --mpi=pmi2 -N 2 -n 4 oshinfo
//	mpiexec.hydra -hosts h1,h2 -n 4 oshinfo
//
// SHMEM_INFO=1 makes PE 0 of a job print the version, the knob table
// and the transport lines of this report at start-up.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/pmi"
	"github.com/goshmem/goshmem/node"
	"github.com/goshmem/goshmem/numa"
)

// bindDefault is the --bind-to value for oshrun's default binding.
const bindDefault = "default"

const usage = `usage: oshinfo [-n N] [--map-by core|numa|socket] [--bind-to none|core|numa|socket|default]

Prints the goshmem version and the CPU, the topology (as numactl
--hardware and lstopo show it), the CPUs this process may use, where
oshrun would place N PEs, every SHMEM_* variable and the on-node
transport. Started by srun or mpiexec, it joins the job and rank 0 also
shows the hosts, their leaders, the PMI version and the transport
between hosts.

  -n N                  show where each of N PEs would run
  --map-by core|numa|socket
                        how oshrun would map the PEs (default core)
  --bind-to none|core|numa|socket|default
                        how oshrun would bind them; default (the default)
                        is what oshrun does without --bind-to: core for
                        up to 2 PEs, numa for more, none when the PEs
                        outnumber the usable cores
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed flags.
type options struct {
	n         int
	mapBy     string
	bindTo    string
	sysfsRoot string // "" for this machine
}

// parseFlags parses and checks args. It returns ok false with the exit
// code when oshinfo should stop: 0 after -h, 2 after a usage error
// (with the message written to stderr).
func parseFlags(args []string, stderr io.Writer) (o options, ok bool, code int) {
	fs := flag.NewFlagSet("oshinfo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.n, "n", 0, "show where each of `N` PEs would run")
	fs.StringVar(&o.mapBy, "map-by", numa.MapCore, "core, numa or socket")
	fs.StringVar(&o.bindTo, "bind-to", bindDefault, "none, core, numa, socket or default")
	fs.StringVar(&o.sysfsRoot, "sysfs-root", "", "read the topology from `DIR`/sys")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return o, false, 0
	} else if err != nil {
		return o, false, 2
	}
	bad := func(format string, a ...any) (options, bool, int) {
		fmt.Fprintf(stderr, "oshinfo: "+format+"\n", a...)
		return o, false, 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q; oshinfo takes only flags (see -h)", fs.Arg(0))
	}
	nset := false
	fs.Visit(func(f *flag.Flag) { nset = nset || f.Name == "n" })
	if nset && o.n < 1 {
		return bad("-n %d: give at least 1 PE (or leave -n out for no placement)", o.n)
	}
	if !numa.ValidMap(o.mapBy) {
		return bad("--map-by %q: use %s", o.mapBy, numa.MapNames)
	}
	if o.bindTo != bindDefault && !numa.ValidBind(o.bindTo) {
		return bad("--bind-to %q: use none, core, numa, socket or default", o.bindTo)
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "sysfs-root" })
	if set && o.sysfsRoot == "" {
		return bad("--sysfs-root needs a directory holding a copy of sys (and proc/self/cgroup)")
	}
	return o, true, 0
}

func run(args []string, stdout, stderr io.Writer) int {
	o, ok, code := parseFlags(args, stderr)
	if !ok {
		return code
	}
	if underLauncher(os.Getenv) {
		return runInJob(o, stdout, stderr)
	}
	var b strings.Builder
	code = report(&b, stderr, o)
	io.WriteString(stdout, b.String())
	return code
}

// underLauncher reports whether a cluster launcher (srun, mpiexec)
// started this process with PMI.
func underLauncher(getenv func(string) string) bool {
	return getenv(pmi.EnvFD) != "" || getenv(pmi.EnvPort) != ""
}

// runInJob joins the job the launcher started, as a PE does, so that
// what the job found (hosts, leaders, PMI version, transport between
// hosts) is shown as it is, not guessed: rank 0 writes the whole
// report, the other ranks nothing.
func runInJob(o options, stdout, stderr io.Writer) int {
	cfg, err := goshmem.LoadConfig()
	if err != nil {
		fmt.Fprintf(stderr, "oshinfo: %v\n", err)
		return 1
	}
	code := 0
	err = node.Main(cfg, func(pe *node.PE) {
		if pe.MyPE() != 0 {
			return
		}
		var b strings.Builder
		code = report(&b, stderr, o)
		b.WriteString("\nJob (this oshinfo joined it through PMI)\n")
		fmt.Fprintf(&b, "  %d PEs; this is PE 0\n", pe.NPEs())
		if c := pe.Cluster(); c != nil {
			fmt.Fprintf(&b, "  %s\n", c)
		}
		fmt.Fprintf(&b, "  on-node transport: %s (%s)\n", pe.Transport().Name, pe.Transport().Reason)
		io.WriteString(stdout, b.String())
	})
	if err != nil {
		fmt.Fprintf(stderr, "oshinfo: %v\n", err)
		return 1
	}
	return code
}

// report writes the whole report to w and returns the exit code. An
// invalid SHMEM_* value, with which no job would start, is also written
// to stderr: the report says where it matters (the knob table, the copy
// engine, the transport), and the error says what to do.
func report(w *strings.Builder, stderr io.Writer, o options) int {
	code := 0
	section := func(title string) {
		if w.Len() > 0 {
			w.WriteString("\n")
		}
		w.WriteString("== " + title + "\n")
	}
	// indented writes text, every line indented by two blanks.
	indented := func(text string) {
		for line := range strings.Lines(text) {
			w.WriteString("  " + line)
		}
	}

	section("goshmem")
	fmt.Fprintf(w, "  goshmem %s (OpenSHMEM %s API)\n", goshmem.Version, goshmem.SpecVersion)
	fmt.Fprintf(w, "  Go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	model := numa.CPUModel()
	if model == "" {
		model = "unknown (read from CPUID, on amd64 only)"
	}
	fmt.Fprintf(w, "  CPU: %s\n", model)
	features := "none known"
	if f := numa.CPUFeatures(); len(f) > 0 {
		features = strings.Join(f, " ")
	}
	fmt.Fprintf(w, "  CPU features: %s\n", features)
	fmt.Fprintf(w, "  cache line: %d bytes\n", numa.CacheLineSize())
	if c, err := env.LoadOnly(os.Getenv, env.VarCopyAdapt); err == nil {
		fmt.Fprintf(w, "  copy engine: %s\n", mem.DefaultCopyPlan().Describe(c.CopyAdapt))
	} else {
		// (The error goes to stderr with the whole configuration's below.)
		fmt.Fprintf(w, "  copy engine: unknown: %s is invalid, and no job starts until it is fixed or unset\n", env.VarCopyAdapt)
	}
	fmt.Fprintf(w, "  shared copies: %s\n", shareLine(env.LoadOnly(os.Getenv, env.VarCopyShare, env.VarTaskSteal)))
	if online, possible, err := numa.NumCPUs(); err == nil {
		fmt.Fprintf(w, "  logical CPUs: %d online, %d possible\n", online, possible)
	} else {
		fmt.Fprintf(w, "  logical CPUs: %v\n", err)
	}
	if o.sysfsRoot != "" {
		fmt.Fprintf(w, "  (the CPU, its features, cache line and CPU counts are this machine's; the topology below is read from %s)\n", o.sysfsRoot)
	}

	topo, err := numa.Discover(o.sysfsRoot)
	var usable []int
	if err != nil {
		section("Topology")
		fmt.Fprintf(w, "  cannot read the topology: %v\n", err)
		if o.sysfsRoot != "" {
			code = 1
		}
	} else {
		section("Topology (numactl --hardware)")
		var hw strings.Builder
		topo.WriteHardware(&hw)
		indented(hw.String())
		section("Topology (lstopo)")
		var tree strings.Builder
		topo.WriteTree(&tree)
		indented(tree.String())
		w.WriteString("\n")
		usable = usableCPUs(w, topo, o.sysfsRoot)
	}

	if o.n > 0 {
		if !placement(w, section, topo, usable, o) {
			code = 1
		}
	}

	section("Environment (SHMEM_*)")
	var e strings.Builder
	env.Print(&e, os.Getenv)
	indented(e.String())
	if extra := env.Unrecognized(os.Environ()); len(extra) > 0 {
		fmt.Fprintf(w, "  unknown SHMEM_* variables (typos?): %s\n", strings.Join(extra, ", "))
	}

	section("On-node transport")
	if cfg, err := goshmem.LoadConfig(); err != nil {
		// Not probed: what the probe says depends on the values, and
		// with this one no job would start.
		fmt.Fprintf(w, "  configuration error: %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		fmt.Fprintf(w, "  not probed: no job starts with an invalid SHMEM_* value (marked INVALID above); fix or unset it\n")
		fmt.Fprintf(stderr, "oshinfo: %s\n", strings.ReplaceAll(err.Error(), "\n", "\noshinfo: "))
		code = 1
	} else {
		t, notes := node.Probe(cfg)
		if o.sysfsRoot != "" {
			fmt.Fprintf(w, "  (probed on this machine, not on the --sysfs-root tree above)\n")
		}
		fmt.Fprintf(w, "  on-node transport: %s (%s)\n", t.Name, t.Reason)
		for _, note := range notes {
			fmt.Fprintf(w, "  %s\n", note)
		}
	}

	section("Launcher")
	fmt.Fprintf(w, "  %s\n", node.LauncherInfo(os.Getenv))
	return code
}

// usableCPUs writes which CPUs the PEs may use, and the cgroup cpuset
// when it restricts them, and returns those CPUs: this process's
// affinity within the online CPUs and the cpuset, or, for a topology
// read from sysfsRoot, the online CPUs of its cpuset.
func usableCPUs(w *strings.Builder, topo *numa.Topology, sysfsRoot string) []int {
	var usable []int
	if sysfsRoot != "" {
		usable = topo.Usable(nil)
		fmt.Fprintf(w, "  this process may use %s (as read from %s: the online CPUs, within the cgroup cpuset if any)\n",
			numa.CPUsText(usable), sysfsRoot)
	} else if allowed, err := numa.Allowed(); err != nil {
		usable = topo.Usable(nil)
		fmt.Fprintf(w, "  cannot read this process's affinity (%v); assuming %s\n", err, numa.CPUsText(usable))
	} else {
		usable = topo.Usable(allowed)
		fmt.Fprintf(w, "  this process may use %s\n", numa.CPUsText(usable))
	}
	if len(usable) > 0 {
		fmt.Fprintf(w, "  (%d of the %s, on %s)\n", len(usable), count(len(topo.Online), "online CPU"), count(topo.UsableCores(usable), "core"))
	}
	if topo.Cpuset != nil {
		mems := "all nodes"
		if topo.CpusetMems != nil {
			mems = "nodes " + numa.FormatCPUList(topo.CpusetMems)
			if len(topo.CpusetMems) == 1 {
				mems = "node " + numa.FormatCPUList(topo.CpusetMems)
			}
		}
		fmt.Fprintf(w, "  the cgroup cpuset restricts it to %s, memory on %s\n", numa.CPUsText(topo.Cpuset), mems)
	}
	return usable
}

// placement writes the placement section; false when the PEs cannot be
// placed.
func placement(w *strings.Builder, section func(string), topo *numa.Topology, usable []int, o options) bool {
	bind := o.bindTo
	if bind == bindDefault && topo != nil {
		bind = numa.DefaultBinding(topo, usable, o.n)
	}
	section(fmt.Sprintf("Placement of %s (--map-by %s --bind-to %s)", count(o.n, "PE"), o.mapBy, bind))
	if topo == nil {
		w.WriteString("  cannot place PEs without the topology\n")
		return false
	}
	cores := topo.UsableCores(usable)
	if o.bindTo == bindDefault {
		fmt.Fprintf(w, "  --bind-to %s is oshrun's default for %s on %s (core for up to 2 PEs, numa for more, none when the PEs outnumber the cores)\n",
			bind, count(o.n, "PE"), count(cores, "usable core"))
	}
	places, err := numa.Place(topo, usable, o.n, o.mapBy, bind)
	if err != nil {
		fmt.Fprintf(w, "  cannot place the PEs: %v\n", err)
		return false
	}
	for pe, p := range places {
		fmt.Fprintf(w, "  PE %d: %s %s\n", pe, topo.BindingMap(p.Bind, usable), topo.Describe(p, bind, usable))
	}
	if o.n > cores {
		fmt.Fprintf(w, "  %d PEs outnumber the %s: PEs share cores\n", o.n, count(cores, "usable core"))
	}
	if o.n > len(usable) {
		fmt.Fprintf(w, "  %d PEs share %s: waits spin briefly, then yield and sleep (SHMEM_WAIT_*)\n", o.n, count(len(usable), "CPU"))
	}
	return true
}

// count is "1 core" or "n cores".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// shareLine describes the shared copies (SHMEM_COPY_SHARE) of
// configuration c, or that they are unknown when err says a knob of
// theirs is invalid.
func shareLine(c env.Config, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("unknown: %s or %s is invalid, and no job starts until it is fixed or unset", env.VarCopyShare, env.VarTaskSteal)
	case c.CopyShare == 0:
		return "off (" + env.VarCopyShare + "=off): every put and get is copied by its caller alone"
	case !c.TaskSteal:
		return "off (" + env.VarTaskSteal + "=off): every put and get is copied by its caller alone"
	}
	n := c.CopyShare
	size := fmt.Sprintf("%d bytes", n)
	switch {
	case n%(1<<20) == 0:
		size = fmt.Sprintf("%d MiB", n>>20)
	case n%(1<<10) == 0:
		size = fmt.Sprintf("%d KiB", n>>10)
	}
	return "puts and gets from " + size + " between symmetric buffers are copied together with a PE of the host that waits meanwhile, " +
		"when the host's PEs fit its CPUs; below 4 MiB each PE times shared and lone copies per size and keeps the faster (" + env.VarCopyShare + ")"
}
