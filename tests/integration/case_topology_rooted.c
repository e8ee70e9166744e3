/*
 * Case "topology_rooted": the hierarchical broadcast, reduce, alltoall and alltoallv (issue 17)
 * over real UCX, packages faked with GLUCX_HOSTID on one host (two ranks per package; needs an even
 * rank count of 4 or more).
 * 1. GLUCX_TUNE forces the four rows ("broadcast,reduce,alltoall,alltoallv:hierarchical"):
 *    broadcast and reduce from every root, alltoall and alltoallv (uneven blocks, some empty),
 *    at several sizes (odd ones, one of 0 elements), give the values computed here; the same
 *    with the rows forced per call and a topology file (a ring of packages, GLUCX_TOPOLOGY).
 * 2. Each of the four, forced, with the last rank never calling: every other rank fails within
 *    bounds with GLUCX_ERR_TIMEOUT or GLUCX_ERR_PEER_FAILED, the message naming the collective;
 *    nothing hangs.
 * 3. Unequal packages (the last rank alone): a forced call fails with GLUCX_ERR_UNSUPPORTED on
 *    every rank, saying why; the selection's own choice works. One package: forced calls run
 *    (as the package's phase alone) and give the right values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"

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

static glucx_context_t *context(const char *what)
{
    glucx_context_t *ctx = NULL;
    if (ITEST_STATUS(glucx_context_create(NULL, &ctx), GLUCX_OK, "context_create (%s)", what))
        return NULL;
    return ctx;
}

/* The value rank r contributes at index i */
static int32_t val(int r, size_t i)
{
    return (int32_t)(r * 1000 + (int)(i % 97));
}

/* Elements s sends d: uneven, some zero */
static size_t v_count(int s, int d, size_t base)
{
    return (size_t)((s * 7 + d * 3) % 5) * base / 2;
}

/* alltoallv of uneven blocks (base elements on average), packed in rank order on both sides;
 * element i of the block s sends d is val(s * 64 + d, i) */
static int check_alltoallv(glucx_comm_t *comm, int rank, int size, const char *what,
                           const glucx_coll_opts_t *opts, size_t base)
{
    size_t sc[64] = {0}, sd[64] = {0}, rc[64] = {0}, rd[64] = {0}, so = 0, ro = 0;
    for (int q = 0; q < size; q++) {
        sc[q] = v_count(rank, q, base);
        sd[q] = so;
        so += sc[q];
        rc[q] = v_count(q, rank, base);
        rd[q] = ro;
        ro += rc[q];
    }
    int32_t *in = calloc(so + 1, sizeof(*in)), *out = calloc(ro + 1, sizeof(*out));
    int ret = 0;
    if (in == NULL || out == NULL) {
        ITEST_FAIL("%s: out of memory for %zu elements", what, so + ro);
        ret = -1;
    }
    for (int d = 0; ret == 0 && d < size; d++)
        for (size_t i = 0; i < sc[d]; i++)
            in[sd[d] + i] = val(rank * 64 + d, i);
    if (ret == 0 &&
        ITEST_STATUS(glucx_alltoallv(comm, in, sc, sd, out, rc, rd, GLUCX_DTYPE_I32, opts),
                     GLUCX_OK, "%s: alltoallv of about %zu int32 per block", what, base) != 0)
        ret = -1;
    for (int q = 0; ret == 0 && q < size; q++)
        for (size_t i = 0; ret == 0 && i < rc[q]; i++)
            if (out[rd[q] + i] != val(q * 64 + rank, i)) {
                ITEST_FAIL("%s: alltoallv: block from %d index %zu: expected %d, got %d", what, q,
                           i, val(q * 64 + rank, i), out[rd[q] + i]);
                ret = -1;
            }
    free(in);
    free(out);
    return ret;
}

/* broadcast and reduce from every root, alltoall and alltoallv; @p alg forced per call (NULL:
 * not) */
