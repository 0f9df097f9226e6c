/*
 * barrier: latency of shmem_barrier_all across all PEs of the job (any
 * number, 1 included). Every PE runs the warm-up barriers, then times
 * iterations barriers; each PE's latency is its elapsed / iterations,
 * which it stores into PE 0's slot array (shmem_double_p, then a
 * barrier). The row is PE 0's latency, and with -f the min and max over
 * all PEs. -m is accepted and ignored.
 */
#include "peer.h"

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, "Barrier", 1, &PEER_LATENCY);
    peer_header("PEs", "Latency (us)", o.full);
    for (long i = 0; i < o.warm; i++)
        shmem_barrier_all();
    double t0 = peer_now_us();
    for (long i = 0; i < o.iters; i++)
        shmem_barrier_all();
    double lat = (peer_now_us() - t0) / (double)o.iters;
    struct peer_res r = peer_collect(lat, 1);
    peer_row_int(peer_npes, &r, o.full, o.iters);
    shmem_finalize();
    return 0;
}
