/*
 * The driver of the streaming analysis: it takes events in time order, holds each
 * communicator's events back until its iterations are decided (markers seen, or a repeating
 * collective sequence inferred: iterations.c), then hands every event to the analyzer of its
 * kind (model.h lists them). finish() runs the end-of-input passes in order and the report.
 * What each number means is defined in analysis/METRICS.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "wbuf.h"

#define MAX_WARNINGS 64
#define MAX_BUFFERED_EVENTS 2000000

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
        glucx_an_tl_rank(e, c, r);
    }
    return rs;
}

/* ---- per-event dispatch ------------------------------------------------------------------- */

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
    if (glucx_an_iter_whole(e, c, rs, r, ev->ts) != 0)
        return -1;
    if (ev->kind == GLUCX_AN_EV_ERROR || ev->kind == GLUCX_AN_EV_COLL_END)
        glucx_an_fail_event(e, c, ev);
    switch (ev->kind) {
    case GLUCX_AN_EV_COMM_INIT:
        free(rs->host);
        rs->host = strdup(ev->host);
        rs->package = ev->package;
        rs->vpid = ev->vpid; /* the process -> comm map is filled on arrival (note_process) */
        glucx_an_bd_advance(e, rs, r, ev->ts);
        return 0;
    case GLUCX_AN_EV_LINK:
        return glucx_an_link_announce(e, c, rs, ev);
    case GLUCX_AN_EV_PHYS_LINK:
        return glucx_an_plink_announce(e, c, rs, ev);
    case GLUCX_AN_EV_ROUTE:
        return glucx_an_route_event(e, c, rs, ev);
    case GLUCX_AN_EV_COLL_BEGIN:
    case GLUCX_AN_EV_COLL_END:
        return glucx_an_coll_event(e, c, rs, ev);
    case GLUCX_AN_EV_SCHED_DECISION:
        return glucx_an_dec_event(e, c, rs, ev);
    case GLUCX_AN_EV_SEND_BEGIN:
    case GLUCX_AN_EV_SEND_END:
    case GLUCX_AN_EV_RECV_BEGIN:
    case GLUCX_AN_EV_RECV_END:
        return glucx_an_msg_event(e, c, rs, ev);
    case GLUCX_AN_EV_WAIT_BEGIN:
        return glucx_an_pair_open(e, c, rs, ev, 1);
    case GLUCX_AN_EV_WAIT_END:
        return glucx_an_pair_close(e, c, rs, ev, 1);
    case GLUCX_AN_EV_COMPUTE_BEGIN:
        return glucx_an_pair_open(e, c, rs, ev, 0);
    case GLUCX_AN_EV_COMPUTE_END:
        return glucx_an_pair_close(e, c, rs, ev, 0);
    case GLUCX_AN_EV_ITERATION_BEGIN:
    case GLUCX_AN_EV_ITERATION_END:
        return glucx_an_iter_marker(e, c, rs, ev);
    case GLUCX_AN_EV_ERROR:
        glucx_an_engine_warn(e, "comm 0x%" PRIx64 " rank %d reported %s: %s", c->id, r,
                             glucx_an_status_name(ev->status), ev->text);
        glucx_an_bd_advance(e, rs, r, ev->ts);
        return 0;
    default:
        glucx_an_bd_advance(e, rs, r, ev->ts);
        return 0;
    }
}

