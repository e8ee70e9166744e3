/*
 * Case "p2p": tagged non-blocking send/receive between real processes: ring exchange,
 * zero-byte and 1 MiB messages, FIFO order of several messages with one tag (receives posted
 * before and after the sends), receives from a set of peers (duplicates and this rank included),
 * different tags matched out of order, the largest tag, cancel of an unmatched receive,
 * truncation (GLUCX_ERR_TRUNCATED, nothing written past the posted buffer), glucx_request_info.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "support/util.h"

#define WAIT_MS glucx_test_ms(30000)

static uint64_t seed_of(int src, uint64_t tag, int k)
{
    return ((uint64_t)(unsigned)src << 40) ^ (tag << 8) ^ (uint64_t)(unsigned)k ^ 0xabcdef;
}

/* Check @p bytes received bytes against the pattern of (src, tag, k). */
static int check_pattern(const char *what, const void *buf, size_t bytes, int src, uint64_t tag,
                         int k)
{
    if (bytes == 0)
        return 0;
    unsigned char *want = malloc(bytes);
    if (want == NULL) {
        ITEST_FAIL("out of memory");
        return -1;
    }
    glucx_test_fill_bytes(want, bytes, seed_of(src, tag, k));
    int rc = 0;
    const unsigned char *got = buf;
    for (size_t i = 0; i < bytes; i++) {
        if (got[i] != want[i]) {
            ITEST_FAIL("%s: byte %zu of %zu from rank %d: expected 0x%02x, got 0x%02x", what, i,
                       bytes, src, want[i], got[i]);
            rc = -1;
            break;
        }
    }
    free(want);
    return rc;
}

/* Check that bytes [from, to) of buf still hold the fill pattern of itest_alloc. */
static int check_untouched(const char *what, const void *buf, size_t from, size_t to)
{
    const unsigned char *p = buf;
    for (size_t i = from; i < to; i++) {
        if (p[i] != ITEST_FILL_BYTE) {
            ITEST_FAIL("%s: byte %zu past the %zu received bytes was written (0x%02x)", what, i,
                       from, p[i]);
            return -1;
        }
    }
    return 0;
}

static int wait_ok(glucx_request_t *req, const char *what)
{
    return ITEST_STATUS(glucx_request_wait(req, WAIT_MS), GLUCX_OK, "wait for %s", what);
}

static int check_info(glucx_request_t *req, const char *what, int peer, size_t bytes)
{
    int p = -2;
    size_t b = (size_t)-1;
    if (ITEST_STATUS(glucx_request_info(req, &p, &b), GLUCX_OK, "glucx_request_info(%s)", what))
        return -1;
    if (p != peer || b != bytes) {
        ITEST_FAIL("%s: glucx_request_info says peer %d, %zu bytes; expected peer %d, %zu bytes",
                   what, p, b, peer, bytes);
        return -1;
    }
    return 0;
}

/* Send bytes of pattern (rank, tag, k) to dst. */
static int post_send(glucx_comm_t *comm, void **buf_p, size_t bytes, int dst, uint64_t tag, int k,
                     glucx_request_t **req_p)
{
    *buf_p = NULL;
    *req_p = NULL;
    void *buf = NULL;
    if (bytes > 0) {
        buf = malloc(bytes);
        if (buf == NULL) {
            ITEST_FAIL("out of memory");
            return -1;
        }
        glucx_test_fill_bytes(buf, bytes, seed_of(glucx_comm_rank(comm), tag, k));
    }
    *buf_p = buf;
    return ITEST_STATUS(glucx_isend(comm, buf, bytes, dst, tag, req_p), GLUCX_OK,
                        "isend of %zu bytes to rank %d tag %llu", bytes, dst,
                        (unsigned long long)tag);
}

/* One message prev -> this rank, next <- this rank, of the given sizes and tag. */
static int exchange(glucx_comm_t *comm, size_t send_bytes, size_t recv_cap, uint64_t tag,
                    const char *what)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    unsigned char *rbuf = itest_alloc(recv_cap);
    void *sbuf = NULL;
    glucx_request_t *rr = NULL, *sr = NULL;
    int rc = -1;
    if (rbuf == NULL)
        return -1;
    if (ITEST_STATUS(glucx_irecv(comm, recv_cap > 0 ? rbuf : NULL, recv_cap, prev, tag, &rr),
                     GLUCX_OK, "%s: irecv", what))
        goto out;
    if (post_send(comm, &sbuf, send_bytes, next, tag, 0, &sr) != 0)
        goto out;
    if (wait_ok(rr, what) || wait_ok(sr, what))
        goto out;
    rc = 0;
    rc |= check_info(rr, what, prev, send_bytes);
    rc |= check_info(sr, what, next, send_bytes);
    rc |= check_pattern(what, rbuf, send_bytes, prev, tag, 0);
    rc |= check_untouched(what, rbuf, send_bytes, recv_cap);
    rc |= itest_guard_ok(rbuf, recv_cap, what);
