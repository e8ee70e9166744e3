/* Reduce test cases shared by the tests of every reduce algorithm. */
#ifndef GLUCX_TEST_REDUCE_CASES_H
#define GLUCX_TEST_REDUCE_CASES_H

#include "support/coll_world.h"

#define RD_LARGE 100003

/** Per-run hook for algorithm-specific checks (traffic volume), on the main thread. */
typedef void (*rd_hook_t)(const cw_t *c, int root, size_t bytes);

/* Canonical bracketing of the rank-ordered contributions x[lo..hi): the interval halved, the
 * lower half taking the extra rank, lower half combined on the left (written here
 * independently of plugin/coll/broadcast/tree.c). */
static double rd_halving_f64(const double *x, int lo, int hi)
{
    if (hi - lo == 1)
        return x[lo];
    int mid = lo + (hi - lo + 1) / 2;
    return rd_halving_f64(x, lo, mid) + rd_halving_f64(x, mid, hi);
}

static float rd_halving_f32(const float *x, int lo, int hi)
{
    if (hi - lo == 1)
        return x[lo];
    int mid = lo + (hi - lo + 1) / 2;
    return rd_halving_f32(x, lo, mid) + rd_halving_f32(x, mid, hi);
}

/*
 * The documented bracketing of the algorithm under test, for RD_CANONICAL:
 * 0: the canonical halving of [0, n) (binomial);
 * 1: adjacent pairs 2i, 2i+1 (i < n - p, p the largest power of two <= n) folded first, then the
 *    halving of the p partial results (reduce_scatter_gather). Same as 0 for a power of two.
 */
static int rd_fold_first;

static double rd_bracket_f64(const double *x, int n)
{
    if (!rd_fold_first)
        return rd_halving_f64(x, 0, n);
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    double y[CW_MAX_RANKS];
    for (int v = 0; v < p; v++)
        y[v] = v < n - p ? x[2 * v] + x[2 * v + 1] : x[v + n - p];
    return rd_halving_f64(y, 0, p);
}

static float rd_bracket_f32(const float *x, int n)
{
    if (!rd_fold_first)
        return rd_halving_f32(x, 0, n);
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    float y[CW_MAX_RANKS];
    for (int v = 0; v < p; v++)
        y[v] = v < n - p ? x[2 * v] + x[2 * v + 1] : x[v + n - p];
    return rd_halving_f32(y, 0, p);
}

enum { RD_EXACT, RD_CANONICAL };

/**
 * Reduce @p count elements of @p dt with @p op to @p root over @p n ranks with algorithm @p alg.
 * RD_EXACT: inputs for which every operand order gives one exact result, checked against the
 * harness's rank-order reference. RD_CANONICAL (F32/F64 SUM): random inputs, the root's
 * result must be bitwise the algorithm's documented bracketing (rd_fold_first), for any root.
 * Also: inputs never modified; non-root recvbufs (NULL on odd ranks, a guard elsewhere) never
 * written; the root's result in recvbuf (IN_PLACE: input taken from there).
 */
