/*
 * Integration cases that try to break collectives scheduled by priority (glucx_coll_start with
 * GLUCX_COLL_OPT_PRIORITY, issue 18 item 1). Every expected value is computed here from
 * (rank, job, index); every wait is bounded.
 *
 * "priority_kinds": every kind of collective scheduled at once (counts 0, 1 and odd; chunk
 *    sizes smaller than an element or not a multiple of it; in-place allreduce and reduce,
 *    reduce with a NULL recvbuf off the root, broadcast from a non-zero root; INT_MIN/INT_MAX
 *    priorities), then more than the 16-slot window outstanding with jobs asking for > 64
 *    chunks and fences among them, blocking glucx_coll() calls interleaved, starts from two
 *    threads in an agreed order, an INT_MIN/INT_MAX/0 ordering check, and a destroy while
 *    scheduled jobs are still queued and running.
 * "priority_overlap": an allreduce whose recvbuf overlaps its sendbuf (recvbuf = sendbuf + 1
 *    element; glucx_coll() works from a copy of the input), scheduled in chunks.
 * "priority_chunk_mismatch": rank 0 passes another chunk_bytes (so another number of chunks);
 *    documented: "different chunk sizes [fail] as different counts do" (GLUCX_ERR_MISMATCH on
 *    every rank).
 * "priority_head_mismatch": the only collective is started with a priority on every rank but
 *    rank 0 (documented: GLUCX_ERR_MISMATCH "or started without a priority").
 * "priority_wrap": with the collective thread held, 64-chunk scheduled allreduces are started
 *    until they would hold more than GLUCX_COLL_SEQS_OUTSTANDING_MAX sequence numbers: the start
 *    over the limit is refused (GLUCX_ERR_UNSUPPORTED) on every rank alike; the others complete
 *    with exact values, and a blocking allreduce after them is not disturbed (before the limit,
 *    ~1010 such jobs wrapped the 16-bit tags and a blocking call took a chunk's message).
 * "priority_bitwise": a float allreduce scheduled in 2 KiB chunks equals, bitwise, glucx_coll()
 *    on each chunk's range (the whole vector in one call may pick another algorithm).
 * The overlap, both mismatch cases and wrap failed on the commit they were written against
 * (wrong data, timeouts instead of mismatches, silently wrong data).
 * "priority_killed": rank 1 is SIGKILLed while scheduled collectives are queued: every survivor's
 *    collectives end with an error within the communicator timeout (parent's verdict).
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

#define WAIT_MS glucx_test_ms(120000)

/* Rank r's element i of job j: small integers, exact in every dtype used. */
static int64_t val(int r, int j, size_t i)
{
    return (int64_t)((r * 37 + j * 11 + (int)(i % 97)) % 500) - 100;
}

/* ---- priority_kinds, part 1: every kind ---- */

#define KMAX 64

typedef struct kjob {
    glucx_coll_args_t a;
    int32_t *in, *out;
    size_t counts[ITEST_MAX_RANKS], displs[ITEST_MAX_RANKS];
    size_t scounts[ITEST_MAX_RANKS], sdispls[ITEST_MAX_RANKS];
    size_t out_elems;
    glucx_request_t *req;
    int prio;
    size_t chunk;
} kjob_t;

/* alltoallv: elements rank a sends to rank b in job j */
static size_t a2av(int a, int b, int j)
{
    return (size_t)((a + 2 * b + j) % 3);
}

