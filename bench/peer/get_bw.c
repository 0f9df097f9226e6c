/*
 * get_bw: get bandwidth (the peer of bench/get_bw); the program is
 * put_bw.c with shmem_getmem_nbi.
 */
#define PEER_GET 1
#include "put_bw.c"
