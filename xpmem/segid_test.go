package xpmem_test

import (
	"errors"
	"math"
	"testing"

	"github.com/goshmem/goshmem/xpmem"
)

func TestPermitString(t *testing.T) {
	for p, want := range map[xpmem.Permit]string{
		xpmem.PermitOwner: "owner",
		xpmem.PermitAny:   "any",
		7:                 "permit(7)",
	} {
		if got := p.String(); got != want {
			t.Errorf("Permit(%d).String() = %q, want %q", int(p), got, want)
		}
	}
}

func TestSegidString(t *testing.T) {
	id := xpmem.Segid{Pid: 4242, Fd: 7, Dev: 1, Ino: 30817, Permit: xpmem.PermitOwner}
	if got, want := id.String(), "xpmem:4242:7:1:30817:owner"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestParseSegid(t *testing.T) {
	good := []xpmem.Segid{
		{Pid: 1, Fd: 0, Dev: 0, Ino: 0, Permit: xpmem.PermitOwner},
		{Pid: 4242, Fd: 7, Dev: 1, Ino: 30817, Permit: xpmem.PermitAny},
		{Pid: math.MaxInt32, Fd: math.MaxInt32, Dev: math.MaxUint64, Ino: math.MaxUint64, Permit: xpmem.PermitAny},
	}
	for _, id := range good {
		got, err := xpmem.ParseSegid(id.String())
		if err != nil || got != id {
			t.Errorf("ParseSegid(%q) = %+v, %v; want %+v", id.String(), got, err, id)
		}
	}
	bad := []string{
		"",
		"xpmem",
		"xpmem:1:2:3:4",
		"xpmem:1:2:3:4:owner:extra",
		"XPMEM:1:2:3:4:owner",
		"shm:1:2:3:4:owner",
		"xpmem:0:2:3:4:owner",                    // pid 0
		"xpmem:-1:2:3:4:owner",                   // sign
		"xpmem:+1:2:3:4:owner",                   // sign
		"xpmem:01:2:3:4:owner",                   // leading zero
		"xpmem:1:-2:3:4:owner",                   // negative fd
		"xpmem:2147483648:2:3:4:owner",           // pid overflows int32
		"xpmem:1:2147483648:3:4:owner",           // fd overflows int32
		"xpmem:1:2:18446744073709551616:4:owner", // dev overflows uint64
		"xpmem:1:2:3:184467440737095516160:owner",
		"xpmem:1:2:0x3:4:owner",
		"xpmem:1:2:3:4:Owner",
		"xpmem:1:2:3:4:",
		"xpmem:1: 2:3:4:owner",
		"xpmem:1:2:3:4:owner\n",
		"xpmem::2:3:4:owner",
	}
	for _, s := range bad {
		id, err := xpmem.ParseSegid(s)
		if err == nil {
			t.Errorf("ParseSegid(%q) = %+v, want an error", s, id)
			continue
		}
		if !errors.Is(err, xpmem.ErrBadSegid) {
			t.Errorf("ParseSegid(%q) error %v does not wrap ErrBadSegid", s, err)
		}
	}
}

// FuzzParseSegid checks that ParseSegid never panics and accepts exactly
// the canonical text forms: whatever it accepts prints back unchanged.
func FuzzParseSegid(f *testing.F) {
	for _, s := range []string{
		"xpmem:4242:7:1:30817:owner",
		"xpmem:1:0:0:0:any",
		"xpmem:2147483647:2147483647:18446744073709551615:18446744073709551615:any",
		"xpmem:01:2:3:4:owner",
		"xpmem:1:2:3:4",
		"",
		":::::",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := xpmem.ParseSegid(s)
		if err != nil {
			if !errors.Is(err, xpmem.ErrBadSegid) {
				t.Fatalf("ParseSegid(%q) error %v does not wrap ErrBadSegid", s, err)
			}
			return
		}
		if got := id.String(); got != s {
			t.Fatalf("ParseSegid(%q) = %+v, which prints as %q", s, id, got)
		}
	})
}

// FuzzSegidRoundTrip checks that every valid Segid survives its text
// form, and that invalid ones are refused rather than misparsed.
func FuzzSegidRoundTrip(f *testing.F) {
	f.Add(int32(4242), int32(7), uint64(1), uint64(30817), 0)
	f.Add(int32(1), int32(0), uint64(0), uint64(0), 1)
	f.Add(int32(0), int32(-1), uint64(math.MaxUint64), uint64(1), 2)
	f.Fuzz(func(t *testing.T, pid, fd int32, dev, ino uint64, permit int) {
		id := xpmem.Segid{Pid: pid, Fd: fd, Dev: dev, Ino: ino, Permit: xpmem.Permit(permit)}
		valid := pid > 0 && fd >= 0 && (id.Permit == xpmem.PermitOwner || id.Permit == xpmem.PermitAny)
		got, err := xpmem.ParseSegid(id.String())
		switch {
		case valid && (err != nil || got != id):
			t.Fatalf("ParseSegid(%q) = %+v, %v; want %+v", id.String(), got, err, id)
		case !valid && err == nil:
			t.Fatalf("ParseSegid(%q) accepted invalid %+v as %+v", id.String(), id, got)
		}
	})
}
