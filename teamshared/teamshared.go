// Package teamshared is the part of goshmem's teams that needs no
// network and no memory: who is in a team, how splits carve a parent
// (strided, negative strides, 2-D), how team-relative PE numbers
// translate, and how each PE hands out the synchronization slots that
// back its teams. It is pure computation, so every rule can be tested
// directly; package goshmem binds it to PEs and memory.
//
// # Slots instead of agreed indices
//
// SOS gives every team a pSync index that all members must agree on,
// found by a reduction over bitmasks, which caps it at 64 teams. Here
// each PE picks a free slot in its own pool, independently, and the
// members of a new team exchange their slot numbers once, at creation,
// through the parent team. A team then addresses member m's
// synchronization words at m's own slot. The pool's size (node.TeamSlots,
// 250 created teams besides the predefined ones) bounds only how many
// teams one PE belongs to at a time, not how many a job creates.
package teamshared

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
)

// Members is the ordered membership of a team, as global (world) PE
// numbers: either a strided range or an explicit list.
type Members struct {
	start, stride, size int
	list                []int // nil for a strided range
}

// Strided returns the members start, start+stride, ..., size of them.
// It panics for a negative size (SplitStrided is where a user's triplet
// is checked, with an error).
func Strided(start, stride, size int) Members {
	if size < 0 {
		panic(fmt.Sprintf("teamshared.Strided: size %d is negative; a team has 0 or more members", size))
	}
	return Members{start: start, stride: stride, size: size}
}

// List returns a team of exactly the PEs in pes, in that order. pes must
// not repeat a PE.
func List(pes []int) Members {
	return Members{size: len(pes), list: append([]int(nil), pes...)}
}

// Size returns the number of members.
func (m Members) Size() int { return m.size }

// PE returns the global PE number of member i (0 <= i < Size).
func (m Members) PE(i int) int {
	if m.list != nil {
		return m.list[i]
	}
	return m.start + i*m.stride
}

// Index returns the member number of global PE pe, or -1.
func (m Members) Index(pe int) int {
	if m.list != nil {
		for i, q := range m.list {
			if q == pe {
				return i
			}
		}
		return -1
	}
	if m.size == 0 {
		return -1
	}
	if m.stride == 0 {
		if pe == m.start {
			return 0
		}
		return -1
	}
	d := pe - m.start
	if d%m.stride != 0 {
		return -1
	}
	if i := d / m.stride; i >= 0 && i < m.size {
		return i
	}
	return -1
}

// PEs returns all members' global PE numbers.
func (m Members) PEs() []int {
	out := make([]int, m.size)
	for i := range out {
		out[i] = m.PE(i)
	}
	return out
}

// ErrInvalidSplit is wrapped by the errors of invalid splits.
var ErrInvalidSplit = errors.New("invalid team split")

// SplitStrided returns the members of the team made of the parent's
// members start, start+stride, ... (size of them), as global PEs
// (shmem_team_split_strided). Negative strides walk the parent
// backwards; stride 0 is allowed only for size 1.
func (m Members) SplitStrided(start, stride, size int) (Members, error) {
	switch {
	case size < 1:
		return Members{}, fmt.Errorf("%w: size %d must be at least 1", ErrInvalidSplit, size)
	case start < 0 || start >= m.size:
		return Members{}, fmt.Errorf("%w: start %d outside the parent's PEs [0, %d)", ErrInvalidSplit, start, m.size)
	case stride == 0 && size > 1:
		return Members{}, fmt.Errorf("%w: stride 0 with size %d (only a one-PE team may have stride 0)", ErrInvalidSplit, size)
	}
	if as := max(stride, -stride); as != 0 && (as < 0 || size-1 > (math.MaxInt-start)/as) {
		// (size-1)*stride would overflow: far outside the parent.
		return Members{}, fmt.Errorf("%w: start %d, stride %d, size %d does not fit in a parent of %d PEs",
			ErrInvalidSplit, start, stride, size, m.size)
	}
	last := start + (size-1)*stride
	if last < 0 || last >= m.size {
		return Members{}, fmt.Errorf("%w: start %d, stride %d, size %d runs to parent PE %d, outside [0, %d)",
			ErrInvalidSplit, start, stride, size, last, m.size)
	}
	if m.list == nil {
		// A strided range of a strided range is strided.
		return Strided(m.PE(start), stride*m.stride, size), nil
	}
	pes := make([]int, size)
	for i := range pes {
		pes[i] = m.PE(start + i*stride)
	}
	return List(pes), nil
}

// Split2D returns the x team and the y team of member me
// (shmem_team_split_2d): the parent's members laid out row-major in
// rows of xrange, the x team being me's row and the y team me's column.
// The last row may be short: the columns it does not reach then have
// one member fewer than the others (5 members, xrange 2: columns
// {0, 2, 4} and {1, 3}).
func (m Members) Split2D(me, xrange int) (x, y Members, err error) {
	if xrange < 1 {
		return Members{}, Members{}, fmt.Errorf("%w: xrange %d must be at least 1", ErrInvalidSplit, xrange)
	}
	if me < 0 || me >= m.size {
		return Members{}, Members{}, fmt.Errorf("%w: PE %d is not a member", ErrInvalidSplit, me)
	}
	xrange = min(xrange, m.size)
	row, col := me/xrange, me%xrange
	xsize := min(xrange, m.size-row*xrange)
	ysize := (m.size - col + xrange - 1) / xrange
	if x, err = m.SplitStrided(row*xrange, 1, xsize); err != nil {
		return
	}
	y, err = m.SplitStrided(col, xrange, ysize)
	return
}

// Rounds returns the number of rounds of a dissemination barrier over
// n members: ceil(log2 n).
func Rounds(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// Pool hands out the synchronization slots of one PE: slots 0 to
// Reserved-1 belong to the predefined teams, the rest to created teams.
// It is safe for concurrent use: under SHMEM_THREAD_MULTIPLE several
// goroutines of one PE may create and destroy teams on different parent
// teams at the same time. (Only team creation and destruction use it,
// never a collective or RMA.)
type Pool struct {
	mu   sync.Mutex
	used []uint64 // bit i set: slot i in use
	n    int
}

// Reserved is the number of slots of the predefined teams (world,
// shared, host, leaders, NUMA).
const Reserved = 5

// NewPool returns a pool of n slots with the reserved ones taken.
func NewPool(n int) *Pool {
	p := &Pool{used: make([]uint64, (n+63)/64), n: n}
	for i := 0; i < Reserved && i < n; i++ {
		p.used[i/64] |= 1 << (i % 64)
	}
	return p
}

// Get returns a free slot, or ok false when all n are in use.
func (p *Pool) Get() (slot int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w, bitsUsed := range p.used {
		if free := ^bitsUsed; free != 0 {
			i := w*64 + bits.TrailingZeros64(free)
			if i >= p.n {
				return 0, false
			}
			p.used[w] |= 1 << (i % 64)
			return i, true
		}
	}
	return 0, false
}

// Put returns slot to the pool.
func (p *Pool) Put(slot int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slot < Reserved || slot >= p.n || p.used[slot/64]&(1<<(slot%64)) == 0 {
		panic(fmt.Sprintf("teamshared.Pool.Put: slot %d is not a created team's slot in use", slot))
	}
	p.used[slot/64] &^= 1 << (slot % 64)
}

// InUse returns the number of slots in use, reserved ones included.
func (p *Pool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, w := range p.used {
		n += bits.OnesCount64(w)
	}
	return n
}
