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
// Three ways of splitting (Way), each with one kernel, temporal (-t)
// or streaming (-nt), as mem.CopyKind does for a shared copy's chunks:
//
//   - split (Halves): the partner copies the second half (cut at a
//     cache line), the timing PE the first;
//   - chunks (Chunks): both claim chunks of ChunkSize(n) bytes from a
//     counter with an atomic add until none is left: the core that
//     runs faster copies more, which halves cannot do (goshmem's
//     shared gets beat the halves by up to 15% at 2-4 MiB in one run);
//   - guided (Guided): node's own way since its twentieth session
//     (job.Task): the timing PE copies the first half of the chunks
//     and then claims shares of what is left (half of it, at least a
//     chunk) from the front, the partner shares from the back, so
//     each side claims two or three times and copies about the same
//     part each time (goshmem's shared puts and gets beat the other
//     two ways by 0-10% at 1-32 MiB before it was here).

// Way is how a split copy cuts its bytes between the two sides.
type Way uint8

// The ways of splitting.
const (
	Halves Way = iota
	Chunks
	Guided
)

// SplitPoint is where a split copy of n bytes cuts them: half, rounded
// down to a cache line.
func SplitPoint(n int) int { return n / 2 &^ 63 }

// ChunkSize is the chunk of a chunked split copy of n bytes: a
// sixteenth, rounded up to 4 KiB, at least 16 KiB (as node's shared
// copies cut theirs).
func ChunkSize(n int) int { return max(16<<10, (n/16+4095)&^4095) }

// chunkCount is the number of chunks of a split copy of n bytes.
func chunkCount(n int) int { c := ChunkSize(n); return (n + c - 1) / c }

// guidedFirst is the chunks side 0 of a guided copy of count chunks
// copies before it claims: the first half.
func guidedFirst(count int) int { return max(count/2, 1) }

// Reset prepares claim for a split copy of n bytes the way w; the side
// that asks the other to take part stores it before asking. (Halves
// ignore it.)
func Reset(claim *int64, w Way, n int) {
	v := int64(0)
	if w == Guided {
		count := chunkCount(n)
		v = int64(count)<<32 | int64(guidedFirst(count))
	}
	atomic.StoreInt64(claim, v)
}

// unpackGuided splits a guided claim word: unclaimed chunks [front,
// back), front in the low 32 bits, back (signed) above.
func unpackGuided(v int64) (front, back int) {
	return int(uint32(v)), int(v >> 32)
}

// Splitter is the timing PE's side of the split copies: Req and Len
// are its partner's request words (through Ptr), Claim the chunk
// counter and Done the answer word, both its own. A request is
// seq<<8 | way (bit 0: streaming; bits 1-2: the Way; SplitStop ends
// the partner's loop); Len holds the size, stored first.
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
	wayChunks = int64(Chunks) << 1
	wayGuided = int64(Guided) << 1
)

// Methods returns the split copies as Methods of dst and src (the
// timing PE's views; the partner copies the same bytes in its own).
func (s *Splitter) Methods() []Method {
	var ms []Method
	for _, w := range []struct {
		name string
		way  int64
	}{{"split-t", 0}, {"split-nt", wayNT}, {"chunks-t", wayChunks}, {"chunks-nt", wayChunks | wayNT},
		{"guided-t", wayGuided}, {"guided-nt", wayGuided | wayNT}} {
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
	Reset(s.Claim, Way(way>>1&3), n)
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
	Part(dst, src, Way(way>>1&3), way&wayNT != 0, side, claim)
}

// Part copies side's part (0 or 1) of a split copy of dst from src
// the way w, with streaming stores if nt: Halves, side 0 the first half
// (to SplitPoint), side 1 the rest; Chunks, the chunks of
// ChunkSize(len(dst)) bytes it claims from claim (an atomic add each,
// the chunk number the old value) until none is left; Guided, side 0
// the first half of the chunks and then shares of what is left from
// the front, side 1 shares from the back. Claim must have been Reset
// for the copy.
func Part(dst, src []byte, w Way, nt bool, side int, claim *int64) {
	PartWith(dst, src, w, side, claim, func(d, s []byte) { mem.CopyKind(d, s, nt) })
}

// PartWith is Part with the copies made by cp.
func PartWith(dst, src []byte, w Way, side int, claim *int64, cp func(dst, src []byte)) {
	n := min(len(dst), len(src))
	c := ChunkSize(n)
	run := func(lo, hi int) { // chunks [lo, hi)
		if from, to := lo*c, min(hi*c, n); from < to {
			cp(dst[from:to], src[from:to])
		}
	}
	switch {
	case w == Halves:
		h := SplitPoint(n)
		if side == 0 {
			cp(dst[:h], src[:h])
		} else {
			cp(dst[h:n], src[h:n])
		}
	case w == Chunks:
		for {
			lo := int(atomic.AddInt64(claim, 1) - 1)
			if lo*c >= n {
				return
			}
			run(lo, lo+1)
		}
	case side == 0:
		run(0, guidedFirst(chunkCount(n)))
		for {
			f, b := unpackGuided(atomic.LoadInt64(claim))
			k := max((b-f)/2, 1)
			f, b = unpackGuided(atomic.AddInt64(claim, int64(k)))
			lo, hi := f-k, min(f, b)
			if lo >= hi {
				return
			}
			run(lo, hi)
		}
	default:
		for {
			f, b := unpackGuided(atomic.LoadInt64(claim))
			if f >= b {
				return
			}
			k := max((b-f)/2, 1)
			f, b = unpackGuided(atomic.AddInt64(claim, -int64(k)<<32))
			lo, hi := max(b, f), b+k
			if lo >= hi {
				return
			}
			run(lo, hi)
		}
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
