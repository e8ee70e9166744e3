/*
 * Unit tests of the diff of two runs (analysis/core/diff.c) on small hand-built report.json
 * pairs. Every expected contribution is worked out by hand in the comments from the reports'
 * numbers (METRICS.md, "Diff of two runs"), not from the code.
 * argv[1]: a scratch directory for the files the tests write.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/diff.h"
#include "core/engine.h"

static const char *g_dir = "work-diff";

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("test JSON: %s (line %d): %s", e.text, e.line, text);
    return j;
}

static json_int_t I(const json_t *o, const char *path)
{
    /* "a.b.0.c": object keys and array indices */
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    const json_t *cur = o;
    for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, "."))
        cur =
            json_is_array(cur) ? json_array_get(cur, (size_t)atoi(tok)) : json_object_get(cur, tok);
    if (!json_is_integer(cur))
        fail_msg("%s is not an integer", path);
    return json_integer_value(cur);
}

static const json_t *G(const json_t *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    const json_t *cur = o;
    for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, "."))
        cur =
            json_is_array(cur) ? json_array_get(cur, (size_t)atoi(tok)) : json_object_get(cur, tok);
    return cur;
}

static const char *S(const json_t *o, const char *path)
{
    const json_t *v = G(o, path);
    if (!json_is_string(v))
        fail_msg("%s is not a string", path);
    return json_string_value(v);
}

static double R(const json_t *o, const char *path)
{
    const json_t *v = G(o, path);
    if (!json_is_number(v))
        fail_msg("%s is not a number", path);
    return json_number_value(v);
}

static json_t *diff(json_t *a, json_t *b)
{
    char err[512] = "";
    json_t *d = glucx_an_diff_compute(a, b, "A", "B", err, sizeof(err));
    if (!d)
        fail_msg("diff failed: %s", err);
    json_decref(a);
    json_decref(b);
    return d;
}

/* Phases and ranks. A: T = 100 ns, 2 iterations of 4 ranks, totals duration 800, compute 400,
 * exposed 200, idle 80: per iteration compute 100*400/800 = 50, exposed 25, idle 10, wait (what
 * they leave) 15. B: T = 150, duration 1200, compute 400, exposed 600, idle 0: compute 50,
 * exposed 75, idle 0, wait 25. Contributions: exposed +50, wait +10, idle -10, compute 0 of
 * dT = 50. Ranks (durations over 2 iterations; term = duration / 2 / 4): A 200 each (25 each),
 * B 240, 300, 360, 300: rank 0 30 - 25 = +5, rank 1 +12.5, rank 2 45 - 25 = +20, rank 3 +12.5.
 * The communicators have other ids but one name: matched. Rank 2 is B's straggler, 0 A's. */
