package goshmem

import "github.com/goshmem/goshmem/internal/mem"

// Reductions for teams whose members may not map each other, written
// only with the team's one-writer words and Get (through the RMA layer,
// which reaches unmapped peers with CMA and, later, other nodes).

// Words of the recursive-doubling reduction, in the otherwise unused
// words of the barrier's per-round lines: in round r, rdReady+r*16 says
// "my partial result for round r is in my dst" and rdAck+r*16 says "I
// have read yours". rdFold, rdBack and rdDone serve the fold-in and
// hand-back of the members beyond the largest power of two. Within one
// call every word is written at most once, with the call's number.
const (
	rdReady = 2
	rdAck   = 3
	rdFold  = 4
	rdBack  = 5
	rdDone  = 6 // the member beyond p has taken the result back
)

// reduceRecursiveDoubling is the recursive-doubling all-reduce. With p
// the largest power of two <= n, members p..n-1 first hand their source
// to member i-p, which folds it in; then in round k each of the first p
// members exchanges its partial result with member me^2^k (each reads
// the other's dst into a scratch buffer, acknowledges, waits for the
// partner's acknowledgement, and folds); finally members p..n-1 copy the
// result from member i-p. log2(p) rounds, each moving the whole vector
// once in each direction: the right choice for small vectors on teams
// that cannot share memory.
func reduceRecursiveDoubling[T any](t *Team, routine string, dst, src []T, fold func(dst, a, b []T)) {
	n, me, p := t.NPEs(), t.me, floorPow2(t.NPEs())
	t.rd++
	e := t.rd
	buf := scratch[T](t, 1, len(src))
	signal := func(m, w int) { t.pe.TeamSet(t.worlds[m], int(t.slots[m]), w, e) }
	wait := func(w int) { t.pe.TeamWait(routine, t.slot, w, e) }
	copyData(dst, src)
	switch {
	case me >= p: // hand my source to member me-p, later take the result
		signal(me-p, rdFold)
		wait(rdAck) // it has read my dst
		wait(rdBack)
		copyData(dst, view(t, routine, dst, me-p, buf))
		signal(me-p, rdDone)
		return
	case me < n-p: // fold in member me+p's source
		wait(rdFold)
		x := view(t, routine, dst, me+p, buf)
		copyData(buf, x)
		signal(me+p, rdAck)
		fold(dst, dst, buf)
	}
	for k := 1; k < p; k <<= 1 {
		r := bitLen(k) - 1
		partner := me ^ k
		signal(partner, rdReady+r*wordsPerLine)
		wait(rdReady + r*wordsPerLine)
		x := view(t, routine, dst, partner, buf)
		copyData(buf, x)
		signal(partner, rdAck+r*wordsPerLine)
		wait(rdAck + r*wordsPerLine) // the partner has read my dst
		fold(dst, dst, buf)
	}
	if me < n-p { // hand the result back to member me+p
		signal(me+p, rdBack)
		wait(rdDone)
	}
}

