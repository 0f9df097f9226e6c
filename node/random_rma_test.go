package node_test

// Random one-sided traffic checked against a model: every PE issues a
// random mix of puts (blocking, NBI, single elements, strided, with a
// signal, direct stores through Ptr), AMOs and gets, of random sizes
// from 1 byte to 256 KiB (so both sides of the small-put paths, the
// shared copies from 64 KiB and, across hosts, frames of every size),
// on random targets and on four contexts (the default one, a created
// one, a private one, and one of a team that numbers the PEs
// backwards). Every PE can replay every PE's choices (each PE's
// generator is seeded by its number and the round), so every PE knows
// what every heap must hold: it checks its own heap after each round's
// barrier, the data of every PutSignal as soon as the signals have
// arrived, and other PEs' heaps through gets.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

const (
	rrSlot  = 320 << 10 // bytes of one writer's slot on each PE
	rrCtrs  = 8         // counters per PE (AtomicAdd, FetchAdd, Inc, FetchAddNBI)
	rrBits  = 4         // words per PE for AtomicOr / FetchOr
	rrOps   = 24        // operations per PE and round
	rrCtxs  = 4         // default, created, private, team (backwards)
	rrLarge = 256 << 10 // the largest put
)

// rrKind is the kind of a random operation.
type rrKind int

const (
	rrPut rrKind = iota
	rrPutNBI
	rrP
	rrIPut
	rrPutSignal
	rrPutSignalNBI
	rrPtr
	rrAdd
	rrFetchAdd
	rrInc
	rrFetchAddNBI
	rrOr
	rrFetchOr
	rrKinds
)

// rrOp is one operation of writer w in a round: the target PE q, the
// context, and for puts the first byte in w's slot on q, the number of
// elements and the strides (IPut); for AMOs the word and the value.
type rrOp struct {
	kind         rrKind
	q, ctx       int
	off, n       int
	dst, src     int // IPut strides
	idx          int
	v            uint64
	contentRound int
}

// rrByte is byte i of the content writer w puts with its k-th operation
// of round r.
func rrByte(w, r, k, i int) byte {
	x := uint32(w*7919+r*104729+k*1299709) + uint32(i)*2654435761
	return byte(x>>24) ^ byte(x>>11)
}

// rrPlan replays writer w's operations in round r on a job of n PEs:
// puts of each round go to disjoint parts of w's slot on each target,
// so that no two are ordered by anything but a round's barrier.
func rrPlan(w, r, n int) []rrOp {
	g := rand.New(rand.NewPCG(uint64(w)+1, uint64(r)+1))
	cursor := make([]int, n)
	ops := make([]rrOp, 0, rrOps)
	for k := 0; k < rrOps; k++ {
		o := rrOp{kind: rrKind(g.IntN(int(rrKinds))), q: g.IntN(n), ctx: g.IntN(rrCtxs)}
		switch o.kind {
		case rrAdd, rrFetchAdd, rrInc, rrFetchAddNBI:
			o.idx, o.v = g.IntN(rrCtrs), uint64(1+g.IntN(1000))
			if o.kind == rrInc {
				o.v = 1
			}
		case rrOr, rrFetchOr:
			o.idx, o.v = g.IntN(rrBits), 1<<g.IntN(64)
		default:
			var size int
			switch p := g.IntN(20); {
			case p < 10:
				size = 1 + g.IntN(64)
			case p < 15:
				size = 65 + g.IntN(4096-64)
			case p < 18:
				size = 4097 + g.IntN(64<<10-4096)
			default:
				size = 64<<10 + g.IntN(rrLarge-64<<10+1)
			}
			o.n, o.dst, o.src = size, 1, 1
			switch o.kind {
			case rrP:
				o.n = 1
			case rrIPut:
				o.n = 1 + size/8
				o.dst, o.src = 1+g.IntN(4), 1+g.IntN(3)
			}
			span := (o.n-1)*o.dst + 1
			if cursor[o.q]+span > rrSlot {
				o.kind = rrInc // the slot on q is full this round
				o.idx, o.v = g.IntN(rrCtrs), 1
				break
			}
			o.off = cursor[o.q]
			cursor[o.q] += span + g.IntN(16) // gaps keep earlier rounds' bytes
		}
		ops = append(ops, o)
	}
	return ops
}

