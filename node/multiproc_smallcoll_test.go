package node_test

// Small collectives across processes: the dropbox exchange and the
// broadcast rings (one PE per process, or two), back to back with
// changing roots, sizes and kinds, every result checked.

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/launch"
)

func init() { scenarios["smallcoll"] = scenarioSmallColl }

// sval is PE pe's element i in round it.
func sval(pe, i, it int) int64 { return int64(it)*1_000_003 + int64(pe)*10_007 + int64(i)*31 + 1 }

func scenarioSmallColl(pe *goshmem.PE) {
	me, np := pe.MyPE(), pe.NPEs()
	w := goshmem.TeamWorld(pe)
	src, err1 := goshmem.Malloc[int64](pe, 40*np)
	dst, err2 := goshmem.Malloc[int64](pe, 40*np)
	if err1 != nil || err2 != nil {
		fail(pe, "allocation: %v %v", err1, err2)
	}
	sizes := []int{1, 7, 8, 32, 39} // both broadcast rings, both sides of a line
	for it := 0; it < 3000; it++ {
		n := sizes[it%len(sizes)]
		for i := range src {
			src[i] = sval(me, i, it)
		}
		switch kind := it / len(sizes) % 4; kind {
		case 0: // runs of broadcasts from one root, then the next
			root := it / 20 % np
			goshmem.Broadcast(w, dst[:n], src[:n], root)
			for i := 0; i < n; i++ {
				if dst[i] != sval(root, i, it) {
					fail(pe, "it %d: Broadcast of %d from %d: element %d is %d, want %d", it, n, root, i, dst[i], sval(root, i, it))
				}
			}
		case 1:
			goshmem.SumReduce(w, dst[:n], src[:n])
			for i := 0; i < n; i++ {
				var want int64
				for q := 0; q < np; q++ {
					want += sval(q, i, it)
				}
				if dst[i] != want {
					fail(pe, "it %d: SumReduce of %d: element %d is %d, want %d", it, n, i, dst[i], want)
				}
			}
		case 2:
			goshmem.FCollect(w, dst, src[:n])
			for q := 0; q < np; q++ {
				for i := 0; i < n; i++ {
					if dst[q*n+i] != sval(q, i, it) {
						fail(pe, "it %d: FCollect of %d: block %d element %d is %d, want %d", it, n, q, i, dst[q*n+i], sval(q, i, it))
					}
				}
			}
		case 3: // member q contributes 1+(q+it)%n elements
			goshmem.Collect(w, dst, src[:1+(me+it)%n])
			at := 0
			for q := 0; q < np; q++ {
				for i := 0; i < 1+(q+it)%n; i++ {
					if dst[at] != sval(q, i, it) {
						fail(pe, "it %d: Collect: member %d element %d is %d, want %d", it, q, i, dst[at], sval(q, i, it))
					}
					at++
				}
			}
		}
	}
	// A team of the first half: when PEs are bound with more PEs than
	// CPUs, a PE's CPU mates may be outside it (the exchange must not
	// count on them), or all inside.
	half, err := w.SplitStrided(0, 1, max(1, np/2), nil)
	if err != nil {
		fail(pe, "SplitStrided: %v", err)
	}
	if half != nil {
		hn := half.NPEs()
		for it := 0; it < 500; it++ {
			src[0] = sval(me, 0, it)
			goshmem.SumReduce(half, dst[:1], src[:1])
			var want int64
			for q := 0; q < hn; q++ {
				want += sval(q, 0, it)
			}
			if dst[0] != want {
				fail(pe, "it %d: SumReduce on the first %d PEs: %d, want %d", it, hn, dst[0], want)
			}
		}
		half.Destroy()
	}
	w.Sync()
	fmt.Printf("PE %d ok %s\n", me, pe.Transport().Name)
}

func TestMultiProcessSmallCollectives(t *testing.T) {
	ncpu := runtime.NumCPU()
	for _, tc := range []struct {
		npes, ppp int
		bind      string
	}{
		{2, 1, ""}, {4, 1, ""}, {4, 2, ""}, {3, 1, ""},
		// Bound, more PEs than CPUs: CPU groups, the exchange waits
		// spinning once a CPU's PEs have all published.
		{ncpu + 1, 1, "core"}, {2 * ncpu, 1, "core"}, {2*ncpu + 1, 1, "core"},
	} {
		t.Run(fmt.Sprintf("%dx%d bind %q", tc.npes, tc.ppp, tc.bind), func(t *testing.T) {
			r := runJobConfig(t, "smallcoll", launch.Config{NPEs: tc.npes, PEsPerProc: tc.ppp, BindTo: tc.bind})
			if r.err != nil || r.code != 0 {
				t.Fatalf("code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
			}
			for pe := 0; pe < tc.npes; pe++ {
				if want := fmt.Sprintf("PE %d ok ", pe); !strings.Contains(r.stdout, want) {
					t.Errorf("missing %q in output:\nstdout:\n%s\nstderr:\n%s", want, r.stdout, r.stderr)
				}
			}
		})
	}
}
