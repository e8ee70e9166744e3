/* gather: algorithm table. */
#include "coll/gather/gather.h"

static const glucx_coll_alg_t algs[GLUCX_GATHER_ALG_COUNT] = {
    [GLUCX_GATHER_BINOMIAL] = {"binomial",
                               "binomial tree, each subtree's blocks forwarded as one message "
                               "(Thakur, Rabenseifner & Gropp 2005)",
                               glucx_gather_binomial_cost, glucx_gather_binomial_run},
    [GLUCX_GATHER_LINEAR] = {"linear",
                             "every rank sends its block straight to the root, all receives "
                             "posted at once",
                             glucx_gather_linear_cost, glucx_gather_linear_run},
};

const glucx_coll_table_t glucx_gather_table = {algs, GLUCX_GATHER_ALG_COUNT};
