/*
 * The streaming analysis: per-rank state machines (compute / communication / wait), iteration
 * windows, send-receive matching, collectives, decisions, links, critical path. What each
 * number means is defined in analysis/METRICS.md; the comments here say how it is computed.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "engine_impl.h"
#include "wbuf.h"

#define MAX_WARNINGS 64
#define MAX_SEGMENTS 100000
#define MAX_BUFFERED_EVENTS 2000000
#define LINK_OPEN_INTERVALS 256

static void *xrealloc_arr(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(p, ncap * elem);
    if (!np)
        return NULL;
    *cap = ncap;
    return np;
}
#define GROW(arr, cap, need)                                                                       \
    ((arr) = xrealloc_arr((arr), &(cap), (need), sizeof(*(arr))), (arr) != NULL)

static int oom(glucx_an_engine_t *e, const char *what)
{
    snprintf(e->err, sizeof(e->err), "out of memory: %s (events read: %" PRIu64 ")", what,
             e->events);
    return -1;
}

int glucx_an_strlist_add(strlist_t *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return 0;
    if (!GROW(l->v, l->cap, l->n + 1))
        return -1;
    l->v[l->n] = strdup(s);
    if (!l->v[l->n])
        return -1;
    l->n++;
    return 0;
}

static void strlist_free(strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

const char *glucx_an_comm_hex(uint64_t id, char *buf)
{
    snprintf(buf, 20, "0x%" PRIx64, id);
    return buf;
}

void glucx_an_engine_partial(glucx_an_engine_t *e, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    glucx_an_strlist_add(&e->partial, buf);
}

void glucx_an_engine_warn(glucx_an_engine_t *e, const char *fmt, ...)
{
    if (e->warnings.n >= MAX_WARNINGS)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (e->warnings.n == MAX_WARNINGS - 1)
        snprintf(buf, sizeof(buf), "further warnings omitted");
    glucx_an_strlist_add(&e->warnings, buf);
}

/* ---- timeline (Chrome / Perfetto trace-event JSON) ----------------------------------------- */

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

static size_t comm_index(glucx_an_engine_t *e, const comm_st_t *c)
{
    for (size_t i = 0; i < e->ncomms; i++)
        if (e->comms[i] == c)
            return i;
    return 0;
}

static int tl_pid(glucx_an_engine_t *e, const comm_st_t *c, int rank)
{
    return (int)(comm_index(e, c) << 16) + rank + 1;
}

/* tids inside a rank's process */
enum { TID_ITER = 1, TID_COMPUTE = 2, TID_COLL = 3, TID_WAIT = 4, TID_P2P = 100 };

/* compute_begin/end phases with this prefix are framework-level communication (METRICS.md) */
#define COMM_PHASE_PREFIX "comm:"

