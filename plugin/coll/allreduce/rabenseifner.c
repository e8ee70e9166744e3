/*
 * Allreduce, Rabenseifner's algorithm: recursive-halving reduce-scatter, then
 * recursive-doubling allgather (any number of ranks).
 *
 * With p = 2^floor(log2 n) and rem = n - p, the first 2*rem ranks fold in pairs as in
 * recursive doubling (the even rank hands its vector to the odd one and receives the result at
 * the end). The vector is cut into p nearly equal blocks. At distances d = 1, 2, ..., p/2 a new
 * rank sends the half of its current block range that its partner (new rank XOR d) keeps and
 * combines the partner's data for the half it keeps: the lower new rank keeps the lower half.
 * Because distances grow, each combine joins two adjacent groups of real ranks with the lower
 * group first (coll.h's canonical order). New rank i ends with block bitreverse(i) reduced over
 * all ranks; the allgather replays the halvings backwards (d = p/2, ..., 1), receiving directly
 * into recvbuf, so every rank gets the same bytes.
 *
 * Cost, m = message bytes, n ranks, p and rem as above:
 *   2 log2(p) alpha + 2 (p-1)/p m beta + (p-1)/p m gamma
 *   + if rem > 0: 2 (alpha + m beta) + m gamma.
 * On a topology file the halving and doubling steps r XOR 2^k, m / 2^(k+1) each cost their
 * pattern's alpha and beta on the routes (glucx_topo_step_cost: a link direction that several
 * messages of one step cross charges each of them). Bandwidth-optimal with logarithmic latency: the
 * medium/large-message choice up to many ranks. Topology: a hypercube; the largest exchanges are
 * between neighbours (d = 1), which usually share a package. Source: R. Rabenseifner, "Optimization
 * of Collective Reduction Operations" (ICCS 2004); Thakur, Rabenseifner & Gropp, "Optimization of
 * Collective Communication Operations in MPICH" (IJHPCA 2005), MPICH's long-message allreduce.
 */
#include <stdlib.h>

#include "coll/allgather/ring.h" /* glucx_coll_split */
#include "coll/allreduce/allreduce.h"

#define MAX_LEVELS 32

double glucx_allreduce_rabenseifner_cost(const glucx_topo_t *topo, size_t bytes)
{
    const int n = topo->size, lg = glucx_allreduce_floor_log2(n), p = 1 << lg;
    const double m = (double)bytes, g = topo->gamma_ns_per_byte, f = (double)(p - 1) / p;
    /* the halving at distance 2^k moves m / 2^(k+1) each way, and the doubling back as much */
    double t = f * m * g;
    for (int k = 0; k < lg; k++) {
        const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_XOR, k);
        t += 2 * (l.alpha_ns + m / (double)(2L << k) * l.beta_ns_per_byte);
    }
    if (n != p) {
        const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_XOR, 0);
        t += 2 * (l.alpha_ns + m * l.beta_ns_per_byte) + m * g;
    }
    return t;
}

/* Element offset of block b of p (b == p gives count). */
static size_t blk_off(size_t count, int p, int b)
{
    size_t len;
    return glucx_coll_split(count, (size_t)p, (size_t)b, &len);
}

