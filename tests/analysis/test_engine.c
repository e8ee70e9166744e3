/*
 * Unit tests of the analysis engine (analysis/core): each metric of METRICS.md on a hand-built
 * event sequence whose answer is worked out in the comment next to it.
 * argv[1]: a scratch directory for the reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <math.h>
#include <jansson.h>

#include "core/engine.h"
#include "core/ivl.h"

#define C 0xabcull

static const char *g_dir = "work-unit";
static glucx_an_engine_t *g_e;
static char g_out[1024];

static void start(const char *name)
{
    mkdir(g_dir, 0777);
    snprintf(g_out, sizeof(g_out), "%s/%s", g_dir, name);
    glucx_an_options_t o = {.out_dir = g_out, .timeline = 1};
    char err[256];
    g_e = glucx_an_engine_create(&o, err, sizeof(err));
    assert_non_null(g_e);
}

static void feed(glucx_an_event_t ev)
{
    assert_int_equal(glucx_an_engine_feed(g_e, &ev), 0);
}

static glucx_an_event_t ev(int kind, int64_t ts, int rank)
{
    glucx_an_event_t e = glucx_an_event_init(kind, ts, C, rank);
    e.vpid = 1000 + rank;
    e.vtid = 1000 + rank;
    return e;
}

static void init(int64_t ts, int rank, int size)
{
    glucx_an_event_t e = ev(GLUCX_AN_EV_COMM_INIT, ts, rank);
    e.size = size;
    e.npackages = 1;
    e.name = ""; /* empty strings are valid */
    e.host = "";
    feed(e);
}

static void iter(int kind, int64_t ts, int rank, uint64_t k)
{
    glucx_an_event_t e = ev(kind, ts, rank);
    e.id = k;
    feed(e);
}

static void coll(int kind, int64_t ts, int rank, uint32_t seq, int c, uint64_t bytes, int alg)
{
    glucx_an_event_t e = ev(kind, ts, rank);
    e.seq = seq;
    e.coll = c;
    e.bytes = bytes;
    e.alg = alg;
    e.status = kind == GLUCX_AN_EV_COLL_BEGIN ? 1 : 0;
    feed(e);
}

static void p2p(int kind, int64_t ts, int rank, int peer, uint32_t seq, uint32_t step,
                uint64_t bytes)
{
    glucx_an_event_t e = ev(kind, ts, rank);
    e.seq = seq;
    e.step = step;
    e.peer = peer;
    e.tag = (UINT64_C(1) << 63) | ((uint64_t)seq << 32) | ((uint64_t)step << 16);
    e.bytes = bytes;
    feed(e);
}

static void simple(int kind, int64_t ts, int rank)
{
    feed(ev(kind, ts, rank));
}

static json_t *finish(void)
{
    assert_int_equal(glucx_an_engine_finish(g_e), 0);
    glucx_an_engine_destroy(g_e);
    g_e = NULL;
    char p[1100];
    snprintf(p, sizeof(p), "%s/report.json", g_out);
    json_error_t err;
    json_t *r = json_load_file(p, 0, &err);
    if (!r)
        fail_msg("report.json does not parse: %s line %d", err.text, err.line);
    snprintf(p, sizeof(p), "%s/timeline.json", g_out);
    json_t *t = json_load_file(p, 0, &err);
    if (!t)
        fail_msg("timeline.json does not parse: %s line %d", err.text, err.line);
    json_decref(t);
    return r;
}

static json_int_t geti(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        fail_msg("field %s is not an integer", k);
    return json_integer_value(v);
}

static json_t *rank_of(json_t *rep, const char *list, int rank)
{
    json_t *a = json_object_get(rep, list), *x;
    size_t i;
    json_array_foreach(a, i, x) if (geti(x, "rank") == rank) return x;
    fail_msg("rank %d not in %s", rank, list);
    return NULL;
}

/* rank 0: iteration [0,1000), compute [100,600), collective [400,900)
 * -> compute 500, communication 500, overlap 200 (share 0.4), exposed 300,
 *    idle = 1000 - |[100,900)| = 200. rank 1 only communicates: idle 500. */
static void test_breakdown(void **state)
{
    (void)state;
    start("breakdown");
    init(0, 0, 2);
    init(0, 1, 2);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 0, 0);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 1, 0);
    glucx_an_event_t cb = ev(GLUCX_AN_EV_COMPUTE_BEGIN, 100, 0);
    cb.phase = "";
    feed(cb);
    coll(GLUCX_AN_EV_COLL_BEGIN, 400, 0, 0, 0, 64, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 400, 1, 0, 0, 64, 0);
    glucx_an_event_t ce = ev(GLUCX_AN_EV_COMPUTE_END, 600, 0);
    ce.phase = "";
    feed(ce);
    coll(GLUCX_AN_EV_COLL_END, 900, 0, 0, 0, 64, 0);
    coll(GLUCX_AN_EV_COLL_END, 900, 1, 0, 0, 64, 0);
    iter(GLUCX_AN_EV_ITERATION_END, 1000, 0, 0);
    iter(GLUCX_AN_EV_ITERATION_END, 1000, 1, 0);
    json_t *rep = finish();
    json_t *r0 = rank_of(rep, "ranks", 0), *r1 = rank_of(rep, "ranks", 1);
    assert_int_equal(geti(r0, "duration_ns"), 1000);
    assert_int_equal(geti(r0, "compute_ns"), 500);
    assert_int_equal(geti(r0, "communication_ns"), 500);
    assert_int_equal(geti(r0, "overlap_ns"), 200);
    assert_true(json_real_value(json_object_get(r0, "overlap_share")) > 0.3999 &&
                json_real_value(json_object_get(r0, "overlap_share")) < 0.4001);
    assert_int_equal(geti(r0, "exposed_communication_ns"), 300);
    assert_int_equal(geti(r0, "idle_ns"), 200);
    assert_int_equal(geti(r1, "idle_ns"), 500);
    json_t *sum = json_object_get(rep, "summary");
    assert_string_equal(json_string_value(json_object_get(sum, "iteration_source")), "markers");
    assert_int_equal(geti(sum, "iterations"), 1);
    /* the collective: both arrive at 400, end 900: time 500, busbw = 64/500ns * 2(n-1)/n */
    json_t *c0 = json_array_get(json_object_get(rep, "collectives"), 0);
    assert_int_equal(geti(c0, "time_ns"), 500);
    assert_true(fabs(json_number_value(json_object_get(c0, "busbw_Bps")) - 64 / 500e-9 * 1.0) < 1);
    json_decref(rep);
}

/* Framework phases (glucx.torch.instrument): rank 0 computes "backward" [100,400) on its
 * autograd thread; the bucket's "comm:allreduce" phase starts there at 400 and is ended at 700
 * by another thread (the backend completing the future): communication, not compute; a compute
 * phase "optimizer" [700,800) also ends on another thread than its begin. Window [0,1000):
 * compute = 300 + 100 = 400, communication = 300, no overlap, idle = 1000 - 700 = 300. */
static void test_framework_phases(void **state)
{
    (void)state;
    start("framework_phases");
    init(0, 0, 1);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 0, 0);
    const struct {
        int kind;
        int64_t ts, vtid;
        const char *phase;
    } steps[] = {
        {GLUCX_AN_EV_COMPUTE_BEGIN, 100, 7, "backward"},
        {GLUCX_AN_EV_COMPUTE_END, 400, 7, "backward"},
        {GLUCX_AN_EV_COMPUTE_BEGIN, 400, 7, "comm:allreduce"},
        {GLUCX_AN_EV_COMPUTE_END, 700, 8, "comm:allreduce"},
        {GLUCX_AN_EV_COMPUTE_BEGIN, 700, 9, "optimizer"},
        {GLUCX_AN_EV_COMPUTE_END, 800, 7, "optimizer"},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        glucx_an_event_t e = ev(steps[i].kind, steps[i].ts, 0);
        e.vtid = steps[i].vtid;
        e.phase = steps[i].phase;
        feed(e);
    }
    iter(GLUCX_AN_EV_ITERATION_END, 1000, 0, 0);
    json_t *rep = finish();
    json_t *r0 = rank_of(rep, "ranks", 0);
    assert_int_equal(geti(r0, "compute_ns"), 400);
    assert_int_equal(geti(r0, "communication_ns"), 300);
    assert_int_equal(geti(r0, "overlap_ns"), 0);
    assert_int_equal(geti(r0, "exposed_communication_ns"), 300);
    assert_int_equal(geti(r0, "idle_ns"), 300);
    json_decref(rep);
}

/* late sender: rank 1 posts its receive at 100 and waits [110,500); rank 0 sends at 300
 *   -> rank 1's late-sender wait = [110,300) = 190.
 * late receiver: rank 0 sends (seq 1) at 520 and waits [530,800); rank 1 posts at 700
 *   -> rank 0's late-receiver wait = [530,700) = 170. */
static void test_wait_split(void **state)
{
    (void)state;
    start("wait_split");
    init(0, 0, 2);
    init(0, 1, 2);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 0, 0);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 1, 0);
    p2p(GLUCX_AN_EV_RECV_BEGIN, 100, 1, 0, 0, 0, 8);
    simple(GLUCX_AN_EV_WAIT_BEGIN, 110, 1);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 300, 0, 1, 0, 0, 8);
    p2p(GLUCX_AN_EV_SEND_END, 310, 0, 1, 0, 0, 8);
    simple(GLUCX_AN_EV_WAIT_END, 500, 1);
    p2p(GLUCX_AN_EV_RECV_END, 501, 1, 0, 0, 0, 8);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 520, 0, 1, 1, 0, 8);
    simple(GLUCX_AN_EV_WAIT_BEGIN, 530, 0);
    p2p(GLUCX_AN_EV_RECV_BEGIN, 700, 1, 0, 1, 0, 8);
    simple(GLUCX_AN_EV_WAIT_END, 800, 0);
    p2p(GLUCX_AN_EV_SEND_END, 801, 0, 1, 1, 0, 8);
    p2p(GLUCX_AN_EV_RECV_END, 802, 1, 0, 1, 0, 8);
    iter(GLUCX_AN_EV_ITERATION_END, 900, 0, 0);
    iter(GLUCX_AN_EV_ITERATION_END, 900, 1, 0);
    json_t *rep = finish();
    json_t *r0 = rank_of(rep, "ranks", 0), *r1 = rank_of(rep, "ranks", 1);
    assert_int_equal(geti(r1, "wait_ns"), 390);
    assert_int_equal(geti(r1, "wait_late_sender_ns"), 190);
    assert_int_equal(geti(r1, "wait_late_receiver_ns"), 0);
    assert_int_equal(geti(r0, "wait_ns"), 270);
    assert_int_equal(geti(r0, "wait_late_receiver_ns"), 170);
    assert_int_equal(geti(r0, "wait_late_sender_ns"), 0);
    json_decref(rep);
}

/* three ranks arrive at 100, 110, 400 and all finish at 500: rank 2 is last, lateness
 * 400 - 110 = 290, others wait (400-100) + (400-110) = 590; time = 500 - 400 = 100. */
