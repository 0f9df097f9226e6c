package shm

import (
	"math"
	"strings"
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
	for _, align := range []uintptr{0, 3, 3 << 20} {
		if m, err := s.MapAligned(0, s.Size(), align); err == nil {
			m.Close()
			t.Errorf("MapAligned at alignment %d (not a power of two) succeeded", align)
		}
	}
}

// TestSizesNearOverflow: sizes and alignments whose rounding or
// reservation would overflow are refused with a message, never wrapped
// into a negative size.
func TestSizesNearOverflow(t *testing.T) {
	for _, size := range []int64{math.MaxInt64, math.MaxInt64 - HugePageSize + 2} {
		_, err := Create("near-overflow", size, Options{Huge: true})
		if err == nil {
			t.Fatalf("Create(%d, huge) succeeded", size)
		}
		if msg := err.Error(); !strings.Contains(msg, "huge pages") || strings.Contains(msg, " -") {
			t.Errorf("Create(%d, huge) = %q; want a refusal about huge-page rounding, no wrapped size", size, msg)
		}
	}
	s, err := Create("aligned", 3<<20, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, align := range []uintptr{1 << 63, math.MaxInt - 4096, 3 << 20} {
		m, err := s.MapAligned(0, s.Size(), align)
		if err == nil {
			m.Close()
			t.Errorf("MapAligned(align %#x) succeeded", align)
			continue
		}
		if !strings.Contains(err.Error(), "alignment") {
			t.Errorf("MapAligned(align %#x) = %q; want it to name the alignment", align, err)
		}
	}
}
