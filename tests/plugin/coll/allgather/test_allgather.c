/* Tests of the allgather and allgatherv tables: rows and cost functions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "support/coll_harness.h"
#include "topo/topo.h"

static double cost(glucx_coll_t coll, const char *alg, int n, size_t bytes)
{
    const int i = glucx_test_alg_index(coll, alg);
    assert_true(i >= 0);
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(n, 1, &t), GLUCX_OK);
    const double c = glucx_coll_tables[coll]->algs[i].cost(t, bytes);
    glucx_topo_destroy(t);
    return c;
}

static void test_rows_and_costs(void **state)
{
    (void)state;
    assert_int_equal(glucx_coll_tables[GLUCX_COLL_ALLGATHER]->count, 4);
    assert_int_equal(glucx_coll_tables[GLUCX_COLL_ALLGATHERV]->count, 2);
    static const struct {
        glucx_coll_t coll;
        const char *alg;
    } rows[] = {{GLUCX_COLL_ALLGATHER, "recursive_doubling"},
                {GLUCX_COLL_ALLGATHER, "bruck"},
                {GLUCX_COLL_ALLGATHER, "ring"},
                {GLUCX_COLL_ALLGATHERV, "bruck"},
                {GLUCX_COLL_ALLGATHERV, "ring"}};
    static const int sizes[] = {2, 4, 8, 16};
    for (size_t a = 0; a < sizeof(rows) / sizeof(rows[0]); a++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            double prev = 0;
            for (size_t bytes = 1; bytes <= ((size_t)1 << 30); bytes *= 4) {
                const double c = cost(rows[a].coll, rows[a].alg, sizes[s], bytes);
                assert_true(isfinite(c) && c > 0 && c >= prev);
                prev = c;
            }
        }
    /* recursive doubling applies to powers of two only */
    assert_true(isinf(cost(GLUCX_COLL_ALLGATHER, "recursive_doubling", 6, 1024)));
    assert_true(isfinite(cost(GLUCX_COLL_ALLGATHER, "bruck", 6, 1024)));
    /* log2(n) steps beat n-1 when latency dominates */
    assert_true(cost(GLUCX_COLL_ALLGATHER, "bruck", 8, 64) <
                cost(GLUCX_COLL_ALLGATHER, "ring", 8, 64));
    assert_true(cost(GLUCX_COLL_ALLGATHERV, "bruck", 8, 64) <
                cost(GLUCX_COLL_ALLGATHERV, "ring", 8, 64));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_rows_and_costs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
