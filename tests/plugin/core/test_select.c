/* Unit tests: GLUCX_TUNE parsing and the size-range -> algorithm selection map. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/select.h"

static int alg(glucx_coll_t c, const char *name)
{
    const glucx_coll_table_t *t = glucx_coll_tables[c];
    for (int i = 0; i < t->count; i++)
        if (strcmp(t->algs[i].name, name) == 0)
            return i;
    fail_msg("%s has no algorithm %s", glucx_coll_name(c), name);
    return -1;
}

static void test_tune_parse_valid(void **state)
{
    (void)state;
    glucx_tune_t t;
    assert_int_equal(glucx_tune_parse("", &t), GLUCX_OK);
    assert_int_equal(t.count, 0);
    assert_int_equal(glucx_tune_parse(NULL, &t), GLUCX_OK);
    assert_int_equal(
        glucx_tune_parse("allreduce:0-4K:recursive_doubling#allreduce:4K-inf:ring", &t), GLUCX_OK);
    assert_int_equal(t.count, 2);
    assert_int_equal(t.entries[0].colls, 1u << GLUCX_COLL_ALLREDUCE);
    assert_int_equal(t.entries[0].lo, 0);
    assert_int_equal(t.entries[0].hi, 4096);
    assert_string_equal(t.entries[0].alg_name, "recursive_doubling");
    assert_int_equal(t.entries[1].lo, 4096);
    assert_true(t.entries[1].hi == SIZE_MAX);
    /* several collectives, no range, empty entries ignored */
    assert_int_equal(glucx_tune_parse("#allgather,reduce_scatter:ring##", &t), GLUCX_OK);
    assert_int_equal(t.count, 1);
    assert_int_equal(t.entries[0].colls,
                     (1u << GLUCX_COLL_ALLGATHER) | (1u << GLUCX_COLL_REDUCE_SCATTER));
    assert_int_equal(t.entries[0].lo, 0);
    assert_true(t.entries[0].hi == SIZE_MAX);
}

static void test_tune_parse_invalid(void **state)
{
    (void)state;
    glucx_tune_t t;
    struct {
        const char *text, *needle;
    } bad[] = {
        {"allreduce", "expected"},
        {"allreduc:ring", "unknown collective 'allreduc'"},
        {"allreduce:nosuch", "no algorithm 'nosuch'"},
        {"allreduce:4K:ring", "not LO-HI"},
        {"allreduce:8K-4K:ring", "bad range"},
        {"allreduce:1X-4K:ring", "bad range"},
        {"allreduce:0-4K:ring:extra", "expected"},
        {"barrier,allreduce:ring", "barrier has no algorithm 'ring'"},
        {"allreduce:::ring", "expected"},
        {"allreduce::ring", "expected"},
        {"allreduce:ring:", "expected"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(glucx_tune_parse(bad[i].text, &t), GLUCX_ERR_INVALID_ARG);
        if (strstr(glucx_last_error(), bad[i].needle) == NULL)
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].text, glucx_last_error(),
                     bad[i].needle);
    }
}

/* argmin of the cost functions at @p bytes, computed here: a later row wins only when cheaper
 * by more than a relative 1e-9 (ties and rounding keep table order, as select.c documents). */
static int cheapest(const glucx_topo_t *topo, glucx_coll_t c, size_t bytes)
{
    const glucx_coll_table_t *t = glucx_coll_tables[c];
    double best = INFINITY;
    int best_i = -1;
    for (int i = 0; i < t->count; i++) {
        double cost = t->algs[i].cost(topo, bytes);
        if (isfinite(cost) && (best_i < 0 || cost * (1 + 1e-9) < best)) {
            best = cost;
            best_i = i;
        }
    }
    return best_i;
}

/* The map covers every size exactly once and picks the cheapest algorithm where not tuned: at
 * every power of two, and on both sides of every boundary (the exact crossover). */
