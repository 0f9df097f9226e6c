package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// side is one of the two implementations compared.
type side int

const (
	gosh side = iota // goshmem
	peer             // Open MPI's OpenSHMEM
)

func (s side) String() string {
	if s == peer {
		return "peer"
	}
	return "goshmem"
}

// agg is one figure over the rounds that produced it. Rounds, when
// set, holds the round (1, 2, ...) of each value: figures of the two
// sides taken in the same round are an adjacent pair (see pairs). A
// reference without rounds (a machine limit) pairs with every value.
type agg struct {
	Values []float64
	Rounds []int
}

// constant is a reference figure that is not tied to a round.
func constant(v float64) agg { return agg{Values: []float64{v}} }

// pairs returns the ratios a/b of the values taken in the same round,
// in a's order: the pairwise ratios of adjacent runs. When b has no
// rounds, its median is every value's partner. Pairs with b <= 0 are
// left out.
func pairs(a, b agg) []float64 {
	var out []float64
	if b.Rounds == nil {
		if m := b.median(); m > 0 {
			for _, v := range a.Values {
				out = append(out, v/m)
			}
		}
		return out
	}
	for i, v := range a.Values {
		if i >= len(a.Rounds) {
			break
		}
		if j := slices.Index(b.Rounds, a.Rounds[i]); j >= 0 && b.Values[j] > 0 {
			out = append(out, v/b.Values[j])
		}
	}
	return out
}

// ratio is the median of the pairwise ratios of a and b and their
// range; ok is false when no round has both.
func ratio(a, b agg) (med, lo, hi float64, n int, ok bool) {
	r := pairs(a, b)
	if len(r) == 0 {
		return math.NaN(), math.NaN(), math.NaN(), 0, false
	}
	x := agg{Values: r}
	return x.median(), x.min(), x.max(), len(r), true
}

// at returns the value of round r.
func (a agg) at(r int) (float64, bool) {
	if i := slices.Index(a.Rounds, r); i >= 0 {
		return a.Values[i], true
	}
	return 0, false
}

func (a agg) ok() bool { return len(a.Values) > 0 }

