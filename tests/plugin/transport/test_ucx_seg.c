/*
 * UCX transport: exact-length messages (GLUCX_TX_TAG_EXACT) cut into segments
 * (glucx_tx_ucx_context_set_net_seg). Segments are meant for ranks on other hosts; these tests
 * turn them on between the processes of this host too (local_too) with a small segment, so
 * that every path runs with many segments: exact sizes around the segment size, receives posted
 * before and after the data arrived, self-sends, synchronous sends; lengths that differ between
 * sender and receiver (completed at once as an unsegmented receive would be, never a hang);
 * ranks with different settings (whole messages between them); cancel; a peer's failure. Each
 * runs with UCX's default transports and with UCX_TLS=tcp.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ucx_test_common.h"

#define SEG 4096
#define GUARD 64
#define GUARD_BYTE 0xAB

static void run_modes_seg(int n, int (*fn)(int, int, void *), const size_t *seg, int timeout_s)
{
    for (int mode = UCX_TEST_DEFAULT; mode <= UCX_TEST_TCP; mode++) {
        ucx_test_t *t = ucx_test_new(mode, 0);
        assert_non_null(t);
        for (int r = 0; r < n; r++)
            t->net_seg[r] = seg[r];
        int rc = glucx_test_procs_run(n, fn, t, timeout_s);
        if (rc != 0)
            fprintf(stderr, "failed in %s mode\n", ucx_mode_name(mode));
        assert_int_equal(rc, 0);
    }
}

static uint64_t exact_tag(uint64_t hi, uint64_t lo)
{
    return GLUCX_TX_TAG_EXACT | ucx_tag(hi, lo);
}

static int guard_ok(const unsigned char *p)
{
    for (int i = 0; i < GUARD; i++)
        if (p[i] != GUARD_BYTE)
            return 0;
    return 1;
}

/* Exchange one message of n bytes with the peer and with self on tag; the receives posted
 * before (early) or after the sends completed. sync: synchronous sends. */
static int exchange(ucx_test_t *t, glucx_tx_t *tx, int rank, size_t n, uint64_t tag, int early,
                    int sync)
{
    const int peer = 1 - rank;
    unsigned char *out = malloc(n + 1), *in = malloc(n + GUARD), *self_in = malloc(n + GUARD);
    unsigned char *want = malloc(n + 1);
    CHECK(out != NULL && in != NULL && self_in != NULL && want != NULL, "malloc");
    glucx_test_fill_bytes(out, n, (uint64_t)rank * 7919u + n);
    glucx_test_fill_bytes(want, n, (uint64_t)peer * 7919u + n);
    memset(in, GUARD_BYTE, n + GUARD);
    memset(self_in, GUARD_BYTE, n + GUARD);
    glucx_tx_req_t r = {0}, rs = {0}, s = {0}, ss = {0};
    int src[1] = {peer}, self[1] = {rank};
    if (early) {
        CHECK_OK(tx->ops->irecv(tx, src, 1, tag, 0, in, n, &r));
        CHECK_OK(tx->ops->irecv(tx, self, 1, tag, 0, self_in, n, &rs));
        CHECK(ucx_barrier(t, 2, tx) == 0, "barrier");
    }
    CHECK_OK((sync ? tx->ops->isend_sync : tx->ops->isend)(tx, peer, tag, out, n, &s));
    CHECK_OK((sync ? tx->ops->isend_sync : tx->ops->isend)(tx, rank, tag, out, n, &ss));
    if (!early) {
        if (!sync) { /* a synchronous send waits for its receive */
            glucx_tx_req_t *sends[2] = {&s, &ss};
            CHECK_OK(tx->ops->wait(tx, sends, 2, glucx_deadline_ns(glucx_test_ms(30000))));
        }
        CHECK(ucx_barrier(t, 2, tx) == 0, "barrier");
        CHECK_OK(tx->ops->irecv(tx, src, 1, tag, 0, in, n, &r));
        CHECK_OK(tx->ops->irecv(tx, self, 1, tag, 0, self_in, n, &rs));
    }
    glucx_tx_req_t *all[4] = {&r, &rs, &s, &ss};
    CHECK_OK(tx->ops->wait(tx, all, 4, glucx_deadline_ns(glucx_test_ms(30000))));
    CHECK(r.status == GLUCX_OK && r.bytes == n && r.peer == peer && r.posted == n,
          "%zu bytes from the peer: %s, %zu bytes, peer %d", n, glucx_status_string(r.status),
          r.bytes, r.peer);
    CHECK(r.tag == (tag | ((uint64_t)peer << GLUCX_TX_TAG_SRC_SHIFT)), "sender's tag 0x%llx",
          (unsigned long long)r.tag);
    CHECK(rs.status == GLUCX_OK && rs.bytes == n && rs.peer == rank, "%zu bytes from self: %s", n,
          glucx_status_string(rs.status));
    CHECK(s.status == GLUCX_OK && s.bytes == n && ss.status == GLUCX_OK && ss.bytes == n,
          "sends of %zu: %s, %s", n, glucx_status_string(s.status), glucx_status_string(ss.status));
    CHECK(n == 0 || memcmp(in, want, n) == 0, "data from the peer, %zu bytes", n);
    CHECK(n == 0 || memcmp(self_in, out, n) == 0, "data from self, %zu bytes", n);
    CHECK(guard_ok(in + n) && guard_ok(self_in + n), "guard bytes after %zu", n);
    free(out);
    free(in);
    free(self_in);
    free(want);
    return 0;
}

