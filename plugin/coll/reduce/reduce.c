/* reduce: algorithm table. */
#include "coll/reduce/reduce.h"

static const glucx_coll_alg_t algs[GLUCX_REDUCE_ALG_COUNT] = {
    [GLUCX_REDUCE_BINOMIAL] = {"binomial",
                               "binomial tree, whole vector combined at each level, operands in "
                               "rank order (Thakur, Rabenseifner & Gropp 2005)",
                               glucx_reduce_binomial_cost, glucx_reduce_binomial_run},
    [GLUCX_REDUCE_REDUCE_SCATTER_GATHER] = {"reduce_scatter_gather",
                                            "recursive-halving reduce-scatter then gather to the "
                                            "root, for large messages (Rabenseifner 2004)",
                                            glucx_reduce_reduce_scatter_gather_cost,
                                            glucx_reduce_reduce_scatter_gather_run},
    [GLUCX_REDUCE_HIERARCHICAL] =
        {"hierarchical",
         "binomial reduce inside each package to a leader, then across leaders to the root; "
         "fixed bracketing (MPICH SMP-aware, Open MPI han)",
         glucx_reduce_hierarchical_cost, glucx_reduce_hierarchical_run},
};

const glucx_coll_table_t glucx_reduce_table = {algs, GLUCX_REDUCE_ALG_COUNT};