static void kjob_setup(kjob_t *k, int j, glucx_coll_t coll, size_t c, int rank, int size)
{
    memset(k, 0, sizeof(*k));
    static const size_t chunks[] = {1, 3, 5, 6, 7, 4096};
    static const int prios[] = {INT_MIN, INT_MAX, 0, -1, 1, INT_MAX, INT_MIN + 1};
    k->prio = prios[j % 7];
    k->chunk = chunks[j % 6];
    size_t in_elems = c, out_elems = c;
    glucx_coll_args_t *a = &k->a;
    a->coll = coll;
    a->count = c;
    a->dtype = GLUCX_DTYPE_I32;
    a->op = GLUCX_OP_SUM;
    a->root = 0;
    switch (coll) {
    case GLUCX_COLL_ALLGATHER:
        out_elems = size * c;
        break;
    case GLUCX_COLL_ALLGATHERV: {
        size_t off = 0;
        for (int r = size - 1; r >= 0; r--) { /* blocks in reverse rank order */
            k->counts[r] = c + (size_t)r;
            k->displs[r] = off;
            off += k->counts[r] + 1;
        }
        in_elems = k->counts[rank];
        out_elems = off;
        a->counts = k->counts;
        a->displs = k->displs;
        break;
    }
    case GLUCX_COLL_REDUCE_SCATTER:
        in_elems = size * c;
        break;
    case GLUCX_COLL_ALLTOALL:
        in_elems = out_elems = size * c;
        break;
    case GLUCX_COLL_ALLTOALLV: {
        size_t so = 0, ro = 0;
        for (int p = 0; p < size; p++) {
            k->scounts[p] = a2av(rank, p, j);
            k->sdispls[p] = so;
            so += k->scounts[p];
            k->counts[p] = a2av(p, rank, j);
            k->displs[p] = ro;
            ro += k->counts[p];
        }
        in_elems = so;
        out_elems = ro;
        a->counts = k->counts;
        a->displs = k->displs;
        a->send_counts = k->scounts;
        a->send_displs = k->sdispls;
        break;
    }
    case GLUCX_COLL_BROADCAST:
        a->root = size - 1;
        break;
    case GLUCX_COLL_REDUCE:
        a->root = 1 % size;
        break;
    case GLUCX_COLL_GATHER:
        a->root = size - 1;
        out_elems = size * c;
        break;
    case GLUCX_COLL_SCATTER:
        a->root = 1 % size;
        in_elems = size * c;
        break;
    case GLUCX_COLL_BARRIER:
        in_elems = out_elems = 0;
        break;
    default:
        break;
    }
    k->in = malloc((in_elems + 1) * 4);
    k->out = malloc((out_elems + 1) * 4);
    k->out_elems = out_elems;
    for (size_t i = 0; i < in_elems; i++)
        k->in[i] = (int32_t)val(rank, j, i);
    for (size_t i = 0; i < out_elems; i++)
        k->out[i] = -999999;
    a->sendbuf = k->in;
    a->recvbuf = k->out;
    if (coll == GLUCX_COLL_ALLREDUCE && j % 2 == 0) { /* in place */
        memcpy(k->out, k->in, c * 4);
        a->sendbuf = GLUCX_IN_PLACE;
    }
    if (coll == GLUCX_COLL_REDUCE) {
        if (rank == a->root) {
            memcpy(k->out, k->in, c * 4);
            a->sendbuf = GLUCX_IN_PLACE;
        } else {
            a->recvbuf = NULL;
        }
    }
    if (coll == GLUCX_COLL_BROADCAST) {
        a->sendbuf = NULL;
        if (rank == a->root)
            memcpy(k->out, k->in, c * 4);
    }
    if ((coll == GLUCX_COLL_GATHER && rank != a->root) ||
        (coll == GLUCX_COLL_SCATTER && rank != a->root)) {
        if (coll == GLUCX_COLL_GATHER)
            a->recvbuf = NULL;
        else
            a->sendbuf = NULL;
    }
}

/* Check job k (number j) on this rank; returns 0 when right. */
static int kjob_check(const kjob_t *k, int j, int rank, int size)
{
    const glucx_coll_args_t *a = &k->a;
    const size_t c = a->count;
    char what[96];
    snprintf(what, sizeof(what), "kinds: job %d (%s of %zu, chunk %zu, priority %d)", j,
             glucx_coll_name(a->coll), c, k->chunk, k->prio);
    int32_t *want = malloc((k->out_elems + 1) * 4);
    size_t n = 0; /* elements to compare */
    switch (a->coll) {
    case GLUCX_COLL_ALLREDUCE:
    case GLUCX_COLL_REDUCE:
        if (a->coll == GLUCX_COLL_REDUCE && rank != a->root)
            break;
        n = c;
        for (size_t i = 0; i < c; i++) {
            int64_t s = 0;
            for (int r = 0; r < size; r++)
                s += val(r, j, i);
            want[i] = (int32_t)s;
        }
        break;
    case GLUCX_COLL_BROADCAST:
        n = c;
        for (size_t i = 0; i < c; i++)
            want[i] = (int32_t)val(a->root, j, i);
        break;
    case GLUCX_COLL_ALLGATHER:
    case GLUCX_COLL_GATHER:
        if (a->coll == GLUCX_COLL_GATHER && rank != a->root)
            break;
        n = size * c;
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < c; i++)
                want[r * c + i] = (int32_t)val(r, j, i);
        break;
    case GLUCX_COLL_ALLGATHERV:
        n = k->out_elems;
        for (size_t i = 0; i < n; i++)
            want[i] = -999999; /* gaps untouched */
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < k->counts[r]; i++)
                want[k->displs[r] + i] = (int32_t)val(r, j, i);
        break;
    case GLUCX_COLL_REDUCE_SCATTER:
        n = c;
        for (size_t i = 0; i < c; i++) {
            int64_t s = 0;
            for (int r = 0; r < size; r++)
                s += val(r, j, rank * c + i);
            want[i] = (int32_t)s;
        }
        break;
    case GLUCX_COLL_ALLTOALL:
        n = size * c;
        for (int p = 0; p < size; p++)
            for (size_t i = 0; i < c; i++) /* p's block for me starts at my rank * c */
                want[p * c + i] = (int32_t)val(p, j, rank * c + i);
        break;
    case GLUCX_COLL_ALLTOALLV:
        n = k->out_elems;
        for (int p = 0; p < size; p++) {
            size_t off = 0; /* where p's block for me starts in p's sendbuf */
            for (int q = 0; q < rank; q++)
                off += a2av(p, q, j);
            for (size_t i = 0; i < k->counts[p]; i++)
                want[k->displs[p] + i] = (int32_t)val(p, j, off + i);
        }
        break;
    case GLUCX_COLL_SCATTER:
        n = c;
        for (size_t i = 0; i < c; i++)
            want[i] = (int32_t)val(a->root, j, rank * c + i);
        break;
    default:
        break;
    }
    int rc = n > 0 ? itest_compare(what, GLUCX_DTYPE_I32, k->out, want, n) : 0;
    free(want);
    return rc;
}

