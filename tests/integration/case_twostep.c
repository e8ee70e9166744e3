/*
 * Cases for the calls a host with its own rendezvous uses (Gloo's transport shim):
 *
 * - "twostep": glucx_comm_prepare / glucx_comm_address / glucx_comm_connect. The test carries the
 *   address records itself, through a shared mapping in the test's store directory (no glucx
 *   store). Before connect, every operation but address/connect/rank/size is refused with
 *   GLUCX_ERR_INVALID_ARG naming "not connected"; connect with this rank's entry NULL and with
 *   it given explicitly both work (point-to-point and allreduce checked); address after connect
 *   and a second connect are refused; a record whose magic bytes were flipped gives
 *   GLUCX_ERR_MISMATCH naming its rank; a NULL peer record gives GLUCX_ERR_INVALID_ARG naming
 *   it; prepared communicators that are never connected are destroyed without leaking
 *   descriptors (and memory: the ASan build's leak check).
 * - "twostep_waitany": glucx_request_wait_any returns the (lowest) index of a complete request,
 *   glucx_request_info names the right peer and size, the others stay posted; its invalid
 *   arguments are refused without disturbing the posted requests; its timeout names the pending
 *   peers and fails the communicator, whose later operations then fail at once.
 * - "twostep_wake": glucx_comm_wake interrupts threads blocked in glucx_request_wait_any
 *   (GLUCX_INPROGRESS, long before their 60 s timeout) without cancelling their receives, which
 *   complete later; it does not end a plain glucx_request_wait in another thread, and a wake
 *   with nobody waiting interrupts a later wait only through its "since" wake count
 *   (glucx_comm_wake_count), and then a complete request still wins.
 * - "twostep_stats": glucx_stats_get counts exactly this rank's glucx_isend calls and bytes, the
 *   receives that completed (once each, whichever call completed them), one communicator per
 *   connect and one collective per collective call; failed connects, rejected collectives,
 *   cancelled receives and collective-internal traffic count nothing.
 *
 * Expected values come from formulas of (rank, peer, index) evaluated here.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "itest.h"
#include "support/procs.h"
#include "support/util.h"

#define WAIT_MS glucx_test_ms(30000)
#define SYNC_MS 40000

/* ------------------------------------------------------------------------------------------ */
/* Address records carried by the test: a shared mapping of a file in the store directory      */

typedef struct xarea {
    glucx_test_barrier_t barrier;
    size_t lens[ITEST_MAX_RANKS];
    unsigned char slots[ITEST_MAX_RANKS][GLUCX_TEST_ADDR_MAX];
} xarea_t;

typedef struct ts {
    int rank, size;
    xarea_t *x;
    int broken; /* a barrier timed out: the ranks are out of step, skip further barriers */
    int nsync;  /* barriers passed, for messages */
    unsigned char recs[ITEST_MAX_RANKS][GLUCX_TEST_ADDR_MAX]; /* this rank's copies */
    size_t lens[ITEST_MAX_RANKS];
} ts_t;

static ts_t *ts_open(const itest_env_t *env, int rank, int size)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/twostep-exchange.shm", env->store_dir);
    ts_t *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        ITEST_FAIL("cannot allocate %zu bytes", sizeof(*t));
        return NULL;
    }
    t->rank = rank;
    t->size = size;
    /* Every rank opens and sizes the same file: a new file reads as zeros, and truncating to the
     * size it already has changes nothing, so the order of the ranks does not matter. */
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)sizeof(xarea_t)) != 0) {
        ITEST_FAIL("cannot create the %zu-byte exchange file %s", sizeof(xarea_t), path);
        if (fd >= 0)
            close(fd);
        free(t);
        return NULL;
    }
    void *m = mmap(NULL, sizeof(xarea_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        ITEST_FAIL("cannot map the exchange file %s", path);
        free(t);
        return NULL;
    }
    t->x = m;
    return t;
}

static void ts_close(ts_t *t)
{
    if (t == NULL)
        return;
    munmap(t->x, sizeof(xarea_t));
    free(t);
}

/* The exchange area and a context of a case that makes its communicators itself (the
 * variant's UCX environment applied first). @return 0, or -1 after reporting. */
static int ts_begin(const itest_env_t *env, int rank, int size, ts_t **t_p, glucx_context_t **ctx_p)
{
    itest_apply_variant(env);
    *t_p = ts_open(env, rank, size);
    if (*t_p == NULL)
        return -1;
    if (ITEST_STATUS(glucx_context_create(NULL, ctx_p), GLUCX_OK, "glucx_context_create")) {
        ts_close(*t_p);
        *t_p = NULL;
        return -1;
    }
    return 0;
}

/* A barrier of all ranks (test processes, not glucx). @return 0, or -1 after reporting. */
static int sync_all(ts_t *t, const char *where)
{
    if (t->broken)
        return -1;
    if (glucx_test_barrier_wait(&t->x->barrier, t->size, SYNC_MS, NULL, NULL) != 0) {
        ITEST_FAIL("test barrier %d (%s): not every rank arrived within %lld ms", t->nsync, where,
                   (long long)glucx_test_ms(SYNC_MS));
        t->broken = 1;
        return -1;
    }
    t->nsync++;
    return 0;
}

/* Publish @p len bytes of @p rec and copy every rank's into t->recs / t->lens. */
static int exchange(ts_t *t, const void *rec, size_t len)
{
    int rc = 0;
    if (len > GLUCX_TEST_ADDR_MAX) {
        ITEST_FAIL("address record of %zu bytes exceeds the test's %d-byte slot", len,
                   GLUCX_TEST_ADDR_MAX);
        rc = -1;
        len = 0;
    }
    if (sync_all(t, "before publishing the record") != 0)
        return -1;
    memcpy(t->x->slots[t->rank], rec, len);
    t->x->lens[t->rank] = len;
    if (sync_all(t, "after publishing the records") != 0)
        return -1;
    for (int r = 0; r < t->size; r++) {
        t->lens[r] = t->x->lens[r];
        memcpy(t->recs[r], t->x->slots[r], t->lens[r]);
        if (t->lens[r] == 0) {
            ITEST_FAIL("rank %d published an empty record", r);
            rc = -1;
        }
    }
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */

/* Whether @p text names "rank <r>" (not a longer number). */
static int names(const char *text, int r)
{
    char word[32];
    snprintf(word, sizeof(word), "rank %d", r);
    size_t wl = strlen(word);
    for (const char *p = strstr(text, word); p != NULL; p = strstr(p + 1, word))
        if (p[wl] < '0' || p[wl] > '9')
            return 1;
    return 0;
}

static uint64_t seed_of(int src, int dst, uint64_t tag)
{
    return ((uint64_t)(unsigned)src << 48) ^ ((uint64_t)(unsigned)dst << 32) ^ (tag << 4) ^ 0x5eed;
}

/* A send buffer of @p bytes holding the pattern of (src, dst, tag); NULL when bytes == 0. */
static void *make_msg(int src, int dst, uint64_t tag, size_t bytes)
{
    if (bytes == 0)
        return NULL;
    void *p = malloc(bytes);
    if (p == NULL)
        ITEST_FAIL("out of memory (%zu bytes)", bytes);
    else
        glucx_test_fill_bytes(p, bytes, seed_of(src, dst, tag));
    return p;
}

/* Check @p bytes bytes at @p got against the pattern of (src, dst, tag). */
static int check_msg(const char *what, const void *got, size_t bytes, int src, int dst,
                     uint64_t tag)
{
    if (bytes == 0)
        return 0;
    unsigned char *want = make_msg(src, dst, tag, bytes);
    if (want == NULL)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < bytes; i++) {
        if (((const unsigned char *)got)[i] != want[i]) {
            ITEST_FAIL("%s: byte %zu of %zu from rank %d (tag %llu): expected 0x%02x, got 0x%02x",
                       what, i, bytes, src, (unsigned long long)tag, want[i],
                       ((const unsigned char *)got)[i]);
            rc = -1;
            break;
        }
    }
    free(want);
    return rc;
}

static int check_info(glucx_request_t *req, const char *what, int peer, size_t bytes)
{
    int p = -2;
    size_t b = (size_t)-1;
    if (ITEST_STATUS(glucx_request_info(req, &p, &b), GLUCX_OK, "glucx_request_info(%s)", what))
        return -1;
    if (p != peer || b != bytes) {
        ITEST_FAIL("%s: glucx_request_info says rank %d, %zu bytes; expected rank %d, %zu bytes",
                   what, p, b, peer, bytes);
        return -1;
    }
    return 0;
}

/* Send the pattern of (rank, dst, tag) and wait for the send. */
static int send_wait(glucx_comm_t *comm, int dst, uint64_t tag, size_t bytes)
{
    int rank = glucx_comm_rank(comm);
    void *buf = make_msg(rank, dst, tag, bytes);
    if (bytes > 0 && buf == NULL)
        return -1;
    glucx_request_t *req = NULL;
    int rc = ITEST_STATUS(glucx_isend(comm, buf, bytes, dst, tag, &req), GLUCX_OK,
                          "isend of %zu bytes to rank %d (tag %llu)", bytes, dst,
                          (unsigned long long)tag);
    if (rc == 0)
        rc = ITEST_STATUS(glucx_request_wait(req, WAIT_MS), GLUCX_OK,
                          "wait for the send of %zu bytes to rank %d (tag %llu)", bytes, dst,
                          (unsigned long long)tag);
    glucx_request_free(req);
    free(buf);
    return rc;
}

/* A posted receive with its own buffer. */
typedef struct rx {
    glucx_request_t *req;
    unsigned char *buf;
    size_t cap;
    int src;
    uint64_t tag;
} rx_t;

static int rx_post(glucx_comm_t *comm, rx_t *r, int src, uint64_t tag, size_t cap)
{
    memset(r, 0, sizeof(*r));
    r->buf = itest_alloc(cap);
    r->cap = cap;
    r->src = src;
    r->tag = tag;
    if (r->buf == NULL)
        return -1;
    return ITEST_STATUS(glucx_irecv(comm, r->buf, cap, src, tag, &r->req), GLUCX_OK,
                        "irecv of up to %zu bytes from rank %d (tag %llu)", cap, src,
                        (unsigned long long)tag);
}

