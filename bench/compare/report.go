package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// report is everything the markdown report shows.
type report struct {
	Date       time.Time
	Elapsed    time.Duration
	Command    string // how the tool was started
	Quick      bool
	Rounds     int
	NP         int
	Machine    machine
	LoadStart  float64 // 1-minute load average, NaN if unknown
	LoadEnd    float64
	GoshCmd    string   // goshmem's command line, with PROG and ARGS
	GoshEnv    []string // SHMEM_* variables goshmem's PEs inherit
	Peer       peerInfo
	PeerCmd    string // the peer's command line, with NAME and ARGS
	PeerExpand string // what run.sh runs
	PeerEnv    []string
	Specs      []*spec // the benchmarks run, in order
	Results    map[string]*result
	Limits     limits
	LimitOrder []string // the limits tests run, in order
	// LimitRounds are the limits measured again in each round (memcpy's
	// bulk sizes, the hand-off), by test, round r at r-1 (nil or without
	// rows: that round's failed).
	LimitRounds map[string][]*limitTable
	Targets     []target
	Cfgs        []peCfg      // the PE configurations run
	Jobs        []job        // what each round ran
	Handoff     agg          // the hand-off limit (min row) per round
	States      []roundState // the machine per round
	// LimitChecked figures were judged against their limits;
	// LimitFails are those below it.
	LimitChecked int
	LimitFails   []limitFail
	Plots        map[string]string // benchmark name -> PNG path relative to the report
	RawLog       string            // raw outputs, relative to the report
	Notes        []string          // further remarks (failures of whole steps)
}

