/** Internal: alltoall algorithms (rows of glucx_alltoall_table). */
#ifndef GLUCX_COLL_ALLTOALL_H
#define GLUCX_COLL_ALLTOALL_H

#include "coll/coll.h"

/** Rows of glucx_alltoall_table, in table order. */
typedef enum glucx_alltoall_alg {
    GLUCX_ALLTOALL_PAIRWISE,
    GLUCX_ALLTOALL_BRUCK,
    GLUCX_ALLTOALL_HIERARCHICAL,
    GLUCX_ALLTOALL_ALG_COUNT
} glucx_alltoall_alg_t;

double glucx_alltoall_pairwise_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_alltoall_pairwise_run(glucx_coll_ctx_t *ctx);

double glucx_alltoall_bruck_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_alltoall_bruck_run(glucx_coll_ctx_t *ctx);

/** Number of i in [0, n) with bit @p bit set: the blocks Bruck's round @p bit moves. */
static inline int glucx_alltoall_bruck_blocks(int n, int bit)
{
    const int period = 2 << bit, half = 1 << bit;
    const int tail = n % period - half;
    return (n / period) * half + (tail > 0 ? tail : 0);
}

double glucx_alltoall_hierarchical_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_alltoall_hierarchical_run(glucx_coll_ctx_t *ctx);

#endif
