/* Tests of plugin/coll/reduce/reduce_scatter_gather.c on the fake transport. */
#include "plugin/coll/reduce/reduce_cases.h"
#include "coll/reduce/reduce.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_REDUCE, "reduce_scatter_gather");
    assert_int_equal(a, GLUCX_REDUCE_REDUCE_SCATTER_GATHER);
    return a;
}

/*
 * With n a power of two and the count a multiple of n (m = n blocks of b bytes): in the
 * reduce-scatter the root receives m/2 + m/4 + ... + b, in the gather the same again, in
 * log2(n) messages each; every other rank sends log2(n) reduce-scatter messages and one gather
 * message. Otherwise (uneven or empty blocks): the root receives at most the folded vector, the
 * kept half of each reduce-scatter step and the vector once more in the gather, (log2(p) + 2) m,
 * and everybody sends at most log2(p) + 1 messages.
 */
static void volume(const cw_t *c, int root, size_t bytes)
{
    const int n = c->n;
    int L = 0, p = 1;
    while (p * 2 <= n)
        p *= 2, L++;
    uint64_t into_root = 0, msgs_into_root = 0;
    for (int r = 0; r < n; r++) {
        uint64_t m[CW_MAX_RANKS], by[CW_MAX_RANKS], sent = 0;
        glucx_fake_stats(c->w, r, m, by);
        for (int x = 0; x < n; x++)
            sent += m[x];
        into_root += by[root];
        msgs_into_root += m[root];
        if (n == p)
            assert_int_equal(sent, (uint64_t)L + (r != root));
        else
            assert_true(sent <= (uint64_t)L + 1);
    }
    const size_t es = 4; /* only checked exactly for the f32/i32 cases below */
    if (n == p && bytes % ((size_t)n * es) == 0) {
        assert_int_equal(into_root, 2 * (uint64_t)(n - 1) * (bytes / (uint64_t)n));
        assert_int_equal(msgs_into_root, 2 * (uint64_t)L);
    } else {
        assert_true(into_root <= (uint64_t)(L + 2) * bytes);
    }
}

static void test_sizes_roots_counts(void **state)
{
    (void)state;
    rd_sweep(alg(), volume);
}

static void test_all_dtypes_and_ops(void **state)
{
    (void)state;
    rd_all_ops(alg(), volume);
}

static void test_large(void **state)
{
    (void)state;
    rd_large(alg(), volume);
}

static void test_canonical_order(void **state)
{
    (void)state;
    rd_fold_first = 1;
    rd_canonical(alg());
    rd_fold_first = 0;
}

/* Exact traffic for a power of two and a count that n divides. */
static void test_volume_power_of_two(void **state)
{
    (void)state;
    for (int n = 2; n <= 8; n *= 2)
        for (int root = 0; root < n; root++)
            rd_check(alg(), n, root, (size_t)n * 1000, GLUCX_DTYPE_F32, GLUCX_OP_SUM, root % 2,
                     RD_EXACT, volume);
}

static void test_faults(void **state)
{
    (void)state;
    rd_faults(alg());
}

static void test_cost(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(8, 1, &t), GLUCX_OK);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = glucx_reduce_reduce_scatter_gather_cost(t, b);
        assert_true(c == glucx_reduce_reduce_scatter_gather_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    /* large messages: cheaper than binomial; tiny ones: dearer (twice the latencies) */
    const size_t big = (size_t)64 << 20;
    assert_true(glucx_reduce_reduce_scatter_gather_cost(t, big) <
                glucx_reduce_binomial_cost(t, big));
    assert_true(glucx_reduce_reduce_scatter_gather_cost(t, 8) > glucx_reduce_binomial_cost(t, 8));
    glucx_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_roots_counts),
        cmocka_unit_test(test_all_dtypes_and_ops),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_canonical_order),
        cmocka_unit_test(test_volume_power_of_two),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