static void rd_check(int alg, int n, int root, size_t count, glucx_dtype_t dt, glucx_op_t op,
                     int in_place, int kind, rd_hook_t hook)
{
    cw_t c;
    cw_init(&c, n, GLUCX_COLL_REDUCE, alg);
    const size_t bytes = count * glucx_dtype_size(dt);
    const uint64_t seed = (uint64_t)n * 7919 + (uint64_t)root * 131 + count;
    const void *pristine[CW_MAX_RANKS];
    for (int r = 0; r < n; r++) {
        cw_rank_t *k = &c.rank[r];
        void *in = cw_malloc(bytes);
        if (kind == RD_EXACT)
            glucx_test_fill_exact(dt, op, in, count, seed + (uint64_t)r);
        else
            glucx_test_fill_random(dt, in, count, seed + (uint64_t)r);
        k->mem[0] = in;
        k->mem[1] = cw_malloc(bytes);
        memcpy(k->mem[1], in, bytes);
        pristine[r] = k->mem[1];
        k->args.sendbuf = in;
        k->args.recvbuf = NULL;
        if (r == root) {
            void *out = cw_malloc(bytes);
            if (in_place) {
                memcpy(out, in, bytes);
                k->args.sendbuf = GLUCX_IN_PLACE;
            } else {
                memset(out, 0xEE, bytes);
            }
            k->mem[2] = out;
            k->args.recvbuf = out;
        } else if (r % 2 == 0) {
            k->mem[2] = cw_malloc(bytes);
            memset(k->mem[2], 0xEE, bytes);
            k->args.recvbuf = k->mem[2];
        }
        k->args.count = count;
        k->args.dtype = dt;
        k->args.op = op;
        k->args.root = root;
    }
    void *want = cw_malloc(bytes);
    if (kind == RD_EXACT) {
        glucx_test_ref_reduce(dt, op, n, pristine, count, want);
    } else {
        for (size_t j = 0; j < count; j++) {
            if (dt == GLUCX_DTYPE_F64) {
                double x[CW_MAX_RANKS];
                for (int r = 0; r < n; r++)
                    memcpy(&x[r], (const char *)pristine[r] + j * 8, 8);
                double v = rd_bracket_f64(x, n);
                memcpy((char *)want + j * 8, &v, 8);
            } else {
                float x[CW_MAX_RANKS];
                for (int r = 0; r < n; r++)
                    memcpy(&x[r], (const char *)pristine[r] + j * 4, 4);
                float v = rd_bracket_f32(x, n);
                memcpy((char *)want + j * 4, &v, 4);
            }
        }
    }

    cw_run(&c);
    cw_expect_ok(&c);

    const void *got = c.rank[root].mem[2];
    size_t at = kind == RD_EXACT ? glucx_test_compare(dt, got, want, count, 0)
                                 : (memcmp(got, want, bytes) == 0 ? (size_t)-1 : 0);
    if (at != (size_t)-1)
        print_error("n=%d root=%d count=%zu %s %s%s: element %zu is %.17g, want %.17g\n", n, root,
                    count, glucx_dtype_name(dt), glucx_op_name(op), in_place ? " in place" : "", at,
                    glucx_test_get(dt, got, at), glucx_test_get(dt, want, at));
    assert_true(at == (size_t)-1);
    for (int r = 0; r < n; r++) {
        if (!(r == root && in_place) && bytes > 0)
            assert_memory_equal(c.rank[r].mem[0], pristine[r], bytes);
        if (r != root && c.rank[r].mem[2] != NULL)
            assert_true(cw_all(c.rank[r].mem[2], bytes, 0xEE));
    }
    if (hook)
        hook(&c, root, bytes);
    free(want);
    cw_fini(&c);
}

/** The (dtype, op) pairs reduce supports. */
static int rd_combos(glucx_dtype_t *dts, glucx_op_t *ops)
{
    int k = 0;
    for (int d = 0; d < GLUCX_DTYPE_COUNT; d++)
        for (int o = 0; o < GLUCX_OP_COUNT; o++)
            if (glucx_op_supported((glucx_op_t)o, (glucx_dtype_t)d)) {
                dts[k] = (glucx_dtype_t)d;
                ops[k++] = (glucx_op_t)o;
            }
    return k;
}

/** Sizes 1..8 and 16, every root, counts 0/1/7/64, rotating (dtype, op), in place or not. */
static void rd_sweep(int alg, rd_hook_t hook)
{
    static const size_t counts[] = {0, 1, 7, 64};
    glucx_dtype_t dts[GLUCX_DTYPE_COUNT * GLUCX_OP_COUNT];
    glucx_op_t ops[GLUCX_DTYPE_COUNT * GLUCX_OP_COUNT];
    const int ncombo = rd_combos(dts, ops);
    int k = 0;
    for (int n = 1; n <= 9; n++) {
        int nn = n == 9 ? 16 : n;
        for (int root = 0; root < nn; root++)
            for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++, k++)
                rd_check(alg, nn, root, counts[i], dts[k % ncombo], ops[k % ncombo],
                         (int)((root + i) % 2), RD_EXACT, hook);
    }
}

