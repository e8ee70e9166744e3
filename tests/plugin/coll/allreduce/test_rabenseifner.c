/* Tests of plugin/coll/allreduce/rabenseifner.c on the fake transport. */
#define COLL GLUCX_COLL_ALLREDUCE
#define ALG "rabenseifner"
#define POW2_ONLY 0
#include "support/coll_cases.h"

/* On the p = 2^floor(log2 n) active ranks, each level of the halving sends one half of the
 * current block range and the matching level of the doubling sends the other half back: per
 * level the whole current range, p blocks, then p/2, ..., then 2, i.e. 2 (p-1)/p of the vector
 * for equal blocks. Block sizes come from the even split of count into p blocks. */
static size_t split_off(size_t count, int p, int b)
{
    const size_t q = count / (size_t)p, rem = count % (size_t)p;
    return (size_t)b * q + ((size_t)b < rem ? (size_t)b : rem);
}

static uint64_t expected_bytes(int n, int r, size_t count, const size_t *counts, size_t es)
{
    (void)counts;
    int p = 1;
    while (2 * p <= n)
        p *= 2;
    const int rem = n - p;
    const uint64_t v = (uint64_t)count * es;
    if (r < 2 * rem && r % 2 == 0)
        return v;
    const int nr = r < 2 * rem ? r / 2 : r - rem;
    uint64_t elems = 0;
    int lo = 0, hi = p;
    for (int d = 1; d < p; d *= 2) {
        elems += split_off(count, p, hi) - split_off(count, p, lo);
        const int mid = lo + (hi - lo) / 2;
        if (nr & d) /* the upper partner keeps the upper half */
            lo = mid;
        else
            hi = mid;
    }
    if (count % (size_t)p == 0 && elems != 2 * (uint64_t)(p - 1) * (count / (size_t)p))
        return UINT64_MAX;                     /* the level sum must be 2 (p-1)/p of the vector */
    return elems * es + (r < 2 * rem ? v : 0); /* + the result for the folded rank */
}

int main(void)
{
    const struct CMUnitTest tests[] = {COLL_CASES};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
