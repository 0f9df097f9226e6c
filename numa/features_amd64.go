package numa

import (
	"strings"

	"github.com/intel-go/cpuid"
)

// hasCPUFeature reports whether the CPU has the feature name, one of
// knownCPUFeatures. AVX-encoded features count only when the operating
// system has enabled the AVX (or AVX-512) register state.
func hasCPUFeature(name string) bool {
	switch name {
	case "sse4.2":
		return cpuid.HasFeature(cpuid.SSE4_2)
	case "popcnt":
		return cpuid.HasFeature(cpuid.POPCNT)
	case "cx16":
		return cpuid.HasFeature(cpuid.CX16)
	case "avx":
		return cpuid.HasFeature(cpuid.AVX) && cpuid.EnabledAVX
	case "fma":
		return cpuid.HasFeature(cpuid.FMA) && cpuid.EnabledAVX
	case "avx2":
		return cpuid.HasExtendedFeature(cpuid.AVX2) && cpuid.EnabledAVX
	case "bmi2":
		return cpuid.HasExtendedFeature(cpuid.BMI2)
	case "avx512f":
		return cpuid.HasExtendedFeature(cpuid.AVX512F) && cpuid.EnabledAVX512
	case "erms":
		return cpuid.HasExtendedFeature(cpuid.ERMS)
	case "rdtscp":
		return cpuid.HasExtraFeature(cpuid.RDTSCP)
	case "hypervisor":
		return cpuid.HasFeature(cpuid.HYPERVISOR)
	}
	return false
}

// cpuModel joins the vendor identification and brand strings, which
// CPUID pads with NULs and blanks.
func cpuModel() string {
	s := cpuid.VendorIdentificatorString + " " + cpuid.ProcessorBrandString
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\x00", " ")), " ")
}
