/*
 * sink.glucx.report: Babeltrace 2 messages -> glucx_an_event_t -> the analysis engine.
 * Every event class is checked once: its trace format version (EVENTS.md, "Format version") and
 * its field layout (EVENTS.md, ABI 1); the field indices found then are reused for every event
 * of that class.
 *
 * Strings are read by their length (EVENTS.md, "Reading strings"): Babeltrace 2.0's CTF decoder
 * reuses event objects and, for an empty string, sets the field's length to 0 without
 * terminating its buffer, so bt_field_string_get_value() returns the value an earlier event of
 * the same class had there.
 */
#include "sink.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/map.h"

#define MAX_FIELDS 16

typedef struct evc {
    int kind;         /* -1: ignore */
    int format_known; /* the class's format version was judged (format_ok) */
    uint64_t idx[MAX_FIELDS];
    unsigned char is_signed[MAX_FIELDS]; /* integer fields: signed (1) or unsigned (0) */
    int nf;
    int ctx_vpid_signed, ctx_vtid_signed;
    int64_t vpid_idx, vtid_idx; /* -1 none; from the common context */
    const bt_field_class *ctx_fc;
} evc_t;

#define CLASS_CACHE 64

typedef struct sink {
    const bt_event_class *cache_key[CLASS_CACHE];
    evc_t *cache_val[CLASS_CACHE];
    bt_message_iterator *it;
    bt_self_component_port_input *port;
    glucx_an_engine_t *engine;
    int own_engine;
    glucx_an_sink_ctl_t *ctl;
    char *out_dir, *template_path;
    glucx_an_map_t classes;
    int tracer_set;
    int done;
    uint64_t nmsg;
    int last_pct;
    int32_t *alt_ids;
    uint64_t *alt_cost;
    size_t altcap;
    int32_t *hops; /* route: the last event's physical link ids */
    uint8_t *dirs; /* route: the last event's directions, [hopcap] */
    size_t hopcap;
    /* process-list filter (ctl->pidsets): input index by bt_trace, the last one cached */
    glucx_an_map_t trace_input; /* trace pointer -> input index + 1, UINTPTR_MAX: none */
    const bt_trace *last_trace;
    size_t last_input;
    glucx_an_map_t left_out_pids; /* (input, vpid) already counted in left_out_processes */
    /* the CLI's parameter pid-file: one process list for every input, and what it left out */
    int have_pids;
    glucx_an_pidset_t pids;
    uint64_t left_events, left_processes;
    /* trace format versions (EVENTS.md, "Format version") */
    glucx_an_map_t unversioned; /* trace classes already warned about (no version) */
    int refused;                /* a trace's version cannot be read: the graph is stopped */
    char stop_why[512];         /* why the sink stopped the graph (refused trace, dump failure) */
} sink_t;

/* ---- templates ------------------------------------------------------------------------------ */

const char *glucx_an_find_template(const char *explicit_path)
{
    if (explicit_path && *explicit_path)
        return access(explicit_path, R_OK) == 0 ? explicit_path : NULL;
    const char *env = getenv("GLUCX_DASHBOARD_TEMPLATE");
    if (env && *env)
        return access(env, R_OK) == 0 ? env : NULL;
#ifdef GLUCX_DASHBOARD_TEMPLATE_BUILD
    if (access(GLUCX_DASHBOARD_TEMPLATE_BUILD, R_OK) == 0)
        return GLUCX_DASHBOARD_TEMPLATE_BUILD;
#endif
#ifdef GLUCX_DASHBOARD_TEMPLATE_INSTALL
    if (access(GLUCX_DASHBOARD_TEMPLATE_INSTALL, R_OK) == 0)
        return GLUCX_DASHBOARD_TEMPLATE_INSTALL;
#endif
    return NULL;
}

void glucx_an_no_template_warn(const char *explicit_template, const char *html_name)
{
    if (explicit_template && *explicit_template)
        fprintf(stderr,
                "glucx-analyze: warning: dashboard template %s is not readable: "
                "%s not written\n",
                explicit_template, html_name);
    else
        fprintf(stderr,
                "glucx-analyze: warning: no dashboard template found (--template, "
                "GLUCX_DASHBOARD_TEMPLATE, build tree, install prefix): %s not written\n",
                html_name);
}

void glucx_an_html_or_warn(const char *dir, const char *explicit_template)
{
    const char *t = glucx_an_find_template(explicit_template);
    if (!t) {
        glucx_an_no_template_warn(explicit_template, "report.html");
        return;
    }
    char err[512];
    if (glucx_an_write_html(dir, t, err, sizeof(err)) != 0)
        fprintf(stderr, "glucx-analyze: warning: %s: report.html not written\n", err);
}

/* ---- event classes -------------------------------------------------------------------------- */

static int type_ok(const char *name, bt_field_class_type t)
{
    static const char *const strs[] = {"name", "host", "transport", "reason", "phase", "text"};
    static const char *const seqs[] = {"lo",      "hi",          "alg",      "forced",
                                       "alt_ids", "alt_cost_ns", "phys_ids", "dirs"};
    static const char *const reals[] = {"bandwidth_Bps", "latency_ns"};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        if (strcmp(name, strs[i]) == 0)
            return t == BT_FIELD_CLASS_TYPE_STRING;
    for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++)
        if (strcmp(name, reals[i]) == 0)
            return bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_REAL);
    if (strcmp(name, "alg") == 0) /* a sequence in select_map, an enumeration elsewhere */
        return bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY) ||
               bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_INTEGER);
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++)
        if (strcmp(name, seqs[i]) == 0)
            return bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY);
    return bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_INTEGER);
}

static size_t event_input(sink_t *s, const bt_event *ev);

/* The trace @p ev belongs to, for messages: glucx-analyze's input path, else the name
 * Babeltrace gives the trace. */
static const char *trace_label(sink_t *s, const bt_event *ev)
{
    size_t input = event_input(s, ev);
    if (input != SIZE_MAX && s->ctl->paths && s->ctl->paths[input])
        return s->ctl->paths[input];
    const bt_trace *tr = bt_stream_borrow_trace_const(bt_event_borrow_stream_const(ev));
    const char *name = tr ? bt_trace_get_name(tr) : NULL;
    return name ? name : "(unnamed)";
}