// median returns the median of the values (the mean of the middle two
// for an even count), NaN without values.
func (a agg) median() float64 {
	if len(a.Values) == 0 {
		return math.NaN()
	}
	v := slices.Clone(a.Values)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func (a agg) min() float64 {
	if len(a.Values) == 0 {
		return math.NaN()
	}
	return slices.Min(a.Values)
}

func (a agg) max() float64 {
	if len(a.Values) == 0 {
		return math.NaN()
	}
	return slices.Max(a.Values)
}

// best returns the best round: the minimum when lower is better, else
// the maximum.
func (a agg) best(lowerIsBetter bool) float64 {
	if lowerIsBetter {
		return a.min()
	}
	return a.max()
}

// result holds a benchmark's figures from every round of both sides.
type result struct {
	Spec  *spec
	Keys  []string          // row keys in the order first seen
	Figs  [2]map[string]agg // per side, per key
	Runs  [2]int            // runs attempted per side
	Fails [2][]string       // per side, one line per failed run
	Args  []string          // the arguments both sides ran with
	// Unsupported holds, per side, what a run said when it could not do
	// the test (see unsupported); such runs are neither figures nor
	// failures.
	Unsupported [2]string
}

func newResult(s *spec, args []string) *result {
	return &result{Spec: s, Args: args, Figs: [2]map[string]agg{{}, {}}}
}

// add records the figures of a side's run in round (1, 2, ...).
func (r *result) add(sd side, round int, pts []point) {
	for _, p := range pts {
		if !slices.Contains(r.Keys, p.Key) {
			r.Keys = append(r.Keys, p.Key)
		}
		a := r.Figs[sd][p.Key]
		a.Values = append(a.Values, p.Value)
		a.Rounds = append(a.Rounds, round)
		r.Figs[sd][p.Key] = a
	}
}

// fig returns a side's figure for a key.
func (r *result) fig(sd side, key string) agg {
	if r == nil {
		return agg{}
	}
	return r.Figs[sd][key]
}

// limitTable is one table of bench/limits: "# goshmem machine limits:
// <test>", warnings, notes, the column line and rows.
type limitTable struct {
	Test     string
	Warnings []string
	Notes    []string
	Columns  []string
	Rows     []point
	Args     []string
	Err      string // the run failed: why
}

// limits are the machine limits by test: memcpy, handoff, atomic.
type limits map[string]*limitTable

// value returns a limit's row.
func (l limits) value(test, key string) (float64, bool) {
	t := l[test]
	if t == nil {
		return 0, false
	}
	for _, r := range t.Rows {
		if r.Key == key {
			return r.Value, true
		}
	}
	return 0, false
}

// Limit names used as references.
const (
	limMemcpy   = "memcpy"
	limHandoff  = "handoff"
	limAtomic   = "atomic"
	limLines    = "lines"
	limExchange = "exchange"        // the bare 2-PE exchange of k lines both ways (a row per k)
	limPair     = "memcpy_pair"     // two copies at once: a 2-PE broadcast's data movement
	limSplit    = "memcpy_split"    // one copy by two CPUs, a half each: a shared put's best
	limPingpong = "memcpy_pingpong" // the best put ping-pong: copies and a bare flag, turn by turn
	linesSlope  = "per_line"        // limits lines: the round's cost per extra line written and read
	sepLines    = "separate_lines"
	sameLine    = "same_line"
	handoffMin  = "min" // the minimum over the hand-off's layouts and spin methods
	localFAdd   = "local_fetch_add"
	remoteFAdd  = "remote_fetch_add"
	lineBytes   = 64 // a cache line
	bwFloorSize = 4 << 20
	// bcastBulk is the smallest broadcast size compared with the time
	// memcpy takes for it (below, the synchronization dominates).
	bcastBulk = 64 << 10
	// collTargetSize is the large size of the reduce and broadcast
	// targets.
	collTargetSize = 1 << 20
)

// limitFor returns the machine limit that a benchmark's row is judged
// against, and its name, where one applies: memcpy bandwidth of the
// same size for put_bw and get_bw; the cache-line hand-off (its min
// row: the fastest of one line and two, polled with goshmem's spin or
// without a pause) for the ping-pong up to one cache line and the 2-PE
// barrier; the uncontended
// fetch-add for the atomics (PE 1 idles, so the word's line stays in
// PE 0's cache); for broadcasts of 64 KiB and more, the time memcpy
// takes to copy the size (size / memcpy bandwidth, in us).
func limitFor(s *spec, key string, l limits, np int) (float64, string, bool) {
	switch s.Name {
	case "broadcast":
		n, err := strconv.Atoi(key)
		if err != nil || n < bcastBulk {
			return 0, "", false
		}
		if bw, ok := l.value(limMemcpy, key); ok && bw > 0 {
			return float64(n) / bw, "memcpy time", true
		}
	case "put_bw", "get_bw":
		// The better of the lone copy and the split one: a put or get
		// that the waiting PE helps with (SHMEM_COPY_SHARE) is bounded
		// by the second, which beats every lone copy from some size up.
		v, ok := l.value(limMemcpy, key)
		if w, ok2 := l.value(limSplit, key); ok2 && w > v {
			return w, "memcpy_split", true
		}
		return v, "memcpy", ok
	case "put_pingpong":
		if n, err := strconv.Atoi(key); err == nil && n <= lineBytes {
			v, ok := l.value(limHandoff, handoffMin)
			return v, "hand-off", ok
		}
	case "atomics":
		if key == "fetch_add" || key == "compare_swap" || key == "add_rate" {
			v, ok := l.value(limAtomic, localFAdd)
			return v, "local fetch-add", ok
		}
	}
	return 0, "", false
}

// Target results.
const (
	statusPass = "PASS"
	statusMiss = "MISS"
	statusNA   = "n/a"
)

// target is one performance target and how the run measured up.
type target struct {
	Name      string   // e.g. "put latency, 8 B, vs peer"
	Le        bool     // the ratio must be at most Threshold (else at least)
	Threshold float64  // e.g. 0.7
	Ratio     float64  // the median of the pairwise ratios of the rounds
	Lo, Hi    float64  // their range
	Pairs     int      // rounds with both figures
	Status    string   // statusPass, statusMiss or statusNA
	Figures   string   // the figures the ratio comes from
	Why       string   // why the target could not be evaluated (n/a)
	Notes     []string // findings about the measurement
	Cause     string   // for a miss: a cause found in the data, or "not analysed yet"
}

// wants returns the target's condition, e.g. "<= 0.70".
func (t target) wants() string {
	op := ">="
	if t.Le {
		op = "<="
	}
	return fmt.Sprintf("%s %.2f", op, t.Threshold)
}

// meets reports whether ratio meets the target.
func (t target) meets(ratio float64) bool {
	if t.Le {
		return ratio <= t.Threshold
	}
	return ratio >= t.Threshold
}

// causeUnknown is what a miss says when the data show no cause.
const causeUnknown = "not analysed yet"

// outputHalfUnit is half the last printed digit of the programs'
// figures (three decimals): a printed 0.020 us is anything in
// [0.0195, 0.0205).
const outputHalfUnit = 0.0005

// judge evaluates t from a goshmem figure g and a reference ref (the
// peer's figure, or a limit as a constant). The ratio is the median of
// the pairwise ratios of the rounds both have (see pairs), and t keeps
// their range. half is the rounding of the printed figures (0 when
// negligible); unit names the figures' unit.
func judge(t *target, g, ref agg, half float64, unit, refName string) {
	if !g.ok() || !ref.ok() {
		t.Status, t.Why = statusNA, "no figures"
		return
	}
	gm, rm := g.median(), ref.median()
	t.Figures = fmt.Sprintf("goshmem %s, %s %s", withUnit(gm, unit), refName, withUnit(rm, unit))
	med, lo, hi, n, ok := ratio(g, ref)
	if !ok {
		t.Status, t.Why = statusNA, fmt.Sprintf("no round with both a goshmem figure and a positive %s figure", refName)
		if rm <= 0 {
			t.Why = fmt.Sprintf("the %s figure is %s", refName, fmtNum(rm))
		}
		return
	}
	t.setRatio(med, lo, hi, n)
	unresolved := false
	if half > 0 {
		lo := math.Max(gm-half, 0) / (rm + half)
		hi := math.Inf(1)
		if rm > half {
			hi = (gm + half) / (rm - half)
		}
		if t.meets(lo) != t.meets(hi) {
			unresolved = true
			t.Notes = append(t.Notes, fmt.Sprintf(
				"the programs print three decimals (±%g %s), so the ratio lies between %.2f and %.2f: the figures do not settle the target",
				half, unit, lo, hi))
		}
	}
	noisy := n > 1 && t.meets(lo) != t.meets(hi)
	if noisy {
		t.Notes = append(t.Notes, fmt.Sprintf(
			"the pairwise ratios of the %d rounds ranged %.2f-%.2f, on both sides of the threshold (rounds ranged goshmem %s, %s %s)",
			n, lo, hi, fmtRange(g), refName, fmtRange(ref)))
	}
	if t.Status != statusMiss {
		return
	}
	switch {
	case unresolved:
		t.Cause = "measurement resolution: at two printed decimals the ratio could be on either side of the threshold (see the note)"
	case noisy:
		t.Cause = "run-to-run noise: some rounds' pairs meet the target, the median does not (see the note); rerun on a quiet machine or with more -rounds"
	default:
		t.Cause = causeUnknown
	}
}

// setRatio records the median pairwise ratio, its range over n rounds
// and the status it gives.
func (t *target) setRatio(med, lo, hi float64, n int) {
	t.Ratio, t.Lo, t.Hi, t.Pairs = med, lo, hi, n
	t.Status = statusMiss
	if t.meets(med) {
		t.Status = statusPass
	}
}

// spread formats the range of a target's pairwise ratios.
func (t target) spread() string {
	switch {
	case t.Status == statusNA || t.Pairs == 0:
		return "-"
	case t.Pairs == 1:
		return "1 round"
	}
	return fmt.Sprintf("%s-%s (%d rounds)", fmtRatio(t.Lo), fmtRatio(t.Hi), t.Pairs)
}

// withUnit formats a figure and its unit, if any.
func withUnit(v float64, unit string) string {
	if unit == "" {
		return fmtNum(v)
	}
	return fmtNum(v) + " " + unit
}

// fmtRange formats the range of a figure over the rounds.
func fmtRange(a agg) string {
	if !a.ok() {
		return "-"
	}
	if a.min() == a.max() {
		return fmtNum(a.min())
	}
	return fmtNum(a.min()) + "-" + fmtNum(a.max())
}

// fmtNum formats a figure: whole numbers from 1000 up, two decimals from
// 1 up, and up to four decimals below (at least two).
func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatFloat(v, 'f', 4, 64)
	for strings.HasSuffix(s, "0") && len(s) > len("0.00") {
		s = s[:len(s)-1]
	}
	return s
}

