package goshmem_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/goshmem/goshmem"
)

// TestCtxCreateOptions: contexts with every option combination carry
// their options, move data, and Quiet, Fence and Destroy them.
func TestCtxCreateOptions(t *testing.T) {
	opts := []goshmem.CtxOptions{
		0,
		goshmem.CtxSerialized,
		goshmem.CtxPrivate,
		goshmem.CtxNostore,
		goshmem.CtxSerialized | goshmem.CtxPrivate,
		goshmem.CtxPrivate | goshmem.CtxNostore,
		goshmem.CtxSerialized | goshmem.CtxPrivate | goshmem.CtxNostore,
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			runCfg(t, m.cfg, 2, func(p *goshmem.PE) {
				me, other := p.MyPE(), 1-p.MyPE()
				x := mustCalloc[int64](p, len(opts))
				if p.Ctx().Options() != 0 {
					t.Errorf("default context options = %#x, want 0", p.Ctx().Options())
				}
				for i, o := range opts {
					c, err := p.CtxCreate(o)
					if err != nil || c == nil {
						t.Errorf("CtxCreate(%#x) = %v, %v", o, c, err)
						continue
					}
					if c.Options() != o || c.PE() != p {
						t.Errorf("CtxCreate(%#x): Options %#x, PE %p (want %p)", o, c.Options(), c.PE(), p)
					}
					if c == p.Ctx() {
						t.Errorf("CtxCreate(%#x) returned the default context", o)
					}
					// Puts and AMOs on every context, CtxNostore ones
					// too: the option only frees Quiet and Fence from
					// ordering the application's own stores.
					goshmem.P(c, &x[i], int64(100*me+i), other)
					goshmem.AtomicAdd(c, &x[i], 1, other)
					c.Fence()
					c.Quiet()
					p.BarrierAll()
					if got := goshmem.G(c, &x[i], other); got != int64(100*me+i+1) {
						t.Errorf("ctx %#x: G of own store = %d, want %d", o, got, 100*me+i+1)
					}
					got := make([]int64, 1)
					goshmem.Get(c, got, x[i:i+1], me)
					if got[0] != int64(100*other+i+1) {
						t.Errorf("ctx %#x: x[%d] = %d, want %d", o, i, got[0], 100*other+i+1)
					}
					if f := goshmem.AtomicFetch(c, &x[i], me); f != got[0] {
						t.Errorf("ctx %#x: AtomicFetch = %d, want %d", o, f, got[0])
					}
					c.Destroy()
				}
				// The default context works throughout.
				p.Ctx().Quiet()
				p.Ctx().Fence()
			})
		})
	}
}

// TestCtxGoroutines: goroutines of one PE, each with a private
// context, put to distinct parts of the neighbour's buffer at once,
// fence, and raise a per-goroutine flag the neighbour waits for; the
// neighbour then sees all of each goroutine's data and acknowledges it.
// Run with -race.
func TestCtxGoroutines(t *testing.T) {
	const (
		workers = 4
		chunk   = 512
		rounds  = 20
	)
	for _, n := range []int{2, 3} {
		run(t, n, testHeap, func(p *goshmem.PE) {
			me := p.MyPE()
			right, left := (me+1)%n, (me+n-1)%n
			buf := mustCalloc[int64](p, workers*chunk)
			ready := mustCalloc[int64](p, workers) // set by the left PE's workers
			ack := mustCalloc[int64](p, workers)   // set by the right PE's consumers
			total := mustCalloc[int64](p, 1)
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := p.CtxCreate(goshmem.CtxPrivate | goshmem.CtxSerialized)
					if err != nil {
						t.Errorf("CtxCreate: %v", err)
						return
					}
					defer c.Destroy()
					src := make([]int64, chunk)
					for r := 1; r <= rounds; r++ {
						for i := range src {
							src[i] = int64(me<<40 | w<<32 | r<<16 | i)
						}
						// Wait until the neighbour has consumed round r-1.
						goshmem.WaitUntil(p, &ack[w], goshmem.CmpEQ, int64(r-1))
						dst := buf[w*chunk : (w+1)*chunk]
						if r%2 == 0 {
							goshmem.PutNBI(c, dst, src, right)
						} else {
							goshmem.Put(c, dst, src, right)
						}
						goshmem.AtomicAdd(c, &total[0], 1, right)
						c.Fence()
						goshmem.AtomicSet(c, &ready[w], int64(r), right)
						c.Quiet()
					}
				}()
			}
			// The consumer of this PE's buffer (filled by the left PE),
			// one goroutine per worker of the left PE.
			var cw sync.WaitGroup
			for w := 0; w < workers; w++ {
				cw.Add(1)
				go func() {
					defer cw.Done()
					c, _ := p.CtxCreate(goshmem.CtxPrivate)
					defer c.Destroy()
					for r := 1; r <= rounds; r++ {
						goshmem.WaitUntil(p, &ready[w], goshmem.CmpEQ, int64(r))
						for i, v := range buf[w*chunk : (w+1)*chunk] {
							if want := int64(left<<40 | w<<32 | r<<16 | i); v != want {
								t.Errorf("PE %d worker %d round %d: element %d = %#x, want %#x", me, w, r, i, v, want)
								break
							}
						}
						// Hand the slot back to the producer.
						goshmem.AtomicSet(c, &ack[w], int64(r), left)
					}
				}()
			}
			wg.Wait()
			cw.Wait()
			p.BarrierAll()
			if total[0] != workers*rounds {
				t.Errorf("PE %d: %d puts counted, want %d", me, total[0], workers*rounds)
			}
		})
	}
}