/* The trace format version of a glucx event class, from its model.emf.uri attribute
 * (GLUCX_AN_FORMAT_URI_PREFIX and a decimal number): 0 when the class has no such attribute
 * (recorded before versions existed), -1 when it has one that is not a glucx version. */
static long class_format(const bt_event_class *ec)
{
    const char *uri = bt_event_class_get_emf_uri(ec);
    if (!uri)
        return 0;
    const size_t pl = sizeof(GLUCX_AN_FORMAT_URI_PREFIX) - 1;
    if (strncmp(uri, GLUCX_AN_FORMAT_URI_PREFIX, pl) != 0 || uri[pl] < '0' || uri[pl] > '9')
        return -1;
    char *end = NULL;
    unsigned long v = strtoul(uri + pl, &end, 10);
    return *end == '\0' && v >= 1 && v <= INT_MAX ? (long)v : -1;
}

/* Whether this sink reads the events of @p ev's class: the current version is read; a class
 * without a version is read with one warning per trace class in the report (its meaning may be
 * an older one), and so is one of format GLUCX_AN_FORMAT_OLDEST_READ (2: no physical links);
 * any other version stops the analysis (s->refused, with the reason naming the
 * trace and both versions). Judged on the first event of the class that the process lists keep:
 * another job traced at the same time may run another glucx. */
static int format_ok(sink_t *s, const bt_event *ev)
{
    const bt_event_class *ec = bt_event_borrow_class_const(ev);
    const char *name = bt_event_class_get_name(ec);
    const long v = class_format(ec);
    if (v == GLUCX_AN_FORMAT_VERSION)
        return 1;
    if (v == 0) {
        const bt_trace_class *tc =
            bt_stream_class_borrow_trace_class_const(bt_event_class_borrow_stream_class_const(ec));
        glucx_an_key_t k = glucx_an_key((uint64_t)(uintptr_t)tc, 0, 0);
        if (glucx_an_map_get(&s->unversioned, &k))
            return 1;
        (void)glucx_an_map_put(&s->unversioned, &k, (void *)1); /* OOM: warned again */
        glucx_an_engine_warn(
            s->engine,
            "trace %s: its glucx events carry no trace format version (recorded by a glucx older "
            "than format %d; %s first): read as format %d, it may be misread if it predates the "
            "changes listed in EVENTS.md \"Format version\": transfer ends after their wait_end "
            "(waits then hold no message), recorded waits that did not block, two send_end for "
            "one message. Record it again for exact numbers",
            trace_label(s, ev), GLUCX_AN_FORMAT_VERSION, name, GLUCX_AN_FORMAT_VERSION);
        return 1;
    }
    if (v == GLUCX_AN_FORMAT_OLDEST_READ) {
        /* format 2 is format 3 without the physical links: read, with one warning per trace */
        const bt_trace_class *tc =
            bt_stream_class_borrow_trace_class_const(bt_event_class_borrow_stream_class_const(ec));
        glucx_an_key_t k = glucx_an_key((uint64_t)(uintptr_t)tc, (uint64_t)v, 0);
        if (glucx_an_map_get(&s->unversioned, &k))
            return 1;
        (void)glucx_an_map_put(&s->unversioned, &k, (void *)1); /* OOM: warned again */
        glucx_an_engine_warn(
            s->engine,
            "trace %s: its glucx events are trace format %ld (%s first), read as format %d: "
            "format %ld has no phys_link or route events, so the report has no physical links "
            "and the verdict names rank-pair links (EVENTS.md \"Format version\")",
            trace_label(s, ev), v, name, GLUCX_AN_FORMAT_VERSION, v);
        return 1;
    }
    const char *uri = bt_event_class_get_emf_uri(ec);
    if (v > GLUCX_AN_FORMAT_VERSION)
        snprintf(s->stop_why, sizeof(s->stop_why),
                 "trace %s: its glucx events are trace format %ld (%s), newer than format %d, "
                 "the newest this glucx-analyze reads: analyse it with the glucx-analyze of the "
                 "glucx that recorded it (EVENTS.md, \"Format version\")",
                 trace_label(s, ev), v, name, GLUCX_AN_FORMAT_VERSION);
    else
        snprintf(s->stop_why, sizeof(s->stop_why),
                 "trace %s: event %s has the format marker model.emf.uri=\"%s\", not one this "
                 "glucx-analyze reads (it reads %s%d, EVENTS.md \"Format version\")",
                 trace_label(s, ev), name, uri, GLUCX_AN_FORMAT_URI_PREFIX,
                 GLUCX_AN_FORMAT_VERSION);
    s->refused = 1;
    if (s->ctl)
        snprintf(s->ctl->refused, sizeof(s->ctl->refused), "%s", s->stop_why);
    return 0;
}

