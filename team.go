package goshmem

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/node"
	"github.com/goshmem/goshmem/teamshared"
)

// Team is an OpenSHMEM team (shmem_team_t) as seen by one PE: an ordered
// subset of the job's PEs that collectives run over and team contexts
// address by team-relative PE number. A nil *Team is
// SHMEM_TEAM_INVALID, what a split hands the PEs it leaves out. On it,
// as the spec asks: MyPE, NPEs, TranslatePE and WorldPE return -1;
// TeamPtr returns nil; GetConfig returns the zero TeamConfig, and
// SplitStrided, Split2D and CtxCreate create nothing, each with an
// error wrapping ErrInvalidTeam; Destroy does nothing. Sync, Barrier
// and every collective panic (a programmer error), naming the routine
// and its team argument.
//
// Team creation is collective over the parent team; collectives are
// collective over the team. Back-to-back creations and collectives need
// no synchronization from the caller.
type Team struct {
	pe      *PE
	members teamshared.Members
	n       int     // members.Size(), read by every collective (a field load, not a copy of members)
	me      int     // this PE's index in the team
	slot    int     // this PE's synchronization slot
	slots   []int32 // each member's slot, in its own pool
	cfg     TeamConfig
	shared  bool // every member's heap is mapped here: Ptr-based algorithms
	epoch   uint32
	central uint32 // central barrier: the arrival count the next one waits for, less n (centralSync)
	named   string // for predefined teams, their name
	dead    bool
	// calls counts the collective calls this PE made on the team
	// (enter; the world team's syncs are the PE's barriers, counted
	// there), and closing is set when TeamDestroy starts: see
	// teams.checkFinal. Atomic: another goroutine of the PE reads them.
	calls   atomic.Uint32
	closing atomic.Bool
	// acrossHosts: the members span hosts; hostFirst is then the index
	// of the team's first member on this PE's host, in whose slot this
	// host's leader keeps the least final call count of the members on
	// other hosts (remoteFinalWord, teams.checkFinal).
	acrossHosts bool
	hostFirst   int
	// collBlock is the team's block of the collectives' scratch
	// (node.PE.CollScratch), the same on every member; -1: none (a
	// team inside one host, or none was free on every member).
	collBlock int
	worlds    []int     // members' world PE numbers (for team contexts)
	scratch   [2][]byte // this PE's reduction buffers, reused

	alg   algorithms
	multi bool // the members span several shared-memory domains
	// numaSpan: some domain of the team holds members of several NUMA
	// nodes, so collectives may run level by level (see hierarchical).
	numaSpan   bool
	numaGroups int        // (domain, NUMA node) groups the members form
	hier       *hierarchy // made at the first hierarchical collective
	ring       uint32     // FCollect ring steps taken so far (same on every member)
	xbox       uint32     // dropbox exchanges so far (same on every member)
	bbox       uint32     // dropbox broadcasts so far (same on every member)
	rd         uint32     // recursive-doubling reductions so far (same on every member)
	ringR      uint32     // ring reductions so far (same on every member)
	rdfc       uint32     // recursive-doubling fcollects so far (same on every member)
	rab        uint32     // Rabenseifner reductions so far (same on every member)
	// centralSync: the team synchronizes with the central counter
	// barrier (see sync).
	centralSync bool
	// others are the members' world PE numbers but this PE's, whose
	// doorbells a publication in a dropbox rings.
	others []int
	// barOut[r], barTo[r] and barIn[r]: on a team that maps each other,
	// round r of the dissemination barrier stores into the flag
	// barOut[r] of world PE barTo[r] and waits on barIn[r], this PE's
	// own (set by finish; nil on other teams).
	barOut, barIn []*atomic.Uint32
	barTo         []int
	// smallReduce: a reduction of at most exchangeData bytes runs
	// through the exchange (reduceDropbox); set by finish.
	smallReduce bool
	// combine: such a reduction is combined by the last member to
	// arrive instead (reduceCombining); set by finish.
	combine bool
	// nodeSync: the team is TeamWorld, has the default barrier
	// algorithm, and synchronizes with the PE's own barrier (SyncAll's:
	// flags in the job's control block), which runs 1.3-1.7x faster
	// than the same dissemination over team slots in the heaps at 2 PEs
	// here (blocks interleaved in one job, 2026-11-26).
	nodeSync bool
	// slotBase[m] is member m's team slot as mapped here (shared teams).
	slotBase []mem.Base
	// mates are the team indices of the PEs sharing this PE's CPU (see
	// node.PE.CPUMates) when every one of them is a member; nil
	// otherwise. An exchange wait spins instead of yielding once they
	// have all published (awaitSlow).
	mates []int
	// bpos[m] is where member m's next dropbox broadcast goes in each
	// of its two broadcast rings, and what this PE last read of its
	// published number; blast[i] is the broadcast that last used
	// dropbox i of this PE's tiny ring, or line i-bcastTiny of its large
	// ring, and backed the least done word of the other members this PE
	// last saw (see broadcastDropbox).
	bpos   []bcastPos
	blast  [bcastTiny + bcastLines]uint32
	backed uint32

	// ctxs are the team's live shareable contexts (made by CtxCreate
	// without CtxPrivate), which Destroy destroys; goroutines of the PE
	// may create and destroy contexts on the team concurrently.
	ctxMu sync.Mutex
	ctxs  map[*Ctx]struct{}
	// Used only on teams that do not map each other (after the fields
	// of the on-host paths, whose layout they leave as it was).
	bpush uint32 // pushed tree broadcasts so far (same on every member)
	// pushMax is the largest pushed reduction in bytes (reducePushed):
	// pushBox, or on a team that does not map each other the size of
	// its wide push boxes (widePushBoxes) if larger.
	pushMax int
	domains int // shared-memory domains (hosts) the members span
	// making counts the splits and level makings of this team in
	// progress (create, hierarchy): the syncs inside them run flat, as
	// making the levels is itself a split of this team, which uses the
	// team slot's words that the split in progress has published.
	making int
}

// algorithms are the collective algorithms chosen by the SHMEM_*_ALGORITHM
// knobs ("" or "auto": chosen per call by team shape and size).
type algorithms struct {
	barrier, reduce, bcast, fcollect string
	numa                             string // SHMEM_NUMA_COLLECTIVES
}

// hierarchy is a team's split into nested groups, bottom up: the
// members of this PE's NUMA node inside its shared-memory domain, the
// node leaders of its domain, the domain leaders of the team (levels
// whose grouping does not split the team are left out). A group's
// leader is its first member in team order, and it is a member of the
// next level's group.
// maxLevels is the most levels a hierarchy has: NUMA node groups,
// domain groups, the whole team.
const maxLevels = 3

type hierarchy struct {
	// levels[0] is this PE's bottom group; levels[i] (i > 0) is this
	// PE's group at level i when it leads its group at level i-1, nil
	// otherwise (and then so are the levels above).
	levels []*Team
	// keys[i][j] is the group of team member j at level i: members
	// with equal keys share a level-i group.
	keys [][]groupKey
	// index[i] holds the team indices of levels[i]'s members (teamIndex).
	index [][]int
	// byLeader[l] holds the team indices of the bottom group led by
	// member l of this PE's level-1 team, in team order (groups; on a
	// level-1 member only).
	byLeader [][]int
}

// groups returns, on a member of level 1 (a leader of a bottom group),
// the team (t) indices of the bottom group of each member of its level
// 1 team, in team order; computed at the first call.
func (h *hierarchy) groups(t *Team) [][]int {
	if h.byLeader == nil && len(h.levels) > 1 && h.levels[1] != nil {
		h.byLeader = make([][]int, h.levels[1].NPEs())
		for l, q := range h.levels[1].worlds {
			key := h.keys[0][slices.Index(t.worlds, q)]
			for j := range t.worlds {
				if h.keys[0][j] == key {
					h.byLeader[l] = append(h.byLeader[l], j)
				}
			}
		}
	}
	return h.byLeader
}

