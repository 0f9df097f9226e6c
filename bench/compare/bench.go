package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/bench/internal/copyref"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

// metric is what a benchmark's figures measure.
type metric int

const (
	latency   metric = iota // microseconds, lower is better
	bandwidth               // MB/s, higher is better
	rate                    // messages per second, higher is better
	nanos                   // nanoseconds per store (ptr), lower is better
)

// unit returns the unit of a metric as the report prints it.
func (m metric) unit() string {
	switch m {
	case bandwidth:
		return "MB/s"
	case rate:
		return "messages/s"
	case nanos:
		return "ns"
	}
	return "us"
}

// lowerIsBetter reports whether a smaller figure is better.
func (m metric) lowerIsBetter() bool { return m == latency || m == nanos }

// plotKind says which plot a benchmark gets.
type plotKind int

const (
	noPlot plotKind = iota
	latencyPlot
	bandwidthPlot
)

// spec describes one benchmark: the program (bench/<Name> on the Go
// side, bench/peer/<Name>.c on the peer's), its arguments, and how to
// read and judge its output.
type spec struct {
	Name  string   // directory and program name
	Title string   // the test's name in line 1 of the output
	What  string   // one line for the report
	Kind  metric   // what the figures are
	Full  []string // arguments of a full run (the programs' defaults, spelled out)
	Quick []string // arguments of a -quick run
	Plot  plotKind
	Sized bool // rows are message sizes
	// GoshExtra are arguments of the goshmem side only (after Full or
	// Quick): measurements the peer's program does not have.
	GoshExtra []string
}