/* After completion: peer, size and contents of what rank r->src sent with the pattern. */
static int rx_check(const rx_t *r, const char *what, int me, size_t bytes)
{
    int rc = ITEST_STATUS(glucx_request_test(r->req), GLUCX_OK, "status of %s", what);
    rc |= check_info(r->req, what, r->src, bytes);
    if (rc == 0)
        rc |= check_msg(what, r->buf, bytes, r->src, me, r->tag);
    rc |= itest_guard_ok(r->buf, r->cap, what);
    return rc;
}

static void rx_free(rx_t *r)
{
    glucx_request_free(r->req);
    free(r->buf);
    memset(r, 0, sizeof(*r));
}

/* Every rank sends to every other one (sizes from a formula) and checks what it received; then
 * an allreduce (sum of int64) of values known on every rank. Adds to @p want (unless NULL) what
 * glucx_stats_get should count for it. */
static int exercise(glucx_comm_t *comm, uint64_t tag, const char *what, glucx_stats_t *want)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    rx_t rx[ITEST_MAX_RANKS] = {{0}};
    glucx_request_t *sreq[ITEST_MAX_RANKS] = {NULL};
    void *sbuf[ITEST_MAX_RANKS] = {NULL};
    int rc = 0;
#define MSG_BYTES(src, dst) ((size_t)(64 + 13 * (src) + 5 * (dst)))
    for (int p = 0; p < n; p++)
        if (p != rank)
            rc |= rx_post(comm, &rx[p], p, tag, MSG_BYTES(p, rank) + 32);
    for (int p = 0; p < n && rc == 0; p++) {
        if (p == rank)
            continue;
        sbuf[p] = make_msg(rank, p, tag, MSG_BYTES(rank, p));
        rc |= ITEST_STATUS(glucx_isend(comm, sbuf[p], MSG_BYTES(rank, p), p, tag, &sreq[p]),
                           GLUCX_OK, "%s: isend to rank %d", what, p);
    }
    for (int p = 0; p < n && rc == 0; p++) {
        if (p == rank)
            continue;
        rc |= ITEST_STATUS(glucx_request_wait(rx[p].req, WAIT_MS), GLUCX_OK,
                           "%s: receive from rank %d", what, p);
        rc |= ITEST_STATUS(glucx_request_wait(sreq[p], WAIT_MS), GLUCX_OK, "%s: send to rank %d",
                           what, p);
        if (rc == 0)
            rc |= rx_check(&rx[p], what, rank, MSG_BYTES(p, rank));
        if (want != NULL) {
            want->sends++;
            want->send_bytes += MSG_BYTES(rank, p);
            want->recvs++;
            want->recv_bytes += MSG_BYTES(p, rank);
        }
    }
#undef MSG_BYTES
    for (int p = 0; p < n; p++) {
        glucx_request_free(sreq[p]);
        free(sbuf[p]);
        if (rx[p].buf != NULL)
            rx_free(&rx[p]);
    }
    if (rc != 0)
        return rc;

    enum { COUNT = 7 };
    int64_t in[COUNT], out[COUNT], expect[COUNT];
    for (int i = 0; i < COUNT; i++) {
        in[i] = (int64_t)(rank + 1) * 1000 + (int64_t)i * (rank + 3);
        out[i] = -1;
        expect[i] = 0;
        for (int r = 0; r < n; r++)
            expect[i] += (int64_t)(r + 1) * 1000 + (int64_t)i * (r + 3);
    }
    if (ITEST_STATUS(glucx_allreduce(comm, in, out, COUNT, GLUCX_DTYPE_I64, GLUCX_OP_SUM, NULL),
                     GLUCX_OK, "%s: allreduce", what))
        return -1;
    if (want != NULL)
        want->collectives++;
    for (int i = 0; i < COUNT; i++) {
        if (out[i] != expect[i]) {
            ITEST_FAIL("%s: allreduce element %d: expected %lld, got %lld", what, i,
                       (long long)expect[i], (long long)out[i]);
            return -1;
        }
    }
    return 0;
}

static glucx_status_t prepare(glucx_context_t *ctx, int rank, int size, const char *name,
                              glucx_comm_t **comm_p)
{
    glucx_comm_params_t params = {.field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
                                  .rank = rank,
                                  .size = size,
                                  .store = NULL,
                                  .name = name,
                                  .timeout_ms = WAIT_MS};
    *comm_p = NULL;
    return glucx_comm_prepare(ctx, &params, comm_p);
}

/* Prepare, publish, connect with this rank's own entry NULL. @return the status of connect. */
static glucx_status_t twostep_open(ts_t *t, glucx_context_t *ctx, const char *name,
                                   glucx_comm_t **comm_p)
{
    *comm_p = NULL;
    glucx_comm_t *comm = NULL;
    const void *rec = NULL;
    size_t len = 0;
    glucx_status_t st = prepare(ctx, t->rank, t->size, name, &comm);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_prepare('%s')", name) == 0)
        st = glucx_comm_address(comm, &rec, &len);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_address('%s')", name) != 0)
        rec = NULL, len = 0; /* still take part in the exchange */
    if (exchange(t, rec, len) != 0 && st == GLUCX_OK)
        st = GLUCX_ERR_STORE;
    if (st == GLUCX_OK) {
        const void *recs[ITEST_MAX_RANKS];
        for (int r = 0; r < t->size; r++)
            recs[r] = r == t->rank ? NULL : t->recs[r];
        st = glucx_comm_connect(comm, recs, t->lens);
        ITEST_STATUS(st, GLUCX_OK, "glucx_comm_connect('%s')", name);
    }
    if (st != GLUCX_OK) {
        glucx_comm_destroy(comm);
        return st;
    }
    *comm_p = comm;
    return GLUCX_OK;
}

static void check_text(const char *op, const char *want)
{
    const char *text = glucx_last_error();
    ITEST_CHECK(strstr(text, want) != NULL, "the message of %s does not say '%s': \"%s\"", op, want,
                text);
}

static int64_t ms_since(int64_t t0_ns)
{
    return (itest_now_ns() - t0_ns) / 1000000;
}

/* ------------------------------------------------------------------------------------------ */
/* Case "twostep"                                                                              */

/* Everything but address/connect/rank/size is refused on a prepared communicator. */
static void check_not_connected(glucx_comm_t *comm, int rank, int size)
{
    const int peer = (rank + 1) % size;
    char buf[16] = "";
    int32_t v = 1, w = 0;
    glucx_request_t *req = NULL;
    ITEST_STATUS(glucx_isend(comm, buf, sizeof(buf), peer, 1, &req), GLUCX_ERR_INVALID_ARG,
                 "glucx_isend to rank %d on a prepared, unconnected communicator", peer);
    check_text("glucx_isend before connect", "not connected");
    ITEST_CHECK(req == NULL, "glucx_isend before connect wrote a request");
    ITEST_STATUS(glucx_irecv(comm, buf, sizeof(buf), peer, 1, &req), GLUCX_ERR_INVALID_ARG,
                 "glucx_irecv from rank %d on a prepared, unconnected communicator", peer);
    check_text("glucx_irecv before connect", "not connected");
    ITEST_STATUS(glucx_irecv_any(comm, buf, sizeof(buf), &peer, 1, 1, &req), GLUCX_ERR_INVALID_ARG,
                 "glucx_irecv_any on a prepared, unconnected communicator");
    check_text("glucx_irecv_any before connect", "not connected");
    ITEST_STATUS(glucx_allreduce(comm, &v, &w, 1, GLUCX_DTYPE_I32, GLUCX_OP_SUM, NULL),
                 GLUCX_ERR_INVALID_ARG, "glucx_allreduce on a prepared, unconnected communicator");
    check_text("glucx_allreduce before connect", "not connected");
    ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_ERR_INVALID_ARG,
                 "glucx_barrier on a prepared, unconnected communicator");
    check_text("glucx_barrier before connect", "not connected");
    glucx_coll_args_t args = {.coll = GLUCX_COLL_BARRIER};
    ITEST_STATUS(glucx_coll_start(comm, &args, NULL, &req), GLUCX_ERR_INVALID_ARG,
                 "glucx_coll_start(barrier) on a prepared, unconnected communicator");
    check_text("glucx_coll_start before connect", "not connected");
    ITEST_CHECK(req == NULL, "a refused call wrote a request");
    ITEST_CHECK(glucx_comm_rank(comm) == rank && glucx_comm_size(comm) == size,
                "glucx_comm_rank/size of a prepared communicator: %d/%d, expected %d/%d",
                glucx_comm_rank(comm), glucx_comm_size(comm), rank, size);
}

static int stats_equal(const glucx_stats_t *a, const glucx_stats_t *b)
{
    return a->sends == b->sends && a->send_bytes == b->send_bytes && a->recvs == b->recvs &&
           a->recv_bytes == b->recv_bytes && a->collectives == b->collectives &&
           a->comms == b->comms;
}

#define STATS_FMT "sends %llu (%llu B), recvs %llu (%llu B), collectives %llu, comms %llu"
#define STATS_ARGS(s)                                                                              \
    (unsigned long long)(s).sends, (unsigned long long)(s).send_bytes,                             \
        (unsigned long long)(s).recvs, (unsigned long long)(s).recv_bytes,                         \
        (unsigned long long)(s).collectives, (unsigned long long)(s).comms

/* Check that the counters are @p want now; a difference is reported at the caller's line. */
static int stats_expect_at(const char *file, int line, const glucx_stats_t *want, const char *after)
{
    glucx_stats_t now;
    glucx_stats_get(&now);
    if (stats_equal(&now, want))
        return 0;
    itest_fail_at(file, line, "glucx_stats_get after %s: expected " STATS_FMT ", got " STATS_FMT,
                  after, STATS_ARGS(*want), STATS_ARGS(now));
    return -1;
}
#define stats_expect(want, after) stats_expect_at(__FILE__, __LINE__, (want), (after))

