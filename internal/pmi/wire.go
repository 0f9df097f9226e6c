package pmi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxLine is the longest PMI-1 line the servers read (MPICH's and
// hydra's PMIU_MAXLINE, Slurm's buffer), newline included.
const maxLine = 1024

// maxCmd is the longest PMI-2 command accepted from a server (the
// six-digit length field allows 999999 bytes).
const maxCmd = 999999

// Cmd is one parsed command or response: its name (the value of "cmd")
// and its other key=value pairs in order. A key may repeat; Get returns
// the first.
type Cmd struct {
	Name string
	Keys []string
	Vals []string
}

// Get returns the value of key and whether it is present.
func (c *Cmd) Get(key string) (string, bool) {
	for i, k := range c.Keys {
		if k == key {
			return c.Vals[i], true
		}
	}
	return "", false
}

// errWire is the error of a malformed message from a server.
var errWire = errors.New("pmi: malformed message")

// ParseV1 parses a PMI-1 line (without its newline): space-separated
// key=value tokens, the first of them "cmd=name". A value runs to the
// next space and may itself contain '='.
func ParseV1(line string) (Cmd, error) {
	var c Cmd
	for tok := range strings.FieldsSeq(line) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" {
			return Cmd{}, fmt.Errorf("%w: PMI-1 token %q is not key=value", errWire, tok)
		}
		if c.Name == "" && len(c.Keys) == 0 && k == "cmd" {
			c.Name = v
			continue
		}
		c.Keys = append(c.Keys, k)
		c.Vals = append(c.Vals, v)
	}
	if c.Name == "" {
		return Cmd{}, fmt.Errorf("%w: PMI-1 line %q does not start with cmd=", errWire, line)
	}
	return c, nil
}

// FormatV1 formats a PMI-1 request line, newline included. Keys and
// values must not contain spaces or newlines (the caller's values are
// base64url; the fixed ones are names and numbers).
func FormatV1(name string, kv ...string) []byte {
	b := append([]byte("cmd="), name...)
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, ' ')
		b = append(b, kv[i]...)
		b = append(b, '=')
		b = append(b, kv[i+1]...)
	}
	return append(b, '\n')
}

// ParseV2 parses a PMI-2 command body (without its length field):
// "cmd=name;key=value;...;" where ';' terminates each pair and ";;"
// stands for a ';' inside a key or value.
func ParseV2(body string) (Cmd, error) {
	var c Cmd
	var cur strings.Builder
	var pairs []string
	for i := 0; i < len(body); i++ {
		ch := body[i]
		if ch != ';' {
			cur.WriteByte(ch)
			continue
		}
		if i+1 < len(body) && body[i+1] == ';' {
			cur.WriteByte(';')
			i++
			continue
		}
		pairs = append(pairs, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		return Cmd{}, fmt.Errorf("%w: PMI-2 command %.64q does not end with ';'", errWire, body)
	}
	for i, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return Cmd{}, fmt.Errorf("%w: PMI-2 pair %.64q is not key=value", errWire, p)
		}
		if i == 0 {
			if k != "cmd" {
				return Cmd{}, fmt.Errorf("%w: PMI-2 command %.64q does not start with cmd=", errWire, body)
			}
			c.Name = v
			continue
		}
		c.Keys = append(c.Keys, k)
		c.Vals = append(c.Vals, v)
	}
	if c.Name == "" {
		return Cmd{}, fmt.Errorf("%w: empty PMI-2 command", errWire)
	}
	return c, nil
}

// FormatV2 formats a PMI-2 command, length field included, doubling
// every ';' in keys and values.
func FormatV2(name string, kv ...string) []byte {
	var body strings.Builder
	body.WriteString("cmd=")
	body.WriteString(escapeV2(name))
	body.WriteByte(';')
	for i := 0; i+1 < len(kv); i += 2 {
		body.WriteString(escapeV2(kv[i]))
		body.WriteByte('=')
		body.WriteString(escapeV2(kv[i+1]))
		body.WriteByte(';')
	}
	return fmt.Appendf(nil, "%6d%s", body.Len(), body.String())
}

func escapeV2(s string) string { return strings.ReplaceAll(s, ";", ";;") }

// readV1 reads one PMI-1 line from r and parses it.
func readV1(r *bufio.Reader) (Cmd, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return Cmd{}, fmt.Errorf("%w: a PMI-1 line longer than %d bytes", errWire, r.Size())
		}
		return Cmd{}, err
	}
	return ParseV1(strings.TrimRight(string(line), "\r\n"))
}

// readV2 reads one length-prefixed PMI-2 command from r and parses it.
func readV2(r io.Reader) (Cmd, error) {
	var hdr [6]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Cmd{}, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:]))) // hydra pads on the left, Slurm on the right
	if err != nil || n <= 0 || n > maxCmd {
		return Cmd{}, fmt.Errorf("%w: PMI-2 length field %q", errWire, hdr[:])
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return Cmd{}, err
	}
	return ParseV2(string(body))
}