static void test_phases_and_ranks(void **state)
{
    (void)state;
    json_t *a =
        J("{\"schema_version\":1,\"trace\":{\"comms\":[{\"comm_id\":\"0xa\",\"name\":\"job\"}]},"
          "\"summary\":{\"iterations\":2,\"mean_iteration_ns\":100,\"totals\":{"
          "\"duration_ns\":800,\"compute_ns\":400,\"exposed_communication_ns\":200,"
          "\"idle_ns\":80,\"wait_ns\":300}},"
          "\"ranks\":[{\"comm_id\":\"0xa\",\"rank\":0,\"duration_ns\":200},"
          "{\"comm_id\":\"0xa\",\"rank\":1,\"duration_ns\":200},"
          "{\"comm_id\":\"0xa\",\"rank\":2,\"duration_ns\":200},"
          "{\"comm_id\":\"0xa\",\"rank\":3,\"duration_ns\":200}],"
          "\"stragglers\":[{\"comm_id\":\"0xa\",\"rank\":0,\"lateness_ns\":8}]}");
    json_t *b =
        J("{\"schema_version\":1,\"trace\":{\"comms\":[{\"comm_id\":\"0xb\",\"name\":\"job\"}]},"
          "\"summary\":{\"iterations\":2,\"mean_iteration_ns\":150,\"totals\":{"
          "\"duration_ns\":1200,\"compute_ns\":400,\"exposed_communication_ns\":600,"
          "\"idle_ns\":0}},"
          "\"ranks\":[{\"comm_id\":\"0xb\",\"rank\":0,\"duration_ns\":240},"
          "{\"comm_id\":\"0xb\",\"rank\":1,\"duration_ns\":300},"
          "{\"comm_id\":\"0xb\",\"rank\":2,\"duration_ns\":360},"
          "{\"comm_id\":\"0xb\",\"rank\":3,\"duration_ns\":300}],"
          "\"stragglers\":[{\"comm_id\":\"0xb\",\"rank\":2,\"lateness_ns\":40}]}");
    json_t *d = diff(a, b);
    assert_int_equal(I(d, "iteration.delta_ns"), 50);
    assert_string_equal(S(d, "iteration.statistic"), "mean");
    assert_int_equal(json_array_size(G(d, "phases")), 4);
    assert_string_equal(S(d, "phases.0.phase"), "exposed_communication");
    assert_int_equal(I(d, "phases.0.contribution_ns"), 50);
    assert_int_equal(I(d, "phases.0.a.ns"), 25);
    assert_int_equal(I(d, "phases.0.b.ns"), 75);
    assert_true(R(d, "phases.0.share") == 1.0);
    /* |10| twice: ties in name order */
    assert_string_equal(S(d, "phases.1.phase"), "idle");
    assert_int_equal(I(d, "phases.1.contribution_ns"), -10);
    assert_string_equal(S(d, "phases.2.phase"), "wait");
    assert_int_equal(I(d, "phases.2.contribution_ns"), 10);
    assert_int_equal(I(d, "phases.2.a.ns"), 15);
    assert_true(R(d, "phases.2.share") == 0.2);
    assert_string_equal(S(d, "phases.3.phase"), "compute");
    assert_int_equal(I(d, "phases.3.contribution_ns"), 0);

    assert_int_equal(I(d, "ranks.matched"), 4);
    assert_int_equal(I(d, "ranks.entries.0.rank"), 2);
    assert_int_equal(I(d, "ranks.entries.0.contribution_ns"), 20);
    assert_int_equal(I(d, "ranks.entries.0.iteration_delta_ns"), 80);
    assert_string_equal(S(d, "ranks.entries.0.present"), "both");
    assert_int_equal(I(d, "ranks.entries.3.rank"), 0);
    assert_int_equal(I(d, "ranks.entries.3.contribution_ns"), 5);
    assert_int_equal(I(d, "ranks.straggler.a.rank"), 0);
    assert_int_equal(I(d, "ranks.straggler.b.rank"), 2);
    assert_int_equal(I(d, "ranks.straggler.b.lateness_per_iteration_ns"), 20);
    assert_true(json_is_true(G(d, "ranks.straggler.changed")));
    /* no collective, decision or link: the cause is the top rank (20 of 50 >= 10 %) */
    assert_string_equal(S(d, "cause.kind"), "rank");
    assert_string_equal(S(d, "cause.subject"), "rank 2");
    json_decref(d);
}

/* Collectives per kind and size bucket, from collective_groups (no collectives list). A (2
 * iterations): allreduce 1 MiB hierarchical 4 x 10000 and 1.5 MiB hierarchical 2 x 12000 (one
 * bucket, 1 MiB..2 MiB: 64000, 32000 per iteration), barrier 2 x 500 (500 per iteration).
 * B (4 iterations): allreduce 1 MiB ring 8 x 20000 and 1.5 MiB ring 4 x 16000 (224000, 56000 per
 * iteration), barrier 4 x 500 (500). Allreduce +24000 of dT = 130000 - 100000 = 30000 (0.8),
 * algorithm changed; barrier 0. Decisions: A 2 allreduce 1 MiB hierarchical, measured 10000
 * each (10000 per iteration), B 4 ring measured 20000 each (20000): +10000, changed. */
