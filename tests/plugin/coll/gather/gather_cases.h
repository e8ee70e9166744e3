/* Gather test cases shared by the tests of every gather algorithm. */
#ifndef GLUCX_TEST_GATHER_CASES_H
#define GLUCX_TEST_GATHER_CASES_H

#include "support/coll_world.h"

#define GA_LARGE 100003

typedef void (*ga_hook_t)(const cw_t *c, int root, size_t block_bytes);

/**
 * Gather @p count elements of @p dt from each of @p n ranks to @p root with algorithm @p alg.
 * Rank r's block is the pattern (salt, r, root); the root's recvbuf must hold block p at p*count
 * (IN_PLACE: the root's own block is in recvbuf already). Inputs unchanged; non-root recvbufs
 * (NULL on odd ranks, a guard elsewhere) untouched.
 */
static void ga_check(int alg, int n, int root, size_t count, glucx_dtype_t dt, int in_place,
                     ga_hook_t hook)
{
    cw_t c;
    cw_init(&c, n, GLUCX_COLL_GATHER, alg);
    const size_t b = count * glucx_dtype_size(dt);
    const uint32_t salt = (uint32_t)(n * 977 + root * 13) + (uint32_t)count;
    for (int r = 0; r < n; r++) {
        cw_rank_t *k = &c.rank[r];
        k->mem[0] = cw_malloc(b);
        cw_fill(k->mem[0], b, salt, r, root);
        k->args.sendbuf = k->mem[0];
        if (r == root) {
            k->mem[1] = cw_malloc(b * (size_t)n);
            memset(k->mem[1], 0xEE, b * (size_t)n);
            if (in_place) {
                cw_fill((char *)k->mem[1] + (size_t)r * b, b, salt, r, root);
                k->args.sendbuf = GLUCX_IN_PLACE;
            }
            k->args.recvbuf = k->mem[1];
        } else if (r % 2 == 0) {
            k->mem[1] = cw_malloc(b * (size_t)n);
            memset(k->mem[1], 0xEE, b * (size_t)n);
            k->args.recvbuf = k->mem[1];
        }
        k->args.count = count;
        k->args.dtype = dt;
        k->args.root = root;
    }
    cw_run(&c);
    cw_expect_ok(&c);
    const char *out = c.rank[root].mem[1];
    for (int p = 0; p < n; p++) {
        size_t bad = cw_bad(out + (size_t)p * b, b, salt, p, root);
        if (bad)
            print_error("n=%d root=%d count=%zu %s%s: block of rank %d has %zu wrong bytes\n", n,
                        root, count, glucx_dtype_name(dt), in_place ? " in place" : "", p, bad);
        assert_int_equal(bad, 0);
    }
    for (int r = 0; r < n; r++) {
        assert_int_equal(cw_bad(c.rank[r].mem[0], b, salt, r, root), 0);
        if (r != root && c.rank[r].mem[1] != NULL)
            assert_true(cw_all(c.rank[r].mem[1], b * (size_t)n, 0xEE));
    }
    if (hook)
        hook(&c, root, b);
    cw_fini(&c);
}

/** What every gather must send: each non-root rank exactly one message, and the root
 *  receives exactly the n-1 other blocks. */
static void ga_volume_common(const cw_t *c, int root, size_t b)
{
    uint64_t to_root = 0;
    for (int r = 0; r < c->n; r++) {
        uint64_t m[CW_MAX_RANKS], by[CW_MAX_RANKS], msgs = 0;
        glucx_fake_stats(c->w, r, m, by);
        for (int p = 0; p < c->n; p++)
            msgs += m[p];
        assert_int_equal(msgs, r == root ? 0 : 1);
        to_root += by[root];
    }
    assert_int_equal(to_root, (uint64_t)(c->n - 1) * b);
}

static void ga_sweep(int alg, ga_hook_t hook)
{
    static const size_t counts[] = {0, 1, 7, 64};
    int k = 0;
    for (int n = 1; n <= 9; n++) {
        int nn = n == 9 ? 16 : n;
        for (int root = 0; root < nn; root++)
            for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++, k++)
                ga_check(alg, nn, root, counts[i], cw_dtype(k), k % 3 == 0, hook);
    }
}

static void ga_large(int alg, ga_hook_t hook)
{
    static const int sizes[] = {3, 8};
    for (size_t i = 0; i < 2; i++)
        for (int root = 0; root < sizes[i]; root++)
            ga_check(alg, sizes[i], root, GA_LARGE, cw_dtype(root), root % 2, hook);
}

static void ga_mk(cw_t *c, int r, size_t count, int root)
{
    c->rank[r].mem[0] = cw_malloc(count * 8);
    memset(c->rank[r].mem[0], 1, count * 8);
    c->rank[r].args.sendbuf = c->rank[r].mem[0];
    if (r == root) {
        c->rank[r].mem[1] = cw_malloc(count * 8 * (size_t)c->n);
        c->rank[r].args.recvbuf = c->rank[r].mem[1];
    }
    c->rank[r].args.count = count;
    c->rank[r].args.dtype = GLUCX_DTYPE_I64;
    c->rank[r].args.root = root;
}

static int ga_root_fails(int rank, int root, int victim)
{
    (void)victim;
    return rank == root;
}

static void ga_faults(int alg)
{
    static const int sizes[] = {2, 3, 5, 8};
    const glucx_coll_t G = GLUCX_COLL_GATHER;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        const int n = sizes[i];
        for (int root = 0; root < n; root += (n > 3 ? 3 : 1)) {
            for (int bad = 0; bad < n; bad++) {
                cw_fault_count(G, alg, n, root, bad, 17, 0, ga_mk);
                cw_fault_count(G, alg, n, root, bad, 17, 1, ga_mk);
            }
            const int next = (root + 1) % n;
            /* detectable unless the true root is the misled one (see reduce_cases.h) */
            cw_fault_root(G, alg, n, root, root, next, 0, ga_mk);
            cw_fault_root(G, alg, n, root, next, next, 1, ga_mk);
            if (n > 2)
                cw_fault_root(G, alg, n, root, next, (root + 2) % n, 1, ga_mk);
            cw_fault_kill(G, alg, n, root, root, 1000, ga_root_fails, ga_mk);
            cw_fault_kill(G, alg, n, root, (root + n - 1) % n, 1000, ga_root_fails, ga_mk);
        }
    }
}

#endif
