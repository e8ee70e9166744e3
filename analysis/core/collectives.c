/*
 * Collectives and schedule decisions (METRICS.md, "Collectives", "Stragglers", "Schedule
 * decisions"). A collective is keyed by (comm, seq), or for the Gloo shim by (comm, slot
 * prefix, seq) from its slot-tagged messages. Once every rank ended it (or the input ended) it
 * becomes a record in the temporary collectives file, joins its group (comm, collective,
 * algorithm, bytes) and charges its last arrival's lateness; its decisions become records in
 * the decisions file, evaluated at the end of the input against the measured groups.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "model.h"

/* Bus bandwidth over algorithm bandwidth of collective @p coll (glucx_coll_t order) on @p n
 * ranks; NAN for a collective it does not know. */
static double busbw_factor_or_nan(int coll, int n)
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
    double f = n > 0 ? busbw_factor_or_nan(coll, n) : 0;
    return isnan(f) ? 0 : f;
}

static int flush_coll(glucx_an_engine_t *e, coll_st_t *co, int n);

static coll_st_t *get_coll(glucx_an_engine_t *e, comm_st_t *c, uint32_t seq, int gloo,
                           unsigned prefix, int64_t ts)
{
    glucx_an_key_t k = glucx_an_key(c->id, seq, gloo ? 1 + (uint64_t)prefix : 0);
    coll_st_t *co = glucx_an_map_get(&e->colls, &k);
    if (co)
        return co;
    int n = glucx_an_comm_nranks(c);
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
            glucx_an_coll_free(old);
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

void glucx_an_coll_free(coll_st_t *co)
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
    /* bandwidths (METRICS.md): a Gloo collective's algorithm is unknown, its busbw is its algbw */
    double algbw = rec.time > 0 ? (double)rec.bytes / (double)rec.time * 1e9 : NAN;
    rec.algbw_Bps = rec.gloo ? NAN : algbw;
    rec.busbw_Bps = rec.gloo ? algbw : algbw * busbw_factor_or_nan(rec.coll, rec.nranks);
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
        return glucx_an_oom(e, "collective groups");
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
        /* an order or partition decision predicts the next forward's exposed communication,
         * not this collective's time: nothing measured per decision (the scheduling section
         * compares per kind); the algorithm kinds and priority (the chunk it picked) predict
         * this collective's time */
        dr.measured = co->nend > 0 && glucx_an_decision_per_coll(d->kind) ? rec.time : -1;
        dr.seq = co->seq;
        dr.kind = d->kind;
        dr.coll = co->coll;
        dr.alg_ran = co->alg;
        dr.chosen = d->chosen;
        dr.agree = d->agree;
        dr.nalt = (uint32_t)d->nalt;
        dr.reason_len = (uint32_t)strlen(d->reason);
        dr.predicted = -1;
        dr.best_idx = -1;
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
    glucx_an_coll_free(co);
    return rc;
}