// specs are the benchmarks in the order they run and are reported. The
// iteration counts make a latency run last tens of milliseconds at
// least (a put, an AMO or a 2-PE barrier takes 0.01-0.1 us here): a
// run of 1 ms or less is decided by whether a scheduler hiccup fell in
// it.
var specs = []*spec{
	{Name: "put", Title: "Put", What: "put of size bytes + quiet, PE 0 to PE 1",
		Kind: latency, Plot: latencyPlot, Sized: true,
		Full: []string{"-m", "1:4194304", "-i", "50000", "-w", "1000"}, Quick: []string{"-m", "1:65536", "-i", "1000", "-w", "100"}},
	{Name: "get", Title: "Get", What: "blocking get of size bytes, PE 0 from PE 1",
		Kind: latency, Plot: latencyPlot, Sized: true,
		Full: []string{"-m", "1:4194304", "-i", "50000", "-w", "1000"}, Quick: []string{"-m", "1:65536", "-i", "1000", "-w", "100"}},
	{Name: "put_pingpong", Title: "Put Ping-Pong", What: "one-way latency of put + fence + flag, answered the same way",
		Kind: latency, Plot: latencyPlot, Sized: true,
		Full: []string{"-m", "1:67108864", "-i", "50000", "-w", "1000"}, Quick: []string{"-m", "1:65536", "-i", "1000", "-w", "100"},
		GoshExtra: []string{"-handoff", "-copy"}},
	{Name: "put_bw", Title: "Put Bandwidth", What: "windows of 64 non-blocking puts + quiet",
		Kind: bandwidth, Plot: bandwidthPlot, Sized: true,
		Full: []string{"-m", "1:67108864", "-i", "1000", "-w", "100"}, Quick: []string{"-m", "1:65536", "-i", "100", "-w", "10"},
		GoshExtra: []string{"-copy"}},
	{Name: "get_bw", Title: "Get Bandwidth", What: "windows of 64 non-blocking gets + quiet",
		Kind: bandwidth, Plot: bandwidthPlot, Sized: true,
		Full: []string{"-m", "1:67108864", "-i", "1000", "-w", "100"}, Quick: []string{"-m", "1:65536", "-i", "100", "-w", "10"},
		GoshExtra: []string{"-copy"}},
	{Name: "put_mr", Title: "Put Message Rate", What: "windows of 64 blocking puts + quiet, summed over senders",
		Kind: rate, Sized: true,
		Full: []string{"-m", "1:4194304", "-i", "1000", "-w", "100"}, Quick: []string{"-m", "1:65536", "-i", "100", "-w", "10"}},
	{Name: "atomics", Title: "Atomics", What: "int64 atomics on one word of PE 1, issued by PE 0",
		Kind: latency,
		Full: []string{"-i", "50000", "-w", "1000"}, Quick: []string{"-i", "1000", "-w", "100"}},
	{Name: "ptr", Title: "Ptr", What: "8-byte stores through Ptr (shmem_ptr) into PE 1's heap vs stores into PE 0's own heap",
		Kind: nanos,
		Full: []string{"-i", "10000", "-w", "1000"}, Quick: []string{"-i", "1000", "-w", "100"}},
	{Name: "barrier", Title: "Barrier", What: "BarrierAll (shmem_barrier_all) on every PE",
		Kind: latency,
		Full: []string{"-i", "100000", "-w", "1000"}, Quick: []string{"-i", "1000", "-w", "100"},
		GoshExtra: []string{"-handoff"}},

	// The team collectives: every PE times back-to-back calls on
	// TeamWorld (the peer: OpenSHMEM 1.4's active-set routines over all
	// PEs); the rows are PE 0's. Sizes stop at 1 MiB (the largest size a
	// target names) or 256 KiB, to keep a full comparison within a few
	// minutes. 20000 iterations up to 64 KiB: a small collective takes
	// 0.1-0.5 us here, so 2000 of them (the count before) lasted under a
	// millisecond, and one scheduler hiccup of a few milliseconds (which
	// the machine has, once or twice a run) made a size's figure 10x.
	// 50000 warm-ups, both sides: 1000 of the first size (8 B, 0.1-0.4
	// us each) ended inside a goshmem process's first milliseconds,
	// which run slow (docs/performance.md, "A start-up transient"), so
	// that row compared goshmem's start-up with the peer's steady state
	// (full-16 to full-18: reduce and fcollect 0.54-0.75 of the peer at
	// 8 B, 0.43-0.47 at 16 B). 50000 broadcasts of 8 B (2.5 ms) still
	// ended inside it (full-23: 8 B 0.070-0.098 us, 16 B 0.047-0.051),
	// so the programs also settle 20 ms before their first size
	// (bench/internal/osu, SettleTime).
	{Name: "broadcast", Title: "Broadcast", What: "Broadcast of size bytes from PE 0 on TeamWorld (shmem_broadcast64 over all PEs), back to back",
		Kind: latency, Plot: latencyPlot, Sized: true,
		Full: []string{"-m", "8:1048576", "-i", "20000", "-w", "50000"}, Quick: []string{"-m", "8:65536", "-i", "1000", "-w", "100"},
		GoshExtra: []string{"-vs-barrier"}},
	{Name: "reduce", Title: "Reduce", What: "SumReduce of size/8 int64s on TeamWorld (shmem_longlong_sum_to_all over all PEs), back to back",
		Kind: latency, Plot: latencyPlot, Sized: true,
		Full: []string{"-m", "8:1048576", "-i", "20000", "-w", "50000"}, Quick: []string{"-m", "8:65536", "-i", "1000", "-w", "100"},
		GoshExtra: []string{"-vs-barrier"}},
	{Name: "collect", Title: "Collect", What: "Collect of size bytes from each PE on TeamWorld (shmem_collect64), back to back",
		Kind: latency, Sized: true,
		Full: []string{"-m", "8:262144", "-i", "20000", "-w", "50000"}, Quick: []string{"-m", "8:65536", "-i", "500", "-w", "50"},
		GoshExtra: []string{"-vs-barrier"}},
	{Name: "fcollect", Title: "FCollect", What: "FCollect of size bytes from each PE on TeamWorld (shmem_fcollect64), back to back",
		Kind: latency, Sized: true,
		Full: []string{"-m", "8:262144", "-i", "20000", "-w", "50000"}, Quick: []string{"-m", "8:65536", "-i", "500", "-w", "50"},
		GoshExtra: []string{"-vs-barrier"}},
	{Name: "alltoall", Title: "Alltoall", What: "Alltoall of size bytes to each PE on TeamWorld (shmem_alltoall64), back to back",
		Kind: latency, Sized: true,
		Full: []string{"-m", "8:262144", "-i", "20000", "-w", "50000"}, Quick: []string{"-m", "8:65536", "-i", "500", "-w", "50"},
		GoshExtra: []string{"-vs-barrier"}},
	{Name: "team_create", Title: "Team Create", What: "TeamWorld.SplitStrided(0, 1, npes) 64 times back to back, then Destroy; time per creation (shmem_team_split_strided: OpenSHMEM 1.5)",
		Kind: latency,
		Full: []string{"-i", "100", "-w", "10"}, Quick: []string{"-i", "10", "-w", "2"}},
}

// specNames returns the names of all benchmarks.
func specNames() []string {
	var n []string
	for _, s := range specs {
		n = append(n, s.Name)
	}
	return n
}

