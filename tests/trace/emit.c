/*
 * Test program of tests/trace: emits glucx trace events through the macro layer
 * (plugin/util/tracepoint.h) and the public framework calls (glucx/trace.h), in several forked
 * processes. test_trace.py runs it under glucx-trace and checks every field of every event
 * against values it computes itself from the formulas below (kept in step by hand: a
 * difference is a test failure, never a silent pass).
 *
 *   emit record NPROCS        every event once per process; rank r = process index
 *   emit burst NPROCS COUNT   COUNT send_begin events per process, as fast as possible
 *   emit maps                 which LTTng libraries are mapped, whether tracing is on
 *   emit bench ITERS          ns per site: idle (event disabled) and emitting
 *
 * Prints "key=value" lines on stdout; exits 0 on success.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glucx/trace.h>

#include "core/core.h"
#include "util/tracepoint.h"

#define COMM_NAME "glucx-trace-test"

/* The comm id every process computes from the same records (as communicator creation will). */
static uint64_t test_comm_id(int n)
{
    enum { MAX = 64 };
    char bufs[MAX][32];
    const void *records[MAX] = {0};
    size_t lens[MAX] = {0};
    const int m = n < MAX ? n : MAX; /* main() allows at most 64 */
    for (int r = 0; r < m; r++) {
        snprintf(bufs[r], sizeof(bufs[r]), "record-of-rank-%d", r);
        records[r] = bufs[r];
        lens[r] = strlen(bufs[r]);
    }
    return glucx_tp_comm_id(COMM_NAME, m, records, lens);
}

static void emit_all(int r, int n)
{
    const uint64_t c = test_comm_id(n);
    const uint64_t k = (uint64_t)r + 1;
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    const uint32_t seq = 100 + (uint32_t)r;
    const uint64_t tag = (UINT64_C(1) << 63) | ((uint64_t)seq << 32) | (UINT64_C(3) << 16) | 0xabc;
    char host[32];
    snprintf(host, sizeof(host), "host-%d", r);

    GLUCX_TP(comm_init, c, r, n, r % 2, n < 2 ? n : 2, COMM_NAME, host,
             UINT64_C(0x1234567890abcdef) ^ (uint64_t)r);
    GLUCX_TP(link, c, r, r * n + next, r, next, 1, 1.25e9 * (double)k, 1500.5 + r, "posix");

    const uint64_t lo[3] = {0, 4096, UINT64_C(1) << 20};
    const uint64_t hi[3] = {4096, UINT64_C(1) << 20, UINT64_MAX};
    const int32_t alg[3] = {GLUCX_TP_ALG_RECURSIVE_DOUBLING, GLUCX_TP_ALG_RABENSEIFNER,
                            GLUCX_TP_ALG_RING};
    const uint8_t forced[3] = {0, 1, 0};
    GLUCX_TP(select_map, c, r, GLUCX_COLL_ALLREDUCE, 3, lo, hi, alg, forced);

    GLUCX_TP(coll_begin, c, r, seq, GLUCX_COLL_ALLGATHER, 8192 * k, GLUCX_DTYPE_F32, GLUCX_OP_SUM,
             -1, GLUCX_TP_ALG_RING, GLUCX_INPROGRESS);
    const int32_t alt_ids[3] = {GLUCX_TP_ALG_RING, GLUCX_TP_ALG_RECURSIVE_DOUBLING,
                                GLUCX_TP_ALG_BRUCK};
    const uint64_t alt_cost[3] = {1000 + (uint64_t)r, 25000, UINT64_C(1) << 40};
    GLUCX_TP(sched_decision, c, r, seq, GLUCX_TP_DECISION_ALGORITHM, GLUCX_TP_ALG_RING, 3, alt_ids,
             alt_cost, "selection map");

    GLUCX_TP(send_begin, c, r, seq, 3, next, r * n + next, tag, 4096 * k);
    GLUCX_TP(recv_begin, c, r, seq, 4, -1, -1, tag + (1u << 16), 65536);
    GLUCX_TP(send_end, c, r, seq, 3, next, r * n + next, tag, 4096 * k);
    GLUCX_TP(recv_end, c, r, seq, 4, prev, prev * n + r, tag + (1u << 16),
             4096 * ((uint64_t)prev + 1));
    GLUCX_TP(reduce_begin, c, r, seq, 4096 * k, GLUCX_DTYPE_BF16, GLUCX_OP_MAX);
    GLUCX_TP(reduce_end, c, r, seq, 4096 * k, GLUCX_DTYPE_BF16, GLUCX_OP_MAX);
    GLUCX_TP(wait_begin, c, r, GLUCX_TP_WAIT_COLL, seq, UINT64_C(0xdeadbeef00) + (uint64_t)r, 2,
             GLUCX_INPROGRESS);
    GLUCX_TP(wait_end, c, r, GLUCX_TP_WAIT_COLL, seq, UINT64_C(0xdeadbeef00) + (uint64_t)r, 2,
             GLUCX_OK);
    GLUCX_TP(coll_end, c, r, seq, GLUCX_COLL_ALLGATHER, 8192 * k, GLUCX_DTYPE_F32, GLUCX_OP_SUM, -1,
             GLUCX_TP_ALG_RING, r == 0 ? GLUCX_OK : GLUCX_ERR_TIMEOUT);
    char text[96];
    snprintf(text, sizeof(text), "rank %d: peer %d failed during allgather", r, next);
    GLUCX_TP(error, c, r, GLUCX_ERR_PEER_FAILED, text);

    /* framework events through the public API, on a communicator of rank r */
    struct glucx_comm comm;
    memset(&comm, 0, sizeof(comm));
    comm.rank = r;
#ifdef GLUCX_COMM_HAS_TRACE_ID
    comm.trace_id = c;
#endif
    glucx_trace_iteration_begin(&comm, 5 + (uint64_t)r);
    glucx_trace_compute_begin(&comm, "backward", 2);
    glucx_trace_bucket_ready(&comm, 3, (UINT64_C(1) << 20) * k);
    glucx_trace_compute_end(&comm, "backward", 2);
    glucx_trace_iteration_end(&comm, 5 + (uint64_t)r);
    glucx_trace_iteration_begin(NULL, 999); /* no comm: rank -1, comm id 0 */
}

