package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/bench/internal/copyref"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

// output returns a program's output as the goshmem programs (peer
// false) or the C peers (peer true) print it: one table whose rows are
// the keys and values.
func output(peerSide bool, title, key, metric string, rows []point, comments ...string) string {
	var b strings.Builder
	t := osu.Title(title)
	if peerSide {
		t = strings.Replace(t, "goshmem", "oshmem", 1)
	}
	b.WriteString(t + "\n")
	b.WriteString(osu.Info(2, 1000, 100) + "\n")
	b.WriteString(osu.FormatHeader(key, metric) + "\n")
	for _, r := range rows {
		b.WriteString(osu.FormatRow(r.Key, r.Value) + "\n")
	}
	for _, c := range comments {
		b.WriteString("# " + c + "\n")
	}
	return b.String()
}

func specByName(t *testing.T, name string) *spec {
	t.Helper()
	for _, s := range specs {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no spec %q", name)
	return nil
}

// feed parses one output per round for a side and adds it to r: outs[i]
// is round i+1's.
func feed(t *testing.T, r *result, sd side, outs ...string) {
	t.Helper()
	for i, o := range outs {
		pts, err := r.Spec.parse(o)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", r.Spec.Name, sd, err, o)
		}
		r.add(sd, i+1, pts)
	}
}

// latencyResult builds a result of a sized latency benchmark with the
// given 8 B figures per round.
func latencyResult(t *testing.T, name string, g, p []float64) *result {
	t.Helper()
	s := specByName(t, name)
	r := newResult(s, s.Quick)
	for i, sd := range []side{gosh, peer} {
		var outs []string
		for _, v := range [][]float64{g, p}[i] {
			outs = append(outs, output(sd == peer, s.Title, osu.Size, osu.LatencyUs,
				[]point{{"4", v}, {"8", v}, {"16", v * 1.1}}))
		}
		feed(t, r, sd, outs...)
	}
	return r
}

func TestAgg(t *testing.T) {
	cases := []struct {
		v                []float64
		med, min, max    float64
		bestLow, bestHig float64
	}{
		{[]float64{3}, 3, 3, 3, 3, 3},
		{[]float64{3, 1, 2}, 2, 1, 3, 1, 3},
		{[]float64{4, 1, 2, 10}, 3, 1, 10, 1, 10},
	}
	for _, c := range cases {
		a := agg{Values: c.v}
		if a.median() != c.med || a.min() != c.min || a.max() != c.max || a.best(true) != c.bestLow || a.best(false) != c.bestHig {
			t.Errorf("%v: median %v min %v max %v best %v/%v", c.v, a.median(), a.min(), a.max(), a.best(true), a.best(false))
		}
	}
	if !math.IsNaN((agg{}).median()) || (agg{}).ok() {
		t.Errorf("empty agg: median %v, ok %v", (agg{}).median(), (agg{}).ok())
	}
	if fmtNum(0.02) != "0.02" || fmtNum(0.2230) != "0.223" || fmtNum(0.0087) != "0.0087" || fmtNum(12.345) != "12.35" || fmtNum(98765.4) != "98765" {
		t.Errorf("fmtNum: %s %s %s %s %s", fmtNum(0.02), fmtNum(0.2230), fmtNum(0.0087), fmtNum(12.345), fmtNum(98765.4))
	}
}

func TestParsePeerTitle(t *testing.T) {
	s := specByName(t, "put")
	out := output(true, "Put", osu.Size, osu.LatencyUs, []point{{"8", 0.05}})
	if !strings.HasPrefix(out, "# OSU-style oshmem Put Test\n") {
		t.Fatalf("the test's peer output starts %q", out[:30])
	}
	pts, err := s.parse(out)
	if err != nil || len(pts) != 1 || pts[0] != (point{"8", 0.05}) {
		t.Fatalf("parse(peer output) = %v, %v", pts, err)
	}
	if _, err := specByName(t, "get").parse(out); err == nil {
		t.Errorf("the get spec accepted a Put output")
	}
	// ptr's figures come from its comment.
	ptr := specByName(t, "ptr")
	out = output(false, "Ptr", osu.Operation, osu.LatencyUs, []point{{"ptr_store", 0}, {"put", 0.01}, {"local_store", 0}},
		"ns per store: ptr_store 1.87  put 6.70  local_store 1.75  ptr_store/local_store 1.07")
	pts, err = ptr.parse(out)
	want := []point{{"ptr_store", 1.87}, {"put", 6.70}, {"local_store", 1.75}, {ptrRatio, 1.07}}
	if err != nil || !slices.Equal(pts, want) {
		t.Errorf("ptr parse = %v, %v; want %v", pts, err, want)
	}
}

func TestParseLimits(t *testing.T) {
	out := `# goshmem machine limits: handoff
# warning: both sides run on CPU 0, so cross-core figures measure the scheduler, not the caches
# cpus 0 (this process) and 1 (second process); one-way = round trip / 2
# blocks ranged (us): same_line 0.0948-0.1000, separate_lines 0.2178-0.2257
# Layout        Latency (us)
same_line                 0.0992
separate_lines            0.2230

# goshmem machine limits: memcpy
# Size          Bandwidth (MB/s)
1                         343.24
4194304                  9947.70
`
	ts, err := parseLimits(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Test != "handoff" || ts[1].Test != "memcpy" {
		t.Fatalf("tables %+v", ts)
	}
	h := ts[0]
	if !slices.Equal(h.Columns, []string{"Layout", "Latency (us)"}) || len(h.Warnings) != 1 || len(h.Notes) != 2 {
		t.Errorf("handoff: columns %q, warnings %q, notes %q", h.Columns, h.Warnings, h.Notes)
	}
	l := limits{"handoff": ts[0], "memcpy": ts[1]}
	if v, ok := l.value(limHandoff, sepLines); !ok || v != 0.2230 {
		t.Errorf("separate_lines = %v, %v", v, ok)
	}
	if v, ok := l.value(limMemcpy, "4194304"); !ok || v != 9947.70 {
		t.Errorf("memcpy 4 MiB = %v, %v", v, ok)
	}
	tcp := "# goshmem machine limits: tcp\n# to 192.0.2.2:7777\n# Size          Latency (us) / Bandwidth (MB/s)\n8 latency                  28.34\n8 bandwidth                 2.62\n"
	if ts, err := parseLimits(tcp); err != nil || len(ts) != 1 || len(ts[0].Rows) != 2 || ts[0].Rows[0] != (point{"8 latency", 28.34}) || ts[0].Rows[1] != (point{"8 bandwidth", 2.62}) {
		t.Errorf("parseLimits(limits tcp's output) = %+v, %v; want rows 8 latency 28.34, 8 bandwidth 2.62", ts, err)
	}
	for _, bad := range []string{"", "1  2\n", "# goshmem machine limits: x\n# Size  MB/s\n1 2 3\n", "# goshmem machine limits: x\n# Size  MB/s\n"} {
		if _, err := parseLimits(bad); err == nil {
			t.Errorf("parseLimits(%q) accepted it", bad)
		}
	}
}

// findTarget returns the target whose name starts with prefix.
func findTarget(t *testing.T, ts []target, prefix string) target {
	t.Helper()
	for _, x := range ts {
		if strings.HasPrefix(x.Name, prefix) {
			return x
		}
	}
	t.Fatalf("no target %q", prefix)
	return target{}
}

func TestLatencyTargets(t *testing.T) {
	cases := []struct {
		name   string
		g, p   []float64
		status string
		ratio  float64
		cause  string // substring; "" when none
	}{
		{"clear pass", []float64{0.02, 0.02, 0.03}, []float64{0.05, 0.06, 0.05}, statusPass, 0.4, ""},
		{"clear miss", []float64{0.90, 0.91, 0.89}, []float64{1.0, 1.0, 1.0}, statusMiss, 0.9, causeUnknown},
		{"miss within rounding", []float64{0.003, 0.003, 0.003}, []float64{0.004, 0.004, 0.004}, statusMiss, 0.75, "resolution"},
		{"miss within noise", []float64{1.0, 0.5, 1.0}, []float64{1.0, 1.0, 1.0}, statusMiss, 1.0, "noise"},
		{"pass at the threshold", []float64{7.0}, []float64{10.0}, statusPass, 0.7, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := latencyResult(t, "put", c.g, c.p)
			ts := evaluation{Results: map[string]*result{"put": r}, Limits: limits{}, NP: 2, Peer: true}.targets()
			x := findTarget(t, ts, "put latency, 8 B")
			if x.Status != c.status || math.Abs(x.Ratio-c.ratio) > 1e-9 {
				t.Fatalf("status %s ratio %v; want %s %v (%+v)", x.Status, x.Ratio, c.status, c.ratio, x)
			}
			if c.cause == "" && x.Cause != "" || !strings.Contains(x.Cause, c.cause) {
				t.Errorf("cause %q, want %q", x.Cause, c.cause)
			}
			// Targets of benchmarks that did not run are n/a, not misses.
			if g := findTarget(t, ts, "get latency"); g.Status != statusNA || !strings.Contains(g.Why, "not run") {
				t.Errorf("get target %+v", g)
			}
		})
	}
	// Without the peer, the peer targets are n/a.
	r := latencyResult(t, "put", []float64{0.02}, nil)
	ts := evaluation{Results: map[string]*result{"put": r}, Limits: limits{}, NP: 2, PeerWhy: "-peer=false"}.targets()
	if x := findTarget(t, ts, "put latency"); x.Status != statusNA || !strings.Contains(x.Why, "peer skipped: -peer=false") {
		t.Errorf("no peer: %+v", x)
	}
}

func TestOtherTargets(t *testing.T) {
	hand := &limitTable{Test: limHandoff, Rows: []point{{sameLine, 0.3}, {sepLines, 0.25}, {handoffMin, 0.2}}}
	memcpy := &limitTable{Test: limMemcpy, Rows: []point{{"4194304", 9500}, {"8388608", 9000}, {"16777216", 5500}}}
	lim := limits{limHandoff: hand, limMemcpy: memcpy}

	pp := latencyResult(t, "put_pingpong", []float64{0.25, 0.24, 0.26}, []float64{0.40, 0.41, 0.39})
	bwRes := func(name string, g, p []float64) *result {
		s := specByName(t, name)
		r := newResult(s, s.Full)
		sizes := []string{"1", "4194304", "8388608", "16777216"}
		for i, sd := range []side{gosh, peer} {
			var rows []point
			for j, k := range sizes {
				v := 100.0
				if j > 0 {
					v = [][]float64{g, p}[i][j-1]
				}
				rows = append(rows, point{k, v})
			}
			feed(t, r, sd, output(sd == peer, s.Title, osu.Size, osu.BandwidthMBs, rows))
		}
		return r
	}
	barrier := func(g, p float64) *result {
		s := specByName(t, "barrier")
		r := newResult(s, s.Full)
		feed(t, r, gosh, output(false, "Barrier", osu.PEs, osu.LatencyUs, []point{{"2", g}}))
		feed(t, r, peer, output(true, "Barrier", osu.PEs, osu.LatencyUs, []point{{"2", p}}))
		return r
	}
	ptr := func(ratio float64) *result {
		s := specByName(t, "ptr")
		r := newResult(s, s.Full)
		c := "ns per store: ptr_store 1.90  put 6.70  local_store 1.75  ptr_store/local_store " + strconv.FormatFloat(ratio, 'f', 2, 64)
		feed(t, r, gosh, output(false, "Ptr", osu.Operation, osu.LatencyUs, []point{{"put", 0.01}}, c))
		return r
	}
	ev := evaluation{Limits: lim, NP: 2, Peer: true, Results: map[string]*result{
		"put_pingpong": pp,
		"put_bw":       bwRes("put_bw", []float64{9000, 9500, 5000}, []float64{9000, 9000, 5000}),
		"get_bw":       bwRes("get_bw", []float64{9000, 9000, 4000}, []float64{9000, 9000, 5000}),
		"barrier":      barrier(0.50, 0.64),
		"ptr":          ptr(1.07),
	}}
	want := []struct {
		prefix string
		status string
		ratio  float64
	}{
		{"put ping-pong one-way, 8 B, vs peer", statusPass, 0.25 / 0.40},
		{"put ping-pong one-way, 8 B, vs cache-line", statusPass, 0.25 / 0.2},
		{"put bandwidth, 64 KiB-64 MiB, vs peer", statusPass, 1.0},
		{"put bandwidth, 64 KiB-64 MiB, vs best copy", statusMiss, 5000.0 / 5500},
		{"get bandwidth, 64 KiB-64 MiB, vs peer", statusMiss, 0.8},
		{"get bandwidth, 64 KiB-64 MiB, vs best copy", statusMiss, 4000.0 / 5500},
		{"barrier latency, 2 PEs, vs peer", statusMiss, 0.50 / 0.64},
		{"ptr:", statusPass, 1.07},
	}
	ts := ev.targets()
	for _, w := range want {
		x := findTarget(t, ts, w.prefix)
		if x.Status != w.status || math.Abs(x.Ratio-w.ratio) > 1e-9 {
			t.Errorf("%s: %s %v; want %s %v (%+v)", w.prefix, x.Status, x.Ratio, w.status, w.ratio, x)
		}
		if x.Status == statusMiss && x.Cause == "" {
			t.Errorf("%s: a miss without a cause line", w.prefix)
		}
	}
	if x := findTarget(t, ts, "get bandwidth, 64 KiB-64 MiB, vs peer"); !strings.Contains(x.Figures, "worst at 16 MiB") {
		t.Errorf("bandwidth figures %q", x.Figures)
	}
	ev.Results["ptr"] = ptr(1.5)
	if x := findTarget(t, ev.targets(), "ptr:"); x.Status != statusMiss {
		t.Errorf("ptr 1.5: %+v", x)
	}
	// Sizes below 64 KiB only: no bandwidth target can be judged.
	s := specByName(t, "put_bw")
	q := newResult(s, s.Quick)
	feed(t, q, gosh, output(false, s.Title, osu.Size, osu.BandwidthMBs, []point{{"32768", 30000}}))
	ev.Results["put_bw"] = q
	if x := findTarget(t, ev.targets(), "put bandwidth, 64 KiB-64 MiB, vs best copy"); x.Status != statusNA || !strings.Contains(x.Why, "the largest was 32 KiB") {
		t.Errorf("quick bandwidth: %+v", x)
	}
}

