package node_test

import (
	"os"
	"strings"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

func mapsLines(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	return strings.Count(string(b), "\n")
}

func fdCount(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// TestRunLocalReleasesEverything: an in-process job unmaps its heaps
// and control block and closes every descriptor when it ends, so a
// program (or test) can run jobs back to back.
func TestRunLocalReleasesEverything(t *testing.T) {
	run := func() {
		err := goshmem.RunLocalConfig(node.Config{HeapSize: 4 << 20}, 3, func(pe *goshmem.PE) {
			x, _ := goshmem.Malloc[int64](pe, 8)
			goshmem.P(pe.Ctx(), &x[0], 1, (pe.MyPE()+1)%pe.NPEs())
			pe.BarrierAll()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Warm up what the Go runtime maps as its heap grows (more under
	// -race, whose shadow memory grows with it for the first jobs).
	for range 10 {
		run()
	}
	maps, fds := mapsLines(t), fdCount(t)
	const jobs = 40
	for range jobs {
		run()
	}
	// A leak keeps at least one mapping per job (a heap, 3 per job):
	// 40 or more lines; the runtime's own growth is a few.
	if m := mapsLines(t); m > maps+8 {
		t.Errorf("mappings grew from %d to %d lines over %d jobs", maps, m, jobs)
	}
	if f := fdCount(t); f > fds {
		t.Errorf("descriptors grew from %d to %d over %d jobs", fds, f, jobs)
	}
}
