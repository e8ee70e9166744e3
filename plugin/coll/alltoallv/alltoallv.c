/* alltoallv: algorithm table and the local part shared by the algorithms. */
#include "coll/alltoallv/alltoallv.h"

static const glucx_coll_alg_t algs[GLUCX_ALLTOALLV_ALG_COUNT] = {
    [GLUCX_ALLTOALLV_PAIRWISE] = {"pairwise",
                                  "n-1 steps, step k sends to rank+k and receives from rank-k "
                                  "(Thakur, Rabenseifner & Gropp 2005)",
                                  glucx_alltoallv_pairwise_cost, glucx_alltoallv_pairwise_run},
    [GLUCX_ALLTOALLV_LINEAR] = {"linear",
                                "all n-1 receives then all n-1 sends posted at once, one wait",
                                glucx_alltoallv_linear_cost, glucx_alltoallv_linear_run},
    [GLUCX_ALLTOALLV_HIERARCHICAL] =
        {"hierarchical",
         "counts exchanged in the package, alltoallv inside aggregated "
         "per destination package, then one message per package pair "
         "and local rank across (Traff & Rougier 2014)",
         glucx_alltoallv_hierarchical_cost, glucx_alltoallv_hierarchical_run},
};

const glucx_coll_table_t glucx_alltoallv_table = {algs, GLUCX_ALLTOALLV_ALG_COUNT};

glucx_status_t glucx_alltoallv_check_self(glucx_coll_ctx_t *ctx)
{
    const glucx_coll_args_t *a = ctx->args;
    const int r = ctx->rank;
    if (a->send_counts[r] != a->counts[r])
        return glucx_coll_fail(ctx, GLUCX_ERR_MISMATCH,
                               "send_counts[%d]=%zu but counts[%d]=%zu elements of %s: this "
                               "rank's block to itself must have one size",
                               r, a->send_counts[r], r, a->counts[r], glucx_dtype_name(a->dtype));
    return GLUCX_OK;
}

void glucx_alltoallv_copy_self(glucx_coll_ctx_t *ctx)
{
    const glucx_coll_args_t *a = ctx->args;
    const int r = ctx->rank;
    const size_t es = ctx->esize, bytes = a->counts[r] * es;
    if (bytes > 0)
        glucx_coll_copy((char *)ctx->recvbuf + a->displs[r] * es,
                        (const char *)ctx->sendbuf + a->send_displs[r] * es, bytes);
}