static void tl_rank_meta(glucx_an_engine_t *e, comm_st_t *c, int r)
{
    rank_st_t *rs = &c->ranks[r];
    if (!e->f_tl || rs->tl_meta)
        return;
    rs->tl_meta = 1;
    int pid = tl_pid(e, c, r);
    tl_raw(
        e,
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d (%s)\"}}",
        pid, r, c->name ? c->name : "?");
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

static void tl_x(glucx_an_engine_t *e, int pid, int tid, const char *cat, const char *name,
                 int64_t a, int64_t b, const char *args)
{
    if (!e->f_tl)
        return;
    wbuf_t *w = e->w_tl;
    tl_sep(e);
    (void)cat; /* the name says it; the optional "cat" key costs ~15% of the file */
    wb_lit(w, "{\"ph\":\"X\",\"name\":\"");
    wb_str(w, name);
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

/* ---- communicators and ranks --------------------------------------------------------------- */

static comm_st_t *get_comm(glucx_an_engine_t *e, uint64_t id)
{
    glucx_an_key_t k = glucx_an_key(id, 0, 0);
    comm_st_t *c = glucx_an_map_get(&e->comm_by_id, &k);
    if (c)
        return c;
    c = calloc(1, sizeof(*c));
    if (!c || !GROW(e->comms, e->capcomms, e->ncomms + 1) ||
        glucx_an_map_put(&e->comm_by_id, &k, c) != 0) {
        free(c);
        return NULL;
    }
    c->id = id;
    c->ref_rank = -1;
    e->comms[e->ncomms++] = c;
    return c;
}

static rank_st_t *get_rank(glucx_an_engine_t *e, comm_st_t *c, int r, int64_t ts)
{
    if (r < 0 || r >= (1 << 20))
        return NULL;
    if (r >= c->nalloc) {
        int n = c->nalloc ? c->nalloc : 4;
        while (n <= r)
            n *= 2;
        rank_st_t *nr = realloc(c->ranks, (size_t)n * sizeof(*nr));
        if (!nr)
            return NULL;
        memset(nr + c->nalloc, 0, (size_t)(n - c->nalloc) * sizeof(*nr));
        for (int i = c->nalloc; i < n; i++)
            nr[i].vpid = -1;
        c->ranks = nr;
        c->nalloc = n;
    }
    rank_st_t *rs = &c->ranks[r];
    if (!rs->seen) {
        rs->seen = 1;
        rs->first_ts = rs->last_ts = ts;
        c->nseen++;
        tl_rank_meta(e, c, r);
    }
    return rs;
}

static int comm_nranks(const comm_st_t *c)
{
    int n = c->size;
    for (int r = c->size; r < c->nalloc; r++)
        if (c->ranks[r].seen)
            n = r + 1;
    return n;
}

/* ---- iterations ---------------------------------------------------------------------------- */

static riter_t *rit(iter_t *it, int r)
{
    if (r >= it->nr) {
        int n = it->nr ? it->nr : 4;
        while (n <= r)
            n *= 2;
        riter_t *nr = realloc(it->r, (size_t)n * sizeof(*nr));
        if (!nr)
            return NULL;
        memset(nr + it->nr, 0, (size_t)(n - it->nr) * sizeof(*nr));
        it->r = nr;
        it->nr = n;
    }
    return &it->r[r];
}

static iter_t *iter_get(comm_st_t *c, uint64_t index)
{
    iter_t **pp = &c->iters;
    for (; *pp && (*pp)->index < index; pp = &(*pp)->next)
        ;
    if (*pp && (*pp)->index == index)
        return *pp;
    iter_t *it = calloc(1, sizeof(*it));
    if (!it)
        return NULL;
    it->index = index;
    it->next = *pp;
    *pp = it;
    c->nopen_iters++;
    return it;
}

static int state_bits(const rank_st_t *rs)
{
    return (rs->n_compute > 0 ? ST_COMPUTE : 0) | (rs->n_comm > 0 ? ST_COMM : 0) |
           (rs->n_wait > 0 ? ST_WAIT : 0);
}

static riter_t *cur_riter(rank_st_t *rs, int r)
{
    return rs->cur_iter ? rit(rs->cur_iter, r) : NULL;
}

/* Account the time since the rank's last event to its state (METRICS.md, "per-rank time"). */
static void advance(glucx_an_engine_t *e, rank_st_t *rs, int r, int64_t ts)
{
    if (ts < rs->last_ts) {
        e->out_of_order++;
        return;
    }
    riter_t *ri = cur_riter(rs, r);
    if (ri) {
        int64_t dt = ts - rs->last_ts;
        int b = state_bits(rs);
        if (b & ST_COMPUTE)
            ri->compute += dt;
        if (b & ST_COMM)
            ri->comm += dt;
        if ((b & ST_COMPUTE) && (b & ST_COMM))
            ri->overlap += dt;
        if (b & ST_WAIT)
            ri->wait += dt;
        if (b)
            ri->busy += dt;
    }
    rs->last_ts = ts;
}

static int log_state(riter_t *ri, int64_t ts, int bits)
{
    if (ri->nlog && ri->log[ri->nlog - 1].bits == bits)
        return 0;
    if (ri->nlog && ri->log[ri->nlog - 1].ts == ts) {
        ri->log[ri->nlog - 1].bits = bits;
        return 0;
    }
    if (!GROW(ri->log, ri->caplog, ri->nlog + 1))
        return -1;
    ri->log[ri->nlog].ts = ts;
    ri->log[ri->nlog].bits = bits;
    ri->nlog++;
    return 0;
}

static void change_state(glucx_an_engine_t *e, rank_st_t *rs, int r, int64_t ts, int dc, int dm,
                         int dw)
{
    advance(e, rs, r, ts);
    int *cnt[3] = {&rs->n_compute, &rs->n_comm, &rs->n_wait};
    int d[3] = {dc, dm, dw};
    for (int i = 0; i < 3; i++) {
        *cnt[i] += d[i];
        if (*cnt[i] < 0) {
            *cnt[i] = 0;
            e->unpaired++;
        }
    }
    riter_t *ri = cur_riter(rs, r);
    if (ri)
        log_state(ri, rs->last_ts, state_bits(rs));
}

static int finalize_iter(glucx_an_engine_t *e, comm_st_t *c, iter_t *it, int forced);

static int try_finalize(glucx_an_engine_t *e, comm_st_t *c)
{
    unsigned maxopen = e->opt.max_open_iterations ? e->opt.max_open_iterations : 16;
    while (c->iters) {
        iter_t *it = c->iters;
        int nr = comm_nranks(c), ready = 1;
        for (int r = 0; r < nr && ready; r++) {
            if (r < c->nalloc && !c->ranks[r].seen)
                continue; /* a missing rank is not waited for */
            if (r >= it->nr || !it->r[r].begun || !it->r[r].ended)
                ready = 0;
        }
        if (!ready && (unsigned)c->nopen_iters <= maxopen)
            break;
        if (!ready)
            glucx_an_engine_partial(e,
                                    "iteration %" PRIu64 " of comm 0x%" PRIx64
                                    " closed before every rank ended it (too many open "
                                    "iterations: a rank stopped emitting iteration events)",
                                    it->index, c->id);
        if (finalize_iter(e, c, it, !ready) != 0)
            return -1;
    }
    return 0;
}

static int rank_iter_end(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, int r, int64_t ts)
{
    advance(e, rs, r, ts);
    iter_t *it = rs->cur_iter;
    if (!it)
        return 0;
    riter_t *ri = rit(it, r);
    if (!ri)
        return oom(e, "iteration ranks");
    ri->ended = 1;
    ri->end = rs->last_ts;
    rs->cur_iter = NULL;
    char name[48];
    snprintf(name, sizeof(name), "iteration %" PRIu64, it->index);
    tl_x(e, tl_pid(e, c, r), TID_ITER, "iteration", name, ri->start, ri->end, NULL);
    return try_finalize(e, c);
}

static int rank_iter_begin(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, int r, uint64_t index,
                           int64_t ts)
{
    if (rs->cur_iter && rank_iter_end(e, c, rs, r, ts) != 0)
        return -1;
    advance(e, rs, r, ts);
    iter_t *it = iter_get(c, index);
    riter_t *ri = it ? rit(it, r) : NULL;
    if (!ri)
        return oom(e, "iterations");
    if (ri->begun) {
        glucx_an_engine_warn(e,
                             "comm 0x%" PRIx64 " rank %d: iteration %" PRIu64
                             " begins twice; the second begin is ignored",
                             c->id, r, index);
        return 0;
    }
    ri->begun = 1;
    ri->start = rs->last_ts;
    rs->cur_iter = it;
    return log_state(ri, ri->start, state_bits(rs)) == 0 ? 0 : oom(e, "state log");
}

/* A collective starts on rank r: in inferred modes every period-th start opens an iteration. */
static int rank_coll_start(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, int r, int64_t ts)
{
    if (c->mode != MODE_INFERRED && c->mode != MODE_PER_COLL)
        return 0;
    uint32_t p = c->mode == MODE_PER_COLL ? 1 : c->period;
    uint64_t k = rs->cstarts++;
    uint32_t o = c->mode == MODE_PER_COLL ? 0 : c->offset;
    if (k < o)
        return 0; /* set-up collectives before the repeating sequence */
    k -= o;
    if (k % p == 0)
        return rank_iter_begin(e, c, rs, r, k / p, ts);
    return 0;
}

/* ---- links --------------------------------------------------------------------------------- */

static link_st_t *get_link(glucx_an_engine_t *e, comm_st_t *c, int32_t src, int32_t dst)
{
    glucx_an_key_t k = glucx_an_key(c->id, (uint64_t)(uint32_t)src, (uint64_t)(uint32_t)dst);
    link_st_t *l = glucx_an_map_get(&e->links, &k);
    if (l)
        return l;
    l = calloc(1, sizeof(*l));
    if (!l || !GROW(c->links, c->caplinks, c->nlinks + 1) ||
        glucx_an_map_put(&e->links, &k, l) != 0) {
        free(l);
        return NULL;
    }
    l->comm_id = c->id;
    l->src = src;
    l->dst = dst;
    l->dim = -1;
    l->committed_until = INT64_MIN;
    c->links[c->nlinks++] = l;
    return l;
}

/* Busy time: union of in-flight intervals. Intervals older than the open window are committed
 * (summed and dropped) so memory stays bounded; see METRICS.md. */
static int link_busy(link_st_t *l, int64_t a, int64_t b)
{
    if (a < l->committed_until)
        a = l->committed_until;
    if (b <= a)
        return 0;
    if (glucx_an_ivl_add(&l->busy, a, b) != 0)
        return -1;
    if (l->busy.n > LINK_OPEN_INTERVALS) {
        size_t half = l->busy.n / 2;
        for (size_t i = 0; i < half; i++)
            l->busy_committed += l->busy.v[2 * i + 1] - l->busy.v[2 * i];
        l->committed_until = l->busy.v[2 * (half - 1) + 1];
        memmove(l->busy.v, l->busy.v + 2 * half, (l->busy.n - half) * 2 * sizeof(int64_t));
        l->busy.n -= half;
    }
    return 0;
}

/* ---- collectives --------------------------------------------------------------------------- */

double glucx_an_busbw_factor(int coll, int n)
{
    switch (coll) {
    case 0:
        return 2.0 * (n - 1) / n; /* allreduce */
    case 1:
    case 2:
    case 3:
    case 4:
    case 5: /* allgather(v), reduce_scatter, alltoall(v) */
    case 8:
    case 9:
        return (double)(n - 1) / n; /* gather, scatter */
    case 6:
    case 7:
        return 1.0; /* broadcast, reduce */
    default:
        return NAN;
    }
}

/* The groups' busbw counts a collective on no ranks or an unknown one as 0. */
static double busbw_factor(int coll, int n)
{
    double f = n > 0 ? glucx_an_busbw_factor(coll, n) : 0;
    return isnan(f) ? 0 : f;
}

static int flush_coll(glucx_an_engine_t *e, coll_st_t *co, int n);
static void free_coll(coll_st_t *co);

static coll_st_t *get_coll(glucx_an_engine_t *e, comm_st_t *c, uint32_t seq, int gloo,
                           unsigned prefix, int64_t ts)
{
    glucx_an_key_t k = glucx_an_key(c->id, seq, gloo ? 1 + (uint64_t)prefix : 0);
    coll_st_t *co = glucx_an_map_get(&e->colls, &k);
    if (co)
        return co;
    int n = comm_nranks(c);
    if (n < 1)
        n = 1;
    co = calloc(1, sizeof(*co));
    if (!co)
        return NULL;
    co->b = malloc((size_t)n * sizeof(int64_t));
    co->e = malloc((size_t)n * sizeof(int64_t));
    co->sent = calloc((size_t)n, sizeof(uint64_t));
    if (!co->b || !co->e || !co->sent || glucx_an_map_put(&e->colls, &k, co) != 0) {
        free(co->b);
        free(co->e);
        free(co->sent);
        free(co);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        co->b[i] = co->e[i] = -1;
    co->c = c;
    co->width = n;
    co->seq = seq;
    co->gloo = gloo;
    co->prefix = prefix;
    co->coll = gloo ? -1 : 0;
    co->alg = -1;
    co->root = -1;
    co->status = 1;
    co->first_ts = ts;
    co->iteration = -1;
    if (gloo) {
        /* Gloo collectives have no end event: the oldest open one is written out once 256
         * newer ones exist (Gloo keeps only a few slots in flight), which bounds memory */
        if (e->ncoll_open_gloo == GLOO_OPEN_MAX) {
            coll_st_t *old = e->gloo_fifo[e->gloo_head];
            e->gloo_head = (e->gloo_head + 1) % GLOO_OPEN_MAX;
            e->ncoll_open_gloo--;
            glucx_an_key_t ok = glucx_an_key(old->c->id, old->seq, 1 + (uint64_t)old->prefix);
            glucx_an_map_del(&e->colls, &ok);
            int rc = flush_coll(e, old, old->width);
            free_coll(old);
            if (rc != 0)
                return NULL;
        }
        e->gloo_fifo[(e->gloo_head + e->ncoll_open_gloo) % GLOO_OPEN_MAX] = co;
        e->ncoll_open_gloo++;
    }
    return co;
}

/* per-rank arrays sized at creation; grow if a higher rank shows up */
static int coll_fit(coll_st_t *co, int r)
{
    if (r < co->width)
        return 0;
    int nn = r + 1;
    int64_t *b = realloc(co->b, (size_t)nn * sizeof(int64_t));
    if (!b)
        return -1;
    co->b = b;
    int64_t *en = realloc(co->e, (size_t)nn * sizeof(int64_t));
    if (!en)
        return -1;
    co->e = en;
    uint64_t *sn = realloc(co->sent, (size_t)nn * sizeof(uint64_t));
    if (!sn)
        return -1;
    co->sent = sn;
    for (int i = co->width; i < nn; i++) {
        co->b[i] = co->e[i] = -1;
        co->sent[i] = 0;
    }
    co->width = nn;
    return 0;
}

static group_st_t *get_group(glucx_an_engine_t *e, uint64_t comm_id, int coll_id, int alg_id,
                             uint64_t bytes, const char *coll, const char *alg)
{
    glucx_an_key_t k = glucx_an_group_key(comm_id, coll_id, alg_id, bytes);
    group_st_t *g = glucx_an_map_get(&e->groups, &k);
    if (g)
        return g;
    g = calloc(1, sizeof(*g));
    if (!g || glucx_an_map_put(&e->groups, &k, g) != 0) {
        free(g);
        return NULL;
    }
    g->comm_id = comm_id;
    g->coll_id = coll_id;
    g->alg_id = alg_id;
    g->bytes = bytes;
    snprintf(g->coll, sizeof(g->coll), "%s", coll);
    snprintf(g->alg, sizeof(g->alg), "%s", alg);
    g->min = INT64_MAX;
    return g;
}

static void free_coll(coll_st_t *co)
{
    for (int i = 0; i < co->ndec; i++) {
        free(co->dec[i].alt_ids);
        free(co->dec[i].alt_cost);
        free(co->dec[i].reason);
    }
    free(co->b);
    free(co->e);
    free(co->sent);
    free(co);
}

/* A collective is complete (or the input ended): its record, group, stragglers, decisions. */
static int flush_coll(glucx_an_engine_t *e, coll_st_t *co, int n)
{
    comm_st_t *c = co->c;
    int64_t first_b = INT64_MAX, last_b = INT64_MIN, second_b = INT64_MIN, last_e = INT64_MIN;
    int last_rank = -1, nr = 0;
    uint64_t sent = 0;
    for (int r = 0; r < n; r++) {
        if (co->b[r] < 0)
            continue;
        nr++;
        sent += co->sent[r];
        if (co->b[r] < first_b)
            first_b = co->b[r];
        if (co->b[r] > last_b) {
            second_b = last_b;
            last_b = co->b[r];
            last_rank = r;
        } else if (co->b[r] > second_b) {
            second_b = co->b[r];
        }
        if (co->e[r] > last_e)
            last_e = co->e[r];
    }
    if (nr == 0)
        return 0;
    if (last_e < last_b)
        last_e = last_b;
    coll_rec_t rec;
    memset(&rec, 0, sizeof(rec));
    rec.comm_id = c->id;
    rec.seq = co->seq;
    rec.coll = co->coll;
    rec.alg = co->alg;
    rec.dtype = co->dtype;
    rec.op = co->op;
    rec.root = co->root;
    rec.nranks = nr;
    rec.start = first_b;
    rec.end = last_e;
    rec.time = last_e - last_b;
    rec.span = last_e - first_b;
    rec.lateness = nr >= 2 ? last_b - second_b : 0;
    rec.last_rank = nr >= 2 ? last_rank : -1;
    rec.status = co->nend < co->nbegin ? 99 : co->status;
    rec.iteration = co->iteration;
    rec.gloo = co->gloo;
    rec.prefix = (int32_t)co->prefix;
    rec.bytes = co->gloo ? sent / (uint64_t)nr : co->bytes;
    /* stragglers: the last arrival holds everyone back by lateness (METRICS.md); with
     * iteration markers only collectives inside an iteration count (not set-up or tear-down) */
    if (nr >= 2 && !(c->mode == MODE_MARKERS && co->iteration < 0)) {
        rank_st_t *ls = &c->ranks[last_rank];
        ls->lateness += rec.lateness;
        ls->times_last++;
        for (int r = 0; r < n; r++)
            if (co->b[r] >= 0)
                ls->others_wait += last_b - co->b[r];
    }
    for (int r = 0; r < n && r < c->nalloc; r++)
        if (co->b[r] >= 0)
            c->ranks[r].colls++;
    if (fwrite(&rec, sizeof(rec), 1, e->f_colls) != 1)
        goto io;
    e->n_colls_out++;
    char pbuf[32];
    const char *cname = co->gloo ? glucx_an_gloo_prefix_name(co->prefix, pbuf, sizeof(pbuf))
                                 : glucx_an_coll_name(co->coll);
    const char *aname = co->gloo ? "gloo" : glucx_an_alg_name(co->alg);
    group_st_t *g = get_group(e, c->id, co->gloo ? 100 + (int)co->prefix : co->coll,
                              co->gloo ? -2 : co->alg, rec.bytes, cname, aname);
    if (!g)
        return oom(e, "collective groups");
    g->count++;
    g->sum += rec.time;
    if (rec.time < g->min)
        g->min = rec.time;
    if (rec.time > g->max)
        g->max = rec.time;
    if (rec.time > 0) {
        double f = co->gloo ? 1.0 : busbw_factor(co->coll, nr);
        g->busbw_sum += (double)rec.bytes / (double)rec.time * 1e9 * f;
        g->busbw_n++;
    }
    for (int i = 0; i < co->ndec; i++) {
        dec_st_t *d = &co->dec[i];
        dec_rec_t dr;
        memset(&dr, 0, sizeof(dr));
        dr.comm_id = c->id;
        dr.bytes = rec.bytes;
        dr.measured = co->nend > 0 ? rec.time : -1;
        dr.seq = co->seq;
        dr.kind = d->kind;
        dr.coll = co->coll;
        dr.alg_ran = co->alg;
        dr.chosen = d->chosen;
        dr.agree = d->agree;
        dr.nalt = (uint32_t)d->nalt;
        dr.reason_len = (uint32_t)strlen(d->reason);
        if (fwrite(&dr, sizeof(dr), 1, e->f_decs) != 1 ||
            (d->nalt && fwrite(d->alt_ids, sizeof(int32_t), d->nalt, e->f_decs) != d->nalt) ||
            (d->nalt && fwrite(d->alt_cost, sizeof(uint64_t), d->nalt, e->f_decs) != d->nalt) ||
            (dr.reason_len && fwrite(d->reason, 1, dr.reason_len, e->f_decs) != dr.reason_len))
            goto io;
        e->n_decs_out++;
    }
    return 0;
io:
    snprintf(e->err, sizeof(e->err), "cannot write temporary collective records in %s: %s", e->dir,
             strerror(errno));
    return -1;
}

static int remove_coll(glucx_an_engine_t *e, coll_st_t *co)
{
    int n = co->width;
    glucx_an_key_t k = glucx_an_key(co->c->id, co->seq, co->gloo ? 1 + (uint64_t)co->prefix : 0);
    glucx_an_map_del(&e->colls, &k);
    int rc = flush_coll(e, co, n);
    free_coll(co);
    return rc;
}

/* ---- messages ------------------------------------------------------------------------------ */

static glucx_an_key_t msg_key(uint64_t comm, uint32_t seq, uint32_t step, int32_t src, int32_t dst)
{
    return glucx_an_key(comm, ((uint64_t)seq << 32) | step,
                        ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst);
}

/* The message an event with bit @p bit (1 sb, 2 se, 4 rb, 8 re) belongs to. Messages with the
 * same (comm, seq, step, src, dst), such as the segments of one step of a pipelined ring, form
 * a FIFO, as the transport delivers them in order: an event goes to the oldest one still
 * lacking it (an end to the oldest whose begin was seen, if any). */
static msg_st_t *get_msg(glucx_an_engine_t *e, comm_st_t *c, uint32_t seq, uint32_t step,
                         int32_t src, int32_t dst, int bit)
{
    glucx_an_key_t k = msg_key(c->id, seq, step, src, dst);
    msg_st_t *m = glucx_an_map_get(&e->msgs, &k), *tail = NULL, *no_begin = NULL;
    const int begin = bit == 2 ? 1 : bit == 8 ? 4 : 0;
    for (; m; m = m->next) {
        tail = m;
        if (m->have & bit)
            continue;
        if (!begin || (m->have & begin))
            return m;
        if (!no_begin)
            no_begin = m;
    }
    if (no_begin)
        return no_begin;
    m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    if (tail) {
        tail->next = m;
    } else if (glucx_an_map_put(&e->msgs, &k, m) != 0) {
        free(m);
        return NULL;
    }
    m->comm_id = c->id;
    m->c = c;
    m->seq = seq;
    m->step = step;
    m->src = src;
    m->dst = dst;
    m->link = -1;
    return m;
}

/* Take @p m out of its key's FIFO (get_msg) and free it. Messages are referenced only through
 * the map, so the head's successor can move into the head's memory (no map update). */
static void drop_msg(glucx_an_engine_t *e, msg_st_t *m)
{
    glucx_an_key_t k = msg_key(m->comm_id, m->seq, m->step, m->src, m->dst);
    msg_st_t *head = glucx_an_map_get(&e->msgs, &k);
    if (head == m && m->next) {
        msg_st_t *n = m->next;
        *m = *n;
        free(n);
        return;
    }
    if (head == m) {
        glucx_an_map_del(&e->msgs, &k);
    } else {
        for (msg_st_t *p = head; p; p = p->next)
            if (p->next == m) {
                p->next = m->next;
                break;
            }
    }
    free(m);
}

static riter_t *find_riter(comm_st_t *c, int r, int64_t ts)
{
    for (iter_t *it = c->iters; it; it = it->next) {
        if (r >= it->nr)
            continue;
        riter_t *ri = &it->r[r];
        if (ri->begun && ri->start <= ts && (!ri->ended || ri->end >= ts))
            return ri;
    }
    return NULL;
}

/* Add the parts of [a,b) inside the waits of rank @p rs (iteration @p ri) to set s: its closed
 * waits and its open ones. Called when a message completes, i.e. at its last event, so b is at
 * or before the current event and an open wait, which ends at or after it, covers [its begin, b):
 * a message whose ends are emitted inside the wait completes while that wait is open. */
static int add_in_waits(riter_t *ri, const rank_st_t *rs, glucx_an_ivl_t *s, int64_t a, int64_t b)
{
    for (size_t i = ri->nw; i-- > 0;) {
        wait_rec_t *w = &ri->w[i];
        if (w->w1 <= a)
            continue;
        int64_t x = w->w0 > a ? w->w0 : a, y = w->w1 < b ? w->w1 : b;
        if (y > x && glucx_an_ivl_add(s, x, y) != 0)
            return -1;
    }
    for (size_t i = 0; rs && i < rs->nopen; i++) {
        if (!rs->open[i].is_wait)
            continue;
        int64_t x = rs->open[i].ts > ri->start ? rs->open[i].ts : ri->start, y = b;
        if (a > x)
            x = a;
        if (ri->ended && ri->end < y)
            y = ri->end;
        if (y > x && glucx_an_ivl_add(s, x, y) != 0)
            return -1;
    }
    return 0;
}

/* Attribute message @p m to wait @p w (the wait in which its receiver saw it complete): the
 * wait keeps the message whose send began last. */
static void wait_attribute(wait_rec_t *w, const comm_st_t *c, const msg_st_t *m)
{
    if (w->has_msg && m->sb <= w->m_sb)
        return;
    w->has_msg = 1;
    w->m_sb = m->sb;
    w->m_src = m->src;
    w->m_link = (int32_t)(c->size > 0 ? m->src * c->size + m->dst : m->link);
    w->m_seq = m->seq;
}

/* The closed wait with id @p id in @p ri, or NULL (searched from the newest). */
static wait_rec_t *find_wait_rec(riter_t *ri, uint64_t id)
{
    if (!ri)
        return NULL;
    for (size_t i = ri->nw; i-- > 0;)
        if (ri->w[i].id == id)
            return &ri->w[i];
    return NULL;
}

/* The wait (wait_rec_t.id) open on thread @p vtid of a rank, the newest one; 0 if none. */
static uint64_t open_wait_id(const rank_st_t *rs, int64_t vtid)
{
    for (size_t i = rs->nopen; i-- > 0;)
        if (rs->open[i].is_wait && rs->open[i].vtid == vtid)
            return rs->open[i].w.id;
    return 0;
}

/* Critical path: give @p m to the wait during which its recv_end was emitted on the same thread
 * (m->wait_id, METRICS.md "Critical path"): still open, or closed into the receiver's iteration
 * @p rr (or, if the wait ended in a later iteration, the receiver's current one). A wait that
 * can no longer be found (dropped, or outside every iteration) gets nothing. */
static void msg_attribute(comm_st_t *c, msg_st_t *m, riter_t *rr)
{
    if (m->wait_id == 0 || m->dst < 0 || m->dst >= c->nalloc)
        return;
    rank_st_t *rs = &c->ranks[m->dst];
    for (size_t i = rs->nopen; i-- > 0;) {
        open_ent_t *o = &rs->open[i];
        if (o->is_wait && o->w.id == m->wait_id) {
            wait_attribute(&o->w, c, m);
            return;
        }
    }
    wait_rec_t *w = find_wait_rec(rr, m->wait_id);
    if (!w && rs->cur_iter && m->dst < rs->cur_iter->nr && &rs->cur_iter->r[m->dst] != rr)
        w = find_wait_rec(&rs->cur_iter->r[m->dst], m->wait_id);
    if (w)
        wait_attribute(w, c, m);
}

static int msg_complete(glucx_an_engine_t *e, msg_st_t *m)
{
    comm_st_t *c = m->c;
    int rc = 0;
    if (m->re < m->sb) {
        e->causality++;
        goto out;
    }
    link_st_t *l = get_link(e, c, m->src, m->dst);
    if (!l) {
        rc = oom(e, "links");
        goto out;
    }
    int64_t a = m->sb > m->rb ? m->sb : m->rb;
    if (link_busy(l, a, m->re) != 0) {
        rc = oom(e, "link intervals");
        goto out;
    }
    riter_t *rr = find_riter(c, m->dst, m->re);
    riter_t *sr = find_riter(c, m->src, m->se > 0 ? m->se : m->sb);
    /* late sender: the receiver waits in [rb, sb) for a send not yet started */
    const rank_st_t *rs_dst = m->dst >= 0 && m->dst < c->nalloc ? &c->ranks[m->dst] : NULL;
    const rank_st_t *rs_src = m->src >= 0 && m->src < c->nalloc ? &c->ranks[m->src] : NULL;
    if (rr && m->sb > m->rb && add_in_waits(rr, rs_dst, &rr->ls, m->rb, m->sb) != 0) {
        rc = oom(e, "wait intervals");
        goto out;
    }
    /* late receiver: the sender waits in [sb, rb) for a receive not yet posted */
    if (sr && m->rb > m->sb && add_in_waits(sr, rs_src, &sr->lr, m->sb, m->rb) != 0) {
        rc = oom(e, "wait intervals");
        goto out;
    }
    msg_attribute(c, m, rr);
    if (e->f_tl) {
        char args[160];
        snprintf(args, sizeof(args),
                 "{\"bytes\":%" PRIu64 ",\"seq\":%" PRIu32 ",\"step\":%" PRIu32 "}", m->bytes,
                 m->seq, m->step);
        tl_peer_meta(e, c, m->src, m->dst, 1);
        tl_peer_meta(e, c, m->dst, m->src, 0);
        int ps = tl_pid(e, c, m->src), pd = tl_pid(e, c, m->dst);
        int ts_ = TID_P2P + m->dst * 2, td = TID_P2P + m->src * 2 + 1;
        tl_x(e, ps, ts_, "send", "send", m->sb, m->se > m->sb ? m->se : m->re, args);
        tl_x(e, pd, td, "recv", "recv", m->rb < m->re ? m->rb : m->re, m->re, args);
        int lp = 1000000 + (int)comm_index(e, c);
        int lt = m->src * 4096 + m->dst;
        if (!l->tl_meta) {
            l->tl_meta = 1;
            tl_raw(e,
                   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"links "
                   "(%s)\"}}",
                   lp, c->name ? c->name : "?");
            tl_raw(e,
                   "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{"
                   "\"name\":\"link %d->%d\"}}",
                   lp, lt, m->src, m->dst);
        }
        tl_x(e, lp, lt, "link", "transfer", a, m->re, args);
        uint64_t fid = e->n_tl;
        tl_flow(e, 1, fid, ps, ts_, m->sb);
        tl_flow(e, 0, fid, pd, td, m->re);
    }
out:
    drop_msg(e, m);
    return rc;
}

/* ---- per-event processing ------------------------------------------------------------------ */

static int on_p2p(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, const glucx_an_event_t *ev)
{
    int r = ev->rank;
    int is_send = ev->kind == GLUCX_AN_EV_SEND_BEGIN || ev->kind == GLUCX_AN_EV_SEND_END;
    int is_begin = ev->kind == GLUCX_AN_EV_SEND_BEGIN || ev->kind == GLUCX_AN_EV_RECV_BEGIN;
    int in_coll = (ev->tag & GLUCX_AN_TAG_COLL_BIT) != 0;
    int gloo = !in_coll && (ev->tag & GLUCX_AN_TAG_SLOT_BIT) != 0;

    if (!in_coll)
        change_state(e, rs, r, ev->ts, 0, is_begin ? 1 : -1, 0);
    else
        advance(e, rs, r, ev->ts);

    if (gloo && ev->peer >= 0) {
        unsigned prefix = (unsigned)((ev->tag >> 40) & 0x7f);
        coll_st_t *co = get_coll(e, c, ev->seq, 1, prefix, ev->ts);
        if (!co)
            return oom(e, "collectives");
        if (coll_fit(co, r) != 0)
            return oom(e, "collectives");
        if (co->iteration < 0 && rs->cur_iter)
            co->iteration = (int64_t)rs->cur_iter->index;
        if (co->b[r] < 0) {
            if (rank_coll_start(e, c, rs, r, ev->ts) != 0)
                return -1;
            co->b[r] = ev->ts;
            co->nbegin++;
            if (co->iteration < 0 && rs->cur_iter)
                co->iteration = (int64_t)rs->cur_iter->index;
        }
        if (ev->ts > co->e[r])
            co->e[r] = ev->ts;
        if (is_send && is_begin)
            co->sent[r] += ev->bytes;
    }

    if (is_send) {
        if (ev->peer < 0)
            return 0;
        if (is_begin) {
            link_st_t *l = get_link(e, c, r, ev->peer);
            if (!l)
                return oom(e, "links");
            l->bytes += ev->bytes;
            l->messages++;
        }
        int bit = is_begin ? 1 : 2;
        msg_st_t *m = get_msg(e, c, ev->seq, ev->step, r, ev->peer, bit);
        if (!m)
            return oom(e, "messages");
        m->have |= bit;
        if (is_begin) {
            m->sb = ev->ts;
            m->bytes = ev->bytes;
            m->tag = ev->tag;
            m->link = ev->link;
        } else {
            m->se = ev->ts;
            if (!(m->have & 1)) {
                m->sb = ev->ts;
                m->bytes = ev->bytes;
            }
        }
        if (m->have == 15)
            return msg_complete(e, m);
        return 0;
    }
    /* receive */
    if (is_begin && ev->peer < 0) {
        if (rs->nany >= 4096) {
            memmove(rs->any, rs->any + 1, (rs->nany - 1) * sizeof(*rs->any));
            rs->nany--;
        }
        if (!GROW(rs->any, rs->capany, rs->nany + 1))
            return oom(e, "any-source receives");
        rs->any[rs->nany].tag = ev->tag;
        rs->any[rs->nany].ts = ev->ts;
        rs->nany++;
        return 0;
    }
    if (ev->peer < 0)
        return 0;
    int bit = is_begin ? 4 : 8;
    msg_st_t *m = get_msg(e, c, ev->seq, ev->step, ev->peer, r, bit);
    if (!m)
        return oom(e, "messages");
    m->have |= bit;
    if (is_begin) {
        m->rb = ev->ts;
    } else {
        m->re = ev->ts;
        m->wait_id = open_wait_id(rs, ev->vtid);
        if (!(m->have & 4)) {
            /* an any-source receive: its begin is the oldest pending one with this tag */
            m->rb = ev->ts;
            for (size_t i = 0; i < rs->nany; i++) {
                if (rs->any[i].tag == ev->tag) {
                    m->rb = rs->any[i].ts;
                    memmove(rs->any + i, rs->any + i + 1, (rs->nany - i - 1) * sizeof(*rs->any));
                    rs->nany--;
                    m->have |= 4;
                    break;
                }
            }
        }
    }
    if (m->have == 15)
        return msg_complete(e, m);
    return 0;
}

static int on_coll(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, const glucx_an_event_t *ev)
{
    int r = ev->rank;
    c->has_coll_events = 1;
    coll_st_t *co = get_coll(e, c, ev->seq, 0, 0, ev->ts);
    if (!co)
        return oom(e, "collectives");
    if (coll_fit(co, r) != 0)
        return oom(e, "collectives");
    if (ev->kind == GLUCX_AN_EV_COLL_BEGIN) {
        if (rank_coll_start(e, c, rs, r, ev->ts) != 0)
            return -1;
        change_state(e, rs, r, ev->ts, 0, 1, 0);
        if (co->b[r] >= 0)
            glucx_an_engine_warn(
                e, "comm 0x%" PRIx64 " rank %d: collective seq %" PRIu32 " begins twice", c->id, r,
                ev->seq);
        else
            co->nbegin++;
        co->b[r] = ev->ts;
        co->coll = ev->coll;
        co->bytes = ev->bytes;
        co->dtype = ev->dtype;
        co->op = ev->op;
        co->root = ev->root;
        if (co->alg < 0)
            co->alg = ev->alg;
        if (co->iteration < 0 && rs->cur_iter) {
            co->iteration = (int64_t)rs->cur_iter->index;
            rs->cur_iter->ncoll++;
        }
        return 0;
    }
    change_state(e, rs, r, ev->ts, 0, -1, 0);
    if (co->e[r] < 0)
        co->nend++;
    co->e[r] = ev->ts;
    co->alg = ev->alg;
    if (ev->status != 0 || co->status == 1)
        co->status = ev->status;
    if (co->b[r] >= 0 && e->f_tl) {
        char name[96], args[128];
        snprintf(name, sizeof(name), "%s (%s)", glucx_an_coll_name(co->coll),
                 glucx_an_alg_name(co->alg));
        snprintf(args, sizeof(args), "{\"seq\":%" PRIu32 ",\"bytes\":%" PRIu64 "}", co->seq,
                 co->bytes);
        tl_x(e, tl_pid(e, c, r), TID_COLL, "collective", name, co->b[r], co->e[r], args);
    }
    int seen_begun = 0;
    for (int i = 0; i < comm_nranks(c) && i < c->nalloc; i++)
        if (c->ranks[i].seen)
            seen_begun++;
    if (co->nend >= co->nbegin && co->nbegin >= seen_begun)
        return remove_coll(e, co);
    return 0;
}

static int on_decision(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                       const glucx_an_event_t *ev)
{
    advance(e, rs, ev->rank, ev->ts);
    coll_st_t *co = get_coll(e, c, ev->seq, 0, 0, ev->ts);
    if (!co)
        return oom(e, "collectives");
    /* one record per kind; the first rank's values, others compared */
    for (int i = 0; i < co->ndec; i++) {
        dec_st_t *d = &co->dec[i];
        if (d->kind != ev->decision)
            continue;
        if (ev->decision == 1)
            continue; /* several fallbacks: kept one per chosen option below */
        if (d->chosen != ev->chosen || d->nalt != ev->nalt ||
            (ev->nalt && memcmp(d->alt_ids, ev->alt_ids, ev->nalt * sizeof(int32_t)) != 0))
            d->agree = 0;
        return 0;
    }
    if (ev->decision == 1)
        for (int i = 0; i < co->ndec; i++)
            if (co->dec[i].kind == 1 && co->dec[i].chosen == ev->chosen)
                return 0;
    if (co->ndec >= MAX_DECISIONS)
        return 0;
    dec_st_t *d = &co->dec[co->ndec];
    memset(d, 0, sizeof(*d));
    d->kind = ev->decision;
    d->chosen = ev->chosen;
    d->agree = 1;
    d->nalt = ev->nalt;
    d->reason = strdup(ev->reason);
    if (ev->nalt) {
        d->alt_ids = malloc(ev->nalt * sizeof(int32_t));
        d->alt_cost = malloc(ev->nalt * sizeof(uint64_t));
    }
    if (!d->reason || (ev->nalt && (!d->alt_ids || !d->alt_cost))) {
        free(d->reason);
        free(d->alt_ids);
        free(d->alt_cost);
        return oom(e, "decisions");
    }
    if (ev->nalt) {
        memcpy(d->alt_ids, ev->alt_ids, ev->nalt * sizeof(int32_t));
        memcpy(d->alt_cost, ev->alt_cost_ns, ev->nalt * sizeof(uint64_t));
    }
    co->ndec++;
    return 0;
}

static int on_open(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, const glucx_an_event_t *ev,
                   int is_wait)
{
    int r = ev->rank;
    if (rs->nopen >= 256) {
        glucx_an_engine_warn(e,
                             "comm 0x%" PRIx64 " rank %d: more than 256 open compute phases "
                             "or waits; the oldest is dropped",
                             c->id, r);
        memmove(rs->open, rs->open + 1, (rs->nopen - 1) * sizeof(*rs->open));
        rs->nopen--;
    }
    if (!GROW(rs->open, rs->capopen, rs->nopen + 1))
        return oom(e, "open phases");
    open_ent_t *o = &rs->open[rs->nopen++];
    memset(o, 0, sizeof(*o));
    o->is_wait = is_wait;
    if (is_wait)
        o->w.id = ++rs->wait_ids;
    o->is_comm = !is_wait && strncmp(ev->phase, COMM_PHASE_PREFIX, strlen(COMM_PHASE_PREFIX)) == 0;
    o->vtid = ev->vtid;
    o->ts = ev->ts;
    o->id = ev->id;
    o->seq = ev->seq;
    snprintf(o->phase, sizeof(o->phase), "%s", is_wait ? "" : ev->phase);
    change_state(e, rs, r, ev->ts, is_wait || o->is_comm ? 0 : 1, o->is_comm ? 1 : 0,
                 is_wait ? 1 : 0);
    return 0;
}

/* The newest open entry that @p ev (an end) closes, or (size_t)-1. */
static size_t find_open(const rank_st_t *rs, const glucx_an_event_t *ev, int is_wait,
                        int any_thread)
{
    size_t i = rs->nopen;
    while (i-- > 0) {
        const open_ent_t *o = &rs->open[i];
        if (o->is_wait == is_wait && (any_thread || o->vtid == ev->vtid) &&
            (is_wait ||
             (o->id == ev->id && strncmp(o->phase, ev->phase, sizeof(o->phase) - 1) == 0)))
            return i;
    }
    return (size_t)-1;
}

static int on_close(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, const glucx_an_event_t *ev,
                    int is_wait)
{
    int r = ev->rank;
    /* A wait ends on its own thread. A compute phase pairs on (phase, id): on the same thread
     * if one is open there, else on any thread (a framework may end a phase from another
     * thread, e.g. a communication completed by the backend's thread). */
    size_t i = find_open(rs, ev, is_wait, 0);
    if (i == (size_t)-1 && !is_wait)
        i = find_open(rs, ev, 0, 1);
    if (i == (size_t)-1) {
        e->unpaired++;
        advance(e, rs, r, ev->ts);
        return 0;
    }
    open_ent_t o = rs->open[i];
    memmove(rs->open + i, rs->open + i + 1, (rs->nopen - i - 1) * sizeof(*rs->open));
    rs->nopen--;
    change_state(e, rs, r, ev->ts, is_wait || o.is_comm ? 0 : -1, o.is_comm ? -1 : 0,
                 is_wait ? -1 : 0);
    if (is_wait) {
        riter_t *ri = cur_riter(rs, r);
        if (ri) {
            int64_t w0 = o.ts > ri->start ? o.ts : ri->start;
            if (!GROW(ri->w, ri->capw, ri->nw + 1))
                return oom(e, "waits");
            ri->w[ri->nw] = o.w; /* its id and the message attributed while it was open */
            ri->w[ri->nw].w0 = w0;
            ri->w[ri->nw].w1 = ev->ts;
            ri->nw++;
        }
        tl_x(e, tl_pid(e, c, r), TID_WAIT, "wait", "wait", o.ts, ev->ts, NULL);
    } else {
        char name[64];
        snprintf(name, sizeof(name), "%s %" PRIu64, o.phase[0] ? o.phase : "compute", o.id);
        tl_x(e, tl_pid(e, c, r), o.is_comm ? TID_COLL : TID_COMPUTE,
             o.is_comm ? "communication" : "compute", name, o.ts, ev->ts, NULL);
    }
    return 0;
}

static int process(glucx_an_engine_t *e, comm_st_t *c, const glucx_an_event_t *ev)
{
    if (ev->kind == GLUCX_AN_EV_COMM_INIT) {
        c->have_init = 1;
        if (ev->size > 0 && ev->size > c->size)
            c->size = ev->size;
        c->npackages = ev->npackages;
        if (!c->name) {
            c->name = strdup(ev->name);
            c->gloo = strcmp(ev->name, "gloo") == 0;
        }
    }
    rank_st_t *rs = get_rank(e, c, ev->rank, ev->ts);
    if (!rs) {
        e->ignored++;
        return 0;
    }
    int r = ev->rank;
    if (c->mode == MODE_WHOLE && !rs->cur_iter && rs->cstarts == 0) {
        rs->cstarts = 1;
        if (rank_iter_begin(e, c, rs, r, 0, ev->ts) != 0)
            return -1;
    }
    switch (ev->kind) {
    case GLUCX_AN_EV_COMM_INIT:
        free(rs->host);
        rs->host = strdup(ev->host);
        rs->package = ev->package;
        rs->vpid = ev->vpid; /* the process -> comm map is filled on arrival (note_process) */
        advance(e, rs, r, ev->ts);
        return 0;
    case GLUCX_AN_EV_LINK: {
        advance(e, rs, r, ev->ts);
        if (ev->src < 0 || ev->dst < 0)
            return 0;
        link_st_t *l = get_link(e, c, ev->src, ev->dst);
        if (!l)
            return oom(e, "links");
        l->announced = 1;
        l->dim = ev->dim;
        l->bw = ev->bandwidth_Bps;
        l->lat = ev->latency_ns;
        free(l->transport);
        l->transport = strdup(ev->transport);
        return 0;
    }
    case GLUCX_AN_EV_COLL_BEGIN:
    case GLUCX_AN_EV_COLL_END:
        return on_coll(e, c, rs, ev);
    case GLUCX_AN_EV_SCHED_DECISION:
        return on_decision(e, c, rs, ev);
    case GLUCX_AN_EV_SEND_BEGIN:
    case GLUCX_AN_EV_SEND_END:
    case GLUCX_AN_EV_RECV_BEGIN:
    case GLUCX_AN_EV_RECV_END:
        return on_p2p(e, c, rs, ev);
    case GLUCX_AN_EV_WAIT_BEGIN:
        return on_open(e, c, rs, ev, 1);
    case GLUCX_AN_EV_WAIT_END:
        return on_close(e, c, rs, ev, 1);
    case GLUCX_AN_EV_COMPUTE_BEGIN:
        return on_open(e, c, rs, ev, 0);
    case GLUCX_AN_EV_COMPUTE_END:
        return on_close(e, c, rs, ev, 0);
    case GLUCX_AN_EV_ITERATION_BEGIN:
        if (c->mode != MODE_MARKERS) {
            advance(e, rs, r, ev->ts);
            return 0;
        }
        return rank_iter_begin(e, c, rs, r, ev->id, ev->ts);
    case GLUCX_AN_EV_ITERATION_END:
        if (c->mode != MODE_MARKERS) {
            advance(e, rs, r, ev->ts);
            return 0;
        }
        if (!rs->cur_iter || rs->cur_iter->index != ev->id) {
            glucx_an_engine_warn(
                e, "comm 0x%" PRIx64 " rank %d: iteration_end %" PRIu64 " without its begin", c->id,
                r, ev->id);
            advance(e, rs, r, ev->ts);
            return 0;
        }
        return rank_iter_end(e, c, rs, r, ev->ts);
    case GLUCX_AN_EV_ERROR:
        glucx_an_engine_warn(e, "comm 0x%" PRIx64 " rank %d reported %s: %s", c->id, r,
                             glucx_an_status_name(ev->status), ev->text);
        advance(e, rs, r, ev->ts);
        return 0;
    default:
        advance(e, rs, r, ev->ts);
        return 0;
    }
}

/* ---- iteration inference ------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h * 0xbf58476d1ce4e5b9u;
}

/* Smallest period p of the signatures after a non-repeating prefix of o <= 16 (set-up
 * collectives): sig[i] == sig[i+p] for all i >= o, accepted when n - o >= need(p). */
static uint32_t find_period(comm_st_t *c, int final)
{
    size_t n = c->nsig;
    for (size_t o = 0; o <= 16 && o < n; o++) {
        for (size_t p = 1; o + p * 2 <= n; p++) {
            size_t i = o;
            while (i + p < n && c->sigs[i] == c->sigs[i + p])
                i++;
            if (i + p < n)
                continue;
            size_t need = final ? 2 * p : (3 * p > 8 ? 3 * p : 8);
            if (n - o >= need) {
                c->offset = (uint32_t)o;
                return (uint32_t)p;
            }
            break; /* the smallest period at this offset is too short a run yet */
        }
    }
    return 0;
}

static void free_buffer(comm_st_t *c)
{
    for (size_t i = 0; i < c->narena; i++)
        free(c->arena[i]);
    free(c->arena);
    free(c->bev);
    c->arena = NULL;
    c->bev = NULL;
    c->narena = c->caparena = c->nbev = c->capbev = 0;
}

static int decide(glucx_an_engine_t *e, comm_st_t *c, int mode, uint32_t period)
{
    c->mode = mode;
    c->period = period;
    for (size_t i = 0; i < c->nbev; i++)
        if (process(e, c, &c->bev[i]) != 0)
            return -1;
    free_buffer(c);
    free(c->sigs);
    c->sigs = NULL;
    c->nsig = c->capsig = 0;
    return 0;
}

static char *arena_dup(comm_st_t *c, const void *p, size_t n)
{
    if (!GROW(c->arena, c->caparena, c->narena + 1))
        return NULL;
    char *q = malloc(n ? n : 1);
    if (!q)
        return NULL;
    memcpy(q, p, n);
    c->arena[c->narena++] = q;
    return q;
}

static int buffer_event(glucx_an_engine_t *e, comm_st_t *c, const glucx_an_event_t *ev)
{
    if (!GROW(c->bev, c->capbev, c->nbev + 1))
        return oom(e, "buffered events");
    glucx_an_event_t *b = &c->bev[c->nbev];
    *b = *ev;
    const char **strs[] = {&b->name, &b->host, &b->transport, &b->reason, &b->phase, &b->text};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        if (!**strs[i]) {
            *strs[i] = ""; /* not the caller's buffer: borrowed for this call only */
            continue;
        }
        *strs[i] = arena_dup(c, *strs[i], strlen(*strs[i]) + 1);
        if (!*strs[i])
            return oom(e, "buffered events");
    }
    if (ev->nalt) {
        b->alt_ids = (const int32_t *)arena_dup(c, ev->alt_ids, ev->nalt * sizeof(int32_t));
        b->alt_cost_ns =
            (const uint64_t *)arena_dup(c, ev->alt_cost_ns, ev->nalt * sizeof(uint64_t));
        if (!b->alt_ids || !b->alt_cost_ns)
            return oom(e, "buffered events");
    }
    c->nbev++;
    /* a collective start on the reference rank extends the signature sequence */
    uint64_t sig = 0;
    int start = 0;
    if (ev->kind == GLUCX_AN_EV_COLL_BEGIN) {
        start = 1;
        sig = mix(mix(1, (uint64_t)ev->coll), ev->bytes);
    } else if ((ev->kind == GLUCX_AN_EV_SEND_BEGIN || ev->kind == GLUCX_AN_EV_RECV_BEGIN) &&
               !(ev->tag & GLUCX_AN_TAG_COLL_BIT) && (ev->tag & GLUCX_AN_TAG_SLOT_BIT) &&
               !c->has_coll_events) {
        /* Gloo-shim collective: a new (prefix, slot tag) on the reference rank */
        uint64_t slot = (ev->tag >> 8) & UINT64_C(0x7fffffffff); /* prefix and tag bits */
        if (ev->rank == c->ref_rank || c->ref_rank < 0) {
            /* only the first message of a slot starts a collective */
            start = !(c->nsig && c->last_slot == slot);
            c->last_slot = slot;
        }
        sig = mix(2, (ev->tag >> 40) & 0x7f);
    }
    if (ev->kind == GLUCX_AN_EV_COLL_BEGIN)
        c->has_coll_events = 1;
    if (start) {
        if (c->ref_rank < 0)
            c->ref_rank = ev->rank;
        if (ev->rank == c->ref_rank) {
            if (!GROW(c->sigs, c->capsig, c->nsig + 1))
                return oom(e, "collective signatures");
            c->sigs[c->nsig++] = sig;
            uint32_t p = find_period(c, 0);
            if (p)
                return decide(e, c, MODE_INFERRED, p);
        }
    }
    unsigned maxc = e->opt.infer_max_colls ? e->opt.infer_max_colls : 256;
    if (c->nsig >= maxc || c->nbev >= MAX_BUFFERED_EVENTS) {
        glucx_an_engine_warn(e,
                             "comm 0x%" PRIx64 ": no repeating collective sequence in the "
                             "first %zu collectives; each collective is taken as one iteration",
                             c->id, c->nsig);
        return decide(e, c, c->nsig ? MODE_PER_COLL : MODE_WHOLE, 1);
    }
    return 0;
}

/* ---- feed ---------------------------------------------------------------------------------- */

/* Remember the first communicator (and rank) of the process that announced @p ev (comm_init)
 * as soon as the event arrives, even while the comm's events are still buffered (mode not
 * decided yet): the process's framework events, which name no communicator, need it at once
 * (their first iteration_begin is what decides the mode). Key (vpid, 0): the comm; key
 * (vpid, 1): the rank + 1 (a non-NULL value). */
static int note_process(glucx_an_engine_t *e, comm_st_t *c, const glucx_an_event_t *ev)
{
    if (ev->vpid < 0 || ev->rank < 0)
        return 0;
    glucx_an_key_t k = glucx_an_key((uint64_t)ev->vpid, 0, 0);
    glucx_an_key_t kr = glucx_an_key((uint64_t)ev->vpid, 1, 0);
    if (glucx_an_map_get(&e->vpid_map, &k))
        return 0;
    if (glucx_an_map_put(&e->vpid_map, &k, c) != 0 ||
        glucx_an_map_put(&e->vpid_map, &kr, (void *)(intptr_t)(ev->rank + 1)) != 0)
        return oom(e, "processes");
    return 0;
}

int glucx_an_engine_feed(glucx_an_engine_t *e, const glucx_an_event_t *ev)
{
    if (ev->kind < 0 || ev->kind >= GLUCX_AN_EV_COUNT) {
        e->ignored++;
        return 0;
    }
    e->events++;
    if (!e->have_ts) {
        e->t_first = ev->ts;
        e->have_ts = 1;
    }
    if (ev->ts > e->t_last)
        e->t_last = ev->ts;
    glucx_an_event_t local;
    const glucx_an_event_t *p = ev;
    if (ev->comm_id == 0 || ev->rank < 0) {
        /* framework events without a communicator: the process's first comm (by vpid) */
        comm_st_t *c = NULL;
        int rank = -1;
        if (ev->vpid >= 0) {
            glucx_an_key_t k = glucx_an_key((uint64_t)ev->vpid, 0, 0);
            glucx_an_key_t kr = glucx_an_key((uint64_t)ev->vpid, 1, 0);
            c = glucx_an_map_get(&e->vpid_map, &k);
            rank = (int)(intptr_t)glucx_an_map_get(&e->vpid_map, &kr) - 1;
        }
        if (!c || rank < 0) {
            e->ignored++;
            e->fw_orphans++;
            return 0;
        }
        local = *ev;
        local.comm_id = c->id;
        local.rank = rank;
        p = &local;
    }
    comm_st_t *c = get_comm(e, p->comm_id);
    if (!c)
        return oom(e, "communicators");
    if (p->kind == GLUCX_AN_EV_COMM_INIT && note_process(e, c, p) != 0)
        return -1;
    if (c->mode == MODE_UNDECIDED) {
        if (p->kind == GLUCX_AN_EV_ITERATION_BEGIN || p->kind == GLUCX_AN_EV_ITERATION_END) {
            if (decide(e, c, MODE_MARKERS, 0) != 0)
                return -1;
            return process(e, c, p);
        }
        return buffer_event(e, c, p);
    }
    return process(e, c, p);
}

/* ---- iteration finalisation and the critical path ------------------------------------------ */

typedef struct seg {
    int rank, kind; /* 0 compute 1 communication 2 wait 3 idle 4 transfer */
    int64_t a, b;
    int32_t link, peer;
    int64_t seq;
} seg_t;

static const char *const seg_kinds[] = {"compute", "communication", "wait", "idle", "transfer"};

typedef struct segs {
    seg_t *v;
    size_t n, cap;
    int truncated;
} segs_t;

static int seg_push(segs_t *s, int rank, int kind, int64_t a, int64_t b, int32_t link, int32_t peer,
                    int64_t seq)
{
    if (b <= a)
        return 0;
    if (s->n && s->v[s->n - 1].rank == rank && s->v[s->n - 1].kind == kind && kind != 4 &&
        s->v[s->n - 1].a == b) {
        s->v[s->n - 1].a = a; /* built backwards: extend the previous segment's start */
        return 0;
    }
    if (s->n >= MAX_SEGMENTS) {
        s->truncated = 1;
        return 0;
    }
    if (!GROW(s->v, s->cap, s->n + 1))
        return -1;
    seg_t g = {rank, kind, a, b, link, peer, seq};
    s->v[s->n++] = g;
    return 0;
}

static int kind_of_bits(int bits)
{
    if (bits & ST_COMPUTE)
        return 0;
    if (bits & ST_WAIT)
        return 2;
    if (bits & ST_COMM)
        return 1;
    return 3;
}

/* local activity of rank r over [a, b), backwards, split by its state log */
static int push_local(segs_t *s, const riter_t *ri, int r, int64_t a, int64_t b)
{
    if (b <= a)
        return 0;
    /* index of the last log entry at or before b */
    size_t i = ri->nlog;
    while (i > 0 && ri->log[i - 1].ts >= b)
        i--;
    int64_t hi = b;
    while (hi > a) {
        int bits = i > 0 ? ri->log[i - 1].bits : 0;
        int64_t lo = i > 0 ? ri->log[i - 1].ts : a;
        if (lo < a)
            lo = a;
        if (seg_push(s, r, kind_of_bits(bits), lo, hi, -1, -1, -1) != 0)
            return -1;
        hi = lo;
        if (i == 0)
            break;
        i--;
    }
    return 0;
}

static int critical_path(glucx_an_engine_t *e, comm_st_t *c, iter_t *it, segs_t *s,
                         int64_t *start_p, int64_t *end_p)
{
    int r = -1;
    int64_t t = INT64_MIN;
    for (int i = 0; i < it->nr; i++)
        if (it->r[i].begun && it->r[i].end > t) {
            t = it->r[i].end;
            r = i;
        }
    if (r < 0)
        return 0;
    *end_p = t;
    size_t guard = 0, limit = 16;
    for (int i = 0; i < it->nr; i++)
        limit += it->r[i].nw * 2 + 2;
    while (guard++ < limit) {
        riter_t *ri = &it->r[r];
        if (t <= ri->start)
            break;
        /* the latest wait of r that started before t */
        wait_rec_t *w = NULL;
        for (size_t i = ri->nw; i-- > 0;)
            if (ri->w[i].w0 < t) {
                w = &ri->w[i];
                break;
            }
        if (!w) {
            if (push_local(s, ri, r, ri->start, t) != 0)
                return -1;
            t = ri->start;
            break;
        }
        int64_t we = w->w1 < t ? w->w1 : t;
        if (push_local(s, ri, r, we, t) != 0)
            return -1;
        int src = w->has_msg ? w->m_src : -1;
        if (w->has_msg && w->m_sb > w->w0 && w->m_sb < we && src >= 0 && src < it->nr &&
            it->r[src].begun && w->m_sb >= it->r[src].start) {
            /* the receiver waited for a late sender: follow the dependency to the sender */
            if (seg_push(s, src, 4, w->m_sb, we, w->m_link, r, w->m_seq) != 0)
                return -1;
            link_st_t *l = get_link(e, c, src, r);
            if (l)
                l->cp_ns += we - w->m_sb;
            r = src;
            t = w->m_sb;
        } else if (w->has_msg) {
            /* the data was on its way before the wait began: the transfer itself */
            if (seg_push(s, r, 4, w->w0, we, w->m_link, src, w->m_seq) != 0)
                return -1;
            link_st_t *l = src >= 0 ? get_link(e, c, src, r) : NULL;
            if (l)
                l->cp_ns += we - w->w0;
            t = w->w0;
        } else {
            if (seg_push(s, r, 2, w->w0, we, -1, -1, -1) != 0)
                return -1;
            t = w->w0;
        }
    }
    if (guard >= limit)
        s->truncated = 1;
    *start_p = t;
    return 0;
}

static void bd_add(bd_t *a, const bd_t *b)
{
    a->duration += b->duration;
    a->compute += b->compute;
    a->comm += b->comm;
    a->overlap += b->overlap;
    a->wait += b->wait;
    a->late_sender += b->late_sender;
    a->late_receiver += b->late_receiver;
    a->idle += b->idle;
}

void glucx_an_bd_json_fields(void *obj, const bd_t *b)
{
    json_t *o = obj;
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

static void riter_free(riter_t *ri)
{
    glucx_an_ivl_free(&ri->ls);
    glucx_an_ivl_free(&ri->lr);
    free(ri->w);
    free(ri->log);
}

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

static int finalize_iter(glucx_an_engine_t *e, comm_st_t *c, iter_t *it, int forced)
{
    int rc = 0;
    int complete = !forced && c->size > 0;
    int64_t start = INT64_MAX, end = INT64_MIN;
    bd_t tot;
    memset(&tot, 0, sizeof(tot));
    wbuf_t *w = e->w_it;
    /* ranks still inside this iteration (forced close / end of input) end at their last event */
    for (int r = 0; r < it->nr && r < c->nalloc; r++) {
        riter_t *ri = &it->r[r];
        if (!ri->begun || ri->ended)
            continue;
        rank_st_t *rs = &c->ranks[r];
        if (rs->cur_iter == it) {
            advance(e, rs, r, rs->last_ts);
            rs->cur_iter = NULL;
        }
        ri->ended = 1;
        ri->end = rs->last_ts > ri->start ? rs->last_ts : ri->start;
        if (c->mode == MODE_MARKERS) {
            complete = 0;
            glucx_an_engine_partial(e,
                                    "comm 0x%" PRIx64 " rank %d: iteration %" PRIu64
                                    " has no iteration_end (trace truncated?)",
                                    c->id, r, it->index);
        }
    }
    for (int r = 0; r < (c->size > 0 ? c->size : it->nr); r++)
        if (r >= it->nr || !it->r[r].begun)
            complete = 0;
    for (int r = 0; r < it->nr; r++) {
        riter_t *ri = &it->r[r];
        if (!ri->begun)
            continue;
        if (ri->start < start)
            start = ri->start;
        if (ri->end > end)
            end = ri->end;
    }
    if (start == INT64_MAX)
        start = end = 0;
    char hex[24];
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
    wb_i64(w, start);
    wb_lit(w, ",\"end_ns\":");
    wb_i64(w, end);
    wb_lit(w, ",\"duration_ns\":");
    wb_i64(w, end - start);
    wb_str(w, complete ? ",\"complete\":true" : ",\"complete\":false");
    wb_lit(w, ",\"collectives\":");
    wb_u64(w, it->ncoll);
    wb_lit(w, ",\"ranks\":[");
    int first = 1;
    int64_t nbegun = 0;
    for (int r = 0; r < it->nr; r++) {
        riter_t *ri = &it->r[r];
        if (!ri->begun)
            continue;
        nbegun++;
        bd_t b;
        b.duration = ri->end - ri->start;
        b.compute = ri->compute;
        b.comm = ri->comm;
        b.overlap = ri->overlap;
        b.wait = ri->wait;
        b.late_sender = glucx_an_ivl_len(&ri->ls);
        b.late_receiver = glucx_an_ivl_len_minus(&ri->lr, &ri->ls);
        b.idle = b.duration - ri->busy;
        if (b.idle < 0)
            b.idle = 0;
        bd_add(&tot, &b);
        if (r < c->nalloc)
            bd_add(&c->ranks[r].tot, &b);
        wb_str(w, first ? "{\"rank\":" : ",{\"rank\":");
        first = 0;
        wb_i64(w, r);
        wb_lit(w, ",\"start_ns\":");
        wb_i64(w, ri->start);
        wb_lit(w, ",\"end_ns\":");
        wb_i64(w, ri->end);
        wb_lit(w, ",");
        wb_bd(w, &b);
        wb_lit(w, "}");
    }
    wb_lit(w, "],\"totals\":{");
    wb_bd(w, &tot);
    wb_lit(w, "}");
    segs_t s;
    memset(&s, 0, sizeof(s));
    int64_t cp_start = start, cp_end = end;
    if (critical_path(e, c, it, &s, &cp_start, &cp_end) != 0) {
        rc = oom(e, "critical path");
        goto out;
    }
    int64_t bykind[5] = {0};
    for (size_t i = 0; i < s.n; i++)
        bykind[s.v[i].kind] += s.v[i].b - s.v[i].a;
    wb_lit(w, ",\"critical_path\":{\"length_ns\":");
    wb_i64(w, cp_end - cp_start);
    wb_str(w, s.truncated ? ",\"truncated\":true" : ",\"truncated\":false");
    wb_lit(w, ",\"by_kind\":{");
    first = 1;
    for (int k = 0; k < 5; k++) {
        if (!bykind[k])
            continue;
        wb_str(w, first ? "\"" : ",\"");
        first = 0;
        wb_str(w, seg_kinds[k]);
        wb_lit(w, "\":");
        wb_i64(w, bykind[k]);
    }
    wb_lit(w, "},\"segments\":[");
    for (size_t i = s.n; i-- > 0;) {
        seg_t *g = &s.v[i];
        wb_str(w, i + 1 == s.n ? "{\"rank\":" : ",{\"rank\":");
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
        rc = -1;
        goto out;
    }
    if (listed)
        e->n_iters_out++;
    else
        w->n = 0; /* never flushed: scratch.f is NULL */
    e->iterations++;
    if (complete)
        e->complete_iterations++;
    /* an iteration lasts the mean of its ranks' durations: the span from the first rank's
     * begin to the last rank's end overstates it when ranks are skewed (METRICS.md) */
    e->iter_time_sum += nbegun > 0 ? tot.duration / nbegun : end - start;
    e->cp_sum += cp_end - cp_start;
    bd_add(&e->tot, &tot);
    c->iters_done++;
out:
    free(s.v);
    /* unlink and free */
    for (iter_t **pp = &c->iters; *pp; pp = &(*pp)->next)
        if (*pp == it) {
            *pp = it->next;
            break;
        }
    c->nopen_iters--;
    for (int r = 0; r < c->nalloc; r++)
        if (c->ranks[r].cur_iter == it)
            c->ranks[r].cur_iter = NULL;
    for (int r = 0; r < it->nr; r++)
        riter_free(&it->r[r]);
    free(it->r);
    free(it);
    return rc;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

static FILE *open_tmp(glucx_an_engine_t *e, const char *name, char **path_p)
{
    size_t n = strlen(e->dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p)
        return NULL;
    snprintf(p, n, "%s/%s", e->dir, name);
    FILE *f = fopen(p, "w+b");
    if (!f) {
        snprintf(e->err, sizeof(e->err), "cannot create %s: %s", p, strerror(errno));
        free(p);
        return NULL;
    }
    *path_p = p;
    return f;
}

/* mkdir -p */
static int mkdir_p(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

glucx_an_engine_t *glucx_an_engine_create(const glucx_an_options_t *opt, char *err, size_t errlen)
{
    if (!opt || !opt->out_dir || !*opt->out_dir) {
        snprintf(err, errlen, "no output directory given");
        return NULL;
    }
    if (mkdir_p(opt->out_dir) != 0) {
        snprintf(err, errlen, "cannot create output directory %s: %s", opt->out_dir,
                 strerror(errno));
        return NULL;
    }
    struct stat st;
    if (stat(opt->out_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "output path %s is not a directory", opt->out_dir);
        return NULL;
    }
    glucx_an_engine_t *e = calloc(1, sizeof(*e));
    if (!e) {
        snprintf(err, errlen, "out of memory creating the analysis engine");
        return NULL;
    }
    e->opt = *opt;
    e->list_limit = opt->list_limit == 0 ? 10000 : opt->list_limit;
    e->dir = strdup(opt->out_dir);
    if (!e->dir || !(e->f_iters = open_tmp(e, ".iterations.tmp", &e->p_iters)) ||
        !(e->f_colls = open_tmp(e, ".collectives.tmp", &e->p_colls)) ||
        !(e->f_decs = open_tmp(e, ".decisions.tmp", &e->p_decs)) ||
        (opt->timeline && !(e->f_tl = open_tmp(e, "timeline.json", &e->p_tl)))) {
        snprintf(err, errlen, "%s", e->err[0] ? e->err : "out of memory");
        glucx_an_engine_destroy(e);
        return NULL;
    }
    e->w_it = calloc(1, sizeof(wbuf_t));
    e->w_tl = calloc(1, sizeof(wbuf_t));
    if (!e->w_it || !e->w_tl) {
        snprintf(err, errlen, "out of memory creating the analysis engine");
        glucx_an_engine_destroy(e);
        return NULL;
    }
    e->w_it->f = e->f_iters;
    e->w_tl->f = e->f_tl;
    if (e->f_tl)
        wb_lit(e->w_tl, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    return e;
}

static void free_comm(comm_st_t *c)
{
    while (c->iters) {
        iter_t *it = c->iters;
        c->iters = it->next;
        for (int r = 0; r < it->nr; r++)
            riter_free(&it->r[r]);
        free(it->r);
        free(it);
    }
    for (int r = 0; r < c->nalloc; r++) {
        free(c->ranks[r].host);
        free(c->ranks[r].open);
        free(c->ranks[r].any);
    }
    free(c->ranks);
    for (size_t i = 0; i < c->nlinks; i++) {
        free(c->links[i]->transport);
        glucx_an_ivl_free(&c->links[i]->busy);
        free(c->links[i]);
    }
    free(c->links);
    free(c->sigs);
    free_buffer(c);
    free(c->name);
    free(c);
}

static void close_tmp(FILE **f, char **p, int unlink_it)
{
    if (*f)
        fclose(*f);
    if (*p && unlink_it)
        unlink(*p);
    free(*p);
    *f = NULL;
    *p = NULL;
}

void glucx_an_engine_destroy(glucx_an_engine_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->msgs.cap; i++)
        for (msg_st_t *m = e->msgs.slots[i].val, *next; m; m = next) {
            next = m->next;
            free(m);
        }
    for (size_t i = 0; i < e->colls.cap; i++)
        if (e->colls.slots[i].val)
            free_coll(e->colls.slots[i].val);
    for (size_t i = 0; i < e->groups.cap; i++)
        free(e->groups.slots[i].val);
    glucx_an_map_free(&e->msgs);
    glucx_an_map_free(&e->colls);
    glucx_an_map_free(&e->groups);
    glucx_an_map_free(&e->links);
    glucx_an_map_free(&e->comm_by_id);
    glucx_an_map_free(&e->vpid_map);
    for (size_t i = 0; i < e->ncomms; i++)
        free_comm(e->comms[i]);
    free(e->comms);
    free(e->w_it);
    free(e->w_tl);
    close_tmp(&e->f_iters, &e->p_iters, 1);
    close_tmp(&e->f_colls, &e->p_colls, 1);
    close_tmp(&e->f_decs, &e->p_decs, 1);
    close_tmp(&e->f_tl, &e->p_tl, !e->finished);
    strlist_free(&e->paths);
    strlist_free(&e->partial);
    strlist_free(&e->warnings);
    strlist_free(&e->unknown_events);
    strlist_free(&e->mismatched);
    strlist_free(&e->pid_files);
    free(e->tracer);
    free(e->bt_version);
    free(e->command);
    free(e->dir);
    free(e);
}

void glucx_an_engine_discarded(glucx_an_engine_t *e, uint64_t events, uint64_t packets)
{
    e->discarded_events += events;
    e->discarded_packets += packets;
}

void glucx_an_engine_add_path(glucx_an_engine_t *e, const char *path)
{
    glucx_an_strlist_add(&e->paths, path);
}

static void set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? strdup(s) : NULL;
}

void glucx_an_engine_set_tracer(glucx_an_engine_t *e, const char *tracer)
{
    set_str(&e->tracer, tracer);
}

void glucx_an_engine_set_tool(glucx_an_engine_t *e, const char *bt_version, const char *command)
{
    set_str(&e->bt_version, bt_version);
    set_str(&e->command, command);
}

void glucx_an_engine_unknown_event(glucx_an_engine_t *e, const char *name)
{
    glucx_an_strlist_add(&e->unknown_events, name);
}

void glucx_an_engine_mismatched_event(glucx_an_engine_t *e, const char *name, const char *why)
{
    glucx_an_strlist_add(&e->mismatched, name);
    glucx_an_engine_partial(e,
                            "unknown provider version: event %s does not have the fields of "
                            "EVENTS.md ABI 1 (%s); its events are ignored",
                            name, why);
}

void glucx_an_engine_pid_file(glucx_an_engine_t *e, const char *path)
{
    glucx_an_strlist_add(&e->pid_files, path);
}

void glucx_an_engine_left_out(glucx_an_engine_t *e, uint64_t events, uint64_t processes)
{
    e->left_out_events += events;
    e->left_out_processes += processes;
    if (e->left_out_events == 0)
        return;
    char buf[512];
    snprintf(buf, sizeof(buf),
             "%" PRIu64 " events of %" PRIu64 " processes not listed in the trace's glucx-pids "
             "were left out: another traced job ran at the same time (LTTng records every traced "
             "process of the user in each session; babeltrace2 still shows their events)",
             e->left_out_events, e->left_out_processes);
    /* first in the list, replacing an earlier count, never dropped by MAX_WARNINGS */
    if (e->warnings.n > 0 &&
        strstr(e->warnings.v[0], "were left out: another traced job") != NULL) {
        char *s = strdup(buf);
        if (s) {
            free(e->warnings.v[0]);
            e->warnings.v[0] = s;
        }
        return;
    }
    if (!GROW(e->warnings.v, e->warnings.cap, e->warnings.n + 1))
        return;
    char *s = strdup(buf);
    if (!s)
        return;
    memmove(e->warnings.v + 1, e->warnings.v, e->warnings.n * sizeof(char *));
    e->warnings.v[0] = s;
    e->warnings.n++;
}

void glucx_an_engine_ignored(glucx_an_engine_t *e)
{
    e->ignored++;
}

int glucx_an_engine_is_partial(const glucx_an_engine_t *e)
{
    return e->partial.n > 0;
}
uint64_t glucx_an_engine_events(const glucx_an_engine_t *e)
{
    return e->events;
}
const char *glucx_an_engine_error(const glucx_an_engine_t *e)
{
    return e->err;
}
const char *glucx_an_engine_verdict(const glucx_an_engine_t *e)
{
    return e->verdict;
}

int glucx_an_engine_finish(glucx_an_engine_t *e)
{
    if (e->finished) {
        snprintf(e->err, sizeof(e->err), "glucx_an_engine_finish called twice");
        return -1;
    }
    e->finished = 1;
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        if (c->mode == MODE_UNDECIDED) {
            uint32_t p = find_period(c, 1);
            int mode = p ? MODE_INFERRED : (c->nsig ? MODE_PER_COLL : MODE_WHOLE);
            if (decide(e, c, mode, p ? p : 1) != 0)
                return -1;
        }
    }
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        while (c->iters)
            if (finalize_iter(e, c, c->iters, 0) != 0)
                return -1;
    }
    /* open collectives: complete ones and those cut off by the end of the input (the Gloo
     * FIFO only orders them; the map holds them all) */
    e->ncoll_open_gloo = 0;
    uint64_t open_colls = 0, open_comm = 0;
    uint32_t open_seq = 0;
    for (size_t i = 0; i < e->colls.cap; i++) {
        coll_st_t *co = e->colls.slots[i].val;
        if (!co)
            continue;
        if (!co->gloo && co->nend < co->nbegin && open_colls++ == 0) {
            open_comm = co->c->id;
            open_seq = co->seq;
        }
        if (remove_coll(e, co) != 0)
            return -1;
        i = (size_t)-1; /* the table changed: rescan */
    }
    if (open_colls > 0) /* one reason, not one per collective */
        glucx_an_engine_partial(e,
                                "%" PRIu64 " collective(s) without coll_end on every rank (trace "
                                "truncated, events discarded or a rank failed), e.g. comm "
                                "0x%" PRIx64 " seq %" PRIu32,
                                open_colls, open_comm, open_seq);
    if (e->fw_orphans > 0)
        glucx_an_engine_partial(e,
                                "%" PRIu64 " framework events (iterations, compute phases, "
                                "buckets) come from processes without a glucx communicator "
                                "and are not analysed (a Gloo-TCP job? the glucx backend or "
                                "GLOO_DEVICE_TRANSPORT=UCX traces its communication)",
                                e->fw_orphans);
    for (size_t i = 0; i < e->msgs.cap; i++) {
        for (msg_st_t *m = e->msgs.slots[i].val; m; m = m->next) {
            if ((m->have & 3) && !(m->have & 12))
                e->unmatched_sends++;
            else if ((m->have & 12) && !(m->have & 3))
                e->unmatched_recvs++;
            else if (m->have & 8) {
                /* both sides seen but one end missing: the wait attribution is skipped */
                e->unmatched_sends += !(m->have & 2);
            }
        }
    }
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        if (!c->have_init)
            glucx_an_engine_partial(e,
                                    "comm 0x%" PRIx64 " has no comm_init event: its size, "
                                    "name and hosts are unknown (session started late?)",
                                    c->id);
        for (int r = 0; r < c->size; r++)
            if (r >= c->nalloc || !c->ranks[r].seen)
                glucx_an_engine_partial(e,
                                        "comm 0x%" PRIx64 " (%s) has %d ranks but no events "
                                        "of rank %d: a rank is missing from the trace",
                                        c->id, c->name ? c->name : "?", c->size, r);
    }
    if (e->discarded_events || e->discarded_packets)
        glucx_an_engine_partial(e,
                                "the tracer discarded %" PRIu64 " events and lost %" PRIu64
                                " packets: sends and receives without a partner are counted, not "
                                "paired",
                                e->discarded_events, e->discarded_packets);
    if (e->events == 0)
        glucx_an_engine_partial(e, "empty trace: no glucx events");
    if (e->unmatched_sends || e->unmatched_recvs)
        glucx_an_engine_warn(e, "%" PRIu64 " sends and %" PRIu64 " receives have no partner",
                             e->unmatched_sends, e->unmatched_recvs);
    if (e->f_tl) {
        wb_lit(e->w_tl, "\n],\"otherData\":{\"generator\":\"glucx-analyze\",\"t0_ns\":");
        wb_i64(e->w_tl, e->t_first);
        wb_lit(e->w_tl, "}}\n");
        wb_flush(e->w_tl);
        if (e->w_tl->err || fflush(e->f_tl) != 0) {
            snprintf(e->err, sizeof(e->err), "cannot write %s: %s", e->p_tl, strerror(errno));
            return -1;
        }
    }
    wb_flush(e->w_it);
    if (e->w_it->err) {
        snprintf(e->err, sizeof(e->err), "cannot write %s: %s", e->p_iters, strerror(errno));
        return -1;
    }
    return glucx_an_report_write(e);
}
