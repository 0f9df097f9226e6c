// Command hybrid_reduce is the hybrid (PEs x goroutines) reduction
// pattern: goroutines inside each PE compute partial results, the PE
// combines them, and the PEs then reduce hierarchically over teams:
// first inside a domain of PEs that share memory, then among the
// domains' leaders, and finally the leader broadcasts the result back
// inside its domain. The same reduction done flat, with one SumReduce
// over TeamWorld, must give exactly the same vector.
//
//	go run ./cmd/oshrun -n 4 ./examples/hybrid_reduce
//	go run ./cmd/oshrun -n 4 --pes-per-proc 2 ./examples/hybrid_reduce -d 2 -g 2 -i 200
//	go run ./cmd/oshrun -n 8 ./examples/hybrid_reduce -d 0   # domains = TeamShared
//
// Flags:
//
//	-g G   goroutines per PE (default runtime.GOMAXPROCS(0))
//	-d D   PEs per domain (default 2); 0 uses TeamShared as the domain
//	-i I   timed iterations of each reduction (default 100)
//	-n N   values per PE (default 1<<20)
//	-v V   length of the reduced vector (default 64)
//	-seed S
//
// The data: value k of the job (k in [0, NPEs*N); PE p owns
// [p*N, (p+1)*N)) is a 64-bit hash of k and the seed; its top 24 bits
// are added to bin hash%V of the vector. Each of the G goroutines of a
// PE sums one chunk of the PE's range into a private vector, and the
// PE adds those up. Everything is int64, so the sums are exact and the
// result depends neither on G, nor on the domain size, nor on the
// order in which any reduction adds: the hierarchical and the flat
// results must be bit-for-bit equal, and PE 0 also checks them against
// a recomputation of the whole job's data.
//
// The hierarchy. OpenSHMEM's host/leader reduction (Algorithm 2 of
// "OpenSHMEM Teams in SOS") reduces over SHMEM_TEAM_SHARED (or HOST)
// and then over a team of one leader per host. On one node every PE
// shares memory with every other (TeamShared is the whole job and
// TeamLeaders is PE 0 alone), so the program builds the hierarchy
// explicitly: TeamWorld is split into domains of D consecutive PEs with
// SplitStrided (every PE calls the split of every domain with the same
// arguments, as the specification asks, and keeps the one it belongs
// to), the leaders team is the first PE of each domain (SplitStrided
// with stride D). One hierarchical reduction is
//
//	SumReduce(domain, tmp, src)     // inside each domain
//	SumReduce(leaders, tmp, tmp)    // among the domain leaders only
//	Broadcast(domain, dst, tmp, 0)  // the leader's total to its domain
//
// With -d 0 the domain is TeamShared: the PEs that map each other's
// heaps (all the PEs of the host by default, as on a shared-memory node
// of a cluster; each PE alone under SHMEM_TRANSPORT=cma, where no PE
// maps another's heap).
//
// The flat reduction is one SumReduce call over TeamWorld. When
// TeamWorld spans several shared-memory domains (SHMEM_TRANSPORT=cma
// with several processes, or domains simulated with
// GOSHMEM_SIM_DOMAINS) the library reduces hierarchically inside that
// call, and the two timings compare the explicit hierarchy with the
// library's own.
//
// PE 0 prints the result, the compute time, the time per reduction of
// each method (the slowest PE's average over -i iterations), and
// "match" when every PE got the same vector both ways and it equals
// the recomputation; otherwise it prints "MISMATCH" and the job exits
// with status 1.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/goshmem/goshmem"
)

type options struct {
	g, d, iters, n, v int
	seed              uint64
}

