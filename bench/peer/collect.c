/*
 * collect (and, compiled from fcollect.c with PEER_FCOLLECT defined,
 * fcollect): latency of shmem_collect{64,32} (shmem_fcollect{64,32})
 * over every PE (the peer of bench/collect and bench/fcollect). Each PE contributes size bytes (multiples of 8 use the
 * 64-bit routine, other multiples of 4 the 32-bit one, the rest are
 * skipped, see coll.h); dst holds npes x size. For each size every PE
 * runs the warm-up calls, then times iterations of
 * shmem_collect{64,32}(dst, src, size / width, 0, 0, npes, pSync) back to
 * back, alternating two pSync arrays, no barrier between calls; latency
 * = elapsed / iterations. The row is PE 0's, with -f the min and max
 * over all PEs. After each size every PE checks every block of its dst.
 */
#include "coll.h"

#ifdef PEER_FCOLLECT
#define COLLECT64 shmem_fcollect64
#define COLLECT32 shmem_fcollect32
#define TITLE "FCollect"
#else
#define COLLECT64 shmem_collect64
#define COLLECT32 shmem_collect32
#define TITLE "Collect"
#endif

static int width_ok(size_t size) { return peer_elem_bytes(size) != 0; }

static inline void call(char *dst, const char *src, size_t size, int width) {
    if (width == 8)
        COLLECT64(dst, src, size / 8, 0, 0, peer_npes, peer_next_psync());
    else
        COLLECT32(dst, src, size / 4, 0, 0, peer_npes, peer_next_psync());
}

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, TITLE, 1, &PEER_LATENCY);
    char *src = peer_malloc(o.max_size);
    char *dst = peer_malloc((size_t)peer_npes * o.max_size);
    peer_fill(src, 'A' + peer_me % 26, o.max_size); /* block j of dst: PE j's letter */
    peer_fill(dst, 'b', (size_t)peer_npes * o.max_size);
    peer_psync_init();
    peer_skip_comment(&o, width_ok, "OpenSHMEM 1.4 moves 32- or 64-bit elements");
    peer_header("Size", "Latency (us)", o.full);
    PEER_FOR_SIZES(&o, size) {
        int width = peer_elem_bytes(size);
        if (width == 0)
            continue;
        long iters = peer_scale(o.iters, size), warm = peer_scale(o.warm, size);
        shmem_barrier_all();
        for (long i = 0; i < warm; i++)
            call(dst, src, size, width);
        double t0 = peer_now_us();
        for (long i = 0; i < iters; i++)
            call(dst, src, size, width);
        double lat = (peer_now_us() - t0) / (double)iters;
        for (int j = 0; j < peer_npes; j++) {
            char want = (char)('A' + j % 26);
            peer_check(dst[(size_t)j * size] == want && dst[(size_t)(j + 1) * size - 1] == want,
                       "a block of dst does not hold its PE's data", size);
        }
        struct peer_res r = peer_finish(lat, 1, o.full);
        peer_row_size(size, &r, o.full, iters);
    }
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
