/*
 * Allgatherv, pipelined ring: the allgather ring (plugin/coll/allgather/ring.c) on blocks of
 * counts[r] elements at displs[r]. Each rank sends its own block straight from the input (copied
 * into place at the end), then forwards for n-1 steps what it received; segments of large blocks
 * are forwarded as they arrive.
 *
 * Cost, m = total output bytes, n ranks: (n-1) alpha + (n-1)/n m beta for equal counts; with
 * uneven counts a step takes as long as its largest block: sum over steps of max block.
 * Topology: a ring of neighbours.
 * Source: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
 * workstations" (JPDC 2009); MPICH's ring allgatherv (Thakur, Rabenseifner & Gropp 2005).
 */
#include "coll/allgather/ring.h"
#include "coll/allgatherv/allgatherv.h"

double glucx_allgatherv_ring_cost(const glucx_topo_t *topo, size_t bytes)
{
    const glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    const double n = topo->size;
    return (n - 1) * l.alpha_ns + (n - 1) / n * (double)bytes * l.beta_ns_per_byte;
}

glucx_status_t glucx_allgatherv_ring_run(glucx_coll_ctx_t *ctx)
{
    const glucx_coll_args_t *a = ctx->args;
    char *out = ctx->recvbuf;
    size_t total = 0;
    for (int b = 0; b < ctx->size; b++)
        total += a->counts[b];
    return glucx_coll_ring_allgather_blocks(ctx, out, a->displs, a->counts, 0, ctx->sendbuf);
}