static void test_straggler(void **state)
{
    (void)state;
    start("straggler");
    for (int r = 0; r < 3; r++)
        init(0, r, 3);
    coll(GLUCX_AN_EV_COLL_BEGIN, 100, 0, 7, 1, 96, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 110, 1, 7, 1, 96, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 400, 2, 7, 1, 96, 0);
    for (int r = 0; r < 3; r++)
        coll(GLUCX_AN_EV_COLL_END, 500, r, 7, 1, 96, 0);
    json_t *rep = finish();
    json_t *s = json_array_get(json_object_get(rep, "stragglers"), 0);
    assert_non_null(s);
    assert_int_equal(geti(s, "rank"), 2);
    assert_int_equal(geti(s, "lateness_ns"), 290);
    assert_int_equal(geti(s, "others_wait_ns"), 590);
    json_t *c0 = json_array_get(json_object_get(rep, "collectives"), 0);
    assert_int_equal(geti(c0, "time_ns"), 100);
    assert_int_equal(geti(c0, "span_ns"), 400);
    assert_int_equal(geti(c0, "last_rank"), 2);
    json_decref(rep);
}

/* link 0->1: message A in flight [max(100,50), 300) = [100,300), message B [max(200,250),400)
 * = [250,400): busy = |[100,400)| = 300 ns; bytes 1000 + 24; achieved = 1024 B / 300 ns. */
static void test_link(void **state)
{
    (void)state;
    start("link");
    init(0, 0, 2);
    init(0, 1, 2);
    glucx_an_event_t l = ev(GLUCX_AN_EV_LINK, 1, 0);
    l.src = 0;
    l.dst = 1;
    l.dim = 0;
    l.link_id = 1;
    l.bandwidth_Bps = 1e10;
    l.latency_ns = 1000;
    l.transport = "posix";
    feed(l);
    p2p(GLUCX_AN_EV_RECV_BEGIN, 50, 1, 0, 0, 0, 1000);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 100, 0, 1, 0, 0, 1000);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 200, 0, 1, 0, 1, 24);
    p2p(GLUCX_AN_EV_RECV_BEGIN, 250, 1, 0, 0, 1, 24);
    p2p(GLUCX_AN_EV_SEND_END, 290, 0, 1, 0, 0, 1000);
    p2p(GLUCX_AN_EV_RECV_END, 300, 1, 0, 0, 0, 1000);
    p2p(GLUCX_AN_EV_SEND_END, 390, 0, 1, 0, 1, 24);
    p2p(GLUCX_AN_EV_RECV_END, 400, 1, 0, 0, 1, 24);
    json_t *rep = finish();
    json_t *links = json_object_get(rep, "links"), *x, *found = NULL;
    size_t i;
    json_array_foreach(links, i, x) if (geti(x, "src") == 0 && geti(x, "dst") == 1) found = x;
    assert_non_null(found);
    assert_int_equal(geti(found, "bytes"), 1024);
    assert_int_equal(geti(found, "messages"), 2);
    assert_int_equal(geti(found, "busy_ns"), 300);
    assert_int_equal(geti(found, "link_id"), 1);
    assert_string_equal(json_string_value(json_object_get(found, "transport")), "posix");
    double ach = json_real_value(json_object_get(found, "achieved_Bps"));
    assert_true(fabs(ach - 1024 / 300e-9) < 1);
    assert_true(fabs(json_real_value(json_object_get(found, "efficiency")) - ach / 1e10) < 1e-9);
    assert_int_equal(geti(json_object_get(rep, "trace"), "unmatched_sends"), 0);
    json_decref(rep);
}

/* A phys_link announcement: link @p id of dimension @p dim between package @p pkg and switch 0. */
static void phys_uplink(int64_t ts, int rank, int id, int dim, int pkg, double bw)
{
    glucx_an_event_t e = ev(GLUCX_AN_EV_PHYS_LINK, ts, rank);
    e.link_id = id;
    e.dim = dim;
    e.a_kind = 1; /* package */
    e.a = pkg;
    e.b_kind = 2; /* switch */
    e.b = 0;
    e.bandwidth_Bps = bw;
    e.latency_ns = 500;
    feed(e);
}

/* A route event: the route of rank -> dst in a comm of @p size ranks, its @p n links @p hops
 * crossed in directions @p dirs (0: a to b, 1: b to a; borrowed for the call). */
static void route(int64_t ts, int rank, int dst, int size, size_t n, const int32_t *hops,
                  const uint8_t *dirs)
{
    glucx_an_event_t e = ev(GLUCX_AN_EV_ROUTE, ts, rank);
    e.link = rank * size + dst;
    e.dst = dst;
    e.nhops = n;
    e.hops = hops;
    e.dirs = dirs;
    feed(e);
}

/* Direction @p d (0: a to b, 1: b to a) of physical link row @p l, checking its endpoints:
 * `from` is a for direction 0, b for 1. */
static json_t *plink_dir(json_t *l, int d)
{
    json_t *dirs = json_object_get(l, "directions");
    assert_int_equal(json_array_size(dirs), 2);
    json_t *x = json_array_get(dirs, (size_t)d);
    assert_true(json_equal(json_object_get(x, "from"), json_object_get(l, d ? "b" : "a")));
    assert_true(json_equal(json_object_get(x, "to"), json_object_get(l, d ? "a" : "b")));
    return x;
}

/* The physical link @p id of report.json's physical_links. */
static json_t *plink_of(json_t *rep, int id)
{
    json_t *a = json_object_get(rep, "physical_links"), *x;
    size_t i;
    json_array_foreach(a, i, x) if (geti(x, "phys_id") == id) return x;
    fail_msg("physical link %d not in the report", id);
    return NULL;
}

/* Physical links: three packages of one rank on a switch; uplinks 0 and 1 announced (10 GB/s),
 * uplink 2 only named by a route. Uplink k is package k (a) - switch 0 (b): a message leaves
 * its package a -> b (0) and enters the receiver's b -> a (1). Routes 0->1 = [0, 1] dirs
 * [0, 1], 2->1 = [2, 1] dirs [0, 1], 1->0 = [1, 0] dirs [0, 1].
 * Message A 0->1, 1000 B: rb 50, sb 100, re 300 -> in flight [100, 300).
 * Message B 2->1, 500 B: rb 200, sb 250, re 400 -> in flight [250, 400).
 * Message C 1->0, 24 B, sent but never received (unmatched: bytes, no busy time).
 * Link 0 (A, C): 1024 B, 2 messages, busy 200; a->b: A (1000 B, busy 200, 5e9 B/s, 0.5 of
 * nominal); b->a: C (24 B, no busy time, of_nominal null). Link 1 (A, B, C): 1524 B,
 * 3 messages, busy |[100,300) u [250,400)| = 300, achieved 1524 B / 300 ns = 5.08e9 B/s; a->b:
 * C (24 B, no busy time); b->a: A and B, 1500 B over the same 300 ns, 5e9 B/s, 0.5 of nominal:
 * the link's of_nominal (the larger direction's; both directions together would be 0.508).
 * Link 2 (B): 500 B, busy 150, a->b only, not announced (no nominal, of_nominal null). */
static void test_physical_links(void **state)
{
    (void)state;
    start("physical_links");
    for (int r = 0; r < 3; r++)
        init(0, r, 3);
    phys_uplink(1, 0, 0, 1, 0, 1e10);
    phys_uplink(1, 1, 1, 1, 1, 1e10);
    const int32_t r01[] = {0, 1}, r21[] = {2, 1}, r10[] = {1, 0};
    const uint8_t out_in[] = {0, 1};
    route(2, 0, 1, 3, 2, r01, out_in);
    route(2, 2, 1, 3, 2, r21, out_in);
    route(2, 1, 0, 3, 2, r10, out_in);
    p2p(GLUCX_AN_EV_RECV_BEGIN, 50, 1, 0, 0, 0, 1000);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 100, 0, 1, 0, 0, 1000);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 150, 1, 0, 7, 0, 24);
    p2p(GLUCX_AN_EV_RECV_BEGIN, 200, 1, 2, 1, 0, 500);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 250, 2, 1, 1, 0, 500);
    p2p(GLUCX_AN_EV_SEND_END, 290, 0, 1, 0, 0, 1000);
    p2p(GLUCX_AN_EV_RECV_END, 300, 1, 0, 0, 0, 1000);
    p2p(GLUCX_AN_EV_SEND_END, 390, 2, 1, 1, 0, 500);
    p2p(GLUCX_AN_EV_RECV_END, 400, 1, 2, 1, 0, 500);
    json_t *rep = finish();
    assert_int_equal(json_array_size(json_object_get(rep, "physical_links")), 3);
    json_t *l0 = plink_of(rep, 0), *l1 = plink_of(rep, 1), *l2 = plink_of(rep, 2);
    assert_int_equal(geti(l0, "bytes"), 1024);
    assert_int_equal(geti(l0, "messages"), 2);
    assert_int_equal(geti(l0, "busy_ns"), 200);
    assert_int_equal(geti(l1, "bytes"), 1524);
    assert_int_equal(geti(l1, "messages"), 3);
    assert_int_equal(geti(l1, "busy_ns"), 300);
    assert_int_equal(geti(l2, "bytes"), 500);
    assert_int_equal(geti(l2, "messages"), 1);
    assert_int_equal(geti(l2, "busy_ns"), 150);
    assert_int_equal(geti(l1, "dim"), 1);
    json_t *a = json_object_get(l1, "a"), *b = json_object_get(l1, "b");
    assert_string_equal(json_string_value(json_object_get(a, "kind")), "package");
    assert_int_equal(geti(a, "index"), 1);
    assert_string_equal(json_string_value(json_object_get(b, "kind")), "switch");
    assert_int_equal(geti(b, "index"), 0);
    assert_true(json_is_true(json_object_get(l1, "announced")));
    double ach = json_real_value(json_object_get(l1, "achieved_Bps"));
    assert_true(fabs(ach - 1524 / 300e-9) < 1);
    assert_true(fabs(json_real_value(json_object_get(l1, "of_nominal")) - 0.5) < 1e-9);
    /* per direction */
    json_t *d00 = plink_dir(l0, 0), *d01 = plink_dir(l0, 1);
    json_t *d10 = plink_dir(l1, 0), *d11 = plink_dir(l1, 1);
    assert_int_equal(geti(d00, "bytes"), 1000);
    assert_int_equal(geti(d00, "messages"), 1);
    assert_int_equal(geti(d00, "busy_ns"), 200);
    assert_true(fabs(json_real_value(json_object_get(d00, "achieved_Bps")) - 1000 / 200e-9) < 1);
    assert_true(fabs(json_real_value(json_object_get(d00, "of_nominal")) - 0.5) < 1e-9);
    assert_int_equal(geti(d01, "bytes"), 24);
    assert_int_equal(geti(d01, "messages"), 1);
    assert_int_equal(geti(d01, "busy_ns"), 0);
    assert_true(json_is_null(json_object_get(d01, "of_nominal")));
    assert_true(fabs(json_real_value(json_object_get(l0, "of_nominal")) - 0.5) < 1e-9);
    assert_int_equal(geti(d10, "bytes"), 24);
    assert_int_equal(geti(d10, "busy_ns"), 0);
    assert_int_equal(geti(d11, "bytes"), 1500);
    assert_int_equal(geti(d11, "messages"), 2);
    assert_int_equal(geti(d11, "busy_ns"), 300);
    assert_true(fabs(json_real_value(json_object_get(d11, "of_nominal")) - 0.5) < 1e-9);
    assert_int_equal(geti(plink_dir(l2, 0), "bytes"), 500);
    assert_int_equal(geti(plink_dir(l2, 0), "busy_ns"), 150);
    assert_int_equal(geti(plink_dir(l2, 1), "bytes"), 0);
    assert_true(json_is_false(json_object_get(l2, "announced")));
    assert_true(json_is_null(json_object_get(l2, "of_nominal")));
    assert_true(json_is_null(json_object_get(l2, "a")));
    json_decref(rep);
}

