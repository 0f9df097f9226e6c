/*
 * peer.h: shared option parsing, iteration scaling, result gathering and
 * output for the OSHMEM peer benchmarks in bench/peer. Each program is one
 * .c file that includes this header and is built with
 * `oshcc -O2 -o NAME NAME.c`. Everything here mirrors the Go side,
 * bench/internal/osu (config.go): keep the two identical.
 *
 * Output (PE 0 only, stdout), parsed by the compare tool:
 *   # OSU-style oshmem <Name> Test
 *   # PEs: <n>  iterations: <-i>  warmup: <-w>
 *   # Size          <Metric>[  Min <Metric>  Max <Metric>  Iterations]
 *   <key %-16zu|%-16s|%-16d><value %16.3f>[<min %16.3f><max %16.3f><iters %16d>]
 *
 * Every buffer a benchmark touches remotely (targets, flags, the result
 * slots) lives in the symmetric heap (shmem_malloc/shmem_calloc), never in
 * static storage: OSHMEM reaches static symmetric variables through a
 * slower path.
 */
#ifndef GOSHMEM_PEER_H
#define GOSHMEM_PEER_H

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Size limits of -m (osu.MinSize, osu.MaxSize). */
#define PEER_MIN_SIZE ((size_t)1)
#define PEER_MAX_SIZE ((size_t)1 << 30)

/* Iteration scaling thresholds (osu.SmallMax, osu.LargeMax). */
#define PEER_SMALL_MAX ((size_t)64 << 10) /* up to here: the full -i and -w */
#define PEER_LARGE_MAX ((size_t)1 << 20)  /* up to here: a tenth; above: a hundredth */

/* Operations in flight per window in put_bw, get_bw and put_mr. */
#define PEER_WINDOW 64

/* A program's defaults (osu.Defaults). */
struct peer_defaults {
    size_t max_size;
    long iters, warm;
};

/* put, get, put_pingpong, atomics, ptr, barrier (osu.LatencyDefaults). */
static const struct peer_defaults PEER_LATENCY = {(size_t)4 << 20, 10000, 1000};
/* put_bw, get_bw: -i and -w count windows (osu.BandwidthDefaults). */
static const struct peer_defaults PEER_BANDWIDTH = {(size_t)16 << 20, 1000, 100};
/* put_mr: -i and -w count windows (osu.MessageRateDefaults). */
static const struct peer_defaults PEER_MESSAGE_RATE = {(size_t)4 << 20, 1000, 100};

struct peer_opts {
    size_t min_size, max_size; /* -m */
    int sizes_set;             /* -m was given */
    long iters;                /* -i: for sizes up to 64 KiB */
    long warm;                 /* -w: for sizes up to 64 KiB */
    int full;                  /* -f */
};

static int peer_me, peer_npes;
static double *peer_slots; /* symmetric: one result slot per PE, read on PE 0 */

/* Monotonic clock in microseconds. */
static inline double peer_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static inline void peer_usage(const char *prog, const struct peer_defaults *d) {
    if (peer_me != 0)
        return;
    fprintf(stderr, "usage: oshrun -np N %s [-m [min:]max] [-i N] [-w N] [-f]\n", prog);
    fprintf(stderr,
            "  -m [min:]max  message sizes in bytes, doubling from min (default 1:%zu);\n"
            "                \"max\" alone means 1:max, \"min:\" min up to the default\n"
            "  -i N          timed iterations for sizes up to 64 KiB (default %ld;\n"
            "                N/10 above 64 KiB, N/100 above 1 MiB, at least 1)\n"
            "  -w N          warm-up iterations for sizes up to 64 KiB, scaled like -i\n"
            "                (default %ld)\n"
            "  -f            full output: min and max over the timing PEs, iterations\n",
            d->max_size, d->iters, d->warm);
}

/* Ends the job: every PE parses the same arguments, so all of them take
 * the same path here and call shmem_finalize together. */
static inline void peer_exit(int code) {
    shmem_finalize();
    exit(code);
}

static inline void peer_fail(const char *msg) {
    if (peer_me == 0)
        fprintf(stderr, "error: %s\n", msg);
    peer_exit(1);
}

