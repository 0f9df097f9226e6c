// Command ptr compares stores through goshmem.Ptr (shmem_ptr) into
// another PE's heap with goshmem.P and with stores into the PE's own
// heap:
//
//	go run ./cmd/oshrun -n 2 ./bench/ptr [-m [min:]max] [-i N] [-w N] [-f]
//
// Table 1 (always): PE 0 does warm-up, then timed sweeps; a sweep stores
// an int64 (the sweep number) into each of the 64 elements of a
// symmetric []int64, in order. The row is the latency per 8-byte store:
// the time over 64*sweeps, in microseconds.
//
//   - ptr_store: plain stores through r := goshmem.Ptr(pe, x, 1), a slice
//     that points into PE 1's heap (no Quiet: there is nothing to
//     complete)
//   - put: goshmem.P(ctx, &x[j], v, 1) for each element, one ctx.Quiet
//     after the last timed sweep (timed)
//   - local_store: plain stores into x, PE 0's own copy
//
// ptr_store and local_store are timed alternately, 7 times each, and
// the rows are the medians, so that both kinds of store see the same
// CPU frequency and scheduling. A comment line after the table gives
// the figures in ns and the ratio ptr_store/local_store (the goal is
// within 1.2).
//
// Table 2 (only when -m is given): bulk copies of size bytes (a
// []uint8, sizes as for bench/put, iterations scaled with size as
// there). "Ptr copy (us)" is copy(r[:size], src[:size]) with r the Ptr
// of a symmetric buffer on PE 1; "Put (us)" is goshmem.Put of the same
// bytes followed by ctx.Quiet, as in bench/put. Each is the time per
// copy.
//
// PE 1 (and any further PE) only waits in BarrierAll, which separates
// the rows. When PE 1's heap is not mapped into PE 0's process
// (SHMEM_TRANSPORT=cma), Ptr is nil: the program says so on stderr and
// exits with status 1. Defaults: -i 10000 (sweeps), -w 1000. Output
// (PE 0, stdout):
//
//	# OSU-style goshmem Ptr Test
//	# PEs: 2  iterations: 10000  warmup: 1000
//	# Operation     Latency (us)
//	ptr_store                   0.00
//	put                         0.01
//	local_store                 0.00
//	# ns per store: ptr_store 1.87  put 6.70  local_store 1.75  ptr_store/local_store 1.07
//	# Size          Ptr copy (us)  Put (us)
//	1                           0.01            0.02
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations" to table 1
// (only PE 0 times, so min = max = latency) and "Iterations" to table
// 2. The format is the package doc of bench/internal/osu. Needs at
// least 2 PEs.
package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

// elems is the number of int64 stores of a sweep.
const elems = 64

// sweeps does sweeps from..to-1 of plain stores into a: ptr_store and
// local_store run this same machine code, only a differs.
//
// rounds is how many times ptr_store and local_store are timed,
// alternately; the rows are the medians.
const rounds = 7

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

//go:noinline
func sweeps(a []int64, from, to int) {
	for i := from; i < to; i++ {
		v := int64(i)
		for j := range a {
			a[j] = v
		}
	}
}

