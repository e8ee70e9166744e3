/*
 * Unit tests of the multi-host merge with clock correction (analysis/core/clocksync.c and the
 * engine's two passes): hand-built runs whose hosts' clocks are shifted and skewed by known
 * amounts. Every event is first placed in true (reference) time, then stamped with its host's
 * clock L_h(t) = t + o_h + d_h (t - T0), T0 the reference host's first event; the test checks the
 * estimate against o_h and d_h, and the violations the merge leaves.
 * argv[1]: a scratch directory for the reports.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "core/clocksync.h"
#include "core/engine.h"

#define C 0xc10cull
#define T0 INT64_C(1000000000) /* the reference host's first event (true time = its clock) */
#define MAX_HOSTS 4

static const char *g_dir = "work-clock";

/* ---- a run: events in true time, stamped with their host's clock ---------------------------- */

typedef struct run {
    glucx_an_event_t *v;
    size_t n, cap;
    int nhosts;
    int host_of[16]; /* rank -> host */
    double off_ns[MAX_HOSTS], drift[MAX_HOSTS];
    /* the true one-way latencies of the messages between two hosts: the smallest and largest */
    int64_t lat_min, lat_max;
} run_t;

static int64_t stamp(const run_t *r, int host, int64_t t)
{
    return t + (int64_t)llround(r->off_ns[host] + r->drift[host] * (double)(t - T0));
}

static void add(run_t *r, int kind, int64_t t, int rank, void (*fill)(glucx_an_event_t *, void *),
                void *arg)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->v = realloc(r->v, r->cap * sizeof(*r->v));
        assert_non_null(r->v);
    }
    int h = r->host_of[rank];
    glucx_an_event_t e = glucx_an_event_init(kind, stamp(r, h, t), C, rank);
    e.vpid = 1000 + rank;
    e.vtid = 1000 + rank;
    e.host_index = h;
    if (fill)
        fill(&e, arg);
    r->v[r->n++] = e;
}

typedef struct msgarg {
    int32_t peer;
    uint32_t seq;
} msgarg_t;

static void fill_msg(glucx_an_event_t *e, void *arg)
{
    const msgarg_t *m = arg;
    e->peer = m->peer;
    e->seq = m->seq;
    e->step = 0;
    e->tag = ((uint64_t)m->seq << 16) | 1; /* point to point */
    e->bytes = 64;
}

static void fill_init(glucx_an_event_t *e, void *arg)
{
    e->size = *(int *)arg;
    e->npackages = 1;
    e->name = "clock";
    e->host = "";
}

static void fill_phase(glucx_an_event_t *e, void *arg)
{
    e->phase = "fwd";
    e->id = *(uint64_t *)arg;
}

/* A message from rank @p src to rank @p dst whose send begins at true time @p t and whose
 * receive (posted 5 us before) ends @p lat later. */
static void message(run_t *r, int src, int dst, uint32_t seq, int64_t t, int64_t lat)
{
    msgarg_t to = {dst, seq}, from = {src, seq};
    add(r, GLUCX_AN_EV_RECV_BEGIN, t - 5000, dst, fill_msg, &from);
    add(r, GLUCX_AN_EV_SEND_BEGIN, t, src, fill_msg, &to);
    add(r, GLUCX_AN_EV_SEND_END, t + 1000, src, fill_msg, &to);
    add(r, GLUCX_AN_EV_RECV_END, t + lat, dst, fill_msg, &from);
    if (r->host_of[src] != r->host_of[dst]) {
        if (r->lat_min == 0 || lat < r->lat_min)
            r->lat_min = lat;
        if (lat > r->lat_max)
            r->lat_max = lat;
    }
}

/* One rank per host (rank h on host h), comm_init of each, the reference's first. */
static void begin_run(run_t *r, int nhosts)
{
    memset(r, 0, sizeof(*r));
    r->nhosts = nhosts;
    for (int h = 0; h < nhosts; h++)
        r->host_of[h] = h;
    for (int h = 0; h < nhosts; h++)
        add(r, GLUCX_AN_EV_COMM_INIT, T0 + 1000 * h, h, fill_init, &nhosts);
}

/* A deterministic latency in [base, base + spread) (a little jitter, as a network has). */
static int64_t lat_of(unsigned i, int64_t base, int64_t spread)
{
    return base + (int64_t)((i * 2654435761u) % (unsigned)spread);
}

typedef struct ix {
    glucx_an_event_t e;
    size_t i;
} ix_t;