// fmtRatio formats a ratio with two decimals.
func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// evaluation is what the targets are computed from.
type evaluation struct {
	Results map[string]*result // by resKey; missing: not run
	Limits  limits
	// Rounds are the limits measured in each round, by test: element
	// r-1 is round r's table (nil when it failed). A target against
	// such a limit pairs goshmem's figure of a round with the limit of
	// the same round (see limitAgg).
	Rounds  map[string][]*limitTable
	NP      int     // the PEs of the base configuration
	Cfgs    []peCfg // the PE configurations run (nil: the base only)
	Peer    bool    // the peer ran
	PeerWhy string  // why not
}

// limitAgg returns a limit's row as a reference figure: per round,
// paired with the same round's goshmem figure, where the limit was
// measured in every round; otherwise the one figure of l (with ok
// false when there is none).
func (e evaluation) limitAgg(test, key string) (agg, bool) {
	var a agg
	for i, t := range e.Rounds[test] {
		if t == nil {
			continue
		}
		if v, ok := (limits{test: t}).value(test, key); ok && v > 0 {
			a.Values = append(a.Values, v)
			a.Rounds = append(a.Rounds, i+1)
		}
	}
	if len(a.Values) > 0 {
		return a, true
	}
	v, ok := e.Limits.value(test, key)
	return constant(v), ok && v > 0
}

// bestCopyAgg is limitAgg of the machine's best copy of key bytes: per
// round the better of the lone copy (memcpy) and the copy split over
// two CPUs (memcpy_split) where the round measured both, the better of
// the merged limits where no round did.
func (e evaluation) bestCopyAgg(key string) (agg, bool) {
	lone, ok := e.limitAgg(limMemcpy, key)
	split, ok2 := e.limitAgg(limSplit, key)
	switch {
	case !ok2:
		return lone, ok
	case !ok:
		return split, ok2
	case len(lone.Rounds) == 0 || len(split.Rounds) == 0:
		return constant(max(lone.max(), split.max())), true
	}
	var a agg
	for i, r := range lone.Rounds {
		v := lone.Values[i]
		if w, ok := split.at(r); ok {
			v = max(v, w)
		}
		a.Values = append(a.Values, v)
		a.Rounds = append(a.Rounds, r)
	}
	return a, true
}

// base returns the base configuration: NP processes.
func (e evaluation) base() peCfg { return peCfg{NP: e.NP, PerProc: 1} }

// res returns the result of a benchmark in a configuration.
func (e evaluation) res(name string, c peCfg) *result {
	return e.Results[resKey(name, c, e.base())]
}

// ran reports whether configuration c was run.
func (e evaluation) ran(c peCfg) bool {
	return c == e.base() || slices.Contains(e.Cfgs, c)
}

// notRun returns why a benchmark's result in c is missing.
func (e evaluation) notRun(name string, c peCfg) string {
	if !e.ran(c) {
		return "no run at " + c.label() + " (-pes)"
	}
	return name + " was not run (-only)"
}

// Sizes of the targets' size ranges.
const (
	smallLo, smallHi = 8, 256             // small collectives
	bulkLo, bulkHi   = 64 << 10, 64 << 20 // bandwidth and ping-pong
	goroutineBarrier = 5.0                // us: 8 goroutine PEs' barrier
)