static void check_map(const glucx_topo_t *topo, const glucx_select_t *sel, glucx_coll_t c)
{
    int n = sel->nranges[c];
    assert_true(n >= 1);
    const glucx_select_range_t *r = sel->ranges[c];
    assert_int_equal(r[0].lo, 0);
    assert_true(r[n - 1].hi == SIZE_MAX);
    for (int i = 1; i < n; i++) {
        assert_true(r[i].lo == r[i - 1].hi);
        if (r[i].forced || r[i - 1].forced)
            continue;
        assert_true(r[i].alg != r[i - 1].alg);
        if (cheapest(topo, c, r[i].lo) != r[i].alg ||
            cheapest(topo, c, r[i].lo - 1) != r[i - 1].alg)
            fail_msg("%s: boundary %zu: %d/%d, cheapest %d/%d", glucx_coll_name(c), r[i].lo,
                     r[i - 1].alg, r[i].alg, cheapest(topo, c, r[i].lo - 1),
                     cheapest(topo, c, r[i].lo));
    }
    for (int k = -1; k < 40; k++) {
        size_t bytes = k < 0 ? 0 : (size_t)1 << k;
        const glucx_select_range_t *hit = glucx_select_lookup(sel, c, bytes);
        assert_true(bytes >= hit->lo && (bytes < hit->hi || hit->hi == SIZE_MAX));
        if (hit->forced)
            continue;
        if (hit->alg != cheapest(topo, c, bytes))
            fail_msg("%s at %zu bytes: map %d, cheapest %d", glucx_coll_name(c), bytes, hit->alg,
                     cheapest(topo, c, bytes));
    }
}

static void test_map_from_costs(void **state)
{
    (void)state;
    int sizes[] = {1, 2, 3, 4, 7, 8, 16, 8, 12, 64};
    int packages[] = {1, 1, 1, 1, 1, 1, 1, 4, 3, 8};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        glucx_topo_t *topo;
        assert_int_equal(glucx_topo_create_uniform(sizes[s], packages[s], &topo), GLUCX_OK);
        glucx_select_t sel;
        assert_int_equal(glucx_select_build(topo, NULL, &sel), GLUCX_OK);
        for (int c = 0; c < GLUCX_COLL_COUNT; c++)
            check_map(topo, &sel, (glucx_coll_t)c);
        glucx_topo_destroy(topo);
    }
}

static void test_map_with_tune(void **state)
{
    (void)state;
    glucx_topo_t *topo;
    assert_int_equal(glucx_topo_create_uniform(4, 1, &topo), GLUCX_OK);
    glucx_select_t base, sel;
    glucx_tune_t tune;
    assert_int_equal(glucx_select_build(topo, NULL, &base), GLUCX_OK);
    assert_int_equal(glucx_tune_parse("allreduce:1K-1M:ring#allreduce:4K-8K:rabenseifner", &tune),
                     GLUCX_OK);
    assert_int_equal(glucx_select_build(topo, &tune, &sel), GLUCX_OK);
    check_map(topo, &sel, GLUCX_COLL_ALLREDUCE);
    const int ring = alg(GLUCX_COLL_ALLREDUCE, "ring");
    const int rab = alg(GLUCX_COLL_ALLREDUCE, "rabenseifner");
    struct {
        size_t bytes;
        int expect; /* -1: as in the untuned map */
    } cases[] = {{0, -1},        {1023, -1},        {1024, ring}, {4095, ring},
                 {4096, rab},    {8191, rab},       {8192, ring}, {(1u << 20) - 1, ring},
                 {1u << 20, -1}, {SIZE_MAX - 1, -1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const glucx_select_range_t *r =
            glucx_select_lookup(&sel, GLUCX_COLL_ALLREDUCE, cases[i].bytes);
        int expect = cases[i].expect >= 0
                         ? cases[i].expect
                         : glucx_select_lookup(&base, GLUCX_COLL_ALLREDUCE, cases[i].bytes)->alg;
        if (r->alg != expect)
            fail_msg("%zu bytes: algorithm %d, expected %d", cases[i].bytes, r->alg, expect);
        assert_int_equal(r->forced, cases[i].expect >= 0);
    }
    /* other collectives untouched */
    assert_memory_equal(sel.ranges[GLUCX_COLL_ALLGATHER], base.ranges[GLUCX_COLL_ALLGATHER],
                        sizeof(glucx_select_range_t) * (size_t)base.nranges[GLUCX_COLL_ALLGATHER]);
    char text[512];
    glucx_select_format(&sel, GLUCX_COLL_ALLREDUCE, text, sizeof(text));
    assert_non_null(strstr(text, "1K-4K:ring(tuned)"));
    assert_non_null(strstr(text, "4K-8K:rabenseifner(tuned)"));
    glucx_topo_destroy(topo);
}

static void test_by_cost_order(void **state)
{
    (void)state;
    glucx_topo_t *topo;
    assert_int_equal(glucx_topo_create_uniform(8, 1, &topo), GLUCX_OK);
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        int order[64], order2[64];
        double costs[64];
        int n = glucx_select_by_cost(topo, (glucx_coll_t)c, 1 << 20, order, NULL, 64);
        assert_true(n >= 1);
        for (int i = 1; i < n; i++)
            assert_true(glucx_coll_tables[c]->algs[order[i - 1]].cost(topo, 1 << 20) <=
                        glucx_coll_tables[c]->algs[order[i]].cost(topo, 1 << 20));
        /* with costs: the same order, each cost the algorithm's own prediction */
        assert_int_equal(glucx_select_by_cost(topo, (glucx_coll_t)c, 1 << 20, order2, costs, 64),
                         n);
        for (int i = 0; i < n; i++) {
            assert_int_equal(order2[i], order[i]);
            assert_true(costs[i] == glucx_coll_tables[c]->algs[order[i]].cost(topo, 1 << 20));
        }
    }
    glucx_topo_destroy(topo);
}

