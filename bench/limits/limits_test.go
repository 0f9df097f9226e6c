package main

import (
	"bytes"
	"fmt"
	"github.com/goshmem/goshmem/bench/internal/copyref"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMain turns the test binary into the second process of handoff and
// atomic when startPair re-executes it.
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec))
	}
	os.Exit(m.Run())
}

// parsed is a table as a compare tool reads it.
type parsed struct {
	test     string
	warnings []string
	cols     []string
	labels   []string
	values   []float64
}

var colSep = regexp.MustCompile(`\s{2,}`)

// parse reads one table as goshmem's compare tool reads OSU-style
// output (bench/internal/osu): the title; comment lines, which contain a
// colon; one column line, which does not, with names separated by two
// or more spaces; then rows of a key left-aligned in 16 characters and
// one number per further column.
func parse(out string) (*parsed, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	const title = "# goshmem machine limits: "
	if len(lines) == 0 || !strings.HasPrefix(lines[0], title) {
		return nil, fmt.Errorf("no title line %q in %q", title, out)
	}
	p := &parsed{test: strings.TrimPrefix(lines[0], title)}
	for _, l := range lines[1:] {
		if text, ok := strings.CutPrefix(l, "#"); ok {
			text = strings.TrimPrefix(text, " ")
			if w, ok := strings.CutPrefix(text, "warning: "); ok {
				p.warnings = append(p.warnings, w)
			}
			cols := colSep.Split(text, -1)
			if strings.Contains(text, ":") || len(cols) < 2 {
				continue // a comment
			}
			if p.cols != nil {
				return nil, fmt.Errorf("second column line %q", l)
			}
			if len(l) < 16 || l[16-1] != ' ' || l[16:] != strings.Join(cols[1:], "  ") {
				return nil, fmt.Errorf("column line %q: want the key column padded to 16 characters", l)
			}
			p.cols = cols
			continue
		}
		if p.cols == nil {
			return nil, fmt.Errorf("row %q before the column line", l)
		}
		f := strings.Fields(l)
		if len(f) != len(p.cols) {
			return nil, fmt.Errorf("row %q has %d fields; want %d (%q)", l, len(f), len(p.cols), p.cols)
		}
		if l[0] == ' ' || len(f[0]) < 16 && (len(l) < 16 || strings.TrimSpace(l[len(f[0]):16]) != "") {
			return nil, fmt.Errorf("row %q: the key is not left-aligned in 16 characters", l)
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("row %q: %v", l, err)
		}
		p.labels = append(p.labels, f[0])
		p.values = append(p.values, v)
	}
	if p.cols == nil {
		return nil, fmt.Errorf("no column line in %q", out)
	}
	return p, nil
}

// runTable runs a test and checks its output: title, columns, row
// labels, and that every value is positive and finite.
func runTable(t *testing.T, args []string, cols, labels []string) *parsed {
	t.Helper()
	var out bytes.Buffer
	if err := run(args, &out); err != nil {
		t.Fatalf("run(%q): %v", args, err)
	}
	t.Logf("%s", out.String())
	p, err := parse(out.String())
	if err != nil {
		t.Fatalf("run(%q): output does not parse: %v", args, err)
	}
	if p.test != args[0] {
		t.Errorf("title names test %q; want %q", p.test, args[0])
	}
	if !slices.Equal(p.cols, cols) {
		t.Errorf("columns %q; want %q", p.cols, cols)
	}
	if !slices.Equal(p.labels, labels) {
		t.Errorf("rows %q; want %q", p.labels, labels)
	}
	for i, v := range p.values {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("row %s: value %v; want a positive finite number", p.labels[i], v)
		}
	}
	return p
}

func sizes(lo, hi int) []string {
	var s []string
	for n := lo; n <= hi; n *= 2 {
		s = append(s, strconv.Itoa(n))
	}
	return s
}

func TestMemcpy(t *testing.T) {
	for _, test := range []string{"memcpy", "memcpy_shm"} {
		runTable(t, []string{test, "-max", "4096", "-i", "10", "-r", "2"},
			[]string{"Size", "Bandwidth (MB/s)"}, sizes(1, 4096))
		runTable(t, []string{test, "-min", "64", "-max", "256", "-t", "1ms", "-r", "1"},
			[]string{"Size", "Bandwidth (MB/s)"}, sizes(64, 256))
	}
}