static evc_t *class_info(sink_t *s, const bt_event *ev)
{
    const bt_event_class *ec = bt_event_borrow_class_const(ev);
    /* a few classes make up almost every event: a small direct cache before the map */
    unsigned slot = (unsigned)(((uintptr_t)ec >> 4) & (CLASS_CACHE - 1));
    if (s->cache_key[slot] == ec)
        return s->cache_val[slot];
    glucx_an_key_t k = glucx_an_key((uint64_t)(uintptr_t)ec, 0, 0);
    evc_t *c = glucx_an_map_get(&s->classes, &k);
    if (c) {
        s->cache_key[slot] = ec;
        s->cache_val[slot] = c;
        return c;
    }
    c = calloc(1, sizeof(*c));
    if (!c || glucx_an_map_put(&s->classes, &k, c) != 0) {
        free(c);
        return NULL;
    }
    c->kind = -1;
    c->vpid_idx = c->vtid_idx = -1;
    const char *name = bt_event_class_get_name(ec);
    if (!name || strncmp(name, "glucx:", 6) != 0)
        return c;
    int kind = glucx_an_ev_from_name(name + 6);
    if (kind < 0) {
        glucx_an_engine_unknown_event(s->engine, name);
        return c;
    }
    const bt_field_class *pfc = bt_event_class_borrow_payload_field_class_const(ec);
    const char *const *want = glucx_an_ev_fields(kind);
    char why[256] = "";
    uint64_t n = pfc ? bt_field_class_structure_get_member_count(pfc) : 0;
    int nf = 0;
    uint64_t next = 0; /* members must come in EVENTS.md order; _length members are skipped */
    for (uint64_t i = 0; i < n && !why[0]; i++) {
        const bt_field_class_structure_member *m =
            bt_field_class_structure_borrow_member_by_index_const(pfc, i);
        const char *mn = bt_field_class_structure_member_get_name(m);
        if (mn[0] == '_')
            continue;
        if (!want[next]) {
            snprintf(why, sizeof(why), "unexpected field %s", mn);
            break;
        }
        if (strcmp(mn, want[next]) != 0) {
            snprintf(why, sizeof(why), "field %" PRIu64 " is %s, expected %s", next, mn,
                     want[next]);
            break;
        }
        bt_field_class_type t =
            bt_field_class_get_type(bt_field_class_structure_member_borrow_field_class_const(m));
        if (!type_ok(mn, t)) {
            snprintf(why, sizeof(why), "field %s has an unexpected type", mn);
            break;
        }
        c->is_signed[nf] = bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER);
        c->idx[nf++] = i;
        next++;
    }
    if (!why[0] && want[next])
        snprintf(why, sizeof(why), "field %s is missing", want[next]);
    if (why[0]) {
        glucx_an_engine_mismatched_event(s->engine, name, why);
        return c;
    }
    c->nf = nf;
    c->kind = kind;
    const bt_stream_class *sc = bt_event_class_borrow_stream_class_const(ec);
    const bt_field_class *cc =
        sc ? bt_stream_class_borrow_event_common_context_field_class_const(sc) : NULL;
    if (cc) {
        uint64_t cn = bt_field_class_structure_get_member_count(cc);
        for (uint64_t i = 0; i < cn; i++) {
            const char *mn = bt_field_class_structure_member_get_name(
                bt_field_class_structure_borrow_member_by_index_const(cc, i));
            int sg = bt_field_class_type_is(
                bt_field_class_get_type(bt_field_class_structure_member_borrow_field_class_const(
                    bt_field_class_structure_borrow_member_by_index_const(cc, i))),
                BT_FIELD_CLASS_TYPE_SIGNED_INTEGER);
            if (strcmp(mn, "vpid") == 0) {
                c->vpid_idx = (int64_t)i;
                c->ctx_vpid_signed = sg;
            } else if (strcmp(mn, "vtid") == 0) {
                c->vtid_idx = (int64_t)i;
                c->ctx_vtid_signed = sg;
            }
        }
    }
    return c;
}

/* ---- field readers -------------------------------------------------------------------------- */

static int64_t f_int(const bt_field *f)
{
    bt_field_class_type t = bt_field_get_class_type(f);
    if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
        return (int64_t)bt_field_integer_unsigned_get_value(f);
    if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
        return bt_field_integer_signed_get_value(f);
    return 0;
}

static uint64_t f_u64(const bt_field *f)
{
    bt_field_class_type t = bt_field_get_class_type(f);
    if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
        return bt_field_integer_unsigned_get_value(f);
    return (uint64_t)bt_field_integer_signed_get_value(f);
}

static double f_dbl(const bt_field *f)
{
    if (bt_field_get_class_type(f) == BT_FIELD_CLASS_TYPE_SINGLE_PRECISION_REAL)
        return bt_field_real_single_precision_get_value(f);
    return bt_field_real_double_precision_get_value(f);
}

/* By the length, never the buffer alone: see the top of this file. */
static const char *f_str(const bt_field *f)
{
    if (bt_field_string_get_length(f) == 0)
        return "";
    const char *v = bt_field_string_get_value(f);
    return v ? v : "";
}

#define FLD(i) bt_field_structure_borrow_member_field_by_index_const(p, c->idx[i])

/* integer field i of the payload, with the signedness found when the class was checked */
static inline int64_t fi(const evc_t *c, const bt_field *p, int i)
{
    const bt_field *f = FLD(i);
    return c->is_signed[i] ? bt_field_integer_signed_get_value(f)
                           : (int64_t)bt_field_integer_unsigned_get_value(f);
}

#define FI(i) fi(c, p, (i))
#define FU(i) ((uint64_t)fi(c, p, (i)))

