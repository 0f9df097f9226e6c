package osu_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/bench/internal/copyref"
	"github.com/goshmem/goshmem/bench/internal/osu"
	"github.com/goshmem/goshmem/internal/launch"
)

// These tests keep the output contract honest for the compare tool: they
// build each benchmark program, run it as a job through internal/launch
// with tiny sizes and iteration counts, and parse its output with
// osu.ParseOutput, checking the title, the info line, the columns, one
// row per size (or operation), and the values.

// run starts the program in bench/<dir> as npes PEs and returns its
// stdout and exit code.
func run(t *testing.T, dir string, npes int, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code, err := launch.Run(context.Background(), launch.Config{
		NPEs:    npes,
		Program: filepath.Join("..", "..", dir),
		Args:    args,
		Env:     []string{"SHMEM_SYMMETRIC_SIZE=64M"},
		Timeout: 3 * time.Minute,
		Stdout:  &out,
		Stderr:  &errOut,
	})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	if errOut.Len() > 0 && code == 0 {
		t.Errorf("%s %q wrote to stderr:\n%s", dir, args, errOut.String())
	}
	if code != 0 {
		t.Logf("%s %q: exit code %d, stderr:\n%s", dir, args, code, errOut.String())
	}
	return out.String(), code
}

// program describes what one program must print.
type program struct {
	dir, name string
	npes      int
	key       string   // key column
	metric    string   // main metric column
	keys      []string // nil: the sizes of -m
	scaled    bool     // iterations scale with the size
	positive  bool     // every metric value must be > 0 (not only the last row)
	comment   string   // a comment line that must follow, as a prefix
	text      bool     // the comment is text, not figures
}

var programs = []program{
	{dir: "put", name: "Put", npes: 2, key: osu.Size, metric: osu.LatencyUs, scaled: true},
	{dir: "get", name: "Get", npes: 2, key: osu.Size, metric: osu.LatencyUs, scaled: true},
	{dir: "put_pingpong", name: "Put Ping-Pong", npes: 2, key: osu.Size, metric: osu.LatencyUs, scaled: true, positive: true},
	{dir: "put_bw", name: "Put Bandwidth", npes: 2, key: osu.Size, metric: osu.BandwidthMBs, scaled: true, positive: true},
	{dir: "get_bw", name: "Get Bandwidth", npes: 2, key: osu.Size, metric: osu.BandwidthMBs, scaled: true, positive: true},
	{dir: "put_mr", name: "Put Message Rate", npes: 3, key: osu.Size, metric: osu.MessagesPS, scaled: true, positive: true},
	{dir: "atomics", name: "Atomics", npes: 2, key: osu.Operation, metric: osu.LatencyUs,
		keys: []string{"fetch_add", "fetch", "compare_swap", "add_rate"}, comment: "add_rate: "},
	{dir: "ptr", name: "Ptr", npes: 2, key: osu.Operation, metric: osu.LatencyUs,
		keys: []string{"ptr_store", "put", "local_store"}, comment: "ns per store: "},
	{dir: "barrier", name: "Barrier", npes: 3, key: osu.PEs, metric: osu.LatencyUs, keys: []string{"3"}, positive: true,
		comment: "avg over PEs: "},
	{dir: "broadcast", name: "Broadcast", npes: 3, key: osu.Size, metric: osu.LatencyUs, scaled: true},
	{dir: "reduce", name: "Reduce", npes: 3, key: osu.Size, metric: osu.LatencyUs, scaled: true,
		comment: "type: int64", text: true},
	{dir: "collect", name: "Collect", npes: 3, key: osu.Size, metric: osu.LatencyUs, scaled: true},
	{dir: "fcollect", name: "FCollect", npes: 3, key: osu.Size, metric: osu.LatencyUs, scaled: true},
	{dir: "alltoall", name: "Alltoall", npes: 3, key: osu.Size, metric: osu.LatencyUs, scaled: true},
	{dir: "team_create", name: "Team Create", npes: 3, key: osu.Teams, metric: osu.LatencyUs,
		keys: []string{strconv.Itoa(osu.TeamsPerRound)}, positive: true, comment: "destroy: "},
}

