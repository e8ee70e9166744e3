/* Tests of plugin/coll/scatter/linear.c on the fake transport. */
#include "plugin/coll/scatter/scatter_cases.h"
#include "coll/scatter/scatter.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_SCATTER, "linear");
    assert_int_equal(a, GLUCX_SCATTER_LINEAR);
    return a;
}

/* The root sends every other rank its block directly: n-1 messages of one block. */
static void volume(const cw_t *c, int root, size_t b)
{
    sc_volume_common(c, root, b);
    uint64_t msgs, total;
    cw_totals(c, &msgs, &total);
    assert_int_equal(msgs, (uint64_t)(c->n - 1));
    assert_int_equal(total, (uint64_t)(c->n - 1) * b);
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
    assert_int_equal(glucx_topo_create_uniform(5, 1, &t), GLUCX_OK);
    glucx_link_cost_t l = glucx_topo_bottleneck(t);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = glucx_scatter_linear_cost(t, b);
        assert_true(c == glucx_scatter_linear_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    double want = 4 * (l.alpha_ns + 1000 * l.beta_ns_per_byte) + 1000 * t->copy_ns_per_byte;
    assert_true(fabs(glucx_scatter_linear_cost(t, 5000) - want) <= 1e-9 * want);
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