// TestMemcpyPair checks the two-copies-at-once table: one positive row
// per size, the CPUs and the winner per size named, -method, both
// threads on one CPU (a machine may have only one), and bad flags. (Its
// speed against memcpy is the machine's business, not tested.)
func TestMemcpyPair(t *testing.T) {
	p := runTable(t, []string{"memcpy_pair", "-min", "65536", "-max", "131072", "-i", "5", "-r", "2"},
		[]string{"Size", "Bandwidth (MB/s)"}, sizes(65536, 131072))
	for _, v := range p.values {
		if !(v > 0) {
			t.Errorf("memcpy_pair: bandwidth %v, want > 0", v)
		}
	}
	var out bytes.Buffer
	if err := run([]string{"memcpy_pair", "-min", "65536", "-max", "65536", "-i", "3", "-r", "1", "-method", "copy"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# cpus: ", "one source", "# fastest method per size: 65536=copy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("memcpy_pair output lacks %q:\n%s", want, out.String())
		}
	}
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	runTable(t, []string{"memcpy_pair", "-cpus", fmt.Sprintf("%d,%d", allowed[0], allowed[0]), "-min", "65536", "-max", "65536", "-i", "3", "-r", "1"},
		[]string{"Size", "Bandwidth (MB/s)"}, sizes(65536, 65536))
	for _, bad := range [][]string{{"memcpy_pair", "-min", "3"}, {"memcpy_pair", "-method", "nope"}, {"memcpy_pair", "extra"}} {
		if err := run(bad, &out); err == nil {
			t.Errorf("run(%q) accepted it", bad)
		}
	}
}

// TestMemcpyPingpong checks the ping-pong reference: its table, and
// that its sides take turns (A copies, then B, then A...) and move the
// data where a put ping-pong does: A's source into B's destination and
// B's into A's, with either way of waiting, also with both threads on
// one CPU.
func TestMemcpyPingpong(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"memcpy_pingpong", "-min", "65536", "-max", "131072", "-i", "3", "-r", "1", "-method", "movsb"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# cpus: ", "one-way", "# fastest method per size: 65536=movsb"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("memcpy_pingpong output lacks %q:\n%s", want, out.String())
		}
	}
	p := runTable(t, []string{"memcpy_pingpong", "-min", "65536", "-max", "65536", "-i", "3", "-r", "1"},
		[]string{"Size", "Bandwidth (MB/s)"}, sizes(65536, 65536))
	if v := p.values[0]; !(v > 0) {
		t.Errorf("memcpy_pingpong: bandwidth %v, want > 0", v)
	}
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpuB := allowed[len(allowed)-1]
	for _, yield := range []bool{false, true} {
		for _, b := range []int{cpuB, allowed[0]} {
			const n, iters = 4096, 50
			var bufs [4][]byte
			for i := range bufs {
				bufs[i] = make([]byte, n)
			}
			var turns []byte // who copied, in order: 'A' copies bufs[0]
			var mu sync.Mutex
			loop := func(dst, src []byte, k int) {
				mu.Lock()
				who := byte('B')
				if &src[0] == &bufs[0][0] {
					who = 'A'
				}
				turns = append(turns, who)
				mu.Unlock()
				src[0]++ // a new payload every turn
				copy(dst, src)
			}
			if _, err := pingpongRun(bufs, n, allowed[0], b, iters, yield, loop); err != nil {
				t.Fatal(err)
			}
			if want := strings.Repeat("AB", iters); string(turns) != want {
				t.Errorf("yield %v, cpus %d,%d: turns %q; want %q", yield, allowed[0], b, turns, want)
			}
			if !bytes.Equal(bufs[3], bufs[0]) || !bytes.Equal(bufs[1], bufs[2]) || bufs[3][0] != iters || bufs[1][0] != iters {
				t.Errorf("yield %v: B's destination %v..., A's %v...; want A's source %v... and B's %v... after %d turns each",
					yield, bufs[3][:2], bufs[1][:2], bufs[0][:2], bufs[2][:2], iters)
			}
		}
	}
	for _, bad := range [][]string{{"memcpy_pingpong", "-max", "1000"}, {"memcpy_pingpong", "-method", "nope"}} {
		if err := run(bad, &out); err == nil {
			t.Errorf("run(%q) accepted it", bad)
		}
	}
}

