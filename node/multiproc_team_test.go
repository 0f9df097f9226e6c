package node_test

// Teams and collectives across processes: the PEs of a job started
// with internal/launch (one or two PEs per process, heaps mapped or
// reached through CMA) run collectives on the world and on split teams
// and print "PE n ok" when every result is exact.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/goshmem/goshmem"
)

func init() {
	scenarios["teams"] = scenarioTeams
}

// tval is PE pe's element i in round seed.
func tval(pe, i, seed int) int64 { return int64(pe*1_000_003 + i*7 + seed*31) }

// long is the length of the partitioned reductions (12000 bytes).
const long = 1500

// teamBufs are the symmetric buffers of checkTeam, allocated once on
// every PE (allocation is collective over the world).
type teamBufs struct{ src, dst, ctr []int64 }

func newTeamBufs(pe *goshmem.PE) teamBufs {
	n := max(pe.NPEs(), 2) // the reductions use two halves of src
	src, err1 := goshmem.Malloc[int64](pe, long*n)
	dst, err2 := goshmem.Malloc[int64](pe, long*n)
	ctr, err3 := goshmem.Calloc[int64](pe, 1)
	if err1 != nil || err2 != nil || err3 != nil {
		fail(pe, "allocation failed: %v %v %v", err1, err2, err3)
	}
	return teamBufs{src, dst, ctr}
}

// checkTeam runs a reduce (flat and partitioned), a broadcast from
// every root, an fcollect, a collect and an alltoall on tm, whose
// members are the world PEs members, and fails the PE on any inexact
// result. Every member calls it with the same seed.
func checkTeam(pe *goshmem.PE, b teamBufs, name string, tm *goshmem.Team, members []int, seed int) {
	me := pe.MyPE()
	tn := len(members)
	if tm.NPEs() != tn || tm.MyPE() != slices.Index(members, me) {
		fail(pe, "%s: MyPE %d NPEs %d, want %d %d", name, tm.MyPE(), tm.NPEs(), slices.Index(members, me), tn)
	}
	for i, q := range members {
		if tm.WorldPE(i) != q || tm.TranslatePE(i, goshmem.TeamWorld(pe)) != q {
			fail(pe, "%s: member %d is world PE %d, want %d", name, i, tm.WorldPE(i), q)
		}
	}
	src, dst := b.src, b.dst

	for _, n := range []int{7, long} {
		for i := 0; i < n; i++ {
			src[i] = tval(me, i, seed)
		}
		goshmem.SumReduce(tm, dst[:n], src[:n])
		goshmem.MaxReduce(tm, src[n:2*n], src[:n]) // disjoint halves of src
		for i := 0; i < n; i++ {
			var sum, mx int64
			for j, q := range members {
				v := tval(q, i, seed)
				sum += v
				if j == 0 || v > mx {
					mx = v
				}
			}
			if dst[i] != sum || src[n+i] != mx {
				fail(pe, "%s: reduce of %d: element %d sum %d max %d, want %d %d", name, n, i, dst[i], src[n+i], sum, mx)
			}
		}
		// In place.
		for i := 0; i < n; i++ {
			src[i] = tval(me, i, seed+1)
		}
		goshmem.XorReduce(tm, src[:n], src[:n])
		for i := 0; i < n; i++ {
			var x int64
			for _, q := range members {
				x ^= tval(q, i, seed+1)
			}
			if src[i] != x {
				fail(pe, "%s: in-place xor of %d: element %d = %d, want %d", name, n, i, src[i], x)
			}
		}
	}

	for root := 0; root < tn; root++ {
		for i := 0; i < long; i++ {
			src[i] = tval(me, i, seed+2+root)
		}
		goshmem.Broadcast(tm, dst[:long], src[:long], root)
		for i := 0; i < long; i++ {
			if want := tval(members[root], i, seed+2+root); dst[i] != want {
				fail(pe, "%s: broadcast from %d: element %d = %d, want %d", name, root, i, dst[i], want)
			}
		}
	}

	const k = 5
	for i := 0; i < tn*k; i++ {
		src[i] = tval(me, i, seed+20)
	}
	goshmem.FCollect(tm, dst[:tn*k], src[:k])
	for j, q := range members {
		for i := 0; i < k; i++ {
			if want := tval(q, i, seed+20); dst[j*k+i] != want {
				fail(pe, "%s: fcollect block %d element %d = %d, want %d", name, j, i, dst[j*k+i], want)
			}
		}
	}

	myLen := func(j int) int { return (j + seed) % 3 } // some empty
	goshmem.Collect(tm, dst[:tn*k], src[:myLen(tm.MyPE())])
	off := 0
	for j, q := range members {
		for i := 0; i < myLen(j); i++ {
			if want := tval(q, i, seed+20); dst[off+i] != want {
				fail(pe, "%s: collect block %d element %d = %d, want %d", name, j, i, dst[off+i], want)
			}
		}
		off += myLen(j)
	}

	goshmem.Alltoall(tm, dst[:tn*k], src[:tn*k], k)
	for j, q := range members {
		for i := 0; i < k; i++ {
			if want := tval(q, tm.MyPE()*k+i, seed+20); dst[j*k+i] != want {
				fail(pe, "%s: alltoall block %d element %d = %d, want %d", name, j, i, dst[j*k+i], want)
			}
		}
	}

	// A team context addresses the members by team number.
	c, err := tm.CtxCreate(0)
	if err != nil {
		fail(pe, "%s: CtxCreate: %v", name, err)
	}
	idx := tm.MyPE()
	b.ctr[0] = 0
	tm.Barrier() // everyone is done with dst and ctr
	goshmem.P(c, &dst[idx], int64(1000+idx), (idx+1)%tn)
	goshmem.AtomicAdd(c, &b.ctr[0], int64(idx+1), 0)
	c.Quiet()
	c.Destroy()
	tm.Barrier()
	if left := (idx + tn - 1) % tn; dst[left] != int64(1000+left) {
		fail(pe, "%s: team-context put from team PE %d: %d", name, left, dst[left])
	}
	if idx == 0 && b.ctr[0] != int64(tn*(tn+1)/2) {
		fail(pe, "%s: team-context adds on team PE 0: %d, want %d", name, b.ctr[0], tn*(tn+1)/2)
	}
	tm.Barrier()
}

