/*
 * Case "topology": communicators under GLUCX_TOPOLOGY, packages faked with GLUCX_HOSTID on one
 * host (issue 16). Needs an even rank count (two ranks per package).
 * 1. The file fits (ranks 2p and 2p+1 on host "pkg<p>"): the communicator works; allreduce and
 *    allgather of several sizes give the values computed here.
 * 2. Hosts do not fit the file (host = rank % 2): every rank's comm_create fails with
 *    GLUCX_ERR_INVALID_ARG saying that package 0's ranks 0 and 1 are on different hosts.
 * 3. A communicator smaller than the file (the file has twice the ranks): each rank is placed
 *    by its job rank (RANK = 2 * rank: one rank per package) and the communicator works; without
 *    RANK every rank fails naming the missing job rank.
 * 4. The last rank reads a file with another bandwidth: every rank gets GLUCX_ERR_MISMATCH.
 * 5. A malformed file: context_create fails with GLUCX_ERR_INVALID_ARG naming file and line.
 * In 1, the collectives also run with the topology-aware algorithms forced per call (issue 17),
 * at sizes that cut torus_rotated and the hierarchical allgather into 2 chunks in flight; and a
 * forced torus_rotated allreduce in 2 chunks that the last rank never calls times out on every
 * other rank (GLUCX_ERR_TIMEOUT within its timeout's bounds, the message naming the allreduce),
 * never hangs.
 * 6. No file, the last rank alone on its host (unequal packages, needs 4 ranks or more): a
 *    forced hierarchical allreduce fails with GLUCX_ERR_UNSUPPORTED on every rank saying why;
 *    the selection's own choice works.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

/* write a topology file of @p packages packages of 2 ranks in a ring, @p bw GB/s between them;
 * @return 0 and the path in @p path */
static int write_topology(char *path, size_t len, int rank, const char *tag, int packages,
                          double bw)
{
    snprintf(path, len, "/tmp/glucx-itest-topo-%d-%d-%s.yaml", (int)getppid(), rank, tag);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f,
            "# packages of 2 ranks on a ring\n"
            "topology: [FullyConnected, Ring]\n"
            "npus_count: [2, %d]\n"
            "bandwidth: [50, %g]\n"
            "latency: [500, 10000]\n",
            packages, bw);
    return fclose(f) == 0 ? 0 : -1;
}

static glucx_status_t create(glucx_context_t *ctx, glucx_store_t *store, int rank, int size,
                             const char *name, glucx_comm_t **comm_p)
{
    glucx_comm_params_t p = {.field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
                             .rank = rank,
                             .size = size,
                             .store = store,
                             .name = name,
                             .timeout_ms = glucx_test_ms(30000)};
    *comm_p = NULL;
    return glucx_comm_create(ctx, &p, comm_p);
}

/* allreduce (sum) and allgather of a few sizes, checked against values computed here, with the
 * algorithms @p ar_alg and @p ag_alg forced per call (NULL: the selection's) */