/* Both directions busy at once: two packages of one rank, uplinks 0 (package 0 - switch 0) and
 * 1 (package 1 - switch 0) at 1e9 B/s per direction. In one iteration both ranks start
 * collective 0 at 10, post their receives at 20, wait from 30, send at 40 (0->1 1000 B, 1->0
 * 500 B; send_end 50) and receive at 1040: both messages are in flight [40, 1040), 1000 ns.
 * Link 0: a->b (package 0 -> switch) 1000 B in 1000 ns = 1e9 B/s, 1.0 of nominal; b->a 500 B,
 * 0.5; together 1500 B in 1000 ns, 1.5 of the per-direction nominal, which no direction can
 * reach: the link's of_nominal is the larger direction's, 1.0. Link 1 the mirror image (a->b
 * 500 B, b->a 1000 B). Utilisation per direction: bytes / (1e9 B/s x duration); the link's,
 * the larger. The verdict names link 0 (a tie with link 1 on critical-path time and bytes,
 * the lower id) at 100% of its nominal bandwidth (150% both directions together). */
static void test_physical_duplex(void **state)
{
    (void)state;
    start("physical_duplex");
    init(0, 0, 2);
    init(0, 1, 2);
    phys_uplink(0, 0, 0, 1, 0, 1e9);
    phys_uplink(0, 1, 1, 1, 1, 1e9);
    const int32_t r01[] = {0, 1}, r10[] = {1, 0};
    const uint8_t out_in[] = {0, 1};
    route(0, 0, 1, 2, 2, r01, out_in);
    route(0, 1, 0, 2, 2, r10, out_in);
    for (int r = 0; r < 2; r++) {
        iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, r, 0);
        coll(GLUCX_AN_EV_COLL_BEGIN, 10, r, 0, 0, 1000, 0);
    }
    p2p(GLUCX_AN_EV_RECV_BEGIN, 20, 1, 0, 0, 0, 1000);
    p2p(GLUCX_AN_EV_RECV_BEGIN, 20, 0, 1, 0, 0, 500);
    simple(GLUCX_AN_EV_WAIT_BEGIN, 30, 0);
    simple(GLUCX_AN_EV_WAIT_BEGIN, 30, 1);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 40, 0, 1, 0, 0, 1000);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 40, 1, 0, 0, 0, 500);
    p2p(GLUCX_AN_EV_SEND_END, 50, 0, 1, 0, 0, 1000);
    p2p(GLUCX_AN_EV_SEND_END, 50, 1, 0, 0, 0, 500);
    p2p(GLUCX_AN_EV_RECV_END, 1040, 1, 0, 0, 0, 1000);
    p2p(GLUCX_AN_EV_RECV_END, 1040, 0, 1, 0, 0, 500);
    for (int r = 0; r < 2; r++) {
        simple(GLUCX_AN_EV_WAIT_END, 1040, r);
        coll(GLUCX_AN_EV_COLL_END, 1040, r, 0, 0, 1000, 0);
        iter(GLUCX_AN_EV_ITERATION_END, 1040, r, 0);
    }
    json_t *rep = finish();
    double dur = (double)geti(json_object_get(rep, "trace"), "duration_ns");
    assert_true(dur == 1040);
    for (int id = 0; id < 2; id++) {
        json_t *l = plink_of(rep, id);
        /* the direction of the 1000-byte message 0 -> 1: out of package 0, into package 1 */
        int big = id == 0 ? 0 : 1;
        json_t *hi = plink_dir(l, big), *lo = plink_dir(l, 1 - big);
        assert_int_equal(geti(l, "bytes"), 1500);
        assert_int_equal(geti(l, "messages"), 2);
        assert_int_equal(geti(l, "busy_ns"), 1000);
        assert_true(fabs(json_real_value(json_object_get(l, "achieved_Bps")) - 1.5e9) < 1);
        assert_int_equal(geti(hi, "bytes"), 1000);
        assert_int_equal(geti(hi, "messages"), 1);
        assert_int_equal(geti(hi, "busy_ns"), 1000);
        assert_int_equal(geti(lo, "bytes"), 500);
        assert_int_equal(geti(lo, "busy_ns"), 1000);
        assert_true(fabs(json_real_value(json_object_get(hi, "achieved_Bps")) - 1e9) < 1e-3);
        assert_true(fabs(json_real_value(json_object_get(hi, "of_nominal")) - 1.0) < 1e-9);
        assert_true(fabs(json_real_value(json_object_get(lo, "of_nominal")) - 0.5) < 1e-9);
        double of = json_real_value(json_object_get(l, "of_nominal"));
        assert_true(fabs(of - 1.0) < 1e-9);
        assert_true(of <= 1.0 + 1e-12); /* no more than one direction can do */
        assert_true(fabs(json_real_value(json_object_get(hi, "utilisation")) - 1000 / dur) < 1e-9);
        assert_true(fabs(json_real_value(json_object_get(lo, "utilisation")) - 500 / dur) < 1e-9);
        assert_true(fabs(json_real_value(json_object_get(l, "utilisation")) - 1000 / dur) < 1e-9);
    }
    json_t *v = json_object_get(rep, "verdict");
    assert_string_equal(json_string_value(json_object_get(v, "bottleneck")), "link");
    assert_int_equal(geti(json_object_get(v, "physical_link"), "phys_id"), 0);
    assert_non_null(strstr(json_string_value(json_object_get(v, "sentence")),
                           "at 100% of its nominal bandwidth"));
    json_decref(rep);
}

/* Critical path and verdict over a route of two links (route 0->1 = [0, 1], 1->0 = [2]). Both
 * ranks start collective 0 at 10 (no straggler); rank 1 posts its receive at 20 and waits
 * [30, 1000); rank 0 sends 8 B at 40 (send_end 50) and ends at 60; the data arrives at 1000.
 * Path back from rank 1's end: the receiver waited for the send begun at 40 inside its wait, so
 * the transfer segment is [40, 1000): 960 ns on each of links 0 and 1, none on link 2.
 * Verdict: T = (60 + 1000) / 2 = 530 ns; communication 50 + 990 = 1040 of 1060 ns, exposed
 * (no compute); X = 1040/1060 x 530 = 520 ns; P = 960 >= 0.3 X -> link. Links 0 and 1 tie on
 * time and bytes: the lower id, 0, is named (link 1 is announced first, so creation order would
 * name 1). */
static void test_physical_cp(void **state)
{
    (void)state;
    start("physical_cp");
    init(0, 0, 2);
    init(0, 1, 2);
    phys_uplink(0, 1, 1, 1, 1, 1e9);
    phys_uplink(0, 0, 0, 1, 0, 1e9);
    phys_uplink(0, 0, 2, 2, 0, 1e9);
    const int32_t r01[] = {0, 1}, r10[] = {2};
    const uint8_t d01[] = {0, 1}, d10[] = {0};
    route(0, 0, 1, 2, 2, r01, d01);
    route(0, 1, 0, 2, 1, r10, d10);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 0, 0);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 1, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 10, 0, 0, 0, 8, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 10, 1, 0, 0, 8, 0);
    p2p(GLUCX_AN_EV_RECV_BEGIN, 20, 1, 0, 0, 0, 8);
    simple(GLUCX_AN_EV_WAIT_BEGIN, 30, 1);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 40, 0, 1, 0, 0, 8);
    p2p(GLUCX_AN_EV_SEND_END, 50, 0, 1, 0, 0, 8);
    coll(GLUCX_AN_EV_COLL_END, 60, 0, 0, 0, 8, 0);
    iter(GLUCX_AN_EV_ITERATION_END, 60, 0, 0);
    p2p(GLUCX_AN_EV_RECV_END, 1000, 1, 0, 0, 0, 8);
    simple(GLUCX_AN_EV_WAIT_END, 1000, 1);
    coll(GLUCX_AN_EV_COLL_END, 1000, 1, 0, 0, 8, 0);
    iter(GLUCX_AN_EV_ITERATION_END, 1000, 1, 0);
    json_t *rep = finish();
    assert_int_equal(geti(plink_of(rep, 0), "critical_path_ns"), 960);
    assert_int_equal(geti(plink_of(rep, 1), "critical_path_ns"), 960);
    assert_int_equal(geti(plink_of(rep, 2), "critical_path_ns"), 0);
    assert_int_equal(geti(plink_of(rep, 0), "bytes"), 8);
    assert_int_equal(geti(plink_of(rep, 2), "bytes"), 0);
    json_t *v = json_object_get(rep, "verdict");
    assert_string_equal(json_string_value(json_object_get(v, "bottleneck")), "link");
    json_t *pl = json_object_get(v, "physical_link");
    assert_non_null(pl);
    assert_int_equal(geti(pl, "phys_id"), 0);
    assert_int_equal(geti(pl, "dim"), 1);
    assert_string_equal(json_string_value(json_object_get(v, "subject")),
                        "physical link 0 (dimension 1, package 0 - switch 0)");
    assert_non_null(strstr(json_string_value(json_object_get(v, "sentence")),
                           "physical link 0 (dimension 1, package 0 - switch 0) carries 960 ns"));
    json_decref(rep);
}

/* decision: chosen ring predicted 1000 ns, recursive_doubling predicted 500 ns, measured 2000 ns
 * and no measured alternative -> model saving = 2000 * (1 - 500/1000) = 1000 ns. */
static void test_decision(void **state)
{
    (void)state;
    start("decision");
    init(0, 0, 2);
    init(0, 1, 2);
    const int32_t ids[2] = {1, 0};
    const uint64_t cost[2] = {500, 1000};
    for (int r = 0; r < 2; r++) {
        coll(GLUCX_AN_EV_COLL_BEGIN, 100, r, 3, 0, 4096, 0);
        glucx_an_event_t d = ev(GLUCX_AN_EV_SCHED_DECISION, 101, r);
        d.seq = 3;
        d.decision = 0;
        d.chosen = 0;
        d.nalt = 2;
        d.alt_ids = ids;
        d.alt_cost_ns = cost;
        d.reason = "GLUCX_TUNE";
        feed(d);
    }
    coll(GLUCX_AN_EV_COLL_END, 2100, 0, 3, 0, 4096, 0);
    coll(GLUCX_AN_EV_COLL_END, 2100, 1, 3, 0, 4096, 0);
    json_t *rep = finish();
    json_t *d = json_array_get(json_object_get(rep, "decisions"), 0);
    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(d, "chosen")), "ring");
    assert_string_equal(json_string_value(json_object_get(d, "best")), "recursive_doubling");
    assert_int_equal(geti(d, "predicted_ns"), 1000);
    assert_int_equal(geti(d, "measured_ns"), 2000);
    assert_int_equal(geti(d, "saving_ns"), 1000);
    assert_string_equal(json_string_value(json_object_get(d, "saving_source")), "model");
    assert_true(json_is_true(json_object_get(d, "ranks_agree")));
    json_decref(rep);
}

/* Order decisions (a training scheduler's, kind 2) beside algorithm decisions, METRICS.md
 * "Schedule decisions". 2 ranks, 3 iterations of 10 us: iteration k = [10k, 10k+10) us, compute
 * [10k, 10k+6), allreduce seq k [10k+6, 10k+9) on both ranks at once (no straggler). Before each
 * allreduce an order decision (chosen partition 2, options 2 and 0 predicted 5000 and 1000 ns)
 * and, inside it, glucx's algorithm decision (ring, its only option, 2500 ns). So:
 *   order: 3 decisions, predicted mean 5000, best 1000, saving 4000 each (model), measured =
 *          exposed communication per rank and iteration = 3000 (the allreduce, under no
 *          compute), no per-decision measurement;
 *   algorithm: 3 decisions, predicted 2500, measured the collective's time 3000, ratio 1.2;
 *   verdict: exposed share 30% but the order decision's 4000 ns per iteration (40% of the
 *   10 us iteration) exceeds the algorithm choices' 0: bottleneck "decision", naming it. */
