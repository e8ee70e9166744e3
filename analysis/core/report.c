/*
 * The report: report.json (analysis/report.schema.json), report.txt and report.html from the
 * dashboard template. It reads what the analyzers left (the model's results and the temporary
 * record files) and computes nothing of its own beyond unit conversions and ratios for display;
 * the long lists come from the temporary files, so writing needs no more memory than the
 * aggregates. The iterations list is appended to as iterations close
 * (glucx_an_report_iteration).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "model.h"
#include "wbuf.h"

#ifndef GLUCX_ANALYSIS_VERSION
#define GLUCX_ANALYSIS_VERSION "0.0.0"
#endif

static json_t *jreal(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *strlist_json(const strlist_t *l)
{
    json_t *a = json_array();
    for (size_t i = 0; i < l->n; i++)
        json_array_append_new(a, json_string(l->v[i]));
    return a;
}

static void bd_json_fields(json_t *o, const bd_t *b)
{
    json_object_set_new(o, "duration_ns", json_integer(b->duration));
    json_object_set_new(o, "compute_ns", json_integer(b->compute));
    json_object_set_new(o, "communication_ns", json_integer(b->comm));
    json_object_set_new(o, "overlap_ns", json_integer(b->overlap));
    json_object_set_new(o, "overlap_share",
                        b->comm > 0 ? json_real((double)b->overlap / (double)b->comm)
                                    : json_null());
    json_object_set_new(o, "exposed_communication_ns", json_integer(b->comm - b->overlap));
    json_object_set_new(o, "wait_ns", json_integer(b->wait));
    json_object_set_new(o, "wait_late_sender_ns", json_integer(b->late_sender));
    json_object_set_new(o, "wait_late_receiver_ns", json_integer(b->late_receiver));
    json_object_set_new(o, "idle_ns", json_integer(b->idle));
}

/* ---- the iterations list, appended to as iterations close ---------------------------------- */

static const char *const seg_kinds[SEG_NKINDS] = {"compute", "communication", "wait", "idle",
                                                  "transfer"};

static void wb_bd(wbuf_t *w, const bd_t *b)
{
    wb_lit(w, "\"duration_ns\":");
    wb_i64(w, b->duration);
    wb_lit(w, ",\"compute_ns\":");
    wb_i64(w, b->compute);
    wb_lit(w, ",\"communication_ns\":");
    wb_i64(w, b->comm);
    wb_lit(w, ",\"overlap_ns\":");
    wb_i64(w, b->overlap);
    wb_lit(w, ",\"overlap_share\":");
    if (b->comm > 0)
        wb_ratio(w, (double)b->overlap / (double)b->comm);
    else
        wb_lit(w, "null");
    wb_lit(w, ",\"exposed_communication_ns\":");
    wb_i64(w, b->comm - b->overlap);
    wb_lit(w, ",\"wait_ns\":");
    wb_i64(w, b->wait);
    wb_lit(w, ",\"wait_late_sender_ns\":");
    wb_i64(w, b->late_sender);
    wb_lit(w, ",\"wait_late_receiver_ns\":");
    wb_i64(w, b->late_receiver);
    wb_lit(w, ",\"idle_ns\":");
    wb_i64(w, b->idle);
}

static void wb_opt(wbuf_t *w, int64_t v)
{
    if (v >= 0)
        wb_i64(w, v);
    else
        wb_lit(w, "null");
}

