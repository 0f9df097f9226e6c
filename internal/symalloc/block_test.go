package symalloc

import "testing"

func TestBlock(t *testing.T) {
	a := New(1024, 64)
	x, _ := a.Alloc(100, 0) // [0, 128)
	y, _ := a.Alloc(64, 0)  // [128, 192)
	a.Free(y)
	for _, tc := range []struct {
		off         uintptr
		start, size uintptr
		ok          bool
	}{
		{x, 0, 128, true},
		{x + 127, 0, 128, true},
		{128, 0, 0, false},  // freed
		{5000, 0, 0, false}, // outside the heap
	} {
		s, n, ok := a.Block(tc.off)
		if s != tc.start || n != tc.size || ok != tc.ok {
			t.Errorf("Block(%d) = %d, %d, %v; want %d, %d, %v", tc.off, s, n, ok, tc.start, tc.size, tc.ok)
		}
	}
}
