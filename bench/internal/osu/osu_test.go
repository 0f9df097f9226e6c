package osu

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

func TestParseSizes(t *testing.T) {
	const def = 4 << 20
	good := []struct {
		in       string
		min, max int
	}{
		{"1024", 1, 1024},
		{"1", 1, 1},
		{"8:64", 8, 64},
		{"1:4194304", 1, 4194304},
		{"8:", 8, def},
		{":64", 1, 64},
		{"3:100", 3, 100},
		{"64:64", 64, 64},
		{"007:0010", 7, 10},
		{"1073741824", 1, MaxSize},
		{"1:1073741824", 1, MaxSize},
	}
	for _, tc := range good {
		min, max, err := ParseSizes(tc.in, def)
		if err != nil || min != tc.min || max != tc.max {
			t.Errorf("ParseSizes(%q) = %d, %d, %v; want %d, %d, nil", tc.in, min, max, err, tc.min, tc.max)
		}
	}
	bad := []struct{ in, why string }{
		{"", "no sizes"},
		{":", "no sizes"},
		{"0", "maximum is below 1"},
		{"4:0", "maximum is below 1"},
		{"0:5", "minimum is below 1"},
		{"5:4", "minimum is above maximum"},
		{"9:", "minimum is above maximum"}, // with def = 8 below
		{"-1", "maximum is not a decimal"},
		{"1:-2", "maximum is not a decimal"},
		{"+4", "maximum is not a decimal"},
		{"a", "maximum is not a decimal"},
		{"x:8", "minimum is not a decimal"},
		{"1:b", "maximum is not a decimal"},
		{"1:2:3", "maximum is not a decimal"},
		{" 1", "maximum is not a decimal"},
		{"1 ", "maximum is not a decimal"},
		{"0x10", "maximum is not a decimal"},
		{"1e3", "maximum is not a decimal"},
		{"1_000", "maximum is not a decimal"},
		{"1.5", "maximum is not a decimal"},
		{"1:1073741825", "maximum is above 1 GiB"},
		{"99999999999", "maximum is not a decimal"},
		{"2147483648", "maximum is above 1 GiB"},
	}
	for _, tc := range bad {
		d := def
		if tc.in == "9:" {
			d = 8
		}
		min, max, err := ParseSizes(tc.in, d)
		if err == nil {
			t.Errorf("ParseSizes(%q) = %d, %d, nil; want an error", tc.in, min, max)
			continue
		}
		if !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "use -m [min:]max") {
			t.Errorf("ParseSizes(%q) error %q; want it to say %q and how to use -m", tc.in, err, tc.why)
		}
	}
}

func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"1024", "8:64", "8:", ":64", ":", "", "0:5", "1:1073741824", "-1", "1:2:3", "99999999999", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const def = 4 << 20
		min, max, err := ParseSizes(s, def)
		if err != nil {
			if min != 0 || max != 0 {
				t.Fatalf("ParseSizes(%q) = %d, %d with error %v", s, min, max, err)
			}
			return
		}
		if min < MinSize || min > max || max > MaxSize {
			t.Fatalf("ParseSizes(%q) = %d, %d: out of range", s, min, max)
		}
		// The canonical form parses to the same sizes.
		canon := strconv.Itoa(min) + ":" + strconv.Itoa(max)
		if m2, x2, err := ParseSizes(canon, def); err != nil || m2 != min || x2 != max {
			t.Fatalf("ParseSizes(%q) = %d, %d, %v; ParseSizes(%q) gave %d, %d", canon, m2, x2, err, s, min, max)
		}
		sizes := Sizes(min, max)
		if len(sizes) == 0 || sizes[0] != min || sizes[len(sizes)-1] > max || sizes[len(sizes)-1]*2 <= max {
			t.Fatalf("Sizes(%d, %d) = %v", min, max, sizes)
		}
	})
}

