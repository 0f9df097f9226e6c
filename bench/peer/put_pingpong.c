/*
 * put_pingpong: one-way latency of a put answered by a put. In round trip
 * k (k = 1, 2, ... counted over the whole run, never reset) PE 0 does
 * shmem_putmem(dst, src, size, 1); shmem_fence(); shmem_long_p(flag, k, 1)
 * and waits with shmem_long_wait_until(flag, SHMEM_CMP_EQ, k) on its own
 * flag; PE 1 waits for its flag to equal k, then answers the same way
 * into PE 0. PE 0 times the timed round trips; one-way latency =
 * elapsed / (2 * iterations). Further PEs only wait in shmem_barrier_all,
 * which separates the sizes. Data buffers and the flag are in the
 * symmetric heap.
 */
#include "peer.h"

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, "Put Ping-Pong", 2, &PEER_LATENCY);
    char *src = peer_malloc(o.max_size);
    char *dst = peer_malloc(o.max_size);
    long *flag = peer_calloc(1, sizeof(long));
    peer_fill(src, 'a', o.max_size);
    peer_fill(dst, 'b', o.max_size);
    long k = 0; /* round trips so far, the same count on PEs 0 and 1 */
    peer_header("Size", "Latency (us)", o.full);
    PEER_FOR_SIZES(&o, size) {
        long iters = peer_scale(o.iters, size), warm = peer_scale(o.warm, size);
        double lat = 0;
        shmem_barrier_all();
        if (peer_me == 0) {
            for (long i = 0; i < warm; i++) {
                k++;
                shmem_putmem(dst, src, size, 1);
                shmem_fence();
                shmem_long_p(flag, k, 1);
                shmem_long_wait_until(flag, SHMEM_CMP_EQ, k);
            }
            double t0 = peer_now_us();
            for (long i = 0; i < iters; i++) {
                k++;
                shmem_putmem(dst, src, size, 1);
                shmem_fence();
                shmem_long_p(flag, k, 1);
                shmem_long_wait_until(flag, SHMEM_CMP_EQ, k);
            }
            lat = (peer_now_us() - t0) / (2.0 * (double)iters);
        } else if (peer_me == 1) {
            for (long i = 0; i < warm + iters; i++) {
                k++;
                shmem_long_wait_until(flag, SHMEM_CMP_EQ, k);
                shmem_putmem(dst, src, size, 0);
                shmem_fence();
                shmem_long_p(flag, k, 0);
            }
        }
        struct peer_res r = peer_finish(lat, peer_me == 0, o.full);
        peer_row_size(size, &r, o.full, iters);
    }
    shmem_free(flag);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