func main() {
	var o options
	flag.IntVar(&o.g, "g", runtime.GOMAXPROCS(0), "goroutines per PE")
	flag.IntVar(&o.d, "d", 2, "PEs per domain (0: TeamShared is the domain)")
	flag.IntVar(&o.iters, "i", 100, "timed iterations of each reduction")
	flag.IntVar(&o.n, "n", 1<<20, "values per PE")
	flag.IntVar(&o.v, "v", 64, "length of the reduced vector")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the data")
	flag.Parse()
	if o.g < 1 || o.d < 0 || o.iters < 1 || o.n < 0 || o.v < 1 {
		fmt.Fprintln(os.Stderr, "hybrid_reduce: need -g >= 1, -d >= 0, -i >= 1, -n >= 0, -v >= 1")
		os.Exit(2)
	}
	goshmem.Main(func(pe *goshmem.PE) { run(pe, o) })
}

// mix is SplitMix64's finalizer: a bijective 64-bit hash.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// partial adds the values of global indices [lo, hi) into acc.
func partial(acc []int64, lo, hi int64, seed uint64) {
	s := mix(seed)
	v := uint64(len(acc))
	for k := lo; k < hi; k++ {
		x := mix(uint64(k) ^ s)
		acc[x%v] += int64(x >> 40)
	}
}

// compute sums the values of [lo, hi) into out with g goroutines, each
// on its own chunk and its own private vector, and adds those up.
func compute(out []int64, lo, hi int64, g int, seed uint64) {
	parts := make([][]int64, g)
	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := make([]int64, len(out))
			n := hi - lo
			partial(acc, lo+n*int64(w)/int64(g), lo+n*int64(w+1)/int64(g), seed)
			parts[w] = acc
		}()
	}
	wg.Wait()
	clear(out)
	for _, acc := range parts {
		for i, x := range acc {
			out[i] += x
		}
	}
}

// hierarchy is the two-level team structure.
type hierarchy struct {
	domain  *goshmem.Team // this PE's domain
	leaders *goshmem.Team // the domains' first PEs; nil on the others
	ndom    int           // number of domains
	owned   []*goshmem.Team
	how     string
}

func (h *hierarchy) destroy() {
	for _, t := range h.owned {
		t.Destroy()
	}
}

func must[T any](x T, err error) T {
	if err != nil {
		panic(err)
	}
	return x
}

// buildHierarchy splits TeamWorld into domains of d PEs, or uses
// TeamShared as the domain when d is 0, and makes the leaders team.
func buildHierarchy(pe *goshmem.PE, d int) *hierarchy {
	world := goshmem.TeamWorld(pe)
	n := world.NPEs()
	h := &hierarchy{}
	if d == 0 {
		// TeamShared as the domain. A strided leaders team needs every
		// shared team to be a block of s consecutive PEs starting at a
		// multiple of s; check that all PEs agree.
		shared := goshmem.TeamShared(pe)
		s := shared.NPEs()
		buf := must(goshmem.Malloc[int64](pe, 2))
		buf[0], buf[1] = int64(s), -int64(s)
		if shared.WorldPE(0)%s != 0 {
			buf[0] = -1
		}
		goshmem.MinReduce(world, buf, buf)
		if buf[0] != int64(s) || buf[1] != -int64(s) {
			panic("hybrid_reduce: -d 0 needs shared teams of equal size that are aligned blocks of PEs; use -d D")
		}
		goshmem.Free(pe, buf)
		d = s
		h.domain = shared
		h.how = fmt.Sprintf("TeamShared as the domain (%d PEs)", s)
	} else {
		d = min(d, n)
		// The same calls on every PE (the specification requires equal
		// arguments); each PE keeps the team it belongs to.
		for start := 0; start < n; start += d {
			t := must(world.SplitStrided(start, 1, min(d, n-start), nil))
			if t != nil {
				h.domain = t
				h.owned = append(h.owned, t)
			}
		}
		h.how = fmt.Sprintf("domains of %d PEs (SplitStrided, stride 1)", d)
	}
	h.ndom = (n + d - 1) / d
	h.leaders = must(world.SplitStrided(0, d, h.ndom, nil))
	if h.leaders != nil {
		h.owned = append(h.owned, h.leaders)
	}
	h.how += fmt.Sprintf(", leaders team of %d %s (SplitStrided, stride %d)", h.ndom, map[bool]string{true: "PE", false: "PEs"}[h.ndom == 1], d)
	return h
}

