package goshmem_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
	"github.com/goshmem/goshmem/teamshared"
)

// ---------------------------------------------------------------------
// Helpers of the team and collective tests.

// teamCfg is the configuration of the team tests.
var teamCfg = node.Config{HeapSize: 1 << 20}

// teamNs are the job sizes the team tests run with.
var teamNs = []int{1, 2, 3, 5, 8}

// teamShape is a team as one PE holds it, with its membership computed
// by arithmetic (world PE numbers in team order, as this PE's team has
// them; nil team on non-members).
type teamShape struct {
	name    string
	team    *goshmem.Team
	members []int
}

// seqPEs returns start, start+stride, ... (size of them).
func seqPEs(start, stride, size int) []int {
	out := make([]int, size)
	for i := range out {
		out[i] = start + i*stride
	}
	return out
}

// of2D returns the x and y memberships (in world PEs) of parent member
// me of parent (world PEs) split in rows of xrange: the definition of
// shmem_team_split_2d.
func of2D(parent []int, xrange, me int) (x, y []int) {
	xr := min(xrange, len(parent))
	for i, q := range parent {
		if i/xr == me/xr {
			x = append(x, q)
		}
		if i%xr == me%xr {
			y = append(y, q)
		}
	}
	return x, y
}

// makeShapes creates, collectively over the world, the team shapes
// the collective tests run on: the world, strided teams with positive
// and negative strides, teams without PE 0, a split of a split,
// one-PE teams, and the rows and columns of 2-D splits (the last row
// short). Every PE gets every shape; team is nil where it is not a
// member. It checks each team's MyPE and NPEs against the arithmetic.
func makeShapes(t *testing.T, p *goshmem.PE) []teamShape {
	me, n := p.MyPE(), p.NPEs()
	w := goshmem.TeamWorld(p)
	world := seqPEs(0, 1, n)
	shapes := []teamShape{{"world", w, world}}
	split := func(name string, parent *goshmem.Team, parentPEs []int, start, stride, size int) *goshmem.Team {
		var tm *goshmem.Team
		var err error
		if parent != nil {
			tm, err = parent.SplitStrided(start, stride, size, nil)
			if err != nil {
				panic(fmt.Sprintf("PE %d: %s: %v", me, name, err))
			}
		}
		m := make([]int, size)
		for i := range m {
			m[i] = parentPEs[start+i*stride]
		}
		shapes = append(shapes, teamShape{name, tm, m})
		return tm
	}
	rev := split("reversed", w, world, n-1, -1, n)
	if n >= 2 {
		split("odd", w, world, 1, 2, n/2)
		split("tail", w, world, 1, 1, n-1) // without PE 0
	}
	split("even-backwards", w, world, 2*((n-1)/2), -2, (n+1)/2)
	revPEs := seqPEs(n-1, -1, n)
	if n >= 3 {
		// Every other PE of the reversed world, from world PE n-2 down.
		split("split-of-reversed", rev, revPEs, 1, 2, (n-1)/2)
	}
	for _, xr := range []int{1, 2, 3} {
		if xr > 1 && xr >= n {
			continue
		}
		x, y, err := w.Split2D(xr, nil, nil)
		if err != nil {
			panic(fmt.Sprintf("PE %d: Split2D(%d): %v", me, xr, err))
		}
		xm, ym := of2D(world, xr, me)
		shapes = append(shapes,
			teamShape{fmt.Sprintf("row%d", xr), x, xm},
			teamShape{fmt.Sprintf("col%d", xr), y, ym})
	}
	if n >= 4 {
		// A 2-D split of a team that excludes PE 0, columns of 2.
		var tail *goshmem.Team
		for _, s := range shapes {
			if s.name == "tail" {
				tail = s.team
			}
		}
		if tail != nil {
			x, y, err := tail.Split2D(2, nil, nil)
			if err != nil {
				panic(fmt.Sprintf("PE %d: tail.Split2D: %v", me, err))
			}
			xm, ym := of2D(seqPEs(1, 1, n-1), 2, me-1)
			shapes = append(shapes, teamShape{"tail-row2", x, xm}, teamShape{"tail-col2", y, ym})
		} else {
			shapes = append(shapes, teamShape{"tail-row2", nil, nil}, teamShape{"tail-col2", nil, nil})
		}
	}
	for _, s := range shapes {
		idx := slices.Index(s.members, me)
		if (s.team != nil) != (idx >= 0) {
			t.Errorf("n=%d PE %d: team %s: handle %v but membership index %d", n, me, s.name, s.team != nil, idx)
			continue
		}
		if s.team == nil {
			if s.team.MyPE() != -1 || s.team.NPEs() != -1 {
				t.Errorf("n=%d PE %d: invalid team %s: MyPE %d NPEs %d, want -1 -1", n, me, s.name, s.team.MyPE(), s.team.NPEs())
			}
			continue
		}
		if s.team.MyPE() != idx || s.team.NPEs() != len(s.members) {
			t.Errorf("n=%d PE %d: team %s (%v): MyPE %d NPEs %d, want %d %d",
				n, me, s.name, s.members, s.team.MyPE(), s.team.NPEs(), idx, len(s.members))
		}
		for i, q := range s.members {
			if got := s.team.WorldPE(i); got != q {
				t.Errorf("n=%d PE %d: team %s: WorldPE(%d) = %d, want %d", n, me, s.name, i, got, q)
			}
		}
	}
	return shapes
}

// destroyShapes destroys the created teams (collective).
func destroyShapes(shapes []teamShape) {
	for _, s := range shapes {
		if s.team != nil && s.name != "world" {
			s.team.Destroy()
		}
	}
}

// panicMsg runs fn and returns its panic as a string ("" if none).
func panicMsg(fn func()) string {
	if v := panicOf(fn); v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// mustPairTeam splits TeamWorld of a 2-PE job into a new team of both.
func mustPairTeam(p *goshmem.PE) *goshmem.Team {
	tm, err := goshmem.TeamWorld(p).SplitStrided(0, 1, 2, nil)
	if err != nil {
		panic(err)
	}
	return tm
}

// perPE collects one value per PE of an in-process job.
type perPE[T any] struct {
	mu sync.Mutex
	v  map[int]T
}

func (c *perPE[T]) set(pe int, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v == nil {
		c.v = map[int]T{}
	}
	c.v[pe] = v
}

func (c *perPE[T]) get(pe int) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.v[pe]
	return v, ok
}

// ---------------------------------------------------------------------
// Predefined teams.

func TestTeamPredefined(t *testing.T) {
	for _, n := range teamNs {
		runCfg(t, teamCfg, n, func(p *goshmem.PE) {
			me := p.MyPE()
			for _, c := range []struct {
				name string
				tm   *goshmem.Team
			}{
				{"TeamWorld", goshmem.TeamWorld(p)},
				{"TeamShared", goshmem.TeamShared(p)},
				{"TeamHost", goshmem.TeamHost(p)},
				{"TeamNUMA", goshmem.TeamNUMA(p)},
			} {
				if c.tm.MyPE() != me || c.tm.NPEs() != n {
					t.Errorf("n=%d PE %d: %s: MyPE %d NPEs %d, want %d %d", n, me, c.name, c.tm.MyPE(), c.tm.NPEs(), me, n)
				}
				if cfg, err := c.tm.GetConfig(); cfg != (goshmem.TeamConfig{}) || err != nil {
					t.Errorf("n=%d: %s.GetConfig() = %+v, %v; want the zero config", n, c.name, cfg, err)
				}
				for q := 0; q < n; q++ {
					if c.tm.WorldPE(q) != q || c.tm.TranslatePE(q, goshmem.TeamWorld(p)) != q {
						t.Errorf("n=%d: %s: PE %d is world PE %d / %d", n, c.name, q, c.tm.WorldPE(q), c.tm.TranslatePE(q, goshmem.TeamWorld(p)))
					}
				}
				c.tm.Sync()
				c.tm.Barrier()
			}
			// The same handle every time.
			if goshmem.TeamWorld(p) != goshmem.TeamWorld(p) {
				t.Errorf("TeamWorld returns a new handle per call")
			}
			l := goshmem.TeamLeaders(p)
			if me == 0 {
				if l.MyPE() != 0 || l.NPEs() != 1 || l.WorldPE(0) != 0 {
					t.Errorf("n=%d: TeamLeaders on PE 0: MyPE %d NPEs %d", n, l.MyPE(), l.NPEs())
				}
				l.Sync()
			} else if l != nil || l.MyPE() != -1 || l.NPEs() != -1 {
				t.Errorf("n=%d PE %d: TeamLeaders = %v (MyPE %d), want the invalid team", n, me, l != nil, l.MyPE())
			}
		})
	}
}

