/*
 * Outputs of the analysis: report.json (analysis/report.schema.json), report.txt and the
 * verdict; report.html from the dashboard template. The long lists come from the engine's
 * temporary files, so writing needs no more memory than the aggregates.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "engine_impl.h"
#include "wbuf.h"

#ifndef GLUCX_ANALYSIS_VERSION
#define GLUCX_ANALYSIS_VERSION "0.0.0"
#endif

static json_t *jreal(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static const char *fmt_ns(double ns, char *buf, size_t len)
{
    double a = fabs(ns);
    if (a >= 1e9)
        snprintf(buf, len, "%.2f s", ns / 1e9);
    else if (a >= 1e6)
        snprintf(buf, len, "%.1f ms", ns / 1e6);
    else if (a >= 1e3)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else
        snprintf(buf, len, "%.0f ns", ns);
    return buf;
}

static const char *fmt_bytes(uint64_t b, char *buf, size_t len)
{
    if (b >= (1u << 30) && b % (1u << 30) == 0)
        snprintf(buf, len, "%" PRIu64 " GiB", b >> 30);
    else if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(buf, len, "%" PRIu64 " MiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, len, "%" PRIu64 " KiB", b >> 10);
    else
        snprintf(buf, len, "%" PRIu64 " B", b);
    return buf;
}

static json_t *strlist_json(const strlist_t *l)
{
    json_t *a = json_array();
    for (size_t i = 0; i < l->n; i++)
        json_array_append_new(a, json_string(l->v[i]));
    return a;
}

static int64_t link_busy_total(const link_st_t *l)
{
    return l->busy_committed + glucx_an_ivl_len(&l->busy);
}

static group_st_t *find_group(glucx_an_engine_t *e, uint64_t comm, int coll, int alg,
                              uint64_t bytes)
{
    glucx_an_key_t k = glucx_an_group_key(comm, coll, alg, bytes);
    return glucx_an_map_get(&e->groups, &k);
}

/* ---- decisions (two passes: the verdict needs the savings first) --------------------------- */

typedef struct dec_view {
    dec_rec_t h;
    int32_t *ids;
    uint64_t *cost;
    char *reason;
} dec_view_t;

static int read_dec(FILE *f, dec_view_t *d)
{
    if (fread(&d->h, sizeof(d->h), 1, f) != 1)
        return 0;
    d->ids = calloc(d->h.nalt + 1, sizeof(int32_t));
    d->cost = calloc(d->h.nalt + 1, sizeof(uint64_t));
    d->reason = calloc(d->h.reason_len + 1, 1);
    if (!d->ids || !d->cost || !d->reason ||
        fread(d->ids, sizeof(int32_t), d->h.nalt, f) != d->h.nalt ||
        fread(d->cost, sizeof(uint64_t), d->h.nalt, f) != d->h.nalt ||
        fread(d->reason, 1, d->h.reason_len, f) != d->h.reason_len) {
        free(d->ids);
        free(d->cost);
        free(d->reason);
        return -1;
    }
    return 1;
}

static void free_dec(dec_view_t *d)
{
    free(d->ids);
    free(d->cost);
    free(d->reason);
}

typedef struct dec_eval {
    int64_t predicted; /* -1 none */
    int best_idx;
    int64_t saving;
    int source; /* 0 none 1 model 2 measured */
} dec_eval_t;

static dec_eval_t eval_dec(glucx_an_engine_t *e, const dec_view_t *d)
{
    dec_eval_t v = {-1, -1, 0, 0};
    for (uint32_t i = 0; i < d->h.nalt; i++) {
        if (d->ids[i] == d->h.chosen)
            v.predicted = (int64_t)d->cost[i];
        if (v.best_idx < 0 || d->cost[i] < d->cost[v.best_idx])
            v.best_idx = (int)i;
    }
    if (d->h.measured < 0)
        return v;
    /* measured alternatives of the same collective and size win over the model */
    int64_t best_meas = -1;
    for (uint32_t i = 0; i < d->h.nalt; i++) {
        if (d->ids[i] == d->h.alg_ran)
            continue;
        group_st_t *g = find_group(e, d->h.comm_id, d->h.coll, d->ids[i], d->h.bytes);
        if (g && g->count) {
            int64_t mean = g->sum / (int64_t)g->count;
            if (best_meas < 0 || mean < best_meas)
                best_meas = mean;
        }
    }
    if (best_meas >= 0) {
        if (best_meas < d->h.measured) {
            v.saving = d->h.measured - best_meas;
            v.source = 2;
        }
        return v;
    }
    if (v.best_idx >= 0 && d->ids[v.best_idx] != d->h.chosen && v.predicted > 0) {
        double s =
            (double)d->h.measured * (1.0 - (double)d->cost[v.best_idx] / (double)v.predicted);
        if (s > 0) {
            v.saving = (int64_t)s;
            v.source = 1;
        }
    }
    return v;
}

/* ---- the verdict ---------------------------------------------------------------------------- */

typedef struct verdict_in {
    int64_t decision_saving;
    char decision_subject[160];
    int64_t decision_best_saving;
} verdict_in_t;

