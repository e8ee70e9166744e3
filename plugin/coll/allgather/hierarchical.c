/*
 * Allgather on a hierarchical network, "hierarchical": the slow links carry each block once, the
 * fan-out is done on the package's links.
 *
 * Local rank l of every package first gathers, with the local ranks l of the other packages,
 * their blocks along the outer dimensions (plugin/coll/hier.h's lines: dimension 1, then
 * dimension 2 on groups of dimension-1 lines, ...), each block crossing each link of its line at
 * most once; then every package exchanges its ranks' collections directly inside the package
 * (p - 1 copies of each block go over the fast links, none over the slow ones). Blocks are
 * collected in a scratch buffer ordered by (local rank, package position) so that every phase's
 * contribution is contiguous, and copied to the output in rank order at the end.
 * Cost, m output bytes, p ranks per package, P packages, outer dimension k of n_k packages with
 * G_k packages per member (the product of the dimensions before it):
 *   sum_k AG_k(G_k n_k m / (p P)) + AG_0(m) + m copy,
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
    double c = glucx_coll_dim_cost(&s, 0, m, 0, 1) + m * topo->copy_ns_per_byte;
    double g = 1;
    for (int k = 1; k < s.ndims; k++) {
        c += glucx_coll_dim_cost(&s, k, g * s.size[k] * per_pkg_rank, 0, s.flows[k]);
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
    const size_t es = ctx->esize, count = ctx->args->count, blk = count * es;
    const size_t nmax = (size_t)(p > P ? p : P);
    char *S = glucx_coll_malloc(ctx, blk * (size_t)ctx->size, &st);
    size_t *off = S == NULL ? NULL : glucx_coll_malloc(ctx, sizeof(size_t) * 2 * nmax, &st);
    if (off == NULL)
        goto out;
    size_t *len = off + nmax;
    /* S[(l' P + pos) count]: the block of local rank l' of the package at position pos */
    glucx_coll_copy(S + ((size_t)l * P + (size_t)lay.pos) * blk, ctx->sendbuf, blk);
    unsigned step = 0;
    for (int k = 1; k < s->ndims && st == GLUCX_OK; k++) {
        /* members hold G packages' blocks each, contiguous from the line's first position */
        const size_t G = (size_t)glucx_coll_layout_group(&lay, k), n = (size_t)s->size[k];
        const size_t first = (size_t)lay.pos - (size_t)lay.pos % (G * n);
        for (size_t i = 0; i < n; i++) {
            off[i] = i * G * count;
            len[i] = G * count;
        }
        glucx_coll_ctx_t sub;
        glucx_coll_layout_line(ctx, &lay, k, &sub);
        st = glucx_coll_dim_allgather(&sub, s->engine[k], S + ((size_t)l * P + first) * blk, off,
                                      len, &step);
    }
    if (st == GLUCX_OK) { /* inside the package: every local rank's P blocks */
        for (int i = 0; i < p; i++) {
            off[i] = (size_t)i * P * count;
            len[i] = (size_t)P * count;
        }
        glucx_coll_ctx_t sub;
        glucx_coll_layout_line(ctx, &lay, 0, &sub);
        st = glucx_coll_dim_allgather(&sub, s->engine[0], S, off, len, &step);
    }
    if (st == GLUCX_OK) {
        char *out = ctx->recvbuf;
        for (int pos = 0; pos < P; pos++)
            for (int i = 0; i < p; i++)
                glucx_coll_copy(out + (size_t)lay.ranks[pos * p + i] * blk,
                                S + ((size_t)i * P + (size_t)pos) * blk, blk);
    }
out:
    free(off);
    free(S);
    glucx_coll_layout_fini(&lay);
    return st;
}