// TestTeamSharedIsMapped: the members of TeamShared are exactly the
// PEs whose heaps this PE maps (Ptr, TeamPtr non-nil), in every
// transport; the docs and SHMEM_TEAM_SHARED promise it.
func TestTeamSharedIsMapped(t *testing.T) {
	for _, m := range modes {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/n=%d", m.name, n), func(t *testing.T) {
				runCfg(t, m.cfg, n, func(p *goshmem.PE) {
					x := mustCalloc[int64](p, 4)
					sh := goshmem.TeamShared(p)
					for i := 0; i < sh.NPEs(); i++ {
						if goshmem.TeamPtr(sh, x, i) == nil {
							t.Errorf("%s n=%d PE %d: TeamShared has %d members but TeamPtr to member %d (world PE %d) is nil: it is not mapped here",
								m.name, n, p.MyPE(), sh.NPEs(), i, sh.WorldPE(i))
						}
					}
					mapped := 0
					for q := 0; q < n; q++ {
						if goshmem.Ptr(p, x, q) != nil {
							mapped++
						}
					}
					if mapped != sh.NPEs() {
						t.Errorf("%s n=%d PE %d: %d heaps mapped, TeamShared has %d members", m.name, n, p.MyPE(), mapped, sh.NPEs())
					}
				})
			})
		}
	}
}

// ---------------------------------------------------------------------
// Splits and translation.

// TestTeamTranslatePE checks TranslatePE between every pair of teams a
// PE holds (world, strided, negative strides, 2-D rows and columns,
// splits of splits) against the arithmetic membership.
func TestTeamTranslatePE(t *testing.T) {
	for _, n := range teamNs {
		runCfg(t, teamCfg, n, func(p *goshmem.PE) {
			me := p.MyPE()
			shapes := makeShapes(t, p)
			var nilTeam *goshmem.Team
			for _, a := range shapes {
				if a.team == nil {
					continue
				}
				for _, b := range shapes {
					if b.team == nil {
						continue
					}
					for pe := -2; pe <= a.team.NPEs()+1; pe++ {
						want := -1
						if pe >= 0 && pe < len(a.members) {
							want = slices.Index(b.members, a.members[pe])
						}
						if got := a.team.TranslatePE(pe, b.team); got != want {
							t.Errorf("n=%d PE %d: %s(%v).TranslatePE(%d, %s(%v)) = %d, want %d",
								n, me, a.name, a.members, pe, b.name, b.members, got, want)
						}
					}
				}
				if got := a.team.TranslatePE(0, nilTeam); got != -1 {
					t.Errorf("TranslatePE to the invalid team = %d, want -1", got)
				}
				if got := nilTeam.TranslatePE(0, a.team); got != -1 {
					t.Errorf("TranslatePE from the invalid team = %d, want -1", got)
				}
			}
			// Configurations are the team's own.
			cfgTeam, err := goshmem.TeamWorld(p).SplitStrided(0, 1, n, &goshmem.TeamConfig{NumContexts: 3})
			if err != nil {
				panic(err)
			}
			x, y, err := goshmem.TeamWorld(p).Split2D(2, &goshmem.TeamConfig{NumContexts: 5}, &goshmem.TeamConfig{NumContexts: 7})
			if err != nil {
				panic(err)
			}
			ca, ea := cfgTeam.GetConfig()
			cb, eb := x.GetConfig()
			cc, ec := y.GetConfig()
			if a, b, c := ca.NumContexts, cb.NumContexts, cc.NumContexts; a != 3 || b != 5 || c != 7 || ea != nil || eb != nil || ec != nil {
				t.Errorf("team configs: NumContexts %d, %d, %d (errors %v, %v, %v); want 3, 5, 7", a, b, c, ea, eb, ec)
			}
			cfgTeam.Destroy()
			x.Destroy()
			y.Destroy()
			destroyShapes(shapes)
		})
	}
}

// TestTeamInvalidSplits: every PE gets (nil, error) with the same
// message, the error wraps teamshared.ErrInvalidSplit, and the parent
// stays in step.
func TestTeamInvalidSplits(t *testing.T) {
	const n = 5
	type split struct{ start, stride, size int }
	bad := []split{
		{0, 1, 0}, {0, 1, -1}, {-1, 1, 1}, {5, 1, 1}, {0, 0, 2}, {2, 0, 5},
		{0, 1, 6}, {1, 1, 5}, {3, 2, 2}, {1, -2, 2}, {4, -1, 6}, {0, 2, 4},
	}
	var msgs perPE[[]string]
	runCfg(t, teamCfg, n, func(p *goshmem.PE) {
		w := goshmem.TeamWorld(p)
		var mine []string
		for _, s := range bad {
			tm, err := w.SplitStrided(s.start, s.stride, s.size, nil)
			if tm != nil || err == nil {
				t.Errorf("PE %d: SplitStrided(%d, %d, %d) = %v, %v; want nil and an error", p.MyPE(), s.start, s.stride, s.size, tm != nil, err)
				if tm != nil {
					tm.Destroy()
				}
				mine = append(mine, "")
				continue
			}
			if !errors.Is(err, teamshared.ErrInvalidSplit) || !strings.HasPrefix(err.Error(), "goshmem.Team.SplitStrided: ") {
				t.Errorf("SplitStrided(%d, %d, %d): error %q: want goshmem.Team.SplitStrided: ... wrapping ErrInvalidSplit", s.start, s.stride, s.size, err)
			}
			mine = append(mine, err.Error())
		}
		for _, xr := range []int{0, -1} {
			x, y, err := w.Split2D(xr, nil, nil)
			if x != nil || y != nil || err == nil || !errors.Is(err, teamshared.ErrInvalidSplit) {
				t.Errorf("PE %d: Split2D(%d) = %v, %v, %v; want nil, nil, an invalid split", p.MyPE(), xr, x != nil, y != nil, err)
			}
			if err != nil {
				mine = append(mine, err.Error())
			}
		}
		// A split of a sub-team that is invalid for the sub-team only.
		sub, err := w.SplitStrided(1, 1, 3, nil)
		if err != nil {
			panic(err)
		}
		if sub != nil {
			bad, err := sub.SplitStrided(0, 1, 4, nil)
			if bad != nil || err == nil || !strings.Contains(err.Error(), "outside [0, 3)") {
				t.Errorf("sub-team split past its end = %v, %v", bad != nil, err)
			}
			if err != nil {
				mine = append(mine, err.Error())
			}
			sub.Destroy()
		}
		msgs.set(p.MyPE(), mine)
		// The world is still in step.
		x := mustMalloc[int64](p, 3)
		for i := range x {
			x[i] = int64(p.MyPE() + i)
		}
		goshmem.SumReduce(w, x, x)
		if x[0] != n*(n-1)/2 || x[2] != n*(n-1)/2+2*n {
			t.Errorf("PE %d: reduce after invalid splits = %v", p.MyPE(), x)
		}
	})
	first, _ := msgs.get(0)
	if len(first) != len(bad)+2 {
		t.Fatalf("PE 0 recorded %d errors, want %d", len(first), len(bad)+2)
	}
	for q := 1; q < n; q++ {
		got, _ := msgs.get(q)
		if !slices.Equal(got[:len(bad)+2], first) {
			t.Errorf("PE %d's errors differ from PE 0's:\n%q\n%q", q, got, first)
		}
	}
}

// TestTeamNonMembers: PEs outside a split get the invalid team and no
// error; the invalid team answers MyPE and NPEs with -1.
func TestTeamNonMembers(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		runCfg(t, teamCfg, n, func(p *goshmem.PE) {
			me := p.MyPE()
			w := goshmem.TeamWorld(p)
			for _, s := range []struct{ start, stride, size int }{{0, 0, 1}, {n - 1, 0, 1}, {1, 1, n - 1}, {n - 1, -1, n - 1}, {0, n - 1, 2}} {
				tm, err := w.SplitStrided(s.start, s.stride, s.size, nil)
				if err != nil {
					t.Errorf("n=%d: SplitStrided(%v): %v", n, s, err)
					continue
				}
				member := slices.Contains(seqPEs(s.start, s.stride, s.size), me)
				if (tm != nil) != member {
					t.Errorf("n=%d PE %d: SplitStrided(%v) handle %v, member %v", n, me, s, tm != nil, member)
				}
				if !member && (tm.MyPE() != -1 || tm.NPEs() != -1) {
					t.Errorf("n=%d PE %d: non-member's team: MyPE %d NPEs %d", n, me, tm.MyPE(), tm.NPEs())
				}
				if tm != nil {
					tm.Sync()
					tm.Destroy()
				} else {
					tm.Destroy() // destroying the invalid team does nothing
				}
			}
		})
	}
}

// ---------------------------------------------------------------------
// Team contexts and TeamPtr.

// TestTeamCtx: Put, P, Get, G and AMOs on a team context take
// team-relative PE numbers and land on the right world PE.
func TestTeamCtx(t *testing.T) {
	for _, m := range modes {
		ns := []int{2, 3, 5, 8}
		if m.name != "mapped" {
			ns = []int{3, 5}
		}
		for _, n := range ns {
			t.Run(fmt.Sprintf("%s/n=%d", m.name, n), func(t *testing.T) {
				cfg := m.cfg
				runCfg(t, cfg, n, func(p *goshmem.PE) { teamCtxSuite(t, p) })
			})
		}
	}
}

