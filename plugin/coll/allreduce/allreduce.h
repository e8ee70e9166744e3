/** Internal: allreduce algorithms (rows of glucx_allreduce_table). */
#ifndef GLUCX_COLL_ALLREDUCE_H
#define GLUCX_COLL_ALLREDUCE_H

#include "coll/coll.h"

/**
 * Rows of glucx_allreduce_table, in table order: small messages first. The ring comes before
 * rabenseifner because their alpha-beta costs tie on two ranks (selection keeps the earlier row),
 * and there the ring's segment pipeline measured as fast or faster at 1-16 MiB (2 ranks, UCX
 * shared memory; a noisy shared machine).
 */
typedef enum glucx_allreduce_alg {
    GLUCX_ALLREDUCE_RECURSIVE_DOUBLING,
    GLUCX_ALLREDUCE_RING,
    GLUCX_ALLREDUCE_RABENSEIFNER,
    GLUCX_ALLREDUCE_HIERARCHICAL,
    GLUCX_ALLREDUCE_TORUS,
    GLUCX_ALLREDUCE_TORUS_ROTATED,
    GLUCX_ALLREDUCE_ALG_COUNT
} glucx_allreduce_alg_t;

double glucx_allreduce_recursive_doubling_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allreduce_recursive_doubling_run(glucx_coll_ctx_t *ctx);

double glucx_allreduce_rabenseifner_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allreduce_rabenseifner_run(glucx_coll_ctx_t *ctx);

double glucx_allreduce_ring_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allreduce_ring_run(glucx_coll_ctx_t *ctx);

/** floor(log2 n) for n >= 1, i.e. p = 1 << result is the largest power of two <= n. */
/**
 * The part of an even rank r < 2*rem that the non-power-of-two fold takes out (MPICH's scheme):
 * send the whole input to rank r+1 at step 0, then receive the final result from it at
 * @p last_step. In place (in == out) the receive is posted only after the send completed.
 */
/* plugin/coll/allreduce/hierarchical.c: topology-aware (INFINITY on one package) */
double glucx_allreduce_hierarchical_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allreduce_hierarchical_run(glucx_coll_ctx_t *ctx);
double glucx_allreduce_torus_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allreduce_torus_run(glucx_coll_ctx_t *ctx);
double glucx_allreduce_torus_rotated_cost(const glucx_topo_t *topo, size_t bytes);
glucx_status_t glucx_allreduce_torus_rotated_run(glucx_coll_ctx_t *ctx);

glucx_status_t glucx_allreduce_fold_out(glucx_coll_ctx_t *ctx, const void *in, void *out,
                                        size_t bytes, unsigned last_step);

static inline int glucx_allreduce_floor_log2(int n)
{
    int lg = 0;
    while ((2 << lg) <= n)
        lg++;
    return lg;
}

#endif
