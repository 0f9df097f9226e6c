/*
 * coll.h: what the collective peer benchmarks (broadcast, reduce,
 * collect, fcollect, alltoall) share on top of peer.h. OSHMEM 4.1
 * implements OpenSHMEM 1.4: no teams, so the collectives are the legacy
 * active-set routines (PE_start 0, logPE_stride 0, PE_size npes: every
 * PE, as goshmem's TeamWorld) with a pSync array (and a pWrk array for
 * reductions) in the symmetric heap.
 *
 * Back-to-back calls alternate between two pSync (and pWrk) arrays, as
 * OSU's OpenSHMEM collective benchmarks do: a PE may enter call k+1
 * while another still uses call k's pSync. No barrier separates the
 * timed calls (goshmem's team collectives need none either).
 *
 * The legacy routines move 32- or 64-bit elements: a size that is a
 * multiple of 8 bytes uses the 64-bit routine, one of 4 the 32-bit one,
 * and the others are skipped (a "# skipped sizes: ..." comment before the
 * header lists them; the Go programs move bytes and run every size).
 */
#ifndef GOSHMEM_PEER_COLL_H
#define GOSHMEM_PEER_COLL_H

#include "peer.h"

/* The largest pSync any routine here needs. */
#define PEER_SYNC_MAX(a, b) ((a) > (b) ? (a) : (b))
#define PEER_COLL_SYNC_SIZE                                                                                  \
    PEER_SYNC_MAX(PEER_SYNC_MAX(SHMEM_BCAST_SYNC_SIZE, SHMEM_COLLECT_SYNC_SIZE),                             \
                  PEER_SYNC_MAX(SHMEM_REDUCE_SYNC_SIZE, SHMEM_ALLTOALL_SYNC_SIZE))

/* Two pSync arrays of PEER_COLL_SYNC_SIZE longs each, in the symmetric
 * heap, every element SHMEM_SYNC_VALUE; the barrier makes every PE's
 * arrays initialised before anyone's first call. */
static long *peer_psync[2];
static unsigned long peer_calls; /* collective calls so far: picks the pSync */

static inline void peer_psync_init(void) {
    for (int a = 0; a < 2; a++) {
        peer_psync[a] = peer_malloc(PEER_COLL_SYNC_SIZE * sizeof(long));
        for (int i = 0; i < PEER_COLL_SYNC_SIZE; i++)
            peer_psync[a][i] = SHMEM_SYNC_VALUE;
    }
    shmem_barrier_all();
}

/* The pSync of the next call (alternating). */
static inline long *peer_next_psync(void) { return peer_psync[peer_calls++ & 1]; }

/* The element width the legacy routines can move size bytes in: 8, 4,
 * or 0 (skip the size). */
static inline int peer_elem_bytes(size_t size) {
    if (size % 8 == 0)
        return 8;
    if (size % 4 == 0)
        return 4;
    return 0;
}

/* Prints "# skipped sizes: ... (why)" before the header when some of
 * -m's sizes cannot run (ok(size) is 0 for them). */
static inline void peer_skip_comment(const struct peer_opts *o, int (*ok)(size_t), const char *why) {
    int any = 0;
    if (peer_me != 0)
        return;
    PEER_FOR_SIZES(o, size) {
        if (ok(size))
            continue;
        if (!any)
            printf("# skipped sizes:");
        printf(" %zu", size);
        any = 1;
    }
    if (any)
        printf(" (%s)\n", why);
}

/* Aborts the job when a check after a size fails. */
static inline void peer_check(int ok, const char *what, size_t size) {
    if (!ok) {
        fprintf(stderr, "PE %d: %s (size %zu)\n", peer_me, what, size);
        fflush(stderr);
        shmem_global_exit(1);
    }
}

#endif
