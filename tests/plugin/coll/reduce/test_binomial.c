/* Tests of plugin/coll/reduce/binomial.c on the fake transport. */
#include "plugin/coll/reduce/reduce_cases.h"
#include "coll/reduce/reduce.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_REDUCE, "binomial");
    assert_int_equal(a, GLUCX_REDUCE_BINOMIAL);
    return a;
}

/* Every non-root rank sends exactly one message: its subtree's partial result. */
static void volume(const cw_t *c, int root, size_t bytes)
{
    for (int r = 0; r < c->n; r++) {
        uint64_t m[CW_MAX_RANKS], b[CW_MAX_RANKS], msgs = 0, total = 0;
        glucx_fake_stats(c->w, r, m, b);
        for (int p = 0; p < c->n; p++) {
            msgs += m[p];
            total += b[p];
        }
        assert_int_equal(msgs, r == root ? 0 : 1);
        assert_int_equal(total, r == root ? 0 : bytes);
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
    rd_canonical(alg());
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
    assert_int_equal(glucx_topo_create_uniform(8, 2, &t), GLUCX_OK);
    glucx_link_cost_t l = glucx_topo_bottleneck(t);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = glucx_reduce_binomial_cost(t, b);
        assert_true(c == glucx_reduce_binomial_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    double want = 3 * (l.alpha_ns + 4096.0 * (l.beta_ns_per_byte + t->gamma_ns_per_byte));
    assert_true(fabs(glucx_reduce_binomial_cost(t, 4096) - want) <= 1e-9 * want);
    glucx_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_roots_counts),
        cmocka_unit_test(test_all_dtypes_and_ops),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_canonical_order),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