static void part_kinds(glucx_comm_t *comm, int rank, int size)
{
    static const glucx_coll_t kinds[] = {
        GLUCX_COLL_ALLREDUCE,      GLUCX_COLL_ALLGATHER, GLUCX_COLL_ALLGATHERV,
        GLUCX_COLL_REDUCE_SCATTER, GLUCX_COLL_ALLTOALL,  GLUCX_COLL_ALLTOALLV,
        GLUCX_COLL_BROADCAST,      GLUCX_COLL_REDUCE,    GLUCX_COLL_GATHER,
        GLUCX_COLL_SCATTER,        GLUCX_COLL_BARRIER};
    static const size_t counts[] = {0, 1, 7, 301};
    enum { NK = sizeof(kinds) / sizeof(kinds[0]), NC = sizeof(counts) / sizeof(counts[0]) };
    static kjob_t jobs[NK * NC];
    int nj = 0;
    for (int ci = 0; ci < NC; ci++)
        for (int ki = 0; ki < NK; ki++, nj++)
            kjob_setup(&jobs[nj], nj, kinds[ki], counts[ci], rank, size);
    for (int j = 0; j < nj; j++) {
        glucx_coll_opts_t o = itest_prio_opts(jobs[j].prio, jobs[j].chunk);
        ITEST_STATUS(glucx_coll_start(comm, &jobs[j].a, &o, &jobs[j].req), GLUCX_OK,
                     "kinds: start job %d (%s)", j, glucx_coll_name(jobs[j].a.coll));
    }
    for (int j = 0; j < nj; j++) {
        if (jobs[j].req != NULL) {
            ITEST_STATUS(glucx_request_wait(jobs[j].req, WAIT_MS), GLUCX_OK,
                         "kinds: wait job %d (%s)", j, glucx_coll_name(jobs[j].a.coll));
            glucx_request_free(jobs[j].req);
        }
        kjob_check(&jobs[j], j, rank, size);
        free(jobs[j].in);
        free(jobs[j].out);
    }
}

/* ---- priority_kinds, part 2: > 16 outstanding, > 64 chunks, fences, blocking calls ---- */

#define WJOBS 40

static void part_window(glucx_comm_t *comm, int rank, int size)
{
    int64_t *buf[WJOBS];
    glucx_request_t *req[WJOBS];
    size_t count[WJOBS];
    int64_t blk[8][33];
    for (int j = 0; j < WJOBS; j++) {
        count[j] =
            j % 5 == 0 ? 1000 : (size_t)(3 + j * 7); /* 1000 with 8-byte chunks: 1000 asked */
        buf[j] = malloc(count[j] * 8);
        for (size_t i = 0; i < count[j]; i++)
            buf[j][i] = val(rank, j, i);
    }
    int nb = 0;
    for (int j = 0; j < WJOBS; j++) {
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = GLUCX_IN_PLACE,
                               .recvbuf = buf[j],
                               .count = count[j],
                               .dtype = GLUCX_DTYPE_I64,
                               .op = GLUCX_OP_SUM};
        const int prio = j % 3 == 0 ? INT_MAX : j % 3 == 1 ? INT_MIN : j;
        glucx_coll_opts_t o = itest_prio_opts(prio, j % 2 ? 8 : 5); /* 5: not a multiple of 8 */
        ITEST_STATUS(glucx_coll_start(comm, &a, j % 9 == 4 ? NULL : &o, &req[j]), GLUCX_OK,
                     "window: start %d", j);
        if (j % 6 == 5 && nb < 8) { /* a blocking collective while the queue is full */
            for (int i = 0; i < 33; i++)
                blk[nb][i] = val(rank, 100 + nb, (size_t)i);
            ITEST_STATUS(glucx_allreduce(comm, GLUCX_IN_PLACE, blk[nb], 33, GLUCX_DTYPE_I64,
                                         GLUCX_OP_SUM, NULL),
                         GLUCX_OK, "window: blocking allreduce %d", nb);
            nb++;
        }
    }
    for (int j = WJOBS - 1; j >= 0; j--) {
        ITEST_STATUS(glucx_request_wait(req[j], WAIT_MS), GLUCX_OK, "window: wait %d", j);
        glucx_request_free(req[j]);
    }
    for (int j = 0; j < WJOBS; j++) {
        for (size_t i = 0; i < count[j]; i++) {
            int64_t s = 0;
            for (int r = 0; r < size; r++)
                s += val(r, j, i);
            if (buf[j][i] != s) {
                ITEST_FAIL("window: job %d (%zu elements) element %zu = %lld, expected %lld", j,
                           count[j], i, (long long)buf[j][i], (long long)s);
                break;
            }
        }
        free(buf[j]);
    }
    for (int b = 0; b < nb; b++)
        for (int i = 0; i < 33; i++) {
            int64_t s = 0;
            for (int r = 0; r < size; r++)
                s += val(r, 100 + b, (size_t)i);
            if (blk[b][i] != s) {
                ITEST_FAIL("window: blocking %d element %d = %lld, expected %lld", b, i,
                           (long long)blk[b][i], (long long)s);
                break;
            }
        }
}

/* ---- priority_kinds, part 3: two threads start in an agreed order ---- */

#define TJOBS 24