// selectSpecs returns the benchmarks named in only (comma-separated;
// "" means all), in their usual order.
func selectSpecs(only string) ([]*spec, error) {
	if strings.TrimSpace(only) == "" {
		return specs, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(specNames(), n) {
			return nil, fmt.Errorf("-only: unknown benchmark %q; choose from %s", n, strings.Join(specNames(), ","))
		}
		want[n] = true
	}
	var out []*spec
	for _, s := range specs {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-only %q names no benchmark; choose from %s", only, strings.Join(specNames(), ","))
	}
	return out, nil
}

// args returns the benchmark's arguments for a run.
func (s *spec) args(quick bool) []string {
	if quick {
		return s.Quick
	}
	return s.Full
}

// point is one figure of an output: a row key and its value.
type point struct {
	Key   string
	Value float64
}

// peerTitle is the start of line 1 of the peer's output; goshmem's is
// goshTitle.
const (
	peerTitle = "# OSU-style oshmem "
	goshTitle = "# OSU-style goshmem "
)

// normalizeTitle rewrites the peer's line 1 ("# OSU-style oshmem <Name>
// Test") to goshmem's, which osu.ParseOutput expects.
func normalizeTitle(out string) string {
	if strings.HasPrefix(out, peerTitle) {
		return goshTitle + out[len(peerTitle):]
	}
	return out
}

// unsupported is what parse returns for a run that says it cannot do
// the test ("# <name>: not supported by the peer (why)", as
// bench/peer/team_create.c against OpenSHMEM 1.4): not a failure, no
// figures.
type unsupported struct{ Msg string }

func (u *unsupported) Error() string { return u.Msg }

// notSupported marks an unsupported run's comment.
const notSupported = "not supported by the peer"

// parse reads one run's output and returns its figures: the rows of
// the first table (the main metric column), or for ptr the figures of
// its "ns per store" comment. An output without tables that says the
// test is not supported returns an *unsupported error.
func (s *spec) parse(out string) ([]point, error) {
	o, err := osu.ParseOutput(strings.NewReader(normalizeTitle(out)))
	if err != nil {
		return nil, err
	}
	if o.Name != s.Title {
		return nil, fmt.Errorf("output is the %q test, want %q", o.Name, s.Title)
	}
	if len(o.Tables) == 0 {
		for _, c := range o.Comments {
			if strings.Contains(c, notSupported) {
				return nil, &unsupported{Msg: c}
			}
		}
	}
	if s.Kind == nanos {
		return ptrFigures(o.Comments)
	}
	if len(o.Tables) == 0 || len(o.Tables[0].Rows) == 0 {
		return nil, fmt.Errorf("output has no rows")
	}
	var pts []point
	for _, r := range o.Tables[0].Rows {
		if len(r.Values) == 0 {
			return nil, fmt.Errorf("row %q has no value", r.Key)
		}
		pts = append(pts, point{r.Key, r.Values[0]})
	}
	for _, c := range o.Comments {
		if rest, ok := strings.CutPrefix(c, osu.VsBarrierPrefix); ok {
			for _, f := range strings.Split(rest, ";") {
				var k string
				var q float64
				if _, err := fmt.Sscanf(strings.TrimSpace(f), "%s %f", &k, &q); err == nil {
					pts = append(pts, point{k + keyVsBarrier, q})
				}
			}
		}
		for _, x := range []struct{ prefix, ratio, ref string }{
			{copyref.Prefix, keyVsCopy, keyCopyInterleaved},
			{copyref.PatternPrefix, keyVsPattern, keyPatternInterleaved},
			{copyref.RoundPrefix, keyVsRoundBest, keyRoundBestInterleaved},
		} {
			rest, ok := strings.CutPrefix(c, x.prefix)
			if !ok || strings.HasPrefix(rest, "not measured") {
				continue
			}
			figs, err := copyref.Parse(rest)
			if err != nil {
				return nil, err
			}
			for _, f := range figs {
				k := strconv.Itoa(f.Size)
				pts = append(pts, point{k + x.ratio, f.Ratio}, point{k + x.ref, f.Copy})
			}
		}
		if rest, ok := strings.CutPrefix(c, interleavedPrefix); ok {
			var g, h, q float64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "put_pingpong %f us hand-off %f us ratio %f", &g, &h, &q); err == nil {
				pts = append(pts, point{keyPPInterleaved, g}, point{keyHandoffInterleaved, h}, point{keyRatioInterleaved, q})
			}
			if _, after, ok := strings.Cut(rest, roundFastestMark); ok {
				var rq float64
				if _, err := fmt.Sscanf(after, "%f", &rq); err == nil {
					pts = append(pts, point{keyRatioRoundBest, rq})
				}
			}
		}
		if rest, ok := strings.CutPrefix(c, barInterleavedPrefix); ok {
			var g, h, q float64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "barrier %f us bare %f us ratio %f", &g, &h, &q); err == nil {
				pts = append(pts, point{keyBarInterleaved, g}, point{keyBareInterleaved, h}, point{keyBarRatioInterleaved, q})
			}
		}
	}
	return pts, nil
}