// TestMemcpyMethods checks that the memcpy table names the methods it
// took the best of, the winner per size and the engine's kernel per
// size (memmove below mem.LargeCopy), and that -method measures
// each method alone.
func TestMemcpyMethods(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"memcpy", "-min", "1024", "-max", "2048", "-i", "5", "-r", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# methods: copy, movsb, ", "engine", "# fastest method per size: 1024=", " 2048=", "# engine's kernel per size: 1024=memmove 2048=memmove"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("memcpy output lacks %q:\n%s", want, out.String())
		}
	}
	for _, m := range copyMethods() {
		runTable(t, []string{"memcpy", "-method", m.Name, "-min", "256", "-max", "512", "-i", "5", "-r", "1"},
			[]string{"Size", "Bandwidth (MB/s)"}, sizes(256, 512))
	}
}

var tiny = []string{"-i", "200", "-t", "1ms", "-r", "2", "-w", "10"}

var handoffRows = []string{"same_line", "separate_lines", "same_tight", "separate_tight", "min"}

// TestHandoff checks that the hand-off is measured with goshmem's spin
// (rows without a suffix) and without a pause (the _tight rows), and
// that the limit row is the minimum over them, as a lower bound is.
func TestHandoff(t *testing.T) {
	for _, best := range []bool{false, true} {
		args := append([]string{"handoff"}, tiny...)
		if best {
			args = append(args, "-best")
		}
		p := runTable(t, args, []string{"Layout", "Latency (us)"}, handoffRows)
		if len(p.values) != len(handoffRows) {
			continue // runTable has reported it
		}
		if lim, rows := p.values[len(p.values)-1], p.values[:len(p.values)-1]; lim != slices.Min(rows) {
			t.Errorf("-best=%v: row min is %v; want the minimum of %v", best, lim, rows)
		}
	}
}

// TestHandoffSpin checks the second process's spin methods: goshmem's
// pause per poll, or none; anything else is refused.
func TestHandoffSpin(t *testing.T) {
	for spin, relax := range map[string]bool{spinPause: true, spinTight: false} {
		if s := newSpinner(false, spin, nil); s.relax != relax || s.yield {
			t.Errorf("newSpinner(%q) = %+v; want relax %v", spin, s, relax)
		}
	}
	for _, spec := range []string{"same,0,false", "same,0,false,fast", "same,0,false,pause,x"} {
		if err := child(spec); err == nil || !strings.Contains(err.Error(), "bad "+childEnv) {
			t.Errorf("child(%q) = %v; want a bad %s error", spec, err, childEnv)
		}
	}
}

// TestLines checks the lines table: a round-time row per line count,
// then the slope. The slope is not checked for sign: on a noisy
// machine two round times can come out in either order.
func TestLines(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	one := fmt.Sprintf("%d,%d", allowed[0], allowed[0]) // both sides on one CPU: they must take turns
	for _, extra := range [][]string{nil, {"-cpus", one}, {"-read"}} {
		var out bytes.Buffer
		args := append(append([]string{"lines", "-k", "0,4,16"}, tiny...), extra...)
		if err := run(args, &out); err != nil {
			t.Fatalf("run(%q): %v", args, err)
		}
		p, err := parse(out.String())
		if err != nil {
			t.Fatalf("run(%q): output does not parse: %v\n%s", args, err, out.String())
		}
		if want := []string{"0", "4", "16", "per_line"}; !slices.Equal(p.labels, want) {
			t.Errorf("run(%q): rows %q; want %q", args, p.labels, want)
			continue
		}
		for i, v := range p.values[:3] {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("run(%q): row %s: %v; want a positive finite time", args, p.labels[i], v)
			}
		}
	}
	for _, bad := range [][]string{{"lines", "-k", "x"}, {"lines", "-k", "2000"}, {"lines", "-stride", "100"}} {
		if err := run(bad, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded; want an error", bad)
		}
	}
}