// backwardsTeam splits from the world every other PE from the last,
// backwards (a negative stride), and returns the team (nil on the PEs
// outside it) and its members' world numbers in team order.
func backwardsTeam(pe *goshmem.PE) (*goshmem.Team, []int) {
	n := pe.NPEs()
	size := (n + 1) / 2
	back, err := goshmem.TeamWorld(pe).SplitStrided(n-1, -2, size, nil)
	if err != nil {
		fail(pe, "SplitStrided: %v", err)
	}
	var members []int
	for i := 0; i < size; i++ {
		members = append(members, n-1-2*i)
	}
	return back, members
}

// scenarioTeams runs checkTeam on the world, TeamShared, a strided
// team with a negative stride, and the rows and columns of a 2-D
// split, then on many teams created and destroyed in turn.
func scenarioTeams(pe *goshmem.PE) {
	me, n := pe.MyPE(), pe.NPEs()
	w := goshmem.TeamWorld(pe)
	world := make([]int, n)
	for i := range world {
		world[i] = i
	}
	b := newTeamBufs(pe)
	checkTeam(pe, b, "world", w, world, 1)

	sh := goshmem.TeamShared(pe)
	shared := make([]int, sh.NPEs())
	for i := range shared {
		shared[i] = sh.WorldPE(i)
	}
	// TeamShared differs between processes: run it alone, then resync.
	checkTeam(pe, b, "shared", sh, shared, 2)
	pe.BarrierAll()

	back, backPEs := backwardsTeam(pe)
	if (back != nil) != slices.Contains(backPEs, me) {
		fail(pe, "SplitStrided: handle %v", back != nil)
	}
	// The members run it; the others wait at the world barrier.
	if back != nil {
		checkTeam(pe, b, "backwards", back, backPEs, 3)
	}
	pe.BarrierAll()

	x, y, err := w.Split2D(2, nil, nil)
	if err != nil {
		fail(pe, "Split2D: %v", err)
	}
	row := []int{me &^ 1}
	if me|1 < n {
		row = append(row, me|1)
	}
	var col []int
	for q := me % 2; q < n; q += 2 {
		col = append(col, q)
	}
	checkTeam(pe, b, "row", x, row, 4)
	pe.BarrierAll()
	checkTeam(pe, b, "column", y, col, 5)
	pe.BarrierAll()
	x.Destroy()
	y.Destroy()
	if back != nil {
		back.Destroy()
	}

	// Slots come back: many teams in turn.
	for i := 0; i < 300; i++ {
		tm, err := w.SplitStrided(i%n, 1, n-i%n, nil)
		if err != nil {
			fail(pe, "team %d: %v", i, err)
		}
		if tm != nil {
			tm.Sync()
			tm.Destroy()
		}
	}
	w.Sync()
	fmt.Printf("PE %d ok %s\n", me, pe.Transport().Name)
}

func TestMultiProcessTeams(t *testing.T) {
	for _, tc := range []struct {
		name      string
		npes, ppp int
		env       []string
	}{
		{"4x1", 4, 1, nil},
		{"4x2", 4, 2, nil},
		{"4x1-cma", 4, 1, []string{"SHMEM_TRANSPORT=cma"}},
		{"4x2-cma", 4, 2, []string{"SHMEM_TRANSPORT=cma"}},
		{"3x2", 3, 2, nil},
		// The general algorithms across processes, chosen explicitly.
		{"4x1-cma-rabenseifner-rd", 4, 1, []string{"SHMEM_TRANSPORT=cma", "SHMEM_REDUCE_ALGORITHM=rabenseifner", "SHMEM_FCOLLECT_ALGORITHM=recursive-doubling", "SHMEM_BCAST_ALGORITHM=tree", "SHMEM_BARRIER_ALGORITHM=tree"}},
		{"3x1-cma-ring", 3, 1, []string{"SHMEM_TRANSPORT=cma", "SHMEM_REDUCE_ALGORITHM=ring", "SHMEM_FCOLLECT_ALGORITHM=ring"}},
		{"4x1-rd", 4, 1, []string{"SHMEM_REDUCE_ALGORITHM=recursive-doubling"}},
		{"4x2-hierarchical", 4, 2, []string{"GOSHMEM_SIM_DOMAINS=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runJob(t, "teams", tc.npes, tc.ppp, false, tc.env...)
			if r.err != nil || r.code != 0 {
				t.Fatalf("code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
			}
			for pe := 0; pe < tc.npes; pe++ {
				if want := fmt.Sprintf("PE %d ok ", pe); !strings.Contains(r.stdout, want) {
					t.Errorf("missing %q in output:\nstdout:\n%s\nstderr:\n%s", want, r.stdout, r.stderr)
				}
			}
		})
	}
}
