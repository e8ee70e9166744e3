/*
 * Alltoallv, linear (all posted at once).
 *
 * Post the n-1 receives, then the n-1 sends (to rank+1, rank+2, ... so that the ranks do not
 * all start with the same destination), copy the own block, wait for everything. No step
 * waits for a slow peer, at the price of n-1 messages in flight per rank; zero-count blocks
 * still travel as zero-byte messages (see pairwise.c). Any n.
 *
 * Cost, with b = bytes / n the mean block: (n-1) (alpha + b beta) + b copy — the messages of
 * one rank leave and arrive one after the other, as in pairwise; the model does not capture
 * the skew tolerance that is linear's advantage nor the contention that is its risk.
 * Topology: none assumed.
 * Source: the "basic linear" alltoall(v) of MPI implementations (e.g. Open MPI's coll/basic);
 * compared with pairwise exchange in Thakur, Rabenseifner & Gropp (IJHPCA 2005).
 */
#include <stdlib.h>

#include "coll/alltoallv/alltoallv.h"

double glucx_alltoallv_linear_cost(const glucx_topo_t *topo, size_t bytes)
{
    /* every pair at once: charged as the pairwise steps (the same messages on the same routes),
     * summed on the topology's routes (glucx_topo_pairwise_cost) */
    const glucx_link_cost_t sum = glucx_topo_pairwise_cost(topo);
    const double b = (double)bytes / topo->size;
    return sum.alpha_ns + b * sum.beta_ns_per_byte + b * topo->copy_ns_per_byte;
}

/* buf + off, without arithmetic on a NULL buf. */
static char *at(const void *buf, size_t off)
{
    return off ? (char *)buf + off : (char *)buf;
}

glucx_status_t glucx_alltoallv_linear_run(glucx_coll_ctx_t *ctx)
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
    glucx_tx_req_t *reqs = glucx_coll_malloc(ctx, sizeof(*reqs) * 2 * (size_t)(n - 1), &st);
    if (reqs == NULL)
        return st;
    int k = 0;
    for (int i = 1; i < n && st == GLUCX_OK; i++) {
        const int src = (r - i + n) % n;
        st = glucx_coll_irecv(ctx, src, 0, at(ctx->recvbuf, a->displs[src] * es),
                              a->counts[src] * es, &reqs[k++]);
    }
    for (int i = 1; i < n && st == GLUCX_OK; i++) {
        const int dst = (r + i) % n;
        st = glucx_coll_isend(ctx, dst, 0, at(ctx->sendbuf, a->send_displs[dst] * es),
                              a->send_counts[dst] * es, &reqs[k++]);
    }
    if (st == GLUCX_OK) {
        glucx_alltoallv_copy_self(ctx);
        st = glucx_coll_waitall(ctx, reqs, k);
    }
    free(reqs);
    return st;
}
