/*
 * Allgather on a hierarchical network, "hierarchical": the slow links carry each block once, the
 * fan-out is done on the package's links, and the package's ranks keep every outer dimension's
 * links busy at once.
 *
 * Local rank l of every package first gathers, with the local ranks l of the other packages,
 * their blocks along the outer dimensions (plugin/coll/hier.h's lines), one dimension after the
 * other in local rank l's rotated order (glucx_coll_outer_dim: starting at dimension
 * 1 + l mod D), each block crossing each link of its line at most once; then every package
 * exchanges its ranks' collections directly inside the package (p - 1 copies of each block go
 * over the fast links, none over the slow ones). With the rotation, while local rank 0's blocks
 * cross dimension 1's links, local rank 1's cross dimension 2's: on a 2x2 torus of packages of
 * 2 each link carries half of what it carries when every local rank takes dimension 1 first
 * (measured on the emulated torus: docs/perf.md). Every block is received straight into its
 * place in the output: a phase whose members hold several blocks runs one allgather per block
 * position (more steps, no scratch and no copy).
 * Cost, m output bytes, p ranks per package, P packages, x = m / (p P) per rank:
 *   P AG_0(m / P) + sum_j max_rot G_(j,rot) AG_(d(j,rot))(n_d x, f_rot),
 * phase j of rotation rot on dimension d(j, rot) of n_d packages, G_(j,rot) the product of the
 * sizes of the dimensions that rotation visited before (one allgather of single blocks per
 * position a member holds), f_rot its local ranks sharing each link;
 * AG_d(y, f) = k_d alpha_d + (n_d - 1)/n_d y f beta_d (k_d: 1 direct, n_d - 1 ring).
 * Against a flat ring, whose ring crosses the package boundaries with (n-1)/n m, the slow links
 * carry (P-1)/P m / p per flow.
 * Source: the two-level (node-aware) allgather of MPI libraries (e.g. MVAPICH2's and Open MPI
 * han's inter-node then intra-node allgather), with the offload of the fan-out to the fast links
 * that hierarchical-interconnect work (e.g. BlueConnect, Cho et al., SysML 2019) argues for, and
 * the dimension rotation of Themis (Rashidi et al., ISCA 2022).
 * Unequal packages: GLUCX_ERR_UNSUPPORTED before any traffic.
 */
#include <stdlib.h>

#include "coll/allgather/allgather.h"
#include "coll/allgather/ring.h"
#include "coll/hier.h"

double glucx_allgather_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    return glucx_coll_offload_cost(topo, bytes, 0);
}

/* The plan every phase is built from: chunk c is elements [c0[c], +cc[c]) of every rank's block;
 * its phases are the outer ones in order (dimension j of its order: G_j allgathers of single
 * blocks, one per position a member holds), then the package's (one per package position). */
typedef struct ag_plan {
    glucx_coll_ctx_t *ctx;
    const glucx_coll_layout_t *lay;
    glucx_coll_ctx_t sub[GLUCX_NET_MAX_DIMS]; /* this rank's line along each dimension */
    size_t c0[GLUCX_COLL_CHUNKS_MAX], cc[GLUCX_COLL_CHUNKS_MAX];
    size_t *off, *len; /* [C][nmax]: the running phase's blocks of each chunk */
    size_t nmax;
    unsigned pkg_step; /* first step of the package phases: the same for every local rank */
} ag_plan_t;

/* Outer phases (allgathers) of rotation r, and their steps */
static int ag_outer(const glucx_coll_shape_t *s, int r, unsigned *steps)
{
    int n = 0, G = 1;
    *steps = 0;
    for (int j = 0; j < s->ndims - 1; j++) {
        const int d = glucx_coll_outer_dim(s, 1, r, j);
        n += G;
        *steps += (unsigned)(G * glucx_coll_phase_steps(s->engine[d], s->size[d]));
        G *= s->size[d];
    }
    return n;
}