out:
    glucx_request_free(rr);
    glucx_request_free(sr);
    free(sbuf);
    free(rbuf);
    return rc;
}

/* Several messages with one tag arrive in the order they were sent. */
static int fifo(glucx_comm_t *comm, uint64_t tag, int recv_first)
{
    enum { K = 8 };
    static const size_t sizes[K] = {0, 1, 100, 70000, 5, 300000, 2, 4096};
    const size_t cap = 300000;
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    unsigned char *rbuf[K] = {NULL};
    void *sbuf[K] = {NULL};
    glucx_request_t *rr[K] = {NULL}, *sr[K] = {NULL};
    char what[96];
    snprintf(what, sizeof(what), "FIFO tag %llu (%s)", (unsigned long long)tag,
             recv_first ? "receives posted first" : "sends posted first");
    int rc = 0;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        if (pass == 1 && ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "%s: barrier", what)) {
            rc = -1;
            break;
        }
        if ((pass == 0) == (recv_first != 0)) {
            for (int k = 0; k < K && rc == 0; k++) {
                rbuf[k] = itest_alloc(cap);
                if (rbuf[k] == NULL ||
                    ITEST_STATUS(glucx_irecv(comm, rbuf[k], cap, prev, tag, &rr[k]), GLUCX_OK,
                                 "%s: irecv %d", what, k))
                    rc = -1;
            }
        } else {
            for (int k = 0; k < K && rc == 0; k++)
                rc = post_send(comm, &sbuf[k], sizes[k], next, tag, k, &sr[k]);
        }
    }
    for (int k = 0; k < K && rc == 0; k++)
        if (wait_ok(rr[k], what) || wait_ok(sr[k], what))
            rc = -1;
    for (int k = 0; k < K && rc == 0; k++) {
        char w[128];
        snprintf(w, sizeof(w), "%s: message %d", what, k);
        if (check_info(rr[k], w, prev, sizes[k]) ||
            check_pattern(w, rbuf[k], sizes[k], prev, tag, k) ||
            check_untouched(w, rbuf[k], sizes[k], cap) || itest_guard_ok(rbuf[k], cap, w))
            rc = -1;
    }
    for (int k = 0; k < K; k++) {
        glucx_request_free(rr[k]);
        glucx_request_free(sr[k]);
        free(rbuf[k]);
        free(sbuf[k]);
    }
    return rc;
}

/* Rank 0 receives one message from each other rank through receives from a peer set that holds
 * every rank, duplicates and itself; then every rank receives from itself through a set. */
