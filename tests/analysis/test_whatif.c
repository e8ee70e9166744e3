/*
 * Unit tests of the what-if replay (analysis/core/whatif.c) on a hand-built run: 3 processes,
 * 2 iterations of an allreduce then an allgather, known local gaps and a cost hook whose costs
 * are fixed numbers. Every expected time is worked out by hand in the comments from the run's
 * numbers and the replay's rule (METRICS.md, "What-if prediction"), not from the code.
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/whatif.h"

enum { ALLREDUCE = 0, ALLGATHER = 1, RING = 0 };

/* The hook: allreduce 1000 ns, allgather 2000 ns on 3 ranks, scaled linearly with the rank
 * count; the measured algorithm on the measured setup costs 500 ns for both. */
static int hook(void *arg, const glucx_an_wi_coll_t *c, int size, glucx_an_wi_cost_t *out,
                char *err, size_t errlen)
{
    int coll = c->coll;
    uint64_t bytes = c->bytes;
    int *calls = arg;
    (*calls)++;
    if (coll == 7) {
        snprintf(err, errlen, "hook: reduce of %" PRIu64 " bytes cannot be costed", bytes);
        return -1;
    }
    out->new_ns = (coll == ALLREDUCE ? 1000.0 : 2000.0) * size / 3.0;
    out->old_ns = 500.0;
    out->alg = RING;
    return 0;
}

/* Measured (ns):            proc 0        proc 1        proc 2
 *   iteration 0 allreduce   100 -  600    300 -  600    500 -  600
 *               allgather   700 - 1200   1000 - 1200    800 - 1200
 *   iteration 1 allreduce  1300 - 1800   1500 - 1800   1350 - 1800
 *               allgather  1900 - 2400   2000 - 2400   1950 - 2400
 * Measured durations (last end - last begin): 100, 200, 300, 400.
 * Local gaps (next begin - previous end): proc 0: 100, 100, 100; proc 1: 400, 300, 200;
 * proc 2: 200, 150, 150. */
static void build(glucx_an_wi_input_t *in)
{
    static const int64_t b[4][3] = {
        {100, 300, 500}, {700, 1000, 800}, {1300, 1500, 1350}, {1900, 2000, 1950}};
    static const int64_t e[4] = {600, 1200, 1800, 2400};
    glucx_an_wi_init(in);
    for (int k = 0; k < 4; k++) {
        glucx_an_wi_coll_t *c = glucx_an_wi_add(in, 0x1, (uint32_t)k, k / 2,
                                                k % 2 ? ALLGATHER : ALLREDUCE, RING, 4096, 3);
        assert_non_null(c);
        for (int p = 0; p < 3; p++)
            assert_int_equal(glucx_an_wi_part(in, c, p, b[k][p], e[k]), 0);
    }
}