func teamCtxSuite(t *testing.T, p *goshmem.PE) {
	me, n := p.MyPE(), p.NPEs()
	shapes := makeShapes(t, p)
	buf := mustCalloc[int64](p, 2*n)
	ctr := mustCalloc[int64](p, 2)
	for k, s := range shapes {
		clear(buf)
		clear(ctr)
		p.BarrierAll()
		tn := len(s.members)
		var fetched int64 = -1
		if s.team != nil {
			i := s.team.MyPE()
			c, err := s.team.CtxCreate(0)
			if err != nil {
				panic(err)
			}
			right := (i + 1) % tn
			goshmem.Put(c, buf[i:i+1], []int64{int64(1000*k + i)}, right)
			goshmem.P(c, &buf[n+i], int64(2000*k+i), (i+tn-1)%tn)
			fetched = goshmem.AtomicFetchAdd(c, &ctr[0], int64(1)<<i, 0)
			goshmem.AtomicAdd(c, &ctr[1], int64(i+1), tn-1)
			c.Quiet()
			if msg := panicMsg(func() { goshmem.Put(c, buf[:1], buf[:1], tn) }); !strings.Contains(msg, fmt.Sprintf("goshmem.Put: PE %d out of range [0, %d)", tn, tn)) {
				t.Errorf("%s: Put to team PE %d: panic %q", s.name, tn, msg)
			}
			if msg := panicMsg(func() { goshmem.AtomicFetchAdd(c, &ctr[0], 1, -1) }); !strings.Contains(msg, fmt.Sprintf("goshmem.AtomicFetchAdd: PE -1 out of range [0, %d)", tn)) {
				t.Errorf("%s: AMO to team PE -1: panic %q", s.name, msg)
			}
			p.BarrierAll()
			// What landed here, by world PE.
			for j := 0; j < 2*n; j++ {
				want := int64(0)
				if j == (i+tn-1)%tn {
					want = int64(1000*k + j)
				}
				if j == n+(i+1)%tn {
					want = int64(2000*k + (i+1)%tn)
				}
				if buf[j] != want {
					t.Errorf("%s(%v) PE %d (team %d): buf[%d] = %d, want %d", s.name, s.members, me, i, j, buf[j], want)
				}
			}
			if i == 0 && ctr[0] != int64(1)<<tn-1 {
				t.Errorf("%s(%v): counter on team PE 0 (world %d) = %#x, want %#x", s.name, s.members, me, ctr[0], int64(1)<<tn-1)
			}
			if i == tn-1 && ctr[1] != int64(tn*(tn+1)/2) {
				t.Errorf("%s(%v): counter on team PE %d = %d, want %d", s.name, s.members, tn-1, ctr[1], tn*(tn+1)/2)
			}
			if fetched < 0 || fetched >= int64(1)<<tn || fetched&(int64(1)<<i) != 0 {
				t.Errorf("%s: fetched %#x", s.name, fetched)
			}
			// Reads with team numbers: G and Get of every member.
			got := make([]int64, 1)
			for j := 0; j < tn; j++ {
				want := int64(1000*k + (j+tn-1)%tn)
				if v := goshmem.G(c, &buf[(j+tn-1)%tn], j); v != want {
					t.Errorf("%s: G from team PE %d (world %d) = %d, want %d", s.name, j, s.members[j], v, want)
				}
				goshmem.Get(c, got, buf[(j+tn-1)%tn:(j+tn-1)%tn+1], j)
				if got[0] != want {
					t.Errorf("%s: Get from team PE %d = %d, want %d", s.name, j, got[0], want)
				}
				if v := goshmem.AtomicFetch(c, &ctr[1], j); (j == tn-1) != (v == int64(tn*(tn+1)/2)) {
					t.Errorf("%s: AtomicFetch from team PE %d = %d", s.name, j, v)
				}
			}
			c.Destroy()
		} else {
			p.BarrierAll()
			if slices.ContainsFunc(buf, func(v int64) bool { return v != 0 }) || ctr[0] != 0 || ctr[1] != 0 {
				t.Errorf("%s: non-member PE %d was written: %v %v", s.name, me, buf, ctr)
			}
		}
		p.BarrierAll()
	}
	destroyShapes(shapes)
}

// TestTeamPtr: TeamPtr(t, x, i) is Ptr to t's member i; nil where its
// heap is not mapped (CMA).
func TestTeamPtr(t *testing.T) {
	for _, cfg := range []node.Config{teamCfg, {HeapSize: 1 << 20, Transport: "cma"}} {
		for _, n := range []int{3, 5} {
			runCfg(t, cfg, n, func(p *goshmem.PE) {
				me := p.MyPE()
				shapes := makeShapes(t, p)
				x := mustCalloc[int64](p, 64)
				for k, s := range shapes {
					if s.team != nil {
						i := s.team.MyPE()
						for j, q := range s.members {
							r := goshmem.TeamPtr(s.team, x, j)
							want := goshmem.Ptr(p, x, q)
							if addr(r) != addr(want) || len(r) != len(x) && r != nil {
								t.Errorf("%s: TeamPtr to %d = %#x, Ptr to world %d = %#x", s.name, j, addr(r), q, addr(want))
							}
							if (r != nil) != (cfg.Transport != "cma" || q == me) {
								t.Errorf("transport %q: %s: TeamPtr to member %d (world %d) non-nil %v", cfg.Transport, s.name, j, q, r != nil)
							}
							if r != nil {
								r[i] = int64(100*k + i + 1)
							} else {
								goshmem.P(p.Ctx(), &x[i], int64(100*k+i+1), q)
							}
						}
						if msg := panicMsg(func() { goshmem.TeamPtr(s.team, x, len(s.members)) }); !strings.Contains(msg, fmt.Sprintf("goshmem.TeamPtr: PE %d out of range [0, %d) of the team", len(s.members), len(s.members))) {
							t.Errorf("TeamPtr out of range: panic %q", msg)
						}
					}
					p.BarrierAll()
					for j := range x {
						want := int64(0)
						if s.team != nil && j < len(s.members) {
							want = int64(100*k + j + 1)
						}
						if x[j] != want {
							t.Errorf("%s: PE %d: x[%d] = %d, want %d", s.name, me, j, x[j], want)
						}
					}
					p.BarrierAll()
					clear(x)
					p.BarrierAll()
				}
				destroyShapes(shapes)
			})
		}
	}
}

// ---------------------------------------------------------------------
// Misuse.

// teamRoutines returns a call of every routine that takes a team, by
// the routine name its panics must carry: with the invalid team, the
// collectives (the first len(teamQueries) entries are the routines the
// spec gives an answer for the invalid team, see TestTeamInvalid).
func teamRoutines(tm *goshmem.Team, x []int64) []struct {
	name string
	fn   func()
} {
	return append(teamQueries(tm, x), teamCollectives(tm, x)...)
}

func teamQueries(tm *goshmem.Team, x []int64) []struct {
	name string
	fn   func()
} {
	return []struct {
		name string
		fn   func()
	}{
		{"Team.GetConfig", func() { _, _ = tm.GetConfig() }},
		{"TeamWorldPE", func() { tm.WorldPE(0) }},
		{"Team.CtxCreate", func() { tm.CtxCreate(0) }},
		{"TeamPtr", func() { goshmem.TeamPtr(tm, x, 0) }},
		{"Team.SplitStrided", func() { tm.SplitStrided(0, 1, 1, nil) }},
		{"Team.Split2D", func() { tm.Split2D(1, nil, nil) }},
	}
}

func teamCollectives(tm *goshmem.Team, x []int64) []struct {
	name string
	fn   func()
} {
	return []struct {
		name string
		fn   func()
	}{
		{"Team.Sync", func() { tm.Sync() }},
		{"Team.Barrier", func() { tm.Barrier() }},
		{"SumReduce", func() { goshmem.SumReduce(tm, x, x) }},
		{"ProdReduce", func() { goshmem.ProdReduce(tm, x, x) }},
		{"MinReduce", func() { goshmem.MinReduce(tm, x, x) }},
		{"MaxReduce", func() { goshmem.MaxReduce(tm, x, x) }},
		{"AndReduce", func() { goshmem.AndReduce(tm, x, x) }},
		{"OrReduce", func() { goshmem.OrReduce(tm, x, x) }},
		{"XorReduce", func() { goshmem.XorReduce(tm, x, x) }},
		{"Broadcast", func() { goshmem.Broadcast(tm, x, x, 0) }},
		{"FCollect", func() { goshmem.FCollect(tm, x, x[:1]) }},
		{"Collect", func() { goshmem.Collect(tm, x, x[:1]) }},
		{"Alltoalls", func() { goshmem.Alltoalls(tm, x, x, 1, 1, 1) }},
		{"Alltoall", func() { goshmem.Alltoall(tm, x, x, 1) }},
		{"SumInscan", func() { goshmem.SumInscan(tm, x, x) }},
		{"SumExscan", func() { goshmem.SumExscan(tm, x, x) }},
	}
}

