/* scatter: algorithm table. */
#include "coll/scatter/scatter.h"

static const glucx_coll_alg_t algs[GLUCX_SCATTER_ALG_COUNT] = {
    [GLUCX_SCATTER_BINOMIAL] = {"binomial",
                                "binomial tree, each subtree's blocks sent as one message "
                                "(Thakur, Rabenseifner & Gropp 2005)",
                                glucx_scatter_binomial_cost, glucx_scatter_binomial_run},
    [GLUCX_SCATTER_LINEAR] = {"linear",
                              "the root sends every rank its block directly, all sends posted "
                              "at once",
                              glucx_scatter_linear_cost, glucx_scatter_linear_run},
};

const glucx_coll_table_t glucx_scatter_table = {algs, GLUCX_SCATTER_ALG_COUNT};
