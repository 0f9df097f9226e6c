/*
 * reduce: latency of a sum reduction over every PE (the peer of
 * bench/reduce). -t int64 (default) or float64 picks the element type:
 * shmem_longlong_sum_to_all or shmem_double_sum_to_all. For each size
 * in bytes (default 8 to 4 MiB; sizes that are not a multiple of 8 are
 * skipped, see coll.h) every PE runs the warm-up reductions, then times
 * iterations of <type>_sum_to_all(dst, src, size / 8, 0, 0, npes, pWrk,
 * pSync) back to back, alternating two pSync and two pWrk arrays (pWrk:
 * max(nreduce / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) elements, in the
 * symmetric heap), no barrier between calls; latency = elapsed /
 * iterations. The row is PE 0's, with -f the min and max over all PEs.
 * After each size every PE checks the sum. "# type: <t>" precedes the
 * header.
 */
#include "coll.h"

static int whole(size_t size) { return size % 8 == 0; }

/* Takes -t TYPE (or -tTYPE) out of argv for peer_init, which knows only
 * the common flags; returns the type, or NULL if -t lacks its value.
 * *mval is set to the value of the last -m (NULL without one). Stops at
 * "--" and at the first non-flag argument, as getopt does. */
static const char *take_type(int *argc, char **argv, const char **mval) {
    const char *type = "int64";
    int w = 1;
    int i;
    for (i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0 || a[0] != '-')
            break;
        if (strcmp(a, "-t") == 0) {
            if (i + 1 >= *argc)
                return NULL;
            type = argv[++i];
            continue;
        }
        if (strncmp(a, "-t", 2) == 0) {
            type = a + 2;
            continue;
        }
        argv[w++] = argv[i];
        if (strncmp(a, "-m", 2) == 0)
            *mval = a + 2;
        /* the value of -m, -i or -w is the next argument */
        if ((strcmp(a, "-m") == 0 || strcmp(a, "-i") == 0 || strcmp(a, "-w") == 0) && i + 1 < *argc) {
            if (a[1] == 'm')
                *mval = argv[i + 1];
            argv[w++] = argv[++i];
        }
    }
    for (; i < *argc; i++)
        argv[w++] = argv[i];
    argv[w] = NULL;
    *argc = w;
    return type;
}

int main(int argc, char **argv) {
    const char *mval = NULL;
    const char *type = take_type(&argc, argv, &mval);
    int dbl = type != NULL && strcmp(type, "float64") == 0;
    /* peer_init's shmem_init is then a no-op (OpenSHMEM: later calls
     * have no effect); a bad -t fails before anything is printed. */
    shmem_init();
    peer_me = shmem_my_pe();
    if (type == NULL || (!dbl && strcmp(type, "int64") != 0)) {
        if (peer_me == 0)
            fprintf(stderr, "-t \"%s\": the type is int64 or float64\nusage: oshrun -np N %s [-m [min:]max] [-i N] [-w N] [-f] [-t int64|float64]\n",
                    type ? type : "", argv[0]);
        peer_exit(2);
    }
    /* As osu.ReduceDefaults (MinSize 8): without a minimum in -m ("max",
     * ":max" or no -m), sizes start at 8 bytes. */
    int min8 = mval == NULL || strchr(mval, ':') == NULL || mval[0] == ':';
    size_t lo, hi;
    if (min8 && mval != NULL && peer_parse_sizes(mval, PEER_LATENCY.max_size, &lo, &hi) == NULL && hi < 8) {
        if (peer_me == 0)
            fprintf(stderr, "-m \"%s\": minimum is above maximum; use -m [min:]max with sizes in bytes, 1 <= min <= max <= %zu\n",
                    mval, PEER_MAX_SIZE);
        peer_exit(2);
    }
    struct peer_opts o = peer_init(argc, argv, "Reduce", 1, &PEER_LATENCY);
    if (min8)
        o.min_size = 8;
    size_t n = o.max_size / 8;
    size_t nwrk = n / 2 + 1;
    if (nwrk < SHMEM_REDUCE_MIN_WRKDATA_SIZE)
        nwrk = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    /* long long and double are both 8 bytes: one set of buffers */
    long long *src = peer_malloc(n * 8 + 8), *dst = peer_malloc(n * 8 + 8);
    void *wrk[2] = {peer_malloc(nwrk * 8), peer_malloc(nwrk * 8)};
    for (size_t i = 0; i < n; i++) {
        if (dbl)
            ((double *)src)[i] = (double)(i % 7 + 1);
        else
            src[i] = (long long)(i % 7 + 1);
        dst[i] = 0;
    }
    memset(wrk[0], 0, nwrk * 8);
    memset(wrk[1], 0, nwrk * 8);
    peer_psync_init();
    if (peer_me == 0)
        printf("# type: %s\n", dbl ? "float64" : "int64");
    peer_skip_comment(&o, whole, "not whole 8-byte elements");
    peer_header("Size", "Latency (us)", o.full);
    PEER_FOR_SIZES(&o, size) {
        if (!whole(size))
            continue;
        int k = (int)(size / 8);
        long iters = peer_scale(o.iters, size), warm = peer_scale(o.warm, size);
        shmem_barrier_all();
        double lat;
        if (dbl) {
            double *d = (double *)dst, *s = (double *)src;
            for (long i = 0; i < warm; i++)
                shmem_double_sum_to_all(d, s, k, 0, 0, peer_npes, wrk[peer_calls & 1], peer_next_psync());
            double t0 = peer_now_us();
            for (long i = 0; i < iters; i++)
                shmem_double_sum_to_all(d, s, k, 0, 0, peer_npes, wrk[peer_calls & 1], peer_next_psync());
            lat = (peer_now_us() - t0) / (double)iters;
            peer_check(d[0] == peer_npes * s[0] && d[k - 1] == peer_npes * s[k - 1], "wrong sum", size);
        } else {
            for (long i = 0; i < warm; i++)
                shmem_longlong_sum_to_all(dst, src, k, 0, 0, peer_npes, wrk[peer_calls & 1], peer_next_psync());
            double t0 = peer_now_us();
            for (long i = 0; i < iters; i++)
                shmem_longlong_sum_to_all(dst, src, k, 0, 0, peer_npes, wrk[peer_calls & 1], peer_next_psync());
            lat = (peer_now_us() - t0) / (double)iters;
            peer_check(dst[0] == peer_npes * src[0] && dst[k - 1] == peer_npes * src[k - 1], "wrong sum", size);
        }
        struct peer_res r = peer_finish(lat, 1, o.full);
        peer_row_size(size, &r, o.full, iters);
    }
    shmem_free(wrk[1]);
    shmem_free(wrk[0]);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
