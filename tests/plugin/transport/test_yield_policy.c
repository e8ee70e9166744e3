/*
 * The wait policy's decisions (glucx_ucx_yield_t, plugin/transport/ucx.h), without a scheduler:
 * how GLUCX_YIELD resolves for a host's ranks and CPUs, and when a thread stops and resumes
 * yielding, on synthetic clock readings. tests/plugin/transport/test_ucx.c checks the policy a
 * real connect picks; docs/perf.md measures what it does under load.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "transport/ucx.h"

static void test_resolve(void **state)
{
    (void)state;
    /* auto: more ranks on the host than CPUs -> always; otherwise while cheap */
    assert_int_equal(glucx_ucx_yield_resolve(GLUCX_UCX_YIELD_AUTO, 4, 2), GLUCX_UCX_YIELD_ALWAYS);
    assert_int_equal(glucx_ucx_yield_resolve(GLUCX_UCX_YIELD_AUTO, 3, 2), GLUCX_UCX_YIELD_ALWAYS);
    assert_int_equal(glucx_ucx_yield_resolve(GLUCX_UCX_YIELD_AUTO, 2, 2), GLUCX_UCX_YIELD_CHEAP);
    assert_int_equal(glucx_ucx_yield_resolve(GLUCX_UCX_YIELD_AUTO, 1, 1), GLUCX_UCX_YIELD_CHEAP);
    assert_int_equal(glucx_ucx_yield_resolve(GLUCX_UCX_YIELD_AUTO, 2, 64), GLUCX_UCX_YIELD_CHEAP);
    /* CPUs unknown: taken as enough */
    assert_int_equal(glucx_ucx_yield_resolve(GLUCX_UCX_YIELD_AUTO, 8, 0), GLUCX_UCX_YIELD_CHEAP);
    assert_int_equal(glucx_ucx_yield_resolve(GLUCX_UCX_YIELD_AUTO, 8, -1), GLUCX_UCX_YIELD_CHEAP);
    /* forced modes are kept whatever the host */
    assert_int_equal(glucx_ucx_yield_resolve(GLUCX_UCX_YIELD_ALWAYS, 1, 8), GLUCX_UCX_YIELD_ALWAYS);
    assert_int_equal(glucx_ucx_yield_resolve(GLUCX_UCX_YIELD_NEVER, 8, 1), GLUCX_UCX_YIELD_NEVER);
}

static void test_always_and_never(void **state)
{
    (void)state;
    glucx_ucx_yield_state_t s = {0};
    const int64_t t = 5000000000LL;
    assert_true(glucx_ucx_yield_allowed(GLUCX_UCX_YIELD_ALWAYS, &s, t));
    /* a slow yield does not stop ALWAYS, and NEVER never yields */
    assert_int_equal(glucx_ucx_yield_observe(GLUCX_UCX_YIELD_ALWAYS, &s, t, t + 3000000), 0);
    assert_true(glucx_ucx_yield_allowed(GLUCX_UCX_YIELD_ALWAYS, &s, t + 3000001));
    assert_int_equal(s.off_until_ns, 0);
    assert_false(glucx_ucx_yield_allowed(GLUCX_UCX_YIELD_NEVER, &s, t));
    assert_int_equal(glucx_ucx_yield_observe(GLUCX_UCX_YIELD_NEVER, &s, t, t + 3000000), 0);
    assert_int_equal(s.off_until_ns, 0);
    /* AUTO is not a policy a wait follows: it never yields by itself */
    assert_false(glucx_ucx_yield_allowed(GLUCX_UCX_YIELD_AUTO, &s, t));
}