static int check_rows(glucx_comm_t *comm, int rank, int size, const char *what, const char *alg)
{
    glucx_coll_opts_t o = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = alg};
    const glucx_coll_opts_t *opts = alg != NULL ? &o : NULL;
    static const size_t counts[] = {0, 1, 1001, 70001};
    int rc = 0;
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]) && rc == 0; k++) {
        const size_t n = counts[k];
        int32_t *in = malloc((n + 1) * sizeof(*in)), *out = malloc((n + 1) * sizeof(*out));
        int32_t *a_in = malloc((n * (size_t)size + 1) * sizeof(*in));
        int32_t *a_out = malloc((n * (size_t)size + 1) * sizeof(*in));
        if (in == NULL || out == NULL || a_in == NULL || a_out == NULL) {
            ITEST_FAIL("%s: out of memory for %zu elements", what, n);
            rc = -1;
        }
        for (int root = 0; rc == 0 && root < size; root++) {
            for (size_t i = 0; i < n; i++)
                in[i] = rank == root ? val(root, i) : -1;
            if (ITEST_STATUS(glucx_broadcast(comm, in, n, GLUCX_DTYPE_I32, root, opts), GLUCX_OK,
                             "%s: broadcast of %zu int32 from %d", what, n, root) != 0) {
                rc = -1;
                break;
            }
            for (size_t i = 0; rc == 0 && i < n; i++)
                if (in[i] != val(root, i)) {
                    ITEST_FAIL("%s: broadcast of %zu int32 from %d: index %zu: expected %d, got %d",
                               what, n, root, i, val(root, i), in[i]);
                    rc = -1;
                }
            for (size_t i = 0; i < n; i++)
                in[i] = val(rank, i);
            if (rc == 0 &&
                ITEST_STATUS(
                    glucx_reduce(comm, in, out, n, GLUCX_DTYPE_I32, GLUCX_OP_SUM, root, opts),
                    GLUCX_OK, "%s: reduce of %zu int32 to %d", what, n, root) != 0)
                rc = -1;
            for (size_t i = 0; rc == 0 && rank == root && i < n; i++) {
                const int32_t want = (int32_t)(1000 * size * (size - 1) / 2 + size * (int)(i % 97));
                if (out[i] != want) {
                    ITEST_FAIL("%s: reduce of %zu int32 to %d: index %zu: expected %d, got %d",
                               what, n, root, i, want, out[i]);
                    rc = -1;
                }
            }
        }
        /* alltoall: element i of the block for d is val(rank * 64 + d, i) */
        for (int d = 0; rc == 0 && d < size; d++)
            for (size_t i = 0; i < n; i++)
                a_in[(size_t)d * n + i] = val(rank * 64 + d, i);
        if (rc == 0 && ITEST_STATUS(glucx_alltoall(comm, a_in, a_out, n, GLUCX_DTYPE_I32, opts),
                                    GLUCX_OK, "%s: alltoall of %zu int32 per block", what, n) != 0)
            rc = -1;
        for (int s = 0; rc == 0 && s < size; s++)
            for (size_t i = 0; rc == 0 && i < n; i++)
                if (a_out[(size_t)s * n + i] != val(s * 64 + rank, i)) {
                    ITEST_FAIL("%s: alltoall of %zu int32: block from %d index %zu: expected %d, "
                               "got %d",
                               what, n, s, i, val(s * 64 + rank, i), a_out[(size_t)s * n + i]);
                    rc = -1;
                }
        free(in);
        free(out);
        free(a_in);
        free(a_out);
        if (rc == 0)
            rc = check_alltoallv(comm, rank, size, what, opts, n);
    }
    return rc;
}

/* A forced hierarchical @p coll that the last rank never calls: the others fail within
 * bounds, naming the collective. */
