package osu

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Output is a program's output as ParseOutput reads it.
type Output struct {
	Name                string   // from line 1, e.g. "Put Ping-Pong"
	NPEs, Iters, Warmup int      // from line 2
	Tables              []Table  // in order
	Comments            []string // other "#" lines after line 2, without "# "
}

// Table is one header and the data rows after it.
type Table struct {
	Columns []string // the header's column names, the key column first
	Rows    []Row
}

// Row is one data line: its key (a size, an operation name, a number of
// PEs) and one value per column after the key.
type Row struct {
	Key    string
	Values []float64
}

// Column returns the index in Row.Values of the named column, or -1.
func (t Table) Column(name string) int {
	for i, c := range t.Columns[1:] {
		if c == name {
			return i
		}
	}
	return -1
}

var (
	titleRE = regexp.MustCompile(`^# OSU-style goshmem (.+) Test$`)
	infoRE  = regexp.MustCompile(`^# PEs: (\d+)  iterations: (\d+)  warmup: (\d+)$`)
	colSep  = regexp.MustCompile(`\s{2,}`)
)

// ParseOutput reads a program's output (the package documentation
// describes the format) and checks it: the title and info lines first,
// every data row after a header, with one number per column after the
// key. Values must be finite; whether they are positive is the caller's
// business.
func ParseOutput(r io.Reader) (*Output, error) {
	sc := bufio.NewScanner(r)
	var o Output
	n := 0
	for sc.Scan() {
		line := sc.Text()
		n++
		bad := func(format string, args ...any) (*Output, error) {
			return nil, fmt.Errorf("line %d %q: %s", n, line, fmt.Sprintf(format, args...))
		}
		switch {
		case n == 1:
			m := titleRE.FindStringSubmatch(line)
			if m == nil {
				return bad("want the title \"# OSU-style goshmem <Name> Test\"")
			}
			o.Name = m[1]
		case n == 2:
			m := infoRE.FindStringSubmatch(line)
			if m == nil {
				return bad("want \"# PEs: <n>  iterations: <i>  warmup: <w>\"")
			}
			o.NPEs, _ = strconv.Atoi(m[1])
			o.Iters, _ = strconv.Atoi(m[2])
			o.Warmup, _ = strconv.Atoi(m[3])
		case strings.HasPrefix(line, "#"):
			text := strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ")
			cols := colSep.Split(text, -1)
			if strings.Contains(text, ":") || len(cols) < 2 {
				o.Comments = append(o.Comments, text)
				continue
			}
			o.Tables = append(o.Tables, Table{Columns: cols})
		case strings.TrimSpace(line) == "":
			return bad("empty line")
		default:
			if len(o.Tables) == 0 {
				return bad("data before any header")
			}
			t := &o.Tables[len(o.Tables)-1]
			f := strings.Fields(line)
			if len(f) != len(t.Columns) {
				return bad("%d fields, the header has %d columns %q", len(f), len(t.Columns), t.Columns)
			}
			if line[0] == ' ' || len(f[0]) < Field && (len(line) < Field || strings.TrimSpace(line[len(f[0]):Field]) != "") {
				return bad("the key is not left-aligned in %d characters", Field)
			}
			row := Row{Key: f[0]}
			for _, s := range f[1:] {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
					return bad("%q is not a finite number", s)
				}
				row.Values = append(row.Values, v)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, fmt.Errorf("output has %d lines, want the title and info lines at least", n)
	}
	return &o, nil
}