/* ---- events held back until the iterations are decided ------------------------------------ */

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
        return glucx_an_oom(e, "buffered events");
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
            return glucx_an_oom(e, "buffered events");
    }
    if (ev->nhops) {
        b->hops = (const int32_t *)arena_dup(c, ev->hops, ev->nhops * sizeof(int32_t));
        if (!b->hops)
            return glucx_an_oom(e, "buffered events");
        if (ev->dirs) {
            b->dirs = (const uint8_t *)arena_dup(c, ev->dirs, ev->nhops);
            if (!b->dirs)
                return glucx_an_oom(e, "buffered events");
        }
    }
    if (ev->nalt) {
        b->alt_ids = (const int32_t *)arena_dup(c, ev->alt_ids, ev->nalt * sizeof(int32_t));
        b->alt_cost_ns =
            (const uint64_t *)arena_dup(c, ev->alt_cost_ns, ev->nalt * sizeof(uint64_t));
        if (!b->alt_ids || !b->alt_cost_ns)
            return glucx_an_oom(e, "buffered events");
    }
    c->nbev++;
    uint32_t p = 0;
    if (glucx_an_iter_infer(e, c, ev, &p) != 0)
        return -1;
    if (p)
        return decide(e, c, MODE_INFERRED, p);
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
        return glucx_an_oom(e, "processes");
    return 0;
}

static int feed_one(glucx_an_engine_t *e, const glucx_an_event_t *ev)
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
        return glucx_an_oom(e, "communicators");
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

/* ---- multi-host merge: clock collection (pass 1) and corrected order (pass 2) -------------- */

/* Pass 1: the event's time for t0, and its message events for the matching. */
static int collect(glucx_an_engine_t *e, const glucx_an_event_t *ev)
{
    glucx_an_clock_seen(e->opt.clock_collect, ev->host_index, ev->ts);
    if (ev->kind != GLUCX_AN_EV_SEND_BEGIN && ev->kind != GLUCX_AN_EV_SEND_END &&
        ev->kind != GLUCX_AN_EV_RECV_BEGIN && ev->kind != GLUCX_AN_EV_RECV_END)
        return 0;
    if (ev->comm_id == 0 || ev->rank < 0)
        return 0;
    comm_st_t *c = get_comm(e, ev->comm_id);
    if (!c)
        return glucx_an_oom(e, "communicators");
    rank_st_t *rs = get_rank(e, c, ev->rank, ev->ts);
    if (!rs)
        return 0;
    return glucx_an_msg_event(e, c, rs, ev);
}

/* An event held in the reorder window: one allocation with its strings and arrays. */
typedef struct rq_ent {
    int64_t ts;
    uint64_t arrival;
    glucx_an_event_t *ev;
} rq_ent_t;

static glucx_an_event_t *clone_event(const glucx_an_event_t *ev)
{
    const char *const strs[] = {ev->name, ev->host, ev->transport, ev->reason, ev->phase, ev->text};
    size_t n = sizeof(*ev), ns = sizeof(strs) / sizeof(strs[0]);
    size_t hops = ev->nhops * sizeof(int32_t), alts = ev->nalt * sizeof(int32_t);
    size_t costs = ev->nalt * sizeof(uint64_t), dirs = ev->dirs ? ev->nhops : 0;
    n += hops + costs + alts + dirs; /* 8-byte aligned first: after the struct, costs, ids */
    for (size_t i = 0; i < ns; i++)
        n += strlen(strs[i]) + 1;
    glucx_an_event_t *c = malloc(n);
    if (!c)
        return NULL;
    *c = *ev;
    char *p = (char *)(c + 1);
    if (ev->nalt) {
        memcpy(p, ev->alt_cost_ns, costs);
        c->alt_cost_ns = (const uint64_t *)p;
        p += costs;
        memcpy(p, ev->alt_ids, alts);
        c->alt_ids = (const int32_t *)p;
        p += alts;
    }
    if (ev->nhops) {
        memcpy(p, ev->hops, hops);
        c->hops = (const int32_t *)p;
        p += hops;
        if (ev->dirs) {
            memcpy(p, ev->dirs, dirs);
            c->dirs = (const uint8_t *)p;
            p += dirs;
        }
    }
    const char **dst[] = {&c->name, &c->host, &c->transport, &c->reason, &c->phase, &c->text};
    for (size_t i = 0; i < ns; i++) {
        size_t l = strlen(strs[i]) + 1;
        memcpy(p, strs[i], l);
        *dst[i] = p;
        p += l;
    }
    return c;
}