typedef struct tshared {
    glucx_comm_t *comm;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int turn;
    int32_t *buf[TJOBS];
    size_t count[TJOBS];
    itest_slot_t slots[TJOBS];
    glucx_request_t *req[TJOBS];
    int rank;
} tshared_t;

typedef struct targ {
    tshared_t *s;
    int parity;
} targ_t;

static void *starter(void *p)
{
    targ_t *t = p;
    tshared_t *s = t->s;
    for (int j = t->parity; j < TJOBS; j += 2) {
        pthread_mutex_lock(&s->lock);
        while (s->turn != j)
            pthread_cond_wait(&s->cond, &s->lock);
        pthread_mutex_unlock(&s->lock);
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = GLUCX_IN_PLACE,
                               .recvbuf = s->buf[j],
                               .count = s->count[j],
                               .dtype = GLUCX_DTYPE_I32,
                               .op = GLUCX_OP_SUM};
        glucx_coll_opts_t o = itest_prio_opts(j % 4, 256);
        const glucx_coll_opts_t *op = (t->parity == 1 && j % 3 == 0) ? NULL : &o;
        glucx_status_t st;
        if (j % 2)
            st = glucx_coll_start_cb(s->comm, &a, op, itest_slot_done, &s->slots[j]);
        else
            st = glucx_coll_start(s->comm, &a, op, &s->req[j]);
        ITEST_STATUS(st, GLUCX_OK, "threads: start %d", j);
        pthread_mutex_lock(&s->lock);
        s->turn++;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

static void part_threads(glucx_comm_t *comm, int rank, int size)
{
    static tshared_t s;
    memset(&s, 0, sizeof(s));
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.cond, NULL);
    s.comm = comm;
    s.rank = rank;
    for (int j = 0; j < TJOBS; j++) {
        s.count[j] = 50 + (size_t)j * 333;
        s.buf[j] = malloc(s.count[j] * 4);
        for (size_t i = 0; i < s.count[j]; i++)
            s.buf[j][i] = (int32_t)val(rank, j, i);
    }
    targ_t ta[2] = {{&s, 0}, {&s, 1}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, starter, &ta[t]);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    for (int j = 0; j < TJOBS; j++) {
        if (j % 2) {
            if (itest_wait_slots(&s.slots[j], 1, WAIT_MS, "threads") == 0)
                ITEST_STATUS(s.slots[j].status, GLUCX_OK, "threads: job %d (%s)", j,
                             s.slots[j].text);
        } else if (s.req[j] != NULL) {
            ITEST_STATUS(glucx_request_wait(s.req[j], WAIT_MS), GLUCX_OK, "threads: wait %d", j);
            glucx_request_free(s.req[j]);
        }
    }
    for (int j = 0; j < TJOBS; j++) {
        for (size_t i = 0; i < s.count[j]; i++) {
            int64_t w = 0;
            for (int r = 0; r < size; r++)
                w += val(r, j, i);
            if (s.buf[j][i] != w) {
                ITEST_FAIL("threads: job %d element %zu = %d, expected %lld", j, i, s.buf[j][i],
                           (long long)w);
                break;
            }
        }
        free(s.buf[j]);
    }
}

/* ---- priority_kinds, part 4: INT_MIN / 0 / INT_MAX order, decided on the collective thread ----
 */

typedef struct ext {
    glucx_comm_t *comm;
    int32_t *buf[3];
    size_t count[3];
    int prio[3];
    itest_slot_t slots[3];
    itest_slot_t trig_slot;
    int64_t trig;
    glucx_status_t start_status;
} ext_t;

static void ext_start(void *arg, glucx_status_t status, const char *error)
{
    ext_t *e = arg;
    itest_slot_done(&e->trig_slot, status, error);
    itest_slots_reset();
    for (int k = 0; k < 3 && status == GLUCX_OK; k++) {
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = GLUCX_IN_PLACE,
                               .recvbuf = e->buf[k],
                               .count = e->count[k],
                               .dtype = GLUCX_DTYPE_I32,
                               .op = GLUCX_OP_SUM};
        glucx_coll_opts_t o = itest_prio_opts(e->prio[k], 1024);
        glucx_status_t st = glucx_coll_start_cb(e->comm, &a, &o, itest_slot_done, &e->slots[k]);
        if (st != GLUCX_OK)
            e->start_status = st;
    }
}

