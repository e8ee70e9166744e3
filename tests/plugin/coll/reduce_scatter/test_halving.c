/* Tests of plugin/coll/reduce_scatter/halving.c on the fake transport. */
#define COLL GLUCX_COLL_REDUCE_SCATTER
#define ALG "halving"
#define POW2_ONLY 0
#include "support/coll_cases.h"

/* Power of two: each level sends half of the current range, (n-1)/n of the input in all.
 * Otherwise the 2*rem folded-out ranks send their whole input, and their partners send the
 * returned block on top of the halving over p = 2^floor(log2 n) new ranks, where new rank i
 * covers 2 blocks for i < rem and 1 otherwise. */
static uint64_t expected_bytes(int n, int r, size_t count, const size_t *counts, size_t es)
{
    (void)counts;
    int p = 1;
    while (2 * p <= n)
        p *= 2;
    const int rem = n - p;
    const uint64_t blk = (uint64_t)count * es;
    if (rem == 0)
        return (uint64_t)(n - 1) * blk;
    if (r < 2 * rem && r % 2 == 0)
        return (uint64_t)n * blk;
    const int nr = r < 2 * rem ? r / 2 : r - rem;
    uint64_t blocks = 0;
    int lo = 0, hi = p;
    for (int d = p / 2; d >= 1; d /= 2) {
        const int mid = lo + d;
        /* send the half without nr: count its real blocks */
        const int slo = (nr & d) ? lo : mid, shi = (nr & d) ? mid : hi;
        for (int i = slo; i < shi; i++)
            blocks += i < rem ? 2 : 1;
        if (nr & d)
            lo = mid;
        else
            hi = mid;
    }
    if (r < 2 * rem)
        blocks += 1; /* the folded-out partner's block */
    return blocks * blk;
}

int main(void)
{
    const struct CMUnitTest tests[] = {COLL_CASES};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
