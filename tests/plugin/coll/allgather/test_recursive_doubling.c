/* Tests of plugin/coll/allgather/recursive_doubling.c on the fake transport. */
#define COLL GLUCX_COLL_ALLGATHER
#define ALG "recursive_doubling"
#define POW2_ONLY 1
#include "support/coll_cases.h"

/* Every rank sends each of the other n-1 ranks' worth of blocks once: (n-1)/n of the output. */
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
