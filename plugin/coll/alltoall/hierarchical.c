/*
 * Alltoall on a hierarchical network, "hierarchical": blocks aggregated per destination
 * package, so that the slow links carry p messages per ordered pair of packages instead of
 * p x p (p ranks per package).
 *
 * Rank (q, l) is local rank l of the package at position q. Two phases, each an existing
 * alltoall row run on a subgroup (hier.h's glucx_coll_run_on), in its own step range:
 * 1. inside every package, an alltoall of aggregated blocks: local rank l sends to local rank
 *    l' of its package the P blocks it has for the ranks (0, l') .. (P-1, l') (package order),
 *    so that (q, l') then holds, for every package q', the blocks of all p local ranks of q for
 *    (q', l');
 * 2. across packages, an alltoall among the ranks with one local rank (the "cross" line: P
 *    ranks, one per package): (q, l') sends to (q', l') one message of the p blocks for it,
 *    which it receives and puts in place.
 * Every block crosses the package's links at most once and the slow links at most once. Each
 * phase runs the pairwise or Bruck row, whichever the phase's own cost predicts faster on its
 * link, decided from the size and the shape only (every rank picks the same). Local copies:
 * the send buffer packed by destination local rank, phase 1's output regrouped by destination
 * package, phase 2's output put in rank order: 3 m.
 * Cost, b bytes per block, m = n b, p ranks per package, P packages, L the outer network as
 * one link (glucx_coll_outer_link), L_0 the package's link, c the copy cost per byte:
 *   A(p, L_0, P b, 1) + A(P, L, p b, p) + 3 m c,
 *   A(n, l, y, f) = min((n-1) (alpha_l + y f beta_l) + y c,
 *                       Bruck: sum_k (alpha_l + B_k y f beta_l + 2 B_k y c) + n y c),
 * f = p flows (every local rank's cross line) sharing the links between two packages in
 * phase 2. Against the flat pairwise exchange ((n-1) alpha and (n-1) b beta over the slow
 * links), the slow links carry the same bytes in P - 1 instead of n - 1 messages per rank.
 * Source: the two-level alltoall that aggregates per node (a node-local alltoall, then an
 * inter-node alltoall between matched ranks) of Träff & Rougier, "MPI Collectives and
 * Datatypes for Hierarchical All-to-all Communication" (EuroMPI/ASIA 2014); the same
 * decomposition as the multi-dimensional alltoall of Sack & Gropp ("Collective Algorithms for
 * Multiported Torus Networks", ACM TOPC 2015) with the package as one dimension.
 * Unequal packages: GLUCX_ERR_UNSUPPORTED before any traffic (hier.h); one package: an
 * infinite cost (the flat rows are the same thing); forced, it runs as the package's phase.
 * Uneven blocks: plugin/coll/alltoallv/hierarchical.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/alltoall/alltoall.h"
#include "coll/hier.h"

/* The flat rows' costs on one phase of n members, blocks of y bytes, f flows per link */
static double pairwise_cost(int n, glucx_link_cost_t l, double y, int f, double copy)
{
    return (n - 1) * (l.alpha_ns + y * f * l.beta_ns_per_byte) + y * copy;
}

static double bruck_cost(int n, glucx_link_cost_t l, double y, int f, double copy)
{
    double t = n * y * copy;
    for (int k = 0; (1 << k) < n; k++) {
        const double moved = glucx_alltoall_bruck_blocks(n, k) * y;
        t += l.alpha_ns + moved * f * l.beta_ns_per_byte + 2.0 * moved * copy;
    }
    return t;
}

/* Bruck when predicted faster (ties: pairwise) */
static int use_bruck(int n, glucx_link_cost_t l, double y, int f, double copy)
{
    return n > 2 && bruck_cost(n, l, y, f, copy) < pairwise_cost(n, l, y, f, copy);
}

