/*
 * Integration case "priority": collectives started with GLUCX_COLL_OPT_PRIORITY (issue 18 item
 * 1). Each rank:
 *
 * 1. "skew": starts JOBS allreduces, broadcasts and reduces of several sizes (some cut into
 *    many chunks, some single-chunk), with priorities that do not follow the start order, one
 *    unscheduled allreduce among them (a fence), while every rank sleeps a different, varying
 *    time before each start and the last rank is slower still before some of them; it then
 *    waits for them in reverse order. Every result equals the value computed here from
 *    (rank, job, index): local readiness may delay the schedule, never make ranks disagree.
 * 2. "order": a completion callback (on the collective thread, so before the scheduler's next
 *    decision on every rank) starts a long low-priority allreduce L and then a short
 *    high-priority one H: H completes first. With equal priorities the start order holds (L
 *    first), so the check fails if priorities were ignored.
 * 3. "starvation": the same way, a 4-chunk priority-0 allreduce then five 64-chunk priority-5
 *    ones: the first four high-priority ones pass the low one over 256 times, then the guard
 *    runs it to its end before the fifth: completion order H1 H2 H3 H4 L H5.
 * 4. "mismatch": on a new communicator rank 0 gives priority 1 where the others give 2: every
 *    rank's callback reports GLUCX_ERR_MISMATCH naming the priorities.
 * 5. "invalid": chunk_bytes 0 is refused locally (GLUCX_ERR_INVALID_ARG).
 * 6. "destroy": on a new communicator rank 0 starts two scheduled allreduces the others never
 *    join and destroys it: both callbacks have run, with errors, when the destroy returns.
 * Every wait is bounded.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"

#define JOBS 14
#define WAIT_MS glucx_test_ms(120000)

/* Rank r's element i of job j (small integers: sums of a few ranks are exact in f32). */
static int32_t value(int r, int j, size_t i)
{
    return (int32_t)(((size_t)r * 131 + (size_t)j * 17 + i) % 1000);
}

/* ---- 1. skewed starts ---- */

typedef struct job_spec {
    glucx_coll_t coll;
    glucx_dtype_t dtype;
    size_t count;
    int priority; /**< < 0: started without a priority (a fence) */
    size_t chunk_bytes;
    int root;
    int in_place;
} job_spec_t;

static job_spec_t spec_of(int j, int size)
{
    static const size_t counts[] = {300000, 1, 70000, 1000, 0, 150001};
    job_spec_t s = {.coll = GLUCX_COLL_ALLREDUCE,
                    .dtype = j % 2 ? GLUCX_DTYPE_F32 : GLUCX_DTYPE_I32,
                    .count = counts[j % 6],
                    .priority = (j * 5) % 7,
                    .chunk_bytes = j % 3 == 0 ? 0 : (size_t)(16 << 10) + (size_t)j * 4,
                    .root = 0,
                    .in_place = j % 4 == 1};
    if (j == 6)
        s.priority = -1;
    if (j == 4 || j == 11) {
        s.coll = GLUCX_COLL_BROADCAST;
        s.count = 90001;
        s.root = size - 1;
    }
    if (j == 9) {
        s.coll = GLUCX_COLL_REDUCE;
        s.count = 120000;
        s.root = 0;
        s.in_place = 0;
    }
    return s;
}

static void put(glucx_dtype_t dt, void *buf, size_t i, int32_t v)
{
    if (dt == GLUCX_DTYPE_F32)
        ((float *)buf)[i] = (float)v;
    else
        ((int32_t *)buf)[i] = v;
}

static double get(glucx_dtype_t dt, const void *buf, size_t i)
{
    return dt == GLUCX_DTYPE_F32 ? (double)((const float *)buf)[i] : ((const int32_t *)buf)[i];
}