static void test_collectives_and_decisions(void **state)
{
    (void)state;
    json_t *a =
        J("{\"schema_version\":1,\"summary\":{\"iterations\":2,\"mean_iteration_ns\":100000},"
          "\"collective_groups\":["
          "{\"comm_id\":\"0x1\",\"coll\":\"allreduce\",\"algorithm\":\"hierarchical\",\"bytes\":"
          "1048576,"
          "\"count\":4,\"mean_time_ns\":10000},"
          "{\"comm_id\":\"0x1\",\"coll\":\"allreduce\",\"algorithm\":\"hierarchical\",\"bytes\":"
          "1572864,"
          "\"count\":2,\"mean_time_ns\":12000},"
          "{\"comm_id\":\"0x1\",\"coll\":\"barrier\",\"algorithm\":\"dissemination\",\"bytes\":0,"
          "\"count\":2,\"mean_time_ns\":500}],"
          "\"decisions\":["
          "{\"comm_id\":\"0x1\",\"seq\":0,\"kind\":\"algorithm\",\"coll\":\"allreduce\",\"bytes\":"
          "1048576,"
          "\"chosen\":\"hierarchical\",\"reason\":\"selection map\",\"measured_ns\":10000},"
          "{\"comm_id\":\"0x1\",\"seq\":1,\"kind\":\"algorithm\",\"coll\":\"allreduce\",\"bytes\":"
          "1048576,"
          "\"chosen\":\"hierarchical\",\"reason\":\"selection map\",\"measured_ns\":10000}]}");
    json_t *b =
        J("{\"schema_version\":1,\"summary\":{\"iterations\":4,\"mean_iteration_ns\":130000},"
          "\"collective_groups\":["
          "{\"comm_id\":\"0x2\",\"coll\":\"allreduce\",\"algorithm\":\"ring\",\"bytes\":1048576,"
          "\"count\":8,\"mean_time_ns\":20000},"
          "{\"comm_id\":\"0x2\",\"coll\":\"allreduce\",\"algorithm\":\"ring\",\"bytes\":1572864,"
          "\"count\":4,\"mean_time_ns\":16000},"
          "{\"comm_id\":\"0x2\",\"coll\":\"barrier\",\"algorithm\":\"dissemination\",\"bytes\":0,"
          "\"count\":4,\"mean_time_ns\":500}],"
          "\"decisions\":["
          "{\"comm_id\":\"0x2\",\"seq\":0,\"kind\":\"algorithm\",\"coll\":\"allreduce\",\"bytes\":"
          "1048576,"
          "\"chosen\":\"ring\",\"reason\":\"GLUCX_TUNE\",\"measured_ns\":20000},"
          "{\"comm_id\":\"0x2\",\"seq\":1,\"kind\":\"algorithm\",\"coll\":\"allreduce\",\"bytes\":"
          "1048576,"
          "\"chosen\":\"ring\",\"reason\":\"GLUCX_TUNE\",\"measured_ns\":20000},"
          "{\"comm_id\":\"0x2\",\"seq\":2,\"kind\":\"algorithm\",\"coll\":\"allreduce\",\"bytes\":"
          "1048576,"
          "\"chosen\":\"ring\",\"reason\":\"GLUCX_TUNE\",\"measured_ns\":20000},"
          "{\"comm_id\":\"0x2\",\"seq\":3,\"kind\":\"algorithm\",\"coll\":\"allreduce\",\"bytes\":"
          "1048576,"
          "\"chosen\":\"ring\",\"reason\":\"GLUCX_TUNE\",\"measured_ns\":20000}]}");
    json_t *d = diff(a, b);
    assert_int_equal(I(d, "iteration.delta_ns"), 30000);
    assert_string_equal(S(d, "collectives_counted"), "all");
    assert_int_equal(json_array_size(G(d, "collectives")), 2);
    assert_string_equal(S(d, "collectives.0.coll"), "allreduce");
    assert_string_equal(S(d, "collectives.0.bucket"), "1 MiB..2 MiB");
    assert_int_equal(I(d, "collectives.0.bytes_min"), 1048576);
    assert_int_equal(I(d, "collectives.0.bytes_max"), 2097151);
    assert_int_equal(I(d, "collectives.0.contribution_ns"), 24000);
    assert_true(R(d, "collectives.0.share") == 0.8);
    assert_int_equal(I(d, "collectives.0.a.time_per_iteration_ns"), 32000);
    assert_int_equal(I(d, "collectives.0.b.time_per_iteration_ns"), 56000);
    assert_true(R(d, "collectives.0.b.calls_per_iteration") == 3.0);
    assert_true(json_is_true(G(d, "collectives.0.algorithm_changed")));
    assert_string_equal(S(d, "collectives.0.a.algorithm"), "hierarchical");
    assert_string_equal(S(d, "collectives.0.b.algorithm"), "ring");
    assert_string_equal(S(d, "collectives.1.coll"), "barrier");
    assert_int_equal(I(d, "collectives.1.contribution_ns"), 0);
    assert_true(json_is_false(G(d, "collectives.1.algorithm_changed")));

    assert_int_equal(json_array_size(G(d, "decisions")), 1);
    assert_true(json_is_true(G(d, "decisions.0.changed")));
    assert_int_equal(I(d, "decisions.0.contribution_ns"), 10000);
    assert_string_equal(S(d, "decisions.0.a.option"), "hierarchical");
    assert_string_equal(S(d, "decisions.0.b.option"), "ring");
    assert_int_equal(I(d, "decisions.0.b.reasons.GLUCX_TUNE"), 4);

    assert_string_equal(S(d, "cause.kind"), "collective");
    assert_string_equal(S(d, "cause.subject"), "allreduce 1 MiB..2 MiB");
    assert_int_equal(I(d, "cause.contribution_ns"), 24000);
    assert_non_null(strstr(S(d, "cause.sentence"), "hierarchical -> ring"));
    json_decref(d);
}

