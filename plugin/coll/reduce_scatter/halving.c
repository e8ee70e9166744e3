/*
 * Reduce-scatter, recursive halving (any number of ranks).
 *
 * With p = 2^floor(log2 n) and rem = n - p, the first 2*rem ranks fold in pairs: each even one
 * sends its whole input to the odd one above it, which combines it (lower rank first) and takes
 * part for both; the even one only gets its block back at the end. The p remaining ranks
 * ("new ranks"; new rank i stands for real ranks 2i, 2i+1 when i < rem, else i + rem, so every
 * range of new ranks is a contiguous range of real blocks) halve the data log2(p) times: at
 * distance d = p/2, p/4, ..., 1 a rank keeps the half of its current range that holds its own
 * blocks, sends the other half to its partner (new rank XOR d) and combines what the partner
 * sends for the kept half (the lower new rank's data as the first operand). The last combine
 * writes straight into recvbuf.
 *
 * Cost, m = total input bytes (n blocks), n ranks, p and rem as above:
 *   log2(p) alpha + (p-1)/p m (beta + gamma)
 *   + if rem > 0: 2 alpha + m beta + m gamma + m/n beta   (fold and the returned block).
 * On a topology file the steps r XOR 2^k, 2^k/p of m each cost their pattern's alpha and beta on
 * the routes (glucx_topo_step_cost: a link direction that several messages of one step cross
 * charges each of them).
 * Topology: a hypercube over the new ranks; the first, largest exchanges pair distant ranks.
 * Source: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
 * MPICH" (IJHPCA 2005), MPICH's recursive-halving reduce-scatter for commutative operations;
 * the fold of the non-power-of-two ranks is Rabenseifner's (ICCS 2004).
 */
#include <stdlib.h>

#include "coll/reduce_scatter/reduce_scatter.h"

/* First real rank of new rank i (i == p gives n). */
static size_t real_start(int i, int rem)
{
    return (size_t)(i < rem ? 2 * i : i + rem);
}

static int new_to_real(int i, int rem)
{
    return i < rem ? 2 * i + 1 : i + rem;
}

double glucx_reduce_scatter_halving_cost(const glucx_topo_t *topo, size_t bytes)
{
    const int n = topo->size;
    int lg = 0;
    while ((2 << lg) <= n)
        lg++;
    const int p = 1 << lg, rem = n - p;
    const double m = (double)bytes, g = topo->gamma_ns_per_byte;
    /* distance 2^k moves 2^k / p of m (the largest, m / 2, at the first step, d = p / 2) */
    double t = (double)(p - 1) / p * m * g;
    for (int k = 0; k < lg; k++) {
        const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_XOR, k);
        t += l.alpha_ns + (double)(1 << k) / p * m * l.beta_ns_per_byte;
    }
    if (rem > 0) {
        const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_XOR, 0);
        t += 2 * l.alpha_ns + m * l.beta_ns_per_byte + m * g + m / n * l.beta_ns_per_byte;
    }
    return t;
}

glucx_status_t glucx_reduce_scatter_halving_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t count = ctx->args->count, es = ctx->esize;
    const char *in = ctx->sendbuf;
    char *out = ctx->recvbuf;
    if (n == 1) {
        glucx_coll_copy(out, in, count * es);
        return GLUCX_OK;
    }
    int lg = 0;
    while ((2 << lg) <= n)
        lg++;
    const int p = 1 << lg, rem = n - p;
    const size_t blk = count * es;
    const unsigned last_step = (unsigned)lg + 1;
    glucx_status_t st;

    if (r < 2 * rem && r % 2 == 0) {
        /* folded out: hand everything to r + 1, get the own block back at the end */
        glucx_tx_req_t reqs[2];
        st = glucx_coll_irecv(ctx, r + 1, last_step, out, blk, &reqs[0]);
        if (st == GLUCX_OK)
            st = glucx_coll_isend(ctx, r + 1, 0, in, (size_t)n * blk, &reqs[1]);
        return st == GLUCX_OK ? glucx_coll_waitall(ctx, reqs, 2) : st;
    }
    const int folded = r < 2 * rem;
    const int newrank = folded ? r / 2 : r - rem;

    /* the range kept at the first halving bounds the scratch */
    const int d0 = p / 2;
    const int k0_lo = (newrank & d0) ? d0 : 0, k0_hi = k0_lo + d0;
    const size_t keep0 = (real_start(k0_hi, rem) - real_start(k0_lo, rem)) * count;
    /* work holds this rank's partial results: the whole vector after a fold, else the first
     * kept half (element base `base`); not needed when the only combine goes to recvbuf */
    const size_t work_elems = folded ? (size_t)n * count : (lg > 1 ? keep0 : 0);
    const size_t base = folded ? 0 : real_start(k0_lo, rem) * count;
    char *scratch = glucx_coll_malloc(ctx, (work_elems + keep0) * es, &st);
    if (scratch == NULL)
        return st;
    char *work = scratch, *rbuf = scratch + work_elems * es;

    const char *cur = in; /* this rank's current data, addressed by absolute element */
    size_t cur_base = 0;
    if (folded) {
        st = glucx_coll_sendrecv(ctx, -1, NULL, 0, r - 1, work, (size_t)n * blk, 0);
        if (st != GLUCX_OK)
            goto out;
        glucx_coll_reduce(ctx, work, work, in, (size_t)n * count); /* rank r-1 is lower */
        cur = work;
    }

    int lo = 0, hi = p;
    for (int k = 0; k < lg; k++) {
        const int d = p >> (k + 1);
        const int peer_new = newrank ^ d, peer = new_to_real(peer_new, rem);
        int klo, khi, slo, shi;
        if (newrank & d) {
            klo = lo + d, khi = hi, slo = lo, shi = lo + d;
        } else {
            klo = lo, khi = lo + d, slo = lo + d, shi = hi;
        }
        const size_t ke0 = real_start(klo, rem) * count, ke1 = real_start(khi, rem) * count;
        const size_t se0 = real_start(slo, rem) * count, se1 = real_start(shi, rem) * count;
        st = glucx_coll_sendrecv(ctx, peer, cur + (se0 - cur_base) * es, (se1 - se0) * es, peer,
                                 rbuf, (ke1 - ke0) * es, (unsigned)k + 1);
        if (st != GLUCX_OK)
            goto out;
        const char *mine = cur + (ke0 - cur_base) * es;
        char *dst = (k == lg - 1 && !folded) ? out : work + (ke0 - base) * es;
        if (peer_new < newrank)
            glucx_coll_reduce(ctx, dst, rbuf, mine, ke1 - ke0);
        else
            glucx_coll_reduce(ctx, dst, mine, rbuf, ke1 - ke0);
        cur = work;
        cur_base = base;
        lo = klo;
        hi = khi;
    }

    if (folded) {
        /* this rank holds blocks r-1 and r: return r-1's, keep its own */
        glucx_tx_req_t req;
        st = glucx_coll_isend(ctx, r - 1, last_step, work + (size_t)(r - 1) * blk, blk, &req);
        if (st != GLUCX_OK)
            goto out;
        glucx_coll_copy(out, work + (size_t)r * blk, blk);
        st = glucx_coll_waitall(ctx, &req, 1);
    }
out:
    free(scratch);
    return st;
}
