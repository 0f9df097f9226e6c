package xpmem

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Permit says which processes may Get an exported segment; it plays the
// part of XPMEM's permit_type/permit_value pair.
type Permit int

const (
	// PermitOwner lets only processes whose real uid equals the owner's
	// real and effective uid Get the segment. The check is made even when
	// the caller is root (it is a permission model, not a capability
	// check), and fails with ErrForeign. It is the zero value.
	PermitOwner Permit = iota
	// PermitAny lets any process Get the segment that the kernel lets
	// duplicate the owner's descriptor (see Get).
	PermitAny
)

// String returns "owner" or "any", the words Segid's text form uses.
func (p Permit) String() string {
	switch p {
	case PermitOwner:
		return "owner"
	case PermitAny:
		return "any"
	}
	return "permit(" + strconv.Itoa(int(p)) + ")"
}

func (p Permit) valid() bool { return p == PermitOwner || p == PermitAny }

// Segid names an exported segment, like XPMEM's xpmem_segid_t: the
// exporting process, the number of the descriptor it exported, and the
// device and inode of the file behind it, so that a descriptor number
// that has been closed and reused for another file is not mistaken for
// the segment. Permit is the permission the owner declared.
//
// A Segid is a plain value: it is meant to be sent to other processes
// in its text form (String, ParseSegid), for example over a pipe or in
// an environment variable.
type Segid struct {
	Pid      int32
	Fd       int32
	Dev, Ino uint64
	Permit   Permit
}

const segidPrefix = "xpmem"

// String returns the text form of id,
//
//	xpmem:PID:FD:DEV:INO:PERMIT
//
// with the numbers in canonical decimal and PERMIT "owner" or "any",
// for example "xpmem:4242:7:1:30817:owner". For every valid id,
// ParseSegid(id.String()) returns id.
func (id Segid) String() string {
	var b strings.Builder
	b.Grow(64)
	b.WriteString(segidPrefix)
	b.WriteByte(':')
	b.WriteString(strconv.FormatInt(int64(id.Pid), 10))
	b.WriteByte(':')
	b.WriteString(strconv.FormatInt(int64(id.Fd), 10))
	b.WriteByte(':')
	b.WriteString(strconv.FormatUint(id.Dev, 10))
	b.WriteByte(':')
	b.WriteString(strconv.FormatUint(id.Ino, 10))
	b.WriteByte(':')
	b.WriteString(id.Permit.String())
	return b.String()
}

// validate reports why id cannot name an exported segment, or nil.
func (id Segid) validate() error {
	switch {
	case id.Pid <= 0:
		return fmt.Errorf("pid %d is not positive", id.Pid)
	case id.Fd < 0:
		return fmt.Errorf("descriptor %d is negative", id.Fd)
	case !id.Permit.valid():
		return fmt.Errorf("unknown permit %s", id.Permit)
	}
	return nil
}

// ParseSegid parses the text form String produces. It accepts only
// that canonical form (no signs, no leading zeros, no spaces), so that
// ParseSegid(s) succeeds exactly when s is the String of a valid Segid.
// Errors wrap ErrBadSegid.
func ParseSegid(s string) (Segid, error) {
	fail := func(why string) (Segid, error) {
		return Segid{}, fmt.Errorf("xpmem: parsing segid %q: %s: %w", s, why, ErrBadSegid)
	}
	f := strings.Split(s, ":")
	if len(f) != 6 || f[0] != segidPrefix {
		return fail("want " + segidPrefix + ":PID:FD:DEV:INO:PERMIT")
	}
	pid, ok := parseCanonical(f[1], math.MaxInt32)
	if !ok || pid == 0 {
		return fail("bad pid " + strconv.Quote(f[1]))
	}
	fd, ok := parseCanonical(f[2], math.MaxInt32)
	if !ok {
		return fail("bad descriptor " + strconv.Quote(f[2]))
	}
	dev, ok := parseCanonical(f[3], math.MaxUint64)
	if !ok {
		return fail("bad device " + strconv.Quote(f[3]))
	}
	ino, ok := parseCanonical(f[4], math.MaxUint64)
	if !ok {
		return fail("bad inode " + strconv.Quote(f[4]))
	}
	var p Permit
	switch f[5] {
	case "owner":
		p = PermitOwner
	case "any":
		p = PermitAny
	default:
		return fail("bad permit " + strconv.Quote(f[5]) + " (want owner or any)")
	}
	return Segid{Pid: int32(pid), Fd: int32(fd), Dev: dev, Ino: ino, Permit: p}, nil
}

// parseCanonical parses a canonical decimal number (digits only, no
// leading zero unless the number is 0) no larger than max.
func parseCanonical(s string, max uint64) (uint64, bool) {
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > max {
		return 0, false
	}
	return v, true
}