// keyVsBarrier ends the key of a size's ratio to the barrier from a
// collective's -vs-barrier comment ("8 vs barrier, interleaved").
const keyVsBarrier = " vs barrier, interleaved"

// keyVsCopy ends the key of a size's ratio to the best lone copy from
// put_bw's or get_bw's -copy comment (the median of the program's
// per-round ratios), and keyCopyInterleaved that of the best copy's
// median bandwidth there (MB/s).
const (
	keyVsCopy          = " vs copy, interleaved"
	keyCopyInterleaved = " copy, interleaved"
)

// keyVsRoundBest ends the key of a size's ratio to each round's
// fastest way of any kind (copyref.RoundPrefix), which the limit check
// uses, and keyRoundBestInterleaved that of those ways' median.
const (
	keyVsRoundBest          = " vs each round's fastest way, interleaved"
	keyRoundBestInterleaved = " fastest way, interleaved"
)

// keyVsPattern ends the key of a size's ratio to the bare ping-pong
// from put_pingpong's -copy comment, and keyPatternInterleaved that of
// the bare ping-pong's median one-way bandwidth there (MB/s).
const (
	keyVsPattern          = " vs bare ping-pong, interleaved"
	keyPatternInterleaved = " bare ping-pong, interleaved"
)

// isRatioKey reports whether a row's figures are interleaved ratios,
// not the benchmark's unit.
func isRatioKey(k string) bool {
	return strings.HasSuffix(k, keyVsBarrier) || strings.HasSuffix(k, keyVsCopy) || strings.HasSuffix(k, keyVsPattern) || strings.HasSuffix(k, keyVsRoundBest) || k == keyRatioInterleaved || k == keyRatioRoundBest || k == keyBarRatioInterleaved
}

// interleavedPrefix starts put_pingpong -handoff's comment: its 8-byte
// round trips timed in blocks alternating with the bare cache-line
// hand-off on the same words of the same PEs.
const interleavedPrefix = "interleaved 8 B:"

// Keys of put_pingpong -handoff's figures: the loop's and the
// hand-off's medians over the blocks (us), and the median of the
// per-round ratios, which stays right when the machine changes state
// during the run (the two medians then come from different states).
const (
	keyPPInterleaved      = "8 B, interleaved"
	keyHandoffInterleaved = "hand-off, interleaved"
	keyRatioInterleaved   = "8 B / hand-off, interleaved"
	// keyRatioRoundBest: the loop over each round's fastest bare block
	// (the comment's part after roundFastestMark), which the limit
	// check uses: beaten only if the loop beat every way in every round.
	keyRatioRoundBest = "8 B / each round's fastest hand-off, interleaved"
)

// roundFastestMark precedes, in put_pingpong -handoff's comment, the
// median ratio of the loop to each round's fastest bare way.
const roundFastestMark = "each round's fastest way: ratio "

// barInterleavedPrefix starts barrier -handoff's comment: the 2-PE
// barrier timed in blocks alternating with blocks of the bare
// exchange of two words (in several layouts) on the same PEs.
const barInterleavedPrefix = "interleaved barrier:"

// Keys of barrier -handoff's figures: the barrier's and the fastest
// bare barrier's medians over the blocks (us), and the median of the
// per-round ratios.
const (
	keyBarInterleaved      = "barrier, interleaved"
	keyBareInterleaved     = "bare barrier, interleaved"
	keyBarRatioInterleaved = "barrier / bare, interleaved"
)

// ptrPrefix starts ptr's comment with the per-store figures in ns.
const ptrPrefix = "ns per store:"

// ptrRatio is the key of ptr's ptr_store/local_store figure.
const ptrRatio = "ptr_store/local_store"

// ptrFigures reads "ns per store: ptr_store 1.87  put 6.70  local_store
// 1.75  ptr_store/local_store 1.07" from ptr's comments.
func ptrFigures(comments []string) ([]point, error) {
	for _, c := range comments {
		rest, ok := strings.CutPrefix(c, ptrPrefix)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f)%2 != 0 {
			return nil, fmt.Errorf("comment %q: want name/value pairs", c)
		}
		var pts []point
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil {
				return nil, fmt.Errorf("comment %q: %q is not a number", c, f[i+1])
			}
			pts = append(pts, point{f[i], v})
		}
		return pts, nil
	}
	return nil, fmt.Errorf("no %q comment", "# "+ptrPrefix)
}
