/*
 * Case "invalid": calls with invalid arguments return GLUCX_ERR_INVALID_ARG at once, with a
 * message, without any traffic and without failing the communicator. Rank 0 makes every invalid
 * call twice, the last rank once, the others not at all: had any of them consumed a collective
 * sequence number or sent something, the good collectives that follow would not match.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"

static int expect_invalid(glucx_status_t st, const char *what, const char *name_in_text)
{
    if (ITEST_STATUS(st, GLUCX_ERR_INVALID_ARG, "%s", what) != 0)
        return -1;
    const char *text = glucx_last_error();
    if (text[0] == '\0') {
        ITEST_FAIL("%s: no error text", what);
        return -1;
    }
    if (name_in_text != NULL && strstr(text, name_in_text) == NULL) {
        ITEST_FAIL("%s: the error text does not name '%s': \"%s\"", what, name_in_text, text);
        return -1;
    }
    return 0;
}

#define INVALID(expr, name) rc |= expect_invalid((expr), #expr, (name))

static int invalid_calls(glucx_comm_t *comm)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    int32_t a[64] = {0}, b[64 * ITEST_MAX_RANKS] = {0};
    const glucx_dtype_t I32 = GLUCX_DTYPE_I32;
    const glucx_op_t SUM = GLUCX_OP_SUM;
    int rc = 0;

    /* NULL buffers with non-zero counts */
    INVALID(glucx_allreduce(comm, NULL, b, 10, I32, SUM, NULL), "allreduce");
    INVALID(glucx_allreduce(comm, a, NULL, 10, I32, SUM, NULL), "allreduce");
    INVALID(glucx_allreduce(comm, GLUCX_IN_PLACE, NULL, 10, I32, SUM, NULL), "allreduce");
    INVALID(glucx_allgather(comm, a, NULL, 10, I32, NULL), "allgather");
    INVALID(glucx_allgather(comm, NULL, b, 10, I32, NULL), "allgather");
    INVALID(glucx_reduce_scatter(comm, NULL, b, 10, I32, SUM, NULL), "reduce_scatter");
    INVALID(glucx_alltoall(comm, a, NULL, 10, I32, NULL), "alltoall");
    INVALID(glucx_broadcast(comm, NULL, 10, I32, 0, NULL), "broadcast");
    INVALID(glucx_reduce(comm, NULL, b, 10, I32, SUM, 0, NULL), "reduce");
    INVALID(glucx_gather(comm, NULL, b, 10, I32, 0, NULL), "gather");
    INVALID(glucx_scatter(comm, a, NULL, 10, I32, 0, NULL), "scatter");
    if (rank == 0) /* the root's recvbuf and the root's sendbuf are significant */
        INVALID(glucx_gather(comm, a, NULL, 10, I32, 0, NULL), "gather");
    if (rank == 0)
        INVALID(glucx_scatter(comm, NULL, b, 10, I32, 0, NULL), "scatter");
    if (rank == 0)
        INVALID(glucx_reduce(comm, a, NULL, 10, I32, SUM, 0, NULL), "reduce");

    /* root out of range */
    INVALID(glucx_broadcast(comm, a, 10, I32, -1, NULL), "broadcast");
    INVALID(glucx_broadcast(comm, a, 10, I32, n, NULL), "broadcast");
    INVALID(glucx_reduce(comm, a, b, 10, I32, SUM, n, NULL), "reduce");
    INVALID(glucx_gather(comm, a, b, 10, I32, -1, NULL), "gather");
    INVALID(glucx_scatter(comm, b, a, 10, I32, n + 5, NULL), "scatter");

    /* unknown algorithm, bad options */
    glucx_coll_opts_t bad_alg = {.field_mask = GLUCX_COLL_OPT_ALGORITHM,
                                 .algorithm = "no_such_algorithm"};
    INVALID(glucx_allreduce(comm, a, b, 10, I32, SUM, &bad_alg), "allreduce");
    INVALID(glucx_barrier(comm, &bad_alg), "barrier");
    glucx_coll_opts_t bad_timeout = {.field_mask = GLUCX_COLL_OPT_TIMEOUT, .timeout_ms = 0};
    INVALID(glucx_allreduce(comm, a, b, 10, I32, SUM, &bad_timeout), "allreduce");
    bad_timeout.timeout_ms = -5;
    INVALID(glucx_barrier(comm, &bad_timeout), "barrier");

    /* dtype/op not supported, invalid enums */
    INVALID(glucx_allreduce(comm, a, b, 10, I32, GLUCX_OP_AVG, NULL), "allreduce");
    INVALID(glucx_allreduce(comm, a, b, 10, GLUCX_DTYPE_F32, GLUCX_OP_BXOR, NULL), "allreduce");
    INVALID(glucx_reduce_scatter(comm, b, a, 2, GLUCX_DTYPE_F64, GLUCX_OP_BAND, NULL),
            "reduce_scatter");
    INVALID(glucx_reduce(comm, a, b, 10, GLUCX_DTYPE_BF16, GLUCX_OP_BOR, 0, NULL), "reduce");
    INVALID(glucx_allreduce(comm, a, b, 10, GLUCX_DTYPE_COUNT, SUM, NULL), "allreduce");
    INVALID(glucx_allreduce(comm, a, b, 10, (glucx_dtype_t)-1, SUM, NULL), "allreduce");
    INVALID(glucx_allreduce(comm, a, b, 10, I32, GLUCX_OP_COUNT, NULL), "allreduce");
    INVALID(glucx_allgather(comm, a, b, 10, GLUCX_DTYPE_COUNT, NULL), "allgather");
    glucx_coll_args_t bad_coll = {
        .coll = GLUCX_COLL_COUNT, .sendbuf = a, .recvbuf = b, .count = 1, .dtype = I32};
    INVALID(glucx_coll(comm, &bad_coll, NULL), NULL);
    INVALID(glucx_coll(comm, NULL, NULL), NULL);

    /* count overflow (the buffers are small: nothing may be touched) */
    INVALID(glucx_allreduce(comm, a, b, SIZE_MAX / 2, GLUCX_DTYPE_F64, SUM, NULL), "allreduce");
    INVALID(glucx_allreduce(comm, a, b, SIZE_MAX, GLUCX_DTYPE_U8, SUM, NULL), "allreduce");
    INVALID(glucx_allgather(comm, a, b, SIZE_MAX / (size_t)n + 1, GLUCX_DTYPE_U8, NULL),
            "allgather");
    INVALID(glucx_alltoall(comm, a, b, SIZE_MAX / 4, GLUCX_DTYPE_I32, NULL), "alltoall");
    INVALID(glucx_broadcast(comm, a, SIZE_MAX / 8 + 1, GLUCX_DTYPE_F64, 0, NULL), "broadcast");
    size_t huge_counts[ITEST_MAX_RANKS], zero_displs[ITEST_MAX_RANKS];
    for (int r = 0; r < n; r++) {
        huge_counts[r] = SIZE_MAX - 1;
        zero_displs[r] = 2;
    }
    INVALID(glucx_allgatherv(comm, a, b, huge_counts, zero_displs, I32, NULL), "allgatherv");

    /* in place where it is not allowed; missing count arrays */
    size_t counts[ITEST_MAX_RANKS], displs[ITEST_MAX_RANKS];
    for (int r = 0; r < n; r++) {
        counts[r] = 1;
        displs[r] = (size_t)r;
    }
    INVALID(glucx_alltoallv(comm, GLUCX_IN_PLACE, counts, displs, b, counts, displs, I32, NULL),
            "alltoallv");
    INVALID(glucx_alltoallv(comm, a, NULL, displs, b, counts, displs, I32, NULL), "alltoallv");
    INVALID(glucx_allgatherv(comm, a, b, NULL, displs, I32, NULL), "allgatherv");
    INVALID(glucx_allgatherv(comm, a, b, counts, NULL, I32, NULL), "allgatherv");
    INVALID(glucx_scatter(comm, GLUCX_IN_PLACE, b, 1, I32, 0, NULL), "scatter");
    if (rank != 0) {
        INVALID(glucx_reduce(comm, GLUCX_IN_PLACE, b, 1, I32, SUM, 0, NULL), "reduce");
        INVALID(glucx_gather(comm, GLUCX_IN_PLACE, b, 1, I32, 0, NULL), "gather");
    }

    /* a started collective with invalid arguments is refused and yields no request */
    glucx_request_t *req = NULL;
    glucx_coll_args_t bad_start = {.coll = GLUCX_COLL_ALLREDUCE,
                                   .sendbuf = a,
                                   .recvbuf = NULL,
                                   .count = 4,
                                   .dtype = I32,
                                   .op = SUM};
    INVALID(glucx_coll_start(comm, &bad_start, NULL, &req), "allreduce");
    ITEST_CHECK(req == NULL, "glucx_coll_start wrote a request on failure");
    glucx_coll_args_t good = {.coll = GLUCX_COLL_BARRIER};
    INVALID(glucx_coll_start(comm, &good, NULL, NULL), NULL);

    /* point-to-point */
    INVALID(glucx_isend(comm, a, 4, 0, GLUCX_TAG_MAX + 1, &req), "isend");
    INVALID(glucx_irecv(comm, a, 4, 0, UINT64_MAX, &req), "irecv");
    INVALID(glucx_isend(comm, a, 4, -1, 1, &req), "isend");
    INVALID(glucx_isend(comm, a, 4, n, 1, &req), "isend");
    INVALID(glucx_irecv(comm, a, 4, n + 3, 1, &req), "irecv");
    INVALID(glucx_isend(comm, NULL, 10, 0, 1, &req), "isend");
    INVALID(glucx_irecv(comm, NULL, 10, 0, 1, &req), "irecv");
    INVALID(glucx_isend(comm, a, 4, 0, 1, NULL), "isend");
    int bad_peers[3] = {0, n, 0};
    INVALID(glucx_irecv_any(comm, a, 4, bad_peers, 3, 1, &req), "irecv_any");
    INVALID(glucx_irecv_any(comm, a, 4, bad_peers, 0, 1, &req), "irecv_any");
    INVALID(glucx_irecv_any(comm, a, 4, NULL, 2, 1, &req), "irecv_any");
    ITEST_CHECK(req == NULL, "a refused p2p call wrote a request");

    /* misc */
    char buf[64];
    INVALID(glucx_comm_peer_transport(comm, n, buf, sizeof(buf)), NULL);
    INVALID(glucx_comm_peer_transport(comm, -1, buf, sizeof(buf)), NULL);
    INVALID(glucx_allreduce(NULL, a, b, 1, I32, SUM, NULL), NULL);
    INVALID(glucx_request_wait(NULL, 10), NULL);
    INVALID(glucx_request_test(NULL), NULL);
    INVALID(glucx_request_cancel(NULL), NULL);
    return rc;
}