// TestTeamInvalid: every routine that takes a team, given the invalid
// team (nil, SHMEM_TEAM_INVALID), does what OpenSHMEM 1.5 says: the
// queries answer -1, the splits and shmem_team_create_ctx create
// nothing and return an error on every PE, shmem_team_ptr returns
// NULL, shmem_team_destroy does nothing; the collectives, for which the
// invalid team is a programmer error, panic naming the routine and the
// team argument (never a nil dereference).
func TestTeamInvalid(t *testing.T) {
	runCfg(t, teamCfg, 2, func(p *goshmem.PE) {
		x := mustCalloc[int64](p, 8)
		var inv *goshmem.Team
		w := goshmem.TeamWorld(p)
		for _, c := range []struct {
			name      string
			got, want int
		}{
			{"MyPE", inv.MyPE(), -1},
			{"NPEs", inv.NPEs(), -1},
			{"TranslatePE from it", inv.TranslatePE(0, w), -1},
			{"TranslatePE into it", w.TranslatePE(0, inv), -1},
			{"WorldPE", inv.WorldPE(0), -1},
		} {
			if c.got != c.want {
				t.Errorf("invalid team: %s = %d, want %d", c.name, c.got, c.want)
			}
		}
		check := func(name string, fn func() error) {
			t.Helper()
			var err error
			if msg := panicMsg(func() { err = fn() }); msg != "" {
				t.Errorf("%s on the invalid team panicked: %s", name, msg)
				return
			}
			if !errors.Is(err, goshmem.ErrInvalidTeam) || !strings.HasPrefix(err.Error(), "goshmem."+name+": ") {
				t.Errorf("%s on the invalid team: error %v, want goshmem.%s: ... wrapping ErrInvalidTeam", name, err, name)
			}
		}
		check("Team.SplitStrided", func() error {
			tm, err := inv.SplitStrided(0, 1, 1, nil)
			if tm != nil {
				t.Errorf("SplitStrided on the invalid team made a team")
			}
			return err
		})
		check("Team.Split2D", func() error {
			xt, yt, err := inv.Split2D(1, nil, nil)
			if xt != nil || yt != nil {
				t.Errorf("Split2D on the invalid team made teams")
			}
			return err
		})
		check("Team.CtxCreate", func() error {
			c, err := inv.CtxCreate(0)
			if c != nil {
				t.Errorf("CtxCreate on the invalid team made a context")
			}
			return err
		})
		check("Team.GetConfig", func() error {
			cfg, err := inv.GetConfig()
			if cfg != (goshmem.TeamConfig{}) {
				t.Errorf("GetConfig on the invalid team = %+v, want the zero config", cfg)
			}
			return err
		})
		if msg := panicMsg(func() {
			if r := goshmem.TeamPtr(inv, x, 0); r != nil {
				t.Errorf("TeamPtr on the invalid team = %p, want nil", r)
			}
			inv.Destroy()
		}); msg != "" {
			t.Errorf("TeamPtr or Destroy on the invalid team panicked: %s", msg)
		}
		for _, r := range teamCollectives(inv, x) {
			want := "goshmem." + r.name + ": the team argument is SHMEM_TEAM_INVALID"
			if msg := panicMsg(r.fn); !strings.HasPrefix(msg, want) {
				t.Errorf("%s on the invalid team: panic %q, want %q", r.name, msg, want)
			}
		}
		// The job is still in step: a collective on the world works.
		x[0] = int64(p.MyPE() + 1)
		goshmem.SumReduce(w, x[1:2], x[:1])
		if x[1] != 3 {
			t.Errorf("sum after the invalid-team calls = %d, want 3", x[1])
		}
	})
}

func TestTeamInvalidAndDestroyedPanic(t *testing.T) {
	runCfg(t, teamCfg, 2, func(p *goshmem.PE) {
		x := mustCalloc[int64](p, 8)
		var inv *goshmem.Team
		if inv.MyPE() != -1 || inv.NPEs() != -1 || inv.TranslatePE(0, goshmem.TeamWorld(p)) != -1 {
			t.Errorf("invalid team: MyPE %d NPEs %d", inv.MyPE(), inv.NPEs())
		}
		dead := mustPairTeam(p)
		other := dead.TranslatePE(1, goshmem.TeamWorld(p))
		dead.Destroy()
		if got := dead.TranslatePE(1, goshmem.TeamWorld(p)); got != -1 || other != 1 {
			t.Errorf("TranslatePE on a destroyed team = %d (before: %d), want -1", got, other)
		}
		if got := goshmem.TeamWorld(p).TranslatePE(1, dead); got != -1 {
			t.Errorf("TranslatePE into a destroyed team = %d, want -1", got)
		}
		for _, r := range append(teamRoutines(dead, x), struct {
			name string
			fn   func()
		}{"Team.Destroy", func() { dead.Destroy() }}) {
			want := "goshmem." + r.name + ": the team argument was destroyed"
			if msg := panicMsg(r.fn); !strings.Contains(msg, want) {
				t.Errorf("%s on a destroyed team: panic %q, want %q", r.name, msg, want)
			}
		}
		for _, c := range []struct {
			name string
			tm   *goshmem.Team
		}{
			{"TeamWorld", goshmem.TeamWorld(p)}, {"TeamShared", goshmem.TeamShared(p)},
			{"TeamHost", goshmem.TeamHost(p)}, {"TeamNUMA", goshmem.TeamNUMA(p)},
			{"TeamLeaders", goshmem.TeamLeaders(p)},
		} {
			if c.tm == nil {
				continue
			}
			want := "goshmem.Team.Destroy: " + c.name + " is predefined and cannot be destroyed"
			if msg := panicMsg(c.tm.Destroy); msg != want {
				t.Errorf("destroying %s: panic %q, want %q", c.name, msg, want)
			}
		}
		// Argument errors, caught before any synchronization.
		w := goshmem.TeamWorld(p)
		for _, c := range []struct {
			fn   func()
			want string
		}{
			{func() { w.WorldPE(2) }, "goshmem.TeamWorldPE: PE 2 out of range [0, 2) of the team"},
			{func() { w.WorldPE(-1) }, "goshmem.TeamWorldPE: PE -1 out of range [0, 2) of the team"},
			{func() { goshmem.Broadcast(w, x, x, 2) }, "goshmem.Broadcast: root PE 2 out of range [0, 2) of the team"},
			{func() { goshmem.Broadcast(w, x[:2], x[:3], 0) }, "goshmem.Broadcast: dest has 2 elements but source has 3"},
			{func() { goshmem.SumReduce(w, x[:2], x[:3]) }, "goshmem.SumReduce: dest has 2 elements but source has 3"},
			{func() { goshmem.XorReduce(w, x[:2], x[:3]) }, "goshmem.XorReduce: dest has 2 elements but source has 3"},
			{func() { goshmem.SumInscan(w, x[:2], x[:3]) }, "goshmem.SumInscan: dest has 2 elements but source has 3"},
			{func() { goshmem.FCollect(w, x[:3], x[:2]) }, "goshmem.FCollect: dest has 3 elements, want at least 4"},
			{func() { goshmem.Alltoalls(w, x, x, 0, 1, 1) }, "goshmem.Alltoalls: strides must be >= 1"},
			{func() { goshmem.Alltoalls(w, x, x, 1, 1, -1) }, "goshmem.Alltoalls: strides must be >= 1 and n >= 0"},
			{func() { goshmem.Alltoalls(w, x[:2], x, 2, 1, 1) }, "goshmem.Alltoalls: dest has 2 elements, 3 needed"},
			{func() { goshmem.Alltoalls(w, x, x[:3], 1, 3, 1) }, "goshmem.Alltoalls: source has 3 elements, 4 needed"},
			// Sizes whose element counts overflow an int: refused before
			// any synchronization, not a runtime error after it.
			{func() { goshmem.Alltoalls(w, x, x, 1, 1, 1<<62) }, "goshmem.Alltoalls: n 4611686018427387904 elements per PE for 2 PEs are more than fit in an int"},
			{func() { goshmem.Alltoall(w, x, x, math.MaxInt/2+1) }, "goshmem.Alltoall: n 4611686018427387904 elements per PE for 2 PEs"},
			{func() { goshmem.Alltoalls(w, x, x, math.MaxInt, 1, 1) }, "goshmem.Alltoalls: dest has 8 elements, more than fit in an int needed for 2 elements at stride 9223372036854775807"},
			{func() { goshmem.Alltoalls(w, x, x, 1, math.MaxInt/2, 2) }, "goshmem.Alltoalls: source has 8 elements, more than fit in an int needed for 4 elements at stride 4611686018427387903"},
		} {
			if msg := panicMsg(c.fn); !strings.Contains(msg, c.want) {
				t.Errorf("panic %q, want %q", msg, c.want)
			}
		}
		// Collect finds a short dest only after the members published
		// their lengths: every member panics, together.
		if msg := panicMsg(func() { goshmem.Collect(w, x[:2], x[:p.MyPE()+1]) }); !strings.Contains(msg, "goshmem.Collect: dest has 2 elements, the members' sources total 3") {
			t.Errorf("Collect into a short dest: panic %q", msg)
		}
		// The world is still in step after all of that.
		for i := range x {
			x[i] = int64(p.MyPE()*10 + i)
		}
		goshmem.SumReduce(w, x, x)
		if x[0] != 10 || x[7] != 24 {
			t.Errorf("reduce after the misuse: %v", x)
		}
	})
}

// TestAlltoallPanicNamesAlltoall: the panics of Alltoall name
// Alltoall, the routine the program called, not Alltoalls.
func TestAlltoallPanicNamesAlltoall(t *testing.T) {
	runCfg(t, teamCfg, 1, func(p *goshmem.PE) {
		x := mustCalloc[int64](p, 4)
		var inv *goshmem.Team
		for _, c := range []struct {
			fn   func()
			want string
		}{
			{func() { goshmem.Alltoall(inv, x, x, 1) }, "goshmem.Alltoall: "},
			{func() { goshmem.Alltoall(goshmem.TeamWorld(p), x[:1], x, 2) }, "goshmem.Alltoall: "},
		} {
			if msg := panicMsg(c.fn); !strings.HasPrefix(msg, c.want) {
				t.Errorf("Alltoall misuse: panic %q, want it to start with %q", msg, c.want)
			}
		}
	})
}

