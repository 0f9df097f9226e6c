package env

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1", 1},
		{"4096", 4096},
		{"  4096\n", 4096},
		{"1k", 1 << 10},
		{"1K", 1 << 10},
		{"64k", 64 << 10},
		{"1m", 1 << 20},
		{"512M", 512 << 20},
		{"1g", 1 << 30},
		{"2G", 2 << 30},
		{"1t", 1 << 40},
		{"3T", 3 << 40},
		{"1.5k", 1536},
		{"3.1m", 3250586}, // 3.1 * 1048576 = 3250585.6, rounded up (the specification's example)
		{"0.5g", 512 << 20},
		{".5k", 512},
		{"5.", 5},
		{"5.k", 5 << 10},
		{"0.3", 1},
		{"1.9", 2},
		{"007", 7},
		{"0.0000000000009094947017729282379150390625t", 1}, // exactly 2^-40 t
		{"0.0000000000009094947017729282379150390624t", 1}, // a hair less, rounded up
		{"0.0000000000009094947017729282379150390626t", 2}, // a hair more
		{"9223372036854775807", math.MaxInt64},
		{"8388607.999999999999t", math.MaxInt64}, // 2^63 - 1.0995..., rounded up
		{"20kk", 20 << 10},                       // one multiplier; the rest is ignored
		{"1KiB", 1 << 10},
		{"1kb", 1 << 10},
		{"2mB", 2 << 20},
		{"8388607t", 8388607 << 40},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct {
		in      string
		problem string // substring of the error
	}{
		{"", "empty size"},
		{"   ", "empty size"},
		{"-1", "negative size"},
		{"-1k", "negative size"},
		{"+1", "not a number"},
		{"k", "not a number"},
		{".", "not a number"},
		{".k", "not a number"},
		{"1.2.3", "more than one decimal point"},
		{"12x", `unknown suffix "x"`},
		{"1b", `unknown suffix "b"`},
		{"1B", `unknown suffix "B"`},
		{"1 k", `unknown suffix " k"`},
		{"1e3", `unknown suffix "e3"`},
		{"0x10", `unknown suffix "x10"`},
		{"1_000", `unknown suffix "_000"`},
		{"NaN", "not a number"},
		{"Inf", "not a number"},
		{"+Inf", "not a number"},
		{"1p", `unknown suffix "p"`},
		{"9223372036854775808", "size too large"},
		{"8388608t", "size too large"},
		{"99999999999999999999999999g", "size too large"},
		{"1" + strings.Repeat("0", 200), "size too long"},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, nil; want error %q", tt.in, got, tt.problem)
			continue
		}
		if !strings.Contains(err.Error(), tt.problem) {
			t.Errorf("ParseSize(%q) error %q does not contain %q", tt.in, err, tt.problem)
		}
		var e *Error
		if !errors.As(err, &e) || e.Value != tt.in || e.Accept == "" {
			t.Errorf("ParseSize(%q) error %#v is not an *Error with the value and advice", tt.in, err)
		}
	}
}

func TestParseSizeSuffixAdvice(t *testing.T) {
	_, err := ParseSize("12x")
	want := `unknown suffix "x" in "12x"; use k, m, g or t (powers of 1024), e.g. 512M or 1.5g`
	if err == nil || err.Error() != want {
		t.Errorf("ParseSize(12x) error = %v; want %s", err, want)
	}
}

func TestParseBool(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"1", true}, {"0", false},
		{"y", true}, {"n", false}, {"Y", true}, {"N", false},
		{"yes", true}, {"no", false}, {"YES", true}, {"No", false},
		{"true", true}, {"false", false}, {"True", true}, {"FALSE", false},
		{"on", true}, {"off", false}, {"ON", true}, {"Off", false},
		{" on\n", true},
	}
	for _, tt := range tests {
		got, err := ParseBool(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseBool(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"2", "-1", "yess", "t", "f", "enable", "o", "01", "y es"} {
		if got, err := ParseBool(in); err == nil {
			t.Errorf("ParseBool(%q) = %v, nil; want an error", in, got)
		} else if !strings.Contains(err.Error(), "use 1/0, y/n, yes/no, true/false or on/off") {
			t.Errorf("ParseBool(%q) error %q does not say what is accepted", in, err)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "4096", "64k", "1.5g", "3.1m", "8388607t", "12x", "-1", "", ".5k", "1e3", "NaN", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Problem == "" {
				t.Fatalf("ParseSize(%q) error %v is not a complete *Error", s, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d < 0", s, n)
		}
		dec := strconv.FormatInt(n, 10)
		m, err := ParseSize(dec)
		if err != nil || m != n {
			t.Fatalf("ParseSize(%q) = %d, but ParseSize(%q) = %d, %v", s, n, dec, m, err)
		}
	})
}

func FuzzParseBool(f *testing.F) {
	for _, s := range []string{"", "1", "0", "yes", "No", "TRUE", "off", "maybe", " on "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBool(s)
		if err != nil {
			if b {
				t.Fatalf("ParseBool(%q) = true with error %v", s, err)
			}
			return
		}
		// Whatever parses parses the same in any case and with blanks.
		for _, v := range []string{strings.ToUpper(s), strings.ToLower(s), " " + s + "\t"} {
			if b2, err := ParseBool(v); err != nil || b2 != b {
				t.Fatalf("ParseBool(%q) = %v but ParseBool(%q) = %v, %v", s, b, v, b2, err)
			}
		}
	})
}