static int convert(sink_t *s, const evc_t *c, const bt_message *msg, const bt_event *ev,
                   glucx_an_event_t *o)
{
    const bt_field *p = bt_event_borrow_payload_field_const(ev);
    const bt_clock_snapshot *cs = bt_message_event_borrow_default_clock_snapshot_const(msg);
    int64_t ns = 0;
    if (cs && bt_clock_snapshot_get_ns_from_origin(cs, &ns) !=
                  BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK)
        ns = 0;
    *o = glucx_an_event_init(c->kind, ns, FU(0), (int32_t)FI(1));
    const bt_field *cc = bt_event_borrow_common_context_field_const(ev);
    if (cc && c->vpid_idx >= 0) {
        const bt_field *f =
            bt_field_structure_borrow_member_field_by_index_const(cc, (uint64_t)c->vpid_idx);
        o->vpid = c->ctx_vpid_signed ? bt_field_integer_signed_get_value(f)
                                     : (int64_t)bt_field_integer_unsigned_get_value(f);
    }
    if (cc && c->vtid_idx >= 0) {
        const bt_field *f =
            bt_field_structure_borrow_member_field_by_index_const(cc, (uint64_t)c->vtid_idx);
        o->vtid = c->ctx_vtid_signed ? bt_field_integer_signed_get_value(f)
                                     : (int64_t)bt_field_integer_unsigned_get_value(f);
    }
    switch (c->kind) {
    case GLUCX_AN_EV_COMM_INIT:
        o->size = (int32_t)FI(2);
        o->package = (int32_t)FI(3);
        o->npackages = (int32_t)FI(4);
        o->name = f_str(FLD(5));
        o->host = f_str(FLD(6));
        o->topo_digest = FU(7);
        break;
    case GLUCX_AN_EV_LINK:
        o->link_id = (int32_t)FI(2);
        o->src = (int32_t)FI(3);
        o->dst = (int32_t)FI(4);
        o->dim = (int32_t)FI(5);
        o->bandwidth_Bps = f_dbl(FLD(6));
        o->latency_ns = f_dbl(FLD(7));
        o->transport = f_str(FLD(8));
        break;
    case GLUCX_AN_EV_PHYS_LINK:
        o->link_id = (int32_t)FI(2);
        o->dim = (int32_t)FI(3);
        o->a_kind = (int)FI(4);
        o->a = (int32_t)FI(5);
        o->b_kind = (int)FI(6);
        o->b = (int32_t)FI(7);
        o->bandwidth_Bps = f_dbl(FLD(8));
        o->latency_ns = f_dbl(FLD(9));
        break;
    case GLUCX_AN_EV_ROUTE: {
        o->link = (int32_t)FI(2);
        o->dst = (int32_t)FI(3);
        const bt_field *hops = FLD(4), *dirs = FLD(5);
        uint64_t n = bt_field_array_get_length(hops);
        if (n > s->hopcap) {
            int32_t *h = realloc(s->hops, n * sizeof(int32_t));
            if (h)
                s->hops = h;
            uint8_t *d = realloc(s->dirs, n);
            if (d)
                s->dirs = d;
            if (!h || !d)
                return -1;
            s->hopcap = n;
        }
        for (uint64_t i = 0; i < n; i++)
            s->hops[i] =
                (int32_t)f_int(bt_field_array_borrow_element_field_by_index_const(hops, i));
        /* EVENTS.md: parallel to phys_ids; of another length, the route has no directions */
        int with_dirs = bt_field_array_get_length(dirs) == n;
        for (uint64_t i = 0; with_dirs && i < n; i++) {
            int64_t d = f_int(bt_field_array_borrow_element_field_by_index_const(dirs, i));
            s->dirs[i] = d >= 0 && d <= 255 ? (uint8_t)d : 255; /* 255: not a direction */
        }
        o->nhops = n;
        o->hops = s->hops;
        o->dirs = with_dirs && n ? s->dirs : NULL;
        break;
    }
    case GLUCX_AN_EV_COLL_BEGIN:
    case GLUCX_AN_EV_COLL_END:
        o->seq = (uint32_t)FU(2);
        o->coll = (int)FI(3);
        o->bytes = FU(4);
        o->dtype = (int)FI(5);
        o->op = (int)FI(6);
        o->root = (int32_t)FI(7);
        o->alg = (int)FI(8);
        o->status = (int)FI(9);
        break;
    case GLUCX_AN_EV_SCHED_DECISION: {
        o->seq = (uint32_t)FU(2);
        o->decision = (int)FI(3);
        o->chosen = (int32_t)FI(4);
        const bt_field *ids = FLD(5), *cost = FLD(6);
        uint64_t n = bt_field_array_get_length(ids), n2 = bt_field_array_get_length(cost);
        if (n2 < n)
            n = n2; /* EVENTS.md: parallel; a shorter one bounds both */
        if (n > s->altcap) {
            int32_t *a = realloc(s->alt_ids, n * sizeof(int32_t));
            if (a)
                s->alt_ids = a;
            uint64_t *b = realloc(s->alt_cost, n * sizeof(uint64_t));
            if (b)
                s->alt_cost = b;
            if (!a || !b)
                return -1;
            s->altcap = n;
        }
        for (uint64_t i = 0; i < n; i++) {
            s->alt_ids[i] =
                (int32_t)f_int(bt_field_array_borrow_element_field_by_index_const(ids, i));
            s->alt_cost[i] = f_u64(bt_field_array_borrow_element_field_by_index_const(cost, i));
        }
        o->nalt = n;
        o->alt_ids = s->alt_ids;
        o->alt_cost_ns = s->alt_cost;
        o->reason = f_str(FLD(7));
        break;
    }
    case GLUCX_AN_EV_SEND_BEGIN:
    case GLUCX_AN_EV_SEND_END:
    case GLUCX_AN_EV_RECV_BEGIN:
    case GLUCX_AN_EV_RECV_END:
        o->seq = (uint32_t)FU(2);
        o->step = (uint32_t)FU(3);
        o->peer = (int32_t)FI(4);
        o->link = (int32_t)FI(5);
        o->tag = FU(6);
        o->bytes = FU(7);
        break;
    case GLUCX_AN_EV_REDUCE_BEGIN:
    case GLUCX_AN_EV_REDUCE_END:
        o->seq = (uint32_t)FU(2);
        o->bytes = FU(3);
        o->dtype = (int)FI(4);
        o->op = (int)FI(5);
        break;
    case GLUCX_AN_EV_WAIT_BEGIN:
    case GLUCX_AN_EV_WAIT_END:
        o->site = (int)FI(2);
        o->seq = (uint32_t)FU(3);
        o->req = FU(4);
        o->nreqs = (uint32_t)FU(5);
        o->status = (int)FI(6);
        break;
    case GLUCX_AN_EV_COMPUTE_BEGIN:
    case GLUCX_AN_EV_COMPUTE_END:
        o->phase = f_str(FLD(2));
        o->id = FU(3);
        break;
    case GLUCX_AN_EV_ITERATION_BEGIN:
    case GLUCX_AN_EV_ITERATION_END:
        o->id = FU(2);
        break;
    case GLUCX_AN_EV_BUCKET_READY:
        o->id = FU(2);
        o->bytes = FU(3);
        break;
    case GLUCX_AN_EV_ERROR:
        o->status = (int)FI(2);
        o->text = f_str(FLD(3));
        break;
    default:
        break;
    }
    return 0;
}

/* ---- event dump (glucx-analyze --dump-events) ----------------------------------------------- */