/* The collectives list, complete and with iterations: only calls inside iterations count. A (1
 * iteration): allreduce seq 0 outside (time 999999), seq 1 inside, 3000. B (1 iteration): seq 0
 * outside (5), seq 1 inside 7000: +4000 (the calls outside would give -995994). Decision of seq 0
 * (outside) is left out, seq 1's counted: 1000 -> 2000. */
static void test_collectives_in_iterations(void **state)
{
    (void)state;
    const char *fmt =
        "{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":%d},"
        "\"lists\":{\"collectives\":2,\"collectives_listed\":2},"
        "\"collective_groups\":[{\"comm_id\":\"0x1\",\"coll\":\"allreduce\",\"algorithm\":\"ring\","
        "\"bytes\":64,\"count\":2,\"mean_time_ns\":1}],"
        "\"collectives\":["
        "{\"comm_id\":\"0x1\",\"seq\":0,\"iteration\":null,\"coll\":\"allreduce\",\"algorithm\":"
        "\"ring\","
        "\"bytes\":64,\"time_ns\":%d},"
        "{\"comm_id\":\"0x1\",\"seq\":1,\"iteration\":0,\"coll\":\"allreduce\",\"algorithm\":"
        "\"ring\","
        "\"bytes\":64,\"time_ns\":%d}],"
        "\"decisions\":["
        "{\"comm_id\":\"0x1\",\"seq\":0,\"kind\":\"algorithm\",\"coll\":\"allreduce\",\"bytes\":64,"
        "\"chosen\":\"ring\",\"measured_ns\":%d},"
        "{\"comm_id\":\"0x1\",\"seq\":1,\"kind\":\"algorithm\",\"coll\":\"allreduce\",\"bytes\":64,"
        "\"chosen\":\"ring\",\"measured_ns\":%d}]}";
    char ta[2048], tb[2048];
    snprintf(ta, sizeof(ta), fmt, 10000, 999999, 3000, 999999, 1000);
    snprintf(tb, sizeof(tb), fmt, 14000, 5, 7000, 5, 2000);
    json_t *d = diff(J(ta), J(tb));
    assert_string_equal(S(d, "collectives_counted"), "in_iterations");
    assert_int_equal(I(d, "collectives.0.contribution_ns"), 4000);
    assert_int_equal(I(d, "collectives.0.a.count"), 1);
    assert_true(json_is_false(G(d, "collectives.0.algorithm_changed")));
    assert_int_equal(I(d, "decisions.0.contribution_ns"), 1000);
    assert_int_equal(I(d, "decisions.0.a.count"), 1);
    json_decref(d);
}

