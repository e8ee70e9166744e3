/*
 * Reduce for large messages: reduce-scatter by recursive halving, then gather to the root
 * (Rabenseifner's algorithm).
 *
 * Fold: with p the largest power of two <= n and q = n - p, ranks 2i and 2i+1 (i < q) combine
 * their vectors (x_2i op x_2i+1) on one of them — the root if it is one of the two, else the odd
 * one — so p ranks remain, virtual rank v covering the contiguous ranks {2v, 2v+1} (v < q) or
 * {v + q}.
 * Reduce-scatter: the vector is cut into p blocks (the first count % p one element longer).
 * In step k = 0 .. log2(p)-1 virtual ranks v and v XOR 2^k split the block range they share,
 * each sends the half it gives away and combines the half it keeps with the one received. The
 * distance doubles, so partial results always cover adjacent rank intervals and each combine
 * is (lower ranks) op (higher ranks): for a power-of-two n the bracketing is that of recursive
 * doubling and of the binomial reduce, ((x0 x1)(x2 x3))((x4 x5)(x6 x7)); otherwise adjacent
 * pairs are folded first. It never depends on the root. Afterwards v holds one block.
 * Gather: the steps in reverse; in each, the rank of a pair that is on the root's side keeps
 * and receives the other's range; the other sends it and is done.
 *
 * Cost, m = message bytes, p as above, L = log2 p:
 *   2 L alpha + 2 (p-1)/p m beta + (p-1)/p m gamma, plus alpha + m beta + m gamma if n != p.
 * Against binomial's log2(n) (alpha + m beta + m gamma) it wins once m is large.
 * Topology: none assumed.
 * Source: Rabenseifner, "Optimization of Collective Reduction Operations", ICCS 2004; Thakur,
 * Rabenseifner & Gropp, "Optimization of Collective Communication Operations in MPICH" (IJHPCA
 * 2005), MPICH's long-message reduce.
 */
#include <stdlib.h>

#include "coll/reduce/reduce.h"
#include "util/error.h"

#define STEP_FOLD 0
#define STEP_RS0 1  /* + k */
#define STEP_GA0 32 /* + k */
#define MAX_STEPS 16

double glucx_reduce_reduce_scatter_gather_cost(const glucx_topo_t *topo, size_t bytes)
{
    glucx_link_cost_t l = glucx_topo_bottleneck(topo);
    const int n = topo->size;
    if (n <= 1)
        return 0.0;
    int p = 1, L = 0;
    while (p * 2 <= n)
        p *= 2, L++;
    const double m = (double)bytes, frac = (double)(p - 1) / p;
    double t =
        2.0 * L * l.alpha_ns + frac * m * (2.0 * l.beta_ns_per_byte + topo->gamma_ns_per_byte);
    if (n != p)
        t += l.alpha_ns + m * (l.beta_ns_per_byte + topo->gamma_ns_per_byte);
    return t;
}

/* Element offset of block i of p: blocks of base elements, the first rem one longer. */
static size_t boff(size_t count, int p, int i)
{
    const size_t base = count / (size_t)p, rem = count % (size_t)p;
    return (size_t)i * base + ((size_t)i < rem ? (size_t)i : rem);
}