// rrSource is the source buffer of put k of writer w in round r: its
// content at the positions the put reads (stride src).
func rrSource(buf []byte, o rrOp, w, r, k int) []byte {
	need := (o.n-1)*o.src + 1
	s := buf[:need]
	for i := range o.n {
		s[i*o.src] = rrByte(w, r, k, i)
	}
	return s
}

// rrModel is what every heap holds after some rounds: data[q][w] is
// writer w's slot on PE q, ctrs and bits PE q's words.
type rrModel struct {
	data [][][]byte
	ctrs [][]uint64
	bits [][]uint64
	sigs [][]uint64 // sigs[q][w]: the sum of w's signals into q
}

func newRRModel(n int) *rrModel {
	m := &rrModel{data: make([][][]byte, n), ctrs: make([][]uint64, n), bits: make([][]uint64, n), sigs: make([][]uint64, n)}
	for q := range n {
		m.data[q] = make([][]byte, n)
		for w := range n {
			m.data[q][w] = make([]byte, rrSlot)
		}
		m.ctrs[q], m.bits[q], m.sigs[q] = make([]uint64, rrCtrs), make([]uint64, rrBits), make([]uint64, n)
	}
	return m
}

// apply adds writer w's operations of round r to the model.
func (m *rrModel) apply(w, r int, ops []rrOp) {
	for k, o := range ops {
		switch o.kind {
		case rrAdd, rrFetchAdd, rrInc, rrFetchAddNBI:
			m.ctrs[o.q][o.idx] += o.v
		case rrOr, rrFetchOr:
			m.bits[o.q][o.idx] |= o.v
		default:
			slot := m.data[o.q][w]
			for i := range o.n {
				slot[o.off+i*o.dst] = rrByte(w, r, k, i)
			}
			if o.kind == rrPutSignal || o.kind == rrPutSignalNBI {
				m.sigs[o.q][w] += uint64(k + 1)
			}
		}
	}
}

func init() {
	scenarios["rma-random"] = scenarioRandomRMA
}