static json_t *make_verdict(glucx_an_engine_t *e, const verdict_in_t *vin)
{
    char b1[32], b2[32], b3[32];
    const char *kind = "none";
    char subject[160] = "";
    double cost = 0;
    double n_it = (double)e->iterations;
    double mean_it = n_it > 0 ? (double)e->iter_time_sum / n_it : 0;
    double rank_time = (double)e->tot.duration;
    json_t *v = json_object();
    if (e->iterations == 0 || mean_it <= 0 || rank_time <= 0) {
        snprintf(e->verdict, sizeof(e->verdict), "No iteration could be measured: %s.",
                 e->events == 0 ? "the trace has no glucx events"
                                : "the trace has no collective, communication or iteration events "
                                  "with a duration");
        goto out;
    }
    double exposed_sh = (double)(e->tot.comm - e->tot.overlap) / rank_time;
    double compute_sh = (double)e->tot.compute / rank_time;
    double idle_sh = (double)e->tot.idle / rank_time;
    /* top straggler and the link with most critical-path time */
    rank_st_t *top = NULL;
    int top_rank = -1;
    link_st_t *tl = NULL;
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        for (int r = 0; r < c->nalloc; r++)
            if (c->ranks[r].seen && (!top || c->ranks[r].lateness > top->lateness)) {
                top = &c->ranks[r];
                top_rank = r;
            }
        for (size_t k = 0; k < c->nlinks; k++)
            if (!tl || c->links[k]->cp_ns > tl->cp_ns)
                tl = c->links[k];
    }
    double strag = top ? (double)top->lateness / n_it : 0;
    double exposed = exposed_sh * mean_it;
    double dec = (double)vin->decision_saving / n_it;
    double link_cp = tl ? (double)tl->cp_ns / n_it : 0;
    if (strag >= 0.05 * mean_it && strag >= 0.5 * exposed) {
        kind = "straggler";
        snprintf(subject, sizeof(subject), "rank %d", top_rank);
        cost = strag;
        snprintf(e->verdict, sizeof(e->verdict),
                 "Rank %d is the straggler: the other ranks wait %s for it in each iteration, "
                 "%.0f%% of the %s iteration.",
                 top_rank, fmt_ns(strag, b1, sizeof(b1)), 100 * strag / mean_it,
                 fmt_ns(mean_it, b2, sizeof(b2)));
    } else if (dec >= 0.05 * mean_it) {
        kind = "decision";
        snprintf(subject, sizeof(subject), "%s", vin->decision_subject);
        cost = dec;
        snprintf(e->verdict, sizeof(e->verdict),
                 "Algorithm choices cost %s per iteration (%.0f%% of the %s iteration); the "
                 "largest: %s.",
                 fmt_ns(dec, b1, sizeof(b1)), 100 * dec / mean_it, fmt_ns(mean_it, b2, sizeof(b2)),
                 vin->decision_subject);
    } else if (exposed_sh >= 0.10) {
        cost = exposed;
        if (tl && link_cp >= 0.3 * exposed) {
            kind = "link";
            snprintf(subject, sizeof(subject), "link %d->%d", tl->src, tl->dst);
            int64_t busy = link_busy_total(tl);
            double ach = busy > 0 ? (double)tl->bytes / (double)busy * 1e9 : 0;
            char eff[64] = "";
            if (tl->bw > 0 && ach > 0)
                snprintf(eff, sizeof(eff), " at %.0f%% of its nominal bandwidth",
                         100 * ach / tl->bw);
            snprintf(e->verdict, sizeof(e->verdict),
                     "Communication is exposed for %s per iteration (%.0f%% of the %s "
                     "iteration); link %d->%d (dimension %d) carries %s of it on the critical "
                     "path%s.",
                     fmt_ns(exposed, b1, sizeof(b1)), 100 * exposed_sh,
                     fmt_ns(mean_it, b2, sizeof(b2)), tl->src, tl->dst, tl->dim,
                     fmt_ns(link_cp, b3, sizeof(b3)), eff);
        } else {
            kind = "exposed_communication";
            snprintf(subject, sizeof(subject), "communication");
            snprintf(e->verdict, sizeof(e->verdict),
                     "Exposed communication costs %s per iteration, %.0f%% of the %s iteration "
                     "(%.0f%% of communication is hidden under compute).",
                     fmt_ns(exposed, b1, sizeof(b1)), 100 * exposed_sh,
                     fmt_ns(mean_it, b2, sizeof(b2)),
                     e->tot.comm > 0 ? 100.0 * (double)e->tot.overlap / (double)e->tot.comm : 0.0);
        }
    } else if (compute_sh >= 0.5) {
        kind = "compute";
        snprintf(subject, sizeof(subject), "compute");
        cost = compute_sh * mean_it;
        snprintf(e->verdict, sizeof(e->verdict),
                 "Compute-bound: compute takes %.0f%% of each rank's time; exposed communication "
                 "costs only %s per iteration (%.0f%% of the %s iteration).",
                 100 * compute_sh, fmt_ns(exposed, b1, sizeof(b1)), 100 * exposed_sh,
                 fmt_ns(mean_it, b2, sizeof(b2)));
    } else if (idle_sh >= 0.3) {
        kind = "idle";
        snprintf(subject, sizeof(subject), "idle");
        cost = idle_sh * mean_it;
        snprintf(e->verdict, sizeof(e->verdict),
                 "Ranks are idle (neither computing nor communicating as traced) %.0f%% of the "
                 "%s iteration: the time goes to untraced work.",
                 100 * idle_sh, fmt_ns(mean_it, b1, sizeof(b1)));
    } else {
        snprintf(e->verdict, sizeof(e->verdict),
                 "No single bottleneck: per %s iteration, compute %.0f%%, exposed communication "
                 "%.0f%%, idle %.0f%%.",
                 fmt_ns(mean_it, b1, sizeof(b1)), 100 * compute_sh, 100 * exposed_sh,
                 100 * idle_sh);
    }
