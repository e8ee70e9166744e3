/*
 * Integration cases about the end of a communicator and calls that do not line up (issue 13).
 *
 * "destroy_after": CYCLES times, every rank creates a communicator, starts an allreduce with a
 *   completion callback, and destroys the communicator as soon as the callback said the
 *   allreduce is over, while the callback itself still runs (as a c10 Future's continuations
 *   do). The values are checked against (rank, cycle, index), and nothing may be reported on
 *   stderr: before the fix the collective thread was still "busy" after the callback had
 *   signalled, so the destroy failed the transport ("communicator destroyed while a started
 *   collective was running") and sent failure notices to the peers. Ranks take turns being the
 *   slow one, so the first destroy often comes while a peer is still in the allreduce.
 * "early_destroy": rank 0 destroys the communicator while the others call an allreduce on it
 *   (which rank 0 never joins), and stays alive: every other rank fails with GLUCX_ERR_ABORTED
 *   naming rank 0 long before its timeout (rank 0's orderly leave, then the failure notices).
 * "kind_mismatch": rank 0 calls one collective while the others call another under the same
 *   sequence number: every rank fails with GLUCX_ERR_MISMATCH naming both collectives long
 *   before the timeout, although their messages match none of each other's receives.
 * "Long before" is a quarter of the communicator timeout (scaled by GLUCX_TEST_TIME_SCALE), so
 * a slow machine cannot pass a timeout off as detection.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "support/util.h"

#define CYCLES 200

/* ---- stderr capture: glucx writes its warnings there ---- */

typedef struct capture {
    int saved;
    char path[96];
} capture_t;

