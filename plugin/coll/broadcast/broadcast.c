/* broadcast: algorithm table. */
#include "coll/broadcast/broadcast.h"

static const glucx_coll_alg_t algs[GLUCX_BROADCAST_ALG_COUNT] = {
    [GLUCX_BROADCAST_BINOMIAL] = {"binomial",
                                  "binomial tree, whole message per edge; log2(n) steps "
                                  "(Thakur, Rabenseifner & Gropp 2005)",
                                  glucx_broadcast_binomial_cost, glucx_broadcast_binomial_run},
    [GLUCX_BROADCAST_SCATTER_ALLGATHER] = {"scatter_allgather",
                                           "binomial scatter then ring allgather, for large "
                                           "messages (van de Geijn; Thakur et al. 2005)",
                                           glucx_broadcast_scatter_allgather_cost,
                                           glucx_broadcast_scatter_allgather_run},
    [GLUCX_BROADCAST_HIERARCHICAL] =
        {"hierarchical",
         "root to one leader per package across packages, then each leader inside its package; "
         "each byte crosses the slow links once per package (MPICH SMP-aware, Open MPI han)",
         glucx_broadcast_hierarchical_cost, glucx_broadcast_hierarchical_run},
};

const glucx_coll_table_t glucx_broadcast_table = {algs, GLUCX_BROADCAST_ALG_COUNT};