/* Priority decisions: A chose seq 4 (and 5), B the same chunks under other seqs (9, 10): one
 * option "chunk" on both sides, not changed; an algorithm decision that went ring -> torus
 * is. */
static void test_priority_decisions_not_changed(void **state)
{
    (void)state;
    const char *fmt =
        "{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":%d},"
        "\"decisions\":["
        "{\"comm_id\":\"0x1\",\"seq\":%d,\"kind\":\"priority\",\"coll\":\"allreduce\",\"bytes\":"
        "4096,\"chosen\":\"seq %d\",\"reason\":\"priority 1, 2 ready\",\"measured_ns\":100},"
        "{\"comm_id\":\"0x1\",\"seq\":%d,\"kind\":\"priority\",\"coll\":\"allreduce\",\"bytes\":"
        "4096,\"chosen\":\"seq %d\",\"reason\":\"priority 0, 1 ready\",\"measured_ns\":100},"
        "{\"comm_id\":\"0x1\",\"seq\":%d,\"kind\":\"algorithm\",\"coll\":\"allreduce\",\"bytes\":"
        "4096,\"chosen\":\"%s\",\"measured_ns\":%d}]}";
    char ta[2048], tb[2048];
    snprintf(ta, sizeof(ta), fmt, 1000, 4, 4, 5, 5, 4, "ring", 100);
    snprintf(tb, sizeof(tb), fmt, 1500, 9, 9, 10, 10, 9, "torus", 600);
    json_t *d = diff(J(ta), J(tb));
    int seen = 0;
    for (size_t i = 0; i < json_array_size(G(d, "decisions")); i++) {
        const json_t *e = json_array_get(G(d, "decisions"), i);
        const char *kind = json_string_value(json_object_get(e, "kind"));
        if (strcmp(kind, "priority") == 0) {
            seen++;
            assert_true(json_is_false(json_object_get(e, "changed")));
            assert_string_equal(
                json_string_value(json_object_get(json_object_get(e, "a"), "option")), "chunk");
            assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "b"), "count")),
                             2);
        } else {
            seen += 10;
            assert_true(json_is_true(json_object_get(e, "changed")));
        }
    }
    assert_int_equal(seen, 11);
    assert_string_equal(S(d, "cause.kind"), "decision");
    assert_non_null(strstr(S(d, "cause.sentence"), "ring"));
    json_decref(d);
}

/* Physical links matched by (dimension, endpoints), whichever end is named first. A (4
 * iterations): link 4 (package 0 - package 1) busy 4000 (1000 per iteration), link 5 (package 1
 * - package 2) busy 4000 (1000). B (2 iterations): link 4 named package 1 - package 0, busy 2000
 * (1000), link 5 busy 10000 (5000): link 5 +4000 of dT = 14000 - 10000 (1.0), link 4 0. */
