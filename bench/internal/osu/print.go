package osu

import (
	"fmt"
	"io"
	"strings"
)

// Field is the width of every column but the last of a header.
const Field = 16

// Column names shared by the programs.
const (
	Size         = "Size"
	Operation    = "Operation"
	PEs          = "PEs"
	Teams        = "Teams"
	LatencyUs    = "Latency (us)"
	BandwidthMBs = "Bandwidth (MB/s)"
	MessagesPS   = "Messages/s"
	Iterations   = "Iterations"
)

// Title returns line 1 of a program's output.
func Title(name string) string { return "# OSU-style goshmem " + name + " Test" }

// Info returns line 2 of a program's output.
func Info(npes, iters, warmup int) string {
	return fmt.Sprintf("# PEs: %d  iterations: %d  warmup: %d", npes, iters, warmup)
}

// FormatHeader returns a table header: "# " and the key column name padded to
// 16 characters, then the other column names joined by two spaces.
func FormatHeader(key string, cols ...string) string {
	return fmt.Sprintf("%-*s", Field, "# "+key) + strings.Join(cols, "  ")
}

// FullColumns returns the columns of a metric: the metric alone, or with
// full output the metric, "Min <metric>", "Max <metric>" and
// "Iterations".
func FullColumns(metric string, full bool) []string {
	if !full {
		return []string{metric}
	}
	return []string{metric, "Min " + metric, "Max " + metric, Iterations}
}

// FormatRow returns a data row: the key left-aligned in 16 characters, each
// value right-aligned in 16 with three decimals.
func FormatRow(key string, vals ...float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s", Field, key)
	for _, v := range vals {
		fmt.Fprintf(&b, "%*.3f", Field, v)
	}
	return b.String()
}

// FormatRowIters is FormatRow followed by an iteration count right-aligned in 16.
func FormatRowIters(key string, iters int, vals ...float64) string {
	return FormatRow(key, vals...) + fmt.Sprintf("%*d", Field, iters)
}

// Printer writes a program's output. Only PE 0's printer is enabled;
// the others discard everything, so programs call it unconditionally.
type Printer struct {
	W    io.Writer
	On   bool
	Full bool
}

func (p *Printer) line(s string) {
	if p.On {
		fmt.Fprintln(p.W, s)
	}
}

// Start prints lines 1 and 2.
func (p *Printer) Start(name string, npes int, c Config) {
	p.line(Title(name))
	p.line(Info(npes, c.Iters, c.Warmup))
}

// Header prints a table header with the given columns as they are.
func (p *Printer) Header(key string, cols ...string) { p.line(FormatHeader(key, cols...)) }

// Columns prints the header of a one-metric table: the key, the metric,
// and with -f its min, max and the iterations.
func (p *Printer) Columns(key, metric string) { p.Header(key, FullColumns(metric, p.Full)...) }

// Result prints a row of a one-metric table: v, and with -f the min and
// max of st and iters.
func (p *Printer) Result(key string, v float64, st Stats, iters int) {
	if p.Full {
		p.line(FormatRowIters(key, iters, v, st.Min, st.Max))
	} else {
		p.line(FormatRow(key, v))
	}
}

// Row prints a data row with the given values as they are.
func (p *Printer) Row(key string, vals ...float64) { p.line(FormatRow(key, vals...)) }

// RowIters prints a data row followed by an iteration count.
func (p *Printer) RowIters(key string, iters int, vals ...float64) {
	p.line(FormatRowIters(key, iters, vals...))
}

// Comment prints "# " and the formatted text, which must contain a
// colon (what tells a comment from a header).
func (p *Printer) Comment(format string, args ...any) { p.line("# " + fmt.Sprintf(format, args...)) }