int glucx_an_report_iteration(glucx_an_engine_t *e, const comm_st_t *c, const iter_t *it,
                              const iter_result_t *res)
{
    char hex[24];
    wbuf_t *w = e->w_it;
    /* beyond the list limit the iteration still counts everywhere but is not listed: the
     * record goes to a scratch buffer that is dropped */
    int listed = e->list_limit < 0 || e->n_iters_out < (uint64_t)e->list_limit;
    wbuf_t scratch;
    if (!listed) {
        scratch.f = NULL;
        scratch.n = 0;
        scratch.err = 0;
        w = &scratch;
    }
    if (e->n_iters_out && listed)
        wb_lit(w, ",\n");
    wb_lit(w, "{\"index\":");
    wb_u64(w, it->index);
    wb_lit(w, ",\"comm_id\":\"");
    wb_str(w, glucx_an_comm_hex(c->id, hex));
    wb_lit(w, "\",\"start_ns\":");
    wb_i64(w, res->start);
    wb_lit(w, ",\"end_ns\":");
    wb_i64(w, res->end);
    wb_lit(w, ",\"duration_ns\":");
    wb_i64(w, res->end - res->start);
    wb_str(w, res->complete ? ",\"complete\":true" : ",\"complete\":false");
    wb_lit(w, ",\"collectives\":");
    wb_u64(w, it->ncoll);
    wb_lit(w, ",\"ranks\":[");
    int first = 1;
    for (int r = 0; r < it->nr; r++) {
        const riter_t *ri = &it->r[r];
        if (!ri->begun)
            continue;
        wb_str(w, first ? "{\"rank\":" : ",{\"rank\":");
        first = 0;
        wb_i64(w, r);
        wb_lit(w, ",\"start_ns\":");
        wb_i64(w, ri->start);
        wb_lit(w, ",\"end_ns\":");
        wb_i64(w, ri->end);
        wb_lit(w, ",");
        wb_bd(w, &ri->bd);
        wb_lit(w, "}");
    }
    wb_lit(w, "],\"totals\":{");
    wb_bd(w, &res->tot);
    wb_lit(w, "}");
    const segs_t *s = res->cp;
    wb_lit(w, ",\"critical_path\":{\"length_ns\":");
    wb_i64(w, res->cp_end - res->cp_start);
    wb_str(w, s->truncated ? ",\"truncated\":true" : ",\"truncated\":false");
    wb_lit(w, ",\"by_kind\":{");
    first = 1;
    for (int k = 0; k < SEG_NKINDS; k++) {
        if (!res->cp_by_kind[k])
            continue;
        wb_str(w, first ? "\"" : ",\"");
        first = 0;
        wb_str(w, seg_kinds[k]);
        wb_lit(w, "\":");
        wb_i64(w, res->cp_by_kind[k]);
    }
    wb_lit(w, "},\"segments\":[");
    for (size_t i = s->n; i-- > 0;) {
        const seg_t *g = &s->v[i];
        wb_str(w, i + 1 == s->n ? "{\"rank\":" : ",{\"rank\":");
        wb_i64(w, g->rank);
        wb_lit(w, ",\"kind\":\"");
        wb_str(w, seg_kinds[g->kind]);
        wb_lit(w, "\",\"start_ns\":");
        wb_i64(w, g->a);
        wb_lit(w, ",\"end_ns\":");
        wb_i64(w, g->b);
        wb_lit(w, ",\"link\":");
        wb_opt(w, g->link);
        wb_lit(w, ",\"peer\":");
        wb_opt(w, g->peer);
        wb_lit(w, ",\"seq\":");
        wb_opt(w, g->seq);
        wb_lit(w, "}");
    }
    wb_lit(w, "]}}");
    if (w->err) {
        snprintf(e->err, sizeof(e->err), "cannot write iteration records in %s: %s", e->dir,
                 strerror(errno));
        return -1;
    }
    if (listed)
        e->n_iters_out++;
    else
        w->n = 0; /* never flushed: scratch.f is NULL */
    return 0;
}

/* ---- the verdict ----------------------------------------------------------------------------- */

static json_t *endpoint_json(int kind, int32_t index);

static json_t *verdict_json(const glucx_an_engine_t *e)
{
    const verdict_st_t *vd = &e->vd;
    json_t *v = json_object();
    json_object_set_new(v, "sentence", json_string(e->verdict));
    json_object_set_new(v, "bottleneck", json_string(vd->kind));
    json_object_set_new(v, "subject", json_string(vd->subject));
    json_object_set_new(v, "cost_ns",
                        json_integer((json_int_t)(vd->cost_ns > 0 ? vd->cost_ns : 0)));
    json_object_set_new(v, "share", jreal(vd->share));
    if (vd->plink) {
        char hex[24];
        json_t *l = json_object();
        json_object_set_new(l, "comm_id", json_string(glucx_an_comm_hex(vd->plink_comm, hex)));
        json_object_set_new(l, "phys_id", json_integer(vd->plink->id));
        json_object_set_new(l, "dim", json_integer(vd->plink->dim));
        json_object_set_new(l, "a", endpoint_json(vd->plink->a_kind, vd->plink->a));
        json_object_set_new(l, "b", endpoint_json(vd->plink->b_kind, vd->plink->b));
        json_object_set_new(v, "physical_link", l);
    }
    if (vd->fail) {
        char hex[24];
        json_t *f = json_object();
        json_object_set_new(f, "time_ns", json_integer(vd->fail_ns));
        json_object_set_new(f, "event", json_string(vd->fail_event));
        json_object_set_new(f, "comm_id", json_string(glucx_an_comm_hex(vd->fail->comm_id, hex)));
        json_object_set_new(f, "rank", json_integer(vd->fail->rank));
        json_object_set_new(f, "status", json_string(glucx_an_status_name(vd->fail->status)));
        json_object_set_new(f, "text", json_string(vd->fail->text));
        json_object_set_new(v, "failure", f);
    }
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
    int64_t busy = l->busy_ns;
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

/* "rank", "package", "switch" (EVENTS.md enum node), or "unknown" */
static const char *node_kind_name(int kind)
{
    static const char *const names[] = {"rank", "package", "switch"};
    return kind >= 0 && kind < 3 ? names[kind] : "unknown";
}

/* {"kind": .., "index": ..} of one endpoint of a physical link; null before its announcement */
static json_t *endpoint_json(int kind, int32_t index)
{
    if (kind < 0)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(node_kind_name(kind)));
    json_object_set_new(o, "index", json_integer(index));
    return o;
}