func main() {
	osu.Main("ptr", "Ptr", 2, osu.LatencyDefaults, func(b *osu.Bench) {
		x := osu.Calloc[int64](b, elems)
		var src, dst []uint8
		if b.SizesSet {
			src = osu.Malloc[uint8](b, b.MaxSize)
			dst = osu.Malloc[uint8](b, b.MaxSize)
			osu.Fill(src, 'a')
			osu.Fill(dst, 'b')
		}
		var r []int64
		var rdst []uint8
		if b.Me == 0 {
			r = goshmem.Ptr(b.PE, x, 1)
			if dst != nil {
				rdst = goshmem.Ptr(b.PE, dst, 1)
			}
			if r == nil || dst != nil && rdst == nil {
				fmt.Fprintf(os.Stderr, "ptr: goshmem.Ptr returned nil: PE 1's heap is not mapped into PE 0's process (transport %s)\n", b.PE.Transport().Name)
				b.PE.GlobalExit(1)
			}
		}
		c, n, w := b.Ctx, b.Iters, b.Warmup

		// time has PE 0 do sweeps(0, w), then time sweeps(w, w+n); it
		// returns the latency per store in us (0 on other PEs).
		time := func(sweeps func(from, to int)) float64 {
			var lat float64
			b.PE.BarrierAll()
			if b.Me == 0 {
				sweeps(0, w)
				t0 := osu.Now()
				sweeps(w, w+n)
				lat = osu.Micros(t0, osu.Now()) / float64(elems*n)
			}
			b.PE.BarrierAll()
			return lat
		}
		// row prints the figure of one operation.
		row := func(name string, lat float64) {
			var st osu.Stats
			if b.Full {
				st = b.Collect(lat, b.Me == 0)
			}
			b.Out.Result(name, lat, st, n)
		}
		ptrStores := func(from, to int) { sweeps(r, from, to) }
		localStores := func(from, to int) { sweeps(x, from, to) }
		// A store costs well under a nanosecond, so one timing is at the
		// mercy of frequency changes and the other PE's scheduling: time
		// the two kinds of store alternately, several times, and report
		// the median of each, so that both see the same conditions.
		var ptrs, locals []float64
		for k := 0; k < rounds; k++ {
			ptrs = append(ptrs, time(ptrStores))
			locals = append(locals, time(localStores))
		}
		ptr, local := median(ptrs), median(locals)
		put := time(func(from, to int) {
			for i := from; i < to; i++ {
				v := int64(i)
				for j := range x {
					goshmem.P(c, &x[j], v, 1)
				}
			}
			c.Quiet()
		})
		b.Out.Columns(osu.Operation, osu.LatencyUs)
		row("ptr_store", ptr)
		row("put", put)
		row("local_store", local)
		ratio := 0.0
		if local > 0 {
			ratio = ptr / local
		}
		b.Out.Comment("ns per store: ptr_store %.2f  put %.2f  local_store %.2f  ptr_store/local_store %.2f",
			ptr*1e3, put*1e3, local*1e3, ratio)
		if b.Me == 0 {
			// Check that the stores landed where they should.
			want := int64(w + n - 1)
			if got := goshmem.G(c, &x[elems-1], 1); got != want {
				panic(fmt.Sprintf("ptr: PE 1 holds %d, want %d", got, want))
			}
		}
		if !b.SizesSet {
			return
		}

		if b.Full {
			b.Out.Header(osu.Size, "Ptr copy (us)", "Put (us)", osu.Iterations)
		} else {
			b.Out.Header(osu.Size, "Ptr copy (us)", "Put (us)")
		}
		for _, size := range b.Sizes() {
			iters, warm := b.ItersFor(size), b.WarmupFor(size)
			var cp, pt float64
			b.PE.BarrierAll()
			if b.Me == 0 {
				d, rd, s := dst[:size], rdst[:size], src[:size]
				for i := 0; i < warm; i++ {
					copy(rd, s)
				}
				t0 := osu.Now()
				for i := 0; i < iters; i++ {
					copy(rd, s)
				}
				cp = osu.Micros(t0, osu.Now()) / float64(iters)
				for i := 0; i < warm; i++ {
					goshmem.Put(c, d, s, 1)
					c.Quiet()
				}
				t0 = osu.Now()
				for i := 0; i < iters; i++ {
					goshmem.Put(c, d, s, 1)
					c.Quiet()
				}
				pt = osu.Micros(t0, osu.Now()) / float64(iters)
			}
			b.PE.BarrierAll()
			if b.Full {
				b.Out.RowIters(osu.Key(size), iters, cp, pt)
			} else {
				b.Out.Row(osu.Key(size), cp, pt)
			}
		}
	})
}
