/*
 * timeline.json: Chrome / Perfetto trace events, written as the analyzers see each span end.
 * A process per rank (tracks: iterations, compute, collectives, waits, one per peer and
 * direction) and per communicator's links, flow arrows from a send to its receive.
 * Names from the trace (phases, communicators) are written JSON-escaped, in full (names.c);
 * every other string written here is a fixed label.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "wbuf.h"

/* tids inside a rank's process */
enum { TID_ITER = 1, TID_COMPUTE = 2, TID_COLL = 3, TID_WAIT = 4, TID_P2P = 100 };

static void tl_raw(glucx_an_engine_t *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void tl_sep(glucx_an_engine_t *e)
{
    if (e->n_tl++)
        wb_lit(e->w_tl, ",\n");
}

static void tl_raw(glucx_an_engine_t *e, const char *fmt, ...)
{
    if (!e->f_tl)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    tl_sep(e);
    wb_mem(e->w_tl, buf, n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static int tl_pid(glucx_an_engine_t *e, const comm_st_t *c, int rank)
{
    return (int)(glucx_an_comm_index(e, c) << 16) + rank + 1;
}

static void tl_peer_meta(glucx_an_engine_t *e, comm_st_t *c, int r, int peer, int send)
{
    rank_st_t *rs = &c->ranks[r];
    int bit = peer * 2 + (send ? 0 : 1);
    if (!e->f_tl || (bit < 64 && (rs->tl_tracks >> bit) & 1))
        return;
    if (bit < 64)
        rs->tl_tracks |= UINT64_C(1) << bit;
    tl_raw(e,
           "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s "
           "%d\"}}",
           tl_pid(e, c, r), TID_P2P + bit, send ? "send to" : "recv from", peer);
}

/* A complete slice named @p name (JSON-escaped already), followed by " <id>" when @p has_id. */
static void tl_x(glucx_an_engine_t *e, int pid, int tid, const char *name, int has_id, uint64_t id,
                 int64_t a, int64_t b, const char *args)
{
    if (!e->f_tl)
        return;
    wbuf_t *w = e->w_tl;
    tl_sep(e);
    /* no "cat" key: the name says it, and the key costs ~15% of the file */
    wb_lit(w, "{\"ph\":\"X\",\"name\":\"");
    wb_str(w, name);
    if (has_id) {
        wb_lit(w, " ");
        wb_u64(w, id);
    }
    wb_lit(w, "\",\"pid\":");
    wb_i64(w, pid);
    wb_lit(w, ",\"tid\":");
    wb_i64(w, tid);
    wb_lit(w, ",\"ts\":");
    wb_us(w, a - e->t_first);
    wb_lit(w, ",\"dur\":");
    wb_us(w, b > a ? b - a : 0);
    if (args) {
        wb_lit(w, ",\"args\":");
        wb_str(w, args);
    }
    wb_lit(w, "}");
}

/* A process_name record of @p pid: "<before><communicator name><after>" (@p before and @p after
 * fixed text). */
static void tl_process_name(glucx_an_engine_t *e, int pid, const char *before, const comm_st_t *c,
                            const char *after)
{
    const glucx_an_name_t *n = glucx_an_name_intern(e, c->name ? c->name : "?");
    wbuf_t *w = e->w_tl;
    tl_sep(e);
    wb_lit(w, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    wb_i64(w, pid);
    wb_lit(w, ",\"args\":{\"name\":\"");
    wb_str(w, before);
    wb_str(w, n ? n->json : "?"); /* out of memory: the engine's error is set */
    wb_str(w, after);
    wb_lit(w, "\"}}");
}

static void tl_flow(glucx_an_engine_t *e, int start, uint64_t id, int pid, int tid, int64_t ts)
{
    wbuf_t *w = e->w_tl;
    tl_sep(e);
    wb_str(w, start ? "{\"ph\":\"s\",\"cat\":\"msg\",\"name\":\"message\",\"id\":"
                    : "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"msg\",\"name\":\"message\",\"id\":");
    wb_u64(w, id);
    wb_lit(w, ",\"pid\":");
    wb_i64(w, pid);
    wb_lit(w, ",\"tid\":");
    wb_i64(w, tid);
    wb_lit(w, ",\"ts\":");
    wb_us(w, ts - e->t_first);
    wb_lit(w, "}");
}

void glucx_an_tl_begin(glucx_an_engine_t *e)
{
    if (e->f_tl)
        wb_lit(e->w_tl, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
}

void glucx_an_tl_rank(glucx_an_engine_t *e, comm_st_t *c, int r)
{
    rank_st_t *rs = &c->ranks[r];
    if (!e->f_tl || rs->tl_meta)
        return;
    rs->tl_meta = 1;
    int pid = tl_pid(e, c, r);
    char before[32];
    snprintf(before, sizeof(before), "rank %d (", r);
    tl_process_name(e, pid, before, c, ")");
    tl_raw(e,
           "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
           pid, pid);
    static const char *const names[] = {NULL, "iterations", "compute", "collectives", "waits"};
    for (int t = 1; t <= 4; t++)
        tl_raw(e,
               "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%"
               "s\"}}",
               pid, t, names[t]);
}

void glucx_an_tl_iteration(glucx_an_engine_t *e, comm_st_t *c, int r, uint64_t index, int64_t a,
                           int64_t b)
{
    if (!e->f_tl)
        return;
    tl_x(e, tl_pid(e, c, r), TID_ITER, "iteration", 1, index, a, b, NULL);
}

void glucx_an_tl_collective(glucx_an_engine_t *e, comm_st_t *c, int r, const coll_st_t *co)
{
    if (!e->f_tl)
        return;
    char name[96], args[128];
    snprintf(name, sizeof(name), "%s (%s)", glucx_an_coll_name(co->coll),
             glucx_an_alg_name(co->alg));
    snprintf(args, sizeof(args), "{\"seq\":%" PRIu32 ",\"bytes\":%" PRIu64 "}", co->seq, co->bytes);
    tl_x(e, tl_pid(e, c, r), TID_COLL, name, 0, 0, co->b[r], co->e[r], args);
}

void glucx_an_tl_wait(glucx_an_engine_t *e, comm_st_t *c, int r, int64_t a, int64_t b)
{
    tl_x(e, tl_pid(e, c, r), TID_WAIT, "wait", 0, 0, a, b, NULL);
}

void glucx_an_tl_phase(glucx_an_engine_t *e, comm_st_t *c, int r, const open_ent_t *o, int64_t b)
{
    if (!e->f_tl)
        return;
    const char *name = o->phase && o->phase->len ? o->phase->json : "compute";
    tl_x(e, tl_pid(e, c, r), o->is_comm ? TID_COLL : TID_COMPUTE, name, 1, o->id, o->ts, b, NULL);
}

void glucx_an_tl_message(glucx_an_engine_t *e, comm_st_t *c, const msg_st_t *m, link_st_t *l,
                         int64_t a)
{
    if (!e->f_tl)
        return;
    char args[160];
    snprintf(args, sizeof(args), "{\"bytes\":%" PRIu64 ",\"seq\":%" PRIu32 ",\"step\":%" PRIu32 "}",
             m->bytes, m->seq, m->step);
    tl_peer_meta(e, c, m->src, m->dst, 1);
    tl_peer_meta(e, c, m->dst, m->src, 0);
    int ps = tl_pid(e, c, m->src), pd = tl_pid(e, c, m->dst);
    int ts_ = TID_P2P + m->dst * 2, td = TID_P2P + m->src * 2 + 1;
    tl_x(e, ps, ts_, "send", 0, 0, m->sb, m->se > m->sb ? m->se : m->re, args);
    tl_x(e, pd, td, "recv", 0, 0, m->rb < m->re ? m->rb : m->re, m->re, args);
    int lp = 1000000 + (int)glucx_an_comm_index(e, c);
    int lt = m->src * 4096 + m->dst;
    if (!l->tl_meta) {
        l->tl_meta = 1;
        tl_process_name(e, lp, "links (", c, ")");
        tl_raw(e,
               "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{"
               "\"name\":\"link %d->%d\"}}",
               lp, lt, m->src, m->dst);
    }
    tl_x(e, lp, lt, "transfer", 0, 0, a, m->re, args);
    uint64_t fid = e->n_tl;
    tl_flow(e, 1, fid, ps, ts_, m->sb);
    tl_flow(e, 0, fid, pd, td, m->re);
}

int glucx_an_tl_finish(glucx_an_engine_t *e)
{
    if (!e->f_tl)
        return 0;
    wb_lit(e->w_tl, "\n],\"otherData\":{\"generator\":\"glucx-analyze\",\"t0_ns\":");
    wb_i64(e->w_tl, e->t_first);
    wb_lit(e->w_tl, "}}\n");
    wb_flush(e->w_tl);
    if (e->w_tl->err || fflush(e->f_tl) != 0) {
        snprintf(e->err, sizeof(e->err), "cannot write %s: %s", e->p_tl, strerror(errno));
        return -1;
    }
    return 0;
}