static int by_ts(const void *a, const void *b)
{
    const ix_t *x = a, *y = b;
    if (x->e.ts != y->e.ts)
        return x->e.ts < y->e.ts ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The events in raw time order (as the muxer gives them: each host's own clock); equal times
 * keep the order they were added in (each rank's events are added in its own order). */
static void sort_raw(run_t *r)
{
    ix_t *t = malloc(r->n * sizeof(*t));
    assert_non_null(t);
    for (size_t i = 0; i < r->n; i++) {
        t[i].e = r->v[i];
        t[i].i = i;
    }
    qsort(t, r->n, sizeof(*t), by_ts);
    for (size_t i = 0; i < r->n; i++)
        r->v[i] = t[i].e;
    free(t);
}

/* Both passes over the run with minimum latency @p lmin: the estimate, then the corrected
 * analysis; returns report.json. */
static json_t *merge_lmin(run_t *r, const char *name, int64_t lmin, glucx_an_clock_t **cs_p)
{
    sort_raw(r);
    mkdir(g_dir, 0777);
    char out[512], err[256];
    glucx_an_clock_t *cs = glucx_an_clock_create(r->nhosts, 0, lmin);
    assert_non_null(cs);
    snprintf(out, sizeof(out), "%s/%s-pass1", g_dir, name);
    glucx_an_options_t o1 = {.out_dir = out, .clock_collect = cs};
    glucx_an_engine_t *e = glucx_an_engine_create(&o1, err, sizeof(err));
    assert_non_null(e);
    for (size_t i = 0; i < r->n; i++)
        assert_int_equal(glucx_an_engine_feed(e, &r->v[i]), 0);
    glucx_an_engine_destroy(e);
    assert_int_equal(glucx_an_clock_estimate(cs), 0);
    snprintf(out, sizeof(out), "%s/%s", g_dir, name);
    glucx_an_options_t o2 = {.out_dir = out, .timeline = 1, .clock = cs};
    e = glucx_an_engine_create(&o2, err, sizeof(err));
    assert_non_null(e);
    for (size_t i = 0; i < r->n; i++)
        assert_int_equal(glucx_an_engine_feed(e, &r->v[i]), 0);
    assert_int_equal(glucx_an_engine_finish(e), 0);
    glucx_an_engine_destroy(e);
    char p[600];
    snprintf(p, sizeof(p), "%s/report.json", out);
    json_error_t jerr;
    json_t *rep = json_load_file(p, 0, &jerr);
    if (!rep)
        fail_msg("report.json does not parse: %s line %d", jerr.text, jerr.line);
    snprintf(p, sizeof(p), "%s/timeline.json", out);
    json_t *tl = json_load_file(p, 0, &jerr);
    if (!tl)
        fail_msg("timeline.json does not parse: %s line %d", jerr.text, jerr.line);
    json_decref(tl);
    *cs_p = cs;
    free(r->v);
    r->v = NULL;
    return rep;
}

static json_t *merge(run_t *r, const char *name, glucx_an_clock_t **cs_p)
{
    return merge_lmin(r, name, 0, cs_p);
}

static json_t *host_rec(json_t *rep, int h)
{
    json_t *hs = json_object_get(json_object_get(rep, "clock"), "hosts");
    json_t *x = json_array_get(hs, (size_t)h);
    assert_non_null(x);
    assert_int_equal(json_integer_value(json_object_get(x, "host")), h);
    return x;
}

static double getn(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v))
        fail_msg("field %s is not a number", k);
    return json_number_value(v);
}

static json_int_t clock_count(json_t *rep, const char *k)
{
    json_t *v = json_object_get(json_object_get(rep, "clock"), k);
    if (!json_is_integer(v))
        fail_msg("clock.%s is not an integer", k);
    return json_integer_value(v);
}

static const char *status_of(json_t *rep, int h)
{
    return json_string_value(json_object_get(host_rec(rep, h), "status"));
}

/* ---- offsets ------------------------------------------------------------------------------- */

/* Two hosts; host 1's clock is off by o (no drift). Ping-pongs every 10 ms for 2 s, one-way
 * latencies 20..50 us (true). The estimate must be within its stated bound of o, and the bound
 * at most the link's one-way latency. */
static void one_offset(double o, const char *name)
{
    run_t r;
    begin_run(&r, 2);
    r.off_ns[1] = o;
    unsigned k = 0;
    for (int64_t t = T0 + 100000; t < T0 + 2000000000; t += 10000000, k++) {
        message(&r, 0, 1, 2 * k, t, lat_of(2 * k, 20000, 30000));
        message(&r, 1, 0, 2 * k + 1, t + 3000000, lat_of(2 * k + 1, 20000, 30000));
    }
    int64_t lat_min = r.lat_min, lat_max = r.lat_max;
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, name, &cs);
    json_t *h1 = host_rec(rep, 1);
    assert_string_equal(status_of(rep, 0), "reference");
    /* o = 0: the raw clocks satisfy every message, so nothing is corrected; else the messages
     * cross o = 0 (|o| > the latencies, or o = 30 us against latencies from 20 us) */
    assert_string_equal(status_of(rep, 1), o == 0 ? "consistent" : "ok");
    if (o == 0) {
        assert_true(getn(h1, "offset_ns") == 0 && getn(h1, "drift_ppm") == 0);
        assert_int_equal(clock_count(rep, "violations_after_offsets"), 0);
        assert_int_equal(clock_count(rep, "clc_moved_receives"), 0);
    }
    double est = getn(h1, "offset_ns"), bound = getn(h1, "offset_bound_ns");
    print_message("offset %.0f ns: estimate %.1f ns, bound %.1f ns (one-way latency %" PRId64
                  "..%" PRId64 " ns), drift %.4f ppm +- %.4f\n",
                  o, est, bound, lat_min, lat_max, getn(h1, "drift_ppm"),
                  getn(h1, "drift_bound_ppm"));
    assert_true(fabs(est - o) <= bound);
    assert_true(bound <= (double)lat_max);
    assert_true(bound > 0);
    /* the true drift (0) is within its bound too */
    assert_true(fabs(getn(h1, "drift_ppm")) <= getn(h1, "drift_bound_ppm"));
    assert_int_equal(json_integer_value(json_object_get(h1, "messages_from_reference")), 200);
    assert_int_equal(json_integer_value(json_object_get(h1, "messages_to_reference")), 200);
    /* violations: with |o| larger than the latencies, every message against the offset's
     * direction ends before it began on the raw clocks; none are left after the merge */
    json_int_t before = clock_count(rep, "violations_before");
    if (fabs(o) > (double)lat_max)
        assert_int_equal(before, 200);
    else if (o == 0)
        assert_int_equal(before, 0);
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(rep, "trace"), "causality_violations")),
        0);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