// ---------------------------------------------------------------------
// Slots: reuse and exhaustion.

// maxLiveTeams is how many created teams a PE can belong to at once.
const maxLiveTeams = node.TeamSlots - teamshared.Reserved

// TestTeamSlotReuse: 1000 rounds of create and destroy leave the slot
// pool as it was (200 live teams at once still work afterwards) and the
// Go heap bounded.
func TestTeamSlotReuse(t *testing.T) {
	if maxLiveTeams != 250 {
		t.Errorf("a PE can belong to %d created teams, want 250 (255 slots, 5 predefined)", maxLiveTeams)
	}
	const n, rounds = 3, 1000
	var grew atomic.Int64
	runCfg(t, teamCfg, n, func(p *goshmem.PE) {
		me := p.MyPE()
		w := goshmem.TeamWorld(p)
		x := mustCalloc[int64](p, 2)
		var ms runtime.MemStats
		var before uint64
		for r := 0; r < rounds; r++ {
			if r == 100 {
				p.BarrierAll()
				if me == 0 {
					runtime.GC()
					runtime.ReadMemStats(&ms)
					before = ms.HeapAlloc
				}
				p.BarrierAll()
			}
			switch r % 4 {
			case 0, 1:
				start, stride := 0, 1
				if r%4 == 1 {
					start, stride = n-1, -1
				}
				tm, err := w.SplitStrided(start, stride, n, nil)
				if err != nil {
					panic(fmt.Sprintf("round %d: %v", r, err))
				}
				if r%50 == 0 {
					x[0] = int64(r + me)
					goshmem.SumReduce(tm, x[1:], x[:1])
					if x[1] != int64(n*r+n*(n-1)/2) {
						t.Errorf("round %d: sum %d", r, x[1])
					}
				}
				tm.Destroy()
			case 2:
				tm, err := w.SplitStrided(1, 1, n-1, nil)
				if err != nil {
					panic(err)
				}
				tm.Destroy() // nil on PE 0
			case 3:
				xt, yt, err := w.Split2D(2, nil, nil)
				if err != nil {
					panic(err)
				}
				xt.Destroy()
				yt.Destroy()
			}
		}
		p.BarrierAll()
		if me == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			grew.Store(int64(ms.HeapAlloc) - int64(before))
		}
		// The pool is whole: 200 live teams at once.
		teams := make([]*goshmem.Team, 0, 200)
		for i := 0; i < 200; i++ {
			tm, err := w.SplitStrided(i%n, 0, 1, nil) // one PE each...
			if err != nil {
				panic(fmt.Sprintf("one-PE team %d after %d rounds: %v", i, rounds, err))
			}
			if tm != nil {
				tm.Destroy()
			}
			tm, err = w.SplitStrided(0, 1, n, nil) // ...and all of them
			if err != nil {
				panic(fmt.Sprintf("live team %d after %d rounds: %v", i, rounds, err))
			}
			teams = append(teams, tm)
		}
		for i, tm := range teams {
			if i%40 == 0 || i == len(teams)-1 {
				x[0] = int64(i * (me + 1))
				goshmem.SumReduce(tm, x[1:], x[:1])
				if x[1] != int64(i*n*(n+1)/2) {
					t.Errorf("live team %d: sum %d, want %d", i, x[1], i*n*(n+1)/2)
				}
			}
		}
		for _, tm := range teams {
			tm.Destroy()
		}
	})
	if g := grew.Load(); g > 4<<20 {
		t.Errorf("the Go heap grew by %d bytes over %d create/destroy rounds", g, rounds-100)
	}
}

// TestTeamExhaustion: the 252nd live team fails on every member with
// an error that says to destroy teams, the job stays usable, and
// destroying a team makes room again.
func TestTeamExhaustion(t *testing.T) {
	const n = 3
	var msgs perPE[string]
	runCfg(t, teamCfg, n, func(p *goshmem.PE) {
		me := p.MyPE()
		w := goshmem.TeamWorld(p)
		var teams []*goshmem.Team
		for i := 0; i < maxLiveTeams; i++ {
			tm, err := w.SplitStrided(0, 1, n, nil)
			if err != nil || tm == nil {
				panic(fmt.Sprintf("live team %d of %d: %v", i+1, maxLiveTeams, err))
			}
			teams = append(teams, tm)
		}
		tm, err := w.SplitStrided(n-1, -1, n, nil)
		if tm != nil || err == nil {
			t.Errorf("PE %d: team %d = %v, %v; want nil and an error", me, maxLiveTeams+1, tm != nil, err)
		} else {
			checkContains(t, "out of slots", err.Error(), "goshmem.Team.SplitStrided", "destroy", fmt.Sprint(maxLiveTeams))
			msgs.set(me, err.Error())
		}
		// Split2D fails the same way, on every PE.
		x, y, err := w.Split2D(2, nil, nil)
		if x != nil || y != nil || err == nil || !strings.Contains(err.Error(), "destroy") {
			t.Errorf("PE %d: Split2D out of slots = %v, %v, %v", me, x != nil, y != nil, err)
		}
		// Still usable: collectives on the world and on the live teams.
		buf := mustCalloc[int64](p, 4)
		buf[0] = int64(me + 1)
		goshmem.SumReduce(w, buf[1:2], buf[:1])
		goshmem.SumReduce(teams[maxLiveTeams-1], buf[2:3], buf[:1])
		if buf[1] != n*(n+1)/2 || buf[2] != n*(n+1)/2 {
			t.Errorf("PE %d: sums after exhaustion %v", me, buf)
		}
		// Destroying one makes room for exactly one.
		teams[7].Destroy()
		tm, err = w.SplitStrided(n-1, -1, n, nil)
		if err != nil || tm.MyPE() != n-1-me {
			t.Fatalf("PE %d: after a destroy: %v", me, err)
		}
		teams[7] = tm
		if tm, err := w.SplitStrided(0, 1, n, nil); err == nil {
			t.Errorf("PE %d: a 252nd live team again: %v", me, tm != nil)
		}
		goshmem.Broadcast(teams[7], buf[:1], buf[:1], 0) // root: world PE n-1
		if buf[0] != n {
			t.Errorf("PE %d: broadcast on the recreated team: %d", me, buf[0])
		}
		for _, tm := range teams {
			tm.Destroy()
		}
		// Back to a whole pool.
		for i := 0; i < maxLiveTeams; i++ {
			tm, err := w.SplitStrided(0, 1, n, nil)
			if err != nil {
				panic(fmt.Sprintf("after destroying all: team %d: %v", i, err))
			}
			teams[i] = tm
		}
		for _, tm := range teams {
			tm.Destroy()
		}
	})
	m0, _ := msgs.get(0)
	for q := 1; q < n; q++ {
		if m, _ := msgs.get(q); m != m0 {
			t.Errorf("PE %d's error %q differs from PE 0's %q", q, m, m0)
		}
	}
}

// TestTeamExhaustionOnePE: only PE 0 is out of slots. Every member of a
// team with PE 0 fails, naming PE 0; teams without it still work; and
// Split2D must fail on every PE of the parent, together, rather than
// leave the PEs whose row could be built waiting on the others.
func TestTeamExhaustionOnePE(t *testing.T) {
	for _, n := range []int{3, 4} {
		var returned atomic.Int32
		err := runErrCfg(t, teamCfg, n, func(p *goshmem.PE) {
			me := p.MyPE()
			w := goshmem.TeamWorld(p)
			var mine []*goshmem.Team // PE 0's one-PE teams
			for i := 0; i < maxLiveTeams; i++ {
				tm, err := w.SplitStrided(0, 0, 1, nil)
				if err != nil {
					panic(err)
				}
				if (tm != nil) != (me == 0) {
					t.Errorf("PE %d: one-PE team of PE 0: handle %v", me, tm != nil)
				}
				if tm != nil {
					mine = append(mine, tm)
				}
			}
			tm, err := w.SplitStrided(0, 1, n, nil)
			if tm != nil || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("PE 0 belongs to %d teams", maxLiveTeams)) || !strings.Contains(err.Error(), "destroy") {
				t.Errorf("n=%d PE %d: team with the exhausted PE 0 = %v, %v", n, me, tm != nil, err)
			}
			tail, err := w.SplitStrided(1, 1, n-1, nil)
			if err != nil || (tail != nil) != (me != 0) {
				t.Errorf("n=%d PE %d: team without PE 0 = %v, %v", n, me, tail != nil, err)
			}
			if tail != nil {
				tail.Sync()
				tail.Destroy()
			}

			x, y, err := w.Split2D(2, nil, nil)
			returned.Add(1)
			deadline := time.Now().Add(1500 * time.Millisecond)
			for returned.Load() < int32(n) {
				if time.Now().After(deadline) {
					panic(fmt.Sprintf("PE %d returned from Split2D (x %v, y %v, err %v) but after 1.5 s only %d of %d PEs have: the others wait in the parent team for PEs that left",
						me, x != nil, y != nil, err, returned.Load(), n))
				}
				time.Sleep(time.Millisecond)
			}
			if x != nil || y != nil || err == nil {
				t.Errorf("n=%d PE %d: Split2D with PE 0 out of slots = %v, %v, %v; want nil, nil, an error on every PE",
					n, me, x != nil, y != nil, err)
			}
			// With one slot free on PE 0, the x teams can be created and
			// the y teams cannot: then both are invalid on every PE
			// (OpenSHMEM 1.5, shmem_team_split_2d), and the x team made
			// meanwhile is destroyed again, so PE 0's slot is free: a
			// one-PE team of PE 0 can still be made after the call.
			if me == 0 {
				mine[len(mine)-1].Destroy()
				mine = mine[:len(mine)-1]
			}
			x, y, err = w.Split2D(2, nil, nil)
			if x != nil || y != nil || err == nil || !strings.Contains(err.Error(), "PE 0 belongs to") {
				t.Errorf("n=%d PE %d: Split2D with one slot left on PE 0 = x %v, y %v, %v; want nil, nil and an error naming PE 0 on every PE",
					n, me, x != nil, y != nil, err)
			}
			last, err := w.SplitStrided(0, 0, 1, nil)
			if err != nil || (last != nil) != (me == 0) {
				t.Errorf("n=%d PE %d: PE 0's last slot after the failed Split2D: team %v, %v (the row made meanwhile must be destroyed)", n, me, last != nil, err)
			}
			if last != nil {
				mine = append(mine, last)
			}
			for _, tm := range mine {
				tm.Destroy()
			}
			// The parent is in step and the pool is back.
			x, y, err = w.Split2D(2, nil, nil)
			if err != nil {
				panic(fmt.Sprintf("Split2D after freeing PE 0's slots: %v", err))
			}
			buf := mustCalloc[int64](p, 2)
			buf[0] = int64(me)
			goshmem.SumReduce(w, buf[1:], buf[:1])
			if buf[1] != int64(n*(n-1)/2) {
				t.Errorf("PE %d: world sum %d", me, buf[1])
			}
			x.Destroy()
			y.Destroy()
		})
		if err != nil {
			t.Errorf("n=%d: %v", n, err)
		}
	}
}

