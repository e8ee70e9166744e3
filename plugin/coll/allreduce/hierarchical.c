/*
 * Allreduce on a hierarchical network: "hierarchical" and "torus".
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
 * Every element is reduced once, on the rank that owns it at the deepest reduce-scatter, and then
 * only copied: every rank ends with bitwise the same vector. Unequal packages: no shape,
 * GLUCX_ERR_UNSUPPORTED before any traffic.
 */
#include <math.h>
#include <stdlib.h>

#include "coll/allgather/ring.h"
#include "coll/allreduce/allreduce.h"
#include "coll/hier.h"

/* The two share the cost terms; torus != 0 for the torus. */
static double dims_cost(const glucx_topo_t *topo, size_t bytes, int torus)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY; /* one package: the flat algorithms */
    const double g = topo->gamma_ns_per_byte;
    double m = (double)bytes, c = 0;
    for (int d = 0; d < s.ndims; d++) {
        c += glucx_coll_dim_cost(&s, d, m, g) + glucx_coll_dim_cost(&s, d, m, 0);
        if (torus || d == 0)
            m /= s.size[d];
    }
    return c;
}

double glucx_allreduce_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    return dims_cost(topo, bytes, 0);
}

double glucx_allreduce_torus_cost(const glucx_topo_t *topo, size_t bytes)
{
    return dims_cost(topo, bytes, 1);
}

static glucx_status_t run_dims(glucx_coll_ctx_t *ctx, int torus)
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
    size_t *off[GLUCX_NET_MAX_DIMS], *len[GLUCX_NET_MAX_DIMS], base[GLUCX_NET_MAX_DIMS];
    size_t *next = mem;
    glucx_coll_ctx_t sub[GLUCX_NET_MAX_DIMS];
    unsigned step = 0;
    size_t at = 0, cnt = ctx->args->count; /* the span this rank works on: elements [at, +cnt) */
    for (int d = 0; d < s->ndims && st == GLUCX_OK; d++) {
        const int n = s->size[d], i = lay.index[d];
        off[d] = next;
        len[d] = next + n;
        next += 2 * (size_t)n;
        for (int b = 0; b < n; b++)
            off[d][b] = glucx_coll_split(cnt, (size_t)n, (size_t)b, &len[d][b]);
        glucx_coll_layout_line(ctx, &lay, d, &sub[d]);
        base[d] = at;
        char *span = out + at * es;
        const char *in = d == 0 ? (const char *)ctx->sendbuf : span;
        st = glucx_coll_dim_reduce_scatter(&sub[d], s->engine[d], in, span, off[d], len[d],
                                           span + off[d][i] * es, &step);
        if (st != GLUCX_OK)
            break;
        if (torus || d == 0) { /* go down into this rank's block */
            at += off[d][i];
            cnt = len[d][i];
        } else { /* hierarchical: allreduce of the share along this dimension */
            st = glucx_coll_dim_allgather(&sub[d], s->engine[d], span, off[d], len[d], &step);
        }
    }
    /* allgather back what is still reduce-scattered (torus: every dimension; hierarchical: the
     * package), innermost last */
    for (int d = (torus ? s->ndims : 1) - 1; d >= 0 && st == GLUCX_OK; d--)
        st = glucx_coll_dim_allgather(&sub[d], s->engine[d], out + base[d] * es, off[d], len[d],
                                      &step);
    free(mem);
    glucx_coll_layout_fini(&lay);
    return st;
}

glucx_status_t glucx_allreduce_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    return run_dims(ctx, 0);
}

glucx_status_t glucx_allreduce_torus_run(glucx_coll_ctx_t *ctx)
{
    return run_dims(ctx, 1);
}