static void test_offsets(void **state)
{
    (void)state;
    one_offset(-50e6, "offset-m50ms");
    one_offset(-12345678, "offset-m12ms");
    one_offset(0, "offset-0");
    one_offset(30017, "offset-30us");
    one_offset(3e6 + 17, "offset-3ms");
    one_offset(50e6, "offset-p50ms");
}

/* Three hosts at -50 ms and +50 ms around the reference: each estimated against the reference,
 * messages between hosts 1 and 2 only constrain the logical clock. */
static void test_three_hosts(void **state)
{
    (void)state;
    run_t r;
    begin_run(&r, 3);
    r.off_ns[1] = 50e6;
    r.off_ns[2] = -50e6;
    unsigned k = 0;
    for (int64_t t = T0 + 100000; t < T0 + 1000000000; t += 10000000, k++) {
        message(&r, 0, 1, 6 * k, t, lat_of(6 * k, 25000, 20000));
        message(&r, 1, 0, 6 * k + 1, t + 1000000, lat_of(6 * k + 1, 25000, 20000));
        message(&r, 0, 2, 6 * k + 2, t + 2000000, lat_of(6 * k + 2, 25000, 20000));
        message(&r, 2, 0, 6 * k + 3, t + 3000000, lat_of(6 * k + 3, 25000, 20000));
        message(&r, 1, 2, 6 * k + 4, t + 4000000, lat_of(6 * k + 4, 25000, 20000));
        message(&r, 2, 1, 6 * k + 5, t + 5000000, lat_of(6 * k + 5, 25000, 20000));
    }
    int64_t lat_max = r.lat_max;
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, "three-hosts", &cs);
    for (int h = 1; h <= 2; h++) {
        json_t *x = host_rec(rep, h);
        assert_string_equal(status_of(rep, h), "ok");
        double want = h == 1 ? 50e6 : -50e6;
        assert_true(fabs(getn(x, "offset_ns") - want) <= getn(x, "offset_bound_ns"));
        assert_true(getn(x, "offset_bound_ns") <= (double)lat_max);
    }
    /* 1 -> 2 messages (100 ms apart on the raw clocks) and the ones against each offset */
    assert_true(clock_count(rep, "violations_before") >= 300);
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    assert_int_equal(clock_count(rep, "cross_host_messages"), 600);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

/* ---- drift --------------------------------------------------------------------------------- */

/* Host 1 runs @p ppm fast (or slow) with offset 2 ms at T0, over a 25 s run with a ping-pong
 * every 50 ms: the drift must come out within 5 % and within its bound, the offset within its. */
static void one_drift(double ppm, const char *name)
{
    run_t r;
    begin_run(&r, 2);
    r.off_ns[1] = 2e6;
    r.drift[1] = ppm * 1e-6;
    unsigned k = 0;
    for (int64_t t = T0 + 100000; t < T0 + INT64_C(25000000000); t += 50000000, k++) {
        message(&r, 0, 1, 2 * k, t, lat_of(2 * k, 20000, 30000));
        message(&r, 1, 0, 2 * k + 1, t + 20000000, lat_of(2 * k + 1, 20000, 30000));
    }
    int64_t lat_max = r.lat_max;
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, name, &cs);
    json_t *h1 = host_rec(rep, 1);
    assert_string_equal(status_of(rep, 1), "ok");
    double d = getn(h1, "drift_ppm"), db = getn(h1, "drift_bound_ppm");
    double o = getn(h1, "offset_ns"), ob = getn(h1, "offset_bound_ns");
    print_message("drift %.1f ppm: estimate %.3f ppm +- %.3f, offset %.1f +- %.1f ns\n", ppm, d, db,
                  o, ob);
    assert_true(fabs(d - ppm) <= 0.05 * fabs(ppm));
    assert_true(fabs(d - ppm) <= db);
    assert_true(fabs(o - 2e6) <= ob);
    assert_true(ob <= (double)lat_max);
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

