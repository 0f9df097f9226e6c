package goshmem

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
func reduceRecursiveDoubling[T any](t *Team, routine string, dst, src []T, fold func(acc, x []T)) {
	n, me := t.NPEs(), t.me
	t.rd++
	e := t.rd
	p := 1
	for p*2 <= n {
		p *= 2
	}
	buf := scratch[T](t, 1, len(src))
	signal := func(m, w int) { t.pe.TeamSet(t.worlds[m], int(t.slots[m]), w, e) }
	wait := func(w int) { t.pe.TeamWait(routine, t.slot, w, e) }
	copy(dst, src)
	switch {
	case me >= p: // hand my source to member me-p, later take the result
		signal(me-p, rdFold)
		wait(rdAck) // it has read my dst
		wait(rdBack)
		copy(dst, view(t, dst, me-p, buf))
		signal(me-p, rdDone)
		return
	case me < n-p: // fold in member me+p's source
		wait(rdFold)
		x := view(t, dst, me+p, buf)
		copy(buf, x)
		signal(me+p, rdAck)
		fold(dst, buf)
	}
	for k := 1; k < p; k <<= 1 {
		r := bitLen(k) - 1
		partner := me ^ k
		signal(partner, rdReady+r*wordsPerLine)
		wait(rdReady + r*wordsPerLine)
		x := view(t, dst, partner, buf)
		copy(buf, x)
		signal(partner, rdAck+r*wordsPerLine)
		wait(rdAck + r*wordsPerLine) // the partner has read my dst
		fold(dst, buf)
	}
	if me < n-p { // hand the result back to member me+p
		signal(me+p, rdBack)
		wait(rdDone)
	}
}