/* The value of payload field @p f of @p e as the analysis holds it (NULL: a field the analysis
 * does not keep, e.g. select_map's ranges). */
static json_t *dump_field(const glucx_an_event_t *e, const char *f)
{
#define DUMP_IS(n) (strcmp(f, (n)) == 0)
    /* EVENTS.md's hex fields as "0x..." strings */
    const uint64_t *hex = DUMP_IS("comm_id")       ? &e->comm_id
                          : DUMP_IS("topo_digest") ? &e->topo_digest
                          : DUMP_IS("tag")         ? &e->tag
                          : DUMP_IS("req")         ? &e->req
                                                   : NULL;
    if (hex) {
        char b[24];
        snprintf(b, sizeof(b), "0x%" PRIx64, *hex);
        return json_string(b);
    }
    if (DUMP_IS("rank"))
        return json_integer(e->rank);
    if (DUMP_IS("name"))
        return json_string(e->name);
    if (DUMP_IS("host"))
        return json_string(e->host);
    if (DUMP_IS("transport"))
        return json_string(e->transport);
    if (DUMP_IS("reason"))
        return json_string(e->reason);
    if (DUMP_IS("phase"))
        return json_string(e->phase);
    if (DUMP_IS("text"))
        return json_string(e->text);
    if (e->kind == GLUCX_AN_EV_SELECT_MAP)
        return NULL; /* its fields are not read (the engine has no use for them) */
    static const struct {
        const char *name;
        size_t off;
        int type; /* 0 int32_t, 1 int, 2 uint32_t, 3 uint64_t, 4 double */
    } scalars[] = {
        {"size", offsetof(glucx_an_event_t, size), 0},
        {"package", offsetof(glucx_an_event_t, package), 0},
        {"npackages", offsetof(glucx_an_event_t, npackages), 0},
        {"link_id", offsetof(glucx_an_event_t, link_id), 0},
        {"phys_id", offsetof(glucx_an_event_t, link_id), 0},
        {"a_kind", offsetof(glucx_an_event_t, a_kind), 1},
        {"a", offsetof(glucx_an_event_t, a), 0},
        {"b_kind", offsetof(glucx_an_event_t, b_kind), 1},
        {"b", offsetof(glucx_an_event_t, b), 0},
        {"src", offsetof(glucx_an_event_t, src), 0},
        {"dst", offsetof(glucx_an_event_t, dst), 0},
        {"dim", offsetof(glucx_an_event_t, dim), 0},
        {"bandwidth_Bps", offsetof(glucx_an_event_t, bandwidth_Bps), 4},
        {"latency_ns", offsetof(glucx_an_event_t, latency_ns), 4},
        {"seq", offsetof(glucx_an_event_t, seq), 2},
        {"coll", offsetof(glucx_an_event_t, coll), 1},
        {"bytes", offsetof(glucx_an_event_t, bytes), 3},
        {"dtype", offsetof(glucx_an_event_t, dtype), 1},
        {"op", offsetof(glucx_an_event_t, op), 1},
        {"root", offsetof(glucx_an_event_t, root), 0},
        {"alg", offsetof(glucx_an_event_t, alg), 1},
        {"status", offsetof(glucx_an_event_t, status), 1},
        {"kind", offsetof(glucx_an_event_t, decision), 1},
        {"chosen", offsetof(glucx_an_event_t, chosen), 0},
        {"step", offsetof(glucx_an_event_t, step), 2},
        {"peer", offsetof(glucx_an_event_t, peer), 0},
        {"link", offsetof(glucx_an_event_t, link), 0},
        {"site", offsetof(glucx_an_event_t, site), 1},
        {"nreqs", offsetof(glucx_an_event_t, nreqs), 2},
        {"id", offsetof(glucx_an_event_t, id), 3},
        {"iteration", offsetof(glucx_an_event_t, id), 3},
        {"bucket", offsetof(glucx_an_event_t, id), 3},
    };
    const char *base = (const char *)e;
    for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
        if (!DUMP_IS(scalars[i].name))
            continue;
        const char *at = base + scalars[i].off;
        int32_t i32;
        int iv;
        uint32_t u32;
        uint64_t u64;
        double d;
        switch (scalars[i].type) {
        case 0:
            memcpy(&i32, at, sizeof(i32));
            return json_integer(i32);
        case 1:
            memcpy(&iv, at, sizeof(iv));
            return json_integer(iv);
        case 2:
            memcpy(&u32, at, sizeof(u32));
            return json_integer(u32);
        case 3:
            memcpy(&u64, at, sizeof(u64));
            return json_integer((json_int_t)u64);
        default:
            memcpy(&d, at, sizeof(d));
            return json_real(d);
        }
    }
    if (DUMP_IS("phys_ids")) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < e->nhops; i++)
            json_array_append_new(a, json_integer(e->hops[i]));
        return a;
    }
    if (DUMP_IS("dirs")) {
        json_t *a = json_array();
        for (size_t i = 0; a && e->dirs && i < e->nhops; i++)
            json_array_append_new(a, json_integer(e->dirs[i]));
        return a;
    }
    if (DUMP_IS("alt_ids") || DUMP_IS("alt_cost_ns")) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < e->nalt; i++)
            json_array_append_new(a, DUMP_IS("alt_ids")
                                         ? json_integer(e->alt_ids[i])
                                         : json_integer((json_int_t)e->alt_cost_ns[i]));
        return a;
    }
#undef DUMP_IS
    return NULL;
}

/* One line: {"event": name, "ts": ns, "vpid": .., "vtid": .., <payload fields in EVENTS.md
 * order>}. 0, or -1 on an output or memory failure. */
static int dump_event(FILE *f, const glucx_an_event_t *e)
{
    json_t *o = json_object();
    if (!o)
        return -1;
    json_object_set_new(o, "event", json_string(glucx_an_ev_name(e->kind)));
    json_object_set_new(o, "ts", json_integer(e->ts));
    json_object_set_new(o, "vpid", json_integer(e->vpid));
    json_object_set_new(o, "vtid", json_integer(e->vtid));
    for (const char *const *fn = glucx_an_ev_fields(e->kind); fn && *fn; fn++) {
        json_t *v = dump_field(e, *fn);
        if (v)
            json_object_set_new(o, *fn, v);
    }
    int rc = json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF;
    json_decref(o);
    return rc ? -1 : 0;
}

