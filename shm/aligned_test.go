package shm

import (
	"testing"

	"github.com/goshmem/goshmem/internal/mem"
)

func TestMapAligned(t *testing.T) {
	s, err := Create("aligned", 3<<20, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, align := range []uintptr{4096, 2 << 20, 64 << 20} {
		m, err := s.MapAligned(0, s.Size(), align)
		if err != nil {
			t.Fatalf("align %d: %v", align, err)
		}
		if a := mem.Addr(m.Bytes()); a%align != 0 {
			t.Errorf("align %d: mapped at %#x", align, a)
		}
		m2, _ := s.Map(0, 0)
		m.Bytes()[12345] = 7
		if m2.Bytes()[12345] != 7 {
			t.Errorf("align %d: the aligned mapping does not share memory", align)
		}
		m2.Close()
		if err := m.Close(); err != nil {
			t.Errorf("align %d: unmap: %v", align, err)
		}
	}
	if _, err := s.MapAligned(0, s.Size()+1, 2<<20); err == nil {
		t.Error("MapAligned past the end succeeded")
	}
}
