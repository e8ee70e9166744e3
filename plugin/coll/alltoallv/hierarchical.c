/*
 * Alltoallv on a hierarchical network, "hierarchical": the uneven-block form of
 * plugin/coll/alltoall/hierarchical.c, blocks aggregated per destination package so that the
 * slow links carry p messages per ordered pair of packages instead of p x p.
 *
 * Rank (q, l) is local rank l of the package at position q. A rank knows only its own send and
 * receive counts, so the package first learns the sizes of what it will forward:
 * 0. inside every package, a direct exchange of counts: local rank l sends to local rank l' the
 *    P counts it has for (0, l') .. (P-1, l') (one message of P 64-bit counts per pair);
 * 1. inside every package, an alltoallv (the pairwise row on the package): l sends to l' its
 *    blocks for (0, l') .. (P-1, l'), packed in package order, the sizes known to both ends;
 * 2. across packages, an alltoallv (the pairwise row) along every cross line: (q, l') sends to
 *    (q', l') the blocks of all p local ranks of q for it (sizes from step 0), which (q', l')
 *    expects from its own receive counts; then puts them in place.
 * Inconsistent counts between ranks show up as a wrong length in step 2 (GLUCX_ERR_MISMATCH),
 * or before it, named, when the package's own blocks for this rank disagree with its counts.
 * Cost, m bytes received in all (the mean block b = m / n), p ranks per package, P packages,
 * L the outer network as one link (glucx_coll_outer_link), L_0 the package's, c the copy cost:
 *   alpha_0 + (p-1) (alpha_0 + P b beta_0) + (P-1) (alpha_L + p b p beta_L) + 3 m c,
 * the counts' exchange one step (its bytes neglected), the p flows of every local rank's cross
 * line sharing the links between two packages in step 2.
 * Source: the two-level alltoall aggregated per node of Träff & Rougier, "MPI Collectives and
 * Datatypes for Hierarchical All-to-all Communication" (EuroMPI/ASIA 2014), with the counts
 * exchanged first, as an alltoallv must.
 * Unequal packages: GLUCX_ERR_UNSUPPORTED before any traffic (hier.h); one package: an infinite
 * cost; forced, it runs as the package's steps.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/alltoallv/alltoallv.h"
#include "coll/hier.h"

double glucx_alltoallv_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY; /* one package: the flat rows */
    const int p = s.size[0], P = topo->npackages;
    const double b = (double)bytes / topo->size, c = topo->copy_ns_per_byte;
    const glucx_link_cost_t l0 = s.link[0], lo = glucx_coll_outer_link(&s);
    return (p > 1 ? l0.alpha_ns : 0) + (p - 1) * (l0.alpha_ns + P * b * l0.beta_ns_per_byte) +
           (P - 1) * (lo.alpha_ns + p * b * p * lo.beta_ns_per_byte) + 3.0 * (double)bytes * c;
}

