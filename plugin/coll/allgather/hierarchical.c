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
#include "coll/hier.h"

double glucx_allgather_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    return glucx_coll_offload_cost(topo, bytes, 0);
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
    const int nout = s->ndims - 1;
    for (int j = 0; j < nout && st == GLUCX_OK; j++) {
        /* phase j on dimension d of local rank l's order: a member holds the positions that
         * differ from its own in the dimensions visited before (G of them) and have its
         * coordinate along d; one allgather of single blocks per such position, enumerated the
         * same way on every member (the dimensions visited first varying fastest) */
        const int d = glucx_coll_outer_dim(s, 1, l, j), n = s->size[d];
        const int stride = glucx_coll_layout_group(&lay, d);
        int base = lay.pos, G = 1, seen[GLUCX_NET_MAX_DIMS];
        for (int i = 0; i <= j; i++) {
            seen[i] = glucx_coll_outer_dim(s, 1, l, i);
            base -= glucx_coll_layout_coord(&lay, lay.pos, seen[i]) *
                    glucx_coll_layout_group(&lay, seen[i]);
            G *= i < j ? s->size[seen[i]] : 1;
        }
        glucx_coll_ctx_t sub;
        glucx_coll_layout_line(ctx, &lay, d, &sub);
        for (int g = 0; g < G && st == GLUCX_OK; g++) {
            int q = base;
            for (int i = 0, rem = g; i < j; rem /= s->size[seen[i]], i++)
                q += rem % s->size[seen[i]] * glucx_coll_layout_group(&lay, seen[i]);
            for (int i = 0; i < n; i++)
                off[i] = PLACE(q + i * stride, l);
            st = glucx_coll_dim_allgather(&sub, s->engine[d], out, off, len, &step);
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