static void part_skew(glucx_comm_t *comm, int rank, int size)
{
    void *in[JOBS], *out[JOBS];
    glucx_request_t *req[JOBS];
    job_spec_t sp[JOBS];
    for (int j = 0; j < JOBS; j++) {
        sp[j] = spec_of(j, size);
        const size_t bytes = (sp[j].count + 1) * 4;
        in[j] = malloc(bytes);
        out[j] = malloc(bytes);
        req[j] = NULL;
        if (in[j] == NULL || out[j] == NULL) {
            ITEST_FAIL("skew: out of memory");
            return;
        }
        for (size_t i = 0; i < sp[j].count; i++) {
            put(sp[j].dtype, in[j], i, value(rank, j, i));
            put(sp[j].dtype, out[j], i, sp[j].coll == GLUCX_COLL_BROADCAST ? -7 : -1);
        }
        if (sp[j].coll == GLUCX_COLL_BROADCAST && rank == sp[j].root)
            memcpy(out[j], in[j], sp[j].count * 4);
        if (sp[j].in_place)
            memcpy(out[j], in[j], sp[j].count * 4);
    }
    for (int j = 0; j < JOBS; j++) {
        /* each rank a different delay before each start; the last rank much later for some */
        itest_sleep_ms((j * 3 + rank * 5) % 4);
        if (rank == size - 1 && (j == 3 || j == 8))
            itest_sleep_ms(60);
        glucx_coll_args_t a = {.coll = sp[j].coll,
                               .sendbuf = sp[j].in_place ? GLUCX_IN_PLACE : in[j],
                               .recvbuf = out[j],
                               .count = sp[j].count,
                               .dtype = sp[j].dtype,
                               .op = GLUCX_OP_SUM,
                               .root = sp[j].root};
        glucx_coll_opts_t o = itest_prio_opts(sp[j].priority, sp[j].chunk_bytes);
        ITEST_STATUS(glucx_coll_start(comm, &a, sp[j].priority < 0 ? NULL : &o, &req[j]), GLUCX_OK,
                     "skew: start job %d", j);
    }
    for (int j = JOBS - 1; j >= 0; j--)
        if (req[j] != NULL) {
            ITEST_STATUS(glucx_request_wait(req[j], WAIT_MS), GLUCX_OK, "skew: wait job %d", j);
            glucx_request_free(req[j]);
        }
    for (int j = 0; j < JOBS; j++) {
        const int significant = sp[j].coll != GLUCX_COLL_REDUCE || rank == sp[j].root;
        for (size_t i = 0; significant && i < sp[j].count; i++) {
            double want = 0;
            if (sp[j].coll == GLUCX_COLL_BROADCAST)
                want = value(sp[j].root, j, i);
            else
                for (int r = 0; r < size; r++)
                    want += value(r, j, i);
            if (get(sp[j].dtype, out[j], i) != want) {
                ITEST_FAIL("skew: job %d (%s of %zu, priority %d): element %zu = %g, expected %g",
                           j, glucx_coll_name(sp[j].coll), sp[j].count, sp[j].priority, i,
                           get(sp[j].dtype, out[j], i), want);
                break;
            }
        }
        free(in[j]);
        free(out[j]);
    }
}

/* ---- 2./3. orders decided on the collective thread ---- */

#define ORDER_MAX 6

typedef struct order_part {
    glucx_comm_t *comm;
    int n;                   /**< collectives the trigger's callback starts */
    int priority[ORDER_MAX]; /**< in start order */
    size_t count[ORDER_MAX]; /**< int32 elements */
    size_t chunk_bytes[ORDER_MAX];
    int32_t *buf[ORDER_MAX];
    itest_slot_t slots[ORDER_MAX];
    int64_t trigger;
    itest_slot_t trigger_slot;
    glucx_status_t start_status;
} order_part_t;

