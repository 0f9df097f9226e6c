package osu

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Way is one kind of block of an interleaved measurement: a name and a
// function that runs one block.
type Way struct {
	Name string
	Run  func()
}

// Interleaved times rounds rounds of one block of each way, round i
// starting with way i mod len(ways) (so no way always follows the
// same one), and returns the block times in us divided by per:
// times[j][i] is way j's block of round i. Every PE taking part must
// call it with the same ways in the same order; PE 0's times are the
// ones to print. The machine changes state on the scale of seconds
// (the same cache-line hand-off takes 0.03 us in one second and 0.25 us
// in the next): blocks taken milliseconds apart compare one state,
// figures of two programs run at different moments do not.
func Interleaved(rounds int, per float64, ways []Way) [][]float64 {
	times := make([][]float64, len(ways))
	for i := range rounds {
		for o := range ways {
			j := (i + o) % len(ways)
			t0 := Now()
			ways[j].Run()
			times[j] = append(times[j], Micros(t0, Now())/per)
		}
	}
	return times
}

// VsFastest is an Interleaved measurement whose way 0 is the program's
// loop and the others bare ways of doing the same work: the fastest
// bare way is the one with the least median over the rounds; Loop and
// Bare are the medians of the loop and of that way, Ratios the loop's
// time over that way's, round by round.
//
// One way for all rounds, not each round's fastest block: the least of
// several noisy blocks of one speed lies below that speed (the winner's
// curse), so a bound made of per-round minima is one the loop can never
// reach even when it costs what the bare way costs (copyref.Result has
// the figures for the copies).
//
// RoundBest is the loop over each round's fastest bare block: not the
// target's reference, for the reason above, but the one a bound needs
// (a loop that beats every bare way in every round beats them all).
type VsFastest struct {
	Loop, Bare float64
	Ratios     []float64
	RoundBest  []float64
	Best       string   // the fastest bare way's name
	Each       []string // "name median" of each bare way
}

// Fastest summarizes times from Interleaved (way 0 the loop, ways 1...
// bare).
func Fastest(ways []Way, times [][]float64) VsFastest {
	var v VsFastest
	best, bm := 1, math.Inf(1)
	for j := 1; j < len(times); j++ {
		if m := Median(times[j]); m < bm {
			best, bm = j, m
		}
	}
	for i := range times[0] {
		v.Ratios = append(v.Ratios, times[0][i]/times[best][i])
		least := math.Inf(1)
		for j := 1; j < len(times); j++ {
			least = min(least, times[j][i])
		}
		v.RoundBest = append(v.RoundBest, times[0][i]/least)
	}
	v.Loop, v.Bare, v.Best = Median(times[0]), bm, ways[best].Name
	for j := 1; j < len(ways); j++ {
		v.Each = append(v.Each, fmt.Sprintf("%s %.4f", ways[j].Name, Median(times[j])))
	}
	return v
}

// Ratio formats the median of the ratios with their range and count:
// "ratio 1.01 [0.96-1.09] over 20 rounds". Each figure keeps at least
// two significant digits (0.0042, not 0.00): with more PEs than cores a
// round whose bare way was descheduled gives a tiny ratio.
func (v VsFastest) Ratio() string {
	return fmt.Sprintf("ratio %s [%s-%s] over %d rounds", fmtRatio(Median(v.Ratios)), fmtRatio(slices.Min(v.Ratios)), fmtRatio(slices.Max(v.Ratios)), len(v.Ratios))
}

// RoundRatio formats the median of RoundBest with its range, as Ratio:
// "each round's fastest way: ratio 1.05 [0.99-1.12]".
func (v VsFastest) RoundRatio() string {
	if len(v.RoundBest) == 0 {
		return "each round's fastest way: none"
	}
	return fmt.Sprintf("each round's fastest way: ratio %s [%s-%s]", fmtRatio(Median(v.RoundBest)), fmtRatio(slices.Min(v.RoundBest)), fmtRatio(slices.Max(v.RoundBest)))
}

// fmtRatio formats x in fixed point with two decimals, or with more
// below 0.1 so that two significant digits remain (up to 12 decimals).
func fmtRatio(x float64) string {
	prec := 2
	for y := x; y > 0 && y < 0.1 && prec < 12; y *= 10 {
		prec++
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// EachWay formats the bare ways' medians: "  store+pause 0.0625  xchg+pause 0.0614".
func (v VsFastest) EachWay() string {
	var s strings.Builder
	for _, e := range v.Each {
		s.WriteString("  " + e)
	}
	return s.String()
}