static void part_extremes(glucx_comm_t *comm, int rank, int size)
{
    static ext_t e;
    memset(&e, 0, sizeof(e));
    e.comm = comm;
    const int prio[3] = {INT_MIN, 0, INT_MAX};
    const size_t count[3] = {1 << 16, 16, 16};
    const int want[3] = {3, 2, 1};
    for (int k = 0; k < 3; k++) {
        e.prio[k] = prio[k];
        e.count[k] = count[k];
        e.buf[k] = malloc(count[k] * 4);
        for (size_t i = 0; i < count[k]; i++)
            e.buf[k][i] = (int32_t)val(rank, k, i);
    }
    glucx_coll_args_t t = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = &e.trig,
                           .count = 1,
                           .dtype = GLUCX_DTYPE_I64,
                           .op = GLUCX_OP_SUM};
    if (ITEST_STATUS(glucx_coll_start_cb(comm, &t, NULL, ext_start, &e), GLUCX_OK, "extremes") ==
            0 &&
        itest_wait_slots(&e.trig_slot, 1, WAIT_MS, "extremes") == 0 &&
        itest_wait_slots(e.slots, 3, WAIT_MS, "extremes") == 0) {
        for (int k = 0; k < 3; k++) {
            ITEST_STATUS(e.slots[k].status, GLUCX_OK, "extremes: %d (%s)", k, e.slots[k].text);
            ITEST_CHECK(atomic_load(&e.slots[k].order) == want[k],
                        "extremes: priority %d completed at position %d, expected %d", prio[k],
                        atomic_load(&e.slots[k].order), want[k]);
            for (size_t i = 0; i < count[k]; i++) {
                int64_t w = 0;
                for (int r = 0; r < size; r++)
                    w += val(r, k, i);
                if (e.buf[k][i] != w) {
                    ITEST_FAIL("extremes: %d element %zu = %d, expected %lld", k, i, e.buf[k][i],
                               (long long)w);
                    break;
                }
            }
        }
    }
    for (int k = 0; k < 3; k++)
        free(e.buf[k]);
}

/* ---- priority_kinds, part 5: destroy with scheduled collectives queued and running ---- */

#define DJOBS 20

static void part_destroy(glucx_context_t *ctx, glucx_store_t *store, int rank, int size)
{
    glucx_comm_t *comm = NULL;
    if (itest_comm(ctx, store, rank, size, "prio-break-destroy", glucx_test_ms(20000), &comm) !=
        GLUCX_OK)
        return;
    static itest_slot_t slots[DJOBS];
    static int32_t bufs[DJOBS][4096];
    memset(slots, 0, sizeof(slots));
    for (int j = 0; j < DJOBS; j++) {
        for (int i = 0; i < 4096; i++)
            bufs[j][i] = rank;
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = GLUCX_IN_PLACE,
                               .recvbuf = bufs[j],
                               .count = 4096,
                               .dtype = GLUCX_DTYPE_I32,
                               .op = GLUCX_OP_SUM};
        glucx_coll_opts_t o = itest_prio_opts(j % 5, 256);
        ITEST_STATUS(glucx_coll_start_cb(comm, &a, &o, itest_slot_done, &slots[j]), GLUCX_OK,
                     "destroy: start %d", j);
    }
    /* let the first finish somewhere (bounded), then destroy with the rest queued */
    const int64_t end = itest_now_ns() + glucx_test_ms(20000) * 1000000;
    while (atomic_load(&slots[0].calls) == 0 && itest_now_ns() < end)
        itest_sleep_ms(1);
    const int64_t t0 = itest_now_ns();
    glucx_comm_destroy(comm);
    const int64_t ms = (itest_now_ns() - t0) / 1000000;
    ITEST_CHECK(ms < glucx_test_ms(30000), "destroy took %lld ms", (long long)ms);
    int ok = 0, err = 0;
    for (int j = 0; j < DJOBS; j++) {
        const int calls = atomic_load(&slots[j].calls);
        ITEST_CHECK(calls == 1, "destroy: job %d's callback ran %d times", j, calls);
        if (calls != 1)
            continue;
        if (slots[j].status == GLUCX_OK) {
            ok++;
            for (int i = 0; i < 4096; i++)
                if (bufs[j][i] != size * (size - 1) / 2) {
                    ITEST_FAIL("destroy: job %d completed OK with element %d = %d", j, i,
                               bufs[j][i]);
                    break;
                }
        } else {
            err++;
            ITEST_CHECK(slots[j].text[0] != 0, "destroy: job %d error without a text", j);
        }
    }
    itest_note("destroy: %d ended OK, %d with errors", ok, err);
}

int itest_case_priority_kinds(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "prio-break", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return 1;
    part_kinds(comm, rank, size);
    part_window(comm, rank, size);
    part_threads(comm, rank, size);
    part_extremes(comm, rank, size);
    glucx_comm_destroy(comm);
    part_destroy(ctx, store, rank, size);
    itest_close(ctx, store, NULL);
    return itest_failures() != 0;
}

/* ---- priority_overlap ---- */

int itest_case_priority_overlap(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "prio-overlap", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return 1;
    enum { N = 64 };
    for (int sched = 0; sched < 2; sched++) {
        int32_t mem[N + 1];
        for (int i = 0; i < N; i++)
            mem[i] = (int32_t)val(rank, 0, (size_t)i);
        mem[N] = 0;
        /* out of place, recvbuf one element after sendbuf: glucx_coll works from a copy */
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = mem,
                               .recvbuf = mem + 1,
                               .count = N,
                               .dtype = GLUCX_DTYPE_I32,
                               .op = GLUCX_OP_SUM};
        glucx_coll_opts_t o = itest_prio_opts(1, 16); /* 4 elements per chunk: 16 chunks */
        glucx_request_t *req = NULL;
        if (ITEST_STATUS(glucx_coll_start(comm, &a, sched ? &o : NULL, &req), GLUCX_OK,
                         "overlap: start") != 0)
            break;
        ITEST_STATUS(glucx_request_wait(req, WAIT_MS), GLUCX_OK, "overlap: wait");
        glucx_request_free(req);
        for (int i = 0; i < N; i++) {
            int64_t w = 0;
            for (int r = 0; r < size; r++)
                w += val(r, 0, (size_t)i);
            if (mem[i + 1] != w) {
                ITEST_FAIL("overlap (%s): element %d = %d, expected %lld",
                           sched ? "scheduled, 16 chunks" : "unscheduled", i, mem[i + 1],
                           (long long)w);
                break;
            }
        }
    }
    itest_close(ctx, store, comm);
    return itest_failures() != 0;
}