/* ---- process lists -------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int glucx_an_pidset_read(const char *path, glucx_an_pidset_t *set, uint64_t *bad_p, char *why,
                         size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, len, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 0;
    char line[64];
    *bad_p = 0;
    while (fgets(line, sizeof(line), f)) {
        size_t l = strlen(line);
        int whole = l > 0 && line[l - 1] == '\n';
        if (!whole && !feof(f)) { /* an over-long line: skip the rest of it */
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n') {
            }
            (*bad_p)++;
            continue;
        }
        if (whole)
            line[--l] = 0;
        if (l == 0)
            continue;
        char *end = NULL;
        errno = 0;
        long long v = strtoll(line, &end, 10);
        if (errno || end == line || *end || v <= 0) {
            (*bad_p)++;
            continue;
        }
        if (set->n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            int64_t *nv = realloc(set->pids, nc * sizeof(int64_t));
            if (!nv) {
                fclose(f);
                snprintf(why, len, "out of memory reading %s (%zu pids)", path, set->n);
                return -1;
            }
            set->pids = nv;
            cap = nc;
        }
        set->pids[set->n++] = v;
    }
    int rerr = ferror(f);
    fclose(f);
    if (rerr) {
        snprintf(why, len, "cannot read %s: I/O error", path);
        return -1;
    }
    if (set->n > 1) {
        qsort(set->pids, set->n, sizeof(int64_t), cmp_i64);
        size_t w = 1;
        for (size_t i = 1; i < set->n; i++)
            if (set->pids[i] != set->pids[w - 1])
                set->pids[w++] = set->pids[i];
        set->n = w;
    }
    return 0;
}

/* The glucx-analyze input index @p ev comes from (SIZE_MAX: unknown, or no control block),
 * from its trace's name [<host>/]GLUCX_AN_TRACE_NAME_PREFIX<i>. */
static size_t event_input(sink_t *s, const bt_event *ev)
{
    if (!s->ctl)
        return SIZE_MAX;
    const bt_trace *tr = bt_stream_borrow_trace_const(bt_event_borrow_stream_const(ev));
    size_t input = SIZE_MAX;
    if (tr != NULL && tr == s->last_trace) {
        input = s->last_input;
    } else {
        /* map value: input + 1, or UINTPTR_MAX for a trace that is not one of the inputs */
        glucx_an_key_t k = glucx_an_key((uint64_t)(uintptr_t)tr, 0, 0);
        uintptr_t v = (uintptr_t)glucx_an_map_get(&s->trace_input, &k);
        if (v != 0) {
            input = v == UINTPTR_MAX ? SIZE_MAX : (size_t)(v - 1);
        } else {
            /* source.ctf.fs prefixes the name with the trace's hostname ("host/<name>") */
            const char *name = tr ? bt_trace_get_name(tr) : NULL;
            const char *at = name ? strstr(name, GLUCX_AN_TRACE_NAME_PREFIX) : NULL;
            const size_t pl = sizeof(GLUCX_AN_TRACE_NAME_PREFIX) - 1;
            if (at && (at == name || at[-1] == '/')) {
                char *end = NULL;
                unsigned long long i = strtoull(at + pl, &end, 10);
                if (end != at + pl && *end == '\0' && i < s->ctl->ninputs)
                    input = (size_t)i;
            }
            v = input == SIZE_MAX ? UINTPTR_MAX : (uintptr_t)input + 1;
            (void)glucx_an_map_put(&s->trace_input, &k, (void *)v); /* OOM: looked up again */
        }
        s->last_trace = tr;
        s->last_input = input;
    }
    return input;
}

/* The process list of the input @p ev comes from (NULL: no filter); its input index into
 * @p input_p (SIZE_MAX: unknown). */
static const glucx_an_pidset_t *event_pidset(sink_t *s, const bt_event *ev, size_t *input_p)
{
    size_t input = event_input(s, ev);
    *input_p = input;
    return input < s->ctl->ninputs ? s->ctl->pidsets[input] : NULL;
}

static int pidset_has(const glucx_an_pidset_t *set, int64_t pid)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (set->pids[mid] == pid)
            return 1;
        if (set->pids[mid] < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Whether the event belongs to a process its trace's list leaves out (counted in ctl, or with
 * the CLI's pid-file in the sink). */
static int left_out(sink_t *s, const evc_t *c, const bt_event *ev)
{
    if (c->vpid_idx < 0)
        return 0;
    size_t input = 0;
    const glucx_an_pidset_t *set;
    uint64_t *events_p, *processes_p;
    if (s->have_pids) {
        set = &s->pids;
        events_p = &s->left_events;
        processes_p = &s->left_processes;
    } else if (s->ctl && s->ctl->pidsets) {
        set = event_pidset(s, ev, &input);
        events_p = &s->ctl->left_out_events;
        processes_p = &s->ctl->left_out_processes;
    } else {
        return 0;
    }
    if (!set)
        return 0;
    const bt_field *cc = bt_event_borrow_common_context_field_const(ev);
    if (!cc)
        return 0;
    const bt_field *f =
        bt_field_structure_borrow_member_field_by_index_const(cc, (uint64_t)c->vpid_idx);
    int64_t vpid = c->ctx_vpid_signed ? bt_field_integer_signed_get_value(f)
                                      : (int64_t)bt_field_integer_unsigned_get_value(f);
    if (pidset_has(set, vpid))
        return 0;
    (*events_p)++;
    glucx_an_key_t k = glucx_an_key((uint64_t)input, (uint64_t)vpid, 0);
    if (!glucx_an_map_get(&s->left_out_pids, &k)) {
        (*processes_p)++;
        (void)glucx_an_map_put(&s->left_out_pids, &k, (void *)1); /* OOM: counted again later */
    }
    return 1;
}

/* ---- component methods ---------------------------------------------------------------------- */

/* The CLI's parameter pid-file: read @p path into the sink's process list, report it to the
 * engine. 0, or -1 with the cause appended (the file named). */
static int load_pids(sink_t *s, bt_self_component_sink *self, const char *path)
{
    char real[PATH_MAX], why[PATH_MAX + 128];
    uint64_t bad = 0;
    if (!realpath(path, real)) {
        snprintf(why, sizeof(why), "cannot read %s: %s", path, strerror(errno));
    } else if (glucx_an_pidset_read(real, &s->pids, &bad, why, sizeof(why)) == 0) {
        s->have_pids = 1;
        glucx_an_engine_pid_file(s->engine, real);
        if (bad)
            glucx_an_engine_warn(s->engine, "%s: %" PRIu64 " lines that are not a pid ignored",
                                 real, bad);
        return 0;
    }
    free(s->pids.pids);
    s->pids.pids = NULL;
    BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
        bt_self_component_sink_as_self_component(self), "sink.glucx.report: parameter pid-file: %s",
        why);
    return -1;
}

