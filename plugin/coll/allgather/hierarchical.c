/*
 * Allgather on a hierarchical network, "hierarchical": the slow links carry each block once, the
 * fan-out is done on the package's links.
 *
 * Local rank l of every package first gathers, with the local ranks l of the other packages,
 * their blocks along the outer dimensions (plugin/coll/hier.h's lines: dimension 1, then
 * dimension 2 on groups of dimension-1 lines, ...), each block crossing each link of its line at
 * most once; then every package exchanges its ranks' collections directly inside the package
 * (p - 1 copies of each block go over the fast links, none over the slow ones). Every block is
 * received straight into its place in the output: a phase whose members hold several blocks
 * runs one allgather per block position (more steps, no scratch and no copy; an earlier version
 * gathered into a (local rank, position)-ordered scratch and permuted it at the end: 3% slower
 * on the emulated torus, not the cause of its gap to the model, see docs/perf.md).
 * Cost, m output bytes, p ranks per package, P packages, outer dimension k of n_k packages with
 * G_k packages per member (the product of the dimensions before it):
 *   sum_k AG_k(G_k n_k m / (p P)) + AG_0(m),
 * (an AG_k here is G_k allgathers of one block per member: G_k times the alpha).
 * AG_k(x) = k_k alpha_k + (n_k - 1)/n_k x f_k beta_k (k_k: 1 direct, n_k - 1 ring; f_k = p flows
 * share each slow link). Against a flat ring, whose ring crosses the package boundaries with
 * (n-1)/n m, the slow links carry (P-1)/P m / p per flow.
 * Source: the two-level (node-aware) allgather of MPI libraries (e.g. MVAPICH2's and Open MPI
 * han's inter-node then intra-node allgather), with the offload of the fan-out to the fast links
 * that hierarchical-interconnect work (e.g. BlueConnect, Cho et al., SysML 2019) argues for.
 * Unequal packages: GLUCX_ERR_UNSUPPORTED before any traffic.
 */
#include <math.h>
#include <stdlib.h>

#include "coll/allgather/allgather.h"
#include "coll/hier.h"

double glucx_allgather_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY;
    const double m = (double)bytes, per_pkg_rank = m / topo->size;
    const double P = topo->npackages;
    /* inside: P allgathers of one block per member */
    double c = P * glucx_coll_dim_cost(&s, 0, m / P, 0, 1);
    double g = 1;
    for (int k = 1; k < s.ndims; k++) { /* g allgathers of one block per member */
        c += g * glucx_coll_dim_cost(&s, k, s.size[k] * per_pkg_rank, 0, s.flows[k]);
        g *= s.size[k];
    }
    return c;
}

glucx_status_t glucx_allgather_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const glucx_coll_shape_t *s = &lay.shape;
    const int p = s->size[0], P = lay.npackages, l = lay.index[0];
    const size_t es = ctx->esize, count = ctx->args->count;
    char *out = ctx->recvbuf;
    const size_t nmax = (size_t)(p > P ? p : P);
    size_t *off = glucx_coll_malloc(ctx, sizeof(size_t) * 2 * nmax, &st);
    if (off == NULL)
        goto out;
    size_t *len = off + nmax;
    for (size_t i = 0; i < nmax; i++)
        len[i] = count;
        /* every block goes straight to its place in the output: the rank of (position, local) */
#define PLACE(pos, loc) ((size_t)lay.ranks[(pos)*p + (loc)] * count)
    glucx_coll_copy(out + PLACE(lay.pos, l) * es, ctx->sendbuf, count * es);
    unsigned step = 0;
    for (int k = 1; k < s->ndims && st == GLUCX_OK; k++) {
        /* members hold G positions' blocks each (from the line's first position on, member i
         * the G after first + i G): one allgather of single blocks per position g of a member */
        const int G = glucx_coll_layout_group(&lay, k), n = s->size[k];
        const int first = lay.pos - lay.pos % (G * n);
        glucx_coll_ctx_t sub;
        glucx_coll_layout_line(ctx, &lay, k, &sub);
        for (int g = 0; g < G && st == GLUCX_OK; g++) {
            for (int i = 0; i < n; i++)
                off[i] = PLACE(first + i * G + g, l);
            st = glucx_coll_dim_allgather(&sub, s->engine[k], out, off, len, &step);
        }
    }
    if (p > 1) { /* inside the package: the blocks of every position, one allgather each */
        glucx_coll_ctx_t sub;
        glucx_coll_layout_line(ctx, &lay, 0, &sub);
        for (int pos = 0; pos < P && st == GLUCX_OK; pos++) {
            for (int i = 0; i < p; i++)
                off[i] = PLACE(pos, i);
            st = glucx_coll_dim_allgather(&sub, s->engine[0], out, off, len, &step);
        }
    }
#undef PLACE
out:
    free(off);
    glucx_coll_layout_fini(&lay);
    return st;
}
