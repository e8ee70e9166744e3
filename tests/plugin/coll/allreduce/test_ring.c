/* Tests of plugin/coll/allreduce/ring.c on the fake transport. */
#define COLL GLUCX_COLL_ALLREDUCE
#define ALG "ring"
#define POW2_ONLY 0
#include "support/coll_cases.h"

/* Rank r sends every block but its own in the reduce-scatter, and every block but its right
 * neighbour's in the allgather: 2 (n-1)/n of the message for even blocks. */
static uint64_t expected_bytes(int n, int r, size_t count, const size_t *counts, size_t es)
{
    (void)counts;
    const size_t q = count / (size_t)n, rem = count % (size_t)n;
    const size_t own = q + ((size_t)r < rem), right = q + ((size_t)((r + 1) % n) < rem);
    return (uint64_t)((count - own) + (count - right)) * es;
}

int main(void)
{
    const struct CMUnitTest tests[] = {COLL_CASES};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