/* With one outer dimension (packages without a topology file) the hierarchical and torus
 * allreduce are the same algorithm, and so is torus_rotated below 2 MiB (one chunk; from 2 MiB it
 * keeps several chunks in flight, a different schedule): their costs must tie exactly, so that
 * the map keeps table order (hierarchical) instead of flipping between them on rounding noise (it
 * used to show ranges such as 16K-16385:torus on 16384 ranks in 2 packages). */
static void test_map_hier_ties(void **state)
{
    (void)state;
    const glucx_coll_t c = GLUCX_COLL_ALLREDUCE;
    const int h = alg(c, "hierarchical"), t = alg(c, "torus"), tr = alg(c, "torus_rotated");
    int sizes[] = {4, 6, 8, 9, 12, 16384};
    int packages[] = {2, 6, 4, 3, 3, 2};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        glucx_topo_t *topo;
        assert_int_equal(glucx_topo_create_uniform(sizes[s], packages[s], &topo), GLUCX_OK);
        const glucx_coll_alg_t *a = glucx_coll_tables[c]->algs;
        for (int k = 0; k < 63; k++) {
            const size_t bytes = ((size_t)1 << k) + (size_t)k * 7;
            const double ch = a[h].cost(topo, bytes);
            if (a[t].cost(topo, bytes) != ch ||
                (bytes < ((size_t)2 << 20) && a[tr].cost(topo, bytes) != ch))
                fail_msg("%d ranks in %d packages, %zu bytes: costs %.17g %.17g %.17g", sizes[s],
                         packages[s], bytes, ch, a[t].cost(topo, bytes), a[tr].cost(topo, bytes));
        }
        glucx_select_t sel;
        assert_int_equal(glucx_select_build(topo, NULL, &sel), GLUCX_OK);
        for (int i = 0; i < sel.nranges[c]; i++)
            if (sel.ranges[c][i].alg == t ||
                (sel.ranges[c][i].alg == tr && sel.ranges[c][i].lo < ((size_t)2 << 20)))
                fail_msg("%d ranks in %d packages: range %zu-%zu chooses %s", sizes[s],
                         packages[s], sel.ranges[c][i].lo, sel.ranges[c][i].hi,
                         a[sel.ranges[c][i].alg].name);
        check_map(topo, &sel, c);
        glucx_topo_destroy(topo);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tune_parse_valid), cmocka_unit_test(test_tune_parse_invalid),
        cmocka_unit_test(test_map_from_costs),   cmocka_unit_test(test_map_with_tune),
        cmocka_unit_test(test_by_cost_order),    cmocka_unit_test(test_map_hier_ties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
