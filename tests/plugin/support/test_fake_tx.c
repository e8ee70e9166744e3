/* Tests of the in-process fake transport (tests/support/fake_tx.c) against tx.h's contract. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/coll_harness.h"
#include "support/fake_tx.h"
#include "util/time.h"

#define TAG(x) ((uint64_t)(x))

static glucx_status_t send_(glucx_tx_t *tx, int peer, uint64_t tag, const void *buf, size_t bytes,
                            glucx_tx_req_t *req)
{
    glucx_tx_req_init(req);
    return tx->ops->isend(tx, peer, tag, buf, bytes, req);
}

static glucx_status_t recv_(glucx_tx_t *tx, int peer, uint64_t tag, uint64_t ignore, void *buf,
                            size_t bytes, glucx_tx_req_t *req)
{
    glucx_tx_req_init(req);
    return tx->ops->irecv(tx, &peer, 1, tag, ignore, buf, bytes, req);
}

static glucx_status_t wait1(glucx_tx_t *tx, glucx_tx_req_t *req, int64_t timeout_ms)
{
    glucx_tx_req_t *p = req;
    return tx->ops->wait(tx, &p, 1, glucx_deadline_ns(timeout_ms));
}

static void test_send_then_recv_and_recv_then_send(void **state)
{
    (void)state;
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(2, &w), GLUCX_OK);
    glucx_tx_t *t0 = glucx_fake_tx(w, 0), *t1 = glucx_fake_tx(w, 1);
    assert_int_equal(t0->rank, 0);
    assert_int_equal(t1->size, 2);

    /* unexpected message first */
    int out = 42, in = 0;
    glucx_tx_req_t s, r;
    assert_int_equal(send_(t0, 1, TAG(7), &out, sizeof(out), &s), GLUCX_OK);
    assert_true(glucx_tx_req_done(&s)); /* eager */
    assert_int_equal(s.status, GLUCX_OK);
    assert_int_equal(glucx_fake_unexpected(w, 1), 1);
    assert_int_equal(recv_(t1, 0, TAG(7), 0, &in, sizeof(in), &r), GLUCX_OK);
    assert_int_equal(wait1(t1, &r, 1000), GLUCX_OK);
    assert_int_equal(r.status, GLUCX_OK);
    assert_int_equal(in, 42);
    assert_int_equal(r.peer, 0);
    assert_int_equal(r.bytes, sizeof(int));
    /* the transport wrote the source into bits 48-61 */
    assert_int_equal(r.tag, TAG(7) | ((uint64_t)0 << GLUCX_TX_TAG_SRC_SHIFT));

    /* receive posted first, sender payload copied at post time */
    in = 0;
    assert_int_equal(recv_(t0, 1, TAG(9), 0, &in, sizeof(in), &r), GLUCX_OK);
    assert_false(glucx_tx_req_done(&r));
    out = 77;
    assert_int_equal(send_(t1, 0, TAG(9), &out, sizeof(out), &s), GLUCX_OK);
    out = 0;
    assert_int_equal(wait1(t0, &r, 1000), GLUCX_OK);
    assert_int_equal(in, 77);
    assert_int_equal(r.peer, 1);
    assert_int_equal(r.tag, TAG(9) | ((uint64_t)1 << GLUCX_TX_TAG_SRC_SHIFT));
    assert_int_equal(glucx_fake_unexpected(w, 0), 0);
    assert_int_equal(glucx_fake_unexpected(w, 1), 0);

    uint64_t msgs[2], bytes[2];
    glucx_fake_stats(w, 0, msgs, bytes);
    assert_int_equal(msgs[1], 1);
    assert_int_equal(bytes[1], sizeof(int));
    assert_int_equal(msgs[0], 0);
    glucx_fake_stats_reset(w);
    glucx_fake_stats(w, 0, msgs, bytes);
    assert_int_equal(msgs[1], 0);
    glucx_fake_world_destroy(w);
}