// reducePushed is recursive doubling for vectors of at most t.pushMax
// bytes (a push box of a line, or a wide one) on teams that do not map
// each other (other hosts, CMA): each
// member writes its partial result straight into its partner's push
// box and raises the round's flag after it, so a round costs one
// one-way message each way, where the pulling version above costs a
// flag, a Get's round trip and an acknowledgement. Across two hosts
// this is one network latency per round, not four.
//
// Boxes are per round and doubled by the call's parity. A member writes
// box (r, e&1) of its round-r partner in call e only after it finished
// call e-1, whose round r needed the partner's data of call e-1, which
// the partner sent after it had finished call e-2 and so read box
// (r, e&1) for the last time: a box is never overwritten unread. The
// fold-in and hand-back boxes of the members beyond the largest power
// of two follow the same chain.
func reducePushed[T any](t *Team, routine string, dst, src []T, fold func(dst, a, b []T)) {
	n, me, p := t.NPEs(), t.me, floorPow2(t.NPEs())
	t.rd++
	e := t.rd
	nb := len(src) * int(mem.SizeOf[T]())
	box := func(i int) int { return pushBoxes + (2*i+int(e&1))*pushBox }
	if nb > pushBox {
		// The wide boxes: rounds 0..R-1, then the fold-in and the
		// hand-back (R = log2 p), each two by parity.
		rounds, size := bitLen(p)-1, widePushSize(n)
		box = func(i int) int {
			switch i {
			case pushFold:
				i = rounds
			case pushBack:
				i = rounds + 1
			}
			return widePushBoxes + (2*i+int(e&1))*size
		}
	}
	send := func(m, i, w int, x []T) {
		q := t.worlds[m]
		t.pe.TeamPutSet(q, int(t.slots[m]), box(i), mem.Bytes(x), w, e)
	}
	buf := scratch[T](t, 1, len(src))
	recv := func(i, w int) []T {
		t.pe.TeamWait(routine, t.slot, w, e)
		copy(mem.Bytes(buf), t.pe.TeamBytes(t.worlds[me], t.slot, box(i), nb))
		return buf
	}
	copyData(dst, src)
	switch {
	case me >= p: // hand my source to member me-p, then take the result
		send(me-p, pushFold, rdFold, dst)
		copyData(dst, recv(pushBack, rdBack))
		return
	case me < n-p: // fold in member me+p's source
		fold(dst, dst, recv(pushFold, rdFold))
	}
	for k := 1; k < p; k <<= 1 {
		r := bitLen(k) - 1
		w := pushWord + r*wordsPerLine
		send(me^k, r, w, dst)
		fold(dst, dst, recv(r, w))
	}
	if me < n-p {
		send(me+p, pushBack, rdBack, dst)
	}
}

// Words of the ring all-reduce (line 22 of a slot): ringProd counts the
// left neighbour's productions (chunks ready for this PE to read),
// ringAck the right neighbour's reads of this PE's chunks. Both only
// grow, by 2n-1 and 2n-2 per call.
const (
	ringProd = 22 * wordsPerLine
	ringAck  = ringProd + 1
)

// reduceRing is the ring all-reduce, for large vectors on teams that
// cannot share memory: the vector is cut into one chunk per member; in
// n-1 reduce-scatter steps each member folds its left neighbour's
// partial of one chunk into its own, after which it holds one chunk
// fully reduced; in n-1 allgather steps the reduced chunks travel around
// the ring. Each member moves 2(n-1)/n of the vector, whatever n. Reads
// are pulls from the left neighbour's dst; a member overwrites a chunk
// only after its right neighbour has acknowledged reading the old
// value, and returns only when the right neighbour has read everything.
func reduceRing[T any](t *Team, routine string, dst, src []T, fold func(dst, a, b []T)) {
	n, me, size := t.NPEs(), t.me, len(src)
	copyData(dst, src)
	if n == 1 {
		return
	}
	left, right := (me+n-1)%n, (me+1)%n
	prodBase := t.ringR * uint32(2*n-1)
	ackBase := t.ringR * uint32(2*n-2)
	t.ringR++
	chunk := func(c int) (int, int) {
		c = (c%n + n) % n
		return c * size / n, (c + 1) * size / n
	}
	produce := func(k int) {
		t.pe.TeamSet(t.worlds[right], int(t.slots[right]), ringProd, prodBase+uint32(k))
	}
	ack := func(k int) {
		t.pe.TeamSet(t.worlds[left], int(t.slots[left]), ringAck, ackBase+uint32(k))
	}
	buf := scratch[T](t, 1, size/n+1)
	produce(1)
	for s := 0; s < n-1; s++ { // reduce-scatter
		t.pe.TeamWait(routine, t.slot, ringProd, prodBase+uint32(s+1))
		lo, hi := chunk(me - 1 - s)
		fold(dst[lo:hi], dst[lo:hi], view(t, routine, dst[lo:hi], left, buf[:hi-lo]))
		ack(s + 1)
		produce(s + 2)
	}
	for s := 0; s < n-1; s++ { // allgather
		t.pe.TeamWait(routine, t.slot, ringProd, prodBase+uint32(n+s))
		// The right neighbour read this chunk's partial in its step s.
		t.pe.TeamWait(routine, t.slot, ringAck, ackBase+uint32(s+1))
		lo, hi := chunk(me - s)
		copyData(dst[lo:hi], view(t, routine, dst[lo:hi], left, buf[:hi-lo]))
		ack(n + s)
		produce(n + 1 + s)
	}
	t.pe.TeamWait(routine, t.slot, ringAck, ackBase+uint32(2*n-2))
}

