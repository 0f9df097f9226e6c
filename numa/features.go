package numa

// knownCPUFeatures returns, in the order CPUFeatures lists them, the
// names of the CPU features CPUFeatures may report:
//
//   - sse4.2, popcnt, cx16 (cmpxchg16b): the x86-64-v2 baseline;
//   - avx, fma, avx2, bmi2: x86-64-v3, with AVX usable only where the
//     operating system saves the AVX registers;
//   - avx512f: AVX-512 Foundation, likewise;
//   - erms: fast rep movsb, which memmove uses for large copies;
//   - rdtscp: the serialising time-stamp counter read;
//   - hypervisor: running in a virtual machine (spinning is costlier
//     when the hypervisor may deschedule a virtual CPU).
//
// Invariant TSC (CPUID leaf 0x80000007) is not among them: the cpuid
// package does not read that leaf.
func knownCPUFeatures() []string {
	return []string{"sse4.2", "popcnt", "cx16", "avx", "fma", "avx2", "bmi2", "avx512f", "erms", "rdtscp", "hypervisor"}
}

// CPUFeatures returns which of a short list of CPU features that matter
// to the runtime and its benchmarks this CPU has: lower-case names, in
// a fixed order, from sse4.2, popcnt, cx16, avx, fma, avx2, bmi2,
// avx512f, erms, rdtscp and hypervisor (see the source for what each
// means). It reads what the CPUID instruction reported at start-up, on
// amd64; elsewhere it returns nil.
func CPUFeatures() []string {
	var out []string
	for _, name := range knownCPUFeatures() {
		if hasCPUFeature(name) {
			out = append(out, name)
		}
	}
	return out
}

// CPUModel returns the CPU's vendor and model as the CPUID instruction
// reports them, e.g. "GenuineIntel Intel(R) Xeon(R) Gold 6338 CPU @
// 2.00GHz", with runs of blanks collapsed; "" outside amd64.
func CPUModel() string { return cpuModel() }