/* One direction @p d (0: a to b, 1: b to a) of physical link @p l for its row's `directions`
 * (METRICS.md, "Physical links"); @p dur is the analysed duration in ns. Returns a new object. */
static json_t *plink_dir_json(const plink_st_t *l, int d, double dur)
{
    const plink_dir_t *x = &l->dir[d];
    json_t *o = json_object();
    json_object_set_new(o, "from", endpoint_json(d ? l->b_kind : l->a_kind, d ? l->b : l->a));
    json_object_set_new(o, "to", endpoint_json(d ? l->a_kind : l->b_kind, d ? l->a : l->b));
    json_object_set_new(o, "bytes", json_integer((json_int_t)x->bytes));
    json_object_set_new(o, "messages", json_integer((json_int_t)x->messages));
    json_object_set_new(o, "busy_ns", json_integer(x->busy_ns));
    json_object_set_new(o, "achieved_Bps",
                        jreal(x->busy_ns > 0 ? (double)x->bytes / (double)x->busy_ns * 1e9 : NAN));
    json_object_set_new(o, "of_nominal", jreal(glucx_an_plink_dir_of_nominal(l, d)));
    json_object_set_new(o, "utilisation",
                        l->bw > 0 && dur > 0 ? jreal((double)x->bytes / (l->bw * dur / 1e9))
                                             : json_null());
    return o;
}

/* One physical link of report.json's physical_links (METRICS.md, "Physical links"); @p dur is
 * the analysed duration in ns. */
static json_t *plink_json(glucx_an_engine_t *e, const comm_st_t *c, const plink_st_t *l, double dur)
{
    char hex[24];
    json_t *o = json_object();
    int64_t busy = l->busy_ns;
    double ach = busy > 0 ? (double)l->bytes / (double)busy * 1e9 : NAN;
    /* utilisation: the larger of the directions' */
    double util = NAN;
    for (int d = 0; d < 2 && l->bw > 0 && dur > 0; d++) {
        double u = (double)l->dir[d].bytes / (l->bw * dur / 1e9);
        if (isnan(util) || u > util)
            util = u;
    }
    json_object_set_new(o, "phys_id", json_integer(l->id));
    json_object_set_new(o, "comm_id", json_string(glucx_an_comm_hex(c->id, hex)));
    json_object_set_new(o, "dim", json_integer(l->dim));
    json_object_set_new(o, "a", endpoint_json(l->a_kind, l->a));
    json_object_set_new(o, "b", endpoint_json(l->b_kind, l->b));
    json_object_set_new(o, "announced", json_boolean(l->announced));
    json_object_set_new(o, "bandwidth_Bps", l->announced ? jreal(l->bw) : json_null());
    json_object_set_new(o, "latency_ns", l->announced ? jreal(l->lat) : json_null());
    json_object_set_new(o, "bytes", json_integer((json_int_t)l->bytes));
    json_object_set_new(o, "messages", json_integer((json_int_t)l->messages));
    json_object_set_new(o, "busy_ns", json_integer(busy));
    json_object_set_new(o, "achieved_Bps", jreal(ach));
    json_object_set_new(o, "of_nominal", jreal(glucx_an_plink_of_nominal(l, NULL)));
    json_object_set_new(o, "utilisation", jreal(util));
    json_object_set_new(o, "busy_share", dur > 0 ? jreal((double)busy / dur) : json_null());
    json_object_set_new(o, "critical_path_ns", json_integer(l->cp_ns));
    json_object_set_new(o, "critical_path_share",
                        jreal(e->cp_sum > 0 ? (double)l->cp_ns / (double)e->cp_sum : 0.0));
    json_t *dirs = json_array();
    for (int d = 0; d < 2; d++)
        json_array_append_new(dirs, plink_dir_json(l, d, dur));
    json_object_set_new(o, "directions", dirs);
    return o;
}