/* ---- priority_chunk_mismatch / priority_head_mismatch ---- */

#define MISMATCH_TIMEOUT_MS 8000

static void expect_mismatch(glucx_comm_t *comm, const glucx_coll_args_t *a,
                            const glucx_coll_opts_t *o, const char *what)
{
    itest_slot_t s;
    memset(&s, 0, sizeof(s));
    const int64_t t0 = itest_now_ns();
    if (ITEST_STATUS(glucx_coll_start_cb(comm, a, o, itest_slot_done, &s), GLUCX_OK, "%s: start",
                     what) != 0 ||
        itest_wait_slots(&s, 1, WAIT_MS, what) != 0)
        return;
    const long long ms = (long long)((itest_now_ns() - t0) / 1000000);
    ITEST_STATUS(s.status, GLUCX_ERR_MISMATCH,
                 "%s: status after %lld ms (communicator timeout "
                 "%lld ms; text: %s)",
                 what, ms, (long long)glucx_test_ms(MISMATCH_TIMEOUT_MS), s.text);
}

int itest_case_priority_chunk_mismatch(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "prio-chunk-mismatch", glucx_test_ms(MISMATCH_TIMEOUT_MS), &ctx,
                   &store, &comm) != GLUCX_OK)
        return 1;
    static int32_t buf[1024];
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = buf,
                           .count = 1024,
                           .dtype = GLUCX_DTYPE_I32,
                           .op = GLUCX_OP_SUM};
    /* 64 chunks of 16 elements on rank 0, 32 chunks of 32 elements elsewhere */
    glucx_coll_opts_t o = itest_prio_opts(3, rank == 0 ? 64 : 128);
    expect_mismatch(comm, &a, &o, "chunk_bytes 64 on rank 0, 128 elsewhere");
    itest_close(ctx, store, comm);
    return itest_failures() != 0;
}

int itest_case_priority_head_mismatch(const itest_env_t *env, int rank, int size)
{
    (void)size;
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "prio-head-mismatch", glucx_test_ms(MISMATCH_TIMEOUT_MS), &ctx,
                   &store, &comm) != GLUCX_OK)
        return 1;
    static int32_t buf[1024];
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = buf,
                           .count = 1024,
                           .dtype = GLUCX_DTYPE_I32,
                           .op = GLUCX_OP_SUM};
    glucx_coll_opts_t o = itest_prio_opts(3, 1024);
    expect_mismatch(comm, &a, rank == 0 ? NULL : &o, "started without a priority on rank 0 only");
    itest_close(ctx, store, comm);
    return itest_failures() != 0;
}

/* ---- priority_wrap ---- */

/* The collective thread is held inside the first collective's callback until every start is
 * done, so the sequence numbers held on this rank only grow: 1 + 65 j. */
static atomic_int wrap_release;

static void wrap_hold(void *arg, glucx_status_t status, const char *error)
{
    itest_slot_done(arg, status, error);
    const int64_t end = itest_now_ns() + (int64_t)WAIT_MS * 1000000;
    while (!atomic_load(&wrap_release) && itest_now_ns() < end)
        itest_sleep_ms(1);
}

#define WRAP_JOBS 300 /* x 65 sequence numbers > GLUCX_COLL_SEQS_OUTSTANDING_MAX */

