/** Internal: gather algorithms (rows of glucx_gather_table). */
#ifndef GLUCX_COLL_GATHER_H
#define GLUCX_COLL_GATHER_H

#include "coll/coll.h"

/** Rows of glucx_gather_table, in table order. */
typedef enum glucx_gather_alg {
    GLUCX_GATHER_BINOMIAL,
    GLUCX_GATHER_LINEAR,
    GLUCX_GATHER_ALG_COUNT
} glucx_gather_alg_t;

double glucx_gather_binomial_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_gather_binomial_run(glucx_coll_ctx_t *ctx);

double glucx_gather_linear_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_gather_linear_run(glucx_coll_ctx_t *ctx);

#endif
