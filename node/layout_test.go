package node

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/goshmem/goshmem/internal/mem"
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

// TestTeamPoolStagger: the team slots of different PEs start at
// different offsets of their pages (so that the word a PE polls in its
// own slot and the one it writes in a team-mate's never alias in the
// low 12 address bits), at least two cache lines apart, and every slot
// stays inside its PE's segment: the last word of the last slot of
// every PE is writable through TeamSet and reads back through TeamLoad,
// from every PE.
func TestTeamPoolStagger(t *testing.T) {
	const n = 4
	err := RunLocal(Config{HeapSize: 1 << 20}, n, func(p *PE) {
		seen := map[uintptr]int{}
		for q := 0; q < n; q++ {
			b := p.TeamBytes(q, 0, 0, 4)
			off := mem.Addr(b) % 4096
			if off%128 != 0 {
				panic(fmt.Sprintf("PE %d: PE %d's team pool at page offset %d, want a multiple of 128", p.MyPE(), q, off))
			}
			if r, dup := seen[off]; dup {
				panic(fmt.Sprintf("PE %d: PEs %d and %d have their team pools at the same page offset %d", p.MyPE(), r, q, off))
			}
			seen[off] = q
		}
		p.SyncAll()
		last := TeamSlots - 1
		w := TeamSlotWords - 1
		p.TeamSet((p.MyPE()+1)%n, last, w, uint32(100+p.MyPE()))
		p.SyncAll()
		left := (p.MyPE() + n - 1) % n
		if v := p.TeamLoad(p.MyPE(), last, w); v != uint32(100+left) {
			panic(fmt.Sprintf("PE %d: last word of the last slot holds %d, want %d", p.MyPE(), v, 100+left))
		}
		p.SyncAll()
	})
	if err != nil {
		t.Fatal(err)
	}
}