static int absent_rank(const itest_env_t *env, glucx_context_t *ctx, glucx_store_t *store, int rank,
                       int size, glucx_coll_t coll, int slot)
{
    itest_shared_t *sh = env->shared;
    const int absent = size - 1;
    const int64_t op_timeout_ms = 1000;
    const char *name = glucx_coll_name(coll);
    char cname[64];
    snprintf(cname, sizeof(cname), "rooted-absent-%s", name);
    glucx_comm_t *comm = NULL;
    if (ITEST_STATUS(create(ctx, store, rank, size, cname, &comm), GLUCX_OK,
                     "comm_create for the %s timeout", name) != 0)
        return -1;
    int rc = ITEST_STATUS(glucx_barrier(comm, NULL), GLUCX_OK, "barrier before the timeout");
    const size_t n = 1001;
    int32_t *in = calloc(n * (size_t)size, sizeof(*in)), *out = calloc(n * (size_t)size, 4);
    if (in == NULL || out == NULL) {
        ITEST_FAIL("out of memory for %zu elements", n);
        rc = -1;
    }
    if (rank == absent) { /* never comes: wait until the others are done */
        const int64_t end = itest_now_ns() + glucx_test_ms(60000) * 1000000;
        while (__atomic_load_n(&sh->counter[slot], __ATOMIC_ACQUIRE) < size - 1 &&
               itest_now_ns() < end)
            itest_sleep_ms(10);
    } else {
        glucx_coll_opts_t o = {.field_mask = GLUCX_COLL_OPT_ALGORITHM | GLUCX_COLL_OPT_TIMEOUT,
                               .algorithm = "hierarchical",
                               .timeout_ms = op_timeout_ms};
        const int64_t t0 = itest_now_ns();
        glucx_status_t st = GLUCX_ERR_INVALID_ARG;
        if (rc == 0 && coll == GLUCX_COLL_BROADCAST)
            st = glucx_broadcast(comm, in, n, GLUCX_DTYPE_I32, 0, &o);
        else if (rc == 0 && coll == GLUCX_COLL_REDUCE)
            st = glucx_reduce(comm, in, out, n, GLUCX_DTYPE_I32, GLUCX_OP_SUM, 0, &o);
        else if (rc == 0 && coll == GLUCX_COLL_ALLTOALL)
            st = glucx_alltoall(comm, in, out, n, GLUCX_DTYPE_I32, &o);
        else if (rc == 0) {
            size_t c[64] = {0}, d[64] = {0};
            for (int q = 0; q < size; q++) {
                c[q] = n;
                d[q] = (size_t)q * n;
            }
            st = glucx_alltoallv(comm, in, c, d, out, c, d, GLUCX_DTYPE_I32, &o);
        }
        const int64_t ms = (itest_now_ns() - t0) / 1000000;
        __atomic_fetch_add(&sh->counter[slot], 1, __ATOMIC_ACQ_REL);
        /* a peer that times out first notifies the others, who may see its failure instead */
        if (st != GLUCX_ERR_TIMEOUT && st != GLUCX_ERR_PEER_FAILED) {
            ITEST_FAIL("hierarchical %s while rank %d never comes: %s (%s)", name, absent,
                       glucx_status_string(st), glucx_last_error());
            rc = -1;
        } else {
            ITEST_CHECK(strstr(glucx_last_error(), name) != NULL,
                        "the error text does not name the %s: \"%s\"", name, glucx_last_error());
        }
        ITEST_CHECK(ms < glucx_test_ms(10 * op_timeout_ms), "the %s returned after %lld ms", name,
                    (long long)ms);
    }
    free(in);
    free(out);
    glucx_comm_destroy(comm);
    return rc;
}

/* Forced calls of the four rows fail with GLUCX_ERR_UNSUPPORTED naming @p why; then the
 * selection's own choice works. */
static int refused(glucx_comm_t *comm, int rank, int size, const char *what, const char *why)
{
    glucx_coll_opts_t o = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = "hierarchical"};
    int32_t x[64] = {0}, y[64] = {0};
    int rc = 0;
    size_t c[64] = {0}, d[64] = {0};
    for (int q = 0; q < size; q++) {
        c[q] = 1;
        d[q] = (size_t)q;
    }
    for (int k = 0; k < 4; k++) {
        static const char *const names[] = {"broadcast", "reduce", "alltoall", "alltoallv"};
        const char *name = names[k];
        glucx_status_t st;
        if (k == 0)
            st = glucx_broadcast(comm, x, 1, GLUCX_DTYPE_I32, 0, &o);
        else if (k == 1)
            st = glucx_reduce(comm, x, y, 1, GLUCX_DTYPE_I32, GLUCX_OP_SUM, 0, &o);
        else if (k == 2)
            st = glucx_alltoall(comm, x, y, 1, GLUCX_DTYPE_I32, &o);
        else
            st = glucx_alltoallv(comm, x, c, d, y, c, d, GLUCX_DTYPE_I32, &o);
        if (ITEST_STATUS(st, GLUCX_ERR_UNSUPPORTED, "%s: forced hierarchical %s", what, name) != 0)
            rc = -1;
        else
            ITEST_CHECK(strstr(glucx_last_error(), why) != NULL,
                        "%s: %s's message lacks the reason ('%s'): \"%s\"", what, name, why,
                        glucx_last_error());
    }
    return rc | check_rows(comm, rank, size, what, NULL);
}

/* write a topology file of @p packages packages of 2 ranks in a ring */
static int write_topology(char *path, size_t len, int rank, int packages)
{
    snprintf(path, len, "/tmp/glucx-itest-rooted-%d-%d.yaml", (int)getppid(), rank);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f,
            "topology: [FullyConnected, Ring]\n"
            "npus_count: [2, %d]\n"
            "bandwidth: [50, 0.125]\n"
            "latency: [500, 10000]\n",
            packages);
    return fclose(f) == 0 ? 0 : -1;
}