// Sizes of the runs: they cross the 64 KiB iteration threshold.
const (
	minSize, maxSize = 16384, 131072
	iters, warmup    = 40, 4
)

func TestPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs every benchmark program")
	}
	for _, p := range programs {
		t.Run(p.dir, func(t *testing.T) {
			t.Parallel()
			for _, full := range []bool{false, true} {
				args := []string{"-m", fmt.Sprintf("%d:%d", minSize, maxSize), "-i", strconv.Itoa(iters), "-w", strconv.Itoa(warmup)}
				if full {
					args = append(args, "-f")
				}
				out, code := run(t, p.dir, p.npes, args...)
				if code != 0 {
					t.Fatalf("%q: exit code %d, output:\n%s", args, code, out)
				}
				check(t, p, full, out)
			}
		})
	}
}

func check(t *testing.T, p program, full bool, out string) {
	t.Helper()
	o, err := osu.ParseOutput(strings.NewReader(out))
	if err != nil {
		t.Fatalf("full=%v: %v; output:\n%s", full, err, out)
	}
	defer func() {
		if t.Failed() {
			t.Logf("output:\n%s", out)
		}
	}()
	if o.Name != p.name || o.NPEs != p.npes || o.Iters != iters || o.Warmup != warmup {
		t.Errorf("title and info: %q, %d PEs, %d iterations, %d warm-up", o.Name, o.NPEs, o.Iters, o.Warmup)
	}
	sizes := osu.Sizes(minSize, maxSize)
	keys := p.keys
	if keys == nil {
		for _, s := range sizes {
			keys = append(keys, strconv.Itoa(s))
		}
	}
	wantTables := 1
	if p.dir == "ptr" {
		wantTables = 2 // -m was given: the bulk-copy table follows
	}
	if len(o.Tables) != wantTables {
		t.Fatalf("%d tables, want %d", len(o.Tables), wantTables)
	}
	tb := o.Tables[0]
	wantCols := append([]string{p.key}, osu.FullColumns(p.metric, full)...)
	if !slices.Equal(tb.Columns, wantCols) {
		t.Errorf("columns %q, want %q", tb.Columns, wantCols)
	}
	var got []string
	for _, r := range tb.Rows {
		got = append(got, r.Key)
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("rows %q, want %q", got, keys)
	}
	for i, r := range tb.Rows {
		for _, v := range r.Values {
			if v < 0 {
				t.Errorf("row %s: negative value %v", r.Key, v)
			}
		}
		v := r.Values[0]
		// Latencies of nanoseconds print as 0.00 us; the largest size
		// and the tests whose values are large must be positive.
		if (p.positive || i == len(tb.Rows)-1 && p.keys == nil) && v <= 0 {
			t.Errorf("row %s: %s = %v, want > 0", r.Key, p.metric, v)
		}
		if !full {
			continue
		}
		min, max, n := r.Values[1], r.Values[2], r.Values[3]
		if p.dir == "put_mr" {
			if !(min <= max && max <= v) { // the row is the sum over senders
				t.Errorf("row %s: sum %v, min %v, max %v", r.Key, v, min, max)
			}
		} else if !(min <= v && v <= max) {
			t.Errorf("row %s: value %v outside [min %v, max %v]", r.Key, v, min, max)
		}
		wantN := iters
		if p.scaled {
			wantN = osu.Scale(iters, sizes[i])
		}
		if n != float64(wantN) {
			t.Errorf("row %s: %v iterations, want %d", r.Key, n, wantN)
		}
	}
	if p.comment != "" {
		i := slices.IndexFunc(o.Comments, func(c string) bool { return strings.HasPrefix(c, p.comment) })
		if i < 0 {
			t.Errorf("no comment %q... in %q", p.comment, o.Comments)
		} else if !p.text {
			// Every figure of the comment is positive.
			n := 0
			for _, f := range strings.Fields(o.Comments[i]) {
				if v, err := strconv.ParseFloat(f, 64); err == nil {
					n++
					if v <= 0 {
						t.Errorf("comment %q: %s is not > 0", o.Comments[i], f)
					}
				}
			}
			if n == 0 {
				t.Errorf("comment %q has no figures", o.Comments[i])
			}
		}
	}
	if p.dir == "ptr" {
		bulk := o.Tables[1]
		cols := []string{osu.Size, "Ptr copy (us)", "Put (us)"}
		if full {
			cols = append(cols, osu.Iterations)
		}
		if !slices.Equal(bulk.Columns, cols) || len(bulk.Rows) != len(sizes) {
			t.Fatalf("bulk table: columns %q, %d rows; want %q, %d rows", bulk.Columns, len(bulk.Rows), cols, len(sizes))
		}
		for i, r := range bulk.Rows {
			if r.Key != strconv.Itoa(sizes[i]) || r.Values[0] < 0 || r.Values[1] < 0 {
				t.Errorf("bulk row %q %v", r.Key, r.Values)
			}
			if full && r.Values[2] != float64(osu.Scale(iters, sizes[i])) {
				t.Errorf("bulk row %q: %v iterations", r.Key, r.Values[2])
			}
		}
		if last := bulk.Rows[len(bulk.Rows)-1]; last.Values[0] <= 0 || last.Values[1] <= 0 {
			t.Errorf("bulk copies of %s bytes took no time: %v", last.Key, last.Values)
		}
	}
}