var allocSink []byte

// TestZeroAllocs: the data path allocates nothing.
func TestZeroAllocs(t *testing.T) {
	run(t, 2, testHeap, func(p *goshmem.PE) {
		x := mustCalloc[int64](p, 8)
		u := mustCalloc[uint32](p, 2)
		if p.MyPE() == 0 {
			c := p.Ctx()
			cc, _ := p.CtxCreate(goshmem.CtxPrivate)
			src := make([]int64, 1)
			dst := make([]int64, 1)
			var sink int64
			var fetched int64
			cases := []struct {
				name string
				fn   func()
			}{
				{"Put 8 bytes", func() { goshmem.Put(c, x[:1], src, 1) }},
				{"Get 8 bytes", func() { goshmem.Get(c, dst, x[:1], 1) }},
				{"P", func() { goshmem.P(c, &x[1], 42, 1) }},
				{"G", func() { sink += goshmem.G(c, &x[1], 1) }},
				{"AtomicFetchAdd", func() { sink += goshmem.AtomicFetchAdd(c, &x[2], 1, 1) }},
				{"AtomicCompareSwap", func() { sink += goshmem.AtomicCompareSwap(c, &x[3], 0, 1, 1) }},
				{"AtomicFetchAdd uint32", func() { sink += int64(goshmem.AtomicFetchAdd(c, &u[0], 1, 1)) }},
				{"AtomicFetchAddNBI", func() { goshmem.AtomicFetchAddNBI(c, &fetched, &x[2], 1, 1) }},
				{"Quiet", func() { c.Quiet() }},
				{"Fence", func() { c.Fence() }},
				{"Put+Quiet on a created context", func() { goshmem.Put(cc, x[:1], src, 1); cc.Quiet() }},
				{"IPut", func() { goshmem.IPut(c, x[4:8], src, 2, 1, 1, 1) }},
				{"Test", func() { goshmem.Test(p, &x[0], goshmem.CmpGE, 0) }},
				{"WaitUntil satisfied", func() { goshmem.WaitUntil(p, &x[0], goshmem.CmpGE, 0) }},
				{"Ptr", func() { goshmem.Ptr(p, x, 1)[5] = 1 }},
			}
			for _, tc := range cases {
				if a := testing.AllocsPerRun(1000, tc.fn); a != 0 {
					t.Errorf("%s: %v allocations per call, want 0", tc.name, a)
				}
			}
			// The measurement itself sees allocations.
			if a := testing.AllocsPerRun(100, func() { allocSink = make([]byte, 64) }); a != 1 {
				t.Errorf("control: %v allocations per make, want 1", a)
			}
			cc.Destroy()
			_ = sink
		}
		p.BarrierAll()
	})
}

// TestQuietOrdersNBI: data put with PutNBI on a created context (or, for
// opts -1, the default context and pe.Quiet, shmem_quiet) is in place
// when a flag set after Quiet on that context is seen.
func TestQuietOrdersNBI(t *testing.T) {
	const words = 1 << 14
	for _, o := range []goshmem.CtxOptions{0, goshmem.CtxPrivate, goshmem.CtxSerialized, ^goshmem.CtxOptions(0)} {
		t.Run(fmt.Sprintf("opts=%#x", o), func(t *testing.T) {
			run(t, 2, testHeap, func(p *goshmem.PE) {
				buf := mustCalloc[uint64](p, words)
				flag := mustCalloc[uint64](p, 1)
				if p.MyPE() == 0 {
					src := make([]uint64, words)
					for i := range src {
						src[i] = uint64(i) * 0x9e3779b97f4a7c15
					}
					if o == ^goshmem.CtxOptions(0) {
						goshmem.PutNBI(p.Ctx(), buf, src, 1)
						p.Quiet()
						goshmem.AtomicSet(p.Ctx(), &flag[0], 1, 1)
						return
					}
					c, _ := p.CtxCreate(o)
					goshmem.PutNBI(c, buf, src, 1)
					c.Quiet()
					goshmem.AtomicSet(c, &flag[0], 1, 1)
					c.Destroy()
				} else {
					goshmem.WaitUntil(p, &flag[0], goshmem.CmpEQ, 1)
					for i, v := range buf {
						if v != uint64(i)*0x9e3779b97f4a7c15 {
							t.Errorf("word %d = %#x after the flag", i, v)
							break
						}
					}
				}
			})
		})
	}
}