static void test_cheap(void **state)
{
    (void)state;
    const glucx_ucx_yield_t p = GLUCX_UCX_YIELD_CHEAP;
    glucx_ucx_yield_state_t s = {0};
    int64_t t = 7000000000LL;
    assert_true(glucx_ucx_yield_allowed(p, &s, t));
    /* quick yields (a thread that runs briefly and blocks, or nobody else) keep yields on,
     * up to the threshold itself */
    assert_int_equal(glucx_ucx_yield_observe(p, &s, t, t + 1000), 0);
    assert_int_equal(glucx_ucx_yield_observe(p, &s, t, t + 150000), 0);
    assert_int_equal(glucx_ucx_yield_observe(p, &s, t, t + GLUCX_UCX_YIELD_SLOW_NS), 0);
    assert_true(glucx_ucx_yield_allowed(p, &s, t + GLUCX_UCX_YIELD_SLOW_NS));
    /* one yield that lost a time slice (1.4 ms) turns them off for the off period, counted
     * from when that yield returned */
    const int64_t back = t + 1400000;
    assert_int_equal(glucx_ucx_yield_observe(p, &s, t, back), 1);
    assert_int_equal(s.off_until_ns, back + GLUCX_UCX_YIELD_OFF_NS);
    assert_false(glucx_ucx_yield_allowed(p, &s, back));
    assert_false(glucx_ucx_yield_allowed(p, &s, back + GLUCX_UCX_YIELD_OFF_NS - 1));
    assert_true(glucx_ucx_yield_allowed(p, &s, back + GLUCX_UCX_YIELD_OFF_NS));
    /* after the period the thread tries again; a quick yield then leaves it on ... */
    t = back + GLUCX_UCX_YIELD_OFF_NS + 10;
    assert_int_equal(glucx_ucx_yield_observe(p, &s, t, t + 2000), 0);
    assert_true(glucx_ucx_yield_allowed(p, &s, t + 2000));
    /* ... and a slow one turns it off again, from the new time */
    assert_int_equal(glucx_ucx_yield_observe(p, &s, t, t + 800000), 1);
    assert_int_equal(s.off_until_ns, t + 800000 + GLUCX_UCX_YIELD_OFF_NS);
    /* the threshold sits below the kernel's smallest time slice (0.7 ms) */
    assert_true(GLUCX_UCX_YIELD_SLOW_NS < 700000);
}

static void test_adaptive_spin(void **state)
{
    (void)state;
    const int64_t max = 200000; /* GLUCX_SPIN_US's default */
    glucx_ucx_yield_state_t s = {0};
    int64_t t = 9000000000LL;
    int probe = -1;
    /* the first wait is a probe and spins in full */
    assert_int_equal(glucx_ucx_spin_budget(&s, max, t, &probe), max);
    assert_int_equal(probe, 1);
    glucx_ucx_spin_learn(&s, max, t + 300000, -1, probe); /* it slept: halve */
    assert_int_equal(s.spin_ns, max / 2);
    assert_int_equal(s.probe_at_ns, t + 300000 + GLUCX_UCX_SPIN_PROBE_NS);
    /* until the next probe, waits that keep sleeping halve the spin down to the minimum */
    t += 1000000;
    int64_t want = max / 2;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(glucx_ucx_spin_budget(&s, max, t, &probe), want);
        assert_int_equal(probe, 0);
        glucx_ucx_spin_learn(&s, max, t + 50000, -1, probe);
        want = want / 2 < GLUCX_UCX_SPIN_MIN_NS ? GLUCX_UCX_SPIN_MIN_NS : want / 2;
        assert_int_equal(s.spin_ns, want);
        t += 100000;
    }
    assert_int_equal(s.spin_ns, GLUCX_UCX_SPIN_MIN_NS);
    /* a wait caught while spinning keeps the spin when it was quick ... */
    glucx_ucx_spin_learn(&s, max, t, 1500, 0);
    assert_int_equal(s.spin_ns, GLUCX_UCX_SPIN_MIN_NS);
    /* ... and widens it to twice what it took, up to the maximum */
    glucx_ucx_spin_learn(&s, max, t, 4000, 0);
    assert_int_equal(s.spin_ns, 8000);
    glucx_ucx_spin_learn(&s, max, t, 150000, 0);
    assert_int_equal(s.spin_ns, max);
    assert_int_equal(glucx_ucx_spin_budget(&s, max, t, &probe), max);
    /* the probe comes back GLUCX_UCX_SPIN_PROBE_NS after the last one */
    glucx_ucx_spin_learn(&s, max, t, -1, 0);
    assert_int_equal(glucx_ucx_spin_budget(&s, max, s.probe_at_ns - 1, &probe), max / 2);
    assert_int_equal(probe, 0);
    assert_int_equal(glucx_ucx_spin_budget(&s, max, s.probe_at_ns, &probe), max);
    assert_int_equal(probe, 1);
    /* a smaller GLUCX_SPIN_US bounds everything, the minimum included */
    glucx_ucx_yield_state_t z = {0};
    glucx_ucx_spin_learn(&z, 3000, t, -1, 0);
    assert_int_equal(z.spin_ns, 3000);
    glucx_ucx_spin_learn(&z, 0, t, -1, 0);
    assert_int_equal(glucx_ucx_spin_budget(&z, 0, 0, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_always_and_never),
        cmocka_unit_test(test_cheap),
        cmocka_unit_test(test_adaptive_spin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