int itest_case_priority_wrap(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "prio-wrap", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return 1;
    static int32_t bufs[WRAP_JOBS][64];
    static glucx_request_t *req[WRAP_JOBS];
    int64_t first = rank;
    itest_slot_t hold;
    memset(&hold, 0, sizeof(hold));
    glucx_coll_args_t f = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = &first,
                           .count = 1,
                           .dtype = GLUCX_DTYPE_I64,
                           .op = GLUCX_OP_SUM};
    ITEST_STATUS(glucx_coll_start_cb(comm, &f, NULL, wrap_hold, &hold), GLUCX_OK, "wrap: hold");
    /* 1 + 65 j <= 16384: jobs 0..251 fit, job 252 is refused on every rank alike */
    const int fit = (int)((GLUCX_COLL_SEQS_OUTSTANDING_MAX - 1) / 65);
    int started = 0;
    for (int j = 0; j < WRAP_JOBS; j++) {
        for (int i = 0; i < 64; i++)
            bufs[j][i] = (int32_t)val(rank, j % 50, (size_t)i);
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = GLUCX_IN_PLACE,
                               .recvbuf = bufs[j],
                               .count = 64,
                               .dtype = GLUCX_DTYPE_I32,
                               .op = GLUCX_OP_SUM};
        glucx_coll_opts_t o = itest_prio_opts(0, 4); /* 64 chunks of one element: 65 seqs */
        req[j] = NULL;
        glucx_status_t st = glucx_coll_start(comm, &a, &o, &req[j]);
        if (j < fit) {
            if (ITEST_STATUS(st, GLUCX_OK, "wrap: start %d", j) != 0)
                break;
            started++;
            continue;
        }
        ITEST_STATUS(st, GLUCX_ERR_UNSUPPORTED, "wrap: start %d (over the limit)", j);
        ITEST_CHECK(strstr(glucx_last_error(), "too many started collectives outstanding") != NULL,
                    "wrap: text \"%s\"", glucx_last_error());
        ITEST_CHECK(req[j] == NULL, "wrap: a refused start wrote a request");
        break;
    }
    atomic_store(&wrap_release, 1);
    itest_wait_slots(&hold, 1, WAIT_MS, "wrap: hold");
    /* a blocking call now shares no tag with a queued chunk */
    int32_t one = 1000 + rank;
    ITEST_STATUS(
        glucx_allreduce(comm, GLUCX_IN_PLACE, &one, 1, GLUCX_DTYPE_I32, GLUCX_OP_SUM, NULL),
        GLUCX_OK, "wrap: blocking allreduce");
    const int32_t want_one = 1000 * size + size * (size - 1) / 2;
    ITEST_CHECK(one == want_one, "wrap: blocking allreduce gave %d, expected %d", one, want_one);
    int bad = 0;
    for (int j = 0; j < started; j++) {
        glucx_status_t st = glucx_request_wait(req[j], WAIT_MS);
        if (st != GLUCX_OK && bad++ < 3)
            ITEST_STATUS(st, GLUCX_OK, "wrap: wait job %d", j);
        glucx_request_free(req[j]);
        for (int i = 0; i < 64 && st == GLUCX_OK; i++) {
            int64_t w = 0;
            for (int r = 0; r < size; r++)
                w += val(r, j % 50, (size_t)i);
            if (bufs[j][i] != w) {
                if (bad++ < 3)
                    ITEST_FAIL("wrap: job %d element %d = %d, expected %lld", j, i, bufs[j][i],
                               (long long)w);
                break;
            }
        }
    }
    /* the limit is per outstanding work: once they ended, more can start */
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = GLUCX_IN_PLACE,
                           .recvbuf = bufs[0],
                           .count = 64,
                           .dtype = GLUCX_DTYPE_I32,
                           .op = GLUCX_OP_SUM};
    glucx_coll_opts_t o = itest_prio_opts(0, 4);
    glucx_request_t *again = NULL;
    if (ITEST_STATUS(glucx_coll_start(comm, &a, &o, &again), GLUCX_OK, "wrap: start after") == 0) {
        ITEST_STATUS(glucx_request_wait(again, WAIT_MS), GLUCX_OK, "wrap: wait after");
        glucx_request_free(again);
    }
    (void)env;
    itest_close(ctx, store, comm);
    return itest_failures() != 0;
}

/* ---- priority_bitwise ---- */

int itest_case_priority_bitwise(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "prio-bitwise", glucx_test_ms(60000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return 1;
    /* 128 KiB of f32 in 64 chunks of 2 KiB: on 3 and 4 ranks the selection map picks another
     * algorithm for a chunk than for the whole (printed below) */
    const size_t n = (size_t)1 << 15, chunk = 2048;
    float *in = malloc(n * 4), *ref = malloc(n * 4), *got = malloc(n * 4);
    uint64_t state = 12345 + (uint64_t)rank * 7919;
    for (size_t i = 0; i < n; i++) {
        const uint64_t x = glucx_test_rand(&state);
        /* mixed magnitudes: the sum depends on the order of the additions */
        in[i] = (float)ldexp((double)(x & 0xffffff) / (1 << 24) - 0.5, (int)((x >> 24) % 40) - 20);
    }
    itest_note("algorithms: %s for %zu bytes, %s for %zu bytes",
               glucx_comm_algorithm(comm, GLUCX_COLL_ALLREDUCE, n * 4), n * 4,
               glucx_comm_algorithm(comm, GLUCX_COLL_ALLREDUCE, chunk), chunk);
    /* the reference: each chunk's range allreduced by glucx_coll() on its own (a chunk is an
     * ordinary collective of its size; the whole vector at once may pick another algorithm,
     * whose float sums differ in the last bits, as the header says) */
    for (size_t off = 0; off < n; off += chunk / 4)
        ITEST_STATUS(glucx_allreduce(comm, in + off, ref + off, chunk / 4, GLUCX_DTYPE_F32,
                                     GLUCX_OP_SUM, NULL),
                     GLUCX_OK, "bitwise: reference at %zu", off);
    glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                           .sendbuf = in,
                           .recvbuf = got,
                           .count = n,
                           .dtype = GLUCX_DTYPE_F32,
                           .op = GLUCX_OP_SUM};
    glucx_coll_opts_t o = itest_prio_opts(0, chunk);
    glucx_request_t *req = NULL;
    if (ITEST_STATUS(glucx_coll_start(comm, &a, &o, &req), GLUCX_OK, "bitwise: start") == 0) {
        ITEST_STATUS(glucx_request_wait(req, WAIT_MS), GLUCX_OK, "bitwise: wait");
        glucx_request_free(req);
        size_t diff = 0, first = n;
        for (size_t i = 0; i < n; i++)
            if (memcmp(&got[i], &ref[i], 4) != 0 && diff++ == 0)
                first = i;
        ITEST_CHECK(diff == 0,
                    "bitwise: %zu of %zu elements differ from glucx_coll's result (first %zu: "
                    "%.9g vs %.9g)",
                    diff, n, first, first < n ? got[first] : 0.0, first < n ? ref[first] : 0.0);
    }
    free(in);
    free(ref);
    free(got);
    itest_close(ctx, store, comm);
    return itest_failures() != 0;
}