static void test_drift(void **state)
{
    (void)state;
    one_drift(100, "drift-p100");
    one_drift(-250, "drift-m250");
}

/* ---- the logical clock --------------------------------------------------------------------- */

/* Host 1's clock jumps by +300 us half-way (not linear): no line fits every message, so
 * violations remain after the offset; the logical clock removes them, moving receives forward
 * only, and keeps the length of host 1's compute phases (no receive falls inside one): their
 * total is N x 100 us, give or take the 1 ns rounding of each corrected end. */
static void test_logical_clock(void **state)
{
    (void)state;
    run_t r;
    begin_run(&r, 2);
    unsigned k = 0, nphase = 0;
    for (int64_t t = T0 + 100000; t < T0 + 2000000000; t += 10000000, k++) {
        if (t >= T0 + 1000000000)
            r.off_ns[1] = 300000;
        message(&r, 0, 1, 2 * k, t, lat_of(2 * k, 20000, 30000));
        uint64_t id = k;
        add(&r, GLUCX_AN_EV_COMPUTE_BEGIN, t + 1000000, 1, fill_phase, &id);
        add(&r, GLUCX_AN_EV_COMPUTE_END, t + 1100000, 1, fill_phase, &id);
        nphase++;
        message(&r, 1, 0, 2 * k + 1, t + 3000000, lat_of(2 * k + 1, 20000, 30000));
    }
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, "logical-clock", &cs);
    json_t *h1 = host_rec(rep, 1);
    /* a step of 300 us is far beyond the latencies: no linear clock fits */
    assert_string_equal(status_of(rep, 1), "inconsistent");
    assert_non_null(strstr(json_string_value(json_object_get(h1, "note")), "host 1"));
    assert_true(clock_count(rep, "violations_after_offsets") > 0);
    assert_true(clock_count(rep, "clc_moved_receives") > 0);
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(rep, "trace"), "causality_violations")),
        0);
    json_t *ranks = json_object_get(rep, "ranks"), *x;
    size_t i;
    json_int_t compute = -1;
    json_array_foreach(ranks, i, x) if (json_integer_value(json_object_get(x, "rank")) == 1)
        compute = json_integer_value(json_object_get(x, "compute_ns"));
    assert_true(llabs((long long)compute - (long long)nphase * 100000) <= (long long)nphase);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

/* ---- inputs that do not determine a clock -------------------------------------------------- */

/* A ring's far side: host 2 exchanges messages only with host 1, never with the reference. It is
 * estimated through host 1 (host 1's times mapped with its own estimate), and its bound includes
 * host 1's error: the known offset and drift must lie within it, and it is at most the two links'
 * one-way latencies together. */
static void test_chain(void **state)
{
    (void)state;
    run_t r;
    begin_run(&r, 3);
    r.off_ns[1] = 1e6;
    r.drift[1] = 120e-6;
    r.off_ns[2] = -40e6;
    r.drift[2] = -200e-6;
    unsigned k = 0;
    for (int64_t t = T0 + 100000; t < T0 + INT64_C(21000000000); t += 50000000, k++) {
        message(&r, 0, 1, 4 * k, t, lat_of(4 * k, 20000, 30000));
        message(&r, 1, 0, 4 * k + 1, t + 10000000, lat_of(4 * k + 1, 20000, 30000));
        message(&r, 1, 2, 4 * k + 2, t + 20000000, lat_of(4 * k + 2, 20000, 30000));
        message(&r, 2, 1, 4 * k + 3, t + 30000000, lat_of(4 * k + 3, 20000, 30000));
    }
    int64_t lat_max = r.lat_max;
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, "chain", &cs);
    json_t *h1 = host_rec(rep, 1), *h2 = host_rec(rep, 2);
    assert_string_equal(status_of(rep, 1), "ok");
    assert_true(json_is_null(json_object_get(h1, "via_host")));
    assert_string_equal(status_of(rep, 2), "ok");
    assert_int_equal(json_integer_value(json_object_get(h2, "via_host")), 1);
    double o = getn(h2, "offset_ns"), ob = getn(h2, "offset_bound_ns");
    double d = getn(h2, "drift_ppm"), db = getn(h2, "drift_bound_ppm");
    print_message("through host 1: offset %.1f +- %.1f ns (want -40 ms), drift %.3f +- %.3f ppm "
                  "(want -200); host 1's bound %.1f ns\n",
                  o, ob, d, db, getn(h1, "offset_bound_ns"));
    assert_true(fabs(o - -40e6) <= ob);
    assert_true(fabs(d - -200) <= db);
    assert_true(fabs(d - -200) <= 0.05 * 200);
    assert_true(ob > getn(h1, "offset_bound_ns") && ob <= 2.0 * (double)lat_max);
    const char *note = json_string_value(json_object_get(h2, "note"));
    assert_non_null(strstr(note, "host 2: no messages both ways with the reference host 0: "
                                 "estimated through host 1"));
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

