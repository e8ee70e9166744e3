/*
 * Test program of tests/trace: emits glucx trace events through the macro layer
 * (plugin/util/tracepoint.h) and the public framework calls (glucx/trace.h), in several forked
 * processes. test_trace.py runs it under glucx-trace and checks every field of every event
 * against values it computes itself from the formulas below (kept in step by hand: a
 * difference is a test failure, never a silent pass).
 *
 *   emit record NPROCS        every event once per process; rank r = process index
 *   emit burst NPROCS COUNT   COUNT send_begin events per process, as fast as possible
 *                             (record and burst print rank<r>_pid=<pid> for each forked rank)
 *   emit strings N            every string field of every event, N times, empty and not, in
 *                             the order of strings() below (one process)
 *   emit names                communicator and phase names that need JSON escaping, and long
 *                             phase names sharing a long prefix (one process; see names())
 *   emit maps                 which LTTng libraries are mapped, whether tracing is on
 *   emit bench ITERS          ns per site: idle (event disabled) and emitting
 *   emit p2pwait DIR          two forked ranks of a real glucx communicator (file store in DIR)
 *                             whose waits on point-to-point requests do and do not block; see
 *                             p2pwait() for the exact sequence (not in trace_emit_off)
 *   emit putwait DIR          the same with window puts (glucx_iput) and window waits; see
 *                             putwait()
 *   emit forklock             fork() while another thread holds LTTng-UST's locks; the child must
 *                             still exit (needs the provider loaded; see forklock())
 *
 * Prints "key=value" lines on stdout; exits 0 on success.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glucx/trace.h>
#ifdef EMIT_P2PWAIT
#include <glucx/glucx.h>
#include <glucx/store.h>
#endif

#include "core/core.h"
#include "support/timescale.h" /* glucx_test_ms(): bounds on waits for other processes */
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
    /* physical link 7 + r: package r to switch 3; route to next: links 20 + r, 7 + r, 30,
     * crossed b to a, a to b, b to a */
    GLUCX_TP(phys_link, c, r, 7 + r, 2, GLUCX_TP_NODE_PACKAGE, r, GLUCX_TP_NODE_SWITCH, 3,
             2.5e9 * (double)k, 250.25 + r);
    const int32_t hops[3] = {20 + r, 7 + r, 30};
    const uint8_t dirs[3] = {1, 0, 1};
    GLUCX_TP(route, c, r, r * n + next, next, 3, hops, dirs);

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

/* ---- strings: every string field, empty or not, in every order ----
 *
 * Babeltrace 2.0 may read an empty string as an earlier value of the same field (EVENTS.md,
 * "Reading strings"). One process (rank 0 of a 2-rank communicator, comm id test_comm_id(2))
 * emits, for i = 0 .. N-1, in this order:
 *   comm_init(c, 0, 2, 0, 1, S("name", i), S("host", i + 3), 0x5eed ^ i)
 *   link(c, 0, 1, 0, 1, 0, 1e9, 1000, S("tcp", i + 5))
 *   sched_decision(c, 0, i, algorithm, ring, [ring], [100 + i], S("reason", i + 6))
 *   compute_begin(c, 0, P(i), i)     through glucx_trace_compute_begin on a comm of rank 0
 *   compute_end(c, 0, P(i), i)
 *   error(c, 0, ERR_TIMEOUT, S("text", i + 1))
 * S(prefix, j) is "" when j % 8 is 1, 3, 4 or 5 (an empty after a non-empty, a non-empty after
 * an empty, three empties in a row), else "<prefix>-<i>" written (i % 3) + 1 times joined by
 * "/" (so a shorter value also follows a longer one). P(i) is "" when S would be, else
 * "comm:allreduce-<i>" when (i / 8) is even and "forward-<i>" when odd, written once: a
 * framework communication phase or a compute phase. */
