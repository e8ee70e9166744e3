/** Internal: barrier algorithms (rows of glucx_barrier_table). */
#ifndef GLUCX_COLL_BARRIER_H
#define GLUCX_COLL_BARRIER_H

#include "coll/coll.h"

/** Rows of glucx_barrier_table, in table order. */
typedef enum glucx_barrier_alg {
    GLUCX_BARRIER_DISSEMINATION,
    GLUCX_BARRIER_ALG_COUNT
} glucx_barrier_alg_t;

double glucx_barrier_dissemination_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_barrier_dissemination_run(glucx_coll_ctx_t *ctx);
/** The dissemination rounds of ctx's collective with steps step_base, step_base + 1, ...
 *  (ceil(log2 n) of them); the core's confirmation round uses it after rooted collectives. */
glucx_status_t glucx_barrier_dissemination_rounds(glucx_coll_ctx_t *ctx, unsigned step_base);

#endif
