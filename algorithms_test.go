package goshmem_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/reducecheck"
	"github.com/goshmem/goshmem/node"
)

func TestAlgorithmsQuick(t *testing.T) {
	for _, cfg := range []node.Config{
		{HeapSize: 1 << 20, BarrierAlgorithm: "tree", BcastAlgorithm: "tree", FCollectAlgorithm: "ring"},
		{HeapSize: 1 << 20, BarrierAlgorithm: "central", BcastAlgorithm: "tree", ReduceAlgorithm: "flat"},
		{HeapSize: 1 << 20, BarrierAlgorithm: "central"}, // small reductions combine on the counter
		{HeapSize: 1 << 20, SimDomains: 2},
		{HeapSize: 1 << 20, SimDomains: 3, ReduceAlgorithm: "partitioned"},
		{HeapSize: 1 << 20, SimDomains: 2, Transport: "cma"},
		{HeapSize: 1 << 20, Transport: "cma"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "recursive-doubling"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "recursive-doubling", Transport: "cma"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "ring"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "ring", Transport: "cma"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "rabenseifner"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "rabenseifner", Transport: "cma"},
		{HeapSize: 1 << 20, FCollectAlgorithm: "recursive-doubling"},
		{HeapSize: 1 << 20, FCollectAlgorithm: "recursive-doubling", Transport: "cma"},
	} {
		for _, n := range []int{1, 2, 3, 4, 5, 6, 7} {
			name := fmt.Sprintf("%+v/n=%d", cfg, n)
			err := goshmem.RunLocalConfig(cfg, n, func(pe *goshmem.PE) {
				w := goshmem.TeamWorld(pe)
				src, _ := goshmem.Malloc[int64](pe, 1000)
				dst, _ := goshmem.Malloc[int64](pe, 1000)
				all, _ := goshmem.Malloc[int64](pe, 1000*n)
				// The world, the world backwards (negative stride), and
				// this PE's row and column of a 2-D split.
				back, err := w.SplitStrided(n-1, -1, n, nil)
				if err != nil {
					panic(err)
				}
				x, y, err := w.Split2D(2, nil, nil)
				if err != nil {
					panic(err)
				}
				for _, tm := range []*goshmem.Team{w, back, x, y} {
					checkAlgorithms(t, name, pe, tm, src, dst, all)
				}
				back.Destroy()
				x.Destroy()
				y.Destroy()
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
}

// checkAlgorithms runs reductions (small and large), broadcasts from
// every root and fcollects on team tm, back to back, against the values
// every member contributes. Member j of tm contributes
// world(j)*1000+i+it at index i of round it.
func checkAlgorithms(t *testing.T, name string, pe *goshmem.PE, tm *goshmem.Team, src, dst, all []int64) {
	n := tm.NPEs()
	world := make([]int, n)
	for j := range world {
		world[j] = tm.WorldPE(j)
	}
	for it := 0; it < 12; it++ {
		size := []int{1, 13, 1000}[it%3]
		for i := range src {
			src[i] = int64(pe.MyPE()*1000 + i + it)
		}
		goshmem.SumReduce(tm, dst[:size], src[:size])
		for i := 0; i < size; i++ {
			want := int64(0)
			for _, q := range world {
				want += int64(q*1000 + i + it)
			}
			if dst[i] != want {
				t.Errorf("%s team %v it %d PE %d: sum[%d]=%d want %d", name, world, it, pe.MyPE(), i, dst[i], want)
				return
			}
		}
		root := it % n
		goshmem.Broadcast(tm, dst[:size], src[:size], root)
		if want := int64(world[root]*1000 + it + size - 1); dst[size-1] != want {
			t.Errorf("%s team %v it %d PE %d: bcast from %d: %d want %d", name, world, it, pe.MyPE(), root, dst[size-1], want)
			return
		}
		goshmem.FCollect(tm, all[:size*n], src[:size])
		for j, q := range world {
			if got, want := all[j*size+size-1], int64(q*1000+size-1+it); got != want {
				t.Errorf("%s team %v it %d PE %d: fcollect block %d = %d want %d", name, world, it, pe.MyPE(), j, got, want)
				return
			}
		}
		tm.Sync()
	}
}

// TestScans checks SumInscan and SumExscan against prefix sums, in
// place and not, on world and on a strided team.
func TestScans(t *testing.T) {
	for _, n := range []int{1, 2, 4, 5} {
		err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, n, func(pe *goshmem.PE) {
			src, _ := goshmem.Malloc[int64](pe, 9)
			dst, _ := goshmem.Malloc[int64](pe, 9)
			w := goshmem.TeamWorld(pe)
			for rep := 0; rep < 5; rep++ {
				for i := range src {
					src[i] = int64((pe.MyPE()+1)*(i+1) + rep)
				}
				prefix := func(upto int, i int) int64 {
					s := int64(0)
					for q := 0; q <= upto; q++ {
						s += int64((q+1)*(i+1) + rep)
					}
					return s
				}
				goshmem.SumInscan(w, dst, src)
				for i := range dst {
					if want := prefix(pe.MyPE(), i); dst[i] != want {
						t.Errorf("n=%d PE %d: inscan[%d]=%d want %d", n, pe.MyPE(), i, dst[i], want)
					}
				}
				goshmem.SumExscan(w, src, src) // in place
				for i := range src {
					if want := prefix(pe.MyPE()-1, i); src[i] != want {
						t.Errorf("n=%d PE %d: exscan[%d]=%d want %d", n, pe.MyPE(), i, src[i], want)
					}
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDropboxBackToBack hammers the small-message paths (dropbox
// reductions and broadcasts) with back-to-back calls whose data and
// roots change every time, so that reusing a dropbox too early shows
// up as a wrong value. At 8 PEs (more than the CPUs of most test
// machines) goroutine PEs park in these waits, without a timer.
func TestDropboxBackToBack(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8} {
		err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, n, func(pe *goshmem.PE) {
			w := goshmem.TeamWorld(pe)
			src, _ := goshmem.Malloc[int64](pe, 4)
			dst, _ := goshmem.Malloc[int64](pe, 4)
			for it := 0; it < 500; it++ {
				for i := range src {
					src[i] = int64(pe.MyPE()*100 + i + it*7)
				}
				goshmem.MaxReduce(w, dst, src)
				if want := int64((n-1)*100 + 3 + it*7); dst[3] != want {
					t.Errorf("n=%d it %d PE %d: max %d want %d", n, it, pe.MyPE(), dst[3], want)
					return
				}
				root := (it * 3) % n
				goshmem.Broadcast(w, dst, src, root)
				if want := int64(root*100 + 2 + it*7); dst[2] != want {
					t.Errorf("n=%d it %d PE %d: bcast from %d: %d want %d", n, it, pe.MyPE(), root, dst[2], want)
					return
				}
				src[0] = -1 // the caller may reuse src at once
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestBroadcastRootRunsAhead: the same root broadcasts small vectors
// many times in a row while readers lag; every reader must get each
// broadcast's own data (a dropbox reused too early shows up here). Small
// reductions run in between, with each reduction algorithm: none may
// write where the broadcasts' dropboxes are (the large ring shares its
// lines with the push boxes of teams that do not map each other).
func TestBroadcastRootRunsAhead(t *testing.T) {
	for _, alg := range []string{"", "recursive-doubling", "flat"} {
		err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20, ReduceAlgorithm: alg}, 3, func(pe *goshmem.PE) {
			w := goshmem.TeamWorld(pe)
			src, _ := goshmem.Malloc[int64](pe, 15)
			dst, _ := goshmem.Malloc[int64](pe, 15)
			rsrc, _ := goshmem.Malloc[int64](pe, 8)
			rdst, _ := goshmem.Malloc[int64](pe, 8)
			for it := 0; it < 2000; it++ {
				root := it / 25 % 3
				for i := range src {
					src[i] = int64(it*1000 + pe.MyPE()*100 + i)
				}
				n := []int{1, 15}[it%2]
				goshmem.Broadcast(w, dst[:n], src[:n], root)
				if want := int64(it*1000 + root*100 + n - 1); dst[n-1] != want {
					t.Errorf("%s: it %d PE %d root %d: got %d want %d", alg, it, pe.MyPE(), root, dst[n-1], want)
					return
				}
				if it%7 == 0 {
					for i := range rsrc {
						rsrc[i] = int64(it + pe.MyPE() + i)
					}
					goshmem.SumReduce(w, rdst, rsrc)
					if want := int64(3*it + 3); rdst[0] != want { // PEs 0, 1, 2
						t.Errorf("%s: it %d PE %d: sum %d want %d", alg, it, pe.MyPE(), rdst[0], want)
						return
					}
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestBroadcastEager: a broadcast of 8 bytes is eager, as MPI's is: the root
// copies the data out and returns without waiting for the readers, so
// it can root a whole ring of broadcasts in a row before a slow reader
// (one that has not got its CPU yet) reads the first. Here the readers
// start only after the root has finished BroadcastRing broadcasts of
// one int64; each must then read every broadcast's own data. (It used
// to wait at its third for the readers' acknowledgements of its first.)
//
// Broadcasts of 9 to BroadcastMax bytes are as eager, up to the depth
// of their ring (BroadcastDepth): 9 five-line dropboxes where the PEs
// fit their CPUs, and where they do not (the central barrier) as many
// dropboxes of a size's lines as fit in the ring's two runs of
// consecutive lines (44 broadcasts of 16 bytes, 8 of the largest).
func TestBroadcastEager(t *testing.T) {
	for _, c := range []struct {
		elems int
		cfg   node.Config
	}{
		{1, node.Config{HeapSize: 1 << 20}},
		{2, node.Config{HeapSize: 1 << 20, BarrierAlgorithm: "dissemination"}},
		{goshmem.BroadcastMax / 8, node.Config{HeapSize: 1 << 20, BarrierAlgorithm: "dissemination"}},
		{2, node.Config{HeapSize: 1 << 20, BarrierAlgorithm: "central"}},
		{7, node.Config{HeapSize: 1 << 20, BarrierAlgorithm: "central"}},
		{8, node.Config{HeapSize: 1 << 20, BarrierAlgorithm: "central"}},
		{goshmem.BroadcastMax / 8, node.Config{HeapSize: 1 << 20, BarrierAlgorithm: "central"}},
	} {
		elems := c.elems
		for _, n := range []int{2, 4} {
			rootDone := make(chan struct{})
			err := goshmem.RunLocalConfig(c.cfg, n, func(pe *goshmem.PE) {
				w := goshmem.TeamWorld(pe)
				rounds := goshmem.BroadcastDepth(w, elems*8) // the same on every member
				src, _ := goshmem.Malloc[int64](pe, elems)
				dst, _ := goshmem.Malloc[int64](pe, elems)
				root := n - 1
				if pe.MyPE() != root {
					select {
					case <-rootDone:
					case <-time.After(10 * time.Second):
						t.Errorf("%d PEs: the root did not finish %d broadcasts of %d bytes without its readers", n, rounds, elems*8)
					}
				}
				for it := 0; it < rounds; it++ {
					for i := range src {
						src[i] = int64(it*100000 + pe.MyPE()*1000 + i)
					}
					goshmem.Broadcast(w, dst, src, root)
					for i := range dst {
						if want := int64(it*100000 + root*1000 + i); dst[i] != want {
							t.Errorf("%d PEs, %d bytes, PE %d, broadcast %d: dst[%d] = %d, want %d", n, elems*8, pe.MyPE(), it, i, dst[i], want)
							break
						}
					}
				}
				if pe.MyPE() == root {
					close(rootDone)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBroadcastDropboxSizes runs back-to-back broadcasts of every size
// the dropbox rings take (1 to BroadcastMax bytes, as bytes and as
// 16-byte elements), through both layouts of the large ring, from
// rotating roots, with readers that fall behind by turns so that the
// roots run ahead and the rings wrap with dropboxes of mixed sizes.
// Every member checks every byte it got against the root's, and that
// nothing past the broadcast's end was written.
func TestBroadcastDropboxSizes(t *testing.T) {
	iters := 4000
	if testing.Short() {
		iters = 400
	}
	for _, c := range []struct {
		n   int
		alg string // the central barrier's teams use the ring of lines
	}{{2, "dissemination"}, {3, "dissemination"}, {2, "central"}, {3, "central"}, {5, "central"}} {
		n := c.n
		t.Run(fmt.Sprintf("%s/%d", c.alg, n), func(t *testing.T) {
			err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20, BarrierAlgorithm: c.alg}, n, func(pe *goshmem.PE) {
				w := goshmem.TeamWorld(pe)
				const most = goshmem.BroadcastMax
				bsrc, _ := goshmem.Malloc[byte](pe, most+1)
				bdst, _ := goshmem.Malloc[byte](pe, most+1)
				csrc, _ := goshmem.Malloc[complex128](pe, most/16+1)
				cdst, _ := goshmem.Malloc[complex128](pe, most/16+1)
				rng := rand.New(rand.NewPCG(uint64(n), 3)) // the same on every PE
				val := func(it, root, i int) byte { return byte(it*31 + root*7 + i*13) }
				root, late := 0, 1
				for it := 0; it < iters; it++ {
					// Runs of 100 broadcasts from one root, with one
					// reader late at the start of each (the root may run
					// a ring ahead of it, and not further), then
					// rotating roots.
					switch {
					case it%200 == 0:
						root, late = rng.IntN(n), rng.IntN(n)
						if late == root {
							late = (root + 1) % n
						}
						if pe.MyPE() == late {
							time.Sleep(2 * time.Millisecond)
						}
					case it%200 >= 100:
						root = rng.IntN(n)
					}
					wide := rng.IntN(2) == 0
					size := 1 + rng.IntN(most)
					if rng.IntN(2) == 0 {
						size = 1 + rng.IntN(64) // around one line
					}
					var src, dst []byte
					if wide {
						k := max(1, size/16)
						size = 16 * k
						src, dst = mem.Bytes(csrc[:k]), mem.Bytes(cdst[:k+1])
					} else {
						src, dst = bsrc[:size], bdst[:size+1]
					}
					for i := range src {
						src[i] = val(it, pe.MyPE(), i)
					}
					for i := range dst {
						dst[i] = 0xee
					}
					if wide {
						goshmem.Broadcast(w, cdst[:size/16], csrc[:size/16], root)
					} else {
						goshmem.Broadcast(w, bdst[:size], bsrc[:size], root)
					}
					for i := 0; i < size; i++ {
						if want := val(it, root, i); dst[i] != want {
							t.Errorf("%d PEs, PE %d, broadcast %d of %d bytes (16-byte elements: %v) from %d: byte %d = %#x, want %#x", n, pe.MyPE(), it, size, wide, root, i, dst[i], want)
							panic("stop") // the other PEs would wait for this one
						}
					}
					for i := size; i < len(dst); i++ {
						if dst[i] != 0xee {
							t.Errorf("%d PEs, PE %d, broadcast %d of %d bytes (16-byte elements: %v): byte %d past the end was written", n, pe.MyPE(), it, size, wide, i)
							panic("stop")
						}
					}
				}
			})
			if err != nil && !t.Failed() {
				t.Fatal(err)
			}
		})
	}
}

// TestPushedReductionBackToBack runs reductions of up to 64 bytes (the
// pushed recursive doubling on teams that do not map each other) back
// to back with no sync between them, in runs on one team, against naive
// values (reducecheck.BackToBack): a push box overwritten before its
// owner read it shows as a wrong result (it did at once with the boxes'
// parity removed). With CMA the teams do not map each other and the
// reductions push; the second configuration forces recursive doubling
// on teams that do (it pulls there: their push boxes' lines hold
// broadcast dropboxes) and the third adds CMA's pushes to it.
func TestPushedReductionBackToBack(t *testing.T) {
	for _, cfg := range []node.Config{
		{HeapSize: 1 << 20, Transport: "cma"},
		{HeapSize: 1 << 20, ReduceAlgorithm: "recursive-doubling"},
		{HeapSize: 1 << 20, Transport: "cma", ReduceAlgorithm: "recursive-doubling"},
	} {
		for _, n := range []int{2, 3, 5, 8} {
			name := fmt.Sprintf("%s%s/n=%d", cfg.Transport, cfg.ReduceAlgorithm, n)
			err := goshmem.RunLocalConfig(cfg, n, func(pe *goshmem.PE) {
				if err := reducecheck.BackToBack(pe, 1000); err != nil {
					// A panic stops the other PEs too (a return
					// would leave them waiting).
					panic(err)
				}
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
}

// TestBroadcastPushedBackToBack: on a team whose members do not map each
// other (CMA here; other hosts' leaders alike) a broadcast above the
// small collectives' size is a tree that pushes into the children's
// dst, with no closing sync: back-to-back broadcasts with changing
// roots and sizes into one dst, with members that are late in turn
// (a parent must not push broadcast e into a child that has not entered
// its call; here one that reads its result late), each give every
// member its root's data.
func TestBroadcastPushedBackToBack(t *testing.T) {
	const npes = 5 // a tree with a member of two children and a lone one
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20, Transport: "cma"}, npes, func(pe *goshmem.PE) {
		w := goshmem.TeamWorld(pe)
		src, _ := goshmem.Malloc[int64](pe, 600)
		dst, _ := goshmem.Malloc[int64](pe, 600)
		for it := 0; it < 400; it++ {
			root := it / 7 % npes
			n := 200 + it%3*150 // 1.6-4 KiB: above the or-gather
			for i := range src[:n] {
				src[i] = int64(it*100000 + pe.MyPE()*1000 + i)
			}
			goshmem.Broadcast(w, dst[:n], src[:n], root)
			if it%25 == pe.MyPE()*5 {
				// Late to read the result and to call again: a parent that
				// pushed the next broadcast now would change dst under us.
				time.Sleep(2 * time.Millisecond)
			}
			for i := range dst[:n] {
				if want := int64(it*100000 + root*1000 + i); dst[i] != want {
					t.Errorf("it %d PE %d root %d: dst[%d] = %d, want %d", it, pe.MyPE(), root, i, dst[i], want)
					return
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCombiningReductionBackToBack: on teams that synchronize with the
// central counter (more PEs than CPUs, or SHMEM_BARRIER_ALGORITHM
// central), small reductions are combined by the last member to arrive
// (reduceCombining), counting on the barrier's counter and using the
// exchange's dropboxes. Here they run back to back with no sync, mixed
// with barriers, broadcasts and the exchange's FCollect, Collect and
// Alltoall (on the same dropboxes), on the world and on the world backwards, for int64 sums
// and maxima (against naive values) and float64 sums, which must equal
// the naive sum in team order bit for bit on every member.
func TestCombiningReductionBackToBack(t *testing.T) {
	cfgs := []node.Config{
		{HeapSize: 1 << 20, BarrierAlgorithm: "central"},
		{HeapSize: 1 << 20}, // central when the PEs outnumber GOMAXPROCS
	}
	for ci, cfg := range cfgs {
		for _, n := range []int{2, 3, 5, 8} {
			if ci == 1 && n <= runtime.GOMAXPROCS(0) {
				continue // not oversubscribed: the first configuration covers it
			}
			name := fmt.Sprintf("%q/n=%d", cfg.BarrierAlgorithm, n)
			err := goshmem.RunLocalConfig(cfg, n, func(pe *goshmem.PE) {
				if err := combiningCheck(pe, 600); err != nil {
					panic(err) // stops the other PEs too
				}
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
}

func combiningCheck(pe *goshmem.PE, calls int) error {
	const maxLen = 40 // 320 bytes of int64
	n := pe.NPEs()
	w := goshmem.TeamWorld(pe)
	back, err := w.SplitStrided(n-1, -1, n, nil)
	if err != nil {
		return err
	}
	src, _ := goshmem.Malloc[int64](pe, maxLen)
	dst, _ := goshmem.Malloc[int64](pe, maxLen)
	fdst, _ := goshmem.Malloc[float64](pe, maxLen)
	all, _ := goshmem.Malloc[int64](pe, maxLen*n)
	fval := func(q, i, c int) float64 { return float64(reducecheck.Contrib(q, i, c)) / 3.7 }
	for c := range calls {
		tm := []*goshmem.Team{w, back}[c/7%2]
		world := make([]int, n)
		for j := range world {
			world[j] = tm.WorldPE(j)
		}
		size := 1 + c*7%maxLen
		me := pe.MyPE()
		switch c % 6 {
		case 0, 3: // int64 sum, max
			for i := range size {
				src[i] = reducecheck.Contrib(me, i, c)
			}
			if c%6 == 0 {
				goshmem.SumReduce(tm, dst[:size], src[:size])
			} else {
				goshmem.MaxReduce(tm, dst[:size], src[:size])
			}
			for i := range size {
				want := reducecheck.Contrib(0, i, c)
				if c%6 == 0 {
					want = 0
				}
				for q := range n {
					if c%6 == 0 {
						want += reducecheck.Contrib(q, i, c)
					} else {
						want = max(want, reducecheck.Contrib(q, i, c))
					}
				}
				if dst[i] != want {
					return fmt.Errorf("PE %d call %d (kind %d, %d elements): [%d] = %d, want %d", me, c, c%6, size, i, dst[i], want)
				}
			}
		case 1: // float64 sum in team order, in place
			for i := range size {
				fdst[i] = fval(me, i, c)
			}
			goshmem.SumReduce(tm, fdst[:size], fdst[:size])
			for i := range size {
				want := fval(world[0], i, c)
				for _, q := range world[1:] {
					want += fval(q, i, c)
				}
				if fdst[i] != want {
					return fmt.Errorf("PE %d call %d float64 sum [%d] = %v, want %v (team order)", me, c, i, fdst[i], want)
				}
			}
		case 2: // the exchange, on the same dropboxes
			size = 1 + size%8
			for i := range size {
				src[i] = int64(me*1000 + i + c)
			}
			goshmem.FCollect(tm, all[:size*n], src[:size])
			for j, q := range world {
				if got, want := all[j*size+size-1], int64(q*1000+size-1+c); got != want {
					return fmt.Errorf("PE %d call %d fcollect block %d = %d, want %d", me, c, j, got, want)
				}
			}
		case 4:
			tm.Sync()
			if c%4 == 0 {
				break
			}
			// Collect (member j contributes j%3+1 elements) and
			// Alltoall (member j sends j*100+c+k to member k), on the
			// same dropboxes.
			cnt := tm.MyPE()%3 + 1
			for i := range cnt {
				src[i] = int64(me*1000 + i + c)
			}
			goshmem.Collect(tm, all[:3*n], src[:cnt])
			at := 0
			for j, q := range world {
				for i := range j%3 + 1 {
					if got, want := all[at], int64(q*1000+i+c); got != want {
						return fmt.Errorf("PE %d call %d collect block %d [%d] = %d, want %d", me, c, j, i, got, want)
					}
					at++
				}
			}
			for k := range n {
				src[k] = int64(tm.MyPE()*100 + c + k)
			}
			goshmem.Alltoall(tm, all[:n], src[:n], 1)
			for j := range n {
				if got, want := all[j], int64(j*100+c+tm.MyPE()); got != want {
					return fmt.Errorf("PE %d call %d alltoall from %d = %d, want %d", me, c, j, got, want)
				}
			}
		case 5:
			root := c % n
			for i := range size {
				src[i] = int64(me*1000 + i + c)
			}
			goshmem.Broadcast(tm, dst[:size], src[:size], root)
			if want := int64(world[root]*1000 + size - 1 + c); dst[size-1] != want {
				return fmt.Errorf("PE %d call %d broadcast from %d: %d, want %d", me, c, root, dst[size-1], want)
			}
		}
	}
	return nil
}