static void string_value(char *out, size_t len, const char *prefix, int i, int j)
{
    out[0] = '\0';
    const int m = j % 8;
    if (m == 1 || m == 3 || m == 4 || m == 5)
        return;
    size_t used = 0;
    for (int k = 0; k <= i % 3 && used < len; k++) {
        int w = snprintf(out + used, len - used, "%s%s-%d", k ? "/" : "", prefix, i);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

static void strings(int n)
{
    const uint64_t c = test_comm_id(2);
    struct glucx_comm comm;
    memset(&comm, 0, sizeof(comm));
    comm.rank = 0;
#ifdef GLUCX_COMM_HAS_TRACE_ID
    comm.trace_id = c;
#endif
    for (int i = 0; i < n; i++) {
        char name[96], host[96], transport[96], reason[96], phase[96], text[96];
        string_value(name, sizeof(name), "name", i, i);
        string_value(host, sizeof(host), "host", i, i + 3);
        string_value(transport, sizeof(transport), "tcp", i, i + 5);
        string_value(reason, sizeof(reason), "reason", i, i + 6);
        string_value(phase, sizeof(phase), "", i, i);
        if (phase[0] != '\0')
            snprintf(phase, sizeof(phase), "%s-%d", (i / 8) % 2 == 0 ? "comm:allreduce" : "forward",
                     i);
        string_value(text, sizeof(text), "text", i, i + 1);
        GLUCX_TP(comm_init, c, 0, 2, 0, 1, name, host, UINT64_C(0x5eed) ^ (uint64_t)i);
        GLUCX_TP(link, c, 0, 1, 0, 1, 0, 1e9, 1000.0, transport);
        const int32_t alt_id = GLUCX_TP_ALG_RING;
        const uint64_t alt_cost = 100 + (uint64_t)i;
        GLUCX_TP(sched_decision, c, 0, (uint32_t)i, GLUCX_TP_DECISION_ALGORITHM, GLUCX_TP_ALG_RING,
                 1, &alt_id, &alt_cost, reason);
        glucx_trace_compute_begin(&comm, phase, (uint64_t)i);
        glucx_trace_compute_end(&comm, phase, (uint64_t)i);
        GLUCX_TP(error, c, 0, GLUCX_ERR_TIMEOUT, text);
    }
}

/* ---- names: what JSON must escape, and names of any length ----
 *
 * One process, rank 0 of communicators of size 1. For k = 0 .. NAMES_N - 1, NAME(k) is:
 *   0 quote"d   1 back\slash\   2 new<LF>line   3 tab<TAB>here   4 ctl<0x01><0x1f>
 *   5 "caf\u00e9 \u20ac \U0001f680" in UTF-8   6 NAMES_LONG bytes, byte i = 'a' + i % 26
 *   7 }],{"x":"
 * and it emits
 *   comm_init(NAMES_COMM + k, 0, 1, 0, 1, NAME(k), "names-host", k)
 *   compute_begin(NAMES_COMM + k, 0, NAME(k), k)    (glucx_trace_compute_*, on a comm of rank 0)
 *   compute_end(NAMES_COMM + k, 0, NAME(k), k)
 * then, on communicator NAMES_COMM + NAMES_N named "long-phases", two phases whose names share
 * their first 48 bytes, with the same id 9, overlapping:
 *   comm_init(NAMES_COMM + NAMES_N, 0, 1, 0, 1, "long-phases", "names-host", NAMES_N)
 *   compute_begin(.., NAMES_PHASE_A, 9)  compute_begin(.., NAMES_PHASE_B, 9)
 *   compute_end(.., NAMES_PHASE_A, 9)    compute_end(.., NAMES_PHASE_B, 9) */
#define NAMES_N 8
#define NAMES_LONG 6000
#define NAMES_COMM UINT64_C(0x6e616d6573000000)
#define NAMES_PHASE_A "forward.layer1.conv.weight.grad.bucket.0000000000.first"
#define NAMES_PHASE_B "forward.layer1.conv.weight.grad.bucket.0000000000.second"

static void names(void)
{
    static char long_name[NAMES_LONG + 1];
    for (int i = 0; i < NAMES_LONG; i++)
        long_name[i] = (char)('a' + i % 26);
    const char *const name[NAMES_N] = {
        "quote\"d",  "back\\slash\\", "new\nline",
        "tab\there", "ctl\x01\x1f",   "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80",
        long_name,   "}],{\"x\":\"",
    };
    struct glucx_comm comm;
    memset(&comm, 0, sizeof(comm));
    comm.rank = 0;
    for (int k = 0; k <= NAMES_N; k++) {
        const uint64_t c = NAMES_COMM + (uint64_t)k;
#ifdef GLUCX_COMM_HAS_TRACE_ID
        comm.trace_id = c;
#endif
        GLUCX_TP(comm_init, c, 0, 1, 0, 1, k < NAMES_N ? name[k] : "long-phases", "names-host",
                 (uint64_t)k);
        if (k < NAMES_N) {
            glucx_trace_compute_begin(&comm, name[k], (uint64_t)k);
            glucx_trace_compute_end(&comm, name[k], (uint64_t)k);
        }
    }
    glucx_trace_compute_begin(&comm, NAMES_PHASE_A, 9);
    glucx_trace_compute_begin(&comm, NAMES_PHASE_B, 9);
    glucx_trace_compute_end(&comm, NAMES_PHASE_A, 9);
    glucx_trace_compute_end(&comm, NAMES_PHASE_B, 9);
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
        printf("rank%d_pid=%d\n", r, (int)pid);
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

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

#ifdef EMIT_P2PWAIT
/* ---- p2pwait: waits that block and waits that do not (EVENTS.md, wait_begin) ----
 *
 * Rank 0 is this process, rank 1 a forked child; both create a 2-rank communicator "p2pwait"
 * through the public API with a file store in DIR. Every message is P2PW_BYTES bytes, rank 0 to
 * rank 1, with tag = its phase:
 *   1  rank 1 posts A, polls glucx_request_test until it completes, then glucx_request_wait(A):
 *      complete on entry, so no wait events; A's recv_end comes from the test.
 *   2  rank 1 posts B, tells rank 0 (shared memory), glucx_request_wait(B); rank 0 sends B
 *      P2PW_DELAY_MS later: the wait blocks (site request, req B, nreqs 1) and B's recv_end
 *      lies inside it.
 *   3  rank 1 posts C, polls test until it completes, glucx_request_wait_any({C}): no events.
 *   4  rank 1 posts D, tells rank 0, glucx_request_wait_any({D}); rank 0 sends D P2PW_DELAY_MS
 *      later: the wait blocks (site wait_any, req D, nreqs 1) with D's recv_end inside.
 * Rank 0 waits on its four sends only once rank 1 has received all four: those waits find their
 * requests complete, so rank 0 records no wait events, and each send_end comes from its wait.
 * Rank 1 prints "p2pwait_req_<phase>=<request id as the trace's req field>" and
 * "p2pwait_rank1_pid=<pid>". Every step is bounded (P2PW_STEP_MS; an alarm ends a stuck rank).
 */
#define P2PW_BYTES 64
#define P2PW_DELAY_MS 100
#define P2PW_STEP_MS glucx_test_ms(10000) /* bounds on waits for the peer: scaled */
#define P2PW_ALARM_S (glucx_test_ms(40000) / 1000)

typedef struct p2pw_shared {
    atomic_int stage; /* 1: B posted, 2: D posted, 3: all received, 4: rank 0's sends done */
} p2pw_shared_t;

static int p2pw_fail(int rank, const char *op, int phase, glucx_status_t st)
{
    fprintf(stderr, "emit p2pwait: rank %d: %s (phase %d, tag %d, %d bytes, peer %d): %s: %s\n",
            rank, op, phase, phase, P2PW_BYTES, 1 - rank, glucx_status_string(st),
            glucx_last_error());
    return 1;
}

/* Wait (bounded) until the other rank reaches stage. */
static int p2pw_await(p2pw_shared_t *sh, int rank, int stage)
{
    const int64_t deadline = mono_ms() + P2PW_STEP_MS;
    while (atomic_load(&sh->stage) < stage) {
        if (mono_ms() > deadline) {
            fprintf(stderr, "emit p2pwait: rank %d: peer %d did not reach stage %d in %lld ms\n",
                    rank, 1 - rank, stage, (long long)P2PW_STEP_MS);
            return 1;
        }
        sleep_ms(1);
    }
    return 0;
}

/* Poll glucx_request_test (bounded) until the request completes. */
static glucx_status_t p2pw_poll(glucx_request_t *req)
{
    const int64_t deadline = mono_ms() + P2PW_STEP_MS;
    glucx_status_t st;
    while ((st = glucx_request_test(req)) == GLUCX_INPROGRESS && mono_ms() <= deadline)
        sleep_ms(1);
    return st;
}

static void p2pw_fill(unsigned char *buf, int phase)
{
    for (int i = 0; i < P2PW_BYTES; i++)
        buf[i] = (unsigned char)(phase * 31 + i);
}

static int p2pw_verify(const unsigned char *buf, int phase)
{
    unsigned char want[P2PW_BYTES];
    p2pw_fill(want, phase);
    for (int i = 0; i < P2PW_BYTES; i++)
        if (buf[i] != want[i]) {
            fprintf(stderr,
                    "emit p2pwait: rank 1: phase %d message from rank 0 (%d bytes): byte %d is "
                    "%u, expected %u\n",
                    phase, P2PW_BYTES, i, buf[i], want[i]);
            return 1;
        }
    return 0;
}

static int p2pw_rank1(glucx_comm_t *comm, p2pw_shared_t *sh)
{
    unsigned char buf[5][P2PW_BYTES];
    glucx_request_t *req[5] = {NULL};
    glucx_status_t st;
    size_t index = 99;
    int rc = 1;
    for (int phase = 1; phase <= 4; phase++) {
        if ((st = glucx_irecv(comm, buf[phase], P2PW_BYTES, 0, (uint64_t)phase, &req[phase])) !=
            GLUCX_OK) {
            p2pw_fail(1, "glucx_irecv", phase, st);
            goto out;
        }
        printf("p2pwait_req_%d=%" PRIu64 "\n", phase, (uint64_t)(uintptr_t)req[phase]);
        switch (phase) {
        case 1: /* complete before the wait */
            if ((st = p2pw_poll(req[1])) != GLUCX_OK) {
                p2pw_fail(1, "glucx_request_test until complete", phase, st);
                goto out;
            }
            if ((st = glucx_request_wait(req[1], P2PW_STEP_MS)) != GLUCX_OK) {
                p2pw_fail(1, "glucx_request_wait on a complete receive", phase, st);
                goto out;
            }
            break;
        case 2: /* posted, then a wait that blocks until rank 0 sends */
            atomic_store(&sh->stage, 1);
            if ((st = glucx_request_wait(req[2], P2PW_STEP_MS)) != GLUCX_OK) {
                p2pw_fail(1, "glucx_request_wait", phase, st);
                goto out;
            }
            break;
        case 3:
            if ((st = p2pw_poll(req[3])) != GLUCX_OK) {
                p2pw_fail(1, "glucx_request_test until complete", phase, st);
                goto out;
            }
            if ((st = glucx_request_wait_any(&req[3], 1, P2PW_STEP_MS, NULL, &index)) != GLUCX_OK ||
                index != 0) {
                p2pw_fail(1, "glucx_request_wait_any on 1 complete receive", phase, st);
                goto out;
            }
            break;
        case 4:
            atomic_store(&sh->stage, 2);
            if ((st = glucx_request_wait_any(&req[4], 1, P2PW_STEP_MS, NULL, &index)) != GLUCX_OK ||
                index != 0) {
                p2pw_fail(1, "glucx_request_wait_any on 1 receive", phase, st);
                goto out;
            }
            if ((st = glucx_request_test(req[4])) != GLUCX_OK) {
                p2pw_fail(1, "glucx_request_test after wait_any", phase, st);
                goto out;
            }
            break;
        }
        if (p2pw_verify(buf[phase], phase) != 0)
            goto out;
    }
    atomic_store(&sh->stage, 3);
    rc = p2pw_await(sh, 1, 4);
out:
    for (int i = 1; i <= 4; i++)
        glucx_request_free(req[i]);
    return rc;
}

static int p2pw_rank0(glucx_comm_t *comm, p2pw_shared_t *sh)
{
    unsigned char buf[5][P2PW_BYTES];
    glucx_request_t *req[5] = {NULL};
    glucx_status_t st;
    int rc = 1;
    for (int phase = 1; phase <= 4; phase++) {
        if (phase == 2 || phase == 4) { /* rank 1 is (about to be) blocked in its wait */
            if (p2pw_await(sh, 0, phase == 2 ? 1 : 2) != 0)
                goto out;
            sleep_ms(P2PW_DELAY_MS);
        }
        p2pw_fill(buf[phase], phase);
        if ((st = glucx_isend(comm, buf[phase], P2PW_BYTES, 1, (uint64_t)phase, &req[phase])) !=
            GLUCX_OK) {
            p2pw_fail(0, "glucx_isend", phase, st);
            goto out;
        }
    }
    if (p2pw_await(sh, 0, 3) != 0)
        goto out;
    for (int phase = 1; phase <= 4; phase++)
        if ((st = glucx_request_wait(req[phase], P2PW_STEP_MS)) != GLUCX_OK) {
            p2pw_fail(0, "glucx_request_wait on a received send", phase, st);
            goto out;
        }
    rc = 0;
out:
    atomic_store(&sh->stage, 4);
    for (int i = 1; i <= 4; i++)
        glucx_request_free(req[i]);
    return rc;
}

typedef int (*p2pw_rank_fn)(glucx_comm_t *comm, p2pw_shared_t *sh);

/* Rank @p rank of a 2-rank communicator @p name (file store in @p dir) runs fns[rank]. */
static int p2pw_run(int rank, const char *dir, p2pw_shared_t *sh, const char *name,
                    const p2pw_rank_fn *fns)
{
    glucx_context_t *ctx = NULL;
    glucx_store_t *store = NULL;
    glucx_comm_t *comm = NULL;
    int rc = 1;
    glucx_status_t st = glucx_context_create(NULL, &ctx);
    if (st != GLUCX_OK) {
        fprintf(stderr, "emit p2pwait: rank %d: glucx_context_create: %s: %s\n", rank,
                glucx_status_string(st), glucx_last_error());
        goto out;
    }
    if ((st = glucx_store_file_create(dir, &store)) != GLUCX_OK) {
        fprintf(stderr, "emit p2pwait: rank %d: glucx_store_file_create(%s): %s: %s\n", rank, dir,
                glucx_status_string(st), glucx_last_error());
        goto out;
    }
    glucx_comm_params_t params = {
        .field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
        .rank = rank,
        .size = 2,
        .store = store,
        .name = name,
        .timeout_ms = P2PW_STEP_MS,
    };
    if ((st = glucx_comm_create(ctx, &params, &comm)) != GLUCX_OK) {
        fprintf(stderr, "emit %s: rank %d: glucx_comm_create(%s, rank %d of 2): %s: %s\n", name,
                rank, name, rank, glucx_status_string(st), glucx_last_error());
        goto out;
    }
    rc = fns[rank](comm, sh);
    if (rc != 0)
        atomic_store(&sh->stage, 4); /* the peer stops waiting for this rank */
out:
    glucx_comm_destroy(comm);
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    return rc;
}

/* Fork rank 1, run both ranks of @p name (printing "<name>_rank1_pid=<pid>"). */
static int two_ranks(const char *dir, const char *name, const p2pw_rank_fn *fns)
{
    p2pw_shared_t *sh =
        mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("emit p2pwait: mmap of the shared stage");
        return 1;
    }
    atomic_init(&sh->stage, 0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("emit p2pwait: fork");
        return 1;
    }
    alarm((unsigned)P2PW_ALARM_S); /* a rank stuck beyond every bound dies of SIGALRM */
    if (pid == 0) {
        printf("%s_rank1_pid=%d\n", name, (int)getpid());
        _exit(p2pw_run(1, dir, sh, name, fns));
    }
    int rc = p2pw_run(0, dir, sh, name, fns);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "emit %s: rank 1 (pid %d) failed (wait status 0x%x)\n", name, (int)pid,
                status);
        rc = 1;
    }
    munmap(sh, sizeof(*sh));
    return rc;
}