// TestTeamSplit2D: for every xrange (beyond the team's size too) every
// PE's x and y teams are its row and column of the row-major layout,
// and every member of a team sees the same membership.
func TestTeamSplit2D(t *testing.T) {
	for _, n := range teamNs {
		runCfg(t, teamCfg, n, func(p *goshmem.PE) {
			me := p.MyPE()
			all := mustCalloc[int64](p, n)
			mine := mustCalloc[int64](p, 1)
			mine[0] = int64(me)
			parents := []struct {
				name string
				tm   *goshmem.Team
				pes  []int
			}{{"world", goshmem.TeamWorld(p), seqPEs(0, 1, n)}}
			rev, err := goshmem.TeamWorld(p).SplitStrided(n-1, -1, n, nil)
			if err != nil {
				panic(err)
			}
			parents = append(parents, struct {
				name string
				tm   *goshmem.Team
				pes  []int
			}{"reversed", rev, seqPEs(n-1, -1, n)})
			for _, par := range parents {
				for xrange := 1; xrange <= n+2; xrange++ {
					x, y, err := par.tm.Split2D(xrange, nil, nil)
					if err != nil {
						t.Errorf("n=%d %s.Split2D(%d): %v", n, par.name, xrange, err)
						continue
					}
					wx, wy := of2D(par.pes, xrange, slices.Index(par.pes, me))
					for _, c := range []struct {
						axis string
						tm   *goshmem.Team
						want []int
					}{{"x", x, wx}, {"y", y, wy}} {
						if c.tm.NPEs() != len(c.want) || c.tm.MyPE() != slices.Index(c.want, me) {
							t.Errorf("n=%d %s.Split2D(%d) PE %d: %s team MyPE %d NPEs %d, want %d of %v",
								n, par.name, xrange, me, c.axis, c.tm.MyPE(), c.tm.NPEs(), slices.Index(c.want, me), c.want)
							continue
						}
						// What the members themselves say: their world numbers in team order.
						goshmem.FCollect(c.tm, all[:c.tm.NPEs()], mine)
						for i, q := range c.want {
							if all[i] != int64(q) || c.tm.WorldPE(i) != q {
								t.Errorf("n=%d %s.Split2D(%d) PE %d: %s member %d is %d (WorldPE %d), want %d",
									n, par.name, xrange, me, c.axis, i, all[i], c.tm.WorldPE(i), q)
							}
						}
						c.tm.Barrier() // all is reused
					}
					x.Destroy()
					y.Destroy()
				}
			}
			rev.Destroy()
		})
	}
}

// TestTeamSplitStridedOverflow: a split whose last member
// start+(size-1)*stride overflows int is invalid, and must be reported
// like any other invalid split rather than build a team of PEs that do
// not exist.
func TestTeamSplitStridedOverflow(t *testing.T) {
	err := runErrCfg(t, teamCfg, 3, func(p *goshmem.PE) {
		for _, s := range []struct{ start, stride, size int }{{0, 1 << 62, 5}, {2, -(1 << 62), 5}, {0, 4, 1<<62 + 1}} {
			tm, err := goshmem.TeamWorld(p).SplitStrided(s.start, s.stride, s.size, nil)
			if tm != nil || err == nil || !errors.Is(err, teamshared.ErrInvalidSplit) {
				t.Errorf("PE %d: SplitStrided(%d, %d, %d) = %v, %v; want nil and an invalid split error",
					p.MyPE(), s.start, s.stride, s.size, tm != nil, err)
			}
		}
	})
	if err != nil {
		t.Errorf("job: %v", err)
	}
}

// TestTeamConcurrentSplits: two goroutines of every PE create, use and
// destroy teams on two different parent teams at the same time (the
// spec allows concurrent operations on different teams under
// SHMEM_THREAD_MULTIPLE). They share the PE's slot pool; run it with
// -race.
func TestTeamConcurrentSplits(t *testing.T) {
	const n, rounds = 3, 40
	runCfg(t, teamCfg, n, func(p *goshmem.PE) {
		p.SetThreadLevel(goshmem.ThreadMultiple)
		w := goshmem.TeamWorld(p)
		dup, err := w.SplitStrided(0, 1, n, nil)
		if err != nil {
			panic(err)
		}
		bufs := mustCalloc[int64](p, 4)
		var wg sync.WaitGroup
		for g, parent := range []*goshmem.Team{w, dup} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in, out := bufs[2*g:2*g+1], bufs[2*g+1:2*g+2]
				for r := range rounds {
					tm, err := parent.SplitStrided(n-1, -1, n, nil)
					if err != nil {
						t.Errorf("PE %d goroutine %d round %d: %v", p.MyPE(), g, r, err)
						return
					}
					in[0] = int64(r + p.MyPE())
					goshmem.SumReduce(tm, out, in)
					if want := int64(n*r + n*(n-1)/2); out[0] != want {
						t.Errorf("PE %d goroutine %d round %d: sum %d, want %d", p.MyPE(), g, r, out[0], want)
					}
					tm.Destroy()
				}
			}()
		}
		wg.Wait()
		dup.Destroy()
	})
}

// TestPredefinedTeamsConcurrent: TeamWorld and TeamShared are different
// teams even when they hold the same PEs (a job on one host), and the
// spec allows collectives on different teams in parallel ("multiple
// collective operations on different teams may be performed in
// parallel"). Two goroutines of every PE run syncs and reductions, one
// on each team, with the PEs arriving in different orders: a sync on
// one team must not be completed by the other team's calls, and every
// reduction must add up. (The two teams once shared the PE's barrier, so
// a PE left TeamWorld's sync while another had only entered
// TeamShared's.)
func TestPredefinedTeamsConcurrent(t *testing.T) {
	const n, rounds, elems = 3, 30, 2000 // 16000-byte reductions: they sync
	var entered [2][n]atomic.Int32       // [team][PE]: syncs entered so far
	runCfg(t, teamCfg, n, func(p *goshmem.PE) {
		p.SetThreadLevel(goshmem.ThreadMultiple)
		me := p.MyPE()
		teams := []*goshmem.Team{goshmem.TeamWorld(p), goshmem.TeamShared(p)}
		if teams[1] == nil || teams[1].NPEs() != n {
			t.Errorf("PE %d: TeamShared of a one-host job does not hold every PE", me)
			return
		}
		src := mustCalloc[int64](p, 2*elems)
		dst := mustCalloc[int64](p, 2*elems)
		var wg sync.WaitGroup
		for g, tm := range teams {
			name := [2]string{"TeamWorld", "TeamShared"}[g]
			wg.Add(1)
			go func() {
				defer wg.Done()
				in, out := src[g*elems:(g+1)*elems], dst[g*elems:(g+1)*elems]
				for r := range rounds {
					if (r+me+g)%n == 0 { // a different late PE per team and round
						time.Sleep(2 * time.Millisecond)
					}
					entered[g][me].Add(1)
					tm.Sync()
					for q := range n {
						if got := entered[g][q].Load(); got < int32(r+1) {
							t.Errorf("PE %d: %s's sync %d returned before PE %d entered it (it entered %d)", me, name, r, q, got)
						}
					}
					for i := range in {
						in[i] = int64(r*1000 + me + i)
					}
					goshmem.SumReduce(tm, out, in)
					for i := range out {
						if want := int64(n*(r*1000+i) + n*(n-1)/2); out[i] != want {
							t.Errorf("PE %d: %s round %d: element %d is %d, want %d", me, name, r, i, out[i], want)
							break
						}
					}
				}
			}()
		}
		wg.Wait()
	})
}