// TestExchange runs the exchange table, on two CPUs and on one (the
// sides take turns), and checks every method's protocol: each side
// reads exactly the round's value in every data word of the other's
// box (a method that showed the round before the data would time less
// than an exchange and be no limit), for 1, 2 and 5 lines.
func TestExchange(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	one := fmt.Sprintf("%d,%d", allowed[0], allowed[0])
	for _, extra := range [][]string{nil, {"-cpus", one}, {"-method", exTagged}} {
		args := append(append([]string{"exchange", "-k", "1,5"}, tiny...), extra...)
		var out bytes.Buffer
		if err := run(args, &out); err != nil {
			t.Fatalf("run(%q): %v", args, err)
		}
		p, err := parse(out.String())
		if err != nil {
			t.Fatalf("run(%q): output does not parse: %v\n%s", args, err, out.String())
		}
		if want := []string{"1", "5"}; !slices.Equal(p.labels, want) {
			t.Errorf("run(%q): rows %q; want %q", args, p.labels, want)
		}
		for i, v := range p.values {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("run(%q): row %s: %v; want a positive finite time", args, p.labels[i], v)
			}
		}
		if extra == nil {
			for _, m := range exchangeMethods {
				if !strings.Contains(out.String(), "k=1: ") || !strings.Contains(out.String(), m+" ") {
					t.Errorf("run(%q): no figure of method %s in\n%s", args, m, out.String())
				}
			}
		}
	}
	a, b := allowed[0], allowed[len(allowed)-1]
	c := &common{iters: 3000, reps: 2, warm: 100}
	for _, m := range exchangeMethods {
		for _, k := range []int{1, 2, 5} {
			if m == exPaired && k != 1 {
				continue
			}
			_, bad, err := exchangeRun(m, k, a, b, c, true)
			if err != nil {
				t.Fatalf("%s, %d lines: %v", m, k, err)
			}
			if bad != 0 {
				t.Errorf("%s, %d lines: %d data words read did not hold their round", m, k, bad)
			}
		}
	}
	for _, bad := range [][]string{{"exchange", "-k", "0"}, {"exchange", "-k", "65"}, {"exchange", "-method", "nosuch"}, {"exchange", "-method", exPaired, "-k", "1,5"}} {
		if err := run(bad, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded; want an error", bad)
		}
	}
}

func TestSlope(t *testing.T) {
	for _, tc := range []struct {
		x, y []float64
		want float64
	}{
		{[]float64{0, 1, 2}, []float64{1, 3, 5}, 2},
		{[]float64{0, 4, 16}, []float64{0.1, 0.1, 0.1}, 0},
		{[]float64{1, 1}, []float64{2, 3}, 0},
		{[]float64{0, 1, 2, 3}, []float64{0, 1, 1, 2}, 0.6},
	} {
		if got := slope(tc.x, tc.y); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("slope(%v, %v) = %v; want %v", tc.x, tc.y, got, tc.want)
		}
	}
}

func TestAtomic(t *testing.T) {
	runTable(t, append([]string{"atomic", "-gap", "50"}, tiny...),
		[]string{"Operation", "Latency (us)"}, []string{"local_fetch_add", "remote_fetch_add"})
}

// TestOneCPU runs both sides on one CPU: slow (each hand-off is a
// yield) but it must finish and say why its figures mean little.
func TestOneCPU(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpus := fmt.Sprintf("%d,%d", allowed[0], allowed[0])
	for _, tc := range []struct {
		test   string
		cols   []string
		labels []string
	}{
		{"handoff", []string{"Layout", "Latency (us)"}, handoffRows},
		{"atomic", []string{"Operation", "Latency (us)"}, []string{"local_fetch_add", "remote_fetch_add"}},
	} {
		p := runTable(t, []string{tc.test, "-cpus", cpus, "-i", "50", "-t", "0", "-r", "1", "-w", "5"}, tc.cols, tc.labels)
		if len(p.warnings) == 0 || !strings.Contains(p.warnings[0], "both sides run on CPU") {
			t.Errorf("%s on one CPU: warnings %q; want one that says both sides share a CPU", tc.test, p.warnings)
		}
	}
}

func TestTableFormat(t *testing.T) {
	tb := &table{test: "atomic", warnings: []string{"w"}, notes: []string{"n"},
		cols: [2]string{"Operation", "Latency (us)"}, prec: 4,
		rows: []row{{"remote_fetch_add", 123456.5}, {"local_fetch_add", 0.0123}}}
	var out bytes.Buffer
	if err := tb.write(&out); err != nil {
		t.Fatal(err)
	}
	want := "# goshmem machine limits: atomic\n" +
		"# warning: w\n" +
		"# note: n\n" +
		"# Operation     Latency (us)\n" +
		"remote_fetch_add     123456.5000\n" +
		"local_fetch_add           0.0123\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	p, err := parse(out.String())
	if err != nil || len(p.values) != 2 || p.values[0] != 123456.5 {
		t.Errorf("parse: %+v, %v", p, err)
	}
}

func TestRunErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"nosuch"},
		{"memcpy", "-max", "1000"},
		{"memcpy", "-min", "8", "-max", "4"},
		{"memcpy", "extra"},
		{"memcpy", "-method", "nosuch", "-max", "64"},
		{"handoff", "-r", "0"},
		{"handoff", "-i", "0", "-t", "0"},
		{"handoff", "-cpus", "x,y"},
		{"handoff", "-cpus", "0,1,2"},
		{"handoff", "-cpus", "99999"},
		{"atomic", "-gap", "-1"},
		{"all", "-i", "5"},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) = nil; want an error", args)
		}
	}
}

// TestHelp: -h, -help, --help and help print the usage on stderr and
// exit 0, as a Go command's -h does (flag.ErrHelp), and so does a
// test's -h; no test or an unknown one is still a usage error (2).
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		code  int
		usage bool // the top-level usage on stderr
	}{
		{[]string{"-h"}, 0, true},
		{[]string{"-help"}, 0, true},
		{[]string{"--help"}, 0, true},
		{[]string{"help"}, 0, true},
		{[]string{"memcpy", "-h"}, 0, false},
		{nil, 2, true},
		{[]string{"nosuch"}, 2, true},
	} {
		var out, errb bytes.Buffer
		code := cli(tc.args, &out, &errb)
		if code != tc.code {
			t.Errorf("limits %q exits %d, want %d; stderr:\n%s", tc.args, code, tc.code, errb.String())
		}
		if tc.usage && !strings.Contains(errb.String(), "usage: limits <test>") {
			t.Errorf("limits %q: stderr lacks the usage:\n%s", tc.args, errb.String())
		}
		if out.Len() > 0 {
			t.Errorf("limits %q wrote to stdout:\n%s", tc.args, out.String())
		}
	}
}

func TestPickCPUs(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	a, b, w, err := pickCPUs("")
	if err != nil {
		t.Fatal(err)
	}
	if a != allowed[0] || (len(allowed) > 1 && (b != allowed[1] || len(w) != 0)) || (len(allowed) == 1 && len(w) != 1) {
		t.Errorf("pickCPUs(\"\") = %d, %d, %q with CPUs %v allowed", a, b, w, allowed)
	}
	if a, b, _, err := pickCPUs(strconv.Itoa(allowed[0])); err != nil || a != allowed[0] || (len(allowed) > 1 && b == a) {
		t.Errorf("pickCPUs(%d) = %d, %d, %v", allowed[0], a, b, err)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v; want %v", tc.in, got, tc.want)
		}
	}
}

