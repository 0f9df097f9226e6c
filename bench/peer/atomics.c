/*
 * atomics: latency of 64-bit (long) atomics, PE 0 on one long x in PE 1's
 * symmetric heap. Each row: PE 0 runs the warm-up operations, then times
 * the iterations; latency = elapsed / iterations.
 *   fetch_add     shmem_long_atomic_fetch_add(x, 1, 1)
 *   fetch         shmem_long_atomic_fetch(x, 1)
 *   compare_swap  shmem_long_atomic_compare_swap(x, k, k + 1, 1) for
 *                 k = 0, 1, ..., so every swap succeeds
 *   add_rate      a stream of non-fetching shmem_long_atomic_add(x, 1, 1)
 *                 followed by one shmem_quiet() (timed); the row is the
 *                 latency per add, and "# add_rate: X Mops/s" (1/latency)
 *                 follows the table
 * Before fetch_add, compare_swap and add_rate PE 0 sets x on PE 1 to 0
 * (shmem_long_atomic_set and shmem_quiet, untimed); after each row it
 * checks that x holds warm-up + iterations and aborts the job if not.
 * PE 1 (and any further PE) waits in shmem_barrier_all, which separates
 * the rows. -m is accepted and ignored. Each row is expanded with a
 * constant kind (always_inline), so the timed loops hold nothing but the
 * operation.
 */
#include "peer.h"

enum { FETCH_ADD, FETCH, CSWAP, ADD };
static const char *names[] = {"fetch_add", "fetch", "compare_swap", "add_rate"};

#define INLINE static inline __attribute__((always_inline))

static long sink; /* keeps the fetched values alive; local, never a target */

/* Operations k = from .. to-1 of one kind. */
INLINE void ops(int kind, long *x, long from, long to) {
    long s = 0;
    for (long k = from; k < to; k++) {
        switch (kind) {
        case FETCH_ADD:
            s += shmem_long_atomic_fetch_add(x, 1, 1);
            break;
        case FETCH:
            s += shmem_long_atomic_fetch(x, 1);
            break;
        case CSWAP:
            s += shmem_long_atomic_compare_swap(x, k, k + 1, 1);
            break;
        case ADD:
            shmem_long_atomic_add(x, 1, 1);
            break;
        }
    }
    if (kind == ADD)
        shmem_quiet();
    sink += s;
}

/* One row; returns the latency (us) on PE 0, 0 elsewhere. */
INLINE double row(int kind, int reset, const struct peer_opts *o, long *x) {
    long n = o->iters, w = o->warm;
    double lat = 0;
    shmem_barrier_all();
    if (peer_me == 0) {
        if (reset) {
            shmem_long_atomic_set(x, 0, 1);
            shmem_quiet();
        }
        ops(kind, x, 0, w);
        double t0 = peer_now_us();
        ops(kind, x, w, w + n);
        lat = (peer_now_us() - t0) / (double)n;
        long got = shmem_long_atomic_fetch(x, 1);
        if (got != w + n) {
            fprintf(stderr, "atomics: %s left %ld on PE 1, want %ld\n", names[kind], got, w + n);
            shmem_global_exit(1);
        }
    }
    struct peer_res r = peer_finish(lat, peer_me == 0, o->full);
    peer_row_op(names[kind], &r, o->full, n);
    return lat;
}

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, "Atomics", 2, &PEER_LATENCY);
    long *x = peer_calloc(1, sizeof(long));
    peer_header("Operation", "Latency (us)", o.full);
    row(FETCH_ADD, 1, &o, x);
    row(FETCH, 0, &o, x);
    row(CSWAP, 1, &o, x);
    double lat = row(ADD, 1, &o, x);
    if (peer_me == 0) {
        printf("# add_rate: %.2f Mops/s\n", 1.0 / lat); /* us per op -> Mops/s */
        fflush(stdout);
    }
    shmem_free(x);
    shmem_finalize();
    return 0;
}