static void test_links(void **state)
{
    (void)state;
    json_t *a =
        J("{\"schema_version\":1,\"summary\":{\"iterations\":4,\"mean_iteration_ns\":10000},"
          "\"physical_links\":["
          "{\"comm_id\":\"0x1\",\"phys_id\":4,\"dim\":1,\"a\":{\"kind\":\"package\",\"index\":0},"
          "\"b\":{\"kind\":\"package\",\"index\":1},\"bandwidth_Bps\":1.25e8,\"bytes\":4000000,"
          "\"busy_ns\":4000,\"of_nominal\":0.8},"
          "{\"comm_id\":\"0x1\",\"phys_id\":5,\"dim\":1,\"a\":{\"kind\":\"package\",\"index\":1},"
          "\"b\":{\"kind\":\"package\",\"index\":2},\"bandwidth_Bps\":1.25e8,\"bytes\":4000000,"
          "\"busy_ns\":4000,\"of_nominal\":0.8}]}");
    json_t *b =
        J("{\"schema_version\":1,\"summary\":{\"iterations\":2,\"mean_iteration_ns\":14000},"
          "\"physical_links\":["
          "{\"comm_id\":\"0x9\",\"phys_id\":4,\"dim\":1,\"a\":{\"kind\":\"package\",\"index\":1},"
          "\"b\":{\"kind\":\"package\",\"index\":0},\"bandwidth_Bps\":1.25e8,\"bytes\":2000000,"
          "\"busy_ns\":2000,\"of_nominal\":0.8},"
          "{\"comm_id\":\"0x9\",\"phys_id\":5,\"dim\":1,\"a\":{\"kind\":\"package\",\"index\":1},"
          "\"b\":{\"kind\":\"package\",\"index\":2},\"bandwidth_Bps\":1.25e8,\"bytes\":2000000,"
          "\"busy_ns\":10000,\"of_nominal\":0.2}]}");
    json_t *d = diff(a, b);
    assert_string_equal(S(d, "links.kind"), "physical");
    assert_int_equal(json_array_size(G(d, "links.entries")), 2);
    assert_int_equal(I(d, "links.entries.0.a.id"), 5);
    assert_int_equal(I(d, "links.entries.0.contribution_ns"), 4000);
    assert_int_equal(I(d, "links.entries.0.a.busy_ns_per_iteration"), 1000);
    assert_int_equal(I(d, "links.entries.0.b.busy_ns_per_iteration"), 5000);
    assert_int_equal(I(d, "links.entries.0.bytes_delta_per_iteration"), 0);
    assert_true(R(d, "links.entries.0.share") == 1.0);
    assert_int_equal(I(d, "links.entries.1.a.id"), 4);
    assert_string_equal(S(d, "links.entries.1.present"), "both");
    assert_int_equal(I(d, "links.entries.1.contribution_ns"), 0);
    assert_string_equal(S(d, "cause.kind"), "link");
    assert_string_equal(S(d, "cause.subject"),
                        "physical link 5 (dimension 1, package 1 - package 2)");
    assert_non_null(
        strstr(S(d, "cause.sentence"), "20% of its nominal bandwidth in B against 80%"));
    json_decref(d);
}

/* Rank-pair links when neither report has physical links (an older trace). */
static void test_rank_pair_links(void **state)
{
    (void)state;
    json_t *a = J("{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":100},"
                  "\"links\":[{\"comm_id\":\"0x1\",\"link_id\":1,\"src\":0,\"dst\":1,\"dim\":0,"
                  "\"bytes\":10,\"busy_ns\":30}]}");
    json_t *b = J("{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":160},"
                  "\"links\":[{\"comm_id\":\"0x1\",\"link_id\":1,\"src\":0,\"dst\":1,\"dim\":0,"
                  "\"bytes\":10,\"busy_ns\":90}]}");
    json_t *d = diff(a, b);
    assert_string_equal(S(d, "links.kind"), "rank_pair");
    assert_string_equal(S(d, "links.entries.0.label"), "link 0->1");
    assert_int_equal(I(d, "links.entries.0.contribution_ns"), 60);
    assert_string_equal(S(d, "cause.kind"), "link");
    json_decref(d);
}