// writeReport writes the markdown report.
func writeReport(w io.Writer, r *report) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	peerName := "Open MPI's OpenSHMEM"

	p("# goshmem vs %s: %s\n\n", peerName, r.Date.Format("2006-01-02"))
	p("Written by `%s` at %s; the run took %s.\n\n", r.Command, r.Date.Format("2006-01-02 15:04 MST"), r.Elapsed.Round(time.Second))

	p("## Setup\n\n| | |\n|---|---|\n")
	p("| date | %s |\n", r.Date.Format("2006-01-02 15:04:05 MST"))
	p("| machine | %s, %d CPUs, %s |\n", r.Machine.CPU, r.Machine.CPUs, r.Machine.Kernel)
	if !math.IsNaN(r.LoadStart) {
		load := fmt.Sprintf("%.2f at the start, %.2f at the end", r.LoadStart, r.LoadEnd)
		if math.Max(r.LoadStart, r.LoadEnd) > float64(r.Machine.CPUs)/2 {
			load += fmt.Sprintf(" (other work shared the %d CPUs: expect noise)", r.Machine.CPUs)
		}
		p("| load average (1 min) | %s |\n", load)
	}
	p("| Go | %s |\n", r.Machine.Go)
	p("| PEs | %s |\n", pesLine(r))
	p("| rounds | %d; each round measures the hand-off limit, then runs every benchmark goshmem then the peer (an adjacent pair); targets use the median of the pairwise ratios of the rounds, tables the median over the rounds and each side's range |\n", r.Rounds)
	if r.Quick {
		p("| mode | quick (-quick): small sizes and few iterations, a smoke run, not a measurement |\n")
	} else {
		mode := "the programs' default sizes and iterations"
		if slices.ContainsFunc(r.Specs, func(s *spec) bool { return isCollective(s.Name) }) {
			mode += " (for the team collectives fewer: sizes up to 1 MiB or 256 KiB)"
		}
		p("| mode | full: %s, spelled out per benchmark below |\n", mode)
	}
	settings := "default SHMEM_* settings"
	if len(r.GoshEnv) > 0 {
		settings = "SHMEM_* settings from the environment: `" + strings.Join(r.GoshEnv, " ") + "`, the rest default"
	}
	p("| goshmem | `%s`: goshmem's cmd/oshrun and bench/&lt;name&gt;, built from this tree with `go build`; %s |\n", r.GoshCmd, settings)
	if r.Peer.Enabled {
		ver := r.Peer.Version
		if r.Peer.Components != "" {
			ver += " (OSHMEM components built: " + r.Peer.Components + ")"
		}
		ucx := r.Peer.UCX
		if ucx == "" {
			ucx = "unknown"
		}
		p("| peer | %s, UCX %s; bench/peer/&lt;name&gt;.c built with %s |\n", ver, ucx, r.Peer.Build)
		p("| peer command | `%s`, which runs `%s` |\n", r.PeerCmd, r.PeerExpand)
		if len(r.PeerEnv) > 0 {
			p("| peer environment | `%s` |\n", strings.Join(r.PeerEnv, " "))
		}
	} else {
		p("| peer | skipped: %s |\n", r.Peer.Skipped)
	}
	p("\n")

	writeLimitCheck(b, r)
	writeStates(b, r)

	p("## Targets\n\n")
	p("Each ratio is the median of the pairwise ratios goshmem/reference of the rounds: goshmem/peer from the adjacent runs of one round, goshmem/goshmem from the same round, goshmem/limit against the limit. The spread is the range of the pairwise ratios. Targets are benchmarks, not tests: a MISS is reported, not a failure.\n\n")
	p("| target | goshmem/reference | spread | wanted | result | figures |\n|---|---|---|---|---|---|\n")
	for _, t := range r.Targets {
		ratio := "-"
		if t.Status != statusNA {
			ratio = fmtRatio(t.Ratio)
		}
		res := "**" + t.Status + "**"
		fig := t.Figures
		if t.Status == statusNA {
			res = statusNA
			fig = t.Why
		}
		p("| %s | %s | %s | %s | %s | %s |\n", t.Name, ratio, t.spread(), t.wants(), res, mdCell(fig))
	}
	p("\n")
	var misses, noted []target
	for _, t := range r.Targets {
		if t.Status == statusMiss {
			misses = append(misses, t)
		} else if len(t.Notes) > 0 {
			noted = append(noted, t)
		}
	}
	if len(misses) > 0 {
		p("Missed targets (the targets stay):\n\n")
		for _, t := range misses {
			p("- %s: %s (wanted %s). cause: %s\n", t.Name, fmtRatio(t.Ratio), t.wants(), t.Cause)
			for _, n := range t.Notes {
				p("  - note: %s\n", n)
			}
		}
		p("\n")
	}
	if len(noted) > 0 {
		p("Notes on targets met or not evaluated:\n\n")
		for _, t := range noted {
			for _, n := range t.Notes {
				p("- %s: %s\n", t.Name, n)
			}
		}
		p("\n")
	}
	p("## Results\n\n")
	p("Each table: the median over the rounds; goshmem/peer below 1 means goshmem is faster for latencies, above 1 for bandwidths and rates. ")
	p("The limit column is the machine limit the figure is judged against (see Machine limits).\n\n")
	if len(r.Jobs) == 0 { // a report built without jobs: the base only
		for _, s := range r.Specs {
			r.Jobs = append(r.Jobs, job{Spec: s, Cfg: peCfg{NP: r.NP, PerProc: 1}, Key: s.Name})
		}
	}
	for _, j := range r.Jobs {
		res := r.Results[j.Key]
		if res == nil {
			continue
		}
		writeBench(b, r, res, j)
	}

	if len(r.LimitOrder) > 0 {
		p("## Machine limits\n\n")
		p("From bench/limits: memcpy (every size) and atomic once before the rounds; the hand-off, and memcpy again at every size, in every round, so that the bandwidth targets pair goshmem's figures with the limit of the same round.\n\n")
		for _, name := range r.LimitOrder {
			t := r.Limits[name]
			if t == nil {
				continue
			}
			p("### %s\n\n", name)
			p("`limits %s`", strings.Join(t.Args, " "))
			if name == limHandoff && r.Rounds > 1 {
				p(", in each round")
			}
			p("\n\n")
			if t.Err != "" {
				p("Failed: %s\n\n", t.Err)
				continue
			}
			for _, w := range t.Warnings {
				p("- warning: %s\n", w)
			}
			for _, n := range t.Notes {
				p("- %s\n", n)
			}
			if len(t.Warnings)+len(t.Notes) > 0 {
				p("\n")
			}
			cols := t.Columns
			if len(cols) != 2 {
				cols = []string{"", "value"}
			}
			p("| %s | %s |\n|---|---|\n", cols[0], cols[1])
			for _, row := range t.Rows {
				key := row.Key
				if name == limMemcpy || name == limSplit {
					key = humanSize(key)
				}
				p("| %s | %s |\n", key, fmtNum(row.Value))
			}
			p("\n")
		}
	}

	p("## Notes\n\n")
	p("- The programs print figures with three decimals (microseconds for latencies, so nanoseconds): 0.020 us is anything from 0.0195 to 0.0205 us. Targets whose ratio the rounding could flip say so.\n")
	p("- Limits: memcpy for put_bw and get_bw (same size; a best round above it fails only beyond the copy limit's own spread between the rounds that measured it, at most 3%%: goshmem's put is the limit's copy engine, and meets it within that); the cache-line hand-off's min row (the fastest of one line and two lines, polled with goshmem's spin, a pause per poll, or without a pause; the best block of each, the minimum over the rounds) for put_pingpong up to %d B, unless the program timed its own bare hand-off between its blocks (put_pingpong -handoff, on the same words, which the hand-off target also uses): then the loop fails only if it beat that reference in every run; no limit for the barrier (the hand-off is a ping-pong's, not a barrier's, and barrier -handoff's bare exchange of two words, in the PEs' heaps, in two lines of one page or in one line, is shown in its table but bounds the barrier in some states of the development machine only); the uncontended fetch-add for the atomics rows fetch_add, compare_swap and add_rate (PE 1 idles during the test, so the word's line stays in PE 0's cache; remote_fetch_add is what a contended line costs). The bare 2-PE exchange of k lines (bench/limits exchange, in every round; no limit of its own) explains the 2-PE small collectives against the barrier: its k-line round over its one-line round is what a part of that many lines costs in barriers.\n", lineBytes)
	if slices.ContainsFunc(r.Specs, func(s *spec) bool { return isCollective(s.Name) }) {
		p("- Collectives (broadcast, reduce, collect, fcollect, alltoall): every PE times back-to-back calls on TeamWorld and the row is PE 0's; the peer uses OpenSHMEM 1.4's active-set routines over all PEs (OSHMEM 4.1 has no teams), alternating two pSync arrays, and skips sizes below 4 B. The broadcast's limit from %s up is the time memcpy takes for the size (size / memcpy bandwidth); its target compares bandwidths (size / latency) with memcpy's at %s. goshmem's algorithms: SHMEM_BARRIER_ALGORITHM, SHMEM_REDUCE_ALGORITHM, SHMEM_BCAST_ALGORITHM, SHMEM_FCOLLECT_ALGORITHM (set them in the environment, or for goshmem only with -x).\n",
			humanSize(strconv.Itoa(bcastBulk)), humanSize(strconv.Itoa(collTargetSize)))
	}
	for _, n := range r.Notes {
		p("- %s\n", n)
	}
	if r.RawLog != "" {
		p("- Raw outputs of every run: [%s](%s).\n", r.RawLog, r.RawLog)
	}
	return b.Flush()
}

