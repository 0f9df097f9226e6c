package sys_test

import (
	"errors"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/sys"
)

// skipNoNUMA skips the test when the kernel has no NUMA support (the
// only reason these calls may fail on a healthy machine).
func skipNoNUMA(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, sys.ErrNoSys) {
		t.Skipf("the kernel has no NUMA support (CONFIG_NUMA off): %v", err)
	}
}

// policyMappings returns a private anonymous and a shared memfd
// mapping of n pages each.
func policyMappings(t *testing.T, n int) map[string][]byte {
	t.Helper()
	size := n * os.Getpagesize()
	anon, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(anon) })
	shared, err := sys.Mmap(memfd(t, int64(size)), 0, size, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Munmap(shared) })
	return map[string][]byte{"anonymous": anon, "memfd": shared}
}

func TestMbindGetMempolicy(t *testing.T) {
	for name, b := range policyMappings(t, 8) {
		t.Run(name, func(t *testing.T) {
			mode, nodes, err := sys.GetMempolicyAddr(b)
			skipNoNUMA(t, err)
			if err != nil || mode != sys.MPOL_DEFAULT || nodes != nil {
				t.Fatalf("fresh mapping: GetMempolicyAddr = %d %v %v, want MPOL_DEFAULT and no nodes", mode, nodes, err)
			}
			for _, tc := range []struct {
				mode  int
				nodes []int
			}{
				{sys.MPOL_PREFERRED, []int{0}},
				{sys.MPOL_INTERLEAVE, []int{0}},
				{sys.MPOL_BIND, []int{0}},
				{sys.MPOL_DEFAULT, nil},
			} {
				err := sys.Mbind(b, tc.mode, tc.nodes, 0)
				skipNoNUMA(t, err)
				if err != nil {
					t.Fatalf("Mbind(mode %d, %v): %v", tc.mode, tc.nodes, err)
				}
				// Every page of the range reports the policy.
				for _, off := range []int{0, len(b) / 2, len(b) - 1} {
					mode, nodes, err := sys.GetMempolicyAddr(b[off:])
					if err != nil || mode != tc.mode || !slices.Equal(nodes, tc.nodes) {
						t.Errorf("after Mbind(mode %d, %v): GetMempolicyAddr(+%d) = %d %v %v", tc.mode, tc.nodes, off, mode, nodes, err)
					}
				}
			}
		})
	}
}

// TestMbindSharedPolicy: the policy set through one mapping of a memfd
// is the file's, so a second mapping of it reports it too.
func TestMbindSharedPolicy(t *testing.T) {
	size := 4 * os.Getpagesize()
	fd := memfd(t, int64(size))
	a, err := sys.Mmap(fd, 0, size, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(a)
	b, err := sys.Mmap(fd, 0, size, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(b)
	err = sys.Mbind(a, sys.MPOL_INTERLEAVE, []int{0}, 0)
	skipNoNUMA(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if mode, nodes, err := sys.GetMempolicyAddr(b); err != nil || mode != sys.MPOL_INTERLEAVE || !slices.Equal(nodes, []int{0}) {
		t.Errorf("second mapping: GetMempolicyAddr = %d %v %v, want MPOL_INTERLEAVE [0]", mode, nodes, err)
	}
}

func TestPageNodes(t *testing.T) {
	ps := os.Getpagesize()
	for name, b := range policyMappings(t, 8) {
		t.Run(name, func(t *testing.T) {
			err := sys.Mbind(b, sys.MPOL_PREFERRED, []int{0}, 0)
			skipNoNUMA(t, err)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sys.PageNodes(b, ps)
			skipNoNUMA(t, err)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 8 {
				t.Fatalf("PageNodes of 8 pages: %d entries", len(got))
			}
			for i, n := range got {
				if n >= 0 {
					t.Errorf("untouched page %d is on node %d, want a negative errno", i, n)
				}
			}
			for i := 0; i < len(b); i += 2 * ps { // pages 0, 2, 4, 6
				b[i] = 1
			}
			got, err = sys.PageNodes(b, ps)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range got {
				switch {
				case i%2 == 0 && n != 0:
					t.Errorf("touched page %d: node %d, want 0", i, n)
				case i%2 == 1 && n != -int(unix.ENOENT):
					t.Errorf("untouched page %d: %d, want -ENOENT (%d)", i, n, -int(unix.ENOENT))
				}
			}
			// An unaligned sub-slice covers the pages it touches.
			if got, err := sys.PageNodes(b[ps-1:ps+1], ps); err != nil || !slices.Equal(got, []int{0, -int(unix.ENOENT)}) {
				t.Errorf("PageNodes across a page boundary = %v %v, want [0 -ENOENT]", got, err)
			}
		})
	}
}

func TestMempolicyErrors(t *testing.T) {
	b := policyMappings(t, 2)["memfd"]
	if _, _, err := sys.GetMempolicyAddr(b); errors.Is(err, sys.ErrNoSys) {
		t.Skipf("the kernel has no NUMA support (CONFIG_NUMA off): %v", err)
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		mode  int
		nodes []int
	}{
		{"absent node", b, sys.MPOL_PREFERRED, []int{63}},
		{"absent node interleave", b, sys.MPOL_INTERLEAVE, []int{63}},
		{"node out of range", b, sys.MPOL_PREFERRED, []int{sys.MaxNodes}},
		{"negative node", b, sys.MPOL_BIND, []int{-1}},
		{"default with nodes", b, sys.MPOL_DEFAULT, []int{0}},
		{"bind without nodes", b, sys.MPOL_BIND, nil},
		{"unknown mode", b, 99, []int{0}},
		{"unaligned", b[1:], sys.MPOL_PREFERRED, []int{0}},
	} {
		if err := sys.Mbind(tc.b, tc.mode, tc.nodes, 0); !errors.Is(err, sys.ErrInval) {
			t.Errorf("%s: Mbind(mode %d, %v) = %v, want EINVAL", tc.name, tc.mode, tc.nodes, err)
		}
	}
	// The failed calls changed nothing.
	if mode, _, err := sys.GetMempolicyAddr(b); err != nil || mode != sys.MPOL_DEFAULT {
		t.Errorf("after failed Mbinds: mode %d, %v; want MPOL_DEFAULT", mode, err)
	}
	// An address nothing is mapped at.
	gone, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	unix.Munmap(gone)
	if err := sys.Mbind(gone, sys.MPOL_PREFERRED, []int{0}, 0); !errors.Is(err, unix.EFAULT) {
		t.Errorf("Mbind of an unmapped page = %v, want EFAULT", err)
	}
	if _, _, err := sys.GetMempolicyAddr(gone); !errors.Is(err, unix.EFAULT) {
		t.Errorf("GetMempolicyAddr of an unmapped page = %v, want EFAULT", err)
	}
	if _, err := sys.PageNodes(b, 3000); !errors.Is(err, sys.ErrInval) {
		t.Errorf("PageNodes with page size 3000 = %v, want EINVAL", err)
	}
	if _, _, err := sys.GetMempolicyAddr(nil); !errors.Is(err, sys.ErrInval) {
		t.Errorf("GetMempolicyAddr(nil) = %v, want EINVAL", err)
	}
	if err := sys.Mbind(nil, sys.MPOL_PREFERRED, []int{0}, 0); err != nil {
		t.Errorf("Mbind(nil) = %v, want nil (nothing to do)", err)
	}
}
