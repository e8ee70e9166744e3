/** Internal: allgather algorithms (rows of glucx_allgather_table). */
#ifndef GLUCX_COLL_ALLGATHER_H
#define GLUCX_COLL_ALLGATHER_H

#include "coll/coll.h"

/** Rows of glucx_allgather_table, in table order (small messages first). */
typedef enum glucx_allgather_alg {
    GLUCX_ALLGATHER_RECURSIVE_DOUBLING,
    GLUCX_ALLGATHER_BRUCK,
    GLUCX_ALLGATHER_RING,
    GLUCX_ALLGATHER_HIERARCHICAL,
    GLUCX_ALLGATHER_ALG_COUNT
} glucx_allgather_alg_t;

double glucx_allgather_recursive_doubling_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allgather_recursive_doubling_run(glucx_coll_ctx_t *ctx);

double glucx_allgather_bruck_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allgather_bruck_run(glucx_coll_ctx_t *ctx);

double glucx_allgather_ring_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allgather_ring_run(glucx_coll_ctx_t *ctx);

/* plugin/coll/allgather/hierarchical.c: topology-aware (INFINITY on one package) */
double glucx_allgather_hierarchical_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allgather_hierarchical_run(glucx_coll_ctx_t *ctx);

#endif