// writeBench writes the section of one benchmark in one configuration.
func writeBench(b *bufio.Writer, r *report, res *result, j job) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	s := res.Spec
	better := "lower is better"
	if !s.Kind.lowerIsBetter() {
		better = "higher is better"
	}
	at := ""
	if j.Key != s.Name {
		at = " at " + j.Cfg.label()
	}
	p("### %s%s: %s (%s), %s\n\n", s.Name, at, kindName(s.Kind), s.Kind.unit(), better)
	sides := "both sides"
	if !j.Peer && j.Key != s.Name {
		sides = "goshmem only (the peer has no goroutine PEs)"
	}
	p("%s. Arguments, %s: `%s`.\n\n", s.What, sides, strings.Join(res.Args, " "))
	if png, ok := r.Plots[j.Key]; ok {
		p("![%s](%s)\n\n", s.Name, png)
	}
	key := "Operation"
	switch {
	case s.Sized:
		key = "Size"
	case s.Name == "barrier":
		key = "PEs"
	case s.Name == "team_create":
		key = "Teams"
	}
	hasLimit := false
	for _, k := range res.Keys {
		if _, _, ok := limitFor(s, k, r.Limits, r.NP); ok && j.Key == s.Name {
			hasLimit = true
		}
	}
	u := s.Kind.unit()
	p("| %s | goshmem (%s) | peer (%s) | goshmem/peer (median pairwise) |", key, u, u)
	if hasLimit {
		p(" limit (%s) | goshmem/limit |", u)
	}
	p(" goshmem range | peer range |\n|---|---|---|---|")
	if hasLimit {
		p("---|---|")
	}
	p("---|---|\n")
	for _, k := range res.Keys {
		g, pe := res.fig(gosh, k), res.fig(peer, k)
		label := k
		if s.Sized {
			label = humanSize(k)
		}
		ratio, _, _, _, _ := ratio(g, pe)
		p("| %s | %s | %s | %s |", label, fmtNum(g.median()), fmtNum(pe.median()), fmtRatio(ratio))
		if hasLimit {
			if v, what, ok := limitFor(s, k, r.Limits, r.NP); ok && v > 0 {
				p(" %s (%s) | %s |", fmtNum(v), what, fmtRatio(g.median()/v))
			} else {
				p(" - | - |")
			}
		}
		p(" %s | %s |\n", fmtRange(g), fmtRange(pe))
	}
	p("\n")
	if hasLimit && slices.ContainsFunc(res.Keys, func(k string) bool { return res.fig(gosh, k+keyVsCopy).ok() }) {
		p("The limit column is bench/limits' figure, measured apart from these runs (the machine's memory bandwidth moves by 10%% and more within seconds): it is shown for scale, and a goshmem figure above it is no beaten bound. The limit check and the targets use the rows marked interleaved, the best copies timed between goshmem's own blocks.\n\n")
	}
	if s.Name == "ptr" {
		p("ptr's rows come from its `# ns per store:` line (table 1 prints 0.00 us); the last row is a ratio, not ns.\n\n")
	}
	if slices.ContainsFunc(res.Keys, isRatioKey) {
		p("The rows marked interleaved come from goshmem's own blocks taken between each other (put_pingpong -handoff, barrier -handoff, -vs-barrier); those ending in \"vs barrier\" and the one with \"/\" are ratios, not %s.\n\n", u)
	}
	for _, sd := range []side{gosh, peer} {
		if u := res.Unsupported[sd]; u != "" {
			p("%s: `%s`\n\n", sd, mdCell(u))
		}
	}
	for _, sd := range []side{gosh, peer} {
		if len(res.Fails[sd]) > 0 {
			p("%s failed in %d of %d runs:\n\n", sd, len(res.Fails[sd]), res.Runs[sd])
			for _, f := range res.Fails[sd] {
				p("- %s\n", mdCell(f))
			}
			p("\n")
		}
	}
}

