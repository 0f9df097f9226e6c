//go:build !amd64

package numa

// hasCPUFeature reports false: outside amd64 there is no CPUID.
func hasCPUFeature(string) bool { return false }

// cpuModel returns "": outside amd64 there is no CPUID.
func cpuModel() string { return "" }