static const size_t sizes[] = {0, 1, SEG - 1, SEG, SEG + 1, 3 * SEG, 3 * SEG + 5, (1 << 20) + 3};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

static int sizes_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    for (int i = 0; i < NSIZES; i++)
        for (int early = 0; early < 2; early++)
            if (exchange(t, e.tx, rank, sizes[i], exact_tag(10 + (uint64_t)i, (uint64_t)early),
                         early, 0) != 0)
                return 1;
    /* synchronous sends: complete once every segment matched */
    if (exchange(t, e.tx, rank, 3 * SEG + 5, exact_tag(30, 0), 1, 1) != 0 ||
        exchange(t, e.tx, rank, 2 * SEG, exact_tag(30, 1), 0, 1) != 0)
        return 1;
    /* two messages on one tag, in the order sent */
    glucx_tx_t *tx = e.tx;
    const size_t n1 = 2 * SEG + 9, n2 = SEG;
    unsigned char *a = malloc(n1), *b = malloc(n2), *ia = malloc(n1), *ib = malloc(n2);
    CHECK(a != NULL && b != NULL && ia != NULL && ib != NULL, "malloc");
    glucx_test_fill_bytes(a, n1, 1);
    glucx_test_fill_bytes(b, n2, 2);
    glucx_tx_req_t q[4] = {0};
    int src[1] = {1 - rank};
    CHECK_OK(tx->ops->isend(tx, 1 - rank, exact_tag(31, 0), a, n1, &q[0]));
    CHECK_OK(tx->ops->isend(tx, 1 - rank, exact_tag(31, 0), b, n2, &q[1]));
    CHECK_OK(tx->ops->irecv(tx, src, 1, exact_tag(31, 0), 0, ia, n1, &q[2]));
    CHECK_OK(tx->ops->irecv(tx, src, 1, exact_tag(31, 0), 0, ib, n2, &q[3]));
    glucx_tx_req_t *all[4] = {&q[0], &q[1], &q[2], &q[3]};
    CHECK_OK(tx->ops->wait(tx, all, 4, glucx_deadline_ns(glucx_test_ms(30000))));
    CHECK(q[2].bytes == n1 && q[3].bytes == n2 && memcmp(ia, a, n1) == 0 && memcmp(ib, b, n2) == 0,
          "two messages on one tag: %zu and %zu bytes", q[2].bytes, q[3].bytes);
    free(a);
    free(b);
    free(ia);
    free(ib);
    CHECK(glucx_tx_failure(tx) == GLUCX_OK, "transport healthy");
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_seg_sizes(void **state)
{
    (void)state;
    const size_t seg[2] = {SEG, SEG};
    run_modes_seg(2, sizes_child, seg, 180);
}

/* Sender and receiver lengths differ: the receive completes as soon as the sender's message
 * ended or overflowed it (fewer bytes than posted, or GLUCX_ERR_TRUNCATED), as an unsegmented one
 * does; nothing written past the posted length; the transport stays usable. */