static void test_order_decision(void **state)
{
    (void)state;
    start("order_decision");
    init(0, 0, 2);
    init(0, 1, 2);
    const int32_t oid[2] = {2, 0}, aid[1] = {0};
    const uint64_t ocost[2] = {5000, 1000}, acost[1] = {2500};
    for (int k = 0; k < 3; k++) {
        const int64_t t = 10000 * (int64_t)k;
        for (int r = 0; r < 2; r++) {
            iter(GLUCX_AN_EV_ITERATION_BEGIN, t, r, (uint64_t)k);
            glucx_an_event_t c = ev(GLUCX_AN_EV_COMPUTE_BEGIN, t, r);
            c.phase = "forward";
            feed(c);
            c = ev(GLUCX_AN_EV_COMPUTE_END, t + 6000, r);
            c.phase = "forward";
            feed(c);
            glucx_an_event_t d = ev(GLUCX_AN_EV_SCHED_DECISION, t + 6000, r);
            d.seq = (uint32_t)k;
            d.decision = 2;
            d.chosen = 2;
            d.nalt = 2;
            d.alt_ids = oid;
            d.alt_cost_ns = ocost;
            d.reason = "P3";
            feed(d);
            coll(GLUCX_AN_EV_COLL_BEGIN, t + 6000, r, (uint32_t)k, 0, 4096, 0);
            d = ev(GLUCX_AN_EV_SCHED_DECISION, t + 6000, r);
            d.seq = (uint32_t)k;
            d.decision = 0;
            d.chosen = 0;
            d.nalt = 1;
            d.alt_ids = aid;
            d.alt_cost_ns = acost;
            d.reason = "selection map";
            feed(d);
        }
        for (int r = 0; r < 2; r++) {
            coll(GLUCX_AN_EV_COLL_END, t + 9000, r, (uint32_t)k, 0, 4096, 0);
            iter(GLUCX_AN_EV_ITERATION_END, t + 10000, r, (uint64_t)k);
        }
    }
    json_t *rep = finish();
    json_t *decs = json_object_get(rep, "decisions"), *d;
    size_t i, norder = 0;
    json_array_foreach(decs, i, d)
    {
        if (strcmp(json_string_value(json_object_get(d, "kind")), "order") != 0)
            continue;
        norder++;
        assert_string_equal(json_string_value(json_object_get(d, "chosen")), "partition 2");
        assert_string_equal(json_string_value(json_object_get(d, "best")), "partition 0");
        assert_int_equal(geti(d, "predicted_ns"), 5000);
        assert_true(json_is_null(json_object_get(d, "measured_ns")));
        assert_int_equal(geti(d, "saving_ns"), 4000);
        assert_string_equal(json_string_value(json_object_get(d, "saving_source")), "model");
        json_t *alt = json_array_get(json_object_get(d, "alternatives"), 1);
        assert_string_equal(json_string_value(json_object_get(alt, "option")), "partition 0");
        assert_true(json_is_null(json_object_get(alt, "measured_mean_ns")));
    }
    assert_int_equal(norder, 3);
    json_t *sc = json_object_get(rep, "scheduling");
    assert_int_equal(json_array_size(sc), 2);
    json_t *alg = json_array_get(sc, 0), *ord = json_array_get(sc, 1);
    assert_string_equal(json_string_value(json_object_get(alg, "kind")), "algorithm");
    assert_int_equal(geti(alg, "decisions"), 3);
    assert_int_equal(geti(alg, "predicted_mean_ns"), 2500);
    assert_int_equal(geti(alg, "measured_mean_ns"), 3000);
    assert_float_equal(json_real_value(json_object_get(alg, "model_ratio")), 1.2, 1e-9);
    assert_int_equal(geti(alg, "largest_saving_ns"), 0);
    assert_string_equal(json_string_value(json_object_get(ord, "kind")), "order");
    assert_int_equal(geti(ord, "decisions"), 3);
    assert_int_equal(geti(ord, "predicted_mean_ns"), 5000);
    assert_int_equal(geti(ord, "best_predicted_mean_ns"), 1000);
    assert_int_equal(geti(ord, "measured_mean_ns"), 3000);
    assert_int_equal(geti(ord, "largest_saving_ns"), 4000);
    assert_non_null(strstr(json_string_value(json_object_get(ord, "largest_saving")),
                           "partition 2 went first"));
    json_t *v = json_object_get(rep, "verdict");
    assert_string_equal(json_string_value(json_object_get(v, "bottleneck")), "decision");
    assert_int_equal(geti(v, "cost_ns"), 4000);
    assert_non_null(strstr(json_string_value(json_object_get(v, "subject")), "partition 0 first"));
    json_decref(rep);
}

/* Priority decisions (libglucx's, kind 4) on two chunk collectives, METRICS.md "Schedule
 * decisions". 2 ranks, one iteration [0, 20) us, compute [0, 5) us on both. Two collectives
 * started with a priority, A (priority 5, one chunk left) and B (priority 1), on both ranks at
 * once (no straggler):
 *   seq 4: A's chunk. Priority decision chosen 4, options 4 and 5 (B's next chunk) predicted
 *          3000 and 1000 ns, "priority 5, 2 ready"; then its algorithm decision (ring, only
 *          option, 2500 ns); the chunk runs [5, 8) us: time 3000;
 *   seq 5: B's chunk. Priority decision chosen 5, option 5 alone predicted 2000 ns, "priority
 *          1, 1 ready"; algorithm ring 3500 ns; runs [8, 12) us: time 4000.
 * So per priority decision: predicted = the chosen option's cost (3000, 2000), measured = its
 * collective's time (3000, 4000), ratio 1.0 and 2.0, options "seq 4"/"seq 5" with no measured
 * means; no best ("none", null) and saving 0 (source none), although B's chunk was predicted
 * cheaper than A's (the options are other collectives' chunks, not other ways to run this one).
 * Scheduling: priority 2 decisions, predicted mean 2500, best null, measured mean 3500
 * ("collective time"), ratio 1.4, largest saving 0/null; algorithm 2 decisions, predicted mean
 * 3000, measured mean 3500. Verdict: no saving anywhere; exposed communication 7 us of the 20 us
 * iteration (35%), no links -> "exposed_communication", not "decision". */
static void test_priority_decision(void **state)
{
    (void)state;
    start("priority_decision");
    init(0, 0, 2);
    init(0, 1, 2);
    const int32_t pid4[2] = {4, 5}, pid5[1] = {5}, aid[1] = {0};
    const uint64_t pcost4[2] = {3000, 1000}, pcost5[1] = {2000}, acost4[1] = {2500},
                   acost5[1] = {3500};
    for (int r = 0; r < 2; r++) {
        iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, r, 0);
        glucx_an_event_t c = ev(GLUCX_AN_EV_COMPUTE_BEGIN, 0, r);
        c.phase = "forward";
        feed(c);
        c = ev(GLUCX_AN_EV_COMPUTE_END, 5000, r);
        c.phase = "forward";
        feed(c);
    }
    const struct {
        uint32_t seq;
        int64_t begin, end;
        size_t nalt;
        const int32_t *ids;
        const uint64_t *cost, *acost;
        const char *reason;
    } chunk[2] = {{4, 5000, 8000, 2, pid4, pcost4, acost4, "priority 5, 2 ready"},
                  {5, 8000, 12000, 1, pid5, pcost5, acost5, "priority 1, 1 ready"}};
    for (int k = 0; k < 2; k++) {
        for (int r = 0; r < 2; r++) {
            /* the priority decision, then the chunk's coll_begin on the same thread */
            glucx_an_event_t d = ev(GLUCX_AN_EV_SCHED_DECISION, chunk[k].begin, r);
            d.seq = chunk[k].seq;
            d.decision = 4;
            d.chosen = (int32_t)chunk[k].seq;
            d.nalt = chunk[k].nalt;
            d.alt_ids = chunk[k].ids;
            d.alt_cost_ns = chunk[k].cost;
            d.reason = chunk[k].reason;
            feed(d);
            coll(GLUCX_AN_EV_COLL_BEGIN, chunk[k].begin, r, chunk[k].seq, 0, 65536, 0);
            d = ev(GLUCX_AN_EV_SCHED_DECISION, chunk[k].begin, r);
            d.seq = chunk[k].seq;
            d.decision = 0;
            d.chosen = 0;
            d.nalt = 1;
            d.alt_ids = aid;
            d.alt_cost_ns = chunk[k].acost;
            d.reason = "selection map";
            feed(d);
        }
        for (int r = 0; r < 2; r++)
            coll(GLUCX_AN_EV_COLL_END, chunk[k].end, r, chunk[k].seq, 0, 65536, 0);
    }
    for (int r = 0; r < 2; r++)
        iter(GLUCX_AN_EV_ITERATION_END, 20000, r, 0);
    json_t *rep = finish();
    json_t *decs = json_object_get(rep, "decisions"), *d;
    size_t i, nprio = 0;
    json_array_foreach(decs, i, d)
    {
        if (strcmp(json_string_value(json_object_get(d, "kind")), "priority") != 0)
            continue;
        nprio++;
        const json_int_t seq = geti(d, "seq");
        assert_true(seq == 4 || seq == 5);
        const int first = seq == 4;
        assert_string_equal(json_string_value(json_object_get(d, "chosen")),
                            first ? "seq 4" : "seq 5");
        assert_string_equal(json_string_value(json_object_get(d, "reason")),
                            first ? "priority 5, 2 ready" : "priority 1, 1 ready");
        assert_int_equal(geti(d, "predicted_ns"), first ? 3000 : 2000);
        assert_int_equal(geti(d, "measured_ns"), first ? 3000 : 4000);
        assert_float_equal(json_real_value(json_object_get(d, "model_ratio")), first ? 1.0 : 2.0,
                           1e-9);
        assert_string_equal(json_string_value(json_object_get(d, "best")), "none");
        assert_true(json_is_null(json_object_get(d, "best_predicted_ns")));
        assert_int_equal(geti(d, "saving_ns"), 0);
        assert_string_equal(json_string_value(json_object_get(d, "saving_source")), "none");
        assert_true(json_is_true(json_object_get(d, "ranks_agree")));
        json_t *alts = json_object_get(d, "alternatives");
        assert_int_equal(json_array_size(alts), first ? 2 : 1);
        json_t *alt = json_array_get(alts, 0);
        assert_string_equal(json_string_value(json_object_get(alt, "option")),
                            first ? "seq 4" : "seq 5");
        assert_int_equal(geti(alt, "predicted_ns"), first ? 3000 : 2000);
        assert_true(json_is_null(json_object_get(alt, "measured_mean_ns")));
        if (first) {
            alt = json_array_get(alts, 1);
            assert_string_equal(json_string_value(json_object_get(alt, "option")), "seq 5");
            assert_int_equal(geti(alt, "predicted_ns"), 1000);
            assert_true(json_is_null(json_object_get(alt, "measured_mean_ns")));
        }
    }
    assert_int_equal(nprio, 2);
    json_t *sc = json_object_get(rep, "scheduling");
    assert_int_equal(json_array_size(sc), 2);
    json_t *alg = json_array_get(sc, 0), *pr = json_array_get(sc, 1);
    assert_string_equal(json_string_value(json_object_get(alg, "kind")), "algorithm");
    assert_int_equal(geti(alg, "decisions"), 2);
    assert_int_equal(geti(alg, "predicted_mean_ns"), 3000);
    assert_int_equal(geti(alg, "measured_mean_ns"), 3500);
    assert_string_equal(json_string_value(json_object_get(pr, "kind")), "priority");
    assert_int_equal(geti(pr, "decisions"), 2);
    assert_int_equal(geti(pr, "predicted_mean_ns"), 2500);
    assert_true(json_is_null(json_object_get(pr, "best_predicted_mean_ns")));
    assert_int_equal(geti(pr, "measured_mean_ns"), 3500);
    assert_string_equal(json_string_value(json_object_get(pr, "measured")), "collective time");
    assert_float_equal(json_real_value(json_object_get(pr, "model_ratio")), 1.4, 1e-9);
    assert_int_equal(geti(pr, "largest_saving_ns"), 0);
    assert_true(json_is_null(json_object_get(pr, "largest_saving")));
    json_t *v = json_object_get(rep, "verdict");
    assert_string_equal(json_string_value(json_object_get(v, "bottleneck")),
                        "exposed_communication");
    json_decref(rep);
    /* report.txt's scheduling line: kind, count, predicted, best ("-": none), measured, ratio */
    char p[1100], line[1024];
    snprintf(p, sizeof(p), "%s/report.txt", g_out);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    int found = 0;
    while (fgets(line, sizeof(line), f)) {
        char kind[16], best[16], what[32];
        int n;
        double pred, meas, ratio;
        if (strncmp(line, "priority ", 9) != 0)
            continue;
        found++;
        assert_int_equal(sscanf(line, "%15s %d %lf us %15s %lf us %lf %31[a-z ]", kind, &n, &pred,
                                best, &meas, &ratio, what),
                         7);
        assert_int_equal(n, 2);
        assert_float_equal(pred, 2.5, 1e-9);
        assert_string_equal(best, "-");
        assert_float_equal(meas, 3.5, 1e-9);
        assert_float_equal(ratio, 1.4, 1e-9);
        assert_string_equal(what, "collective time");
    }
    fclose(f);
    assert_int_equal(found, 1);
}

