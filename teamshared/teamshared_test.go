package teamshared_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goshmem/goshmem/teamshared"
)

// naiveIndex is the reference of Members.Index: the position of pe in
// pes, or -1.
func naiveIndex(pes []int, pe int) int {
	for i, q := range pes {
		if q == pe {
			return i
		}
	}
	return -1
}

// checkMembers checks every accessor of m against the explicit list
// want, and Index on every PE number around the members.
func checkMembers(t *testing.T, what string, m teamshared.Members, want []int) {
	t.Helper()
	if m.Size() != len(want) {
		t.Fatalf("%s: Size = %d, want %d", what, m.Size(), len(want))
	}
	for i, pe := range want {
		if got := m.PE(i); got != pe {
			t.Errorf("%s: PE(%d) = %d, want %d", what, i, got, pe)
		}
	}
	if got := m.PEs(); !slices.Equal(got, want) || len(got) != len(want) {
		t.Errorf("%s: PEs = %v, want %v", what, got, want)
	}
	lo, hi := -3, 3
	for _, pe := range want {
		lo, hi = min(lo, pe-3), max(hi, pe+3)
	}
	for pe := lo; pe <= hi; pe++ {
		if got, w := m.Index(pe), naiveIndex(want, pe); got != w {
			t.Errorf("%s: Index(%d) = %d, want %d", what, pe, got, w)
		}
	}
}

func TestMembersStrided(t *testing.T) {
	for _, tc := range []struct {
		start, stride, size int
		want                []int
	}{
		{0, 1, 0, []int{}},
		{5, 3, 0, []int{}},
		{0, 1, 1, []int{0}},
		{0, 1, 5, []int{0, 1, 2, 3, 4}},
		{2, 3, 4, []int{2, 5, 8, 11}},
		{7, 0, 1, []int{7}},
		{0, 0, 1, []int{0}},
		{9, -1, 4, []int{9, 8, 7, 6}},
		{10, -3, 4, []int{10, 7, 4, 1}},
		{6, -2, 4, []int{6, 4, 2, 0}},
		{100, 17, 3, []int{100, 117, 134}},
		{1, 1000, 2, []int{1, 1001}},
	} {
		what := fmt.Sprintf("Strided(%d, %d, %d)", tc.start, tc.stride, tc.size)
		checkMembers(t, what, teamshared.Strided(tc.start, tc.stride, tc.size), tc.want)
	}
}

func TestMembersList(t *testing.T) {
	for _, pes := range [][]int{
		{},
		{0},
		{7},
		{3, 1, 4, 0, 5, 9, 2, 6},
		{10, 20, 30},
		{30, 20, 10},
		{0, 2, 4, 6, 1, 3, 5},
	} {
		in := append([]int(nil), pes...)
		m := teamshared.List(in)
		for i := range in { // List must copy its argument
			in[i] = -100 - i
		}
		checkMembers(t, fmt.Sprintf("List(%v)", pes), m, pes)
	}
	checkMembers(t, "List(nil)", teamshared.List(nil), nil)
	checkMembers(t, "zero Members", teamshared.Members{}, nil)
}

// randomParent returns a valid team membership of at most maxSize
// members with non-negative PE numbers: strided (any non-zero stride)
// or an explicit permutation of a random set of PEs.
func randomParent(r *rand.Rand, maxSize int) (teamshared.Members, []int) {
	size := 1 + r.IntN(maxSize)
	if r.IntN(2) == 0 {
		stride := 1 + r.IntN(4)
		if r.IntN(3) == 0 {
			stride = -stride
		}
		start := r.IntN(20)
		if stride < 0 {
			start += (size - 1) * -stride
		}
		want := make([]int, size)
		for i := range want {
			want[i] = start + i*stride
		}
		return teamshared.Strided(start, stride, size), want
	}
	pes := r.Perm(size + r.IntN(10))[:size]
	return teamshared.List(pes), pes
}

func TestIndexPERoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 500; k++ {
		m, want := randomParent(r, 40)
		checkMembers(t, fmt.Sprintf("parent %v", want), m, want)
		for i := 0; i < m.Size(); i++ {
			if got := m.Index(m.PE(i)); got != i {
				t.Fatalf("%v: Index(PE(%d)) = %d", want, i, got)
			}
		}
	}
}

// naiveSplit is the reference of SplitStrided: the parent's members
// start, start+stride, ..., or ok false when one of them is not a
// parent member (or the arguments are otherwise invalid).
func naiveSplit(parent []int, start, stride, size int) ([]int, bool) {
	if size < 1 || stride == 0 && size > 1 {
		return nil, false
	}
	out := make([]int, size)
	for i := range out {
		j := start + i*stride
		if j < 0 || j >= len(parent) {
			return nil, false
		}
		out[i] = parent[j]
	}
	return out, true
}

// TestSplitStridedExhaustive tries every (start, stride, size) in a
// window around the valid ones on random parents and compares with the
// reference.
func TestSplitStridedExhaustive(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	parents := []struct {
		m   teamshared.Members
		pes []int
	}{
		{teamshared.Strided(0, 1, 1), []int{0}},
		{teamshared.Strided(0, 1, 8), []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{teamshared.Strided(9, -3, 4), []int{9, 6, 3, 0}},
	}
	for k := 0; k < 30; k++ {
		m, pes := randomParent(r, 12)
		parents = append(parents, struct {
			m   teamshared.Members
			pes []int
		}{m, pes})
	}
	for _, p := range parents {
		n := p.m.Size()
		for start := -2; start <= n+1; start++ {
			for stride := -n - 1; stride <= n+1; stride++ {
				for size := -1; size <= n+2; size++ {
					what := fmt.Sprintf("parent %v: SplitStrided(%d, %d, %d)", p.pes, start, stride, size)
					got, err := p.m.SplitStrided(start, stride, size)
					want, ok := naiveSplit(p.pes, start, stride, size)
					if !ok {
						if err == nil {
							t.Errorf("%s = %v, want an error", what, got.PEs())
						} else if !errors.Is(err, teamshared.ErrInvalidSplit) {
							t.Errorf("%s: error %v does not wrap ErrInvalidSplit", what, err)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s: unexpected error %v", what, err)
						continue
					}
					checkMembers(t, what, got, want)
				}
			}
		}
	}
}

// TestSplitStridedChained: splits of splits compose (a strided range
// of a strided range stays strided, of a list becomes a list).
func TestSplitStridedChained(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for k := 0; k < 300; k++ {
		m, pes := randomParent(r, 30)
		for depth := 0; depth < 4 && m.Size() > 0; depth++ {
			n := m.Size()
			size := 1 + r.IntN(n)
			stride := 0
			if size > 1 {
				maxStride := (n - 1) / (size - 1)
				stride = 1 + r.IntN(maxStride)
			}
			start := r.IntN(n - (size-1)*stride)
			if r.IntN(2) == 0 && size > 1 {
				start += (size - 1) * stride
				stride = -stride
			}
			want, ok := naiveSplit(pes, start, stride, size)
			if !ok {
				t.Fatalf("test bug: invalid split generated")
			}
			got, err := m.SplitStrided(start, stride, size)
			if err != nil {
				t.Fatalf("%v: SplitStrided(%d, %d, %d): %v", pes, start, stride, size, err)
			}
			checkMembers(t, fmt.Sprintf("%v: SplitStrided(%d, %d, %d)", pes, start, stride, size), got, want)
			m, pes = got, want
		}
	}
}

func TestSplitStridedErrors(t *testing.T) {
	parent := teamshared.Strided(0, 1, 8)
	list := teamshared.List([]int{5, 3, 7, 1})
	for _, tc := range []struct {
		m                   teamshared.Members
		start, stride, size int
		want                string
	}{
		{parent, 0, 1, 0, "size 0 must be at least 1"},
		{parent, 0, 1, -3, "size -3 must be at least 1"},
		{parent, -1, 1, 1, "start -1 outside the parent's PEs [0, 8)"},
		{parent, 8, 1, 1, "start 8 outside the parent's PEs [0, 8)"},
		{parent, 100, -1, 1, "start 100 outside"},
		{parent, 0, 0, 2, "stride 0 with size 2"},
		{parent, 3, 0, 8, "stride 0 with size 8"},
		{parent, 0, 1, 9, "runs to parent PE 8, outside [0, 8)"},
		{parent, 5, 2, 2, "runs to parent PE 7"}, // valid: the boundary
		{parent, 5, 2, 3, "runs to parent PE 9, outside [0, 8)"},
		{parent, 3, -2, 3, "runs to parent PE -1, outside [0, 8)"},
		{parent, 7, -1, 9, "runs to parent PE -1"},
		{parent, 0, -1, 2, "runs to parent PE -1"},
		{list, 0, 1, 5, "runs to parent PE 4, outside [0, 4)"},
		{list, 4, 1, 1, "start 4 outside the parent's PEs [0, 4)"},
		{list, 1, -2, 2, "runs to parent PE -1"},
		{teamshared.Members{}, 0, 1, 1, "start 0 outside the parent's PEs [0, 0)"},
	} {
		what := fmt.Sprintf("%v.SplitStrided(%d, %d, %d)", tc.m.PEs(), tc.start, tc.stride, tc.size)
		got, err := tc.m.SplitStrided(tc.start, tc.stride, tc.size)
		if tc.want == "runs to parent PE 7" {
			if err != nil || !slices.Equal(got.PEs(), []int{5, 7}) {
				t.Errorf("%s = %v, %v; want [5 7]", what, got.PEs(), err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s = %v, want an error containing %q", what, got.PEs(), tc.want)
			continue
		}
		if !errors.Is(err, teamshared.ErrInvalidSplit) {
			t.Errorf("%s: %v does not wrap ErrInvalidSplit", what, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not contain %q", what, err, tc.want)
		}
		if got.Size() != 0 {
			t.Errorf("%s: error with a non-empty team of %d", what, got.Size())
		}
	}
}

// TestSplitStridedOverflow: start+(size-1)*stride must not wrap around
// and let an out-of-range split through (here 4<<62 wraps to 0).
func TestSplitStridedOverflow(t *testing.T) {
	parent := teamshared.Strided(0, 1, 10)
	for _, tc := range []struct{ start, stride, size int }{
		{0, 1 << 62, 5},
		{0, 1 << 61, 9},
		{1, math.MaxInt, 3},
		{0, 4, 1<<62 + 1},
		{3, math.MinInt, 3},
		{9, -(1 << 62), 5},
	} {
		got, err := parent.SplitStrided(tc.start, tc.stride, tc.size)
		if err == nil {
			// Do not enumerate: the team may be astronomically large.
			t.Errorf("SplitStrided(%d, %d, %d) of a 10-PE team accepted (size %d, PE(1) = %d), want an error",
				tc.start, tc.stride, tc.size, got.Size(), got.PE(min(1, got.Size()-1)))
		}
	}
}

// naive2D computes, by definition, the x and y teams (as parent member
// indices) of member me: the parent laid out row-major in rows of
// min(xrange, n) members; x is me's row, y is me's column.
func naive2D(n, xrange, me int) (x, y []int) {
	xr := min(xrange, n)
	for i := 0; i < n; i++ {
		if i/xr == me/xr {
			x = append(x, i)
		}
		if i%xr == me%xr {
			y = append(y, i)
		}
	}
	return x, y
}

func TestSplit2D(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ns := []int{24, 31, 40}
	for n := 1; n <= 16; n++ {
		ns = append(ns, n)
	}
	for _, n := range ns {
		parents := []teamshared.Members{teamshared.Strided(0, 1, n)}
		if n > 1 {
			parents = append(parents, teamshared.Strided(3*n, -3, n))
		}
		parents = append(parents, teamshared.List(r.Perm(n + 5)[:n]))
		for _, parent := range parents {
			pes := parent.PEs()
			xranges := []int{1, 2, 5, 7, n - 1, n, n + 2}
			if n <= 16 {
				xranges = nil
				for xrange := 1; xrange <= n+3; xrange++ {
					xranges = append(xranges, xrange)
				}
			}
			for _, xrange := range xranges {
				if xrange < 1 {
					continue
				}
				xteams := map[string][]int{} // x team -> the members that got it
				yteams := map[string][]int{}
				for me := 0; me < n; me++ {
					what := fmt.Sprintf("%v.Split2D(me %d, xrange %d)", pes, me, xrange)
					x, y, err := parent.Split2D(me, xrange)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					xi, yi := naive2D(n, xrange, me)
					wx, wy := make([]int, len(xi)), make([]int, len(yi))
					for i, j := range xi {
						wx[i] = pes[j]
					}
					for i, j := range yi {
						wy[i] = pes[j]
					}
					checkMembers(t, what+" x", x, wx)
					checkMembers(t, what+" y", y, wy)
					xr := min(xrange, n)
					if got := x.Index(pes[me]); got != me%xr {
						t.Errorf("%s: index in x = %d, want %d", what, got, me%xr)
					}
					if got := y.Index(pes[me]); got != me/xr {
						t.Errorf("%s: index in y = %d, want %d", what, got, me/xr)
					}
					xteams[fmt.Sprint(x.PEs())] = append(xteams[fmt.Sprint(x.PEs())], pes[me])
					yteams[fmt.Sprint(y.PEs())] = append(yteams[fmt.Sprint(y.PEs())], pes[me])
				}
				// Every member is in exactly one x and one y team: each
				// team is handed to exactly its own members, so the teams
				// of an axis partition the parent.
				for _, teams := range []map[string][]int{xteams, yteams} {
					seen := map[int]int{}
					for k, got := range teams {
						if k != fmt.Sprint(got) {
							t.Errorf("n=%d xrange=%d: team %s handed to PEs %v", n, xrange, k, got)
						}
						for _, v := range got {
							seen[v]++
						}
					}
					for _, pe := range pes {
						if seen[pe] != 1 {
							t.Errorf("n=%d xrange=%d: PE %d in %d teams of an axis", n, xrange, pe, seen[pe])
						}
					}
				}
				xr := min(xrange, n)
				if len(xteams) != (n+xr-1)/xr || len(yteams) != xr {
					t.Errorf("n=%d xrange=%d: %d x teams and %d y teams, want %d and %d",
						n, xrange, len(xteams), len(yteams), (n+xr-1)/xr, xr)
				}
			}
		}
	}
}

func TestSplit2DErrors(t *testing.T) {
	parent := teamshared.Strided(0, 1, 6)
	for _, tc := range []struct {
		me, xrange int
		want       string
	}{
		{0, 0, "xrange 0 must be at least 1"},
		{0, -2, "xrange -2 must be at least 1"},
		{-1, 2, "PE -1 is not a member"},
		{6, 2, "PE 6 is not a member"},
	} {
		x, y, err := parent.Split2D(tc.me, tc.xrange)
		if err == nil || !errors.Is(err, teamshared.ErrInvalidSplit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Split2D(%d, %d) = %v, %v, %v; want an invalid split error containing %q",
				tc.me, tc.xrange, x.PEs(), y.PEs(), err, tc.want)
		}
	}
}

func TestRounds(t *testing.T) {
	for n := -2; n <= 300; n++ {
		want := 0
		for 1<<want < n {
			want++
		}
		if got := teamshared.Rounds(n); got != want {
			t.Errorf("Rounds(%d) = %d, want %d", n, got, want)
		}
	}
	for _, tc := range []struct{ n, want int }{{1 << 16, 16}, {1<<16 + 1, 17}, {1 << 40, 40}} {
		if got := teamshared.Rounds(tc.n); got != tc.want {
			t.Errorf("Rounds(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func poolPanic(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	fn()
	return ""
}

func TestPool(t *testing.T) {
	for _, n := range []int{0, 1, 4, 5, 6, 7, 63, 64, 65, 127, 128, 129, 256, 300} {
		p := teamshared.NewPool(n)
		reserved := min(teamshared.Reserved, n)
		if got := p.InUse(); got != reserved {
			t.Errorf("NewPool(%d).InUse() = %d, want %d", n, got, reserved)
		}
		var got []int
		for {
			s, ok := p.Get()
			if !ok {
				break
			}
			if len(got) > n {
				t.Fatalf("NewPool(%d): Get handed out more than %d slots", n, n)
			}
			got = append(got, s)
			if p.InUse() != reserved+len(got) {
				t.Errorf("NewPool(%d): InUse %d after %d Gets", n, p.InUse(), len(got))
			}
		}
		// Every slot from Reserved to n-1, each once; never a reserved one.
		sorted := slices.Sorted(slices.Values(got))
		var want []int
		for s := teamshared.Reserved; s < n; s++ {
			want = append(want, s)
		}
		if !slices.Equal(sorted, want) {
			t.Errorf("NewPool(%d): slots handed out %v, want %v", n, sorted, want)
		}
		if _, ok := p.Get(); ok {
			t.Errorf("NewPool(%d): Get succeeded on an exhausted pool", n)
		}
		if p.InUse() != max(n, reserved) {
			t.Errorf("NewPool(%d): exhausted InUse = %d", n, p.InUse())
		}
		// Put back every third; Get returns exactly those.
		var back []int
		for i := 0; i < len(got); i += 3 {
			p.Put(got[i])
			back = append(back, got[i])
		}
		if p.InUse() != n-len(back) {
			t.Errorf("NewPool(%d): InUse %d after %d Puts", n, p.InUse(), len(back))
		}
		var again []int
		for range back {
			s, ok := p.Get()
			if !ok {
				t.Fatalf("NewPool(%d): Get failed with %d slots put back", n, len(back))
			}
			again = append(again, s)
		}
		slices.Sort(again)
		slices.Sort(back)
		if !slices.Equal(again, back) {
			t.Errorf("NewPool(%d): after Put %v, Get returned %v", n, back, again)
		}
		if _, ok := p.Get(); ok {
			t.Errorf("NewPool(%d): Get succeeded on an exhausted pool", n)
		}

		// Puts of slots that are not a created team's slot in use panic
		// and change nothing.
		bad := []int{-1, n, n + 64, 1 << 20}
		for s := 0; s < reserved; s++ {
			bad = append(bad, s)
		}
		if len(got) > 0 {
			p.Put(got[0])
			bad = append(bad, got[0]) // a double Put
		}
		for _, s := range bad {
			msg := poolPanic(func() { p.Put(s) })
			if !strings.Contains(msg, fmt.Sprintf("teamshared.Pool.Put: slot %d is not", s)) {
				t.Errorf("NewPool(%d).Put(%d): panic %q, want one naming the slot", n, s, msg)
			}
		}
		if len(got) > 0 {
			if s, ok := p.Get(); !ok || s != got[0] {
				t.Errorf("NewPool(%d): after the bad Puts Get = %d, %v, want %d", n, s, ok, got[0])
			}
		}
		if p.InUse() != max(n, reserved) {
			t.Errorf("NewPool(%d): InUse = %d after the bad Puts", n, p.InUse())
		}
	}
}

// TestPoolRandom interleaves Gets and Puts against a set model.
func TestPoolRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const n = 256
	p := teamshared.NewPool(n)
	live := map[int]bool{}
	for k := 0; k < 20000; k++ {
		if r.IntN(2) == 0 || len(live) == 0 {
			s, ok := p.Get()
			if ok != (len(live) < n-teamshared.Reserved) {
				t.Fatalf("step %d: Get ok = %v with %d live", k, ok, len(live))
			}
			if !ok {
				continue
			}
			if s < teamshared.Reserved || s >= n || live[s] {
				t.Fatalf("step %d: Get = %d (live %v)", k, s, live[s])
			}
			live[s] = true
		} else {
			for s := range live {
				p.Put(s)
				delete(live, s)
				break
			}
		}
		if p.InUse() != teamshared.Reserved+len(live) {
			t.Fatalf("step %d: InUse %d, want %d", k, p.InUse(), teamshared.Reserved+len(live))
		}
	}
}

// fuzzParent builds a valid parent from fuzz inputs: strided with a
// non-zero stride and non-negative PEs, or a list.
func fuzzParent(kind, a, b, n int) (teamshared.Members, []int) {
	size := 1 + int(uint(n)%64)
	switch uint(kind) % 3 {
	case 0:
		return teamshared.Strided(0, 1, size), teamshared.Strided(0, 1, size).PEs()
	case 1:
		stride := int(uint(b)%9) - 4
		if stride == 0 {
			stride = 1
		}
		start := int(uint(a) % 100)
		if stride < 0 {
			start += (size - 1) * -stride
		}
		m := teamshared.Strided(start, stride, size)
		return m, m.PEs()
	}
	r := rand.New(rand.NewPCG(uint64(a), uint64(b)))
	pes := r.Perm(size + 7)[:size]
	return teamshared.List(pes), pes
}

// checkValidSplit checks a split SplitStrided accepted: its members
// are inside the parent, distinct, and in stride order.
func checkValidSplit(t *testing.T, parent teamshared.Members, pes []int, start, stride, size int, got teamshared.Members) {
	t.Helper()
	what := fmt.Sprintf("%v.SplitStrided(%d, %d, %d)", pes, start, stride, size)
	if got.Size() != size || size < 1 || size > parent.Size() {
		t.Fatalf("%s accepted with %d members (parent %d)", what, got.Size(), parent.Size())
	}
	seen := map[int]bool{}
	for i := 0; i < size; i++ {
		pe := got.PE(i)
		j := parent.Index(pe)
		if j < 0 {
			t.Fatalf("%s: member %d is PE %d, not in the parent", what, i, pe)
		}
		if j != start+i*stride {
			t.Fatalf("%s: member %d is parent member %d, want %d", what, i, j, start+i*stride)
		}
		if seen[pe] {
			t.Fatalf("%s: PE %d twice", what, pe)
		}
		seen[pe] = true
		if got.Index(pe) != i {
			t.Fatalf("%s: Index(PE(%d)) = %d", what, i, got.Index(pe))
		}
	}
}

func FuzzSplitStrided(f *testing.F) {
	f.Add(0, 0, 0, 8, 0, 1, 8)
	f.Add(1, 3, 2, 10, 9, -1, 10)
	f.Add(2, 5, 6, 20, 3, 4, 5)
	f.Add(1, 1, 7, 33, 32, -8, 5)
	f.Add(0, 0, 0, 4, 2, 0, 1)
	f.Add(0, 0, 0, 4, 2, 0, 2)
	f.Add(0, 0, 0, 4, 4, 1, 1)
	f.Add(0, 0, 0, 4, 0, 1, 0)
	f.Add(0, 0, 0, 4, -1, 1, 1)
	// (size-1)*stride wrapping around to an in-range last member.
	f.Add(0, 0, 0, 9, 0, 1<<62, 5)
	f.Fuzz(func(t *testing.T, kind, a, b, n, start, stride, size int) {
		parent, pes := fuzzParent(kind, a, b, n)
		got, err := parent.SplitStrided(start, stride, size)
		want, ok := naiveSplitSafe(len(pes), start, stride, size)
		if err != nil {
			if !errors.Is(err, teamshared.ErrInvalidSplit) {
				t.Fatalf("error %v does not wrap ErrInvalidSplit", err)
			}
			if ok {
				t.Fatalf("%v.SplitStrided(%d, %d, %d): %v, want members at parent indices %v", pes, start, stride, size, err, want)
			}
			return
		}
		checkValidSplit(t, parent, pes, start, stride, size, got)
	})
}

// naiveSplitSafe is naiveSplit on parent indices, without overflow:
// it decides validity index by index, and refuses sizes larger than
// the parent before looping.
func naiveSplitSafe(n, start, stride, size int) ([]int, bool) {
	if size < 1 || size > n || stride == 0 && size > 1 || start < 0 || start >= n {
		return nil, false
	}
	out := make([]int, size)
	j := start
	for i := range out {
		if j < 0 || j >= n {
			return nil, false
		}
		out[i] = j
		if i+1 < size {
			if stride > n || stride < -n {
				return nil, false
			}
			j += stride
		}
	}
	return out, true
}

func FuzzSplit2D(f *testing.F) {
	f.Add(0, 0, 0, 6, 4, 5)
	f.Add(2, 1, 2, 7, 3, 6)
	f.Add(1, 9, 1, 5, 9, 0)
	f.Add(0, 0, 0, 1, 1, 0)
	f.Add(0, 0, 0, 8, 0, 0)
	f.Add(0, 0, 0, 8, 3, 8)
	f.Fuzz(func(t *testing.T, kind, a, b, n, xrange, me int) {
		parent, pes := fuzzParent(kind, a, b, n)
		x, y, err := parent.Split2D(me, xrange)
		if xrange < 1 || me < 0 || me >= len(pes) {
			if err == nil || !errors.Is(err, teamshared.ErrInvalidSplit) {
				t.Fatalf("Split2D(%d, %d) of %d members: err %v, want an invalid split", me, xrange, len(pes), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Split2D(%d, %d) of %v: %v", me, xrange, pes, err)
		}
		xi, yi := naive2D(len(pes), xrange, me)
		for _, c := range []struct {
			name string
			m    teamshared.Members
			idx  []int
		}{{"x", x, xi}, {"y", y, yi}} {
			if c.m.Size() != len(c.idx) {
				t.Fatalf("Split2D(%d, %d) of %v: %s has %d members, want %d", me, xrange, pes, c.name, c.m.Size(), len(c.idx))
			}
			for i, j := range c.idx {
				if c.m.PE(i) != pes[j] || c.m.Index(pes[j]) != i {
					t.Fatalf("Split2D(%d, %d) of %v: %s member %d is %d, want %d", me, xrange, pes, c.name, i, c.m.PE(i), pes[j])
				}
			}
		}
	})
}

// TestPoolConcurrent: goroutines of one PE that create and destroy
// teams on different parents at the same time (allowed by the spec
// under SHMEM_THREAD_MULTIPLE) share the PE's pool: no slot is ever
// handed out twice, and every slot comes back. Run it with -race.
func TestPoolConcurrent(t *testing.T) {
	const n, workers, rounds = 40, 4, 2000
	p := teamshared.NewPool(n)
	var owner [n]atomic.Int32 // 1 + the worker holding the slot, 0: free
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []int
			for r := range rounds {
				if s, ok := p.Get(); ok {
					if prev := owner[s].Swap(int32(w + 1)); prev != 0 {
						t.Errorf("slot %d handed to worker %d while worker %d holds it", s, w, prev-1)
						return
					}
					held = append(held, s)
				}
				if len(held) > 0 && (r%3 == 0 || len(held) > 4) {
					s := held[0]
					held = held[1:]
					owner[s].Store(0)
					p.Put(s)
				}
			}
			for _, s := range held {
				owner[s].Store(0)
				p.Put(s)
			}
		}()
	}
	wg.Wait()
	if got := p.InUse(); got != teamshared.Reserved {
		t.Errorf("InUse after every worker returned its slots = %d, want %d", got, teamshared.Reserved)
	}
}

// TestStridedNegativeSize: a negative size is a clear panic naming the
// function, not a later makeslice panic in PEs.
func TestStridedNegativeSize(t *testing.T) {
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, "teamshared.Strided: size -1") {
			t.Errorf("Strided(0, 1, -1) panicked with %q, want a message naming Strided and the size", r)
		}
	}()
	teamshared.Strided(0, 1, -1)
}

// TestSplit2DShortRow is the doc's example: 5 members in rows of 2;
// the last row is short, so column 1 has one member fewer.
func TestSplit2DShortRow(t *testing.T) {
	m := teamshared.Strided(0, 1, 5)
	for me, want := range [][]int{{0, 2, 4}, {1, 3}, {0, 2, 4}, {1, 3}, {0, 2, 4}} {
		_, y, err := m.Split2D(me, 2)
		if err != nil || !slices.Equal(y.PEs(), want) {
			t.Errorf("member %d: y team %v, %v; want %v", me, y.PEs(), err, want)
		}
	}
}
