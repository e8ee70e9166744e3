/*
 * Alltoallv, pairwise exchange.
 *
 * Step k = 1 .. n-1: send send_counts[rank+k] elements to rank+k, receive counts[rank-k] from
 * rank-k (mod n), the receive posted first; the own block is copied locally during step 1.
 * Zero-count blocks still travel as zero-byte messages, so that a receiver whose count does not
 * match the sender's always sees it (GLUCX_ERR_MISMATCH) instead of waiting. Any n.
 *
 * Cost, with b = bytes / n the mean block (the `bytes` of cost() is the total received):
 *   (n-1) (alpha + b beta) + b copy
 * Topology: none assumed.
 * Source: the pairwise-exchange alltoall(v) of Thakur, Rabenseifner & Gropp, "Optimization of
 * Collective Communication Operations in MPICH" (IJHPCA 2005).
 */
#include "coll/alltoallv/alltoallv.h"

double glucx_alltoallv_pairwise_cost(const glucx_topo_t *topo, size_t bytes)
{
    /* the n - 1 steps (r + k for k = 1 .. n-1), summed on the topology's routes
     * (glucx_topo_pairwise_cost) */
    const glucx_link_cost_t sum = glucx_topo_pairwise_cost(topo);
    const double b = (double)bytes / topo->size;
    return sum.alpha_ns + b * sum.beta_ns_per_byte + b * topo->copy_ns_per_byte;
}

/* buf + off, without arithmetic on a NULL buf (nothing to move: every offset may be 0). */
static char *at(const void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

glucx_status_t glucx_alltoallv_pairwise_run(glucx_coll_ctx_t *ctx)
{
    const glucx_coll_args_t *a = ctx->args;
    const int n = ctx->size, r = ctx->rank;
    const size_t es = ctx->esize;
    glucx_status_t st = glucx_alltoallv_check_self(ctx);
    if (st != GLUCX_OK)
        return st;
    if (n == 1) {
        glucx_alltoallv_copy_self(ctx);
        return GLUCX_OK;
    }
    for (int k = 1; k < n; k++) {
        const int dst = (r + k) % n, src = (r - k + n) % n;
        glucx_tx_req_t reqs[2];
        st = glucx_coll_irecv(ctx, src, (unsigned)k, at(ctx->recvbuf, a->displs[src] * es),
                              a->counts[src] * es, &reqs[0]);
        if (st == GLUCX_OK)
            st = glucx_coll_isend(ctx, dst, (unsigned)k, at(ctx->sendbuf, a->send_displs[dst] * es),
                                  a->send_counts[dst] * es, &reqs[1]);
        if (st != GLUCX_OK)
            return st;
        if (k == 1)
            glucx_alltoallv_copy_self(ctx);
        st = glucx_coll_waitall(ctx, reqs, 2);
        if (st != GLUCX_OK)
            return st;
    }
    return GLUCX_OK;
}
