package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
)

// The fake machines of numa/testdata.
const (
	smtRoot    = "../../numa/testdata/2socket-smt"
	cpusetRoot = "../../numa/testdata/cpuset"
	snc4Root   = "../../numa/testdata/4numa-socket"
)

// cleanEnv unsets every knob for the test, so that the runner's own
// SHMEM_* settings do not change the output.
func cleanEnv(t *testing.T) {
	for _, k := range env.Knobs() {
		t.Setenv(k.Name, "")
	}
}

func runInfo(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// section returns the body of the report's section "== title": the
// lines after its heading up to the blank line before the next one.
func section(t *testing.T, out, title string) string {
	t.Helper()
	head := "== " + title + "\n"
	i := strings.Index(out, head)
	if i < 0 {
		t.Fatalf("no section %q in:\n%s", title, out)
	}
	body := out[i+len(head):]
	if j := strings.Index(body, "\n== "); j >= 0 {
		body = body[:j+1]
	}
	return strings.TrimSuffix(body, "\n\n") + "\n"
}

// indent indents every line of text by two blanks, as the report does.
func indent(text string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		b.WriteString("  " + line)
	}
	return b.String()
}

func TestRunDefault(t *testing.T) {
	cleanEnv(t)
	code, out, errs := runInfo(t)
	if code != 0 {
		t.Fatalf("run() = %d, stderr %q, stdout:\n%s", code, errs, out)
	}
	if errs != "" {
		t.Errorf("stderr = %q, want empty", errs)
	}
	// The sections come in order.
	titles := []string{"== goshmem\n", "== Topology (numactl --hardware)\n", "== Topology (lstopo)\n", "== Environment (SHMEM_*)\n", "== On-node transport\n"}
	last := -1
	for _, s := range titles {
		i := strings.Index(out, s)
		if i <= last {
			t.Fatalf("section %q missing or out of order:\n%s", s, out)
		}
		last = i
	}

	g := section(t, out, "goshmem")
	online, possible, err := numa.NumCPUs()
	if err != nil {
		t.Fatal(err)
	}
	features := "none known"
	if f := numa.CPUFeatures(); len(f) > 0 {
		features = strings.Join(f, " ")
	}
	for _, want := range []string{
		"  goshmem 0.1.0 (OpenSHMEM 1.5 API)\n",
		fmt.Sprintf("  Go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH),
		"  CPU: ",
		"  CPU features: " + features + "\n",
		fmt.Sprintf("  cache line: %d bytes\n", numa.CacheLineSize()),
		"  copy engine: the built-in copy ",
		fmt.Sprintf("  logical CPUs: %d online, %d possible\n", online, possible),
	} {
		if !strings.Contains(g, want) {
			t.Errorf("goshmem section lacks %q:\n%s", want, g)
		}
	}

	// The topology sections are what package numa renders for this
	// machine.
	topo, err := numa.Discover("")
	if err != nil {
		t.Fatalf("numa.Discover: %v", err)
	}
	var hw, tree strings.Builder
	topo.WriteHardware(&hw)
	topo.WriteTree(&tree)
	hwSec := section(t, out, "Topology (numactl --hardware)")
	nodes := make([]int, len(topo.Nodes))
	for i, n := range topo.Nodes {
		nodes[i] = n.ID
	}
	if want := fmt.Sprintf("  available: %d nodes (%s)\n", len(topo.Nodes), numa.FormatCPUList(nodes)); !strings.HasPrefix(hwSec, want) {
		t.Errorf("numactl section does not start with %q:\n%s", want, hwSec)
	}
	// Sizes and free memory change between two reads: compare the rest.
	free := regexp.MustCompile(`(?m)^( *node \d+ free:) \d+ MB$`)
	if got, want := free.ReplaceAllString(hwSec, "$1"), free.ReplaceAllString(indent(hw.String()), "$1"); got != want {
		t.Errorf("numactl section:\n%s\nwant:\n%s", got, want)
	}
	treeSec := section(t, out, "Topology (lstopo)")
	if !strings.HasPrefix(treeSec, indent(tree.String())+"\n") {
		t.Errorf("lstopo section:\n%s\nwant it to start with:\n%s", treeSec, indent(tree.String()))
	}
	allowed, err := numa.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	usable := topo.Usable(allowed)
	if want := "\n  this process may use CPUs " + numa.FormatCPUList(usable) + "\n"; !strings.Contains(treeSec, want) {
		t.Errorf("lstopo section lacks %q:\n%s", want, treeSec)
	}
	if (topo.Cpuset != nil) != strings.Contains(treeSec, "the cgroup cpuset restricts it to CPUs "+numa.FormatCPUList(topo.Cpuset)) {
		t.Errorf("cpuset %v reported wrongly:\n%s", topo.Cpuset, treeSec)
	}

	// Every knob is listed, with its value.
	envSec := section(t, out, "Environment (SHMEM_*)")
	for _, k := range env.Knobs() {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(k.Name) + ` +=`).MatchString(envSec) {
			t.Errorf("environment section does not list %s:\n%s", k.Name, envSec)
		}
	}
	tr := section(t, out, "On-node transport")
	if !regexp.MustCompile(`(?m)^  on-node transport: (xpmem|cma|none) \(.+\)$`).MatchString(tr) || !strings.Contains(tr, "heap policy: ") {
		t.Errorf("transport section lacks the transport or the heap policy:\n%s", tr)
	}

	// Without -n, no placement.
	if strings.Contains(out, "== Placement") || regexp.MustCompile(`(?m)^  PE \d+:`).MatchString(out) {
		t.Errorf("placement shown without -n:\n%s", out)
	}
	if strings.Contains(out, "configuration error") {
		t.Errorf("configuration error with a clean environment:\n%s", out)
	}
}

