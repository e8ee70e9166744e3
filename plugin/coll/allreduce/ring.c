/*
 * Allreduce, pipelined ring: ring reduce-scatter, then ring allgather.
 *
 * The vector is cut into n nearly equal blocks. The reduce-scatter
 * (plugin/coll/reduce_scatter/ring.c) leaves block r fully reduced on rank r; the allgather
 * (plugin/coll/allgather/ring.c) circulates the reduced blocks. Blocks travel in segments of
 * GLUCX_COLL_RING_SEG_BYTES, each reduced straight from its receive slot into recvbuf and
 * forwarded as soon as it is ready; the allgather receives directly into recvbuf. There is no
 * input copy, even out of place (the first combine reads sendbuf), and the scratch is a few
 * segment slots. Each block is reduced once and then copied, so every rank ends with bitwise
 * the same result.
 *
 * Cost, m = message bytes, n ranks:
 *   2 (n-1) alpha + 2 (n-1)/n m beta + (n-1)/n m gamma.
 * On a topology file the ring steps r -> r+1 cost their pattern's alpha and beta on the
 * routes (glucx_topo_step_cost: a link direction that several messages of one step cross
 * charges each of them).
 * Bandwidth-optimal; the latency term grows linearly with n: the large-message choice.
 * Topology: a ring of neighbours; only the package boundaries of the ring cross the network.
 * Source: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
 * workstations" (JPDC 2009); the segmented pipeline is that of NCCL's and Baidu's rings.
 */
#include <stdlib.h>

#include "coll/allgather/ring.h"
#include "coll/allreduce/allreduce.h"
#include "coll/reduce_scatter/ring.h"

double glucx_allreduce_ring_cost(const glucx_topo_t *topo, size_t bytes)
{
    const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_SHIFT_UP, 0);
    const double n = topo->size, m = (double)bytes;
    return 2 * (n - 1) * l.alpha_ns + 2 * (n - 1) / n * m * l.beta_ns_per_byte +
           (n - 1) / n * m * topo->gamma_ns_per_byte;
}

glucx_status_t glucx_allreduce_ring_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t count = ctx->args->count, es = ctx->esize;
    char *out = ctx->recvbuf;
    if (n == 1) {
        glucx_coll_copy(out, ctx->sendbuf, count * es);
        return GLUCX_OK;
    }
    glucx_status_t st;
    size_t *off = glucx_coll_malloc(ctx, sizeof(size_t) * 2 * (size_t)n, &st);
    if (off == NULL)
        return st;
    size_t *len = off + n;
    for (int b = 0; b < n; b++)
        off[b] = glucx_coll_split(count, (size_t)n, (size_t)b, &len[b]);
    /* partials go to recvbuf (their final place); every send is done when this returns, so
     * the allgather may then receive over the blocks it sent from */
    st = glucx_coll_ring_reduce_scatter_blocks(ctx, ctx->sendbuf, off, len, out, out + off[r] * es,
                                               0);
    if (st == GLUCX_OK)
        st = glucx_coll_ring_allgather_blocks(ctx, out, off, len, (unsigned)n - 1, NULL);
    free(off);
    return st;
}
