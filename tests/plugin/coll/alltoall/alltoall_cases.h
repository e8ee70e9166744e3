/* Alltoall test cases shared by the tests of every alltoall algorithm. */
#ifndef GLUCX_TEST_ALLTOALL_CASES_H
#define GLUCX_TEST_ALLTOALL_CASES_H

#include "support/coll_world.h"

#define AA_LARGE 100003

typedef void (*aa_hook_t)(const cw_t *c, size_t block_bytes);

/**
 * Alltoall of @p count elements of @p dt per block over @p n ranks with algorithm @p alg.
 * Block d of rank s's input is the pattern (salt, s, d); afterwards block s of rank d's recvbuf
 * must be that pattern. IN_PLACE: the input is in recvbuf. Inputs otherwise unchanged.
 */
static void aa_check(int alg, int n, size_t count, glucx_dtype_t dt, int in_place, aa_hook_t hook)
{
    cw_t c;
    cw_init(&c, n, GLUCX_COLL_ALLTOALL, alg);
    const size_t b = count * glucx_dtype_size(dt), all = b * (size_t)n;
    const uint32_t salt = (uint32_t)(n * 389) + (uint32_t)count * 3 + (uint32_t)in_place;
    for (int r = 0; r < n; r++) {
        cw_rank_t *k = &c.rank[r];
        char *in = cw_malloc(all), *out = cw_malloc(all);
        for (int d = 0; d < n; d++)
            cw_fill(in + (size_t)d * b, b, salt, r, d);
        if (in_place) {
            memcpy(out, in, all);
            k->args.sendbuf = GLUCX_IN_PLACE;
        } else {
            memset(out, 0xEE, all);
            k->args.sendbuf = in;
        }
        k->mem[0] = in;
        k->mem[1] = out;
        k->args.recvbuf = out;
        k->args.count = count;
        k->args.dtype = dt;
    }
    cw_run(&c);
    cw_expect_ok(&c);
    for (int r = 0; r < n; r++) {
        const char *out = c.rank[r].mem[1], *in = c.rank[r].mem[0];
        for (int s = 0; s < n; s++) {
            size_t bad = cw_bad(out + (size_t)s * b, b, salt, s, r);
            if (bad)
                print_error("n=%d count=%zu %s%s: rank %d, block from %d: %zu wrong bytes\n", n,
                            count, glucx_dtype_name(dt), in_place ? " in place" : "", r, s, bad);
            assert_int_equal(bad, 0);
            assert_int_equal(cw_bad(in + (size_t)s * b, b, salt, r, s), 0);
        }
    }
    if (hook)
        hook(&c, b);
    cw_fini(&c);
}

static void aa_sweep(int alg, aa_hook_t hook)
{
    static const size_t counts[] = {0, 1, 7, 64};
    int k = 0;
    for (int n = 1; n <= 9; n++) {
        int nn = n == 9 ? 16 : n;
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++, k++)
            for (int ip = 0; ip < 2; ip++)
                aa_check(alg, nn, counts[i], cw_dtype(k + ip), ip, hook);
    }
}

static void aa_large(int alg, aa_hook_t hook)
{
    aa_check(alg, 3, AA_LARGE, GLUCX_DTYPE_F64, 0, hook);
    aa_check(alg, 5, AA_LARGE, GLUCX_DTYPE_I32, 1, hook);
    aa_check(alg, 8, AA_LARGE, GLUCX_DTYPE_F16, 0, hook);
}

static void aa_mk(cw_t *c, int r, size_t count, int root)
{
    (void)root;
    size_t all = count * 4 * (size_t)c->n;
    c->rank[r].mem[0] = cw_malloc(all);
    c->rank[r].mem[1] = cw_malloc(all);
    memset(c->rank[r].mem[0], 1, all);
    c->rank[r].args.sendbuf = c->rank[r].mem[0];
    c->rank[r].args.recvbuf = c->rank[r].mem[1];
    c->rank[r].args.count = count;
    c->rank[r].args.dtype = GLUCX_DTYPE_F32;
}

/** Count mismatch (bigger, or 0) at every rank of a few sizes; crashes (every survivor needs
 *  the victim's block, so every survivor must fail). */
static void aa_faults(int alg)
{
    static const int sizes[] = {2, 3, 5, 8};
    const glucx_coll_t A = GLUCX_COLL_ALLTOALL;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        const int n = sizes[i];
        for (int bad = 0; bad < n; bad++) {
            cw_fault_count(A, alg, n, 0, bad, 9, 0, aa_mk);
            cw_fault_count(A, alg, n, 0, bad, 9, 1, aa_mk);
        }
        cw_fault_kill(A, alg, n, 0, 0, 100, cw_all_fail, aa_mk);
        cw_fault_kill(A, alg, n, 0, n - 1, 100, cw_all_fail, aa_mk);
    }
}

#endif