/* Host 2 exchanges no message at all (it only computes): not corrected, and named. */
static void test_no_messages(void **state)
{
    (void)state;
    run_t r;
    begin_run(&r, 3);
    r.off_ns[1] = 1e6;
    r.off_ns[2] = 5e6;
    unsigned k = 0;
    for (int64_t t = T0 + 100000; t < T0 + 500000000; t += 10000000, k++) {
        message(&r, 0, 1, 2 * k, t, 30000);
        message(&r, 1, 0, 2 * k + 1, t + 1000000, 30000);
        uint64_t id = k;
        add(&r, GLUCX_AN_EV_COMPUTE_BEGIN, t + 2000000, 2, fill_phase, &id);
        add(&r, GLUCX_AN_EV_COMPUTE_END, t + 3000000, 2, fill_phase, &id);
    }
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, "no-messages", &cs);
    json_t *h1 = host_rec(rep, 1), *h2 = host_rec(rep, 2);
    /* 60 us wide corridors over 0.5 s bound host 1's drift only to a few hundred ppm: drift 0,
     * the offset from the corridor (exactly 1 ms, the latencies being constant) */
    assert_string_equal(status_of(rep, 1), "offset_only");
    assert_true(getn(h1, "drift_ppm") == 0);
    assert_true(fabs(getn(h1, "offset_ns") - 1e6) <= getn(h1, "offset_bound_ns"));
    assert_string_equal(status_of(rep, 2), "no_messages");
    assert_true(getn(h2, "offset_ns") == 0 && getn(h2, "drift_ppm") == 0);
    assert_true(json_is_null(json_object_get(h2, "offset_bound_ns")));
    const char *note = json_string_value(json_object_get(h2, "note"));
    assert_non_null(strstr(note, "host 2: no matched message with the reference host 0"));
    /* the note is also a warning of the report */
    json_t *w = json_object_get(json_object_get(rep, "trace"), "warnings"), *x;
    size_t i;
    int found = 0;
    json_array_foreach(w, i, x) found |= strstr(json_string_value(x), "host 2: no matched") != NULL;
    assert_true(found);
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

/* Messages from the reference only: the offset is bounded from above only; a host 1 ms behind
 * (o = -1 ms) with 30 us latencies gets offset <= -1 ms + 30 us, corrected to that bound. */
static void test_one_direction(void **state)
{
    (void)state;
    run_t r;
    begin_run(&r, 2);
    r.off_ns[1] = -1e6;
    unsigned k = 0;
    for (int64_t t = T0 + 100000; t < T0 + 500000000; t += 10000000, k++)
        message(&r, 0, 1, k, t, 30000);
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, "one-direction", &cs);
    json_t *h1 = host_rec(rep, 1);
    assert_string_equal(status_of(rep, 1), "one_sided");
    /* upper bound: min over messages of re - sb on the raw clocks = -1 ms + 30 us exactly */
    assert_true(fabs(getn(h1, "offset_max_ns") - (-1e6 + 30000)) < 1e-6);
    assert_true(json_is_null(json_object_get(h1, "offset_min_ns")));
    assert_true(json_is_null(json_object_get(h1, "offset_bound_ns")));
    assert_true(getn(h1, "offset_ns") == -1e6 + 30000);
    assert_non_null(strstr(json_string_value(json_object_get(h1, "note")),
                           "host 1: messages from the reference host 0 only"));
    assert_int_equal(clock_count(rep, "violations_before"), 50);
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

/* One message each way: the offset is bounded from both sides, the drift is not. */
static void test_too_few(void **state)
{
    (void)state;
    run_t r;
    begin_run(&r, 2);
    r.off_ns[1] = 7e6;
    message(&r, 0, 1, 0, T0 + 100000, 40000);
    message(&r, 1, 0, 1, T0 + 500000, 20000);
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, "too-few", &cs);
    json_t *h1 = host_rec(rep, 1);
    assert_string_equal(status_of(rep, 1), "offset_only");
    /* o <= 7 ms + 40 us and o >= 7 ms - 20 us: midpoint 7 ms + 10 us, bound 30 us */
    assert_true(fabs(getn(h1, "offset_ns") - (7e6 + 10000)) < 1e-6);
    assert_true(fabs(getn(h1, "offset_bound_ns") - 30000) < 1e-6);
    assert_true(fabs(getn(h1, "offset_ns") - 7e6) <= getn(h1, "offset_bound_ns"));
    assert_true(getn(h1, "drift_ppm") == 0);
    assert_true(json_is_null(json_object_get(h1, "drift_bound_ppm")));
    assert_non_null(strstr(json_string_value(json_object_get(h1, "note")), "host 1: 1 + 1"));
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