static void test_tag_matching_and_ignore_mask(void **state)
{
    (void)state;
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(2, &w), GLUCX_OK);
    glucx_tx_t *t0 = glucx_fake_tx(w, 0), *t1 = glucx_fake_tx(w, 1);
    int a = 1, b = 2, got = 0;
    glucx_tx_req_t s1, s2, r;
    assert_int_equal(send_(t0, 1, TAG(0x100), &a, sizeof(a), &s1), GLUCX_OK);
    assert_int_equal(send_(t0, 1, TAG(0x205), &b, sizeof(b), &s2), GLUCX_OK);
    /* exact tag 0x200 does not match 0x205 ... */
    assert_int_equal(recv_(t1, 0, TAG(0x200), 0, &got, sizeof(got), &r), GLUCX_OK);
    assert_false(glucx_tx_req_done(&r));
    t1->ops->cancel(t1, &r);
    assert_true(glucx_tx_req_done(&r));
    assert_int_equal(r.status, GLUCX_ERR_ABORTED);
    /* ... but it does with the low byte ignored, and picks the second message, not the first */
    assert_int_equal(recv_(t1, 0, TAG(0x200), 0xff, &got, sizeof(got), &r), GLUCX_OK);
    assert_int_equal(wait1(t1, &r, 1000), GLUCX_OK);
    assert_int_equal(got, 2);
    assert_int_equal(r.tag & 0xffff, 0x205);
    /* source bits in the posted tag are ignored: the source comes from the peer set */
    assert_int_equal(recv_(t1, 0, TAG(0x100) | GLUCX_TX_TAG_SRC_MASK, 0, &got, sizeof(got), &r),
                     GLUCX_OK);
    assert_int_equal(wait1(t1, &r, 1000), GLUCX_OK);
    assert_int_equal(got, 1);
    glucx_fake_world_destroy(w);
}

static void test_fifo_per_source_and_tag(void **state)
{
    (void)state;
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(2, &w), GLUCX_OK);
    glucx_tx_t *t0 = glucx_fake_tx(w, 0), *t1 = glucx_fake_tx(w, 1);
    int v[6] = {10, 11, 12, 20, 21, 22};
    glucx_tx_req_t s[6], r[6];
    int got[6] = {0};
    /* two receives posted before, four after */
    assert_int_equal(recv_(t1, 0, TAG(1), 0, &got[0], sizeof(int), &r[0]), GLUCX_OK);
    assert_int_equal(recv_(t1, 0, TAG(2), 0, &got[3], sizeof(int), &r[3]), GLUCX_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(send_(t0, 1, TAG(1), &v[i], sizeof(int), &s[i]), GLUCX_OK);
        assert_int_equal(send_(t0, 1, TAG(2), &v[3 + i], sizeof(int), &s[3 + i]), GLUCX_OK);
    }
    /* post the rest of tag 2 before tag 1: order across tags does not matter */
    assert_int_equal(recv_(t1, 0, TAG(2), 0, &got[4], sizeof(int), &r[4]), GLUCX_OK);
    assert_int_equal(recv_(t1, 0, TAG(2), 0, &got[5], sizeof(int), &r[5]), GLUCX_OK);
    assert_int_equal(recv_(t1, 0, TAG(1), 0, &got[1], sizeof(int), &r[1]), GLUCX_OK);
    assert_int_equal(recv_(t1, 0, TAG(1), 0, &got[2], sizeof(int), &r[2]), GLUCX_OK);
    glucx_tx_req_t *pp[6] = {&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]};
    assert_int_equal(t1->ops->wait(t1, pp, 6, glucx_deadline_ns(1000)), GLUCX_OK);
    for (int i = 0; i < 6; i++)
        assert_int_equal(got[i], v[i]);
    glucx_fake_world_destroy(w);
}

