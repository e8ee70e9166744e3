/* Tests of plugin/coll/alltoallv/linear.c on the fake transport. */
#include "plugin/coll/alltoallv/alltoallv_cases.h"
#include "coll/alltoallv/alltoallv.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_ALLTOALLV, "linear");
    assert_int_equal(a, GLUCX_ALLTOALLV_LINEAR);
    return a;
}

static void test_uneven_and_zero_counts(void **state)
{
    (void)state;
    av_sweep(alg(), av_volume);
}

static void test_large(void **state)
{
    (void)state;
    av_big(alg(), av_volume);
}

static void test_faults(void **state)
{
    (void)state;
    av_faults(alg());
}

static void test_cost(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(6, 2, &t), GLUCX_OK);
    glucx_link_cost_t l = glucx_topo_bottleneck(t);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = glucx_alltoallv_linear_cost(t, b);
        assert_true(c == glucx_alltoallv_linear_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    /* 6 ranks receiving 6000 bytes: 5 exchanges of a 1000-byte mean block, one local copy */
    double want = 5 * (l.alpha_ns + 1000 * l.beta_ns_per_byte) + 1000 * t->copy_ns_per_byte;
    assert_true(fabs(glucx_alltoallv_linear_cost(t, 6000) - want) <= 1e-9 * want);
    glucx_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uneven_and_zero_counts),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