out:
    if (e->partial.n) {
        size_t l = strlen(e->verdict);
        snprintf(e->verdict + l, sizeof(e->verdict) - l, " (Partial report: %s.)", e->partial.v[0]);
    }
    json_object_set_new(v, "sentence", json_string(e->verdict));
    json_object_set_new(v, "bottleneck", json_string(kind));
    json_object_set_new(v, "subject", json_string(subject));
    json_object_set_new(v, "cost_ns", json_integer((json_int_t)(cost > 0 ? cost : 0)));
    json_object_set_new(v, "share", jreal(mean_it > 0 ? cost / mean_it : 0));
    return v;
}

/* ---- report.json ----------------------------------------------------------------------------- */

static int put(FILE *f, const char *key, json_t *v, int first)
{
    int rc = fprintf(f, "%s\"%s\":", first ? "" : ",\n", key) < 0 ||
             json_dumpf(v, f, JSON_COMPACT | JSON_ENCODE_ANY) != 0;
    json_decref(v);
    return rc ? -1 : 0;
}

static int copy_file(FILE *from, FILE *to)
{
    char buf[65536];
    size_t n;
    rewind(from);
    while ((n = fread(buf, 1, sizeof(buf), from)) > 0)
        if (fwrite(buf, 1, n, to) != n)
            return -1;
    return ferror(from) ? -1 : 0;
}

static json_t *link_json(glucx_an_engine_t *e, const comm_st_t *c, const link_st_t *l, double dur)
{
    char hex[24];
    json_t *o = json_object();
    int64_t busy = link_busy_total(l);
    double ach = busy > 0 ? (double)l->bytes / (double)busy * 1e9 : NAN;
    json_object_set_new(o, "link_id", json_integer(c->size > 0 ? l->src * c->size + l->dst : -1));
    json_object_set_new(o, "comm_id", json_string(glucx_an_comm_hex(c->id, hex)));
    json_object_set_new(o, "src", json_integer(l->src));
    json_object_set_new(o, "dst", json_integer(l->dst));
    json_object_set_new(o, "dim", json_integer(l->dim));
    json_object_set_new(o, "transport", json_string(l->transport ? l->transport : ""));
    json_object_set_new(o, "announced", json_boolean(l->announced));
    json_object_set_new(o, "bandwidth_Bps", l->announced ? jreal(l->bw) : json_null());
    json_object_set_new(o, "latency_ns", l->announced ? jreal(l->lat) : json_null());
    json_object_set_new(o, "bytes", json_integer((json_int_t)l->bytes));
    json_object_set_new(o, "messages", json_integer((json_int_t)l->messages));
    json_object_set_new(o, "busy_ns", json_integer(busy));
    json_object_set_new(o, "achieved_Bps", jreal(ach));
    json_object_set_new(o, "efficiency", l->bw > 0 ? jreal(ach / l->bw) : json_null());
    json_object_set_new(o, "utilisation",
                        l->bw > 0 && dur > 0 ? jreal((double)l->bytes / (l->bw * dur / 1e9))
                                             : json_null());
    json_object_set_new(o, "busy_share", dur > 0 ? jreal((double)busy / dur) : json_null());
    json_object_set_new(o, "critical_path_ns", json_integer(l->cp_ns));
    json_object_set_new(o, "critical_path_share",
                        jreal(e->cp_sum > 0 ? (double)l->cp_ns / (double)e->cp_sum : 0.0));
    return o;
}

static void wb_num(wbuf_t *w, double x)
{
    /* bandwidths: whole bytes per second are precise enough */
    if (!isfinite(x) || x < 0 || x > 9e18)
        wb_lit(w, "null");
    else
        wb_u64(w, (uint64_t)llround(x));
}

static void wb_kstr(wbuf_t *w, const char *key, const char *v)
{
    wb_lit(w, ",\"");
    wb_str(w, key);
    wb_lit(w, "\":\"");
    for (const char *p = v; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\') {
            char t[2] = {'\\', (char)ch};
            wb_mem(w, t, 2);
        } else if (ch < 0x20) {
            char t[8];
            snprintf(t, sizeof(t), "\\u%04x", ch);
            wb_mem(w, t, 6);
        } else {
            wb_mem(w, p, 1);
        }
    }
    wb_lit(w, "\"");
}

static void wb_kint(wbuf_t *w, const char *key, int64_t v)
{
    wb_lit(w, ",\"");
    wb_str(w, key);
    wb_lit(w, "\":");
    wb_i64(w, v);
}

static void wb_kopt(wbuf_t *w, const char *key, int64_t v, int present)
{
    wb_lit(w, ",\"");
    wb_str(w, key);
    wb_lit(w, "\":");
    if (present)
        wb_i64(w, v);
    else
        wb_lit(w, "null");
}

static void coll_write(wbuf_t *w, const coll_rec_t *r)
{
    char hex[24], pb[32];
    wb_lit(w, "{\"comm_id\":\"");
    wb_str(w, glucx_an_comm_hex(r->comm_id, hex));
    wb_lit(w, "\"");
    wb_kint(w, "seq", r->seq);
    wb_kopt(w, "iteration", r->iteration, r->iteration >= 0);
    wb_kstr(w, "coll",
            r->gloo ? glucx_an_gloo_prefix_name((unsigned)r->prefix, pb, sizeof(pb))
                    : glucx_an_coll_name(r->coll));
    wb_kstr(w, "algorithm", r->gloo ? "gloo" : glucx_an_alg_name(r->alg));
    wb_kint(w, "bytes", (int64_t)r->bytes);
    wb_kstr(w, "dtype", r->gloo ? "unknown" : glucx_an_dtype_name(r->dtype));
    wb_kstr(w, "op", r->gloo ? "unknown" : glucx_an_op_name(r->op));
    wb_kint(w, "root", r->root);
    wb_kint(w, "ranks", r->nranks);
    wb_kint(w, "start_ns", r->start);
    wb_kint(w, "end_ns", r->end);
    wb_kint(w, "time_ns", r->time);
    wb_kint(w, "span_ns", r->span);
    wb_kopt(w, "last_rank", r->last_rank, r->last_rank >= 0);
    wb_kint(w, "lateness_ns", r->lateness);
    double algbw = r->time > 0 ? (double)r->bytes / (double)r->time * 1e9 : NAN;
    double f = glucx_an_busbw_factor(r->coll, r->nranks);
    wb_lit(w, ",\"algbw_Bps\":");
    wb_num(w, r->gloo ? NAN : algbw);
    wb_lit(w, ",\"busbw_Bps\":");
    wb_num(w, r->gloo ? algbw : algbw * f);
    wb_kstr(w, "status", r->status == 99 ? "INCOMPLETE" : glucx_an_status_name(r->status));
    wb_kstr(w, "source", r->gloo ? "gloo_slot" : "coll_events");
    wb_lit(w, "}");
}

