/** Internal: reduce_scatter algorithms (rows of glucx_reduce_scatter_table). */
#ifndef GLUCX_COLL_REDUCE_SCATTER_H
#define GLUCX_COLL_REDUCE_SCATTER_H

#include "coll/coll.h"

/** Rows of glucx_reduce_scatter_table, in table order (small messages first). */
typedef enum glucx_reduce_scatter_alg {
    GLUCX_REDUCE_SCATTER_HALVING,
    GLUCX_REDUCE_SCATTER_RING,
    GLUCX_REDUCE_SCATTER_HIERARCHICAL,
    GLUCX_REDUCE_SCATTER_ALG_COUNT
} glucx_reduce_scatter_alg_t;

double glucx_reduce_scatter_halving_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_reduce_scatter_halving_run(glucx_coll_ctx_t *ctx);

double glucx_reduce_scatter_ring_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_reduce_scatter_ring_run(glucx_coll_ctx_t *ctx);

/* plugin/coll/reduce_scatter/hierarchical.c: topology-aware (INFINITY on one package) */
double glucx_reduce_scatter_hierarchical_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_reduce_scatter_hierarchical_run(glucx_coll_ctx_t *ctx);

#endif
