/*
 * Scatter, linear: the root posts a send of each rank's block straight from sendbuf, all at
 * once; every other rank receives its block into recvbuf.
 *
 * Cost, b = block bytes, m = n b, n ranks: (n-1) (alpha + b beta) — the root's messages leave
 * one after the other — plus one block copy at the root. No store-and-forward and no scratch.
 * Topology: none assumed (a star around the root).
 * Source: the textbook direct scatter (e.g. the "basic linear" scatter of Open MPI, the MPI-1
 * reference implementation); see Thakur, Rabenseifner & Gropp (IJHPCA 2005) for comparison.
 */
#include <stdlib.h>

#include "coll/scatter/scatter.h"

/* buf + off, without arithmetic on a NULL buf (count 0: every offset is 0). */
static const char *at(const void *buf, size_t off)
{
    return off ? (const char *)buf + off : (const char *)buf;
}

double glucx_scatter_linear_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    const int n = topo->size;
    const double b = (double)bytes / n;
    return (n - 1) * (l.alpha_ns + b * l.beta_ns_per_byte) + b * topo->copy_ns_per_byte;
}

glucx_status_t glucx_scatter_linear_run(glucx_coll_ctx_t *ctx)
{
    const size_t b = ctx->args->count * ctx->esize;
    const int n = ctx->size, r = ctx->rank, root = ctx->args->root;
    glucx_status_t st;
    if (r != root)
        return glucx_coll_sendrecv(ctx, -1, NULL, 0, root, ctx->recvbuf, b, 0);

    glucx_tx_req_t one, *reqs = &one;
    if (n > 2) {
        reqs = glucx_coll_malloc(ctx, sizeof(*reqs) * (size_t)(n - 1), &st);
        if (reqs == NULL)
            return st;
    }
    int k = 0;
    st = GLUCX_OK;
    /* start with the rank after the root so that not every scatter hits rank 0 first */
    for (int i = 1; i < n && st == GLUCX_OK; i++) {
        int p = (root + i) % n;
        st = glucx_coll_isend(ctx, p, 0, at(ctx->sendbuf, (size_t)p * b), b, &reqs[k++]);
    }
    if (st == GLUCX_OK) {
        glucx_coll_copy(ctx->recvbuf, at(ctx->sendbuf, (size_t)r * b), b);
        st = glucx_coll_waitall(ctx, reqs, k);
    }
    if (reqs != &one)
        free(reqs);
    return st;
}
