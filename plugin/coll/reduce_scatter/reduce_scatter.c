/* reduce_scatter: algorithm table. */
#include "coll/reduce_scatter/reduce_scatter.h"

static const glucx_coll_alg_t algs[GLUCX_REDUCE_SCATTER_ALG_COUNT] = {
    [GLUCX_REDUCE_SCATTER_HALVING] = {"halving",
                                      "recursive halving, log2(n) steps, non-power-of-two sizes "
                                      "folded first (Thakur, Rabenseifner & Gropp 2005)",
                                      glucx_reduce_scatter_halving_cost,
                                      glucx_reduce_scatter_halving_run},
    [GLUCX_REDUCE_SCATTER_RING] = {"ring",
                                   "pipelined ring, n-1 steps, bandwidth-optimal for large "
                                   "messages (Patarasuk & Yuan 2009)",
                                   glucx_reduce_scatter_ring_cost, glucx_reduce_scatter_ring_run},
    [GLUCX_REDUCE_SCATTER_HIERARCHICAL] = {"hierarchical",
                                           "reduce inside the package over its links, then "
                                           "reduce-scatter along the outer dimensions (each "
                                           "partial crosses each slow link once; BlueConnect)",
                                           glucx_reduce_scatter_hierarchical_cost,
                                           glucx_reduce_scatter_hierarchical_run},
};

const glucx_coll_table_t glucx_reduce_scatter_table = {algs, GLUCX_REDUCE_SCATTER_ALG_COUNT};