// sampleReport is a report with synthetic figures.
func sampleReport(t *testing.T) *report {
	put := latencyResult(t, "put", []float64{0.02, 0.02, 0.03}, []float64{0.05, 0.06, 0.05})
	pp := latencyResult(t, "put_pingpong", []float64{0.30, 0.31, 0.29}, []float64{0.31, 0.30, 0.32})
	pp.Fails[peer] = []string{"round 3: exit status 1: oshrun | something"}
	pp.Runs = [2]int{3, 4}
	lim := limits{limHandoff: {Test: limHandoff, Args: []string{"handoff"}, Columns: []string{"Layout", "Latency (us)"},
		Notes: []string{"cpus 0 and 1"}, Rows: []point{{sameLine, 0.0992}, {sepLines, 0.2230}, {handoffMin, 0.2230}}}}
	rep := &report{
		Date: time.Date(2025, 11, 21, 17, 50, 0, 0, time.UTC), Elapsed: 3 * time.Minute,
		Command: "go run ./bench/compare", Rounds: 3, NP: 2,
		Machine:   machine{CPU: "Test CPU", CPUs: 2, Kernel: "Linux 6.18", Go: "go1.26"},
		LoadStart: 0.5, LoadEnd: 3.5,
		GoshCmd: "oshrun -n 2 --bind-to core PROG ARGS",
		Peer: peerInfo{Enabled: true, Version: "Open MPI v4.1.4", UCX: "1.13.1", Components: "spml ucx", Oshrun: "/usr/bin/oshrun",
			Build: "`oshcc -O2 -Wall -Wextra` (bench/peer/build.sh)"},
		PeerCmd:    "NP=2 bench/peer/run.sh NAME ARGS",
		PeerExpand: "/usr/bin/oshrun -np 2 --bind-to core --allow-run-as-root -x SHMEM_SYMMETRIC_HEAP_SIZE=256M -x OMPI_MCA_osc=^rdma PROG ARGS",
		Specs:      []*spec{put.Spec, pp.Spec},
		Results:    map[string]*result{"put": put, "put_pingpong": pp},
		Limits:     lim, LimitOrder: []string{limHandoff},
		Plots:  map[string]string{"put": "2025-11-21/put.png"},
		RawLog: "2025-11-21/raw.txt",
	}
	ev := evaluation{Results: rep.Results, Limits: lim, NP: 2, Peer: true}
	rep.Targets = ev.targets()
	rep.LimitChecked, rep.LimitFails = ev.limitChecks()
	return rep
}

func TestWriteReport(t *testing.T) {
	rep := sampleReport(t)
	var b bytes.Buffer
	if err := writeReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"# goshmem vs Open MPI's OpenSHMEM: 2025-11-21\n",
		"| machine | Test CPU, 2 CPUs, Linux 6.18 |",
		"| load average (1 min) | 0.50 at the start, 3.50 at the end (other work shared the 2 CPUs: expect noise) |",
		"| Go | go1.26 |",
		"| rounds | 3; each round measures the hand-off limit, then runs every benchmark goshmem then the peer (an adjacent pair)",
		"| peer | Open MPI v4.1.4 (OSHMEM components built: spml ucx), UCX 1.13.1; bench/peer/&lt;name&gt;.c built with `oshcc -O2 -Wall -Wextra`",
		"-x SHMEM_SYMMETRIC_HEAP_SIZE=256M -x OMPI_MCA_osc=^rdma",
		"| goshmem | `oshrun -n 2 --bind-to core PROG ARGS`",
		"## Targets\n",
		"| put latency, 8 B, vs peer | 0.40 | 0.33-0.60 (3 rounds) | <= 0.70 | **PASS** | goshmem 0.02 us, peer 0.05 us |",
		"| put ping-pong one-way, 8 B, vs peer | 0.97 | 0.91-1.03 (3 rounds) | <= 0.75 | **MISS** |",
		"| put ping-pong one-way, 8 B, vs cache-line hand-off | 1.35 | 1.30-1.39 (3 rounds) | <= 1.30 | **MISS** | goshmem 0.30 us, hand-off 0.223 us |",
		"| get latency, 8 B, vs peer | - | - | <= 0.70 | n/a | get was not run (-only) |",
		"- put ping-pong one-way, 8 B, vs peer: 0.97 (wanted <= 0.75). cause: " + causeUnknown,
		"| reduce latency, 8 B, vs peer | - | - | <= 0.50 | n/a | reduce was not run (-only) |",
		"| broadcast bandwidth, 1 MiB, vs memcpy (size / latency) | - | - | >= 0.90 | n/a | broadcast was not run (-only) |",
		"| barrier latency, 8 goroutine PEs, vs 5 us | - | - | <= 1.00 | n/a | no run at 8 goroutine PEs in one process (-pes) |",
		"## Limit check\n\nPASS: none of the 3 goshmem figures with a machine limit beats it",
		"### put: latency (us), lower is better\n",
		"![put](2025-11-21/put.png)",
		"| Size | goshmem (us) | peer (us) | goshmem/peer (median pairwise) | goshmem range | peer range |",
		"| 8 B | 0.02 | 0.05 | 0.40 | 0.02-0.03 | 0.05-0.06 |",
		"| Size | goshmem (us) | peer (us) | goshmem/peer (median pairwise) | limit (us) | goshmem/limit | goshmem range | peer range |",
		"| 8 B | 0.30 | 0.31 | 0.97 | 0.223 (hand-off) | 1.35 | 0.29-0.31 | 0.30-0.32 |",
		"| 16 B | 0.33 | 0.341 | 0.97 | 0.223 (hand-off) | 1.48 |",
		"peer failed in 1 of 4 runs:\n\n- round 3: exit status 1: oshrun \\| something\n",
		"## Machine limits\n",
		"| separate_lines | 0.223 |",
		"[2025-11-21/raw.txt](2025-11-21/raw.txt)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "Collectives (broadcast") {
		t.Errorf("the report explains collectives that were not run")
	}
	if t.Failed() {
		t.Logf("report:\n%s", md)
	}
	// Without the peer the report says why.
	rep.Peer = peerInfo{Skipped: "Open MPI not installed: no oshcc in PATH (" + installHint + ")"}
	b.Reset()
	if err := writeReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| peer | skipped: Open MPI not installed: no oshcc in PATH (apt-get install -y openmpi-bin libopenmpi-dev) |") {
		t.Errorf("goshmem-only report does not say why:\n%s", b.String())
	}
}

func TestPlotPNG(t *testing.T) {
	rep := sampleReport(t)
	dir := t.TempDir()
	for _, name := range []string{"put", "put_pingpong"} {
		c, ok := chartFor(rep.Results[name], rep.Limits, 2)
		if !ok {
			t.Fatalf("%s: no chart", name)
		}
		path := filepath.Join(dir, name+".png")
		if err := c.save(path); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
			t.Errorf("%s: %v", path, b)
		}
	}
	// A bandwidth chart with a memcpy line; zero figures are left out of log axes.
	s := specByName(t, "put_bw")
	r := newResult(s, s.Quick)
	feed(t, r, gosh, output(false, s.Title, osu.Size, osu.BandwidthMBs, []point{{"1", 0}, {"2", 100}, {"4", 200}}))
	lim := limits{limMemcpy: {Rows: []point{{"1", 300}, {"2", 600}, {"4", 900}}}}
	c, _ := chartFor(r, lim, 2)
	if len(c.Lines) != 3 || !c.Lines[2].Limit {
		t.Errorf("bandwidth chart lines %+v", c.Lines)
	}
	if err := c.save(filepath.Join(dir, "bw.png")); err != nil {
		t.Fatal(err)
	}
	if err := (chart{Title: "empty", LogY: true, Lines: []series{{Name: "x"}}}).save(filepath.Join(dir, "e.png")); err == nil {
		t.Errorf("an empty chart was saved")
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, total: 3}
	p.step("put round %d/%d (%s)", 1, 2, gosh)
	p.msg("peer skipped: x")
	p.step("done")
	p.done()
	if got, want := b.String(), "[1/3] put round 1/2 (goshmem)\npeer skipped: x\n[2/3] done\n"; got != want {
		t.Errorf("plain progress %q, want %q", got, want)
	}
	b.Reset()
	p = &progress{w: &b, total: 18, tty: true}
	p.step("put round 2/3 (peer)")
	p.msg("oops")
	p.step("next")
	p.done()
	if got, want := b.String(), "\r\033[K[1/18] put round 2/3 (peer)\r\033[Koops\n\r\033[K[2/18] next\r\033[K"; got != want {
		t.Errorf("terminal progress %q, want %q", got, want)
	}
}