static int p2pwait(const char *dir)
{
    static const p2pw_rank_fn fns[2] = {p2pw_rank0, p2pw_rank1};
    return two_ranks(dir, "p2pwait", fns);
}

/* ---- putwait: window puts traced as sends, placements as receives ----
 *
 * Same set-up as p2pwait, communicator "putwait". Rank 1 opens a window of PUTW_WINDOW bytes
 * for rank 0's puts with slot PUTW_SLOT; rank 0 puts P2PW_BYTES bytes twice, at offsets 0 and
 * P2PW_BYTES:
 *   1  rank 0 puts, rank 1 polls glucx_window_wait with timeout 0 until it returns the put: no
 *      wait events; the placement's recv_begin/recv_end come from the poll that returned it.
 *   2  rank 1 tells rank 0, then blocks in glucx_window_wait; rank 0 puts P2PW_DELAY_MS later:
 *      one wait (site window, req = the window, nreqs 1) with the placement's events inside.
 * Rank 0 waits on its puts once rank 1 has both: no wait events. Rank 1 prints
 * "putwait_window=<window id as the trace's req field>".
 */
#define PUTW_SLOT 9
#define PUTW_WINDOW 4096

static int putw_rank1(glucx_comm_t *comm, p2pw_shared_t *sh)
{
    unsigned char buf[PUTW_WINDOW];
    glucx_window_t *win = NULL;
    glucx_status_t st = glucx_window_create(comm, 0, PUTW_SLOT, buf, sizeof(buf), &win);
    size_t bytes = 0, offset = 0;
    int rc = 1;
    if (st != GLUCX_OK) {
        p2pw_fail(1, "glucx_window_create", 0, st);
        goto out;
    }
    printf("putwait_window=%" PRIu64 "\n", (uint64_t)(uintptr_t)win);
    atomic_store(&sh->stage, 1); /* the window is open */
    const int64_t deadline = mono_ms() + P2PW_STEP_MS;
    while ((st = glucx_window_wait(win, 0, NULL, &bytes, &offset)) == GLUCX_INPROGRESS &&
           mono_ms() <= deadline)
        sleep_ms(1);
    if (st != GLUCX_OK || bytes != P2PW_BYTES || offset != 0) {
        p2pw_fail(1, "polling glucx_window_wait for put 1", 1, st);
        goto out;
    }
    atomic_store(&sh->stage, 2); /* about to block */
    st = glucx_window_wait(win, P2PW_STEP_MS, NULL, &bytes, &offset);
    if (st != GLUCX_OK || bytes != P2PW_BYTES || offset != P2PW_BYTES) {
        p2pw_fail(1, "glucx_window_wait for put 2", 2, st);
        goto out;
    }
    for (int phase = 1; phase <= 2; phase++) {
        if (p2pw_verify(buf + (phase - 1) * P2PW_BYTES, phase) != 0)
            goto out;
    }
    atomic_store(&sh->stage, 3);
    rc = p2pw_await(sh, 1, 4);
out:
    glucx_window_destroy(win);
    return rc;
}

