package numa

import (
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
)

func TestCPUFeatures(t *testing.T) {
	known := knownCPUFeatures()
	feats := CPUFeatures()
	model := CPUModel()
	t.Logf("CPU %q, features %v", model, feats)
	if runtime.GOARCH != "amd64" {
		if model != "" || feats != nil {
			t.Errorf("CPUModel() = %q, CPUFeatures() = %v on %s; want \"\" and nil", model, feats, runtime.GOARCH)
		}
		return
	}
	if model == "" {
		t.Error("CPUModel() is empty on amd64")
	}
	// In the order of the known list, so a subset of it without repeats.
	last := -1
	for _, f := range feats {
		i := slices.Index(known, f)
		if i < 0 {
			t.Errorf("CPUFeatures() = %v: %q is not in %v", feats, f, known)
		} else if i <= last {
			t.Errorf("CPUFeatures() = %v: %q repeated or out of order", feats, f)
		} else {
			last = i
		}
	}
	// What golang.org/x/sys/cpu finds must agree (it too counts AVX
	// only where the OS enables it).
	for name, has := range map[string]bool{
		"sse4.2": cpu.X86.HasSSE42, "popcnt": cpu.X86.HasPOPCNT, "cx16": cpu.X86.HasCX16,
		"avx": cpu.X86.HasAVX, "fma": cpu.X86.HasFMA, "avx2": cpu.X86.HasAVX2, "bmi2": cpu.X86.HasBMI2,
		"avx512f": cpu.X86.HasAVX512F, "erms": cpu.X86.HasERMS,
	} {
		if got := slices.Contains(feats, name); got != has {
			t.Errorf("CPUFeatures() has %s: %v; golang.org/x/sys/cpu says %v", name, got, has)
		}
	}
	// Pure reads: the same answer twice, and a fresh slice each time.
	if again := CPUFeatures(); !slices.Equal(again, feats) || CPUModel() != model {
		t.Errorf("second call: %q %v; first %q %v", CPUModel(), again, model, feats)
	} else if len(feats) > 0 {
		again[0] = "changed"
		if CPUFeatures()[0] == "changed" {
			t.Error("CPUFeatures returns shared state")
		}
	}
}

func TestKnownCPUFeatures(t *testing.T) {
	known := knownCPUFeatures()
	sorted := slices.Clone(known)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(known) {
		t.Errorf("knownCPUFeatures() = %v has repeats", known)
	}
	for _, f := range known {
		for _, r := range f {
			if 'A' <= r && r <= 'Z' {
				t.Errorf("feature %q is not lower-case", f)
			}
		}
	}
}