static void test_any_source_set(void **state)
{
    (void)state;
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(4, &w), GLUCX_OK);
    glucx_tx_t *t0 = glucx_fake_tx(w, 0);
    int got = 0, v3 = 3, v2 = 2, v0 = 100;
    glucx_tx_req_t s, r;
    /* a message from rank 3 (not in the set) must not match */
    assert_int_equal(send_(glucx_fake_tx(w, 3), 0, TAG(5), &v3, sizeof(int), &s), GLUCX_OK);
    int peers[] = {2, 1, 2, 0}; /* duplicates and self, as PyTorch passes them */
    glucx_tx_req_init(&r);
    assert_int_equal(t0->ops->irecv(t0, peers, 4, TAG(5), 0, &got, sizeof(int), &r), GLUCX_OK);
    assert_false(glucx_tx_req_done(&r));
    assert_int_equal(send_(glucx_fake_tx(w, 2), 0, TAG(5), &v2, sizeof(int), &s), GLUCX_OK);
    assert_int_equal(wait1(t0, &r, 1000), GLUCX_OK);
    assert_int_equal(got, 2);
    assert_int_equal(r.peer, 2);
    /* self is a valid source */
    glucx_tx_req_init(&r);
    assert_int_equal(t0->ops->irecv(t0, peers, 4, TAG(5), 0, &got, sizeof(int), &r), GLUCX_OK);
    assert_int_equal(send_(t0, 0, TAG(5), &v0, sizeof(int), &s), GLUCX_OK);
    assert_int_equal(wait1(t0, &r, 1000), GLUCX_OK);
    assert_int_equal(got, 100);
    assert_int_equal(r.peer, 0);
    /* rank 3's message is still waiting for a receive that names rank 3 */
    assert_int_equal(glucx_fake_unexpected(w, 0), 1);
    assert_int_equal(recv_(t0, 3, TAG(5), 0, &got, sizeof(int), &r), GLUCX_OK);
    assert_int_equal(wait1(t0, &r, 1000), GLUCX_OK);
    assert_int_equal(got, 3);
    glucx_fake_world_destroy(w);
}

static void test_truncation_and_zero_bytes(void **state)
{
    (void)state;
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(2, &w), GLUCX_OK);
    glucx_tx_t *t0 = glucx_fake_tx(w, 0), *t1 = glucx_fake_tx(w, 1);
    unsigned char out[8] = {1, 2, 3, 4, 5, 6, 7, 8}, in[8];
    memset(in, 0xee, sizeof(in));
    glucx_tx_req_t s, r;
    assert_int_equal(recv_(t1, 0, TAG(3), 0, in, 4, &r), GLUCX_OK);
    assert_int_equal(send_(t0, 1, TAG(3), out, 8, &s), GLUCX_OK);
    assert_int_equal(wait1(t1, &r, 1000), GLUCX_OK);
    assert_int_equal(r.status, GLUCX_ERR_TRUNCATED);
    assert_int_equal(r.bytes, 8); /* the sender's length */
    assert_int_equal(r.posted, 4);
    for (int i = 4; i < 8; i++)
        assert_int_equal(in[i], 0xee); /* never past the posted length */
    /* the same in the unexpected order */
    memset(in, 0xee, sizeof(in));
    assert_int_equal(send_(t0, 1, TAG(3), out, 8, &s), GLUCX_OK);
    assert_int_equal(recv_(t1, 0, TAG(3), 0, in, 2, &r), GLUCX_OK);
    assert_int_equal(wait1(t1, &r, 1000), GLUCX_OK);
    assert_int_equal(r.status, GLUCX_ERR_TRUNCATED);
    assert_int_equal(in[2], 0xee);
    /* shorter and zero-byte messages are fine */
    assert_int_equal(recv_(t1, 0, TAG(4), 0, in, 8, &r), GLUCX_OK);
    assert_int_equal(send_(t0, 1, TAG(4), NULL, 0, &s), GLUCX_OK);
    assert_int_equal(wait1(t1, &r, 1000), GLUCX_OK);
    assert_int_equal(r.status, GLUCX_OK);
    assert_int_equal(r.bytes, 0);
    assert_int_equal(r.posted, 8);
    glucx_fake_world_destroy(w);
}