static void burst(int r, long count)
{
    for (long i = 0; i < count; i++)
        GLUCX_TP(send_begin, 1, r, (uint32_t)i, 0, 0, 0, (uint64_t)i, 64);
}

static int maps_has(const char *needle)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, needle) != NULL)
            found = 1;
    if (f != NULL)
        fclose(f);
    return found;
}

static int count_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int threads = -1;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "Threads: %d", &threads) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return threads;
}

/* Emits in nprocs processes (this one is rank 0), forked without exec: the children are
 * traced right only through the preloaded LTTng fork helper. */
static int run_forked(int nprocs, long count, int record)
{
    pid_t pids[64];
    int children = 0;
    /* rank 0 first: its LTTng state (cached vpid/vtid, registration) is what the children
     * inherit, so they are traced right only with the fork helper preloaded */
    if (record)
        emit_all(0, nprocs);
    else
        burst(0, count);
    for (int r = 1; r < nprocs && r < 64; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("emit: fork");
            return 1;
        }
        if (pid == 0) {
            if (record)
                emit_all(r, nprocs);
            else
                burst(r, count);
            _exit(0);
        }
        pids[children++] = pid;
    }
    int failed = 0;
    for (int i = 0; i < children; i++) {
        int status;
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            fprintf(stderr, "emit: child %d failed\n", (int)pids[i]);
            failed = 1;
        }
    }
    return failed;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per loop iteration: empty loop, idle site (recv_end, never enabled by the bench), and an
 * emitting site (send_begin: recorded when the session enables it). Each loop runs 5 times;
 * the fastest run counts (the machines are shared and noisy). */
static void bench(long iters)
{
    volatile uint64_t sink = 0;
    double best[3] = {1e300, 1e300, 1e300};
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_ns();
        for (long i = 0; i < iters; i++) {
            __asm__ volatile("" ::: "memory");
            sink += (uint64_t)i;
        }
        double t1 = now_ns();
        for (long i = 0; i < iters; i++) {
            __asm__ volatile("" ::: "memory");
            sink += (uint64_t)i;
            GLUCX_TP(recv_end, 1, 0, (uint32_t)i, 0, 0, 0, (uint64_t)i, 64);
        }
        double t2 = now_ns();
        for (long i = 0; i < iters; i++) {
            __asm__ volatile("" ::: "memory");
            sink += (uint64_t)i;
            GLUCX_TP(send_begin, 1, 0, (uint32_t)i, 0, 0, 0, (uint64_t)i, 64);
        }
        double t3 = now_ns();
        const double t[3] = {t1 - t0, t2 - t1, t3 - t2};
        for (int j = 0; j < 3; j++)
            if (t[j] < best[j])
                best[j] = t[j];
    }
    printf("bench_iters=%ld\n", iters);
    printf("bench_loop_ns=%.3f\n", best[0] / (double)iters);
    printf("bench_idle_site_ns=%.3f\n", (best[1] - best[0]) / (double)iters);
    printf("bench_send_begin_site_ns=%.3f\n", (best[2] - best[0]) / (double)iters);
    printf("bench_send_begin_enabled=%d\n", GLUCX_TP_ON(send_begin) ? 1 : 0);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: emit record NPROCS | burst NPROCS COUNT | maps | bench ITERS\n");
        return 2;
    }
    printf("compiled=%d\n", GLUCX_TP_COMPILED);
    printf("enabled=%d\n", glucx_trace_enabled());
    printf("provider=%d\n", glucx_tp_provider_loaded());
    printf("pid=%d\n", (int)getpid());
#ifdef GLUCX_COMM_HAS_TRACE_ID
    printf("framework_comm_id=core\n");
#else
    printf("framework_comm_id=none\n");
#endif
    if (strcmp(argv[1], "record") == 0 && argc == 3) {
        int n = atoi(argv[2]);
        if (n < 1 || n > 64)
            return 2;
        return run_forked(n, 0, 1);
    }
    if (strcmp(argv[1], "burst") == 0 && argc == 4) {
        int n = atoi(argv[2]);
        long count = atol(argv[3]);
        if (n < 1 || n > 64 || count < 1)
            return 2;
        return run_forked(n, count, 0);
    }
    if (strcmp(argv[1], "maps") == 0) {
        printf("map_lttng_ust=%d\n", maps_has("/liblttng-ust.so"));
        printf("map_lttng_ust_tracepoint=%d\n", maps_has("/liblttng-ust-tracepoint.so"));
        printf("map_provider=%d\n", maps_has("/libglucx-trace-provider.so"));
        printf("map_any_lttng=%d\n", maps_has("lttng"));
        printf("threads=%d\n", count_threads());
        return 0;
    }
    if (strcmp(argv[1], "bench") == 0 && argc == 3) {
        long iters = atol(argv[2]);
        if (iters < 1)
            return 2;
        bench(iters);
        return 0;
    }
    fprintf(stderr, "emit: bad arguments\n");
    return 2;
}