static int capture_begin(capture_t *c, int rank)
{
    snprintf(c->path, sizeof(c->path), "/tmp/glucx-itest-stderr-%d-%d", (int)getpid(), rank);
    int fd = open(c->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    c->saved = dup(STDERR_FILENO);
    if (fd < 0 || c->saved < 0) {
        ITEST_FAIL("cannot capture stderr in %s: %s", c->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    dup2(fd, STDERR_FILENO);
    close(fd);
    return 0;
}

/* Restore stderr; report (and count as a failure) every line glucx or UCX wrote meanwhile. */
static int capture_end(capture_t *c, const char *what)
{
    dup2(c->saved, STDERR_FILENO);
    close(c->saved);
    FILE *f = fopen(c->path, "r");
    int lines = 0;
    if (f != NULL) {
        char line[1300];
        while (fgets(line, sizeof(line), f) != NULL) {
            if (strstr(line, "[glucx ") == NULL && strstr(line, "UCX  WARN") == NULL &&
                strstr(line, "UCX  ERROR") == NULL)
                continue;
            if (lines++ < 5)
                ITEST_FAIL("%s: glucx reported: %s", what, line);
        }
        fclose(f);
    }
    unlink(c->path);
    if (lines > 5)
        ITEST_FAIL("%s: ... %d glucx lines in all", what, lines);
    return lines == 0 ? 0 : -1;
}

/* The variant's context and the case's file store, for communicators made one after another. */
static int open_ctx_store(const itest_env_t *env, glucx_context_t **ctx_p, glucx_store_t **store_p)
{
    itest_apply_variant(env);
    if (ITEST_STATUS(glucx_context_create(NULL, ctx_p), GLUCX_OK, "context_create") ||
        ITEST_STATUS(glucx_store_file_create(env->store_dir, store_p), GLUCX_OK, "store")) {
        glucx_store_destroy(*store_p);
        glucx_context_destroy(*ctx_p);
        return -1;
    }
    return 0;
}

/* ---- destroy_after ---- */

typedef struct done_sig {
    sem_t sem;
    glucx_status_t status;
    char text[512];
} done_sig_t;

static void on_done(void *arg, glucx_status_t status, const char *error)
{
    done_sig_t *d = arg;
    d->status = status;
    snprintf(d->text, sizeof(d->text), "%s", error != NULL ? error : "");
    sem_post(&d->sem);
    /* Work after the signal, as a future's continuations run after its waiter woke. */
    itest_sleep_ms(2);
}

static size_t cycle_count(int cycle)
{
    static const size_t counts[] = {1, 1000, 70001, 0, 17}; /* eager, rendezvous, empty */
    return counts[cycle % (int)(sizeof(counts) / sizeof(counts[0]))];
}

static int32_t cycle_value(int rank, int cycle, size_t j)
{
    return (int32_t)(rank * 7919 + cycle * 31 + (int)(j % 1021));
}

static int wait_sem(sem_t *sem, int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    while (sem_timedwait(sem, &ts) != 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

int itest_case_destroy_after(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx = NULL;
    glucx_store_t *store = NULL;
    if (open_ctx_store(env, &ctx, &store) != 0)
        return -1;
    const int64_t timeout_ms = glucx_test_ms(60000);
    int32_t *in = malloc(70001 * sizeof(int32_t)), *out = malloc(70001 * sizeof(int32_t));
    capture_t cap;
    int rc = (in == NULL || out == NULL) ? -1 : capture_begin(&cap, rank);
    int cycle = 0;
    for (; cycle < CYCLES && rc == 0; cycle++) {
        char name[32];
        snprintf(name, sizeof(name), "da%d", cycle);
        glucx_comm_t *comm = NULL;
        if (itest_comm(ctx, store, rank, size, name, timeout_ms, &comm) != GLUCX_OK) {
            rc = -1;
            break;
        }
        const size_t count = cycle_count(cycle);
        for (size_t j = 0; j < count; j++)
            in[j] = cycle_value(rank, cycle, j);
        memset(out, 0, count * sizeof(int32_t));
        done_sig_t d = {.status = GLUCX_INPROGRESS};
        sem_init(&d.sem, 0, 0);
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = in,
                               .recvbuf = out,
                               .count = count,
                               .dtype = GLUCX_DTYPE_I32,
                               .op = GLUCX_OP_SUM};
        /* the slow rank of this cycle joins late, so the others finish first */
        if (rank == cycle % size)
            itest_sleep_ms(1 + cycle % 3);
        if (ITEST_STATUS(glucx_coll_start_cb(comm, &a, NULL, on_done, &d), GLUCX_OK,
                         "cycle %d: coll_start_cb", cycle)) {
            rc = -1;
        } else if (wait_sem(&d.sem, timeout_ms + glucx_test_ms(30000)) != 0) {
            ITEST_FAIL("cycle %d: the allreduce's callback did not run", cycle);
            rc = -1;
        } else if (d.status != GLUCX_OK) {
            ITEST_FAIL("cycle %d: allreduce of %zu int32 failed: %s: %s", cycle, count,
                       glucx_status_string(d.status), d.text);
            rc = -1;
        } else {
            for (size_t j = 0; j < count && rc == 0; j++) {
                int64_t want = 0;
                for (int r = 0; r < size; r++)
                    want += cycle_value(r, cycle, j);
                if (out[j] != (int32_t)want) {
                    ITEST_FAIL("cycle %d: element %zu: expected %lld, got %d", cycle, j,
                               (long long)want, out[j]);
                    rc = -1;
                }
            }
        }
        glucx_comm_destroy(comm); /* while on_done still sleeps on the collective thread */
        sem_destroy(&d.sem);
    }
    if (in != NULL && out != NULL)
        rc |= capture_end(&cap, "destroy right after the collective");
    if (rc != 0)
        itest_note("stopped at cycle %d of %d", cycle, CYCLES);
    free(in);
    free(out);
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    return rc;
}

/* ---- early_destroy ---- */

int itest_case_early_destroy(const itest_env_t *env, int rank, int size)
{
    const int64_t timeout_ms = glucx_test_ms(60000);
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "early", timeout_ms, &ctx, &store, &comm) != GLUCX_OK)
        return -1;
    int rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier before");
    itest_shared_t *sh = env->shared;
    if (rank == 0) {
        glucx_comm_destroy(comm);
        /* Stay alive (a process that exits is found by its exit): the others must learn of the
         * destroy itself. */
        const int64_t end = itest_now_ns() + (timeout_ms + glucx_test_ms(30000)) * 1000000;
        while (__atomic_load_n(&sh->counter[0], __ATOMIC_ACQUIRE) < size - 1 &&
               itest_now_ns() < end)
            itest_sleep_ms(5);
        itest_close(ctx, store, NULL);
        return rc;
    }
    int32_t in[64], out[64];
    for (int j = 0; j < 64; j++)
        in[j] = rank + j;
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = in,
                           .recvbuf = out,
                           .count = 64,
                           .dtype = GLUCX_DTYPE_I32,
                           .op = GLUCX_OP_SUM};
    const int64_t t0 = itest_now_ns();
    glucx_status_t st = glucx_coll(comm, &a, NULL);
    const int64_t ms = (itest_now_ns() - t0) / 1000000;
    char text[512];
    glucx_comm_last_error(comm, text, sizeof(text));
    rc |= ITEST_STATUS(st, GLUCX_ERR_ABORTED, "allreduce after rank 0 destroyed the communicator");
    ITEST_CHECK(strstr(text, "rank 0") != NULL && strstr(text, "destroyed") != NULL,
                "the error names rank 0's destroy: \"%s\"", text);
    ITEST_CHECK(ms < timeout_ms / 4, "took %lld ms (timeout %lld ms): found at the timeout",
                (long long)ms, (long long)timeout_ms);
    itest_note("allreduce failed after %lld ms: %s", (long long)ms, text);
    __atomic_add_fetch(&sh->counter[0], 1, __ATOMIC_RELEASE);
    itest_close(ctx, store, comm);
    return rc;
}

/* ---- kind_mismatch ---- */

static const struct {
    glucx_coll_t zero, others;
} kind_pairs[] = {
    {GLUCX_COLL_ALLGATHER, GLUCX_COLL_ALLREDUCE},
    {GLUCX_COLL_BARRIER, GLUCX_COLL_ALLREDUCE},
    {GLUCX_COLL_ALLREDUCE, GLUCX_COLL_BROADCAST},
    {GLUCX_COLL_ALLTOALL, GLUCX_COLL_ALLGATHER},
    {GLUCX_COLL_REDUCE_SCATTER, GLUCX_COLL_BARRIER},
    /* at 3 ranks a barrier message would match a receive of the reduce's (matching ignored the
     * signature) in a wait that never completes */
    {GLUCX_COLL_REDUCE, GLUCX_COLL_BARRIER},
};

int itest_case_kind_mismatch(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx = NULL;
    glucx_store_t *store = NULL;
    if (open_ctx_store(env, &ctx, &store) != 0)
        return -1;
    const int64_t timeout_ms = glucx_test_ms(60000);
    enum { COUNT = 256 };
    float *in = calloc((size_t)COUNT * (size_t)size, sizeof(float));
    float *out = calloc((size_t)COUNT * (size_t)size, sizeof(float));
    int rc = in == NULL || out == NULL ? -1 : 0;
    for (size_t k = 0; k < sizeof(kind_pairs) / sizeof(kind_pairs[0]) && rc == 0; k++) {
        char name[32];
        snprintf(name, sizeof(name), "kind%zu", k);
        glucx_comm_t *comm = NULL;
        if (itest_comm(ctx, store, rank, size, name, timeout_ms, &comm) != GLUCX_OK) {
            rc = -1;
            break;
        }
        const glucx_coll_t mine = rank == 0 ? kind_pairs[k].zero : kind_pairs[k].others;
        glucx_coll_args_t a = {.coll = mine,
                               .sendbuf = in,
                               .recvbuf = out,
                               .count = COUNT,
                               .dtype = GLUCX_DTYPE_F32,
                               .op = GLUCX_OP_SUM,
                               .root = 0};
        rc |= ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier before");
        const int64_t t0 = itest_now_ns();
        glucx_status_t st = glucx_coll(comm, &a, NULL);
        const int64_t ms = (itest_now_ns() - t0) / 1000000;
        char text[512];
        glucx_comm_last_error(comm, text, sizeof(text));
        rc |= ITEST_STATUS(st, GLUCX_ERR_MISMATCH, "%s on rank 0, %s on the others",
                           glucx_coll_name(kind_pairs[k].zero),
                           glucx_coll_name(kind_pairs[k].others));
        ITEST_CHECK(strstr(text, glucx_coll_name(kind_pairs[k].zero)) != NULL &&
                        strstr(text, glucx_coll_name(kind_pairs[k].others)) != NULL,
                    "the error names both collectives: \"%s\"", text);
        ITEST_CHECK(ms < timeout_ms / 4, "%s vs %s took %lld ms (timeout %lld ms)",
                    glucx_coll_name(kind_pairs[k].zero), glucx_coll_name(kind_pairs[k].others),
                    (long long)ms, (long long)timeout_ms);
        glucx_comm_destroy(comm);
    }
    free(in);
    free(out);
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    return rc;
}