static void test_wait_timeout_leaves_request_posted(void **state)
{
    (void)state;
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(2, &w), GLUCX_OK);
    glucx_tx_t *t0 = glucx_fake_tx(w, 0), *t1 = glucx_fake_tx(w, 1);
    int v = 5, got = 0;
    glucx_tx_req_t s, r;
    assert_int_equal(recv_(t1, 0, TAG(1), 0, &got, sizeof(int), &r), GLUCX_OK);
    int64_t t = glucx_now_ns();
    assert_int_equal(wait1(t1, &r, 50), GLUCX_ERR_TIMEOUT);
    assert_true(glucx_now_ns() - t >= 49 * 1000000);
    assert_false(glucx_tx_req_done(&r));
    assert_int_equal(glucx_tx_failure(t1), GLUCX_OK); /* a timed-out wait does not fail tx */
    assert_int_equal(send_(t0, 1, TAG(1), &v, sizeof(int), &s), GLUCX_OK);
    assert_int_equal(wait1(t1, &r, 1000), GLUCX_OK);
    assert_int_equal(got, 5);
    /* cancel after completion is a no-op */
    t1->ops->cancel(t1, &r);
    assert_int_equal(r.status, GLUCX_OK);
    glucx_fake_world_destroy(w);
}

static void test_fail_notice(void **state)
{
    (void)state;
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(3, &w), GLUCX_OK);
    glucx_tx_t *t0 = glucx_fake_tx(w, 0), *t1 = glucx_fake_tx(w, 1), *t2 = glucx_fake_tx(w, 2);
    int a = 0, b = 0;
    glucx_tx_req_t r0, r1, s;
    assert_int_equal(recv_(t0, 2, TAG(1), 0, &a, sizeof(int), &r0), GLUCX_OK);
    assert_int_equal(recv_(t1, 2, TAG(1), 0, &b, sizeof(int), &r1), GLUCX_OK);
    (t0->ops->fail)(t0, GLUCX_ERR_MISMATCH, "boom");
    assert_int_equal(glucx_tx_failure(t0), GLUCX_ERR_MISMATCH);
    assert_string_equal(t0->failure, "boom");
    assert_true(glucx_tx_req_done(&r0));
    assert_int_equal(r0.status, GLUCX_ERR_MISMATCH);
    /* every other rank got the notice, with the same status */
    assert_int_equal(glucx_tx_failure(t1), GLUCX_ERR_MISMATCH);
    assert_string_equal(t1->failure, "rank 0 reported: boom");
    assert_string_equal(t2->failure, "rank 0 reported: boom");
    assert_true(glucx_tx_req_done(&r1));
    assert_int_equal(r1.status, GLUCX_ERR_MISMATCH);
    assert_int_equal(wait1(t1, &r1, 1000), GLUCX_ERR_MISMATCH);
    /* first failure wins, and new posts fail */
    (t1->ops->fail)(t1, GLUCX_ERR_TIMEOUT, "later");
    assert_int_equal(glucx_tx_failure(t1), GLUCX_ERR_MISMATCH);
    assert_string_equal(t0->failure, "boom");
    assert_int_equal(send_(t2, 0, TAG(1), &a, sizeof(int), &s), GLUCX_ERR_MISMATCH);
    assert_int_equal(recv_(t2, 0, TAG(1), 0, &a, sizeof(int), &s), GLUCX_ERR_MISMATCH);
    glucx_fake_world_destroy(w);
}

