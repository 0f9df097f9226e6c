package env

import (
	"math/big"
	"strconv"
	"strings"
)

// maxSizeLen bounds the length of a size string, so that a hostile
// value cannot make ParseSize do big-number work.
const maxSizeLen = 128

const sizeAccept = "use a number of bytes with an optional suffix k, m, g or t " +
	"(powers of 1024), e.g. 4096, 64k, 512M or 1.5g"

// ParseSize parses a size as the OpenSHMEM specification defines it for
// SHMEM_SYMMETRIC_SIZE: a non-negative decimal number of bytes,
// optionally with a fraction, and optionally followed by one of the
// suffixes k/K, m/M, g/G, t/T that multiply it by 2^10, 2^20, 2^30 or
// 2^40. A fractional result is rounded up to a whole byte, as the
// specification's "integer ceiling" asks: "1.5k" is 1536, "3.1M"
// 3250586 and "0.3" 1. Only one multiplier is recognized and what
// follows it is ignored, as the specification says: "20kk" is 20k, and
// "1KiB" and "1kb" are 1k. Surrounding blanks are ignored.
//
// Signs, exponents, hexadecimal, and a suffix that does not start with
// a multiplier ("b", "x") are rejected, as are empty strings and sizes
// above math.MaxInt64. Errors are *Error values.
func ParseSize(s string) (int64, error) {
	v := strings.TrimSpace(s)
	bad := func(problem, accept string) (int64, error) {
		return 0, &Error{Value: s, Problem: problem, Accept: accept}
	}
	if v == "" {
		return bad("empty size", sizeAccept)
	}
	if len(v) > maxSizeLen {
		return bad("size too long", sizeAccept)
	}
	// Split into the number and the suffix.
	end := 0
	for end < len(v) && (v[end] >= '0' && v[end] <= '9' || v[end] == '.') {
		end++
	}
	num, suffix := v[:end], v[end:]
	if num == "" {
		if v[0] == '-' {
			return bad("negative size", sizeAccept)
		}
		return bad("not a number", sizeAccept)
	}
	var shift uint
	if suffix != "" {
		switch suffix[0] {
		case 'k', 'K':
			shift = 10
		case 'm', 'M':
			shift = 20
		case 'g', 'G':
			shift = 30
		case 't', 'T':
			shift = 40
		default:
			return bad("unknown suffix "+quoteSuffix(suffix), "use k, m, g or t (powers of 1024), e.g. 512M or 1.5g")
		}
	}
	intPart, frac, _ := strings.Cut(num, ".")
	if strings.Contains(frac, ".") {
		return bad("more than one decimal point", sizeAccept)
	}
	if intPart == "" && frac == "" {
		return bad("not a number", sizeAccept)
	}
	// bytes = ceil((intPart.frac) * 2^shift), computed exactly:
	// digits(intPart frac) * 2^shift / 10^len(frac), rounded up.
	n, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return bad("not a number", sizeAccept)
	}
	n.Lsh(n, shift)
	if len(frac) > 0 {
		d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
		n.Add(n, d).Sub(n, big.NewInt(1)).Quo(n, d)
	}
	if !n.IsInt64() {
		return bad(problemTooLarge, "use at most 8388607t (2^63-1 bytes)")
	}
	return n.Int64(), nil
}

// problemTooLarge is the Problem of a size above what it may be: the
// parser's limit or a knob's.
const problemTooLarge = "size too large"

// quoteSuffix quotes a suffix for an error message, shortened when long.
func quoteSuffix(s string) string {
	const max = 16
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}

// ParseBool parses a boolean: 1/0, y/n, yes/no, true/false or on/off,
// in any case, with surrounding blanks ignored. The empty string is
// false, the default of every boolean knob (Load treats an empty
// variable as unset). Errors are *Error values.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "0", "n", "no", "false", "off":
		return false, nil
	case "1", "y", "yes", "true", "on":
		return true, nil
	}
	return false, &Error{Value: s, Problem: "not a boolean", Accept: "use 1/0, y/n, yes/no, true/false or on/off"}
}

// FormatSize writes n bytes for a message: the number of bytes, with
// the size in the largest binary unit that it reaches in parentheses
// ("536870912 bytes (512 MiB)", "1610612736 bytes (1.5 GiB)"); below
// 1 KiB only the bytes.
func FormatSize(n uint64) string {
	b := strconv.FormatUint(n, 10) + " bytes"
	if n < 1024 {
		return b
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i, v := 0, float64(n)/1024
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	s := strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
	return b + " (" + s + " " + units[i] + ")"
}