/* A decimal number of bytes: digits only, at most 10 of them (as Go). */
static inline int peer_parse_num(const char *s, size_t len, size_t *out) {
    if (len == 0 || len > 10)
        return -1;
    size_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (size_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

/* -m: "max" (1:max), "min:max", "min:" (min up to defmax), ":max". */
static inline const char *peer_parse_sizes(const char *s, size_t defmax, size_t *min, size_t *max) {
    const char *colon = strchr(s, ':');
    *min = PEER_MIN_SIZE;
    *max = defmax;
    if (colon == NULL) {
        if (peer_parse_num(s, strlen(s), max))
            return "maximum is not a decimal number of bytes";
    } else {
        size_t lo = (size_t)(colon - s), hi = strlen(colon + 1);
        if (lo == 0 && hi == 0)
            return "no sizes";
        if (lo && peer_parse_num(s, lo, min))
            return "minimum is not a decimal number of bytes";
        if (hi && peer_parse_num(colon + 1, hi, max))
            return "maximum is not a decimal number of bytes";
    }
    if (*min < PEER_MIN_SIZE)
        return "minimum is below 1";
    if (*max > PEER_MAX_SIZE)
        return "maximum is above 1 GiB";
    if (*min > *max)
        return "minimum is above maximum";
    return NULL;
}

static inline int peer_parse_long(const char *s, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

/* Symmetric allocation that fails loudly (every PE allocates the same). */
static inline void *peer_malloc(size_t n) {
    void *p = shmem_malloc(n);
    if (p == NULL)
        peer_fail("shmem_malloc failed: raise SHMEM_SYMMETRIC_HEAP_SIZE");
    return p;
}

static inline void *peer_calloc(size_t n, size_t size) {
    void *p = shmem_calloc(n, size);
    if (p == NULL)
        peer_fail("shmem_calloc failed: raise SHMEM_SYMMETRIC_HEAP_SIZE");
    return p;
}

/* Line 1 and 2: the -i and -w values before size scaling. */
static inline void peer_banner(const char *name, const struct peer_opts *o) {
    if (peer_me != 0)
        return;
    printf("# OSU-style oshmem %s Test\n", name);
    printf("# PEs: %d  iterations: %ld  warmup: %ld\n", peer_npes, o->iters, o->warm);
}

/* As osu.Main: starts OpenSHMEM, parses the command line with the
 * defaults d (usage errors exit 2, -h exits 0, on every PE after
 * shmem_finalize), checks that there are at least min_pes PEs, allocates
 * the result slots and prints lines 1 and 2 (name: the test's name). */
static inline struct peer_opts peer_init(int argc, char **argv, const char *name, int min_pes,
                                         const struct peer_defaults *d) {
    struct peer_opts o = {PEER_MIN_SIZE, d->max_size, 0, d->iters, d->warm, 0};
    char msg[160];
    int c;
    shmem_init();
    peer_me = shmem_my_pe();
    peer_npes = shmem_n_pes();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "-help") == 0 || strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "--h") == 0) {
            peer_usage(argv[0], d);
            peer_exit(0);
        }
    }
    opterr = 0;
    while ((c = getopt(argc, argv, "m:i:w:fh")) != -1) {
        switch (c) {
        case 'm': {
            const char *why = peer_parse_sizes(optarg, d->max_size, &o.min_size, &o.max_size);
            if (why) {
                if (peer_me == 0)
                    fprintf(stderr, "-m \"%s\": %s; use -m [min:]max with sizes in bytes, 1 <= min <= max <= %zu\n",
                            optarg, why, PEER_MAX_SIZE);
                peer_usage(argv[0], d);
                peer_exit(2);
            }
            o.sizes_set = 1;
            break;
        }
        case 'i':
            if (peer_parse_long(optarg, &o.iters) || o.iters < 1) {
                snprintf(msg, sizeof msg, "-i %s: need at least 1 iteration", optarg);
                goto usage;
            }
            break;
        case 'w':
            if (peer_parse_long(optarg, &o.warm) || o.warm < 0) {
                snprintf(msg, sizeof msg, "-w %s: warm-up iterations cannot be negative", optarg);
                goto usage;
            }
            break;
        case 'f':
            o.full = 1;
            break;
        case 'h':
            peer_usage(argv[0], d);
            peer_exit(0);
            break;
        default:
            if (optopt == 'm' || optopt == 'i' || optopt == 'w')
                snprintf(msg, sizeof msg, "flag needs an argument: -%c", optopt);
            else
                snprintf(msg, sizeof msg, "flag provided but not defined: -%c", optopt);
            goto usage;
        }
    }
    if (optind < argc) {
        snprintf(msg, sizeof msg, "unexpected argument \"%s\"", argv[optind]);
        goto usage;
    }
    if (peer_npes < min_pes) {
        /* as osu.Main: PE 0 says so on stdout, the job exits 1 */
        if (peer_me == 0)
            printf("# %s needs at least %d PEs\n", name, min_pes);
        peer_exit(1);
    }
    peer_slots = peer_calloc((size_t)peer_npes, sizeof(double));
    peer_banner(name, &o);
    return o;