int itest_case_twostep(const itest_env_t *env, int rank, int size)
{
    ts_t *t = NULL;
    glucx_context_t *ctx = NULL;
    if (ts_begin(env, rank, size, &t, &ctx) != 0)
        return -1;
    const int next = (rank + 1) % size;
    glucx_stats_t want;
    glucx_stats_get(&want);

    /* 0. parameters are checked; nothing is written on failure */
    glucx_comm_t *comm = NULL;
    ITEST_STATUS(prepare(ctx, size, size, "ts-badrank", &comm), GLUCX_ERR_INVALID_ARG,
                 "glucx_comm_prepare with rank %d of %d", size, size);
    ITEST_CHECK(comm == NULL, "glucx_comm_prepare wrote a communicator on failure");

    /* 1. prepare; before connect only address/connect/rank/size work; connect (own entry NULL) */
    glucx_comm_t *first = NULL;
    const void *rec = NULL, *rec2 = NULL;
    size_t len = 0, len2 = 0;
    glucx_status_t st = prepare(ctx, rank, size, "ts-ownnull", &first);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_prepare('ts-ownnull')") == 0) {
        check_not_connected(first, rank, size);
        st = glucx_comm_address(first, &rec, &len);
        if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_address before connect") == 0) {
            ITEST_CHECK(rec != NULL && len > 0, "glucx_comm_address gave %zu bytes at %p", len,
                        rec);
            ITEST_STATUS(glucx_comm_address(first, &rec2, &len2), GLUCX_OK,
                         "second glucx_comm_address");
            ITEST_CHECK(rec2 == rec && len2 == len,
                        "two glucx_comm_address calls differ: %zu bytes at %p, %zu at %p", len, rec,
                        len2, rec2);
        }
        ITEST_STATUS(glucx_comm_address(first, NULL, &len2), GLUCX_ERR_INVALID_ARG,
                     "glucx_comm_address with NULL record_p");
    }
    stats_expect(&want, "prepare and the refused calls before connect");
    if (rank == 0 && st == GLUCX_OK)
        itest_note("address record: %zu bytes", len);
    int rc = exchange(t, st == GLUCX_OK ? rec : NULL, st == GLUCX_OK ? len : 0);
    if (rc == 0 && st == GLUCX_OK) {
        const void *recs[ITEST_MAX_RANKS];
        for (int r = 0; r < size; r++)
            recs[r] = r == rank ? NULL : t->recs[r];
        st = glucx_comm_connect(first, recs, t->lens);
        if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_connect with this rank's entry NULL") == 0) {
            want.comms++;
            stats_expect(&want, "one connect");
            ITEST_STATUS(glucx_comm_address(first, &rec2, &len2), GLUCX_ERR_INVALID_ARG,
                         "glucx_comm_address after connect");
            ITEST_STATUS(glucx_comm_connect(first, recs, t->lens), GLUCX_ERR_INVALID_ARG,
                         "a second glucx_comm_connect");
            stats_expect(&want, "a refused second connect");
            itest_check_transport(env, first);
            rc |= exercise(first, 11, "two-step communicator (own entry NULL)", &want);
        }
    }
    if (st != GLUCX_OK) {
        glucx_comm_destroy(first);
        first = NULL;
        rc = -1;
    }

    /* 2. a record whose magic bytes are flipped: MISMATCH naming its rank, nothing counted */
    comm = NULL;
    st = prepare(ctx, rank, size, "ts-corrupt", &comm);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_prepare('ts-corrupt')") == 0)
        st = glucx_comm_address(comm, &rec, &len);
    if (exchange(t, st == GLUCX_OK ? rec : NULL, st == GLUCX_OK ? len : 0) == 0 && st == GLUCX_OK) {
        const void *recs[ITEST_MAX_RANKS];
        for (int r = 0; r < size; r++)
            recs[r] = t->recs[r];
        for (int i = 0; i < 4 && (size_t)i < t->lens[next]; i++)
            t->recs[next][i] = (unsigned char)~t->recs[next][i];
        st = glucx_comm_connect(comm, recs, t->lens);
        if (ITEST_STATUS(st, GLUCX_ERR_MISMATCH,
                         "glucx_comm_connect with rank %d's record's first 4 bytes flipped",
                         next) == 0) {
            const char *text = glucx_last_error();
            ITEST_CHECK(names(text, next),
                        "the corrupted-record message does not name rank %d: \"%s\"", next, text);
            if (rank == 0)
                itest_note("corrupted record: %s", text);
        } else {
            rc = -1;
        }
    } else {
        rc = -1;
    }
    glucx_comm_destroy(comm);
    stats_expect(&want, "a connect refused for a corrupted record");

    /* 3. a NULL peer record: INVALID_ARG naming it */
    comm = NULL;
    st = prepare(ctx, rank, size, "ts-nullpeer", &comm);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_prepare('ts-nullpeer')") == 0)
        st = glucx_comm_address(comm, &rec, &len);
    if (exchange(t, st == GLUCX_OK ? rec : NULL, st == GLUCX_OK ? len : 0) == 0 && st == GLUCX_OK) {
        const void *recs[ITEST_MAX_RANKS];
        size_t lens[ITEST_MAX_RANKS];
        for (int r = 0; r < size; r++) {
            recs[r] = r == next ? NULL : t->recs[r];
            lens[r] = r == next ? 0 : t->lens[r];
        }
        st = glucx_comm_connect(comm, recs, lens);
        if (ITEST_STATUS(st, GLUCX_ERR_INVALID_ARG, "glucx_comm_connect with rank %d's record NULL",
                         next) == 0) {
            const char *text = glucx_last_error();
            ITEST_CHECK(names(text, next), "the NULL-record message does not name rank %d: \"%s\"",
                        next, text);
        } else {
            rc = -1;
        }
    } else {
        rc = -1;
    }
    glucx_comm_destroy(comm);
    stats_expect(&want, "a connect refused for a NULL record");

    /* 4. prepared, never connected, destroyed: no descriptor (or, under ASan, memory) left */
    int fds_before = -1;
    for (int i = 0; i < 4; i++) {
        comm = NULL;
        char name[32];
        snprintf(name, sizeof(name), "ts-unused-%d", i);
        if (ITEST_STATUS(prepare(ctx, rank, size, name, &comm), GLUCX_OK,
                         "glucx_comm_prepare('%s')", name) == 0) {
            if (i % 2 == 1)
                ITEST_STATUS(glucx_comm_address(comm, &rec, &len), GLUCX_OK,
                             "glucx_comm_address('%s')", name);
            if (i == 2) {
                size_t lens[ITEST_MAX_RANKS] = {0};
                const void *recs[ITEST_MAX_RANKS] = {NULL};
                ITEST_STATUS(glucx_comm_connect(comm, NULL, lens), GLUCX_ERR_INVALID_ARG,
                             "glucx_comm_connect with NULL records");
                ITEST_STATUS(glucx_comm_connect(comm, recs, NULL), GLUCX_ERR_INVALID_ARG,
                             "glucx_comm_connect with NULL lengths");
            }
        } else {
            rc = -1;
        }
        glucx_comm_destroy(comm);
        if (i == 0)
            fds_before = itest_open_fds(); /* after the first: UCX's lazy set-up is done */
    }
    int fds_after = itest_open_fds();
    ITEST_CHECK(fds_after == fds_before,
                "3 prepared-never-connected communicators changed the open descriptors "
                "from %d to %d",
                fds_before, fds_after);
    stats_expect(&want, "prepared communicators destroyed unconnected");

    /* 5. this rank's own record given explicitly, after the failures on the same context */
    comm = NULL;
    st = prepare(ctx, rank, size, "ts-ownrec", &comm);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_prepare('ts-ownrec')") == 0)
        st = glucx_comm_address(comm, &rec, &len);
    if (exchange(t, st == GLUCX_OK ? rec : NULL, st == GLUCX_OK ? len : 0) == 0 && st == GLUCX_OK) {
        const void *recs[ITEST_MAX_RANKS];
        for (int r = 0; r < size; r++)
            recs[r] = t->recs[r];
        ITEST_CHECK(t->lens[rank] == len && memcmp(t->recs[rank], rec, len) == 0,
                    "the exchange did not carry this rank's record intact");
        st = glucx_comm_connect(comm, recs, t->lens);
        if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_connect with this rank's own record") == 0) {
            want.comms++;
            stats_expect(&want, "the second successful connect");
            itest_check_transport(env, comm);
            rc |= exercise(comm, 12, "two-step communicator (own record given)", &want);
            /* the first communicator is independent of the second */
            if (first != NULL) {
                rc |= exercise(first, 13, "first two-step communicator, again", &want);
            }
        } else {
            rc = -1;
        }
    } else {
        rc = -1;
    }
    glucx_comm_destroy(comm);
    glucx_comm_destroy(first);
    rc |= stats_expect(&want, "the traffic of the two-step communicators and their destruction");
    glucx_context_destroy(ctx);
    ts_close(t);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Case "twostep_waitany"                                                                      */

/* wait_any with a 30 s limit that must return GLUCX_OK and index @p want_idx. */
static int wait_any_expect(glucx_request_t *const *reqs, size_t n, size_t want_idx,
                           const char *what)
{
    size_t idx = 12345;
    if (ITEST_STATUS(glucx_request_wait_any(reqs, n, WAIT_MS, NULL, &idx), GLUCX_OK,
                     "glucx_request_wait_any(%s)", what))
        return -1;
    if (idx != want_idx) {
        ITEST_FAIL("glucx_request_wait_any(%s): index %zu, expected %zu", what, idx, want_idx);
        return -1;
    }
    return 0;
}

/* Receiver R posts three receives, from p0 (tags A, C) and p1 (tag B); the messages come one at
 * a time, B first, then A, then C. */
