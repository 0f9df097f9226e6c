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

// agg is one figure over the rounds that produced it.
type agg struct {
	Values []float64
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

// add records one round's figures of a side.
func (r *result) add(sd side, pts []point) {
	for _, p := range pts {
		if !slices.Contains(r.Keys, p.Key) {
			r.Keys = append(r.Keys, p.Key)
		}
		a := r.Figs[sd][p.Key]
		a.Values = append(a.Values, p.Value)
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
	sepLines    = "separate_lines"
	sameLine    = "same_line"
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
// same size for put_bw and get_bw; the cache-line hand-off with separate
// lines (the layout of the ping-pong's and the barrier's flags) for the
// ping-pong up to one cache line and the 2-PE barrier; the uncontended
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
		v, ok := l.value(limMemcpy, key)
		return v, "memcpy", ok
	case "put_pingpong":
		if n, err := strconv.Atoi(key); err == nil && n <= lineBytes {
			v, ok := l.value(limHandoff, sepLines)
			return v, "hand-off, separate lines", ok
		}
	case "barrier":
		if np == 2 && key == "2" {
			v, ok := l.value(limHandoff, sepLines)
			return v, "hand-off, separate lines", ok
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
	Ratio     float64  // the measured ratio (medians over the rounds)
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
// peer's figure, or a limit as a one-value agg). half is the rounding
// of the printed figures (0 when negligible); lower tells whether lower
// figures are better; unit names the figures' unit.
func judge(t *target, g, ref agg, half float64, lower bool, unit, refName string) {
	if !g.ok() || !ref.ok() {
		t.Status, t.Why = statusNA, "no figures"
		return
	}
	gm, rm := g.median(), ref.median()
	t.Figures = fmt.Sprintf("goshmem %s, %s %s", withUnit(gm, unit), refName, withUnit(rm, unit))
	if rm <= 0 {
		t.Status, t.Why = statusNA, fmt.Sprintf("the %s figure is %s", refName, fmtNum(rm))
		return
	}
	t.Ratio = gm / rm
	t.Status = statusMiss
	if t.meets(t.Ratio) {
		t.Status = statusPass
	}
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
	var noisy bool
	if len(g.Values) > 1 || len(ref.Values) > 1 {
		gb, rb := g.best(lower), ref.best(lower)
		if rb > 0 {
			br := gb / rb
			if t.meets(br) != t.meets(t.Ratio) {
				noisy = true
				t.Notes = append(t.Notes, fmt.Sprintf(
					"with each side's best round the ratio is %.2f (goshmem %s, %s %s; rounds ranged goshmem %s, %s %s)",
					br, withUnit(gb, unit), refName, withUnit(rb, unit), fmtRange(g), refName, fmtRange(ref)))
			}
		}
	}
	if t.Status != statusMiss {
		return
	}
	switch {
	case unresolved:
		t.Cause = "measurement resolution: at two printed decimals the ratio could be on either side of the threshold (see the note)"
	case noisy:
		t.Cause = "run-to-run noise: the best rounds of the two sides meet the target, the medians do not (see the note); rerun on a quiet machine or with more -rounds"
	default:
		t.Cause = causeUnknown
	}
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
	Results map[string]*result // by benchmark name; missing: not run
	Limits  limits
	NP      int
	Peer    bool   // the peer ran
	PeerWhy string // why not
}

// targets evaluates every target of the issue (2 PEs; ratios are
// goshmem/peer or goshmem/limit in the same run).
func (e evaluation) targets() []target {
	var ts []target
	vsPeer := func(bench, key, name string, thr float64) {
		t := target{Name: name, Le: true, Threshold: thr}
		r := e.Results[bench]
		switch {
		case r == nil:
			t.Status, t.Why = statusNA, bench+" was not run (-only)"
		case !e.Peer:
			t.Status, t.Why = statusNA, "peer skipped: "+e.PeerWhy
		default:
			judge(&t, r.fig(gosh, key), r.fig(peer, key), outputHalfUnit, true, "us", "peer")
			if t.Status == statusNA && t.Why == "no figures" {
				t.Why = "no " + humanSize(key) + " figure from " + missingSides(r, key)
			}
		}
		ts = append(ts, t)
	}
	vsPeer("put", "8", "put latency, 8 B, vs peer", 0.7)
	vsPeer("get", "8", "get latency, 8 B, vs peer", 0.7)
	vsPeer("atomics", "fetch_add", "fetch_add latency vs peer", 0.7)
	vsPeer("put_pingpong", "8", "put ping-pong one-way, 8 B, vs peer", 0.75)

	// Ping-pong against the hand-off with the same layout: a flag line
	// each side writes and the other polls.
	{
		t := target{Name: "put ping-pong one-way, 8 B, vs cache-line hand-off (separate lines)", Le: true, Threshold: 1.3}
		r := e.Results["put_pingpong"]
		lim, ok := e.Limits.value(limHandoff, sepLines)
		switch {
		case r == nil:
			t.Status, t.Why = statusNA, "put_pingpong was not run (-only)"
		case !ok:
			t.Status, t.Why = statusNA, "no hand-off limit"+limitErr(e.Limits, limHandoff)
		default:
			judge(&t, r.fig(gosh, "8"), agg{[]float64{lim}}, outputHalfUnit, true, "us", "hand-off")
		}
		ts = append(ts, t)
	}

	bw := func(bench, what string) {
		r := e.Results[bench]
		tp := target{Name: what + " bandwidth, 4 MiB and up, vs peer", Threshold: 0.95}
		tl := target{Name: what + " bandwidth, 4 MiB and up, vs memcpy", Threshold: 0.9}
		if r == nil {
			tp.Status, tp.Why = statusNA, bench+" was not run (-only)"
			tl.Status, tl.Why = tp.Status, tp.Why
			ts = append(ts, tp, tl)
			return
		}
		var sizes []string
		for _, k := range r.Keys {
			if n, err := strconv.Atoi(k); err == nil && n >= bwFloorSize && r.fig(gosh, k).ok() {
				sizes = append(sizes, k)
			}
		}
		if len(sizes) == 0 {
			why := "no sizes of 4 MiB or more were run"
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
			}, "peer")
		}
		worst(&tl, sizes, func(k string) (agg, agg, bool) {
			v, ok := e.Limits.value(limMemcpy, k)
			return r.fig(gosh, k), agg{[]float64{v}}, ok && v > 0
		}, "memcpy")
		if tl.Status == statusNA && tl.Why == "" {
			tl.Why = "no memcpy limit for these sizes" + limitErr(e.Limits, limMemcpy)
		}
		ts = append(ts, tp, tl)
	}
	bw("put_bw", "put")
	bw("get_bw", "get")

	vsPeer("barrier", strconv.Itoa(e.NP), "barrier latency vs peer", 0.6)

	// The team collectives (teams issue).
	big := strconv.Itoa(collTargetSize)
	vsPeer("reduce", "8", "reduce latency, 8 B, vs peer", 0.5)
	vsPeer("reduce", big, "reduce latency, 1 MiB, vs peer", 0.4)
	vsPeer("broadcast", "8", "broadcast latency, 8 B, vs peer", 0.5)
	ts = append(ts, e.bcastVsMemcpy(big))

	{
		t := target{Name: "ptr: store through Ptr vs local store (ptr_store/local_store)", Le: true, Threshold: 1.2}
		r := e.Results["ptr"]
		if r == nil {
			t.Status, t.Why = statusNA, "ptr was not run (-only)"
		} else {
			g := r.fig(gosh, ptrRatio)
			if !g.ok() {
				t.Status, t.Why = statusNA, "no ptr_store/local_store figure from goshmem"
			} else {
				// Each round's ratio comes from one run (the same
				// process, one after the other); the median decides.
				t.Ratio = g.median()
				t.Status = statusMiss
				if t.meets(t.Ratio) {
					t.Status = statusPass
				}
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

// bcastVsMemcpy evaluates the broadcast's bandwidth at size key (size /
// latency, per round) against memcpy's bandwidth at the same size: the
// broadcast moves size bytes into every PE's dst, copies that run in
// parallel, so a broadcast that costs only its copy runs at memcpy
// speed.
func (e evaluation) bcastVsMemcpy(key string) target {
	t := target{Name: "broadcast bandwidth, " + humanSize(key) + ", vs memcpy (size / latency)", Threshold: 0.9}
	r := e.Results["broadcast"]
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
	var bw agg
	for _, us := range lat.Values {
		if us > 0 {
			bw.Values = append(bw.Values, float64(n)/us)
		}
	}
	judge(&t, bw, agg{[]float64{lim}}, 0, false, "MB/s", "memcpy")
	if t.Status != statusNA {
		t.Figures += fmt.Sprintf(" (broadcast latency %s us, memcpy time %s us)", fmtNum(lat.median()), fmtNum(float64(n)/lim))
	}
	return t
}

// worst evaluates a bandwidth target over sizes: the size with the
// lowest ratio decides. figs returns goshmem's and the reference's
// figures for a size, and whether the reference exists.
func worst(t *target, sizes []string, figs func(string) (agg, agg, bool), refName string) {
	var per []string
	worstKey, worstRatio := "", math.Inf(1)
	for _, k := range sizes {
		g, ref, ok := figs(k)
		if !ok || !g.ok() {
			continue
		}
		ratio := g.median() / ref.median()
		per = append(per, humanSize(k)+" "+fmtRatio(ratio))
		if ratio < worstRatio {
			worstKey, worstRatio = k, ratio
		}
	}
	if worstKey == "" {
		t.Status = statusNA
		if t.Why == "" && refName == "peer" {
			t.Why = "no peer figures for these sizes"
		}
		return
	}
	g, ref, _ := figs(worstKey)
	judge(t, g, ref, 0, false, "MB/s", refName)
	t.Figures = fmt.Sprintf("worst at %s: %s; ratio per size: %s", humanSize(worstKey), t.Figures, strings.Join(per, ", "))
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
