package goshmem_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/mem"
)

// noise returns a function that returns n bytes that differ with
// seed (0-15) and position: windows of one random buffer of n+2048
// bytes, made once, so that tests under -race do not spend their time
// in byte loops.
func noise(n int) func(seed, m int) []byte {
	r := rand.New(rand.NewPCG(10, 6))
	buf := make([]byte, (n+16*129+7)&^7)
	for i := 0; i < len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], r.Uint64())
	}
	return func(seed, m int) []byte { return buf[seed*128+seed : seed*128+seed+m] }
}

// TestRMALargeCopies puts and gets messages from below the copy
// engine's threshold (mem.LargeCopy) to above its non-temporal one, at
// byte offsets that misalign source and destination, and checks every
// byte of the destination, the bytes around the message included (the
// engine's head and tail stores must stay inside it). The size just
// below the non-temporal threshold goes through the band where each
// PE's copy engine chooses its kernel by timing (mem.Tuner,
// SHMEM_COPY_ADAPT); its first copies there are temporal (the first
// burst), and internal/mem's TestTunerCopies checks both kernels in
// the band.
func TestRMALargeCopies(t *testing.T) {
	nt := int(mem.DefaultCopyPlan().NTThreshold)
	sizes := []int{mem.LargeCopy - 1, mem.LargeCopy, mem.LargeCopy + 1, 1<<20 + 13}
	if nt > 0 {
		sizes = append(sizes, nt-1, nt+65)
	}
	maxN := 0
	for _, n := range sizes {
		maxN = max(maxN, n)
	}
	const guard = 128
	size := maxN + 2*guard
	pattern := noise(size)
	run(t, 2, int64(size)+1<<20, func(p *goshmem.PE) {
		c := p.Ctx()
		me := p.MyPE()
		other := 1 - me
		buf := mustMalloc[byte](p, size)
		want := make([]byte, size)
		local := make([]byte, size)
		for _, n := range sizes {
			for _, off := range [][2]int{{0, 0}, {1, 0}, {0, 63}, {37, 5}} {
				so, do := off[0], off[1]
				what := fmt.Sprintf("n %d, src offset %d, dst offset %d", n, so, do)
				// Put: my pattern into the other PE's buf at guard+do.
				copy(buf, pattern(15, size))
				p.BarrierAll()
				goshmem.Put(c, buf[guard+do:guard+do+n], pattern(me, n+so)[so:], other)
				p.BarrierAll()
				copy(want, pattern(15, size))
				copy(want[guard+do:], pattern(other, n+so)[so:])
				if !bytes.Equal(buf, want) {
					t.Errorf("PE %d: Put %s: destination differs", me, what)
				}
				p.BarrierAll()
				// Get: the other PE's buf into a local buffer.
				copy(buf, pattern(me+10, size))
				p.BarrierAll()
				copy(local, pattern(14, size))
				goshmem.Get(c, local[do:do+n], buf[guard+so:guard+so+n], other)
				copy(want, pattern(14, size))
				copy(want[do:do+n], pattern(other+10, size)[guard+so:])
				if !bytes.Equal(local, want) {
					t.Errorf("PE %d: Get %s: destination differs", me, what)
				}
				p.BarrierAll()
			}
		}
	})
}

// TestCollectivesLargeCopies runs Broadcast, FCollect, Collect,
// Alltoall and SumReduce on vectors larger than mem.LargeCopy, whose
// data the copy engine moves, with eight lengths in a row (block
// offsets at every multiple of 8 bytes modulo 64), and checks the
// results.
func TestCollectivesLargeCopies(t *testing.T) {
	const base = mem.LargeCopy / 8 * 3 // int64 elements: 192 KiB
	run(t, 3, 16<<20, func(p *goshmem.PE) {
		for n := base; n < base+8; n++ {
			collectivesLarge(t, p, n)
		}
	})
}

func collectivesLarge(t *testing.T, p *goshmem.PE, n int) {
	w := goshmem.TeamWorld(p)
	me, np := p.MyPE(), p.NPEs()
	// Every byte of every value differs from the zeros dst starts with.
	val := func(pe, i int) int64 {
		return int64((uint64(pe)+1)*0x0101010101010101 + uint64(i)*0x9E3779B97F4A7C15 | 0x8080808080808080)
	}
	src := mustMalloc[int64](p, n*np)
	dst := mustMalloc[int64](p, n*np)
	defer goshmem.Free(p, src)
	defer goshmem.Free(p, dst)
	fill := func() {
		for i := range src {
			src[i] = val(me, i)
		}
		clear(dst)
		p.BarrierAll()
	}
	check := func(op string, i int, want int64) bool {
		if dst[i] != want {
			t.Errorf("PE %d: n %d: %s: dst[%d] = %d, want %d", me, n, op, i, dst[i], want)
			return false
		}
		return true
	}
	fill()
	goshmem.Broadcast(w, dst[:n], src[:n], 1)
	for i := 0; i < n && check("Broadcast", i, val(1, i)); i++ {
	}
	fill()
	goshmem.FCollect(w, dst, src[:n])
	for i := 0; i < n*np && check("FCollect", i, val(i/n, i%n)); i++ {
	}
	fill()
	goshmem.Collect(w, dst, src[:n])
	for i := 0; i < n*np && check("Collect", i, val(i/n, i%n)); i++ {
	}
	fill()
	goshmem.Alltoall(w, dst, src, n)
	for i := 0; i < n*np && check("Alltoall", i, val(i/n, me*n+i%n)); i++ {
	}
	fill()
	goshmem.SumReduce(w, dst[:n], src[:n])
	for i := 0; i < n && check("SumReduce", i, val(0, i)+val(1, i)+val(2, i)); i++ {
	}
	p.BarrierAll()
}