// targets evaluates every target of the issues (ratios are the medians
// of the pairwise goshmem/peer ratios of the rounds, goshmem/goshmem
// in the same round, or goshmem/limit).
func (e evaluation) targets() []target {
	var ts []target
	b := e.base()
	np := strconv.Itoa(e.NP)
	// vsPeer judges a benchmark's row in configuration c against the peer's.
	vsPeer := func(bench string, c peCfg, key, name string, thr float64) {
		t := target{Name: name, Le: true, Threshold: thr}
		r := e.res(bench, c)
		switch {
		case r == nil:
			t.Status, t.Why = statusNA, e.notRun(bench, c)
		case !e.Peer:
			t.Status, t.Why = statusNA, "peer skipped: "+e.PeerWhy
		default:
			judge(&t, r.fig(gosh, key), r.fig(peer, key), outputHalfUnit, "us", "peer")
			if t.Status == statusNA && t.Why == "no figures" {
				t.Why = "no " + humanSize(key) + " figure from " + missingSides(r, key)
			}
		}
		ts = append(ts, t)
	}
	// No regression at the base PE count.
	vsPeer("put", b, "8", "put latency, 8 B, vs peer", 0.7)
	vsPeer("get", b, "8", "get latency, 8 B, vs peer", 0.7)
	vsPeer("atomics", b, "fetch_add", "fetch_add latency vs peer", 0.7)
	vsPeer("put_pingpong", b, "8", "put ping-pong one-way, 8 B, vs peer", 0.75)

	// Ping-pong against the cache-line hand-off: interleaved with the
	// bare hand-off on the same words when put_pingpong measured it
	// (-handoff; the machine changes state within seconds, so a limit
	// from another program at another moment compares another
	// machine), else against bench/limits' minimum over layouts and
	// spin methods.
	{
		t := target{Name: "put ping-pong one-way, 8 B, vs cache-line hand-off", Le: true, Threshold: 1.3}
		r := e.res("put_pingpong", b)
		lim, ok := e.Limits.value(limHandoff, handoffMin)
		switch {
		case r == nil:
			t.Status, t.Why = statusNA, e.notRun("put_pingpong", b)
		case r.fig(gosh, keyRatioInterleaved).ok():
			// Each round's figure is already a ratio: the median of
			// the program's per-round ratios.
			judge(&t, r.fig(gosh, keyRatioInterleaved), constant(1), 0, "", "interleaved hand-off")
			t.Figures = fmt.Sprintf("goshmem %s, interleaved hand-off %s (medians over blocks and runs; the ratio is the median of each run's per-round ratios)",
				withUnit(r.fig(gosh, keyPPInterleaved).median(), "us"), withUnit(r.fig(gosh, keyHandoffInterleaved).median(), "us"))
			if t.Status != statusNA && t.Ratio < 1 {
				t.Notes = append(t.Notes, "goshmem's loop beat the bare hand-off timed between its blocks: that hand-off is not a bound in this run")
			}
		case !ok:
			t.Status, t.Why = statusNA, "no hand-off limit"+limitErr(e.Limits, limHandoff)
		default:
			judge(&t, r.fig(gosh, "8"), constant(lim), outputHalfUnit, "us", "hand-off")
		}
		ts = append(ts, t)
	}

	// Bulk transfers, 64 KiB to 64 MiB: at least the peer's speed and
	// 0.95 of the machine's best copy.
	bulk := func(bench, what, copyWhat string, lat bool) {
		r := e.res(bench, b)
		tp := target{Name: what + ", 64 KiB-64 MiB, vs peer (worst size)", Threshold: 1.0}
		tl := target{Name: copyWhat + ", 64 KiB-64 MiB, vs best copy (worst size)", Threshold: 0.95}
		unit := "MB/s"
		if lat {
			tp.Le, unit = true, "us"
		}
		if r == nil {
			tp.Status, tp.Why = statusNA, e.notRun(bench, b)
			tl.Status, tl.Why = tp.Status, tp.Why
			ts = append(ts, tp, tl)
			return
		}
		sizes := sizesIn(r, bulkLo, bulkHi)
		if len(sizes) == 0 {
			why := "no sizes from 64 KiB to 64 MiB were run"
			if len(r.Keys) > 0 {
				why += " (the largest was " + humanSize(r.Keys[len(r.Keys)-1]) + ")"
			}
			tp.Status, tp.Why = statusNA, why
			tl.Status, tl.Why = statusNA, why
			ts = append(ts, tp, tl)
			return
		}
		if !e.Peer {
			tp.Status, tp.Why = statusNA, "peer skipped: "+e.PeerWhy
		} else {
			worst(&tp, sizes, func(k string) (agg, agg, bool) {
				p := r.fig(peer, k)
				return r.fig(gosh, k), p, p.ok()
			}, "peer", unit)
		}
		if !lat && r.fig(gosh, sizes[0]+keyVsCopy).ok() {
			// The program timed its transfers in blocks alternating
			// with blocks of every lone copy of the same bytes
			// (-copy): each round's figure is already the ratio to
			// the best copy of the same moments, which a limit
			// measured by another program at another moment is not
			// (the machine's memory bandwidth moves by 10% within
			// seconds).
			worst(&tl, sizes, func(k string) (agg, agg, bool) {
				return r.fig(gosh, k+keyVsCopy), constant(1), true
			}, "interleaved best copy", "")
			ts = append(ts, tp, tl)
			return
		}
		wk := worst(&tl, sizes, func(k string) (agg, agg, bool) {
			ref, ok := e.bestCopyAgg(k)
			g := r.fig(gosh, k)
			if lat {
				g = asBandwidth(g, k)
			}
			return g, ref, ok
		}, "memcpy", "MB/s")
		if lat && tl.Status == statusMiss {
			e.workingSet(&tl, r, wk)
			e.pingpongRef(&tl, r, sizes)
		}
		if tl.Status == statusNA && tl.Why == "" {
			tl.Why = "no memcpy limit for these sizes" + limitErr(e.Limits, limMemcpy)
		}
		ts = append(ts, tp, tl)
	}
	bulk("put_bw", "put bandwidth", "put bandwidth", false)
	bulk("get_bw", "get bandwidth", "get bandwidth", false)
	bulk("put_pingpong", "put ping-pong one-way", "put ping-pong size / one-way time", true)

	vsPeer("barrier", b, np, fmt.Sprintf("barrier latency, %d PEs, vs peer", e.NP), 0.5)
	if q := e.res("barrier", b).fig(gosh, keyBarRatioInterleaved); q.ok() && q.median() < 1 {
		// No limit for the barrier: the bare exchange timed between
		// its blocks (barrier -handoff) is the closest thing, and on
		// the development machine no layout of it bounds the barrier
		// in every state (docs/performance.md, "The 2-PE barrier
		// against its bare self").
		t := &ts[len(ts)-1]
		t.Notes = append(t.Notes, fmt.Sprintf("goshmem's barrier took %s of the fastest bare exchange of two words timed between its blocks (barrier -handoff): that bare way is no bound for it in this state", fmtRatio(q.median())))
	}

	// Small collectives at the base PE count: against the peer and
	// against goshmem's own barrier in the same round.
	for _, coll := range []string{"broadcast", "reduce", "collect", "fcollect", "alltoall"} {
		tp := target{Name: fmt.Sprintf("%s, 8-256 B, %d PEs, vs peer (worst size)", coll, e.NP), Le: true, Threshold: 0.5}
		tb := target{Name: fmt.Sprintf("%s, 8-256 B, %d PEs, vs goshmem's barrier in the same round (worst size)", coll, e.NP), Le: true, Threshold: 1.5}
		r, bar := e.res(coll, b), e.res("barrier", b)
		sizes := sizesIn(r, smallLo, smallHi)
		switch {
		case r == nil:
			tp.Status, tp.Why = statusNA, e.notRun(coll, b)
		case len(sizes) == 0:
			tp.Status, tp.Why = statusNA, "no sizes from 8 to 256 B were run"
		case !e.Peer:
			tp.Status, tp.Why = statusNA, "peer skipped: "+e.PeerWhy
		default:
			worst(&tp, sizes, func(k string) (agg, agg, bool) {
				p := r.fig(peer, k)
				return r.fig(gosh, k), p, p.ok()
			}, "peer", "us")
		}
		switch {
		case r == nil || len(sizes) == 0:
			tb.Status, tb.Why = statusNA, tp.Why
		case r.fig(gosh, sizes[0]+keyVsBarrier).ok():
			// The program timed the collective interleaved with the
			// barrier (-vs-barrier): each round's figure is already
			// the ratio of blocks taken milliseconds apart.
			wk := worst(&tb, sizes, func(k string) (agg, agg, bool) {
				return r.fig(gosh, k+keyVsBarrier), constant(1), true
			}, "interleaved barrier", "")
			if tb.Status == statusMiss && coll != "broadcast" && e.NP == 2 {
				parts := 1 // a member's part is its block; Alltoall's, a block per member
				if coll == "alltoall" {
					parts = e.NP
				}
				e.linesModel(&tb, wk, parts) // (the model is the 2-PE exchange's)
			}
		case bar == nil || !bar.fig(gosh, np).ok():
			tb.Status, tb.Why = statusNA, "no goshmem barrier figure: run barrier too"
		default:
			worst(&tb, sizes, func(k string) (agg, agg, bool) {
				return r.fig(gosh, k), bar.fig(gosh, np), true
			}, "barrier", "us")
		}
		ts = append(ts, tp, tb)
	}

	// The teams issue's large collectives.
	big := strconv.Itoa(collTargetSize)
	vsPeer("reduce", b, "8", "reduce latency, 8 B, vs peer", 0.5)
	vsPeer("reduce", b, big, "reduce latency, 1 MiB, vs peer", 0.4)
	vsPeer("broadcast", b, "8", "broadcast latency, 8 B, vs peer", 0.5)
	ts = append(ts, e.bcastVsMemcpy(big))

	// More PEs than cores: processes, the peer oversubscribed too.
	for _, n := range []int{4, 8} {
		c := peCfg{NP: n, PerProc: 1}
		key := strconv.Itoa(n)
		vsPeer("barrier", c, key, fmt.Sprintf("barrier latency, %d PEs, vs peer", n), 0.5)
		vsPeer("reduce", c, "8", fmt.Sprintf("reduce latency, 8 B, %d PEs, vs peer", n), 0.5)
		vsPeer("broadcast", c, "8", fmt.Sprintf("broadcast latency, 8 B, %d PEs, vs peer", n), 0.5)
	}

	// Goroutine PEs: 8 in one process.
	{
		g8, p8 := peCfg{NP: 8, PerProc: 8}, peCfg{NP: 8, PerProc: 1}
		ta := target{Name: "barrier latency, 8 goroutine PEs, vs 5 us", Le: true, Threshold: 1}
		tr := target{Name: "barrier latency, 8 goroutine PEs, vs 8 processes in the same round", Le: true, Threshold: 0.3}
		r, rp := e.res("barrier", g8), e.res("barrier", p8)
		if r == nil {
			ta.Status, ta.Why = statusNA, e.notRun("barrier", g8)
		} else {
			judge(&ta, r.fig(gosh, "8"), constant(goroutineBarrier), outputHalfUnit, "us", "target")
		}
		switch {
		case r == nil:
			tr.Status, tr.Why = statusNA, ta.Why
		case rp == nil:
			tr.Status, tr.Why = statusNA, e.notRun("barrier", p8)
		default:
			judge(&tr, r.fig(gosh, "8"), rp.fig(gosh, "8"), outputHalfUnit, "us", "8 processes")
		}
		ts = append(ts, ta, tr)
	}

	{
		t := target{Name: "ptr: store through Ptr vs local store (ptr_store/local_store)", Le: true, Threshold: 1.2}
		r := e.res("ptr", b)
		if r == nil {
			t.Status, t.Why = statusNA, e.notRun("ptr", b)
		} else {
			g := r.fig(gosh, ptrRatio)
			if !g.ok() {
				t.Status, t.Why = statusNA, "no ptr_store/local_store figure from goshmem"
			} else {
				// Each round's ratio comes from one run (the same
				// process, one after the other); the median decides.
				t.setRatio(g.median(), g.min(), g.max(), len(g.Values))
				t.Figures = fmt.Sprintf("ptr_store %s ns, local_store %s ns (medians); ratio per round %s",
					fmtNum(r.fig(gosh, "ptr_store").median()), fmtNum(r.fig(gosh, "local_store").median()), fmtRange(g))
				if t.Status == statusMiss {
					t.Cause = causeUnknown
					if t.meets(g.min()) {
						t.Notes = append(t.Notes, fmt.Sprintf("the rounds ranged %s; the best meets the target", fmtRange(g)))
						t.Cause = "run-to-run noise: the best round meets the target, the median does not (see the note); rerun on a quiet machine or with more -rounds"
					}
				}
			}
		}
		ts = append(ts, t)
	}
	return ts
}

