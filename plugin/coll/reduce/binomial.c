/*
 * Reduce, binomial tree.
 *
 * The tree of coll/tree.h run upwards: each rank receives its children's partial
 * results, the deepest (smallest) subtree first, combines each into its own, and sends the
 * result of its subtree to its parent. Subtrees are contiguous rank intervals and a child's
 * interval is always adjacent to what the rank has combined so far, so every combine is
 * (lower ranks) op (higher ranks): the bracketing depends on the rank count only, not on the
 * root, and for 8 ranks is ((x0 x1)(x2 x3))((x4 x5)(x6 x7)), as recursive doubling combines.
 * The next child's receive is posted while the current one is combined (two receive buffers).
 * Non-root ranks never write recvbuf (it may be NULL there); inner ranks use scratch.
 *
 * Cost, m = message bytes, n ranks: ceil(log2 n) * (alpha + m beta + m gamma).
 * Topology: none assumed.
 * Source: the binomial-tree reduce of Thakur, Rabenseifner & Gropp, "Optimization of Collective
 * Communication Operations in MPICH" (IJHPCA 2005), MPICH's short-message reduce.
 */
#include <stdlib.h>

#include "coll/tree.h"
#include "coll/reduce/reduce.h"
#include "util/error.h"

double glucx_reduce_binomial_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    return glucx_coll_ceil_log2(topo->size) *
           (l.alpha_ns + (double)bytes * (l.beta_ns_per_byte + topo->gamma_ns_per_byte));
}

glucx_status_t glucx_reduce_binomial_run(glucx_coll_ctx_t *ctx)
{
    const glucx_coll_args_t *a = ctx->args;
    if (ctx->reduce == NULL)
        return glucx_error(GLUCX_ERR_UNSUPPORTED, "reduce: no kernel for op %s on %s",
                           glucx_op_name(a->op), glucx_dtype_name(a->dtype));
    const size_t count = a->count, bytes = count * ctx->esize;
    const int is_root = ctx->rank == a->root;
    glucx_coll_tree_t tree;
    glucx_coll_tree_build(ctx->size, a->root, ctx->rank, &tree);
    glucx_status_t st = GLUCX_OK;

    if (tree.nchildren == 0) {
        if (is_root) /* a single rank */
            glucx_coll_copy(ctx->recvbuf, ctx->sendbuf, bytes);
        else
            st = glucx_coll_sendrecv(ctx, tree.parent.peer, ctx->sendbuf, bytes, -1, NULL, 0,
                                     (unsigned)tree.parent.level);
        return st;
    }

    /* scratch: the accumulator (non-root only) and up to two receive buffers */
    const int nbuf = tree.nchildren > 1 ? 2 : 1;
    char *scratch = glucx_coll_malloc(ctx, bytes * (size_t)(nbuf + !is_root), &st);
    if (scratch == NULL)
        return st;
    char *tmp[2] = {scratch, scratch + bytes * (size_t)(nbuf - 1)};
    void *acc = is_root ? ctx->recvbuf : scratch + bytes * (size_t)nbuf;
    const void *cur = ctx->sendbuf; /* what is combined so far: ranks [acc_lo, acc_hi) */
    int acc_lo = ctx->rank;

    /* children deepest first: j-th received is children[nchildren - 1 - j] */
    glucx_tx_req_t reqs[2];
    for (int j = 0; j < nbuf; j++) {
        const glucx_coll_tree_edge_t *c = &tree.children[tree.nchildren - 1 - j];
        st = glucx_coll_irecv(ctx, c->peer, (unsigned)c->level, tmp[j], bytes, &reqs[j]);
        if (st != GLUCX_OK)
            goto out;
    }
    for (int j = 0; j < tree.nchildren; j++) {
        const glucx_coll_tree_edge_t *c = &tree.children[tree.nchildren - 1 - j];
        st = glucx_coll_waitall(ctx, &reqs[j % 2], 1);
        if (st != GLUCX_OK)
            goto out;
        if (c->lo > acc_lo) {
            glucx_coll_reduce(ctx, acc, cur, tmp[j % 2], count);
        } else {
            glucx_coll_reduce(ctx, acc, tmp[j % 2], cur, count);
            acc_lo = c->lo;
        }
        cur = acc;
        if (j + 2 < tree.nchildren) {
            const glucx_coll_tree_edge_t *n2 = &tree.children[tree.nchildren - 3 - j];
            st = glucx_coll_irecv(ctx, n2->peer, (unsigned)n2->level, tmp[j % 2], bytes,
                                  &reqs[j % 2]);
            if (st != GLUCX_OK)
                goto out;
        }
    }
    if (!is_root)
        st = glucx_coll_sendrecv(ctx, tree.parent.peer, acc, bytes, -1, NULL, 0,
                                 (unsigned)tree.parent.level);
out:
    free(scratch);
    return st;
}