/* Framework markers that name no communicator (comm_id 0, rank -1, as glucx/trace.h emits them
 * before the process has a glucx communicator of its own, e.g. over the Gloo shim) arriving
 * while the communicator's mode is still undecided (its comm_init buffered): they belong to
 * the process's communicator by vpid, decide the mode (markers) and are not dropped. */
static void test_markers_without_comm(void **state)
{
    (void)state;
    start("markers_without_comm");
    init(0, 0, 2);
    init(0, 1, 2);
    for (uint64_t k = 0; k < 3; k++) {
        const int64_t t = 100 + (int64_t)k * 1000;
        for (int r = 0; r < 2; r++) {
            glucx_an_event_t b = ev(GLUCX_AN_EV_ITERATION_BEGIN, t, r);
            b.comm_id = 0;
            b.rank = -1;
            b.id = k;
            feed(b);
        }
        for (int r = 0; r < 2; r++) {
            coll(GLUCX_AN_EV_COLL_BEGIN, t + 100, r, (uint32_t)k, 0, 64, 0);
            coll(GLUCX_AN_EV_COLL_END, t + 300, r, (uint32_t)k, 0, 64, 0);
        }
        for (int r = 0; r < 2; r++) {
            glucx_an_event_t x = ev(GLUCX_AN_EV_ITERATION_END, t + 500, r);
            x.comm_id = 0;
            x.rank = -1;
            x.id = k;
            feed(x);
        }
    }
    json_t *rep = finish();
    json_t *sum = json_object_get(rep, "summary");
    assert_string_equal(json_string_value(json_object_get(sum, "iteration_source")), "markers");
    assert_int_equal(geti(sum, "iterations"), 3);
    assert_int_equal(geti(rank_of(rep, "ranks", 1), "duration_ns"), 3 * 500);
    json_decref(rep);
}

/* no markers: (allreduce 8 B, allgather 16 B) x 5 on two ranks -> period 2, 5 iterations */
static void test_inferred(void **state)
{
    (void)state;
    start("inferred");
    init(0, 0, 2);
    init(0, 1, 2);
    int64_t t = 10;
    for (uint32_t s = 0; s < 10; s++, t += 100)
        for (int r = 0; r < 2; r++) {
            coll(GLUCX_AN_EV_COLL_BEGIN, t, r, s, s % 2, s % 2 ? 16 : 8, 0);
            coll(GLUCX_AN_EV_COLL_END, t + 50, r, s, s % 2, s % 2 ? 16 : 8, 0);
        }
    json_t *rep = finish();
    json_t *sum = json_object_get(rep, "summary");
    assert_string_equal(json_string_value(json_object_get(sum, "iteration_source")), "inferred");
    assert_int_equal(geti(sum, "inferred_period"), 2);
    assert_int_equal(geti(sum, "iterations"), 5);
    json_decref(rep);
}

/* critical path: rank 0 computes [0,500) and sends at 500; rank 1 waits [100,600) for it (its
 * recv_end is emitted inside the wait, before wait_end) and ends at 700. Path: rank 0 compute
 * [0,500), transfer 0->1 [500,600), rank 1 [600,700). */
static void test_critical_path(void **state)
{
    (void)state;
    start("critical_path");
    init(0, 0, 2);
    init(0, 1, 2);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 0, 0);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 1, 0);
    glucx_an_event_t cb = ev(GLUCX_AN_EV_COMPUTE_BEGIN, 0, 0);
    cb.phase = "forward";
    feed(cb);
    p2p(GLUCX_AN_EV_RECV_BEGIN, 90, 1, 0, 0, 0, 8);
    simple(GLUCX_AN_EV_WAIT_BEGIN, 100, 1);
    glucx_an_event_t ce = ev(GLUCX_AN_EV_COMPUTE_END, 500, 0);
    ce.phase = "forward";
    feed(ce);
    p2p(GLUCX_AN_EV_SEND_BEGIN, 500, 0, 1, 0, 0, 8);
    p2p(GLUCX_AN_EV_SEND_END, 510, 0, 1, 0, 0, 8);
    iter(GLUCX_AN_EV_ITERATION_END, 550, 0, 0);
    p2p(GLUCX_AN_EV_RECV_END, 600, 1, 0, 0, 0, 8);
    simple(GLUCX_AN_EV_WAIT_END, 600, 1);
    iter(GLUCX_AN_EV_ITERATION_END, 700, 1, 0);
    json_t *rep = finish();
    json_t *it = json_array_get(json_object_get(rep, "iterations"), 0);
    json_t *cp = json_object_get(it, "critical_path");
    assert_int_equal(geti(cp, "length_ns"), 700);
    json_t *segs = json_object_get(cp, "segments");
    assert_int_equal(json_array_size(segs), 3);
    json_t *s0 = json_array_get(segs, 0), *s1 = json_array_get(segs, 1),
           *s2 = json_array_get(segs, 2);
    assert_int_equal(geti(s0, "rank"), 0);
    assert_string_equal(json_string_value(json_object_get(s0, "kind")), "compute");
    assert_int_equal(geti(s0, "start_ns"), 0);
    assert_int_equal(geti(s0, "end_ns"), 500);
    assert_string_equal(json_string_value(json_object_get(s1, "kind")), "transfer");
    assert_int_equal(geti(s1, "link"), 1);
    assert_int_equal(geti(s1, "end_ns"), 600);
    assert_int_equal(geti(s2, "rank"), 1);
    assert_int_equal(geti(s2, "start_ns"), 600);
    json_t *links = json_object_get(rep, "links"), *x;
    size_t i;
    json_array_foreach(links, i, x) if (geti(x, "src") == 0 && geti(x, "dst") == 1)
        assert_int_equal(geti(x, "critical_path_ns"), 100);
    json_decref(rep);
}

/* The critical path's segments of iteration 0, in path order (checked with check_seg). */
static json_t *cp_segments(json_t *rep, json_int_t *length)
{
    json_t *it = json_array_get(json_object_get(rep, "iterations"), 0);
    json_t *cp = json_object_get(it, "critical_path");
    if (!cp)
        fail_msg("iteration 0 has no critical_path");
    *length = geti(cp, "length_ns");
    return json_object_get(cp, "segments");
}

static void check_seg(json_t *segs, size_t i, int rank, const char *kind, int64_t a, int64_t b)
{
    json_t *g = json_array_get(segs, i);
    if (!g)
        fail_msg("critical path has no segment %zu", i);
    assert_int_equal(geti(g, "rank"), rank);
    assert_string_equal(json_string_value(json_object_get(g, "kind")), kind);
    assert_int_equal(geti(g, "start_ns"), a);
    assert_int_equal(geti(g, "end_ns"), b);
}

static json_int_t link_cp_ns(json_t *rep, int src, int dst)
{
    json_t *links = json_object_get(rep, "links"), *x;
    size_t i;
    json_array_foreach(links, i, x) if (geti(x, "src") == src &&
                                        geti(x, "dst") == dst) return geti(x, "critical_path_ns");
    fail_msg("link %d->%d not in the report", src, dst);
    return -1;
}

/* (a) A message that completes while its wait is still open: rank 1 posts at RB, waits briefly
 * [W0a, W1a) for nothing, then blocks in [W0, W1); rank 0 computes [0, SB), sends at SB (its
 * send_end before rank 1's recv_end), and rank 1's recv_end is emitted inside the open wait at
 * RE < W1. All four events are in when the recv_end arrives, so the message completes with its
 * wait open; it must be the wait [W0, W1)'s message (not the earlier closed wait [W0a, W1a),
 * which also overlaps [RB, RE]). Path from rank 1's end END: rank 1 [W1, END) (idle), transfer
 * 0->1 [SB, W1), rank 0 compute [0, SB). */
static void test_cp_open_wait(void **state)
{
    (void)state;
    const int64_t RB = 50, W0a = 60, W1a = 80, W0 = 100, SB = 400, SE = 410, RE = 600, W1 = 605,
                  END0 = 450, END = 700;
    start("cp_open_wait");
    init(0, 0, 2);
    init(0, 1, 2);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 0, 0);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 1, 0);
    glucx_an_event_t cb = ev(GLUCX_AN_EV_COMPUTE_BEGIN, 0, 0);
    cb.phase = "forward";
    feed(cb);
    p2p(GLUCX_AN_EV_RECV_BEGIN, RB, 1, 0, 0, 0, 8);
    simple(GLUCX_AN_EV_WAIT_BEGIN, W0a, 1);
    simple(GLUCX_AN_EV_WAIT_END, W1a, 1);
    simple(GLUCX_AN_EV_WAIT_BEGIN, W0, 1);
    glucx_an_event_t ce = ev(GLUCX_AN_EV_COMPUTE_END, SB, 0);
    ce.phase = "forward";
    feed(ce);
    p2p(GLUCX_AN_EV_SEND_BEGIN, SB, 0, 1, 0, 0, 8);
    p2p(GLUCX_AN_EV_SEND_END, SE, 0, 1, 0, 0, 8);
    iter(GLUCX_AN_EV_ITERATION_END, END0, 0, 0);
    p2p(GLUCX_AN_EV_RECV_END, RE, 1, 0, 0, 0, 8);
    simple(GLUCX_AN_EV_WAIT_END, W1, 1);
    iter(GLUCX_AN_EV_ITERATION_END, END, 1, 0);
    json_t *rep = finish();
    json_int_t len;
    json_t *segs = cp_segments(rep, &len);
    assert_int_equal(len, END - 0);
    assert_int_equal(json_array_size(segs), 3);
    check_seg(segs, 0, 0, "compute", 0, SB);
    check_seg(segs, 1, 0, "transfer", SB, W1);
    assert_int_equal(geti(json_array_get(segs, 1), "link"), 0 * 2 + 1);
    assert_int_equal(geti(json_array_get(segs, 1), "peer"), 1);
    check_seg(segs, 2, 1, "idle", W1, END);
    assert_int_equal(link_cp_ns(rep, 0, 1), W1 - SB);
    /* late sender (time based), in both waits: W ∩ [RB, SB), the second one still open when
     * the message completed */
    assert_int_equal(geti(rank_of(rep, "ranks", 1), "wait_late_sender_ns"),
                     (W1a - W0a) + (SB - W0));
    json_decref(rep);
}

