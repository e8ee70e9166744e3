/* Tests of plugin/coll/barrier/dissemination.c on the fake transport. */
#include "support/coll_world.h"
#include "coll/barrier/barrier.h"

static int alg(void)
{
    int a = glucx_test_alg_index(GLUCX_COLL_BARRIER, "dissemination");
    assert_int_equal(a, GLUCX_BARRIER_DISSEMINATION);
    return a;
}

/* Round k: one zero-byte message to rank + 2^k; nothing else. */
static void check_traffic(const cw_t *c)
{
    const int n = c->n;
    for (int r = 0; r < n; r++) {
        uint64_t m[CW_MAX_RANKS], by[CW_MAX_RANKS], want[CW_MAX_RANKS] = {0};
        for (int dist = 1; dist < n; dist *= 2)
            want[(r + dist) % n]++;
        glucx_fake_stats(c->w, r, m, by);
        for (int p = 0; p < n; p++) {
            assert_int_equal(m[p], want[p]);
            assert_int_equal(by[p], 0);
        }
    }
}

/* Nobody leaves before the last one arrived: ranks enter at staggered times (the last one
 * 30 ms late), and every exit is after every entry. Several barriers in a row on one world. */
static void test_sizes_and_synchronization(void **state)
{
    (void)state;
    for (int n = 1; n <= 9; n++) {
        int nn = n == 9 ? 16 : n;
        cw_t c;
        cw_init(&c, nn, GLUCX_COLL_BARRIER, alg());
        for (int round = 0; round < 3; round++) {
            glucx_fake_stats_reset(c.w);
            const int late = (round * 5 + 3) % nn;
            for (int r = 0; r < nn; r++)
                c.rank[r].delay_us = r == late ? 30000 : (r * 997) % 3000;
            cw_run(&c);
            cw_expect_ok(&c);
            check_traffic(&c);
            int64_t last_in = 0, first_out = INT64_MAX;
            for (int r = 0; r < nn; r++) {
                last_in = c.rank[r].t_enter_ns > last_in ? c.rank[r].t_enter_ns : last_in;
                first_out = c.rank[r].t_exit_ns < first_out ? c.rank[r].t_exit_ns : first_out;
            }
            assert_true(first_out >= last_in);
        }
        cw_fini(&c);
    }
}

static void mk(cw_t *c, int r, size_t count, int root)
{
    (void)c, (void)r, (void)count, (void)root;
}

/* A crashed rank: nobody may pass the barrier (every survivor fails), nobody hangs. */
static void test_kill(void **state)
{
    (void)state;
    for (int n = 2; n <= 8; n++)
        for (int victim = 0; victim < n; victim += 3)
            cw_fault_kill(GLUCX_COLL_BARRIER, alg(), n, 0, victim, 0, cw_all_fail, mk);
}

/* A rank that never arrives: nobody passes (every other rank times out), nobody hangs. */
static void test_missing_rank_times_out(void **state)
{
    (void)state;
    for (int n = 2; n <= 8; n += 3) {
        cw_t c;
        cw_init(&c, n, GLUCX_COLL_BARRIER, alg());
        c.timeout_ms = CW_FAULT_TIMEOUT_MS;
        c.rank[n / 2].skip = 1;
        cw_run(&c);
        for (int r = 0; r < n; r++)
            if (r != n / 2)
                assert_int_equal(c.rank[r].status, GLUCX_ERR_TIMEOUT);
        cw_fini(&c);
    }
}

static void test_cost(void **state)
{
    (void)state;
    for (int n = 1; n <= 17; n++) {
        glucx_topo_t *t;
        assert_int_equal(glucx_topo_create_uniform(n, 1, &t), GLUCX_OK);
        glucx_link_cost_t l = glucx_topo_bottleneck(t);
        int rounds = 0;
        while ((1 << rounds) < n)
            rounds++;
        double c = glucx_barrier_dissemination_cost(t, 0);
        assert_true(fabs(c - rounds * l.alpha_ns) <= 1e-9 * (1 + c));
        assert_true(c == glucx_barrier_dissemination_cost(t, 12345));
        glucx_topo_destroy(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_and_synchronization),
        cmocka_unit_test(test_kill),
        cmocka_unit_test(test_missing_rank_times_out),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