// TestReadFullPolling: the polling read of the TCP limit gathers a
// message that arrives in pieces, whole and in order, and reports the
// peer's close before the message is complete.
func TestReadFullPolling(t *testing.T) {
	addr := loopback(t, func(c net.Conn) {
		for i := range 4 {
			c.Write([]byte{byte(4 * i), byte(4*i + 1), byte(4*i + 2), byte(4*i + 3)})
			time.Sleep(5 * time.Millisecond)
		}
		c.Write([]byte{99})
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, 16)
	if err := readFull(c, b, true); err != nil {
		t.Fatal(err)
	}
	for i, v := range b {
		if v != byte(i) {
			t.Fatalf("byte %d = %d, want %d (%v)", i, v, i, b)
		}
	}
	if err := readFull(c, b[:2], true); err == nil {
		t.Error("readFull of 2 bytes when 1 came before the close: no error")
	}
}

// TestTCPRows: the TCP limit against a local echo side gives, for the
// smallest size, the exchange, and for every size the latency (the
// better of blocking and polling), both kinds, and the bandwidth, all
// positive.
func TestTCPRows(t *testing.T) {
	addr := loopback(t, func(c net.Conn) {
		c.(*net.TCPConn).SetNoDelay(true)
		serveEcho(c)
	})
	tb, err := runTCP([]string{"-connect", addr, "-min", "8", "-max", "16", "-i", "200", "-r", "3"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range tb.rows {
		got[r.label] = r.value
	}
	for _, k := range []string{"8 exchange", "8 latency", "8 latency blocking", "8 latency polling", "8 bandwidth", "16 latency", "16 bandwidth"} {
		if got[k] <= 0 {
			t.Errorf("row %q = %v, want a positive figure (rows %v)", k, got[k], got)
		}
	}
	if _, ok := got["16 exchange"]; ok {
		t.Error("an exchange row for a size other than the smallest")
	}
	if got["8 latency"] != min(got["8 latency blocking"], got["8 latency polling"]) {
		t.Errorf("latency %v is not the better of blocking %v and polling %v", got["8 latency"], got["8 latency blocking"], got["8 latency polling"])
	}
}

// TestTCPRelayRows: with -relay the echo side relays the smallest
// size's ping-pongs through a second process, which answers every
// message (a lost one would hang the client, a wrong count fail its
// reads); each spin count gives a positive row, "8 relay latency" is
// the better one, and the second process is gone once the connection
// ends (the echo side waits for it).
func TestTCPRelayRows(t *testing.T) {
	served := make(chan struct{})
	addr := loopback(t, func(c net.Conn) {
		c.(*net.TCPConn).SetNoDelay(true)
		serveEcho(c)
		close(served)
	})
	tb, err := runTCP([]string{"-connect", addr, "-min", "8", "-max", "8", "-i", "300", "-r", "3", "-relay"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range tb.rows {
		got[r.label] = r.value
	}
	best := math.Inf(1)
	for _, spins := range relaySpins {
		k := fmt.Sprintf("8 relay latency spin %d", spins)
		if got[k] <= 0 {
			t.Errorf("row %q = %v, want a positive figure (rows %v)", k, got[k], got)
		}
		best = min(best, got[k])
	}
	if got["8 relay latency"] != best {
		t.Errorf("relay latency %v is not the best of the spin counts' rows %v", got["8 relay latency"], got)
	}
	select {
	case <-served:
	case <-time.After(40 * time.Second):
		t.Fatal("the echo side did not end (its second process did not stop) 40 s after the client closed")
	}
}

// loopback listens on 127.0.0.1 and serves the first connection with
// serve (then closes it); it returns the address.
func loopback(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		serve(c)
		c.Close()
	}()
	return ln.Addr().String()
}

// TestMemcpySplit checks the split copy's table (one positive row per
// size, the CPUs named, both threads on one CPU, bad flags) and that a
// split copy moves every byte of odd sizes once: the two halves meet
// at copyref.SplitPoint.
func TestMemcpySplit(t *testing.T) {
	p := runTable(t, []string{"memcpy_split", "-min", "65536", "-max", "131072", "-i", "5", "-r", "2"},
		[]string{"Size", "Bandwidth (MB/s)"}, sizes(65536, 131072))
	for _, v := range p.values {
		if !(v > 0) {
			t.Errorf("memcpy_split: bandwidth %v, want > 0", v)
		}
	}
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	runTable(t, []string{"memcpy_split", "-cpus", fmt.Sprintf("%d,%d", allowed[0], allowed[0]), "-min", "65536", "-max", "65536", "-i", "3", "-r", "1"},
		[]string{"Size", "Bandwidth (MB/s)"}, sizes(65536, 65536))
	var out bytes.Buffer
	for _, bad := range [][]string{{"memcpy_split", "-min", "3"}, {"memcpy_split", "-method", "nope"}, {"memcpy_split", "extra"}} {
		if err := run(bad, &out); err == nil {
			t.Errorf("run(%q) accepted it", bad)
		}
	}
	b := allowed[len(allowed)-1]
	for _, n := range []int{1, 63, 64, 65, 4097, 100003, 1 << 20} {
		src, dst := make([]byte, n), make([]byte, n)
		for i := range src {
			src[i] = byte(i*31 + 7)
		}
		for _, w := range []copyref.Way{copyref.Halves, copyref.Chunks, copyref.Guided} {
			clear(dst)
			var moved atomic.Int64 // over 3 copies: each byte 3 times
			if _, err := splitRun(dst, src, allowed[0], b, 3, func(d, s []byte, k int) { moved.Add(int64(copy(d, s))) }, w); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst, src) || moved.Load() != 3*int64(n) {
				t.Errorf("3 split copies of %d bytes (way %d) moved %d bytes, want %d, or differ from the source", n, w, moved.Load(), 3*n)
			}
		}
	}
}
