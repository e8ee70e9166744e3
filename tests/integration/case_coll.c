/*
 * Case "coll": every collective with every algorithm of its table and with automatic selection,
 * counts 0, 1, 7, 1000, 65537 (and 4 MiB), several dtypes and operators, in place and out of
 * place, every root, uneven counts for the v-collectives; bitwise agreement of a random-float
 * allreduce across ranks; several started collectives in flight at once.
 *
 * Expected values come from formulas of (rank, index) evaluated here, reductions from a naive
 * fold over the ranks in double/int64 arithmetic with inputs chosen so every result is exact.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "itest_source_algs.h"

/*
 * The algorithm names of each collective's table (the `name` of each row in
 * plugin/coll/<kind>/<kind>.c). Keep in sync with the library: the test fails when the library
 * selects a name missing here, or rejects a name listed here as unknown.
 */
#define MAX_ALGS 8
static const char *const alg_names[GLUCX_COLL_COUNT][MAX_ALGS] = {
    [GLUCX_COLL_ALLREDUCE] = {"ring", "recursive_doubling", "rabenseifner", "hierarchical", "torus",
                              "torus_rotated", NULL},
    [GLUCX_COLL_ALLGATHER] = {"ring", "recursive_doubling", "bruck", "hierarchical", NULL},
    [GLUCX_COLL_ALLGATHERV] = {"ring", "bruck", NULL},
    [GLUCX_COLL_REDUCE_SCATTER] = {"ring", "halving", "hierarchical", NULL},
    [GLUCX_COLL_ALLTOALL] = {"pairwise", "bruck", "hierarchical", NULL},
    [GLUCX_COLL_ALLTOALLV] = {"pairwise", "linear", "hierarchical", NULL},
    [GLUCX_COLL_BROADCAST] = {"binomial", "scatter_allgather", "hierarchical", NULL},
    [GLUCX_COLL_REDUCE] = {"binomial", "reduce_scatter_gather", "hierarchical", NULL},
    [GLUCX_COLL_GATHER] = {"binomial", "linear", NULL},
    [GLUCX_COLL_SCATTER] = {"binomial", "linear", NULL},
    [GLUCX_COLL_BARRIER] = {"dissemination", NULL},
};

const char *const *itest_algs(glucx_coll_t coll)
{
    return alg_names[coll];
}

static const size_t counts[] = {0, 1, 7, 1000, 65537};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

typedef struct dtop {
    glucx_dtype_t dtype;
    glucx_op_t op;
} dtop_t;

/* dtype/op pairs of the reduction sweep; the first is the default of the count sweep */
static const dtop_t sweep[] = {
    {GLUCX_DTYPE_I32, GLUCX_OP_SUM},   {GLUCX_DTYPE_F32, GLUCX_OP_SUM},
    {GLUCX_DTYPE_F64, GLUCX_OP_MAX},   {GLUCX_DTYPE_I64, GLUCX_OP_PROD},
    {GLUCX_DTYPE_U8, GLUCX_OP_BXOR},   {GLUCX_DTYPE_BOOL, GLUCX_OP_BOR},
    {GLUCX_DTYPE_BF16, GLUCX_OP_SUM},  {GLUCX_DTYPE_F16, GLUCX_OP_SUM},
    {GLUCX_DTYPE_F32, GLUCX_OP_AVG},   {GLUCX_DTYPE_I8, GLUCX_OP_MIN},
    {GLUCX_DTYPE_U64, GLUCX_OP_BAND},  {GLUCX_DTYPE_F64, GLUCX_OP_AVG},
    {GLUCX_DTYPE_BOOL, GLUCX_OP_PROD}, {GLUCX_DTYPE_F16, GLUCX_OP_MAX},
    {GLUCX_DTYPE_BF16, GLUCX_OP_MIN},  {GLUCX_DTYPE_I32, GLUCX_OP_BOR},
    {GLUCX_DTYPE_U8, GLUCX_OP_SUM},    {GLUCX_DTYPE_I8, GLUCX_OP_PROD},
};
#define NSWEEP (sizeof(sweep) / sizeof(sweep[0]))

/* dtypes of the data-movement sweep (beside i32) */
static const glucx_dtype_t move_dtypes[] = {GLUCX_DTYPE_U8, GLUCX_DTYPE_F64, GLUCX_DTYPE_BF16};

/* ---- reduction inputs and their naive reference ---- */

static int is_float(glucx_dtype_t dt)
{
    return dt == GLUCX_DTYPE_F16 || dt == GLUCX_DTYPE_BF16 || dt == GLUCX_DTYPE_F32 ||
           dt == GLUCX_DTYPE_F64;
}

