/*
 * Integration case "callback": glucx_coll_start_cb(). Each rank:
 *
 * 1. starts a burst of allreduces (int32 sum, and f32 max) with callbacks, on distinct buffers;
 *    every callback runs exactly once, on a thread other than the caller's, with GLUCX_OK and
 *    an empty text, in the order the collectives were started, and each result equals the value
 *    computed here from (rank, index);
 * 2. a callback that starts the next collective from inside itself (a chain of 8) works;
 * 3. a count that differs on one rank makes every rank's callback report GLUCX_ERR_MISMATCH with
 *    a text naming the collective; the communicator is then failed, and a further
 *    glucx_coll_start_cb() returns the failure at once and never calls its callback;
 * 4. on a new communicator, rank 0 starts two allreduces that cannot complete (the others wait
 *    before joining) and destroys the communicator: both callbacks have run, with errors, by the
 *    time glucx_comm_destroy() returns.
 * Invalid calls (NULL callback, bad dtype/op) return GLUCX_ERR_INVALID_ARG and call nothing.
 * Every wait is bounded.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"

#define BURST 16
#define COUNT 257
#define CHAIN 8
#define WAIT_MS glucx_test_ms(60000)

static double want_sum(int size, size_t j)
{
    double v = 0;
    for (int r = 0; r < size; r++)
        v += (double)(r * 1000 + (int)j);
    return v;
}

/* ---- 1. burst ---- */
static void part_burst(glucx_comm_t *comm, int rank, int size)
{
    static int32_t in[BURST][COUNT], out[BURST][COUNT];
    static float fin[BURST][COUNT];
    static itest_slot_t slots[2 * BURST];
    memset(slots, 0, sizeof(slots));
    itest_slots_reset();
    for (int b = 0; b < BURST; b++) {
        for (size_t j = 0; j < COUNT; j++) {
            in[b][j] = rank * 1000 + (int32_t)j + b;
            fin[b][j] = (float)((rank * 7 + (int)j * 3 + b) % 101);
            out[b][j] = -1;
        }
    }
    for (int b = 0; b < BURST; b++) {
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = in[b],
                               .recvbuf = out[b],
                               .count = COUNT,
                               .dtype = GLUCX_DTYPE_I32,
                               .op = GLUCX_OP_SUM};
        ITEST_STATUS(glucx_coll_start_cb(comm, &a, NULL, itest_slot_done, &slots[2 * b]), GLUCX_OK,
                     "start_cb allreduce i32 sum %d", b);
        glucx_coll_args_t f = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = GLUCX_IN_PLACE,
                               .recvbuf = fin[b],
                               .count = COUNT,
                               .dtype = GLUCX_DTYPE_F32,
                               .op = GLUCX_OP_MAX};
        ITEST_STATUS(glucx_coll_start_cb(comm, &f, NULL, itest_slot_done, &slots[2 * b + 1]),
                     GLUCX_OK, "start_cb allreduce f32 max %d", b);
    }
    if (itest_wait_slots(slots, 2 * BURST, WAIT_MS, "burst") != 0)
        return;
    for (int i = 0; i < 2 * BURST; i++) {
        itest_slot_t *s = &slots[i];
        ITEST_CHECK(atomic_load(&s->calls) == 1, "slot %d called %d times", i,
                    atomic_load(&s->calls));
        ITEST_CHECK(s->status == GLUCX_OK, "slot %d status %s: %s", i,
                    glucx_status_string(s->status), s->text);
        ITEST_CHECK(s->text[0] == '\0', "slot %d: text on success: \"%s\"", i, s->text);
        ITEST_CHECK(!pthread_equal(s->thread, pthread_self()), "slot %d ran on the caller", i);
        ITEST_CHECK(atomic_load(&s->order) == i + 1, "slot %d completed as %d-th", i,
                    atomic_load(&s->order));
    }
    for (int b = 0; b < BURST; b++) {
        for (size_t j = 0; j < COUNT; j++) {
            double w = want_sum(size, j) + (double)b * size;
            if ((double)out[b][j] != w) {
                ITEST_FAIL("burst %d: sum[%zu] = %d, expected %.0f", b, j, out[b][j], w);
                break;
            }
            float m = 0;
            for (int r = 0; r < size; r++) {
                float v = (float)((r * 7 + (int)j * 3 + b) % 101);
                m = v > m ? v : m;
            }
            if (fin[b][j] != m) {
                ITEST_FAIL("burst %d: max[%zu] = %g, expected %g", b, j, (double)fin[b][j],
                           (double)m);
                break;
            }
        }
    }
}

/* ---- 2. a callback starts the next collective ---- */
typedef struct chain {
    glucx_comm_t *comm;
    int64_t value[CHAIN];
    itest_slot_t slots[CHAIN];
    atomic_int started;
    glucx_status_t start_status;
} chain_t;

static void chain_next(void *arg, glucx_status_t status, const char *error);

static glucx_status_t chain_start(chain_t *c, int k)
{
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = &c->value[k],
                           .count = 1,
                           .dtype = GLUCX_DTYPE_I64,
                           .op = GLUCX_OP_SUM};
    atomic_store(&c->started, k + 1);
    return glucx_coll_start_cb(c->comm, &a, NULL, chain_next, c);
}

