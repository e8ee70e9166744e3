/* Tests of plugin/coll/scatter/binomial.c on the fake transport. */
#include "plugin/coll/scatter/scatter_cases.h"
#include "coll/scatter/scatter.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_SCATTER, "binomial");
    assert_int_equal(a, GLUCX_SCATTER_BINOMIAL);
    return a;
}

/* A block travels at most ceil(log2 n) hops; the root has ceil(log2 n) children for a power of
 * two (at most that otherwise). */
static void volume(const cw_t *c, int root, size_t b)
{
    sc_volume_common(c, root, b);
    int log2n = 0;
    while ((1 << log2n) < c->n)
        log2n++;
    uint64_t m[CW_MAX_RANKS], root_msgs = 0, msgs, total;
    glucx_fake_stats(c->w, root, m, NULL);
    for (int p = 0; p < c->n; p++)
        root_msgs += m[p];
    assert_true(root_msgs <= (uint64_t)log2n);
    if ((c->n & (c->n - 1)) == 0)
        assert_int_equal(root_msgs, (uint64_t)log2n);
    cw_totals(c, &msgs, &total);
    assert_int_equal(msgs, (uint64_t)(c->n - 1));
    assert_true(total <= (uint64_t)log2n * (uint64_t)(c->n - 1) * b);
}

static void test_sizes_roots_counts(void **state)
{
    (void)state;
    sc_sweep(alg(), volume);
}

static void test_large(void **state)
{
    (void)state;
    sc_large(alg(), volume);
}

static void test_faults(void **state)
{
    (void)state;
    sc_faults(alg(), 0);
}

static void test_cost(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(8, 1, &t), GLUCX_OK);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = glucx_scatter_binomial_cost(t, b);
        assert_true(c == glucx_scatter_binomial_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    assert_true(glucx_scatter_binomial_cost(t, 64) < glucx_scatter_linear_cost(t, 64));
    glucx_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_roots_counts),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