/* The trigger's completion: start the part's collectives, all before the next decision. */
static void order_start(void *arg, glucx_status_t status, const char *error)
{
    order_part_t *p = arg;
    itest_slot_done(&p->trigger_slot, status, error);
    itest_slots_reset();
    for (int k = 0; k < p->n && status == GLUCX_OK; k++) {
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = GLUCX_IN_PLACE,
                               .recvbuf = p->buf[k],
                               .count = p->count[k],
                               .dtype = GLUCX_DTYPE_I32,
                               .op = GLUCX_OP_SUM};
        glucx_coll_opts_t o = itest_prio_opts(p->priority[k], p->chunk_bytes[k]);
        glucx_status_t st = glucx_coll_start_cb(p->comm, &a, &o, itest_slot_done, &p->slots[k]);
        if (st != GLUCX_OK)
            p->start_status = st;
    }
}

/* Run one ordering part; @p want[k] is collective k's expected completion position. */
static void run_order(glucx_comm_t *comm, int rank, int size, const char *what, int n,
                      const int *priority, const size_t *count, const size_t *chunk_bytes,
                      const int *want)
{
    static order_part_t p;
    memset(&p, 0, sizeof(p));
    p.comm = comm;
    p.n = n;
    p.start_status = GLUCX_OK;
    for (int k = 0; k < n; k++) {
        p.priority[k] = priority[k];
        p.count[k] = count[k];
        p.chunk_bytes[k] = chunk_bytes[k];
        p.buf[k] = malloc(count[k] * 4);
        if (p.buf[k] == NULL) {
            ITEST_FAIL("%s: out of memory", what);
            return;
        }
        for (size_t i = 0; i < count[k]; i++)
            p.buf[k][i] = value(rank, k, i);
    }
    p.trigger = rank;
    glucx_coll_args_t t = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = &p.trigger,
                           .count = 1,
                           .dtype = GLUCX_DTYPE_I64,
                           .op = GLUCX_OP_SUM};
    if (ITEST_STATUS(glucx_coll_start_cb(comm, &t, NULL, order_start, &p), GLUCX_OK, "%s: trigger",
                     what) != 0 ||
        itest_wait_slots(&p.trigger_slot, 1, WAIT_MS, what) != 0 ||
        itest_wait_slots(p.slots, n, WAIT_MS, what) != 0)
        return;
    ITEST_CHECK(p.start_status == GLUCX_OK, "%s: start from the callback: %s", what,
                glucx_status_string(p.start_status));
    char got[64] = "", exp[64] = "";
    for (int k = 0; k < n; k++) {
        ITEST_STATUS(p.slots[k].status, GLUCX_OK, "%s: collective %d (%s)", what, k,
                     p.slots[k].text);
        snprintf(got + strlen(got), sizeof(got) - strlen(got), " %d",
                 atomic_load(&p.slots[k].order));
        snprintf(exp + strlen(exp), sizeof(exp) - strlen(exp), " %d", want[k]);
    }
    ITEST_CHECK(strcmp(got, exp) == 0,
                "%s: completion positions of the collectives in start order:%s, expected%s", what,
                got, exp);
    for (int k = 0; k < n; k++) {
        for (size_t i = 0; i < count[k]; i++) {
            int64_t w = 0;
            for (int r = 0; r < size; r++)
                w += value(r, k, i);
            if (p.buf[k][i] != w) {
                ITEST_FAIL("%s: collective %d element %zu = %d, expected %lld", what, k, i,
                           p.buf[k][i], (long long)w);
                break;
            }
        }
        free(p.buf[k]);
    }
}

static void part_order(glucx_comm_t *comm, int rank, int size)
{
    const size_t count[2] = {(size_t)1 << 18, 16}, chunk[2] = {32 << 10, 0};
    const int prio[2] = {0, 9}, want[2] = {2, 1};
    run_order(comm, rank, size, "order (L priority 0, H priority 9)", 2, prio, count, chunk, want);
    const int same[2] = {3, 3}, fifo[2] = {1, 2};
    run_order(comm, rank, size, "order (equal priorities)", 2, same, count, chunk, fifo);
}

