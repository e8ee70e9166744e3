/*
 * Shared cmocka cases for the tests of one algorithm of allreduce, reduce_scatter, allgather or
 * allgatherv on the fake transport. The including file defines, before including:
 *   COLL       the collective (GLUCX_COLL_...)
 *   ALG        the algorithm name
 *   POW2_ONLY  1 if the algorithm returns GLUCX_ERR_UNSUPPORTED on other sizes
 * and then defines expected_bytes(): the bytes rank r must send (the algorithm's volume).
 * COLL_CASES lists the cases for cmocka_run_group_tests.
 */
#ifndef GLUCX_TEST_COLL_CASES_H
#define GLUCX_TEST_COLL_CASES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/coll_harness.h"

#define IS_REDUCING (COLL == GLUCX_COLL_ALLREDUCE || COLL == GLUCX_COLL_REDUCE_SCATTER)
#define IS_V (COLL == GLUCX_COLL_ALLGATHERV)

/* Bytes rank r of n must send: count elements (allgatherv: counts[]) of es bytes. */
static uint64_t expected_bytes(int n, int r, size_t count, const size_t *counts, size_t es);

static int size_ok(int n)
{
    return !POW2_ONLY || (n & (n - 1)) == 0;
}

static void test_sizes_and_counts(void **state)
{
    (void)state;
    assert_int_equal(glucx_test_sweep_sizes(COLL, ALG, 8, 1, POW2_ONLY), 0);
}

static void test_dtypes_and_ops(void **state)
{
    (void)state;
    assert_int_equal(glucx_test_sweep_dtypes(COLL, ALG, 4, 37), 0);
    if (size_ok(7))
        assert_int_equal(glucx_test_sweep_dtypes(COLL, ALG, 7, 37), 0);
}

static void test_random_floats(void **state)
{
    (void)state;
    if (size_ok(5))
        assert_int_equal(glucx_test_sweep_random(COLL, ALG, 5, 1001), 0);
    assert_int_equal(glucx_test_sweep_random(COLL, ALG, 8, 100003), 0);
}

static glucx_dtype_t case_dtype(void)
{
    return IS_REDUCING ? GLUCX_DTYPE_F32 : GLUCX_DTYPE_I32;
}

static void test_volume(void **state)
{
    (void)state;
    static const int sizes[] = {2, 3, 4, 5, 6, 7, 8};
    static const size_t counts[] = {1, 7, 1000, 100003, 1 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        const int n = sizes[i];
        if (!size_ok(n))
            continue;
        for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++) {
            size_t count = counts[j];
            if (COLL == GLUCX_COLL_REDUCE_SCATTER && count > 100003)
                count /= (size_t)n;
            glucx_test_case_t c;
            glucx_test_case_init(&c, COLL, ALG, n, count, case_dtype(), GLUCX_OP_SUM);
            size_t vc[64];
            if (IS_V) {
                glucx_test_v_counts(n, count, vc);
                c.counts = vc;
            }
            assert_int_equal(glucx_test_run_case(&c), 0);
            assert_int_equal(c.status, GLUCX_OK);
            for (int r = 0; r < n; r++) {
                const uint64_t want = expected_bytes(n, r, count, vc, 4);
                if (c.bytes_sent[r] != want)
                    fail_msg("n=%d count=%zu: rank %d sent %llu bytes, expected %llu", n, count, r,
                             (unsigned long long)c.bytes_sent[r], (unsigned long long)want);
            }
        }
    }
}

#if IS_V
#include "support/fake_tx.h"

/* Whether the core's collective signature covers allgatherv's counts array, so that a rank
 * with different counts is detected by every rank (not only by the ranks it sends to). */
static int v_signature_covers_counts(void)
{
    glucx_fake_world_t *w;
    if (glucx_fake_world_create(2, &w) != GLUCX_OK)
        return 0;
    size_t c1[2] = {1, 2}, c2[2] = {2, 1}, d1[2] = {0, 1}, d2[2] = {0, 2};
    int buf[3];
    glucx_coll_args_t a = {.coll = COLL,
                           .sendbuf = buf,
                           .recvbuf = buf,
                           .counts = c1,
                           .displs = d1,
                           .dtype = GLUCX_DTYPE_I32};
    glucx_coll_ctx_t x, y;
    int covered = 0;
    if (glucx_coll_ctx_init(&x, glucx_fake_tx(w, 0), NULL, &a, 0, 0, -1) == GLUCX_OK) {
        a.counts = c2;
        a.displs = d2;
        if (glucx_coll_ctx_init(&y, glucx_fake_tx(w, 0), NULL, &a, 0, 0, -1) == GLUCX_OK) {
            covered = x.sig != y.sig;
            glucx_coll_ctx_fini(&y);
        }
        glucx_coll_ctx_fini(&x);
    }
    glucx_fake_world_destroy(w);
    return covered;
}
#endif

