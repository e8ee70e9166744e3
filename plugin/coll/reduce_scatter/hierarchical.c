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

#include "coll/allgather/ring.h"
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

/* The plan every phase is built from: chunk c is elements [c0[c], +cc[c]) of every block, with
 * its own scratch T_c of P blocks of cc[c] elements (ordered by the chunk's dimension order);
 * its phases are the package's (one direct reduce-scatter per package position, into T_c), then
 * the outer ones from the last of its order. */
typedef struct rs_plan {
    glucx_coll_ctx_t *ctx;
    const glucx_coll_layout_t *lay;
    glucx_coll_ctx_t sub[GLUCX_NET_MAX_DIMS];
    size_t c0[GLUCX_COLL_CHUNKS_MAX], cc[GLUCX_COLL_CHUNKS_MAX];
    char *T;           /* the chunks' scratches, T_c at T + P c0[c] elements; NULL: one package */
    size_t *off, *len; /* [C][nmax] */
    size_t nmax;
} rs_plan_t;

static glucx_status_t rs_build(void *arg, int c, int j, glucx_coll_phase_t *ph)
{
    const rs_plan_t *pl = arg;
    const glucx_coll_layout_t *lay = pl->lay;
    const glucx_coll_shape_t *s = &lay->shape;
    glucx_coll_ctx_t *ctx = pl->ctx;
    const int p = s->size[0], P = lay->npackages, r = lay->index[0] + c, nout = s->ndims - 1;
    const size_t es = ctx->esize, count = ctx->args->count, cc = pl->cc[c];
    size_t *off = pl->off + (size_t)c * pl->nmax, *len = pl->len + (size_t)c * pl->nmax;
    char *T = pl->T != NULL ? pl->T + (size_t)P * pl->c0[c] * es : NULL;
    ph->rs = 1;
    ph->off = off;
    ph->len = len;
    if (j < P) { /* inside the package: the blocks of position j's ranks, read in place */
        for (int i = 0; i < p; i++) {
            off[i] = (size_t)lay->ranks[j * p + i] * count + pl->c0[c];
            len[i] = cc;
        }
        ph->sub = pl->sub[0];
        /* direct even on a Ring package: the ring engine writes partials into its input */
        ph->engine = GLUCX_ENGINE_DIRECT;
        ph->in = ctx->sendbuf;
        ph->out = T != NULL ? T + (size_t)scratch_index(lay, r, j) * cc * es
                            : (char *)ctx->recvbuf + pl->c0[c] * es;
        ph->step = (unsigned)j;
        return GLUCX_OK;
    }
    /* outer phase jj of the chunk's order, from the last: members own G positions each (the
     * dimensions before jj), contiguous in T_c from the line's first one */
    unsigned step = (unsigned)P;
    int jj = nout - 1;
    for (int q = P; q < j; q++, jj--) {
        const int d = glucx_coll_outer_dim(s, 1, r, jj);
        step += (unsigned)glucx_coll_phase_steps(s->engine[d], s->size[d]);
    }
    const int k = glucx_coll_outer_dim(s, 1, r, jj);
    size_t G = 1;
    for (int i = 0; i < jj; i++)
        G *= (size_t)s->size[glucx_coll_outer_dim(s, 1, r, i)];
    const size_t n = (size_t)s->size[k], tp = (size_t)scratch_index(lay, r, lay->pos);
    const size_t first = tp - tp % (G * n);
    for (size_t i = 0; i < n; i++) {
        off[i] = i * G * cc;
        len[i] = G * cc;
    }
    char *span = T + first * cc * es;
    ph->sub = pl->sub[k];
    ph->engine = s->engine[k];
    ph->in = span;
    ph->work = span;
    ph->out = jj == 0 ? (char *)ctx->recvbuf + pl->c0[c] * es : span + off[lay->index[k]] * es;
    ph->step = step;
    return GLUCX_OK;
}

glucx_status_t glucx_reduce_scatter_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const glucx_coll_shape_t *s = &lay.shape;
    const int p = s->size[0], P = lay.npackages;
    const size_t es = ctx->esize, count = ctx->args->count;
    rs_plan_t pl = {.ctx = ctx, .lay = &lay, .nmax = (size_t)(p > P ? p : P)};
    for (int d = 0; d < s->ndims; d++)
        glucx_coll_layout_line(ctx, &lay, d, &pl.sub[d]);
    unsigned S = (unsigned)P; /* steps per chunk: the package's, then the outer ones' */
    for (int d = 1; d < s->ndims; d++)
        S += (unsigned)glucx_coll_phase_steps(s->engine[d], s->size[d]);
    const int C = glucx_coll_pipeline_chunks(
        count * es * (size_t)ctx->size, GLUCX_COLL_OFFLOAD_CHUNK_BYTES, count > 0 ? count : 1, S);
    int nphase[GLUCX_COLL_CHUNKS_MAX];
    for (int c = 0; c < C; c++) {
        pl.c0[c] = glucx_coll_split(count, (size_t)C, (size_t)c, &pl.cc[c]);
        nphase[c] = P + s->ndims - 1;
    }
    /* T: this local rank's P blocks (one per package position), reduced over the package */
    if (s->ndims > 1)
        pl.T = glucx_coll_malloc(ctx, count * es * (size_t)P, &st);
    if (st == GLUCX_OK)
        pl.off = glucx_coll_malloc(ctx, sizeof(size_t) * 2 * pl.nmax * (size_t)C, &st);
    if (st == GLUCX_OK) {
        pl.len = pl.off + pl.nmax * (size_t)C;
        st = glucx_coll_pipeline(ctx, C, nphase, S, rs_build, &pl);
    }
    free(pl.off);
    free(pl.T);
    glucx_coll_layout_fini(&lay);
    return st;
}
