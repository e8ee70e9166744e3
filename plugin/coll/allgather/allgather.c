/* allgather: algorithm table. */
#include "coll/allgather/allgather.h"

static const glucx_coll_alg_t algs[GLUCX_ALLGATHER_ALG_COUNT] = {
    [GLUCX_ALLGATHER_RECURSIVE_DOUBLING] = {"recursive_doubling",
                                            "recursive doubling, log2(n) steps, power-of-two "
                                            "sizes only (Thakur, Rabenseifner & Gropp 2005)",
                                            glucx_allgather_recursive_doubling_cost,
                                            glucx_allgather_recursive_doubling_run},
    [GLUCX_ALLGATHER_BRUCK] = {"bruck",
                               "Bruck's concatenation, ceil(log2 n) steps, any size, no final "
                               "rotation (Bruck et al. 1997)",
                               glucx_allgather_bruck_cost, glucx_allgather_bruck_run},
    [GLUCX_ALLGATHER_RING] = {"ring",
                              "pipelined ring, n-1 steps, bandwidth-optimal for large messages "
                              "(Patarasuk & Yuan 2009)",
                              glucx_allgather_ring_cost, glucx_allgather_ring_run},
    [GLUCX_ALLGATHER_HIERARCHICAL] = {"hierarchical",
                                      "gather along the outer dimensions (each block crosses "
                                      "each slow link once), then fan out inside the package "
                                      "(two-level allgather, BlueConnect)",
                                      glucx_allgather_hierarchical_cost,
                                      glucx_allgather_hierarchical_run},
};

const glucx_coll_table_t glucx_allgather_table = {algs, GLUCX_ALLGATHER_ALG_COUNT};
