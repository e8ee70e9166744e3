/*
 * Iterations (METRICS.md, "Iterations"): windows per rank from iteration markers, or inferred
 * from the repeating sequence of collectives (period and set-up offset found on a reference
 * rank's collective starts while the communicator's events are buffered), or one per
 * collective, or the whole trace. An iteration closes once every seen rank ended it (or too
 * many are open); closing computes its breakdown and critical path and writes its record.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

riter_t *glucx_an_iter_rank(iter_t *it, int r)
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

riter_t *glucx_an_iter_cur(rank_st_t *rs, int r)
{
    return rs->cur_iter ? glucx_an_iter_rank(rs->cur_iter, r) : NULL;
}

riter_t *glucx_an_iter_at(comm_st_t *c, int r, int64_t ts)
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

static int try_finalize(glucx_an_engine_t *e, comm_st_t *c)
{
    unsigned maxopen = e->opt.max_open_iterations ? e->opt.max_open_iterations : 16;
    while (c->iters) {
        iter_t *it = c->iters;
        int nr = glucx_an_comm_nranks(c), ready = 1;
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
        if (glucx_an_iter_finalize(e, c, it, !ready) != 0)
            return -1;
    }
    return 0;
}

static int rank_iter_end(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, int r, int64_t ts)
{
    glucx_an_bd_advance(e, rs, r, ts);
    iter_t *it = rs->cur_iter;
    if (!it)
        return 0;
    riter_t *ri = glucx_an_iter_rank(it, r);
    if (!ri)
        return glucx_an_oom(e, "iteration ranks");
    ri->ended = 1;
    ri->end = rs->last_ts;
    rs->cur_iter = NULL;
    glucx_an_tl_iteration(e, c, r, it->index, ri->start, ri->end);
    return try_finalize(e, c);
}

static int rank_iter_begin(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, int r, uint64_t index,
                           int64_t ts)
{
    if (rs->cur_iter && rank_iter_end(e, c, rs, r, ts) != 0)
        return -1;
    glucx_an_bd_advance(e, rs, r, ts);
    iter_t *it = iter_get(c, index);
    riter_t *ri = it ? glucx_an_iter_rank(it, r) : NULL;
    if (!ri)
        return glucx_an_oom(e, "iterations");
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
    return glucx_an_bd_log(ri, rs, ri->start) == 0 ? 0 : glucx_an_oom(e, "state log");
}

int glucx_an_iter_coll_start(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, int r, int64_t ts)
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

int glucx_an_iter_whole(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs, int r, int64_t ts)
{
    if (c->mode != MODE_WHOLE || rs->cur_iter || rs->cstarts != 0)
        return 0;
    rs->cstarts = 1;
    return rank_iter_begin(e, c, rs, r, 0, ts);
}

int glucx_an_iter_marker(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                         const glucx_an_event_t *ev)
{
    int r = ev->rank;
    if (c->mode != MODE_MARKERS) {
        glucx_an_bd_advance(e, rs, r, ev->ts);
        return 0;
    }
    if (ev->kind == GLUCX_AN_EV_ITERATION_BEGIN)
        return rank_iter_begin(e, c, rs, r, ev->id, ev->ts);
    if (!rs->cur_iter || rs->cur_iter->index != ev->id) {
        glucx_an_engine_warn(
            e, "comm 0x%" PRIx64 " rank %d: iteration_end %" PRIu64 " without its begin", c->id, r,
            ev->id);
        glucx_an_bd_advance(e, rs, r, ev->ts);
        return 0;
    }
    return rank_iter_end(e, c, rs, r, ev->ts);
}

static void riter_free(riter_t *ri)
{
    glucx_an_ivl_free(&ri->ls);
    glucx_an_ivl_free(&ri->lr);
    free(ri->w);
    free(ri->log);
}

void glucx_an_iter_free(iter_t *it)
{
    for (int r = 0; r < it->nr; r++)
        riter_free(&it->r[r]);
    free(it->r);
    free(it);
}

int glucx_an_iter_finalize(glucx_an_engine_t *e, comm_st_t *c, iter_t *it, int forced)
{
    int rc = 0;
    iter_result_t res;
    memset(&res, 0, sizeof(res));
    res.complete = !forced && c->size > 0;
    /* ranks still inside this iteration (forced close / end of input) end at their last event */
    for (int r = 0; r < it->nr && r < c->nalloc; r++) {
        riter_t *ri = &it->r[r];
        if (!ri->begun || ri->ended)
            continue;
        rank_st_t *rs = &c->ranks[r];
        if (rs->cur_iter == it) {
            glucx_an_bd_advance(e, rs, r, rs->last_ts);
            rs->cur_iter = NULL;
        }
        ri->ended = 1;
        ri->end = rs->last_ts > ri->start ? rs->last_ts : ri->start;
        if (c->mode == MODE_MARKERS) {
            res.complete = 0;
            glucx_an_engine_partial(e,
                                    "comm 0x%" PRIx64 " rank %d: iteration %" PRIu64
                                    " has no iteration_end (trace truncated?)",
                                    c->id, r, it->index);
        }
    }
    for (int r = 0; r < (c->size > 0 ? c->size : it->nr); r++)
        if (r >= it->nr || !it->r[r].begun)
            res.complete = 0;
    res.start = INT64_MAX;
    res.end = INT64_MIN;
    int64_t nbegun = 0;
    for (int r = 0; r < it->nr; r++) {
        riter_t *ri = &it->r[r];
        if (!ri->begun)
            continue;
        if (ri->start < res.start)
            res.start = ri->start;
        if (ri->end > res.end)
            res.end = ri->end;
        nbegun++;
        glucx_an_bd_finish(ri);
        glucx_an_bd_add(&res.tot, &ri->bd);
        if (r < c->nalloc)
            glucx_an_bd_add(&c->ranks[r].tot, &ri->bd);
    }
    if (res.start == INT64_MAX)
        res.start = res.end = 0;
    segs_t s;
    memset(&s, 0, sizeof(s));
    res.cp = &s;
    res.cp_start = res.start;
    res.cp_end = res.end;
    if (glucx_an_cp_walk(e, c, it, &s, &res.cp_start, &res.cp_end) != 0) {
        rc = glucx_an_oom(e, "critical path");
        goto out;
    }
    for (size_t i = 0; i < s.n; i++)
        res.cp_by_kind[s.v[i].kind] += s.v[i].b - s.v[i].a;
    if (glucx_an_report_iteration(e, c, it, &res) != 0) {
        rc = -1;
        goto out;
    }
    e->iterations++;
    if (res.complete)
        e->complete_iterations++;
    /* an iteration lasts the mean of its ranks' durations: the span from the first rank's
     * begin to the last rank's end overstates it when ranks are skewed (METRICS.md) */
    e->iter_time_sum += nbegun > 0 ? res.tot.duration / nbegun : res.end - res.start;
    e->cp_sum += res.cp_end - res.cp_start;
    glucx_an_bd_add(&e->tot, &res.tot);
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
    glucx_an_iter_free(it);
    return rc;
}

/* ---- inference ----------------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h * 0xbf58476d1ce4e5b9u;
}

/* Smallest period p of the signatures after a non-repeating prefix of o <= 16 (set-up
 * collectives): sig[i] == sig[i+p] for all i >= o, accepted when n - o >= need(p). */
uint32_t glucx_an_iter_find_period(comm_st_t *c, int final)
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

int glucx_an_iter_infer(glucx_an_engine_t *e, comm_st_t *c, const glucx_an_event_t *ev,
                        uint32_t *period_p)
{
    *period_p = 0;
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
                return glucx_an_oom(e, "collective signatures");
            c->sigs[c->nsig++] = sig;
            *period_p = glucx_an_iter_find_period(c, 0);
        }
    }
    return 0;
}
