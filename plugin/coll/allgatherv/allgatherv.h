/** Internal: allgatherv algorithms (rows of glucx_allgatherv_table). */
#ifndef GLUCX_COLL_ALLGATHERV_H
#define GLUCX_COLL_ALLGATHERV_H

#include "coll/coll.h"

/** Rows of glucx_allgatherv_table, in table order (small messages first). */
typedef enum glucx_allgatherv_alg {
    GLUCX_ALLGATHERV_BRUCK,
    GLUCX_ALLGATHERV_RING,
    GLUCX_ALLGATHERV_ALG_COUNT
} glucx_allgatherv_alg_t;

double glucx_allgatherv_bruck_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allgatherv_bruck_run(glucx_coll_ctx_t *ctx);

double glucx_allgatherv_ring_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allgatherv_ring_run(glucx_coll_ctx_t *ctx);

#endif
