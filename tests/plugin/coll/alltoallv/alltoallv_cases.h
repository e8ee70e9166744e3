/* Alltoallv test cases shared by the tests of every alltoallv algorithm. */
#ifndef GLUCX_TEST_ALLTOALLV_CASES_H
#define GLUCX_TEST_ALLTOALLV_CASES_H

#include "support/coll_world.h"

#define AV_LARGE 100003

/** How many elements rank s sends to rank d. */
typedef size_t (*av_counts_t)(int n, int s, int d);

static size_t av_uneven(int n, int s, int d)
{
    (void)n;
    return (size_t)((s * 3 + d * 5 + 1) % 7); /* 0..6: zeros included, s -> s too */
}

static size_t av_sparse(int n, int s, int d)
{
    (void)n;
    return (s + 2 * d) % 3 == 0 ? (size_t)(s + d + 1) : 0; /* mostly zero blocks */
}

static size_t av_large(int n, int s, int d)
{
    (void)n;
    return (s + d) % 3 == 0 ? AV_LARGE : (size_t)(s * 7 + d) % 5;
}

/* Per-rank arrays (the cw_t's mem[] holds the data buffers). */
typedef struct av_layout {
    size_t send_counts[CW_MAX_RANKS], send_displs[CW_MAX_RANKS];
    size_t counts[CW_MAX_RANKS], displs[CW_MAX_RANKS];
    size_t send_elems, recv_elems;
} av_layout_t;

static av_layout_t av_lay[CW_MAX_RANKS];

/**
 * Alltoallv over @p n ranks with algorithm @p alg, block s -> d of cnt(n, s, d) elements of
 * @p dt with the pattern (salt, s, d). Layouts are not contiguous: send blocks in reverse rank
 * order with 2-element gaps, receive blocks in rank order with 3-element gaps; the receive gaps
 * must stay untouched (0xEE) and the inputs unchanged.
 */
static void av_check(int alg, int n, av_counts_t cnt, glucx_dtype_t dt,
                     void (*hook)(const cw_t *c, av_counts_t cnt, size_t es))
{
    cw_t c;
    cw_init(&c, n, GLUCX_COLL_ALLTOALLV, alg);
    const size_t es = glucx_dtype_size(dt);
    const uint32_t salt = (uint32_t)n * 271 + (uint32_t)dt;
    for (int r = 0; r < n; r++) {
        av_layout_t *L = &av_lay[r];
        size_t off = 0;
        for (int d = n - 1; d >= 0; d--) {
            L->send_counts[d] = cnt(n, r, d);
            L->send_displs[d] = off;
            off += L->send_counts[d] + 2;
        }
        L->send_elems = off;
        off = 0;
        for (int s = 0; s < n; s++) {
            L->counts[s] = cnt(n, s, r);
            L->displs[s] = off;
            off += L->counts[s] + 3;
        }
        L->recv_elems = off;
        char *in = cw_malloc(L->send_elems * es), *out = cw_malloc(L->recv_elems * es);
        memset(in, 0x77, L->send_elems * es);
        memset(out, 0xEE, L->recv_elems * es);
        for (int d = 0; d < n; d++)
            cw_fill(in + L->send_displs[d] * es, L->send_counts[d] * es, salt, r, d);
        c.rank[r].mem[0] = in;
        c.rank[r].mem[1] = out;
        glucx_coll_args_t *a = &c.rank[r].args;
        a->sendbuf = in;
        a->recvbuf = out;
        a->send_counts = L->send_counts;
        a->send_displs = L->send_displs;
        a->counts = L->counts;
        a->displs = L->displs;
        a->dtype = dt;
    }
    cw_run(&c);
    cw_expect_ok(&c);
    for (int r = 0; r < n; r++) {
        const av_layout_t *L = &av_lay[r];
        const char *out = c.rank[r].mem[1], *in = c.rank[r].mem[0];
        for (int s = 0; s < n; s++) {
            size_t bad = cw_bad(out + L->displs[s] * es, L->counts[s] * es, salt, s, r);
            if (bad)
                print_error("n=%d %s: rank %d, block from %d (%zu elements): %zu wrong bytes\n", n,
                            glucx_dtype_name(dt), r, s, L->counts[s], bad);
            assert_int_equal(bad, 0);
            /* the gap after the block */
            assert_true(cw_all(out + (L->displs[s] + L->counts[s]) * es, 3 * es, 0xEE));
            assert_int_equal(
                cw_bad(in + L->send_displs[s] * es, L->send_counts[s] * es, salt, r, s), 0);
        }
    }
    if (hook)
        hook(&c, cnt, es);
    cw_fini(&c);
}

static void av_sweep(int alg, void (*hook)(const cw_t *c, av_counts_t cnt, size_t es))
{
    for (int n = 1; n <= 9; n++) {
        int nn = n == 9 ? 16 : n;
        av_check(alg, nn, av_uneven, cw_dtype(n), hook);
        av_check(alg, nn, av_sparse, cw_dtype(n + 1), hook);
    }
}

static void av_big(int alg, void (*hook)(const cw_t *c, av_counts_t cnt, size_t es))
{
    av_check(alg, 3, av_large, GLUCX_DTYPE_F32, hook);
    av_check(alg, 8, av_large, GLUCX_DTYPE_U8, hook);
}

