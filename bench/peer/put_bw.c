/*
 * put_bw: put bandwidth (and, compiled from get_bw.c with PEER_GET
 * defined, get bandwidth). For each size PE 0 runs the warm-up windows,
 * then iterations windows of PEER_WINDOW (64) shmem_putmem_nbi (or
 * shmem_getmem_nbi) of size bytes, each window ended by shmem_quiet;
 * bandwidth = size * 64 * iterations / elapsed in MB/s (MB = 1e6
 * bytes). All puts target PE 1's one dst (all gets read PE 1's src into
 * PE 0's one dst). PE 1 waits in shmem_barrier_all. Source and target
 * are in the symmetric heap.
 */
#include "peer.h"

#ifdef PEER_GET
#define XFER_NBI shmem_getmem_nbi
#define TITLE "Get Bandwidth"
#else
#define XFER_NBI shmem_putmem_nbi
#define TITLE "Put Bandwidth"
#endif

static inline void window(char *dst, const char *src, size_t size) {
    for (int j = 0; j < PEER_WINDOW; j++)
        XFER_NBI(dst, src, size, 1);
    shmem_quiet();
}

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, TITLE, 2, &PEER_BANDWIDTH);
    char *src = peer_malloc(o.max_size);
    char *dst = peer_malloc(o.max_size);
    peer_fill(src, 'a', o.max_size);
    peer_fill(dst, 'b', o.max_size);
    peer_header("Size", "Bandwidth (MB/s)", o.full);
    PEER_FOR_SIZES(&o, size) {
        long iters = peer_scale(o.iters, size), warm = peer_scale(o.warm, size);
        double bw = 0;
        shmem_barrier_all();
        if (peer_me == 0) {
            for (long i = 0; i < warm; i++)
                window(dst, src, size);
            double t0 = peer_now_us();
            for (long i = 0; i < iters; i++)
                window(dst, src, size);
            /* bytes per microsecond == MB/s */
            bw = (double)size * PEER_WINDOW * (double)iters / (peer_now_us() - t0);
        }
        struct peer_res r = peer_finish(bw, peer_me == 0, o.full);
        peer_row_size(size, &r, o.full, iters);
    }
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