func scenarioRandomRMA(pe *goshmem.PE) {
	me, n := pe.MyPE(), pe.NPEs()
	rounds := testRounds(8)
	data, err := goshmem.Calloc[byte](pe, n*rrSlot)
	if err != nil {
		fail(pe, "Calloc: %v", err)
	}
	ctrs, _ := goshmem.Calloc[uint64](pe, rrCtrs)
	bits, _ := goshmem.Calloc[uint64](pe, rrBits)
	sigs, _ := goshmem.Calloc[uint64](pe, n)
	w := goshmem.TeamWorld(pe)
	back, err := w.SplitStrided(n-1, -1, n, nil) // team PE i is world PE n-1-i
	if err != nil || back == nil {
		fail(pe, "SplitStrided backwards: %v", err)
	}
	var ctxs [rrCtxs]*goshmem.Ctx
	ctxs[0] = pe.Ctx()
	if ctxs[1], err = pe.CtxCreate(0); err != nil {
		fail(pe, "CtxCreate: %v", err)
	}
	if ctxs[2], err = pe.CtxCreate(goshmem.CtxPrivate); err != nil {
		fail(pe, "CtxCreate private: %v", err)
	}
	if ctxs[3], err = back.CtxCreate(0); err != nil {
		fail(pe, "team CtxCreate: %v", err)
	}
	target := func(c, q int) int { // the PE number context c takes for world PE q
		if c == 3 {
			return n - 1 - q
		}
		return q
	}
	model := newRRModel(n)
	src := make([]byte, (rrLarge-1)*3+1)
	fetched := make([]uint64, rrOps)
	g := rand.New(rand.NewPCG(uint64(me)+1000, 7))
	for r := 0; r < rounds; r++ {
		ops := rrPlan(me, r, n)
		before := make([][]uint64, n) // the counters before this round
		for q := range n {
			before[q] = append([]uint64(nil), model.ctrs[q]...)
		}
		for k, o := range ops {
			c, q := ctxs[o.ctx], target(o.ctx, o.q)
			switch o.kind {
			case rrAdd:
				goshmem.AtomicAdd(c, &ctrs[o.idx], o.v, q)
			case rrInc:
				goshmem.AtomicInc(c, &ctrs[o.idx], q)
			case rrFetchAdd:
				fetched[k] = goshmem.AtomicFetchAdd(c, &ctrs[o.idx], o.v, q)
			case rrFetchAddNBI:
				goshmem.AtomicFetchAddNBI(c, &fetched[k], &ctrs[o.idx], o.v, q)
			case rrOr:
				goshmem.AtomicOr(c, &bits[o.idx], o.v, q)
			case rrFetchOr:
				if got := goshmem.AtomicFetchOr(c, &bits[o.idx], o.v, q); got&^model.bitsAfter(o.q, o.idx, r, n) != 0 {
					fail(pe, "round %d op %d: AtomicFetchOr on PE %d word %d fetched %#x, bits nobody set by now", r, k, o.q, o.idx, got)
				}
			default:
				s := rrSource(src, o, me, r, k)
				slot := data[me*rrSlot : (me+1)*rrSlot]
				d := slot[o.off : o.off+(o.n-1)*o.dst+1]
				switch o.kind {
				case rrPut:
					goshmem.Put(c, d, s, q)
				case rrPutNBI:
					goshmem.PutNBI(c, d, s, q)
				case rrP:
					goshmem.P(c, &d[0], s[0], q)
				case rrIPut:
					goshmem.IPut(c, d, s, o.dst, o.src, o.n, q)
				case rrPutSignal:
					goshmem.PutSignal(c, d, s, &sigs[me], uint64(k+1), goshmem.SignalAdd, q)
				case rrPutSignalNBI:
					goshmem.PutSignalNBI(c, d, s, &sigs[me], uint64(k+1), goshmem.SignalAdd, q)
				case rrPtr:
					if p := goshmem.Ptr(pe, d, o.q); p != nil {
						copy(p, s)
					} else {
						goshmem.Put(c, d, s, q)
					}
				}
			}
		}
		for _, c := range ctxs {
			c.Quiet()
		}
		for q := range n {
			model.apply(q, r, rrPlan(q, r, n))
		}
		// The signals: once every writer's signal sum has arrived,
		// the data of its PutSignals of this round must be here.
		for wr := range n {
			goshmem.SignalWaitUntil(pe, &sigs[wr], goshmem.CmpGE, model.sigs[me][wr])
			if got := goshmem.SignalFetch(pe, &sigs[wr]); got != model.sigs[me][wr] {
				fail(pe, "round %d: signal of PE %d is %d, want %d", r, wr, got, model.sigs[me][wr])
			}
			for k, o := range rrPlan(wr, r, n) {
				if (o.kind != rrPutSignal && o.kind != rrPutSignalNBI) || o.q != me {
					continue
				}
				for i := range o.n {
					if b := data[wr*rrSlot+o.off+i]; b != rrByte(wr, r, k, i) {
						fail(pe, "round %d: PutSignal %d of PE %d (%d bytes at %d) delivered its signal before its byte %d: %#x, want %#x", r, k, wr, o.n, o.off, i, b, rrByte(wr, r, k, i))
					}
				}
			}
		}
		for k, o := range ops {
			if o.kind == rrFetchAdd || o.kind == rrFetchAddNBI {
				lo, hi := before[o.q][o.idx], model.ctrs[o.q][o.idx]-o.v
				if fetched[k] < lo || fetched[k] > hi {
					fail(pe, "round %d op %d: fetch-add of %d on PE %d counter %d fetched %d, outside [%d, %d]", r, k, o.v, o.q, o.idx, fetched[k], lo, hi)
				}
			}
		}
		pe.BarrierAll()
		for wr := range n {
			want := model.data[me][wr]
			got := data[wr*rrSlot : (wr+1)*rrSlot]
			for i := range want {
				if got[i] != want[i] {
					fail(pe, "round %d: byte %d of PE %d's slot is %#x, want %#x", r, i, wr, got[i], want[i])
				}
			}
		}
		for i := range rrCtrs {
			if ctrs[i] != model.ctrs[me][i] {
				fail(pe, "round %d: counter %d is %d, want %d", r, i, ctrs[i], model.ctrs[me][i])
			}
		}
		for i := range rrBits {
			if bits[i] != model.bits[me][i] {
				fail(pe, "round %d: bit word %d is %#x, want %#x", r, i, bits[i], model.bits[me][i])
			}
		}
		// Other PEs' heaps, through gets of random parts.
		got := make([]byte, rrLarge)
		for range 12 {
			q, wr, ci := g.IntN(n), g.IntN(n), g.IntN(rrCtxs)
			c, tq := ctxs[ci], target(ci, q)
			size := 1 + g.IntN(64)
			if g.IntN(4) == 0 {
				size = 1 + g.IntN(rrLarge)
			}
			off := g.IntN(rrSlot - size + 1)
			sym := data[wr*rrSlot+off : wr*rrSlot+off+size]
			want := model.data[q][wr][off : off+size]
			switch g.IntN(4) {
			case 0:
				goshmem.Get(c, got[:size], sym, tq)
			case 1:
				goshmem.GetNBI(c, got[:size], sym, tq)
				c.Quiet()
			case 2:
				st := 1 + g.IntN(3)
				m := 1 + (size-1)/st
				goshmem.IGet(c, got[:m], sym, 1, st, m, tq)
				for i := range m {
					if got[i] != want[i*st] {
						fail(pe, "round %d: IGet from PE %d (PE %d's slot, at %d, stride %d) element %d is %#x, want %#x", r, q, wr, off, st, i, got[i], want[i*st])
					}
				}
				continue
			case 3:
				got[0] = goshmem.G(c, &sym[0], tq)
				size = 1
			}
			for i := range size {
				if got[i] != want[i] {
					fail(pe, "round %d: get of %d bytes from PE %d (PE %d's slot, at %d): byte %d is %#x, want %#x", r, size, q, wr, off, i, got[i], want[i])
				}
			}
		}
		for q := range n {
			if v := goshmem.AtomicFetch(ctxs[1], &ctrs[0], q); v != model.ctrs[q][0] {
				fail(pe, "round %d: AtomicFetch of PE %d's counter 0 is %d, want %d", r, q, v, model.ctrs[q][0])
			}
		}
		pe.BarrierAll() // nobody writes the next round before every get of this one
	}
	for _, c := range ctxs[1:] {
		c.Destroy()
	}
	back.Destroy()
	fmt.Printf("PE %d ok random rma\n", me)
}

