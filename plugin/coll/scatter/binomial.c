/*
 * Scatter, binomial tree.
 *
 * The tree of coll/tree.h run downwards. Every subtree is a contiguous rank interval
 * [lo, hi), hence one contiguous piece of the root's rank-ordered sendbuf: the root sends each
 * child its piece straight from sendbuf, an inner rank receives its subtree's piece into
 * scratch and forwards the children's parts from there, a leaf receives its block straight into
 * recvbuf. The biggest subtree is served first.
 *
 * Cost, b = block bytes, m = n b (the `bytes` of cost()), n ranks:
 *   ceil(log2 n) alpha + (n-1) b beta = ceil(log2 n) alpha + (n-1)/n m beta
 * plus one block copy at each inner rank and at the root. Topology: none assumed.
 * Source: the minimum-spanning-tree scatter of Thakur, Rabenseifner & Gropp, "Optimization of
 * Collective Communication Operations in MPICH" (IJHPCA 2005).
 */
#include <stdlib.h>

#include "coll/tree.h"
#include "coll/scatter/scatter.h"

/* buf + off, without arithmetic on a NULL buf (count 0: every offset is 0). */
static const char *at(const void *buf, size_t off)
{
    return off ? (const char *)buf + off : (const char *)buf;
}

double glucx_scatter_binomial_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    const int n = topo->size;
    const double b = (double)bytes / n;
    return glucx_coll_ceil_log2(n) * l.alpha_ns + (n - 1) * b * l.beta_ns_per_byte +
           b * topo->copy_ns_per_byte;
}

glucx_status_t glucx_scatter_binomial_run(glucx_coll_ctx_t *ctx)
{
    const size_t b = ctx->args->count * ctx->esize;
    const int r = ctx->rank, is_root = r == ctx->args->root;
    glucx_coll_tree_t tree;
    glucx_coll_tree_build(ctx->size, ctx->args->root, r, &tree);
    glucx_status_t st = GLUCX_OK;

    if (tree.nchildren == 0) {
        if (is_root) /* a single rank */
            glucx_coll_copy(ctx->recvbuf, ctx->sendbuf, b);
        else
            st = glucx_coll_sendrecv(ctx, -1, NULL, 0, tree.parent.peer, ctx->recvbuf, b,
                                     (unsigned)tree.parent.level);
        return st;
    }

    /* the subtree's blocks [tree.lo, tree.hi): the root's sendbuf, else scratch */
    char *scratch = NULL;
    const char *base; /* block of rank `lo` */
    int lo = 0;
    if (is_root) {
        base = ctx->sendbuf;
    } else {
        const size_t sub = (size_t)(tree.hi - tree.lo) * b;
        scratch = glucx_coll_malloc(ctx, sub, &st);
        if (scratch == NULL)
            return st;
        st = glucx_coll_sendrecv(ctx, -1, NULL, 0, tree.parent.peer, scratch, sub,
                                 (unsigned)tree.parent.level);
        if (st != GLUCX_OK)
            goto out;
        base = scratch;
        lo = tree.lo;
    }
    glucx_tx_req_t reqs[GLUCX_COLL_TREE_MAX_LEVELS];
    for (int i = 0; i < tree.nchildren; i++) {
        const glucx_coll_tree_edge_t *c = &tree.children[i];
        st = glucx_coll_isend(ctx, c->peer, (unsigned)c->level, at(base, (size_t)(c->lo - lo) * b),
                              (size_t)(c->hi - c->lo) * b, &reqs[i]);
        if (st != GLUCX_OK)
            goto out;
    }
    /* own block (the root's recvbuf may point at it already) */
    glucx_coll_copy(ctx->recvbuf, at(base, (size_t)(r - lo) * b), b);
    st = glucx_coll_waitall(ctx, reqs, tree.nchildren);
out:
    free(scratch);
    return st;
}