/* (b) Pipelined receives: rank 1 posts A (from rank 0) at RBA and B (from rank 2) at RBB, then
 * blocks in [W0, W1) until A arrives (A's recv_end inside the wait); B's recv_end comes later
 * at REB, outside any wait (it completed without blocking anybody). B's send began later than
 * A's (SBB > SBA) and inside the wait, so a time-based attribution would pick B. A's sender
 * ends its send after the wait closed (SEA > W1): A completes with its wait already closed.
 * Path from rank 1's end END: rank 1 [W1, END), transfer 0->1 [SBA, W1), rank 0 compute
 * [0, SBA); nothing on rank 2. Late-sender wait stays time based: W ∩ ([RBA,SBA) ∪ [RBB,SBB)). */
static void test_cp_pipelined(void **state)
{
    (void)state;
    const int64_t RBA = 50, RBB = 60, W0 = 100, SBA = 300, SBB = 450, SEB = 460, REA = 490,
                  W1 = 500, SEA = 520, END02 = 530, REB = 600, END = 700;
    start("cp_pipelined");
    for (int r = 0; r < 3; r++) {
        init(0, r, 3);
        iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, r, 0);
    }
    glucx_an_event_t cb = ev(GLUCX_AN_EV_COMPUTE_BEGIN, 0, 0);
    cb.phase = "forward";
    feed(cb);
    p2p(GLUCX_AN_EV_RECV_BEGIN, RBA, 1, 0, 0, 0, 8);
    p2p(GLUCX_AN_EV_RECV_BEGIN, RBB, 1, 2, 0, 1, 8);
    simple(GLUCX_AN_EV_WAIT_BEGIN, W0, 1);
    glucx_an_event_t ce = ev(GLUCX_AN_EV_COMPUTE_END, SBA, 0);
    ce.phase = "forward";
    feed(ce);
    p2p(GLUCX_AN_EV_SEND_BEGIN, SBA, 0, 1, 0, 0, 8);
    p2p(GLUCX_AN_EV_SEND_BEGIN, SBB, 2, 1, 0, 1, 8);
    p2p(GLUCX_AN_EV_SEND_END, SEB, 2, 1, 0, 1, 8);
    p2p(GLUCX_AN_EV_RECV_END, REA, 1, 0, 0, 0, 8);
    simple(GLUCX_AN_EV_WAIT_END, W1, 1);
    p2p(GLUCX_AN_EV_SEND_END, SEA, 0, 1, 0, 0, 8);
    iter(GLUCX_AN_EV_ITERATION_END, END02, 0, 0);
    iter(GLUCX_AN_EV_ITERATION_END, END02, 2, 0);
    p2p(GLUCX_AN_EV_RECV_END, REB, 1, 2, 0, 1, 8);
    iter(GLUCX_AN_EV_ITERATION_END, END, 1, 0);
    json_t *rep = finish();
    json_int_t len;
    json_t *segs = cp_segments(rep, &len);
    assert_int_equal(len, END - 0);
    assert_int_equal(json_array_size(segs), 3);
    check_seg(segs, 0, 0, "compute", 0, SBA);
    check_seg(segs, 1, 0, "transfer", SBA, W1);
    assert_int_equal(geti(json_array_get(segs, 1), "link"), 0 * 3 + 1);
    check_seg(segs, 2, 1, "idle", W1, END);
    assert_int_equal(link_cp_ns(rep, 0, 1), W1 - SBA);
    assert_int_equal(link_cp_ns(rep, 2, 1), 0);
    /* both late-sender intervals start before W0 and end inside the wait: their union in W */
    int64_t ls_end = SBA > SBB ? SBA : SBB;
    assert_int_equal(geti(rank_of(rep, "ranks", 1), "wait_late_sender_ns"), ls_end - W0);
    assert_int_equal(geti(rank_of(rep, "ranks", 1), "wait_ns"), W1 - W0);
    assert_int_equal(geti(json_object_get(rep, "trace"), "unmatched_recvs"), 0);
    json_decref(rep);
}

/* (c) A receive not completed inside a wait belongs to no wait. First: rank 1 posts at RB,
 * waits [W0, W1) (on its thread nothing completes), rank 0 sends at SB inside that wait, and
 * rank 1's recv_end comes at RE after the wait closed, outside any wait. Second: the same, but
 * the recv_end is emitted at RE2 inside the wait's time span on another thread of rank 1 (a
 * wait belongs to its own thread). Both: the wait has no message, so the path stays on rank 1:
 * idle [0, W0), wait [W0, W1), idle [W1, END); the link 0->1 has no critical-path time. */
static void test_cp_no_wait(void **state)
{
    (void)state;
    const int64_t RB = 50, W0 = 100, SB = 300, SE = 310, W1 = 500, RE = 600, RE2 = 450, END0 = 530,
                  END = 700;
    for (int variant = 0; variant < 2; variant++) {
        start(variant == 0 ? "cp_after_wait" : "cp_other_thread");
        init(0, 0, 2);
        init(0, 1, 2);
        iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 0, 0);
        iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 1, 0);
        p2p(GLUCX_AN_EV_RECV_BEGIN, RB, 1, 0, 0, 0, 8);
        simple(GLUCX_AN_EV_WAIT_BEGIN, W0, 1);
        p2p(GLUCX_AN_EV_SEND_BEGIN, SB, 0, 1, 0, 0, 8);
        p2p(GLUCX_AN_EV_SEND_END, SE, 0, 1, 0, 0, 8);
        if (variant == 1) {
            glucx_an_event_t re = ev(GLUCX_AN_EV_RECV_END, RE2, 1);
            re.vtid = 5000; /* not the waiting thread 1001 */
            re.seq = 0;
            re.step = 0;
            re.peer = 0;
            re.tag = UINT64_C(1) << 63;
            re.bytes = 8;
            feed(re);
        }
        simple(GLUCX_AN_EV_WAIT_END, W1, 1);
        iter(GLUCX_AN_EV_ITERATION_END, END0, 0, 0);
        if (variant == 0)
            p2p(GLUCX_AN_EV_RECV_END, RE, 1, 0, 0, 0, 8);
        iter(GLUCX_AN_EV_ITERATION_END, END, 1, 0);
        json_t *rep = finish();
        json_int_t len;
        json_t *segs = cp_segments(rep, &len);
        assert_int_equal(len, END - 0);
        assert_int_equal(json_array_size(segs), 3);
        check_seg(segs, 0, 1, "idle", 0, W0);
        check_seg(segs, 1, 1, "wait", W0, W1);
        check_seg(segs, 2, 1, "idle", W1, END);
        assert_int_equal(link_cp_ns(rep, 0, 1), 0);
        /* the late-sender accounting is time based and unchanged: [W0, SB) */
        assert_int_equal(geti(rank_of(rep, "ranks", 1), "wait_late_sender_ns"), SB - W0);
        assert_int_equal(geti(json_object_get(rep, "trace"), "unmatched_recvs"), 0);
        json_decref(rep);
    }
}

static void test_empty_and_missing(void **state)
{
    (void)state;
    start("empty");
    json_t *rep = finish();
    json_t *tr = json_object_get(rep, "trace");
    assert_true(json_is_true(json_object_get(tr, "partial")));
    assert_int_equal(geti(tr, "events"), 0);
    json_decref(rep);

    start("missing");
    init(0, 0, 3);
    init(0, 1, 3);
    rep = finish();
    tr = json_object_get(rep, "trace");
    assert_true(json_is_true(json_object_get(tr, "partial")));
    assert_int_equal(json_array_size(json_object_get(tr, "missing_ranks")), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(tr, "missing_ranks"), 0)),
                     2);
    json_decref(rep);
}

/* The first line of the last report's report.txt, without its newline. */
static void txt_first_line(char *buf, size_t len)
{
    char p[1100];
    snprintf(p, sizeof(p), "%s/report.txt", g_out);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, (int)len, f));
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
}

static glucx_an_event_t coll_end_status(int64_t ts, int rank, uint32_t seq, int status)
{
    glucx_an_event_t e = ev(GLUCX_AN_EV_COLL_END, ts, rank);
    e.seq = seq;
    e.coll = 0; /* allreduce */
    e.bytes = 64;
    e.alg = 0;
    e.status = status;
    return e;
}

static glucx_an_event_t error_event(int64_t ts, int rank, int status, const char *text)
{
    glucx_an_event_t e = ev(GLUCX_AN_EV_ERROR, ts, rank);
    e.status = status;
    e.text = text;
    return e;
}

/* A run that fails in its second iteration (METRICS.md, "Verdict"). Iteration 0 [0,1000): the
 * allreduce seq 0 starts at 100 on ranks 0, 1 and at 900 on rank 2 (a straggler: the verdict
 * would name it). Iteration 1 from 1000: seq 1 starts at 1100 (ranks 0, 1) and 1150 (rank 2);
 * rank 1's coll_end is ERR_MISMATCH (-6) at 1200 and its error event follows at 1210; rank 0's
 * at 1300 / 1305; rank 2 never ends it (aborted). The trace starts at 0, so the run failed at
 * 1200 ns = "1.2 us", and the first error event is rank 1's. The rest of the report stays:
 * rank 2 is still the top straggler, late by (900 - 100) + (1150 - 1100) = 850 ns. */