// bitsAfter is word idx of PE q's bits once every PE has made its
// operations of round r (an upper bound of what a fetch may see then).
func (m *rrModel) bitsAfter(q, idx, r, n int) uint64 {
	v := m.bits[q][idx]
	for w := range n {
		for _, o := range rrPlan(w, r, n) {
			if (o.kind == rrOr || o.kind == rrFetchOr) && o.q == q && o.idx == idx {
				v |= o.v
			}
		}
	}
	return v
}

// TestMultiProcessRandomRMA runs the random traffic on one host: PEs in
// processes that map each other, goroutine PEs mixed in, through CMA,
// and with SHMEM_DEBUG's checks.
func TestMultiProcessRandomRMA(t *testing.T) {
	runJobCases(t, "rma-random", "ok random rma", []jobCase{
		{"4x1-xpmem", 4, 1, nil},
		{"5x2-mixed", 5, 2, nil},
		{"3x1-cma", 3, 1, []string{"SHMEM_TRANSPORT=cma"}},
		{"3x1-debug", 3, 1, []string{"SHMEM_DEBUG=1"}},
		{"8x4-oversubscribed", 8, 4, nil},
	})
	runJobCases(t, "lock-contend", "ok lock contend", []jobCase{
		{"lock-4x1", 4, 1, nil},
		{"lock-3x1-cma", 3, 1, []string{"SHMEM_TRANSPORT=cma"}},
		{"lock-6x3", 6, 3, nil},
	})
}

// testRounds is GOSHMEM_TEST_ROUNDS, the rounds of a random scenario
// (longer runs by hand), or def.
func testRounds(def int) int {
	if n, err := strconv.Atoi(os.Getenv("GOSHMEM_TEST_ROUNDS")); err == nil {
		return n
	}
	return def
}