static const char *param_str(const bt_value *params, const char *key)
{
    const bt_value *v = params ? bt_value_map_borrow_entry_value_const(params, key) : NULL;
    return v && bt_value_is_string(v) ? bt_value_string_get(v) : NULL;
}

bt_component_class_initialize_method_status
glucx_an_sink_init(bt_self_component_sink *self, bt_self_component_sink_configuration *config,
                   const bt_value *params, void *init_data)
{
    (void)config;
    sink_t *s = calloc(1, sizeof(*s));
    if (!s)
        return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
    s->ctl = init_data;
    s->last_pct = -1;
    if (s->ctl) {
        s->engine = s->ctl->engine;
    } else {
        const char *out = param_str(params, "output");
        if (!out) {
            BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
                bt_self_component_sink_as_self_component(self),
                "sink.glucx.report needs the string parameter output (the report directory), "
                "e.g. -p 'output=\"reports/run1\"'");
            free(s);
            return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
        }
        const bt_value *tl = bt_value_map_borrow_entry_value_const(params, "timeline");
        glucx_an_options_t opt = {
            .out_dir = out, .timeline = tl && bt_value_is_bool(tl) ? bt_value_bool_get(tl) : 1};
        char err[512];
        s->engine = glucx_an_engine_create(&opt, err, sizeof(err));
        if (!s->engine) {
            BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
                bt_self_component_sink_as_self_component(self), "sink.glucx.report: %s", err);
            free(s);
            return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
        }
        s->own_engine = 1;
        s->out_dir = strdup(out);
        const char *t = param_str(params, "template");
        s->template_path = t ? strdup(t) : NULL;
        const char *pf = param_str(params, "pid-file");
        if (pf && load_pids(s, self, pf) != 0) {
            glucx_an_engine_destroy(s->engine);
            free(s->out_dir);
            free(s->template_path);
            free(s);
            return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
        }
        char ver[64];
        snprintf(ver, sizeof(ver), "%u.%u.%u", (unsigned)bt_version_get_major(),
                 (unsigned)bt_version_get_minor(), (unsigned)bt_version_get_patch());
        glucx_an_engine_set_tool(s->engine, ver, "babeltrace2 ... -c sink.glucx.report");
    }
    if (bt_self_component_sink_add_input_port(self, "in", NULL, &s->port) !=
        BT_SELF_COMPONENT_ADD_PORT_STATUS_OK) {
        if (s->own_engine)
            glucx_an_engine_destroy(s->engine);
        free(s->out_dir);
        free(s->template_path);
        free(s);
        return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
    }
    bt_self_component_set_data(bt_self_component_sink_as_self_component(self), s);
    return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static void finish_own(sink_t *s)
{
    if (!s->own_engine || s->done)
        return;
    s->done = 1;
    if (s->have_pids)
        glucx_an_engine_left_out(s->engine, s->left_events, s->left_processes);
    if (glucx_an_engine_finish(s->engine) != 0) {
        fprintf(stderr, "sink.glucx.report: %s\n", glucx_an_engine_error(s->engine));
        return;
    }
    glucx_an_html_or_warn(s->out_dir, s->template_path);
    fprintf(stderr, "sink.glucx.report: %s\nsink.glucx.report: reports in %s\n",
            glucx_an_engine_verdict(s->engine), s->out_dir);
}

void glucx_an_sink_finalize(bt_self_component_sink *self)
{
    sink_t *s = bt_self_component_get_data(bt_self_component_sink_as_self_component(self));
    if (!s)
        return;
    if (s->own_engine && !s->done && s->refused) {
        /* a format this sink cannot read: no report at all (babeltrace2 prints the reason) */
        s->done = 1;
        fprintf(stderr, "sink.glucx.report: %s: no report written\n", s->stop_why);
    } else if (s->own_engine && !s->done) {
        glucx_an_engine_partial(s->engine, "the trace was not read to its end (a reading error "
                                           "or an interruption stopped the graph)");
        finish_own(s);
    }
    if (s->own_engine)
        glucx_an_engine_destroy(s->engine);
    bt_message_iterator_put_ref(s->it);
    for (size_t i = 0; i < s->classes.cap; i++)
        free(s->classes.slots[i].val);
    glucx_an_map_free(&s->classes);
    glucx_an_map_free(&s->trace_input);
    glucx_an_map_free(&s->left_out_pids);
    glucx_an_map_free(&s->unversioned);
    free(s->alt_ids);
    free(s->alt_cost);
    free(s->hops);
    free(s->dirs);
    free(s->pids.pids);
    free(s->out_dir);
    free(s->template_path);
    free(s);
}

bt_component_class_sink_graph_is_configured_method_status
glucx_an_sink_graph_is_configured(bt_self_component_sink *self)
{
    sink_t *s = bt_self_component_get_data(bt_self_component_sink_as_self_component(self));
    if (bt_message_iterator_create_from_sink_component(self, s->port, &s->it) !=
        BT_MESSAGE_ITERATOR_CREATE_FROM_SINK_COMPONENT_STATUS_OK)
        return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_ERROR;
    return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_OK;
}