/* ---- priority_killed ---- */

#define KVICTIM 1
#define KILL_TIMEOUT_MS 10000
#define KJOBS 30

int itest_case_priority_killed(const itest_env_t *env, int rank, int size)
{
    itest_shared_t *sh = env->shared;
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open_killed(env, rank, size, "prio-killed", glucx_test_ms(KILL_TIMEOUT_MS), &ctx,
                          &store, &comm) != GLUCX_OK)
        return -1;
    if (ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "warm-up") != 0) {
        itest_close(ctx, store, comm);
        __atomic_store_n(&sh->done[rank], 2, __ATOMIC_SEQ_CST);
        return -1;
    }
    static float bufs[KJOBS][1 << 16];
    static glucx_request_t *req[KJOBS];
    /* 64 chunks each: the victim dies 50 ms after starting them all, long before they end */
    for (int j = 0; j < KJOBS; j++) {
        glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                               .sendbuf = GLUCX_IN_PLACE,
                               .recvbuf = bufs[j],
                               .count = 1 << 16,
                               .dtype = GLUCX_DTYPE_F32,
                               .op = GLUCX_OP_SUM};
        glucx_coll_opts_t o = itest_prio_opts(j % 4, 4096);
        ITEST_STATUS(glucx_coll_start(comm, &a, &o, &req[j]), GLUCX_OK, "killed: start %d", j);
    }
    if (rank == KVICTIM) { /* die with its scheduled collectives queued and running */
        itest_sleep_ms(50);
        __atomic_store_n(&sh->t_ns, itest_now_ns(), __ATOMIC_SEQ_CST);
        raise(SIGKILL);
    }
    int rc = 0, nerr = 0;
    glucx_status_t last = GLUCX_OK;
    for (int j = 0; j < KJOBS; j++) {
        if (req[j] == NULL)
            continue;
        glucx_status_t st = glucx_request_wait(req[j], glucx_test_ms(60000));
        if (st == GLUCX_INPROGRESS) {
            ITEST_FAIL("killed: job %d still running after %lld ms", j,
                       (long long)glucx_test_ms(60000));
            rc = -1;
            break; /* not freed: it is running */
        }
        if (st != GLUCX_OK) {
            nerr++;
            last = st;
            snprintf(sh->text[rank], sizeof(sh->text[rank]), "%s", glucx_last_error());
        }
        glucx_request_free(req[j]);
    }
    const int64_t t_err = itest_now_ns(), t_death = __atomic_load_n(&sh->t_ns, __ATOMIC_SEQ_CST);
    const long long ms = t_death ? (long long)((t_err - t_death) / 1000000) : -1;
    sh->status[rank] = last;
    sh->elapsed_ms[rank] = ms;
    if (rank == KVICTIM) {
        ITEST_FAIL("killed: the victim survived");
        rc = -1;
    } else if (rc == 0) {
        if (nerr == 0 || (last != GLUCX_ERR_PEER_FAILED && last != GLUCX_ERR_TIMEOUT)) {
            ITEST_FAIL("killed: %d jobs failed, last status %s", nerr, glucx_status_string(last));
            rc = -1;
        } else if (ms < 0 || ms > glucx_test_ms(KILL_TIMEOUT_MS + 2000)) {
            ITEST_FAIL("killed: all jobs ended %lld ms after the death", ms);
            rc = -1;
        } else {
            itest_note("killed: %d of %d jobs failed (%s) within %lld ms of the death", nerr, KJOBS,
                       glucx_status_string(last), ms);
        }
    }
    const int64_t t0 = itest_now_ns();
    itest_close(ctx, store, comm);
    ITEST_CHECK((itest_now_ns() - t0) / 1000000 < glucx_test_ms(10000), "teardown slow");
    __atomic_store_n(&sh->done[rank], rc == 0 && itest_failures() == 0 ? 1 : 2, __ATOMIC_SEQ_CST);
    return rc;
}

/* the parent's verdict: the victim died, every survivor reported success */
int itest_verdict_priority_killed(const itest_env_t *env, int run_result)
{
    (void)run_result;
    itest_shared_t *sh = env->shared;
    int rc = 0;
    if (sh->t_ns == 0) {
        itest_note("FAIL: rank %d never reached its death", KVICTIM);
        rc = -1;
    }
    for (int r = 0; r < env->nranks; r++)
        if (r != KVICTIM && sh->done[r] != 1) {
            itest_note("FAIL: survivor rank %d %s (status %s after %lld ms: %s)", r,
                       sh->done[r] == 0 ? "never finished" : "reported a failure",
                       sh->status[r] == 1 ? "none" : glucx_status_string(sh->status[r]),
                       (long long)sh->elapsed_ms[r], sh->text[r]);
            rc = -1;
        }
    return rc;
}