// teamIndex returns the team (t) indices of the members of h's level i,
// computed at the first call.
func (h *hierarchy) teamIndex(t *Team, i int) []int {
	if h.index == nil {
		h.index = make([][]int, len(h.levels))
	}
	if h.index[i] == nil && h.levels[i] != nil {
		for _, q := range h.levels[i].worlds {
			h.index[i] = append(h.index[i], slices.Index(t.worlds, q))
		}
	}
	return h.index[i]
}

// groupKey names a group of one level: its domain and NUMA node, with
// the parts that level does not split by left zero.
type groupKey struct{ domain, node int }

// TeamConfig is the configuration of a team (shmem_team_config_t).
type TeamConfig struct {
	// NumContexts is how many contexts the program will create on the
	// team. It is a hint on a node (contexts cost no shared resource);
	// GetConfig returns it.
	NumContexts int
}

// Words of a team slot (32-bit words, 16 to a 64-byte line; every word
// has a single writer and, except the post and count words, holds a
// number that only grows):
//
//	lines 0-15  round r of the dissemination barrier (word 0), and in
//	            the same line the round's words of the pairwise
//	            algorithms: recursive-doubling reduction (2-6),
//	            recursive-doubling fcollect (7-8), Rabenseifner (9-12)
//	line 16     post word: slot numbers at team creation, failure votes;
//	            args word: the hash of the creation's arguments;
//	            scratch word: the blocks of the collectives' scratch
//	            free on the PE (a mask), at team creation; final word:
//	            the collective calls the member made on the team,
//	            stored when it enters Finalize (teams.publishFinal);
//	            remote final words (2, one 8-byte word), in the slot of
//	            the team's first member on each host of a team that
//	            spans hosts: the least calls of a member of another
//	            host that entered Finalize, and which PE
//	            (node.PE.TeamFinalAcross); destroy word: 1 once the
//	            member has started TeamDestroy (teams.checkDestroyed)
//	line 17     Collect's published length
//	line 18-19  tree barrier: release from the parent, one word per child
//	line 20     tree broadcast: the parent has the data
//	line 21     ring fcollect: the left neighbour's progress
//	line 22     ring reduction: left neighbour's productions, right's reads
//	line 23     dropbox broadcast: the last broadcast this member has
//	            finished reading (its done word)
//	lines 24-43 two exchange dropboxes of 632 data bytes (reductions,
//	            FCollect, Collect, Alltoall); lines 24-53 on teams that
//	            do not map each other (which have no dropboxes): the
//	            wide push boxes (widePushBoxes)
//	lines 44-53 the large broadcast ring (broadcastDropbox), in one of
//	            two layouts for the team's life: two of its nine
//	            five-line dropboxes (312 data bytes after the head);
//	            or, on teams whose PEs outnumber their CPUs, its
//	            published word (line 44: the last broadcast of the ring
//	            this member rooted) and the first 9 lines of its ring
//	            of lines (dropboxes of 1-5 lines of data only)
//	line 54     central barrier: the arrival count (word 0, member 0's
//	            slot), which combining reductions count in too; the
//	            combining reduction's combiner (word 1, written by the
//	            call's combiner, once every member has arrived)
//	lines 55-63 the tiny broadcast ring's first 36 dropboxes of 16
//	            bytes (8 data bytes), four to a line
//	lines 64-99 on teams that do not map each other (other hosts,
//	            CMA): push boxes of the pushed recursive-doubling
//	            reduction: per round, and for the fold-in and the
//	            hand-back, two one-line boxes (by the call's parity)
//	            that the partner writes into; its flag is word 13 of
//	            the round's line (rdFold, rdBack for the other two).
//	            On teams that map each other (which never push): the
//	            large broadcast ring's other seven dropboxes, or other
//	            35 lines (lines 64-98), and, in line 99, the two small
//	            exchange
//	            dropboxes (32 bytes each, up to 24 data bytes: both
//	            parities in the one line a partner polls)
//	lines 100-127 the tiny broadcast ring's other 112 dropboxes; on
//	            teams that do not map each other, the pushed tree
//	            broadcast's "in the call" words, one per member
//	            (pushEntryWord)
const (
	wordsPerLine      = 16
	maxRounds         = 16
	postWord          = maxRounds * wordsPerLine
	argsWord          = postWord + 1               // team creation: the hash of the split's arguments
	scratchWord       = postWord + 2               // team creation: the scratch blocks free on the PE
	finalWord         = postWord + 3               // Finalize: the collective calls this member made on the team
	remoteFinalWord   = postWord + 4               // Finalize: calls<<32 | PE+1 of the member of another host that entered it with the fewest calls (8 bytes, words 4-5)
	destroyWord       = postWord + 6               // TeamDestroy: 1 once the member has started it
	countWord         = postWord + wordsPerLine    // Collect's published length
	releaseWord       = countWord + wordsPerLine   // tree barrier: release from the parent
	childWord         = releaseWord + wordsPerLine // tree barrier: one word per child
	readyWord         = childWord + wordsPerLine   // tree broadcast: the parent has the data
	ringWord          = readyWord + wordsPerLine   // ring fcollect: the left neighbour's progress
	doneWord          = 23 * wordsPerLine          // dropbox broadcast: the last one this member finished reading
	exchangeBoxes     = 24 * 64                    // byte offset of the two exchange dropboxes
	bcastBoxes        = 44 * 64                    // byte offset of the large broadcast ring
	exchangeBytes     = 10 * 64                    // bytes per exchange dropbox (lines 24-43)
	exchangeData      = exchangeBytes - 8          // data bytes after the sequence number and header word
	exchangeSmall     = 99 * 64                    // byte offset of the two small exchange dropboxes (line 99, 32 bytes each; teams that map each other)
	exchangeSmallData = 32 - 8                     // data bytes of a small exchange dropbox
	bcastTinyLow      = 36                         // dropboxes of the tiny broadcast ring in lines 55-63
	bcastTiny         = bcastTinyLow + 28*4        // 16-byte dropboxes of the tiny broadcast ring (lines 55-63, 100-127; < 256: bpos is a uint8)
	bcastTinyBoxes    = 55 * 64                    // byte offset of the tiny broadcast ring's first bcastTinyLow dropboxes
	bcastTinyMore     = 100 * 64                   // byte offset of the tiny ring's other dropboxes
	bcastPub          = bcastBoxes                 // byte offset of the word where a root publishes its last broadcast of the large ring (line 44)
	bcastLineBoxes    = bcastBoxes + 64            // byte offset of the large broadcast ring's lines 45-53
	bcastLinesLow     = 9                          // lines of the large broadcast ring in lines 45-53
	bcastLines        = bcastLinesLow + 35         // lines of the large broadcast ring (lines 45-53, and 64-98 of teams that map each other)
	bcastLargeMore    = pushBoxes                  // byte offset of the large ring's lines 64-98 (shared teams only: they have no push boxes)
	bcastMaxLines     = 5                          // lines of the large ring's biggest dropbox
	bcastBoxesLow     = 2                          // five-line dropboxes of the large broadcast ring where the PEs fit their CPUs, in lines 44-53
	bcastBoxesN       = bcastBoxesLow + 7          // five-line dropboxes of the large broadcast ring where the PEs fit their CPUs (lines 44-53 and 64-98)
	bcastData         = bcastMaxLines*64 - 8       // most data bytes of a dropbox broadcast (312: a five-line dropbox of the large ring after its 8-byte head)
	arrivalsWord      = 54 * wordsPerLine          // central barrier: arrivals (member 0's slot)
	combinerWord      = arrivalsWord + 1           // combining reduction: the last call's combiner (member 0's slot)
	pushBoxes         = 64 * 64                    // byte offset of the push boxes (lines 64-99)
	pushBox           = 64                         // bytes per push box: the largest pushed reduction
	pushWord          = 13                         // pushed reduction: round r's data is in the box (+r*wordsPerLine)
	pushEntryWord     = 100 * wordsPerLine         // pushed tree broadcast: a word per member (lines 100-127; teams that do not map each other)
	pushTreeMax       = 28 * wordsPerLine          // the largest team that broadcasts with the pushed tree
	widePushBoxes     = exchangeBoxes              // byte offset of the wide push boxes (lines 24-53; teams that do not map each other)
	widePushBytes     = 30 * 64                    // bytes of the wide push boxes
	pushFold          = maxRounds                  // push box index of the fold-in
	pushBack          = maxRounds + 1              // push box index of the hand-back
)