static void note_tracer(sink_t *s, const bt_message *msg)
{
    if (s->tracer_set)
        return;
    s->tracer_set = 1;
    const bt_stream *st = bt_message_stream_beginning_borrow_stream_const(msg);
    const bt_trace *tr = bt_stream_borrow_trace_const(st);
    const bt_value *name = bt_trace_borrow_environment_entry_value_by_name_const(tr, "tracer_name");
    const bt_value *maj = bt_trace_borrow_environment_entry_value_by_name_const(tr, "tracer_major");
    const bt_value *min = bt_trace_borrow_environment_entry_value_by_name_const(tr, "tracer_minor");
    const bt_value *pat =
        bt_trace_borrow_environment_entry_value_by_name_const(tr, "tracer_patchlevel");
    char buf[128];
    if (name && bt_value_is_string(name)) {
        snprintf(buf, sizeof(buf), "%s", bt_value_string_get(name));
        const bt_value *parts[] = {maj, min, pat};
        for (int i = 0; i < 3; i++)
            if (parts[i] && bt_value_is_signed_integer(parts[i])) {
                size_t l = strlen(buf);
                snprintf(buf + l, sizeof(buf) - l, "%s%" PRId64, i ? "." : " ",
                         bt_value_integer_signed_get(parts[i]));
            }
        glucx_an_engine_set_tracer(s->engine, buf);
    }
}

static void progress(sink_t *s, int64_t ts)
{
    glucx_an_sink_ctl_t *c = s->ctl;
    if (!c || !c->progress || c->range_end_ns <= c->range_begin_ns)
        return;
    int pct = (int)(100.0 * (double)(ts - c->range_begin_ns) /
                    (double)(c->range_end_ns - c->range_begin_ns));
    if (pct < 0)
        pct = 0;
    if (pct > 100)
        pct = 100;
    if (pct == s->last_pct)
        return;
    s->last_pct = pct;
    char bar[41];
    memset(bar, ' ', 40);
    memset(bar, '#', (size_t)(pct * 40 / 100));
    bar[40] = 0;
    fprintf(stderr, "\rglucx-analyze [%s] %3d%% %" PRIu64 " events", bar, pct,
            glucx_an_engine_events(s->engine));
    fflush(stderr);
}

bt_component_class_sink_consume_method_status glucx_an_sink_consume(bt_self_component_sink *self)
{
    sink_t *s = bt_self_component_get_data(bt_self_component_sink_as_self_component(self));
    bt_message_array_const msgs;
    uint64_t count = 0;
    switch (bt_message_iterator_next(s->it, &msgs, &count)) {
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
        break;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
        bt_message_iterator_put_ref(s->it);
        s->it = NULL;
        if (s->ctl)
            s->ctl->ended = 1;
        finish_own(s);
        return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
        return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_AGAIN;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
        return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
    default:
        return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
    }
    int rc = 0;
    for (uint64_t i = 0; i < count; i++) {
        const bt_message *m = msgs[i];
        switch (bt_message_get_type(m)) {
        case BT_MESSAGE_TYPE_EVENT: {
            const bt_event *ev = bt_message_event_borrow_event_const(m);
            evc_t *c = class_info(s, ev);
            if (!c) {
                rc = -1;
                break;
            }
            if (c->kind < 0) {
                glucx_an_engine_ignored(s->engine);
                break;
            }
            if (left_out(s, c, ev))
                break; /* another job's process (glucx-analyze's process lists) */
            if (!c->format_known) {
                c->format_known = 1;
                if (!format_ok(s, ev)) {
                    c->kind = -1; /* refused: nothing of this class is fed */
                    rc = -1;
                    break;
                }
            }
            glucx_an_event_t e;
            if (convert(s, c, m, ev, &e) != 0) {
                rc = -1;
                break;
            }
            if (s->ctl && s->ctl->hosts) {
                /* the host whose clock stamped it (multi-host merge with clock correction) */
                size_t input = event_input(s, ev);
                e.host_index = input < s->ctl->ninputs ? s->ctl->hosts[input] : 0;
            }
            if (s->ctl && s->ctl->dump && dump_event(s->ctl->dump, &e) != 0) {
                snprintf(s->stop_why, sizeof(s->stop_why),
                         "cannot write the event dump (--dump-events) after %" PRIu64 " events",
                         s->nmsg);
                rc = -1;
                break;
            }
            if (glucx_an_engine_feed(s->engine, &e) != 0) {
                rc = -1;
                break;
            }
            if ((++s->nmsg & 0xffff) == 0)
                progress(s, e.ts);
            break;
        }
        case BT_MESSAGE_TYPE_DISCARDED_EVENTS: {
            uint64_t n = 0;
            if (bt_message_discarded_events_get_count(m, &n) != BT_PROPERTY_AVAILABILITY_AVAILABLE)
                n = 1; /* some lost, count unknown */
            glucx_an_engine_discarded(s->engine, n, 0);
            break;
        }
        case BT_MESSAGE_TYPE_DISCARDED_PACKETS: {
            uint64_t n = 0;
            if (bt_message_discarded_packets_get_count(m, &n) != BT_PROPERTY_AVAILABILITY_AVAILABLE)
                n = 1;
            glucx_an_engine_discarded(s->engine, 0, n);
            break;
        }
        case BT_MESSAGE_TYPE_STREAM_BEGINNING:
            note_tracer(s, m);
            break;
        default:
            break;
        }
        bt_message_put_ref(m);
        if (rc != 0) {
            for (uint64_t j = i + 1; j < count; j++)
                bt_message_put_ref(msgs[j]);
            BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
                bt_self_component_sink_as_self_component(self), "sink.glucx.report: %s",
                s->stop_why[0]                        ? s->stop_why
                : glucx_an_engine_error(s->engine)[0] ? glucx_an_engine_error(s->engine)
                                                      : "out of memory");
            return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
        }
    }
    return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}