static int waitany_round(ts_t *t, glucx_comm_t *comm, int R)
{
    const int rank = t->rank, n = t->size;
    const int p0 = (R + 1) % n, p1 = (R + n - 1) % n; /* the same rank when n == 2 */
    const uint64_t tA = 100 + 10 * (uint64_t)R, tB = tA + 1, tC = tA + 2;
    const size_t bA = 300 + (size_t)R, bB = 500 + (size_t)R, bC = 700 + (size_t)R, cap = 1024;
    char what[160];
    int rc = 0;
    rx_t a, b, c;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    memset(&c, 0, sizeof(c));
    if (rank == R) {
        rc |= rx_post(comm, &a, p0, tA, cap);
        rc |= rx_post(comm, &b, p1, tB, cap);
        rc |= rx_post(comm, &c, p0, tC, cap);
    }
    sync_all(t, "receives posted");
    if (rank == p1)
        rc |= send_wait(comm, R, tB, bB);
    if (rank == R && rc == 0) {
        glucx_request_t *two[2] = {a.req, b.req};
        snprintf(what, sizeof(what), "{A from rank %d, B from rank %d}, only B sent", p0, p1);
        if (wait_any_expect(two, 2, 1, what) == 0)
            rc |= rx_check(&b, "receive B (completed through wait_any)", R, bB);
        else
            rc = -1;
        ITEST_STATUS(glucx_request_test(a.req), GLUCX_INPROGRESS,
                     "receive A from rank %d (not sent yet) after wait_any returned B", p0);
    }
    sync_all(t, "B received");
    if (rank == p0)
        rc |= send_wait(comm, R, tA, bA);
    if (rank == R && rc == 0) {
        glucx_request_t *one[1] = {a.req};
        if (wait_any_expect(one, 1, 0, "{A}") == 0)
            rc |= rx_check(&a, "receive A (completed through wait_any)", R, bA);
        else
            rc = -1;
        /* A and B complete, C pending: the lowest complete index, whatever finished first */
        glucx_request_t *cab[3] = {c.req, a.req, b.req}, *cba[3] = {c.req, b.req, a.req};
        glucx_request_t *bca[3] = {b.req, c.req, a.req};
        rc |= wait_any_expect(cab, 3, 1, "{C pending, A done, B done first}");
        rc |= wait_any_expect(cba, 3, 1, "{C pending, B done, A done}");
        rc |= wait_any_expect(bca, 3, 0, "{B done, C pending, A done}");
        ITEST_STATUS(glucx_request_test(c.req), GLUCX_INPROGRESS,
                     "receive C from rank %d (not sent yet)", p0);
    }
    sync_all(t, "A received");
    if (rank == p0)
        rc |= send_wait(comm, R, tC, bC);
    if (rank == R && rc == 0) {
        glucx_request_t *one[1] = {c.req};
        if (wait_any_expect(one, 1, 0, "{C}") == 0)
            rc |= rx_check(&c, "receive C", R, bC);
        else
            rc = -1;
    }
    if (rank == R) {
        rx_free(&a);
        rx_free(&b);
        rx_free(&c);
    }
    sync_all(t, "round done");
    return rc;
}

/* Invalid arguments are refused at once and disturb nothing. */
static int waitany_invalid(ts_t *t, glucx_context_t *ctx, glucx_store_t *store, glucx_comm_t *comm)
{
    const int rank = t->rank, n = t->size;
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    int rc = 0;
    glucx_comm_t *comm2 = NULL;
    if (itest_comm(ctx, store, rank, n, "wa-second", WAIT_MS, &comm2) != GLUCX_OK)
        return -1;
    rx_t r1, r2;
    rc |= rx_post(comm, &r1, next, 900, 256);
    rc |= rx_post(comm2, &r2, next, 901, 256);
    if (rc == 0) {
        size_t idx = 4242;
        glucx_request_t *one[1] = {r1.req}, *with_null[2] = {r1.req, NULL};
        glucx_request_t *null_first[2] = {NULL, r1.req}, *mixed[2] = {r1.req, r2.req};
        int64_t t0 = itest_now_ns();
        ITEST_STATUS(glucx_request_wait_any(one, 0, 1000, NULL, &idx), GLUCX_ERR_INVALID_ARG,
                     "glucx_request_wait_any with n == 0");
        check_text("glucx_request_wait_any with n == 0", "wait_any");
        ITEST_STATUS(glucx_request_wait_any(with_null, 2, 1000, NULL, &idx), GLUCX_ERR_INVALID_ARG,
                     "glucx_request_wait_any with a NULL second entry");
        check_text("glucx_request_wait_any with a NULL entry", "NULL");
        ITEST_STATUS(glucx_request_wait_any(null_first, 2, 1000, NULL, &idx), GLUCX_ERR_INVALID_ARG,
                     "glucx_request_wait_any with a NULL first entry");
        ITEST_STATUS(glucx_request_wait_any(mixed, 2, 1000, NULL, &idx), GLUCX_ERR_INVALID_ARG,
                     "glucx_request_wait_any with requests of two communicators");
        check_text("glucx_request_wait_any with requests of two communicators", "wait_any");
        ITEST_STATUS(glucx_request_wait_any(one, 1, 1000, NULL, NULL), GLUCX_ERR_INVALID_ARG,
                     "glucx_request_wait_any with NULL index_p");
        ITEST_STATUS(glucx_request_wait_any(NULL, 1, 1000, NULL, &idx), GLUCX_ERR_INVALID_ARG,
                     "glucx_request_wait_any with a NULL array");
        ITEST_CHECK(idx == 4242, "a refused glucx_request_wait_any wrote index %zu", idx);
        /* a started collective is not a point-to-point request */
        glucx_coll_args_t args = {.coll = GLUCX_COLL_BARRIER};
        glucx_request_t *creq = NULL;
        if (ITEST_STATUS(glucx_coll_start(comm, &args, NULL, &creq), GLUCX_OK,
                         "glucx_coll_start(barrier)") == 0) {
            glucx_request_t *coll_only[1] = {creq}, *p2p_coll[2] = {r1.req, creq};
            ITEST_STATUS(glucx_request_wait_any(coll_only, 1, 1000, NULL, &idx),
                         GLUCX_ERR_INVALID_ARG, "glucx_request_wait_any on a started collective");
            ITEST_STATUS(glucx_request_wait_any(p2p_coll, 2, 1000, NULL, &idx),
                         GLUCX_ERR_INVALID_ARG,
                         "glucx_request_wait_any on a receive and a started collective");
            rc |= ITEST_STATUS(glucx_request_wait(creq, WAIT_MS), GLUCX_OK,
                               "wait for the started barrier");
            glucx_request_free(creq);
        } else {
            rc = -1;
        }
        int64_t ms = ms_since(t0);
        ITEST_CHECK(ms < 5000, "the refused wait_any calls and a barrier took %lld ms",
                    (long long)ms);
        ITEST_STATUS(glucx_request_test(r1.req), GLUCX_INPROGRESS,
                     "the receive from rank %d after the refused calls", next);
    }
    /* the receives are intact: they complete now */
    sync_all(t, "invalid wait_any calls done");
    rc |= send_wait(comm, prev, 900, 100 + (size_t)rank);
    rc |= send_wait(comm2, prev, 901, 150 + (size_t)rank);
    if (r1.req != NULL) {
        glucx_request_t *one[1] = {r1.req};
        if (wait_any_expect(one, 1, 0, "{receive posted before the refused calls}") == 0)
            rc |= rx_check(&r1, "receive on the first communicator", rank, 100 + (size_t)next);
        else
            rc = -1;
    }
    if (r2.req != NULL) {
        if (ITEST_STATUS(glucx_request_wait(r2.req, WAIT_MS), GLUCX_OK,
                         "receive on the second communicator") == 0)
            rc |= rx_check(&r2, "receive on the second communicator", rank, 150 + (size_t)next);
        else
            rc = -1;
    }
    rx_free(&r1);
    rx_free(&r2);
    sync_all(t, "before destroying the second communicator");
    glucx_comm_destroy(comm2);
    return rc;
}

/* Rank 0 waits for receives nobody sends, with a short limit, on its own communicator. */
static int waitany_timeout(ts_t *t, glucx_context_t *ctx, glucx_store_t *store)
{
    const int rank = t->rank, n = t->size;
    const int64_t limit_ms = 400;
    const int pa = 1, pb = n - 1; /* the same rank when n == 2 */
    int rc = 0;
    glucx_comm_t *comm = NULL;
    if (itest_comm(ctx, store, rank, n, "wa-timeout", WAIT_MS, &comm) != GLUCX_OK)
        return -1;
    if (rank == 0) {
        rx_t a, b;
        rc |= rx_post(comm, &a, pa, 950, 64);
        rc |= rx_post(comm, &b, pb, 951, 64);
        if (rc == 0) {
            glucx_request_t *two[2] = {a.req, b.req};
            size_t idx = 4242;
            int64_t t0 = itest_now_ns();
            glucx_status_t st = glucx_request_wait_any(two, 2, limit_ms, NULL, &idx);
            int64_t ms = ms_since(t0);
            if (ITEST_STATUS(st, GLUCX_ERR_TIMEOUT,
                             "glucx_request_wait_any(%lld ms) on receives nobody sends",
                             (long long)limit_ms) == 0) {
                const char *text = glucx_last_error();
                ITEST_CHECK(names(text, pa) && names(text, pb),
                            "the timeout message does not name the pending rank(s) %d and %d: "
                            "\"%s\"",
                            pa, pb, text);
                char ctext[1024] = "";
                glucx_comm_last_error(comm, ctext, sizeof(ctext));
                ITEST_CHECK(names(ctext, pa),
                            "glucx_comm_last_error after the timeout does not name rank %d: "
                            "\"%s\"",
                            pa, ctext);
                itest_note("wait_any timed out after %lld ms: %s", (long long)ms, text);
            } else {
                rc = -1;
            }
            ITEST_CHECK(idx == 4242, "a timed-out wait_any wrote index %zu", idx);
            ITEST_CHECK(ms >= limit_ms - 10 && ms < glucx_test_ms(20000),
                        "wait_any with a %lld ms limit returned after %lld ms", (long long)limit_ms,
                        (long long)ms);
            /* the communicator failed: new operations fail at once with its status */
            char buf[8] = "x";
            glucx_request_t *req = NULL;
            t0 = itest_now_ns();
            ITEST_STATUS(glucx_isend(comm, buf, 1, pa, 952, &req), GLUCX_ERR_TIMEOUT,
                         "glucx_isend after the wait_any timeout");
            glucx_request_free(req);
            req = NULL;
            ITEST_STATUS(glucx_irecv(comm, buf, sizeof(buf), pa, 953, &req), GLUCX_ERR_TIMEOUT,
                         "glucx_irecv after the wait_any timeout");
            glucx_request_free(req);
            ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_ERR_TIMEOUT,
                         "glucx_barrier after the wait_any timeout");
            /* the receives that were pending end with an error, promptly */
            glucx_status_t ast = glucx_request_wait(a.req, glucx_test_ms(10000));
            ITEST_CHECK(ast != GLUCX_OK && ast != GLUCX_INPROGRESS,
                        "the receive pending at the timeout: wait returned %s",
                        glucx_status_string(ast));
            ms = ms_since(t0);
            ITEST_CHECK(ms < glucx_test_ms(5000),
                        "operations on the failed communicator took %lld ms", (long long)ms);
        }
        rx_free(&a);
        rx_free(&b);
    }
    sync_all(t, "after the timeout checks");
    glucx_comm_destroy(comm);
    return rc;
}