/* "package 0 - switch 0" for report.txt and the verdict; "?" parts before the announcement */
void glucx_an_plink_ends(const plink_st_t *l, char *buf, size_t len)
{
    snprintf(buf, len, "%s %d - %s %d", node_kind_name(l->a_kind), (int)l->a,
             node_kind_name(l->b_kind), (int)l->b);
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
    wb_lit(w, ",\"algbw_Bps\":");
    wb_num(w, r->algbw_Bps);
    wb_lit(w, ",\"busbw_Bps\":");
    wb_num(w, r->busbw_Bps);
    wb_kstr(w, "status", r->status == 99 ? "INCOMPLETE" : glucx_an_status_name(r->status));
    wb_kstr(w, "source", r->gloo ? "gloo_slot" : "coll_events");
    wb_lit(w, "}");
}

static void dec_write(const glucx_an_engine_t *e, wbuf_t *w, const dec_view_t *d)
{
    char hex[24];
    wb_lit(w, "{\"comm_id\":\"");
    wb_str(w, glucx_an_comm_hex(d->h.comm_id, hex));
    wb_lit(w, "\"");
    wb_kint(w, "seq", d->h.seq);
    wb_kstr(w, "kind", glucx_an_decision_name(d->h.kind));
    wb_kstr(w, "coll", glucx_an_coll_name(d->h.coll));
    wb_kint(w, "bytes", (int64_t)d->h.bytes);
    char o1[32];
    const int algs = glucx_an_decision_algs(d->h.kind); /* options are algorithms */
    wb_kstr(w, "chosen", glucx_an_option_name(d->h.kind, d->h.chosen, o1, sizeof(o1)));
    wb_kstr(w, "reason", d->reason);
    wb_lit(w, ",\"alternatives\":[");
    for (uint32_t i = 0; i < d->h.nalt; i++) {
        wb_str(w, i ? ",{\"option\":\"" : "{\"option\":\"");
        wb_str(w, glucx_an_option_name(d->h.kind, d->ids[i], o1, sizeof(o1)));
        wb_lit(w, "\"");
        wb_kint(w, "predicted_ns", (int64_t)d->cost[i]);
        group_st_t *g =
            algs ? glucx_an_group_find(e, d->h.comm_id, d->h.coll, d->ids[i], d->h.bytes) : NULL;
        wb_kopt(w, "measured_mean_ns", g && g->count ? g->sum / (int64_t)g->count : 0,
                g && g->count);
        wb_lit(w, "}");
    }
    wb_lit(w, "]");
    wb_kopt(w, "predicted_ns", d->h.predicted, d->h.predicted >= 0);
    wb_kopt(w, "measured_ns", d->h.measured, d->h.measured >= 0);
    wb_lit(w, ",\"model_ratio\":");
    if (d->h.predicted > 0 && d->h.measured >= 0)
        wb_ratio(w, (double)d->h.measured / (double)d->h.predicted);
    else
        wb_lit(w, "null");
    wb_kstr(w, "best",
            d->h.best_idx >= 0
                ? glucx_an_option_name(d->h.kind, d->ids[d->h.best_idx], o1, sizeof(o1))
                : "none");
    wb_kopt(w, "best_predicted_ns", d->h.best_idx >= 0 ? (int64_t)d->cost[d->h.best_idx] : 0,
            d->h.best_idx >= 0);
    wb_kint(w, "saving_ns", d->h.saving);
    static const char *const src[] = {"none", "model", "measured"};
    wb_kstr(w, "saving_source", src[d->h.source]);
    wb_str(w, d->h.agree ? ",\"ranks_agree\":true}" : ",\"ranks_agree\":false}");
}

static int cmp_lateness(const void *a, const void *b)
{
    const rank_st_t *x = *(rank_st_t *const *)a, *y = *(rank_st_t *const *)b;
    return x->lateness < y->lateness ? 1 : x->lateness > y->lateness ? -1 : 0;
}

static void write_txt(glucx_an_engine_t *e, FILE *f, const char *source, uint32_t period);

/* The measured counterpart of kind @p k's predictions (METRICS.md, "Schedule decisions"):
 * algorithm kinds and priority: the mean time of the collectives decided; order and partition:
 * the exposed communication per rank and iteration. -1 when there is none. */
static double sched_measured(const glucx_an_engine_t *e, int k, int nranks)
{
    const glucx_an_sched_kind_t *s = &e->sched[k];
    if (glucx_an_decision_per_coll(k))
        return s->n_measured ? s->measured_sum / (double)s->n_measured : -1;
    if (e->iterations == 0 || nranks <= 0)
        return -1;
    return (double)(e->tot.comm - e->tot.overlap) / ((double)e->iterations * nranks);
}

static const char *sched_measured_what(int k)
{
    return glucx_an_decision_per_coll(k) ? "collective time"
                                         : "exposed communication per rank and iteration";
}