// TestRunPlacementHere places PEs on this machine: whatever it is, the
// PE lines are numbered and the default binding is oshrun's.
func TestRunPlacementHere(t *testing.T) {
	cleanEnv(t)
	topo, err := numa.Discover("")
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := numa.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	usable := topo.Usable(allowed)
	pe := regexp.MustCompile(`(?m)^  PE (\d+): (\S+) (.*)$`)
	cases := []struct {
		args []string
		want []string
		pes  int
	}{
		{[]string{"-n", "3"}, []string{fmt.Sprintf("== Placement of 3 PEs (--map-by core --bind-to %s)\n", numa.DefaultBinding(topo, usable, 3)), "is oshrun's default for 3 PEs"}, 3},
		{[]string{"-n", "3", "--bind-to", "none"}, []string{"== Placement of 3 PEs (--map-by core --bind-to none)\n", "PE 2: ", " not bound (may use CPUs " + numa.FormatCPUList(usable) + ")"}, 3},
		{[]string{"-n=1", "-bind-to=core"}, []string{"== Placement of 1 PE (--map-by core --bind-to core)\n", "PE 0: ", " bound to core "}, 1},
		{[]string{"--n", "2", "--map-by", "socket", "--bind-to", "socket"}, []string{"(--map-by socket --bind-to socket)", " bound to socket "}, 2},
		{[]string{"-n", strconv.Itoa(len(usable) + 1)}, []string{fmt.Sprintf("%d PEs share %d CPUs", len(usable)+1, len(usable)), "--bind-to none)"}, len(usable) + 1},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errs := runInfo(t, c.args...)
			if code != 0 {
				t.Fatalf("run(%q) = %d, stderr %q", c.args, code, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			m := pe.FindAllStringSubmatch(out, -1)
			if len(m) != c.pes {
				t.Fatalf("%d PE lines, want %d:\n%s", len(m), c.pes, out)
			}
			for i, l := range m {
				if l[1] != strconv.Itoa(i) {
					t.Errorf("PE line %d is %q", i, l[0])
				}
				if want := topo.BindingMap(nil, usable); len(l[2]) != len(want) {
					t.Errorf("PE line %q: map %q is not shaped like %q", l[0], l[2], want)
				}
			}
			if c.pes > 0 && !strings.Contains(out, "== Environment") {
				t.Error("placement replaced the rest of the report")
			}
		})
	}
}

