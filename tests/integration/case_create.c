/*
 * Case "create": communicator creation errors.
 * - The last rank runs with a different GLUCX_TUNE: every rank gets GLUCX_ERR_MISMATCH from
 *   glucx_comm_create, the others with a message that names that rank (it names rank 0).
 * - The last rank never shows up (communicator timeout 1 s): every other rank gets
 *   GLUCX_ERR_TIMEOUT naming it, in about a second.
 * - Afterwards a communicator of every rank is created and works.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"

static int names(const char *text, int r)
{
    char word[32];
    snprintf(word, sizeof(word), "rank %d", r);
    for (const char *p = strstr(text, word); p != NULL; p = strstr(p + 1, word))
        if (p[strlen(word)] < '0' || p[strlen(word)] > '9')
            return 1;
    return 0;
}

static glucx_status_t try_create(glucx_context_t *ctx, glucx_store_t *store, int rank, int size,
                                 const char *name, int64_t timeout_ms, glucx_comm_t **comm_p,
                                 int64_t *ms_p)
{
    glucx_comm_params_t params = {.field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
                                  .rank = rank,
                                  .size = size,
                                  .store = store,
                                  .name = name,
                                  .timeout_ms = timeout_ms};
    *comm_p = NULL;
    int64_t t0 = itest_now_ns();
    glucx_status_t st = glucx_comm_create(ctx, &params, comm_p);
    *ms_p = (itest_now_ns() - t0) / 1000000;
    return st;
}

int itest_case_create(const itest_env_t *env, int rank, int size)
{
    itest_shared_t *sh = env->shared;
    const int odd = size - 1;
    int rc = 0;
    itest_apply_variant(env);
    glucx_store_t *store = NULL;
    if (ITEST_STATUS(glucx_store_file_create(env->store_dir, &store), GLUCX_OK, "store"))
        return -1;

    /* 1. a different GLUCX_TUNE on the last rank */
    char tune[128];
    const char *alg = itest_algs(GLUCX_COLL_ALLREDUCE)[0];
    snprintf(tune, sizeof(tune), "allreduce:0-4K:%s", alg);
    if (rank == odd)
        setenv("GLUCX_TUNE", tune, 1);
    else
        unsetenv("GLUCX_TUNE");
    glucx_context_t *ctx = NULL;
    if (ITEST_STATUS(glucx_context_create(NULL, &ctx), GLUCX_OK, "context_create (GLUCX_TUNE=%s)",
                     rank == odd ? tune : "")) {
        glucx_store_destroy(store);
        return -1;
    }
    glucx_comm_t *comm = NULL;
    int64_t ms;
    glucx_status_t st =
        try_create(ctx, store, rank, size, "tune", glucx_test_ms(10000), &comm, &ms);
    if (ITEST_STATUS(st, GLUCX_ERR_MISMATCH, "comm_create with GLUCX_TUNE='%s' on rank %d only",
                     tune, odd) == 0) {
        const char *text = glucx_last_error();
        int other = rank == odd ? 0 : odd;
        if (!names(text, other)) {
            ITEST_FAIL("the GLUCX_TUNE mismatch message does not name rank %d: \"%s\"", other,
                       text);
            rc = -1;
        }
        if (rank == 0)
            itest_note("GLUCX_TUNE mismatch after %lld ms: %s", (long long)ms, text);
    } else {
        rc = -1;
    }
    ITEST_CHECK(comm == NULL, "glucx_comm_create wrote a communicator on failure");
    ITEST_CHECK(ms < glucx_test_ms(10000), "the mismatch was reported after %lld ms",
                (long long)ms);
    glucx_comm_destroy(comm);
    glucx_context_destroy(ctx);
    unsetenv("GLUCX_TUNE");
    ctx = NULL;
    if (ITEST_STATUS(glucx_context_create(NULL, &ctx), GLUCX_OK, "context_create")) {
        glucx_store_destroy(store);
        return -1;
    }

    /* 2. the last rank never shows up */
    if (rank == odd) {
        int64_t end = itest_now_ns() + glucx_test_ms(30000) * 1000000;
        while (__atomic_load_n(&sh->counter[0], __ATOMIC_ACQUIRE) < size - 1 &&
               itest_now_ns() < end)
            itest_sleep_ms(10);
    } else {
        st = try_create(ctx, store, rank, size, "absent", 1000, &comm, &ms);
        __atomic_fetch_add(&sh->counter[0], 1, __ATOMIC_ACQ_REL);
        if (ITEST_STATUS(st, GLUCX_ERR_TIMEOUT, "comm_create while rank %d never comes", odd) ==
            0) {
            const char *text = glucx_last_error();
            if (!names(text, odd)) {
                ITEST_FAIL("the creation timeout message does not name rank %d: \"%s\"", odd, text);
                rc = -1;
            }
            if (rank == 0)
                itest_note("absent rank: timeout after %lld ms: %s", (long long)ms, text);
        } else {
            rc = -1;
        }
        ITEST_CHECK(ms >= 500 && ms < glucx_test_ms(5000),
                    "comm_create with a 1000 ms timeout returned after %lld ms", (long long)ms);
        ITEST_CHECK(comm == NULL, "glucx_comm_create wrote a communicator on failure");
        glucx_comm_destroy(comm);
    }

    /* 3. the context is still good: a communicator of every rank works */
    comm = NULL;
    if (itest_comm(ctx, store, rank, size, "after", glucx_test_ms(30000), &comm) == GLUCX_OK) {
        int32_t v = rank + 1, sum = 0;
        if (ITEST_STATUS(glucx_allreduce(comm, &v, &sum, 1, GLUCX_DTYPE_I32, GLUCX_OP_SUM, NULL),
                         GLUCX_OK, "allreduce after the failed creations") == 0)
            ITEST_CHECK(sum == size * (size + 1) / 2, "allreduce: expected %d, got %d",
                        size * (size + 1) / 2, sum);
        else
            rc = -1;
    } else {
        rc = -1;
    }
    glucx_comm_destroy(comm);
    glucx_context_destroy(ctx);
    glucx_store_destroy(store);
    return rc;
}