// TestTeamSplitFailsOnEveryPE: when one PE of the new team has no slot
// left (it is in maxLiveTeams one-PE teams), the split fails on every PE of the
// parent with the same error (shmem_team_split_strided returns nonzero
// on all PEs of the parent team), and a split that leaves that PE out
// still succeeds.
func TestTeamSplitFailsOnEveryPE(t *testing.T) {
	const n = 3
	for _, cfg := range []node.Config{teamCfg, {HeapSize: 1 << 20, Transport: "cma"}} {
		t.Run("transport="+cfg.Transport, func(t *testing.T) {
			var msgs perPE[string]
			runCfg(t, cfg, n, func(p *goshmem.PE) {
				me := p.MyPE()
				w := goshmem.TeamWorld(p)
				var mine []*goshmem.Team
				for i := 0; i < maxLiveTeams; i++ {
					tm, err := w.SplitStrided(0, 0, 1, nil) // {world PE 0}
					if err != nil || (tm != nil) != (me == 0) {
						panic(fmt.Sprintf("PE %d: one-PE team %d: %v, %v", me, i, tm != nil, err))
					}
					if tm != nil {
						mine = append(mine, tm)
					}
				}
				for _, s := range []struct{ start, stride, size int }{{0, 0, 1}, {0, 1, n}, {n - 1, -1, n}} {
					tm, err := w.SplitStrided(s.start, s.stride, s.size, nil)
					if tm != nil || err == nil {
						t.Errorf("PE %d: SplitStrided%v with PE 0 out of slots = %v, %v; want nil and an error on every PE", me, s, tm != nil, err)
						continue
					}
					checkContains(t, "out of slots", err.Error(), fmt.Sprintf("goshmem.Team.SplitStrided: PE 0 belongs to %d teams", maxLiveTeams), "destroy")
					msgs.set(me, err.Error())
				}
				x, y, err := w.Split2D(1, nil, nil)
				if x != nil || y != nil || err == nil {
					t.Errorf("PE %d: Split2D with PE 0 out of slots = %v, %v, %v", me, x != nil, y != nil, err)
				}
				// A team without PE 0 needs none of its slots.
				tm, err := w.SplitStrided(1, 1, n-1, nil)
				if err != nil || (tm != nil) != (me > 0) {
					t.Errorf("PE %d: SplitStrided(1, 1, %d) without PE 0 = %v, %v", me, n-1, tm != nil, err)
				}
				tm.Destroy()
				for _, tm := range mine {
					tm.Destroy()
				}
				tm, err = w.SplitStrided(0, 1, n, nil)
				if err != nil {
					t.Errorf("PE %d: split after the destroys: %v", me, err)
				}
				tm.Destroy()
			})
			m0, _ := msgs.get(0)
			for q := 1; q < n; q++ {
				if m, ok := msgs.get(q); !ok || m != m0 {
					t.Errorf("PE %d's error %q differs from PE 0's %q", q, m, m0)
				}
			}
		})
	}
}

// TestTeamSplitArgumentsDisagree: team creation is collective over the
// parent, so when one PE passes arguments that make no team, or valid
// arguments other than the rest's, no PE may wait for the others
// forever or get a team the others do not have: the split returns nil
// and an error wrapping ErrInvalidSplit on every PE of the parent, and
// the parent still works afterwards. Each case runs with the odd PE
// first in the team and in the middle.
func TestTeamSplitArgumentsDisagree(t *testing.T) {
	const n = 4
	type split func(w *goshmem.Team, odd bool) error
	strided := func(good, bad [3]int) split {
		return func(w *goshmem.Team, odd bool) error {
			a := good
			if odd {
				a = bad
			}
			tm, err := w.SplitStrided(a[0], a[1], a[2], nil)
			if tm != nil {
				return fmt.Errorf("got a team of %d PEs", tm.NPEs())
			}
			return err
		}
	}
	split2D := func(good, bad int) split {
		return func(w *goshmem.Team, odd bool) error {
			xr := good
			if odd {
				xr = bad
			}
			x, y, err := w.Split2D(xr, nil, nil)
			if x != nil || y != nil {
				return fmt.Errorf("got teams x %v, y %v", x != nil, y != nil)
			}
			return err
		}
	}
	for _, c := range []struct {
		name string
		fn   split
	}{
		{"SplitStrided size past the parent", strided([3]int{0, 1, 2}, [3]int{0, 1, 100})},
		{"SplitStrided negative size", strided([3]int{0, 1, 2}, [3]int{0, 1, -1})},
		{"SplitStrided other start", strided([3]int{0, 1, 2}, [3]int{1, 1, 2})},
		{"SplitStrided other stride", strided([3]int{0, 1, 2}, [3]int{0, 2, 2})},
		{"SplitStrided other size", strided([3]int{0, 1, 3}, [3]int{0, 1, 2})},
		{"Split2D xrange 0", split2D(2, 0)},
		{"Split2D other xrange", split2D(2, 1)},
	} {
		for _, odd := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/PE %d", c.name, odd), func(t *testing.T) {
				runCfg(t, teamCfg, n, func(p *goshmem.PE) {
					w := goshmem.TeamWorld(p)
					err := c.fn(w, p.MyPE() == odd)
					if err == nil || !errors.Is(err, teamshared.ErrInvalidSplit) {
						t.Errorf("PE %d: %v; want no team and an error wrapping ErrInvalidSplit on every PE", p.MyPE(), err)
					}
					// The parent is still in step.
					tm, err := w.SplitStrided(0, 1, n, nil)
					if err != nil || tm.NPEs() != n {
						t.Errorf("PE %d: split after the failed one: %v", p.MyPE(), err)
						return
					}
					tm.Sync()
					tm.Destroy()
				})
			})
		}
	}
}

// TestCtxGetTeam: shmem_ctx_get_team. A context created on a team
// returns that team; the default context and the contexts of
// PE.CtxCreate return TeamWorld; the invalid context (nil) returns the
// invalid team and an error; a destroyed context is a programmer error.
func TestCtxGetTeam(t *testing.T) {
	const n = 3
	runCfg(t, teamCfg, n, func(p *goshmem.PE) {
		w := goshmem.TeamWorld(p)
		odd, err := w.SplitStrided(1, 2, 1, nil)
		if err != nil {
			panic(err)
		}
		back, err := w.SplitStrided(n-1, -1, n, nil)
		if err != nil {
			panic(err)
		}
		pctx, err := p.CtxCreate(goshmem.CtxPrivate)
		if err != nil {
			panic(err)
		}
		cases := []struct {
			name string
			ctx  *goshmem.Ctx
			want *goshmem.Team
		}{
			{"default context", p.Ctx(), w},
			{"PE.CtxCreate", pctx, w},
		}
		for _, tm := range []struct {
			name string
			t    *goshmem.Team
		}{{"TeamWorld", w}, {"TeamShared", goshmem.TeamShared(p)}, {"reversed split", back}, {"odd split", odd}} {
			if tm.t == nil {
				continue // not a member
			}
			c, err := tm.t.CtxCreate(0)
			if err != nil {
				panic(err)
			}
			cases = append(cases, struct {
				name string
				ctx  *goshmem.Ctx
				want *goshmem.Team
			}{tm.name + ".CtxCreate", c, tm.t})
		}
		for _, c := range cases {
			got, err := goshmem.CtxGetTeam(c.ctx)
			if got != c.want || err != nil {
				t.Errorf("PE %d: CtxGetTeam(%s) = %p, %v; want %p", p.MyPE(), c.name, got, err, c.want)
			}
			if c.ctx != p.Ctx() {
				c.ctx.Destroy()
				if msg := panicMsg(func() { goshmem.CtxGetTeam(c.ctx) }); !strings.HasPrefix(msg, "goshmem.CtxGetTeam: the context was destroyed") {
					t.Errorf("PE %d: CtxGetTeam on a destroyed %s context: panic %q", p.MyPE(), c.name, msg)
				}
			}
		}
		if got, err := goshmem.CtxGetTeam(nil); got != nil || !errors.Is(err, goshmem.ErrInvalidCtx) || !strings.HasPrefix(err.Error(), "goshmem.CtxGetTeam: ") {
			t.Errorf("CtxGetTeam(nil) = %v, %v; want nil and an error wrapping ErrInvalidCtx", got != nil, err)
		}
		back.Destroy()
		odd.Destroy()
	})
}

