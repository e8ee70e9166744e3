/*
 * Ground-truth runs for the analysis tests (test_analysis.py runs them under glucx-trace and
 * compares glucx-analyze's report with what this program measured itself):
 *
 *   gt_run straggler STOREDIR OUT   4 ranks, 8 iterations; rank 2 sleeps DELAY_MS before each
 *                                   allreduce. OUT gets "straggler_rank=2" and the mean measured
 *                                   sleep in ns.
 *   gt_run overlap STOREDIR OUT     2 ranks, 5 iterations; rank 1 sleeps before its allreduce;
 *                                   rank 0 starts the allreduce (glucx_coll_start), computes a
 *                                   busy loop (compute events, empty phase name), then waits.
 *                                   OUT gets rank 0's measured compute time inside the collective
 *                                   and the collective's span as rank 0 saw it.
 *   gt_run bytes STOREDIR OUT       4 ranks: ring allreduce of ARB bytes 3 times; OUT gets n, the
 *                                   size and the count (the test computes the per-link bytes).
 *   gt_run missing STOREDIR OUT     as bytes with 1 allreduce, but rank 3 runs without the trace
 *                                   provider (LD_PRELOAD removed before exec).
 *   gt_run fail STOREDIR OUT        3 ranks, FAIL_ITERS iterations as straggler (rank 2 sleeps
 *                                   DELAY_MS before each allreduce), then one more whose allreduce
 *                                   rank 2 calls with one element more: the collective fails. Each
 *                                   rank writes OUT.<rank>: "status=" its glucx_status_t,
 *                                   "t0_ns=" / "t1_ns=" CLOCK_REALTIME before / after the failing
 *                                   call, "slept_ns=" its total sleep, and last "text=" its
 *                                   glucx_last_error().
 *   gt_run clock STOREDIR OUT       2 ranks: CLOCK_ITERS small allreduces, one every
 *                                   CLOCK_GAP_MS (a run of about 21 s with messages both ways
 *                                   throughout: the clock-correction test runs each rank under
 *                                   its own glucx-trace, as two hosts, and shifts one trace's
 *                                   clock). OUT gets "iterations=".
 *
 * Ranks are exec'd children (gt_run child MODE RANK STOREDIR OUT). Exit 0 on success.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glucx/glucx.h>
#include <glucx/store.h>
#include <glucx/trace.h>

#include "support/timescale.h" /* glucx_test_ms(): the suite's time-scale factor */

#define DELAY_MS 20
#define CLOCK_ITERS 1000
#define CLOCK_GAP_MS 21
#define FAIL_ITERS 4
/* 1 MiB blocks on 4 ranks: each travels as several ring segments with the same (seq, step) */
#define ARB (4 * 1024 * 1024)

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t sleep_ms(int ms)
{
    int64_t a = now_ns();
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
    return now_ns() - a;
}

static int64_t realtime_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void spin_ns(int64_t ns)
{
    int64_t end = now_ns() + ns;
    volatile uint64_t x = 0;
    while (now_ns() < end)
        for (int i = 0; i < 1000; i++)
            x += (uint64_t)i;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "gt_run rank %d: ", rank);                                             \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* K iterations of one allreduce each, rank 2 sleeping DELAY_MS before it (the straggler); its
 * total sleep into @p slept_p. 0, or 1 after a message. */
static int straggler_iters(glucx_comm_t *comm, int rank, int K, float *a, float *b,
                           int64_t *slept_p)
{
    *slept_p = 0;
    for (int k = 0; k < K; k++) {
        glucx_trace_iteration_begin(comm, (uint64_t)k);
        if (rank == 2)
            *slept_p += sleep_ms(DELAY_MS);
        glucx_status_t st = glucx_allreduce(comm, a, b, 4096, GLUCX_DTYPE_F32, GLUCX_OP_SUM, NULL);
        CHECK(st == GLUCX_OK, "allreduce: %s", glucx_status_string(st));
        glucx_trace_iteration_end(comm, (uint64_t)k);
    }
    return 0;
}

/* The ranks of a mode's communicator. */
static int nranks(const char *mode)
{
    if (strcmp(mode, "overlap") == 0 || strcmp(mode, "clock") == 0)
        return 2;
    return strcmp(mode, "fail") == 0 ? 3 : 4;
}

