/* allgatherv: algorithm table. */
#include "coll/allgatherv/allgatherv.h"

static const glucx_coll_alg_t algs[GLUCX_ALLGATHERV_ALG_COUNT] = {
    [GLUCX_ALLGATHERV_BRUCK] = {"bruck",
                                "Bruck's concatenation with per-rank counts, ceil(log2 n) steps, "
                                "any size (Bruck et al. 1997)",
                                glucx_allgatherv_bruck_cost, glucx_allgatherv_bruck_run},
    [GLUCX_ALLGATHERV_RING] = {"ring",
                               "pipelined ring with per-rank counts, n-1 steps, for large "
                               "messages (Patarasuk & Yuan 2009)",
                               glucx_allgatherv_ring_cost, glucx_allgatherv_ring_run},
};

const glucx_coll_table_t glucx_allgatherv_table = {algs, GLUCX_ALLGATHERV_ALG_COUNT};