// oneProcess reports whether every member of t runs in one process
// (goroutine PEs): the same answer on every member.
func (t *Team) oneProcess() bool {
	pid := t.pe.ProcessOf(t.worlds[0])
	for _, q := range t.worlds {
		if p := t.pe.ProcessOf(q); p == 0 || p != pid {
			return false
		}
	}
	return true
}

// widePushSize is the size of each wide push box of a team of n
// members that does not map each other: widePushBytes shared by the
// boxes of the pushed reduction's rounds, its fold-in and its
// hand-back, two of each (by the call's parity), in whole lines.
func widePushSize(n int) int {
	rounds := bitLen(floorPow2(max(n, 1))) - 1
	return widePushBytes / (2 * (rounds + 2)) &^ 63
}

// leadersPushMax is the largest pushed reduction, in bytes, of the
// team of this team's domain leaders (its hierarchy's top level, one
// member per domain): the limit under which a gather as a bitwise or
// reduction (orGather) costs one message per round among the leaders.
func (t *Team) leadersPushMax() int { return max(pushBox, widePushSize(t.domains)) }

// predefined team slots (teamshared.Reserved of them).
const (
	slotWorld = iota
	slotShared
	slotHost
	slotLeaders
	slotNUMA
)

// teams is the per-PE state of the team layer.
type teams struct {
	pool                               *teamshared.Pool
	world, shared, host, leaders, numa *Team
	// made are the live teams the program made (splits); Finalize
	// destroys them (shmem_finalize), through the PE's OnFinalize.
	mu   sync.Mutex
	made map[*Team]struct{}
	// scratchFree has bit b set while block b of the collectives'
	// scratch belongs to no team of this PE (nor to a creation under
	// way); under mu.
	scratchFree uint32
}

// takeScratch reserves every free block of the collectives' scratch
// for a team creation and returns them as a mask.
func (ts *teams) takeScratch() uint32 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	m := ts.scratchFree
	ts.scratchFree = 0
	return m
}

// putScratch frees the blocks of mask m.
func (ts *teams) putScratch(m uint32) {
	ts.mu.Lock()
	ts.scratchFree |= m
	ts.mu.Unlock()
}

// finalize marks every team the program made destroyed: it runs in the
// PE's Finalize, after its shareable contexts (the teams' among them)
// were destroyed and every PE arrived, so no member uses the teams'
// slots again and nothing is synchronized here.
func (ts *teams) finalize() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for t := range ts.made {
		t.dead = true
	}
	ts.made = nil
}

// each calls f for every team of this PE that checkFinal and
// publishFinal look at (the predefined ones and the splits), under mu,
// until f returns false. f must not panic.
func (ts *teams) each(f func(t *Team) bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range [...]*Team{ts.world, ts.shared, ts.host, ts.leaders, ts.numa} {
		if t != nil && !f(t) {
			return
		}
	}
	for t := range ts.made {
		if !f(t) {
			return
		}
	}
}

// publishFinal is TeamFinal.Publish: it stores, in this PE's slot of
// each of its teams, how many collective calls it made on the team, and
// tells every other host of a team that spans hosts, in the slot of the
// team's first member there (node.PE.TeamFinalAcross).
func (ts *teams) publishFinal(pe *PE) {
	var told []int // hosts told of the current team
	ts.each(func(t *Team) bool {
		if t.closing.Load() {
			return true
		}
		c := t.calls.Load()
		pe.TeamSet(pe.MyPE(), t.slot, finalWord, c)
		if !t.acrossHosts {
			return true
		}
		told = told[:0]
		for i, q := range t.worlds {
			if h, _ := pe.HostOf(q); !slices.Contains(told, h) {
				told = append(told, h)
				pe.TeamFinalAcross(q, int(t.slots[i]), remoteFinalWord, c) // (false for this host)
			}
		}
		return true
	})
}

// checkFinal is TeamFinal.Check: it fails the job if a member of one of
// this PE's teams entered Finalize having made fewer collective calls on
// the team than this PE, which then waits, or will, in a call that the
// member never makes. A team being destroyed is left out, and looked at
// again after the member's word is read: a member past TeamDestroy's
// sync may already hold another team in that slot (the store of closing
// comes before this PE's arrival in that sync, so a word read while
// closing still reads false is this team's). It runs on the slow path
// of waits while a PE of the host is in Finalize, and allocates nothing.
func (ts *teams) checkFinal(pe *PE, routine string) {
	late, calls := -1, uint32(0)
	ts.each(func(t *Team) bool {
		c := t.calls.Load()
		if c == 0 {
			return true
		}
		if t.acrossHosts {
			// The members on other hosts, through this host's first
			// member's slot. A team being destroyed is looked at too:
			// a member of another host sent its count only for a team
			// it had not destroyed, so not for one whose slot a member
			// may have taken again.
			v, ok := pe.TeamLoad64(t.worlds[t.hostFirst], int(t.slots[t.hostFirst]), remoteFinalWord)
			if f := uint32(v >> 32); ok && v != 0 && int32(f-c) < 0 {
				late, calls = int(uint32(v))-1, f
				return false
			}
		}
		if t.closing.Load() {
			return true
		}
		for i, q := range t.worlds {
			if i == t.me {
				continue
			}
			if f, ok := pe.FinalWord(q, int(t.slots[i]), finalWord); ok && int32(f-c) < 0 && !t.closing.Load() {
				late, calls = q, f
				return false
			}
		}
		return true
	})
	if late >= 0 {
		pe.FailTeamFinal(routine, late, calls)
	}
}

// checkDestroyed is TeamFinal.Destroyed: this PE is in Finalize, and
// a PE of its host is in TeamDestroy. A member of one of this PE's
// teams (this host's: their slots are read here) that has started
// TeamDestroy on it waits in the destroy's sync for this PE, which
// never destroyed the team and never will: the job fails, naming this
// PE, as a member waiting in any other call it never makes would
// (checkFinal leaves teams being destroyed out: a member past their
// sync may hold another team in the slot). A team this PE destroyed
// is no longer among its teams.
func (ts *teams) checkDestroyed(pe *PE, routine string) {
	late, calls := false, uint32(0)
	ts.each(func(t *Team) bool {
		if t.closing.Load() || t.named != "" {
			return true
		}
		for i, q := range t.worlds {
			if i != t.me && pe.OnHost(q) && pe.TeamLoad(q, int(t.slots[i]), destroyWord) != 0 {
				late, calls = true, t.calls.Load()
				return false
			}
		}
		return true
	})
	if late {
		pe.FailTeamFinal(routine, pe.MyPE(), calls)
	}
}

func teamsOf(pe *PE) *teams {
	return pe.Ext(func() any { return newTeams(pe) }).(*teams)
}