static int putw_rank0(glucx_comm_t *comm, p2pw_shared_t *sh)
{
    unsigned char buf[3][P2PW_BYTES];
    glucx_request_t *req[3] = {NULL};
    glucx_status_t st;
    int rc = 1;
    for (int phase = 1; phase <= 2; phase++) {
        if (p2pw_await(sh, 0, phase) != 0)
            goto out;
        if (phase == 2)
            sleep_ms(P2PW_DELAY_MS); /* rank 1 is blocked in its wait by then */
        p2pw_fill(buf[phase], phase);
        if ((st = glucx_iput(comm, buf[phase], P2PW_BYTES, 1, PUTW_SLOT,
                             (size_t)(phase - 1) * P2PW_BYTES, 0, &req[phase])) != GLUCX_OK) {
            p2pw_fail(0, "glucx_iput", phase, st);
            goto out;
        }
    }
    if (p2pw_await(sh, 0, 3) != 0)
        goto out;
    for (int phase = 1; phase <= 2; phase++)
        if ((st = glucx_request_wait(req[phase], P2PW_STEP_MS)) != GLUCX_OK) {
            p2pw_fail(0, "glucx_request_wait on a placed put", phase, st);
            goto out;
        }
    rc = 0;
out:
    atomic_store(&sh->stage, 4);
    for (int i = 1; i <= 2; i++)
        glucx_request_free(req[i]);
    return rc;
}

