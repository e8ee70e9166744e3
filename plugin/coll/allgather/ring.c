/*
 * Allgather, pipelined ring.
 *
 * For n-1 steps each rank forwards to its right neighbour the block it received from its left one
 * the step before (its own block first, sent straight from the input and copied into place at
 * the end). Blocks larger than
 * GLUCX_COLL_RING_SEG_BYTES travel as segments, each forwarded as soon as it arrived, so the
 * steps overlap (a segment pipeline around the ring). Received data lands directly in recvbuf:
 * no scratch, no copy besides the own block.
 *
 * Cost, m = total output bytes, n ranks: (n-1) alpha + (n-1)/n m beta. Bandwidth-optimal; the
 * latency term grows linearly, so it is the large-message choice.
 * On a topology file the ring steps r -> r+1 cost their pattern's alpha and beta on the
 * routes (glucx_topo_step_cost: a link direction that several messages of one step cross
 * charges each of them).
 * Topology: a ring of neighbours; every step may cross the bottleneck link class (ranks r and
 * r+1 usually share a package, so in practice only the package boundaries do).
 * Source: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
 * workstations" (JPDC 2009); the ring allgather of Thakur, Rabenseifner & Gropp, "Optimization
 * of Collective Communication Operations in MPICH" (IJHPCA 2005).
 */
#include <stdlib.h>

#include "coll/allgather/allgather.h"
#include "coll/allgather/ring.h"

glucx_status_t glucx_coll_ring_allgather_blocks(glucx_coll_ctx_t *ctx, char *buf, const size_t *off,
                                                const size_t *len, unsigned step_base,
                                                const void *own)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t es = ctx->esize;
    const char *own_src = own != NULL ? (const char *)own : buf + off[r] * es;
    if (n == 1) {
        glucx_coll_copy(buf + off[r] * es, own_src, len[r] * es);
        return GLUCX_OK;
    }
    const int right = (r + 1) % n, left = (r + n - 1) % n;

    /* receive unit = (step t, segment j) of block (r - t - 1); send step t carries block r - t */
    size_t nrecv = 0, nsend = 0;
    for (int t = 0; t < n - 1; t++) {
        nrecv += glucx_coll_ring_nseg(len[(r - t - 1 + n) % n], es);
        nsend += glucx_coll_ring_nseg(len[(r - t + n) % n], es);
    }

    glucx_status_t st;
    glucx_tx_req_t *rreq = glucx_coll_malloc(ctx, sizeof(*rreq) * (nrecv + nsend), &st);
    if (rreq == NULL)
        return st;
    glucx_tx_req_t *sreq = rreq + nrecv;
    size_t ns = 0;

    /* every receive first: the data has its final place already */
    size_t u = 0;
    for (int t = 0; t < n - 1; t++) {
        const int b = (r - t - 1 + n) % n;
        const size_t nseg = glucx_coll_ring_nseg(len[b], es);
        for (size_t j = 0; j < nseg; j++, u++) {
            size_t sl, so = glucx_coll_split(len[b], nseg, j, &sl);
            st = glucx_coll_irecv(ctx, left, step_base + (unsigned)t, buf + (off[b] + so) * es,
                                  sl * es, &rreq[u]);
            if (st != GLUCX_OK)
                goto out;
        }
    }
    {
        const size_t nseg = glucx_coll_ring_nseg(len[r], es);
        for (size_t j = 0; j < nseg; j++) {
            size_t sl, so = glucx_coll_split(len[r], nseg, j, &sl);
            st = glucx_coll_isend(ctx, right, step_base, own_src + so * es, sl * es, &sreq[ns++]);
            if (st != GLUCX_OK)
                goto out;
        }
    }
    /* forward each segment as soon as it is in (not the last step's: it has gone round) */
    u = 0;
    for (int t = 0; t < n - 1; t++) {
        const int b = (r - t - 1 + n) % n;
        const size_t nseg = glucx_coll_ring_nseg(len[b], es);
        for (size_t j = 0; j < nseg; j++, u++) {
            st = glucx_coll_waitall(ctx, &rreq[u], 1);
            if (st != GLUCX_OK)
                goto out;
            if (t == n - 2)
                continue;
            size_t sl, so = glucx_coll_split(len[b], nseg, j, &sl);
            st = glucx_coll_isend(ctx, right, step_base + (unsigned)t + 1, buf + (off[b] + so) * es,
                                  sl * es, &sreq[ns++]);
            if (st != GLUCX_OK)
                goto out;
        }
    }
    st = glucx_coll_waitall(ctx, sreq, (int)ns);
    if (st == GLUCX_OK) /* no step read the own block's place */
        glucx_coll_copy(buf + off[r] * es, own_src, len[r] * es);
out:
    /* on failure the transport completed every outstanding request: the array may go */
    free(rreq);
    return st;
}

double glucx_allgather_ring_cost(const glucx_topo_t *topo, size_t bytes)
{
    const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_SHIFT_UP, 0);
    const double n = topo->size;
    return (n - 1) * l.alpha_ns + (n - 1) / n * (double)bytes * l.beta_ns_per_byte;
}

glucx_status_t glucx_allgather_ring_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size;
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
    for (int b = 0; b < n; b++) {
        off[b] = (size_t)b * count;
        len[b] = count;
    }
    st = glucx_coll_ring_allgather_blocks(ctx, out, off, len, 0, ctx->sendbuf);
    free(off);
    return st;
}