func newTeams(pe *PE) *teams {
	n := pe.NPEs()
	world := teamshared.Strided(0, 1, n)
	shared := world
	switch {
	case pe.Config().Transport == "cma":
		shared = teamshared.Strided(pe.MyPE(), 1, 1) // nothing else is mapped
	case !pe.PtrAll():
		first, local := pe.LocalPEs()
		shared = teamshared.Strided(first, 1, local)
	}
	host := world
	leaders := teamshared.Strided(0, 1, 1)
	if mates, heads := pe.HostPEs(); mates != nil {
		// A job across hosts: each host's PEs map each other's heaps.
		host = teamshared.List(mates)
		if pe.Config().Transport != "cma" {
			shared = host
		}
		leaders = teamshared.List(heads)
	}
	ts := &teams{pool: teamshared.NewPool(node.TeamSlots), made: map[*Team]struct{}{}}
	pe.OnFinalize(ts.finalize)
	pe.SetTeamFinal(&node.TeamFinal{
		Publish:   func() { ts.publishFinal(pe) },
		Check:     func(routine string) { ts.checkFinal(pe, routine) },
		Destroyed: func(routine string) { ts.checkDestroyed(pe, routine) },
	})
	mk := func(name string, m teamshared.Members, slot int) *Team {
		me := m.Index(pe.MyPE())
		if me < 0 {
			return nil
		}
		t := &Team{pe: pe, members: m, n: m.Size(), me: me, slot: slot, named: name, collBlock: -1}
		t.slots = make([]int32, m.Size())
		for i := range t.slots {
			t.slots[i] = int32(slot)
		}
		t.finish()
		return t
	}
	ts.world = mk("TeamWorld", world, slotWorld)
	ts.shared = mk("TeamShared", shared, slotShared)
	ts.host = mk("TeamHost", host, slotHost)
	ts.leaders = mk("TeamLeaders", leaders, slotLeaders)
	// TeamWorld's barrier is the PE's own: SyncAll and BarrierAll are
	// collectives on TeamWorld, so they and its syncs share one barrier
	// and its epochs. TeamShared and TeamHost keep their own even when
	// they hold every PE (a job on one host): they are other teams, and
	// collectives on different teams may run in parallel in threads of
	// one PE, in any order (TestPredefinedTeamsConcurrent).
	if t := ts.world; t != nil && (t.alg.barrier == "" || t.alg.barrier == "auto") && isWorld(t.members, pe.NPEs()) {
		t.nodeSync = true
	}
	// The collectives' scratch (jobs across hosts): block 0 is
	// TeamWorld's and block 1 TeamLeaders', the same on every member;
	// splits share out the others (create).
	if pe.CollScratch(0) != nil {
		ts.scratchFree = 1<<node.CollScratchBlocks - 1
		for b, t := range []*Team{ts.world, ts.leaders} {
			ts.scratchFree &^= 1 << b // (on every PE: the same blocks everywhere)
			if t != nil && t.multi {
				t.collBlock = b
			}
		}
	}
	// TeamNUMA: the PEs of TeamShared with this PE's home node.
	var local []int
	for _, q := range shared.PEs() {
		if pe.NUMANode(q) == pe.NUMANode(pe.MyPE()) {
			local = append(local, q)
		}
	}
	ts.numa = mk("TeamNUMA", teamshared.List(local), slotNUMA)
	return ts
}

// finish derives what a team's collectives need from its membership.
func (t *Team) finish() {
	t.worlds = t.members.PEs()
	t.others = nil
	for _, q := range t.worlds {
		if q != t.pe.MyPE() {
			t.others = append(t.others, q)
		}
	}
	if here, ok := t.pe.HostOf(t.pe.MyPE()); ok {
		t.hostFirst = -1
		for i, q := range t.worlds {
			h, _ := t.pe.HostOf(q)
			if h != here {
				t.acrossHosts = true
			} else if t.hostFirst < 0 {
				t.hostFirst = i
			}
		}
	}
	cfg := t.pe.Config()
	t.alg = algorithms{cfg.BarrierAlgorithm, cfg.ReduceAlgorithm, cfg.BcastAlgorithm, cfg.FCollectAlgorithm, cfg.NUMACollectives}
	d0 := t.domainOf(t.worlds[0])
	domains := map[int]bool{}
	for _, q := range t.worlds {
		if t.domainOf(q) != d0 {
			t.multi = true
		}
		domains[t.domainOf(q)] = true
	}
	t.domains = len(domains)
	// Every member decides the same: the algorithms of a collective
	// depend on this, so it must not depend on what one PE happens to
	// map. Inside one domain every heap is mapped by construction.
	t.shared = !t.multi
	// The central barrier needs member 0's slot mapped everywhere.
	t.centralSync = t.shared && len(t.worlds) > 1 && (t.alg.barrier == "central" ||
		(t.alg.barrier == "" || t.alg.barrier == "auto") && t.pe.CentralBarrier())
	t.numaSpan, t.numaGroups = t.spansNodes()
	t.pushMax = pushBox
	if !t.shared {
		t.pushMax = max(pushBox, widePushSize(len(t.worlds)))
	}
	// The choices of reduce for up to exchangeData bytes, made once: on
	// a team that maps each other, with the default algorithms, a small
	// reduction goes through the exchange (unless the NUMA levels are
	// forced), which reduce tests before anything else.
	t.smallReduce = t.shared && (t.alg.reduce == "" || t.alg.reduce == "auto") &&
		!(t.numaSpan && t.alg.numa == "always")
	// Combining waits once per member where the exchange waits for each
	// member in turn, which pays when every wait can cost a turn on a
	// CPU. It does for goroutine PEs (8 on 2 Ps, 8 B: 0.29-0.46 of the
	// exchange's time); for processes it measured no better (8 bound
	// to 2 CPUs 0.90-1.11, 8 unbound 0.93-1.29, 4 bound 1.20-1.40: the
	// exchange's waits for CPU mates there are cheaper than one
	// combiner's serial reads). So only members that are all goroutines
	// of one process combine.
	t.combine = t.smallReduce && t.centralSync && t.oneProcess()
	if t.shared {
		// The members' slots as mapped here, for the dropboxes.
		t.slotBase = make([]mem.Base, len(t.worlds))
		for i, q := range t.worlds {
			t.slotBase[i] = mem.RegionOf(t.pe.TeamBytes(q, int(t.slots[i]), 0, 4*node.TeamSlotWords)).Base
		}
		// The dissemination barrier's flags as pointers, as the PE's own
		// barrier keeps them: round r stores into the flag of member
		// me+2^r and waits on its own.
		for r := 0; 1<<r < len(t.worlds); r++ {
			partner := (t.me + 1<<r) % len(t.worlds)
			t.barOut = append(t.barOut, mem.At[atomic.Uint32](t.slotBase[partner], uintptr(r*wordsPerLine*4)))
			t.barTo = append(t.barTo, t.worlds[partner])
			t.barIn = append(t.barIn, mem.At[atomic.Uint32](t.slotBase[t.me], uintptr(r*wordsPerLine*4)))
		}
		for _, q := range t.pe.CPUMates() {
			i := t.members.Index(q)
			if i < 0 {
				t.mates = nil // a mate outside the team may need the CPU
				break
			}
			t.mates = append(t.mates, i)
		}
	}
}

// spansNodes reports whether some domain of the team holds members of
// several NUMA nodes, and how many (domain, node) groups the members
// form (the same on every member: home nodes are published at
// start-up).
func (t *Team) spansNodes() (bool, int) {
	first := map[int]int{} // domain -> node of its first member
	groups := map[groupKey]bool{}
	span := false
	for _, q := range t.worlds {
		d, n := t.domainOf(q), t.pe.NUMANode(q)
		groups[groupKey{d, n}] = true
		if n0, ok := first[d]; !ok {
			first[d] = n
		} else if n0 != n {
			span = true
		}
	}
	return span, len(groups)
}