static uint64_t mix2(int r, size_t i)
{
    uint64_t x = ((uint64_t)(unsigned)r << 48) ^ (uint64_t)i ^ UINT64_C(0x5bd1e995);
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* Rank r's input at index i for (dt, op) on n ranks: small values so that every partial result
 * of any combination order is exact in dt. */
static double red_in(glucx_dtype_t dt, glucx_op_t op, int r, size_t i, int n)
{
    const size_t es = glucx_dtype_size(dt);
    const int sgn =
        dt == GLUCX_DTYPE_I8 || dt == GLUCX_DTYPE_I32 || dt == GLUCX_DTYPE_I64 || is_float(dt);
    switch (op) {
    case GLUCX_OP_AVG: {
        /* sum over ranks = n * c(i): the average c(i) is exact */
        double c = (double)((long)(i % 13) - 6) + 0.5;
        double e = r < n - 1 ? (double)r : -(double)((n - 1) * (n - 2) / 2);
        return c + e;
    }
    case GLUCX_OP_PROD: {
        if (dt == GLUCX_DTYPE_BOOL)
            return (double)(((i + (size_t)r) % 7) != 0);
        double m =
            es == 1 ? (double)((i + 2 * (size_t)r) % 2 + 1) : (double)((i + 2 * (size_t)r) % 4 + 1);
        return (sgn && ((i + (size_t)r) & 1)) ? -m : m;
    }
    case GLUCX_OP_BAND:
    case GLUCX_OP_BOR:
    case GLUCX_OP_BXOR: {
        uint64_t h = mix2(r, i);
        switch (dt) {
        case GLUCX_DTYPE_BOOL:
            return op == GLUCX_OP_BAND ? (double)((i * 7 + (size_t)r * 3) % 5 != 0)
                                       : (double)((i * 7 + (size_t)r * 3) % 5 == 0);
        case GLUCX_DTYPE_I8:
            return (double)(int8_t)(uint8_t)h;
        case GLUCX_DTYPE_U8:
            return (double)(h & 0xff);
        case GLUCX_DTYPE_I32:
            return (double)(int32_t)(uint32_t)h;
        case GLUCX_DTYPE_I64:
            return (double)((int64_t)(h >> 12) - (INT64_C(1) << 51));
        default:
            return (double)(h >> 12);
        }
    }
    case GLUCX_OP_SUM:
        if (dt == GLUCX_DTYPE_BOOL)
            return (double)((i * 7 + (size_t)r * 3) % 5 == 0);
        if (dt == GLUCX_DTYPE_I8)
            return (double)((long)((i * 7 + (size_t)r * 13) % 31) - 15);
        if (dt == GLUCX_DTYPE_U8)
            return (double)((i * 7 + (size_t)r * 13) % 60);
        if (is_float(dt))
            return (double)((long)((i * 3 + (size_t)r * 5) % 9) - 4);
        if (dt == GLUCX_DTYPE_U64)
            return (double)((i * 7919 + (size_t)r * 104729) % 2001);
        return (double)((long)((i * 7919 + (size_t)r * 104729) % 2001) - 1000);
    case GLUCX_OP_MIN:
    case GLUCX_OP_MAX:
    default:
        if (dt == GLUCX_DTYPE_BOOL)
            return (double)((i + (size_t)r) % 3 == 0);
        if (dt == GLUCX_DTYPE_U8 || dt == GLUCX_DTYPE_U64)
            return (double)((i * 31 + (size_t)r * 17) % 101);
        if (is_float(dt))
            return (double)((long)((i * 31 + (size_t)r * 17) % 101) - 50) + 0.25 * r;
        return (double)((long)((i * 31 + (size_t)r * 17) % 101) - 50);
    }
}

/* The reduction of every rank's input at index i, folded naively in rank order. */
static double red_expect(glucx_dtype_t dt, glucx_op_t op, size_t i, int n)
{
    const int b = dt == GLUCX_DTYPE_BOOL;
    double acc = red_in(dt, op, 0, i, n);
    for (int r = 1; r < n; r++) {
        double x = red_in(dt, op, r, i, n);
        switch (op) {
        case GLUCX_OP_SUM:
        case GLUCX_OP_AVG:
            acc = b ? (double)(acc != 0 || x != 0) : acc + x;
            break;
        case GLUCX_OP_PROD:
            acc = b ? (double)(acc != 0 && x != 0) : acc * x;
            break;
        case GLUCX_OP_MIN:
            acc = x < acc ? x : acc;
            break;
        case GLUCX_OP_MAX:
            acc = x > acc ? x : acc;
            break;
        case GLUCX_OP_BAND:
            acc = b ? (double)(acc != 0 && x != 0) : (double)((int64_t)acc & (int64_t)x);
            break;
        case GLUCX_OP_BOR:
            acc = b ? (double)(acc != 0 || x != 0) : (double)((int64_t)acc | (int64_t)x);
            break;
        case GLUCX_OP_BXOR:
            acc = b ? (double)((acc != 0) != (x != 0)) : (double)((int64_t)acc ^ (int64_t)x);
            break;
        default:
            break;
        }
    }
    if (op == GLUCX_OP_AVG)
        acc /= n;
    return acc;
}

/* ---- uneven counts and displacements of the v-collectives ---- */

/* allgatherv: rank r's count; one rank contributes nothing */
static size_t v_count(size_t base, int r)
{
    if (base == 0)
        return 0;
    return r == 1 ? 0 : base + 3 * (size_t)r;
}

/* alltoallv: elements src sends to dst */
static size_t vv_count(size_t base, int src, int dst)
{
    if (base == 0)
        return 0;
    if ((src + 2 * dst) % 3 == 1)
        return 0;
    return base + (size_t)src + 2 * (size_t)dst;
}

/* ---- one collective call ---- */

typedef struct ccase {
    glucx_coll_t coll;
    const char *alg; /* NULL: automatic selection */
    size_t count;
    glucx_dtype_t dtype;
    glucx_op_t op;
    int root;
    int in_place;
    int null_insignificant; /* pass NULL where this rank's buffer is insignificant */
} ccase_t;

typedef struct tally {
    int ok, unsupported;
    int alg_ok[GLUCX_COLL_COUNT][MAX_ALGS];
    int comm_failed;
} tally_t;

static int is_rooted(glucx_coll_t c)
{
    return c == GLUCX_COLL_BROADCAST || c == GLUCX_COLL_REDUCE || c == GLUCX_COLL_GATHER ||
           c == GLUCX_COLL_SCATTER;
}

static int is_reducing(glucx_coll_t c)
{
    return c == GLUCX_COLL_ALLREDUCE || c == GLUCX_COLL_REDUCE || c == GLUCX_COLL_REDUCE_SCATTER;
}

static void describe(const ccase_t *c, char *buf, size_t len)
{
    char root[32] = "";
    if (is_rooted(c->coll))
        snprintf(root, sizeof(root), " root=%d", c->root);
    snprintf(buf, len, "%s[alg=%s count=%zu %s%s%s%s%s%s]", glucx_coll_name(c->coll),
             c->alg != NULL ? c->alg : "auto", c->count, glucx_dtype_name(c->dtype),
             is_reducing(c->coll) ? " " : "", is_reducing(c->coll) ? glucx_op_name(c->op) : "",
             root, c->in_place ? " in-place" : "",
             c->null_insignificant && is_rooted(c->coll) ? " null-insignificant" : "");
}

static int alg_index(glucx_coll_t coll, const char *alg)
{
    for (int a = 0; a < MAX_ALGS && alg_names[coll][a] != NULL; a++)
        if (alg != NULL && strcmp(alg_names[coll][a], alg) == 0)
            return a;
    return -1;
}

/* Fill want[0..n) (in dt) from f. */
#define FILL_WANT(want, dt, n, expr)                                                               \
    do {                                                                                           \
        for (size_t k_ = 0; k_ < (n); k_++) {                                                      \
            size_t i = k_;                                                                         \
            itest_put((dt), (want), k_, (expr));                                                   \
            (void)i;                                                                               \
        }                                                                                          \
    } while (0)

/*
 * Run one collective as described by c and check its result on this rank.
 * @return 0 passed, 1 unsupported (forced algorithm), -1 failed.
 */
static int run_case(glucx_comm_t *comm, const ccase_t *c, tally_t *t)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    const glucx_dtype_t dt = c->dtype;
    const size_t es = glucx_dtype_size(dt);
    const size_t cnt = c->count;
    const int is_root = c->root == rank;
    char what[256];
    describe(c, what, sizeof(what));

    size_t send_elems = 0, recv_elems = 0, check_elems = 0;
    size_t vcounts[ITEST_MAX_RANKS], vdispls[ITEST_MAX_RANKS];
    size_t scounts[ITEST_MAX_RANKS], sdispls[ITEST_MAX_RANKS];
    glucx_coll_args_t args = {
        .coll = c->coll, .count = cnt, .dtype = dt, .op = c->op, .root = c->root};

    /* sizes */
    switch (c->coll) {
    case GLUCX_COLL_ALLREDUCE:
        send_elems = recv_elems = check_elems = cnt;
        break;
    case GLUCX_COLL_REDUCE:
        send_elems = cnt;
        recv_elems = cnt;
        check_elems = is_root ? cnt : 0;
        break;
    case GLUCX_COLL_REDUCE_SCATTER:
        send_elems = cnt * (size_t)n;
        recv_elems = c->in_place ? cnt * (size_t)n : cnt;
        check_elems = cnt;
        break;
    case GLUCX_COLL_ALLGATHER:
        send_elems = cnt;
        recv_elems = check_elems = cnt * (size_t)n;
        break;
    case GLUCX_COLL_GATHER:
        send_elems = cnt;
        recv_elems = cnt * (size_t)n;
        check_elems = is_root ? recv_elems : 0;
        break;
    case GLUCX_COLL_ALLTOALL:
        send_elems = recv_elems = check_elems = cnt * (size_t)n;
        break;
    case GLUCX_COLL_SCATTER:
        send_elems = cnt * (size_t)n;
        recv_elems = check_elems = cnt;
        break;
    case GLUCX_COLL_BROADCAST:
        recv_elems = check_elems = cnt;
        break;
    case GLUCX_COLL_ALLGATHERV: {
        size_t off = 0;
        for (int q = 0; q < n; q++) {
            vcounts[q] = v_count(cnt, q);
            vdispls[q] = off + 2; /* a gap of 2 elements before each block */
            off = vdispls[q] + vcounts[q];
        }
        recv_elems = check_elems = off + 1;
        send_elems = vcounts[rank];
        args.counts = vcounts;
        args.displs = vdispls;
        break;
    }
    case GLUCX_COLL_ALLTOALLV: {
        /* send blocks packed in reverse destination order with 1-element gaps; receive blocks in
         * source order with 2-element gaps */
        size_t off = 0;
        for (int d = n - 1; d >= 0; d--) {
            scounts[d] = vv_count(cnt, rank, d);
            sdispls[d] = off;
            off += scounts[d] + 1;
        }
        send_elems = off;
        off = 0;
        for (int s = 0; s < n; s++) {
            vcounts[s] = vv_count(cnt, s, rank);
            vdispls[s] = off + 2;
            off = vdispls[s] + vcounts[s];
        }
        recv_elems = check_elems = off + 1;
        args.counts = vcounts;
        args.displs = vdispls;
        args.send_counts = scounts;
        args.send_displs = sdispls;
        break;
    }
    default:
        return -1;
    }

    unsigned char *sbuf =
        send_elems > 0 || c->coll != GLUCX_COLL_BROADCAST ? itest_alloc(send_elems * es) : NULL;
    unsigned char *rbuf = itest_alloc(recv_elems * es);
    unsigned char *want = itest_alloc(recv_elems * es);
    if ((c->coll != GLUCX_COLL_BROADCAST && sbuf == NULL) || rbuf == NULL || want == NULL) {
        free(sbuf);
        free(rbuf);
        free(want);
        return -1;
    }

    /* inputs and expected outputs */
    switch (c->coll) {
    case GLUCX_COLL_ALLREDUCE:
    case GLUCX_COLL_REDUCE:
        FILL_WANT(sbuf, dt, cnt, red_in(dt, c->op, rank, i, n));
        FILL_WANT(want, dt, check_elems, red_expect(dt, c->op, i, n));
        break;
    case GLUCX_COLL_REDUCE_SCATTER:
        FILL_WANT(sbuf, dt, send_elems, red_in(dt, c->op, rank, i, n));
        FILL_WANT(want, dt, cnt, red_expect(dt, c->op, (size_t)rank * cnt + i, n));
        break;
    case GLUCX_COLL_ALLGATHER:
    case GLUCX_COLL_GATHER:
        FILL_WANT(sbuf, dt, cnt, itest_value(dt, rank, 0, i));
        FILL_WANT(want, dt, check_elems, itest_value(dt, (int)(i / cnt), 0, i % cnt));
        break;
    case GLUCX_COLL_ALLTOALL:
        FILL_WANT(sbuf, dt, send_elems, itest_value(dt, rank, (int)(i / cnt), i % cnt));
        FILL_WANT(want, dt, check_elems, itest_value(dt, (int)(i / cnt), rank, i % cnt));
        break;
    case GLUCX_COLL_SCATTER:
        FILL_WANT(sbuf, dt, send_elems, itest_value(dt, rank, (int)(i / cnt), i % cnt));
        FILL_WANT(want, dt, cnt, itest_value(dt, c->root, rank, i));
        break;
    case GLUCX_COLL_BROADCAST:
        if (is_root)
            FILL_WANT(rbuf, dt, cnt, itest_value(dt, c->root, 0, i));
        FILL_WANT(want, dt, cnt, itest_value(dt, c->root, 0, i));
        break;
    case GLUCX_COLL_ALLGATHERV:
        FILL_WANT(sbuf, dt, send_elems, itest_value(dt, rank, 0, i));
        for (int q = 0; q < n; q++)
            for (size_t j = 0; j < vcounts[q]; j++)
                itest_put(dt, want, vdispls[q] + j, itest_value(dt, q, 0, j));
        break;
    case GLUCX_COLL_ALLTOALLV:
        for (int d = 0; d < n; d++)
            for (size_t j = 0; j < scounts[d]; j++)
                itest_put(dt, sbuf, sdispls[d] + j, itest_value(dt, rank, d, j));
        for (int s = 0; s < n; s++)
            for (size_t j = 0; j < vcounts[s]; j++)
                itest_put(dt, want, vdispls[s] + j, itest_value(dt, s, rank, j));
        break;
    default:
        break;
    }

    /* buffers as the call sees them */
    const void *send_arg = sbuf;
    void *recv_arg = rbuf;
    int check_input = 1; /* the send buffer must be left untouched */
    if (c->in_place) {
        check_input = 0;
        switch (c->coll) {
        case GLUCX_COLL_ALLREDUCE:
        case GLUCX_COLL_REDUCE_SCATTER:
        case GLUCX_COLL_ALLTOALL:
            memcpy(rbuf, sbuf, send_elems * es);
            send_arg = GLUCX_IN_PLACE;
            break;
        case GLUCX_COLL_REDUCE:
            if (is_root) {
                memcpy(rbuf, sbuf, send_elems * es);
                send_arg = GLUCX_IN_PLACE;
            }
            break;
        case GLUCX_COLL_ALLGATHER:
            memcpy(rbuf + (size_t)rank * cnt * es, sbuf, cnt * es);
            send_arg = GLUCX_IN_PLACE;
            break;
        case GLUCX_COLL_GATHER:
            if (is_root) {
                memcpy(rbuf + (size_t)rank * cnt * es, sbuf, cnt * es);
                send_arg = GLUCX_IN_PLACE;
            }
            break;
        case GLUCX_COLL_ALLGATHERV:
            memcpy(rbuf + vdispls[rank] * es, sbuf, vcounts[rank] * es);
            send_arg = GLUCX_IN_PLACE;
            break;
        case GLUCX_COLL_SCATTER:
            /* the root receives into its own block of the send buffer */
            if (is_root)
                recv_arg = sbuf + (size_t)rank * cnt * es;
            break;
        default:
            break;
        }
    }
    if (c->null_insignificant) {
        if ((c->coll == GLUCX_COLL_REDUCE || c->coll == GLUCX_COLL_GATHER) && !is_root)
            recv_arg = NULL;
        if (c->coll == GLUCX_COLL_SCATTER && !is_root)
            send_arg = NULL;
    }
    if (c->coll == GLUCX_COLL_SCATTER && !is_root)
        check_input = 0; /* insignificant */
    if (c->coll == GLUCX_COLL_BROADCAST)
        send_arg = NULL;
    uint64_t in_hash = sbuf != NULL ? itest_hash(sbuf, send_elems * es) : 0;

    args.sendbuf = send_arg;
    args.recvbuf = recv_arg;
    glucx_coll_opts_t opts = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = c->alg};
    glucx_status_t st = glucx_coll(comm, &args, c->alg != NULL ? &opts : NULL);

    int rc = 0;
    if (st == GLUCX_ERR_UNSUPPORTED && c->alg != NULL) {
        t->unsupported++;
        rc = 1;
        goto out;
    }
    if (st == GLUCX_ERR_INVALID_ARG && c->alg != NULL &&
        strstr(glucx_last_error(), "unknown algorithm") != NULL) {
        ITEST_FAIL("%s: the library does not know algorithm '%s' (%s): update alg_names in "
                   "case_coll.c",
                   what, c->alg, glucx_last_error());
        rc = -1;
        goto out;
    }
    if (ITEST_STATUS(st, GLUCX_OK, "%s", what) != 0) {
        if (st != GLUCX_ERR_INVALID_ARG)
            t->comm_failed = 1;
        rc = -1;
        goto out;
    }

    /* results */
    const void *got = rbuf;
    if (c->coll == GLUCX_COLL_SCATTER && c->in_place && is_root)
        got = sbuf + (size_t)rank * cnt * es;
    if (check_elems > 0 && itest_compare(what, dt, got, want, check_elems) != 0)
        rc = -1;
    if (itest_guard_ok(rbuf, recv_elems * es, what) != 0)
        rc = -1;
    if (sbuf != NULL && itest_guard_ok(sbuf, send_elems * es, what) != 0)
        rc = -1;
    if (check_input && sbuf != NULL && !(c->coll == GLUCX_COLL_SCATTER && c->in_place) &&
        itest_hash(sbuf, send_elems * es) != in_hash) {
        ITEST_FAIL("%s: the send buffer (%zu bytes) was modified", what, send_elems * es);
        rc = -1;
    }
    if (rc == 0) {
        t->ok++;
        int a = alg_index(c->coll, c->alg);
        if (a >= 0)
            t->alg_ok[c->coll][a]++;
    }