func TestFlags(t *testing.T) {
	var errb bytes.Buffer
	c, err := parseFlags([]string{"-quick", "-rounds", "1", "-only", "put,barrier", "-peer=false"}, &errb)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.specs {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"put", "barrier"}) || c.Peer || !c.Quick || c.Rounds != 1 || c.NP != 2 || c.Timeout != 3*time.Minute || c.Strict {
		t.Errorf("config %+v, specs %q", c, names)
	}
	if !slices.Equal(c.Cfgs, []peCfg{{2, 1}, {4, 1}, {8, 1}, {8, 8}}) {
		t.Errorf("default PE configurations %v", c.Cfgs)
	}
	// -np N runs N PEs only; -pes picks the configurations.
	if c, err := parseFlags([]string{"-np", "4"}, &errb); err != nil || !slices.Equal(c.Cfgs, []peCfg{{4, 1}}) || c.NP != 4 {
		t.Errorf("-np 4: %+v, %v", c, err)
	}
	if c, err := parseFlags([]string{"-pes", "8g,3", "-strict"}, &errb); err != nil || !slices.Equal(c.Cfgs, []peCfg{{8, 8}, {3, 1}}) || c.NP != 3 || !c.Strict {
		t.Errorf("-pes 8g,3 -strict: %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"-only", "put,nope"}, {"-rounds", "0"}, {"-np", "1"}, {"extra"}, {"-tag", "a/b"}, {"-pes", "8g"}, {"-pes", "1,2"}} {
		if _, err := parseFlags(bad, &errb); err == nil {
			t.Errorf("parseFlags(%q) accepted it", bad)
		}
	}
	if got := neededLimits(c.specs); !slices.Equal(got, []string{limHandoff}) {
		t.Errorf("limits for put,barrier: %q", got)
	}
	if got := bandwidthMax(specs, false); got != 64<<20 {
		t.Errorf("bandwidthMax = %d", got)
	}
	// broadcast is judged against memcpy up to its largest size.
	c, err = parseFlags([]string{"-only", "reduce,broadcast,team_create", "-x", "SHMEM_REDUCE_ALGORITHM=flat", "-x", "SHMEM_BCAST_ALGORITHM=tree"}, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if got := neededLimits(c.specs); !slices.Equal(got, []string{limMemcpy, limPair, limLines, limExchange}) {
		t.Errorf("limits for reduce,broadcast,team_create: %q", got)
	}
	if got := bandwidthMax(c.specs, false); got != 1<<20 {
		t.Errorf("bandwidthMax(broadcast) = %d", got)
	}
	// put_pingpong is judged against the best copy and its own
	// reference up to its largest size.
	cp, err := parseFlags([]string{"-only", "put_pingpong"}, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if got := neededLimits(cp.specs); !slices.Equal(got, []string{limMemcpy, limSplit, limHandoff, limPingpong}) {
		t.Errorf("limits for put_pingpong: %q", got)
	}
	if got := bandwidthMax(cp.specs, false); got != 64<<20 {
		t.Errorf("bandwidthMax(put_pingpong) = %d", got)
	}
	if !slices.Equal(c.GoshEnv, []string{"SHMEM_REDUCE_ALGORITHM=flat", "SHMEM_BCAST_ALGORITHM=tree"}) ||
		xFlags(c.GoshEnv) != " -x SHMEM_REDUCE_ALGORITHM=flat -x SHMEM_BCAST_ALGORITHM=tree" {
		t.Errorf("-x: %q", c.GoshEnv)
	}
	if _, err := parseFlags([]string{"-x", "NOVALUE"}, &errb); err == nil {
		t.Errorf("-x NOVALUE accepted")
	}
}

// TestEndToEnd runs the tool as a quick goshmem-only comparison of put
// and barrier: it builds and runs real jobs (no Open MPI needed).
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchmark jobs")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	err := run(ctx, []string{"-quick", "-rounds", "1", "-only", "put,barrier", "-peer=false", "-out", dir, "-tag", "e2e"}, &out, &errb, false)
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	t.Logf("stdout:\n%s", out.String())
	if !strings.Contains(out.String(), "peer skipped: -peer=false") || !strings.Contains(out.String(), "] round 1/1: put (goshmem)\n") {
		t.Errorf("progress lines missing:\n%s", out.String())
	}
	mds, _ := filepath.Glob(filepath.Join(dir, "*-e2e.md"))
	if len(mds) != 1 {
		t.Fatalf("reports in %s: %q", dir, mds)
	}
	b, err := os.ReadFile(mds[0])
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	// The goshmem put figures: one row per size, with a number.
	row := regexp.MustCompile(`(?m)^\| 8 B \| (\d+\.\d+) \| - \| - \|`)
	if m := row.FindStringSubmatch(md); m == nil {
		t.Errorf("no goshmem put row for 8 B in the report:\n%s", md)
	}
	for _, want := range []string{"### put: latency (us)", "### barrier: latency (us)", "| 64 KiB |", "| peer | skipped: -peer=false |", "## Targets",
		"### barrier at 4 PEs: latency (us)", "### barrier at 8 goroutine PEs in one process: latency (us)", "goshmem only (the peer has no goroutine PEs)",
		"## Machine state per round", "| 1 | 0.", "measured in each of 1 rounds"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// put and barrier have no machine limit (the barrier's bare exchange
	// is in its table, not in the check): the section says so.
	if !strings.Contains(md, "## Limit check\n\nNo goshmem figure of this run has a machine limit") {
		t.Errorf("report lacks the limit check's section")
	}
	if !strings.Contains(md, "| barrier / bare, interleaved |") {
		t.Errorf("report lacks the barrier's interleaved bare exchange")
	}
	stem := strings.TrimSuffix(mds[0], ".md")
	for _, f := range []string{"put.png", "raw.txt"} {
		if _, err := os.Stat(filepath.Join(stem, f)); err != nil {
			t.Errorf("%v", err)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", md)
	}
}

// collResult builds a result of a collective benchmark from per-round
// figures: rows[i] are the rows of round i of each side.
func collResult(t *testing.T, name string, g, p [][]point) *result {
	t.Helper()
	s := specByName(t, name)
	r := newResult(s, s.Full)
	for i, sd := range []side{gosh, peer} {
		var outs []string
		for _, rows := range [][][]point{g, p}[i] {
			outs = append(outs, output(sd == peer, s.Title, osu.Size, osu.LatencyUs, rows))
		}
		feed(t, r, sd, outs...)
	}
	return r
}

func TestCollectiveTargets(t *testing.T) {
	const mib = "1048576"
	memcpy := &limitTable{Test: limMemcpy, Rows: []point{{"8", 500}, {"65536", 20000}, {mib, 10000}}}
	lim := limits{limMemcpy: memcpy}
	reduce := collResult(t, "reduce",
		[][]point{{{"8", 0.30}, {mib, 100}}, {{"8", 0.35}, {mib, 110}}, {{"8", 0.32}, {mib, 90}}},
		[][]point{{{"8", 0.80}, {mib, 200}}, {{"8", 0.70}, {mib, 210}}, {{"8", 0.75}, {mib, 190}}})
	// Broadcast at 1 MiB: 110 us is 9533 MB/s, 0.95 of memcpy's 10000.
	bcast := collResult(t, "broadcast",
		[][]point{{{"8", 0.50}, {"65536", 7}, {mib, 110}}, {{"8", 0.50}, {"65536", 7}, {mib, 105}}, {{"8", 0.50}, {"65536", 7}, {mib, 140}}},
		[][]point{{{"8", 0.20}, {"65536", 9}, {mib, 130}}, {{"8", 0.20}, {"65536", 9}, {mib, 130}}, {{"8", 0.20}, {"65536", 9}, {mib, 130}}})
	ev := evaluation{Limits: lim, NP: 2, Peer: true, Results: map[string]*result{"reduce": reduce, "broadcast": bcast}}
	ts := ev.targets()
	for _, w := range []struct {
		prefix string
		status string
		ratio  float64
	}{
		{"reduce latency, 8 B, vs peer", statusPass, 0.32 / 0.75},
		{"reduce latency, 1 MiB, vs peer", statusMiss, 100.0 / 200},
		{"broadcast latency, 8 B, vs peer", statusMiss, 0.50 / 0.20},
		{"broadcast bandwidth, 1 MiB, vs memcpy", statusPass, (1048576 / 110.0) / 10000},
	} {
		x := findTarget(t, ts, w.prefix)
		if x.Status != w.status || math.Abs(x.Ratio-w.ratio) > 1e-9 {
			t.Errorf("%s: %s %v; want %s %v (%+v)", w.prefix, x.Status, x.Ratio, w.status, w.ratio, x)
		}
	}
	if x := findTarget(t, ts, "broadcast bandwidth"); !strings.Contains(x.Figures, "goshmem 9533 MB/s, memcpy 10000 MB/s") ||
		!strings.Contains(x.Figures, "broadcast latency 110.00 us, memcpy time 104.86 us") {
		t.Errorf("broadcast vs memcpy figures %q", x.Figures)
	}
	// A slow median (130 us: 0.81) whose best round (110 us) meets the
	// target is a miss put down to noise.
	slow := collResult(t, "broadcast", [][]point{{{mib, 130}}, {{mib, 110}}, {{mib, 135}}}, nil)
	ev.Results["broadcast"] = slow
	if x := findTarget(t, ev.targets(), "broadcast bandwidth"); x.Status != statusMiss || !strings.Contains(x.Cause, "noise") {
		t.Errorf("slow broadcast: %+v", x)
	}
	// The broadcast's limit column: memcpy time from 64 KiB up.
	if v, what, ok := limitFor(bcast.Spec, mib, lim, 2); !ok || math.Abs(v-104.8576) > 1e-9 || what != "memcpy time" {
		t.Errorf("limitFor(broadcast, 1 MiB) = %v, %q, %v", v, what, ok)
	}
	if _, _, ok := limitFor(bcast.Spec, "8", lim, 2); ok {
		t.Errorf("broadcast of 8 B has a limit")
	}
	// A quick run stops at 64 KiB: the 1 MiB targets are n/a.
	quick := collResult(t, "reduce", [][]point{{{"8", 0.3}, {"65536", 20}}}, [][]point{{{"8", 0.7}, {"65536", 30}}})
	qb := collResult(t, "broadcast", [][]point{{{"8", 0.3}, {"65536", 20}}}, nil)
	ev.Results = map[string]*result{"reduce": quick, "broadcast": qb}
	ts = ev.targets()
	if x := findTarget(t, ts, "reduce latency, 1 MiB"); x.Status != statusNA || x.Why != "no 1 MiB figure from goshmem and peer" {
		t.Errorf("quick reduce 1 MiB: %+v", x)
	}
	if x := findTarget(t, ts, "broadcast bandwidth"); x.Status != statusNA || !strings.Contains(x.Why, "the largest size was 64 KiB") {
		t.Errorf("quick broadcast 1 MiB: %+v", x)
	}
	ev.Limits = limits{}
	ev.Results["broadcast"] = bcast
	if x := findTarget(t, ev.targets(), "broadcast bandwidth"); x.Status != statusNA || !strings.Contains(x.Why, "no memcpy limit for 1 MiB (not run)") {
		t.Errorf("broadcast without memcpy: %+v", x)
	}
}

func TestUnsupported(t *testing.T) {
	s := specByName(t, "team_create")
	peerOut := "# OSU-style oshmem Team Create Test\n# PEs: 2  iterations: 100  warmup: 10\n" +
		"# team_create: not supported by the peer (OpenSHMEM 1.4 has no teams; they are 1.5)\n"
	_, err := s.parse(peerOut)
	var u *unsupported
	if !errors.As(err, &u) || !strings.HasPrefix(u.Msg, "team_create: not supported by the peer") {
		t.Fatalf("parse(unsupported) = %v", err)
	}
	// A run without tables that does not say so is a failure.
	if _, err := s.parse("# OSU-style oshmem Team Create Test\n# PEs: 2  iterations: 100  warmup: 10\n"); err == nil || errors.As(err, &u) {
		t.Errorf("empty output: %v", err)
	}
	goshOut := output(false, "Team Create", osu.Teams, osu.LatencyUs, []point{{"64", 2.15}}, "destroy: 0.353 us per team")
	pts, err := s.parse(goshOut)
	if err != nil || !slices.Equal(pts, []point{{"64", 2.15}}) {
		t.Fatalf("parse(goshmem) = %v, %v", pts, err)
	}
	r := newResult(s, s.Full)
	r.add(gosh, 1, pts)
	r.Unsupported[peer] = u.Msg
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	writeBench(bw, &report{NP: 2, Limits: limits{}}, r, job{Spec: s, Key: s.Name, Peer: true})
	bw.Flush()
	for _, want := range []string{"| Teams | goshmem (us) | peer (us) |", "| 64 | 2.15 | - | - |", "peer: `team_create: not supported by the peer"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("team_create section lacks %q:\n%s", want, b.String())
		}
	}
}

func TestCollectivePlots(t *testing.T) {
	dir := t.TempDir()
	lim := limits{limMemcpy: {Rows: []point{{"65536", 20000}, {"131072", 15000}}}}
	for _, name := range []string{"reduce", "broadcast"} {
		r := collResult(t, name, [][]point{{{"8", 0.3}, {"65536", 7}, {"131072", 12}}}, [][]point{{{"8", 0.7}, {"65536", 9}, {"131072", 15}}})
		c, ok := chartFor(r, lim, 2)
		if !ok || !c.LogY {
			t.Fatalf("%s: chart %+v, %v", name, c, ok)
		}
		wantLines := 2
		if name == "broadcast" {
			wantLines = 3 // and the memcpy time
		}
		if len(c.Lines) != wantLines {
			t.Errorf("%s: %d lines", name, len(c.Lines))
		}
		if err := c.save(filepath.Join(dir, name+".png")); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"collect", "fcollect", "alltoall", "team_create"} {
		if _, ok := chartFor(newResult(specByName(t, name), nil), lim, 2); ok {
			t.Errorf("%s has a chart", name)
		}
	}
}

func TestNice125(t *testing.T) {
	for _, c := range []struct {
		v    float64
		up   bool
		want float64
	}{
		{0.21, false, 0.2}, {0.21, true, 0.5}, {3, true, 5}, {3, false, 2}, {0.0099, false, 0.005}, {7, true, 10}, {1, true, 1}, {1, false, 1},
	} {
		if got := nice125(c.v, c.up); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("nice125(%v, %v) = %v, want %v", c.v, c.up, got, c.want)
		}
	}
}

func TestPairs(t *testing.T) {
	g := agg{Values: []float64{1, 2, 4, 3}, Rounds: []int{1, 2, 4, 5}}
	p := agg{Values: []float64{2, 8, 2, 4}, Rounds: []int{1, 3, 4, 5}}
	// Round 2 has no peer figure, round 3 no goshmem figure: the pairs
	// are rounds 1, 4 and 5 (ratios 0.5, 2, 0.75), not the medians' 3/3.
	if got := pairs(g, p); !slices.Equal(got, []float64{0.5, 2, 0.75}) {
		t.Errorf("pairs = %v", got)
	}
	med, lo, hi, n, ok := ratio(g, p)
	if !ok || med != 0.75 || lo != 0.5 || hi != 2 || n != 3 {
		t.Errorf("ratio = %v %v %v %v %v; want 0.75 0.5 2 3 true", med, lo, hi, n, ok)
	}
	// A constant (a limit) pairs with every round.
	if got := pairs(g, constant(2)); !slices.Equal(got, []float64{0.5, 1, 2, 1.5}) {
		t.Errorf("pairs with a constant = %v", got)
	}
	if _, _, _, _, ok := ratio(g, agg{Values: []float64{1}, Rounds: []int{9}}); ok {
		t.Errorf("a ratio without a common round")
	}
	// The pairwise median differs from the ratio of medians when the
	// machine changes state between rounds but both sides move together.
	g = agg{Values: []float64{0.08, 0.32, 0.08}, Rounds: []int{1, 2, 3}}
	p = agg{Values: []float64{0.16, 0.64, 0.64}, Rounds: []int{1, 2, 3}}
	if med, _, _, _, _ := ratio(g, p); med != 0.5 {
		t.Errorf("pairwise median %v; want 0.5 (the ratio of medians is %v)", med, g.median()/p.median())
	}
	x := target{Le: true, Threshold: 0.6}
	judge(&x, g, p, 0, "us", "peer")
	if x.Status != statusPass || x.Ratio != 0.5 || x.spread() != "0.12-0.50 (3 rounds)" {
		t.Errorf("judge: %+v, spread %q", x, x.spread())
	}
	// A miss whose pairs straddle the threshold is put down to noise.
	judge(&x, agg{Values: []float64{1, 0.5, 1}, Rounds: []int{1, 2, 3}}, agg{Values: []float64{1, 1, 1}, Rounds: []int{1, 2, 3}}, 0, "us", "peer")
	if x.Status != statusMiss || !strings.Contains(x.Cause, "noise") || x.spread() != "0.50-1.00 (3 rounds)" {
		t.Errorf("noisy miss: %+v", x)
	}
}

func TestMachineStates(t *testing.T) {
	rounds := func(v ...float64) agg {
		a := agg{Values: v}
		for i := range v {
			a.Rounds = append(a.Rounds, i+1)
		}
		return a
	}
	s := specByName(t, "barrier")
	bar := newResult(s, s.Full)
	var gout, pout []string
	for _, v := range [][2]float64{{0.08, 0.18}, {0.09, 0.19}, {0.32, 0.18}, {0.08, 0.20}} {
		gout = append(gout, output(false, "Barrier", osu.PEs, osu.LatencyUs, []point{{"2", v[0]}}))
		pout = append(pout, output(true, "Barrier", osu.PEs, osu.LatencyUs, []point{{"2", v[1]}}))
	}
	feed(t, bar, gosh, gout...)
	feed(t, bar, peer, pout...)
	// Round 2's hand-off and round 3's goshmem barrier jump.
	st := machineStates(4, rounds(0.07, 0.25, 0.08, 0.07), bar, "2")
	if len(st) != 4 {
		t.Fatalf("%d states", len(st))
	}
	for i, want := range []string{"", "hand-off limit 0.25 us", "goshmem's barrier 0.32 us", ""} {
		got := strings.Join(st[i].Flags, "; ")
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("round %d flags %q; want %q", i+1, got, want)
		}
	}
	if st[2].Handoff != 0.08 || st[2].Barrier != 0.32 || st[2].PeerBar != 0.18 {
		t.Errorf("round 3 state %+v", st[2])
	}
	// One round cannot deviate; rounds without figures show NaN.
	st = machineStates(2, rounds(0.07), nil, "2")
	if len(st[0].Flags)+len(st[1].Flags) != 0 || !math.IsNaN(st[1].Handoff) || !math.IsNaN(st[0].Barrier) {
		t.Errorf("states %+v", st)
	}
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	writeStates(w, &report{NP: 2, States: machineStates(4, rounds(0.07, 0.25, 0.08, 0.07), bar, "2")})
	w.Flush()
	for _, want := range []string{"| 2 | 0.25 | 0.09 | 0.19 | **changed**: hand-off limit 0.25 us is 3.3x its median 0.075 us |", "| 1 | 0.07 | 0.08 | 0.18 | ok |", "2 of 4 rounds flagged"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("states section lacks %q:\n%s", want, b.String())
		}
	}
}

