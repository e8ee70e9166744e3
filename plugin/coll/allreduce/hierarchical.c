/*
 * Allreduce on a hierarchical network: "hierarchical", "torus" and "torus_rotated".
 *
 * Both run phases on the lines of plugin/coll/hier.h (the package, then one line per outer
 * dimension through this rank), each phase with the engine of its dimension (direct on a
 * FullyConnected or Switch dimension, the pipelined ring on a Ring), every local rank of a
 * package on its own line at once.
 *
 * hierarchical: reduce-scatter inside the package (rank l of the package ends with share l of
 * the vector, reduced over the package), an allreduce of that 1/p share along each outer
 * dimension one after the other (reduce-scatter + allgather on the line), allgather inside the
 * package. The slow links carry the share only: 1/p of what a flat algorithm sends over them.
 * Cost, m bytes, p ranks per package, dimensions d >= 1 of n_d packages:
 *   RS_0(m) + sum_d (RS_d(m/p) + AG_d(m/p)) + AG_0(m),
 * with RS_d(x) = k_d alpha_d + (n_d-1)/n_d x (f_d beta_d + gamma) and AG_d the same without
 * gamma (k_d = 1 direct, n_d - 1 ring; f_d = p flows share each link between packages).
 * Source: the two-level allreduce of Sanders & Träff / Horovod's hierarchical allreduce (NCCL
 * inside a node, MPI between nodes), here with a full-mesh package.
 *
 * torus: reduce-scatter along every dimension in turn (the package, then dimension 1 on the
 * package's share, dimension 2 on what is left...), then allgather back in reverse order. Each
 * dimension's links carry a share that shrinks by the dimensions before it.
 * Cost: sum_d (RS_d(m_d) + AG_d(m_d)), m_0 = m, m_(d+1) = m_d / n_d.
 * Source: Mikami et al., "Massively Distributed SGD: ImageNet/ResNet-50 Training in a Flash"
 * (2018), 2D-torus allreduce (reduce-scatter in one dimension, allreduce in the next, allgather
 * back), generalised to any number of dimensions as in Sack & Gropp's multi-dimensional
 * collectives.
 *
 * torus_rotated: the torus with the data cut into chunks (one per MiB, up to 8) that are all in
 * flight at once, each chunk taking the outer dimensions in its own order: chunk c of local rank
 * l starts at outer dimension 1 + (l + c) mod D (D outer dimensions), so while some chunks
 * cross dimension 1's links, others cross dimension 2's, and a rank works on whichever chunk's
 * step has arrived (glucx_coll_wait_some, the step-by-step phases of hier.h) instead of waiting
 * for the slowest peer of one phase before the next. On the 2x2 torus of packages of 2 each link
 * carries 0.75 m / B in all (torus 1.5, flat ring 1.75), and the chunks keep it busy.
 * Cost: the busiest resource's total work (an outer link direction, or a rank's package
 * exchanges and reductions) plus the pipeline's fill, one chunk's sequential time less its
 * share of that resource; one chunk: the sequential rotated torus, phase j taking the longest
 * of its rotations, each rotation's ranks sharing the links of the dimension it is on.
 * Source: the multi-dimensional, load-balanced collectives of Themis (Rashidi et al., ISCA
 * 2022), which split the data into chunks scheduled on the dimensions in different orders; here
 * the chunks and their orders are fixed by the size and the local rank, so every rank derives
 * the same plan; the pipelining of chunks through the phases as in Mikami et al.'s and NCCL's
 * chunked hierarchical algorithms.
 *
 * Every element is reduced once, on the rank that owns it at the deepest reduce-scatter, and then
 * only copied: every rank ends with bitwise the same vector. Unequal packages: no shape,
 * GLUCX_ERR_UNSUPPORTED before any traffic.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/allgather/ring.h"
#include "coll/allreduce/allreduce.h"
#include "coll/hier.h"

/* The three variants (run_dims's mode) */
enum { HIERARCHICAL, TORUS, TORUS_ROTATED };

static int outer_dim(const glucx_coll_shape_t *s, int mode, int l, int j)
{
    return glucx_coll_outer_dim(s, mode == TORUS_ROTATED, l, j);
}