out:
    free(sbuf);
    free(rbuf);
    free(want);
    return rc;
}

/* ---- the parts of the case ---- */

static int has_in_place(glucx_coll_t c)
{
    return c != GLUCX_COLL_BROADCAST && c != GLUCX_COLL_ALLTOALLV;
}

/* alg_names must hold exactly the algorithms of the library's tables (read from the sources at
 * configure time), and every name the selection map picks. */
static void check_alg_list(glucx_comm_t *comm)
{
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        const char *cname = glucx_coll_name((glucx_coll_t)c);
        int in_source = 0;
        for (size_t k = 0; itest_source_algs[k].coll != NULL; k++) {
            if (strcmp(itest_source_algs[k].coll, cname) != 0)
                continue;
            in_source++;
            if (alg_index((glucx_coll_t)c, itest_source_algs[k].alg) < 0)
                ITEST_FAIL("plugin/coll/%s/%s.c has algorithm '%s', which the test's list "
                           "(alg_names in case_coll.c) lacks: add it",
                           cname, cname, itest_source_algs[k].alg);
        }
        if (in_source == 0)
            ITEST_FAIL("no algorithm names could be read from plugin/coll/%s/%s.c (see "
                       "tests/integration/CMakeLists.txt)",
                       cname, cname);
        for (int a = 0; a < MAX_ALGS && alg_names[c][a] != NULL; a++) {
            int found = 0;
            for (size_t k = 0; itest_source_algs[k].coll != NULL; k++)
                found |= strcmp(itest_source_algs[k].coll, cname) == 0 &&
                         strcmp(itest_source_algs[k].alg, alg_names[c][a]) == 0;
            if (!found)
                ITEST_FAIL("the test's list has %s algorithm '%s', which plugin/coll/%s/%s.c "
                           "lacks: remove it",
                           cname, alg_names[c][a], cname, cname);
        }
    }
    static const size_t sizes[] = {0,     1,      8,       100,     1024,     4096,
                                   65536, 262144, 1 << 20, 4 << 20, 64 << 20, (size_t)1 << 30};
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            const char *name = glucx_comm_algorithm(comm, (glucx_coll_t)c, sizes[s]);
            if (name == NULL) {
                ITEST_FAIL("glucx_comm_algorithm(%s, %zu bytes) returned NULL",
                           glucx_coll_name((glucx_coll_t)c), sizes[s]);
                continue;
            }
            if (alg_index((glucx_coll_t)c, name) < 0)
                ITEST_FAIL("the library selects %s algorithm '%s' at %zu bytes, which the test's "
                           "list (alg_names in case_coll.c) lacks: add it",
                           glucx_coll_name((glucx_coll_t)c), name, sizes[s]);
        }
    }
}

