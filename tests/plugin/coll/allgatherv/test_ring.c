/* Tests of plugin/coll/allgatherv/ring.c on the fake transport. */
#define COLL GLUCX_COLL_ALLGATHERV
#define ALG "ring"
#define POW2_ONLY 0
#include "support/coll_cases.h"

/* Rank r forwards every block but its right neighbour's (which would complete the circle). */
static uint64_t expected_bytes(int n, int r, size_t count, const size_t *counts, size_t es)
{
    (void)count;
    uint64_t t = 0;
    for (int b = 0; b < n; b++)
        if (b != (r + 1) % n)
            t += counts[b];
    return t * es;
}

int main(void)
{
    const struct CMUnitTest tests[] = {COLL_CASES};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
