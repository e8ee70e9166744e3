/* alltoall: algorithm table. */
#include "coll/alltoall/alltoall.h"

static const glucx_coll_alg_t algs[GLUCX_ALLTOALL_ALG_COUNT] = {
    [GLUCX_ALLTOALL_PAIRWISE] = {"pairwise",
                                 "n-1 steps, step k sends to rank+k and receives from rank-k; "
                                 "for large blocks (Thakur, Rabenseifner & Gropp 2005)",
                                 glucx_alltoall_pairwise_cost, glucx_alltoall_pairwise_run},
    [GLUCX_ALLTOALL_BRUCK] = {"bruck",
                              "ceil(log2 n) steps of about n/2 packed blocks; for small blocks "
                              "(Bruck et al. 1997)",
                              glucx_alltoall_bruck_cost, glucx_alltoall_bruck_run},
    [GLUCX_ALLTOALL_HIERARCHICAL] =
        {"hierarchical",
         "alltoall inside the package aggregated per destination package, then one message "
         "per package pair and local rank across (Traff & Rougier 2014)",
         glucx_alltoall_hierarchical_cost, glucx_alltoall_hierarchical_run},
};

const glucx_coll_table_t glucx_alltoall_table = {algs, GLUCX_ALLTOALL_ALG_COUNT};