static int check_collectives(glucx_comm_t *comm, int rank, int size, const char *what,
                             const char *ar_alg, const char *ag_alg)
{
    glucx_coll_opts_t ar_opts = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = ar_alg};
    glucx_coll_opts_t ag_opts = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = ag_alg};
    static const size_t counts[] = {1, 1000, 70000, 700001}; /* the last: 2 chunks in flight */
    int rc = 0;
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]) && rc == 0; k++) {
        size_t n = counts[k];
        int32_t *in = malloc(n * sizeof(*in)), *out = malloc(n * sizeof(*out));
        int32_t *all = malloc(n * (size_t)size * sizeof(*all));
        if (in == NULL || out == NULL || all == NULL) {
            ITEST_FAIL("%s: out of memory for %zu elements", what, n);
            rc = -1;
        }
        for (size_t i = 0; rc == 0 && i < n; i++)
            in[i] = (int32_t)(rank * 1000 + (int)(i % 97));
        if (rc == 0 && ITEST_STATUS(glucx_allreduce(comm, in, out, n, GLUCX_DTYPE_I32, GLUCX_OP_SUM,
                                                    ar_alg != NULL ? &ar_opts : NULL),
                                    GLUCX_OK, "%s: allreduce (%s) of %zu int32", what,
                                    ar_alg != NULL ? ar_alg : "selected", n) != 0)
            rc = -1;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            int32_t want = (int32_t)(1000 * size * (size - 1) / 2 + size * (int)(i % 97));
            if (out[i] != want) {
                ITEST_FAIL("%s: allreduce of %zu int32: index %zu: expected %d, got %d", what, n, i,
                           want, out[i]);
                rc = -1;
            }
        }
        if (rc == 0 && ITEST_STATUS(glucx_allgather(comm, in, all, n, GLUCX_DTYPE_I32,
                                                    ag_alg != NULL ? &ag_opts : NULL),
                                    GLUCX_OK, "%s: allgather (%s) of %zu int32", what,
                                    ag_alg != NULL ? ag_alg : "selected", n) != 0)
            rc = -1;
        for (int r = 0; rc == 0 && r < size; r++)
            for (size_t i = 0; rc == 0 && i < n; i++) {
                int32_t want = (int32_t)(r * 1000 + (int)(i % 97));
                if (all[(size_t)r * n + i] != want) {
                    ITEST_FAIL("%s: allgather of %zu int32: block %d index %zu: expected %d, "
                               "got %d",
                               what, n, r, i, want, all[(size_t)r * n + i]);
                    rc = -1;
                }
            }
        free(in);
        free(out);
        free(all);
    }
    return rc;
}

/* comm_create must fail with @p want, its message containing @p text */
static int expect_failure(glucx_context_t *ctx, glucx_store_t *store, int rank, int size,
                          const char *name, glucx_status_t want, const char *text)
{
    glucx_comm_t *comm = NULL;
    glucx_status_t st = create(ctx, store, rank, size, name, &comm);
    int rc = 0;
    if (ITEST_STATUS(st, want, "comm_create '%s'", name) != 0)
        rc = -1;
    else if (strstr(glucx_last_error(), text) == NULL) {
        ITEST_FAIL("comm_create '%s': the message lacks '%s': \"%s\"", name, text,
                   glucx_last_error());
        rc = -1;
    } else if (rank == 0) {
        itest_note("%s: %s", name, glucx_last_error());
    }
    ITEST_CHECK(comm == NULL, "comm_create '%s' wrote a communicator on failure", name);
    glucx_comm_destroy(comm);
    return rc;
}

/* a context made with the current environment */
static glucx_context_t *context(const char *what)
{
    glucx_context_t *ctx = NULL;
    if (ITEST_STATUS(glucx_context_create(NULL, &ctx), GLUCX_OK, "context_create (%s)", what))
        return NULL;
    return ctx;
}

/* A forced torus_rotated allreduce of 2 chunks that the last rank never calls: the others time
 * out (the chunks' waits, glucx_coll_wait_some) within bounds, naming the allreduce. */
static int chunked_timeout(const itest_env_t *env, glucx_context_t *ctx, glucx_store_t *store,
                           int rank, int size)
{
    itest_shared_t *sh = env->shared;
    const int absent = size - 1;
    const int64_t op_timeout_ms = 1000;
    glucx_comm_t *comm = NULL;
    if (ITEST_STATUS(create(ctx, store, rank, size, "topo-chunk-timeout", &comm), GLUCX_OK,
                     "comm_create for the chunked timeout") != 0)
        return -1;
    int rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier before the timeout");
    const size_t n = 700001;
    int32_t *in = calloc(n, sizeof(*in)), *out = calloc(n, sizeof(*out));
    if (in == NULL || out == NULL) {
        ITEST_FAIL("out of memory for %zu elements", n);
        rc = -1;
    }
    if (rank == absent) { /* never comes: wait until the others are done */
        int64_t end = itest_now_ns() + glucx_test_ms(60000) * 1000000;
        while (__atomic_load_n(&sh->counter[0], __ATOMIC_ACQUIRE) < size - 1 &&
               itest_now_ns() < end)
            itest_sleep_ms(10);
    } else {
        glucx_coll_opts_t o = {.field_mask = GLUCX_COLL_OPT_ALGORITHM | GLUCX_COLL_OPT_TIMEOUT,
                               .algorithm = "torus_rotated",
                               .timeout_ms = op_timeout_ms};
        const int64_t t0 = itest_now_ns();
        glucx_status_t st =
            rc == 0 ? glucx_allreduce(comm, in, out, n, GLUCX_DTYPE_I32, GLUCX_OP_SUM, &o)
                    : GLUCX_ERR_INVALID_ARG;
        const int64_t ms = (itest_now_ns() - t0) / 1000000;
        __atomic_fetch_add(&sh->counter[0], 1, __ATOMIC_ACQ_REL);
        /* a peer that times out first notifies the others, who may see its failure instead */
        if (st != GLUCX_ERR_TIMEOUT && st != GLUCX_ERR_PEER_FAILED) {
            ITEST_FAIL("torus_rotated allreduce in 2 chunks while rank %d never comes: %s (%s)",
                       absent, glucx_status_string(st), glucx_last_error());
            rc = -1;
        } else {
            ITEST_CHECK(strstr(glucx_last_error(), "allreduce") != NULL,
                        "the error text does not name the allreduce: \"%s\"", glucx_last_error());
        }
        ITEST_CHECK(ms < glucx_test_ms(10 * op_timeout_ms), "the allreduce returned after %lld ms",
                    (long long)ms);
    }
    free(in);
    free(out);
    glucx_comm_destroy(comm);
    return rc;
}