static const struct {
    size_t sent, posted;
    glucx_status_t status;
    size_t bytes;  /* reported */
    size_t intact; /* bytes that arrived in full (a truncated segment may write nothing) */
} mismatch[] = {
    {2 * SEG, 3 * SEG, GLUCX_OK, 2 * SEG, 2 * SEG},                  /* the sender's 0-byte end */
    {2 * SEG + 7, 3 * SEG, GLUCX_OK, 2 * SEG + 7, 2 * SEG + 7},      /* its short last segment */
    {100, 2 * SEG, GLUCX_OK, 100, 100},                              /* a whole message */
    {3 * SEG, 2 * SEG + 100, GLUCX_ERR_TRUNCATED, 3 * SEG, 2 * SEG}, /* a segment into 100 */
    {2 * SEG, 100, GLUCX_ERR_TRUNCATED, SEG, 0}, /* a segment into a whole receive */
    {SEG, SEG - 1, GLUCX_ERR_TRUNCATED, SEG, 0},
    /* both cut into 1023 segments of 8201 bytes; the last, 7191 bytes, into 7186 */
    {(8 << 20) + 5, 8 << 20, GLUCX_ERR_TRUNCATED, (8 << 20) + 5, 8201 * 1022},
};
#define NMISMATCH ((int)(sizeof(mismatch) / sizeof(mismatch[0])))

static int mismatch_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    const size_t most = (8 << 20) + 5;
    unsigned char *out = malloc(most), *in = malloc(most + GUARD);
    CHECK(out != NULL && in != NULL, "malloc");
    glucx_test_fill_bytes(out, most, 99);
    for (int k = 0; k < NMISMATCH; k++) {
        const uint64_t tag = exact_tag(40 + (uint64_t)k, 0);
        if (rank == 0) {
            glucx_tx_req_t s = {0};
            CHECK_OK(tx->ops->isend(tx, 1, tag, out, mismatch[k].sent, &s));
            CHECK_OK(ucx_wait1(tx, &s, glucx_test_ms(30000)));
        } else {
            memset(in, GUARD_BYTE, most + GUARD);
            int src[1] = {0};
            glucx_tx_req_t r = {0};
            CHECK_OK(tx->ops->irecv(tx, src, 1, tag, 0, in, mismatch[k].posted, &r));
            /* done well before any deadline: a wait that times out fails the case */
            CHECK_OK(ucx_wait1(tx, &r, glucx_test_ms(30000)));
            CHECK(r.status == mismatch[k].status && r.bytes == mismatch[k].bytes,
                  "case %d: %zu sent into %zu: %s, %zu bytes (want %s, %zu)", k, mismatch[k].sent,
                  mismatch[k].posted, glucx_status_string(r.status), r.bytes,
                  glucx_status_string(mismatch[k].status), mismatch[k].bytes);
            CHECK(memcmp(in, out, mismatch[k].intact) == 0, "case %d: the data that fit", k);
            CHECK(guard_ok(in + mismatch[k].posted), "case %d: guard", k);
        }
    }
    CHECK(glucx_tx_failure(tx) == GLUCX_OK, "transport healthy");
    if (exchange(t, tx, rank, 2 * SEG + 1, exact_tag(60, 0), 1, 0) != 0)
        return 1;
    free(out);
    free(in);
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e); /* the receives left posted complete at teardown (LSan: nothing leaks) */
    return 0;
}

static void test_seg_mismatch(void **state)
{
    (void)state;
    const size_t seg[2] = {SEG, SEG};
    run_modes_seg(2, mismatch_child, seg, 120);
}

/* Ranks with different settings send each other whole messages (either cutting alone would
 * truncate at the other); each still cuts its self-sends. */