static void test_failed_run(void **state)
{
    (void)state;
    start("failed_run");
    for (int r = 0; r < 3; r++)
        init(0, r, 3);
    for (int r = 0; r < 3; r++)
        iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, r, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 100, 0, 0, 0, 64, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 100, 1, 0, 0, 64, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 900, 2, 0, 0, 64, 0);
    for (int r = 0; r < 3; r++)
        coll(GLUCX_AN_EV_COLL_END, 1000, r, 0, 0, 64, 0);
    for (int r = 0; r < 3; r++)
        iter(GLUCX_AN_EV_ITERATION_END, 1000, r, 0);
    for (int r = 0; r < 3; r++)
        iter(GLUCX_AN_EV_ITERATION_BEGIN, 1000, r, 1);
    coll(GLUCX_AN_EV_COLL_BEGIN, 1100, 0, 1, 0, 64, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 1100, 1, 1, 0, 64, 0);
    coll(GLUCX_AN_EV_COLL_BEGIN, 1150, 2, 1, 0, 64, 0);
    const char *t1 = "allreduce: 68 bytes from rank 2, 64 expected (seq 1, peer 2).";
    feed(coll_end_status(1200, 1, 1, -6));
    feed(error_event(1210, 1, -6, t1));
    feed(coll_end_status(1300, 0, 1, -6));
    feed(error_event(1305, 0, -6, "allreduce: mismatch with rank 1"));
    json_t *rep = finish();
    json_t *v = json_object_get(rep, "verdict");
    const char *sentence = json_string_value(json_object_get(v, "sentence"));
    const char *want = "The run failed at 1.2 us: rank 1 reported ERR_MISMATCH: allreduce: 68 "
                       "bytes from rank 2, 64 expected (seq 1, peer 2).";
    if (strncmp(sentence, want, strlen(want)) != 0)
        fail_msg("verdict \"%s\", expected it to start with \"%s\"", sentence, want);
    assert_null(strstr(sentence, "straggler"));
    assert_string_equal(json_string_value(json_object_get(v, "bottleneck")), "failed");
    assert_string_equal(json_string_value(json_object_get(v, "subject")), "rank 1");
    assert_int_equal(geti(v, "cost_ns"), 0);
    json_t *f = json_object_get(v, "failure");
    assert_non_null(f);
    assert_int_equal(geti(f, "time_ns"), 1200);
    assert_int_equal(geti(f, "rank"), 1);
    assert_string_equal(json_string_value(json_object_get(f, "event")), "error");
    assert_string_equal(json_string_value(json_object_get(f, "status")), "ERR_MISMATCH");
    assert_string_equal(json_string_value(json_object_get(f, "text")), t1);
    assert_string_equal(json_string_value(json_object_get(f, "comm_id")), "0xabc");
    char line[2048];
    txt_first_line(line, sizeof(line));
    assert_string_equal(line, sentence);
    json_t *s = json_array_get(json_object_get(rep, "stragglers"), 0);
    assert_non_null(s);
    assert_int_equal(geti(s, "rank"), 2);
    assert_int_equal(geti(s, "lateness_ns"), 850);
    json_decref(rep);
}

/* No error event, only coll_ends that are not OK: two ranks run allreduce seq 0 [10, 50), then
 * seq 1 from 100 ends ERR_TIMEOUT (-4) on rank 0 at 5000 and on rank 1 at 5100. The run failed
 * at 5000 ns = "5.0 us", named by rank 0's coll_end. (Two equal collectives: period 1, two
 * inferred iterations, a complete report: the sentence has no partial suffix.) */
static void test_failed_coll_end(void **state)
{
    (void)state;
    start("failed_coll_end");
    init(0, 0, 2);
    init(0, 1, 2);
    for (int r = 0; r < 2; r++)
        coll(GLUCX_AN_EV_COLL_BEGIN, 10, r, 0, 0, 64, 0);
    for (int r = 0; r < 2; r++)
        coll(GLUCX_AN_EV_COLL_END, 50, r, 0, 0, 64, 0);
    for (int r = 0; r < 2; r++)
        coll(GLUCX_AN_EV_COLL_BEGIN, 100, r, 1, 0, 64, 0);
    feed(coll_end_status(5000, 0, 1, -4));
    feed(coll_end_status(5100, 1, 1, -4));
    json_t *rep = finish();
    json_t *v = json_object_get(rep, "verdict");
    assert_string_equal(json_string_value(json_object_get(v, "sentence")),
                        "The run failed at 5.0 us: rank 0 ended allreduce seq 1 with ERR_TIMEOUT.");
    assert_string_equal(json_string_value(json_object_get(v, "bottleneck")), "failed");
    json_t *f = json_object_get(v, "failure");
    assert_non_null(f);
    assert_int_equal(geti(f, "time_ns"), 5000);
    assert_string_equal(json_string_value(json_object_get(f, "event")), "coll_end");
    assert_string_equal(json_string_value(json_object_get(f, "status")), "ERR_TIMEOUT");
    assert_string_equal(json_string_value(json_object_get(f, "text")), "");
    json_decref(rep);
}

/* The first error in time is named even when it reaches the analysis later: communicator A
 * (0xabc, no markers) holds its events back until its iterations are decided (at the end of the
 * input here), so its error at 500 ns is analysed after communicator B's (0xdef, markers) error
 * at 700 ns. Two communicators: the rank is named with its communicator. */
static void test_failed_first_in_time(void **state)
{
    (void)state;
    start("failed_first_in_time");
    const uint64_t B = 0xdefull;
    init(0, 0, 2);
    init(0, 1, 2);
    for (int r = 0; r < 2; r++) {
        glucx_an_event_t e = ev(GLUCX_AN_EV_COMM_INIT, 0, r);
        e.comm_id = B;
        e.size = 2;
        e.npackages = 1;
        e.name = "";
        e.host = "";
        feed(e);
    }
    for (int r = 0; r < 2; r++) {
        glucx_an_event_t e = ev(GLUCX_AN_EV_ITERATION_BEGIN, 10, r);
        e.comm_id = B;
        feed(e);
    }
    for (int r = 0; r < 2; r++)
        coll(GLUCX_AN_EV_COLL_BEGIN, 100, r, 0, 0, 64, 0);
    feed(error_event(500, 0, -5, "allreduce seq 0: peer 1 failed"));
    glucx_an_event_t eb = error_event(700, 1, -4, "barrier: timed out after 10 ms");
    eb.comm_id = B;
    feed(eb);
    json_t *rep = finish();
    json_t *v = json_object_get(rep, "verdict");
    const char *sentence = json_string_value(json_object_get(v, "sentence"));
    const char *want = "The run failed at 500 ns: rank 0 of comm 0xabc reported ERR_PEER_FAILED: "
                       "allreduce seq 0: peer 1 failed.";
    if (strncmp(sentence, want, strlen(want)) != 0)
        fail_msg("verdict \"%s\", expected it to start with \"%s\"", sentence, want);
    assert_string_equal(json_string_value(json_object_get(v, "subject")), "rank 0 of comm 0xabc");
    json_decref(rep);
}

/* Process lists (glucx-analyze's filter of other jobs' events, METRICS.md "Input"): the sink
 * drops the events and the engine reports the counts. Two calls add up (8 events of 3
 * processes); the warning is one, first in the list even after MAX_WARNINGS others, and names the
 * totals; the file is listed once. Without a list: zeros, an empty list, no warning. */
static void test_left_out(void **state)
{
    (void)state;
    start("left_out");
    init(0, 0, 1);
    for (int i = 0; i < 70; i++)
        glucx_an_engine_warn(g_e, "filler warning %d", i);
    glucx_an_engine_pid_file(g_e, "/t/a/glucx-pids");
    glucx_an_engine_pid_file(g_e, "/t/a/glucx-pids");
    glucx_an_engine_pid_file(g_e, "/t/b/glucx-pids");
    glucx_an_engine_left_out(g_e, 5, 2);
    glucx_an_engine_left_out(g_e, 3, 1);
    json_t *rep = finish();
    json_t *tr = json_object_get(rep, "trace");
    assert_int_equal(geti(tr, "left_out_events"), 8);
    assert_int_equal(geti(tr, "left_out_processes"), 3);
    assert_int_equal(geti(tr, "events"), 1);
    json_t *files = json_object_get(tr, "pid_files");
    assert_int_equal(json_array_size(files), 2);
    assert_string_equal(json_string_value(json_array_get(files, 0)), "/t/a/glucx-pids");
    json_t *w = json_object_get(tr, "warnings");
    const char *want = "8 events of 3 processes not listed in the trace's glucx-pids were left "
                       "out: another traced job ran at the same time";
    assert_non_null(strstr(json_string_value(json_array_get(w, 0)), want));
    size_t i, n = 0;
    json_t *x;
    json_array_foreach(w, i, x) n += strstr(json_string_value(x), "were left out") != NULL;
    assert_int_equal(n, 1);
    json_decref(rep);
    char p[1100], line[1024];
    snprintf(p, sizeof(p), "%s/report.txt", g_out);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    int found = 0, listed = 0;
    while (fgets(line, sizeof(line), f)) {
        found |= strncmp(line, "warning: ", 9) == 0 && strstr(line, want) != NULL;
        listed |= strstr(line, "only the processes listed in /t/b/glucx-pids") != NULL;
    }
    fclose(f);
    assert_true(found);
    assert_true(listed);

    start("left_out_none");
    init(0, 0, 1);
    glucx_an_engine_left_out(g_e, 0, 0);
    rep = finish();
    tr = json_object_get(rep, "trace");
    assert_int_equal(geti(tr, "left_out_events"), 0);
    assert_int_equal(geti(tr, "left_out_processes"), 0);
    assert_int_equal(json_array_size(json_object_get(tr, "pid_files")), 0);
    n = 0;
    json_array_foreach(json_object_get(tr, "warnings"), i, x) n +=
        strstr(json_string_value(x), "were left out") != NULL;
    assert_int_equal(n, 0);
    json_decref(rep);
}

/* Gloo-shim traffic (slot tags, no collective events): 300 allreduce slots of one 64-byte
 * message each way between two ranks -> 300 collectives "allreduce"/"gloo" of 64 bytes per rank
 * (more than the 256 kept open, so the oldest are written out on the way), inferred period 1. */
static void test_gloo(void **state)
{
    (void)state;
    start("gloo");
    init(0, 0, 2);
    init(0, 1, 2);
    int64_t t = 10;
    for (uint32_t slot = 0; slot < 300; slot++, t += 100) {
        uint64_t tag = (UINT64_C(1) << 47) | (UINT64_C(4) << 40) | ((uint64_t)slot << 8);
        for (int r = 0; r < 2; r++) {
            glucx_an_event_t e = ev(GLUCX_AN_EV_SEND_BEGIN, t, r);
            e.seq = slot;
            e.step = 0;
            e.peer = 1 - r;
            e.tag = tag;
            e.bytes = 64;
            feed(e);
            e = ev(GLUCX_AN_EV_RECV_BEGIN, t + 1, r);
            e.seq = slot;
            e.step = 0;
            e.peer = 1 - r;
            e.tag = tag;
            e.bytes = 64;
            feed(e);
        }
        for (int r = 0; r < 2; r++) {
            glucx_an_event_t e = ev(GLUCX_AN_EV_SEND_END, t + 20, r);
            e.seq = slot;
            e.peer = 1 - r;
            e.tag = tag;
            e.bytes = 64;
            feed(e);
            e = ev(GLUCX_AN_EV_RECV_END, t + 30, r);
            e.seq = slot;
            e.peer = 1 - r;
            e.tag = tag;
            e.bytes = 64;
            feed(e);
        }
    }
    json_t *rep = finish();
    json_t *lists = json_object_get(rep, "lists");
    assert_int_equal(geti(lists, "collectives"), 300);
    json_t *g = json_array_get(json_object_get(rep, "collective_groups"), 0);
    assert_string_equal(json_string_value(json_object_get(g, "coll")), "allreduce");
    assert_string_equal(json_string_value(json_object_get(g, "algorithm")), "gloo");
    assert_int_equal(geti(g, "bytes"), 64);
    assert_int_equal(geti(g, "count"), 300);
    assert_int_equal(geti(g, "mean_time_ns"), 30); /* last first-event t to last end t+30 */
    json_t *sum = json_object_get(rep, "summary");
    assert_string_equal(json_string_value(json_object_get(sum, "iteration_source")), "inferred");
    assert_int_equal(geti(sum, "iterations"), 300);
    json_decref(rep);
}