static void dec_write(glucx_an_engine_t *e, wbuf_t *w, const dec_view_t *d, const dec_eval_t *v)
{
    char hex[24];
    wb_lit(w, "{\"comm_id\":\"");
    wb_str(w, glucx_an_comm_hex(d->h.comm_id, hex));
    wb_lit(w, "\"");
    wb_kint(w, "seq", d->h.seq);
    wb_kstr(w, "kind", glucx_an_decision_name(d->h.kind));
    wb_kstr(w, "coll", glucx_an_coll_name(d->h.coll));
    wb_kint(w, "bytes", (int64_t)d->h.bytes);
    wb_kstr(w, "chosen", glucx_an_alg_name(d->h.chosen));
    wb_kstr(w, "reason", d->reason);
    wb_lit(w, ",\"alternatives\":[");
    for (uint32_t i = 0; i < d->h.nalt; i++) {
        wb_str(w, i ? ",{\"option\":\"" : "{\"option\":\"");
        wb_str(w, glucx_an_alg_name(d->ids[i]));
        wb_lit(w, "\"");
        wb_kint(w, "predicted_ns", (int64_t)d->cost[i]);
        group_st_t *g = find_group(e, d->h.comm_id, d->h.coll, d->ids[i], d->h.bytes);
        wb_kopt(w, "measured_mean_ns", g && g->count ? g->sum / (int64_t)g->count : 0,
                g && g->count);
        wb_lit(w, "}");
    }
    wb_lit(w, "]");
    wb_kopt(w, "predicted_ns", v->predicted, v->predicted >= 0);
    wb_kopt(w, "measured_ns", d->h.measured, d->h.measured >= 0);
    wb_lit(w, ",\"model_ratio\":");
    if (v->predicted > 0 && d->h.measured >= 0)
        wb_ratio(w, (double)d->h.measured / (double)v->predicted);
    else
        wb_lit(w, "null");
    wb_kstr(w, "best", v->best_idx >= 0 ? glucx_an_alg_name(d->ids[v->best_idx]) : "none");
    wb_kopt(w, "best_predicted_ns", v->best_idx >= 0 ? (int64_t)d->cost[v->best_idx] : 0,
            v->best_idx >= 0);
    wb_kint(w, "saving_ns", v->saving);
    static const char *const src[] = {"none", "model", "measured"};
    wb_kstr(w, "saving_source", src[v->source]);
    wb_str(w, d->h.agree ? ",\"ranks_agree\":true}" : ",\"ranks_agree\":false}");
}

static int cmp_lateness(const void *a, const void *b)
{
    const rank_st_t *x = *(rank_st_t *const *)a, *y = *(rank_st_t *const *)b;
    return x->lateness < y->lateness ? 1 : x->lateness > y->lateness ? -1 : 0;
}

static void write_txt(glucx_an_engine_t *e, FILE *f, const char *source, uint32_t period);