static double dims_cost(const glucx_topo_t *topo, size_t bytes, int mode)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY; /* one package: the flat algorithms */
    const double g = topo->gamma_ns_per_byte;
    const int p = s.size[0], nout = s.ndims - 1;
    /* inside the package: reduce-scatter and allgather of everything */
    double c = glucx_coll_dim_cost(&s, 0, (double)bytes, g, 1) +
               glucx_coll_dim_cost(&s, 0, (double)bytes, 0, 1);
    /* outside: phase j of every local rank at once; the ranks of one rotation share the links
     * of the dimension they are on (the rotations are on different dimensions) */
    const int nrot = mode == TORUS_ROTATED ? (p < nout ? p : nout) : 1;
    for (int rs = 1; rs >= 0; rs--) {
        for (int j = 0; j < nout; j++) {
            double phase = 0;
            for (int rot = 0; rot < nrot; rot++) {
                const int flows = mode == TORUS_ROTATED ? (p - rot + nout - 1) / nout : p;
                double m = (double)bytes / p; /* the share, down to phase j */
                for (int k = 0; k < j && mode != HIERARCHICAL; k++)
                    m /= s.size[outer_dim(&s, mode, rot, k)];
                const int d = outer_dim(&s, mode, rot, j);
                /* (hierarchical: an allreduce along each dimension in turn, its reduce-scatter
                 * counted in the first pass and its allgather in the second, so that with one
                 * outer dimension the three variants add the same terms in the same order and
                 * tie exactly: the selection then keeps table order instead of flipping between
                 * them on rounding noise) */
                const double t = glucx_coll_dim_cost(&s, d, m, rs ? g : 0, flows);
                if (t > phase)
                    phase = t;
            }
            c += phase;
        }
    }
    return c;
}

double glucx_allreduce_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    return dims_cost(topo, bytes, HIERARCHICAL);
}

double glucx_allreduce_torus_cost(const glucx_topo_t *topo, size_t bytes)
{
    return dims_cost(topo, bytes, TORUS);
}

/* torus_rotated, C chunks in flight: the busiest resource's total work plus the pipeline's fill.
 * Resources: one direction of one link of each outer dimension (every local rank's chunks that
 * cross it, reduce-scatter and allgather: beta only, the alphas are latency, in the fill) and
 * each rank's package exchanges and reductions (beta_0 and gamma). Fill: one chunk's sequential
 * time less its share of the busiest resource, so that one chunk costs exactly the sequential
 * rotated torus. */
static double pipelined_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY;
    const int p = s.size[0], nout = s.ndims - 1;
    const int C = glucx_coll_pipeline_chunks(bytes, GLUCX_COLL_ALLREDUCE_CHUNK_BYTES, SIZE_MAX, 1);
    const double mc = (double)bytes / C, g = topo->gamma_ns_per_byte;
    double load[GLUCX_NET_MAX_DIMS] = {0};
    const double n0 = s.size[0];
    for (int c = 0; c < C; c++) {
        load[0] += (n0 - 1) / n0 * mc * (2 * s.link[0].beta_ns_per_byte + g);
        for (int l = 0; l < p; l++) {
            double x = mc / p;
            for (int j = 0; j < nout; j++) {
                const int d = glucx_coll_outer_dim(&s, 1, l + c, j);
                const double n = s.size[d], v = (n - 1) / n * x;
                load[d] += 2 * v * s.link[d].beta_ns_per_byte;
                if (l == 0) /* this rank's own reductions (local rank 0 stands for any) */
                    load[0] += v * g;
                x /= n;
            }
        }
    }
    return glucx_coll_pipeline_cost(load, s.ndims, dims_cost(topo, (size_t)mc, TORUS_ROTATED), C);
}

double glucx_allreduce_torus_rotated_cost(const glucx_topo_t *topo, size_t bytes)
{
    return pipelined_cost(topo, bytes);
}

