/*
 * Broadcast, binomial tree.
 *
 * Each rank receives the whole message from its parent, then sends it to each of its children,
 * the biggest subtree first. The tree is the one of tree.h (contiguous rank intervals; for a
 * power-of-two size the binomial tree on rank XOR root).
 *
 * Cost, m = message bytes, n ranks: ceil(log2 n) * (alpha + m beta) along the deepest path.
 * Topology: none assumed (every step may cross the bottleneck link class).
 * Source: the minimum-spanning-tree broadcast of Thakur, Rabenseifner & Gropp, "Optimization of
 * Collective Communication Operations in MPICH" (IJHPCA 2005), MPICH's short-message broadcast.
 */
#include "coll/broadcast/broadcast.h"
#include "coll/tree.h"

double glucx_broadcast_binomial_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    return glucx_coll_ceil_log2(topo->size) * (l.alpha_ns + (double)bytes * l.beta_ns_per_byte);
}

glucx_status_t glucx_broadcast_binomial_run(glucx_coll_ctx_t *ctx)
{
    const size_t bytes = ctx->args->count * ctx->esize;
    void *buf = ctx->recvbuf;
    glucx_coll_tree_t tree;
    glucx_coll_tree_build(ctx->size, ctx->args->root, ctx->rank, &tree);

    glucx_status_t st;
    if (tree.parent.peer >= 0) {
        st = glucx_coll_sendrecv(ctx, -1, NULL, 0, tree.parent.peer, buf, bytes,
                                 (unsigned)tree.parent.level);
        if (st != GLUCX_OK)
            return st;
    }
    glucx_tx_req_t reqs[GLUCX_COLL_TREE_MAX_LEVELS];
    for (int i = 0; i < tree.nchildren; i++) {
        st = glucx_coll_isend(ctx, tree.children[i].peer, (unsigned)tree.children[i].level, buf,
                              bytes, &reqs[i]);
        if (st != GLUCX_OK)
            return st;
    }
    return tree.nchildren > 0 ? glucx_coll_waitall(ctx, reqs, tree.nchildren) : GLUCX_OK;
}
