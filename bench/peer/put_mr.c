/*
 * put_mr: put message rate (windows of blocking puts). The PEs form
 * pairs: with P = n/2, PE i < P sends to PE i + P (2 PEs: PE 0 to PE 1; an
 * odd last PE only waits). For each size every sender runs the warm-up
 * windows, then the timed ones; a window is PEER_WINDOW (64)
 * shmem_putmem(dst + off_j, src, size, partner) followed by one
 * shmem_quiet(), where put j goes to offset (j mod slots) * size of the
 * partner's window buffer of B = max(max, min(64 * max, 64 MiB)) bytes
 * and slots = min(64, B / size): distinct destinations within a bounded
 * buffer. A sender's rate is 64 * windows / elapsed; the row is the sum
 * over the senders in messages per second (with -f also the smallest and
 * largest sender's rate). shmem_barrier_all separates the sizes. -i and
 * -w count windows. Source and window buffer are in the symmetric heap.
 */
#include "peer.h"

#define MAX_WINDOW_BUF ((size_t)64 << 20)

int main(int argc, char **argv) {
    struct peer_opts o = peer_init(argc, argv, "Put Message Rate", 2, &PEER_MESSAGE_RATE);
    size_t win = PEER_WINDOW * o.max_size;
    size_t buf_bytes = win < MAX_WINDOW_BUF ? win : MAX_WINDOW_BUF;
    if (buf_bytes < o.max_size)
        buf_bytes = o.max_size;
    char *src = peer_malloc(o.max_size);
    char *dst = peer_malloc(buf_bytes);
    peer_fill(src, 'a', o.max_size);
    peer_fill(dst, 'b', buf_bytes);
    int pairs = peer_npes / 2, sender = peer_me < pairs, partner = peer_me + pairs;
    peer_header("Size", "Messages/s", o.full);
    PEER_FOR_SIZES(&o, size) {
        long iters = peer_scale(o.iters, size), warm = peer_scale(o.warm, size);
        size_t slots = buf_bytes / size < PEER_WINDOW ? buf_bytes / size : PEER_WINDOW;
        double rate = 0;
        shmem_barrier_all();
        if (sender) {
            for (long i = 0; i < warm; i++) {
                for (size_t j = 0; j < PEER_WINDOW; j++)
                    shmem_putmem(dst + j % slots * size, src, size, partner);
                shmem_quiet();
            }
            double t0 = peer_now_us();
            for (long i = 0; i < iters; i++) {
                for (size_t j = 0; j < PEER_WINDOW; j++)
                    shmem_putmem(dst + j % slots * size, src, size, partner);
                shmem_quiet();
            }
            rate = (double)PEER_WINDOW * (double)iters * 1e6 / (peer_now_us() - t0);
        }
        shmem_barrier_all();
        struct peer_res r = peer_collect(rate, sender);
        r.value = r.sum;
        peer_row_size(size, &r, o.full, iters);
    }
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
