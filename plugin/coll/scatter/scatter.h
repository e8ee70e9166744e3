/** Internal: scatter algorithms (rows of glucx_scatter_table). */
#ifndef GLUCX_COLL_SCATTER_H
#define GLUCX_COLL_SCATTER_H

#include "coll/coll.h"

/** Rows of glucx_scatter_table, in table order. */
typedef enum glucx_scatter_alg {
    GLUCX_SCATTER_BINOMIAL,
    GLUCX_SCATTER_LINEAR,
    GLUCX_SCATTER_ALG_COUNT
} glucx_scatter_alg_t;

double glucx_scatter_binomial_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_scatter_binomial_run(glucx_coll_ctx_t *ctx);

double glucx_scatter_linear_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_scatter_linear_run(glucx_coll_ctx_t *ctx);

#endif
