/*
 * team_create: latency of creating a team (the peer of
 * bench/team_create). One round: every PE creates 64 teams back to back
 * with shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0,
 * &team) (each team of all PEs), then destroys them with
 * shmem_team_destroy; only the creations are timed. The row (key 64) is
 * PE 0's creation time / (64 x rounds) in microseconds, with -f the min
 * and max over all PEs and the number of timed rounds; "# destroy: X us
 * per team" follows. -i and -w count rounds (default -i 100, -w 10, as
 * osu.TeamCreateDefaults); -m is accepted and ignored.
 *
 * Teams are OpenSHMEM 1.5. Open MPI 4.1's OSHMEM implements 1.4 (no
 * shmem_team_* routines): built against it, the program prints lines 1
 * and 2 and "# team_create: not supported by the peer (...)", and exits
 * with status 0. The 1.5 code below is compiled only against a 1.5
 * library and has not been built on the development machine.
 */
#include "peer.h"

#define TEAMS_PER_ROUND 64 /* osu.TeamsPerRound */

static const struct peer_defaults TEAM_CREATE_DEFAULTS = {(size_t)4 << 20, 100, 10};

#if SHMEM_MAJOR_VERSION > 1 || (SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5)

static shmem_team_t teams[TEAMS_PER_ROUND];

/* One round: adds the creation and destruction times to *create and
 * *destroy (us). */
static void round_of_teams(double *create, double *destroy) {
    double t0 = peer_now_us();
    for (int i = 0; i < TEAMS_PER_ROUND; i++) {
        if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, peer_npes, NULL, 0, &teams[i]) != 0 ||
            teams[i] == SHMEM_TEAM_INVALID) {
            fprintf(stderr, "PE %d: shmem_team_split_strided failed for team %d of the round\n", peer_me, i);
            shmem_global_exit(1);
        }
    }
    double t1 = peer_now_us();
    for (int i = 0; i < TEAMS_PER_ROUND; i++)
        shmem_team_destroy(teams[i]);
    *create += t1 - t0;
    *destroy += peer_now_us() - t1;
}

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, "Team Create", 1, &TEAM_CREATE_DEFAULTS);
    double create = 0, destroy = 0, ignore = 0;
    peer_header("Teams", "Latency (us)", o.full);
    for (long i = 0; i < o.warm; i++)
        round_of_teams(&ignore, &ignore);
    for (long i = 0; i < o.iters; i++)
        round_of_teams(&create, &destroy);
    double per = (double)o.iters * TEAMS_PER_ROUND;
    struct peer_res r = peer_collect(create / per, 1);
    peer_row_int(TEAMS_PER_ROUND, &r, o.full, o.iters);
    if (peer_me == 0)
        printf("# destroy: %.3f us per team\n", destroy / per);
    shmem_finalize();
    return 0;
}

#else

int main(int argc, char **argv) {
    peer_init(argc, argv, "Team Create", 1, &TEAM_CREATE_DEFAULTS);
    if (peer_me == 0)
        printf("# team_create: not supported by the peer (OpenSHMEM %d.%d has no teams; they are 1.5)\n",
               SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
    shmem_finalize();
    return 0;
}

#endif
