/** Internal: reduce algorithms (rows of glucx_reduce_table). */
#ifndef GLUCX_COLL_REDUCE_H
#define GLUCX_COLL_REDUCE_H

#include "coll/coll.h"

/** Rows of glucx_reduce_table, in table order. */
typedef enum glucx_reduce_alg {
    GLUCX_REDUCE_BINOMIAL,
    GLUCX_REDUCE_REDUCE_SCATTER_GATHER,
    GLUCX_REDUCE_HIERARCHICAL,
    GLUCX_REDUCE_ALG_COUNT
} glucx_reduce_alg_t;

double glucx_reduce_binomial_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_reduce_binomial_run(glucx_coll_ctx_t *ctx);

double glucx_reduce_reduce_scatter_gather_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_reduce_reduce_scatter_gather_run(glucx_coll_ctx_t *ctx);

double glucx_reduce_hierarchical_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_reduce_hierarchical_run(glucx_coll_ctx_t *ctx);

#endif