/* A known minimum latency (--min-latency) narrows the bounds: the messages' true one-way
 * latencies are at least 20 us; with lmin = 20 us the offset bound shrinks below the one with
 * lmin = 0 and still holds the known offset. */
static void test_min_latency(void **state)
{
    (void)state;
    double bound[2];
    for (int i = 0; i < 2; i++) {
        run_t r;
        begin_run(&r, 2);
        r.off_ns[1] = 5e6;
        unsigned k = 0;
        for (int64_t t = T0 + 100000; t < T0 + 1000000000; t += 10000000, k++) {
            message(&r, 0, 1, 2 * k, t, lat_of(2 * k, 20000, 30000));
            message(&r, 1, 0, 2 * k + 1, t + 3000000, lat_of(2 * k + 1, 20000, 30000));
        }
        assert_true(r.lat_min >= 20000);
        glucx_an_clock_t *cs;
        json_t *rep = merge_lmin(&r, i ? "lmin-20us" : "lmin-0", i ? 20000 : 0, &cs);
        json_t *h1 = host_rec(rep, 1);
        assert_string_equal(status_of(rep, 1), "ok");
        assert_int_equal(clock_count(rep, "min_latency_ns"), i ? 20000 : 0);
        bound[i] = getn(h1, "offset_bound_ns");
        assert_true(fabs(getn(h1, "offset_ns") - 5e6) <= bound[i]);
        assert_int_equal(clock_count(rep, "violations_after"), 0);
        json_decref(rep);
        glucx_an_clock_destroy(cs);
    }
    print_message("offset bound: %.1f ns with lmin 0, %.1f ns with lmin 20 us\n", bound[0],
                  bound[1]);
    assert_true(bound[1] < bound[0]);
}

/* ---- minimal correction, undetermined drift, the better-determined path -----------------------
 */

/* Large messages: each send_begin -> recv_end spans 1..2 ms (true), one every 2.2 ms of a 25 ms
 * round, over 0.5 s: the corridor between the two directions' bounds is 2 ms or more wide, so
 * they bound a drift only to thousands of ppm. */
#define LONG_LAT(seq) lat_of(seq, 1000000, 1000000)

/* Four hosts on one clock (true offsets and drifts 0), as an emulated cluster's 2x2 torus: host
 * 0 exchanges large messages with hosts 1 and 2, host 3 with hosts 1 and 2 and sends host 0
 * three only; hosts 1 and 2 also exchange short ones (20..50 us), which any relative correction
 * of them of more than that would break. The raw clocks satisfy every message: nothing is
 * corrected (hosts 1 and 2 consistent, host 3 consistent through one of them rather than one
 * sided), no violation appears after the offsets, and the logical clock moves nothing. */