static glucx_status_t ag_build(void *arg, int c, int j, glucx_coll_phase_t *ph)
{
    const ag_plan_t *pl = arg;
    const glucx_coll_layout_t *lay = pl->lay;
    const glucx_coll_shape_t *s = &lay->shape;
    const int p = s->size[0], l = lay->index[0], r = l + c;
    const size_t count = pl->ctx->args->count;
    size_t *off = pl->off + (size_t)c * pl->nmax, *len = pl->len + (size_t)c * pl->nmax;
    /* every block goes straight to its place in the output: the rank of (position, local) */
#define PLACE(pos, loc) ((size_t)lay->ranks[(pos)*p + (loc)] * count + pl->c0[c])
    ph->buf = pl->ctx->recvbuf;
    ph->rs = 0;
    ph->off = off;
    ph->len = len;
    for (size_t i = 0; i < pl->nmax; i++)
        len[i] = pl->cc[c];
    unsigned step = 0;
    int G = 1, seen[GLUCX_NET_MAX_DIMS];
    for (int k = 0; k < s->ndims - 1; k++) {
        const int d = seen[k] = glucx_coll_outer_dim(s, 1, r, k), n = s->size[d];
        if (j >= G) { /* past this dimension's allgathers */
            j -= G;
            step += (unsigned)(G * glucx_coll_phase_steps(s->engine[d], n));
            G *= n;
            continue;
        }
        /* allgather j of dimension d: a member holds the positions that differ from its own in
         * the dimensions visited before (G of them) and have its coordinate along d; position
         * j of them, enumerated the same way on every member (the first visited fastest) */
        const int stride = glucx_coll_layout_group(lay, d);
        int q = lay->pos;
        for (int i = 0; i <= k; i++)
            q -= glucx_coll_layout_coord(lay, lay->pos, seen[i]) *
                 glucx_coll_layout_group(lay, seen[i]);
        for (int i = 0, rem = j; i < k; rem /= s->size[seen[i]], i++)
            q += rem % s->size[seen[i]] * glucx_coll_layout_group(lay, seen[i]);
        for (int i = 0; i < n; i++)
            off[i] = PLACE(q + i * stride, l);
        ph->sub = pl->sub[d];
        ph->engine = s->engine[d];
        ph->step = step + (unsigned)(j * glucx_coll_phase_steps(s->engine[d], n));
        return GLUCX_OK;
    }
    /* inside the package: the blocks of position j */
    for (int i = 0; i < p; i++)
        off[i] = PLACE(j, i);
    ph->sub = pl->sub[0];
    ph->engine = s->engine[0];
    ph->step = pl->pkg_step + (unsigned)(j * glucx_coll_phase_steps(s->engine[0], p));
#undef PLACE
    return GLUCX_OK;
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
    ag_plan_t pl = {.ctx = ctx, .lay = &lay, .nmax = (size_t)(p > P ? p : P)};
    for (int d = 0; d < s->ndims; d++)
        glucx_coll_layout_line(ctx, &lay, d, &pl.sub[d]);
    /* steps per chunk: the most any rotation's outer phases take, then the package's */
    const int nout = s->ndims - 1;
    for (int r = 0; r < (nout > 0 ? nout : 1); r++) {
        unsigned st_r;
        ag_outer(s, r, &st_r);
        pl.pkg_step = st_r > pl.pkg_step ? st_r : pl.pkg_step;
    }
    const unsigned S = pl.pkg_step + (unsigned)(P * glucx_coll_phase_steps(s->engine[0], p));
    const int C = glucx_coll_pipeline_chunks(
        count * es * (size_t)ctx->size, GLUCX_COLL_OFFLOAD_CHUNK_BYTES, count > 0 ? count : 1, S);
    int nphase[GLUCX_COLL_CHUNKS_MAX];
    for (int c = 0; c < C; c++) {
        unsigned unused;
        pl.c0[c] = glucx_coll_split(count, (size_t)C, (size_t)c, &pl.cc[c]);
        nphase[c] = ag_outer(s, l + c, &unused) + (p > 1 ? P : 0);
    }
    pl.off = glucx_coll_malloc(ctx, sizeof(size_t) * 2 * pl.nmax * (size_t)C, &st);
    if (pl.off != NULL) {
        pl.len = pl.off + pl.nmax * (size_t)C;
        glucx_coll_copy((char *)ctx->recvbuf + (size_t)ctx->rank * count * es, ctx->sendbuf,
                        count * es);
        st = glucx_coll_pipeline(ctx, C, nphase, S, ag_build, &pl);
    }
    free(pl.off);
    glucx_coll_layout_fini(&lay);
    return st;
}