// TestNilCtx: a nil *Ctx is SHMEM_CTX_INVALID. Quiet, Fence and Destroy
// on it do nothing, as the specification says; PE and Options report
// no PE and no options; RMA, AMOs and signals on it are programmer
// errors that panic naming the routine and the nil context, in every
// data-path mode, without disturbing the job.
func TestNilCtx(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			runCfg(t, m.cfg, 2, func(p *goshmem.PE) {
				var c *goshmem.Ctx
				c.Quiet()
				c.Fence()
				c.Destroy()
				if c.PE() != nil || c.Options() != 0 {
					t.Errorf("nil context: PE %p, Options %#x; want nil, 0", c.PE(), c.Options())
				}
				other := 1 - p.MyPE()
				x := mustCalloc[int64](p, 4)
				sig := mustCalloc[uint64](p, 1)
				buf := make([]int64, 4)
				var f int64
				for _, op := range []struct {
					routine string
					fn      func()
				}{
					{"Put", func() { goshmem.Put(c, x, buf, other) }},
					{"Get", func() { goshmem.Get(c, buf, x, other) }},
					{"P", func() { goshmem.P(c, &x[0], 1, other) }},
					{"G", func() { goshmem.G(c, &x[0], other) }},
					{"PutNBI", func() { goshmem.PutNBI(c, x, buf, other) }},
					{"GetBytes", func() { goshmem.GetBytes(c, make([]byte, 8), byteView(x[:1]), other) }},
					{"IPut", func() { goshmem.IPut(c, x, buf, 2, 2, 2, other) }},
					{"IGet", func() { goshmem.IGet(c, buf, x, 1, 1, 0, other) }},
					{"AtomicFetchAdd", func() { goshmem.AtomicFetchAdd(c, &x[1], 1, other) }},
					{"AtomicSet", func() { goshmem.AtomicSet(c, &x[1], 1, other) }},
					{"AtomicCompareSwapNBI", func() { goshmem.AtomicCompareSwapNBI(c, &f, &x[1], 0, 1, other) }},
					{"PutSignal", func() { goshmem.PutSignal(c, x, buf, &sig[0], 1, goshmem.SignalSet, other) }},
				} {
					v := panicOf(op.fn)
					if v == nil {
						t.Errorf("%s on a nil context did not panic", op.routine)
						continue
					}
					checkContains(t, op.routine+" on a nil context", fmt.Sprint(v), "goshmem."+op.routine+":", "context is nil", "SHMEM_CTX_INVALID")
				}
				// Nothing reached the peer; the job goes on.
				p.BarrierAll()
				for i, v := range x {
					if v != 0 {
						t.Errorf("PE %d: x[%d] = %d after operations on a nil context", p.MyPE(), i, v)
					}
				}
				p.BarrierAll()
				goshmem.P(p.Ctx(), &x[0], 7, other)
				p.BarrierAll()
				if x[0] != 7 {
					t.Errorf("PE %d: the default context does not work after the nil-context panics", p.MyPE())
				}
			})
		})
	}
}

// TestDestroyedCtx: Quiet, Fence and Destroy on a destroyed context
// (unlike on the nil one) panic naming the routine; Options still
// reports the options it was created with.
func TestDestroyedCtx(t *testing.T) {
	run(t, 1, testHeap, func(p *goshmem.PE) {
		c, err := p.CtxCreate(goshmem.CtxNostore)
		if err != nil {
			t.Fatal(err)
		}
		c.Destroy()
		if c.Options() != goshmem.CtxNostore {
			t.Errorf("destroyed context: Options %#x, want %#x", c.Options(), goshmem.CtxNostore)
		}
		for _, op := range []struct {
			routine string
			fn      func()
		}{{"Quiet", c.Quiet}, {"Fence", c.Fence}, {"CtxDestroy", c.Destroy}} {
			checkContains(t, op.routine, fmt.Sprint(panicOf(op.fn)), "goshmem."+op.routine, "destroyed")
		}
	})
}
