/** Internal: broadcast algorithms (rows of glucx_broadcast_table). */
#ifndef GLUCX_COLL_BROADCAST_H
#define GLUCX_COLL_BROADCAST_H

#include "coll/coll.h"

/** Rows of glucx_broadcast_table, in table order. */
typedef enum glucx_broadcast_alg {
    GLUCX_BROADCAST_BINOMIAL,
    GLUCX_BROADCAST_SCATTER_ALLGATHER,
    GLUCX_BROADCAST_HIERARCHICAL,
    GLUCX_BROADCAST_ALG_COUNT
} glucx_broadcast_alg_t;

double glucx_broadcast_binomial_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_broadcast_binomial_run(glucx_coll_ctx_t *ctx);

double glucx_broadcast_scatter_allgather_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_broadcast_scatter_allgather_run(glucx_coll_ctx_t *ctx);

double glucx_broadcast_hierarchical_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_broadcast_hierarchical_run(glucx_coll_ctx_t *ctx);

#endif