static double phase_cost(int n, glucx_link_cost_t l, double y, int f, double copy)
{
    if (n <= 1)
        return y * copy;
    return use_bruck(n, l, y, f, copy) ? bruck_cost(n, l, y, f, copy)
                                       : pairwise_cost(n, l, y, f, copy);
}

double glucx_alltoall_hierarchical_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY; /* one package: the flat rows */
    const int p = s.size[0], P = topo->npackages;
    const double b = (double)bytes / topo->size, c = topo->copy_ns_per_byte;
    return phase_cost(p, s.link[0], P * b, 1, c) +
           phase_cost(P, glucx_coll_outer_link(&s), p * b, p, c) + 3.0 * bytes * c;
}

/* buf + off, without arithmetic on a NULL buf (count 0: every offset is 0). */
static char *at(const void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

glucx_status_t glucx_alltoall_hierarchical_run(glucx_coll_ctx_t *ctx)
{
    glucx_coll_layout_t lay;
    glucx_status_t st = glucx_coll_layout_init(ctx, &lay);
    if (st != GLUCX_OK)
        return st;
    const glucx_coll_shape_t *s = &lay.shape;
    const int P = lay.npackages, p = s->size[0], me = lay.index[0], n = ctx->size;
    const size_t b = ctx->args->count * ctx->esize, m = b * (size_t)n;
    const double c = ctx->topo->copy_ns_per_byte;
    const int *R = lay.ranks; /* R[q * p + l]: rank (q, l) */
    glucx_coll_args_t a = *ctx->args;
    char *t1 = NULL, *t2 = NULL;
    int *cross = glucx_coll_malloc(ctx, sizeof(int) * (size_t)P, &st);
    if (cross == NULL)
        goto out;
    if ((t1 = glucx_coll_malloc(ctx, 2 * m > 0 ? 2 * m : 1, &st)) == NULL)
        goto out;
    t2 = at(t1, m);
    /* 1: blocks for (q', l') packed at t1[l' * P + q'], an alltoall of P blocks per member */
    if (b > 0)
        for (int l = 0; l < p; l++)
            for (int q = 0; q < P; q++)
                memcpy(t1 + ((size_t)l * P + q) * b,
                       (const char *)ctx->sendbuf + (size_t)R[q * p + l] * b, b);
    a.count = ctx->args->count * (size_t)P;
    st = glucx_coll_run_on(ctx, lay.line[0], p, me, &a, t1, t2, 0,
                           use_bruck(p, s->link[0], (double)P * b, 1, c)
                               ? glucx_alltoall_bruck_run
                               : glucx_alltoall_pairwise_run);
    if (st != GLUCX_OK)
        goto out;
    /* 2: t2[l * P + q'] is (q, l)'s block for (q', me): regrouped at t1[q' * p + l], an
     * alltoall of p blocks per member along the cross line */
    if (b > 0)
        for (int l = 0; l < p; l++)
            for (int q = 0; q < P; q++)
                memcpy(t1 + ((size_t)q * p + l) * b, t2 + ((size_t)l * P + q) * b, b);
    glucx_coll_layout_cross(&lay, me, cross);
    a.count = ctx->args->count * (size_t)p;
    const glucx_link_cost_t lo = glucx_coll_outer_link(s);
    st = glucx_coll_run_on(ctx, cross, P, lay.pos, &a, t1, t2, (unsigned)n,
                           use_bruck(P, lo, (double)p * b, p, c) ? glucx_alltoall_bruck_run
                                                                 : glucx_alltoall_pairwise_run);
    if (st != GLUCX_OK)
        goto out;
    /* t2[q * p + l] is (q, l)'s block for this rank */
    if (b > 0)
        for (int q = 0; q < P; q++)
            for (int l = 0; l < p; l++)
                memcpy((char *)ctx->recvbuf + (size_t)R[q * p + l] * b,
                       t2 + ((size_t)q * p + l) * b, b);
out:
    free(t1);
    free(cross);
    glucx_coll_layout_fini(&lay);
    return st;
}
