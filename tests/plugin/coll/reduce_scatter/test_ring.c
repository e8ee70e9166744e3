/* Tests of plugin/coll/reduce_scatter/ring.c on the fake transport. */
#define COLL GLUCX_COLL_REDUCE_SCATTER
#define ALG "ring"
#define POW2_ONLY 0
#include "support/coll_cases.h"

/* n-1 steps, one block of count elements each: (n-1)/n of the input. */
static uint64_t expected_bytes(int n, int r, size_t count, const size_t *counts, size_t es)
{
    (void)r;
    (void)counts;
    return (uint64_t)(n - 1) * count * es;
}

int main(void)
{
    const struct CMUnitTest tests[] = {COLL_CASES};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