int itest_case_topology(const itest_env_t *env, int rank, int size)
{
    if (size % 2 != 0) {
        ITEST_FAIL("case topology needs an even rank count, got %d", size);
        return -1;
    }
    itest_apply_variant(env);
    unsetenv("RANK");
    glucx_store_t *store = NULL;
    if (ITEST_STATUS(glucx_store_file_create(env->store_dir, &store), GLUCX_OK, "store"))
        return -1;
    char file[256], half[256], other[256], bad[256], host[64];
    int rc = 0;
    if (write_topology(file, sizeof(file), rank, "fit", size / 2, 0.125) != 0 ||
        write_topology(half, sizeof(half), rank, "half", size, 0.125) != 0 ||
        write_topology(other, sizeof(other), rank, "other", size / 2, 0.25) != 0) {
        ITEST_FAIL("cannot write the topology files under /tmp");
        glucx_store_destroy(store);
        return -1;
    }

    /* 1. the file fits */
    setenv("GLUCX_TOPOLOGY", file, 1);
    snprintf(host, sizeof(host), "itest-pkg%d", rank / 2);
    setenv("GLUCX_HOSTID", host, 1);
    glucx_context_t *ctx = context("fitting topology");
    glucx_comm_t *comm = NULL;
    if (ctx == NULL)
        rc = -1;
    else if (ITEST_STATUS(create(ctx, store, rank, size, "topo-fit", &comm), GLUCX_OK,
                          "comm_create with a fitting topology") != 0)
        rc = -1;
    else {
        rc |= check_collectives(comm, rank, size, "fitting topology", NULL, NULL);
        rc |= check_collectives(comm, rank, size, "fitting topology", "torus_rotated",
                                "hierarchical");
        rc |= check_collectives(comm, rank, size, "fitting topology", "hierarchical", NULL);
        rc |= check_collectives(comm, rank, size, "fitting topology", "torus", NULL);
    }
    glucx_comm_destroy(comm);
    comm = NULL;
    if (ctx != NULL)
        rc |= chunked_timeout(env, ctx, store, rank, size);

    /* 2. hosts do not fit: ranks 0 and 1 share a package but not a host */
    snprintf(host, sizeof(host), "itest-h%d", rank % 2);
    setenv("GLUCX_HOSTID", host, 1);
    if (ctx != NULL)
        rc |= expect_failure(ctx, store, rank, size, "topo-misfit", GLUCX_ERR_INVALID_ARG,
                             "ranks 0 and 1 are in package 0 of the file but on different hosts");
    glucx_context_destroy(ctx);

    /* 3. a smaller communicator, placed by job rank: one rank per package */
    setenv("GLUCX_TOPOLOGY", half, 1);
    snprintf(host, sizeof(host), "itest-pkg%d", rank);
    setenv("GLUCX_HOSTID", host, 1);
    char job[16];
    snprintf(job, sizeof(job), "%d", 2 * rank);
    setenv("RANK", job, 1);
    ctx = context("job-rank placement");
    if (ctx == NULL)
        rc = -1;
    else if (ITEST_STATUS(create(ctx, store, rank, size, "topo-job", &comm), GLUCX_OK,
                          "comm_create placed by RANK=%s", job) != 0)
        rc = -1;
    else
        rc |= check_collectives(comm, rank, size, "placed by job rank", NULL, NULL);
    glucx_comm_destroy(comm);
    comm = NULL;
    glucx_context_destroy(ctx);
    unsetenv("RANK");
    ctx = context("no job rank");
    if (ctx != NULL)
        rc |= expect_failure(ctx, store, rank, size, "topo-nojob", GLUCX_ERR_INVALID_ARG,
                             "has no job rank");
    else
        rc = -1;
    glucx_context_destroy(ctx);

    /* 4. the last rank reads another file */
    setenv("GLUCX_TOPOLOGY", rank == size - 1 ? other : file, 1);
    snprintf(host, sizeof(host), "itest-pkg%d", rank / 2);
    setenv("GLUCX_HOSTID", host, 1);
    ctx = context("different files");
    if (ctx != NULL)
        rc |= expect_failure(ctx, store, rank, size, "topo-mismatch", GLUCX_ERR_MISMATCH,
                             "GLUCX_TOPOLOGY");
    else
        rc = -1;
    glucx_context_destroy(ctx);

    /* 5. a malformed file */
    snprintf(bad, sizeof(bad), "/tmp/glucx-itest-topo-%d-%d-bad.yaml", (int)getppid(), rank);
    FILE *f = fopen(bad, "w");
    if (f != NULL) {
        fputs("topology: [FullyConnected, Ring]\nnpus_count: [2, two]\nbandwidth: [50, 1]\n"
              "latency: [500, 10000]\n",
              f);
        fclose(f);
    }
    setenv("GLUCX_TOPOLOGY", bad, 1);
    ctx = NULL;
    if (ITEST_STATUS(glucx_context_create(NULL, &ctx), GLUCX_ERR_INVALID_ARG,
                     "context_create with a malformed topology file") == 0) {
        char want[300];
        snprintf(want, sizeof(want), "%s:2: field 'npus_count'", bad);
        ITEST_CHECK(strstr(glucx_last_error(), want) != NULL, "message lacks '%s': \"%s\"", want,
                    glucx_last_error());
        ITEST_CHECK(ctx == NULL, "context_create wrote a context on failure");
    } else {
        rc = -1;
    }
    glucx_context_destroy(ctx);

    /* 6. unequal packages: the last rank alone */
    unsetenv("GLUCX_TOPOLOGY");
    setenv("GLUCX_HOSTID", rank == size - 1 ? "itest-solo" : "itest-rest", 1);
    ctx = size >= 4 ? context("unequal packages") : NULL;
    if (ctx != NULL && ITEST_STATUS(create(ctx, store, rank, size, "topo-unequal", &comm), GLUCX_OK,
                                    "comm_create with unequal packages") == 0) {
        int32_t x = rank, y = 0;
        glucx_coll_opts_t o = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = "hierarchical"};
        if (ITEST_STATUS(glucx_allreduce(comm, &x, &y, 1, GLUCX_DTYPE_I32, GLUCX_OP_SUM, &o),
                         GLUCX_ERR_UNSUPPORTED,
                         "forced hierarchical allreduce, unequal packages") == 0) {
            char want[128];
            snprintf(want, sizeof(want), "%d ranks in 2 packages of 1 to %d ranks", size, size - 1);
            ITEST_CHECK(strstr(glucx_last_error(), "packages must be of equal size") != NULL &&
                            strstr(glucx_last_error(), want) != NULL,
                        "message lacks the reason ('%s'): \"%s\"", want, glucx_last_error());
        } else {
            rc = -1;
        }
        rc |= check_collectives(comm, rank, size, "unequal packages", NULL, NULL);
    } else if (size >= 4) {
        rc = -1;
    }
    glucx_comm_destroy(comm);
    comm = NULL;
    glucx_context_destroy(ctx);

    unsetenv("GLUCX_HOSTID");
    unlink(file);
    unlink(half);
    unlink(other);
    unlink(bad);
    glucx_store_destroy(store);
    return rc | (itest_failures() ? -1 : 0);
}
