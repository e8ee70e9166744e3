/*
 * memcpy_bw: single-thread memcpy bandwidth per size, the yardstick of scripts/compare.sh.
 * For each size from MIN to MAX (times 2) it copies one buffer of that size into another
 * repeatedly for at least 50 ms and reports the best of 5 such runs, as "size GB/s"
 * (1e9 bytes of copied data per second; each byte is read once and written once).
 * Small sizes stay in cache, as the same-size messages of a benchmark row do.
 *
 * usage: memcpy_bw MIN_BYTES MAX_BYTES
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: memcpy_bw MIN_BYTES MAX_BYTES\n");
        return 2;
    }
    size_t min = strtoull(argv[1], NULL, 10), max = strtoull(argv[2], NULL, 10);
    if (min == 0 || max < min) {
        fprintf(stderr, "memcpy_bw: need 0 < MIN <= MAX\n");
        return 2;
    }
    char *src = NULL, *dst = NULL;
    if (posix_memalign((void **)&src, 4096, max) != 0 ||
        posix_memalign((void **)&dst, 4096, max) != 0) {
        fprintf(stderr, "memcpy_bw: cannot allocate 2 x %zu bytes\n", max);
        return 1;
    }
    memset(src, 1, max);
    memset(dst, 0, max);
    printf("# memcpy_bw: single thread, best of 5 runs of >= 50 ms, GB/s = 1e9 B/s copied\n");
    unsigned sink = 0;
    for (size_t s = min; s <= max; s *= 2) {
        double best = 0;
        for (int rep = 0; rep < 5; rep++) {
            long iters = 0;
            double t0 = now_s(), t;
            do {
                for (int k = 0; k < 16; k++) {
                    src[(size_t)(iters + k) % s] = (char)k; /* keep every copy observable */
                    memcpy(dst, src, s);
                    sink += (unsigned char)dst[(size_t)(iters + k) % s];
                }
                iters += 16;
                t = now_s() - t0;
            } while (t < 0.05);
            double gbps = (double)s * (double)iters / t / 1e9;
            if (gbps > best)
                best = gbps;
        }
        printf("%zu %.3f\n", s, best);
        fflush(stdout);
    }
    free(src);
    free(dst);
    return sink == 0xffffffffu; /* never true in practice; keeps the copies from being elided */
}