/* buf + off, without arithmetic on a NULL buf (nothing to move: every offset may be 0). */
static char *at(const void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

/* Step 0: cnt[l * P + q] = what local rank l sends to (q, me), from every local rank. */
static glucx_status_t exchange_counts(glucx_coll_ctx_t *ctx, const glucx_coll_layout_t *lay,
                                      uint64_t *mine, uint64_t *cnt)
{
    const int P = lay->npackages, p = lay->shape.size[0], me = lay->index[0];
    const size_t *sc = ctx->args->send_counts;
    glucx_coll_ctx_t sub;
    glucx_coll_layout_line(ctx, lay, 0, &sub);
    for (int l = 0; l < p; l++)
        for (int q = 0; q < P; q++)
            mine[l * P + q] = sc[lay->ranks[q * p + l]];
    memcpy(cnt + (size_t)me * P, mine + (size_t)me * P, sizeof(*cnt) * (size_t)P);
    if (p < 2)
        return GLUCX_OK;
    glucx_status_t st;
    glucx_tx_req_t *reqs = glucx_coll_malloc(ctx, sizeof(*reqs) * 2 * (size_t)(p - 1), &st);
    if (reqs == NULL)
        return st;
    int nreq = 0;
    const size_t bytes = sizeof(*cnt) * (size_t)P;
    for (int l = 0; l < p && st == GLUCX_OK; l++)
        if (l != me)
            st = glucx_coll_irecv(&sub, l, 0, cnt + (size_t)l * P, bytes, &reqs[nreq++]);
    for (int k = 1; k < p && st == GLUCX_OK; k++) {
        const int l = (me + k) % p;
        st = glucx_coll_isend(&sub, l, 0, mine + (size_t)l * P, bytes, &reqs[nreq++]);
    }
    if (st == GLUCX_OK)
        st = glucx_coll_waitall(&sub, reqs, nreq);
    free(reqs);
    return st;
}

glucx_status_t glucx_alltoallv_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const glucx_coll_args_t *args = ctx->args;
    const int P = lay.npackages, p = lay.shape.size[0], me = lay.index[0], n = ctx->size;
    const int *R = lay.ranks; /* R[q * p + l]: rank (q, l) */
    const size_t es = ctx->esize;
    char *t1 = NULL;
    /* counts: mine and cnt [p * P]; the two steps' counts and displacements [4 * max(p, P)] */
    const size_t w = (size_t)(p > P ? p : P);
    uint64_t *mem =
        glucx_coll_malloc(ctx, sizeof(uint64_t) * 2 * (size_t)n + sizeof(size_t) * 4 * w, &st);
    if (mem == NULL)
        goto out;
    uint64_t *mine = mem, *cnt = mem + n;
    size_t *sc = (size_t *)(cnt + n), *sd = sc + w, *rc = sd + w, *rd = rc + w;
    if ((st = exchange_counts(ctx, &lay, mine, cnt)) != GLUCX_OK)
        goto out;
    /* sizes: what this rank sends (S), gets in step 1 (A) and in step 2 (B) */
    size_t S = 0, A = 0, B = 0;
    for (int r = 0; r < n; r++) {
        S += args->send_counts[r];
        A += cnt[r];
        B += args->counts[r];
    }
    /* the package's blocks for this rank must be what this rank expects from it */
    size_t from_pkg = 0, expect = 0;
    for (int l = 0; l < p; l++) {
        from_pkg += cnt[(size_t)l * P + lay.pos];
        expect += args->counts[R[lay.pos * p + l]];
    }
    if (from_pkg != expect) {
        st = glucx_coll_fail(ctx, GLUCX_ERR_MISMATCH,
                             "the ranks of this package send this rank %zu elements of %s in all "
                             "but its counts expect %zu from them",
                             from_pkg, glucx_dtype_name(args->dtype), expect);
        goto out;
    }
    const size_t n1 = S > A ? S : A, n2 = A > B ? A : B;
    if ((t1 = glucx_coll_malloc(ctx, (n1 + n2) * es > 0 ? (n1 + n2) * es : 1, &st)) == NULL)
        goto out;
    char *t2 = at(t1, n1 * es);
    glucx_coll_args_t a = *args;

    /* 1: to local rank l its blocks for (0, l) .. (P-1, l), packed */
    size_t off = 0, roff = 0;
    for (int l = 0; l < p; l++) {
        sd[l] = off;
        for (int q = 0; q < P; q++) {
            const int r = R[q * p + l];
            const size_t k = args->send_counts[r];
            if (k > 0)
                memcpy(t1 + off * es, (const char *)ctx->sendbuf + args->send_displs[r] * es,
                       k * es);
            off += k;
        }
        sc[l] = off - sd[l];
        rd[l] = roff;
        rc[l] = 0;
        for (int q = 0; q < P; q++)
            rc[l] += cnt[(size_t)l * P + q];
        roff += rc[l];
    }
    a.send_counts = sc;
    a.send_displs = sd;
    a.counts = rc;
    a.displs = rd;
    st = glucx_coll_run_on(ctx, lay.line[0], p, me, &a, t1, t2, 1, glucx_alltoallv_pairwise_run);
    if (st != GLUCX_OK)
        goto out;

    /* 2: t2 holds, local rank l by l, its blocks for (0, me) .. (P-1, me); regrouped by
     * destination package at t1; from (q, me), the blocks of (q, 0) .. (q, p-1) for this rank */
    off = 0;
    for (int q = 0; q < P; q++) {
        sd[q] = off;
        size_t src = 0;
        for (int l = 0; l < p; l++) {
            for (int j = 0; j < q; j++)
                src += cnt[(size_t)l * P + j];
            const size_t k = cnt[(size_t)l * P + q];
            if (k > 0)
                memcpy(t1 + off * es, t2 + src * es, k * es);
            off += k;
            for (int j = q; j < P; j++)
                src += cnt[(size_t)l * P + j];
        }
        sc[q] = off - sd[q];
    }
    roff = 0;
    for (int q = 0; q < P; q++) {
        rd[q] = roff;
        rc[q] = 0;
        for (int l = 0; l < p; l++)
            rc[q] += args->counts[R[q * p + l]];
        roff += rc[q];
    }
    int *cross = (int *)mine; /* (the counts sent are no longer needed: n >= P ints fit) */
    glucx_coll_layout_cross(&lay, me, cross);
    st = glucx_coll_run_on(ctx, cross, P, lay.pos, &a, t1, t2, (unsigned)n + 1,
                           glucx_alltoallv_pairwise_run);
    if (st != GLUCX_OK)
        goto out;
    off = 0;
    for (int q = 0; q < P; q++)
        for (int l = 0; l < p; l++) {
            const int r = R[q * p + l];
            const size_t k = args->counts[r];
            if (k > 0)
                memcpy((char *)ctx->recvbuf + args->displs[r] * es, t2 + off * es, k * es);
            off += k;
        }
out:
    free(t1);
    free(mem);
    glucx_coll_layout_fini(&lay);
    return st;
}
