/* allreduce: algorithm table. */
#include "coll/allreduce/allreduce.h"

static const glucx_coll_alg_t algs[GLUCX_ALLREDUCE_ALG_COUNT] = {
    [GLUCX_ALLREDUCE_RECURSIVE_DOUBLING] = {"recursive_doubling",
                                            "recursive doubling on whole vectors, log2(n) steps, "
                                            "for small messages (Thakur, Rabenseifner & Gropp "
                                            "2005)",
                                            glucx_allreduce_recursive_doubling_cost,
                                            glucx_allreduce_recursive_doubling_run},
    [GLUCX_ALLREDUCE_RING] = {"ring",
                              "pipelined ring reduce-scatter + allgather, bandwidth-optimal for "
                              "large messages (Patarasuk & Yuan 2009)",
                              glucx_allreduce_ring_cost, glucx_allreduce_ring_run},
    [GLUCX_ALLREDUCE_RABENSEIFNER] = {"rabenseifner",
                                      "recursive-halving reduce-scatter + recursive-doubling "
                                      "allgather, for medium/large messages (Rabenseifner 2004)",
                                      glucx_allreduce_rabenseifner_cost,
                                      glucx_allreduce_rabenseifner_run},
};

const glucx_coll_table_t glucx_allreduce_table = {algs, GLUCX_ALLREDUCE_ALG_COUNT};