func TestLimitChecks(t *testing.T) {
	lim := limits{limHandoff: {Test: limHandoff, Rows: []point{{sepLines, 0.2}, {handoffMin, 0.07}}},
		limAtomic: {Test: limAtomic, Rows: []point{{localFAdd, 0.006}}}}
	pp := latencyResult(t, "put_pingpong", []float64{0.071, 0.09}, nil)
	ev := evaluation{Limits: lim, NP: 2, Results: map[string]*result{"put_pingpong": pp}}
	// 0.071 is above the limit 0.07 within the printed rounding: it passes.
	if n, fails := ev.limitChecks(); n != 3 || len(fails) != 0 {
		t.Errorf("checked %d, fails %v; want 3 checked, none failing", n, fails)
	}
	// A best round of 0.06 (4 B and 8 B; 16 B is 1.1 times that) is
	// below the limit: FAIL.
	ev.Results["put_pingpong"] = latencyResult(t, "put_pingpong", []float64{0.09, 0.06}, nil)
	n, fails := ev.limitChecks()
	if n != 3 || len(fails) != 3 || fails[0].Key != "4" || fails[0].Best != 0.06 || fails[0].Limit != 0.07 {
		t.Fatalf("checked %d, fails %+v", n, fails)
	}
	if s := fails[0].String(); !strings.Contains(s, "put_pingpong 4: goshmem's best round 0.06 us is below its limit 0.07 us (hand-off): the limit is not a bound") {
		t.Errorf("fail line %q", s)
	}
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	writeLimitCheck(w, &report{LimitChecked: n, LimitFails: fails})
	w.Flush()
	if !strings.Contains(b.String(), "**FAIL**: 3 of 3 goshmem figures") || !strings.Contains(b.String(), "- FAIL put_pingpong 8:") {
		t.Errorf("limit check section:\n%s", b.String())
	}
	// The exit status: only -strict fails the run.
	if err := strictErr(fails, false, "r.md"); err != nil {
		t.Errorf("without -strict: %v", err)
	}
	if err := strictErr(fails, true, "r.md"); err == nil || !strings.Contains(err.Error(), "3 goshmem figure(s) below") {
		t.Errorf("-strict: %v", err)
	}
	if err := strictErr(nil, true, "r.md"); err != nil {
		t.Errorf("-strict without fails: %v", err)
	}
	// A bandwidth above the copy limit fails; its best round decides.
	s := specByName(t, "put_bw")
	bw := newResult(s, s.Full)
	feed(t, bw, gosh, output(false, s.Title, osu.Size, osu.BandwidthMBs, []point{{"65536", 20000}, {"1048576", 9000}}),
		output(false, s.Title, osu.Size, osu.BandwidthMBs, []point{{"65536", 31000}, {"1048576", 9500}}))
	ev.Limits[limMemcpy] = &limitTable{Test: limMemcpy, Rows: []point{{"65536", 30000}, {"1048576", 10000}}}
	ev.Results = map[string]*result{"put_bw": bw}
	n, fails = ev.limitChecks()
	if n != 2 || len(fails) != 1 || fails[0].Key != "65536" || fails[0].Best != 31000 ||
		!strings.Contains(fails[0].String(), "31000 MB/s is above its limit 30000 MB/s (memcpy)") {
		t.Errorf("bandwidth: checked %d, fails %v", n, fails)
	}
	// With the copy limit measured in rounds, a best round above the
	// limit by no more than the rounds' own spread (here 2%: 29400 and
	// 30000) is within its resolution; beyond it, it still fails; and
	// the spread counts for at most 3% (rounds 20000 and 30000).
	for _, c := range []struct {
		rounds []float64
		best   float64
		fail   bool
	}{
		{[]float64{29400, 30000}, 30500, false},
		{[]float64{29400, 30000}, 30700, true},
		{[]float64{30000}, 30100, true}, // one round: no spread
		{[]float64{20000, 30000}, 30800, false},
		{[]float64{20000, 30000}, 31000, true},
	} {
		bw := newResult(s, s.Full)
		feed(t, bw, gosh, output(false, s.Title, osu.Size, osu.BandwidthMBs, []point{{"65536", c.best}}))
		ev.Results = map[string]*result{"put_bw": bw}
		ev.Limits[limMemcpy] = &limitTable{Test: limMemcpy, Rows: []point{{"65536", 30000}}}
		ev.Rounds = map[string][]*limitTable{}
		for _, v := range c.rounds {
			ev.Rounds[limMemcpy] = append(ev.Rounds[limMemcpy], &limitTable{Test: limMemcpy, Rows: []point{{"65536", v}}})
		}
		if _, fails := ev.limitChecks(); (len(fails) == 1) != c.fail {
			t.Errorf("rounds %v, best %v: fails %v, want a fail: %v", c.rounds, c.best, fails, c.fail)
		}
	}
	ev.Rounds = nil
	// Other PE counts have no limits; results there are not checked.
	ev.Results = map[string]*result{"barrier@4": latencyResult(t, "put_pingpong", []float64{0.01}, nil)}
	if n, fails := ev.limitChecks(); n != 0 || len(fails) != 0 {
		t.Errorf("another PE count: checked %d, fails %v", n, fails)
	}
}

