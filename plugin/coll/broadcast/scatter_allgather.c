/*
 * Broadcast for large messages: binomial scatter, then ring allgather.
 *
 * The message is cut into n blocks in rank order, block i of count/n elements plus one for the
 * first count%n blocks (so blocks may be empty when count < n). The root scatters them down the
 * tree of tree.h: every subtree is a contiguous rank interval, hence a contiguous byte range of
 * the buffer, received in place. Rank i then holds block i, and a ring allgather over ranks
 * 0..n-1 (n-1 steps, each rank forwards the block it got in the previous step) completes the
 * buffer everywhere. Empty blocks still travel as zero-byte messages so that ranks passing
 * different counts always meet a message with a wrong size or signature (GLUCX_ERR_MISMATCH)
 * rather than a missing one.
 *
 * Cost, m = message bytes, n ranks:
 *   scatter   ceil(log2 n) alpha + (n-1)/n m beta
 *   allgather (n-1) alpha     + (n-1)/n m beta
 * Against binomial's ceil(log2 n)(alpha + m beta) it wins once m beta dominates alpha.
 * Topology: none assumed; the ring uses neighbours in rank order, so with ranks numbered package
 * by package only one ring edge per package boundary crosses packages.
 * Source: van de Geijn's scatter-allgather broadcast (Barnett, Gupta, Payne, Shuler, van de Geijn
 * & Watts, "Interprocessor Collective Communication Library (InterCom)", SHPCC 1994), as used for
 * long messages by Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
 * Operations in MPICH" (IJHPCA 2005).
 */
#include "coll/broadcast/broadcast.h"
#include "coll/tree.h"

/* Step numbers: tree levels are < GLUCX_COLL_TREE_MAX_LEVELS; ring steps follow. */
#define RING_STEP0 GLUCX_COLL_TREE_MAX_LEVELS

double glucx_broadcast_scatter_allgather_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    const int n = topo->size;
    if (n <= 1)
        return 0.0;
    const double frac = (double)(n - 1) / n;
    return (glucx_coll_ceil_log2(n) + n - 1) * l.alpha_ns +
           2.0 * frac * (double)bytes * l.beta_ns_per_byte;
}

/* Offset (in elements) of block i: blocks of base elements, the first rem one longer. */
static size_t block_off(size_t base, size_t rem, int i)
{
    return (size_t)i * base + ((size_t)i < rem ? (size_t)i : rem);
}

/* Byte pointer into buf that tolerates buf == NULL when the offset is 0 (count 0). */
static char *at(void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

glucx_status_t glucx_broadcast_scatter_allgather_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t es = ctx->esize;
    const size_t base = ctx->args->count / (size_t)n, rem = ctx->args->count % (size_t)n;
    void *buf = ctx->recvbuf;
    if (n == 1)
        return GLUCX_OK;

    glucx_coll_tree_t tree;
    glucx_coll_tree_build(n, ctx->args->root, r, &tree);
    glucx_status_t st;

    /* scatter: my subtree's blocks [lo, hi) from my parent, then each child's share */
    if (tree.parent.peer >= 0) {
        size_t o = block_off(base, rem, tree.lo), e = block_off(base, rem, tree.hi);
        st = glucx_coll_sendrecv(ctx, -1, NULL, 0, tree.parent.peer, at(buf, o * es), (e - o) * es,
                                 (unsigned)tree.parent.level);
        if (st != GLUCX_OK)
            return st;
    }
    glucx_tx_req_t reqs[GLUCX_COLL_TREE_MAX_LEVELS];
    for (int i = 0; i < tree.nchildren; i++) {
        const glucx_coll_tree_edge_t *c = &tree.children[i];
        size_t o = block_off(base, rem, c->lo), e = block_off(base, rem, c->hi);
        st = glucx_coll_isend(ctx, c->peer, (unsigned)c->level, at(buf, o * es), (e - o) * es,
                              &reqs[i]);
        if (st != GLUCX_OK)
            return st;
    }
    if (tree.nchildren > 0) {
        st = glucx_coll_waitall(ctx, reqs, tree.nchildren);
        if (st != GLUCX_OK)
            return st;
    }

    /* ring allgather: at step s, pass on block r-s, receive block r-s-1 */
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    for (int s = 0; s < n - 1; s++) {
        int sb = ((r - s) % n + n) % n, rb = ((r - s - 1) % n + n) % n;
        size_t so = block_off(base, rem, sb), sl = block_off(base, rem, sb + 1) - so;
        size_t ro = block_off(base, rem, rb), rl = block_off(base, rem, rb + 1) - ro;
        st = glucx_coll_sendrecv(ctx, right, at(buf, so * es), sl * es, left, at(buf, ro * es),
                                 rl * es, (unsigned)(RING_STEP0 + s));
        if (st != GLUCX_OK)
            return st;
    }
    return GLUCX_OK;
}