// TestTooFewPEs: a pair test started as one PE says so and fails; the
// barrier runs with one PE.
func TestTooFewPEs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchmark programs")
	}
	t.Parallel()
	var out, errOut bytes.Buffer
	code, err := launch.Run(context.Background(), launch.Config{
		NPEs: 1, Program: filepath.Join("..", "..", "put_pingpong"), Args: []string{"-m", "8"},
		Timeout: 3 * time.Minute, Stdout: &out, Stderr: &errOut,
	})
	if err != nil || code == 0 || out.String() != "# Put Ping-Pong needs at least 2 PEs\n" {
		t.Errorf("one PE: code %d, err %v, stdout %q, stderr %q", code, err, out.String(), errOut.String())
	}
	o, code := run(t, "barrier", 1, "-i", "10", "-w", "1")
	if code != 0 || !strings.HasPrefix(o, "# OSU-style goshmem Barrier Test\n# PEs: 1  iterations: 10  warmup: 1\n# PEs           Latency (us)\n1  ") {
		t.Errorf("barrier on one PE: code %d, output %q", code, o)
	}
}

// commentMatch returns the submatches of re in the first comment of a
// program's output o that it matches; none is a test failure.
func commentMatch(t *testing.T, o string, re *regexp.Regexp) []string {
	t.Helper()
	p, err := osu.ParseOutput(strings.NewReader(o))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Comments {
		if m := re.FindStringSubmatch(c); m != nil {
			return m
		}
	}
	t.Fatalf("no comment matching %s in\n%s", re, o)
	return nil
}