static void test_long_messages(void **state)
{
    (void)state;
    run_t r;
    begin_run(&r, 4);
    static const int pairs[][2] = {{0, 1}, {1, 0}, {0, 2}, {2, 0}, {1, 3},
                                   {3, 1}, {2, 3}, {3, 2}, {1, 2}, {2, 1}};
    unsigned seq = 0, k = 0;
    for (int64_t t = T0 + 100000; t < T0 + 500000000; t += 25000000, k++) {
        for (int i = 0; i < 10; i++, seq++) {
            int a = pairs[i][0], b = pairs[i][1];
            int64_t lat =
                a + b == 3 && a != 0 && b != 0 ? lat_of(seq, 20000, 30000) : LONG_LAT(seq);
            message(&r, a, b, seq, t + 2200000 * i, lat);
        }
        if (k < 3) {
            message(&r, 3, 0, seq, t + 2200000 * 10, LONG_LAT(seq));
            seq++;
        }
    }
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, "long-messages", &cs);
    print_message("violations %lld before, %lld after the offsets; the logical clock moved %lld "
                  "receives\n",
                  (long long)clock_count(rep, "violations_before"),
                  (long long)clock_count(rep, "violations_after_offsets"),
                  (long long)clock_count(rep, "clc_moved_receives"));
    for (int h = 1; h <= 3; h++) {
        json_t *x = host_rec(rep, h);
        const char *note = json_string_value(json_object_get(x, "note"));
        print_message("host %d: %s, offset %.0f +- %.0f ns, drift %.3f ppm; %s\n", h,
                      status_of(rep, h), getn(x, "offset_ns"), getn(x, "offset_bound_ns"),
                      getn(x, "drift_ppm"), note);
        assert_string_equal(status_of(rep, h), "consistent");
        assert_true(getn(x, "offset_ns") == 0 && getn(x, "drift_ppm") == 0);
        /* the bound is the farthest end of the range the messages allow at drift 0 */
        double lo = getn(x, "offset_min_ns"), hi = getn(x, "offset_max_ns");
        assert_true(lo <= 0 && hi >= 0);
        assert_true(getn(x, "offset_bound_ns") == (-lo > hi ? -lo : hi));
        /* the drift is not determined: taken as 0, without a bound */
        assert_true(json_is_null(json_object_get(x, "drift_bound_ppm")));
        if (h < 3) {
            assert_true(json_is_null(json_object_get(x, "via_host")));
            assert_non_null(strstr(note, "bound its drift only to"));
            assert_non_null(strstr(note, "not corrected"));
        } else {
            json_int_t via = json_integer_value(json_object_get(x, "via_host"));
            assert_true(via == 1 || via == 2);
            assert_non_null(strstr(note, "host 3: no messages both ways with the reference host 0: "
                                         "estimated through host"));
            assert_non_null(strstr(note, "(0 messages from the reference, 3 to it)"));
        }
    }
    assert_int_equal(clock_count(rep, "violations_before"), 0);
    assert_int_equal(clock_count(rep, "violations_after_offsets"), 0);
    assert_int_equal(clock_count(rep, "clc_moved_receives"), 0);
    assert_int_equal(clock_count(rep, "clc_max_shift_ns"), 0);
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    /* nothing to warn of: the notes stay in clock.hosts[] */
    json_t *w = json_object_get(json_object_get(rep, "trace"), "warnings"), *x;
    size_t i;
    json_array_foreach(w, i, x) assert_null(strstr(json_string_value(x), "clock correction"));
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

/* The same large messages between two hosts, host 1's clock 5 ms ahead (drift 0): the raw
 * clocks violate the messages to the reference, so a correction is needed, but the messages
 * bound the drift only to thousands of ppm: drift 0, the offset the middle of the range the
 * messages allow at drift 0, the known offset within its bound, and the bound at most the
 * largest latency (the range is the two directions' smallest latencies wide). */
static void test_drift_undetermined(void **state)
{
    (void)state;
    run_t r;
    begin_run(&r, 2);
    r.off_ns[1] = 5e6;
    unsigned seq = 0;
    for (int64_t t = T0 + 100000; t < T0 + 500000000; t += 5000000, seq += 2) {
        message(&r, 0, 1, seq, t, LONG_LAT(seq));
        message(&r, 1, 0, seq + 1, t + 2500000, LONG_LAT(seq + 1));
    }
    int64_t lat_max = r.lat_max;
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, "drift-undetermined", &cs);
    json_t *h1 = host_rec(rep, 1);
    const char *note = json_string_value(json_object_get(h1, "note"));
    double o = getn(h1, "offset_ns"), ob = getn(h1, "offset_bound_ns");
    print_message("offset %.0f +- %.0f ns (want 5 ms), drift %.3f ppm; %s\n", o, ob,
                  getn(h1, "drift_ppm"), note);
    assert_string_equal(status_of(rep, 1), "offset_only");
    assert_true(getn(h1, "drift_ppm") == 0);
    assert_true(json_is_null(json_object_get(h1, "drift_bound_ppm")));
    assert_true(fabs(o - 5e6) <= ob);
    assert_true(ob <= (double)lat_max);
    assert_true(o == (getn(h1, "offset_min_ns") + getn(h1, "offset_max_ns")) / 2);
    assert_non_null(strstr(note, "host 1: 100 + 100 messages with the reference host 0"));
    assert_non_null(strstr(note, "bound its drift only to"));
    assert_int_equal(clock_count(rep, "violations_before"), 100);
    assert_int_equal(clock_count(rep, "violations_after_offsets"), 0);
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

/* Host 2 sends the reference 3 messages only (one sided: its offset bounded from below) but
 * exchanges a ping-pong every 10 ms with host 1 (20..50 us latencies), whose clock is 3 ms ahead
 * and which does with the reference, for @p span ns, with latencies 20..50 us (@p long_msgs 0)
 * or 1..2 ms: host 2 is
 * estimated through host 1, bounded from both sides, the known offset within the bound, and the
 * bound at most the two links' largest latencies together. Host 1 gets @p want1, host 2
 * @p want2. */
