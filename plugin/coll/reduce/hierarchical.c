/*
 * Reduce on a hierarchical network, "hierarchical": the slow links carry one partial result per
 * package instead of one per rank.
 *
 * Two phases, each an existing row run on a subgroup (hier.h's glucx_coll_run_on), in its own
 * step range:
 * 1. inside every package at once: reduce to the package's leader, the rank with the root's
 *    local rank (into scratch);
 * 2. across packages: the leaders (the root's "cross" line: P ranks, one per package, in
 *    package position order) reduce their partial results to the root.
 * Each phase runs the binomial tree, or, when the phase has a power-of-two number of members
 * and its own cost predicts it faster (large messages), the reduce-scatter + gather row, whose
 * bracketing is then the tree's (reduce/reduce_scatter_gather.c): decided from size and shape
 * only, the same on every rank. Reduction order: both brackets the members' contributions by
 * halving their interval, lower half on the left, whatever the root (coll/tree.h). So the
 * result is
 *   H(H(x_(0,0) .. x_(0,p-1)), ..., H(x_(P-1,0) .. x_(P-1,p-1))),
 * x_(q,l) the input of local rank l (rank order inside the package) of the package at position
 * q, H the halving bracketing: fixed by the shape alone, independent of the root and of the
 * order in which messages arrive, so the same inputs give bitwise the same result every time.
 * Cost, m bytes, p ranks per package, P packages, L the outer network as one link
 * (glucx_coll_outer_link), L_0 the package's link, gamma the reduction's cost per byte:
 *   R(p, L_0, m) + R(P, L, m),
 *   R(n, l, m) = min(ceil(log2 n) (alpha_l + m (beta_l + gamma)),
 *                    n a power of two: 2 log2(n) alpha_l + (n-1)/n m (2 beta_l + gamma)),
 * one flow per link in phase 2 (only the leaders' line runs). Against the flat binomial tree,
 * whose ceil(log2 n) levels each may cross a slow link, only ceil(log2 P) levels do. The phases
 * run one after the other (not chunked); a leader starts phase 2 when its package's partial
 * result is complete. Phases of other sizes keep the tree at every message size (the
 * reduce-scatter + gather folds pairs first there: another bracketing).
 * Source: the two-level (intra-node, then inter-node) reduce of MPI libraries, e.g. MPICH's
 * SMP-aware reduce and Open MPI's coll/han (Luo et al., "HAN: a Hierarchical AutotuNed
 * Collective Communication Framework", IEEE Cluster 2020), here without its segmentation.
 * Unequal packages: GLUCX_ERR_UNSUPPORTED before any traffic (hier.h); one package: an
 * infinite cost (the flat rows are the same thing); forced, it runs as the package's phase.
 */
#include <math.h>
#include <stdlib.h>

#include "coll/hier.h"
#include "coll/reduce/reduce.h"
#include "coll/tree.h"

/* Phase 2's steps from here: above every step of phase 1's row (tree levels < 32, the
 * reduce-scatter + gather's < 48) */
#define CROSS_STEP 64u

static double tree_cost(int n, glucx_link_cost_t l, double m, double g)
{
    return glucx_coll_ceil_log2(n) * (l.alpha_ns + m * (l.beta_ns_per_byte + g));
}

static double rsg_cost(int n, glucx_link_cost_t l, double m, double g)
{
    return 2.0 * glucx_coll_ceil_log2(n) * l.alpha_ns +
           (n - 1.0) / n * m * (2.0 * l.beta_ns_per_byte + g);
}

/* The reduce-scatter + gather row for a phase of n members: a power of two (the tree's
 * bracketing) and predicted faster (ties: the tree) */
static int use_rsg(int n, glucx_link_cost_t l, double m, double g)
{
    return n > 1 && (n & (n - 1)) == 0 && rsg_cost(n, l, m, g) < tree_cost(n, l, m, g);
}

static double phase_cost(int n, glucx_link_cost_t l, double m, double g)
{
    if (n <= 1)
        return 0;
    return use_rsg(n, l, m, g) ? rsg_cost(n, l, m, g) : tree_cost(n, l, m, g);
}

double glucx_reduce_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY; /* one package: the flat rows */
    const double m = (double)bytes, g = topo->gamma_ns_per_byte;
    return phase_cost(s.size[0], s.link[0], m, g) +
           phase_cost(topo->npackages, glucx_coll_outer_link(&s), m, g);
}

glucx_status_t glucx_reduce_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    const glucx_coll_args_t *args = ctx->args;
    if (ctx->reduce == NULL)
        return glucx_coll_decline(ctx, "no kernel for op %s on %s", glucx_op_name(args->op),
                                  glucx_dtype_name(args->dtype));
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const int P = lay.npackages, p = lay.shape.size[0], me = lay.index[0];
    const size_t bytes = args->count * ctx->esize;
    const double m = (double)bytes, g = ctx->topo->gamma_ns_per_byte;
    int rpos, rl;
    glucx_coll_layout_find(&lay, ctx->topo, args->root, &rpos, &rl);
    glucx_coll_args_t a = *args;
    char *part = NULL; /* the leader's package result (phase 1's output, phase 2's input) */
    int *cross = glucx_coll_malloc(ctx, sizeof(int) * (size_t)P, &st);
    if (cross == NULL)
        goto out;
    if (me == rl && (part = glucx_coll_malloc(ctx, bytes > 0 ? bytes : 1, &st)) == NULL)
        goto out;
    /* 1: inside every package, to its leader */
    a.root = rl;
    st = glucx_coll_run_on(ctx, lay.line[0], p, me, &a, ctx->sendbuf, part, 0,
                           use_rsg(p, lay.shape.link[0], m, g)
                               ? glucx_reduce_reduce_scatter_gather_run
                               : glucx_reduce_binomial_run);
    /* 2: across packages, among the leaders, to the root */
    if (st == GLUCX_OK && me == rl) {
        glucx_coll_layout_cross(&lay, rl, cross);
        a.root = rpos;
        st = glucx_coll_run_on(ctx, cross, P, lay.pos, &a, part,
                               ctx->rank == args->root ? ctx->recvbuf : NULL, CROSS_STEP,
                               use_rsg(P, glucx_coll_outer_link(&lay.shape), m, g)
                                   ? glucx_reduce_reduce_scatter_gather_run
                                   : glucx_reduce_binomial_run);
    }
out:
    free(part);
    free(cross);
    glucx_coll_layout_fini(&lay);
    return st;
}