/* Count mismatches: every rank must return MISMATCH (and none may hang). */
static void test_count_mismatch(void **state)
{
    (void)state;
#if IS_V
    const int strict = v_signature_covers_counts();
    if (!strict)
        fprintf(stderr, "note: the collective signature does not cover allgatherv counts yet: "
                        "ranks that only receive consistent data may return OK\n");
#else
    const int strict = 1;
#endif
    for (int n = 2; n <= 5; n++) {
        if (!size_ok(n))
            continue;
        glucx_test_case_t c;
        glucx_test_case_init(&c, COLL, ALG, n, 1000, case_dtype(), GLUCX_OP_SUM);
        size_t vc[64], bad[64];
        if (IS_V) {
            glucx_test_v_counts(n, 1000, vc);
            memcpy(bad, vc, sizeof(vc));
            bad[0] += 1; /* one rank disagrees about rank 0's count */
            c.counts = vc;
            c.bad_counts = bad;
        }
        c.bad_rank = n - 1;
        c.bad_count = 1001;
        c.timeout_ms = glucx_test_ms(5000);
        c.expect = c.expect_alt = GLUCX_ERR_MISMATCH;
        if (!strict)
            c.expect_alt = GLUCX_OK;
        assert_int_equal(glucx_test_run_case(&c), 0);
        assert_true(c.n_expect >= 1);
    }
    /* many segments on one side, fewer on the other */
    glucx_test_case_t c;
    const int n = size_ok(3) ? 3 : 4;
    glucx_test_case_init(&c, COLL, ALG, n, 300000, case_dtype(), GLUCX_OP_SUM);
    size_t vc[64], bad[64];
    if (IS_V) {
        glucx_test_v_counts(n, 300000, vc);
        memcpy(bad, vc, sizeof(vc));
        bad[1] = 100000;
        c.counts = vc;
        c.bad_counts = bad;
    }
    c.bad_rank = 0;
    c.bad_count = 100000;
    c.timeout_ms = glucx_test_ms(5000);
    c.expect = c.expect_alt = GLUCX_ERR_MISMATCH;
    if (!strict)
        c.expect_alt = GLUCX_OK;
    assert_int_equal(glucx_test_run_case(&c), 0);
    assert_true(c.n_expect >= 1);
}

static void test_dtype_mismatch(void **state)
{
    (void)state;
    for (int n = 2; n <= 5; n++) {
        if (!size_ok(n))
            continue;
        glucx_test_case_t c;
        glucx_test_case_init(&c, COLL, ALG, n, 1000, GLUCX_DTYPE_F32, GLUCX_OP_SUM);
        size_t vc[64];
        if (IS_V) {
            glucx_test_v_counts(n, 1000, vc);
            c.counts = vc;
        }
        c.bad_rank = n / 2;
        c.bad_dtype = GLUCX_DTYPE_I32; /* same element size: only the signature tells */
        c.timeout_ms = glucx_test_ms(5000);
        c.expect = c.expect_alt = GLUCX_ERR_MISMATCH;
        assert_int_equal(glucx_test_run_case(&c), 0);
    }
}

static void test_killed_rank(void **state)
{
    (void)state;
    for (int n = 2; n <= 5; n++) {
        if (!size_ok(n) || n == 3)
            continue;
        glucx_test_case_t c;
        glucx_test_case_init(&c, COLL, ALG, n, 100003, case_dtype(), GLUCX_OP_SUM);
        size_t vc[64];
        if (IS_V) {
            glucx_test_v_counts(n, 100003, vc);
            c.counts = vc;
        }
        c.kill_rank = 1;
        c.timeout_ms = 5000;
        c.expect = GLUCX_ERR_PEER_FAILED;
        c.expect_alt = GLUCX_ERR_TIMEOUT;
        assert_int_equal(glucx_test_run_case(&c), 0);
    }
}

#define COLL_CASES                                                                                 \
    cmocka_unit_test(test_sizes_and_counts), cmocka_unit_test(test_dtypes_and_ops),                \
        cmocka_unit_test(test_random_floats), cmocka_unit_test(test_volume),                       \
        cmocka_unit_test(test_count_mismatch), cmocka_unit_test(test_dtype_mismatch),              \
        cmocka_unit_test(test_killed_rank)

#endif