// TestRunSysfsRoot reads the fake machines and checks the placement
// line by line.
func TestRunSysfsRoot(t *testing.T) {
	cleanEnv(t)
	cases := []struct {
		name      string
		args      []string
		placement string
	}{{
		name: "2socket-smt by socket, bound to cores",
		args: []string{"--sysfs-root", smtRoot, "-n", "4", "--map-by", "socket", "--bind-to", "core"},
		placement: "" +
			"  PE 0: [BB/../../..][../../../..] bound to core 0 (CPUs 0,8) of socket 0, NUMA node 0\n" +
			"  PE 1: [../../../..][BB/../../..] bound to core 0 (CPUs 4,12) of socket 1, NUMA node 1\n" +
			"  PE 2: [../BB/../..][../../../..] bound to core 1 (CPUs 1,9) of socket 0, NUMA node 0\n" +
			"  PE 3: [../../../..][../BB/../..] bound to core 1 (CPUs 5,13) of socket 1, NUMA node 1\n",
	}, {
		name: "2socket-smt by NUMA node, default binding",
		args: []string{"--sysfs-root", smtRoot, "-n", "3", "--map-by", "numa"},
		placement: "" +
			"  --bind-to numa is oshrun's default for 3 PEs on 8 usable cores (core for up to 2 PEs, numa for more, none when the PEs outnumber the cores)\n" +
			"  PE 0: [BB/BB/BB/BB][../../../..] bound to NUMA node 0 (CPUs 0-3,8-11)\n" +
			"  PE 1: [../../../..][BB/BB/BB/BB] bound to NUMA node 1 (CPUs 4-7,12-15)\n" +
			"  PE 2: [BB/BB/BB/BB][../../../..] bound to NUMA node 0 (CPUs 0-3,8-11)\n",
	}, {
		name: "2socket-smt, 2 PEs bind to cores by default",
		args: []string{"--sysfs-root", smtRoot, "-n", "2", "--bind-to", "default"},
		placement: "" +
			"  --bind-to core is oshrun's default for 2 PEs on 8 usable cores (core for up to 2 PEs, numa for more, none when the PEs outnumber the cores)\n" +
			"  PE 0: [BB/../../..][../../../..] bound to core 0 (CPUs 0,8) of socket 0, NUMA node 0\n" +
			"  PE 1: [../BB/../..][../../../..] bound to core 1 (CPUs 1,9) of socket 0, NUMA node 0\n",
	}, {
		name: "2socket-smt, more PEs than cores",
		args: []string{"-n", "9", "--sysfs-root=" + smtRoot},
		placement: "" +
			"  --bind-to none is oshrun's default for 9 PEs on 8 usable cores (core for up to 2 PEs, numa for more, none when the PEs outnumber the cores)\n" +
			"  PE 0: [../../../..][../../../..] not bound (may use CPUs 0-15); home NUMA node 0\n" +
			"  PE 1: [../../../..][../../../..] not bound (may use CPUs 0-15); home NUMA node 0\n" +
			"  PE 2: [../../../..][../../../..] not bound (may use CPUs 0-15); home NUMA node 0\n" +
			"  PE 3: [../../../..][../../../..] not bound (may use CPUs 0-15); home NUMA node 0\n" +
			"  PE 4: [../../../..][../../../..] not bound (may use CPUs 0-15); home NUMA node 1\n" +
			"  PE 5: [../../../..][../../../..] not bound (may use CPUs 0-15); home NUMA node 1\n" +
			"  PE 6: [../../../..][../../../..] not bound (may use CPUs 0-15); home NUMA node 1\n" +
			"  PE 7: [../../../..][../../../..] not bound (may use CPUs 0-15); home NUMA node 1\n" +
			"  PE 8: [../../../..][../../../..] not bound (may use CPUs 0-15); home NUMA node 0\n" +
			"  9 PEs outnumber the 8 usable cores: PEs share cores\n",
	}, {
		name: "2socket-smt, more PEs than CPUs, bound to cores",
		args: []string{"-n", "17", "--sysfs-root", smtRoot, "--bind-to", "core"},
		placement: "" +
			"  PE 0: [BB/../../..][../../../..] bound to core 0 (CPUs 0,8) of socket 0, NUMA node 0\n" +
			"  PE 1: [../BB/../..][../../../..] bound to core 1 (CPUs 1,9) of socket 0, NUMA node 0\n" +
			"  PE 2: [../../BB/..][../../../..] bound to core 2 (CPUs 2,10) of socket 0, NUMA node 0\n" +
			"  PE 3: [../../../BB][../../../..] bound to core 3 (CPUs 3,11) of socket 0, NUMA node 0\n" +
			"  PE 4: [../../../..][BB/../../..] bound to core 0 (CPUs 4,12) of socket 1, NUMA node 1\n" +
			"  PE 5: [../../../..][../BB/../..] bound to core 1 (CPUs 5,13) of socket 1, NUMA node 1\n" +
			"  PE 6: [../../../..][../../BB/..] bound to core 2 (CPUs 6,14) of socket 1, NUMA node 1\n" +
			"  PE 7: [../../../..][../../../BB] bound to core 3 (CPUs 7,15) of socket 1, NUMA node 1\n" +
			"  PE 8: [BB/../../..][../../../..] bound to core 0 (CPUs 0,8) of socket 0, NUMA node 0\n" +
			"  PE 9: [../BB/../..][../../../..] bound to core 1 (CPUs 1,9) of socket 0, NUMA node 0\n" +
			"  PE 10: [../../BB/..][../../../..] bound to core 2 (CPUs 2,10) of socket 0, NUMA node 0\n" +
			"  PE 11: [../../../BB][../../../..] bound to core 3 (CPUs 3,11) of socket 0, NUMA node 0\n" +
			"  PE 12: [../../../..][BB/../../..] bound to core 0 (CPUs 4,12) of socket 1, NUMA node 1\n" +
			"  PE 13: [../../../..][../BB/../..] bound to core 1 (CPUs 5,13) of socket 1, NUMA node 1\n" +
			"  PE 14: [../../../..][../../BB/..] bound to core 2 (CPUs 6,14) of socket 1, NUMA node 1\n" +
			"  PE 15: [../../../..][../../../BB] bound to core 3 (CPUs 7,15) of socket 1, NUMA node 1\n" +
			"  PE 16: [BB/../../..][../../../..] bound to core 0 (CPUs 0,8) of socket 0, NUMA node 0\n" +
			"  17 PEs outnumber the 8 usable cores: PEs share cores\n" +
			"  17 PEs share 16 CPUs: waits spin briefly, then yield and sleep (SHMEM_WAIT_*)\n",
	}, {
		name: "4numa-socket by NUMA node, bound to the socket",
		args: []string{"--sysfs-root", snc4Root, "-n", "2", "--map-by", "numa", "--bind-to", "socket"},
		placement: "" +
			"  PE 0: [B/B/B/B/B/B/B/B/B/B/B/B/B/B/B/B] bound to socket 0 (CPUs 0-15)\n" +
			"  PE 1: [B/B/B/B/B/B/B/B/B/B/B/B/B/B/B/B] bound to socket 0 (CPUs 0-15)\n",
	}, {
		name: "4numa-socket by NUMA node, bound to cores",
		args: []string{"--sysfs-root", snc4Root, "-n", "4", "--map-by", "numa", "--bind-to", "core"},
		placement: "" +
			"  PE 0: [B/././././././././././././././.] bound to core 0 (CPU 0) of socket 0, NUMA node 0\n" +
			"  PE 1: [././././B/././././././././././.] bound to core 4 (CPU 4) of socket 0, NUMA node 1\n" +
			"  PE 2: [././././././././B/././././././.] bound to core 8 (CPU 8) of socket 0, NUMA node 2\n" +
			"  PE 3: [././././././././././././B/././.] bound to core 12 (CPU 12) of socket 0, NUMA node 3\n",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runInfo(t, c.args...)
			if code != 0 || errs != "" {
				t.Fatalf("run(%q) = %d, stderr %q, stdout:\n%s", c.args, code, errs, out)
			}
			var title string
			for line := range strings.Lines(out) {
				if strings.HasPrefix(line, "== Placement of ") {
					title = strings.TrimSuffix(strings.TrimPrefix(line, "== "), "\n")
				}
			}
			if title == "" {
				t.Fatalf("no placement section:\n%s", out)
			}
			if got := section(t, out, title); got != c.placement {
				t.Errorf("%s:\n%s\nwant:\n%s", title, got, c.placement)
			}
		})
	}
}