static void one_sided_via(int64_t span, int long_msgs, const char *want1, const char *want2,
                          const char *name)
{
    run_t r;
    begin_run(&r, 3);
    r.off_ns[1] = 3e6;
    r.off_ns[2] = -20e6;
    unsigned k = 0;
    int64_t lat01_max = 0;
    for (int64_t t = T0 + 100000; t < T0 + span; t += 10000000, k++) {
        int64_t l0 = long_msgs ? LONG_LAT(5 * k) : lat_of(5 * k, 20000, 30000);
        int64_t l1 = long_msgs ? LONG_LAT(5 * k + 1) : lat_of(5 * k + 1, 20000, 30000);
        lat01_max = l0 > lat01_max ? l0 : lat01_max;
        lat01_max = l1 > lat01_max ? l1 : lat01_max;
        message(&r, 0, 1, 5 * k, t, l0);
        message(&r, 1, 0, 5 * k + 1, t + 2500000, l1);
        message(&r, 1, 2, 5 * k + 2, t + 5000000, lat_of(5 * k + 2, 20000, 30000));
        message(&r, 2, 1, 5 * k + 3, t + 6000000, lat_of(5 * k + 3, 20000, 30000));
        if (k < 3)
            message(&r, 2, 0, 5 * k + 4, t + 7000000, lat_of(5 * k + 4, 20000, 30000));
    }
    glucx_an_clock_t *cs;
    json_t *rep = merge(&r, name, &cs);
    json_t *h1 = host_rec(rep, 1), *h2 = host_rec(rep, 2);
    const char *note = json_string_value(json_object_get(h2, "note"));
    double o = getn(h2, "offset_ns"), ob = getn(h2, "offset_bound_ns");
    print_message("%s: host 1 %s, offset %.1f +- %.1f ns; host 2 %s, offset %.1f +- %.1f ns (want "
                  "-20 ms); %s\n",
                  name, status_of(rep, 1), getn(h1, "offset_ns"), getn(h1, "offset_bound_ns"),
                  status_of(rep, 2), o, ob, note);
    assert_string_equal(status_of(rep, 1), want1);
    assert_true(fabs(getn(h1, "offset_ns") - 3e6) <= getn(h1, "offset_bound_ns"));
    assert_string_equal(status_of(rep, 2), want2);
    assert_int_equal(json_integer_value(json_object_get(h2, "via_host")), 1);
    assert_true(fabs(o - -20e6) <= ob);
    assert_true(ob <= (double)lat01_max + 50000);
    assert_true(json_is_number(json_object_get(h2, "offset_min_ns")) &&
                json_is_number(json_object_get(h2, "offset_max_ns")));
    /* counted against host 1 now: the ping-pongs each way */
    assert_int_equal(json_integer_value(json_object_get(h2, "messages_from_reference")), k);
    assert_int_equal(json_integer_value(json_object_get(h2, "messages_to_reference")), k);
    char want_note[160];
    snprintf(want_note, sizeof(want_note),
             "host 2: no messages both ways with the reference host 0: estimated through host 1 "
             "(%u messages)",
             2 * k);
    assert_non_null(strstr(note, want_note));
    assert_non_null(strstr(note, "(0 messages from the reference, 3 to it)"));
    assert_int_equal(clock_count(rep, "violations_after"), 0);
    json_decref(rep);
    glucx_an_clock_destroy(cs);
}

static void test_one_sided_via(void **state)
{
    (void)state;
    /* 2 s of short messages: host 1's drift is determined (about +- 20 ppm), so is host 2's */
    one_sided_via(2000000000, 0, "ok", "ok", "one-sided-via");
    /* 0.5 s, large messages with the reference: host 1 offset only (drift 0), and host 2
     * through it too: the relaxed bounds do not determine its drift either */
    one_sided_via(500000000, 1, "offset_only", "offset_only", "one-sided-via-long");
}

/* Bad arguments to the estimator are refused, not crashed on. */
static void test_bad_arguments(void **state)
{
    (void)state;
    assert_null(glucx_an_clock_create(0, 0, 0));
    assert_null(glucx_an_clock_create(2, 2, 0));
    assert_null(glucx_an_clock_create(2, 0, -1));
    glucx_an_clock_t *cs = glucx_an_clock_create(2, 0, 0);
    uint64_t k[3] = {0, 1, 2};
    /* a host out of range is ignored */
    assert_int_equal(glucx_an_clock_add(cs, 5, k, 10, 0, k, 20), 0);
    assert_int_equal(glucx_an_clock_estimate(cs), 0);
    assert_string_equal(glucx_an_clock_status_name(glucx_an_clock_host(cs, 1)->status),
                        "no_messages");
    assert_null(glucx_an_clock_host(cs, 2));
    assert_int_equal(glucx_an_clock_map(cs, 1, 12345), 12345);
    glucx_an_clock_destroy(cs);
    glucx_an_clock_destroy(NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_three_hosts),
        cmocka_unit_test(test_drift),
        cmocka_unit_test(test_logical_clock),
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_no_messages),
        cmocka_unit_test(test_one_direction),
        cmocka_unit_test(test_too_few),
        cmocka_unit_test(test_min_latency),
        cmocka_unit_test(test_long_messages),
        cmocka_unit_test(test_drift_undetermined),
        cmocka_unit_test(test_one_sided_via),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