// domainOf returns the shared-memory domain of world PE q, the same on
// every PE: q alone under SHMEM_TRANSPORT=cma; the whole job when every
// process maps every heap, q's process otherwise; either cut into runs
// of GOSHMEM_SIM_DOMAINS consecutive PEs when that is set.
func (t *Team) domainOf(q int) int {
	cfg := t.pe.Config()
	sim := 0
	if cfg.SimDomains > 0 {
		sim = q / cfg.SimDomains
	}
	switch {
	case cfg.Transport == "cma":
		return q // every PE its own domain: no heap is mapped by another
	case t.pe.PtrAll():
		return sim
	}
	if h, ok := t.pe.HostOf(q); ok {
		return h<<24 | sim // the PEs of a host map each other's heaps
	}
	// Only the PEs of one process surely map each other.
	return t.pe.ProcessOf(q)<<24 | sim
}

// numaMinPerNode is the fewest members per NUMA node, on average, for
// which SHMEM_NUMA_COLLECTIVES=auto runs a team level by level.
//
// This is a model, not a measurement (the machines goshmem is measured
// on have one node; BenchmarkReduceNUMALevel shows what the extra level
// costs there: about 1.8x at 1 MiB on 4 PEs). A flat partitioned
// reduction of S bytes over P members on N nodes has each member read
// and write P-1 slices of S/P bytes, about P-P/N of them on other
// nodes: some 2*S*P*(N-1)/N bytes cross nodes in all, growing with P.
// Level by level only the N node leaders exchange across nodes, about
// 2*S*(N-1)/N bytes, at the price of two more passes over the data
// inside each node. With a few members per node the passes dominate;
// from about 4 per node the interconnect does.
const numaMinPerNode = 4

// hierarchical reports whether a collective of the given size in bytes
// runs level by level: always across domains (it must), and over a
// team spanning NUMA nodes per SHMEM_NUMA_COLLECTIVES: "auto" above
// flatMax bytes with at least numaMinPerNode members per node on
// average, where moving each node's data across the interconnect once
// beats every member reading every other member's; "always"; "never".
func (t *Team) hierarchical(bytes uintptr) bool {
	if t.multi {
		return true
	}
	if !t.numaSpan {
		return false
	}
	switch t.alg.numa {
	case "always":
		return true
	case "never":
		return false
	}
	return bytes > flatMax && len(t.worlds) >= numaMinPerNode*t.numaGroups
}

// hierarchy returns the team's levels, making them (a collective over
// the team) at the first call. Every member calls it at the same
// collective, so every member makes the same levels.
//
// The levels take team slots from the pool the program's splits use.
// When a PE has none left, every member gets the same error from the
// level's creation (create agrees on it), and every member gives the
// levels up alike: hierarchy destroys those it made, turns the team's
// level-by-level paths off for good (multi and numaSpan: the flat
// algorithms, over RMA, serve any team), and returns nil; the caller
// then runs its collective flat. A collective on a valid team never
// fails for want of slots (OpenSHMEM's collectives have no error to
// return); it is slower.
func (t *Team) hierarchy(routine string) *hierarchy {
	if t.hier != nil {
		return t.hier
	}
	// The groupings, bottom up; the top one (everybody) is implied.
	var groupings []func(q int) groupKey
	if t.numaSpan {
		groupings = append(groupings, func(q int) groupKey { return groupKey{t.domainOf(q), t.pe.NUMANode(q)} })
	}
	if t.multi {
		groupings = append(groupings, func(q int) groupKey { return groupKey{domain: t.domainOf(q)} })
	}
	groupings = append(groupings, func(int) groupKey { return groupKey{} })

	t.making++
	defer func() { t.making-- }()
	h := &hierarchy{}
	leads := true                   // this PE leads its group at the level below
	cands := slices.Clone(t.worlds) // the members of the current level: leaders of the level below
	for _, key := range groupings {
		keys := make([]groupKey, len(t.worlds))
		for j, q := range t.worlds {
			keys[j] = key(q)
		}
		h.keys = append(h.keys, keys)
		var mine, next []int
		seen := map[groupKey]bool{}
		myKey := key(t.pe.MyPE())
		for _, q := range cands {
			k := key(q)
			if leads && k == myKey {
				mine = append(mine, q)
			}
			if !seen[k] {
				seen[k] = true
				next = append(next, q)
			}
		}
		m := teamshared.Members{}
		if leads {
			m = teamshared.List(mine)
		}
		lt, err := t.create(routine, m, nil, splitArgs{}, nil, false)
		if err != nil {
			for _, l := range h.levels {
				l.Destroy() // (nil where this PE is in none)
			}
			t.multi, t.numaSpan = false, false
			return nil
		}
		if lt != nil {
			// A level's collectives run flat: over shared memory inside
			// a domain, over RMA across domains.
			lt.multi, lt.numaSpan = false, false
		}
		h.levels = append(h.levels, lt)
		leads = leads && len(mine) > 0 && mine[0] == t.pe.MyPE()
		cands = next
	}
	t.hier = h
	return h
}

// isWorld reports whether m is every PE of a job of npes PEs, in
// order.
func isWorld(m teamshared.Members, npes int) bool {
	if m.Size() != npes {
		return false
	}
	for i, q := range m.PEs() {
		if q != i {
			return false
		}
	}
	return true
}

// TeamWorld returns the team of all PEs (SHMEM_TEAM_WORLD).
func TeamWorld(pe *PE) *Team { return teamsOf(pe).world }

// TeamShared returns the team of the PEs whose whole heap this PE can
// map, whatever their numbers (SHMEM_TEAM_SHARED): every PE of the job
// when every process maps every heap, the PEs of this process when some
// cannot, and only this PE under SHMEM_TRANSPORT=cma.
func TeamShared(pe *PE) *Team { return teamsOf(pe).shared }

// TeamHost returns the team of the PEs on this PE's host.
func TeamHost(pe *PE) *Team { return teamsOf(pe).host }

// TeamLeaders returns the team of one PE per host, the lowest of each
// (nil on the other PEs).
func TeamLeaders(pe *PE) *Team { return teamsOf(pe).leaders }

// TeamNUMA returns the team of the PEs of TeamShared whose home NUMA
// node is this PE's (an extension; see PE.NUMANode): the PEs whose
// heaps sit in the same memory and who share a socket's caches. On a
// machine with one NUMA node it has TeamShared's members; a PE not
// bound inside one node (home node -1) shares it with the other such
// PEs.
func TeamNUMA(pe *PE) *Team { return teamsOf(pe).numa }

// MyPE returns this PE's number in the team (shmem_team_my_pe), -1 for
// the invalid team.
func (t *Team) MyPE() int {
	if t == nil {
		return -1
	}
	return t.me
}

// NPEs returns the number of PEs in the team (shmem_team_n_pes), -1 for
// the invalid team.
func (t *Team) NPEs() int {
	if t == nil {
		return -1
	}
	return t.n
}

// GetConfig returns the team's configuration (shmem_team_get_config).
// For the invalid team (nil) it returns the zero TeamConfig and an
// error wrapping ErrInvalidTeam (the C routine's nonzero return), so
// that it is told apart from a valid team made with the zero
// configuration.
func (t *Team) GetConfig() (TeamConfig, error) {
	if t == nil {
		return TeamConfig{}, fmt.Errorf("goshmem.Team.GetConfig: %w", ErrInvalidTeam)
	}
	t.check("Team.GetConfig")
	return t.cfg, nil
}

// TranslatePE returns the number in dst of PE pe of t, or -1 when it is
// not a member of dst or either team is invalid
// (shmem_team_translate_pe).
func (t *Team) TranslatePE(pe int, dst *Team) int {
	if t == nil || dst == nil || t.dead || dst.dead || pe < 0 || pe >= t.members.Size() {
		return -1
	}
	return dst.members.Index(t.members.PE(pe))
}

// WorldPE returns the world PE number of team PE pe
// (TranslatePE(pe, TeamWorld)), -1 for the invalid team.
func (t *Team) WorldPE(pe int) int {
	if t == nil {
		return -1
	}
	t.check("TeamWorldPE")
	t.checkPE("TeamWorldPE", "PE", pe)
	return t.worlds[pe]
}

