package main

import (
	"fmt"
	"io"
	"strings"
)

// progress reports the steps of a run: on a terminal a single line that
// is rewritten ("[3/18] put round 2/3 (peer)"), otherwise one plain line
// per step. Messages (warnings, failures) always get lines of their own.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	n     int
	shown bool // a step line is on the terminal, without a newline
}

// step starts the next step.
func (p *progress) step(format string, args ...any) {
	p.n++
	line := fmt.Sprintf("[%d/%d] ", p.n, p.total) + fmt.Sprintf(format, args...)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// msg prints a message on a line of its own.
func (p *progress) msg(format string, args ...any) {
	s := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
	fmt.Fprintln(p.w, s)
}

// done clears the step line.
func (p *progress) done() {
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