#define RUN(...)                                                                                   \
    do {                                                                                           \
        ccase_t c_ = {__VA_ARGS__};                                                                \
        run_case(comm, &c_, t);                                                                    \
        if (t->comm_failed)                                                                        \
            return -1;                                                                             \
    } while (0)

static int sweep_collective(glucx_comm_t *comm, glucx_coll_t coll, tally_t *t)
{
    const int n = glucx_comm_size(comm);
    const char *const *names = alg_names[coll];
    const glucx_dtype_t dt0 = is_reducing(coll) ? sweep[0].dtype : GLUCX_DTYPE_I32;
    const glucx_op_t op0 = is_reducing(coll) ? sweep[0].op : GLUCX_OP_SUM;
    for (int a = -1; a < MAX_ALGS && (a < 0 || names[a] != NULL); a++) {
        const char *alg = a < 0 ? NULL : names[a];
        /* every count, in and out of place */
        for (size_t k = 0; k < NCOUNTS; k++)
            for (int ip = 0; ip <= has_in_place(coll); ip++)
                RUN(.coll = coll, .alg = alg, .count = counts[k], .dtype = dt0, .op = op0,
                    .root = (int)(k + (size_t)a + 1) % n, .in_place = ip,
                    .null_insignificant = (int)(k & 1));
        /* every root */
        if (is_rooted(coll))
            for (int root = 0; root < n; root++)
                for (int ip = 0; ip <= 1; ip++)
                    RUN(.coll = coll, .alg = alg, .count = 1000, .dtype = dt0, .op = op0,
                        .root = root, .in_place = ip && has_in_place(coll),
                        .null_insignificant = root & 1);
        /* dtypes and operators */
        if (is_reducing(coll)) {
            for (size_t s = 0; s < NSWEEP; s++)
                for (int k = 0; k < 2; k++)
                    RUN(.coll = coll, .alg = alg, .count = k == 0 ? 7 : 1000,
                        .dtype = sweep[s].dtype, .op = sweep[s].op, .root = (int)s % n,
                        .in_place = (int)(s + (size_t)k) & 1);
        } else {
            for (size_t d = 0; d < sizeof(move_dtypes) / sizeof(move_dtypes[0]); d++)
                for (int k = 0; k < 2; k++)
                    RUN(.coll = coll, .alg = alg, .count = k == 0 ? 7 : 1000,
                        .dtype = move_dtypes[d], .root = (int)d % n,
                        .in_place = ((int)d + k) & 1 && has_in_place(coll));
        }
    }
    /* one 4 MiB message (as glucx_comm_algorithm counts bytes), f32; every algorithm for
     * allreduce, automatic selection for the others */
    const size_t big = (size_t)4 << 20;
    size_t per = big / 4;
    if (coll == GLUCX_COLL_ALLGATHER || coll == GLUCX_COLL_REDUCE_SCATTER ||
        coll == GLUCX_COLL_ALLTOALL || coll == GLUCX_COLL_GATHER || coll == GLUCX_COLL_SCATTER)
        per /= (size_t)n;
    if (coll == GLUCX_COLL_ALLGATHERV || coll == GLUCX_COLL_ALLTOALLV)
        per /= (size_t)n; /* uneven: about n blocks of per elements in all */
    for (int a = -1;
         a < (coll == GLUCX_COLL_ALLREDUCE ? MAX_ALGS : 0) && (a < 0 || names[a] != NULL); a++)
        RUN(.coll = coll, .alg = a < 0 ? NULL : names[a], .count = per, .dtype = GLUCX_DTYPE_F32,
            .op = GLUCX_OP_SUM, .root = n - 1);
    return 0;
}

