package node

import (
	"reflect"
	"testing"
)

// TestCtxLayout: Quiet's fence word must sit alone on its own cache
// line, after the read-mostly fields, so that contexts never share a
// written line.
func TestCtxLayout(t *testing.T) {
	ty := reflect.TypeFor[Ctx]()
	f, _ := ty.FieldByName("fence")
	if f.Offset != 128 {
		t.Errorf("Ctx.fence at offset %d, want 128", f.Offset)
	}
	if ty.Size() != 192 {
		t.Errorf("Ctx is %d bytes, want 192 (three cache lines)", ty.Size())
	}
}

func TestHeapAlign(t *testing.T) {
	for _, tc := range []struct {
		size int64
		want uintptr
	}{
		{1, 2 << 20}, {2 << 20, 2 << 20}, {2<<20 + 1, 4 << 20}, {160 << 20, 256 << 20},
		{512 << 20, 512 << 20}, {3 << 30, 1 << 30},
	} {
		if got := heapAlign(tc.size); got != tc.want {
			t.Errorf("heapAlign(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}
