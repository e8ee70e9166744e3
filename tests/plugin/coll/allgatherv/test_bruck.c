/* Tests of plugin/coll/allgatherv/bruck.c on the fake transport. */
#define COLL GLUCX_COLL_ALLGATHERV
#define ALG "bruck"
#define POW2_ONLY 0
#include "support/coll_cases.h"

/* In the step of distance d rank r sends the first c = min(d, n - d) blocks of the range it
 * holds, which starts at its own: blocks r, ..., r + c - 1. */
static uint64_t expected_bytes(int n, int r, size_t count, const size_t *counts, size_t es)
{
    (void)count;
    uint64_t t = 0;
    for (int d = 1; d < n; d *= 2) {
        const int c = d < n - d ? d : n - d;
        for (int i = 0; i < c; i++)
            t += counts[(r + i) % n];
    }
    return t * es;
}

int main(void)
{
    const struct CMUnitTest tests[] = {COLL_CASES};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
