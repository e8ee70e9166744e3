/* Tests of plugin/coll/broadcast/scatter_allgather.c on the fake transport. */
#include "plugin/coll/broadcast/bcast_cases.h"
#include "coll/broadcast/broadcast.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_BROADCAST, "scatter_allgather");
    assert_int_equal(a, GLUCX_BROADCAST_SCATTER_ALLGATHER);
    return a;
}

/* Bytes of block i when count elements are cut into n blocks, the first count % n one longer. */
static size_t block_bytes(size_t count, int n, int i, size_t es)
{
    return (count / (size_t)n + ((size_t)i < count % (size_t)n)) * es;
}

/*
 * Ring allgather: n(n-1) messages; rank r forwards every block but block r+1, so it sends
 * exactly m - block(r+1) to rank r+1 in the ring. Scatter: n-1 more messages, at least the
 * m - block(root) bytes that must leave the root and at most ceil(log2 n) m.
 */
static void volume(const cw_t *c, int root, size_t count, size_t bytes)
{
    const int n = c->n;
    if (n == 1) {
        assert_int_equal(cw_bytes_sent(c, 0), 0);
        return;
    }
    const size_t es = count ? bytes / count : 1;
    uint64_t msgs, total;
    cw_totals(c, &msgs, &total);
    assert_int_equal(msgs, (uint64_t)(n - 1) + (uint64_t)n * (n - 1));
    int log2n = 0;
    while ((1 << log2n) < n)
        log2n++;
    const uint64_t ring = (uint64_t)(n - 1) * bytes;
    assert_true(total >= ring + bytes - block_bytes(count, n, root, es));
    assert_true(total <= ring + (uint64_t)log2n * bytes);
    for (int r = 0; r < n; r++) {
        uint64_t b[CW_MAX_RANKS];
        glucx_fake_stats(c->w, r, NULL, b);
        const int right = (r + 1) % n;
        /* ring bytes to the right neighbour; scatter may add to it */
        assert_true(b[right] >= bytes - block_bytes(count, n, right, es));
    }
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
    bc_faults(alg(), 1);
}

/* Cost: pure, monotonic; cheaper than binomial for 64 MiB on 8 ranks, dearer for 8 bytes. */
static void test_cost(void **state)
{
    (void)state;
    glucx_topo_t *t;
    assert_int_equal(glucx_topo_create_uniform(8, 1, &t), GLUCX_OK);
    double prev = -1;
    for (size_t b = 0; b <= ((size_t)1 << 30); b = b ? b * 4 : 1) {
        double c = glucx_broadcast_scatter_allgather_cost(t, b);
        assert_true(c == glucx_broadcast_scatter_allgather_cost(t, b));
        assert_true(c >= prev);
        prev = c;
    }
    const size_t big = (size_t)64 << 20;
    assert_true(glucx_broadcast_scatter_allgather_cost(t, big) <
                glucx_broadcast_binomial_cost(t, big));
    assert_true(glucx_broadcast_scatter_allgather_cost(t, 8) > glucx_broadcast_binomial_cost(t, 8));
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