// sizesIn returns r's size keys from lo to hi bytes that goshmem has
// figures for.
func sizesIn(r *result, lo, hi int) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, k := range r.Keys {
		if n, err := strconv.Atoi(k); err == nil && n >= lo && n <= hi && r.fig(gosh, k).ok() {
			out = append(out, k)
		}
	}
	return out
}

// asBandwidth converts latencies in us of a size key to MB/s (size /
// latency), keeping the rounds.
func asBandwidth(lat agg, key string) agg {
	n, _ := strconv.Atoi(key)
	var bw agg
	for i, us := range lat.Values {
		if us > 0 {
			bw.Values = append(bw.Values, float64(n)/us)
			if i < len(lat.Rounds) {
				bw.Rounds = append(bw.Rounds, lat.Rounds[i])
			}
		}
	}
	if len(bw.Rounds) != len(bw.Values) {
		bw.Rounds = nil
	}
	return bw
}

// workingSet explains a put ping-pong's miss against the best copy of
// its size when the data show it: a ping-pong of n bytes keeps four
// buffers of n bytes in the caches (each PE's source and the
// destination the other PE writes), the copy that the limit times two.
// So its one-way copies run at the speed of a copy of 2n bytes, the one
// with the same working set: at 8 MiB on a 32 MiB L3 the ping-pong's
// buffers fill the cache, the limit's half of it. The note gives the
// ping-pong's ratio against the best copy (bestCopyAgg) at 2n; when
// that meets the target,
// it is the cause. (The target stays judged against the copy of n
// bytes.)
func (e evaluation) workingSet(t *target, r *result, key string) {
	n, err := strconv.Atoi(key)
	if err != nil || n <= 0 {
		return
	}
	twice := strconv.Itoa(2 * n)
	ref, ok := e.bestCopyAgg(twice) // as the target: the lone or the split copy
	if !ok {
		return
	}
	med, lo, hi, np, ok := ratio(asBandwidth(r.fig(gosh, key), key), ref)
	if !ok {
		return
	}
	t.Notes = append(t.Notes, fmt.Sprintf(
		"working set: a ping-pong of %s keeps four buffers of that size in the caches (both PEs' source and destination), a copy of %s two; against the best copy (lone or split) at %s (the same working set) the ratio is %.2f [%.2f-%.2f] over %d rounds",
		humanSize(key), humanSize(key), humanSize(twice), med, lo, hi, np))
	if t.meets(med) {
		t.Cause = fmt.Sprintf("working set: at %s the ping-pong's four buffers make it a copy of %s's working set, and against the best copy at that size it meets the target (see the note)",
			humanSize(key), humanSize(twice))
	}
}