// CtxCreate creates a context on the team (shmem_team_create_ctx): RMA
// and AMOs on it take team-relative PE numbers. Destroying the team
// destroys the context unless it is CtxPrivate (whose owner must
// destroy it before the team). On the invalid team it creates nothing
// and returns an error wrapping ErrInvalidTeam.
func (t *Team) CtxCreate(opts CtxOptions) (*Ctx, error) {
	if t == nil {
		return nil, fmt.Errorf("goshmem.Team.CtxCreate: %w", ErrInvalidTeam)
	}
	t.check("Team.CtxCreate")
	c, err := t.pe.CtxCreateTeam(t.worlds, opts)
	if err != nil {
		return nil, err
	}
	if opts&CtxPrivate != 0 {
		c.SetTeam(t, nil)
		return c, nil
	}
	c.SetTeam(t, t.forgetCtx)
	t.ctxMu.Lock()
	if t.ctxs == nil {
		t.ctxs = map[*Ctx]struct{}{}
	}
	t.ctxs[c] = struct{}{}
	t.ctxMu.Unlock()
	return c, nil
}

// forgetCtx drops a destroyed context from the team's shareable ones.
func (t *Team) forgetCtx(c *Ctx) {
	t.ctxMu.Lock()
	delete(t.ctxs, c)
	t.ctxMu.Unlock()
}

// ErrInvalidCtx is wrapped by the error of CtxGetTeam given the invalid
// context (a nil *Ctx, SHMEM_CTX_INVALID).
var ErrInvalidCtx = errors.New("the context is SHMEM_CTX_INVALID (a nil *Ctx)")

// CtxGetTeam returns the team ctx was created on (shmem_ctx_get_team):
// the team of Team.CtxCreate, TeamWorld for the default context and for
// the contexts of PE.CtxCreate. For the invalid context (nil) it returns
// the invalid team (nil) and an error wrapping ErrInvalidCtx; a
// destroyed context panics.
//
// It is a function rather than a method because Ctx is node.Ctx, which
// cannot know the Team type of this package: a team context carries its
// *Team opaquely (node.Ctx.SetTeam), and this function gives it its
// type back.
func CtxGetTeam(ctx *Ctx) (*Team, error) {
	if ctx == nil {
		return nil, fmt.Errorf("goshmem.CtxGetTeam: %w", ErrInvalidCtx)
	}
	if t, ok := ctx.CtxTeam("CtxGetTeam").(*Team); ok {
		return t, nil
	}
	return TeamWorld(ctx.PE()), nil
}

// TeamPtr returns x as it lives on team PE pe's heap (shmem_team_ptr),
// or nil where Ptr would return nil, and for the invalid team.
func TeamPtr[T any](t *Team, x []T, pe int) []T {
	if t == nil {
		return nil
	}
	t.check("TeamPtr")
	t.checkPE("TeamPtr", "PE", pe)
	return Ptr(t.pe, x, t.worlds[pe])
}

// ErrInvalidTeam is wrapped by the errors of the team routines that
// return one when given the invalid team (a nil *Team,
// SHMEM_TEAM_INVALID).
var ErrInvalidTeam = errors.New("the team is SHMEM_TEAM_INVALID (a nil *Team)")

// check panics unless t is a live team: for the routines where the
// invalid or a destroyed team is a programmer error.
func (t *Team) check(routine string) {
	if t == nil || t.dead {
		t.invalid(routine)
	}
}

// enter is check for a collective call on the team: it counts the call
// (calls), which every member makes in the same order.
func (t *Team) enter(routine string) {
	t.check(routine)
	mem.StoreRelease(&t.calls, t.calls.Load()+1)
}

// enterSync is enter for TeamSync and TeamBarrier: on a world team whose
// sync is the PE's barrier (nodeSync) the PE counts them with
// BarrierAll and SyncAll, which a program may use in their place.
func (t *Team) enterSync(routine string) {
	if t != nil && t.nodeSync {
		t.check(routine)
		return
	}
	t.enter(routine)
}

//go:noinline
func (t *Team) invalid(routine string) {
	if t == nil {
		panicf("%s: the team argument is SHMEM_TEAM_INVALID (a nil *Team); only the members of a split get a valid team", routine)
	}
	if t.dead {
		panicf("%s: the team argument was destroyed (Team.Destroy, or Finalize for every team the program made)", routine)
	}
}

// checkPE panics unless pe, the argument arg of routine, is a PE
// number of the team.
func (t *Team) checkPE(routine, arg string, pe int) {
	if uint(pe) >= uint(t.members.Size()) {
		t.badPE(routine, arg, pe)
	}
}

//go:noinline
func (t *Team) badPE(routine, arg string, pe int) {
	panicf("%s: %s %d out of range [0, %d) of the team", routine, arg, pe, t.members.Size())
}

// Sync waits until every member of the team has called Sync
// (shmem_team_sync). It is a dissemination barrier on the members'
// slots: every flag has one writer and its own cache line.
func (t *Team) Sync() {
	t.enterSync("Team.Sync")
	t.sync("Team.Sync")
}

// Barrier completes this PE's outstanding operations on the default
// context, then synchronizes the team.
func (t *Team) Barrier() {
	t.enterSync("Team.Barrier")
	t.pe.Ctx().Quiet()
	t.sync("Team.Barrier")
}

func (t *Team) sync(routine string) {
	if !t.shared {
		if _, across := t.pe.HostOf(0); across {
			// The collectives put into members on other hosts and
			// then sync: the puts complete first, since the sync's
			// flags may reach a member along other connections
			// (PE.sync, which the world team's sync is, does the
			// same).
			t.pe.Ctx().Quiet()
		}
	}
	t.epoch++
	e := t.epoch
	n := t.members.Size()
	switch {
	case t.nodeSync:
		t.pe.SyncAs(routine)
		return
	case t.centralSync:
		t.centralBarrier(routine, n)
		return
	case t.alg.barrier == "tree":
		t.treeSync(routine, e)
		return
	case t.multi && !t.numaSpan && t.making == 0 && (t.alg.barrier == "" || t.alg.barrier == "auto"):
		t.hierSync(routine)
		return
	}
	if t.barOut != nil {
		for r, out := range t.barOut {
			out.Store(e) // an XCHG: plain stores measured no faster where the PE waits next
			t.pe.Wake(t.barTo[r])
			t.pe.WaitWord(routine, t.barIn[r], e)
		}
		return
	}
	for r := 0; 1<<r < n; r++ {
		partner := (t.me + 1<<r) % n
		t.pe.TeamSet(t.worlds[partner], int(t.slots[partner]), r*wordsPerLine, e)
		t.pe.TeamWait(routine, t.slot, r*wordsPerLine, e)
	}
}

// hierSync is the sync of a team that spans hosts, level by level (as
// the world's, node/hierbarrier.go): a sync of each host's members, a
// sync of the hosts' leaders, and a second sync of each host, which
// releases its members once their leader is through the leaders' (so
// no member leaves before every member of the team has arrived). Only
// the leaders' sync crosses hosts: ceil(log2(hosts)) rounds, where the
// flat dissemination takes ceil(log2(members)) rounds, most of them
// across hosts. The levels are made at the team's first sync or
// hierarchical collective, whichever comes first (the syncs inside
// that making, and inside every split of the team, run flat).
func (t *Team) hierSync(routine string) {
	h := t.hierarchy(routine)
	if h == nil {
		t.sync(routine) // flat from now on
		return
	}
	h.levels[0].sync(routine)
	if l := h.levels[1]; l != nil {
		l.sync(routine)
	}
	h.levels[0].sync(routine)
}