int glucx_an_report_write(glucx_an_engine_t *e)
{
    char path[4096], tmp[4096], hex[24];
    snprintf(path, sizeof(path), "%s/report.json", e->dir);
    snprintf(tmp, sizeof(tmp), "%s/.report.json.tmp", e->dir);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(e->err, sizeof(e->err), "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    int rc = 0;
    /* decisions, first pass: savings for the verdict */
    verdict_in_t vin;
    memset(&vin, 0, sizeof(vin));
    fflush(e->f_decs);
    rewind(e->f_decs);
    for (;;) {
        dec_view_t d;
        int got = read_dec(e->f_decs, &d);
        if (got <= 0)
            break;
        dec_eval_t v = eval_dec(e, &d);
        vin.decision_saving += v.saving;
        if (v.saving > vin.decision_best_saving) {
            char b1[32], b2[32];
            vin.decision_best_saving = v.saving;
            snprintf(vin.decision_subject, sizeof(vin.decision_subject),
                     "%s of %s ran %s, %s would have saved %s", glucx_an_coll_name(d.h.coll),
                     fmt_bytes(d.h.bytes, b1, sizeof(b1)), glucx_an_alg_name(d.h.chosen),
                     v.best_idx >= 0 ? glucx_an_alg_name(d.ids[v.best_idx]) : "another option",
                     fmt_ns((double)v.saving, b2, sizeof(b2)));
        }
        free_dec(&d);
    }
    json_t *verdict = make_verdict(e, &vin);

    fputs("{", f);
    rc |= put(f, "schema_version", json_integer(1), 1);
    json_t *tool = json_object();
    json_object_set_new(tool, "name", json_string("glucx-analyze"));
    json_object_set_new(tool, "version", json_string(GLUCX_ANALYSIS_VERSION));
    json_object_set_new(tool, "babeltrace2_version",
                        json_string(e->bt_version ? e->bt_version : ""));
    json_object_set_new(tool, "command", json_string(e->command ? e->command : ""));
    rc |= put(f, "tool", tool, 0);
    json_t *prov = json_object();
    int recognised = e->mismatched.n == 0 && e->events > 0;
    json_object_set_new(prov, "name", json_string("glucx"));
    json_object_set_new(prov, "abi", recognised ? json_integer(1) : json_null());
    json_object_set_new(prov, "recognised", json_boolean(recognised));
    json_object_set_new(prov, "tracer", json_string(e->tracer ? e->tracer : ""));
    json_object_set_new(prov, "unknown_events", strlist_json(&e->unknown_events));
    json_object_set_new(prov, "mismatched_events", strlist_json(&e->mismatched));
    rc |= put(f, "provider", prov, 0);

    /* trace */
    json_t *tr = json_object(), *comms = json_array(), *seen = json_array(),
           *missing = json_array();
    int expected = 0;
    const char *source = "none";
    uint32_t period = 0;
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        json_t *co = json_object(), *rk = json_array();
        json_object_set_new(co, "comm_id", json_string(glucx_an_comm_hex(c->id, hex)));
        json_object_set_new(co, "name", json_string(c->name ? c->name : ""));
        json_object_set_new(co, "size", json_integer(c->size));
        json_object_set_new(co, "npackages", json_integer(c->npackages));
        json_object_set_new(co, "gloo", json_boolean(c->gloo));
        int n = c->size > c->nalloc ? c->size : c->nalloc;
        for (int r = 0; r < n; r++) {
            int s = r < c->nalloc && c->ranks[r].seen;
            if (s) {
                json_t *ro = json_object();
                json_object_set_new(ro, "rank", json_integer(r));
                json_object_set_new(ro, "host",
                                    json_string(c->ranks[r].host ? c->ranks[r].host : ""));
                json_object_set_new(ro, "package", json_integer(c->ranks[r].package));
                json_object_set_new(ro, "vpid",
                                    c->ranks[r].vpid >= 0 ? json_integer(c->ranks[r].vpid)
                                                          : json_null());
                json_array_append_new(rk, ro);
                if (i == 0)
                    json_array_append_new(seen, json_integer(r));
            } else if (r < c->size && i == 0) {
                json_array_append_new(missing, json_integer(r));
            }
        }
        if (i == 0)
            expected = c->size;
        json_object_set_new(co, "ranks", rk);
        json_array_append_new(comms, co);
        static const char *const modes[] = {"none", "markers", "inferred", "per_collective",
                                            "whole_trace"};
        if (c->mode > 0 && (strcmp(source, "none") == 0 || c->mode == MODE_MARKERS)) {
            source = modes[c->mode];
            period = c->mode == MODE_INFERRED ? c->period : 0;
        }
    }
    json_t *paths = strlist_json(&e->paths);
    json_object_set_new(tr, "paths", paths);
    json_object_set_new(tr, "start_ns", json_integer(e->t_first));
    json_object_set_new(tr, "end_ns", json_integer(e->t_last));
    json_object_set_new(tr, "duration_ns", json_integer(e->t_last - e->t_first));
    json_object_set_new(tr, "events", json_integer((json_int_t)e->events));
    json_object_set_new(tr, "events_ignored", json_integer((json_int_t)e->ignored));
    json_object_set_new(tr, "discarded_events", json_integer((json_int_t)e->discarded_events));
    json_object_set_new(tr, "discarded_packets", json_integer((json_int_t)e->discarded_packets));
    json_object_set_new(tr, "partial", json_boolean(e->partial.n > 0));
    json_object_set_new(tr, "partial_reasons", strlist_json(&e->partial));
    json_object_set_new(tr, "warnings", strlist_json(&e->warnings));
    json_object_set_new(tr, "pid_files", strlist_json(&e->pid_files));
    json_object_set_new(tr, "left_out_events", json_integer((json_int_t)e->left_out_events));
    json_object_set_new(tr, "left_out_processes", json_integer((json_int_t)e->left_out_processes));
    json_object_set_new(tr, "ranks_expected", json_integer(expected));
    json_object_set_new(tr, "ranks_seen", seen);
    json_object_set_new(tr, "missing_ranks", missing);
    json_object_set_new(tr, "unmatched_sends", json_integer((json_int_t)e->unmatched_sends));
    json_object_set_new(tr, "unmatched_recvs", json_integer((json_int_t)e->unmatched_recvs));
    json_object_set_new(tr, "causality_violations", json_integer((json_int_t)e->causality));
    json_object_set_new(tr, "comms", comms);
    rc |= put(f, "trace", tr, 0);
    rc |= put(f, "verdict", verdict, 0);

    json_t *sum = json_object(), *st = json_object();
    int nranks = 0;
    for (size_t i = 0; i < e->ncomms; i++)
        nranks += e->comms[i]->nseen;
    json_object_set_new(sum, "iterations", json_integer((json_int_t)e->iterations));
    json_object_set_new(sum, "iteration_source", json_string(source));
    json_object_set_new(sum, "inferred_period", period ? json_integer(period) : json_null());
    json_object_set_new(
        sum, "mean_iteration_ns",
        json_integer(e->iterations ? e->iter_time_sum / (int64_t)e->iterations : 0));
    json_object_set_new(sum, "mean_critical_path_ns",
                        json_integer(e->iterations ? e->cp_sum / (int64_t)e->iterations : 0));
    json_object_set_new(sum, "ranks", json_integer(nranks));
    glucx_an_bd_json_fields(st, &e->tot);
    json_object_set_new(sum, "totals", st);
    rc |= put(f, "summary", sum, 0);

    fputs(",\n\"iterations\":[", f);
    fflush(e->f_iters);
    rc |= copy_file(e->f_iters, f);
    fputs("]", f);

    json_t *ranks = json_array();
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        for (int r = 0; r < c->nalloc; r++) {
            rank_st_t *rs = &c->ranks[r];
            if (!rs->seen)
                continue;
            json_t *o = json_object();
            json_object_set_new(o, "rank", json_integer(r));
            json_object_set_new(o, "comm_id", json_string(glucx_an_comm_hex(c->id, hex)));
            json_object_set_new(o, "host", json_string(rs->host ? rs->host : ""));
            json_object_set_new(o, "package", json_integer(rs->package));
            json_object_set_new(o, "lateness_ns", json_integer(rs->lateness));
            glucx_an_bd_json_fields(o, &rs->tot);
            json_array_append_new(ranks, o);
        }
    }
    rc |= put(f, "ranks", ranks, 0);

    double dur = (double)(e->t_last - e->t_first);
    json_t *links = json_array();
    for (size_t i = 0; i < e->ncomms; i++)
        for (size_t k = 0; k < e->comms[i]->nlinks; k++)
            json_array_append_new(links, link_json(e, e->comms[i], e->comms[i]->links[k], dur));
    rc |= put(f, "links", links, 0);

    fputs(",\n\"collectives\":[", f);
    fflush(e->f_colls);
    rewind(e->f_colls);
    wbuf_t *w = malloc(sizeof(*w));
    if (!w) {
        fclose(f);
        unlink(tmp);
        snprintf(e->err, sizeof(e->err), "out of memory writing %s", path);
        return -1;
    }
    w->f = f;
    w->n = 0;
    w->err = 0;
    coll_rec_t cr;
    uint64_t ncolls = 0, ndecs = 0;
    for (uint64_t i = 0; fread(&cr, sizeof(cr), 1, e->f_colls) == 1; i++) {
        ncolls++;
        if (e->list_limit >= 0 && i >= (uint64_t)e->list_limit)
            continue;
        if (i)
            wb_lit(w, ",");
        coll_write(w, &cr);
    }
    wb_lit(w, "]");
    wb_flush(w);
    rc |= w->err;

    json_t *groups = json_array();
    for (size_t i = 0; i < e->groups.cap; i++) {
        group_st_t *g = e->groups.slots[i].val;
        if (!g)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "comm_id", json_string(glucx_an_comm_hex(g->comm_id, hex)));
        json_object_set_new(o, "coll", json_string(g->coll));
        json_object_set_new(o, "algorithm", json_string(g->alg));
        json_object_set_new(o, "bytes", json_integer((json_int_t)g->bytes));
        json_object_set_new(o, "count", json_integer((json_int_t)g->count));
        json_object_set_new(o, "mean_time_ns",
                            json_integer(g->count ? g->sum / (int64_t)g->count : 0));
        json_object_set_new(o, "min_time_ns", json_integer(g->count ? g->min : 0));
        json_object_set_new(o, "max_time_ns", json_integer(g->max));
        json_object_set_new(o, "busbw_Bps",
                            g->busbw_n ? jreal(g->busbw_sum / (double)g->busbw_n) : json_null());
        json_array_append_new(groups, o);
    }
    rc |= put(f, "collective_groups", groups, 0);

    wb_lit(w, ",\n\"decisions\":[");
    rewind(e->f_decs);
    for (uint64_t i = 0;; i++) {
        dec_view_t d;
        int got = read_dec(e->f_decs, &d);
        if (got < 0)
            rc = -1;
        if (got <= 0)
            break;
        dec_eval_t v = eval_dec(e, &d);
        ndecs++;
        if (e->list_limit < 0 || i < (uint64_t)e->list_limit) {
            if (i)
                wb_lit(w, ",");
            dec_write(e, w, &d, &v);
        }
        free_dec(&d);
    }
    wb_lit(w, "]");
    wb_flush(w);
    rc |= w->err;
    free(w);

    /* stragglers: ranks others waited for, most first */
    size_t nall = 0;
    for (size_t i = 0; i < e->ncomms; i++)
        nall += (size_t)e->comms[i]->nalloc;
    rank_st_t **v = calloc(nall + 1, sizeof(*v));
    comm_st_t **vc = calloc(nall + 1, sizeof(*vc));
    json_t *strag = json_array();
    if (v && vc) {
        size_t n = 0;
        for (size_t i = 0; i < e->ncomms; i++)
            for (int r = 0; r < e->comms[i]->nalloc; r++)
                if (e->comms[i]->ranks[r].seen && e->comms[i]->ranks[r].lateness > 0)
                    v[n++] = &e->comms[i]->ranks[r];
        qsort(v, n, sizeof(*v), cmp_lateness);
        for (size_t j = 0; j < n; j++) {
            rank_st_t *rs = v[j];
            comm_st_t *c = NULL;
            int rank = -1;
            for (size_t i = 0; i < e->ncomms && !c; i++)
                if (rs >= e->comms[i]->ranks && rs < e->comms[i]->ranks + e->comms[i]->nalloc) {
                    c = e->comms[i];
                    rank = (int)(rs - c->ranks);
                }
            double share =
                e->iter_time_sum > 0 ? (double)rs->lateness / (double)e->iter_time_sum : 0;
            if (j > 0 && share < 0.01)
                break;
            json_t *o = json_object();
            json_object_set_new(o, "rank", json_integer(rank));
            json_object_set_new(o, "comm_id", json_string(glucx_an_comm_hex(c->id, hex)));
            json_object_set_new(o, "lateness_ns", json_integer(rs->lateness));
            json_object_set_new(
                o, "mean_lateness_ns",
                json_integer(rs->times_last ? rs->lateness / (int64_t)rs->times_last : 0));
            json_object_set_new(o, "times_last", json_integer((json_int_t)rs->times_last));
            json_object_set_new(o, "collectives", json_integer((json_int_t)rs->colls));
            json_object_set_new(o, "others_wait_ns", json_integer(rs->others_wait));
            json_object_set_new(o, "share", jreal(share));
            json_array_append_new(strag, o);
        }
    } else {
        rc = -1;
    }
    free(v);
    free(vc);
    rc |= put(f, "stragglers", strag, 0);
    json_t *lim = json_object();
    json_object_set_new(lim, "limit", json_integer(e->list_limit));
    json_object_set_new(lim, "iterations", json_integer((json_int_t)e->iterations));
    json_object_set_new(lim, "iterations_listed", json_integer((json_int_t)e->n_iters_out));
    json_object_set_new(lim, "collectives", json_integer((json_int_t)ncolls));
    json_object_set_new(
        lim, "collectives_listed",
        json_integer((json_int_t)(e->list_limit >= 0 && ncolls > (uint64_t)e->list_limit
                                      ? (uint64_t)e->list_limit
                                      : ncolls)));
    json_object_set_new(lim, "decisions", json_integer((json_int_t)ndecs));
    json_object_set_new(
        lim, "decisions_listed",
        json_integer((json_int_t)(e->list_limit >= 0 && ndecs > (uint64_t)e->list_limit
                                      ? (uint64_t)e->list_limit
                                      : ndecs)));
    rc |= put(f, "lists", lim, 0);
    rc |= put(f, "timeline", json_string(e->opt.timeline ? "timeline.json" : ""), 0);
    fputs("}\n", f);
    if (fclose(f) != 0 || rc != 0) {
        snprintf(e->err, sizeof(e->err), "cannot write %s: %s", tmp,
                 errno ? strerror(errno) : "encoding failed");
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(e->err, sizeof(e->err), "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/report.txt", e->dir);
    FILE *t = fopen(path, "w");
    if (!t) {
        snprintf(e->err, sizeof(e->err), "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    write_txt(e, t, source, period);
    if (fclose(t) != 0) {
        snprintf(e->err, sizeof(e->err), "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- report.txt ----------------------------------------------------------------------------- */

static void pct(FILE *f, int64_t x, int64_t of)
{
    fprintf(f, " %5.1f%%", of > 0 ? 100.0 * (double)x / (double)of : 0.0);
}

static void write_txt(glucx_an_engine_t *e, FILE *f, const char *source, uint32_t period)
{
    char b1[32], b2[32], b3[32], hex[24];
    fprintf(f, "%s\n\n", e->verdict);
    fprintf(f, "trace     %" PRIu64 " glucx events, %s", e->events,
            fmt_ns((double)(e->t_last - e->t_first), b1, sizeof(b1)));
    if (e->discarded_events || e->discarded_packets)
        fprintf(f, ", %" PRIu64 " events discarded, %" PRIu64 " packets lost", e->discarded_events,
                e->discarded_packets);
    fprintf(f, "\n");
    for (size_t i = 0; i < e->paths.n; i++)
        fprintf(f, "          %s\n", e->paths.v[i]);
    for (size_t i = 0; i < e->pid_files.n; i++)
        fprintf(f, "          only the processes listed in %s\n", e->pid_files.v[i]);
    if (e->partial.n) {
        fprintf(f, "PARTIAL REPORT:\n");
        for (size_t i = 0; i < e->partial.n; i++)
            fprintf(f, "  - %s\n", e->partial.v[i]);
    }
    for (size_t i = 0; i < e->warnings.n; i++)
        fprintf(f, "warning: %s\n", e->warnings.v[i]);
    fprintf(f, "iterations %" PRIu64 " (%s", e->iterations, source);
    if (period)
        fprintf(f, ", %u collectives each", period);
    fprintf(f, "), mean %s, mean critical path %s\n\n",
            fmt_ns(e->iterations ? (double)e->iter_time_sum / (double)e->iterations : 0, b1,
                   sizeof(b1)),
            fmt_ns(e->iterations ? (double)e->cp_sum / (double)e->iterations : 0, b2, sizeof(b2)));
    fprintf(f, "per rank (all iterations; %% of the rank's iteration time)\n");
    fprintf(f, "%-20s %5s %16s %16s %16s %10s %16s %16s %16s\n", "comm", "rank", "compute",
            "communication", "exposed comm", "overlap", "late sender", "late receiver", "idle");
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        for (int r = 0; r < c->nalloc; r++) {
            rank_st_t *rs = &c->ranks[r];
            if (!rs->seen)
                continue;
            bd_t *b = &rs->tot;
            fprintf(f, "%-20s %5d %9s", glucx_an_comm_hex(c->id, hex), r,
                    fmt_ns((double)b->compute, b1, sizeof(b1)));
            pct(f, b->compute, b->duration);
            fprintf(f, " %9s", fmt_ns((double)b->comm, b1, sizeof(b1)));
            pct(f, b->comm, b->duration);
            fprintf(f, " %9s", fmt_ns((double)(b->comm - b->overlap), b1, sizeof(b1)));
            pct(f, b->comm - b->overlap, b->duration);
            fprintf(f, " %9.1f%%", b->comm ? 100.0 * (double)b->overlap / (double)b->comm : 0.0);
            fprintf(f, " %9s", fmt_ns((double)b->late_sender, b1, sizeof(b1)));
            pct(f, b->late_sender, b->duration);
            fprintf(f, " %9s", fmt_ns((double)b->late_receiver, b1, sizeof(b1)));
            pct(f, b->late_receiver, b->duration);
            fprintf(f, " %9s", fmt_ns((double)b->idle, b1, sizeof(b1)));
            pct(f, b->idle, b->duration);
            fprintf(f, "\n");
        }
    }
    fprintf(f, "\nlinks (by critical-path time)\n%-8s %4s %-10s %12s %12s %12s %8s %12s\n", "link",
            "dim", "transport", "bytes", "busy", "achieved", "of nom.", "crit. path");
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        for (size_t k = 0; k < c->nlinks; k++) {
            link_st_t *l = c->links[k];
            int64_t busy = link_busy_total(l);
            double ach = busy > 0 ? (double)l->bytes / (double)busy * 1e9 : 0;
            char name[24];
            snprintf(name, sizeof(name), "%d->%d", l->src, l->dst);
            fprintf(f, "%-8s %4d %-10s %12" PRIu64 " %12s %9.3f GB/s", name, l->dim,
                    l->transport && *l->transport ? l->transport : "-", l->bytes,
                    fmt_ns((double)busy, b1, sizeof(b1)), ach / 1e9);
            if (l->bw > 0 && ach > 0)
                fprintf(f, " %7.1f%%", 100 * ach / l->bw);
            else
                fprintf(f, " %8s", "-");
            fprintf(f, " %12s\n", fmt_ns((double)l->cp_ns, b1, sizeof(b1)));
        }
    }
    fprintf(f, "\ncollectives\n%-16s %-22s %12s %8s %12s %12s %12s\n", "coll", "algorithm", "bytes",
            "count", "mean time", "min", "busbw GB/s");
    for (size_t i = 0; i < e->groups.cap; i++) {
        group_st_t *g = e->groups.slots[i].val;
        if (!g)
            continue;
        fprintf(f, "%-16s %-22s %12" PRIu64 " %8" PRIu64 " %12s %12s %12.3f\n", g->coll, g->alg,
                g->bytes, g->count,
                fmt_ns(g->count ? (double)g->sum / (double)g->count : 0, b1, sizeof(b1)),
                fmt_ns((double)(g->count ? g->min : 0), b2, sizeof(b2)),
                g->busbw_n ? g->busbw_sum / (double)g->busbw_n / 1e9 : 0.0);
    }
    fprintf(f, "\nstragglers (last to arrive at collectives)\n");
    int any = 0;
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        for (int r = 0; r < c->nalloc; r++) {
            rank_st_t *rs = &c->ranks[r];
            if (!rs->seen || rs->lateness <= 0)
                continue;
            any = 1;
            fprintf(f,
                    "  rank %d: last in %" PRIu64 " of %" PRIu64 " collectives, holding the others "
                    "back %s in total (%s each), others waited %s\n",
                    r, rs->times_last, rs->colls, fmt_ns((double)rs->lateness, b1, sizeof(b1)),
                    fmt_ns(rs->times_last ? (double)rs->lateness / (double)rs->times_last : 0, b2,
                           sizeof(b2)),
                    fmt_ns((double)rs->others_wait, b3, sizeof(b3)));
        }
    }
    if (!any)
        fprintf(f, "  none\n");
    fprintf(f, "\ndetails: report.json (schema analysis/report.schema.json)%s\n",
            e->opt.timeline ? ", timeline.json (open in ui.perfetto.dev)" : "");
}

/* ---- report.html ---------------------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char tmp[65536];
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        memcpy(buf + len, tmp, n);
        len += n;
    }
    fclose(f);
    if (!buf)
        buf = calloc(1, 1);
    else
        buf[len] = 0;
    *len_p = len;
    return buf;
}

int glucx_an_write_html(const char *dir, const char *template_path, char *err, size_t errlen)
{
    static const char marker[] = "@GLUCX_REPORT_JSON@";
    size_t tlen = 0;
    char *t = slurp(template_path, &tlen);
    if (!t) {
        snprintf(err, errlen, "cannot read the dashboard template %s: %s", template_path,
                 strerror(errno));
        return -1;
    }
    char *m = strstr(t, marker);
    if (!m || strstr(m + 1, marker)) {
        snprintf(err, errlen,
                 "dashboard template %s must contain the marker %s exactly once "
                 "(found %s)",
                 template_path, marker, m ? "more than once" : "none");
        free(t);
        return -1;
    }
    char in[4096], out[4096], tmp[4096];
    snprintf(in, sizeof(in), "%s/report.json", dir);
    snprintf(out, sizeof(out), "%s/report.html", dir);
    snprintf(tmp, sizeof(tmp), "%s/.report.html.tmp", dir);
    FILE *j = fopen(in, "rb");
    FILE *o = j ? fopen(tmp, "wb") : NULL;
    if (!j || !o) {
        snprintf(err, errlen, "cannot %s %s: %s", j ? "create" : "read", j ? tmp : in,
                 strerror(errno));
        if (j)
            fclose(j);
        free(t);
        return -1;
    }
    int rc = fwrite(t, 1, (size_t)(m - t), o) != (size_t)(m - t);
    char buf[65536];
    size_t n;
    while (!rc && (n = fread(buf, 1, sizeof(buf), j)) > 0) {
        size_t s = 0;
        for (size_t i = 0; i < n && !rc; i++)
            if (buf[i] == '<') {
                rc |= fwrite(buf + s, 1, i - s, o) != i - s;
                rc |= fputs("\\u003c", o) < 0;
                s = i + 1;
            }
        rc |= fwrite(buf + s, 1, n - s, o) != n - s;
    }
    size_t rest = tlen - (size_t)(m - t) - (sizeof(marker) - 1);
    rc |= fwrite(m + sizeof(marker) - 1, 1, rest, o) != rest;
    fclose(j);
    rc |= fclose(o) != 0;
    free(t);
    if (rc || rename(tmp, out) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