// TestPingPongHandoff runs put_pingpong -handoff on 2 and 3 PEs (PE 2
// the partner, PE 1 waiting in the barriers): the interleaved comment
// gives positive figures of both loops and of each way of handing the
// line over, and the ratio is the loop's over the fastest way.
func TestPingPongHandoff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchmark programs")
	}
	t.Parallel()
	re := regexp.MustCompile(`^interleaved 8 B: put_pingpong ([0-9.]+) us  hand-off ([0-9.]+) us  ratio ([0-9.]+) \[([0-9.]+)-([0-9.]+)\] over 20 rounds \(hand-off per way, us:  store\+pause ([0-9.]+)  xchg\+pause ([0-9.]+)  store\+tight ([0-9.]+)  xchg\+tight ([0-9.]+); each round's fastest way: ratio ([0-9.]+) \[([0-9.]+)-([0-9.]+)\]\)$`)
	for _, c := range []struct {
		npes int
		args []string
	}{{2, nil}, {3, []string{"-peer", "2"}}} {
		o, code := run(t, "put_pingpong", c.npes, append([]string{"-m", "8:8", "-i", "200", "-w", "10", "-handoff"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%d PEs: exit code %d", c.npes, code)
		}
		m := commentMatch(t, o, re)
		var err error
		v := make([]float64, len(m)-1)
		for i, s := range m[1:] {
			if v[i], err = strconv.ParseFloat(s, 64); err != nil || v[i] <= 0 {
				t.Errorf("%d PEs: figure %d %q not positive in %q", c.npes, i, s, m[0])
			}
		}
		ways := v[5:9]
		// The hand-off is the way with the least median, so at most
		// the median of any one way.
		if best := slices.Min(ways); v[1] > best {
			t.Errorf("%d PEs: hand-off %v is slower than the way at %v (of %v)", c.npes, v[1], best, ways)
		}
		if v[3] > v[2] || v[2] > v[4] {
			t.Errorf("%d PEs: ratio %v outside its range [%v-%v]", c.npes, v[2], v[3], v[4])
		}
		// Against each round's fastest block the loop's ratio is at
		// least the one against a fixed way, round by round.
		if r, lo, hi := v[9], v[10], v[11]; lo > r || r > hi || r < v[2] || lo < v[3] || hi < v[4] {
			t.Errorf("%d PEs: each round's fastest: ratio %v [%v-%v], against the way %v [%v-%v]", c.npes, r, lo, hi, v[2], v[3], v[4])
		}
	}
}

// TestBarrierHandoff runs barrier -handoff on 2 PEs: the interleaved
// comment gives positive figures of the barrier and of every bare
// layout, the bare barrier is the median of each round's fastest way
// (so at most any one way's median), and the ratio lies in its range;
// on 3 PEs it says why it did not measure.
func TestBarrierHandoff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchmark programs")
	}
	t.Parallel()
	re := regexp.MustCompile(`^interleaved barrier: barrier ([0-9.]+) us  bare ([0-9.]+) us  ratio ([0-9.]+) \[([0-9.]+)-([0-9.]+)\] over 20 rounds \(bare barrier, us:((?:  [a-z]+/[a-z]+ [0-9.]+)+)\)$`)
	o, code := run(t, "barrier", 2, "-i", "200", "-w", "10", "-handoff")
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	m := commentMatch(t, o, re)
	var err error
	v := make([]float64, 5)
	for i, s := range m[1:6] {
		if v[i], err = strconv.ParseFloat(s, 64); err != nil || v[i] <= 0 {
			t.Errorf("figure %d %q not positive in %q", i, s, m[0])
		}
	}
	f := strings.Fields(m[6])
	var ways []float64
	for i := 1; i < len(f); i += 2 {
		w, err := strconv.ParseFloat(f[i], 64)
		if err != nil || w <= 0 {
			t.Errorf("way %s: %q", f[i-1], f[i])
		}
		ways = append(ways, w)
	}
	if len(ways) != 6 {
		t.Errorf("%d bare ways in %q; want 3 layouts by 2 stores", len(ways), m[6])
	}
	if best := slices.Min(ways); v[1] > best {
		t.Errorf("bare %v is slower than the way at %v (of %v)", v[1], best, ways)
	}
	if v[3] > v[2] || v[2] > v[4] {
		t.Errorf("ratio %v outside its range [%v-%v]", v[2], v[3], v[4])
	}
	o, code = run(t, "barrier", 3, "-i", "50", "-w", "10", "-handoff")
	if code != 0 || !strings.Contains(o, "# interleaved barrier: not measured: 3 PEs") {
		t.Errorf("3 PEs: exit code %d, output\n%s", code, o)
	}
}

// TestVsBarrier: a collective run with -vs-barrier ends with one
// comment giving, for every size of its table, a positive median ratio
// within its [min-max] range.
func TestVsBarrier(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchmark programs")
	}
	t.Parallel()
	o, code := run(t, "reduce", 2, "-m", "8:32", "-i", "200", "-w", "10", "-vs-barrier")
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	p, err := osu.ParseOutput(strings.NewReader(o))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Comments {
		if rest, ok := strings.CutPrefix(c, osu.VsBarrierPrefix); ok {
			got = strings.Split(rest, "; ")
		}
	}
	if len(got) != 3 || len(p.Tables) != 1 || len(p.Tables[0].Rows) != 3 {
		t.Fatalf("want 3 rows and 3 ratios, got\n%s", o)
	}
	for i, f := range got {
		var k string
		var q, lo, hi float64
		if _, err := fmt.Sscanf(f, "%s %f [%f-%f]", &k, &q, &lo, &hi); err != nil || k != p.Tables[0].Rows[i].Key || q <= 0 || q < lo || q > hi {
			t.Errorf("ratio %d %q (err %v): want size %s, 0 < min <= median <= max", i, f, err, p.Tables[0].Rows[i].Key)
		}
	}
}