// SplitStrided creates a team of the parent's PEs start, start+stride,
// ... (size of them; stride may be negative, or 0 for a one-PE team)
// (shmem_team_split_strided). Every parent PE must call it, with the
// same arguments; those not in the new team get nil
// (SHMEM_TEAM_INVALID). The outcome is the same on every parent PE: an
// invalid split - on any PE: arguments that make no team, or that
// differ from the other PEs' - returns nil and an error wrapping
// teamshared.ErrInvalidSplit on every PE, and so does a split that
// cannot be created because some PE of the new team belongs to too
// many teams. On the invalid team it returns nil and an error wrapping
// ErrInvalidTeam. cfg may be nil.
func (t *Team) SplitStrided(start, stride, size int, cfg *TeamConfig) (*Team, error) {
	if t == nil {
		return nil, fmt.Errorf("goshmem.Team.SplitStrided: parent %w", ErrInvalidTeam)
	}
	t.enter("Team.SplitStrided")
	m, err := t.members.SplitStrided(start, stride, size)
	if err == nil {
		err = checkTeamConfig(cfg)
	}
	if err != nil {
		// Still a collective: the other PEs learn of the bad arguments
		// and fail too, instead of waiting for this PE forever.
		err = fmt.Errorf("goshmem.Team.SplitStrided: %w", err)
	} else if m.Index(t.pe.MyPE()) < 0 {
		m = teamshared.Members{}
	}
	return t.create("Team.SplitStrided", m, cfg, splitArgs{start, stride, size}, err, true)
}

// checkTeamConfig returns the error of a split's configuration, nil
// for a valid one (or none).
func checkTeamConfig(cfg *TeamConfig) error {
	if cfg != nil && cfg.NumContexts < 0 {
		return fmt.Errorf("%w: TeamConfig.NumContexts is %d; it counts contexts, so it must be >= 0", teamshared.ErrInvalidSplit, cfg.NumContexts)
	}
	return nil
}

// Split2D splits the team into the rows (x teams, of xrange
// consecutive PEs) and columns (y teams) of a 2-D layout of its PEs
// (shmem_team_split_2d). Every PE gets its own row and column. The
// creation of each of the two is collective over the parent and fails
// or succeeds on every PE of the parent alike. If either cannot be
// created, on any PE, both are nil on every PE of the parent and err
// says why (OpenSHMEM 1.5, shmem_team_split_2d: "both team handles on
// all PEs in parent_team will be assigned the value
// SHMEM_TEAM_INVALID"): a row that was created when the column could
// not be (a PE with one team slot left, say) is destroyed again, so no
// slot stays taken. An xrange that is invalid or differs on some PE
// is such a failure too (an error wrapping
// teamshared.ErrInvalidSplit); on the invalid team Split2D returns nil
// teams and an error wrapping ErrInvalidTeam.
func (t *Team) Split2D(xrange int, xcfg, ycfg *TeamConfig) (x, y *Team, err error) {
	if t == nil {
		return nil, nil, fmt.Errorf("goshmem.Team.Split2D: parent %w", ErrInvalidTeam)
	}
	t.enter("Team.Split2D")
	xm, ym, err := t.members.Split2D(t.me, xrange)
	if err == nil {
		err = checkTeamConfig(xcfg)
	}
	if err == nil {
		err = checkTeamConfig(ycfg)
	}
	if err != nil {
		err = fmt.Errorf("goshmem.Team.Split2D: %w", err)
	}
	// Every parent PE takes part in the creation of x and then of y;
	// each fails or succeeds on every parent PE alike (bad arguments on
	// any PE included), so after a failure of x every PE skips y, and
	// after a failure of y every member of each x team destroys it
	// together.
	args := splitArgs{min(xrange, t.members.Size())}
	x, err = t.create("Team.Split2D", xm, xcfg, args, err, true)
	if err != nil {
		return nil, nil, err
	}
	y, err = t.create("Team.Split2D", ym, ycfg, args, nil, true)
	if err != nil {
		if x != nil {
			x.Destroy()
		}
		return nil, nil, err
	}
	return x, y, nil
}

// splitArgs are the arguments of a split that every parent PE must pass
// alike (the ones that decide the teams).
type splitArgs [3]int

// hash condenses the arguments into a word that create compares across
// the parent's PEs (FNV-1a over their bytes).
func (a splitArgs) hash() uint32 {
	h := uint32(2166136261)
	for _, v := range a {
		for i := 0; i < 64; i += 8 {
			h = (h ^ uint32(byte(v>>i))) * 16777619
		}
	}
	return h
}

// errNoSlot is returned when a PE of the new team has no free slot.
var errNoSlot = errors.New("no free team slot")

// Votes in the post word of create besides "not joining" (0) and a slot
// number plus one.
const (
	voteNoSlot  = ^uint32(0) // joining, but out of slots
	voteBadArgs = ^uint32(1) // the arguments make no valid split
)

// create is the collective part of every split: each parent PE passes
// the membership of the team it joins (empty: none), the arguments the
// PEs must agree on, and argErr if its arguments make no valid split;
// members take a slot from their own pool, clear it, and publish its
// number in their parent slot (or that they have none left, or that
// their arguments are bad), and every PE publishes the hash of its
// arguments; after a parent sync every parent PE reads every parent
// PE's words, so that all of them see the same failure, and members
// read their team's slots; a second parent sync frees the published
// words for the next split. The outcome is the same on every parent PE:
// a team (or nil for non-members) and no error, or nil and an error (a
// PE with bad arguments gets its own error, the others one naming it).
//
// A split's team (withScratch; not the levels of a hierarchy, whose
// collectives need none) that spans hosts also gets a block of the
// collectives' scratch: each member reserves the blocks it has free
// and publishes them as a mask, the team takes the lowest block free on
// every member, and each member frees the rest again.
func (t *Team) create(routine string, m teamshared.Members, cfg *TeamConfig, args splitArgs, argErr error, withScratch bool) (*Team, error) {
	t.making++
	defer func() { t.making-- }()
	pe := t.pe
	ts := teamsOf(pe)
	pool := ts.pool
	me := m.Index(pe.MyPE())
	post := uint32(0) // not joining
	slot := -1
	var free uint32 // the scratch blocks reserved for the new team
	switch {
	case argErr != nil:
		me, post = -1, voteBadArgs
	case me >= 0:
		if s, ok := pool.Get(); ok {
			slot = s
			pe.TeamClear(slot, arrivalsWord)
			post = uint32(slot) + 1
		} else {
			post = voteNoSlot
		}
		if withScratch {
			free = ts.takeScratch()
		}
	}
	pe.TeamSet(pe.MyPE(), t.slot, postWord, post)
	pe.TeamSet(pe.MyPE(), t.slot, argsWord, args.hash())
	pe.TeamSet(pe.MyPE(), t.slot, scratchWord, free)
	t.sync(routine)
	var nt *Team
	err := t.createError(routine)
	if argErr != nil {
		err = argErr
	}
	if me >= 0 && err == nil {
		nt = &Team{pe: pe, members: m, n: m.Size(), me: me, slot: slot, collBlock: -1}
		if cfg != nil {
			nt.cfg = *cfg
		}
		nt.slots = make([]int32, m.Size())
		common := free
		for i := range nt.slots {
			q := m.PE(i)
			v := pe.TeamLoad(q, int(t.slots[t.members.Index(q)]), postWord)
			if v == 0 {
				// q did not join: the PEs passed different arguments.
				panicf("%s: PE %d did not join the new team; every PE of the parent team must pass the same arguments", routine, q)
			}
			nt.slots[i] = int32(v - 1)
			common &= pe.TeamLoad(q, int(t.slots[t.members.Index(q)]), scratchWord)
		}
		nt.finish()
		if nt.multi && common != 0 {
			nt.collBlock = bits.TrailingZeros32(common)
			free &^= 1 << nt.collBlock
		}
		if nt.centralSync {
			// Member 0's arrival count is not cleared with its slot (see
			// TeamClear): start from what it holds. Nobody arrives at the
			// new team's barrier before the parent sync below.
			nt.central = pe.TeamLoad(nt.worlds[0], int(nt.slots[0]), arrivalsWord)
		}
	}
	t.sync(routine)
	ts.putScratch(free) // what the new team did not take
	if err != nil {
		if slot >= 0 {
			pool.Put(slot)
		}
		return nil, err
	}
	if nt != nil {
		ts.mu.Lock()
		ts.made[nt] = struct{}{}
		ts.mu.Unlock()
	}
	return nt, nil
}

