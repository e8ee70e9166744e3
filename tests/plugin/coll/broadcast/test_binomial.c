/* Tests of plugin/coll/broadcast/binomial.c on the fake transport. */
#include "plugin/coll/broadcast/bcast_cases.h"
#include "coll/broadcast/broadcast.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_BROADCAST, "binomial");
    assert_int_equal(a, GLUCX_BROADCAST_BINOMIAL);
    return a;
}

/* A binomial tree moves the whole message over each of its n-1 edges exactly once; the root has
 * ceil(log2 n) children for a power of two (at most that otherwise). */
static void volume(const cw_t *c, int root, size_t count, size_t bytes)
{
    (void)count;
    uint64_t msgs, total;
    cw_totals(c, &msgs, &total);
    assert_int_equal(msgs, (uint64_t)(c->n - 1));
    assert_int_equal(total, (uint64_t)(c->n - 1) * bytes);
    int log2n = 0;
    while ((1 << log2n) < c->n)
        log2n++;
    uint64_t m[CW_MAX_RANKS];
    glucx_fake_stats(c->w, root, m, NULL);
    uint64_t root_msgs = 0;
    for (int p = 0; p < c->n; p++)
        root_msgs += m[p];
    assert_true(root_msgs <= (uint64_t)log2n);
    if ((c->n & (c->n - 1)) == 0)
        assert_int_equal(root_msgs, (uint64_t)log2n);
}

static void test_sizes_roots_counts(void **state)
{
    (void)state;
    bc_sweep(alg(), volume);
}

static void test_large(void **state)
{
    (void)state;
    bc_large(alg(), volume);
}

static void test_faults(void **state)
{
    (void)state;
    bc_faults(alg(), 0);
}

/* Cost: pure and monotonic in bytes; log2(n) whole-message steps. */
static void test_cost(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(8, 1, &t), GLUCX_OK);
    glucx_link_cost_t l = glucx_topo_bottleneck(t);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = glucx_broadcast_binomial_cost(t, b);
        assert_true(c == glucx_broadcast_binomial_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    double want = 3 * (l.alpha_ns + 1000.0 * l.beta_ns_per_byte);
    assert_true(fabs(glucx_broadcast_binomial_cost(t, 1000) - want) <= 1e-9 * want);
    glucx_topo_destroy(t);
    assert_int_equal(glucx_topo_create_uniform(1, 1, &t), GLUCX_OK);
    assert_true(glucx_broadcast_binomial_cost(t, 1 << 20) == 0.0);
    glucx_topo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_roots_counts),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