// Words of the recursive-doubling fcollect, in the barrier's per-round
// lines (see rdReady).
const (
	fcReady = 7
	fcAck   = 8
)

// fcollectRecursiveDoubling is the recursive-doubling allgather, for
// teams of a power-of-two size: in round r each member and its partner
// me^2^r swap the blocks their halves hold so far, doubling them. A
// member only ever writes blocks it did not have, which nobody reads
// from it yet, so the one hazard is returning while a partner still
// reads: the member waits for every partner's acknowledgement at the
// end.
func fcollectRecursiveDoubling[T any](t *Team, dst, src []T) {
	const routine = "FCollect"
	n, me, nb := t.NPEs(), t.me, len(src)
	t.rdfc++
	e := t.rdfc
	copyData(dst[me*nb:(me+1)*nb], src)
	rounds := 0
	for d := 1; d < n; d <<= 1 {
		r := rounds
		partner := me ^ d
		w := r * wordsPerLine
		t.pe.TeamSet(t.worlds[partner], int(t.slots[partner]), fcReady+w, e)
		t.pe.TeamWait(routine, t.slot, fcReady+w, e)
		base := partner &^ (d - 1)
		blk := dst[base*nb : (base+d)*nb]
		copyData(blk, view(t, routine, blk, partner, blk))
		t.pe.TeamSet(t.worlds[partner], int(t.slots[partner]), fcAck+w, e)
		rounds++
	}
	for r := 0; r < rounds; r++ {
		t.pe.TeamWait(routine, t.slot, fcAck+r*wordsPerLine, e)
	}
}

// Words of Rabenseifner's reduction, in the barrier's per-round lines.
const (
	rsReady = 9
	rsAck   = 10
	agReady = 11
	agAck   = 12
)

// reduceRabenseifner is Rabenseifner's all-reduce for large vectors on
// power-of-two teams that cannot share memory: a reduce-scatter by
// recursive halving (in round r a member keeps one half of its current
// range, folds its partner's partial of that half into it, and leaves
// the other half to the partner), then an allgather by recursive
// doubling in the reverse order. Each member moves about twice the
// vector in all, in log2(n) rounds. A member overwrites a half it gave
// away only after the partner acknowledged reading its partial of it,
// and returns only after its allgather partners have read its halves.
func reduceRabenseifner[T any](t *Team, routine string, dst, src []T, fold func(dst, a, b []T)) {
	n, me := t.NPEs(), t.me
	copyData(dst, src)
	t.rab++
	e := t.rab
	type round struct{ partner, keepLo, keepHi, giveLo, giveHi int }
	var rounds []round
	lo, hi := 0, len(src)
	for d := n / 2; d >= 1; d /= 2 {
		mid := (lo + hi) / 2
		r := round{partner: me ^ d, keepLo: lo, keepHi: mid, giveLo: mid, giveHi: hi}
		if me&d != 0 {
			r.keepLo, r.keepHi, r.giveLo, r.giveHi = mid, hi, lo, mid
		}
		rounds = append(rounds, r)
		lo, hi = r.keepLo, r.keepHi
	}
	signal := func(m, w int) { t.pe.TeamSet(t.worlds[m], int(t.slots[m]), w, e) }
	wait := func(w int) { t.pe.TeamWait(routine, t.slot, w, e) }
	buf := scratch[T](t, 1, len(src)/2+1)
	for i, r := range rounds { // reduce-scatter
		w := i * wordsPerLine
		signal(r.partner, rsReady+w)
		wait(rsReady + w)
		keep := dst[r.keepLo:r.keepHi]
		fold(keep, keep, view(t, routine, keep, r.partner, buf[:len(keep)]))
		signal(r.partner, rsAck+w)
	}
	for i := len(rounds) - 1; i >= 0; i-- { // allgather
		r, w := rounds[i], i*wordsPerLine
		signal(r.partner, agReady+w)
		wait(agReady + w)
		wait(rsAck + w) // the partner has read my partial of the half I give
		give := dst[r.giveLo:r.giveHi]
		copyData(give, view(t, routine, give, r.partner, buf[:len(give)]))
		signal(r.partner, agAck+w)
	}
	for i := range rounds {
		wait(agAck + i*wordsPerLine)
	}
}

// floorPow2 returns the largest power of two that is at most n (n >= 1).
func floorPow2(n int) int { return 1 << (bitLen(n) - 1) }
