/* barrier: algorithm table. */
#include "coll/barrier/barrier.h"

static const glucx_coll_alg_t algs[GLUCX_BARRIER_ALG_COUNT] = {
    [GLUCX_BARRIER_DISSEMINATION] = {"dissemination",
                                     "ceil(log2 n) rounds of zero-byte messages to rank + 2^k "
                                     "(Hensgen, Finkel & Manber 1988)",
                                     glucx_barrier_dissemination_cost,
                                     glucx_barrier_dissemination_run},
};

const glucx_coll_table_t glucx_barrier_table = {algs, GLUCX_BARRIER_ALG_COUNT};