/* A random-float allreduce: the result must be bitwise the same on every rank, and close to
 * the sum in rank order. */
static int random_allreduce(const itest_env_t *env, glucx_comm_t *comm, const char *alg,
                            size_t count, int slot)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    float *buf = malloc(count * sizeof(float));
    float *ref = calloc(count, sizeof(float));
    if (buf == NULL || ref == NULL) {
        ITEST_FAIL("out of memory");
        free(buf);
        free(ref);
        return -1;
    }
    for (int r = 0; r < n; r++) {
        uint64_t s = UINT64_C(0x1234567) + (uint64_t)r * 977 + count;
        for (size_t i = 0; i < count; i++) {
            s = s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
            float v = (float)((double)(s >> 11) / (double)(UINT64_C(1) << 53) * 2.0 - 1.0);
            if (r == rank)
                buf[i] = v;
            ref[i] += v;
        }
    }
    glucx_coll_opts_t opts = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = alg};
    char what[128];
    snprintf(what, sizeof(what), "random f32 allreduce[alg=%s count=%zu]",
             alg != NULL ? alg : "auto", count);
    glucx_status_t st = glucx_allreduce(comm, GLUCX_IN_PLACE, buf, count, GLUCX_DTYPE_F32,
                                        GLUCX_OP_SUM, alg != NULL ? &opts : NULL);
    int rc = 0;
    if (st == GLUCX_ERR_UNSUPPORTED && alg != NULL)
        goto out;
    if (ITEST_STATUS(st, GLUCX_OK, "%s", what) != 0) {
        rc = -1;
        goto out;
    }
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) {
        if (fabsf(buf[i] - ref[i]) > 1e-5f * (float)n) {
            if (bad < 5)
                ITEST_FAIL("%s: rank %d, index %zu: expected about %.9g, got %.9g", what, rank, i,
                           (double)ref[i], (double)buf[i]);
            bad++;
        }
    }
    if (bad > 0)
        rc = -1;
    uint64_t h = itest_hash(buf, count * sizeof(float));
    __atomic_store_n(&env->shared->hash[slot][rank], h, __ATOMIC_RELEASE);
    st = glucx_barrier(comm, NULL);
    if (ITEST_STATUS(st, GLUCX_OK, "barrier after %s", what) != 0) {
        rc = -1;
        goto out;
    }
    for (int r = 0; r < n; r++) {
        uint64_t other = __atomic_load_n(&env->shared->hash[slot][r], __ATOMIC_ACQUIRE);
        if (other != h) {
            ITEST_FAIL("%s: results differ bitwise: rank %d's hash %016llx, rank %d's %016llx",
                       what, rank, (unsigned long long)h, r, (unsigned long long)other);
            rc = -1;
        }
    }
