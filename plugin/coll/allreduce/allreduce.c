/* allreduce: algorithm table. */
#include "coll/allreduce/allreduce.h"

static const glucx_coll_alg_t algs[GLUCX_ALLREDUCE_ALG_COUNT] = {
    [GLUCX_ALLREDUCE_RECURSIVE_DOUBLING] = {"recursive_doubling",
                                            "recursive doubling on whole vectors, log2(n) steps, "
                                            "for small messages (Thakur, Rabenseifner & Gropp "
                                            "2005)",
                                            glucx_allreduce_recursive_doubling_cost,
                                            glucx_allreduce_recursive_doubling_run},
    [GLUCX_ALLREDUCE_RING] = {"ring",
                              "pipelined ring reduce-scatter + allgather, bandwidth-optimal for "
                              "large messages (Patarasuk & Yuan 2009)",
                              glucx_allreduce_ring_cost, glucx_allreduce_ring_run},
    [GLUCX_ALLREDUCE_RABENSEIFNER] = {"rabenseifner",
                                      "recursive-halving reduce-scatter + recursive-doubling "
                                      "allgather, for medium/large messages (Rabenseifner 2004)",
                                      glucx_allreduce_rabenseifner_cost,
                                      glucx_allreduce_rabenseifner_run},
    [GLUCX_ALLREDUCE_HIERARCHICAL] = {"hierarchical",
                                      "reduce-scatter inside the package, allreduce of each "
                                      "rank's share along each outer dimension, allgather inside "
                                      "(two-level allreduce, Horovod/NCCL hierarchical)",
                                      glucx_allreduce_hierarchical_cost,
                                      glucx_allreduce_hierarchical_run},
    [GLUCX_ALLREDUCE_TORUS] = {"torus",
                               "reduce-scatter along every dimension in turn, allgather back "
                               "(2D/3D-torus allreduce, Mikami et al. 2018)",
                               glucx_allreduce_torus_cost, glucx_allreduce_torus_run},
    [GLUCX_ALLREDUCE_TORUS_ROTATED] = {"torus_rotated",
                                       "the torus allreduce with each package rank's share "
                                       "starting in a different dimension, so all dimensions' "
                                       "links work at once (after Themis, ISCA 2022)",
                                       glucx_allreduce_torus_rotated_cost,
                                       glucx_allreduce_torus_rotated_run},
};

const glucx_coll_table_t glucx_allreduce_table = {algs, GLUCX_ALLREDUCE_ALG_COUNT};

glucx_status_t glucx_allreduce_fold_out(glucx_coll_ctx_t *ctx, const void *in, void *out,
                                        size_t bytes, unsigned last_step)
{
    const int partner = ctx->rank + 1;
    glucx_status_t st;
    if (ctx->in_place) { /* out is the send buffer: receive only once the send is done */
        st = glucx_coll_sendrecv(ctx, partner, in, bytes, -1, NULL, 0, 0);
        return st == GLUCX_OK
                   ? glucx_coll_sendrecv(ctx, -1, NULL, 0, partner, out, bytes, last_step)
                   : st;
    }
    glucx_tx_req_t reqs[2];
    st = glucx_coll_irecv(ctx, partner, last_step, out, bytes, &reqs[0]);
    if (st == GLUCX_OK)
        st = glucx_coll_isend(ctx, partner, 0, in, bytes, &reqs[1]);
    return st == GLUCX_OK ? glucx_coll_waitall(ctx, reqs, 2) : st;
}
