package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// peCfg is one PE configuration of a comparison.
type peCfg struct {
	NP      int // PEs
	PerProc int // PEs per process: 1 (processes), or NP (goroutine PEs in one process)
}

// goroutines reports whether the PEs are goroutines of one process.
func (c peCfg) goroutines() bool { return c.PerProc > 1 }

// String is the configuration as -pes spells it: "4", or "8g" for
// goroutine PEs.
func (c peCfg) String() string {
	if c.goroutines() {
		return strconv.Itoa(c.NP) + "g"
	}
	return strconv.Itoa(c.NP)
}

// label names the configuration in the report.
func (c peCfg) label() string {
	if c.goroutines() {
		return fmt.Sprintf("%d goroutine PEs in one process", c.NP)
	}
	return fmt.Sprintf("%d PEs", c.NP)
}

// defaultPEs is -pes's default: the PE counts.
const defaultPEs = "2,4,8,8g"

// parsePEs reads -pes: comma-separated PE counts, "N" for N processes
// (one PE each) and "Ng" for N goroutine PEs in one process
// (oshrun --pes-per-proc N). The first process count is the base: every
// selected benchmark runs there; the others run the scaling benchmarks
// (scaleSpecs) only.
func parsePEs(s string) ([]peCfg, error) {
	var out []peCfg
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		num, g := strings.CutSuffix(f, "g")
		n, err := strconv.Atoi(num)
		if err != nil || n < 2 {
			return nil, fmt.Errorf("-pes %q: %q is not a PE count of at least 2 (N processes, or Ng for N goroutine PEs in one process)", s, f)
		}
		c := peCfg{NP: n, PerProc: 1}
		if g {
			c.PerProc = n
		}
		if slices.Contains(out, c) {
			return nil, fmt.Errorf("-pes %q: %s twice", s, f)
		}
		out = append(out, c)
	}
	if !slices.ContainsFunc(out, func(c peCfg) bool { return !c.goroutines() }) {
		return nil, fmt.Errorf("-pes %q: name at least one process count (the base, where every benchmark runs)", s)
	}
	return out, nil
}

// baseCfg returns the first process configuration of cfgs.
func baseCfg(cfgs []peCfg) peCfg {
	for _, c := range cfgs {
		if !c.goroutines() {
			return c
		}
	}
	return peCfg{NP: 2, PerProc: 1}
}

// resKey is the key of a benchmark's result in configuration c: its
// name at the base, name@c elsewhere.
func resKey(name string, c, base peCfg) string {
	if c == base {
		return name
	}
	return name + "@" + c.String()
}

// scaleSpecs are the benchmarks that run at every PE count: the
// barrier, and the 8-256 B reduce and broadcast (the targets' rows).
var scaleSpecs = []string{"barrier", "reduce", "broadcast"}

// scaleArgs returns the arguments of a scaling benchmark at a PE count
// other than the base: small sizes only, and fewer iterations (with
// more PEs than cores every call costs tens of microseconds).
func scaleArgs(s *spec, quick bool) []string {
	if s.Name == "barrier" {
		if quick {
			return []string{"-i", "500", "-w", "50"}
		}
		// A long warm-up: the first ~40 ms of an oversubscribed goshmem
		// job run its barriers about 2x slower (4 bound PEs on 2 CPUs:
		// 4.2-4.5 us per barrier over the first 10000, 2.1-2.2 us after
		// a warm-up of 10000; GOGC=off does not change it), a start-up
		// transient that docs/performance.md describes; the timed
		// iterations measure the steady state.
		return []string{"-i", "20000", "-w", "10000"}
	}
	sizes := fmt.Sprintf("%d:%d", smallLo, smallHi)
	if quick {
		return []string{"-m", sizes, "-i", "200", "-w", "20"}
	}
	if s.Name == "broadcast" {
		// The barrier's start-up transient again: a broadcast takes
		// 0.2-1 us here, so 5000 warm-ups of the first size (8 B) ended
		// inside it (8 bound PEs on 2 CPUs: 0.38-0.44 us per 8 B
		// broadcast after 5000, 0.18-0.21 after 50000, 3 alternated
		// runs; 16 B, the second size, 0.42-0.47 either way).
		return []string{"-m", sizes, "-i", "5000", "-w", "50000"}
	}
	// 5000 calls of 2-20 us: 10-100 ms per size, long enough that a
	// hiccup of a few milliseconds does not decide the figure.
	return []string{"-m", sizes, "-i", "5000", "-w", "5000"}
}

// job is one benchmark in one PE configuration.
type job struct {
	Spec *spec
	Cfg  peCfg
	Key  string   // resKey
	Args []string // both sides'
	Peer bool     // the peer runs it too (not for goroutine PEs)
}

// jobs returns what a round runs, in order: every selected benchmark at
// the base, then the scaling benchmarks at each further configuration.
func jobs(sel []*spec, cfgs []peCfg, quick bool) []job {
	base := baseCfg(cfgs)
	var out []job
	for _, s := range sel {
		out = append(out, job{Spec: s, Cfg: base, Key: s.Name, Args: s.args(quick), Peer: true})
	}
	for _, c := range cfgs {
		if c == base {
			continue
		}
		for _, s := range sel {
			if !slices.Contains(scaleSpecs, s.Name) {
				continue
			}
			out = append(out, job{Spec: s, Cfg: c, Key: resKey(s.Name, c, base), Args: scaleArgs(s, quick), Peer: !c.goroutines()})
		}
	}
	return out
}

// stateFactor is how far (as a factor either way) a round's hand-off
// limit or 2-PE barrier may stray from the median over the rounds
// before the round is flagged as taken in another machine state.
const stateFactor = 1.5

// roundState is what the report shows about the machine in one round.
type roundState struct {
	Round            int
	Handoff          float64 // the hand-off limit (min row), us; NaN if not measured
	Barrier, PeerBar float64 // the base barrier, goshmem and peer, us; NaN if not run
	Flags            []string
}

// machineStates returns one roundState per round and flags the rounds
// whose hand-off limit, or goshmem's or the peer's base barrier, lies
// more than stateFactor from that figure's median over the rounds:
// the machine changed state (on the development VM the 2-PE barrier
// moves between about 0.08 and 0.32 us from run to run), and that
// round's pairs compare another machine than the rest.
func machineStates(rounds int, handoff agg, bar *result, barKey string) []roundState {
	var gb, pb agg
	if bar != nil {
		gb, pb = bar.fig(gosh, barKey), bar.fig(peer, barKey)
	}
	st := make([]roundState, rounds)
	for i := range st {
		r := i + 1
		st[i] = roundState{Round: r, Handoff: math.NaN(), Barrier: math.NaN(), PeerBar: math.NaN()}
		for _, f := range []struct {
			a    agg
			v    *float64
			name string
		}{{handoff, &st[i].Handoff, "hand-off limit"}, {gb, &st[i].Barrier, "goshmem's barrier"}, {pb, &st[i].PeerBar, "the peer's barrier"}} {
			v, ok := f.a.at(r)
			if !ok {
				continue
			}
			*f.v = v
			if m := f.a.median(); len(f.a.Values) > 1 && m > 0 && (v > m*stateFactor || v < m/stateFactor) {
				st[i].Flags = append(st[i].Flags, fmt.Sprintf("%s %s us is %.1fx its median %s us", f.name, fmtNum(v), v/m, fmtNum(m)))
			}
		}
	}
	return st
}
