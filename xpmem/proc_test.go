package xpmem

import (
	"os"
	"testing"
)

func TestParseStatusUids(t *testing.T) {
	for _, tc := range []struct {
		status     string
		ruid, euid int
		ok         bool
	}{
		{"Name:\tcat\nUmask:\t0022\nState:\tR (running)\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n", 1000, 1001, true},
		{"Uid:\t0\t0\t0\t0", 0, 0, true},
		{"Uid: 65534 65534 65534 65534\n", 65534, 65534, true},
		{"Name:\tx\nGid:\t0\t0\t0\t0\n", 0, 0, false},
		{"Uid:\t1000\n", 0, 0, false},
		{"Uid:\tx\t0\t0\t0\n", 0, 0, false},
		{"", 0, 0, false},
	} {
		ruid, euid, err := parseStatusUids(tc.status, "status")
		if tc.ok != (err == nil) || ruid != tc.ruid || euid != tc.euid {
			t.Errorf("parseStatusUids(%q) = %d, %d, %v; want %d, %d, ok=%v", tc.status, ruid, euid, err, tc.ruid, tc.euid, tc.ok)
		}
	}
}

func TestProcUidsSelf(t *testing.T) {
	ruid, euid, err := procUids(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if ruid != os.Getuid() || euid != os.Geteuid() {
		t.Fatalf("procUids(self) = %d, %d; want %d, %d", ruid, euid, os.Getuid(), os.Geteuid())
	}
}
