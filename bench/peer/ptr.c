/*
 * ptr: stores through shmem_ptr into PE 1's heap, against shmem_long_p
 * and against stores into PE 0's own heap.
 *
 * Table 1 (always): PE 0 runs the warm-up sweeps, then the timed sweeps
 * (iterations = sweeps); a sweep stores a long (the sweep number) into
 * each of the 64 elements of a symmetric long array x, in order. The row
 * is the latency per 8-byte store: elapsed / (64 * sweeps), in us.
 *   ptr_store    plain (volatile) stores through r = shmem_ptr(x, 1), PE 1's
 *                copy; if shmem_ptr returns NULL the row is -1.00 and a
 *                comment "# shmem_ptr returned NULL for PE 1" follows
 *   put          shmem_long_p(&x[j], v, 1) per element, one shmem_quiet()
 *                after the last sweep of the warm-up and of the timed run
 *   local_store  plain (volatile) stores into PE 0's own x
 * A comment line after the table gives the figures in ns and the ratio
 * ptr_store/local_store. PE 0 then checks that PE 1's last element holds
 * the last put sweep's number.
 *
 * Table 2 (only when -m is given): bulk copies of size bytes, iterations
 * scaled with size as in put: "Ptr copy (us)" is memcpy(shmem_ptr(dst, 1),
 * src, size), "Put (us)" is shmem_putmem(dst, src, size, 1);
 * shmem_quiet(), each the time per copy. -f adds Iterations.
 *
 * PE 1 (and any further PE) waits in shmem_barrier_all, which separates
 * the rows. Every target is in the symmetric heap. Each table-1 row is
 * expanded with a constant kind (always_inline): the timed loops hold
 * nothing but the stores.
 */
#include "peer.h"

#define ELEMS 64

enum { PTR_STORE, PUT, LOCAL_STORE };
static const char *names[] = {"ptr_store", "put", "local_store"};

#define INLINE static inline __attribute__((always_inline))

/* Sweeps from .. to-1 of one kind. */
INLINE void sweeps(int kind, volatile long *r, long *x, long from, long to) {
    volatile long *lx = x;
    for (long i = from; i < to; i++) {
        for (int j = 0; j < ELEMS; j++) {
            switch (kind) {
            case PTR_STORE:
                r[j] = i;
                break;
            case PUT:
                shmem_long_p(&x[j], i, 1);
                break;
            case LOCAL_STORE:
                lx[j] = i;
                break;
            }
        }
    }
    if (kind == PUT)
        shmem_quiet();
}

/* One row; returns the latency per store (us) on PE 0 (-1 if r is NULL). */
INLINE double row(int kind, const struct peer_opts *o, volatile long *r, long *x) {
    long n = o->iters, w = o->warm;
    int null = kind == PTR_STORE && r == NULL;
    double lat = 0;
    shmem_barrier_all();
    if (peer_me == 0 && null) {
        lat = -1.0;
    } else if (peer_me == 0) {
        sweeps(kind, r, x, 0, w);
        double t0 = peer_now_us();
        sweeps(kind, r, x, w, w + n);
        lat = (peer_now_us() - t0) / ((double)ELEMS * (double)n);
    }
    struct peer_res res = peer_finish(lat, peer_me == 0, o->full);
    peer_row_op(names[kind], &res, o->full, n);
    if (peer_me == 0 && null) {
        printf("# shmem_ptr returned NULL for PE 1\n");
        fflush(stdout);
    }
    return lat;
}

/* Table 2. rdst: shmem_ptr(dst, 1) on PE 0 (NULL: the column is -1). */
static void bulk(const struct peer_opts *o, char *src, char *dst, char *rdst) {
    if (peer_me == 0) {
        printf("# Size          Ptr copy (us)  Put (us)%s\n", o->full ? "  Iterations" : "");
        fflush(stdout);
    }
    PEER_FOR_SIZES(o, size) {
        long iters = peer_scale(o->iters, size), warm = peer_scale(o->warm, size);
        double cp = -1.0, pt = 0;
        shmem_barrier_all();
        if (peer_me == 0) {
            if (rdst != NULL) {
                for (long i = 0; i < warm; i++) {
                    memcpy(rdst, src, size);
                    __asm__ volatile("" ::: "memory"); /* keep every copy */
                }
                double t0 = peer_now_us();
                for (long i = 0; i < iters; i++) {
                    memcpy(rdst, src, size);
                    __asm__ volatile("" ::: "memory");
                }
                cp = (peer_now_us() - t0) / (double)iters;
            }
            for (long i = 0; i < warm; i++) {
                shmem_putmem(dst, src, size, 1);
                shmem_quiet();
            }
            double t0 = peer_now_us();
            for (long i = 0; i < iters; i++) {
                shmem_putmem(dst, src, size, 1);
                shmem_quiet();
            }
            pt = (peer_now_us() - t0) / (double)iters;
        }
        shmem_barrier_all();
        if (peer_me == 0) {
            printf("%-16zu%16.3f%16.3f", size, cp, pt);
            if (o->full)
                printf("%16d", (int)iters);
            printf("\n");
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, "Ptr", 2, &PEER_LATENCY);
    long *x = peer_calloc(ELEMS, sizeof(long));
    char *src = NULL, *dst = NULL, *rdst = NULL;
    if (o.sizes_set) {
        src = peer_malloc(o.max_size);
        dst = peer_malloc(o.max_size);
        peer_fill(src, 'a', o.max_size);
        peer_fill(dst, 'b', o.max_size);
    }
    volatile long *r = NULL;
    if (peer_me == 0) {
        r = shmem_ptr(x, 1);
        if (dst != NULL)
            rdst = shmem_ptr(dst, 1);
    }
    peer_header("Operation", "Latency (us)", o.full);
    double ptr = row(PTR_STORE, &o, r, x);
    double put = row(PUT, &o, r, x);
    double local = row(LOCAL_STORE, &o, r, x);
    if (peer_me == 0) {
        double ratio = local > 0 && ptr >= 0 ? ptr / local : 0.0;
        printf("# ns per store: ptr_store %.2f  put %.2f  local_store %.2f  ptr_store/local_store %.2f\n",
               ptr >= 0 ? ptr * 1e3 : -1.0, put * 1e3, local * 1e3, ratio);
        fflush(stdout);
        long want = o.warm + o.iters - 1, got = shmem_long_g(&x[ELEMS - 1], 1);
        if (got != want) {
            fprintf(stderr, "ptr: PE 1 holds %ld, want %ld\n", got, want);
            shmem_global_exit(1);
        }
    }
    if (o.sizes_set)
        bulk(&o, src, dst, rdst);
    shmem_barrier_all();
    if (dst != NULL) {
        shmem_free(dst);
        shmem_free(src);
    }
    shmem_free(x);
    shmem_finalize();
    return 0;
}