int itest_case_twostep_waitany(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    ts_t *t = ts_open(env, rank, size);
    if (t == NULL)
        return -1;
    if (itest_open(env, rank, size, "wa", WAIT_MS, &ctx, &store, &comm) != GLUCX_OK) {
        ts_close(t);
        return -1;
    }
    int rc = 0;
    for (int R = 0; R < size; R++)
        rc |= waitany_round(t, comm, R);
    rc |= waitany_invalid(t, ctx, store, comm);
    rc |= waitany_timeout(t, ctx, store);
    /* the main communicator was not affected by the other one's failure */
    rc |= exercise(comm, 990, "communicator after the wait_any tests", NULL);
    sync_all(t, "end");
    itest_close(ctx, store, comm);
    ts_close(t);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Case "twostep_wake"                                                                         */

typedef struct waiter {
    int any; /* 1: glucx_request_wait_any, 0: glucx_request_wait */
    glucx_request_t *reqs[2];
    size_t n;
    int64_t timeout_ms;
    unsigned since; /* glucx_comm_wake_count() read before the thread started */
    int use_since;
    pthread_t thread;
    atomic_int started, done;
    glucx_status_t status;
    size_t index;
    int64_t elapsed_ms;
    char error[512];
} waiter_t;

static void *waiter_main(void *arg)
{
    waiter_t *w = arg;
    atomic_store(&w->started, 1);
    int64_t t0 = itest_now_ns();
    if (w->any)
        w->status = glucx_request_wait_any(w->reqs, w->n, w->timeout_ms,
                                           w->use_since ? &w->since : NULL, &w->index);
    else
        w->status = glucx_request_wait(w->reqs[0], w->timeout_ms);
    w->elapsed_ms = ms_since(t0);
    snprintf(w->error, sizeof(w->error), "%s", w->status == GLUCX_OK ? "" : glucx_last_error());
    atomic_store(&w->done, 1);
    return NULL;
}

/* Start a thread waiting for r0 (and r1) with a 60 s limit; a wait_any passes as since a wake
 * count read here when @p since_comm is not NULL. */
static int waiter_start(waiter_t *w, int any, glucx_request_t *r0, glucx_request_t *r1,
                        glucx_comm_t *since_comm)
{
    memset(w, 0, sizeof(*w));
    if (since_comm != NULL) {
        w->use_since = 1;
        w->since = glucx_comm_wake_count(since_comm);
    }
    w->any = any;
    w->reqs[0] = r0;
    w->reqs[1] = r1;
    w->n = r1 != NULL ? 2 : 1;
    w->timeout_ms = glucx_test_ms(60000);
    w->index = 4242;
    if (pthread_create(&w->thread, NULL, waiter_main, w) != 0) {
        ITEST_FAIL("cannot start a thread");
        return -1;
    }
    int64_t end = itest_now_ns() + glucx_test_ms(10000) * 1000000;
    while (!atomic_load(&w->started) && itest_now_ns() < end)
        itest_sleep_ms(1);
    return 0;
}

/* Wait up to @p ms for the thread to return. @return 1 if it did. */
static int waiter_done_within(waiter_t *w, int64_t ms)
{
    int64_t end = itest_now_ns() + ms * 1000000;
    while (!atomic_load(&w->done) && itest_now_ns() < end)
        itest_sleep_ms(5);
    return atomic_load(&w->done);
}

/* A wait_any thread ended by a wake: INPROGRESS, well before its 60 s limit. */
static int check_woken(waiter_t *w, const char *what)
{
    int rc = 0;
    if (!waiter_done_within(w, glucx_test_ms(30000))) {
        ITEST_FAIL("%s: glucx_request_wait_any (60 s limit) did not return within 30 s of "
                   "glucx_comm_wake",
                   what);
        rc = -1;
    }
    pthread_join(w->thread, NULL); /* ends at the latest at its own limit */
    if (w->status != GLUCX_INPROGRESS) {
        ITEST_FAIL("%s: glucx_request_wait_any returned %s (index %zu) after %lld ms, expected "
                   "GLUCX_INPROGRESS after the wake: %s",
                   what, glucx_status_string(w->status), w->index, (long long)w->elapsed_ms,
                   w->error);
        rc = -1;
    }
    ITEST_CHECK(w->elapsed_ms < glucx_test_ms(30000), "%s: woken after %lld ms of a 60 s limit",
                what, (long long)w->elapsed_ms);
    return rc;
}

int itest_case_twostep_wake(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    ts_t *t = ts_open(env, rank, size);
    if (t == NULL)
        return -1;
    if (itest_open(env, rank, size, "wk", glucx_test_ms(60000), &ctx, &store, &comm) != GLUCX_OK) {
        ts_close(t);
        return -1;
    }
    const int R = 0, P = 1;
    int rc = 0;

    /* 1. the wake count; a wake counts for a later wait_any only through since */
    rx_t r0, rs;
    memset(&r0, 0, sizeof(r0));
    memset(&rs, 0, sizeof(rs));
    unsigned since = 0;
    if (rank == R) {
        unsigned c0 = glucx_comm_wake_count(comm);
        glucx_comm_wake(comm);
        glucx_comm_wake(comm);
        glucx_comm_wake(NULL);
        unsigned c1 = glucx_comm_wake_count(comm);
        ITEST_CHECK(c1 - c0 == 2u, "two wakes moved glucx_comm_wake_count from %u to %u", c0, c1);
        ITEST_CHECK(glucx_comm_wake_count(NULL) == 0, "glucx_comm_wake_count(NULL) is %u",
                    glucx_comm_wake_count(NULL));
        rc |= rx_post(comm, &r0, P, 10, 256);
        rc |= rx_post(comm, &rs, P, 15, 256);
        if (rc == 0) {
            /* a wake between reading the count and waiting interrupts the wait at once */
            since = glucx_comm_wake_count(comm);
            glucx_comm_wake(comm);
            size_t idx = 4242;
            int64_t t0 = itest_now_ns();
            glucx_status_t st =
                glucx_request_wait_any(&rs.req, 1, glucx_test_ms(60000), &since, &idx);
            int64_t ms = ms_since(t0);
            ITEST_STATUS(st, GLUCX_INPROGRESS,
                         "glucx_request_wait_any(60 s) with since read before a wake");
            ITEST_CHECK(ms < glucx_test_ms(30000),
                        "wait_any with since before a wake returned after %lld ms", (long long)ms);
            ITEST_CHECK(idx == 4242, "an interrupted wait_any wrote index %zu", idx);
            ITEST_STATUS(glucx_request_test(rs.req), GLUCX_INPROGRESS,
                         "the receive of an interrupted wait_any");
        }
    }
    sync_all(t, "stale wakes done");
    if (rank == P) {
        itest_sleep_ms(300); /* only so that R is waiting by then; the result does not depend */
        rc |= send_wait(comm, R, 10, 200);
    }
    if (rank == R && r0.req != NULL && rs.req != NULL) {
        /* wakes before the call, since NULL: the wait goes on until the message */
        size_t idx = 4242;
        glucx_status_t st = glucx_request_wait_any(&r0.req, 1, WAIT_MS, NULL, &idx);
        if (ITEST_STATUS(st, GLUCX_OK,
                         "glucx_request_wait_any (since NULL) after wakes that came before it") ==
            0) {
            ITEST_CHECK(idx == 0, "wait_any index %zu, expected 0", idx);
            rc |= rx_check(&r0, "receive after stale wakes", R, 200);
            /* a complete request wins over a wake since the count was read */
            glucx_request_t *two[2] = {rs.req, r0.req};
            idx = 4242;
            st = glucx_request_wait_any(two, 2, WAIT_MS, &since, &idx);
            if (ITEST_STATUS(st, GLUCX_OK,
                             "glucx_request_wait_any with a complete request and a wake since "
                             "the count was read") == 0)
                ITEST_CHECK(idx == 1, "wait_any index %zu, expected 1 (the complete one)", idx);
        } else {
            rc = -1;
        }
    }
    sync_all(t, "first message received");
    if (rank == P)
        rc |= send_wait(comm, R, 15, 77);
    if (rank == R && rs.req != NULL) {
        if (ITEST_STATUS(glucx_request_wait(rs.req, WAIT_MS), GLUCX_OK,
                         "the receive of the interrupted wait_any, after the send") == 0)
            rc |= rx_check(&rs, "receive of an interrupted wait_any", R, 77);
        else
            rc = -1;
    }
    rx_free(&r0);
    rx_free(&rs);
    sync_all(t, "part 1 done");

    /* 2. one thread in wait_any on a receive nobody sends yet; the main thread wakes it */
    rx_t r1;
    memset(&r1, 0, sizeof(r1));
    if (rank == R && rx_post(comm, &r1, P, 11, 4096) == 0) {
        waiter_t w;
        if (waiter_start(&w, 1, r1.req, NULL, NULL) == 0) {
            itest_sleep_ms(500); /* let it block */
            ITEST_CHECK(!atomic_load(&w.done),
                        "wait_any returned %s before any wake or message: %s",
                        glucx_status_string(w.status), w.error);
            glucx_comm_wake(comm);
            rc |= check_woken(&w, "single waiter");
            ITEST_STATUS(glucx_request_test(r1.req), GLUCX_INPROGRESS,
                         "the receive after its waiter was woken");
        } else {
            rc = -1;
        }
    }
    sync_all(t, "waiter woken");
    if (rank == P)
        rc |= send_wait(comm, R, 11, 3000);
    if (rank == R && r1.req != NULL) {
        if (ITEST_STATUS(glucx_request_wait(r1.req, WAIT_MS), GLUCX_OK,
                         "the receive whose waiter was woken, after the send") == 0)
            rc |= rx_check(&r1, "receive completed after the wake", R, 3000);
        else
            rc = -1;
        rx_free(&r1);
    }
    sync_all(t, "part 2 done");

    /* 3. two wait_any threads (one request shared) and a plain wait: one wake ends both
     *    wait_any calls and leaves the plain wait waiting, and it still completes */
    rx_t ra, rb, rc_;
    memset(&ra, 0, sizeof(ra));
    memset(&rb, 0, sizeof(rb));
    memset(&rc_, 0, sizeof(rc_));
    waiter_t wa1, wa2, wb;
    int started[3] = {0, 0, 0}; /* wb, wa1, wa2 */
    if (rank == R && rx_post(comm, &ra, P, 12, 512) == 0 && rx_post(comm, &rb, P, 13, 512) == 0 &&
        rx_post(comm, &rc_, P, 14, 512) == 0) {
        started[0] = waiter_start(&wb, 0, rb.req, NULL, NULL) == 0;
        started[1] = started[0] && waiter_start(&wa1, 1, ra.req, NULL, NULL) == 0;
        started[2] = started[1] && waiter_start(&wa2, 1, rc_.req, ra.req, comm) == 0;
        if (started[2]) {
            itest_sleep_ms(500); /* let them block */
            ITEST_CHECK(!atomic_load(&wa1.done) && !atomic_load(&wa2.done) &&
                            !atomic_load(&wb.done),
                        "a wait returned before any wake or message (done: %d %d %d)",
                        atomic_load(&wa1.done), atomic_load(&wa2.done), atomic_load(&wb.done));
            glucx_comm_wake(comm);
            rc |= check_woken(&wa1, "first of two wait_any threads");
            rc |= check_woken(&wa2, "second of two wait_any threads (sharing a request)");
            started[1] = started[2] = 0; /* joined */
            itest_sleep_ms(300);
            for (int i = 0; i < 3; i++) {
                glucx_comm_wake(comm);
                itest_sleep_ms(50);
            }
            if (atomic_load(&wb.done)) {
                ITEST_FAIL("glucx_comm_wake ended a plain glucx_request_wait in another thread: "
                           "it returned %s after %lld ms: %s",
                           glucx_status_string(wb.status), (long long)wb.elapsed_ms, wb.error);
                rc = -1;
            }
        } else {
            rc = -1;
        }
    }
    sync_all(t, "wait_any threads woken");
    if (rank == P) {
        rc |= send_wait(comm, R, 13, 333);
        rc |= send_wait(comm, R, 12, 444);
        rc |= send_wait(comm, R, 14, 111);
    }
    if (rank == R) {
        /* every thread still running ends once the messages are in (or at its own limit) */
        if (started[1])
            pthread_join(wa1.thread, NULL);
        if (started[2])
            pthread_join(wa2.thread, NULL);
        if (started[0]) {
            if (!waiter_done_within(&wb, 30000))
                ITEST_FAIL("the plain wait did not return within 30 s of its message");
            pthread_join(wb.thread, NULL);
            if (ITEST_STATUS(wb.status, GLUCX_OK, "the plain wait left alone by the wakes (%s)",
                             wb.error) == 0)
                rc |= rx_check(&rb, "receive of the plain wait", R, 333);
            else
                rc = -1;
        }
        if (ra.req != NULL) {
            if (wait_any_expect(&ra.req, 1, 0, "{receive whose two waiters were woken}") == 0)
                rc |= rx_check(&ra, "receive of the woken wait_any threads", R, 444);
            else
                rc = -1;
        }
        if (rc_.req != NULL) {
            if (ITEST_STATUS(glucx_request_wait(rc_.req, WAIT_MS), GLUCX_OK, "third receive") == 0)
                rc |= rx_check(&rc_, "third receive", R, 111);
            else
                rc = -1;
        }
        rx_free(&ra);
        rx_free(&rb);
        rx_free(&rc_);
    }
    sync_all(t, "part 3 done");
    rc |= exercise(comm, 20, "communicator after the wakes", NULL);
    sync_all(t, "end");
    itest_close(ctx, store, comm);
    ts_close(t);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Case "twostep_stats"                                                                        */

enum { NMSG = 3 };

/* Bytes of message j from src to dst (j = 0 is empty). */
static size_t stat_bytes(int src, int dst, int j)
{
    return j == 0 ? 0 : 1 + (size_t)((src * 131 + dst * 17 + j * 977) % 3000);
}

int itest_case_twostep_stats(const itest_env_t *env, int rank, int size)
{
    ts_t *t = NULL;
    glucx_context_t *ctx = NULL;
    if (ts_begin(env, rank, size, &t, &ctx) != 0)
        return -1;
    int rc = 0;
    glucx_stats_t want;
    glucx_stats_get(&want);
    glucx_stats_get(NULL); /* accepted */

    /* connect: one communicator, nothing else */
    glucx_comm_t *comm = NULL;
    if (twostep_open(t, ctx, "st", &comm) != GLUCX_OK) {
        glucx_context_destroy(ctx);
        ts_close(t);
        return -1;
    }
    want.comms++;
    rc |= stats_expect(&want, "prepare + connect");

    /* point-to-point: NMSG messages to and from every other rank */
    rx_t rx[ITEST_MAX_RANKS][NMSG];
    glucx_request_t *sreq[ITEST_MAX_RANKS][NMSG];
    void *sbuf[ITEST_MAX_RANKS][NMSG];
    memset(rx, 0, sizeof(rx));
    memset(sreq, 0, sizeof(sreq));
    memset(sbuf, 0, sizeof(sbuf));
    uint64_t nsend = 0, send_bytes = 0, nrecv = 0, recv_bytes = 0;
    rx_t cancelled;
    rc |= rx_post(comm, &cancelled, (rank + 1) % size, 99, 64);
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        for (int j = 0; j < NMSG; j++) {
            rc |= rx_post(comm, &rx[p][j], p, (uint64_t)j, 4096);
            nrecv++;
            recv_bytes += stat_bytes(p, rank, j);
        }
    }
    rc |= stats_expect(&want, "posting receives");
    for (int p = 0; p < size && rc == 0; p++) {
        if (p == rank)
            continue;
        for (int j = 0; j < NMSG; j++) {
            size_t bytes = stat_bytes(rank, p, j);
            sbuf[p][j] = make_msg(rank, p, (uint64_t)j, bytes);
            rc |= ITEST_STATUS(glucx_isend(comm, sbuf[p][j], bytes, p, (uint64_t)j, &sreq[p][j]),
                               GLUCX_OK, "isend of %zu bytes to rank %d", bytes, p);
            nsend++;
            send_bytes += bytes;
        }
    }
    /* sends count when posted */
    want.sends += nsend;
    want.send_bytes += send_bytes;
    glucx_stats_t now;
    glucx_stats_get(&now);
    ITEST_CHECK(now.sends == want.sends && now.send_bytes == want.send_bytes,
                "after posting %llu sends of %llu bytes: " STATS_FMT ", expected sends %llu "
                "(%llu B)",
                (unsigned long long)nsend, (unsigned long long)send_bytes, STATS_ARGS(now),
                (unsigned long long)want.sends, (unsigned long long)want.send_bytes);
    /* complete the receives three ways: wait (then test again), wait_any, test until done */
    for (int p = 0; p < size && rc == 0; p++) {
        if (p == rank)
            continue;
        for (int j = 0; j < NMSG; j++) {
            rx_t *r = &rx[p][j];
            char what[64];
            snprintf(what, sizeof(what), "message %d from rank %d", j, p);
            glucx_status_t st = GLUCX_INPROGRESS;
            if (j == 0) {
                st = glucx_request_wait(r->req, WAIT_MS);
            } else if (j == 1) {
                size_t idx;
                st = glucx_request_wait_any(&r->req, 1, WAIT_MS, NULL, &idx);
            } else {
                int64_t end = itest_now_ns() + (int64_t)WAIT_MS * 1000000;
                while ((st = glucx_request_test(r->req)) == GLUCX_INPROGRESS &&
                       itest_now_ns() < end)
                    ;
            }
            if (ITEST_STATUS(st, GLUCX_OK, "%s", what) != 0) {
                rc = -1;
                break;
            }
            /* j == 1: completed by wait_any and then only freed, so glucx_request_free is what
             * counts it (rx_check would call glucx_request_test) */
            if (j != 1)
                rc |= rx_check(r, what, rank, stat_bytes(p, rank, j));
            else
                rc |= check_msg(what, r->buf, stat_bytes(p, rank, j), p, rank, (uint64_t)j);
        }
    }
    for (int p = 0; p < size; p++)
        for (int j = 0; j < NMSG; j++)
            if (sreq[p][j] != NULL)
                rc |= ITEST_STATUS(glucx_request_wait(sreq[p][j], WAIT_MS), GLUCX_OK,
                                   "send %d to rank %d", j, p);
    if (cancelled.req != NULL) {
        glucx_request_cancel(cancelled.req);
        ITEST_STATUS(glucx_request_wait(cancelled.req, WAIT_MS), GLUCX_ERR_ABORTED,
                     "a cancelled receive");
    }
    rx_free(&cancelled);
    for (int p = 0; p < size; p++) {
        for (int j = 0; j < NMSG; j++) {
            glucx_request_free(sreq[p][j]);
            free(sbuf[p][j]);
            if (rx[p][j].buf != NULL)
                rx_free(&rx[p][j]);
        }
    }
    if (rc == 0) {
        want.recvs += nrecv;
        want.recv_bytes += recv_bytes;
        rc |= stats_expect(&want, "the receives completed (and a cancelled one)");
    }
    sync_all(t, "point-to-point done");

    /* collectives: one each, whatever traffic they make; refused ones count nothing */
    glucx_stats_get(&want);
    int64_t v = rank + 1, sum = 0;
    rc |= ITEST_STATUS(glucx_allreduce(comm, &v, &sum, 1, GLUCX_DTYPE_I64, GLUCX_OP_SUM, NULL),
                       GLUCX_OK, "allreduce");
    ITEST_CHECK(sum == (int64_t)size * (size + 1) / 2, "allreduce: expected %lld, got %lld",
                (long long)size * (size + 1) / 2, (long long)sum);
    rc |= ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier");
    int32_t bc[5];
    for (int i = 0; i < 5; i++)
        bc[i] = rank == 0 ? 1000 + i : -1;
    rc |=
        ITEST_STATUS(glucx_broadcast(comm, bc, 5, GLUCX_DTYPE_I32, 0, NULL), GLUCX_OK, "broadcast");
    for (int i = 0; i < 5; i++)
        ITEST_CHECK(bc[i] == 1000 + i, "broadcast element %d: expected %d, got %d", i, 1000 + i,
                    bc[i]);
    int32_t mine = 7 * rank + 1, all[ITEST_MAX_RANKS];
    glucx_coll_args_t args = {.coll = GLUCX_COLL_ALLGATHER,
                              .sendbuf = &mine,
                              .recvbuf = all,
                              .count = 1,
                              .dtype = GLUCX_DTYPE_I32};
    glucx_request_t *creq = NULL;
    if (ITEST_STATUS(glucx_coll_start(comm, &args, NULL, &creq), GLUCX_OK,
                     "glucx_coll_start(allgather)") == 0) {
        rc |= ITEST_STATUS(glucx_request_wait(creq, WAIT_MS), GLUCX_OK, "started allgather");
        for (int r = 0; r < size; r++)
            ITEST_CHECK(all[r] == 7 * r + 1, "allgather block %d: expected %d, got %d", r,
                        7 * r + 1, all[r]);
        glucx_request_free(creq);
    } else {
        rc = -1;
    }
    want.collectives += 4;
    rc |= stats_expect(&want, "allreduce, barrier, broadcast and a started allgather");
    ITEST_STATUS(glucx_allreduce(comm, NULL, NULL, 4, GLUCX_DTYPE_I64, GLUCX_OP_SUM, NULL),
                 GLUCX_ERR_INVALID_ARG, "allreduce of 4 elements with NULL buffers");
    rc |= stats_expect(&want, "an allreduce refused for NULL buffers");
    glucx_coll_opts_t bad = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = "no_such_alg"};
    ITEST_STATUS(glucx_allreduce(comm, &v, &sum, 1, GLUCX_DTYPE_I64, GLUCX_OP_SUM, &bad),
                 GLUCX_ERR_INVALID_ARG, "allreduce with an unknown algorithm");
    rc |= stats_expect(&want, "an allreduce refused for an unknown algorithm (not started)");
    glucx_stats_get(&want); /* the checks below do not repeat a difference found here */

    /* a communicator through glucx_comm_create counts once too; destroy counts nothing */
    glucx_store_t *store = NULL;
    glucx_comm_t *comm2 = NULL;
    if (ITEST_STATUS(glucx_store_file_create(env->store_dir, &store), GLUCX_OK, "store") == 0 &&
        itest_comm(ctx, store, rank, size, "st-store", WAIT_MS, &comm2) == GLUCX_OK) {
        want.comms++;
        rc |= stats_expect(&want, "glucx_comm_create");
        rc |= ITEST_STATUS(glucx_barrier(comm2, NULL), GLUCX_OK, "barrier on the second comm");
        want.collectives++;
    } else {
        rc = -1;
    }
    sync_all(t, "before destroying");
    glucx_comm_destroy(comm2);
    glucx_comm_destroy(comm);
    rc |= stats_expect(&want, "destroying both communicators");
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    ts_close(t);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Case "twostep_compact"                                                                      */

/* Compact address layout (glucx.h documents the content, comm.c the byte offsets; the test
 * tampers with single fields to play a mixed-up address): */
#define CA_RANK 8
#define CA_LEN 16
#define CA_DIGEST 24
#define CA_PORT 34
#define CA_ADDR 36

/* Error cases end with every rank failing; this short timeout bounds the ranks that wait for
 * the rank that found the error (a base value, scaled). */
#define COMPACT_FAIL_TIMEOUT_MS 4000

static glucx_status_t prepare_ms(glucx_context_t *ctx, int rank, int size, const char *name,
                                 int64_t timeout_ms, glucx_comm_t **comm_p)
{
    glucx_comm_params_t params = {.field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
                                  .rank = rank,
                                  .size = size,
                                  .name = name,
                                  .timeout_ms = timeout_ms};
    *comm_p = NULL;
    return glucx_comm_prepare(ctx, &params, comm_p);
}

/* A TCP port of 127.0.0.1 that refuses connections (bound, then closed: nobody listens). */
static uint16_t refused_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    uint16_t port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = a.sin_port; /* network order, as in the compact address */
    if (fd >= 0)
        close(fd);
    return port;
}

