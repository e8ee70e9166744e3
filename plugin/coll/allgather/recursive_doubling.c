/*
 * Allgather, recursive doubling (power-of-two sizes only).
 *
 * In step k (distance d = 2^k) rank r exchanges the d blocks it holds (the aligned group of d
 * ranks containing r) with rank r XOR d; after log2(n) steps every rank holds all n blocks.
 * Data is received directly at its place in recvbuf. The first step sends the own block straight
 * from sendbuf, and the own block is copied into recvbuf only after that exchange (it is first
 * read there by the second step): the copy is not in front of the first exchange, and the peer
 * reads input that is not dirty in this rank's cache (docs/perf.md, "Allgather and alltoall").
 *
 * Cost, m = total output bytes, n ranks: log2(n) alpha + (n-1)/n m beta.
 * On a topology file the steps r XOR 2^k, 2^k blocks each cost their pattern's alpha and beta on
 * the routes (glucx_topo_step_cost: a link direction that several messages of one step cross
 * charges each of them).
 * Topology: a hypercube; the last steps pair distant ranks, so they cross package boundaries
 * when packages are contiguous rank ranges.
 * Source: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
 * MPICH" (IJHPCA 2005), MPICH's allgather for power-of-two sizes and short/medium messages.
 * Other sizes return GLUCX_ERR_UNSUPPORTED (the bruck row takes them).
 */
#include <math.h>

#include "coll/allgather/allgather.h"

static int is_pow2(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

double glucx_allgather_recursive_doubling_cost(const glucx_topo_t *topo, size_t bytes)
{
    const int n = topo->size;
    if (!is_pow2(n))
        return INFINITY;
    /* step k exchanges the 2^k blocks (of bytes / n) held so far with r XOR 2^k */
    double t = 0.0;
    for (int k = 0; (1 << k) < n; k++) {
        const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_XOR, k);
        t += l.alpha_ns + (double)(1 << k) / n * (double)bytes * l.beta_ns_per_byte;
    }
    return t;
}

glucx_status_t glucx_allgather_recursive_doubling_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size, r = ctx->rank;
    if (!is_pow2(n))
        return GLUCX_ERR_UNSUPPORTED;
    const size_t bytes = ctx->args->count * ctx->esize; /* one block */
    char *out = ctx->recvbuf;
    if (n == 1) {
        glucx_coll_copy(out, ctx->sendbuf, bytes);
        return GLUCX_OK;
    }
    unsigned step = 0;
    for (int d = 1; d < n; d <<= 1, step++) {
        const int peer = r ^ d;
        const size_t mine = (size_t)(r & ~(d - 1)), theirs = (size_t)(peer & ~(d - 1));
        /* d == 1: the group is the own block alone, sent from the input */
        const void *src = d == 1 ? ctx->sendbuf : (const void *)(out + mine * bytes);
        glucx_status_t st = glucx_coll_sendrecv(ctx, peer, src, (size_t)d * bytes, peer,
                                                out + theirs * bytes, (size_t)d * bytes, step);
        if (st != GLUCX_OK)
            return st;
        if (d == 1) /* in place: sendbuf is this block already, nothing to copy */
            glucx_coll_copy(out + (size_t)r * bytes, ctx->sendbuf, bytes);
    }
    return GLUCX_OK;
}
