/* Broadcast test cases shared by the tests of every broadcast algorithm. */
#ifndef GLUCX_TEST_BCAST_CASES_H
#define GLUCX_TEST_BCAST_CASES_H

#include "support/coll_world.h"

static const size_t bc_counts[] = {0, 1, 7, 13, 64};
#define BC_NCOUNTS (sizeof(bc_counts) / sizeof(bc_counts[0]))
#define BC_LARGE 100003

/** Per-run hook for algorithm-specific checks (traffic volume), on the main thread. */
typedef void (*bc_hook_t)(const cw_t *c, int root, size_t count, size_t bytes);

/**
 * Broadcast @p count elements of @p dt from @p root over @p n ranks with algorithm @p alg;
 * check every rank's buffer byte by byte against the root's pattern and call @p hook.
 * Ranks other than the root start with 0xEE garbage; with count 0 every buffer is NULL.
 */
static void bc_check(int alg, int n, int root, size_t count, glucx_dtype_t dt, bc_hook_t hook)
{
    cw_t c;
    cw_init(&c, n, GLUCX_COLL_BROADCAST, alg);
    const size_t bytes = count * glucx_dtype_size(dt);
    const uint32_t salt = (uint32_t)(n * 1000 + root * 10) + (uint32_t)count;
    void *buf[CW_MAX_RANKS];
    for (int r = 0; r < n; r++) {
        buf[r] = count ? cw_malloc(bytes) : NULL;
        if (r == root)
            cw_fill(buf[r], bytes, salt, root, 0);
        else if (bytes)
            memset(buf[r], 0xEE, bytes);
        glucx_coll_args_t *a = &c.rank[r].args;
        a->recvbuf = buf[r];
        a->count = count;
        a->dtype = dt;
        a->root = root;
    }
    cw_run(&c);
    cw_expect_ok(&c);
    for (int r = 0; r < n; r++) {
        size_t bad = cw_bad(buf[r], bytes, salt, root, 0);
        if (bad)
            print_error("n=%d root=%d count=%zu %s: rank %d has %zu wrong bytes\n", n, root, count,
                        glucx_dtype_name(dt), r, bad);
        assert_int_equal(bad, 0);
    }
    if (hook)
        hook(&c, root, count, bytes);
    for (int r = 0; r < n; r++)
        free(buf[r]);
    cw_fini(&c);
}

/** Every size 1..8 (and 16), every root, the small counts, a rotating dtype. */
static void bc_sweep(int alg, bc_hook_t hook)
{
    int d = 0;
    for (int n = 1; n <= 9; n++) {
        int nn = n == 9 ? 16 : n;
        for (int root = 0; root < nn; root++)
            for (size_t i = 0; i < BC_NCOUNTS; i++)
                bc_check(alg, nn, root, bc_counts[i], cw_dtype(d++), hook);
    }
}

/** The large count for a few sizes, every root. */
static void bc_large(int alg, bc_hook_t hook)
{
    static const int sizes[] = {2, 3, 8};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (int root = 0; root < sizes[i]; root++)
            bc_check(alg, sizes[i], root, BC_LARGE, root % 2 ? GLUCX_DTYPE_F32 : GLUCX_DTYPE_U8,
                     hook);
}

/* Arguments of rank r for the fault cases: count f32 elements, filled with 1. */
static void bc_mk(cw_t *c, int r, size_t count, int root)
{
    void *buf = cw_malloc(count * 4);
    memset(buf, 1, count * 4);
    c->rank[r].mem[0] = buf;
    c->rank[r].args.recvbuf = buf;
    c->rank[r].args.count = count;
    c->rank[r].args.dtype = GLUCX_DTYPE_F32;
    c->rank[r].args.root = root;
}

static int bc_root_fails(int rank, int root, int victim)
{
    (void)rank;
    return victim == root; /* nobody gets the data */
}

/**
 * The fault cases over a few sizes, roots and culprits. A root mismatch is detectable by
 * construction unless the misled rank believes itself the root (it then only sends) and
 * @p claim_detected is 0: see the report in plugin/coll/broadcast/binomial.c.
 */
static void bc_faults(int alg, int claim_detected)
{
    static const int sizes[] = {2, 3, 5, 8};
    const glucx_coll_t B = GLUCX_COLL_BROADCAST;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        const int n = sizes[i];
        for (int root = 0; root < n; root += (n > 3 ? 3 : 1)) {
            for (int bad = 0; bad < n; bad++) {
                cw_fault_count(B, alg, n, root, bad, 17, 0, bc_mk);
                cw_fault_count(B, alg, n, root, bad, 17, 1, bc_mk);
            }
            const int next = (root + 1) % n;
            cw_fault_root(B, alg, n, root, root, next, 1, bc_mk);              /* the root misled */
            cw_fault_root(B, alg, n, root, next, next, claim_detected, bc_mk); /* claims root */
            if (n > 2)
                cw_fault_root(B, alg, n, root, next, (root + 2) % n, 1, bc_mk);
            cw_fault_kill(B, alg, n, root, root, 1000, bc_root_fails, bc_mk);
            cw_fault_kill(B, alg, n, root, (root + n - 1) % n, 1000, bc_root_fails, bc_mk);
        }
    }
}

#endif
