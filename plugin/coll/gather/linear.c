/*
 * Gather, linear: every non-root rank sends its block to the root, which posts all n-1
 * receives at once, each straight into its place in recvbuf.
 *
 * Cost, b = block bytes, m = n b, n ranks: (n-1) (alpha + b beta) — the root takes the n-1
 * messages one after the other — plus one block copy at the root. No store-and-forward and
 * no scratch, unlike the binomial tree.
 * Topology: none assumed (a star around the root).
 * Source: the textbook direct gather (e.g. the "basic linear" gather of Open MPI, the MPI-1
 * reference implementation); see Thakur, Rabenseifner & Gropp (IJHPCA 2005) for comparison.
 */
#include <stdlib.h>

#include "coll/gather/gather.h"

/* buf + off, without arithmetic on a NULL buf (count 0: every offset is 0). */
static char *at(void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

double glucx_gather_linear_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    const int n = topo->size;
    const double b = (double)bytes / n;
    return (n - 1) * (l.alpha_ns + b * l.beta_ns_per_byte) + b * topo->copy_ns_per_byte;
}

glucx_status_t glucx_gather_linear_run(glucx_coll_ctx_t *ctx)
{
    const size_t b = ctx->args->count * ctx->esize;
    const int n = ctx->size, r = ctx->rank, root = ctx->args->root;
    glucx_status_t st;
    if (r != root)
        return glucx_coll_sendrecv(ctx, root, ctx->sendbuf, b, -1, NULL, 0, 0);

    char *out = ctx->recvbuf;
    glucx_tx_req_t one, *reqs = &one;
    if (n > 2) {
        reqs = glucx_coll_malloc(ctx, sizeof(*reqs) * (size_t)(n - 1), &st);
        if (reqs == NULL)
            return st;
    }
    int k = 0;
    st = GLUCX_OK;
    for (int p = 0; p < n && st == GLUCX_OK; p++)
        if (p != r)
            st = glucx_coll_irecv(ctx, p, 0, at(out, (size_t)p * b), b, &reqs[k++]);
    if (st == GLUCX_OK) {
        glucx_coll_copy(at(out, (size_t)r * b), ctx->sendbuf, b);
        st = glucx_coll_waitall(ctx, reqs, k);
    }
    if (reqs != &one)
        free(reqs);
    return st;
}