enum compact_fault {
    FAULT_DIGEST,    /* rank 0 sees rank 1's digest changed */
    FAULT_LENGTH,    /* ... its record length changed */
    FAULT_RANK,      /* ... rank 1's entry is another rank's compact address */
    FAULT_REFUSED,   /* ... its listener's port refuses connections */
    FAULT_DUPLICATE, /* ... its listener is rank 2's (3+ ranks) */
};

static const char *const fault_names[] = {"digest", "length", "rank", "refused", "duplicate"};

/*
 * Every rank publishes its compact address; rank 0 connects with rank 1's entry altered by
 * @p fault and must fail at once with @p want naming rank 1 (or, for a duplicate, rank 2, whose
 * record arrives twice) and the words @p says; the other ranks wait in vain for rank 0 and fail
 * within their (short) timeout. @return 0 when all holds.
 */
static int compact_fault(ts_t *t, glucx_context_t *ctx, enum compact_fault fault,
                         glucx_status_t want, const char *says)
{
    const int rank = t->rank, size = t->size;
    const int64_t timeout_ms = glucx_test_ms(COMPACT_FAIL_TIMEOUT_MS);
    char name[48];
    snprintf(name, sizeof(name), "tc-fault-%s", fault_names[fault]);
    glucx_comm_t *comm = NULL;
    unsigned char ca[GLUCX_COMPACT_ADDRESS_BYTES];
    glucx_status_t st = prepare_ms(ctx, rank, size, name, timeout_ms, &comm);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_prepare('%s')", name) == 0)
        st = glucx_comm_compact_address(comm, "127.0.0.1", ca, sizeof(ca));
    ITEST_STATUS(st, GLUCX_OK, "glucx_comm_compact_address('%s')", name);
    int rc = exchange(t, st == GLUCX_OK ? ca : NULL, st == GLUCX_OK ? sizeof(ca) : 0);
    if (rc != 0 || st != GLUCX_OK) {
        glucx_comm_destroy(comm);
        return -1;
    }
    const void *recs[ITEST_MAX_RANKS];
    for (int r = 0; r < size; r++)
        recs[r] = t->recs[r];
    int named = 1;
    if (rank == 0) {
        unsigned char *one = t->recs[1];
        switch (fault) {
        case FAULT_DIGEST:
            one[CA_DIGEST + 3] ^= 0x10;
            break;
        case FAULT_LENGTH:
            one[CA_LEN] ^= 0x01;
            break;
        case FAULT_RANK: /* rank 2's address (with 2 ranks: rank 0's own) in rank 1's place */
            memcpy(one, t->recs[size > 2 ? 2 : 0], GLUCX_COMPACT_ADDRESS_BYTES);
            break;
        case FAULT_REFUSED: {
            uint16_t port = refused_port();
            ITEST_CHECK(port != 0, "no free TCP port on 127.0.0.1");
            memcpy(one + CA_PORT, &port, 2);
            break;
        }
        case FAULT_DUPLICATE:
            memcpy(one + CA_PORT, t->recs[2] + CA_PORT, 2 + 16);
            named = 2;
            break;
        }
    }
    const int64_t t0 = itest_now_ns();
    st = glucx_comm_connect(comm, recs, t->lens);
    const int64_t took = ms_since(t0);
    if (rank == 0) {
        const char *text = glucx_last_error();
        if (ITEST_STATUS(st, want,
                         "glucx_comm_connect with rank 1's compact address altered "
                         "(%s)",
                         fault_names[fault]) == 0) {
            ITEST_CHECK(names(text, 0) && names(text, named),
                        "the %s message does not name rank 0 and rank %d: \"%s\"",
                        fault_names[fault], named, text);
            ITEST_CHECK(strstr(text, says) != NULL, "the %s message does not say '%s': \"%s\"",
                        fault_names[fault], says, text);
            itest_note("%s: %s", fault_names[fault], text);
        } else {
            rc = -1;
        }
        ITEST_CHECK(took < timeout_ms / 2,
                    "the %s error took %lld ms, not well within the %lld ms timeout",
                    fault_names[fault], (long long)took, (long long)timeout_ms);
    } else if (st == GLUCX_OK) {
        ITEST_FAIL("glucx_comm_connect('%s') succeeded although rank 0 failed", name);
        rc = -1;
    } else {
        ITEST_CHECK(took < timeout_ms + glucx_test_ms(10000),
                    "glucx_comm_connect('%s') failed only after %lld ms (timeout %lld ms)", name,
                    (long long)took, (long long)timeout_ms);
    }
    /* Rank 0's worker outlives the others' connect: UCX 1.13.1 can abort a process whose tcp
     * endpoint to a destroyed worker is refused (tcp_ep.c:478, "Assertion `!(ep->flags &
     * UCT_TCP_EP_FLAG_CTX_TYPE_TX)'"; also with full records), which is not what this checks. */
    if (sync_all(t, "after the failed connects") != 0)
        rc = -1;
    glucx_comm_destroy(comm);
    return rc;
}