// pingpongRef explains a put ping-pong's miss against the best copy
// with bench/limits memcpy_pingpong, measured in every round: the same
// ping-pong (each side copies n bytes into the other's buffer, then
// stores a flag the other polls) with the best of the machine's copies
// and two ways to wait, nothing else. Against a lone copy a ping-pong
// also pays a hand-off per trip and keeps four buffers in the caches
// where the copy keeps two, so from 2 MiB up its copies run slower
// than any lone copy of the size (docs/performance.md). The note gives
// goshmem's ratio against it per size, each round's figure against
// that round's reference; when every size meets the target, the
// pattern is the cause. (The target stays judged against the lone
// copy.)
func (e evaluation) pingpongRef(t *target, r *result, sizes []string) {
	var per []string
	worstKey, worstR, wlo, whi, wn := "", math.Inf(1), 0.0, 0.0, 0
	// Timed next to the ping-pong (-copy) where the program did, else
	// bench/limits memcpy_pingpong of the round.
	interleaved := len(sizes) > 0 && r.fig(gosh, sizes[0]+keyVsPattern).ok()
	for _, k := range sizes {
		g, ref := asBandwidth(r.fig(gosh, k), k), agg{}
		ok := false
		if interleaved {
			g, ref, ok = r.fig(gosh, k+keyVsPattern), constant(1), r.fig(gosh, k+keyVsPattern).ok()
		} else {
			ref, ok = e.limitAgg(limPingpong, k)
		}
		if !ok {
			continue
		}
		med, lo, hi, np, ok := ratio(g, ref)
		if !ok {
			continue
		}
		per = append(per, fmt.Sprintf("%s %.2f", humanSize(k), med))
		if med < worstR {
			worstKey, worstR, wlo, whi, wn = k, med, lo, hi, np
		}
	}
	if worstKey == "" {
		return
	}
	how := "bench/limits memcpy_pingpong times the same ping-pong with the machine's best copy and a bare flag in every round"
	if interleaved {
		how = "put_pingpong -copy times the same round trips bare (each copy method and a bare flag) in blocks between its own"
	}
	t.Notes = append(t.Notes, fmt.Sprintf(
		"the ping-pong's own reference: %s; against it the worst size is %s at %.2f [%.2f-%.2f] over %d rounds; per size: %s",
		how, humanSize(worstKey), worstR, wlo, whi, wn, strings.Join(per, ", ")))
	if t.meets(worstR) {
		t.Cause = "the pattern: a ping-pong's copies run slower than a lone copy (a hand-off per trip, four buffers in the caches), and against the same ping-pong made bare with the machine's best copy it meets the target at every size (see the note)"
	}
}

// linesModel explains an exchange collective's miss against the
// barrier (reduce, collect, fcollect, alltoall at 2 PEs; a member's
// part is parts blocks of key bytes: Alltoall's one per member) with the cost
// model of docs/performance.md, from bench/limits lines: a member's
// part of b bytes fills L = ceil((b+8)/64) cache lines (the sequence
// number and header share the first), which each member writes and the
// other reads, where the 2-PE barrier moves one line each way; so a
// call costs about (h + (L-1) l) / h barriers, h the hand-off (half the
// lines test's round trip without extra lines) and l the round's cost
// per extra line. A ratio within the model is what the data's lines
// cost on this machine; above it, the rest is the call's own work on
// the critical path. (The lines test runs once, the ratio in every
// round: a change of the machine's state between them moves both.)
func (e evaluation) linesModel(t *target, key string, parts int) {
	if e.exchangeModel(t, key, parts) {
		return
	}
	b, err := strconv.Atoi(key)
	round, ok0 := e.Limits.value(limLines, "0")
	l, ok1 := e.Limits.value(limLines, linesSlope)
	if err != nil || !ok0 || !ok1 || round <= 0 {
		return
	}
	h, lines := round/2, partLines(b*parts)
	if l < 0 {
		// More lines cannot cost less: the test's rows came from
		// different states of the machine (its 0-2 line rows slow,
		// its 4-8 line rows fast, once), and its slope says nothing.
		t.Notes = append(t.Notes, fmt.Sprintf(
			"cost model (docs/performance.md): the lines limit's slope is negative (%s us per extra line): its rows were measured in different states of the machine, so the model gives no verdict here; rerun to get one",
			fmtNum(l)))
		return
	}
	model := (h + float64(lines-1)*l) / h
	t.Notes = append(t.Notes, fmt.Sprintf(
		"cost model (docs/performance.md): at %s a member's part fills %d cache line(s), written by it and read by the other, where the barrier moves 1; with the hand-off h = %s us (half the lines limit's round trip) and l = %s us per extra line (its slope), (h + (L-1) l) / h = %.2f barriers",
		humanSize(key), lines, fmtNum(h), fmtNum(l), model))
	// The lines test runs once, before the rounds; the machine's state
	// moves h by 4x or more, and l/h with it. Against the hand-off
	// limit of the rounds (a tighter loop: about 0.6-0.7 of the lines
	// test's h in one state), a lines test taken in another state gives
	// no verdict.
	var hs agg
	for _, r := range e.Rounds[limHandoff] {
		if v, ok := (limits{limHandoff: r}).value(limHandoff, handoffMin); r != nil && ok && v > 0 {
			hs.Values = append(hs.Values, v)
		}
	}
	if hs.ok() {
		if q := h / hs.median(); q < 0.5 || q > 3 {
			t.Notes = append(t.Notes, fmt.Sprintf(
				"the lines test ran in another state of the machine than the rounds (its h is %.1fx the rounds' median hand-off limit, %s us): the model gives no verdict here",
				q, fmtNum(hs.median())))
			return
		}
	}
	if t.Ratio <= model {
		t.Cause = fmt.Sprintf("cache lines: at %s the data's %d lines cost %.2f barriers by the cost model (see the note), more than the target allows on this machine", humanSize(key), lines, model)
		return
	}
	t.Cause = fmt.Sprintf("software per call: %.2f barriers is above the %.2f that the cost model gives the data's %d line(s) (see the note); the rest is the call's own work between seeing the other's publication and publishing the next (docs/performance.md, \"Small collectives\")",
		t.Ratio, model, lines)
}

// partLines is the cache lines a member's part of b bytes fills in its
// dropbox: the sequence number and header share the first.
func partLines(b int) int { return (b + 8 + lineBytes - 1) / lineBytes }