/** Every supported (dtype, op) on 5 and 8 ranks, odd count, in place and not. */
static void rd_all_ops(int alg, rd_hook_t hook)
{
    glucx_dtype_t dts[GLUCX_DTYPE_COUNT * GLUCX_OP_COUNT];
    glucx_op_t ops[GLUCX_DTYPE_COUNT * GLUCX_OP_COUNT];
    const int ncombo = rd_combos(dts, ops);
    for (int k = 0; k < ncombo; k++) {
        rd_check(alg, 5, 2, 33, dts[k], ops[k], 0, RD_EXACT, hook);
        rd_check(alg, 8, 7, 33, dts[k], ops[k], 1, RD_EXACT, hook);
    }
}

/** The large count, every root of 3 and 8 ranks. */
static void rd_large(int alg, rd_hook_t hook)
{
    static const int sizes[] = {3, 8};
    static const glucx_dtype_t dts[] = {GLUCX_DTYPE_F32, GLUCX_DTYPE_I32, GLUCX_DTYPE_F64,
                                        GLUCX_DTYPE_BF16};
    static const glucx_op_t ops[] = {GLUCX_OP_SUM, GLUCX_OP_BXOR, GLUCX_OP_AVG, GLUCX_OP_MAX};
    int k = 0;
    for (size_t i = 0; i < 2; i++)
        for (int root = 0; root < sizes[i]; root++, k++)
            rd_check(alg, sizes[i], root, RD_LARGE, dts[k % 4], ops[k % 4], root % 2, RD_EXACT,
                     hook);
}

/** Random floats: bitwise the canonical bracketing for every size and root. */
static void rd_canonical(int alg)
{
    for (int n = 1; n <= 9; n++) {
        int nn = n == 9 ? 13 : n;
        for (int root = 0; root < nn; root++) {
            rd_check(alg, nn, root, 257, GLUCX_DTYPE_F32, GLUCX_OP_SUM, root % 2, RD_CANONICAL,
                     NULL);
            rd_check(alg, nn, root, 31, GLUCX_DTYPE_F64, GLUCX_OP_SUM, 0, RD_CANONICAL, NULL);
        }
    }
}

/* Fault-case arguments of rank r: count i32 elements, sum; NULL recvbuf off the root. */
static void rd_mk(cw_t *c, int r, size_t count, int root)
{
    void *in = cw_malloc(count * 4);
    memset(in, 1, count * 4);
    c->rank[r].mem[0] = in;
    c->rank[r].args.sendbuf = in;
    if (r == root) {
        c->rank[r].mem[1] = cw_malloc(count * 4);
        c->rank[r].args.recvbuf = c->rank[r].mem[1];
    }
    c->rank[r].args.count = count;
    c->rank[r].args.dtype = GLUCX_DTYPE_I32;
    c->rank[r].args.op = GLUCX_OP_SUM;
    c->rank[r].args.root = root;
}

static int rd_root_fails(int rank, int root, int victim)
{
    (void)victim;
    return rank == root; /* it needs every contribution */
}

/**
 * Count mismatch, root mismatch and crashes over a few sizes, roots and culprits. A root
 * mismatch is detectable by construction when the misled rank is not the true root: it then
 * either believes itself the root and waits for children, or its true parent waits for it. A
 * misled true root may only send (e.g. 2 ranks that each believe the other is the root), which
 * nobody can notice without an extra message.
 */
static void rd_faults(int alg)
{
    static const int sizes[] = {2, 3, 5, 8};
    const glucx_coll_t R = GLUCX_COLL_REDUCE;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        const int n = sizes[i];
        for (int root = 0; root < n; root += (n > 3 ? 3 : 1)) {
            for (int bad = 0; bad < n; bad++) {
                cw_fault_count(R, alg, n, root, bad, 17, 0, rd_mk);
                cw_fault_count(R, alg, n, root, bad, 17, 1, rd_mk);
            }
            const int next = (root + 1) % n;
            cw_fault_root(R, alg, n, root, root, next, 0, rd_mk);
            cw_fault_root(R, alg, n, root, next, next, 1, rd_mk);
            if (n > 2)
                cw_fault_root(R, alg, n, root, next, (root + 2) % n, 1, rd_mk);
            cw_fault_kill(R, alg, n, root, root, 1000, rd_root_fails, rd_mk);
            cw_fault_kill(R, alg, n, root, (root + n - 1) % n, 1000, rd_root_fails, rd_mk);
        }
    }
}

#endif