/* Rank counts that differ: A 4 ranks, B 2 (the first two): 2 matched, a note says so; the
 * ranks of A only contribute minus their own term. A: 4 x 400 over 1 iteration, T = 400: each
 * term 100; B: 2 x 300, T = 300: each term 150. Ranks 0, 1: +50 each; ranks 2, 3: -100 each;
 * sum -100 = dT. */
static void test_mismatched_ranks(void **state)
{
    (void)state;
    json_t *a = J("{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":400},"
                  "\"ranks\":[{\"comm_id\":\"0x1\",\"rank\":0,\"duration_ns\":400},"
                  "{\"comm_id\":\"0x1\",\"rank\":1,\"duration_ns\":400},"
                  "{\"comm_id\":\"0x1\",\"rank\":2,\"duration_ns\":400},"
                  "{\"comm_id\":\"0x1\",\"rank\":3,\"duration_ns\":400}]}");
    json_t *b = J("{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":300},"
                  "\"ranks\":[{\"comm_id\":\"0x2\",\"rank\":0,\"duration_ns\":300},"
                  "{\"comm_id\":\"0x2\",\"rank\":1,\"duration_ns\":300}]}");
    json_t *d = diff(a, b);
    assert_int_equal(I(d, "ranks.a_ranks"), 4);
    assert_int_equal(I(d, "ranks.b_ranks"), 2);
    assert_int_equal(I(d, "ranks.matched"), 2);
    json_int_t sum = 0;
    for (size_t i = 0; i < 4; i++) {
        const json_t *e = json_array_get(G(d, "ranks.entries"), i);
        json_int_t r = I(e, "rank"), c = I(e, "contribution_ns");
        sum += c;
        assert_int_equal(c, r < 2 ? 50 : -100);
        assert_string_equal(S(e, "present"), r < 2 ? "both" : "a");
    }
    assert_int_equal(sum, -100);
    int noted = 0;
    size_t i;
    const json_t *n;
    json_array_foreach(G(d, "notes"), i, n) noted |=
        strstr(json_string_value(n), "rank counts differ: A has 4 ranks, B has 2") != NULL;
    assert_true(noted);
    json_decref(d);
}

/* The smallest report the diff accepts: every section missing, a note for each; no cause. */
static void test_missing_sections(void **state)
{
    (void)state;
    json_t *d =
        diff(J("{\"schema_version\":1,\"summary\":{\"iterations\":0,\"mean_iteration_ns\":0}}"),
             J("{\"schema_version\":1,\"summary\":{\"iterations\":3,\"mean_iteration_ns\":7}}"));
    assert_int_equal(I(d, "iteration.delta_ns"), 7);
    assert_true(json_is_null(G(d, "iteration.delta_share")));
    assert_int_equal(json_array_size(G(d, "phases")), 0);
    assert_int_equal(json_array_size(G(d, "collectives")), 0);
    assert_int_equal(json_array_size(G(d, "links.entries")), 0);
    assert_string_equal(S(d, "cause.kind"), "none");
    assert_true(json_array_size(G(d, "notes")) >= 4);
    json_decref(d);
    /* no difference: every share null, cause none */
    d = diff(J("{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":5}}"),
             J("{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":5}}"));
    assert_string_equal(S(d, "cause.kind"), "none");
    json_decref(d);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void expect_load_error(const char *path, const char *what)
{
    char err[1024] = "";
    json_t *r = glucx_an_diff_load(path, err, sizeof(err));
    if (r)
        fail_msg("%s loaded, want an error with \"%s\"", path, what);
    if (!strstr(err, what) || !strstr(err, path))
        fail_msg("error \"%s\" does not name %s and \"%s\"", err, path, what);
}