// TestInterleave: bench/interleave (not OSU-style) prints its title and
// one row per operation with a positive median, a range around it and
// its ratio to the world barrier (1.00 for the barrier itself).
func TestInterleave(t *testing.T) {
	out, code := run(t, "interleave", 2, "-rounds", "3", "-block", "20")
	if code != 0 {
		t.Fatalf("exit code %d, output:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "# goshmem interleave: 2 PEs, 3 rounds of 20 calls") {
		t.Fatalf("no title:\n%s", out)
	}
	row := regexp.MustCompile(`^(\S+(?: \d+ B)?)\s+([0-9.]+)\s+\[([0-9.]+)-([0-9.]+)\]\s+([0-9.]+)$`)
	var ops []string
	for _, l := range lines[2:] {
		m := row.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("bad row %q", l)
			continue
		}
		med, _ := strconv.ParseFloat(m[2], 64)
		lo, _ := strconv.ParseFloat(m[3], 64)
		hi, _ := strconv.ParseFloat(m[4], 64)
		ratio, _ := strconv.ParseFloat(m[5], 64)
		if med <= 0 || lo > med || med > hi || ratio <= 0 {
			t.Errorf("row %q: median %v outside [%v, %v] or ratio %v not positive", l, med, lo, hi, ratio)
		}
		if m[1] == "world.Sync" && ratio != 1 {
			t.Errorf("world.Sync's ratio to itself is %v", ratio)
		}
		ops = append(ops, m[1])
	}
	want := []string{"world.Sync", "split.Sync", "reduce 8 B", "fcollect 8 B", "collect 8 B", "alltoall 8 B", "broadcast 8 B", "broadcast 32 B",
		"reduce 256 B", "fcollect 256 B", "collect 256 B", "broadcast 256 B"}
	if !slices.Equal(ops, want) {
		t.Errorf("operations %q, want %q", ops, want)
	}
}

// TestVsCopy: put_bw and get_bw run with -copy end with one comment
// giving, for every size of their table from 64 KiB, a positive median
// ratio to the best lone copy within its range, and positive
// bandwidths; smaller sizes are left out. put_pingpong -copy does the
// same against the bare ping-pong (both partners run its blocks).
func TestVsCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchmark programs")
	}
	t.Parallel()
	for _, c := range []struct{ prog, prefix string }{
		{"put_bw", copyref.Prefix}, {"get_bw", copyref.Prefix}, {"put_pingpong", copyref.PatternPrefix},
	} {
		prog := c.prog
		o, code := run(t, prog, 2, "-m", "32768:131072", "-i", "20", "-w", "2", "-copy")
		if code != 0 {
			t.Fatalf("%s: exit code %d", prog, code)
		}
		p, err := osu.ParseOutput(strings.NewReader(o))
		if err != nil {
			t.Fatal(err)
		}
		var figs []copyref.Figure
		n := 0
		for _, cm := range p.Comments {
			if rest, ok := strings.CutPrefix(cm, c.prefix); ok {
				n++
				if figs, err = copyref.Parse(rest); err != nil {
					t.Fatalf("%s: %v", prog, err)
				}
			}
		}
		if n != 1 || len(figs) != 2 || figs[0].Size != 65536 || figs[1].Size != 131072 {
			t.Fatalf("%s: want one comment with 64 KiB and 128 KiB, got %+v in\n%s", prog, figs, o)
		}
		for _, g := range figs {
			if g.Ratio <= 0 || g.Ratio < g.Min || g.Ratio > g.Max || g.Transfer <= 0 || g.Copy <= 0 {
				t.Errorf("%s: figure %+v: want 0 < min <= ratio <= max, positive bandwidths", prog, g)
			}
		}
	}
}