// exchangeModel is linesModel from bench/limits exchange, when it ran:
// the bare exchange of L lines between two cores, both ways at once,
// with nothing else (the least over its ways to publish and poll),
// over the bare exchange of one line, which is what the 2-PE barrier
// moves. That ratio is what the data's lines cost in barriers on this
// machine, measured rather than modelled (the lines model adds the
// extra lines in series; the cores overlap them). It reports whether
// it gave the target a note.
func (e evaluation) exchangeModel(t *target, key string, parts int) bool {
	b, err := strconv.Atoi(key)
	if err != nil {
		return false
	}
	lines := partLines(b * parts)
	row := strconv.Itoa(lines)
	// Per round when compare measured it in every round (the ratio
	// moves with the machine's state: 1.26-1.34 at 5 lines in a fast
	// state, 1.86 in a slow one), else the one measurement.
	var ratios []float64
	for _, r := range e.Rounds[limExchange] {
		l := limits{limExchange: r}
		one, ok1 := l.value(limExchange, "1")
		many, okL := l.value(limExchange, row)
		if r != nil && ok1 && okL && one > 0 {
			ratios = append(ratios, many/one)
		}
	}
	var model float64
	switch one, ok1 := e.Limits.value(limExchange, "1"); {
	case len(ratios) > 0:
		model = agg{Values: ratios}.median()
		t.Notes = append(t.Notes, fmt.Sprintf(
			"bare exchange (bench/limits exchange, in every round): at %s a member's part fills %d cache line(s); two cores exchanging %d line(s) both ways with nothing else took %.2f one-line exchanges (the 2-PE barrier moves one line each way), median of %d rounds [%.2f-%.2f]",
			humanSize(key), lines, lines, model, len(ratios), slices.Min(ratios), slices.Max(ratios)))
	case ok1 && one > 0:
		many, okL := e.Limits.value(limExchange, row)
		if !okL {
			return false
		}
		model = many / one
		t.Notes = append(t.Notes, fmt.Sprintf(
			"bare exchange (bench/limits exchange, before the rounds): at %s a member's part fills %d cache line(s); two cores exchanging %d line(s) both ways with nothing else took %s us a round, one line %s us: %.2f one-line exchanges (the 2-PE barrier moves one line each way)",
			humanSize(key), lines, lines, fmtNum(many), fmtNum(one), model))
	default:
		return false
	}
	if t.Ratio <= model {
		t.Cause = fmt.Sprintf("cache lines: at %s the bare exchange of the data's %d lines alone costs %.2f one-line exchanges (see the note), more than the target allows on this machine", humanSize(key), lines, model)
	} else {
		t.Cause = fmt.Sprintf("software per call: %.2f barriers is above the %.2f one-line exchanges that the bare exchange of the data's %d line(s) takes (see the note); the rest is the call's own work (docs/performance.md, \"Small collectives\")", t.Ratio, model, lines)
	}
	return true
}

// bcastVsMemcpy evaluates the broadcast's bandwidth at size key (size /
// latency, per round) against memcpy's bandwidth at the same size: the
// broadcast moves size bytes into every PE's dst, copies that run in
// parallel, so a broadcast that costs only its copy runs at memcpy
// speed.
func (e evaluation) bcastVsMemcpy(key string) target {
	t := target{Name: "broadcast bandwidth, " + humanSize(key) + ", vs memcpy (size / latency)", Threshold: 0.9}
	r := e.res("broadcast", e.base())
	n, _ := strconv.Atoi(key)
	lim, ok := e.Limits.value(limMemcpy, key)
	lat := r.fig(gosh, key)
	switch {
	case r == nil:
		t.Status, t.Why = statusNA, "broadcast was not run (-only)"
		return t
	case !lat.ok():
		t.Status, t.Why = statusNA, "no "+humanSize(key)+" figure from goshmem"
		if len(r.Keys) > 0 {
			t.Why += " (the largest size was " + humanSize(r.Keys[len(r.Keys)-1]) + ")"
		}
		return t
	case !ok || lim <= 0:
		t.Status, t.Why = statusNA, "no memcpy limit for "+humanSize(key)+limitErr(e.Limits, limMemcpy)
		return t
	}
	ref, _ := e.limitAgg(limMemcpy, key)
	judge(&t, asBandwidth(lat, key), ref, 0, "MB/s", "memcpy")
	if t.Status != statusNA {
		t.Figures += fmt.Sprintf(" (broadcast latency %s us, memcpy time %s us)", fmtNum(lat.median()), fmtNum(float64(n)/lim))
	}
	if pair, ok := e.Limits.value(limPair, key); t.Status == statusMiss && ok && pair > 0 && e.NP == 2 {
		// At 2 PEs the broadcast is two copies at once (the root's
		// into its own dst, the other PE's), which share the cache
		// and the memory bus; bench/limits memcpy_pair times them.
		if med, lo, hi, np, ok := ratio(asBandwidth(lat, key), constant(pair)); ok {
			t.Notes = append(t.Notes, fmt.Sprintf(
				"two copies at once: the broadcast fills the root's dst and the other PE's from one source at the same time; against bench/limits memcpy_pair (%s MB/s per copy, against memcpy's %s alone) the ratio is %.2f [%.2f-%.2f] over %d rounds",
				fmtNum(pair), fmtNum(lim), med, lo, hi, np))
			if t.meets(med) {
				t.Cause = "two copies at once: the 2-PE broadcast's two concurrent copies run slower than memcpy's lone one, and against them (memcpy_pair) it meets the target (see the note)"
			}
		}
	}
	return t
}

// worst evaluates a target over sizes: the size whose ratio is worst
// (the highest for an at-most target, the lowest for an at-least one)
// decides. figs returns goshmem's and the reference's figures for a
// size, and whether the reference exists. It returns the worst size's
// key ("" when no size had both figures).
func worst(t *target, sizes []string, figs func(string) (agg, agg, bool), refName, unit string) string {
	var per []string
	worstKey, worstRatio := "", math.NaN()
	for _, k := range sizes {
		g, ref, ok := figs(k)
		if !ok || !g.ok() {
			continue
		}
		rt, _, _, _, ok := ratio(g, ref)
		if !ok {
			continue
		}
		per = append(per, humanSize(k)+" "+fmtRatio(rt))
		if worstKey == "" || t.Le && rt > worstRatio || !t.Le && rt < worstRatio {
			worstKey, worstRatio = k, rt
		}
	}
	if worstKey == "" {
		t.Status = statusNA
		if t.Why == "" && refName == "peer" {
			t.Why = "no peer figures for these sizes"
		}
		return ""
	}
	g, ref, _ := figs(worstKey)
	half := 0.0
	if unit == "us" {
		half = outputHalfUnit
	}
	judge(t, g, ref, half, unit, refName)
	t.Figures = fmt.Sprintf("worst at %s: %s; ratio per size: %s", humanSize(worstKey), t.Figures, strings.Join(per, ", "))
	return worstKey
}