static json_int_t pred(const json_t *doc, const char *k)
{
    const json_t *v = json_object_get(json_object_get(doc, "prediction"), k);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static void test_absolute(void **state)
{
    (void)state;
    glucx_an_wi_input_t in;
    build(&in);
    int calls = 0;
    glucx_an_wi_opts_t o = {GLUCX_AN_WI_ABSOLUTE, 0, hook, &calls};
    char err[256] = "";
    json_t *doc = glucx_an_wi_replay(&in, &o, err, sizeof(err));
    assert_non_null(doc);
    /* allreduce 0: arrivals 100, 300, 500 -> start 500, end 1500
     * allgather 0: 1500 + gaps 100, 400, 200 = 1600, 1900, 1700 -> start 1900, end 3900
     * allreduce 1: 3900 + 100, 300, 150 = 4000, 4200, 4050 -> start 4200, end 5200
     * allgather 1: 5200 + 100, 200, 150 = 5300, 5400, 5350 -> start 5400, end 7400
     * iteration 1 (the mean leaves out the first, which has no predecessor): 7400 - 3900 */
    assert_int_equal(pred(doc, "iteration_ns"), 7400 - 3900);
    /* measured: iteration 1 ends at 2400, iteration 0 at 1200 */
    assert_int_equal(pred(doc, "measured_iteration_ns"), 2400 - 1200);
    /* exposed in iteration 1, per rank: allreduce (5200-4000) + (5200-4200) + (5200-4050),
     * allgather (7400-5300) + (7400-5400) + (7400-5350), over 3 ranks = 9500 / 3 */
    assert_int_equal(pred(doc, "exposed_comm_ns"), 3167);
    /* measured: (500 + 300 + 450) + (500 + 400 + 450) over 3 = 2600 / 3 */
    assert_int_equal(pred(doc, "measured_exposed_comm_ns"), 867);
    /* the whole run: first arrival 100 to last end 7400 */
    assert_int_equal(pred(doc, "total_ns"), 7300);
    /* bottleneck: the allgather, 2 x 2000 ns over 2 iterations */
    const json_t *bn = json_object_get(doc, "bottleneck");
    assert_string_equal(json_string_value(json_object_get(bn, "coll")), "allgather");
    assert_true(
        fabs(json_number_value(json_object_get(bn, "predicted_ns_per_iteration")) - 2000.0) < 1e-6);
    /* the iteration 0 row: 3900 - 100 */
    const json_t *it0 = json_array_get(json_object_get(doc, "per_iteration"), 0);
    assert_int_equal(json_integer_value(json_object_get(it0, "predicted_ns")), 3800);
    json_decref(doc);
    glucx_an_wi_free(&in);
}

static void test_relative(void **state)
{
    (void)state;
    glucx_an_wi_input_t in;
    build(&in);
    int calls = 0;
    glucx_an_wi_opts_t o = {GLUCX_AN_WI_RELATIVE, 0, hook, &calls};
    char err[256] = "";
    json_t *doc = glucx_an_wi_replay(&in, &o, err, sizeof(err));
    assert_non_null(doc);
    /* durations measured x new / old: 100 x 1000/500 = 200, 200 x 2000/500 = 800,
     * 300 x 2 = 600, 400 x 4 = 1600
     * allreduce 0: start 500, end 700; allgather 0: 800, 1100, 900 -> 1100, end 1900
     * allreduce 1: 2000, 2200, 2050 -> 2200, end 2800; allgather 1: 2900, 3000, 2950 -> 3000,
     * end 4600. Iteration 1: 4600 - 1900 */
    assert_int_equal(pred(doc, "iteration_ns"), 4600 - 1900);
    json_decref(doc);
    /* additive, measured + new - old: 100 + 500 = 600, 200 + 1500 = 1700, 300 + 500 = 800,
     * 400 + 1500 = 1900. allreduce 0: start 500, end 1100; allgather 0: 1200, 1500, 1300 ->
     * 1500, end 3200; allreduce 1: 3300, 3500, 3350 -> 3500, end 4300; allgather 1: 4400,
     * 4500, 4450 -> 4500, end 6400. Iteration 1: 6400 - 3200 */
    o.mode = GLUCX_AN_WI_ADDITIVE;
    doc = glucx_an_wi_replay(&in, &o, err, sizeof(err));
    assert_non_null(doc);
    assert_int_equal(pred(doc, "iteration_ns"), 6400 - 3200);
    assert_string_equal(json_string_value(json_object_get(doc, "mode")), "additive");
    json_decref(doc);
    glucx_an_wi_free(&in);
}

static void test_scaled(void **state)
{
    (void)state;
    glucx_an_wi_input_t in;
    build(&in);
    int calls = 0;
    glucx_an_wi_opts_t o = {GLUCX_AN_WI_ABSOLUTE, 6, hook, &calls};
    char err[256] = "";
    json_t *doc = glucx_an_wi_replay(&in, &o, err, sizeof(err));
    assert_non_null(doc);
    /* 6 ranks, rank r timed as process r mod 3; costs doubled: allreduce 2000, allgather 4000
     * allreduce 0: start 500, end 2500; allgather 0: 2600, 2900, 2700 -> 2900, end 6900
     * allreduce 1: 7000, 7200, 7050 -> 7200, end 9200; allgather 1: 9300, 9400, 9350 -> 9400,
     * end 13400. Iteration 1: 13400 - 6900 */
    assert_int_equal(pred(doc, "iteration_ns"), 13400 - 6900);
    assert_int_equal(json_integer_value(json_object_get(doc, "ranks")), 6);
    json_decref(doc);
    glucx_an_wi_free(&in);
}

/* A rank that left a collective early in the run leaves early in the replay too: allreduce A
 * (3 ranks) begun at 0, 100, 100 and left at 550, 1000, 1000 (measured 1000 - 100 = 900; rank
 * 0's share (550 - 100) / 900 = 1/2); then 600, 10 and 20 ns of local time before allreduce B.
 * Absolute (1000 ns each): A starts at 100, rank 0 leaves at 100 + 1000/2 = 600, ranks 1, 2 at
 * 1100; B's arrivals 1200, 1110, 1120 -> start 1200, end 2200. Iteration 1: 2200 - 1100.
 * (Leaving all at 1100 would make it 1700 + 1000 - 1100 = 1600.) */
static void test_early_leaver(void **state)
{
    (void)state;
    glucx_an_wi_input_t in;
    glucx_an_wi_init(&in);
    glucx_an_wi_coll_t *a = glucx_an_wi_add(&in, 0x1, 0, 0, ALLREDUCE, RING, 64, 3);
    assert_int_equal(glucx_an_wi_part(&in, a, 0, 0, 550), 0);
    assert_int_equal(glucx_an_wi_part(&in, a, 1, 100, 1000), 0);
    assert_int_equal(glucx_an_wi_part(&in, a, 2, 100, 1000), 0);
    glucx_an_wi_coll_t *b = glucx_an_wi_add(&in, 0x1, 1, 1, ALLREDUCE, RING, 64, 3);
    assert_int_equal(glucx_an_wi_part(&in, b, 0, 1150, 1250), 0);
    assert_int_equal(glucx_an_wi_part(&in, b, 1, 1010, 1250), 0);
    assert_int_equal(glucx_an_wi_part(&in, b, 2, 1020, 1250), 0);
    int calls = 0;
    glucx_an_wi_opts_t o = {GLUCX_AN_WI_ABSOLUTE, 0, hook, &calls};
    char err[256] = "";
    json_t *doc = glucx_an_wi_replay(&in, &o, err, sizeof(err));
    assert_non_null(doc);
    assert_int_equal(pred(doc, "iteration_ns"), 2200 - 1100);
    assert_int_equal(pred(doc, "measured_iteration_ns"), 1250 - 1000);
    json_decref(doc);
    glucx_an_wi_free(&in);
}

static void test_errors(void **state)
{
    (void)state;
    glucx_an_wi_input_t in;
    build(&in);
    int calls = 0;
    char err[512] = "";
    /* a collective only processes 0 and 1 take part in: no rank scaling over it */
    glucx_an_wi_coll_t *c = glucx_an_wi_add(&in, 0x2, 0, -1, ALLREDUCE, RING, 8, 2);
    assert_int_equal(glucx_an_wi_part(&in, c, 0, 3000, 3100), 0);
    assert_int_equal(glucx_an_wi_part(&in, c, 1, 3000, 3100), 0);
    glucx_an_wi_opts_t o = {GLUCX_AN_WI_ABSOLUTE, 6, hook, &calls};
    assert_null(glucx_an_wi_replay(&in, &o, err, sizeof(err)));
    assert_non_null(strstr(err, "--ranks 6"));
    assert_non_null(strstr(err, "involves 2 of the run's 3 processes"));
    /* without scaling it replays */
    o.ranks = 0;
    json_t *doc = glucx_an_wi_replay(&in, &o, err, sizeof(err));
    assert_non_null(doc);
    json_decref(doc);
    /* the cost function's failure is the replay's, its message kept */
    c = glucx_an_wi_add(&in, 0x1, 9, -1, 7, RING, 64, 3);
    for (int p = 0; p < 3; p++)
        assert_int_equal(glucx_an_wi_part(&in, c, p, 5000, 5100), 0);
    assert_null(glucx_an_wi_replay(&in, &o, err, sizeof(err)));
    assert_non_null(strstr(err, "reduce of 64 bytes"));
    glucx_an_wi_free(&in);
    /* processes that order two collectives differently: never replayable */
    glucx_an_wi_init(&in);
    glucx_an_wi_coll_t *x = glucx_an_wi_add(&in, 0x1, 0, 0, ALLREDUCE, RING, 8, 2);
    assert_int_equal(glucx_an_wi_part(&in, x, 0, 100, 200), 0);
    assert_int_equal(glucx_an_wi_part(&in, x, 1, 300, 400), 0);
    glucx_an_wi_coll_t *y = glucx_an_wi_add(&in, 0x3, 0, 0, ALLREDUCE, RING, 8, 2);
    assert_int_equal(glucx_an_wi_part(&in, y, 0, 300, 400), 0);
    assert_int_equal(glucx_an_wi_part(&in, y, 1, 100, 200), 0);
    assert_null(glucx_an_wi_replay(&in, &o, err, sizeof(err)));
    assert_non_null(strstr(err, "never has all 2 participants"));
    glucx_an_wi_free(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absolute), cmocka_unit_test(test_relative),
        cmocka_unit_test(test_scaled),   cmocka_unit_test(test_early_leaver),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
