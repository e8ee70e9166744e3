/** Internal: alltoallv algorithms (rows of glucx_alltoallv_table). */
#ifndef GLUCX_COLL_ALLTOALLV_H
#define GLUCX_COLL_ALLTOALLV_H

#include "coll/coll.h"

/** Rows of glucx_alltoallv_table, in table order. */
typedef enum glucx_alltoallv_alg {
    GLUCX_ALLTOALLV_PAIRWISE,
    GLUCX_ALLTOALLV_LINEAR,
    GLUCX_ALLTOALLV_HIERARCHICAL,
    GLUCX_ALLTOALLV_ALG_COUNT
} glucx_alltoallv_alg_t;

double glucx_alltoallv_pairwise_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_alltoallv_pairwise_run(glucx_coll_ctx_t *ctx);

double glucx_alltoallv_linear_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_alltoallv_linear_run(glucx_coll_ctx_t *ctx);

double glucx_alltoallv_hierarchical_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_alltoallv_hierarchical_run(glucx_coll_ctx_t *ctx);

/**
 * Copy this rank's block to itself (send_counts[rank] elements to counts[rank]). The two counts
 * must agree: otherwise fails the collective with GLUCX_ERR_MISMATCH (peers notified).
 * Called before any message is posted.
 */
glucx_status_t glucx_alltoallv_check_self(glucx_coll_ctx_t *ctx);
void glucx_alltoallv_copy_self(glucx_coll_ctx_t *ctx);

#endif