int glucx_an_coll_gloo_msg(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                           const glucx_an_event_t *ev)
{
    int r = ev->rank;
    int is_send = ev->kind == GLUCX_AN_EV_SEND_BEGIN || ev->kind == GLUCX_AN_EV_SEND_END;
    int is_begin = ev->kind == GLUCX_AN_EV_SEND_BEGIN || ev->kind == GLUCX_AN_EV_RECV_BEGIN;
    unsigned prefix = (unsigned)((ev->tag >> 40) & 0x7f);
    coll_st_t *co = get_coll(e, c, ev->seq, 1, prefix, ev->ts);
    if (!co)
        return glucx_an_oom(e, "collectives");
    if (coll_fit(co, r) != 0)
        return glucx_an_oom(e, "collectives");
    if (co->iteration < 0 && rs->cur_iter)
        co->iteration = (int64_t)rs->cur_iter->index;
    if (co->b[r] < 0) {
        if (glucx_an_iter_coll_start(e, c, rs, r, ev->ts) != 0)
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
    return 0;
}

int glucx_an_coll_event(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                        const glucx_an_event_t *ev)
{
    int r = ev->rank;
    c->has_coll_events = 1;
    coll_st_t *co = get_coll(e, c, ev->seq, 0, 0, ev->ts);
    if (!co)
        return glucx_an_oom(e, "collectives");
    if (coll_fit(co, r) != 0)
        return glucx_an_oom(e, "collectives");
    if (ev->kind == GLUCX_AN_EV_COLL_BEGIN) {
        if (glucx_an_iter_coll_start(e, c, rs, r, ev->ts) != 0)
            return -1;
        glucx_an_bd_change(e, rs, r, ev->ts, 0, 1, 0);
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
    glucx_an_bd_change(e, rs, r, ev->ts, 0, -1, 0);
    if (co->e[r] < 0)
        co->nend++;
    co->e[r] = ev->ts;
    co->alg = ev->alg;
    if (ev->status != 0 || co->status == 1)
        co->status = ev->status;
    if (co->b[r] >= 0)
        glucx_an_tl_collective(e, c, r, co);
    int seen_begun = 0;
    for (int i = 0; i < glucx_an_comm_nranks(c) && i < c->nalloc; i++)
        if (c->ranks[i].seen)
            seen_begun++;
    if (co->nend >= co->nbegin && co->nbegin >= seen_begun)
        return remove_coll(e, co);
    return 0;
}

int glucx_an_dec_event(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                       const glucx_an_event_t *ev)
{
    glucx_an_bd_advance(e, rs, ev->rank, ev->ts);
    coll_st_t *co = get_coll(e, c, ev->seq, 0, 0, ev->ts);
    if (!co)
        return glucx_an_oom(e, "collectives");
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
        return glucx_an_oom(e, "decisions");
    }
    if (ev->nalt) {
        memcpy(d->alt_ids, ev->alt_ids, ev->nalt * sizeof(int32_t));
        memcpy(d->alt_cost, ev->alt_cost_ns, ev->nalt * sizeof(uint64_t));
    }
    co->ndec++;
    return 0;
}

int glucx_an_colls_finish(glucx_an_engine_t *e)
{
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
    return 0;
}

/* ---- decisions, at the end of the input ---------------------------------------------------- */

/* The chosen option's prediction, the cheapest alternative and the saving another option
 * would have brought: measured alternatives of the same collective and size win over the
 * model (METRICS.md, "Schedule decisions"). A priority decision's options are other
 * collectives' chunks, not other ways to run the one it picked: no best option, no saving. */
static void eval_dec(glucx_an_engine_t *e, dec_rec_t *h, const int32_t *ids, const uint64_t *cost)
{
    const int priority = h->kind == GLUCX_AN_DECISION_PRIORITY;
    h->predicted = -1;
    h->best_idx = -1;
    h->saving = 0;
    h->source = 0;
    for (uint32_t i = 0; i < h->nalt; i++) {
        if (ids[i] == h->chosen)
            h->predicted = (int64_t)cost[i];
        if (!priority && (h->best_idx < 0 || cost[i] < cost[h->best_idx]))
            h->best_idx = (int32_t)i;
    }
    if (priority)
        return;
    if (!glucx_an_decision_algs(h->kind)) {
        /* the costs are the predictions of one quantity (the exposed communication the choice
         * leads to): the saving is their difference */
        if (h->best_idx >= 0 && h->predicted > (int64_t)cost[h->best_idx]) {
            h->saving = h->predicted - (int64_t)cost[h->best_idx];
            h->source = 1;
        }
        return;
    }
    if (h->measured < 0)
        return;
    int64_t best_meas = -1;
    for (uint32_t i = 0; i < h->nalt; i++) {
        if (ids[i] == h->alg_ran)
            continue;
        group_st_t *g = glucx_an_group_find(e, h->comm_id, h->coll, ids[i], h->bytes);
        if (g && g->count) {
            int64_t mean = g->sum / (int64_t)g->count;
            if (best_meas < 0 || mean < best_meas)
                best_meas = mean;
        }
    }
    if (best_meas >= 0) {
        if (best_meas < h->measured) {
            h->saving = h->measured - best_meas;
            h->source = 2;
        }
        return;
    }
    if (h->best_idx >= 0 && ids[h->best_idx] != h->chosen && h->predicted > 0) {
        double s = (double)h->measured * (1.0 - (double)cost[h->best_idx] / (double)h->predicted);
        if (s > 0) {
            h->saving = (int64_t)s;
            h->source = 1;
        }
    }
}

/* The per-kind sums of the scheduling section and each kind's largest saving, described. */
static void sched_account(glucx_an_engine_t *e, const dec_view_t *d)
{
    const dec_rec_t *h = &d->h;
    if (h->kind < 0 || h->kind >= GLUCX_AN_DECISION_KINDS)
        return;
    glucx_an_sched_kind_t *s = &e->sched[h->kind];
    s->n++;
    if (h->predicted >= 0)
        s->predicted_sum += (double)h->predicted;
    if (h->best_idx >= 0)
        s->best_sum += (double)d->cost[h->best_idx];
    if (h->best_idx >= 0)
        s->n_best++;
    if (h->measured >= 0) {
        s->n_measured++;
        s->measured_sum += (double)h->measured;
    }
    if (h->saving > s->saving_max && h->best_idx >= 0) {
        char b1[32], b2[32], o1[32], o2[32];
        s->saving_max = h->saving;
        const int order = h->kind == GLUCX_AN_DECISION_ORDER;
        snprintf(s->subject, sizeof(s->subject),
                 "%s %s (%s of %s, comm 0x%" PRIx64 " seq %" PRIu32 "); %s%s was predicted to "
                 "save %s",
                 glucx_an_option_name(h->kind, h->chosen, o1, sizeof(o1)),
                 order ? "went first" : "was chosen", glucx_an_coll_name(h->coll),
                 glucx_an_fmt_bytes(h->bytes, b1, sizeof(b1)), h->comm_id, h->seq,
                 glucx_an_option_name(h->kind, d->ids[h->best_idx], o2, sizeof(o2)),
                 order ? " first" : "", glucx_an_fmt_ns((double)h->saving, b2, sizeof(b2)));
    }
}

int glucx_an_decisions_evaluate(glucx_an_engine_t *e)
{
    FILE *f = e->f_decs;
    if (fflush(f) != 0 || fseeko(f, 0, SEEK_SET) != 0)
        goto io;
    for (;;) {
        off_t pos = ftello(f);
        dec_view_t d;
        int got = glucx_an_dec_read(f, &d);
        if (got < 0)
            goto io;
        if (got == 0)
            break;
        off_t next = ftello(f);
        eval_dec(e, &d.h, d.ids, d.cost);
        sched_account(e, &d);
        /* the algorithm choices' savings (their options are algorithms: the verdict names
         * one); order and partition savings are the plan's (sched), priority has none */
        const int algs = glucx_an_decision_algs(d.h.kind);
        if (algs)
            e->dec_saving += d.h.saving;
        if (algs && d.h.saving > e->dec_best_saving) {
            char b1[32], b2[32];
            e->dec_best_saving = d.h.saving;
            snprintf(e->dec_subject, sizeof(e->dec_subject),
                     "%s of %s ran %s, %s would have saved %s", glucx_an_coll_name(d.h.coll),
                     glucx_an_fmt_bytes(d.h.bytes, b1, sizeof(b1)), glucx_an_alg_name(d.h.chosen),
                     d.h.best_idx >= 0 ? glucx_an_alg_name(d.ids[d.h.best_idx]) : "another option",
                     glucx_an_fmt_ns((double)d.h.saving, b2, sizeof(b2)));
        }
        glucx_an_dec_free(&d);
        /* the record's evaluation, in place */
        if (pos < 0 || next < 0 || fseeko(f, pos, SEEK_SET) != 0 ||
            fwrite(&d.h, sizeof(d.h), 1, f) != 1 || fseeko(f, next, SEEK_SET) != 0)
            goto io;
    }
    if (fflush(f) != 0)
        goto io;
    return 0;
io:
    snprintf(e->err, sizeof(e->err), "cannot write %s (temporary decision records): %s", e->p_decs,
             errno ? strerror(errno) : "short read");
    return -1;
}