int itest_case_invalid(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "invalid", glucx_test_ms(30000), &ctx, &store, &comm) !=
        GLUCX_OK)
        return -1;
    int rc = 0;
    int rounds = rank == 0 ? 2 : rank == size - 1 ? 1 : 0;
    int64_t t0 = itest_now_ns();
    for (int i = 0; i < rounds; i++)
        rc |= invalid_calls(comm);
    int64_t ms = (itest_now_ns() - t0) / 1000000;
    ITEST_CHECK(ms < glucx_test_ms(2000), "%d rounds of invalid calls took %lld ms", rounds,
                (long long)ms);

    /* the communicator is healthy and in step: good collectives and p2p work */
    char text[512] = "";
    glucx_comm_last_error(comm, text, sizeof(text));
    if (rounds > 0)
        ITEST_CHECK(text[0] != '\0', "glucx_comm_last_error is empty after invalid calls");
    enum { C = 1000 };
    int32_t *in = malloc(C * 4), *out = malloc(C * 4), *want = malloc(C * 4);
    if (in == NULL || out == NULL || want == NULL) {
        rc = -1;
        goto out;
    }
    for (int i = 0; i < C; i++) {
        in[i] = rank * 1000 + i;
        want[i] = 0;
        for (int r = 0; r < size; r++)
            want[i] += r * 1000 + i;
    }
    if (ITEST_STATUS(glucx_allreduce(comm, in, out, C, GLUCX_DTYPE_I32, GLUCX_OP_SUM, NULL),
                     GLUCX_OK, "good allreduce after the invalid calls") == 0)
        rc |=
            itest_compare("good allreduce after the invalid calls", GLUCX_DTYPE_I32, out, want, C);
    else
        rc = -1;
    for (int i = 0; i < C; i++)
        want[i] = out[i] = (size - 1) * 7 + i;
    if (rank != size - 1)
        memset(out, 0, C * 4);
    if (ITEST_STATUS(glucx_broadcast(comm, out, C, GLUCX_DTYPE_I32, size - 1, NULL), GLUCX_OK,
                     "good broadcast after the invalid calls") == 0)
        rc |=
            itest_compare("good broadcast after the invalid calls", GLUCX_DTYPE_I32, out, want, C);
    else
        rc = -1;
    glucx_request_t *sr = NULL, *rr = NULL;
    int32_t sv = rank + 100, rv = -1;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (ITEST_STATUS(glucx_irecv(comm, &rv, 4, prev, 5, &rr), GLUCX_OK, "irecv") ||
        ITEST_STATUS(glucx_isend(comm, &sv, 4, next, 5, &sr), GLUCX_OK, "isend") ||
        ITEST_STATUS(glucx_request_wait(rr, glucx_test_ms(30000)), GLUCX_OK, "wait irecv") ||
        ITEST_STATUS(glucx_request_wait(sr, glucx_test_ms(30000)), GLUCX_OK, "wait isend"))
        rc = -1;
    else
        ITEST_CHECK(rv == prev + 100, "p2p after the invalid calls: got %d from rank %d", rv, prev);
    glucx_request_free(rr);
    glucx_request_free(sr);
out:
    free(in);
    free(out);
    free(want);
    itest_close(ctx, store, comm);
    return rc;
}