glucx_status_t glucx_allreduce_rabenseifner_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t count = ctx->args->count, es = ctx->esize, bytes = count * es;
    const char *in = ctx->sendbuf;
    char *out = ctx->recvbuf;
    if (n == 1) {
        glucx_coll_copy(out, in, bytes);
        return GLUCX_OK;
    }
    const int lg = glucx_allreduce_floor_log2(n), p = 1 << lg, rem = n - p;
    const unsigned last_step = 2 * (unsigned)lg + 1;
    glucx_status_t st;

    if (r < 2 * rem && r % 2 == 0) {
        /* folded out: contribute, then receive the result */
        return glucx_allreduce_fold_out(ctx, in, out, bytes, last_step);
    }
    const int folded = r < 2 * rem;
    const int newrank = folded ? r / 2 : r - rem;

    /* scratch: the largest half received while halving; a whole vector for an in-place fold */
    const int half0_lo = (newrank & 1) ? p / 2 : 0;
    size_t tmp_bytes = (blk_off(count, p, half0_lo + p / 2) - blk_off(count, p, half0_lo)) * es;
    if (folded && ctx->in_place)
        tmp_bytes = bytes;
    char *tmp = glucx_coll_malloc(ctx, tmp_bytes, &st);
    if (tmp == NULL)
        return st;

    const char *cur = in; /* this rank's data for its current range */
    if (folded) {
        /* out-of-place: receive straight into recvbuf and combine there */
        char *rx = ctx->in_place ? tmp : out;
        st = glucx_coll_sendrecv(ctx, -1, NULL, 0, r - 1, rx, bytes, 0);
        if (st != GLUCX_OK)
            goto out;
        glucx_coll_reduce(ctx, out, rx, in, count); /* rank r-1 is lower */
        cur = out;
    }

    /* reduce-scatter by recursive halving, distances growing */
    int lo = 0, hi = p;
    int klo[MAX_LEVELS], khi[MAX_LEVELS];
    unsigned step = 1;
    for (int k = 0; k < lg; k++, step++) {
        const int d = 1 << k, half = (hi - lo) / 2;
        const int peer_new = newrank ^ d;
        const int peer = peer_new < rem ? 2 * peer_new + 1 : peer_new + rem;
        const int upper = (newrank & d) != 0;
        const int kl = upper ? lo + half : lo, kh = upper ? hi : lo + half;
        const int sl = upper ? lo : lo + half, sh = upper ? lo + half : hi;
        const size_t ko = blk_off(count, p, kl), kn = blk_off(count, p, kh) - ko;
        const size_t so = blk_off(count, p, sl), sn = blk_off(count, p, sh) - so;
        glucx_tx_req_t reqs[2];
        int nreq = 0;
        st = GLUCX_OK;
        if (kn > 0)
            st = glucx_coll_irecv(ctx, peer, step, tmp, kn * es, &reqs[nreq++]);
        if (st == GLUCX_OK && sn > 0)
            st = glucx_coll_isend(ctx, peer, step, cur + so * es, sn * es, &reqs[nreq++]);
        if (st == GLUCX_OK)
            st = glucx_coll_waitall(ctx, reqs, nreq);
        if (st != GLUCX_OK)
            goto out;
        if (peer_new < newrank)
            glucx_coll_reduce(ctx, out + ko * es, tmp, cur + ko * es, kn);
        else
            glucx_coll_reduce(ctx, out + ko * es, cur + ko * es, tmp, kn);
        cur = out;
        klo[k] = lo = kl;
        khi[k] = hi = kh;
    }

    /* allgather by recursive doubling: undo the halvings, last first */
    for (int k = lg - 1; k >= 0; k--, step++) {
        const int d = 1 << k;
        const int peer_new = newrank ^ d;
        const int peer = peer_new < rem ? 2 * peer_new + 1 : peer_new + rem;
        /* before halving k the range was the union of this rank's kept half and the peer's */
        const int kl = klo[k], kh = khi[k];
        const int range_lo = k > 0 ? klo[k - 1] : 0, range_hi = k > 0 ? khi[k - 1] : p;
        const int ol = kl == range_lo ? kh : range_lo, oh = kl == range_lo ? range_hi : kl;
        const size_t ko = blk_off(count, p, kl), kn = blk_off(count, p, kh) - ko;
        const size_t oo = blk_off(count, p, ol), on = blk_off(count, p, oh) - oo;
        glucx_tx_req_t reqs[2];
        int nreq = 0;
        st = GLUCX_OK;
        if (on > 0)
            st = glucx_coll_irecv(ctx, peer, step, out + oo * es, on * es, &reqs[nreq++]);
        if (st == GLUCX_OK && kn > 0)
            st = glucx_coll_isend(ctx, peer, step, out + ko * es, kn * es, &reqs[nreq++]);
        if (st == GLUCX_OK)
            st = glucx_coll_waitall(ctx, reqs, nreq);
        if (st != GLUCX_OK)
            goto out;
    }
    if (folded)
        st = glucx_coll_sendrecv(ctx, r - 1, out, bytes, -1, NULL, 0, last_step);
out:
    free(tmp);
    return st;
}