out:
    free(buf);
    free(ref);
    return rc;
}

/* Barrier: nobody leaves before everybody entered. */
static int barrier_check(const itest_env_t *env, glucx_comm_t *comm, const char *alg, int slot0)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    glucx_coll_opts_t opts = {.field_mask = GLUCX_COLL_OPT_ALGORITHM, .algorithm = alg};
    int rc = 0;
    for (int it = 0; it < 4; it++) {
        int *ctr = &env->shared->counter[slot0 + it];
        if (rank == it % n)
            itest_sleep_ms(20); /* a late rank */
        __atomic_fetch_add(ctr, 1, __ATOMIC_ACQ_REL);
        glucx_status_t st = glucx_barrier(comm, alg != NULL ? &opts : NULL);
        if (st == GLUCX_ERR_UNSUPPORTED && alg != NULL)
            return 0;
        if (ITEST_STATUS(st, GLUCX_OK, "barrier[alg=%s] %d", alg != NULL ? alg : "auto", it))
            return -1;
        int seen = __atomic_load_n(ctr, __ATOMIC_ACQUIRE);
        if (seen != n) {
            ITEST_FAIL("barrier[alg=%s] %d: rank %d left it when only %d of %d ranks had entered",
                       alg != NULL ? alg : "auto", it, rank, seen, n);
            rc = -1;
        }
    }
    return rc;
}