func TestPEs(t *testing.T) {
	cfgs, err := parsePEs(defaultPEs)
	if err != nil {
		t.Fatal(err)
	}
	want := []peCfg{{2, 1}, {4, 1}, {8, 1}, {8, 8}}
	if !slices.Equal(cfgs, want) || baseCfg(cfgs) != want[0] {
		t.Fatalf("parsePEs(%q) = %v", defaultPEs, cfgs)
	}
	if cfgs[3].String() != "8g" || cfgs[3].label() != "8 goroutine PEs in one process" || cfgs[1].label() != "4 PEs" {
		t.Errorf("labels %q %q %q", cfgs[3], cfgs[3].label(), cfgs[1].label())
	}
	if c, err := parsePEs("4g, 3"); err != nil || baseCfg(c) != (peCfg{3, 1}) {
		t.Errorf("parsePEs(4g, 3) = %v, %v", c, err)
	}
	for _, bad := range []string{"", "1", "2,x", "8g", "2,2", "2,-4"} {
		if _, err := parsePEs(bad); err == nil {
			t.Errorf("parsePEs(%q) accepted it", bad)
		}
	}
	sel, _ := selectSpecs("put,barrier,reduce")
	js := jobs(sel, cfgs, true)
	var got []string
	for _, j := range js {
		got = append(got, fmt.Sprintf("%s:%v", j.Key, j.Peer))
	}
	wantJobs := []string{"put:true", "barrier:true", "reduce:true", "barrier@4:true", "reduce@4:true", "barrier@8:true", "reduce@8:true", "barrier@8g:false", "reduce@8g:false"}
	if !slices.Equal(got, wantJobs) {
		t.Errorf("jobs %q; want %q", got, wantJobs)
	}
	if a := strings.Join(js[4].Args, " "); a != "-m 8:256 -i 200 -w 20" {
		t.Errorf("reduce@4 args %q", a)
	}
	if a := strings.Join(goshArgs(peCfg{8, 8}, []string{"A=1"}), " "); a != "-n 8 --pes-per-proc 8 -x A=1" {
		t.Errorf("goroutine PEs: oshrun %s", a)
	}
	if a := strings.Join(goshArgs(peCfg{4, 1}, nil), " "); a != "-n 4 --bind-to core" {
		t.Errorf("4 processes: oshrun %s", a)
	}
}

// TestScaleTargets checks the targets at more PEs than cores and for
// goroutine PEs, and the small collectives against the peer and
// goshmem's own barrier of the same round.
func TestScaleTargets(t *testing.T) {
	barrierAt := func(key string, g, p []float64) *result {
		s := specByName(t, "barrier")
		r := newResult(s, s.Full)
		for i, sd := range []side{gosh, peer} {
			var outs []string
			for _, v := range [][]float64{g, p}[i] {
				outs = append(outs, output(sd == peer, "Barrier", osu.PEs, osu.LatencyUs, []point{{key, v}}))
			}
			feed(t, r, sd, outs...)
		}
		return r
	}
	// reduce at 2 PEs: 8 B and 256 B in 3 rounds; the barrier of the
	// same rounds is 0.1, 0.2, 0.1.
	reduce := collResult(t, "reduce",
		[][]point{{{"8", 0.12}, {"256", 0.14}, {"1024", 1}}, {{"8", 0.25}, {"256", 0.40}, {"1024", 1}}, {{"8", 0.13}, {"256", 0.16}, {"1024", 1}}},
		[][]point{{{"8", 0.30}, {"256", 0.30}, {"1024", 1}}, {{"8", 0.60}, {"256", 0.60}, {"1024", 1}}, {{"8", 0.30}, {"256", 0.30}, {"1024", 1}}})
	ev := evaluation{NP: 2, Cfgs: []peCfg{{2, 1}, {4, 1}, {8, 1}, {8, 8}}, Peer: true, Limits: limits{}, Results: map[string]*result{
		"barrier":    barrierAt("2", []float64{0.1, 0.2, 0.1}, []float64{0.2, 0.4, 0.2}),
		"reduce":     reduce,
		"barrier@4":  barrierAt("4", []float64{2, 3, 2.5}, []float64{4, 4, 4}),
		"barrier@8":  barrierAt("8", []float64{40, 50, 60}, []float64{13, 13, 13}),
		"barrier@8g": barrierAt("8", []float64{4, 6, 4.5}, nil),
	}}
	ts := ev.targets()
	for _, w := range []struct {
		prefix string
		status string
		ratio  float64
	}{
		// reduce/peer per round: 8 B 0.4, 0.417, 0.433; 256 B 0.467, 0.667, 0.533: worst 256 B, median 0.533.
		{"reduce, 8-256 B, 2 PEs, vs peer", statusMiss, 0.16 / 0.30},
		// reduce/barrier per round: 256 B 1.4, 2.0, 1.6: median 1.6.
		{"reduce, 8-256 B, 2 PEs, vs goshmem's barrier", statusMiss, 0.16 / 0.1},
		{"barrier latency, 2 PEs, vs peer", statusPass, 0.5},
		{"barrier latency, 4 PEs, vs peer", statusMiss, 2.5 / 4},
		{"barrier latency, 8 PEs, vs peer", statusMiss, 50.0 / 13},
		{"barrier latency, 8 goroutine PEs, vs 5 us", statusPass, 4.5 / 5},
		// 8g/8 per round: 0.1, 0.12, 0.075.
		{"barrier latency, 8 goroutine PEs, vs 8 processes", statusPass, 0.1},
	} {
		x := findTarget(t, ts, w.prefix)
		if x.Status != w.status || math.Abs(x.Ratio-w.ratio) > 1e-9 {
			t.Errorf("%s: %s %v; want %s %v (%+v)", w.prefix, x.Status, x.Ratio, w.status, w.ratio, x)
		}
	}
	if x := findTarget(t, ts, "reduce, 8-256 B, 2 PEs, vs peer"); !strings.Contains(x.Figures, "worst at 256 B") || x.spread() != "0.47-0.67 (3 rounds)" {
		t.Errorf("reduce vs peer: figures %q spread %q", x.Figures, x.spread())
	}
	for _, na := range []struct{ prefix, why string }{
		{"reduce latency, 8 B, 4 PEs", "reduce was not run (-only)"},
		{"broadcast, 8-256 B, 2 PEs, vs peer", "broadcast was not run (-only)"},
		{"collect, 8-256 B, 2 PEs, vs goshmem's barrier", "collect was not run (-only)"},
	} {
		if x := findTarget(t, ts, na.prefix); x.Status != statusNA || x.Why != na.why {
			t.Errorf("%s: %+v; want n/a: %s", na.prefix, x, na.why)
		}
	}
	// Without those configurations in -pes, their targets say so.
	ev.Cfgs = []peCfg{{2, 1}}
	delete(ev.Results, "barrier@8g")
	if x := findTarget(t, ev.targets(), "barrier latency, 8 goroutine PEs, vs 5 us"); x.Status != statusNA || x.Why != "no run at 8 goroutine PEs in one process (-pes)" {
		t.Errorf("no 8g: %+v", x)
	}
}

// TestCopyLimitPerRound: with the copy limit measured in every round, a
// "vs best copy" target is the median of goshmem(r)/limit(r) over the
// rounds (adjacent pairs), not goshmem's figures over one limit taken
// before the rounds; and the limit the report and the limit check use
// is the highest the machine did, once or in any round.
func TestCopyLimitPerRound(t *testing.T) {
	s := specByName(t, "put_bw")
	r := newResult(s, s.Full)
	// goshmem at 1 MiB in three rounds; the machine's state moved both
	// goshmem and the copy: 50/100, 30/60 and 44/40 (in GB/s).
	g := []float64{50000, 30000, 44000}
	var outs []string
	for _, v := range g {
		outs = append(outs, output(false, s.Title, osu.Size, osu.BandwidthMBs, []point{{"1048576", v}}))
	}
	feed(t, r, gosh, outs...)
	once := &limitTable{Test: limMemcpy, Rows: []point{{"1024", 90000}, {"1048576", 45000}}}
	rounds := []*limitTable{
		{Test: limMemcpy, Rows: []point{{"1048576", 100000}}},
		{Test: limMemcpy, Rows: []point{{"1048576", 60000}}},
		{Test: limMemcpy, Rows: []point{{"1048576", 40000}}},
	}
	ev := evaluation{Results: map[string]*result{"put_bw": r}, Limits: limits{limMemcpy: once}, NP: 2,
		Rounds: map[string][]*limitTable{limMemcpy: rounds}}
	x := findTarget(t, ev.targets(), "put bandwidth, 64 KiB-64 MiB, vs best copy")
	// Pairwise: 0.5, 0.5, 1.1 -> median 0.5. Against the one figure
	// before the rounds it would be median(g)/45000 = 0.98.
	if math.Abs(x.Ratio-0.5) > 1e-9 || math.Abs(x.Lo-0.5) > 1e-9 || math.Abs(x.Hi-1.1) > 1e-9 || x.Pairs != 3 {
		t.Errorf("vs best copy: ratio %v (%v-%v, %d pairs); want the pairwise median 0.5 (0.5-1.1, 3 pairs): %+v", x.Ratio, x.Lo, x.Hi, x.Pairs, x)
	}
	// A round whose limit failed leaves that round out.
	ev.Rounds[limMemcpy] = []*limitTable{rounds[0], nil, rounds[2]}
	if x := findTarget(t, ev.targets(), "put bandwidth, 64 KiB-64 MiB, vs best copy"); x.Pairs != 2 || math.Abs(x.Ratio-0.8) > 1e-9 {
		t.Errorf("round 2's limit missing: ratio %v over %d pairs; want 0.8 over 2", x.Ratio, x.Pairs)
	}
	// No round measured it: the one figure, as before.
	ev.Rounds = nil
	if x := findTarget(t, ev.targets(), "put bandwidth, 64 KiB-64 MiB, vs best copy"); math.Abs(x.Ratio-44000.0/45000) > 1e-9 {
		t.Errorf("no per-round limit: ratio %v; want %v", x.Ratio, 44000.0/45000)
	}

	m := mergeBest(limMemcpy, once, []*limitTable{rounds[0], nil, rounds[2], {Test: limMemcpy, Rows: []point{{"2097152", 38000}}}})
	got := map[string]float64{}
	for _, p := range m.Rows {
		got[p.Key] = p.Value
	}
	if want := map[string]float64{"1024": 90000, "1048576": 100000, "2097152": 38000}; !maps.Equal(got, want) {
		t.Errorf("mergeBest rows %v; want %v (the highest of all measurements)", got, want)
	}
	if n := m.Notes[len(m.Notes)-1]; !strings.Contains(n, "3 of 4 rounds") {
		t.Errorf("mergeBest note %q; want it to count the rounds measured", n)
	}
	if m := mergeBest(limMemcpy, nil, []*limitTable{nil}); m.Err == "" {
		t.Errorf("mergeBest with nothing measured: %+v; want an error", m)
	}
}

