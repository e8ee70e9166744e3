/* Scatter test cases shared by the tests of every scatter algorithm. */
#ifndef GLUCX_TEST_SCATTER_CASES_H
#define GLUCX_TEST_SCATTER_CASES_H

#include "support/coll_world.h"

#define SC_LARGE 100003

typedef void (*sc_hook_t)(const cw_t *c, int root, size_t block_bytes);

/**
 * Scatter @p count elements of @p dt to each of @p n ranks from @p root with algorithm @p alg.
 * Block p of the root's sendbuf is the pattern (salt, root, p); every rank must end with its
 * block in recvbuf. With @p alias the root's recvbuf points at its own block of sendbuf (the
 * documented replacement for IN_PLACE). Non-root sendbufs are NULL; the root's is unchanged.
 */
static void sc_check(int alg, int n, int root, size_t count, glucx_dtype_t dt, int alias,
                     sc_hook_t hook)
{
    cw_t c;
    cw_init(&c, n, GLUCX_COLL_SCATTER, alg);
    const size_t b = count * glucx_dtype_size(dt);
    const uint32_t salt = (uint32_t)(n * 733 + root * 17) + (uint32_t)count;
    for (int r = 0; r < n; r++) {
        cw_rank_t *k = &c.rank[r];
        if (r == root) {
            char *in = cw_malloc(b * (size_t)n);
            for (int p = 0; p < n; p++)
                cw_fill(in + (size_t)p * b, b, salt, root, p);
            k->mem[0] = in;
            k->args.sendbuf = in;
        }
        if (r == root && alias) {
            k->args.recvbuf = (char *)k->mem[0] + (size_t)r * b;
        } else {
            k->mem[1] = cw_malloc(b);
            memset(k->mem[1], 0xEE, b);
            k->args.recvbuf = k->mem[1];
        }
        k->args.count = count;
        k->args.dtype = dt;
        k->args.root = root;
    }
    cw_run(&c);
    cw_expect_ok(&c);
    for (int r = 0; r < n; r++) {
        size_t bad = cw_bad(c.rank[r].args.recvbuf, b, salt, root, r);
        if (bad)
            print_error("n=%d root=%d count=%zu %s%s: rank %d has %zu wrong bytes\n", n, root,
                        count, glucx_dtype_name(dt), alias ? " aliased" : "", r, bad);
        assert_int_equal(bad, 0);
    }
    for (int p = 0; p < n; p++)
        assert_int_equal(cw_bad((char *)c.rank[root].mem[0] + (size_t)p * b, b, salt, root, p), 0);
    if (hook)
        hook(&c, root, b);
    cw_fini(&c);
}

/** What every scatter must do: the root sends exactly the n-1 other blocks, every non-root
 *  receives exactly one message (at least its block), the root none. */
static void sc_volume_common(const cw_t *c, int root, size_t b)
{
    uint64_t recvd[CW_MAX_RANKS] = {0}, recvd_bytes[CW_MAX_RANKS] = {0};
    for (int r = 0; r < c->n; r++) {
        uint64_t m[CW_MAX_RANKS], by[CW_MAX_RANKS];
        glucx_fake_stats(c->w, r, m, by);
        for (int p = 0; p < c->n; p++) {
            recvd[p] += m[p];
            recvd_bytes[p] += by[p];
        }
    }
    for (int r = 0; r < c->n; r++) {
        assert_int_equal(recvd[r], r == root ? 0 : 1);
        if (r != root)
            assert_true(recvd_bytes[r] >= b);
    }
    assert_int_equal(cw_bytes_sent(c, root), (uint64_t)(c->n - 1) * b);
}

static void sc_sweep(int alg, sc_hook_t hook)
{
    static const size_t counts[] = {0, 1, 7, 64};
    int k = 0;
    for (int n = 1; n <= 9; n++) {
        int nn = n == 9 ? 16 : n;
        for (int root = 0; root < nn; root++)
            for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++, k++)
                sc_check(alg, nn, root, counts[i], cw_dtype(k), k % 3 == 1, hook);
    }
}

static void sc_large(int alg, sc_hook_t hook)
{
    static const int sizes[] = {3, 8};
    for (size_t i = 0; i < 2; i++)
        for (int root = 0; root < sizes[i]; root++)
            sc_check(alg, sizes[i], root, SC_LARGE, cw_dtype(root), root % 2, hook);
}

static void sc_mk(cw_t *c, int r, size_t count, int root)
{
    if (r == root) {
        c->rank[r].mem[0] = cw_malloc(count * 2 * (size_t)c->n);
        memset(c->rank[r].mem[0], 1, count * 2 * (size_t)c->n);
        c->rank[r].args.sendbuf = c->rank[r].mem[0];
    }
    c->rank[r].mem[1] = cw_malloc(count * 2);
    c->rank[r].args.recvbuf = c->rank[r].mem[1];
    c->rank[r].args.count = count;
    c->rank[r].args.dtype = GLUCX_DTYPE_BF16;
    c->rank[r].args.root = root;
}

static int sc_root_fails(int rank, int root, int victim)
{
    (void)rank;
    return victim == root;
}

/** @p claim_detected: whether a rank that wrongly believes itself the root is detected. */
static void sc_faults(int alg, int claim_detected)
{
    static const int sizes[] = {2, 3, 5, 8};
    const glucx_coll_t S = GLUCX_COLL_SCATTER;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        const int n = sizes[i];
        for (int root = 0; root < n; root += (n > 3 ? 3 : 1)) {
            for (int bad = 0; bad < n; bad++) {
                cw_fault_count(S, alg, n, root, bad, 17, 0, sc_mk);
                cw_fault_count(S, alg, n, root, bad, 17, 1, sc_mk);
            }
            const int next = (root + 1) % n;
            cw_fault_root(S, alg, n, root, root, next, 1, sc_mk);
            cw_fault_root(S, alg, n, root, next, next, claim_detected, sc_mk);
            if (n > 2)
                cw_fault_root(S, alg, n, root, next, (root + 2) % n, 1, sc_mk);
            cw_fault_kill(S, alg, n, root, root, 1000, sc_root_fails, sc_mk);
            cw_fault_kill(S, alg, n, root, (root + n - 1) % n, 1000, sc_root_fails, sc_mk);
        }
    }
}

#endif