static void test_kill(void **state)
{
    (void)state;
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(3, &w), GLUCX_OK);
    glucx_tx_t *t0 = glucx_fake_tx(w, 0), *t2 = glucx_fake_tx(w, 2);
    int a = 0;
    glucx_tx_req_t r;
    assert_int_equal(recv_(t0, 2, TAG(1), 0, &a, sizeof(int), &r), GLUCX_OK);
    glucx_fake_kill(w, 2);
    assert_true(glucx_tx_req_done(&r));
    assert_int_equal(r.status, GLUCX_ERR_PEER_FAILED);
    assert_int_equal(wait1(t0, &r, 1000), GLUCX_ERR_PEER_FAILED);
    assert_string_equal(t0->failure, "rank 2 failed");
    assert_string_equal(glucx_fake_tx(w, 1)->failure, "rank 2 failed");
    assert_int_not_equal(glucx_tx_failure(t2), GLUCX_OK);
    assert_int_equal(send_(t2, 0, TAG(1), &a, sizeof(int), &r), glucx_tx_failure(t2));
    glucx_fake_world_destroy(w);
}

/* Threads: every rank passes a token around a ring many times; blocked waits wake up. */
typedef struct ring_arg {
    int rounds;
} ring_arg_t;

static int ring_rank(glucx_fake_world_t *w, int rank, void *arg)
{
    const ring_arg_t *a = arg;
    glucx_tx_t *tx = glucx_fake_tx(w, rank);
    const int n = tx->size, right = (rank + 1) % n, left = (rank + n - 1) % n;
    int token = rank == 0 ? 0 : -1;
    for (int i = 0; i < a->rounds; i++) {
        glucx_tx_req_t s, r;
        if (rank != 0) {
            GLUCX_TEST_CHECK(recv_(tx, left, TAG(i), 0, &token, sizeof(int), &r) == GLUCX_OK,
                             "post");
            GLUCX_TEST_CHECK(wait1(tx, &r, glucx_test_ms(5000)) == GLUCX_OK,
                             "wait rank %d round %d", rank, i);
            token++;
        }
        GLUCX_TEST_CHECK(send_(tx, right, TAG(i), &token, sizeof(int), &s) == GLUCX_OK, "send");
        if (rank == 0) {
            GLUCX_TEST_CHECK(recv_(tx, left, TAG(i), 0, &token, sizeof(int), &r) == GLUCX_OK,
                             "post");
            GLUCX_TEST_CHECK(wait1(tx, &r, glucx_test_ms(5000)) == GLUCX_OK, "wait rank 0 round %d",
                             i);
            GLUCX_TEST_CHECK(token == (i + 1) * (n - 1), "token %d round %d", token, i);
        }
    }
    return 0;
}

static int fails_on_odd(glucx_fake_world_t *w, int rank, void *arg)
{
    (void)w;
    (void)arg;
    return rank % 2 ? 7 : 0;
}

static void test_threads(void **state)
{
    (void)state;
    glucx_fake_world_t *w;
    assert_int_equal(glucx_fake_world_create(5, &w), GLUCX_OK);
    ring_arg_t a = {.rounds = 200};
    assert_int_equal(glucx_fake_run(w, ring_rank, &a), 0);
    uint64_t msgs[5];
    glucx_fake_stats(w, 3, msgs, NULL);
    assert_int_equal(msgs[4], 200);
    assert_int_equal(msgs[2], 0);
    assert_int_equal(glucx_fake_run(w, fails_on_odd, NULL), 7);
    glucx_fake_world_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_send_then_recv_and_recv_then_send),
        cmocka_unit_test(test_tag_matching_and_ignore_mask),
        cmocka_unit_test(test_fifo_per_source_and_tag),
        cmocka_unit_test(test_any_source_set),
        cmocka_unit_test(test_truncation_and_zero_bytes),
        cmocka_unit_test(test_wait_timeout_leaves_request_posted),
        cmocka_unit_test(test_fail_notice),
        cmocka_unit_test(test_kill),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