// TestInterleavedHandoff checks that put_pingpong -handoff's comment is
// read, and that the hand-off target then pairs each round's goshmem
// loop with the hand-off timed between its blocks, not with
// bench/limits' figure from another moment.
func TestInterleavedHandoff(t *testing.T) {
	s := specByName(t, "put_pingpong")
	if !slices.Contains(s.GoshExtra, "-handoff") {
		t.Fatalf("put_pingpong's goshmem arguments %q lack -handoff", s.GoshExtra)
	}
	comment := func(g, h float64) string {
		return fmt.Sprintf("interleaved 8 B: put_pingpong %.4f us  hand-off %.4f us  ratio %.2f [0.90-1.40] over 20 rounds (hand-off per way, us:  store+pause 0.07)", g, h, g/h)
	}
	// A run whose state changed midway: the medians are 0.07 against
	// 0.24 us, the per-round ratio 1.03; the target takes the ratio.
	mixed := func() string {
		return "interleaved 8 B: put_pingpong 0.0709 us  hand-off 0.2370 us  ratio 1.03 [0.29-1.16] over 20 rounds (hand-off per way, us:  store+pause 0.24)"
	}
	// bench/limits says 0.02 us (a fast moment): against it the loop's
	// 0.06 us would be 3x; interleaved, the rounds give 1.10, 1.20 and
	// 1.50 (median 1.20: PASS), then 1.25, 1.40, 1.45 (MISS).
	lim := limits{limHandoff: &limitTable{Test: limHandoff, Rows: []point{{handoffMin, 0.02}}}}
	for _, c := range []struct {
		g, h  []float64
		want  string
		ratio float64
		note  bool
	}{
		{[]float64{0.066, 0.072, 0.09}, []float64{0.06, 0.06, 0.06}, statusPass, 1.2, false},
		{[]float64{0.075, 0.084, 0.087}, []float64{0.06, 0.06, 0.06}, statusMiss, 1.4, false},
		{[]float64{0.057, 0.058, 0.066}, []float64{0.06, 0.06, 0.06}, statusPass, 0.97, true},
		{[]float64{0, 0, 0.13}, []float64{0, 0, 0.1}, statusPass, 1.03, false},
	} {
		r := newResult(s, s.Quick)
		for i := range c.g {
			cm := comment(c.g[i], c.h[i])
			if c.g[i] == 0 {
				cm = mixed()
			}
			feed(t, r, gosh, output(false, s.Title, osu.Size, osu.LatencyUs, []point{{"8", 0.3}}, cm))
		}
		if !slices.Contains(r.Keys, keyHandoffInterleaved) {
			t.Fatalf("keys %q: the interleaved figures were not read", r.Keys)
		}
		ts := evaluation{Results: map[string]*result{"put_pingpong": r}, Limits: lim, NP: 2, PeerWhy: "-peer=false"}.targets()
		x := findTarget(t, ts, "put ping-pong one-way, 8 B, vs cache-line hand-off")
		if x.Status != c.want || math.Abs(x.Ratio-c.ratio) > 0.01 || !strings.Contains(x.Figures, "interleaved hand-off") {
			t.Errorf("g %v h %v: %+v; want %s at %.2f against the interleaved hand-off", c.g, c.h, x, c.want, c.ratio)
		}
		if got := slices.ContainsFunc(x.Notes, func(n string) bool { return strings.Contains(n, "not a bound") }); got != c.note {
			t.Errorf("g %v: notes %q; want a not-a-bound note: %v", c.g, x.Notes, c.note)
		}
	}
	// Without the comment (the peer's program, an old binary), the
	// target falls back to bench/limits.
	r := latencyResult(t, "put_pingpong", []float64{0.03, 0.03, 0.03}, nil)
	x := findTarget(t, evaluation{Results: map[string]*result{"put_pingpong": r}, Limits: lim, NP: 2, PeerWhy: "-peer=false"}.targets(), "put ping-pong one-way, 8 B, vs cache-line hand-off")
	if x.Status != statusMiss || math.Abs(x.Ratio-1.5) > 0.01 {
		t.Errorf("fallback: %+v; want MISS at 1.50 against bench/limits", x)
	}
}

// TestInterleavedHandoffLimit: the limit check of the 8-byte ping-pong
// uses the ratio to each round's fastest bare block where the program
// gives it. A loop as fast as the best way is below that way's median
// in some runs (0.98, 0.99, 0.97 here) without beating the bare
// hand-off; it beats a bound only if it beat every way in every round.
func TestInterleavedHandoffLimit(t *testing.T) {
	s := specByName(t, "put_pingpong")
	lim := limits{limHandoff: &limitTable{Test: limHandoff, Rows: []point{{handoffMin, 0.02}}}}
	comment := func(q, rq float64, round bool) string {
		c := fmt.Sprintf("interleaved 8 B: put_pingpong 0.0600 us  hand-off 0.0600 us  ratio %.2f [0.90-1.10] over 20 rounds (hand-off per way, us:  store+pause 0.06", q)
		if round {
			c += fmt.Sprintf("; each round's fastest way: ratio %.2f [%.2f-1.20]", rq, rq-0.05)
		}
		return c + ")"
	}
	for _, c := range []struct {
		q, rq []float64
		round bool
		fail  bool
	}{
		{[]float64{0.98, 0.99, 0.97}, []float64{1.04, 1.05, 1.03}, true, false}, // as fast as the best way
		{[]float64{0.98, 0.99, 0.97}, []float64{0.96, 0.98, 0.99}, true, true},  // faster than every way in every run
		{[]float64{0.98, 0.99, 0.97}, nil, false, true},                         // an old binary: the fixed way's ratio
	} {
		r := newResult(s, s.Quick)
		for i := range c.q {
			rq := 0.0
			if c.round {
				rq = c.rq[i]
			}
			feed(t, r, gosh, output(false, s.Title, osu.Size, osu.LatencyUs, []point{{"8", 0.06}}, comment(c.q[i], rq, c.round)))
		}
		if got := slices.Contains(r.Keys, keyRatioRoundBest); got != c.round {
			t.Fatalf("%v: the round-best figure read: %v, want %v (keys %q)", c.q, got, c.round, r.Keys)
		}
		ev := evaluation{Results: map[string]*result{"put_pingpong": r}, Limits: lim, NP: 2, PeerWhy: "-peer=false"}
		_, fails := ev.limitChecks()
		failed := slices.ContainsFunc(fails, func(f limitFail) bool { return f.What == "interleaved bare hand-off" })
		if failed != c.fail {
			t.Errorf("%v / %v: limit failed %v (%+v), want %v", c.q, c.rq, failed, fails, c.fail)
		}
	}
}

// TestVsBarrierInterleaved checks that a collective's -vs-barrier
// comment decides the target against goshmem's barrier (its per-size
// ratios, the worst size), not the barrier program's figure of another
// moment, and that without the comment the old pairing is used.
func TestVsBarrierInterleaved(t *testing.T) {
	s := specByName(t, "reduce")
	if !slices.Contains(s.GoshExtra, "-vs-barrier") {
		t.Fatalf("reduce's goshmem arguments %q lack -vs-barrier", s.GoshExtra)
	}
	bs := specByName(t, "barrier")
	bar := newResult(bs, bs.Full)
	for range 3 {
		feed(t, bar, gosh, output(false, "Barrier", osu.PEs, osu.LatencyUs, []point{{"2", 0.3}}))
	}
	mk := func(comment bool) *result {
		r := newResult(s, s.Full)
		for _, q := range []float64{1.2, 1.4, 1.7} {
			var cm []string
			if comment {
				cm = append(cm, fmt.Sprintf("%s8 %.2f [1.00-2.00]; 16 %.2f [1.00-2.00]", osu.VsBarrierPrefix, q, q/2))
			}
			feed(t, r, gosh, output(false, s.Title, osu.Size, osu.LatencyUs, []point{{"8", 0.1}, {"16", 0.1}}, cm...))
		}
		return r
	}
	// The report marks these rows as ratios, not microseconds.
	for k, want := range map[string]bool{"8" + keyVsBarrier: true, keyRatioInterleaved: true, "8": false, keyPPInterleaved: false, keyHandoffInterleaved: false} {
		if isRatioKey(k) != want {
			t.Errorf("isRatioKey(%q) = %v, want %v", k, !want, want)
		}
	}
	name := "reduce, 8-256 B, 2 PEs, vs goshmem's barrier in the same round (worst size)"
	x := findTarget(t, evaluation{Results: map[string]*result{"reduce": mk(true), "barrier": bar}, NP: 2, PeerWhy: "-peer=false"}.targets(), name)
	if x.Status != statusPass || math.Abs(x.Ratio-1.4) > 0.01 || !strings.Contains(x.Figures, "worst at 8 B") || !strings.Contains(x.Figures, "interleaved barrier") {
		t.Errorf("interleaved: %+v; want PASS at 1.40, worst at 8 B", x)
	}
	x = findTarget(t, evaluation{Results: map[string]*result{"reduce": mk(false), "barrier": bar}, NP: 2, PeerWhy: "-peer=false"}.targets(), name)
	if x.Status != statusPass || math.Abs(x.Ratio-0.33) > 0.01 {
		t.Errorf("without the comment: %+v; want PASS at 0.33 against the barrier program", x)
	}
}

