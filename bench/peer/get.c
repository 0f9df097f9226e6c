/*
 * get: latency of a blocking get. For each size PE 0 runs the warm-up,
 * then iterations x shmem_getmem(dst, src, size, 1) (blocking: no quiet)
 * and reports elapsed / iterations in microseconds; it reads PE 1's src
 * into its own dst. PE 1 (and any other PE) waits in shmem_barrier_all; a
 * barrier separates the sizes. Source and target are in the symmetric
 * heap.
 */
#include "peer.h"

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, "Get", 2, &PEER_LATENCY);
    char *src = peer_malloc(o.max_size);
    char *dst = peer_malloc(o.max_size);
    peer_fill(src, 'a', o.max_size);
    peer_fill(dst, 'b', o.max_size);
    peer_header("Size", "Latency (us)", o.full);
    PEER_FOR_SIZES(&o, size) {
        long iters = peer_scale(o.iters, size), warm = peer_scale(o.warm, size);
        double lat = 0;
        shmem_barrier_all();
        if (peer_me == 0) {
            for (long i = 0; i < warm; i++)
                shmem_getmem(dst, src, size, 1);
            double t0 = peer_now_us();
            for (long i = 0; i < iters; i++)
                shmem_getmem(dst, src, size, 1);
            lat = (peer_now_us() - t0) / (double)iters;
        }
        struct peer_res r = peer_finish(lat, peer_me == 0, o.full);
        peer_row_size(size, &r, o.full, iters);
    }
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