/* Several started collectives in flight at once, waited for in reverse order. */
static int async_colls(glucx_comm_t *comm)
{
    const int rank = glucx_comm_rank(comm), n = glucx_comm_size(comm);
    enum { NA = 6 };
    const size_t c1 = 1000, c2 = 7, c3 = 65537;
    int32_t *a_in = malloc(c1 * 4), *a_out = malloc(c1 * 4), *a_want = malloc(c1 * 4);
    double *b_io = malloc(c3 * 8), *b_want = malloc(c3 * 8);
    uint8_t *g_in = malloc(c2), *g_out = malloc(c2 * (size_t)n), *g_want = malloc(c2 * (size_t)n);
    float *bc = malloc(c1 * 4), *bc_want = malloc(c1 * 4);
    float *rs_in = malloc(c1 * (size_t)n * 4), *rs_out = malloc(c1 * 4), *rs_want = malloc(c1 * 4);
    int32_t *a2_io = malloc(c2 * 4), *a2_want = malloc(c2 * 4);
    glucx_request_t *req[NA] = {NULL};
    int rc = 0;
    if (!a_in || !a_out || !a_want || !b_io || !b_want || !g_in || !g_out || !g_want || !bc ||
        !bc_want || !rs_in || !rs_out || !rs_want || !a2_io || !a2_want) {
        ITEST_FAIL("out of memory");
        rc = -1;
        goto out;
    }
    const glucx_dtype_t I32 = GLUCX_DTYPE_I32, F64 = GLUCX_DTYPE_F64, U8 = GLUCX_DTYPE_U8,
                        F32 = GLUCX_DTYPE_F32;
    FILL_WANT(a_in, I32, c1, red_in(I32, GLUCX_OP_SUM, rank, i, n));
    FILL_WANT(a_want, I32, c1, red_expect(I32, GLUCX_OP_SUM, i, n));
    FILL_WANT(b_io, F64, c3, red_in(F64, GLUCX_OP_MAX, rank, i, n));
    FILL_WANT(b_want, F64, c3, red_expect(F64, GLUCX_OP_MAX, i, n));
    FILL_WANT(g_in, U8, c2, itest_value(U8, rank, 0, i));
    FILL_WANT(g_want, U8, c2 * (size_t)n, itest_value(U8, (int)(i / c2), 0, i % c2));
    FILL_WANT(bc, F32, c1, rank == n - 1 ? itest_value(F32, n - 1, 5, i) : -1.0);
    FILL_WANT(bc_want, F32, c1, itest_value(F32, n - 1, 5, i));
    FILL_WANT(rs_in, F32, c1 * (size_t)n, red_in(F32, GLUCX_OP_SUM, rank, i, n));
    FILL_WANT(rs_want, F32, c1, red_expect(F32, GLUCX_OP_SUM, (size_t)rank * c1 + i, n));
    FILL_WANT(a2_io, I32, c2, red_in(I32, GLUCX_OP_BOR, rank, i, n));
    FILL_WANT(a2_want, I32, c2, red_expect(I32, GLUCX_OP_BOR, i, n));

    const glucx_coll_args_t args[NA] = {
        {.coll = GLUCX_COLL_ALLREDUCE,
         .sendbuf = a_in,
         .recvbuf = a_out,
         .count = c1,
         .dtype = I32,
         .op = GLUCX_OP_SUM},
        {.coll = GLUCX_COLL_ALLREDUCE,
         .sendbuf = GLUCX_IN_PLACE,
         .recvbuf = b_io,
         .count = c3,
         .dtype = F64,
         .op = GLUCX_OP_MAX},
        {.coll = GLUCX_COLL_ALLGATHER, .sendbuf = g_in, .recvbuf = g_out, .count = c2, .dtype = U8},
        {.coll = GLUCX_COLL_BROADCAST, .recvbuf = bc, .count = c1, .dtype = F32, .root = n - 1},
        {.coll = GLUCX_COLL_REDUCE_SCATTER,
         .sendbuf = rs_in,
         .recvbuf = rs_out,
         .count = c1,
         .dtype = F32,
         .op = GLUCX_OP_SUM},
        {.coll = GLUCX_COLL_ALLREDUCE,
         .sendbuf = GLUCX_IN_PLACE,
         .recvbuf = a2_io,
         .count = c2,
         .dtype = I32,
         .op = GLUCX_OP_BOR},
    };
    /* one with a forced algorithm, the rest automatic */
    glucx_coll_opts_t forced = {.field_mask = GLUCX_COLL_OPT_ALGORITHM | GLUCX_COLL_OPT_LABEL,
                                .algorithm = alg_names[GLUCX_COLL_ALLREDUCE][0],
                                .label = "async0"};
    for (int k = 0; k < NA; k++) {
        glucx_status_t st = glucx_coll_start(comm, &args[k], k == 0 ? &forced : NULL, &req[k]);
        if (ITEST_STATUS(st, GLUCX_OK, "glucx_coll_start %d (%s)", k,
                         glucx_coll_name(args[k].coll)) != 0) {
            rc = -1;
            goto out;
        }
    }
    /* poll the last one to completion with glucx_request_test, wait for the others backwards */
    int64_t deadline = itest_now_ns() + glucx_test_ms(60000) * 1000000;
    glucx_status_t st;
    while ((st = glucx_request_test(req[NA - 1])) == GLUCX_INPROGRESS && itest_now_ns() < deadline)
        itest_sleep_ms(1);
    if (ITEST_STATUS(st, GLUCX_OK, "glucx_request_test of started collective %d", NA - 1) != 0)
        rc = -1;
    for (int k = NA - 2; k >= 0; k--)
        if (ITEST_STATUS(glucx_request_wait(req[k], glucx_test_ms(60000)), GLUCX_OK,
                         "glucx_request_wait of started collective %d (%s)", k,
                         glucx_coll_name(args[k].coll)) != 0)
            rc = -1;
    if (rc != 0)
        goto out;
    rc |= itest_compare("async allreduce i32 sum", I32, a_out, a_want, c1);
    rc |= itest_compare("async allreduce f64 max in place", F64, b_io, b_want, c3);
    rc |= itest_compare("async allgather u8", U8, g_out, g_want, c2 * (size_t)n);
    rc |= itest_compare("async broadcast f32", F32, bc, bc_want, c1);
    rc |= itest_compare("async reduce_scatter f32 sum", F32, rs_out, rs_want, c1);
    rc |= itest_compare("async allreduce i32 bor in place", I32, a2_io, a2_want, c2);
out:
    for (int k = 0; k < NA; k++)
        glucx_request_free(req[k]);
    free(a_in), free(a_out), free(a_want), free(b_io), free(b_want), free(g_in), free(g_out);
    free(g_want), free(bc), free(bc_want), free(rs_in), free(rs_out), free(rs_want);
    free(a2_io), free(a2_want);
    return rc;
}