// TestMissCauses checks the two causes the data can show: a small
// collective's miss against the barrier is put down to its cache lines
// when the cost model from bench/limits lines covers the ratio, and to
// software per call when it does not; a put ping-pong's miss against
// the copy of its size is put down to its working set only when it
// meets the target against memcpy at twice the size.
func TestMissCauses(t *testing.T) {
	s := specByName(t, "reduce")
	mk := func(at string, q float64) *result {
		r := newResult(s, s.Full)
		for range 3 {
			cm := fmt.Sprintf("%s%s %.2f [1.00-3.00]", osu.VsBarrierPrefix, at, q)
			feed(t, r, gosh, output(false, s.Title, osu.Size, osu.LatencyUs, []point{{at, 0.1}}, cm))
		}
		return r
	}
	// Round trip 0.1 us without extra lines (h = 0.05), 0.02 us per
	// line: a 256-byte part fills 5 lines, (0.05 + 4*0.02)/0.05 = 2.6;
	// an 8-byte part 1 line, 1.0.
	lines := limits{limLines: {Test: limLines, Rows: []point{{"0", 0.1}, {"8", 0.26}, {linesSlope, 0.02}}}}
	exch := limits{limLines: lines[limLines], limExchange: {Test: limExchange, Rows: []point{{"1", 0.06}, {"2", 0.09}, {"5", 0.15}}}}
	name := "reduce, 8-256 B, 2 PEs, vs goshmem's barrier in the same round (worst size)"
	for _, c := range []struct {
		at    string
		ratio float64
		lims  limits
		cause string // substring of the cause
		note  string // substring of a note; "" for none
	}{
		{"256", 2.4, lines, "cache lines: at 256 B the data's 5 lines cost 2.60 barriers", "(h + (L-1) l) / h = 2.60"},
		{"256", 2.9, lines, "software per call: 2.90 barriers is above the 2.60", "= 2.60"},
		{"8", 1.7, lines, "software per call: 1.70 barriers is above the 1.00", "fills 1 cache line(s)"},
		{"256", 2.4, limits{}, causeUnknown, ""}, // no lines limit: no model
		// The bare exchange, when it ran, rather than the lines model:
		// 5 lines 0.15 us against 1 line 0.06 us, 2.50.
		{"256", 2.4, exch, "cache lines: at 256 B the bare exchange of the data's 5 lines alone costs 2.50", "0.15 us a round, one line 0.06 us: 2.50"},
		{"256", 2.9, exch, "software per call: 2.90 barriers is above the 2.50", "fills 5 cache line(s)"},
		{"8", 1.7, exch, "software per call: 1.70 barriers is above the 1.00", "exchanging 1 line(s)"},
		{"128", 2.4, limits{limExchange: exch[limExchange]}, causeUnknown, ""}, // no row for 3 lines (and no lines test): no verdict
		// A negative slope (rows from two states of the machine, as in
		// full-6: 0.40 us at 0-2 lines, 0.15-0.23 at 4-8): no verdict,
		// not a model that makes five lines cost what one does.
		{"256", 2.4, limits{limLines: {Test: limLines, Rows: []point{{"0", 0.40}, {"8", 0.23}, {linesSlope, -0.0323}}}}, causeUnknown, "slope is negative"},
	} {
		x := findTarget(t, evaluation{Results: map[string]*result{"reduce": mk(c.at, c.ratio)}, Limits: c.lims, NP: 2, PeerWhy: "-peer=false"}.targets(), name)
		if x.Status != statusMiss || !strings.Contains(x.Cause, c.cause) {
			t.Errorf("%s B at %.2f: %s, cause %q; want MISS, cause containing %q", c.at, c.ratio, x.Status, x.Cause, c.cause)
		}
		if got := strings.Join(x.Notes, "\n"); c.note != "" && !strings.Contains(got, c.note) || c.note == "" && strings.Contains(got, "cost model") {
			t.Errorf("%s B at %.2f: notes %q; want one containing %q", c.at, c.ratio, got, c.note)
		}
	}
	// Measured in every round: the median of the rounds' ratios (2.0,
	// 3.0, 2.5 at 256 B), not the one measurement before the rounds.
	var rounds []*limitTable
	for _, five := range []float64{0.12, 0.18, 0.15} {
		rounds = append(rounds, &limitTable{Test: limExchange, Rows: []point{{"1", 0.06}, {"5", five}}})
	}
	rounds = append(rounds, nil) // a round whose measurement failed
	var pr target
	pr.Ratio = 2.4
	evaluation{Limits: limits{limExchange: mergeLeast(limExchange, rounds)}, Rounds: map[string][]*limitTable{limExchange: rounds}, NP: 2}.linesModel(&pr, "256", 1)
	if got := strings.Join(pr.Notes, "\n"); !strings.Contains(got, "2.50 one-line exchanges") || !strings.Contains(got, "median of 3 rounds [2.00-3.00]") ||
		!strings.Contains(pr.Cause, "cache lines: at 256 B the bare exchange of the data's 5 lines alone costs 2.50") {
		t.Errorf("per-round exchange at 2.4 barriers: notes %q, cause %q; want the median of the rounds, 2.50, and cache lines", got, pr.Cause)
	}
	if m := mergeLeast(limExchange, rounds); len(m.Rows) != 2 || m.Rows[1].Value != 0.12 {
		t.Errorf("mergeLeast: rows %v; want each row's least (5 lines: 0.12)", m.Rows)
	}
	// Alltoall at 2 PEs publishes a block per member: 128 B blocks
	// make a part of 256 B, 5 lines.
	var at target
	evaluation{Limits: exch, NP: 2}.linesModel(&at, "128", 2)
	if got := strings.Join(at.Notes, "\n"); !strings.Contains(got, "exchanging 5 line(s)") {
		t.Errorf("alltoall's 128 B blocks at 2 PEs: notes %q; want the 5-line exchange", got)
	}
	// With hand-off limits from the rounds: a lines test in the same
	// state (h 0.05 against 0.03) gives its verdict; one in a state
	// 4x slower (h 0.05 against 0.0125) gives none.
	for _, c := range []struct {
		handoff float64
		cause   string
	}{{0.03, "cache lines:"}, {0.0125, causeUnknown}} {
		var rounds []*limitTable
		for range 3 {
			rounds = append(rounds, &limitTable{Test: limHandoff, Rows: []point{{handoffMin, c.handoff}}})
		}
		ev := evaluation{Results: map[string]*result{"reduce": mk("256", 2.4)}, Limits: lines, NP: 2, PeerWhy: "-peer=false",
			Rounds: map[string][]*limitTable{limHandoff: rounds}}
		x := findTarget(t, ev.targets(), name)
		if !strings.Contains(x.Cause, c.cause) {
			t.Errorf("hand-off %v in the rounds: cause %q; want it to contain %q", c.handoff, x.Cause, c.cause)
		}
		if got := strings.Join(x.Notes, "\n"); (c.cause == causeUnknown) != strings.Contains(got, "another state of the machine") {
			t.Errorf("hand-off %v in the rounds: notes %q", c.handoff, got)
		}
	}
	// A pass gets no cause and no model.
	if x := findTarget(t, evaluation{Results: map[string]*result{"reduce": mk("8", 1.2)}, Limits: lines, NP: 2, PeerWhy: "-peer=false"}.targets(), name); x.Status != statusPass || x.Cause != "" || len(x.Notes) != 0 {
		t.Errorf("a pass: %+v; want no cause and no notes", x)
	}

	// Ping-pong: 8 MiB one way in 400 us is 20972 MB/s.
	ps := specByName(t, "put_pingpong")
	pp := newResult(ps, ps.Full)
	for range 3 {
		feed(t, pp, gosh, output(false, ps.Title, osu.Size, osu.LatencyUs, []point{{"8388608", 400}}))
	}
	ppName := "put ping-pong size / one-way time, 64 KiB-64 MiB, vs best copy (worst size)"
	for _, c := range []struct {
		twice float64 // memcpy at 16 MiB (MB/s); 0: not measured
		cause string
	}{
		{21000, "working set: at 8 MiB the ping-pong's four buffers"}, // 0.9987 of it
		{30000, causeUnknown}, // 0.70: the working set does not explain it
		{0, causeUnknown},
	} {
		rows := []point{{"8388608", 35000}}
		if c.twice > 0 {
			rows = append(rows, point{"16777216", c.twice})
		}
		ev := evaluation{Results: map[string]*result{"put_pingpong": pp}, Limits: limits{limMemcpy: {Test: limMemcpy, Rows: rows}}, NP: 2, PeerWhy: "-peer=false"}
		x := findTarget(t, ev.targets(), ppName)
		if x.Status != statusMiss || !strings.Contains(x.Cause, c.cause) {
			t.Errorf("memcpy at 16 MiB %v: %s, cause %q; want MISS (0.60 against the 8 MiB copy), cause containing %q", c.twice, x.Status, x.Cause, c.cause)
		}
		if got := strings.Join(x.Notes, "\n"); (c.twice > 0) != strings.Contains(got, "working set:") {
			t.Errorf("memcpy at 16 MiB %v: notes %q", c.twice, got)
		}
	}

	// The ping-pong's own reference, measured in every round: 8 MiB in
	// 400 us one way is 20972 MB/s, in rounds 1 to 3.
	ppOut := output(false, ps.Title, osu.Size, osu.LatencyUs, []point{{"8388608", 400}})
	pp = newResult(ps, ps.Full)
	feed(t, pp, gosh, ppOut, ppOut, ppOut)
	for _, c := range []struct {
		ref   []float64 // memcpy_pingpong at 8 MiB per round; nil: not measured
		cause string
	}{
		{[]float64{21500, 22000, 21000}, "the pattern:"}, // 0.975, 0.953, 0.999
		{[]float64{21500, 30000, 30000}, causeUnknown},   // median 0.70
		{nil, causeUnknown},
	} {
		ev := evaluation{Results: map[string]*result{"put_pingpong": pp}, NP: 2, PeerWhy: "-peer=false",
			Limits: limits{limMemcpy: {Test: limMemcpy, Rows: []point{{"8388608", 35000}}}}}
		if c.ref != nil {
			ev.Rounds = map[string][]*limitTable{}
			for _, v := range c.ref {
				ev.Rounds[limPingpong] = append(ev.Rounds[limPingpong], &limitTable{Test: limPingpong, Rows: []point{{"8388608", v}}})
			}
		}
		x := findTarget(t, ev.targets(), ppName)
		if x.Status != statusMiss || !strings.Contains(x.Cause, c.cause) {
			t.Errorf("memcpy_pingpong %v: %s, cause %q; want MISS (0.60 against the lone copy), cause containing %q", c.ref, x.Status, x.Cause, c.cause)
		}
		notes := strings.Join(x.Notes, "\n")
		if (c.ref != nil) != strings.Contains(notes, "memcpy_pingpong") {
			t.Errorf("memcpy_pingpong %v: notes %q", c.ref, notes)
		}
		if c.ref != nil && !strings.Contains(notes, "8 MiB at 0.") {
			t.Errorf("memcpy_pingpong %v: notes %q; want the worst size and its pairwise ratio", c.ref, notes)
		}
	}

	// Broadcast at 1 MiB in 30 us is 34953 MB/s: 0.78 of memcpy's 45000.
	bs := specByName(t, "broadcast")
	bc := newResult(bs, bs.Full)
	for range 3 {
		feed(t, bc, gosh, output(false, bs.Title, osu.Size, osu.LatencyUs, []point{{"1048576", 30}}))
	}
	for _, c := range []struct {
		pair  float64 // memcpy_pair at 1 MiB; 0: not measured
		cause string
	}{
		{36000, "two copies at once"}, // 0.97 of the pair
		{40000, causeUnknown},         // 0.87
		{0, causeUnknown},
	} {
		lim := limits{limMemcpy: {Test: limMemcpy, Rows: []point{{"1048576", 45000}}}}
		if c.pair > 0 {
			lim[limPair] = &limitTable{Test: limPair, Rows: []point{{"1048576", c.pair}}}
		}
		x := evaluation{Results: map[string]*result{"broadcast": bc}, Limits: lim, NP: 2, PeerWhy: "-peer=false"}.bcastVsMemcpy("1048576")
		if x.Status != statusMiss || !strings.Contains(x.Cause, c.cause) {
			t.Errorf("memcpy_pair %v: %s, cause %q; want MISS (0.78 of memcpy), cause containing %q", c.pair, x.Status, x.Cause, c.cause)
		}
		if got := strings.Join(x.Notes, "\n"); (c.pair > 0) != strings.Contains(got, "memcpy_pair") {
			t.Errorf("memcpy_pair %v: notes %q", c.pair, got)
		}
	}
}

// TestVsCopyInterleaved checks put_bw's and get_bw's -copy: the
// comment's per-size ratios become rows (marked as ratios), the
// best-copy target is judged on them (the worst size decides) instead of
// on a memcpy limit from another moment, and the limit check fails a
// size only when goshmem beat the copy timed next to it in every run.
func TestVsCopyInterleaved(t *testing.T) {
	for _, name := range []string{"put_bw", "get_bw"} {
		s := specByName(t, name)
		if !slices.Contains(s.GoshExtra, "-copy") {
			t.Fatalf("%s's goshmem arguments %q lack -copy", name, s.GoshExtra)
		}
	}
	s := specByName(t, "put_bw")
	mk := func(q64k []float64, comment bool) *result {
		r := newResult(s, s.Full)
		for _, q := range q64k {
			var cm []string
			if comment {
				cm = append(cm, fmt.Sprintf("%s65536 %.3f [0.500-1.100] 40000 41000; 1048576 0.970 [0.900-0.990] 30000 31000", copyref.Prefix, q))
			}
			feed(t, r, gosh, output(false, s.Title, osu.Size, osu.BandwidthMBs, []point{{"65536", 40000}, {"1048576", 30000}}, cm...))
		}
		return r
	}
	r := mk([]float64{0.90, 0.93, 0.99}, true)
	if g := r.fig(gosh, "65536"+keyCopyInterleaved); g.median() != 41000 || len(g.Values) != 3 {
		t.Errorf("copy figure %+v, want 41000 in 3 rounds", g)
	}
	for k, want := range map[string]bool{"65536" + keyVsCopy: true, "65536" + keyCopyInterleaved: false} {
		if isRatioKey(k) != want {
			t.Errorf("isRatioKey(%q) = %v, want %v", k, !want, want)
		}
	}
	// A memcpy limit that would make every size PASS must not be used.
	lim := limits{limMemcpy: {Test: limMemcpy, Rows: []point{{"65536", 10000}, {"1048576", 10000}}}}
	name := "put bandwidth, 64 KiB-64 MiB, vs best copy (worst size)"
	ev := evaluation{Results: map[string]*result{"put_bw": r}, Limits: lim, NP: 2, PeerWhy: "-peer=false"}
	x := findTarget(t, ev.targets(), name)
	if x.Status != statusMiss || math.Abs(x.Ratio-0.93) > 0.001 || !strings.Contains(x.Figures, "worst at 64 KiB") || !strings.Contains(x.Figures, "interleaved best copy") {
		t.Errorf("interleaved: %+v; want MISS at 0.93, worst at 64 KiB", x)
	}
	if n, fails := ev.limitChecks(); n != 2 || len(fails) != 0 {
		t.Errorf("checked %d, fails %v; want 2 checked, none failing", n, fails)
	}
	// Above 1 in every run: the copy is not a bound.
	ev.Results["put_bw"] = mk([]float64{1.01, 1.05, 1.02}, true)
	n, fails := ev.limitChecks()
	if n != 2 || len(fails) != 1 || fails[0].Key != "65536" || !strings.Contains(fails[0].String(), "above 1 in every run") {
		t.Errorf("checked %d, fails %v; want the 64 KiB row to fail", n, fails)
	}
	// One run at or below 1 is the copy's noise, not a broken bound.
	ev.Results["put_bw"] = mk([]float64{1.01, 0.99, 1.02}, true)
	if _, fails := ev.limitChecks(); len(fails) != 0 {
		t.Errorf("fails %v; want none with one run below 1", fails)
	}
	// Above the best way's median in every run, but not above each
	// round's fastest way in one of them (copyref.RoundPrefix): a tie
	// within the ways' noise, not a broken bound; above that too in
	// every run, broken.
	withRound := func(q, qr []float64) *result {
		r := newResult(s, s.Full)
		for i := range q {
			feed(t, r, gosh, output(false, s.Title, osu.Size, osu.BandwidthMBs, []point{{"65536", 40000}, {"1048576", 30000}},
				fmt.Sprintf("%s65536 %.3f [0.500-1.100] 40000 41000; 1048576 0.970 [0.900-0.990] 30000 31000", copyref.Prefix, q[i]),
				fmt.Sprintf("%s65536 %.3f [0.500-1.100] 40000 42000; 1048576 0.950 [0.900-0.990] 30000 32000", copyref.RoundPrefix, qr[i])))
		}
		return r
	}
	ev.Results["put_bw"] = withRound([]float64{1.01, 1.02, 1.02}, []float64{0.99, 1.01, 1.00})
	if _, fails := ev.limitChecks(); len(fails) != 0 {
		t.Errorf("fails %v; want none when the round's fastest way was not beaten in every run", fails)
	}
	if x := findTarget(t, ev.targets(), name); math.Abs(x.Ratio-0.97) > 0.001 {
		t.Errorf("target ratio %v; want 0.97 (the worst size against the best way's median, not each round's fastest)", x.Ratio)
	}
	ev.Results["put_bw"] = withRound([]float64{1.03, 1.04, 1.05}, []float64{1.01, 1.02, 1.01})
	if _, fails := ev.limitChecks(); len(fails) != 1 {
		t.Errorf("fails %v; want the 64 KiB row, above each round's fastest way in every run", fails)
	}
	// Without the comment the memcpy limit judges, as before.
	ev.Results["put_bw"] = mk([]float64{0.9, 0.9, 0.9}, false)
	x = findTarget(t, ev.targets(), name)
	if x.Status != statusPass || math.Abs(x.Ratio-3) > 0.01 {
		t.Errorf("without the comment: %+v; want PASS at 3.0 against the memcpy limit", x)
	}
}

