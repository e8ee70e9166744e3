/*
 * Reduce-scatter on a hierarchical network, "hierarchical": the mirror of the hierarchical
 * allgather (plugin/coll/allgather/hierarchical.c). Each package first reduces inside itself,
 * directly over the package's links, the blocks destined to each of its local ranks' lines
 * (local rank l receives, reduced over the package, the blocks of the ranks with local rank l
 * in every package); then local rank l reduce-scatters those along the outer dimensions, the
 * last dimension first, so each partial sum crosses each slow link of its line at most once.
 * The package phase reads the input in place (one direct reduce-scatter per package position,
 * also on a Ring package: the ring engine writes partial sums into its input), into a scratch of
 * P blocks ordered by position, in which every outer phase's blocks are contiguous.
 * Cost, m input bytes (all blocks), notation as the allgather's:
 *   P RS_0(m / P) + sum_k RS_k(G_k n_k m / (p P)),
 * RS_k(x) = k_k alpha_k + (n_k - 1)/n_k x (f_k beta_k + gamma).
 * Each element of the result is reduced on its owner's path only, in a fixed order: every rank
 * computes the same function of the inputs whatever the timing.
 * Source: the two-level (node-aware) reduce-scatter of MPI libraries and the hierarchical
 * reduce-scatter of BlueConnect (Cho et al., SysML 2019).
 * Unequal packages: GLUCX_ERR_UNSUPPORTED before any traffic.
 */
#include <math.h>
#include <stdlib.h>

#include "coll/hier.h"
#include "coll/reduce_scatter/reduce_scatter.h"

double glucx_reduce_scatter_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY;
    const double m = (double)bytes, per_pkg_rank = m / topo->size, g = topo->gamma_ns_per_byte;
    const double P = topo->npackages;
    glucx_coll_shape_t d0 = s; /* the package phase runs the direct engine */
    d0.engine[0] = GLUCX_ENGINE_DIRECT;
    double c = P * glucx_coll_dim_cost(&d0, 0, m / P, g, 1);
    double grp = 1;
    for (int k = 1; k < s.ndims; k++) {
        c += glucx_coll_dim_cost(&s, k, grp * s.size[k] * per_pkg_rank, g, s.flows[k]);
        grp *= s.size[k];
    }
    return c;
}

glucx_status_t glucx_reduce_scatter_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const glucx_coll_shape_t *s = &lay.shape;
    const int p = s->size[0], P = lay.npackages;
    const size_t es = ctx->esize, count = ctx->args->count, blk = count * es;
    const size_t nmax = (size_t)(p > P ? p : P);
    /* T: this local rank's P blocks (one per package position), reduced over the package */
    char *T = s->ndims > 1 ? glucx_coll_malloc(ctx, blk * (size_t)P, &st) : NULL;
    size_t *off = st != GLUCX_OK ? NULL : glucx_coll_malloc(ctx, sizeof(size_t) * 2 * nmax, &st);
    if (off == NULL)
        goto out;
    size_t *len = off + nmax;
    for (size_t i = 0; i < nmax; i++)
        len[i] = count;
    const char *in = ctx->sendbuf;
    unsigned step = 0;
    { /* inside the package: per position, the blocks of its ranks, read in place */
        glucx_coll_ctx_t sub;
        glucx_coll_layout_line(ctx, &lay, 0, &sub);
        for (int pos = 0; pos < P && st == GLUCX_OK; pos++) {
            for (int i = 0; i < p; i++)
                off[i] = (size_t)lay.ranks[pos * p + i] * count;
            char *dst = T != NULL ? T + (size_t)pos * blk : ctx->recvbuf;
            /* direct even on a Ring package: the ring engine writes partials into its input */
            st = glucx_coll_direct_reduce_scatter_blocks(&sub, in, off, len, dst, step++);
        }
    }
    for (int k = s->ndims - 1; k >= 1 && st == GLUCX_OK; k--) {
        /* along dimension k, members own G positions each, from the line's first position */
        const size_t G = (size_t)glucx_coll_layout_group(&lay, k), n = (size_t)s->size[k];
        const size_t first = (size_t)lay.pos - (size_t)lay.pos % (G * n);
        const size_t c = (size_t)lay.index[k];
        for (size_t i = 0; i < n; i++) {
            off[i] = i * G * count;
            len[i] = G * count;
        }
        char *span = T + first * blk;
        char *dst = k == 1 ? (char *)ctx->recvbuf : span + off[c] * es;
        glucx_coll_ctx_t sub;
        glucx_coll_layout_line(ctx, &lay, k, &sub);
        st = glucx_coll_dim_reduce_scatter(&sub, s->engine[k], span, span, off, len, dst, &step);
    }
out:
    free(off);
    free(T);
    glucx_coll_layout_fini(&lay);
    return st;
}
