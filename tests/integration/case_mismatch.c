/*
 * Case "mismatch": ranks that call a collective with different arguments must all learn it as
 * GLUCX_ERR_MISMATCH, well within the communicator timeout, with a message naming the
 * collective and a peer. Each scenario runs on its own communicator (a mismatch fails it), for
 * every algorithm of the collective and for automatic selection:
 * - allreduce where rank 1 passes a different count;
 * - allreduce where rank 1 passes f32 and the others i32 (same bytes: only the signature differs);
 * - broadcast where rank 1 passes a different count. The root may finish its sends before any
 *   receiver notices; a rank whose broadcast returned GLUCX_OK must then see the failure on its
 *   next collective.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"

#define COMM_TIMEOUT_MS 10000

typedef enum { MM_COUNT, MM_DTYPE, MM_BCAST } mm_kind_t;

static const char *kind_name(mm_kind_t k)
{
    return k == MM_COUNT   ? "allreduce count"
           : k == MM_DTYPE ? "allreduce f32 vs i32"
                           : "broadcast count";
}

static int check_text(const char *what, const char *coll, const char *text)
{
    int rc = 0;
    if (strstr(text, coll) == NULL) {
        ITEST_FAIL("%s: the error text does not name '%s': \"%s\"", what, coll, text);
        rc = -1;
    }
    if (!itest_names_rank(text)) {
        ITEST_FAIL("%s: the error text names no peer rank: \"%s\"", what, text);
        rc = -1;
    }
    return rc;
}

static int scenario(glucx_context_t *ctx, glucx_store_t *store, int rank, int size, mm_kind_t kind,
                    const char *alg, int index)
{
    char name[64], what[128];
    snprintf(name, sizeof(name), "mismatch-%d-%d", (int)kind, index);
    snprintf(what, sizeof(what), "%s mismatch [alg=%s]", kind_name(kind), alg ? alg : "auto");
    glucx_comm_t *comm;
    if (itest_comm(ctx, store, rank, size, name, glucx_test_ms(COMM_TIMEOUT_MS), &comm) != GLUCX_OK)
        return -1;
    /* a good collective first, so the endpoints are up and the mismatch is what fails */
    int rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "%s: barrier before", what);
    const size_t count = 1000;
    size_t my_count = (rank == 1 && kind != MM_DTYPE) ? (kind == MM_COUNT ? 1024 : 900) : count;
    glucx_dtype_t dt = (rank == 1 && kind == MM_DTYPE) ? GLUCX_DTYPE_F32 : GLUCX_DTYPE_I32;
    int32_t *in = calloc(1024, 4), *out = calloc(1024, 4);
    glucx_coll_opts_t opts = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = alg};
    if (rc != 0 || in == NULL || out == NULL) {
        rc = -1;
        goto out;
    }
    int64_t t0 = itest_now_ns();
    glucx_status_t st;
    if (kind == MM_BCAST)
        st = glucx_broadcast(comm, out, my_count, dt, 0, alg ? &opts : NULL);
    else
        st = glucx_allreduce(comm, in, out, my_count, dt, GLUCX_OP_SUM, alg ? &opts : NULL);
    int64_t ms = (itest_now_ns() - t0) / 1000000;
    if (st == GLUCX_ERR_UNSUPPORTED && alg != NULL)
        goto out; /* consistently on every rank: nothing was sent */
    const char *coll = kind == MM_BCAST ? "broadcast" : "allreduce";
    char text[1024];
    snprintf(text, sizeof(text), "%s", st != GLUCX_OK ? glucx_last_error() : "");
    if (kind == MM_BCAST && st == GLUCX_OK && rank != 1) {
        /* this rank's part completed before the mismatch was found: the next call must fail */
        t0 = itest_now_ns();
        st = glucx_barrier(comm, NULL);
        ms = (itest_now_ns() - t0) / 1000000;
        coll = "broadcast";
        snprintf(text, sizeof(text), "%s", st != GLUCX_OK ? glucx_last_error() : "");
        rc |= ITEST_STATUS(st, GLUCX_ERR_MISMATCH,
                           "%s: the barrier after a broadcast that returned OK here", what);
    } else {
        rc |= ITEST_STATUS(st, GLUCX_ERR_MISMATCH, "%s (count %zu %s on this rank)", what, my_count,
                           glucx_dtype_name(dt));
    }
    if (st == GLUCX_ERR_MISMATCH) {
        rc |= check_text(what, coll, text);
        char ctext[1024] = "";
        glucx_comm_last_error(comm, ctext, sizeof(ctext));
        ITEST_CHECK(ctext[0] != '\0', "%s: glucx_comm_last_error is empty", what);
    }
    if (ms >= glucx_test_ms(COMM_TIMEOUT_MS)) {
        ITEST_FAIL("%s: the error took %lld ms, the communicator timeout is %lld ms", what,
                   (long long)ms, (long long)glucx_test_ms(COMM_TIMEOUT_MS));
        rc = -1;
    }
    /* the communicator stays failed */
    glucx_status_t again = glucx_barrier(comm, NULL);
    ITEST_CHECK(again != GLUCX_OK, "%s: a barrier on the failed communicator returned OK", what);
out:
    free(in);
    free(out);
    glucx_comm_destroy(comm);
    return rc;
}

int itest_case_mismatch(const itest_env_t *env, int rank, int size)
{
    itest_apply_variant(env);
    glucx_context_t *ctx = NULL;
    glucx_store_t *store = NULL;
    int rc = 0;
    if (ITEST_STATUS(glucx_context_create(NULL, &ctx), GLUCX_OK, "context_create") ||
        ITEST_STATUS(glucx_store_file_create(env->store_dir, &store), GLUCX_OK, "store"))
        rc = -1;
    int index = 0;
    int setup_ok = rc == 0;
    for (int k = 0; k < 3 && setup_ok; k++) {
        const char *const *algs =
            itest_algs(k == MM_BCAST ? GLUCX_COLL_BROADCAST : GLUCX_COLL_ALLREDUCE);
        rc |= scenario(ctx, store, rank, size, (mm_kind_t)k, NULL, index++);
        for (int a = 0; algs[a] != NULL; a++)
            rc |= scenario(ctx, store, rank, size, (mm_kind_t)k, algs[a], index++);
    }
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
    return rc;
}