static int rq_less(const rq_ent_t *a, const rq_ent_t *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->arrival < b->arrival);
}

static int rq_push(glucx_an_engine_t *e, rq_ent_t x)
{
    if (!GROW(e->rq, e->caprq, e->nrq + 1))
        return -1;
    size_t i = e->nrq++;
    while (i > 0 && rq_less(&x, &e->rq[(i - 1) / 2])) {
        e->rq[i] = e->rq[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->rq[i] = x;
    return 0;
}

static rq_ent_t rq_pop(glucx_an_engine_t *e)
{
    rq_ent_t top = e->rq[0], x = e->rq[--e->nrq];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const rq_ent_t *best = &x;
        if (l < e->nrq && rq_less(&e->rq[l], best)) {
            m = l;
            best = &e->rq[l];
        }
        if (l + 1 < e->nrq && rq_less(&e->rq[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        e->rq[i] = e->rq[m];
        i = m;
    }
    if (e->nrq > 0)
        e->rq[i] = x;
    return top;
}

/* Analyse the held events whose corrected time is at most @p upto; 0 or -1. */
static int rq_release(glucx_an_engine_t *e, int64_t upto)
{
    while (e->nrq > 0 && e->rq[0].ts <= upto) {
        rq_ent_t x = rq_pop(e);
        int rc = feed_one(e, x.ev);
        free(x.ev);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Pass 2: the event at its corrected time, analysed once no later raw event can come before it
 * (the watermark: the earliest corrected time of the current raw time on any host). */
static int reorder(glucx_an_engine_t *e, const glucx_an_event_t *ev)
{
    uint64_t key[3];
    glucx_an_clock_proc_key(ev, key);
    const int64_t t = glucx_an_clock_apply(e->opt.clock, ev->host_index, key, ev->ts);
    const int64_t wm = glucx_an_clock_watermark(e->opt.clock, ev->ts);
    if (t <= wm) {
        /* its turn already: after the held events up to its time (they arrived earlier), no
         * copy needed */
        if (rq_release(e, t) != 0)
            return -1;
        glucx_an_event_t local = *ev;
        local.ts = t;
        e->rq_arrivals++;
        if (feed_one(e, &local) != 0)
            return -1;
        return rq_release(e, wm);
    }
    rq_ent_t x = {t, e->rq_arrivals++, clone_event(ev)};
    if (!x.ev)
        return glucx_an_oom(e, "reorder window");
    x.ev->ts = x.ts;
    if (rq_push(e, x) != 0) {
        free(x.ev);
        return glucx_an_oom(e, "reorder window");
    }
    return rq_release(e, wm);
}

int glucx_an_engine_set_clock(glucx_an_engine_t *e, const glucx_an_clock_t *clock)
{
    if (e->events > 0 || e->nrq > 0 || e->opt.clock_collect)
        return -1;
    e->opt.clock = clock;
    return 0;
}

int glucx_an_engine_feed(glucx_an_engine_t *e, const glucx_an_event_t *ev)
{
    if (e->opt.clock_collect)
        return collect(e, ev);
    if (e->opt.clock)
        return reorder(e, ev);
    return feed_one(e, ev);
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

int glucx_an_mkdir_p(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
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
    if (glucx_an_mkdir_p(opt->out_dir) != 0) {
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
    glucx_an_tl_begin(e);
    return e;
}

static void free_comm(comm_st_t *c)
{
    while (c->iters) {
        iter_t *it = c->iters;
        c->iters = it->next;
        glucx_an_iter_free(it);
    }
    for (int r = 0; r < c->nalloc; r++) {
        free(c->ranks[r].host);
        free(c->ranks[r].open);
        free(c->ranks[r].any);
    }
    free(c->ranks);
    glucx_an_links_free(c);
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
    glucx_an_msgs_free(e);
    for (size_t i = 0; i < e->nrq; i++)
        free(e->rq[i].ev);
    free(e->rq);
    for (size_t i = 0; i < e->colls.cap; i++)
        if (e->colls.slots[i].val)
            glucx_an_coll_free(e->colls.slots[i].val);
    for (size_t i = 0; i < e->groups.cap; i++)
        free(e->groups.slots[i].val);
    glucx_an_map_free(&e->colls);
    glucx_an_map_free(&e->groups);
    glucx_an_map_free(&e->links);
    glucx_an_map_free(&e->comm_by_id);
    glucx_an_map_free(&e->vpid_map);
    glucx_an_names_free(e);
    for (size_t i = 0; i < e->ncomms; i++)
        free_comm(e->comms[i]);
    free(e->comms);
    free(e->w_it);
    free(e->w_tl);
    close_tmp(&e->f_iters, &e->p_iters, 1);
    close_tmp(&e->f_colls, &e->p_colls, 1);
    close_tmp(&e->f_decs, &e->p_decs, 1);
    close_tmp(&e->f_tl, &e->p_tl, !e->finished);
    glucx_an_strlist_free(&e->paths);
    glucx_an_strlist_free(&e->partial);
    glucx_an_strlist_free(&e->warnings);
    glucx_an_strlist_free(&e->unknown_events);
    glucx_an_strlist_free(&e->mismatched);
    glucx_an_strlist_free(&e->pid_files);
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
    /* the events still in the merge's reorder window come first */
    if (rq_release(e, INT64_MAX) != 0)
        return -1;
    /* the order matters: iterations and collectives close first (they feed the stragglers,
     * groups and links), then the trace facts, the outputs streamed so far, and at last the
     * passes that need every result (link totals, decision savings, the verdict) */
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        if (c->mode == MODE_UNDECIDED) {
            uint32_t p = glucx_an_iter_find_period(c, 1);
            int mode = p ? MODE_INFERRED : (c->nsig ? MODE_PER_COLL : MODE_WHOLE);
            if (decide(e, c, mode, p ? p : 1) != 0)
                return -1;
        }
    }
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        while (c->iters)
            if (glucx_an_iter_finalize(e, c, c->iters, 0) != 0)
                return -1;
    }
    if (glucx_an_colls_finish(e) != 0)
        return -1;
    if (e->fw_orphans > 0)
        glucx_an_engine_partial(e,
                                "%" PRIu64 " framework events (iterations, compute phases, "
                                "buckets) come from processes without a glucx communicator "
                                "and are not analysed (a Gloo-TCP job? the glucx backend or "
                                "GLOO_DEVICE_TRANSPORT=UCX traces its communication)",
                                e->fw_orphans);
    glucx_an_msgs_finish(e);
    if (e->opt.clock) {
        /* a host whose clock could not be estimated from both sides is named (not one left
         * uncorrected because its raw clock satisfies every message: nothing to warn of) */
        for (int h = 0; h < glucx_an_clock_nhosts(e->opt.clock); h++) {
            const glucx_an_clock_host_t *ho = glucx_an_clock_host(e->opt.clock, h);
            if (ho && ho->why[0] && ho->status != GLUCX_AN_CLOCK_CONSISTENT)
                glucx_an_engine_warn(e, "clock correction: %s", ho->why);
        }
        if (glucx_an_clock_stats(e->opt.clock).clc_unresolved)
            glucx_an_engine_warn(e,
                                 "clock correction: the logical clock did not settle in %d "
                                 "passes (mis-paired messages?): violations may remain",
                                 64);
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
    if (glucx_an_tl_finish(e) != 0)
        return -1;
    wb_flush(e->w_it);
    if (e->w_it->err) {
        snprintf(e->err, sizeof(e->err), "cannot write %s: %s", e->p_iters, strerror(errno));
        return -1;
    }
    glucx_an_links_finish(e);
    if (glucx_an_decisions_evaluate(e) != 0)
        return -1;
    glucx_an_verdict(e);
    return glucx_an_report_write(e);
}
