/*
 * Allgatherv, Bruck's concatenation algorithm with per-rank counts (any number of ranks).
 *
 * ceil(log2 n) steps; in the step of distance d rank r sends the blocks of ranks [r, r + c)
 * (mod n, c = min(d, n - d)) to r - d and receives those of [r + d, r + d + c) from r + d
 * (see plugin/coll/allgather/bruck.c). When the blocks lie in recvbuf in rank order without
 * gaps (displs[b + 1] == displs[b] + counts[b], the common case) they are received in place;
 * otherwise they are gathered in a packed scratch buffer and copied out at the end.
 *
 * Cost, m = total output bytes, n ranks: ceil(log2 n) alpha + (n-1)/n m beta for equal counts
 * (+ m copy when the layout has gaps).
 * Topology: none assumed.
 * Source: Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient Algorithms for All-to-All
 * Communications in Multiport Message-Passing Systems" (IEEE TPDS 1997); MPICH's short-message
 * allgatherv for non-power-of-two sizes (Thakur, Rabenseifner & Gropp 2005).
 */
#include <stdlib.h>

#include "coll/allgather/bruck.h"
#include "coll/allgatherv/allgatherv.h"

double glucx_allgatherv_bruck_cost(const glucx_topo_t *topo, size_t bytes)
{
    const glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    const int n = topo->size;
    int steps = 0;
    while ((1 << steps) < n)
        steps++;
    return steps * l.alpha_ns + (double)(n - 1) / n * (double)bytes * l.beta_ns_per_byte;
}

glucx_status_t glucx_allgatherv_bruck_run(glucx_coll_ctx_t *ctx)
{
    const glucx_coll_args_t *a = ctx->args;
    const int n = ctx->size, r = ctx->rank;
    const size_t es = ctx->esize;
    char *out = ctx->recvbuf;
    if (n == 1) {
        glucx_coll_copy(out + a->displs[r] * es, ctx->sendbuf, a->counts[r] * es);
        return GLUCX_OK;
    }

    int packed = 1;
    size_t total = 0;
    for (int b = 0; b < n; b++) {
        if (b > 0 && a->displs[b] != a->displs[b - 1] + a->counts[b - 1])
            packed = 0;
        total += a->counts[b];
    }
    if (packed) /* the own block is sent from the input, then copied (see there) */
        return glucx_coll_bruck_allgather_blocks(ctx, out, a->displs, a->counts, ctx->sendbuf);

    /* gaps or another order: pack into scratch in rank order, gather there, copy out */
    glucx_status_t st;
    size_t *off = glucx_coll_malloc(ctx, sizeof(size_t) * (size_t)n, &st);
    if (off == NULL)
        return st;
    char *tmp = glucx_coll_malloc(ctx, total * es, &st);
    if (tmp == NULL) {
        free(off);
        return st;
    }
    size_t at = 0;
    for (int b = 0; b < n; b++) {
        off[b] = at;
        at += a->counts[b];
    }
    st = glucx_coll_bruck_allgather_blocks(ctx, tmp, off, a->counts, ctx->sendbuf);
    if (st == GLUCX_OK) /* the own block straight from the input */
        for (int b = 0; b < n; b++)
            glucx_coll_copy(out + a->displs[b] * es,
                            b == r ? (const char *)ctx->sendbuf : tmp + off[b] * es,
                            a->counts[b] * es);
    free(tmp);
    free(off);
    return st;
}