// createError reads the votes of create and returns the error of the
// first parent PE, in team order, that cannot go on: out of slots, bad
// arguments, or arguments other than member 0's. Every parent PE reads
// the same words, so every one returns the same error.
func (t *Team) createError(routine string) error {
	pe := t.pe
	args0 := pe.TeamLoad(t.worlds[0], int(t.slots[0]), argsWord)
	for i, q := range t.worlds {
		switch {
		case pe.TeamLoad(q, int(t.slots[i]), postWord) == voteNoSlot:
			return fmt.Errorf("goshmem.%s: PE %d belongs to %d teams already, the most a PE can (%d); destroy teams that are no longer used: %w",
				routine, q, node.TeamSlots-teamshared.Reserved, node.TeamSlots-teamshared.Reserved, errNoSlot)
		case pe.TeamLoad(q, int(t.slots[i]), postWord) == voteBadArgs:
			return fmt.Errorf("goshmem.%s: PE %d (parent team PE %d) passed arguments that make no valid split; every PE of the parent team must pass the same, valid arguments: %w",
				routine, q, i, teamshared.ErrInvalidSplit)
		case pe.TeamLoad(q, int(t.slots[i]), argsWord) != args0:
			return fmt.Errorf("goshmem.%s: PE %d (parent team PE %d) passed other arguments than PE %d (parent team PE 0); every PE of the parent team must pass the same arguments: %w",
				routine, q, i, t.worlds[0], teamshared.ErrInvalidSplit)
		}
	}
	return nil
}

// Destroy destroys the team (shmem_team_destroy): every member calls
// it; it destroys the team's shareable contexts (those of CtxCreate
// without CtxPrivate: using one afterwards panics as for any destroyed
// context), synchronizes the members, then frees this PE's slot. The
// predefined teams cannot be destroyed.
func (t *Team) Destroy() {
	if t == nil {
		return
	}
	t.check("Team.Destroy")
	if t.named != "" {
		panicf("Team.Destroy: %s is predefined and cannot be destroyed", t.named)
	}
	t.enter("Team.Destroy") // a collective call: a member of another host that never makes it is seen by its count (checkFinal)
	// Not looked at by teams.checkFinal from here on: once the members
	// have synchronized below, one may take this team's slot for
	// another team and store that team's final count in it.
	t.closing.Store(true)
	// A member in Finalize that never destroys the team looks for this
	// word (teams.checkDestroyed): this PE waits for it below.
	t.pe.TeamSet(t.pe.MyPE(), t.slot, destroyWord, 1)
	t.pe.DestroyBegins()
	t.ctxMu.Lock()
	ctxs := t.ctxs
	t.ctxs = nil
	t.ctxMu.Unlock()
	for c := range ctxs {
		c.Destroy() // completes its operations
	}
	t.pe.Ctx().Quiet()
	// The team's own sync runs first, over its levels if it has them
	// (hierSync): destroyed first, the levels' slots went back to the
	// pool, where a team that another goroutine of this PE made
	// meanwhile took one and cleared a flag of the sync still to come
	// (a hang found with goroutine PEs over CMA).
	t.sync("Team.Destroy")
	t.pe.DestroyEnds()
	if h := t.hier; h != nil {
		for _, lt := range h.levels {
			lt.Destroy() // nil on the levels this PE is not in
		}
	}
	t.dead = true
	ts := teamsOf(t.pe)
	ts.mu.Lock()
	delete(ts.made, t)
	if t.collBlock >= 0 {
		ts.scratchFree |= 1 << t.collBlock
	}
	ts.mu.Unlock()
	ts.pool.Put(t.slot)
}

// centralBarrier is the central counter barrier (node's SyncAll has
// the same): every member adds one to a word of member 0's slot that
// grows by n per barrier, and leaves when it has grown by n times the
// barriers passed since the team was made; the last arriver wakes
// every member. Each member
// needs a CPU about once to arrive and once to leave, which is what
// counts when PEs outnumber CPUs.
func (t *Team) centralBarrier(routine string, n int) {
	t.pe.CheckAbort(routine) // a PE that left by a JobError must not arrive
	t.central += uint32(n)
	all := t.central
	q, s := t.worlds[0], int(t.slots[0])
	if t.pe.TeamFetchAdd(q, s, arrivalsWord, 1) == all {
		for _, w := range t.worlds {
			t.pe.Wake(w)
		}
		return
	}
	t.pe.TeamWaitOn(routine, q, s, arrivalsWord, all)
}

// treeSync is the tree barrier: arrivals gathered up a binomial tree
// rooted at team PE 0 (each child raising its own word in its parent's
// slot), then the release passed down it. Member i's children are i+2^k
// for every 2^k > i (while < n); its parent is i with its highest set
// bit cleared.
func (t *Team) treeSync(routine string, e uint32) {
	n, me := t.members.Size(), t.me
	// Children: me + 2^k for k above me's highest set bit, while < n.
	k0 := 0
	if me > 0 {
		k0 = bitLen(me)
	}
	for k := k0; me+1<<k < n; k++ {
		t.pe.TeamWait(routine, t.slot, childWord+k-k0, e)
	}
	if me > 0 {
		parent := me &^ (1 << (bitLen(me) - 1))
		kk := bitLen(me) - 1 - bitLen(parent) // me's index among parent's children
		t.pe.TeamSet(t.worlds[parent], int(t.slots[parent]), childWord+kk, e)
		t.pe.TeamWait(routine, t.slot, releaseWord, e)
	}
	for k := k0; me+1<<k < n; k++ {
		c := me + 1<<k
		t.pe.TeamSet(t.worlds[c], int(t.slots[c]), releaseWord, e)
	}
}

// bitLen is the number of bits of x (0 for 0).
func bitLen(x int) int { return bits.Len(uint(x)) }

// The tiny broadcast ring must end inside the slot, the large one
// before the tiny ring's second part, both rings' positions fit bpos's
// uint8, and the large ring's biggest dropbox fits in each of its two
// runs of lines (compile-time checks: a negative array length does not
// build).
var (
	_ [node.TeamSlotWords*4 - (bcastTinyMore + (bcastTiny-bcastTinyLow)*16)]struct{}
	_ [255 - bcastTiny]struct{}
	_ [255 - bcastLines]struct{}
	_ [bcastLinesLow - bcastMaxLines]struct{}
	_ [bcastLines - bcastLinesLow - bcastMaxLines]struct{}
	// the large ring's first run ends before the central barrier's line
	// (54), its second clear of the small exchange dropboxes (line 99),
	// and those of the tiny ring's
	_ [arrivalsWord*4 - (bcastLineBoxes + bcastLinesLow*64)]struct{}
	_ [exchangeSmall - (bcastLargeMore + (bcastLines-bcastLinesLow)*64)]struct{}
	// the large ring's five-line dropboxes (where the PEs fit their
	// CPUs) fill the same lines (44-53, 64-98), and
	// their indexes fit bpos's uint8 and blast's entries for the lines
	_ [arrivalsWord*4 - (bcastBoxes + bcastBoxesLow*bcastMaxLines*64)]struct{}
	_ [exchangeSmall - (bcastLargeMore + (bcastBoxesN-bcastBoxesLow)*bcastMaxLines*64)]struct{}
	_ [bcastLines - bcastBoxesN]struct{}
	_ [bcastTinyMore - (exchangeSmall + 64)]struct{}
)