func TestSizes(t *testing.T) {
	cases := []struct {
		min, max int
		want     []int
	}{
		{1, 1, []int{1}},
		{1, 8, []int{1, 2, 4, 8}},
		{1, 10, []int{1, 2, 4, 8}},
		{4, 64, []int{4, 8, 16, 32, 64}},
		{3, 100, []int{3, 6, 12, 24, 48, 96}},
		{MaxSize, MaxSize, []int{MaxSize}},
		{5, 4, nil},
		{0, 4, nil},
		{-1, 4, nil},
	}
	for _, tc := range cases {
		if got := Sizes(tc.min, tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("Sizes(%d, %d) = %v, want %v", tc.min, tc.max, got, tc.want)
		}
	}
	all := Sizes(1, MaxSize)
	if len(all) != 31 || all[30] != MaxSize {
		t.Errorf("Sizes(1, 1 GiB) has %d sizes, last %d; want 31, 1 GiB", len(all), all[len(all)-1])
	}
	big := Sizes(math.MaxInt/2+1, math.MaxInt) // must not overflow into a loop
	if len(big) != 1 {
		t.Errorf("Sizes(MaxInt/2+1, MaxInt) = %v", big)
	}
}

func TestScale(t *testing.T) {
	cases := []struct{ n, size, want int }{
		{10000, 1, 10000},
		{10000, 8192, 10000},
		{10000, 65536, 10000},
		{10000, 65537, 1000},
		{10000, 131072, 1000},
		{10000, 1 << 20, 1000},
		{10000, 2 << 20, 100},
		{10000, 16 << 20, 100},
		{1000, 4 << 20, 10},
		{5, 128 << 10, 1},
		{5, 4 << 20, 1},
		{99, 4 << 20, 1},
		{0, 1, 0},
		{0, 4 << 20, 0},
		{-3, 1, 0},
	}
	for _, tc := range cases {
		if got := Scale(tc.n, tc.size); got != tc.want {
			t.Errorf("Scale(%d, %d) = %d, want %d", tc.n, tc.size, got, tc.want)
		}
	}
	c := Config{Iters: 200, Warmup: 20}
	if c.ItersFor(1<<20) != 20 || c.WarmupFor(1<<20) != 2 || c.WarmupFor(4<<20) != 1 {
		t.Errorf("Config scaling: %d %d %d", c.ItersFor(1<<20), c.WarmupFor(1<<20), c.WarmupFor(4<<20))
	}
}