static glucx_status_t run_dims(glucx_coll_ctx_t *ctx, int mode)
{
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const glucx_coll_shape_t *s = &lay.shape;
    const size_t es = ctx->esize;
    char *out = ctx->recvbuf;
    size_t nblk = 0;
    for (int d = 0; d < s->ndims; d++)
        nblk += (size_t)s->size[d];
    size_t *mem = glucx_coll_malloc(ctx, sizeof(size_t) * 2 * nblk, &st);
    if (mem == NULL) {
        glucx_coll_layout_fini(&lay);
        return st;
    }
    /* per phase j (the package, then the outer dimensions in this rank's order): its dimension,
     * its blocks and where its span starts */
    int dim[GLUCX_NET_MAX_DIMS];
    size_t *off[GLUCX_NET_MAX_DIMS], *len[GLUCX_NET_MAX_DIMS], base[GLUCX_NET_MAX_DIMS];
    size_t *next = mem;
    glucx_coll_ctx_t sub[GLUCX_NET_MAX_DIMS];
    unsigned step = 0;
    size_t at = 0, cnt = ctx->args->count; /* the span this rank works on: elements [at, +cnt) */
    for (int j = 0; j < s->ndims && st == GLUCX_OK; j++) {
        const int d = dim[j] = j == 0 ? 0 : outer_dim(s, mode, lay.index[0], j - 1);
        const int n = s->size[d], i = lay.index[d];
        off[j] = next;
        len[j] = next + n;
        next += 2 * (size_t)n;
        for (int b = 0; b < n; b++)
            off[j][b] = glucx_coll_split(cnt, (size_t)n, (size_t)b, &len[j][b]);
        glucx_coll_layout_line(ctx, &lay, d, &sub[j]);
        base[j] = at;
        char *span = out + at * es;
        const char *in = j == 0 ? (const char *)ctx->sendbuf : span;
        st = glucx_coll_dim_reduce_scatter(&sub[j], s->engine[d], in, span, off[j], len[j],
                                           span + off[j][i] * es, &step);
        if (st != GLUCX_OK)
            break;
        if (mode != HIERARCHICAL || j == 0) { /* go down into this rank's block */
            at += off[j][i];
            cnt = len[j][i];
        } else { /* hierarchical: allreduce of the share along this dimension */
            st = glucx_coll_dim_allgather(&sub[j], s->engine[d], span, off[j], len[j], &step);
        }
    }
    /* allgather back what is still reduce-scattered (torus: every phase; hierarchical: the
     * package), the package last */
    for (int j = (mode != HIERARCHICAL ? s->ndims : 1) - 1; j >= 0 && st == GLUCX_OK; j--)
        st = glucx_coll_dim_allgather(&sub[j], s->engine[dim[j]], out + base[j] * es, off[j],
                                      len[j], &step);
    free(mem);
    glucx_coll_layout_fini(&lay);
    return st;
}

glucx_status_t glucx_allreduce_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    return run_dims(ctx, HIERARCHICAL);
}

glucx_status_t glucx_allreduce_torus_run(glucx_coll_ctx_t *ctx)
{
    return run_dims(ctx, TORUS);
}

/* ---- torus_rotated: chunks in flight ---- */

/* The plan: per chunk, its dimension order, each reduce-scatter phase's span and blocks. */
typedef struct tr_plan {
    glucx_coll_ctx_t *ctx;
    const glucx_coll_shape_t *s;
    int nd;
    size_t *c0;   /* [C] first element of each chunk */
    int *dim;     /* [C * nd] */
    size_t *base; /* [C * nd] element offset (in the chunk) of each reduce-scatter phase's span */
    size_t **off, **len;   /* [C * nd] blocks of each phase */
    glucx_coll_ctx_t *sub; /* [C * nd] the line of each phase */
} tr_plan_t;

/* Phase j of chunk c: the first nd reduce-scatter down the chunk's dimension order, the rest
 * allgather back in reverse; steps numbered in that order (so the package's last allgather
 * starts at the chunk's steps less its own, the same for every local rank). */
