/* Tests of the reduce_scatter table: rows and cost functions. */
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
    const int i = glucx_test_alg_index(GLUCX_COLL_REDUCE_SCATTER, alg);
    assert_true(i >= 0);
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(n, 1, &t), GLUCX_OK);
    const double c = glucx_coll_tables[GLUCX_COLL_REDUCE_SCATTER]->algs[i].cost(t, bytes);
    glucx_topo_destroy(t);
    return c;
}

static void test_rows_and_costs(void **state)
{
    (void)state;
    assert_int_equal(glucx_coll_tables[GLUCX_COLL_REDUCE_SCATTER]->count, 3);
    static const char *algs[] = {"halving", "ring"};
    static const int sizes[] = {2, 3, 4, 6, 8, 16};
    for (size_t a = 0; a < 2; a++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            double prev = 0;
            for (size_t bytes = 1; bytes <= ((size_t)1 << 30); bytes *= 4) {
                const double c = cost(algs[a], sizes[s], bytes);
                assert_true(isfinite(c) && c > 0 && c >= prev);
                prev = c;
            }
        }
    /* same volume, logarithmic vs linear latency */
    assert_true(cost("halving", 8, 64) < cost("ring", 8, 64));
    /* the fold of non-power-of-two sizes costs a whole extra input */
    assert_true(cost("halving", 6, (size_t)64 << 20) > cost("ring", 6, (size_t)64 << 20));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_rows_and_costs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