int itest_case_coll(const itest_env_t *env, int rank, int size)
{
    glucx_context_t *ctx;
    glucx_store_t *store;
    glucx_comm_t *comm;
    if (itest_open(env, rank, size, "coll", glucx_test_ms(60000), &ctx, &store, &comm) != GLUCX_OK)
        return -1;
    itest_check_transport(env, comm);
    if (rank == 0)
        check_alg_list(comm);

    tally_t *t = calloc(1, sizeof(*t));
    int rc = t == NULL ? -1 : 0;
    int64_t t0 = itest_now_ns();
    for (int c = 0; c < GLUCX_COLL_COUNT && rc == 0; c++) {
        if (c == GLUCX_COLL_BARRIER)
            continue;
        int64_t tc = itest_now_ns();
        int before = t->ok;
        if (sweep_collective(comm, (glucx_coll_t)c, t) != 0) {
            ITEST_FAIL("%s: the communicator failed; the rest of the case is skipped",
                       glucx_coll_name((glucx_coll_t)c));
            rc = -1;
        }
        if (rank == 0)
            itest_note("%s: %d calls passed in %.2f s", glucx_coll_name((glucx_coll_t)c),
                       t->ok - before, (double)(itest_now_ns() - tc) / 1e9);
    }
    int slot = 0;
    for (int a = -1; rc == 0 && a < MAX_ALGS; a++) {
        const char *alg = a < 0 ? NULL : alg_names[GLUCX_COLL_ALLREDUCE][a];
        if (a >= 0 && alg == NULL)
            break;
        if (random_allreduce(env, comm, alg, 1000, slot++) != 0 ||
            random_allreduce(env, comm, alg, 65537, slot++) != 0)
            rc = -1;
    }
    int cslot = 0;
    for (int a = -1; rc == 0 && a < MAX_ALGS; a++) {
        const char *alg = a < 0 ? NULL : alg_names[GLUCX_COLL_BARRIER][a];
        if (a >= 0 && alg == NULL)
            break;
        if (barrier_check(env, comm, alg, cslot) != 0)
            rc = -1;
        cslot += 4;
    }
    if (rc == 0 && async_colls(comm) != 0)
        rc = -1;

    if (t != NULL && rank == 0) {
        itest_note("%d collective calls passed, %d answered unsupported for a forced algorithm, "
                   "%.1f s",
                   t->ok, t->unsupported, (double)(itest_now_ns() - t0) / 1e9);
        for (int c = 0; c < GLUCX_COLL_COUNT && rc == 0; c++)
            for (int a = 0; a < MAX_ALGS && alg_names[c][a] != NULL; a++)
                if (c != GLUCX_COLL_BARRIER && t->alg_ok[c][a] == 0)
                    itest_note("note: %s algorithm '%s' answered unsupported for every call on "
                               "%d ranks",
                               glucx_coll_name((glucx_coll_t)c), alg_names[c][a], size);
    }
    free(t);
    itest_close(ctx, store, comm);
    return rc;
}