static int any_source(glucx_comm_t *comm)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const uint64_t tag = 8, self_tag = 9;
    int rc = 0;
    int peers[ITEST_MAX_RANKS + 2];
    for (int r = 0; r < n; r++)
        peers[r] = n - 1 - r;
    peers[n] = n - 1; /* duplicates */
    peers[n + 1] = 0;
    if (rank == 0) {
        glucx_request_t *rr[ITEST_MAX_RANKS] = {NULL};
        unsigned char *buf[ITEST_MAX_RANKS] = {NULL};
        int seen[ITEST_MAX_RANKS] = {0};
        for (int k = 0; k < n - 1 && rc == 0; k++) {
            buf[k] = itest_alloc(64);
            if (buf[k] == NULL ||
                ITEST_STATUS(glucx_irecv_any(comm, buf[k], 64, peers, n + 2, tag, &rr[k]), GLUCX_OK,
                             "irecv_any %d", k))
                rc = -1;
        }
        for (int k = 0; k < n - 1 && rc == 0; k++) {
            if (wait_ok(rr[k], "irecv_any")) {
                rc = -1;
                break;
            }
            int p = -1;
            size_t b = 0;
            glucx_request_info(rr[k], &p, &b);
            if (p < 1 || p >= n || seen[p]) {
                ITEST_FAIL("irecv_any %d: glucx_request_info gives peer %d (only ranks 1..%d "
                           "sent, once each)",
                           k, p, n - 1);
                rc = -1;
                continue;
            }
            seen[p] = 1;
            if (b != 10 + (size_t)p) {
                ITEST_FAIL("irecv_any %d from rank %d: %zu bytes, expected %zu", k, p, b,
                           10 + (size_t)p);
                rc = -1;
            }
            rc |= check_pattern("irecv_any", buf[k], b, p, tag, 0);
            rc |= check_untouched("irecv_any", buf[k], b, 64);
        }
        for (int k = 0; k < n - 1; k++) {
            glucx_request_free(rr[k]);
            free(buf[k]);
        }
    } else {
        void *sbuf;
        glucx_request_t *sr;
        if (post_send(comm, &sbuf, 10 + (size_t)rank, 0, tag, 0, &sr) != 0 ||
            wait_ok(sr, "send to rank 0's irecv_any"))
            rc = -1;
        glucx_request_free(sr);
        free(sbuf);
    }
    if (rc != 0)
        return rc;

    /* from itself, through a set {rank, rank, next}: only this rank sends with self_tag here */
    int self_set[3] = {rank, rank, (rank + 1) % n};
    unsigned char *rbuf = itest_alloc(32);
    glucx_request_t *rr = NULL, *sr = NULL;
    void *sbuf = NULL;
    if (rbuf == NULL ||
        ITEST_STATUS(glucx_irecv_any(comm, rbuf, 32, self_set, 3, self_tag, &rr), GLUCX_OK,
                     "irecv_any from a set with this rank") ||
        post_send(comm, &sbuf, 20, rank, self_tag, 0, &sr) != 0 ||
        wait_ok(rr, "receive from self") || wait_ok(sr, "send to self") ||
        check_info(rr, "receive from self", rank, 20) ||
        check_pattern("receive from self", rbuf, 20, rank, self_tag, 0))
        rc = -1;
    glucx_request_free(rr);
    glucx_request_free(sr);
    free(sbuf);
    free(rbuf);
    return rc;
}

/* Tag A then tag B sent; B's receive posted first: each gets its own message. */
static int tags_out_of_order(glucx_comm_t *comm)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    const uint64_t ta = 10, tb = 11;
    unsigned char *ba = itest_alloc(200), *bb = itest_alloc(200);
    void *sa = NULL, *sb = NULL;
    glucx_request_t *ra = NULL, *rb = NULL, *qa = NULL, *qb = NULL;
    int rc = -1;
    if (ba == NULL || bb == NULL)
        goto out;
    if (post_send(comm, &sa, 150, next, ta, 0, &qa) || post_send(comm, &sb, 120, next, tb, 0, &qb))
        goto out;
    if (ITEST_STATUS(glucx_irecv(comm, bb, 200, prev, tb, &rb), GLUCX_OK, "irecv tag B") ||
        wait_ok(rb, "tag B") ||
        ITEST_STATUS(glucx_irecv(comm, ba, 200, prev, ta, &ra), GLUCX_OK, "irecv tag A") ||
        wait_ok(ra, "tag A") || wait_ok(qa, "send A") || wait_ok(qb, "send B"))
        goto out;
    rc = 0;
    rc |= check_info(ra, "tag A", prev, 150);
    rc |= check_info(rb, "tag B", prev, 120);
    rc |= check_pattern("tag A", ba, 150, prev, ta, 0);
    rc |= check_pattern("tag B", bb, 120, prev, tb, 0);
out:
    glucx_request_free(ra), glucx_request_free(rb), glucx_request_free(qa), glucx_request_free(qb);
    free(ba), free(bb), free(sa), free(sb);
    return rc;
}

/* A receive nobody matches: in progress, then cancelled -> GLUCX_ERR_ABORTED; freeing another
 * unmatched receive returns promptly. */