static glucx_status_t tr_build(void *arg, int c, int j, glucx_coll_phase_t *ph)
{
    const tr_plan_t *pl = arg;
    glucx_coll_ctx_t *ctx = pl->ctx;
    const int nd = pl->nd, rs = j < nd, k = rs ? j : 2 * nd - 1 - j, q = c * nd + k;
    const size_t es = ctx->esize;
    char *out = (char *)ctx->recvbuf + pl->c0[c] * es, *span = out + pl->base[q] * es;
    unsigned step = 0;
    for (int i = 0; i < j; i++) {
        const int d = pl->dim[c * nd + (i < nd ? i : 2 * nd - 1 - i)];
        step += (unsigned)glucx_coll_phase_steps(pl->s->engine[d], pl->s->size[d]);
    }
    ph->sub = pl->sub[q];
    ph->engine = pl->s->engine[pl->dim[q]];
    ph->rs = rs;
    ph->off = pl->off[q];
    ph->len = pl->len[q];
    ph->step = step;
    if (rs) {
        ph->in = k == 0 ? (const char *)ctx->sendbuf + pl->c0[c] * es : span;
        ph->work = span;
        ph->out = span + pl->off[q][pl->sub[q].rank] * es;
    } else {
        ph->buf = span;
    }
    return GLUCX_OK;
}

static glucx_status_t run_pipelined(glucx_coll_ctx_t *ctx)
{
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const glucx_coll_shape_t *s = &lay.shape;
    const int nd = s->ndims, l = lay.index[0];
    const size_t count = ctx->args->count;
    int S = 0, nblk = 0; /* steps per chunk, blocks of all of a chunk's phases */
    for (int d = 0; d < nd; d++) {
        S += 2 * glucx_coll_phase_steps(s->engine[d], s->size[d]);
        nblk += s->size[d];
    }
    const int C = glucx_coll_pipeline_chunks(count * ctx->esize, GLUCX_COLL_ALLREDUCE_CHUNK_BYTES,
                                             count, (unsigned)(S > 0 ? S : 1));
    const size_t Q = (size_t)C * (size_t)nd;
    tr_plan_t pl = {.ctx = ctx, .s = s, .nd = nd};
    /* one allocation: c0, base, off/len pointers, dims, subgroups, block arrays */
    const size_t bytes = sizeof(size_t) * ((size_t)C + Q + 2 * (size_t)nblk * (size_t)C) +
                         sizeof(size_t *) * 2 * Q + sizeof(int) * Q + sizeof(glucx_coll_ctx_t) * Q;
    char *mem = glucx_coll_malloc(ctx, bytes, &st);
    if (mem == NULL) {
        glucx_coll_layout_fini(&lay);
        return st;
    }
    pl.sub = (glucx_coll_ctx_t *)mem;
    pl.off = (size_t **)(pl.sub + Q);
    pl.len = pl.off + Q;
    pl.c0 = (size_t *)(pl.len + Q);
    pl.base = pl.c0 + C;
    size_t *next = pl.base + Q;
    pl.dim = (int *)(next + 2 * (size_t)nblk * (size_t)C);
    /* chunk c of local rank l takes the outer dimensions from 1 + (l + c) mod D on, so that
     * consecutive chunks start in different dimensions */
    for (int c = 0; c < C; c++) {
        size_t cnt, at = 0;
        pl.c0[c] = glucx_coll_split(count, (size_t)C, (size_t)c, &cnt);
        for (int k = 0; k < nd; k++) {
            const size_t q = (size_t)c * (size_t)nd + (size_t)k;
            const int d = pl.dim[q] = k == 0 ? 0 : glucx_coll_outer_dim(s, 1, l + c, k - 1);
            const int n = s->size[d], i = lay.index[d];
            pl.off[q] = next;
            pl.len[q] = next + n;
            next += 2 * (size_t)n;
            for (int b = 0; b < n; b++)
                pl.off[q][b] = glucx_coll_split(cnt, (size_t)n, (size_t)b, &pl.len[q][b]);
            glucx_coll_layout_line(ctx, &lay, d, &pl.sub[q]);
            pl.base[q] = at;
            at += pl.off[q][i];
            cnt = pl.len[q][i];
        }
    }
    int nphase[GLUCX_COLL_CHUNKS_MAX];
    for (int c = 0; c < C; c++)
        nphase[c] = 2 * nd;
    st = glucx_coll_pipeline(ctx, C, nphase, (unsigned)S, tr_build, &pl);
    free(mem);
    glucx_coll_layout_fini(&lay);
    return st;
}

glucx_status_t glucx_allreduce_torus_rotated_run(glucx_coll_ctx_t *ctx)
{
    return run_pipelined(ctx);
}