usage:
    if (peer_me == 0)
        fprintf(stderr, "%s\n", msg);
    peer_usage(argv[0], d);
    peer_exit(2);
    return o;
}

/* Iterations for a message size (osu.Scale): n up to 64 KiB, n/10 up to
 * 1 MiB, n/100 above, at least 1 unless n is 0. */
static inline long peer_scale(long n, size_t size) {
    long r;
    if (n <= 0)
        return 0;
    if (size <= PEER_SMALL_MAX)
        return n;
    r = size <= PEER_LARGE_MAX ? n / 10 : n / 100;
    return r < 1 ? 1 : r;
}

/* The next size after size, or 0 when it passes max (overflow-safe). */
static inline size_t peer_next_size(size_t size, size_t max) { return size > max / 2 ? 0 : size * 2; }

#define PEER_FOR_SIZES(o, size) \
    for (size_t size = (o)->min_size; size != 0 && size <= (o)->max_size; size = peer_next_size(size, (o)->max_size))

/* Header: "# " + key padded to 16 characters, then the metric, and with
 * -f "Min <metric>", "Max <metric>", "Iterations", joined by two spaces. */
static inline void peer_header(const char *key, const char *metric, int full) {
    if (peer_me != 0)
        return;
    char first[64];
    snprintf(first, sizeof first, "# %s", key);
    printf("%-16s%s", first, metric);
    if (full)
        printf("  Min %s  Max %s  Iterations", metric, metric);
    printf("\n");
}

/* A row's result: the value printed, and min/max over the timing PEs. */
struct peer_res {
    double value, min, max, sum;
    int n; /* timing PEs */
};

/* Collective (osu.Bench.Collect): every PE stores its value into PE 0's
 * slot array with shmem_double_p (-inf when it did not time), a barrier
 * completes the stores, PE 0 reads, a second barrier frees the slots. On
 * PE 0 the result holds min, max, sum and count over the timing PEs. */
static inline struct peer_res peer_collect(double v, int timing) {
    struct peer_res r = {v, 0, 0, 0, 0};
    shmem_double_p(&peer_slots[peer_me], timing ? v : -INFINITY, 0);
    shmem_barrier_all();
    if (peer_me == 0) {
        for (int i = 0; i < peer_npes; i++) {
            double x = peer_slots[i];
            if (x == -INFINITY)
                continue;
            if (r.n == 0 || x < r.min)
                r.min = x;
            if (r.n == 0 || x > r.max)
                r.max = x;
            r.sum += x;
            r.n++;
        }
    }
    shmem_barrier_all();
    return r;
}

/* End of a row, as the Go programs do it: a barrier (which separates the
 * sizes), then with -f the collection of min and max over the timing
 * PEs. v is this PE's metric; PE 0 prints its own v. */
static inline struct peer_res peer_finish(double v, int timing, int full) {
    struct peer_res r = {v, v, v, v, 1};
    shmem_barrier_all();
    if (full)
        r = peer_collect(v, timing);
    return r;
}

/* Fills a buffer (osu.Fill), touching its pages before timing. */
static inline void peer_fill(void *p, int c, size_t n) { memset(p, c, n); }

static inline void peer_full_cols(int full, const struct peer_res *r, long iters) {
    if (full)
        printf("%16.3f%16.3f%16d", r->min, r->max, (int)iters);
    printf("\n");
    fflush(stdout);
}

static inline void peer_row_size(size_t size, const struct peer_res *r, int full, long iters) {
    if (peer_me != 0)
        return;
    printf("%-16zu%16.3f", size, r->value);
    peer_full_cols(full, r, iters);
}

static inline void peer_row_op(const char *op, const struct peer_res *r, int full, long iters) {
    if (peer_me != 0)
        return;
    printf("%-16s%16.3f", op, r->value);
    peer_full_cols(full, r, iters);
}

static inline void peer_row_int(int key, const struct peer_res *r, int full, long iters) {
    if (peer_me != 0)
        return;
    printf("%-16d%16.3f", key, r->value);
    peer_full_cols(full, r, iters);
}

#endif
