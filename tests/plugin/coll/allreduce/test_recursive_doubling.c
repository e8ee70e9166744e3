/* Tests of plugin/coll/allreduce/recursive_doubling.c on the fake transport. */
#define COLL GLUCX_COLL_ALLREDUCE
#define ALG "recursive_doubling"
#define POW2_ONLY 0
#include "support/coll_cases.h"

/* floor(log2 n) whole-vector exchanges; the 2*rem folded ranks add one vector each way. */
static uint64_t expected_bytes(int n, int r, size_t count, const size_t *counts, size_t es)
{
    (void)counts;
    int p = 1, lg = 0;
    while (2 * p <= n) {
        p *= 2;
        lg++;
    }
    const int rem = n - p;
    const uint64_t v = (uint64_t)count * es;
    if (r < 2 * rem)
        return r % 2 == 0 ? v : (uint64_t)(lg + 1) * v;
    return (uint64_t)lg * v;
}

int main(void)
{
    const struct CMUnitTest tests[] = {COLL_CASES};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
