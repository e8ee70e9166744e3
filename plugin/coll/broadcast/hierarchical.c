/*
 * Broadcast on a hierarchical network, "hierarchical": every byte crosses the slow links once
 * per package, the fan-out inside a package goes over the package's links.
 *
 * Two phases, each an existing row run on a subgroup (hier.h's glucx_coll_run_on), in its own
 * step range:
 * 1. across packages: the root broadcasts to one leader per other package, the rank with the
 *    root's local rank (the root's "cross" line: P ranks, one per package, in package
 *    position order);
 * 2. inside every package at once: the leader broadcasts over the package's links.
 * Each phase runs the binomial tree or the scatter-allgather row, whichever the phase's own
 * cost predicts faster on its link (large messages: scatter-allgather), decided from the
 * message size and the shape only, so every rank picks the same.
 * Cost, m bytes, p ranks per package, P packages, L the outer network as one link
 * (glucx_coll_outer_link), L_0 the package's link:
 *   B(P, L, m) + B(p, L_0, m),
 *   B(n, l, m) = min(ceil(log2 n) (alpha_l + m beta_l),
 *                    (ceil(log2 n) + n - 1) alpha_l + 2 (n-1)/n m beta_l),
 * one flow per link in phase 1 (only the leaders' line runs), none shared in phase 2. Against
 * the flat binomial tree, whose ceil(log2 n) levels each may cross a slow link, only
 * ceil(log2 P) levels do. The phases run one after the other (not chunked: the chunk executor
 * of hier.h runs reduce-scatter and allgather phases only); a rank of phase 2 starts when its
 * leader has the whole message.
 * Source: the two-level (inter-node, then intra-node) broadcast of MPI libraries, e.g. MPICH's
 * SMP-aware broadcast and Open MPI's coll/han (Luo et al., "HAN: a Hierarchical AutotuNed
 * Collective Communication Framework", IEEE Cluster 2020), here without its segmentation.
 * Unequal packages: GLUCX_ERR_UNSUPPORTED before any traffic (hier.h); one package: an
 * infinite cost (the flat rows are the same thing); forced, it runs as the package's phase.
 */
#include <math.h>
#include <stdlib.h>

#include "coll/broadcast/broadcast.h"
#include "coll/hier.h"
#include "coll/tree.h"

/* Phase 2 steps from here: above phase 1's tree levels and ring steps (at most P - 1). */
#define PKG_STEP(P) ((unsigned)GLUCX_COLL_TREE_MAX_LEVELS + (unsigned)(P))

static double tree_cost(int n, glucx_link_cost_t l, double m)
{
    return glucx_coll_ceil_log2(n) * (l.alpha_ns + m * l.beta_ns_per_byte);
}

static double sag_cost(int n, glucx_link_cost_t l, double m)
{
    return (glucx_coll_ceil_log2(n) + n - 1) * l.alpha_ns +
           2.0 * (n - 1) / n * m * l.beta_ns_per_byte;
}

/* One phase's row on n members: scatter-allgather when predicted faster (ties: the tree). */
static int use_sag(int n, glucx_link_cost_t l, double m)
{
    return n > 1 && sag_cost(n, l, m) < tree_cost(n, l, m);
}

static double phase_cost(int n, glucx_link_cost_t l, double m)
{
    if (n <= 1)
        return 0;
    return use_sag(n, l, m) ? sag_cost(n, l, m) : tree_cost(n, l, m);
}

double glucx_broadcast_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY; /* one package: the flat rows */
    const double m = (double)bytes;
    return phase_cost(topo->npackages, glucx_coll_outer_link(&s), m) +
           phase_cost(s.size[0], s.link[0], m);
}

glucx_status_t glucx_broadcast_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const glucx_coll_shape_t *s = &lay.shape;
    const int P = lay.npackages, p = s->size[0], me = lay.index[0];
    const double m = (double)(ctx->args->count * ctx->esize);
    int rpos, rl;
    glucx_coll_layout_find(&lay, ctx->topo, ctx->args->root, &rpos, &rl);
    glucx_coll_args_t a = *ctx->args;
    int *cross = glucx_coll_malloc(ctx, sizeof(int) * (size_t)P, &st);
    if (cross == NULL)
        goto out;
    /* 1: across packages, among the ranks with the root's local rank */
    if (me == rl) {
        glucx_coll_layout_cross(&lay, rl, cross);
        a.root = rpos;
        st = glucx_coll_run_on(ctx, cross, P, lay.pos, &a, ctx->recvbuf, ctx->recvbuf, 0,
                               use_sag(P, glucx_coll_outer_link(s), m)
                                   ? glucx_broadcast_scatter_allgather_run
                                   : glucx_broadcast_binomial_run);
    }
    /* 2: inside every package, from its leader */
    if (st == GLUCX_OK && p > 1) {
        a.root = rl;
        st = glucx_coll_run_on(ctx, lay.line[0], p, me, &a, ctx->recvbuf, ctx->recvbuf, PKG_STEP(P),
                               use_sag(p, s->link[0], m) ? glucx_broadcast_scatter_allgather_run
                                                         : glucx_broadcast_binomial_run);
    }
    free(cross);
out:
    glucx_coll_layout_fini(&lay);
    return st;
}
