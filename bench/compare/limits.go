package main

import (
	"bufio"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// limitsTitle starts each table of bench/limits.
const limitsTitle = "# goshmem machine limits: "

var limitsColSep = regexp.MustCompile(`\s{2,}`)

// parseLimits reads the output of bench/limits: one or more tables, each
// "# goshmem machine limits: <test>", then "# warning: ..." lines and
// other comment lines, the last of which (before the rows) is the column
// line, then rows "<label>  <value>". Tables may be separated by blank
// lines.
func parseLimits(out string) ([]*limitTable, error) {
	var tables []*limitTable
	var cur *limitTable
	var comments []string // comment lines of cur before its first row
	flush := func() error {
		if cur == nil {
			return nil
		}
		if len(cur.Rows) == 0 {
			return fmt.Errorf("limits %s: no rows", cur.Test)
		}
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		line := sc.Text()
		n++
		switch {
		case strings.HasPrefix(line, limitsTitle):
			if err := flush(); err != nil {
				return nil, err
			}
			cur = &limitTable{Test: strings.TrimSpace(strings.TrimPrefix(line, limitsTitle))}
			tables = append(tables, cur)
			comments = nil
		case strings.TrimSpace(line) == "":
		case cur == nil:
			return nil, fmt.Errorf("line %d %q: want %q first", n, line, limitsTitle+"<test>")
		case strings.HasPrefix(line, "#"):
			text := strings.TrimSpace(strings.TrimPrefix(line, "#"))
			if len(cur.Rows) > 0 {
				cur.Notes = append(cur.Notes, text)
				continue
			}
			comments = append(comments, text)
		default:
			if len(cur.Rows) == 0 {
				// The last comment line before the first row is the column line.
				if len(comments) == 0 {
					return nil, fmt.Errorf("line %d %q: a row before the column line", n, line)
				}
				cur.Columns = limitsColSep.Split(comments[len(comments)-1], -1)
				for _, c := range comments[:len(comments)-1] {
					if w, ok := strings.CutPrefix(c, "warning:"); ok {
						cur.Warnings = append(cur.Warnings, strings.TrimSpace(w))
					} else {
						cur.Notes = append(cur.Notes, c)
					}
				}
			}
			// Columns are separated by two spaces or more, as in the
			// column line: a label may have words ("8 latency" of
			// limits tcp).
			f := limitsColSep.Split(strings.TrimSpace(line), -1)
			if len(f) != 2 {
				return nil, fmt.Errorf("line %d %q: want a label and a value", n, line)
			}
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("line %d %q: %q is not a finite number", n, line, f[1])
			}
			cur.Rows = append(cur.Rows, point{f[0], v})
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("no %q line in the output", limitsTitle+"<test>")
	}
	return tables, nil
}

// limitArgs returns the arguments of a limits test. maxSize is the
// largest bandwidth size the benchmarks use (memcpy's -max).
func limitArgs(test string, quick bool, maxSize int) []string {
	switch test {
	case limMemcpy:
		// A limit: the best block (the highest bandwidth), not the
		// median, which under load reads below what goshmem's copies
		// reach (broadcasts of 64-512 KiB beat a median memcpy once).
		a := []string{limMemcpy, "-best", "-max", strconv.Itoa(maxSize)}
		if quick {
			a = append(a, "-t", "5ms", "-r", "3")
		} else {
			a = append(a, "-r", "7")
		}
		return a
	case limSplit:
		// The bulk sizes, in every round as memcpy: the best of 3
		// blocks.
		a := []string{test, "-best", "-min", strconv.Itoa(bulkLo), "-max", strconv.Itoa(maxSize)}
		if quick {
			return append(a, "-t", "5ms", "-r", "2")
		}
		return append(a, "-r", "3")
	case limHandoff:
		// A lower bound: the best of many short blocks per variant
		// (-best; 10-20 ms each, so that a quiet moment of a loaded
		// machine shows), measured in every round.
		if quick {
			return []string{test, "-best", "-i", "20000", "-t", "100ms", "-r", "10", "-w", "1000"}
		}
		return []string{test, "-best", "-i", "100000", "-t", "400ms", "-r", "20"}
	case limPingpong:
		// The bulk sizes of the ping-pong targets, in every round:
		// the best of 3 runs per copy method and way of waiting.
		a := []string{test, "-best", "-min", strconv.Itoa(bulkLo), "-max", strconv.Itoa(maxSize)}
		if quick {
			return append(a, "-t", "5ms", "-r", "2")
		}
		return append(a, "-r", "3")
	case limPair:
		// The broadcast's target size only: the 2-PE broadcast's
		// two concurrent copies.
		big := strconv.Itoa(collTargetSize)
		if quick {
			return []string{test, "-best", "-min", big, "-max", big, "-t", "5ms", "-r", "3"}
		}
		return []string{test, "-best", "-min", big, "-max", big, "-r", "7"}
	case limLines:
		// Up to 8 lines: the exchange's parts are at most 5 lines at
		// the small sizes (256 B), and the slope changes past 8.
		if quick {
			return []string{test, "-best", "-k", "0,1,2,4,8", "-i", "20000", "-t", "50ms", "-r", "3", "-w", "1000"}
		}
		return []string{test, "-best", "-k", "0,1,2,4,8", "-t", "200ms", "-r", "7"}
	case limExchange:
		// The line counts of the small sizes' parts: 8-32 B fill one
		// line, 64 B two, 128 B three, 256 B five.
		if quick {
			return []string{test, "-best", "-k", "1,2,3,5", "-i", "20000", "-t", "50ms", "-r", "3", "-w", "1000"}
		}
		return []string{test, "-best", "-k", "1,2,3,5", "-t", "200ms", "-r", "7"}
	case limAtomic:
		if quick {
			return []string{test, "-i", "100000", "-t", "100ms", "-r", "3", "-w", "1000"}
		}
		return []string{test}
	}
	return []string{test}
}

// neededLimits returns the limits tests that the selected benchmarks
// are judged against.
func neededLimits(sel []*spec) []string {
	need := map[string]bool{}
	for _, s := range sel {
		switch s.Name {
		case "put_bw", "get_bw", "broadcast":
			need[limMemcpy] = true
			if s.Name != "broadcast" {
				need[limSplit] = true // shared copies (SHMEM_COPY_SHARE)
			}
			if s.Name == "broadcast" {
				need[limPair] = true
			}
		case "put_pingpong", "barrier":
			need[limHandoff] = true
			if s.Name == "put_pingpong" {
				// Its bulk sizes: against the best copy and its own
				// reference.
				need[limMemcpy], need[limPingpong], need[limSplit] = true, true, true
			}
		case "atomics":
			need[limAtomic] = true
		}
		switch s.Name {
		case "reduce", "collect", "fcollect", "alltoall":
			need[limLines], need[limExchange] = true, true // the small collectives' cost model
		}
	}
	var out []string
	for _, t := range []string{limMemcpy, limSplit, limPair, limHandoff, limPingpong, limAtomic, limLines, limExchange} {
		if need[t] {
			out = append(out, t)
		}
	}
	return out
}
