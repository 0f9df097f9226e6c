// Command team_create is the team creation latency test (the creation
// benchmark of the OpenSHMEM teams paper: 64 teams created back to
// back):
//
//	go run ./cmd/oshrun -n 2 ./bench/team_create [-i N] [-w N] [-f]
//
// One round: every PE creates 64 teams back to back with
// TeamWorld.SplitStrided(0, 1, npes, nil) (each team of all PEs), then
// destroys them. Every PE does the warm-up rounds, then the timed ones;
// only the creations are timed (a PE reads the clock before the first
// and after the last creation of a round). Each PE's latency is its
// creation time divided by 64 x rounds, in microseconds per creation;
// the row (key 64, the teams per round) is PE 0's, and with -f the
// minimum and maximum over all PEs and the number of timed rounds. A
// comment after it gives PE 0's destruction time per team. -m is
// accepted and ignored. Runs with any number of PEs, 1 included.
//
// Team syncs use goshmem's barrier algorithm, or SHMEM_BARRIER_ALGORITHM
// (dissemination, tree) passed to the PEs.
//
// Defaults: -i 100, -w 10 (rounds). Output (PE 0, stdout):
//
//	# OSU-style goshmem Team Create Test
//	# PEs: 2  iterations: 100  warmup: 10
//	# Teams         Latency (us)
//	64                         1.200
//	# destroy: 0.400 us per team
//
// -f adds "Min Latency (us)  Max Latency (us)  Iterations". The format
// is the package doc of bench/internal/osu. The C peer,
// bench/peer/team_create.c, needs OpenSHMEM 1.5 teams; against Open MPI
// 4.1's OSHMEM (OpenSHMEM 1.4) it prints "# team_create: not supported
// by the peer".
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/bench/internal/osu"
)

func main() {
	osu.Main("team_create", "Team Create", 1, osu.TeamCreateDefaults, func(b *osu.Bench) {
		world := goshmem.TeamWorld(b.PE)
		var teams [osu.TeamsPerRound]*goshmem.Team
		// round creates the teams, destroys them, and returns how long
		// each phase took.
		round := func() (create, destroy time.Duration) {
			t0 := time.Now()
			for i := range teams {
				t, err := world.SplitStrided(0, 1, b.N, nil)
				if err != nil || t == nil {
					fmt.Fprintf(os.Stderr, "team_create: PE %d: team %d of the round: %v (team %v)\n", b.Me, i, err, t)
					b.PE.GlobalExit(1)
				}
				teams[i] = t
			}
			t1 := time.Now()
			for i, t := range teams {
				t.Destroy()
				teams[i] = nil
			}
			return t1.Sub(t0), time.Since(t1)
		}
		b.Out.Columns(osu.Teams, osu.LatencyUs)
		for range b.Warmup {
			round()
		}
		var create, destroy time.Duration
		for range b.Iters {
			c, d := round()
			create += c
			destroy += d
		}
		per := float64(b.Iters * osu.TeamsPerRound)
		lat := float64(create.Nanoseconds()) / 1e3 / per
		st := b.Collect(lat, true)
		b.Out.Result(osu.Key(osu.TeamsPerRound), lat, st, b.Iters)
		b.Out.Comment("destroy: %.3f us per team", float64(destroy.Nanoseconds())/1e3/per)
	})
}
