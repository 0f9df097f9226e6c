/*
 * fcollect: latency of shmem_fcollect{64,32} over every PE (the peer of
 * bench/fcollect); the program is collect.c with the fcollect routines.
 */
#define PEER_FCOLLECT 1
#include "collect.c"