int itest_case_topology_rooted(const itest_env_t *env, int rank, int size)
{
    if (size % 2 != 0 || size < 4) {
        ITEST_FAIL("case topology_rooted needs an even rank count of 4 or more, got %d", size);
        return -1;
    }
    itest_apply_variant(env);
    unsetenv("RANK");
    unsetenv("GLUCX_TOPOLOGY");
    glucx_store_t *store = NULL;
    if (ITEST_STATUS(glucx_store_file_create(env->store_dir, &store), GLUCX_OK, "store"))
        return -1;
    int rc = 0;
    char host[64], file[256];

    /* 1. forced by GLUCX_TUNE, then per call on a topology file */
    snprintf(host, sizeof(host), "itest-rpkg%d", rank / 2);
    setenv("GLUCX_HOSTID", host, 1);
    setenv("GLUCX_TUNE", "broadcast,reduce,alltoall,alltoallv:hierarchical", 1);
    glucx_context_t *ctx = context("GLUCX_TUNE");
    unsetenv("GLUCX_TUNE");
    glucx_comm_t *comm = NULL;
    if (ctx == NULL)
        rc = -1;
    else if (ITEST_STATUS(create(ctx, store, rank, size, "rooted-tune", &comm), GLUCX_OK,
                          "comm_create with GLUCX_TUNE") != 0)
        rc = -1;
    else
        rc |= check_rows(comm, rank, size, "forced by GLUCX_TUNE", NULL);
    glucx_comm_destroy(comm);
    comm = NULL;
    glucx_context_destroy(ctx);

    if (write_topology(file, sizeof(file), rank, size / 2) != 0) {
        ITEST_FAIL("cannot write the topology file under /tmp");
        rc = -1;
    } else {
        setenv("GLUCX_TOPOLOGY", file, 1);
        ctx = context("topology file");
        if (ctx == NULL)
            rc = -1;
        else if (ITEST_STATUS(create(ctx, store, rank, size, "rooted-file", &comm), GLUCX_OK,
                              "comm_create with a topology file") != 0)
            rc = -1;
        else
            rc |= check_rows(comm, rank, size, "forced per call, topology file", "hierarchical");
        glucx_comm_destroy(comm);
        comm = NULL;
        unsetenv("GLUCX_TOPOLOGY");
        unlink(file);
        glucx_context_destroy(ctx);
    }

    /* 2. the last rank never comes */
    ctx = context("absent rank");
    if (ctx == NULL) {
        rc = -1;
    } else {
        rc |= absent_rank(env, ctx, store, rank, size, GLUCX_COLL_BROADCAST, 0);
        rc |= absent_rank(env, ctx, store, rank, size, GLUCX_COLL_REDUCE, 1);
        rc |= absent_rank(env, ctx, store, rank, size, GLUCX_COLL_ALLTOALL, 2);
        rc |= absent_rank(env, ctx, store, rank, size, GLUCX_COLL_ALLTOALLV, 3);
    }
    glucx_context_destroy(ctx);

    /* 3. unequal packages (the last rank alone), then one package */
    setenv("GLUCX_HOSTID", rank == size - 1 ? "itest-rsolo" : "itest-rrest", 1);
    ctx = context("unequal packages");
    if (ctx != NULL && ITEST_STATUS(create(ctx, store, rank, size, "rooted-unequal", &comm),
                                    GLUCX_OK, "comm_create with unequal packages") == 0)
        rc |= refused(comm, rank, size, "unequal packages", "packages must be of equal size");
    else
        rc = -1;
    glucx_comm_destroy(comm);
    comm = NULL;
    glucx_context_destroy(ctx);
    setenv("GLUCX_HOSTID", "itest-rone", 1);
    ctx = context("one package");
    if (ctx != NULL && ITEST_STATUS(create(ctx, store, rank, size, "rooted-one", &comm), GLUCX_OK,
                                    "comm_create with one package") == 0)
        rc |= check_rows(comm, rank, size, "one package, forced per call", "hierarchical");
    else
        rc = -1;
    glucx_comm_destroy(comm);
    glucx_context_destroy(ctx);

    unsetenv("GLUCX_HOSTID");
    glucx_store_destroy(store);
    return rc | (itest_failures() ? -1 : 0);
}