/* report.json's scheduling section: one entry per decision kind seen. */
static json_t *sched_json(const glucx_an_engine_t *e, int nranks)
{
    json_t *a = json_array();
    for (int k = 0; k < GLUCX_AN_DECISION_KINDS; k++) {
        const glucx_an_sched_kind_t *s = &e->sched[k];
        if (s->n == 0)
            continue;
        double meas = sched_measured(e, k, nranks), pred = s->predicted_sum / (double)s->n;
        json_t *o = json_object();
        json_object_set_new(o, "kind", json_string(glucx_an_decision_name(k)));
        json_object_set_new(o, "decisions", json_integer((json_int_t)s->n));
        json_object_set_new(o, "predicted_mean_ns", json_integer((json_int_t)llround(pred)));
        /* null for a kind without a best option (priority) */
        json_object_set_new(o, "best_predicted_mean_ns",
                            s->n_best
                                ? json_integer((json_int_t)llround(s->best_sum / (double)s->n))
                                : json_null());
        json_object_set_new(o, "measured_mean_ns",
                            meas >= 0 ? json_integer((json_int_t)llround(meas)) : json_null());
        json_object_set_new(o, "measured", json_string(sched_measured_what(k)));
        json_object_set_new(o, "model_ratio",
                            meas >= 0 && pred > 0 ? json_real(meas / pred) : json_null());
        json_object_set_new(o, "largest_saving_ns", json_integer(s->saving_max));
        json_object_set_new(o, "largest_saving",
                            s->saving_max > 0 ? json_string(s->subject) : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

/* A number, or null when it is not finite (a bound that does not exist). */
static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* report.json's clock section (METRICS.md, "Clocks"): null without a multi-host merge. */
static json_t *clock_json(const glucx_an_engine_t *e)
{
    const glucx_an_clock_t *cs = e->opt.clock;
    if (!cs)
        return json_null();
    glucx_an_clock_stats_t st = glucx_an_clock_stats(cs);
    json_t *o = json_object(), *hosts = json_array();
    json_object_set_new(o, "reference_host", json_integer(glucx_an_clock_ref(cs)));
    json_object_set_new(o, "t0_ns", json_integer(glucx_an_clock_t0(cs)));
    json_object_set_new(o, "min_latency_ns", json_integer(glucx_an_clock_min_latency(cs)));
    for (int h = 0; h < glucx_an_clock_nhosts(cs); h++) {
        const glucx_an_clock_host_t *ho = glucx_an_clock_host(cs, h);
        if (!ho)
            continue;
        json_t *x = json_object();
        json_object_set_new(x, "host", json_integer(h));
        json_object_set_new(x, "name", json_string(glucx_an_clock_name(cs, h)));
        json_object_set_new(x, "status", json_string(glucx_an_clock_status_name(ho->status)));
        json_object_set_new(x, "offset_ns", json_real(ho->offset_ns));
        json_object_set_new(x, "drift_ppm", json_real(ho->drift * 1e6));
        json_object_set_new(x, "offset_bound_ns", num_or_null(ho->offset_bound_ns));
        json_object_set_new(x, "drift_bound_ppm", num_or_null(ho->drift_bound * 1e6));
        json_object_set_new(x, "offset_min_ns", num_or_null(ho->offset_lo_ns));
        json_object_set_new(x, "offset_max_ns", num_or_null(ho->offset_hi_ns));
        json_object_set_new(x, "messages_from_reference", json_integer((json_int_t)ho->to_host));
        json_object_set_new(x, "messages_to_reference", json_integer((json_int_t)ho->from_host));
        json_object_set_new(x, "via_host", ho->via >= 0 ? json_integer(ho->via) : json_null());
        json_object_set_new(x, "note", json_string(ho->why));
        json_array_append_new(hosts, x);
    }
    json_object_set_new(o, "hosts", hosts);
    json_object_set_new(o, "messages", json_integer((json_int_t)st.messages));
    json_object_set_new(o, "cross_host_messages", json_integer((json_int_t)st.cross_host));
    json_object_set_new(o, "violations_before", json_integer((json_int_t)st.violations_before));
    json_object_set_new(o, "violations_after_offsets",
                        json_integer((json_int_t)st.violations_synced));
    json_object_set_new(o, "violations_after", json_integer((json_int_t)e->causality));
    json_object_set_new(o, "clc_moved_receives", json_integer((json_int_t)st.clc_moved));
    json_object_set_new(o, "clc_max_shift_ns", json_integer(st.clc_max_shift_ns));
    json_object_set_new(o, "clc_unresolved", json_boolean(st.clc_unresolved));
    return o;
}

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
    json_t *verdict = verdict_json(e);

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
    rc |= put(f, "clock", clock_json(e), 0);
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
    bd_json_fields(st, &e->tot);
    json_object_set_new(sum, "totals", st);
    rc |= put(f, "summary", sum, 0);
    rc |= put(f, "scheduling", sched_json(e, nranks), 0);

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
            bd_json_fields(o, &rs->tot);
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
    json_t *plinks = json_array();
    for (size_t i = 0; i < e->ncomms; i++)
        for (size_t k = 0; k < e->comms[i]->nplinks; k++)
            json_array_append_new(plinks, plink_json(e, e->comms[i], e->comms[i]->plinks[k], dur));
    rc |= put(f, "physical_links", plinks, 0);

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
        int got = glucx_an_dec_read(e->f_decs, &d);
        if (got < 0)
            rc = -1;
        if (got <= 0)
            break;
        ndecs++;
        if (e->list_limit < 0 || i < (uint64_t)e->list_limit) {
            if (i)
                wb_lit(w, ",");
            dec_write(e, w, &d);
        }
        glucx_an_dec_free(&d);
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

/* The clock correction of a multi-host merge: one line per host. */
static void txt_clock(const glucx_an_engine_t *e, FILE *f)
{
    const glucx_an_clock_t *cs = e->opt.clock;
    if (!cs)
        return;
    glucx_an_clock_stats_t st = glucx_an_clock_stats(cs);
    char b1[32], b2[32];
    fprintf(f,
            "clocks    reference host %d; causality violations %" PRIu64 " before, %" PRIu64
            " after offset and drift, %" PRIu64 " after the logical clock (%" PRIu64
            " receives moved, at most %s)\n",
            glucx_an_clock_ref(cs), st.violations_before, st.violations_synced, e->causality,
            st.clc_moved, glucx_an_fmt_ns((double)st.clc_max_shift_ns, b1, sizeof(b1)));
    for (int h = 0; h < glucx_an_clock_nhosts(cs); h++) {
        const glucx_an_clock_host_t *ho = glucx_an_clock_host(cs, h);
        if (!ho)
            continue;
        const char *path = glucx_an_clock_name(cs, h);
        if (ho->status == GLUCX_AN_CLOCK_REFERENCE) {
            fprintf(f, "          host %d reference    %s\n", h, path);
            continue;
        }
        fprintf(f, "          host %d %-12s offset %+.0f ns", h,
                glucx_an_clock_status_name(ho->status), ho->offset_ns);
        if (isfinite(ho->offset_bound_ns))
            fprintf(f, " +- %s", glucx_an_fmt_ns(ho->offset_bound_ns, b2, sizeof(b2)));
        fprintf(f, ", drift %+.3f ppm", ho->drift * 1e6);
        if (isfinite(ho->drift_bound))
            fprintf(f, " +- %.3f", ho->drift_bound * 1e6);
        else if (ho->status == GLUCX_AN_CLOCK_OFFSET_ONLY ||
                 ho->status == GLUCX_AN_CLOCK_CONSISTENT)
            fputs(" (not determined: taken as 0)", f);
        if (ho->status == GLUCX_AN_CLOCK_CONSISTENT)
            fputs(", not corrected: the raw clock satisfies every message", f);
        if (ho->via >= 0)
            fprintf(f, " (through host %d: %" PRIu64 " messages from it, %" PRIu64 " to it) %s\n",
                    ho->via, ho->to_host, ho->from_host, path);
        else
            fprintf(f, " (%" PRIu64 " messages from the reference, %" PRIu64 " to it) %s\n",
                    ho->to_host, ho->from_host, path);
    }
}

static void pct(FILE *f, int64_t x, int64_t of)
{
    fprintf(f, " %5.1f%%", of > 0 ? 100.0 * (double)x / (double)of : 0.0);
}

static int plink_cmp(const void *x, const void *y)
{
    const plink_st_t *a = *(const plink_st_t *const *)x, *b = *(const plink_st_t *const *)y;
    if (a->cp_ns != b->cp_ns)
        return a->cp_ns > b->cp_ns ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* report.txt's physical links, most critical-path time first (then by id) per communicator:
 * one row per link (bytes, busy time and achieved rate of both directions together; "of nom.":
 * the larger of its directions'), then one row per direction that carried bytes */
static void txt_plinks(const glucx_an_engine_t *e, FILE *f)
{
    char b1[32], ends[96];
    fprintf(f, "\nphysical links (by critical-path time)\n%-6s %4s %-24s %12s %12s %14s %8s %12s\n",
            "link", "dim", "endpoints", "bytes", "busy", "achieved", "of nom.", "crit. path");
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        plink_st_t **v = c->nplinks ? malloc(c->nplinks * sizeof(*v)) : NULL;
        if (!v)
            continue; /* none, or out of memory: the table stays short (report.json has them) */
        memcpy(v, c->plinks, c->nplinks * sizeof(*v));
        qsort(v, c->nplinks, sizeof(*v), plink_cmp);
        for (size_t k = 0; k < c->nplinks; k++) {
            const plink_st_t *l = v[k];
            int64_t busy = l->busy_ns;
            double ach = busy > 0 ? (double)l->bytes / (double)busy * 1e9 : 0;
            glucx_an_plink_ends(l, ends, sizeof(ends));
            fprintf(f, "%-6d %4d %-24s %12" PRIu64 " %12s %9.3f GB/s", (int)l->id, (int)l->dim,
                    ends, l->bytes, glucx_an_fmt_ns((double)busy, b1, sizeof(b1)), ach / 1e9);
            double of = glucx_an_plink_of_nominal(l, NULL);
            if (!isnan(of))
                fprintf(f, " %7.1f%%", 100 * of);
            else
                fprintf(f, " %8s", "-");
            fprintf(f, " %12s\n", glucx_an_fmt_ns((double)l->cp_ns, b1, sizeof(b1)));
            for (int d = 0; d < 2; d++) {
                const plink_dir_t *x = &l->dir[d];
                if (!x->bytes)
                    continue;
                char way[96];
                snprintf(way, sizeof(way), "%s %d -> %s %d",
                         node_kind_name(d ? l->b_kind : l->a_kind), (int)(d ? l->b : l->a),
                         node_kind_name(d ? l->a_kind : l->b_kind), (int)(d ? l->a : l->b));
                double xa = x->busy_ns > 0 ? (double)x->bytes / (double)x->busy_ns * 1e9 : 0;
                fprintf(f, "%-11s %-24s %12" PRIu64 " %12s %9.3f GB/s", "", way, x->bytes,
                        glucx_an_fmt_ns((double)x->busy_ns, b1, sizeof(b1)), xa / 1e9);
                double xo = glucx_an_plink_dir_of_nominal(l, d);
                if (!isnan(xo))
                    fprintf(f, " %7.1f%%\n", 100 * xo);
                else
                    fprintf(f, " %8s\n", "-");
            }
        }
        free(v);
    }
}

static void write_txt(glucx_an_engine_t *e, FILE *f, const char *source, uint32_t period)
{
    char b1[32], b2[32], b3[32], hex[24];
    fprintf(f, "%s\n\n", e->verdict);
    fprintf(f, "trace     %" PRIu64 " glucx events, %s", e->events,
            glucx_an_fmt_ns((double)(e->t_last - e->t_first), b1, sizeof(b1)));
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
    txt_clock(e, f);
    fprintf(f, "iterations %" PRIu64 " (%s", e->iterations, source);
    if (period)
        fprintf(f, ", %u collectives each", period);
    fprintf(f, "), mean %s, mean critical path %s\n\n",
            glucx_an_fmt_ns(e->iterations ? (double)e->iter_time_sum / (double)e->iterations : 0,
                            b1, sizeof(b1)),
            glucx_an_fmt_ns(e->iterations ? (double)e->cp_sum / (double)e->iterations : 0, b2,
                            sizeof(b2)));
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
                    glucx_an_fmt_ns((double)b->compute, b1, sizeof(b1)));
            pct(f, b->compute, b->duration);
            fprintf(f, " %9s", glucx_an_fmt_ns((double)b->comm, b1, sizeof(b1)));
            pct(f, b->comm, b->duration);
            fprintf(f, " %9s", glucx_an_fmt_ns((double)(b->comm - b->overlap), b1, sizeof(b1)));
            pct(f, b->comm - b->overlap, b->duration);
            fprintf(f, " %9.1f%%", b->comm ? 100.0 * (double)b->overlap / (double)b->comm : 0.0);
            fprintf(f, " %9s", glucx_an_fmt_ns((double)b->late_sender, b1, sizeof(b1)));
            pct(f, b->late_sender, b->duration);
            fprintf(f, " %9s", glucx_an_fmt_ns((double)b->late_receiver, b1, sizeof(b1)));
            pct(f, b->late_receiver, b->duration);
            fprintf(f, " %9s", glucx_an_fmt_ns((double)b->idle, b1, sizeof(b1)));
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
            int64_t busy = l->busy_ns;
            double ach = busy > 0 ? (double)l->bytes / (double)busy * 1e9 : 0;
            char name[24];
            snprintf(name, sizeof(name), "%d->%d", l->src, l->dst);
            fprintf(f, "%-8s %4d %-10s %12" PRIu64 " %12s %9.3f GB/s", name, l->dim,
                    l->transport && *l->transport ? l->transport : "-", l->bytes,
                    glucx_an_fmt_ns((double)busy, b1, sizeof(b1)), ach / 1e9);
            if (l->bw > 0 && ach > 0)
                fprintf(f, " %7.1f%%", 100 * ach / l->bw);
            else
                fprintf(f, " %8s", "-");
            fprintf(f, " %12s\n", glucx_an_fmt_ns((double)l->cp_ns, b1, sizeof(b1)));
        }
    }
    txt_plinks(e, f);
    fprintf(f, "\ncollectives\n%-16s %-22s %12s %8s %12s %12s %12s\n", "coll", "algorithm", "bytes",
            "count", "mean time", "min", "busbw GB/s");
    for (size_t i = 0; i < e->groups.cap; i++) {
        group_st_t *g = e->groups.slots[i].val;
        if (!g)
            continue;
        fprintf(f, "%-16s %-22s %12" PRIu64 " %8" PRIu64 " %12s %12s %12.3f\n", g->coll, g->alg,
                g->bytes, g->count,
                glucx_an_fmt_ns(g->count ? (double)g->sum / (double)g->count : 0, b1, sizeof(b1)),
                glucx_an_fmt_ns((double)(g->count ? g->min : 0), b2, sizeof(b2)),
                g->busbw_n ? g->busbw_sum / (double)g->busbw_n / 1e9 : 0.0);
    }
    int nranks = 0;
    for (size_t i = 0; i < e->ncomms; i++)
        nranks += e->comms[i]->nseen;
    for (int k = 0, head = 0; k < GLUCX_AN_DECISION_KINDS; k++) {
        const glucx_an_sched_kind_t *s = &e->sched[k];
        if (s->n == 0)
            continue;
        if (!head++)
            fprintf(f,
                    "\nscheduling (schedule decisions per kind, means; predicted: the chosen "
                    "option)\n%-10s %10s %12s %14s %12s %7s  %s\n",
                    "kind", "decisions", "predicted", "best option", "measured", "ratio",
                    "(measured is)");
        double meas = sched_measured(e, k, nranks), pred = s->predicted_sum / (double)s->n;
        char ratio[16] = "-";
        if (meas >= 0 && pred > 0)
            snprintf(ratio, sizeof(ratio), "%.2f", meas / pred);
        fprintf(f, "%-10s %10" PRIu64 " %12s %14s %12s %7s  %s\n", glucx_an_decision_name(k), s->n,
                glucx_an_fmt_ns(pred, b1, sizeof(b1)),
                s->n_best ? glucx_an_fmt_ns(s->best_sum / (double)s->n, b2, sizeof(b2)) : "-",
                meas >= 0 ? glucx_an_fmt_ns(meas, b3, sizeof(b3)) : "-", ratio,
                sched_measured_what(k));
        if (s->saving_max > 0)
            fprintf(f, "           largest: %s\n", s->subject);
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
            fprintf(
                f,
                "  rank %d: last in %" PRIu64 " of %" PRIu64 " collectives, holding the others "
                "back %s in total (%s each), others waited %s\n",
                r, rs->times_last, rs->colls, glucx_an_fmt_ns((double)rs->lateness, b1, sizeof(b1)),
                glucx_an_fmt_ns(rs->times_last ? (double)rs->lateness / (double)rs->times_last : 0,
                                b2, sizeof(b2)),
                glucx_an_fmt_ns((double)rs->others_wait, b3, sizeof(b3)));
        }
    }
    if (!any)
        fprintf(f, "  none\n");
    fprintf(f, "\ndetails: report.json (schema analysis/report.schema.json)%s\n",
            e->opt.timeline ? ", timeline.json (open in ui.perfetto.dev)" : "");
}

/* ---- report.html and diff.html ------------------------------------------------------------ */

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

int glucx_an_fill_template(const char *dir, const char *json_name, const char *html_name,
                           const char *template_path, char *err, size_t errlen)
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
    snprintf(in, sizeof(in), "%s/%s", dir, json_name);
    snprintf(out, sizeof(out), "%s/%s", dir, html_name);
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, html_name);
    FILE *j = fopen(in, "rb");
    FILE *o = j ? fopen(tmp, "wb") : NULL;
    if (!j || !o) {
        snprintf(err, errlen, "cannot %s %s: %s", j ? "create" : "read", j ? tmp : in,
                 strerror(errno));
        if (j)
            fclose(j);
        free(t);
        return -2;
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
        return -2;
    }
    return 0;
}

int glucx_an_write_html(const char *dir, const char *template_path, char *err, size_t errlen)
{
    return glucx_an_fill_template(dir, "report.json", "report.html", template_path, err, errlen);
}
