//go:build amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64 || s390x

package symalloc

import "testing"

// TestHugeHeap exercises terabyte heaps.
func TestHugeHeap(t *testing.T) {
	const TB = 1 << 40
	a := New(4*TB, 64)
	off, err := a.Alloc(TB, 0)
	if off != 0 || err != nil {
		t.Fatalf("Alloc(1TB) = %#x, %v", off, err)
	}
	off, err = a.Alloc(1, 2*TB)
	if off != 2*TB || err != nil {
		t.Fatalf("Alloc(1, align 2TB) = %#x, %v", off, err)
	}
	for _, size := range []uintptr{^uintptr(0), ^uintptr(0) - 62, topBit, 4*TB + 1, 3 * TB} {
		if off, err := a.Alloc(size, 0); off != NoOffset || err == nil {
			t.Errorf("Alloc(%#x) = %#x, %v; want failure", size, off, err)
		}
		if off, _, err := a.Realloc(0, size); off != NoOffset || err == nil {
			t.Errorf("Realloc(0, %#x) = %#x, %v; want failure", size, off, err)
		}
	}
	if off, err := a.Alloc(1, topBit); off != NoOffset || err == nil {
		t.Errorf("Alloc(1, topBit) = %#x, %v", off, err)
	}
	mustCheck(t, a)
	if off, err := New(1<<40+63, 64).Alloc(1<<40, 0); off != 0 || err != nil {
		t.Errorf("Alloc(1TB) in a 1TB heap = %#x, %v", off, err)
	}
}