// jobCase is a job of npes PEs, ppp per process, with env.
type jobCase struct {
	name      string
	npes, ppp int
	env       []string
}

// runJobCases runs scenario as each case's job (a subtest each): it must
// end well, every PE printing want.
func runJobCases(t *testing.T, scenario, want string, cases []jobCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runJob(t, scenario, tc.npes, tc.ppp, false, tc.env...)
			if r.err != nil || r.code != 0 {
				t.Fatalf("code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
			}
			wantOK(t, r.stdout, tc.npes, want)
			t.Log(r.stdout)
		})
	}
}

// TestRRPlan checks the generator itself: a plan is the same when
// replayed, and its puts of a round stay inside the slot and never
// overlap each other on one target (the test relies on both).
func TestRRPlan(t *testing.T) {
	for w := range 5 {
		for r := range 20 {
			a, b := rrPlan(w, r, 5), rrPlan(w, r, 5)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("plan of PE %d round %d differs on replay", w, r)
			}
			used := make([][]bool, 5)
			for q := range used {
				used[q] = make([]bool, rrSlot)
			}
			for k, o := range a {
				if o.kind >= rrAdd {
					continue
				}
				for i := range o.n {
					at := o.off + i*o.dst
					if at >= rrSlot || used[o.q][at] {
						t.Fatalf("PE %d round %d op %d writes byte %d of its slot on PE %d twice or outside", w, r, k, at, o.q)
					}
					used[o.q][at] = true
				}
			}
		}
	}
}

// TestRandomRMAInProcess runs the random traffic among goroutine PEs of
// this process (under -race in CI).
func TestRandomRMAInProcess(t *testing.T) {
	if err := goshmem.RunLocalConfig(node.Config{HeapSize: 8 << 20}, 4, scenarioRandomRMA); err != nil {
		t.Fatal(err)
	}
}

func init() {
	// amo-contend: every PE adds 1 to one counter on each PE, 4000
	// times, fetching every other time: under SHMEM_TRANSPORT=cma the
	// host's PEs emulate their AMOs under the target's lock, and the
	// other hosts' AMOs, which the target's leader applies, must take
	// the same lock (before, counts were lost).
	scenarios["amo-contend"] = func(pe *goshmem.PE) {
		const adds = 4000
		me, n := pe.MyPE(), pe.NPEs()
		ctr, _ := goshmem.Calloc[int64](pe, 1)
		c := pe.Ctx()
		for i := range adds {
			for k := range n {
				q := (me + k) % n
				if i%2 == 0 {
					goshmem.AtomicAdd(c, &ctr[0], 1, q)
				} else {
					goshmem.AtomicFetchAdd(c, &ctr[0], 1, q)
				}
			}
		}
		pe.BarrierAll()
		if ctr[0] != int64(n*adds) {
			fail(pe, "counter %d, want %d: AMOs were not atomic", ctr[0], n*adds)
		}
		fmt.Printf("PE %d ok amo contend\n", me)
	}
}

func init() {
	// lock-contend: every PE increments a counter on the last PE by a
	// G and a P inside a lock, 300 times: the lock excludes, and
	// ClearLock completes the P before the next owner's G (across
	// hosts, a put not yet applied would lose increments).
	scenarios["lock-contend"] = func(pe *goshmem.PE) {
		const rounds = 300
		me, n := pe.MyPE(), pe.NPEs()
		lock, _ := goshmem.Calloc[int64](pe, 1)
		ctr, _ := goshmem.Calloc[int64](pe, 1)
		c, target := pe.Ctx(), n-1
		for range rounds {
			pe.SetLock(&lock[0])
			v := goshmem.G(c, &ctr[0], target)
			goshmem.P(c, &ctr[0], v+1, target)
			pe.ClearLock(&lock[0])
		}
		pe.BarrierAll()
		if me == target && ctr[0] != int64(n*rounds) {
			fail(pe, "counter %d, want %d: the lock did not exclude, or ClearLock did not complete the put", ctr[0], n*rounds)
		}
		fmt.Printf("PE %d ok lock contend\n", me)
	}
}