static int cancel(glucx_comm_t *comm)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int prev = (rank + n - 1) % n;
    unsigned char *buf = itest_alloc(128);
    glucx_request_t *req = NULL, *req2 = NULL;
    int rc = -1;
    if (buf == NULL)
        return -1;
    if (ITEST_STATUS(glucx_irecv(comm, buf, 128, prev, 12, &req), GLUCX_OK, "irecv to cancel"))
        goto out;
    ITEST_STATUS(glucx_request_test(req), GLUCX_INPROGRESS, "request_test of an unmatched irecv");
    ITEST_STATUS(glucx_request_info(req, NULL, NULL), GLUCX_INPROGRESS,
                 "request_info of an unmatched irecv");
    if (ITEST_STATUS(glucx_request_cancel(req), GLUCX_OK, "request_cancel"))
        goto out;
    int64_t t0 = itest_now_ns();
    if (ITEST_STATUS(glucx_request_wait(req, glucx_test_ms(10000)), GLUCX_ERR_ABORTED,
                     "wait for a cancelled receive"))
        goto out;
    int64_t ms = (itest_now_ns() - t0) / 1000000;
    ITEST_CHECK(ms < glucx_test_ms(5000), "waiting for a cancelled receive took %lld ms",
                (long long)ms);
    check_untouched("cancelled receive", buf, 0, 128);
    if (ITEST_STATUS(glucx_irecv(comm, buf, 128, prev, 13, &req2), GLUCX_OK, "irecv to free"))
        goto out;
    t0 = itest_now_ns();
    glucx_request_free(req2);
    req2 = NULL;
    ms = (itest_now_ns() - t0) / 1000000;
    ITEST_CHECK(ms < glucx_test_ms(5000), "freeing an unmatched receive took %lld ms",
                (long long)ms);
    rc = 0;
out:
    glucx_request_free(req);
    glucx_request_free(req2);
    free(buf);
    return rc;
}

/* A longer message than posted: GLUCX_ERR_TRUNCATED, nothing written past the buffer, and the
 * sender's request completes. */
static int truncation(glucx_comm_t *comm, size_t send_bytes, size_t cap, uint64_t tag)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    char what[96];
    snprintf(what, sizeof(what), "truncation (%zu bytes into %zu)", send_bytes, cap);
    unsigned char *rbuf = itest_alloc(cap);
    void *sbuf = NULL;
    glucx_request_t *rr = NULL, *sr = NULL;
    int rc = -1;
    if (rbuf == NULL)
        return -1;
    if (ITEST_STATUS(glucx_irecv(comm, rbuf, cap, prev, tag, &rr), GLUCX_OK, "%s: irecv", what) ||
        post_send(comm, &sbuf, send_bytes, next, tag, 0, &sr) != 0)
        goto out;
    glucx_status_t st = glucx_request_wait(rr, WAIT_MS);
    rc = ITEST_STATUS(st, GLUCX_ERR_TRUNCATED, "%s: the receive", what);
    if (st == GLUCX_ERR_TRUNCATED)
        ITEST_CHECK(glucx_last_error()[0] != '\0', "%s: no error text", what);
    rc |= itest_guard_ok(rbuf, cap, what);
    /* the sender must not hang whatever its status */
    int64_t t0 = itest_now_ns();
    st = glucx_request_wait(sr, WAIT_MS);
    if (st == GLUCX_ERR_TIMEOUT) {
        ITEST_FAIL("%s: the send did not complete in %lld ms", what,
                   (long long)(itest_now_ns() - t0) / 1000000);
        rc = -1;
    }
out:
    glucx_request_free(rr);
    glucx_request_free(sr);
    free(sbuf);
    free(rbuf);
    return rc;
}

int itest_case_p2p(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "p2p", glucx_test_ms(60000), &ctx, &store, &comm) != GLUCX_OK)
        return -1;
    itest_check_transport(env, comm);
    int rc = 0;
    rc |= exchange(comm, 1000, 1000, 1, "ring exchange of 1000 bytes");
    rc |= exchange(comm, 0, 0, 2, "zero-byte message, NULL buffers");
    rc |= exchange(comm, 0, 16, 3, "zero-byte message into 16 bytes");
    rc |= exchange(comm, (1 << 20) - 3, 1 << 20, 4, "1 MiB - 3 bytes into 1 MiB");
    rc |= exchange(comm, 1 << 20, 1 << 20, 5, "1 MiB");
    rc |= exchange(comm, 33, 64, 0, "tag 0");
    rc |= exchange(comm, 17, 64, GLUCX_TAG_MAX, "tag GLUCX_TAG_MAX");
    rc |= fifo(comm, 6, 1);
    rc |= fifo(comm, 7, 0);
    rc |= any_source(comm);
    rc |= tags_out_of_order(comm);
    rc |= cancel(comm);
    rc |= exchange(comm, 500, 500, 15, "exchange after a cancel");
    rc |= truncation(comm, 100, 64, 14);
    rc |= truncation(comm, 1 << 20, 1 << 19, 16);
    itest_close(ctx, store, comm);
    return rc;
}
