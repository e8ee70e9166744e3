/* Tests of plugin/coll/alltoall/bruck.c on the fake transport. */
#include "plugin/coll/alltoall/alltoall_cases.h"
#include "coll/alltoall/alltoall.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_ALLTOALL, "bruck");
    assert_int_equal(a, GLUCX_ALLTOALL_BRUCK);
    return a;
}

/* Round k: one message to rank + 2^k holding the blocks whose index in [0, n) has bit k set. */
static void volume(const cw_t *c, size_t b)
{
    const int n = c->n;
    for (int r = 0; r < n; r++) {
        uint64_t m[CW_MAX_RANKS], by[CW_MAX_RANKS];
        uint64_t want_m[CW_MAX_RANKS] = {0}, want_b[CW_MAX_RANKS] = {0};
        for (int dist = 1; dist < n; dist *= 2) {
            int blocks = 0;
            for (int i = 0; i < n; i++)
                blocks += (i & dist) != 0;
            want_m[(r + dist) % n]++;
            want_b[(r + dist) % n] += (uint64_t)blocks * b;
        }
        glucx_fake_stats(c->w, r, m, by);
        for (int p = 0; p < n; p++) {
            assert_int_equal(m[p], want_m[p]);
            assert_int_equal(by[p], want_b[p]);
        }
    }
}

static void test_sizes_counts(void **state)
{
    (void)state;
    aa_sweep(alg(), volume);
}

static void test_large(void **state)
{
    (void)state;
    aa_large(alg(), volume);
}

static void test_faults(void **state)
{
    (void)state;
    aa_faults(alg());
}

static void test_block_count(void **state)
{
    (void)state;
    for (int n = 1; n <= 70; n++)
        for (int k = 0; (1 << k) < n; k++) {
            int want = 0;
            for (int i = 0; i < n; i++)
                want += (i >> k) & 1;
            assert_int_equal(glucx_alltoall_bruck_blocks(n, k), want);
        }
}

static void test_cost(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(8, 1, &t), GLUCX_OK);
    glucx_link_cost_t l = glucx_topo_bottleneck(t);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = glucx_alltoall_bruck_cost(t, b);
        assert_true(c == glucx_alltoall_bruck_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    /* 8 ranks, zero bytes: three latencies */
    assert_true(fabs(glucx_alltoall_bruck_cost(t, 0) - 3 * l.alpha_ns) <= 1e-9 * l.alpha_ns);
    glucx_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_counts), cmocka_unit_test(test_large),
        cmocka_unit_test(test_faults),       cmocka_unit_test(test_block_count),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
