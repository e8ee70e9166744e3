/*
 * Reduce-scatter on a hierarchical network, "hierarchical": the mirror of the hierarchical
 * allgather (plugin/coll/allgather/hierarchical.c). Each package first reduces inside itself,
 * directly over the package's links, the blocks destined to each of its local ranks' lines
 * (local rank l receives, reduced over the package, the blocks of the ranks with local rank l
 * in every package); then local rank l reduce-scatters those along the outer dimensions in the
 * reverse of its allgather order (glucx_coll_outer_dim, rotated by l), so each partial sum
 * crosses each slow link of its line at most once and, as in the allgather, the local ranks
 * keep different dimensions' links busy at once. The package phase reads the input in place
 * (one direct reduce-scatter per package position, also on a Ring package: the ring engine
 * writes partial sums into its input) into a scratch of P blocks that local rank l orders by
 * its own dimension order (its first dimension varying slowest), so every outer phase's blocks
 * are contiguous.
 * Cost, m input bytes (all blocks), notation as the allgather's:
 *   P RS_0(m / P) + sum_j max_rot RS_(d(j,rot))(G_(j,rot) n_d x, f_rot),
 * the phases taken from the last, RS_d(y, f) = k_d alpha_d + (n_d - 1)/n_d y (f beta_d + gamma).
 * Each element of the result is reduced on its owner's path only, in a fixed order: every rank
 * computes the same function of the inputs whatever the timing.
 * Source: the two-level (node-aware) reduce-scatter of MPI libraries and the hierarchical
 * reduce-scatter of BlueConnect (Cho et al., SysML 2019); the rotation of Themis (Rashidi et
 * al., ISCA 2022).
 * Unequal packages: GLUCX_ERR_UNSUPPORTED before any traffic.
 */
#include <stdlib.h>

#include "coll/hier.h"
#include "coll/reduce_scatter/reduce_scatter.h"

double glucx_reduce_scatter_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    return glucx_coll_offload_cost(topo, bytes, 1);
}

/* Where package position q goes in local rank l's scratch: its coordinates in l's dimension
 * order, the first dimension of the order varying fastest (the last reduce-scattered first, so
 * each reduce-scatter phase's span is contiguous). Unrotated, this is q. */
static int scratch_index(const glucx_coll_layout_t *lay, int l, int q)
{
    const glucx_coll_shape_t *s = &lay->shape;
    int t = 0, stride = 1;
    for (int j = 0; j < s->ndims - 1; j++) {
        const int d = glucx_coll_outer_dim(s, 1, l, j);
        t += glucx_coll_layout_coord(lay, q, d) * stride;
        stride *= s->size[d];
    }
    return t;
}

glucx_status_t glucx_reduce_scatter_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const glucx_coll_shape_t *s = &lay.shape;
    const int p = s->size[0], P = lay.npackages, l = lay.index[0];
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
            char *dst = T != NULL ? T + (size_t)scratch_index(&lay, l, pos) * blk : ctx->recvbuf;
            /* direct even on a Ring package: the ring engine writes partials into its input */
            st = glucx_coll_direct_reduce_scatter_blocks(&sub, in, off, len, dst, step++);
        }
    }
    const size_t tp = T != NULL ? (size_t)scratch_index(&lay, l, lay.pos) : 0;
    for (int j = s->ndims - 2; j >= 0 && st == GLUCX_OK; j--) {
        /* phase j of l's order, on dimension k: members own G positions each (the dimensions
         * before j in l's order), contiguous in the scratch from the line's first one */
        const int k = glucx_coll_outer_dim(s, 1, l, j);
        size_t G = 1;
        for (int i = 0; i < j; i++)
            G *= (size_t)s->size[glucx_coll_outer_dim(s, 1, l, i)];
        const size_t n = (size_t)s->size[k], first = tp - tp % (G * n);
        const size_t c = (size_t)lay.index[k];
        for (size_t i = 0; i < n; i++) {
            off[i] = i * G * count;
            len[i] = G * count;
        }
        char *span = T + first * blk;
        char *dst = j == 0 ? (char *)ctx->recvbuf : span + off[c] * es;
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