// TestRunSysfsRootReport checks the rest of the report on a fake
// machine: its topology, and that this process's CPUs play no part.
func TestRunSysfsRootReport(t *testing.T) {
	cleanEnv(t)
	code, out, errs := runInfo(t, "--sysfs-root", smtRoot, "-n", "4", "--map-by", "socket", "--bind-to", "core")
	if code != 0 {
		t.Fatalf("run = %d, stderr %q", code, errs)
	}
	topo, err := numa.Discover(smtRoot)
	if err != nil {
		t.Fatal(err)
	}
	var hw, tree strings.Builder
	topo.WriteHardware(&hw)
	topo.WriteTree(&tree)
	if got := section(t, out, "Topology (numactl --hardware)"); got != indent(hw.String()) {
		t.Errorf("numactl section:\n%s\nwant:\n%s", got, indent(hw.String()))
	}
	wantTree := indent(tree.String()) + "\n" +
		"  this process may use CPUs 0-15 (as read from " + smtRoot + ": the online CPUs, within the cgroup cpuset if any)\n" +
		"  (16 of the 16 online CPUs, on 8 cores)\n"
	if got := section(t, out, "Topology (lstopo)"); got != wantTree {
		t.Errorf("lstopo section:\n%s\nwant:\n%s", got, wantTree)
	}
	for _, want := range []string{
		"  available: 2 nodes (0-1)\n",
		"        L2 L#0 (1024KB) + L1d L#0 (32KB) + L1i L#0 (32KB) + Core L#0\n          PU L#0 (P#0)\n          PU L#1 (P#8)\n",
		"  (the CPU, its features, cache line and CPU counts are this machine's; the topology below is read from " + smtRoot + ")\n",
		"== Placement of 4 PEs (--map-by socket --bind-to core)\n",
		"== Environment (SHMEM_*)\n",
		"== On-node transport\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRunCpuset: on the machine whose cgroup cpuset is socket 1, the
// tree marks socket 0's PUs and the PEs use only socket 1.
func TestRunCpuset(t *testing.T) {
	cleanEnv(t)
	code, out, errs := runInfo(t, "--sysfs-root", cpusetRoot, "-n", "5", "--bind-to", "core")
	if code != 0 {
		t.Fatalf("run = %d, stderr %q", code, errs)
	}
	tree := section(t, out, "Topology (lstopo)")
	for _, want := range []string{
		"    Package L#0\n      NUMANode L#0 (P#0 62GB)\n      Core L#0\n        PU L#0 (P#0, not in cpuset)\n        PU L#1 (P#8, not in cpuset)\n",
		"    Package L#1\n      NUMANode L#1 (P#1 62GB)\n      Core L#4\n        PU L#8 (P#4)\n        PU L#9 (P#12)\n",
		"  this process may use CPUs 4-7,12-15 (as read from " + cpusetRoot + ": the online CPUs, within the cgroup cpuset if any)\n",
		"  (8 of the 16 online CPUs, on 4 cores)\n",
		"  the cgroup cpuset restricts it to CPUs 4-7,12-15, memory on node 1\n",
	} {
		if !strings.Contains(tree, want) {
			t.Errorf("lstopo section lacks %q:\n%s", want, tree)
		}
	}
	if n := strings.Count(tree, ", not in cpuset)"); n != 8 {
		t.Errorf("%d PUs marked not in cpuset, want 8 (socket 0's):\n%s", n, tree)
	}
	want := "" +
		"  PE 0: [--/--/--/--][BB/../../..] bound to core 0 (CPUs 4,12) of socket 1, NUMA node 1\n" +
		"  PE 1: [--/--/--/--][../BB/../..] bound to core 1 (CPUs 5,13) of socket 1, NUMA node 1\n" +
		"  PE 2: [--/--/--/--][../../BB/..] bound to core 2 (CPUs 6,14) of socket 1, NUMA node 1\n" +
		"  PE 3: [--/--/--/--][../../../BB] bound to core 3 (CPUs 7,15) of socket 1, NUMA node 1\n" +
		"  PE 4: [--/--/--/--][BB/../../..] bound to core 0 (CPUs 4,12) of socket 1, NUMA node 1\n" +
		"  5 PEs outnumber the 4 usable cores: PEs share cores\n"
	if got := section(t, out, "Placement of 5 PEs (--map-by core --bind-to core)"); got != want {
		t.Errorf("placement:\n%s\nwant:\n%s", got, want)
	}
}

func TestRunSysfsRootMissing(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir() // no sys in it
	code, out, errs := runInfo(t, "--sysfs-root", dir, "-n", "2")
	if code != 1 {
		t.Errorf("run with an empty --sysfs-root = %d, want 1; stderr %q", code, errs)
	}
	for _, want := range []string{
		"== Topology\n  cannot read the topology: numa: cannot find the CPUs in ",
		"== Placement of 2 PEs (--map-by core --bind-to default)\n  cannot place PEs without the topology\n",
		"== Environment (SHMEM_*)\n", "== On-node transport\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunUsageErrors(t *testing.T) {
	cleanEnv(t)
	cases := []struct {
		args    []string
		wantErr []string
	}{
		{[]string{"--bind-to", "board"}, []string{`oshinfo: --bind-to "board": use none, core, numa, socket or default`}},
		{[]string{"--bind-to", ""}, []string{`--bind-to "": use none, core, numa, socket or default`}},
		{[]string{"-n", "3", "--bind-to", "CORE"}, []string{`--bind-to "CORE"`}},
		{[]string{"--map-by", "slot"}, []string{`oshinfo: --map-by "slot": use core, numa or socket`}},
		{[]string{"-n", "2", "--map-by", "node"}, []string{`--map-by "node": use core, numa or socket`}},
		{[]string{"--sysfs-root", ""}, []string{"--sysfs-root needs a directory"}},
		{[]string{"-n", "2", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"-bogus"}, []string{"flag provided but not defined: -bogus", "usage: oshinfo"}},
		{[]string{"-n", "three"}, []string{"invalid value", "usage: oshinfo"}},
		{[]string{"-n", "0"}, []string{"oshinfo: -n 0: give at least 1 PE"}},
		{[]string{"-n", "-3"}, []string{"oshinfo: -n -3: give at least 1 PE"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errs := runInfo(t, c.args...)
			if code != 2 {
				t.Errorf("run(%q) = %d, want 2", c.args, code)
			}
			if out != "" {
				t.Errorf("a usage error printed a report:\n%s", out)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
		})
	}
}

// TestUsageHidesSysfsRoot: the usage message leaves --sysfs-root out;
// the package documentation describes it.
func TestUsageHidesSysfsRoot(t *testing.T) {
	code, out, errs := runInfo(t, "-h")
	if code != 0 || out != "" {
		t.Errorf("-h: code %d, stdout %q; want 0 and the usage on stderr", code, out)
	}
	for _, want := range []string{"usage: oshinfo", "--map-by core|numa|socket", "--bind-to none|core|numa|socket|default"} {
		if !strings.Contains(errs, want) {
			t.Errorf("usage lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "sysfs") {
		t.Errorf("usage mentions --sysfs-root:\n%s", errs)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(src), "package main")
	if !strings.Contains(doc, "--sysfs-root DIR") {
		t.Error("the package documentation does not describe --sysfs-root DIR")
	}
}

// TestRunWaitFence: the transport section says which doorbell contract
// a job's waits would use here: the membarrier fence (where the kernel
// has it) by default, atomic exchanges with SHMEM_WAIT_FENCE=off.
func TestRunWaitFence(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"", "  waits: "},
		{"off", "  waits: SHMEM_WAIT_FENCE=off: flags are atomic exchanges"},
	} {
		t.Run("fence="+tc.value, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("SHMEM_WAIT_FENCE", tc.value)
			code, out, errs := runInfo(t)
			if code != 0 {
				t.Fatalf("run() = %d; stderr %q", code, errs)
			}
			tr := section(t, out, "On-node transport")
			if !strings.Contains(tr, tc.want) {
				t.Errorf("transport section lacks %q:\n%s", tc.want, tr)
			}
			if tc.value == "" && sys.MembarrierRegister() == nil && !strings.Contains(tr, "waits: membarrier fence available") {
				t.Errorf("this kernel has membarrier, but the transport section says:\n%s", tr)
			}
		})
	}
}

func TestRunBadEnvironment(t *testing.T) {
	cleanEnv(t)
	t.Setenv("SHMEM_SYMMETRIC_SIZE", "12x")
	code, out, errs := runInfo(t)
	if code != 1 {
		t.Fatalf("run() with SHMEM_SYMMETRIC_SIZE=12x = %d, want 1; stderr %q", code, errs)
	}
	for _, w := range []string{
		"configuration error",
		`SHMEM_SYMMETRIC_SIZE="12x"`,
		`unknown suffix "x"`,
		"== On-node transport", // the report is still complete
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	// The environment section shows the bad value as given.
	if !regexp.MustCompile(`SHMEM_SYMMETRIC_SIZE +=? *12x`).MatchString(out) {
		t.Errorf("environment section does not show the value 12x:\n%s", out)
	}
	// The error goes to stderr too, and the transport is not probed
	// with a configuration no job would start with (it printed "heap
	// policy: not probed ... Config.HeapSize = 0", an error of a zero
	// Config rather than of the bad knob).
	if !strings.HasPrefix(errs, "oshinfo: ") || !strings.Contains(errs, `SHMEM_SYMMETRIC_SIZE="12x"`) {
		t.Errorf("stderr does not give the bad knob's error: %q", errs)
	}
	tr := section(t, out, "On-node transport")
	if !strings.Contains(tr, "not probed: no job starts with an invalid SHMEM_* value") {
		t.Errorf("the transport section does not say it was not probed because of the bad value:\n%s", tr)
	}
	for _, bad := range []string{"HeapSize = 0", "heap policy:", "on-node transport:"} {
		if strings.Contains(tr, bad) {
			t.Errorf("the transport section says %q for an invalid configuration:\n%s", bad, tr)
		}
	}
}

// TestRunBadCopyAdapt: an invalid SHMEM_COPY_ADAPT is not described as
// the default (adaptive) copy engine: the line says the knob is
// invalid, the error goes to stderr, and oshinfo exits 1.
func TestRunBadCopyAdapt(t *testing.T) {
	cleanEnv(t)
	t.Setenv("SHMEM_COPY_ADAPT", "maybe")
	code, out, errs := runInfo(t)
	if code != 1 {
		t.Fatalf("run() with SHMEM_COPY_ADAPT=maybe = %d, want 1; stderr %q", code, errs)
	}
	line := regexp.MustCompile(`(?m)^  copy engine: .*$`).FindString(out)
	if want := "copy engine: unknown: SHMEM_COPY_ADAPT is invalid"; !strings.Contains(line, want) {
		t.Errorf("copy engine line %q, want it to say %q", line, want)
	}
	if strings.Contains(line, "by timing") {
		t.Errorf("copy engine line %q describes the adaptive engine of a valid SHMEM_COPY_ADAPT", line)
	}
	if !strings.Contains(errs, `SHMEM_COPY_ADAPT="maybe"`) {
		t.Errorf("stderr does not give SHMEM_COPY_ADAPT's error: %q", errs)
	}
	// A valid value still gives the engine it chooses.
	t.Setenv("SHMEM_COPY_ADAPT", "0")
	if code, out, errs := runInfo(t); code != 0 || !strings.Contains(out, "  copy engine: the built-in copy ") {
		t.Errorf("run() with SHMEM_COPY_ADAPT=0 = %d (stderr %q), want 0 and the engine described:\n%s", code, errs, out)
	}
}

func TestRunUnknownVariable(t *testing.T) {
	cleanEnv(t)
	t.Setenv("SHMEM_SYMETRIC_SIZE", "1g") // misspelled
	code, out, _ := runInfo(t)
	if code != 0 {
		t.Fatalf("run() = %d, want 0", code)
	}
	if !strings.Contains(out, "unknown SHMEM_* variables (typos?): SHMEM_SYMETRIC_SIZE") {
		t.Errorf("the misspelled variable is not reported:\n%s", out)
	}
}

// TestMain lets the test binary run as oshinfo itself (for the
// launcher test below).
func TestMain(m *testing.M) {
	if os.Getenv("GOSHMEM_TEST_OSHINFO") == "1" {
		os.Exit(run(nil, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestRunUnderHydra: oshinfo started by MPICH's mpiexec on two hosts
// (SHMEM_HOST groups of 1 and 2 ranks) joins the job, and rank 0 alone
// reports what the job found: the launcher and PMI version, both hosts
// with their PEs and leaders, and the transport between them.
func TestRunUnderHydra(t *testing.T) {
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("MPICH's mpiexec.hydra is not installed (apt-get install mpich): oshinfo under a launcher is not tested here")
	}
	args := []string{"-n", "1", "-env", "SHMEM_HOST", "h0", os.Args[0], ":", "-n", "2", "-env", "SHMEM_HOST", "h1", os.Args[0]}
	cmd := exec.Command(hydra, args...)
	cmd.Env = append(os.Environ(), "GOSHMEM_TEST_OSHINFO=1", "SHMEM_SYMMETRIC_SIZE=8m")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpiexec.hydra %v: %v\n%s", args, err, out)
	}
	for _, want := range []string{
		"Job (this oshinfo joined it through PMI)",
		"3 PEs; this is PE 0",
		"launcher hydra over PMI-",
		"2 host(s) from SHMEM_HOST: h0 (1 PEs, leader PE 0), h1 (2 PEs, leader PE 1)",
		"between hosts: the leaders over tcp",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the report does not say %q:\n%s", want, out)
		}
	}
	if n := strings.Count(string(out), "Job (this oshinfo joined"); n != 1 {
		t.Errorf("%d ranks wrote the report, want rank 0 alone", n)
	}
}

// TestRunSharedCopies: the shared copies line follows SHMEM_COPY_SHARE
// and SHMEM_TASK_STEAL: the size from which copies are shared, off
// with either knob off, unknown (and exit 1) with an invalid value.
func TestRunSharedCopies(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
		code int
	}{
		{nil, "shared copies: puts and gets from 64 KiB between symmetric buffers", 0},
		{map[string]string{"SHMEM_COPY_SHARE": "1m"}, "shared copies: puts and gets from 1 MiB ", 0},
		{map[string]string{"SHMEM_COPY_SHARE": "off"}, "shared copies: off (SHMEM_COPY_SHARE=off)", 0},
		{map[string]string{"SHMEM_TASK_STEAL": "0"}, "shared copies: off (SHMEM_TASK_STEAL=off)", 0},
		{map[string]string{"SHMEM_COPY_SHARE": "12"}, "shared copies: unknown: SHMEM_COPY_SHARE or SHMEM_TASK_STEAL is invalid", 1},
	} {
		t.Run(fmt.Sprint(tc.env), func(t *testing.T) {
			cleanEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, out, errs := runInfo(t)
			line := regexp.MustCompile(`(?m)^  shared copies: .*$`).FindString(out)
			if code != tc.code || !strings.Contains(line, tc.want) {
				t.Errorf("code %d, line %q; want %d and %q (stderr %q)", code, line, tc.code, tc.want, errs)
			}
		})
	}
}