static int putwait(const char *dir)
{
    static const p2pw_rank_fn fns[2] = {putw_rank0, putw_rank1};
    return two_ranks(dir, "putwait", fns);
}
#endif

/* ---- forklock: fork while another thread holds LTTng-UST's locks ----
 *
 * LTTng-UST's listener threads take its internal mutexes at any time; a fork() at such a moment
 * must wait for them (trace/provider.c, "Fork safety"), or the child inherits them locked and
 * blocks forever the next time LTTng-UST takes them, at the latest at exit in the provider's
 * destructor. This makes that moment certain instead of rare: a holder thread takes every one of
 * those locks with lttng_ust_before_fork() (what a fork wrapper does; looked up in the global
 * scope, where GLUCX_TRACE=1 loaded the provider and liblttng-ust), keeps them FORKLOCK_HOLD_MS,
 * then releases them with lttng_ust_after_fork_parent(). The main thread forks while they are
 * held; the child returns through exit(0), which runs the provider's destructor. The parent
 * waits for it at most FORKLOCK_CHILD_MS, then SIGKILLs it and reports it as hung.
 *
 * Prints forklock_fork_helper (liblttng-ust-fork mapped), forklock_fork_guard (the provider's
 * glucx_tp_provider_fork_guard, -2 when absent), forklock_fork_waited (1: fork() returned after
 * the holder had begun releasing the locks), forklock_child (exited or hung), and
 * forklock_child_status; exits 0 only if the child exited with status 0 in time.
 */