/* Fault-case arguments: count elements to and from every rank, contiguous. */
static void av_mk(cw_t *c, int r, size_t count, int root)
{
    (void)root;
    av_layout_t *L = &av_lay[r];
    for (int p = 0; p < c->n; p++) {
        L->send_counts[p] = L->counts[p] = count;
        L->send_displs[p] = L->displs[p] = (size_t)p * count;
    }
    c->rank[r].mem[0] = cw_malloc(count * (size_t)c->n * 2);
    c->rank[r].mem[1] = cw_malloc(count * (size_t)c->n * 2);
    memset(c->rank[r].mem[0], 5, count * (size_t)c->n * 2);
    glucx_coll_args_t *a = &c->rank[r].args;
    a->sendbuf = c->rank[r].mem[0];
    a->recvbuf = c->rank[r].mem[1];
    a->send_counts = L->send_counts;
    a->send_displs = L->send_displs;
    a->counts = L->counts;
    a->displs = L->displs;
    a->dtype = GLUCX_DTYPE_F16;
}

/** One entry wrong: rank @p bad expects counts[src] + 1 from @p src (src == bad: its block to
 *  itself disagrees with send_counts[bad]). Every rank must end with MISMATCH. */
static void av_fault_one(int alg, int n, int bad, int src)
{
    cw_t c;
    cw_init(&c, n, GLUCX_COLL_ALLTOALLV, alg);
    for (int r = 0; r < n; r++)
        av_mk(&c, r, 6, 0);
    av_lay[bad].counts[src] += 1;
    av_lay[bad].displs[src] = 0; /* stays inside the buffer: 7 <= 2 n 6 */
    cw_run(&c);
    for (int r = 0; r < n; r++) {
        glucx_status_t st = cw_final_status(&c, r);
        if (st != GLUCX_ERR_MISMATCH)
            print_error("n=%d bad=%d src=%d: rank %d ended with %s\n", n, bad, src, r,
                        glucx_status_string(st));
        assert_int_equal(st, GLUCX_ERR_MISMATCH);
    }
    assert_int_equal(
        c.rank[bad].status == GLUCX_ERR_MISMATCH || c.rank[src].status == GLUCX_ERR_MISMATCH, 1);
    cw_fini(&c);
}

static void av_faults(int alg)
{
    static const int sizes[] = {2, 3, 5, 8};
    const glucx_coll_t V = GLUCX_COLL_ALLTOALLV;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        const int n = sizes[i];
        for (int bad = 0; bad < n; bad++) {
            cw_fault_count(V, alg, n, 0, bad, 9, 0, av_mk);
            cw_fault_count(V, alg, n, 0, bad, 9, 1, av_mk);
            av_fault_one(alg, n, bad, (bad + 1) % n);
            av_fault_one(alg, n, bad, bad);
        }
        cw_fault_kill(V, alg, n, 0, 0, 100, cw_all_fail, av_mk);
        cw_fault_kill(V, alg, n, 0, n - 1, 100, cw_all_fail, av_mk);
    }
}

/** Both algorithms send exactly one message to each other rank (zero-byte ones included),
 *  holding exactly the block for it. */
static void av_volume(const cw_t *c, av_counts_t cnt, size_t es)
{
    for (int r = 0; r < c->n; r++) {
        uint64_t m[CW_MAX_RANKS], by[CW_MAX_RANKS];
        glucx_fake_stats(c->w, r, m, by);
        for (int p = 0; p < c->n; p++) {
            assert_int_equal(m[p], p == r ? 0 : 1);
            assert_int_equal(by[p], p == r ? 0 : cnt(c->n, r, p) * es);
        }
    }
}

/* ---- the test program of one alltoallv algorithm (both algorithms move the same volume and
 * share one cost model, so their test programs are this one, parameterized) ---- */

static int av_alg_index = -1;
static double (*av_alg_cost)(const glucx_topo_t *, size_t);

static void av_test_uneven_and_zero_counts(void **state)
{
    (void)state;
    av_sweep(av_alg_index, av_volume);
}

static void av_test_large(void **state)
{
    (void)state;
    av_big(av_alg_index, av_volume);
}

static void av_test_faults(void **state)
{
    (void)state;
    av_faults(av_alg_index);
}

static void av_test_cost(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(6, 2, &t), GLUCX_OK);
    glucx_link_cost_t l = glucx_topo_bottleneck(t);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = av_alg_cost(t, b);
        assert_true(c == av_alg_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    /* 6 ranks receiving 6000 bytes: 5 exchanges of a 1000-byte mean block, one local copy */
    double want = 5 * (l.alpha_ns + 1000 * l.beta_ns_per_byte) + 1000 * t->copy_ns_per_byte;
    assert_true(fabs(av_alg_cost(t, 6000) - want) <= 1e-9 * want);
    glucx_topo_destroy(t);
}

/** Run every alltoallv test on algorithm @p name, which must sit at row @p row of the table. */
static int av_run_tests(const char *name, int row, double (*cost)(const glucx_topo_t *, size_t))
{
    av_alg_index = glucx_test_alg_index(GLUCX_COLL_ALLTOALLV, name);
    if (av_alg_index != row) {
        fprintf(stderr, "alltoallv algorithm '%s' is at row %d, expected %d\n", name,
                av_alg_index, row);
        return 1;
    }
    av_alg_cost = cost;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(av_test_uneven_and_zero_counts),
        cmocka_unit_test(av_test_large),
        cmocka_unit_test(av_test_faults),
        cmocka_unit_test(av_test_cost),
    };
    return cmocka_run_group_tests_name(name, tests, NULL, NULL);
}

#endif