static void chain_next(void *arg, glucx_status_t status, const char *error)
{
    chain_t *c = arg;
    int k = atomic_load(&c->started) - 1;
    itest_slot_done(&c->slots[k], status, error);
    if (status == GLUCX_OK && k + 1 < CHAIN) {
        glucx_status_t st = chain_start(c, k + 1);
        if (st != GLUCX_OK)
            c->start_status = st;
    }
}

static void part_chain(glucx_comm_t *comm, int rank, int size)
{
    static chain_t c;
    memset(&c, 0, sizeof(c));
    c.comm = comm;
    c.start_status = GLUCX_OK;
    for (int k = 0; k < CHAIN; k++)
        c.value[k] = (int64_t)(rank + 1) * (k + 1);
    ITEST_STATUS(chain_start(&c, 0), GLUCX_OK, "chain start");
    if (itest_wait_slots(c.slots, CHAIN, WAIT_MS, "chain") != 0)
        return;
    ITEST_CHECK(c.start_status == GLUCX_OK, "start from a callback: %s",
                glucx_status_string(c.start_status));
    const int64_t ranks_sum = (int64_t)size * (size + 1) / 2;
    for (int k = 0; k < CHAIN; k++) {
        ITEST_CHECK(c.slots[k].status == GLUCX_OK, "chain %d: %s", k, c.slots[k].text);
        ITEST_CHECK(c.value[k] == ranks_sum * (k + 1), "chain %d: %lld, expected %lld", k,
                    (long long)c.value[k], (long long)(ranks_sum * (k + 1)));
    }
}

/* ---- invalid calls ---- */
static void part_invalid(glucx_comm_t *comm)
{
    int32_t a[4] = {0};
    itest_slot_t s;
    memset(&s, 0, sizeof(s));
    glucx_coll_args_t ok = {.coll = GLUCX_COLL_ALLREDUCE,
                            .sendbuf = GLUCX_IN_PLACE,
                            .recvbuf = a,
                            .count = 4,
                            .dtype = GLUCX_DTYPE_I32,
                            .op = GLUCX_OP_SUM};
    ITEST_STATUS(glucx_coll_start_cb(comm, &ok, NULL, NULL, &s), GLUCX_ERR_INVALID_ARG,
                 "NULL callback");
    glucx_coll_args_t bad = ok;
    bad.op = GLUCX_OP_AVG; /* AVG on an integer dtype */
    ITEST_STATUS(glucx_coll_start_cb(comm, &bad, NULL, itest_slot_done, &s), GLUCX_ERR_INVALID_ARG,
                 "AVG on i32");
    ITEST_CHECK(strstr(glucx_last_error(), "allreduce") != NULL, "text: %s", glucx_last_error());
    itest_sleep_ms(20);
    ITEST_CHECK(atomic_load(&s.calls) == 0, "a refused call ran its callback");
}

/* ---- 3. mismatch ---- */
static void part_mismatch(glucx_comm_t *comm, int rank, int size)
{
    static int32_t buf[64];
    itest_slot_t s;
    memset(&s, 0, sizeof(s));
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = buf,
                           .count = rank == size - 1 ? 17 : 16,
                           .dtype = GLUCX_DTYPE_I32,
                           .op = GLUCX_OP_SUM};
    if (ITEST_STATUS(glucx_coll_start_cb(comm, &a, NULL, itest_slot_done, &s), GLUCX_OK,
                     "mismatched allreduce") != 0)
        return;
    if (itest_wait_slots(&s, 1, WAIT_MS, "mismatch") != 0)
        return;
    ITEST_STATUS(s.status, GLUCX_ERR_MISMATCH, "mismatch callback status (text: %s)", s.text);
    ITEST_CHECK(strstr(s.text, "allreduce") != NULL, "mismatch text: \"%s\"", s.text);
    itest_slot_t later;
    memset(&later, 0, sizeof(later));
    a.count = 16;
    glucx_status_t st = glucx_coll_start_cb(comm, &a, NULL, itest_slot_done, &later);
    ITEST_CHECK(st == GLUCX_ERR_MISMATCH, "start after the failure: %s", glucx_status_string(st));
    itest_sleep_ms(20);
    ITEST_CHECK(atomic_load(&later.calls) == 0, "refused start ran its callback");
}

/* ---- 4. destroy with collectives outstanding ---- */
static void part_destroy(const itest_env_t *env, glucx_context_t *ctx, glucx_store_t *store,
                         int rank, int size)
{
    const glucx_coll_opts_t *const opts[2] = {NULL, NULL};
    itest_destroy_outstanding(env, ctx, store, rank, size, "callback-destroy", opts);
}

int itest_case_callback(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "callback", glucx_test_ms(30000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return 1;
    part_burst(comm, rank, size);
    part_chain(comm, rank, size);
    part_invalid(comm);
    part_mismatch(comm, rank, size);
    glucx_comm_destroy(comm);
    part_destroy(env, ctx, store, rank, size);
    itest_close(ctx, store, NULL);
    return itest_failures() != 0;
}
