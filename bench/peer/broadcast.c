/*
 * broadcast: latency of a broadcast from PE 0 to every PE (the peer of
 * bench/broadcast). For each size (bytes; multiples of 8 use
 * shmem_broadcast64, other multiples of 4 shmem_broadcast32, the rest
 * are skipped, see coll.h) every PE runs the warm-up broadcasts, then
 * times iterations of shmem_broadcast{64,32}(dst, src, size / width, 0,
 * 0, 0, npes, pSync) back to back, alternating two pSync arrays, no
 * barrier between calls; latency = elapsed / iterations. The row is PE
 * 0's (the root's), with -f the min and max over all PEs. After each
 * size every PE but the root checks its dst (OpenSHMEM 1.4's broadcast
 * does not write the root's dst; goshmem's Broadcast does).
 */
#include "coll.h"

static int width_ok(size_t size) { return peer_elem_bytes(size) != 0; }

static inline void bcast(char *dst, const char *src, size_t size, int width) {
    if (width == 8)
        shmem_broadcast64(dst, src, size / 8, 0, 0, 0, peer_npes, peer_next_psync());
    else
        shmem_broadcast32(dst, src, size / 4, 0, 0, 0, peer_npes, peer_next_psync());
}

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, "Broadcast", 1, &PEER_LATENCY);
    char *src = peer_malloc(o.max_size);
    char *dst = peer_malloc(o.max_size);
    peer_fill(src, peer_me == 0 ? 'r' : 'a', o.max_size);
    peer_fill(dst, 'b', o.max_size);
    peer_psync_init();
    peer_skip_comment(&o, width_ok, "OpenSHMEM 1.4 broadcasts 32- or 64-bit elements");
    peer_header("Size", "Latency (us)", o.full);
    PEER_FOR_SIZES(&o, size) {
        int width = peer_elem_bytes(size);
        if (width == 0)
            continue;
        long iters = peer_scale(o.iters, size), warm = peer_scale(o.warm, size);
        shmem_barrier_all();
        for (long i = 0; i < warm; i++)
            bcast(dst, src, size, width);
        double t0 = peer_now_us();
        for (long i = 0; i < iters; i++)
            bcast(dst, src, size, width);
        double lat = (peer_now_us() - t0) / (double)iters;
        if (peer_me != 0)
            peer_check(dst[0] == 'r' && dst[size - 1] == 'r', "dst does not hold the root's data", size);
        struct peer_res r = peer_finish(lat, 1, o.full);
        peer_row_size(size, &r, o.full, iters);
    }
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