static void test_ivl(void **state)
{
    (void)state;
    glucx_an_ivl_t s = {0}, t = {0};
    assert_int_equal(glucx_an_ivl_add(&s, 10, 20), 0);
    assert_int_equal(glucx_an_ivl_add(&s, 30, 40), 0);
    assert_int_equal(glucx_an_ivl_add(&s, 15, 35), 0); /* bridges both */
    assert_int_equal(s.n, 1);
    assert_int_equal(glucx_an_ivl_len(&s), 30);
    assert_int_equal(glucx_an_ivl_add(&s, 0, 5), 0);
    assert_int_equal(glucx_an_ivl_len(&s), 35);
    assert_int_equal(glucx_an_ivl_add(&t, 12, 18), 0);
    assert_int_equal(glucx_an_ivl_add(&t, 2, 3), 0);
    assert_int_equal(glucx_an_ivl_len_minus(&s, &t), 35 - 7);
    glucx_an_ivl_free(&s);
    glucx_an_ivl_free(&t);
}

/* Strings are borrowed for the feed call only (event.h), empty ones too: the events buffered
 * while a communicator's iteration mode is undecided (no markers, no collectives: all of them,
 * until the end) must not keep the caller's buffer of an empty string. Here the caller reuses
 * its buffers after each call, as Babeltrace does with its event objects: the error's text and
 * the phase must still read "" (warning "... reported ERR_TIMEOUT: ", slice "compute 7"). */
static void test_borrowed_empty_strings(void **state)
{
    (void)state;
    start("borrowed_empty");
    init(0, 0, 1);
    char text[32] = "", phase[32] = "";
    glucx_an_event_t e = ev(GLUCX_AN_EV_ERROR, 10, 0);
    e.status = -4; /* ERR_TIMEOUT */
    e.text = text;
    feed(e);
    snprintf(text, sizeof(text), "stale text");
    e = ev(GLUCX_AN_EV_COMPUTE_BEGIN, 20, 0);
    e.phase = phase;
    e.id = 7;
    feed(e);
    snprintf(phase, sizeof(phase), "comm:stale");
    e = ev(GLUCX_AN_EV_COMPUTE_END, 30, 0);
    e.phase = "";
    e.id = 7;
    feed(e);
    json_t *rep = finish();
    char want[128];
    snprintf(want, sizeof(want), "comm 0x%llx rank 0 reported %s: ", (unsigned long long)C,
             glucx_an_status_name(-4));
    json_t *ws = json_object_get(json_object_get(rep, "trace"), "warnings");
    int found = 0;
    for (size_t i = 0; i < json_array_size(ws); i++) {
        const char *w = json_string_value(json_array_get(ws, i));
        assert_null(strstr(w, "stale"));
        found += strcmp(w, want) == 0;
    }
    assert_int_equal(found, 1);
    json_decref(rep);
    /* the compute slice: phase "" is named "compute <id>" on the compute row */
    char p[1100];
    snprintf(p, sizeof(p), "%s/timeline.json", g_out);
    json_error_t err;
    json_t *tl = json_load_file(p, 0, &err);
    assert_non_null(tl);
    json_t *evs = json_object_get(tl, "traceEvents");
    int slices = 0;
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *x = json_array_get(evs, i);
        const char *ph = json_string_value(json_object_get(x, "ph"));
        const char *name = json_string_value(json_object_get(x, "name"));
        if (!ph || strcmp(ph, "X") != 0 || !name)
            continue;
        assert_null(strstr(name, "stale"));
        slices += strcmp(name, "compute 7") == 0 && geti(x, "tid") == 2;
    }
    assert_int_equal(slices, 1);
    json_decref(tl);
}

/* The timeline's slices of compute phases (tid 2) and framework communication (tid 3) in
 * timeline.json under g_out: into @p names (up to @p max, borrowed from @p *tl_p, which the
 * caller frees), with their ts and dur in ns; returns how many. */
static size_t phase_slices(json_t **tl_p, const char **names, int64_t *ts, int64_t *dur, size_t max)
{
    char p[1100];
    snprintf(p, sizeof(p), "%s/timeline.json", g_out);
    json_error_t err;
    json_t *tl = json_load_file(p, 0, &err);
    if (!tl)
        fail_msg("%s does not parse: %s line %d", p, err.text, err.line);
    *tl_p = tl;
    json_t *evs = json_object_get(tl, "traceEvents");
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *x = json_array_get(evs, i);
        const char *ph = json_string_value(json_object_get(x, "ph"));
        json_int_t tid = json_integer_value(json_object_get(x, "tid"));
        if (!ph || strcmp(ph, "X") != 0 || (tid != 2 && tid != 3))
            continue;
        assert_true(n < max);
        names[n] = json_string_value(json_object_get(x, "name"));
        assert_non_null(names[n]);
        /* microseconds with three decimals: exact in ns */
        ts[n] = llround(json_number_value(json_object_get(x, "ts")) * 1000);
        dur[n] = llround(json_number_value(json_object_get(x, "dur")) * 1000);
        n++;
    }
    return n;
}

/* Names that need JSON escaping, as a communicator name and as phase names: each must come back
 * exactly from report.json and timeline.json (both parsed by jansson), not corrupt the files. */
static void test_hostile_names(void **state)
{
    (void)state;
    static char longname[6001];
    for (size_t i = 0; i < sizeof(longname) - 1; i++)
        longname[i] = (char)('a' + i % 26);
    longname[sizeof(longname) - 1] = '\0';
    const char *names[] = {
        "quote\"d",  "back\\slash\\", "new\nline",
        "tab\there", "ctl\x01\x1f",   "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80",
        longname,    "}],{\"x\":\"",
    };
    const size_t nn = sizeof(names) / sizeof(names[0]);
    for (size_t k = 0; k < nn; k++) {
        char dir[64];
        snprintf(dir, sizeof(dir), "hostile_%zu", k);
        start(dir);
        glucx_an_event_t e = ev(GLUCX_AN_EV_COMM_INIT, 0, 0);
        e.size = 1;
        e.npackages = 1;
        e.name = names[k];
        e.host = names[k];
        feed(e);
        iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 0, 0);
        e = ev(GLUCX_AN_EV_COMPUTE_BEGIN, 100, 0);
        e.phase = names[k];
        e.id = 3;
        feed(e);
        e = ev(GLUCX_AN_EV_COMPUTE_END, 400, 0);
        e.phase = names[k];
        e.id = 3;
        feed(e);
        iter(GLUCX_AN_EV_ITERATION_END, 1000, 0, 0);
        json_t *rep = finish();
        json_t *comms = json_object_get(json_object_get(rep, "trace"), "comms");
        assert_int_equal(json_array_size(comms), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(comms, 0), "name")),
                            names[k]);
        assert_int_equal(geti(rank_of(rep, "ranks", 0), "compute_ns"), 300);
        json_decref(rep);

        json_t *tl;
        const char *got[8];
        int64_t ts[8], dur[8];
        size_t n = phase_slices(&tl, got, ts, dur, 8);
        char *want = malloc(strlen(names[k]) + 32);
        assert_non_null(want);
        sprintf(want, "%s 3", names[k]);
        assert_int_equal(n, 1);
        assert_string_equal(got[0], want);
        assert_int_equal(ts[0], 100);
        assert_int_equal(dur[0], 300);
        /* the rank's process is named after the communicator */
        sprintf(want, "rank 0 (%s)", names[k]);
        int named = 0;
        json_t *evs = json_object_get(tl, "traceEvents"), *x;
        size_t i;
        json_array_foreach(evs, i, x)
        {
            const char *mn = json_string_value(json_object_get(x, "name"));
            const char *an = json_string_value(json_object_get(json_object_get(x, "args"), "name"));
            named += mn && an && strcmp(mn, "process_name") == 0 && strcmp(an, want) == 0;
        }
        assert_int_equal(named, 1);
        free(want);
        json_decref(tl);
    }
}

/* Two phases whose names share their first 48 bytes, with the same id, overlapping on one
 * thread: A [100, 300) and B [200, 500). A's end must close A, although B (the newest open entry,
 * same id, same 48-byte prefix) would match it by prefix (which made A [100, 500) and B
 * [200, 300)); the timeline names each slice in full. */
static void test_long_phase_names(void **state)
{
    (void)state;
    const char *a = "forward.layer1.conv.weight.grad.bucket.0000000000.first",
               *b = "forward.layer1.conv.weight.grad.bucket.0000000000.second";
    assert_int_equal(strncmp(a, b, 48), 0);
    start("long_phases");
    init(0, 0, 1);
    iter(GLUCX_AN_EV_ITERATION_BEGIN, 0, 0, 0);
    const struct {
        int kind;
        int64_t ts;
        const char *phase;
    } steps[] = {
        {GLUCX_AN_EV_COMPUTE_BEGIN, 100, a},
        {GLUCX_AN_EV_COMPUTE_BEGIN, 200, b},
        {GLUCX_AN_EV_COMPUTE_END, 300, a},
        {GLUCX_AN_EV_COMPUTE_END, 500, b},
    };
    char buf[2][128]; /* the caller's buffers: borrowed for each call only */
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        glucx_an_event_t e = ev(steps[i].kind, steps[i].ts, 0);
        snprintf(buf[i % 2], sizeof(buf[0]), "%s", steps[i].phase);
        e.phase = buf[i % 2];
        e.id = 9;
        feed(e);
        memset(buf[i % 2], 'x', sizeof(buf[0]) - 1);
    }
    iter(GLUCX_AN_EV_ITERATION_END, 1000, 0, 0);
    json_t *rep = finish();
    assert_int_equal(geti(rank_of(rep, "ranks", 0), "compute_ns"), 400);
    json_decref(rep);
    json_t *tl;
    const char *got[4];
    int64_t ts[4], dur[4];
    size_t n = phase_slices(&tl, got, ts, dur, 4);
    assert_int_equal(n, 2);
    char wa[128], wb[128];
    snprintf(wa, sizeof(wa), "%s 9", a);
    snprintf(wb, sizeof(wb), "%s 9", b);
    /* written as each closes: A first */
    assert_string_equal(got[0], wa);
    assert_int_equal(ts[0], 100);
    assert_int_equal(dur[0], 200);
    assert_string_equal(got[1], wb);
    assert_int_equal(ts[1], 200);
    assert_int_equal(dur[1], 300);
    json_decref(tl);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ivl),
        cmocka_unit_test(test_breakdown),
        cmocka_unit_test(test_framework_phases),
        cmocka_unit_test(test_wait_split),
        cmocka_unit_test(test_straggler),
        cmocka_unit_test(test_link),
        cmocka_unit_test(test_physical_links),
        cmocka_unit_test(test_physical_duplex),
        cmocka_unit_test(test_physical_cp),
        cmocka_unit_test(test_decision),
        cmocka_unit_test(test_order_decision),
        cmocka_unit_test(test_priority_decision),
        cmocka_unit_test(test_inferred),
        cmocka_unit_test(test_markers_without_comm),
        cmocka_unit_test(test_critical_path),
        cmocka_unit_test(test_cp_open_wait),
        cmocka_unit_test(test_cp_pipelined),
        cmocka_unit_test(test_cp_no_wait),
        cmocka_unit_test(test_empty_and_missing),
        cmocka_unit_test(test_gloo),
        cmocka_unit_test(test_left_out),
        cmocka_unit_test(test_failed_run),
        cmocka_unit_test(test_failed_coll_end),
        cmocka_unit_test(test_failed_first_in_time),
        cmocka_unit_test(test_borrowed_empty_strings),
        cmocka_unit_test(test_hostile_names),
        cmocka_unit_test(test_long_phase_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
