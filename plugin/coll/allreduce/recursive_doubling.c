/*
 * Allreduce, recursive doubling (any number of ranks).
 *
 * With p = 2^floor(log2 n) and rem = n - p, the first 2*rem ranks fold in pairs: the even one
 * sends its vector to the odd one above it and waits for the result. The p remaining ranks (new
 * rank i stands for real ranks 2i, 2i+1 when i < rem, else i + rem) exchange whole vectors with
 * new rank XOR d for d = 1, 2, ..., p/2 and combine them. Both partners combine the same two
 * operands in the same order (the lower new rank's, i.e. the lower contiguous group of real
 * ranks', first), so every rank ends with bitwise the same result, bracketed as
 * ((x0 x1)(x2 x3))((x4 x5)(x6 x7)). The first combine reads sendbuf directly: no input copy.
 *
 * Cost, m = message bytes, n ranks, p and rem as above:
 *   log2(p) (alpha + m beta + m gamma) + if rem > 0: 2 (alpha + m beta) + m gamma,
 * each step's alpha and beta those of the pattern r XOR d on the topology's routes
 * (glucx_topo_step_cost; the fold as distance 1; with a non-power-of-two n the new ranks'
 * partners are approximated by the real ranks').
 * Latency-optimal, moves m per step: the small-message choice.
 * Topology: a hypercube; the last steps pair distant ranks (across packages).
 * Source: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
 * MPICH" (IJHPCA 2005), MPICH's short-message allreduce, with its fold of the extra ranks.
 */
#include <stdlib.h>

#include "coll/allreduce/allreduce.h"

double glucx_allreduce_recursive_doubling_cost(const glucx_topo_t *topo, size_t bytes)
{
    const int n = topo->size, lg = glucx_allreduce_floor_log2(n);
    const double m = (double)bytes, g = topo->gamma_ns_per_byte;
    double t = 0.0;
    for (int k = 0; k < lg; k++) {
        const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_XOR, k);
        t += l.alpha_ns + m * l.beta_ns_per_byte + m * g;
    }
    if (n != 1 << lg) {
        const glucx_link_cost_t l = glucx_topo_step_cost(topo, GLUCX_PATTERN_XOR, 0);
        t += 2 * (l.alpha_ns + m * l.beta_ns_per_byte) + m * g;
    }
    return t;
}

glucx_status_t glucx_allreduce_recursive_doubling_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t count = ctx->args->count, bytes = count * ctx->esize;
    const char *in = ctx->sendbuf;
    char *out = ctx->recvbuf;
    if (n == 1) {
        glucx_coll_copy(out, in, bytes);
        return GLUCX_OK;
    }
    const int lg = glucx_allreduce_floor_log2(n), p = 1 << lg, rem = n - p;
    const unsigned last_step = (unsigned)lg + 1;
    glucx_status_t st;

    if (r < 2 * rem && r % 2 == 0) {
        /* folded out: contribute, then receive the result */
        return glucx_allreduce_fold_out(ctx, in, out, bytes, last_step);
    }
    const int folded = r < 2 * rem;
    const int newrank = folded ? r / 2 : r - rem;
    char *tmp = glucx_coll_malloc(ctx, bytes, &st);
    if (tmp == NULL)
        return st;

    const char *cur = in;
    if (folded) {
        st = glucx_coll_sendrecv(ctx, -1, NULL, 0, r - 1, tmp, bytes, 0);
        if (st != GLUCX_OK)
            goto out;
        glucx_coll_reduce(ctx, out, tmp, in, count); /* rank r-1 is lower */
        cur = out;
    }
    unsigned step = 1;
    for (int d = 1; d < p; d <<= 1, step++) {
        const int peer_new = newrank ^ d;
        const int peer = peer_new < rem ? 2 * peer_new + 1 : peer_new + rem;
        st = glucx_coll_sendrecv(ctx, peer, cur, bytes, peer, tmp, bytes, step);
        if (st != GLUCX_OK)
            goto out;
        if (peer_new < newrank)
            glucx_coll_reduce(ctx, out, tmp, cur, count);
        else
            glucx_coll_reduce(ctx, out, cur, tmp, count);
        cur = out;
    }
    if (folded)
        st = glucx_coll_sendrecv(ctx, r - 1, out, bytes, -1, NULL, 0, last_step);
out:
    free(tmp);
    return st;
}