func TestParse(t *testing.T) {
	d := LatencyDefaults
	c, err := Parse("put", nil, d, io.Discard)
	want := Config{MinSize: 1, MaxSize: 4 << 20, Iters: 10000, Warmup: 1000}
	if err != nil || c != want {
		t.Errorf("defaults: %+v, %v; want %+v", c, err, want)
	}
	c, err = Parse("put", []string{"-m", "8:1024", "-i", "50", "-w", "0", "-f"}, d, io.Discard)
	want = Config{MinSize: 8, MaxSize: 1024, SizesSet: true, Iters: 50, Warmup: 0, Full: true}
	if err != nil || c != want {
		t.Errorf("all flags: %+v, %v; want %+v", c, err, want)
	}
	c, err = Parse("put_bw", []string{"-m=64"}, BandwidthDefaults, io.Discard)
	if err != nil || c.MinSize != 1 || c.MaxSize != 64 || !c.SizesSet || c.Iters != 1000 || c.Warmup != 100 {
		t.Errorf("-m=64 with bandwidth defaults: %+v, %v", c, err)
	}
	c, err = Parse("put_bw", []string{"-m", "1024:"}, BandwidthDefaults, io.Discard)
	if err != nil || c.MinSize != 1024 || c.MaxSize != 16<<20 {
		t.Errorf("-m 1024: with bandwidth defaults: %+v, %v", c, err)
	}

	bad := []struct {
		args []string
		msg  string
	}{
		{[]string{"-i", "0"}, "-i 0: need at least 1"},
		{[]string{"-i", "-5"}, "-i -5"},
		{[]string{"-w", "-1"}, "-w -1: warm-up iterations cannot be negative"},
		{[]string{"-m", "0:8"}, "minimum is below 1"},
		{[]string{"-m", "x"}, "not a decimal"},
		{[]string{"-x", "A=1"}, "flag provided but not defined: -x"},
		{[]string{"-i", "many"}, "invalid value"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tc := range bad {
		var out bytes.Buffer
		_, err := Parse("put", tc.args, d, &out)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", tc.args)
			continue
		}
		if !strings.Contains(out.String(), tc.msg) || !strings.Contains(out.String(), "usage: oshrun -n N ./bench/put") {
			t.Errorf("Parse(%q) printed %q; want %q and the usage", tc.args, out.String(), tc.msg)
		}
	}
	var out bytes.Buffer
	if _, err := Parse("put", []string{"-h"}, d, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-m [min:]max") {
		t.Errorf("-h: %v, %q", err, out.String())
	}
}

func TestParseExtra(t *testing.T) {
	// A default minimum: "max" and ":max" start there, "min:max" as given.
	for _, tc := range []struct {
		args     []string
		min, max int
	}{
		{nil, 8, 4 << 20},
		{[]string{"-m", "1024"}, 8, 1024},
		{[]string{"-m", ":1024"}, 8, 1024},
		{[]string{"-m", "1:1024"}, 1, 1024},
		{[]string{"-m", "64:"}, 64, 4 << 20},
	} {
		c, err := Parse("reduce", tc.args, ReduceDefaults, io.Discard)
		if err != nil || c.MinSize != tc.min || c.MaxSize != tc.max {
			t.Errorf("reduce %q: %+v, %v; want %d:%d", tc.args, c, err, tc.min, tc.max)
		}
	}
	var out bytes.Buffer
	if _, err := Parse("reduce", []string{"-m", "4"}, ReduceDefaults, &out); err == nil || !strings.Contains(out.String(), "minimum is above maximum") {
		t.Errorf("reduce -m 4: %v, %q", err, out.String())
	}

	// A program's own flag, checked after parsing.
	typ := "int64"
	x := Extra{
		Usage:    "[-t int64|float64]",
		Register: func(fs *flag.FlagSet) { fs.StringVar(&typ, "t", typ, "type") },
		Check: func(c Config) error {
			if typ != "int64" && typ != "float64" {
				return fmt.Errorf("-t %q: bad type", typ)
			}
			return nil
		},
	}
	c, err := ParseExtra("reduce", []string{"-t", "float64", "-i", "5"}, ReduceDefaults, x, io.Discard)
	if err != nil || typ != "float64" || c.Iters != 5 {
		t.Errorf("-t float64: %+v, %v, type %q", c, err, typ)
	}
	out.Reset()
	if _, err := ParseExtra("reduce", []string{"-t", "int8"}, ReduceDefaults, x, &out); err == nil ||
		!strings.Contains(out.String(), `-t "int8": bad type`) || !strings.Contains(out.String(), "./bench/reduce [-m [min:]max] [-i N] [-w N] [-f] [-t int64|float64]") {
		t.Errorf("-t int8: %v, %q", err, out.String())
	}
	// Without Extra, -t is unknown.
	if _, err := Parse("put", []string{"-t", "int64"}, LatencyDefaults, io.Discard); err == nil {
		t.Errorf("put accepted -t")
	}
}

func TestMultiples(t *testing.T) {
	run, skipped := Multiples(Sizes(1, 64), 8)
	if !slices.Equal(run, []int{8, 16, 32, 64}) || !slices.Equal(skipped, []int{1, 2, 4}) {
		t.Errorf("Multiples(1..64, 8) = %v, %v", run, skipped)
	}
	if got := SkipComment(skipped, "not whole 8-byte elements"); got != "skipped sizes: 1 2 4 (not whole 8-byte elements)" {
		t.Errorf("SkipComment = %q", got)
	}
}

func TestFormat(t *testing.T) {
	eq := func(got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	}
	eq(Title("Put Ping-Pong"), "# OSU-style goshmem Put Ping-Pong Test")
	eq(Info(2, 10000, 1000), "# PEs: 2  iterations: 10000  warmup: 1000")
	eq(FormatHeader(Size, LatencyUs), "# Size          Latency (us)")
	eq(FormatHeader(Size, BandwidthMBs), "# Size          Bandwidth (MB/s)")
	eq(FormatHeader(Size, MessagesPS), "# Size          Messages/s")
	eq(FormatHeader(Operation, LatencyUs), "# Operation     Latency (us)")
	eq(FormatHeader(PEs, LatencyUs), "# PEs           Latency (us)")
	eq(FormatHeader(Teams, LatencyUs), "# Teams         Latency (us)")
	eq(FormatHeader(Size, FullColumns(LatencyUs, true)...),
		"# Size          Latency (us)  Min Latency (us)  Max Latency (us)  Iterations")
	eq(FormatHeader(Size, FullColumns(BandwidthMBs, true)...),
		"# Size          Bandwidth (MB/s)  Min Bandwidth (MB/s)  Max Bandwidth (MB/s)  Iterations")
	eq(FormatHeader(Size, "Ptr copy (us)", "Put (us)"), "# Size          Ptr copy (us)  Put (us)")
	eq(FormatRow("1", 0.05), "1                          0.050")
	eq(FormatRow("4194304", 437.984), "4194304                  437.984")
	eq(FormatRow("compare_swap", 0.0256), "compare_swap               0.026")
	eq(FormatRow("8", 1.5, 2.25), "8                          1.500           2.250")
	eq(FormatRowIters("131072", 1000, 4.3, 4.3, 4.3),
		"131072                     4.300           4.300           4.300            1000")
	eq(FormatRow("16777216", 123456789.1266), "16777216           123456789.127")
	eq(fmt.Sprintf("%-16d%16.3f", 1024, 0.125), FormatRow("1024", 0.125)) // the C printf form
	eq(fmt.Sprintf("%-16s%16.3f%16d", "fetch", 0.5, 10), FormatRowIters("fetch", 10, 0.5))
}

func TestPrinter(t *testing.T) {
	var b bytes.Buffer
	p := &Printer{W: &b, On: true}
	p.Start("Put", 2, Config{Iters: 100, Warmup: 10})
	p.Columns(Size, LatencyUs)
	p.Result("1", 0.5, Stats{N: 1, Min: 0.5, Max: 0.5, Sum: 0.5}, 100)
	p.Comment("note: %d", 3)
	want := "# OSU-style goshmem Put Test\n# PEs: 2  iterations: 100  warmup: 10\n" +
		"# Size          Latency (us)\n1                          0.500\n# note: 3\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	p.Full = true
	p.Columns(Size, BandwidthMBs)
	p.Result("2", 100, Stats{N: 2, Min: 40, Max: 60, Sum: 100}, 7)
	want = "# Size          Bandwidth (MB/s)  Min Bandwidth (MB/s)  Max Bandwidth (MB/s)  Iterations\n" +
		"2                        100.000          40.000          60.000               7\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	off := &Printer{W: &b}
	off.Start("Put", 2, Config{})
	off.Columns(Size, LatencyUs)
	off.Row("1", 1)
	off.Comment("x: y")
	if b.Len() != 0 {
		t.Errorf("a printer that is off wrote %q", b.String())
	}
}

func TestStats(t *testing.T) {
	nan := math.NaN()
	s := stats([]float64{nan, 3, 1, nan, 2})
	if s.N != 3 || s.Min != 1 || s.Max != 3 || s.Sum != 6 || s.Avg() != 2 {
		t.Errorf("stats = %+v", s)
	}
	s = stats([]float64{nan, nan})
	if s.N != 0 || s.Avg() != 0 {
		t.Errorf("stats of nothing = %+v", s)
	}
	if MBps(64e6, 1e6) != 64 {
		t.Errorf("MBps(64e6 bytes, 1 s) = %v", MBps(64e6, 1e6))
	}
}

func TestHostsPE0(t *testing.T) {
	for v, want := range map[string]bool{"": true, "0": true, "1": false, "4": false} {
		if got := hostsPE0(func(string) string { return v }); got != want {
			t.Errorf("GOSHMEM_PE=%q: hostsPE0 = %v", v, got)
		}
	}
}

func TestParseOutput(t *testing.T) {
	good := `# OSU-style goshmem Atomics Test
# PEs: 2  iterations: 10000  warmup: 1000
# Operation     Latency (us)  Min Latency (us)  Max Latency (us)  Iterations
fetch_add                   0.02            0.02            0.02           10000
add_rate                    0.02            0.02            0.02           10000
# add_rate: 52.34 Mops/s
# Size          Ptr copy (us)  Put (us)
1                           0.00            0.01
`
	o, err := ParseOutput(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if o.Name != "Atomics" || o.NPEs != 2 || o.Iters != 10000 || o.Warmup != 1000 || len(o.Tables) != 2 ||
		!slices.Equal(o.Comments, []string{"add_rate: 52.34 Mops/s"}) {
		t.Fatalf("parsed %+v", o)
	}
	t0 := o.Tables[0]
	if !slices.Equal(t0.Columns, []string{"Operation", "Latency (us)", "Min Latency (us)", "Max Latency (us)", "Iterations"}) ||
		len(t0.Rows) != 2 || t0.Rows[1].Key != "add_rate" || !slices.Equal(t0.Rows[1].Values, []float64{0.02, 0.02, 0.02, 10000}) ||
		t0.Column("Iterations") != 3 || t0.Column("nope") != -1 {
		t.Errorf("table 0: %+v", t0)
	}
	if t1 := o.Tables[1]; len(t1.Rows) != 1 || t1.Rows[0].Key != "1" || t1.Columns[2] != "Put (us)" {
		t.Errorf("table 1: %+v", t1)
	}

	head := "# OSU-style goshmem Put Test\n# PEs: 2  iterations: 1  warmup: 0\n"
	bad := map[string]string{
		"":             "0 lines",
		"# Put Test\n": "title",
		"# OSU-style goshmem Put Test\n# PEs 2\n":                                                 "PEs: <n>",
		head + "1                           0.05\n":                                               "data before any header",
		head + "# Size          Latency (us)\n1                           0.05            0.01\n": "3 fields",
		head + "# Size          Latency (us)\n1                           nan\n":                  "not a finite number",
		head + "# Size          Latency (us)\n1                           +Inf\n":                 "not a finite number",
		head + "# Size          Latency (us)\n1 0.05\n":                                           "left-aligned",
		head + "# Size          Latency (us)\n 1                          0.05\n":                 "left-aligned",
		head + "# Size          Latency (us)\n\n":                                                 "empty line",
	}
	for in, msg := range bad {
		if _, err := ParseOutput(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseOutput(%q) error %v; want %q", in, err, msg)
		}
	}
}

// TestStartProfile: GOSHMEM_BENCH_CPUPROFILE gives one profile per
// process, named after the PE that took it, and nothing without it.
func TestStartProfile(t *testing.T) {
	var taken atomic.Bool
	if stop := startProfile("", 0, &taken); stop != nil || taken.Load() {
		t.Fatal("no path: a profile was started")
	}
	path := filepath.Join(t.TempDir(), "cpu")
	stop := startProfile(path, 3, &taken)
	if stop == nil {
		t.Fatal("a path: no profile started")
	}
	if again := startProfile(path, 4, &taken); again != nil {
		again()
		t.Fatal("a second PE of the process started a second profile")
	}
	stop()
	st, err := os.Stat(path + ".pe3")
	if err != nil || st.Size() == 0 {
		t.Fatalf("the profile %s.pe3: %v, %v", path, st, err)
	}
	if _, err := os.Stat(path + ".pe4"); err == nil {
		t.Error("a profile for the second PE exists")
	}
}

// TestBoolFlag: a program's one boolean flag is off by default, on when
// given, and named in the usage line.
func TestBoolFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{{nil, false}, {[]string{"-host"}, true}, {[]string{"-i", "5", "-host=false"}, false}} {
		v, x := BoolFlag("host", "help")
		if _, err := ParseExtra("barrier", c.args, LatencyDefaults, x, io.Discard); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if *v != c.want {
			t.Errorf("%v: -host = %v, want %v", c.args, *v, c.want)
		}
	}
	_, x := BoolFlag("host", "help")
	var out strings.Builder
	ParseExtra("barrier", []string{"-h"}, LatencyDefaults, x, &out)
	if !strings.Contains(out.String(), "[-host]") {
		t.Errorf("usage does not name -host:\n%s", out.String())
	}
}

// TestFastest checks Fastest against its definition on a table: the
// bare way with the least median, the loop over it round by round, and
// the medians. Each round's fastest block is not the reference: here
// the loop costs what way a costs, and per-round minima (1 2 2) would
// put it 1.5-2 times above them.
func TestFastest(t *testing.T) {
	ways := []Way{{Name: "loop"}, {Name: "a"}, {Name: "b"}}
	times := [][]float64{
		{1, 4, 2}, // the loop
		{1, 4, 2}, // a: median 2
		{4, 2, 8}, // b: median 4
	}
	v := Fastest(ways, times)
	if want := []float64{1, 1, 1}; !slices.Equal(v.Ratios, want) {
		t.Errorf("Ratios = %v, want %v", v.Ratios, want)
	}
	if v.Loop != 2 || v.Bare != 2 || v.Best != "a" {
		t.Errorf("Loop %v Bare %v Best %q, want 2, 2 and a (the medians of the loop and of way a, the way with the least median)", v.Loop, v.Bare, v.Best)
	}
	if got, want := v.Ratio(), "ratio 1.00 [1.00-1.00] over 3 rounds"; got != want {
		t.Errorf("Ratio() = %q, want %q", got, want)
	}
	// Each round's fastest block: 1, 2, 2 (a, b, a).
	if want := []float64{1, 2, 1}; !slices.Equal(v.RoundBest, want) {
		t.Errorf("RoundBest = %v, want %v", v.RoundBest, want)
	}
	if got, want := v.RoundRatio(), "each round's fastest way: ratio 1.00 [1.00-2.00]"; got != want {
		t.Errorf("RoundRatio() = %q, want %q", got, want)
	}
	for _, c := range []struct {
		x    float64
		want string
	}{{1.005, "1.00"}, {6917.3, "6917.30"}, {0.5, "0.50"}, {0.1, "0.10"}, {0.042, "0.042"}, {0.0042, "0.0042"}, {0.00042, "0.00042"}} {
		if got := fmtRatio(c.x); got != c.want {
			t.Errorf("fmtRatio(%v) = %q, want %q", c.x, got, c.want)
		}
	}
	if got, want := (VsFastest{Ratios: []float64{0.003, 2, 4}}).Ratio(), "ratio 2.00 [0.0030-4.00] over 3 rounds"; got != want {
		t.Errorf("Ratio() = %q, want %q", got, want)
	}
	if got, want := v.EachWay(), "  a 2.0000  b 4.0000"; got != want {
		t.Errorf("EachWay() = %q, want %q", got, want)
	}
}

// TestInterleavedRotates: round i starts with way i mod len(ways), and
// every way runs once per round.
func TestInterleavedRotates(t *testing.T) {
	var order []string
	ways := []Way{{Name: "x"}, {Name: "y"}, {Name: "z"}}
	for i := range ways {
		ways[i].Run = func() { order = append(order, ways[i].Name) }
	}
	times := Interleaved(3, 1, ways)
	if got, want := strings.Join(order, ""), "xyzyzxzxy"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}
	for j := range times {
		if len(times[j]) != 3 {
			t.Errorf("way %d has %d times, want 3", j, len(times[j]))
		}
	}
}
