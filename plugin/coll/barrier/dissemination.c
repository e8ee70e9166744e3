/*
 * Barrier, dissemination.
 *
 * In round k = 0 .. ceil(log2 n)-1, every rank sends a zero-byte message to rank + 2^k and
 * waits for the one from rank - 2^k (mod n). After round k a rank has heard, directly or
 * through others, from the 2^(k+1) - 1 ranks before it, so after the last round from all of
 * them: nobody leaves before everybody has arrived. Works for any n, no root, no idle ranks.
 *
 * Cost, n ranks: ceil(log2 n) alpha (no data).
 * Topology: none assumed; round k's partners are 2^k apart in rank order.
 * Source: Hensgen, Finkel & Manber, "Two algorithms for barrier synchronization", International
 * Journal of Parallel Programming 17(1), 1988; MPICH's barrier (Thakur, Rabenseifner & Gropp,
 * IJHPCA 2005).
 */
#include "coll/barrier/barrier.h"

double glucx_barrier_dissemination_cost(const glucx_topo_t *topo, size_t bytes)
{
    (void)bytes;
    glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    int rounds = 0;
    while (rounds < 31 && (1 << rounds) < topo->size)
        rounds++;
    return rounds * l.alpha_ns;
}

glucx_status_t glucx_barrier_dissemination_run(glucx_coll_ctx_t *ctx)
{
    return glucx_barrier_dissemination_rounds(ctx, 0);
}

glucx_status_t glucx_barrier_dissemination_rounds(glucx_coll_ctx_t *ctx, unsigned step_base)
{
    const int n = ctx->size, r = ctx->rank;
    char out = 0, in = 0; /* zero-byte messages; the transport never touches them */
    unsigned k = step_base;
    for (int dist = 1; dist < n; dist <<= 1, k++) {
        glucx_status_t st =
            glucx_coll_sendrecv(ctx, (r + dist) % n, &out, 0, (r - dist + n) % n, &in, 0, k);
        if (st != GLUCX_OK)
            return st;
    }
    return GLUCX_OK;
}
