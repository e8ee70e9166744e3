/*
 * Alltoall, pairwise exchange.
 *
 * Step k = 1 .. n-1: send the block for rank+k, receive the block from rank-k (mod n), the
 * receive posted first. Every rank talks to one peer per step, so no receiver is flooded, and
 * each block crosses the network exactly once: every rank sends exactly (n-1) blocks. The own
 * block is copied locally during the first step. Any n.
 *
 * Cost, b = block bytes, m = n b (the `bytes` of cost()), n ranks:
 *   (n-1) (alpha + b beta) + b copy, each step's alpha and beta those of the pattern r + k on
 *   the topology's routes (glucx_topo_pairwise_cost)
 * Topology: none assumed.
 * Source: the pairwise-exchange alltoall of Thakur, Rabenseifner & Gropp, "Optimization of
 * Collective Communication Operations in MPICH" (IJHPCA 2005), MPICH's long-message alltoall
 * (which pairs rank XOR k for power-of-two n; rank +/- k works for every n).
 */
#include "coll/alltoall/alltoall.h"

double glucx_alltoall_pairwise_cost(const glucx_topo_t *topo, size_t bytes)
{
    /* the n - 1 steps (r + k for k = 1 .. n-1), summed on the topology's routes */
    const glucx_link_cost_t sum = glucx_topo_pairwise_cost(topo);
    const double b = (double)bytes / topo->size;
    return sum.alpha_ns + b * sum.beta_ns_per_byte + b * topo->copy_ns_per_byte;
}

/* buf + off, without arithmetic on a NULL buf (count 0: every offset is 0). */
static char *at(const void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

glucx_status_t glucx_alltoall_pairwise_run(glucx_coll_ctx_t *ctx)
{
    const int n = ctx->size, r = ctx->rank;
    const size_t b = ctx->args->count * ctx->esize;
    const void *in = ctx->sendbuf; /* never overlaps recvbuf: the core copies in-place input */
    void *out = ctx->recvbuf;
    if (n == 1) {
        glucx_coll_copy(out, in, b);
        return GLUCX_OK;
    }
    for (int k = 1; k < n; k++) {
        const int dst = (r + k) % n, src = (r - k + n) % n;
        glucx_tx_req_t reqs[2];
        glucx_status_t st =
            glucx_coll_irecv(ctx, src, (unsigned)k, at(out, (size_t)src * b), b, &reqs[0]);
        if (st == GLUCX_OK)
            st = glucx_coll_isend(ctx, dst, (unsigned)k, at(in, (size_t)dst * b), b, &reqs[1]);
        if (st != GLUCX_OK)
            return st;
        if (k == 1)
            glucx_coll_copy(at(out, (size_t)r * b), at(in, (size_t)r * b), b);
        st = glucx_coll_waitall(ctx, reqs, 2);
        if (st != GLUCX_OK)
            return st;
    }
    return GLUCX_OK;
}