static int agree_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    for (int i = 0; i < NSIZES; i++)
        if (exchange(t, e.tx, rank, sizes[i], exact_tag(70 + (uint64_t)i, 0), i % 2, 0) != 0)
            return 1;
    CHECK(ucx_barrier(t, size, e.tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_seg_agree(void **state)
{
    (void)state;
    const size_t differ[2] = {SEG, 3 * SEG}, one_side[2] = {0, SEG};
    run_modes_seg(2, agree_child, differ, 120);
    run_modes_seg(2, agree_child, one_side, 120);
}

/* Cancel of a segmented receive nothing matched: done at once (GLUCX_ERR_ABORTED); the transport
 * stays usable. A receive whose first segments matched goes on to the end. */
static int cancel_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    if (rank == 1) {
        unsigned char *in = malloc(3 * SEG + 5);
        CHECK(in != NULL, "malloc");
        int src[1] = {0};
        glucx_tx_req_t r = {0};
        CHECK_OK(tx->ops->irecv(tx, src, 1, exact_tag(80, 0), 0, in, 3 * SEG + 5, &r));
        tx->ops->cancel(tx, &r);
        CHECK_OK(ucx_wait1(tx, &r, glucx_test_ms(30000)));
        CHECK(r.status == GLUCX_ERR_ABORTED, "cancelled: %s", glucx_status_string(r.status));
        free(in);
    }
    CHECK(glucx_tx_failure(tx) == GLUCX_OK, "transport healthy");
    if (exchange(t, tx, rank, 3 * SEG + 5, exact_tag(81, 0), rank, 0) != 0)
        return 1;
    CHECK(ucx_barrier(t, size, tx) == 0, "final barrier");
    ucx_rank_down(&e);
    return 0;
}

static void test_seg_cancel(void **state)
{
    (void)state;
    const size_t seg[2] = {SEG, SEG};
    run_modes_seg(2, cancel_child, seg, 120);
}

/* A peer fails while a segmented receive from it waits: the receive completes with the failure
 * well before its deadline; later segmented posts fail at once. */
static int fail_child(int rank, int size, void *arg)
{
    ucx_test_t *t = arg;
    ucx_rank_t e = {0};
    if (ucx_rank_up(t, rank, size, &e) != 0)
        return 1;
    glucx_tx_t *tx = e.tx;
    static unsigned char buf[3 * SEG + 5];
    if (rank == 1) {
        int src[1] = {0};
        glucx_tx_req_t r = {0};
        CHECK_OK(tx->ops->irecv(tx, src, 1, exact_tag(90, 0), 0, buf, sizeof(buf), &r));
        CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
        glucx_status_t st = ucx_wait1(tx, &r, glucx_test_ms(60000));
        CHECK(st != GLUCX_OK && st != GLUCX_ERR_TIMEOUT && glucx_tx_req_done(&r) &&
                  r.status != GLUCX_OK,
              "receive from a failed peer: wait %s, request %s", glucx_status_string(st),
              glucx_status_string(r.status));
        glucx_tx_req_t s = {0};
        CHECK(tx->ops->isend(tx, 0, exact_tag(91, 0), buf, sizeof(buf), &s) != GLUCX_OK &&
                  glucx_tx_req_done(&s) && s.status != GLUCX_OK,
              "segmented send after the failure: %s", glucx_status_string(s.status));
    } else {
        CHECK(ucx_barrier(t, size, tx) == 0, "barrier");
        (tx->ops->fail)(tx, GLUCX_ERR_ABORTED, "test: rank 0 gives up");
    }
    ucx_rank_down(&e);
    return 0;
}

static void test_seg_fail(void **state)
{
    (void)state;
    const size_t seg[2] = {SEG, SEG};
    run_modes_seg(2, fail_child, seg, 120);
}

/* The setting's bounds. */
static void test_seg_setting(void **state)
{
    (void)state;
    glucx_ucx_context_t *uctx = NULL;
    assert_int_equal(glucx_tx_ucx_context_create("lo", 500, &uctx), GLUCX_OK);
    assert_int_equal(glucx_tx_ucx_context_set_net_seg(uctx, ((size_t)1 << 30) + 1, 0),
                     GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_error_text(), "segment size"));
    assert_int_equal(glucx_tx_ucx_context_set_net_seg(NULL, SEG, 0), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_tx_ucx_context_set_net_seg(uctx, GLUCX_UCX_NET_SEG_MIN - 1, 0),
                     GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_tx_ucx_context_set_net_seg(uctx, 1, 1), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_tx_ucx_context_set_net_seg(uctx, GLUCX_UCX_NET_SEG_MIN, 1), GLUCX_OK);
    assert_int_equal(glucx_tx_ucx_context_set_net_seg(uctx, 0, 1), GLUCX_OK);
    assert_int_equal(glucx_tx_ucx_context_set_net_seg(uctx, (size_t)1 << 30, 0), GLUCX_OK);
    glucx_tx_ucx_context_destroy(uctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seg_setting),  cmocka_unit_test(test_seg_sizes),
        cmocka_unit_test(test_seg_mismatch), cmocka_unit_test(test_seg_agree),
        cmocka_unit_test(test_seg_cancel),   cmocka_unit_test(test_seg_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