/* buf + off, without arithmetic on a NULL buf (count 0: every offset is 0). */
static char *at(const void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

glucx_status_t glucx_reduce_reduce_scatter_gather_run(glucx_coll_ctx_t *ctx)
{
    const glucx_coll_args_t *a = ctx->args;
    if (ctx->reduce == NULL)
        return glucx_error(GLUCX_ERR_UNSUPPORTED, "reduce: no kernel for op %s on %s",
                           glucx_op_name(a->op), glucx_dtype_name(a->dtype));
    const int n = ctx->size, r = ctx->rank, root = a->root;
    const size_t count = a->count, es = ctx->esize, bytes = count * es;
    if (n == 1) {
        glucx_coll_copy(ctx->recvbuf, ctx->sendbuf, bytes);
        return GLUCX_OK;
    }
    int p = 1, L = 0;
    while (p * 2 <= n)
        p *= 2, L++;
    const int q = n - p;

    /* fold: who survives in each pair, and the virtual ranks */
#define SURVIVOR(i) ((root / 2 == (i) && root < 2 * q) ? root : 2 * (i) + 1)
#define ACTUAL(v) ((v) < q ? SURVIVOR(v) : (v) + q)
    glucx_status_t st;
    int v;
    if (r < 2 * q) {
        if (r != SURVIVOR(r / 2))
            return glucx_coll_sendrecv(ctx, r ^ 1, ctx->sendbuf, bytes, -1, NULL, 0, STEP_FOLD);
        v = r / 2;
    } else {
        v = r - q;
    }
    const int vroot = root < 2 * q ? root / 2 : root - q;
    const int is_root = r == root;

    /* acc: the running partial result (recvbuf at the root); tmp: what a peer sends */
    char *scratch = glucx_coll_malloc(ctx, bytes * (is_root ? 1 : 2), &st);
    if (scratch == NULL)
        return st;
    char *tmp = scratch;
    char *acc = is_root ? ctx->recvbuf : at(scratch, bytes);
    const char *cur = ctx->sendbuf; /* this rank's data so far: input, then acc */

    if (r < 2 * q) {
        const int partner = r ^ 1;
        st = glucx_coll_sendrecv(ctx, -1, NULL, 0, partner, tmp, bytes, STEP_FOLD);
        if (st != GLUCX_OK)
            goto out;
        if (partner < r)
            glucx_coll_reduce(ctx, acc, tmp, cur, count);
        else
            glucx_coll_reduce(ctx, acc, cur, tmp, count);
        cur = acc;
    }

    /* reduce-scatter: ranges[k] = the blocks kept after step k */
    int lo[MAX_STEPS], hi[MAX_STEPS];
    int bs = 0, be = p;
    for (int k = 0; k < L; k++) {
        const int mask = 1 << k, pv = v ^ mask, peer = ACTUAL(pv), mid = bs + (be - bs) / 2;
        const int klo = (v & mask) ? mid : bs, khi = (v & mask) ? be : mid;
        const int glo = (v & mask) ? bs : mid, ghi = (v & mask) ? mid : be;
        const size_t ko = boff(count, p, klo), kn = boff(count, p, khi) - ko;
        const size_t go = boff(count, p, glo), gn = boff(count, p, ghi) - go;
        glucx_tx_req_t reqs[2];
        st = glucx_coll_irecv(ctx, peer, STEP_RS0 + (unsigned)k, tmp, kn * es, &reqs[0]);
        if (st == GLUCX_OK)
            st = glucx_coll_isend(ctx, peer, STEP_RS0 + (unsigned)k, at(cur, go * es), gn * es,
                                  &reqs[1]);
        if (st == GLUCX_OK)
            st = glucx_coll_waitall(ctx, reqs, 2);
        if (st != GLUCX_OK)
            goto out;
        if (pv < v)
            glucx_coll_reduce(ctx, at(acc, ko * es), tmp, at(cur, ko * es), kn);
        else
            glucx_coll_reduce(ctx, at(acc, ko * es), at(cur, ko * es), tmp, kn);
        cur = acc;
        lo[k] = bs = klo;
        hi[k] = be = khi;
    }

    /* gather to vroot, the steps in reverse */
    for (int k = L - 1; k >= 0; k--) {
        const int mask = 1 << k, peer = ACTUAL(v ^ mask);
        const size_t o = boff(count, p, lo[k]), e = boff(count, p, hi[k]);
        if ((v ^ vroot) & mask) {
            st = glucx_coll_sendrecv(ctx, peer, at(acc, o * es), (e - o) * es, -1, NULL, 0,
                                     STEP_GA0 + (unsigned)k);
            break;
        }
        /* receive the sibling of my range within the range before step k */
        const int plo = k ? lo[k - 1] : 0, phi = k ? hi[k - 1] : p;
        const int slo = lo[k] == plo ? hi[k] : plo, shi = lo[k] == plo ? phi : lo[k];
        const size_t so = boff(count, p, slo), se = boff(count, p, shi);
        st = glucx_coll_sendrecv(ctx, -1, NULL, 0, peer, at(acc, so * es), (se - so) * es,
                                 STEP_GA0 + (unsigned)k);
        if (st != GLUCX_OK)
            break;
    }
#undef ACTUAL
#undef SURVIVOR
out:
    free(scratch);
    return st;
}
