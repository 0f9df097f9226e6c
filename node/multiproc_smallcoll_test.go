package node_test

// Small collectives across processes: the dropbox exchange and the
// broadcast rings (one PE per process, or two), back to back with
// changing roots, sizes and kinds, every result checked.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goshmem/goshmem"
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
	w.Sync()
	fmt.Printf("PE %d ok %s\n", me, pe.Transport().Name)
}

func TestMultiProcessSmallCollectives(t *testing.T) {
	for _, tc := range []struct{ npes, ppp int }{{2, 1}, {4, 1}, {4, 2}, {3, 1}} {
		t.Run(fmt.Sprintf("%dx%d", tc.npes, tc.ppp), func(t *testing.T) {
			r := runJob(t, "smallcoll", tc.npes, tc.ppp, false)
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