static void part_starvation(glucx_comm_t *comm, int rank, int size)
{
    /* L: 64 elements in chunks of 16; H1..H5: 1024 elements in chunks of 16 (64 chunks) */
    const int prio[6] = {0, 5, 5, 5, 5, 5}, want[6] = {5, 1, 2, 3, 4, 6};
    const size_t count[6] = {64, 1024, 1024, 1024, 1024, 1024};
    const size_t chunk[6] = {64, 64, 64, 64, 64, 64};
    run_order(comm, rank, size, "starvation guard", 6, prio, count, chunk, want);
}

/* ---- 4. different priorities ---- */
static void part_mismatch(glucx_context_t *ctx, glucx_store_t *store, int rank, int size)
{
    glucx_comm_t *comm = NULL;
    if (itest_comm(ctx, store, rank, size, "priority-mismatch", glucx_test_ms(30000), &comm) !=
        GLUCX_OK)
        return;
    static int32_t buf[4096];
    itest_slot_t s;
    memset(&s, 0, sizeof(s));
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = buf,
                           .count = 4096,
                           .dtype = GLUCX_DTYPE_I32,
                           .op = GLUCX_OP_SUM};
    glucx_coll_opts_t o = itest_prio_opts(rank == 0 ? 1 : 2, 1024);
    const int64_t t0 = itest_now_ns();
    if (ITEST_STATUS(glucx_coll_start_cb(comm, &a, &o, itest_slot_done, &s), GLUCX_OK,
                     "mismatch: start") == 0 &&
        itest_wait_slots(&s, 1, WAIT_MS, "mismatch") == 0) {
        ITEST_STATUS(s.status, GLUCX_ERR_MISMATCH, "mismatch: status (text: %s)", s.text);
        ITEST_CHECK(strstr(s.text, "priorit") != NULL && strstr(s.text, "from 1 to 2") != NULL,
                    "mismatch: text \"%s\"", s.text);
        ITEST_CHECK((itest_now_ns() - t0) / 1000000 < glucx_test_ms(30000) / 4,
                    "mismatch found only after %lld ms",
                    (long long)((itest_now_ns() - t0) / 1000000));
    }
    glucx_comm_destroy(comm);
}

/* ---- 5. invalid ---- */
static void part_invalid(glucx_comm_t *comm)
{
    int32_t buf[4] = {0};
    itest_slot_t s;
    memset(&s, 0, sizeof(s));
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = buf,
                           .count = 4,
                           .dtype = GLUCX_DTYPE_I32,
                           .op = GLUCX_OP_SUM};
    glucx_coll_opts_t o = itest_prio_opts(1, 0);
    o.field_mask |= GLUCX_COLL_OPT_CHUNK;
    ITEST_STATUS(glucx_coll_start_cb(comm, &a, &o, itest_slot_done, &s), GLUCX_ERR_INVALID_ARG,
                 "chunk_bytes 0");
    ITEST_CHECK(strstr(glucx_last_error(), "chunk_bytes") != NULL, "text: %s", glucx_last_error());
    itest_sleep_ms(20);
    ITEST_CHECK(atomic_load(&s.calls) == 0, "a refused call ran its callback");
}

/* ---- 6. destroy with scheduled collectives outstanding ---- */
static void part_destroy(const itest_env_t *env, glucx_context_t *ctx, glucx_store_t *store,
                         int rank, int size)
{
    const glucx_coll_opts_t o0 = itest_prio_opts(0, 1024), o1 = itest_prio_opts(1, 1024);
    const glucx_coll_opts_t *const opts[2] = {&o0, &o1};
    itest_destroy_outstanding(env, ctx, store, rank, size, "priority-destroy", opts);
}

int itest_case_priority(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "priority", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return 1;
    part_skew(comm, rank, size);
    part_order(comm, rank, size);
    part_starvation(comm, rank, size);
    part_invalid(comm);
    glucx_comm_destroy(comm);
    part_mismatch(ctx, store, rank, size);
    part_destroy(env, ctx, store, rank, size);
    itest_close(ctx, store, NULL);
    return itest_failures() != 0;
}
