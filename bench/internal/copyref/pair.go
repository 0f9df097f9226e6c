package copyref

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/wait"
)

// Two cores copy one buffer: goshmem's puts and gets from
// SHMEM_COPY_SHARE bytes up are copied by the caller and the partner
// that waits meanwhile, so a lone copy is no bound for them. A split
// copy is the bare form of that: the timing PE asks its partner to
// take part through one request word, both copy, and the timing PE
// waits for the partner's answer word, with nothing else between them.
// Two ways of splitting, each with one kernel, temporal (-t) or
// streaming (-nt), as mem.CopyKind does for a shared copy's chunks:
//
//   - split: the partner copies the second half (cut at a cache line),
//     the timing PE the first;
//   - chunks: both claim chunks of ChunkSize(n) bytes from a counter
//     with an atomic add until none is left, as a shared copy's
//     caller and thief do: the core that runs faster copies more,
//     which halves cannot do (goshmem's shared gets beat the halves by
//     up to 15% at 2-4 MiB in one run).

// SplitPoint is where a split copy of n bytes cuts them: half, rounded
// down to a cache line.
func SplitPoint(n int) int { return n / 2 &^ 63 }

// ChunkSize is the chunk of a chunked split copy of n bytes: a
// sixteenth, rounded up to 4 KiB, at least 16 KiB (as node's shared
// copies cut theirs).
func ChunkSize(n int) int { return max(16<<10, (n/16+4095)&^4095) }

// Splitter is the timing PE's side of the split copies: Req and Len
// are its partner's request words (through Ptr), Claim the chunk
// counter and Done the answer word, both its own. A request is
// seq<<8 | way (bit 0: streaming; bit 1: chunks; SplitStop ends the
// partner's loop); Len holds the size, stored first.
type Splitter struct {
	Req, Len, Claim, Done *int64
	// Ring wakes the partner if it sleeps in its wait (goshmem's P
	// rings its doorbell); nil: none needed.
	Ring func()
	seq  int64
}

// SplitStop is the request that ends the partner's loop.
const SplitStop = 0xff

// Request ways (the low byte of a request).
const (
	wayNT     = 1
	wayChunks = 2
)

// Methods returns the split copies as Methods of dst and src (the
// timing PE's views; the partner copies the same bytes in its own).
func (s *Splitter) Methods() []Method {
	var ms []Method
	for _, w := range []struct {
		name string
		way  int64
	}{{"split-t", 0}, {"split-nt", wayNT}, {"chunks-t", wayChunks}, {"chunks-nt", wayChunks | wayNT}} {
		ms = append(ms, Method{Name: w.name, Loop: func(d, src []byte, iters int) {
			for range iters {
				s.Copy(d, src, w.way)
			}
		}})
	}
	return ms
}

// Copy makes one split copy of min(len(dst), len(src)) bytes the way
// way says, and returns when both PEs have copied their parts.
func (s *Splitter) Copy(dst, src []byte, way int64) {
	n := min(len(dst), len(src))
	s.seq++
	atomic.StoreInt64(s.Claim, 0)
	atomic.StoreInt64(s.Len, int64(n))
	atomic.StoreInt64(s.Req, s.seq<<8|way)
	if s.Ring != nil {
		s.Ring()
	}
	part(dst[:n], src[:n], way, 0, s.Claim)
	for atomic.LoadInt64(s.Done) != s.seq {
		wait.Relax()
	}
}

// part is Part for a request's way.
func part(dst, src []byte, way int64, side int, claim *int64) {
	Part(dst, src, way&wayChunks != 0, way&wayNT != 0, side, claim)
}

// Part copies side's part of a split copy of dst from src, with
// streaming stores if nt: side 0 the first half (to SplitPoint), side
// 1 the rest; with chunks, the chunks of ChunkSize(len(dst)) bytes it
// claims from claim (an atomic add each, the chunk number the old
// value; the counter starts at 0 for each copy) until none is left.
func Part(dst, src []byte, chunks, nt bool, side int, claim *int64) {
	n := min(len(dst), len(src))
	if !chunks {
		h := SplitPoint(n)
		if side == 0 {
			mem.CopyKind(dst[:h], src[:h], nt)
		} else {
			mem.CopyKind(dst[h:n], src[h:n], nt)
		}
		return
	}
	c := ChunkSize(n)
	for {
		lo := int(atomic.AddInt64(claim, 1)-1) * c
		if lo >= n {
			return
		}
		hi := min(lo+c, n)
		mem.CopyKind(dst[lo:hi], src[lo:hi], nt)
	}
}

// Stop ends the partner's loop.
func (s *Splitter) Stop() {
	atomic.StoreInt64(s.Req, (s.seq+1)<<8|SplitStop)
	if s.Ring != nil {
		s.Ring()
	}
}

// Serve is the partner's side: await(last) returns the next request
// word once it differs from last (a goshmem wait, so that the partner
// also takes chunks of the timing PE's shared copies meanwhile); for
// each split request Serve copies its part of length bytes from src to
// dst (the partner's views of the same bytes; claim is its view of the
// timing PE's chunk counter) and stores the request's number into done
// (the timing PE's answer word, through Ptr). It returns at SplitStop.
func Serve(await func(last int64) int64, length, claim, done *int64, dst, src []byte) {
	last := int64(0)
	for {
		r := await(last)
		last = r
		if r&0xff == SplitStop {
			return
		}
		n := int(atomic.LoadInt64(length))
		part(dst[:n], src[:n], r&0xff, 1, claim)
		atomic.StoreInt64(done, r>>8)
	}
}
