/*
 * A failed run (METRICS.md, "Verdict"): the trace holds an `error` event (a failure as libglucx
 * first recorded it: a failed collective or operation, a timeout, a dead peer, an abort) or a
 * `coll_end` whose status is not OK, on any rank. The earliest of either kind is kept; the
 * verdict then says when the run failed and names its first error instead of a bottleneck
 * measured on the iterations the failure cut short.
 */
#include <stdio.h>

#include "model.h"

static void note(fail_ev_t *f, const comm_st_t *c, const glucx_an_event_t *ev)
{
    if (f->seen && f->ts <= ev->ts)
        return; /* the first one in time stays */
    f->seen = 1;
    f->ts = ev->ts;
    f->comm_id = c->id;
    f->rank = ev->rank;
    f->status = ev->status;
    f->coll = ev->coll;
    f->seq = ev->seq;
    snprintf(f->text, sizeof(f->text), "%s", ev->kind == GLUCX_AN_EV_ERROR ? ev->text : "");
}

void glucx_an_fail_event(glucx_an_engine_t *e, const comm_st_t *c, const glucx_an_event_t *ev)
{
    if (ev->kind == GLUCX_AN_EV_ERROR)
        note(&e->fail.error, c, ev);
    else if (ev->kind == GLUCX_AN_EV_COLL_END && ev->status != 0)
        note(&e->fail.coll_end, c, ev);
}

int glucx_an_failed(const glucx_an_engine_t *e, int64_t *ts_p, const fail_ev_t **first_p)
{
    const fail_ev_t *er = &e->fail.error, *ce = &e->fail.coll_end;
    if (!er->seen && !ce->seen)
        return 0;
    if (er->seen && ce->seen)
        *ts_p = er->ts < ce->ts ? er->ts : ce->ts;
    else
        *ts_p = er->seen ? er->ts : ce->ts;
    *first_p = er->seen ? er : ce;
    return 1;
}
