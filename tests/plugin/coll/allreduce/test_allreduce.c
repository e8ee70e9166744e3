/* Tests of the allreduce table (plugin/coll/allreduce/allreduce.c): rows and cost functions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "support/coll_harness.h"
#include "topo/topo.h"

static double cost(const char *alg, int n, size_t bytes)
{
    const int i = glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, alg);
    assert_true(i >= 0);
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(n, 1, &t), GLUCX_OK);
    const double c = glucx_coll_tables[GLUCX_COLL_ALLREDUCE]->algs[i].cost(t, bytes);
    glucx_topo_destroy(t);
    return c;
}

static void test_rows(void **state)
{
    (void)state;
    const glucx_coll_table_t *t = glucx_coll_tables[GLUCX_COLL_ALLREDUCE];
    assert_int_equal(t->count, 6);
    assert_true(glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "hierarchical") > 0);
    assert_true(glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "torus") > 0);
    assert_int_equal(glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "recursive_doubling"), 0);
    assert_true(glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "ring") > 0);
    assert_true(glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "rabenseifner") > 0);
    assert_int_equal(glucx_test_alg_index(GLUCX_COLL_ALLREDUCE, "nope"), -1);
    for (int i = 0; i < t->count; i++) {
        assert_non_null(t->algs[i].desc);
        assert_non_null(t->algs[i].run);
        assert_non_null(t->algs[i].cost);
    }
}

static void test_cost_monotonic_and_finite(void **state)
{
    (void)state;
    static const char *algs[] = {"recursive_doubling", "rabenseifner", "ring"};
    static const int sizes[] = {2, 3, 4, 5, 7, 8, 16, 100};
    for (size_t a = 0; a < 3; a++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            double prev = 0;
            for (size_t bytes = 1; bytes <= ((size_t)1 << 30); bytes *= 4) {
                const double c = cost(algs[a], sizes[s], bytes);
                assert_true(isfinite(c));
                assert_true(c > 0);
                assert_true(c >= prev);
                prev = c;
            }
        }
}

static void test_cost_crossovers(void **state)
{
    (void)state;
    /* latency-bound: recursive doubling's 3 steps beat the ring's 14 */
    assert_true(cost("recursive_doubling", 8, 8) < cost("ring", 8, 8));
    assert_true(cost("recursive_doubling", 8, 8) < cost("rabenseifner", 8, 8));
    /* bandwidth-bound: moving 2(n-1)/n of the vector beats moving it log2(n) times */
    assert_true(cost("ring", 8, (size_t)64 << 20) <
                cost("recursive_doubling", 8, (size_t)64 << 20));
    assert_true(cost("rabenseifner", 8, (size_t)64 << 20) <
                cost("recursive_doubling", 8, (size_t)64 << 20));
    /* many ranks, medium size: rabenseifner's log latency beats the ring's linear one */
    assert_true(cost("rabenseifner", 64, 1 << 16) < cost("ring", 64, 1 << 16));
    /* non-power-of-two sizes pay for the fold */
    assert_true(cost("recursive_doubling", 7, 1 << 20) > cost("recursive_doubling", 4, 1 << 20));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_cost_monotonic_and_finite),
        cmocka_unit_test(test_cost_crossovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