// missingSides names the sides without a figure for key.
func missingSides(r *result, key string) string {
	var s []string
	for _, sd := range []side{gosh, peer} {
		if !r.fig(sd, key).ok() {
			s = append(s, sd.String())
		}
	}
	return strings.Join(s, " and ")
}

// limitErr returns ": <why>" when a limit test failed.
func limitErr(l limits, test string) string {
	if t := l[test]; t != nil && t.Err != "" {
		return ": " + t.Err
	}
	if l[test] == nil {
		return " (not run)"
	}
	return ""
}

// humanSize formats a size key: "8 B", "4 KiB", "16 MiB"; other keys as
// they are.
func humanSize(key string) string {
	n, err := strconv.Atoi(key)
	if err != nil {
		return key
	}
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.Itoa(n>>30) + " GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// limitFail is a goshmem figure beyond its machine limit: a latency
// below it, or a bandwidth above it. The limit is then not a bound, a
// bug to fix in the limit (or the benchmark).
type limitFail struct {
	Bench, Key, What string  // benchmark, row, which limit
	Best, Limit      float64 // goshmem's best round and the limit
	Unit             string
}

// maxCopySpread caps copySpread: a copy limit whose rounds differ more
// than this says more about the machine's state than about the copy.
const maxCopySpread = 0.03

// copySpread is the resolution of the copy limit at row key when what
// is "memcpy": the relative spread, (max - min) / max, of the best copy
// the rounds measured there (each round's best of its blocks), at most
// maxCopySpread; 0 for other limits or with fewer than two rounds. A put
// whose copy is the limit's own engine (put_bw, get_bw at 1-4 MiB) meets
// it within that much: a best round 0.2-1.1% above the best-of-rounds
// limit (full-8) is the limit's measurement error, not a copy faster
// than the machine's.
func (e evaluation) copySpread(what, key string) float64 {
	if what != limMemcpy && what != limSplit {
		return 0
	}
	lo, hi := math.Inf(1), 0.0
	n := 0
	for _, t := range e.Rounds[what] {
		if t == nil {
			continue
		}
		if v, ok := (limits{what: t}).value(what, key); ok && v > 0 {
			lo, hi = min(lo, v), max(hi, v)
			n++
		}
	}
	if n < 2 {
		return 0
	}
	return min((hi-lo)/hi, maxCopySpread)
}

func (f limitFail) String() string {
	if f.Unit == "ratio" && f.Best < 1 {
		return fmt.Sprintf("%s %s: goshmem's highest run's ratio to the %s is %s, below 1 in every run: that bare way is not a bound",
			f.Bench, f.Key, f.What, fmtRatio(f.Best))
	}
	if f.Unit == "ratio" {
		return fmt.Sprintf("%s %s: goshmem's lowest run's ratio to the %s is %s, above 1 in every run: the copy is not a bound",
			f.Bench, f.Key, f.What, fmtRatio(f.Best))
	}
	dir := "below"
	if f.Unit != "us" {
		dir = "above"
	}
	return fmt.Sprintf("%s %s: goshmem's best round %s %s is %s its limit %s %s (%s): the limit is not a bound",
		f.Bench, f.Key, fmtNum(f.Best), f.Unit, dir, fmtNum(f.Limit), f.Unit, f.What)
}

// limitChecks judges every goshmem figure that has a machine limit
// (limitFor) at the base PE count: the best round of a latency must not
// be below the limit by more than the printed figures' rounding, the
// best round of a bandwidth not above it by more than the copy limit's
// own spread between the rounds that measured it (copySpread). It
// returns how many figures it checked and those that fail.
func (e evaluation) limitChecks() (int, []limitFail) {
	names := make([]string, 0, len(e.Results))
	for k := range e.Results {
		names = append(names, k)
	}
	slices.Sort(names)
	n := 0
	var fails []limitFail
	for _, name := range names {
		r := e.Results[name]
		if r == nil || name != r.Spec.Name {
			continue // other PE counts have no limits
		}
		lower := r.Spec.Kind.lowerIsBetter()
		for _, k := range r.Keys {
			if q := r.fig(gosh, k+keyVsCopy); q.ok() {
				// Against the best copy timed next to it (-copy):
				// beaten when goshmem's transfer beat it in every
				// run (each run's figure is the median of its
				// per-round ratios), each round's fastest way of
				// any kind where the program gave it: a transfer as
				// fast as the best way's median lies above it in
				// about half the rounds, so a bound is beaten only
				// by beating every way.
				if qr := r.fig(gosh, k+keyVsRoundBest); qr.ok() {
					q = qr
				}
				n++
				if q.min() > 1 {
					fails = append(fails, limitFail{Bench: name, Key: k, What: "interleaved best copy",
						Best: q.min(), Limit: 1, Unit: "ratio"})
				}
				continue
			}
			lim, what, ok := limitFor(r.Spec, k, e.Limits, e.NP)
			g := r.fig(gosh, k)
			if q := r.fig(gosh, keyRatioInterleaved); what == "hand-off" && q.ok() {
				// put_pingpong -handoff: against the bare hand-off
				// timed between the program's blocks rather than a
				// limit from another moment, beaten when goshmem's
				// loop beat it in every run. It is the 8-byte
				// figure's; the other small sizes have no reference
				// of their own then. Where the program gave it, the
				// ratio to each round's fastest way of any kind: a
				// loop exactly as fast as the best way lies below
				// that way's median in about half the rounds (as
				// with the copies, RoundPrefix).
				if qr := r.fig(gosh, keyRatioRoundBest); qr.ok() {
					q = qr
				}
				if k == "8" {
					n++
					if q.max() < 1 {
						fails = append(fails, limitFail{Bench: name, Key: k, What: "interleaved bare hand-off",
							Best: q.max(), Limit: 1, Unit: "ratio"})
					}
				}
				continue
			}
			if !ok || lim <= 0 || !g.ok() {
				continue
			}
			n++
			best := g.best(lower)
			f := limitFail{Bench: name, Key: k, What: what, Best: best, Limit: lim, Unit: r.Spec.Kind.unit()}
			if what == "memcpy time" {
				f.Unit = "us" // a latency against the copy's time
			}
			if lower && best+outputHalfUnit < lim || !lower && best > lim*(1+e.copySpread(what, k)) {
				fails = append(fails, f)
			}
		}
	}
	return n, fails
}