static int child(const char *mode, int rank, const char *store_dir, const char *out)
{
    int n = nranks(mode);
    glucx_context_t *ctx = NULL;
    glucx_store_t *store = NULL;
    glucx_comm_t *comm = NULL;
    glucx_status_t st = glucx_context_create(NULL, &ctx);
    CHECK(st == GLUCX_OK, "context: %s", glucx_status_string(st));
    st = glucx_store_file_create(store_dir, &store);
    CHECK(st == GLUCX_OK, "store %s: %s", store_dir, glucx_status_string(st));
    glucx_comm_params_t p = {.field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
                             .rank = rank,
                             .size = n,
                             .store = store,
                             .name = mode,
                             .timeout_ms = strcmp(mode, "fail") == 0 ? glucx_test_ms(10000)
                                                                     : glucx_test_ms(30000)};
    st = glucx_comm_create(ctx, &p, &comm);
    CHECK(st == GLUCX_OK, "comm_create: %s", glucx_status_string(st));
    float *a = calloc(ARB / sizeof(float), sizeof(float));
    float *b = calloc(ARB / sizeof(float), sizeof(float));
    CHECK(a && b, "out of memory");
    FILE *f = NULL;
    if (strcmp(mode, "straggler") == 0) {
        int64_t slept = 0;
        const int K = 8;
        if (straggler_iters(comm, rank, K, a, b, &slept) != 0)
            return 1;
        if (rank == 2) {
            f = fopen(out, "w");
            CHECK(f, "cannot write %s", out);
            fprintf(f, "straggler_rank=2\ndelay_ns=%" PRId64 "\n", slept / K);
        }
    } else if (strcmp(mode, "overlap") == 0) {
        int64_t inside = 0, span = 0;
        for (int k = 0; k < 5; k++) {
            glucx_trace_iteration_begin(comm, (uint64_t)k);
            if (rank == 1) {
                sleep_ms(100);
                st = glucx_allreduce(comm, a, b, 1024, GLUCX_DTYPE_F32, GLUCX_OP_SUM, NULL);
                CHECK(st == GLUCX_OK, "allreduce: %s", glucx_status_string(st));
            } else {
                glucx_coll_args_t args = {.coll = GLUCX_COLL_ALLREDUCE,
                                          .sendbuf = a,
                                          .recvbuf = b,
                                          .count = 1024,
                                          .dtype = GLUCX_DTYPE_F32,
                                          .op = GLUCX_OP_SUM,
                                          .root = -1};
                glucx_request_t *req = NULL;
                int64_t t0 = now_ns();
                st = glucx_coll_start(comm, &args, NULL, &req);
                CHECK(st == GLUCX_OK, "coll_start: %s", glucx_status_string(st));
                /* Let the collective thread start it: sleep, do not spin (a spinning caller
                 * competes for the core with that thread; on a loaded machine the collective then
                 * began after the compute phase did, and the overlap the trace shows was smaller
                 * than the one measured here). */
                sleep_ms((int)glucx_test_ms(10));
                int64_t c0 = now_ns();
                glucx_trace_compute_begin(comm, "", 0);
                spin_ns(40000000);
                glucx_trace_compute_end(comm, "", 0);
                int64_t c1 = now_ns();
                st = glucx_request_wait(req, 30000);
                CHECK(st == GLUCX_OK, "wait: %s", glucx_status_string(st));
                int64_t t1 = now_ns();
                glucx_request_free(req);
                inside += c1 - c0;
                span += t1 - t0;
            }
            glucx_trace_iteration_end(comm, (uint64_t)k);
        }
        if (rank == 0) {
            f = fopen(out, "w");
            CHECK(f, "cannot write %s", out);
            fprintf(f, "compute_inside_ns=%" PRId64 "\nspan_ns=%" PRId64 "\n", inside, span);
        }
    } else if (strcmp(mode, "clock") == 0) {
        for (int k = 0; k < CLOCK_ITERS; k++) {
            st = glucx_allreduce(comm, a, b, 16, GLUCX_DTYPE_F32, GLUCX_OP_SUM, NULL);
            CHECK(st == GLUCX_OK, "allreduce: %s", glucx_status_string(st));
            sleep_ms(CLOCK_GAP_MS);
        }
        if (rank == 0) {
            f = fopen(out, "w");
            CHECK(f, "cannot write %s", out);
            fprintf(f, "iterations=%d\n", CLOCK_ITERS);
        }
    } else if (strcmp(mode, "fail") == 0) {
        int64_t slept = 0;
        if (straggler_iters(comm, rank, FAIL_ITERS, a, b, &slept) != 0)
            return 1;
        glucx_trace_iteration_begin(comm, FAIL_ITERS);
        int64_t t0 = realtime_ns();
        st = glucx_allreduce(comm, a, b, rank == 2 ? 4097 : 4096, GLUCX_DTYPE_F32, GLUCX_OP_SUM,
                             NULL);
        int64_t t1 = realtime_ns();
        char path[4096];
        snprintf(path, sizeof(path), "%s.%d", out, rank);
        f = fopen(path, "w");
        CHECK(f, "cannot write %s", path);
        fprintf(f,
                "status=%d\nt0_ns=%" PRId64 "\nt1_ns=%" PRId64 "\nslept_ns=%" PRId64 "\ntext=%s\n",
                (int)st, t0, t1, slept, st == GLUCX_OK ? "" : glucx_last_error());
        fclose(f);
        free(a);
        free(b);
        glucx_comm_destroy(comm);
        glucx_store_destroy(store);
        glucx_context_destroy(ctx);
        CHECK(st != GLUCX_OK, "the mismatched allreduce succeeded");
        return 0; /* the communicator failed: no closing barrier */
    } else {      /* bytes, missing */
        int K = strcmp(mode, "bytes") == 0 ? 3 : 1;
        glucx_coll_opts_t o = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = "ring"};
        for (int k = 0; k < K; k++) {
            st =
                glucx_allreduce(comm, a, b, ARB / sizeof(float), GLUCX_DTYPE_F32, GLUCX_OP_SUM, &o);
            CHECK(st == GLUCX_OK, "allreduce: %s", glucx_status_string(st));
        }
        if (rank == 0) {
            f = fopen(out, "w");
            CHECK(f, "cannot write %s", out);
            fprintf(f, "n=%d\nbytes=%d\ncount=%d\n", n, ARB, K);
        }
    }
    if (f)
        fclose(f);
    st = glucx_barrier(comm, NULL);
    CHECK(st == GLUCX_OK, "barrier: %s", glucx_status_string(st));
    free(a);
    free(b);
    glucx_comm_destroy(comm);
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "child") == 0)
        return child(argv[2], atoi(argv[3]), argv[4], argv[5]);
    if (argc != 4) {
        fprintf(stderr, "usage: gt_run straggler|overlap|bytes|missing|fail|clock STOREDIR OUT\n");
        return 2;
    }
    const char *mode = argv[1];
    int n = nranks(mode);
    pid_t pids[4];
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            perror("fork");
            return 1;
        }
        if (pids[r] == 0) {
            char rs[16];
            snprintf(rs, sizeof(rs), "%d", r);
            if (strcmp(mode, "missing") == 0 && r == 3)
                unsetenv("LD_PRELOAD"); /* this rank runs untraced */
            execl("/proc/self/exe", argv[0], "child", mode, rs, argv[2], argv[3], (char *)NULL);
            perror("exec");
            _exit(127);
        }
    }
    int failed = 0;
    int64_t deadline = now_ns() + glucx_test_ms(60000) * 1000000;
    for (int done = 0; done < n;) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p > 0) {
            done++;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "gt_run: rank process %d failed (status %d)\n", (int)p, status);
                failed = 1;
            }
            continue;
        }
        if (now_ns() > deadline) {
            fprintf(stderr, "gt_run: ranks did not finish within %lld ms; killing them\n",
                    (long long)glucx_test_ms(60000));
            for (int r = 0; r < n; r++)
                kill(pids[r], SIGKILL);
            failed = 1;
            deadline = INT64_MAX;
        }
        sleep_ms(10);
    }
    return failed;
}