func run(pe *goshmem.PE, o options) {
	me, npes := pe.MyPE(), pe.NPEs()
	world := goshmem.TeamWorld(pe)
	h := buildHierarchy(pe, o.d)
	defer h.destroy()

	src := must(goshmem.Malloc[int64](pe, o.v))  // this PE's combined partial
	tmp := must(goshmem.Malloc[int64](pe, o.v))  // domain, then leaders result
	hier := must(goshmem.Malloc[int64](pe, o.v)) // hierarchical result
	flat := must(goshmem.Malloc[int64](pe, o.v)) // flat result
	stat := must(goshmem.Malloc[int64](pe, 4))   // timings and verdicts

	// Compute: G goroutines per PE, then combined in the PE.
	pe.BarrierAll()
	t0 := time.Now()
	compute(src, int64(me)*int64(o.n), int64(me+1)*int64(o.n), o.g, o.seed)
	tCompute := time.Since(t0)

	hierarchical := func() {
		goshmem.SumReduce(h.domain, tmp, src)
		if h.leaders != nil {
			goshmem.SumReduce(h.leaders, tmp, tmp)
		}
		goshmem.Broadcast(h.domain, hier, tmp, 0)
	}
	flatReduce := func() { goshmem.SumReduce(world, flat, src) }
	timeIt := func(f func()) time.Duration {
		f() // warm-up
		pe.BarrierAll()
		t0 := time.Now()
		for range o.iters {
			f()
		}
		return time.Since(t0) / time.Duration(o.iters)
	}
	tHier := timeIt(hierarchical)
	tFlat := timeIt(flatReduce)

	// Every PE checks its own two results; the slowest PE's timings and
	// the verdicts go to PE 0 with one MaxReduce.
	mismatch := int64(0)
	for i := range hier {
		if hier[i] != flat[i] {
			mismatch = 1
			break
		}
	}
	stat[0], stat[1], stat[2], stat[3] = int64(tCompute), int64(tHier), int64(tFlat), mismatch
	goshmem.MaxReduce(world, stat, stat)
	if me != 0 {
		return
	}

	// PE 0 recomputes the whole job's data as a reference.
	ref := make([]int64, o.v)
	compute(ref, 0, int64(npes)*int64(o.n), o.g, o.seed)
	refOK := true
	total := int64(0)
	for i := range ref {
		refOK = refOK && ref[i] == flat[i]
		total += flat[i]
	}
	fmt.Printf("hybrid_reduce: %d PEs, %d goroutines per PE, %d values per PE, vector of %d int64\n", npes, o.g, o.n, o.v)
	fmt.Printf("teams: TeamShared has %d PEs; %s\n", goshmem.TeamShared(pe).NPEs(), h.how)
	fmt.Printf("compute:      %10.3f ms (goroutine partial sums + combine, slowest PE)\n", float64(stat[0])/1e6)
	fmt.Printf("result:       total %d, bins[0:4] = %v\n", total, flat[:min(4, o.v)])
	fmt.Printf("hierarchical: %10.2f us per reduction (domain SumReduce, leaders SumReduce, domain Broadcast; slowest PE, %d iterations)\n", float64(stat[1])/1e3, o.iters)
	fmt.Printf("flat:         %10.2f us per reduction (TeamWorld SumReduce; slowest PE, %d iterations)\n", float64(stat[2])/1e3, o.iters)
	switch {
	case stat[3] != 0:
		fmt.Println("MISMATCH: the hierarchical and flat results differ on some PE")
	case !refOK:
		fmt.Printf("MISMATCH: the results differ from the recomputation %v\n", ref[:min(4, o.v)])
	default:
		fmt.Println("match")
		return
	}
	pe.GlobalExit(1)
}
