package copyref

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/wait"
)

// Two cores copy one buffer: goshmem's puts and gets from
// SHMEM_COPY_SHARE bytes up are copied by the caller and the partner
// that waits meanwhile, so a lone copy is no bound for them. A split
// copy is the bare form of that: the timing PE asks its partner to copy
// the second half of the bytes, copies the first half itself, and waits
// until the partner is done, with nothing between them but two words:
// the request, which the partner polls, and the answer, which the
// timing PE polls. Both halves use one kernel, temporal (split-t) or
// streaming (split-nt), as mem.CopyKind does for a shared copy's
// chunks.

// SplitPoint is where a split copy of n bytes cuts them: half, rounded
// down to a cache line.
func SplitPoint(n int) int { return n / 2 &^ 63 }

// Splitter is the timing PE's side of the split copies: Req and Len
// are its partner's request words (through Ptr), Done its own answer
// word. A request is seq<<8 | kind (kind 0 temporal, 1 streaming;
// SplitStop ends the partner's loop); Len holds the size, stored
// first.
type Splitter struct {
	Req, Len, Done *int64
	// Ring wakes the partner if it sleeps in its wait (goshmem's P
	// rings its doorbell); nil: none needed.
	Ring func()
	seq  int64
}

// SplitStop is the request that ends the partner's loop.
const SplitStop = 0xff

// Methods returns the split copies as Methods of dst and src (the
// timing PE's views; the partner copies the same bytes in its own).
func (s *Splitter) Methods() []Method {
	return []Method{
		{Name: "split-t", Loop: func(d, src []byte, iters int) { s.loop(d, src, iters, 0) }},
		{Name: "split-nt", Loop: func(d, src []byte, iters int) { s.loop(d, src, iters, 1) }},
	}
}

// Copy makes one split copy of n bytes with kernel kind (0 temporal,
// 1 streaming): it asks the partner for [SplitPoint(n), n), copies
// [0, SplitPoint(n)) and waits for the partner's answer.
func (s *Splitter) Copy(dst, src []byte, kind int64) {
	n := min(len(dst), len(src))
	h := SplitPoint(n)
	s.seq++
	atomic.StoreInt64(s.Len, int64(n))
	atomic.StoreInt64(s.Req, s.seq<<8|kind)
	if s.Ring != nil {
		s.Ring()
	}
	mem.CopyKind(dst[:h], src[:h], kind == 1)
	for atomic.LoadInt64(s.Done) != s.seq {
		wait.Relax()
	}
}

func (s *Splitter) loop(dst, src []byte, iters int, kind int64) {
	for range iters {
		s.Copy(dst, src, kind)
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
// each split request Serve copies the second half of len bytes from
// src to dst (the partner's views of the same bytes) and stores the
// request's number into done (the timing PE's answer word, through
// Ptr). It returns at SplitStop.
func Serve(await func(last int64) int64, length, done *int64, dst, src []byte) {
	last := int64(0)
	for {
		r := await(last)
		last = r
		if r&0xff == SplitStop {
			return
		}
		n := int(atomic.LoadInt64(length))
		h := SplitPoint(n)
		mem.CopyKind(dst[h:n], src[h:n], r&0xff == 1)
		atomic.StoreInt64(done, r>>8)
	}
}
