/*
 * Gather, binomial tree.
 *
 * The tree of coll/tree.h run upwards. Every subtree is a contiguous rank interval
 * [lo, hi), so a subtree's blocks form one contiguous piece of the rank-ordered result: a leaf
 * sends its block from sendbuf, an inner rank gathers its subtree into scratch (own block plus
 * each child's piece at its offset, all receives posted at once) and sends it up as one
 * message, and the root receives every child's piece directly into its place in recvbuf. No
 * rank reorders blocks.
 *
 * Cost, b = block bytes, m = n b (the `bytes` of cost()), n ranks:
 *   ceil(log2 n) alpha + (n-1) b beta = ceil(log2 n) alpha + (n-1)/n m beta
 * plus one block copy at each inner rank. Topology: none assumed.
 * Source: the minimum-spanning-tree gather of Thakur, Rabenseifner & Gropp, "Optimization of
 * Collective Communication Operations in MPICH" (IJHPCA 2005).
 */
#include <stdlib.h>

#include "coll/tree.h"
#include "coll/gather/gather.h"

/* buf + off, without arithmetic on a NULL buf (count 0: every offset is 0). */
static char *at(void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

double glucx_gather_binomial_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    const int n = topo->size;
    const double b = (double)bytes / n;
    return glucx_coll_ceil_log2(n) * l.alpha_ns + (n - 1) * b * l.beta_ns_per_byte +
           b * topo->copy_ns_per_byte;
}

glucx_status_t glucx_gather_binomial_run(glucx_coll_ctx_t *ctx)
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
            st = glucx_coll_sendrecv(ctx, tree.parent.peer, ctx->sendbuf, b, -1, NULL, 0,
                                     (unsigned)tree.parent.level);
        return st;
    }

    /* the subtree's blocks [tree.lo, tree.hi): in recvbuf at the root, else in scratch */
    const size_t sub = (size_t)(tree.hi - tree.lo) * b;
    char *scratch = NULL;
    char *base; /* where block of rank tree.lo goes */
    if (is_root) {
        base = ctx->recvbuf;
    } else {
        scratch = glucx_coll_malloc(ctx, sub, &st);
        if (scratch == NULL)
            return st;
        base = scratch;
    }
    const int lo = is_root ? 0 : tree.lo;
    glucx_tx_req_t reqs[GLUCX_COLL_TREE_MAX_LEVELS];
    for (int i = 0; i < tree.nchildren; i++) {
        const glucx_coll_tree_edge_t *c = &tree.children[i];
        st = glucx_coll_irecv(ctx, c->peer, (unsigned)c->level, at(base, (size_t)(c->lo - lo) * b),
                              (size_t)(c->hi - c->lo) * b, &reqs[i]);
        if (st != GLUCX_OK)
            goto out;
    }
    /* own block (in place at the root: already there) */
    glucx_coll_copy(at(base, (size_t)(r - lo) * b), ctx->sendbuf, b);
    st = glucx_coll_waitall(ctx, reqs, tree.nchildren);
    if (st == GLUCX_OK && !is_root)
        st = glucx_coll_sendrecv(ctx, tree.parent.peer, base, sub, -1, NULL, 0,
                                 (unsigned)tree.parent.level);
out:
    free(scratch);
    return st;
}
