package env

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// helpWidth is the column at which Print wraps help text.
const helpWidth = 76

// Print writes every knob to w: its name, its value in getenv (or
// "(default)" when unset or blank), its type and default, whether the
// value is invalid and why, and its help text, indented and wrapped.
// cmd/oshinfo prints this, and so does start-up when SHMEM_INFO is set.
// Write errors are ignored.
func Print(w io.Writer, getenv func(string) string) {
	ds := defs()
	width := 0
	for _, d := range ds {
		width = max(width, len(d.Name))
	}
	var b strings.Builder
	for _, d := range ds {
		from, raw := d.lookup(getenv)
		shown := "(default)"
		if strings.TrimSpace(raw) != "" {
			shown = raw
			if from != d.Name {
				shown += " (from " + from + ")"
			}
		}
		typ := d.Type
		if len(d.Values) > 0 {
			typ += " " + strings.Join(d.Values, "|")
		}
		fmt.Fprintf(&b, "%-*s = %s  [%s, default %s]\n", width, d.Name, shown, typ, d.Default)
		if shown != "(default)" {
			var c Config
			if err := d.set(&c, strings.TrimSpace(raw)); err != nil {
				var e *Error
				msg := err.Error()
				if errors.As(err, &e) {
					msg = e.Problem + "; " + e.Accept
				}
				wrap(&b, "INVALID (start-up fails until it is fixed or unset): "+msg)
			}
		}
		wrap(&b, d.Help)
		if d.Deprecated != "" {
			wrap(&b, "Also read from "+d.Deprecated+", the name the specification deprecates, when this one is unset.")
		}
	}
	io.WriteString(w, b.String())
}

// wrap writes text to b as lines of at most helpWidth columns (longer
// words stand alone), each indented by four spaces.
func wrap(b *strings.Builder, text string) {
	const indent = "    "
	col := 0
	for _, word := range strings.Fields(text) {
		switch {
		case col == 0:
			b.WriteString(indent)
			col = len(indent)
		case col+1+len(word) > helpWidth:
			b.WriteString("\n" + indent)
			col = len(indent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
	}
	if col > 0 {
		b.WriteByte('\n')
	}
}