#define FORKLOCK_HOLD_MS 200
#define FORKLOCK_CHILD_MS glucx_test_ms(10000) /* a child that does not deadlock exits by then */

typedef void (*forklock_fn_t)(sigset_t *);

typedef struct {
    forklock_fn_t before, after_parent;
    atomic_int held;     /* 1: the holder has LTTng-UST's locks */
    atomic_int released; /* 1: the holder is releasing them (set just before) */
} forklock_state_t;

static void *forklock_holder(void *arg)
{
    forklock_state_t *s = arg;
    sigset_t saved;
    s->before(&saved);
    atomic_store(&s->held, 1);
    sleep_ms(FORKLOCK_HOLD_MS);
    atomic_store(&s->released, 1);
    s->after_parent(&saved);
    return NULL;
}

static forklock_fn_t forklock_lookup(const char *name)
{
    void *sym = dlsym(RTLD_DEFAULT, name);
    forklock_fn_t fn = NULL;
    if (sym != NULL)
        memcpy(&fn, &sym, sizeof(fn)); /* object to function pointer without a cast warning */
    else
        fprintf(stderr,
                "emit forklock: %s not found in the global scope (is the trace provider loaded? "
                "run with GLUCX_TRACE=1)\n",
                name);
    return fn;
}

static int forklock(void)
{
    forklock_state_t s = {.before = forklock_lookup("lttng_ust_before_fork"),
                          .after_parent = forklock_lookup("lttng_ust_after_fork_parent")};
    atomic_init(&s.held, 0);
    atomic_init(&s.released, 0);
    const int *guard = dlsym(RTLD_DEFAULT, "glucx_tp_provider_fork_guard");
    printf("forklock_fork_helper=%d\n", maps_has("/liblttng-ust-fork.so"));
    printf("forklock_fork_guard=%d\n", guard != NULL ? *guard : -2);
    if (s.before == NULL || s.after_parent == NULL)
        return 1;

    pthread_t holder;
    int err = pthread_create(&holder, NULL, forklock_holder, &s);
    if (err != 0) {
        fprintf(stderr, "emit forklock: pthread_create of the lock holder: %s\n", strerror(err));
        return 1;
    }
    const int64_t held_deadline = mono_ms() + FORKLOCK_CHILD_MS;
    while (!atomic_load(&s.held) && mono_ms() < held_deadline)
        sleep_ms(1);
    if (!atomic_load(&s.held)) {
        /* the holder is stuck in lttng_ust_before_fork: nothing sane to fork into */
        fprintf(stderr, "emit forklock: lttng_ust_before_fork did not return in %lld ms\n",
                (long long)FORKLOCK_CHILD_MS);
        return 1;
    }

    const int64_t t_fork = mono_ms();
    pid_t pid = fork();
    if (pid == 0)
        exit(0); /* destructors: the provider's unregisters its probes under LTTng-UST's lock */
    const int waited = atomic_load(&s.released);
    const int64_t fork_ms = mono_ms() - t_fork;
    if (pid < 0) {
        perror("emit forklock: fork");
        pthread_join(holder, NULL);
        return 1;
    }
    pthread_join(holder, NULL);
    printf("forklock_fork_waited=%d\n", waited);
    printf("forklock_fork_ms=%" PRId64 "\n", fork_ms);

    int status = 0;
    pid_t got = 0;
    const int64_t deadline = mono_ms() + FORKLOCK_CHILD_MS;
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && mono_ms() < deadline)
        sleep_ms(5);
    if (got == 0) {
        fprintf(stderr,
                "emit forklock: child %d forked while another thread held LTTng-UST's locks did "
                "not exit within %lld ms (deadlocked on an inherited lock): killing it\n",
                (int)pid, (long long)FORKLOCK_CHILD_MS);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        printf("forklock_child=hung\n");
        return 1;
    }
    if (got != pid) {
        perror("emit forklock: waitpid");
        return 1;
    }
    printf("forklock_child=exited\n");
    printf("forklock_child_status=0x%x\n", status);
    printf("forklock_child_ms=%" PRId64 "\n", mono_ms() - t_fork);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "emit forklock: child %d ended with wait status 0x%x, expected exit 0\n",
                (int)pid, status);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: emit record NPROCS | burst NPROCS COUNT | strings N | names | "
                        "maps | bench ITERS | p2pwait DIR | forklock\n");
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
    if (strcmp(argv[1], "strings") == 0 && argc == 3) {
        int n = atoi(argv[2]);
        if (n < 1 || n > 100000)
            return 2;
        strings(n);
        return 0;
    }
    if (strcmp(argv[1], "names") == 0 && argc == 2) {
        names();
        return 0;
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
    if (strcmp(argv[1], "forklock") == 0 && argc == 2)
        return forklock();
#ifdef EMIT_P2PWAIT
    if (strcmp(argv[1], "p2pwait") == 0 && argc == 3)
        return p2pwait(argv[2]);
    if (strcmp(argv[1], "putwait") == 0 && argc == 3)
        return putwait(argv[2]);
#endif
    fprintf(stderr, "emit: bad arguments\n");
    return 2;
}