/*
 * Compact addresses (glucx_comm_compact_address): argument checks; a communicator connected
 * from compact addresses only (this rank's own entry NULL on rank 0, its own compact address on
 * the others), then one from a mix (rank 0's full record, the others' compact addresses), each
 * with point-to-point traffic and an allreduce checked and the transport of the variant (shared
 * memory between the ranks of the shm variant: fetching the records changes no endpoint); a
 * compact address after connect is refused. Then rank 1's entry altered in rank 0's copy fails
 * rank 0's connect at once, naming both ranks: digest (MISMATCH), length (MISMATCH), another
 * rank's address (MISMATCH), a port that refuses (PEER_FAILED), and with 3 ranks rank 2's
 * listener in its place (MISMATCH: rank 2's record twice). Communicators destroyed while
 * listening leave no descriptor. Last, UCX_TLS=shm,self (no network transport):
 * GLUCX_ERR_UNSUPPORTED, and the full records still connect.
 */
int itest_case_twostep_compact(const itest_env_t *env, int rank, int size)
{
    ts_t *t = NULL;
    glucx_context_t *ctx = NULL;
    if (ts_begin(env, rank, size, &t, &ctx) != 0)
        return -1;
    int rc = 0;
    unsigned char ca[GLUCX_COMPACT_ADDRESS_BYTES + 8], again[GLUCX_COMPACT_ADDRESS_BYTES];
    const void *rec = NULL;
    size_t len = 0;

    /* 1. arguments; the compact address is fixed-size, stable and shorter than the record */
    glucx_comm_t *comm = NULL;
    glucx_status_t st = prepare(ctx, rank, size, "tc-compact", &comm);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_prepare('tc-compact')") == 0) {
        ITEST_STATUS(glucx_comm_compact_address(comm, NULL, ca, sizeof(ca)), GLUCX_ERR_INVALID_ARG,
                     "glucx_comm_compact_address with a NULL host");
        ITEST_STATUS(glucx_comm_compact_address(comm, "localhost", ca, sizeof(ca)),
                     GLUCX_ERR_INVALID_ARG, "glucx_comm_compact_address('localhost')");
        check_text("glucx_comm_compact_address('localhost')", "'localhost'");
        ITEST_STATUS(
            glucx_comm_compact_address(comm, "127.0.0.1", ca, GLUCX_COMPACT_ADDRESS_BYTES - 1),
            GLUCX_ERR_INVALID_ARG, "glucx_comm_compact_address into %d bytes",
            GLUCX_COMPACT_ADDRESS_BYTES - 1);
        memset(ca, 0x5a, sizeof(ca));
        st = glucx_comm_compact_address(comm, "127.0.0.1", ca, sizeof(ca));
        if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_compact_address('127.0.0.1')") == 0) {
            ITEST_CHECK(ca[GLUCX_COMPACT_ADDRESS_BYTES] == 0x5a,
                        "glucx_comm_compact_address wrote past %d bytes",
                        GLUCX_COMPACT_ADDRESS_BYTES);
            ITEST_STATUS(glucx_comm_compact_address(comm, "::1", again, sizeof(again)), GLUCX_OK,
                         "a second glucx_comm_compact_address");
            ITEST_CHECK(memcmp(ca, again, sizeof(again)) == 0,
                        "two glucx_comm_compact_address calls differ");
            ITEST_STATUS(glucx_comm_address(comm, &rec, &len), GLUCX_OK, "glucx_comm_address");
            ITEST_CHECK(len > GLUCX_COMPACT_ADDRESS_BYTES,
                        "the record (%zu bytes) is not longer than the compact address", len);
            if (rank == 0)
                itest_note("record %zu bytes, compact address %d bytes", len,
                           GLUCX_COMPACT_ADDRESS_BYTES);
        }
    }
    rc |= exchange(t, st == GLUCX_OK ? ca : NULL, st == GLUCX_OK ? GLUCX_COMPACT_ADDRESS_BYTES : 0);
    if (rc == 0 && st == GLUCX_OK) {
        const void *recs[ITEST_MAX_RANKS];
        for (int r = 0; r < size; r++)
            recs[r] = r == rank && rank == 0 ? NULL : t->recs[r];
        st = glucx_comm_connect(comm, recs, t->lens);
        if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_connect from compact addresses") == 0) {
            itest_check_transport(env, comm);
            rc |= exercise(comm, 21, "communicator from compact addresses", NULL);
            ITEST_STATUS(glucx_comm_compact_address(comm, "127.0.0.1", again, sizeof(again)),
                         GLUCX_ERR_INVALID_ARG, "glucx_comm_compact_address after connect");
        }
    }
    if (st != GLUCX_OK)
        rc = -1;
    glucx_comm_destroy(comm);

    /* 2. a mix: rank 0 publishes its full record, the others their compact addresses */
    comm = NULL;
    st = prepare(ctx, rank, size, "tc-mixed", &comm);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_prepare('tc-mixed')") == 0) {
        if (rank == 0) {
            st = glucx_comm_address(comm, &rec, &len);
        } else {
            st = glucx_comm_compact_address(comm, "127.0.0.1", ca, sizeof(ca));
            rec = ca;
            len = GLUCX_COMPACT_ADDRESS_BYTES;
        }
    }
    rc |= exchange(t, st == GLUCX_OK ? rec : NULL, st == GLUCX_OK ? len : 0);
    if (rc == 0 && st == GLUCX_OK) {
        const void *recs[ITEST_MAX_RANKS];
        for (int r = 0; r < size; r++)
            recs[r] = r == rank ? NULL : t->recs[r];
        st = glucx_comm_connect(comm, recs, t->lens);
        if (ITEST_STATUS(st, GLUCX_OK,
                         "glucx_comm_connect from rank 0's record and compact "
                         "addresses") == 0) {
            itest_check_transport(env, comm);
            rc |= exercise(comm, 22, "communicator from a record and compact addresses", NULL);
        }
    }
    if (st != GLUCX_OK)
        rc = -1;
    glucx_comm_destroy(comm);

    /* 3. mixed-up addresses fail at once on the rank that got them */
    rc |= compact_fault(t, ctx, FAULT_DIGEST, GLUCX_ERR_MISMATCH, "digest");
    rc |= compact_fault(t, ctx, FAULT_LENGTH, GLUCX_ERR_MISMATCH, "announces");
    rc |= compact_fault(t, ctx, FAULT_RANK, GLUCX_ERR_MISMATCH, "compact address given for");
    rc |= compact_fault(t, ctx, FAULT_REFUSED, GLUCX_ERR_PEER_FAILED, "listener at 127.0.0.1:");
    if (size > 2)
        rc |= compact_fault(t, ctx, FAULT_DUPLICATE, GLUCX_ERR_MISMATCH, "twice");

    /* 4. listening communicators destroyed unconnected: no descriptor (or, under ASan, memory)
     * left, the listener included */
    int fds_before = -1;
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof(name), "tc-unused-%d", i);
        comm = NULL;
        if (ITEST_STATUS(prepare(ctx, rank, size, name, &comm), GLUCX_OK,
                         "glucx_comm_prepare('%s')", name) == 0)
            ITEST_STATUS(glucx_comm_compact_address(comm, "127.0.0.1", ca, sizeof(ca)), GLUCX_OK,
                         "glucx_comm_compact_address('%s')", name);
        glucx_comm_destroy(comm);
        if (i == 0)
            fds_before = itest_open_fds(); /* after the first: UCX's lazy set-up is done */
    }
    ITEST_CHECK(itest_open_fds() == fds_before,
                "3 listening communicators destroyed unconnected changed the open descriptors "
                "from %d to %d",
                fds_before, itest_open_fds());

    /* 5. no network transport: no compact address, the full records still work */
    glucx_context_t *shm_ctx = NULL;
    setenv("UCX_TLS", "shm,self", 1);
    st = glucx_context_create(NULL, &shm_ctx);
    itest_apply_variant(env); /* back to the variant's transports */
    if (strcmp(env->variant, "tcp") != 0)
        unsetenv("UCX_TLS");
    comm = NULL;
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_context_create with UCX_TLS=shm,self") == 0)
        st = prepare(shm_ctx, rank, size, "tc-shmonly", &comm);
    if (st == GLUCX_OK) {
        ITEST_STATUS(glucx_comm_compact_address(comm, "127.0.0.1", ca, sizeof(ca)),
                     GLUCX_ERR_UNSUPPORTED, "glucx_comm_compact_address with UCX_TLS=shm,self");
        check_text("glucx_comm_compact_address with UCX_TLS=shm,self", "UCX_TLS");
        st = glucx_comm_address(comm, &rec, &len);
    }
    rc |= exchange(t, st == GLUCX_OK ? rec : NULL, st == GLUCX_OK ? len : 0);
    if (rc == 0 && st == GLUCX_OK) {
        const void *recs[ITEST_MAX_RANKS];
        for (int r = 0; r < size; r++)
            recs[r] = r == rank ? NULL : t->recs[r];
        st = glucx_comm_connect(comm, recs, t->lens);
        if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_connect with UCX_TLS=shm,self") == 0)
            rc |= exercise(comm, 23, "communicator with UCX_TLS=shm,self", NULL);
    }
    if (st != GLUCX_OK)
        rc = -1;
    glucx_comm_destroy(comm);
    glucx_context_destroy(shm_ctx);
    glucx_context_destroy(ctx);
    ts_close(t);
    return rc;
}
