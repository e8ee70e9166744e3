/* Tests of plugin/coll/alltoall/pairwise.c on the fake transport. */
#include "plugin/coll/alltoall/alltoall_cases.h"
#include "coll/alltoall/alltoall.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_ALLTOALL, "pairwise");
    assert_int_equal(a, GLUCX_ALLTOALL_PAIRWISE);
    return a;
}

/* Every rank sends exactly one message of one block to every other rank: (n-1) b bytes. */
static void volume(const cw_t *c, size_t b)
{
    for (int r = 0; r < c->n; r++) {
        uint64_t m[CW_MAX_RANKS], by[CW_MAX_RANKS];
        glucx_fake_stats(c->w, r, m, by);
        for (int p = 0; p < c->n; p++) {
            assert_int_equal(m[p], p == r ? 0 : 1);
            assert_int_equal(by[p], p == r ? 0 : b);
        }
        assert_int_equal(cw_bytes_sent(c, r), (uint64_t)(c->n - 1) * b);
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

/* Cost: pure and monotonic; Bruck's log2(n) messages win for tiny blocks on 8 ranks, pairwise's
 * single pass over each block wins for large ones. */
static void test_cost(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(8, 1, &t), GLUCX_OK);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = glucx_alltoall_pairwise_cost(t, b);
        assert_true(c == glucx_alltoall_pairwise_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    assert_true(glucx_alltoall_bruck_cost(t, 8 * 8) < glucx_alltoall_pairwise_cost(t, 8 * 8));
    assert_true(glucx_alltoall_pairwise_cost(t, (size_t)8 << 20) <
                glucx_alltoall_bruck_cost(t, (size_t)8 << 20));
    glucx_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_counts),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
