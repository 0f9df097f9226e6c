package numa

import "testing"

// BenchmarkDiscover measures reading this machine's topology, which
// every PE process does once at start-up (for its home node and heap
// policy) and the launcher once per job.
func BenchmarkDiscover(b *testing.B) {
	for b.Loop() {
		if _, err := Discover(""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiscoverTwoSockets measures the fake 16-CPU two-socket tree.
func BenchmarkDiscoverTwoSockets(b *testing.B) {
	for b.Loop() {
		if _, err := Discover("testdata/2socket-smt"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiscoverNodes measures the partial discovery PE processes do
// at start-up.
func BenchmarkDiscoverNodes(b *testing.B) {
	for b.Loop() {
		if _, err := DiscoverNodes(""); err != nil {
			b.Fatal(err)
		}
	}
}