// pesLine describes the PE configurations for the setup table.
func pesLine(r *report) string {
	if len(r.Cfgs) == 0 {
		return fmt.Sprintf("%d, each bound to a core", r.NP)
	}
	var cs []string
	for _, c := range r.Cfgs {
		switch {
		case c.goroutines():
			cs = append(cs, fmt.Sprintf("%s (`--pes-per-proc %d`; goshmem only)", c.label(), c.PerProc))
		case c.NP > r.Machine.CPUs && r.Machine.CPUs > 0:
			cs = append(cs, fmt.Sprintf("%s (more than the %d CPUs: goshmem `--bind-to core`, the peer `--oversubscribe --bind-to core:overload-allowed`)", c.label(), r.Machine.CPUs))
		default:
			cs = append(cs, c.label()+" (each bound to a core)")
		}
	}
	return fmt.Sprintf("%s; every benchmark at %d PEs, %s at the others", strings.Join(cs, ", "), r.NP, strings.Join(scaleSpecs, ", "))
}

// writeLimitCheck writes whether any goshmem figure beat its limit.
func writeLimitCheck(b *bufio.Writer, r *report) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## Limit check\n\n")
	switch {
	case len(r.LimitFails) > 0:
		p("**FAIL**: %d of %d goshmem figures with a machine limit beat it (a latency below, a bandwidth above). A limit that goshmem beats is a broken measurement: fix the limit (bench/limits) or the benchmark.\n\n", len(r.LimitFails), r.LimitChecked)
		for _, f := range r.LimitFails {
			p("- FAIL %s\n", mdCell(f.String()))
		}
		p("\n")
	case r.LimitChecked == 0:
		p("No goshmem figure of this run has a machine limit (run put_pingpong, atomics, broadcast, put_bw or get_bw with their limits).\n\n")
	default:
		p("PASS: none of the %d goshmem figures with a machine limit beats it (each one's best round against the limit: no latency below, no bandwidth above).\n\n", r.LimitChecked)
	}
}

// writeStates writes the machine's state per round.
func writeStates(b *bufio.Writer, r *report) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if len(r.States) == 0 {
		return
	}
	p("## Machine state per round\n\n")
	p("A round is flagged when its hand-off limit or a %d-PE barrier lies more than %.1fx from that figure's median over the rounds: the machine changed state (e.g. where the vCPUs landed), and that round's pairs compare another machine. Ratios stay pairwise, so a flagged round moves both sides of its pairs.\n\n", r.NP, stateFactor)
	p("| round | hand-off limit (us) | goshmem barrier (us) | peer barrier (us) | state |\n|---|---|---|---|---|\n")
	flagged := 0
	for _, st := range r.States {
		state := "ok"
		if len(st.Flags) > 0 {
			flagged++
			state = "**changed**: " + mdCell(strings.Join(st.Flags, "; "))
		}
		p("| %d | %s | %s | %s | %s |\n", st.Round, fmtNum(st.Handoff), fmtNum(st.Barrier), fmtNum(st.PeerBar), state)
	}
	p("\n")
	if flagged > 0 {
		p("%d of %d rounds flagged: treat ratios whose spread crosses their threshold with care.\n\n", flagged, len(r.States))
	}
}

func kindName(m metric) string {
	switch m {
	case bandwidth:
		return "bandwidth"
	case rate:
		return "message rate"
	case nanos:
		return "time per store"
	}
	return "latency"
}

// mdCell makes text safe for a markdown table cell or list item.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.Join(strings.Fields(s), " ")
}

// isCollective reports whether a benchmark is one of the team
// collectives.
func isCollective(name string) bool {
	switch name {
	case "broadcast", "reduce", "collect", "fcollect", "alltoall":
		return true
	}
	return false
}