// TestVsPatternInterleaved checks put_pingpong's -copy: its comment's
// per-size ratios to the bare ping-pong timed next to it explain a miss
// against the lone copy in place of bench/limits memcpy_pingpong of
// another moment (which here would say the opposite).
func TestVsPatternInterleaved(t *testing.T) {
	ps := specByName(t, "put_pingpong")
	if !slices.Contains(ps.GoshExtra, "-copy") || !slices.Contains(ps.GoshExtra, "-handoff") {
		t.Fatalf("put_pingpong's goshmem arguments %q lack -copy or -handoff", ps.GoshExtra)
	}
	ppName := "put ping-pong size / one-way time, 64 KiB-64 MiB, vs best copy (worst size)"
	for _, c := range []struct {
		q     []float64 // interleaved ratio at 8 MiB per run
		cause string
	}{
		{[]float64{0.97, 0.96, 0.99}, "the pattern:"},
		{[]float64{0.70, 0.72, 0.99}, causeUnknown},
	} {
		pp := newResult(ps, ps.Full)
		for _, q := range c.q {
			cm := fmt.Sprintf("%s8388608 %.3f [0.500-1.000] 20000 21000", copyref.PatternPrefix, q)
			feed(t, pp, gosh, output(false, ps.Title, osu.Size, osu.LatencyUs, []point{{"8388608", 400}}, cm))
		}
		if !isRatioKey("8388608"+keyVsPattern) || isRatioKey("8388608"+keyPatternInterleaved) {
			t.Errorf("ratio keys: %q should be one, %q not", keyVsPattern, keyPatternInterleaved)
		}
		// memcpy_pingpong from the rounds says 0.70 (30000 MB/s).
		ev := evaluation{Results: map[string]*result{"put_pingpong": pp}, NP: 2, PeerWhy: "-peer=false",
			Limits: limits{limMemcpy: {Test: limMemcpy, Rows: []point{{"8388608", 35000}}}},
			Rounds: map[string][]*limitTable{limPingpong: {{Test: limPingpong, Rows: []point{{"8388608", 30000}}}}}}
		x := findTarget(t, ev.targets(), ppName)
		notes := strings.Join(x.Notes, "\n")
		if x.Status != statusMiss || !strings.Contains(x.Cause, c.cause) || !strings.Contains(notes, "put_pingpong -copy") || strings.Contains(notes, "memcpy_pingpong times") {
			t.Errorf("interleaved %v: %s, cause %q, notes %q; want MISS, cause containing %q, the note from -copy", c.q, x.Status, x.Cause, notes, c.cause)
		}
	}
}

// TestBarrierInterleaved checks that barrier -handoff's comment is read
// into the barrier's table, that the barrier has no limit check (the
// hand-off of bench/limits is a ping-pong's, and no bare exchange bounds
// the barrier in every state of the development machine: CI's quick
// runs printed false FAILs against both), and that the vs-peer target
// notes a barrier faster than its bare exchange.
func TestBarrierInterleaved(t *testing.T) {
	s := specByName(t, "barrier")
	if !slices.Contains(s.GoshExtra, "-handoff") {
		t.Fatalf("barrier's goshmem arguments %q lack -handoff", s.GoshExtra)
	}
	comment := func(g, h float64) string {
		return fmt.Sprintf("interleaved barrier: barrier %.4f us  bare %.4f us  ratio %.2f [0.80-1.90] over 20 rounds (bare barrier, us:  heaps/store 0.08  line/xchg %.4f)", g, h, g/h, h)
	}
	// bench/limits' hand-off, taken in a slow moment: 0.158 us.
	lim := limits{limHandoff: &limitTable{Test: limHandoff, Rows: []point{{handoffMin, 0.158}}}}
	for _, c := range []struct {
		g, h []float64 // per run: the barrier's and the bare barrier's medians
		note bool
	}{
		{[]float64{0.061, 0.058}, []float64{0.045, 0.043}, false}, // CI's first case: below the old limit, above the bare
		{[]float64{0.040, 0.041}, []float64{0.045, 0.043}, true},  // below the bare: noted, not failed
	} {
		r := newResult(s, s.Quick)
		for i := range c.g {
			feed(t, r, gosh, output(false, s.Title, osu.PEs, osu.LatencyUs, []point{{"2", c.g[i]}}, comment(c.g[i], c.h[i])))
		}
		if !slices.Contains(r.Keys, keyBarRatioInterleaved) || !slices.Contains(r.Keys, keyBareInterleaved) {
			t.Fatalf("keys %q: the interleaved figures were not read", r.Keys)
		}
		ev := evaluation{Results: map[string]*result{"barrier": r}, Limits: lim, NP: 2, PeerWhy: "-peer=false"}
		if n, fails := ev.limitChecks(); n != 0 || len(fails) != 0 {
			t.Errorf("g %v h %v: checked %d, fails %v; the barrier has no limit", c.g, c.h, n, fails)
		}
		x := findTarget(t, ev.targets(), "barrier latency, 2 PEs, vs peer")
		got := slices.ContainsFunc(x.Notes, func(n string) bool { return strings.Contains(n, "no bound for it in this state") })
		if got != c.note {
			t.Errorf("g %v h %v: notes %q; want the no-bound note: %v", c.g, c.h, x.Notes, c.note)
		}
	}
	// put_pingpong -handoff: its ratio is the small sizes' one check.
	ps := specByName(t, "put_pingpong")
	pp := newResult(ps, ps.Quick)
	feed(t, pp, gosh, output(false, ps.Title, osu.Size, osu.LatencyUs, []point{{"4", 0.06}, {"8", 0.06}, {"64", 0.06}},
		"interleaved 8 B: put_pingpong 0.0600 us  hand-off 0.0500 us  ratio 1.20 [1.10-1.30] over 20 rounds (hand-off per way, us:  store+pause 0.05)"))
	if n, fails := (evaluation{Results: map[string]*result{"put_pingpong": pp}, Limits: lim, NP: 2}).limitChecks(); n != 1 || len(fails) != 0 {
		t.Errorf("put_pingpong with -handoff: checked %d, fails %v; want 1 check, passing", n, fails)
	}
}

// TestSplitCopyLimit: put_bw and get_bw are bounded by the better of
// the lone copy and the copy split over two CPUs, per size; the bulk
// targets' best copy takes, round by round, the better of the two.
func TestSplitCopyLimit(t *testing.T) {
	lim := limits{
		limMemcpy: &limitTable{Test: limMemcpy, Rows: []point{{"8", 500}, {"65536", 50000}, {"1048576", 48000}}},
		limSplit:  &limitTable{Test: limSplit, Rows: []point{{"65536", 40000}, {"1048576", 90000}}},
	}
	bw := &spec{Name: "put_bw"}
	for _, c := range []struct {
		key  string
		v    float64
		what string
	}{{"8", 500, limMemcpy}, {"65536", 50000, limMemcpy}, {"1048576", 90000, limSplit}} {
		if v, what, ok := limitFor(bw, c.key, lim, 2); !ok || v != c.v || what != c.what {
			t.Errorf("limitFor(put_bw, %s) = %v, %q, %v; want %v, %q", c.key, v, what, ok, c.v, c.what)
		}
	}
	round := func(test string, rows ...point) *limitTable { return &limitTable{Test: test, Rows: rows} }
	ev := evaluation{Limits: lim, Rounds: map[string][]*limitTable{
		limMemcpy: {round(limMemcpy, point{"1048576", 47000}), nil, round(limMemcpy, point{"1048576", 49000})},
		limSplit:  {round(limSplit, point{"1048576", 91000}), round(limSplit, point{"1048576", 80000}), round(limSplit, point{"1048576", 30000})},
	}}
	a, ok := ev.bestCopyAgg("1048576")
	if !ok || !slices.Equal(a.Values, []float64{91000, 49000}) || !slices.Equal(a.Rounds, []int{1, 3}) {
		t.Errorf("bestCopyAgg = %+v, %v; want rounds 1 and 3 at 91000 and 49000", a, ok)
	}
	// Without split rounds: the lone copy's.
	ev.Rounds[limSplit] = nil
	ev.Limits = limits{limMemcpy: lim[limMemcpy]}
	if a, ok := ev.bestCopyAgg("1048576"); !ok || !slices.Equal(a.Values, []float64{47000, 49000}) {
		t.Errorf("bestCopyAgg without split = %+v, %v", a, ok)
	}
}

// TestLimitColumnMeasuredApart: a bandwidth table whose sizes were also
// timed against interleaved copies (-copy) says that its limit column,
// bench/limits' figure from another moment, is no bound (the check
// uses the interleaved rows); without them it says nothing of the kind.
func TestLimitColumnMeasuredApart(t *testing.T) {
	s := specByName(t, "put_bw")
	for _, interleaved := range []bool{true, false} {
		r := newResult(s, s.Full)
		var cm []string
		if interleaved {
			cm = append(cm, copyref.Prefix+"65536 0.950 [0.900-0.990] 40000 42000")
		}
		feed(t, r, gosh, output(false, s.Title, osu.Size, osu.BandwidthMBs, []point{{"65536", 40000}}, cm...))
		rep := sampleReport(t)
		rep.Specs = append(rep.Specs, s)
		rep.Results["put_bw"] = r
		rep.Limits[limMemcpy] = &limitTable{Test: limMemcpy, Columns: []string{"Size", "MB/s"}, Rows: []point{{"65536", 30000}}}
		var b bytes.Buffer
		if err := writeReport(&b, rep); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		if !strings.Contains(md, "| 64 KiB | 40000 |") || !strings.Contains(md, "30000 (memcpy)") {
			t.Fatalf("interleaved %v: no put_bw row with its memcpy limit in:\n%s", interleaved, md)
		}
		if got := strings.Contains(md, "a goshmem figure above it is no beaten bound"); got != interleaved {
			t.Errorf("interleaved %v: the note on the limit column is there: %v", interleaved, got)
		}
	}
}