// ExampleCtxGetTeam shows shmem_ctx_get_team: a context created on a
// team knows its team, and team-relative PE numbers address it.
func ExampleCtxGetTeam() {
	err := goshmem.RunLocalConfig(node.Config{HeapSize: 1 << 20}, 4, func(pe *goshmem.PE) {
		evens, err := goshmem.TeamWorld(pe).SplitStrided(0, 2, 2, nil)
		if err != nil {
			panic(err)
		}
		if evens == nil {
			return // odd PEs are not in the team
		}
		ctx, err := evens.CtxCreate(0)
		if err != nil {
			panic(err)
		}
		tm, _ := goshmem.CtxGetTeam(ctx)
		if pe.MyPE() == 2 {
			fmt.Printf("world PE 2 is PE %d of its context's team of %d\n", tm.MyPE(), tm.NPEs())
		}
		def, _ := goshmem.CtxGetTeam(pe.Ctx())
		if pe.MyPE() == 2 && def == goshmem.TeamWorld(pe) {
			fmt.Println("the default context belongs to TeamWorld")
		}
		ctx.Destroy()
		evens.Destroy()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// world PE 2 is PE 1 of its context's team of 2
	// the default context belongs to TeamWorld
}

// TestTeamDestroyDestroysContexts: shmem_team_destroy destroys every
// shareable context created on the team; using one afterwards is using
// a destroyed context (a panic naming the routine). Contexts destroyed
// before, private ones their owner destroyed, and contexts of other
// teams are left alone, and goroutines may create and destroy contexts
// on the team concurrently (run with -race).
func TestTeamDestroyDestroysContexts(t *testing.T) {
	runCfg(t, teamCfg, 2, func(p *goshmem.PE) {
		x := mustCalloc[int64](p, 4)
		tm, other := mustPairTeam(p), mustPairTeam(p)
		mk := func(tm *goshmem.Team, opts goshmem.CtxOptions) *goshmem.Ctx {
			c, err := tm.CtxCreate(opts)
			if err != nil {
				panic(err)
			}
			return c
		}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					c := mk(tm, goshmem.CtxSerialized)
					goshmem.AtomicAdd(c, &x[3], 1, 1-p.MyPE())
					c.Destroy()
				}
			}()
		}
		wg.Wait()
		shared, serialized := mk(tm, 0), mk(tm, goshmem.CtxSerialized)
		early, private := mk(tm, 0), mk(tm, goshmem.CtxPrivate)
		elsewhere := mk(other, 0)
		early.Destroy()
		private.Destroy()
		tm.Destroy()
		for _, c := range []struct {
			name string
			fn   func()
			want string
		}{
			{"Put on a shareable context", func() { goshmem.Put(shared, x[:1], []int64{1}, 0) }, "goshmem.Put: the context was destroyed"},
			{"AtomicAdd on a serialized context", func() { goshmem.AtomicAdd(serialized, &x[0], 1, 0) }, "goshmem.AtomicAdd: the context was destroyed"},
			{"Quiet", shared.Quiet, "goshmem.Quiet: the context was destroyed"},
		} {
			if msg := panicMsg(c.fn); !strings.HasPrefix(msg, c.want) {
				t.Errorf("PE %d: %s after Team.Destroy: panic %q, want %q", p.MyPE(), c.name, msg, c.want)
			}
		}
		goshmem.P(elsewhere, &x[1], 7, 1-p.MyPE()) // another team's context still works
		elsewhere.Destroy()
		other.Destroy()
		p.BarrierAll()
		if x[1] != 7 || x[3] != 400 {
			t.Errorf("PE %d: x = %v, want x[1] 7 and x[3] 400", p.MyPE(), x)
		}
	})
}

// TestFinalizeDestroysTeams: shmem_finalize "destroys all teams created
// by the OpenSHMEM program. As a result, all shareable contexts are
// destroyed" (OpenSHMEM 1.5). Using them afterwards is using a
// destroyed team or context (a panic naming the routine); a private
// context is the program's to destroy and is left alone.
func TestFinalizeDestroysTeams(t *testing.T) {
	runCfg(t, teamCfg, 2, func(p *goshmem.PE) {
		x := mustCalloc[int64](p, 4)
		tm := mustPairTeam(p)
		teamCtx, err := tm.CtxCreate(goshmem.CtxSerialized)
		if err != nil {
			panic(err)
		}
		worldCtx, err := p.CtxCreate(0)
		if err != nil {
			panic(err)
		}
		private, err := p.CtxCreate(goshmem.CtxPrivate)
		if err != nil {
			panic(err)
		}
		goshmem.P(teamCtx, &x[0], 5, 1-p.MyPE())
		goshmem.P(worldCtx, &x[1], 6, 1-p.MyPE())
		p.Finalize()
		if x[0] != 5 || x[1] != 6 {
			t.Errorf("PE %d: after Finalize x = %v, want the partner's puts 5 and 6 (Finalize completes pending puts)", p.MyPE(), x[:2])
		}
		for _, c := range []struct {
			name string
			fn   func()
			want string
		}{
			{"Team.Sync on a team the program made", tm.Sync, "goshmem.Team.Sync: the team argument was destroyed"},
			{"Team.CtxCreate on a team the program made", func() { tm.CtxCreate(0) }, "goshmem.Team.CtxCreate: the team argument was destroyed"},
			{"P on the team's shareable context", func() { goshmem.P(teamCtx, &x[2], 1, 0) }, "goshmem.P: the context was destroyed"},
			{"P on a shareable context of CtxCreate", func() { goshmem.P(worldCtx, &x[2], 1, 0) }, "goshmem.P: the context was destroyed"},
		} {
			if msg := panicMsg(c.fn); !strings.HasPrefix(msg, c.want) {
				t.Errorf("PE %d: %s after Finalize: panic %q, want %q", p.MyPE(), c.name, msg, c.want)
			}
		}
		if msg := panicMsg(func() { goshmem.P(private, &x[3], 9, p.MyPE()) }); msg != "" {
			t.Errorf("PE %d: P on a private context after Finalize: panic %q, want none (the program destroys private contexts)", p.MyPE(), msg)
		}
		private.Destroy()
	})
}

// TestCollectivesWithoutSlotsForLevels: a team whose members do not all
// map each other (SHMEM_TRANSPORT=cma: every PE is a domain of its own)
// runs its collectives level by level, on level teams made at the
// first such collective from the pool of team slots the program's
// splits use. With the pool used up by the program's teams, every
// collective on every valid team, the world's too, must still complete
// with the right result (flat, the spec gives collectives no error to
// return); and a split with a negative NumContexts fails on every PE.
func TestCollectivesWithoutSlotsForLevels(t *testing.T) {
	cfg := node.Config{HeapSize: 4 << 20, Transport: "cma"}
	for _, n := range []int{2, 3} {
		err := runErrCfg(t, cfg, n, func(p *goshmem.PE) {
			me := p.MyPE()
			w := goshmem.TeamWorld(p)
			var teams []*goshmem.Team
			for {
				tm, err := w.SplitStrided(0, 1, n, nil)
				if err != nil {
					break // the pool is empty (on every PE alike)
				}
				teams = append(teams, tm)
			}
			if len(teams) < 10 {
				t.Errorf("n=%d: only %d teams made", n, len(teams))
			}
			src := mustMalloc[int64](p, 4)
			dst := mustMalloc[int64](p, 4*n)
			for i := range src {
				src[i] = int64(100*me + i)
			}
			wantSum := func(i int) int64 { return int64(100*n*(n-1)/2 + n*i) }
			for k, tm := range []*goshmem.Team{teams[0], teams[len(teams)-1], w} {
				goshmem.SumReduce(tm, dst[:4], src)
				for i := 0; i < 4; i++ {
					if dst[i] != wantSum(i) {
						t.Errorf("n=%d team %d PE %d: SumReduce[%d] = %d, want %d", n, k, me, i, dst[i], wantSum(i))
					}
				}
				goshmem.FCollect(tm, dst, src)
				for j := 0; j < n*4; j++ {
					if dst[j] != int64(100*(j/4)+j%4) {
						t.Errorf("n=%d team %d PE %d: FCollect[%d] = %d", n, k, me, j, dst[j])
						break
					}
				}
				goshmem.Collect(tm, dst, src[:1+me%2]) // PE m gives 1 + m%2 elements
				var want []int64
				for m := 0; m < n; m++ {
					for i := 0; i < 1+m%2; i++ {
						want = append(want, int64(100*m+i))
					}
				}
				if !slices.Equal(dst[:len(want)], want) {
					t.Errorf("n=%d team %d PE %d: Collect = %v, want %v", n, k, me, dst[:len(want)], want)
				}
				goshmem.Broadcast(tm, dst[:4], src, n-1)
				if dst[0] != int64(100*(n-1)) {
					t.Errorf("n=%d team %d PE %d: Broadcast[0] = %d", n, k, me, dst[0])
				}
				goshmem.Alltoall(tm, dst, src[:n], 1) // PE j's element me comes here, at j
				for j := 0; j < n; j++ {
					if dst[j] != int64(100*j+me) {
						t.Errorf("n=%d team %d PE %d: Alltoall[%d] = %d, want %d", n, k, me, j, dst[j], 100*j+me)
					}
				}
				goshmem.SumInscan(tm, dst[:4], src)
				for i := 0; i < 4; i++ {
					if w := int64(100*me*(me+1)/2 + (me+1)*i); dst[i] != w {
						t.Errorf("n=%d team %d PE %d: SumInscan[%d] = %d, want %d", n, k, me, i, dst[i], w)
					}
				}
				tm.Sync()
			}
			_, err := w.SplitStrided(0, 1, 1, &goshmem.TeamConfig{NumContexts: -1 - me})
			if err == nil || !errors.Is(err, teamshared.ErrInvalidSplit) {
				t.Errorf("n=%d PE %d: split with NumContexts %d: %v, want an invalid split", n, me, -1-me, err)
			}
			for _, tm := range teams {
				tm.Destroy()
			}
		})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
	}
}