/* Bad inputs: the message names the file and what is wrong. */
static void test_bad_input(void **state)
{
    (void)state;
    char p[1100], dir[1024];
    snprintf(p, sizeof(p), "%s/none.json", g_dir);
    expect_load_error(p, "No such file or directory");
    snprintf(p, sizeof(p), "%s/cut.json", g_dir);
    write_file(p, "{\"schema_version\":1,\"summ");
    expect_load_error(p, "is not JSON");
    snprintf(p, sizeof(p), "%s/array.json", g_dir);
    write_file(p, "[1,2]");
    expect_load_error(p, "the top level is not a JSON object");
    snprintf(p, sizeof(p), "%s/noversion.json", g_dir);
    write_file(p, "{\"summary\":{}}");
    expect_load_error(p, "schema_version");
    snprintf(p, sizeof(p), "%s/v2.json", g_dir);
    write_file(p, "{\"schema_version\":2,\"summary\":{}}");
    expect_load_error(p, "schema_version 2");
    snprintf(p, sizeof(p), "%s/nosummary.json", g_dir);
    write_file(p, "{\"schema_version\":1}");
    expect_load_error(p, "no \"summary\" object");
    snprintf(p, sizeof(p), "%s/badmean.json", g_dir);
    write_file(p,
               "{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":\"x\"}}");
    expect_load_error(p, "summary.mean_iteration_ns");
    /* a directory without report.json: names the file it looked for */
    snprintf(dir, sizeof(dir), "%s/emptydir", g_dir);
    assert_int_equal(glucx_an_mkdir_p(dir), 0);
    snprintf(p, sizeof(p), "%s/report.json", dir);
    unlink(p); /* an earlier run's */
    expect_load_error(dir, "No such file or directory");
    /* the same directory with a report: loads */
    write_file(p, "{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":3}}");
    char err[256];
    json_t *r = glucx_an_diff_load(dir, err, sizeof(err));
    assert_non_null(r);
    /* a report that fails the checks is refused by compute too */
    json_t *bad = J("{\"schema_version\":1}");
    assert_null(glucx_an_diff_compute(r, bad, "A", "B", err, sizeof(err)));
    assert_non_null(strstr(err, "B"));
    json_decref(bad);
    json_decref(r);
}

/* diff.json and diff.txt written; a directory that cannot be created fails naming it. */
static void test_write(void **state)
{
    (void)state;
    json_t *d =
        diff(J("{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":5}}"),
             J("{\"schema_version\":1,\"summary\":{\"iterations\":1,\"mean_iteration_ns\":9}}"));
    char out[1024], p[1100], err[1024] = "";
    snprintf(out, sizeof(out), "%s/out", g_dir);
    assert_int_equal(glucx_an_diff_write(d, out, 0, err, sizeof(err)), 0);
    snprintf(p, sizeof(p), "%s/diff.json", out);
    json_error_t je;
    json_t *back = json_load_file(p, 0, &je);
    assert_non_null(back);
    assert_true(json_equal(back, d));
    json_decref(back);
    snprintf(p, sizeof(p), "%s/diff.txt", out);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = 0;
    fclose(f);
    assert_non_null(strstr(text, "Mean iteration: 5 ns -> 9 ns, +4 ns"));
    assert_non_null(strstr(text, "Cause: "));
    /* a file where the directory should be */
    snprintf(p, sizeof(p), "%s/diff.json/sub", out);
    assert_int_equal(glucx_an_diff_write(d, p, 0, err, sizeof(err)), -1);
    assert_non_null(strstr(err, p));
    json_decref(d);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_dir = argv[1];
    if (glucx_an_mkdir_p(g_dir) != 0) {
        fprintf(stderr, "cannot create %s: %s\n", g_dir, strerror(errno));
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phases_and_ranks),
        cmocka_unit_test(test_collectives_and_decisions),
        cmocka_unit_test(test_collectives_in_iterations),
        cmocka_unit_test(test_priority_decisions_not_changed),
        cmocka_unit_test(test_links),
        cmocka_unit_test(test_rank_pair_links),
        cmocka_unit_test(test_mismatched_ranks),
        cmocka_unit_test(test_missing_sections),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
