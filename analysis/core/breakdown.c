/*
 * The time breakdown (METRICS.md, "Per rank: the state machine"): a per-rank state machine
 * over the open compute phases, communications and waits. The time between two events of a
 * rank goes to the states open in between, inside the rank's current iteration; each state
 * change is logged for the critical path. At the end of an iteration the rank's totals become
 * its breakdown.
 */
#include "model.h"

static int state_bits(const rank_st_t *rs)
{
    return (rs->n_compute > 0 ? ST_COMPUTE : 0) | (rs->n_comm > 0 ? ST_COMM : 0) |
           (rs->n_wait > 0 ? ST_WAIT : 0);
}

void glucx_an_bd_advance(glucx_an_engine_t *e, rank_st_t *rs, int r, int64_t ts)
{
    if (ts < rs->last_ts) {
        e->out_of_order++;
        return;
    }
    riter_t *ri = glucx_an_iter_cur(rs, r);
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

int glucx_an_bd_log(riter_t *ri, const rank_st_t *rs, int64_t ts)
{
    return log_state(ri, ts, state_bits(rs));
}

void glucx_an_bd_change(glucx_an_engine_t *e, rank_st_t *rs, int r, int64_t ts, int dc, int dm,
                        int dw)
{
    glucx_an_bd_advance(e, rs, r, ts);
    int *cnt[3] = {&rs->n_compute, &rs->n_comm, &rs->n_wait};
    int d[3] = {dc, dm, dw};
    for (int i = 0; i < 3; i++) {
        *cnt[i] += d[i];
        if (*cnt[i] < 0) {
            *cnt[i] = 0;
            e->unpaired++;
        }
    }
    riter_t *ri = glucx_an_iter_cur(rs, r);
    if (ri)
        log_state(ri, rs->last_ts, state_bits(rs));
}

void glucx_an_bd_finish(riter_t *ri)
{
    bd_t *b = &ri->bd;
    b->duration = ri->end - ri->start;
    b->compute = ri->compute;
    b->comm = ri->comm;
    b->overlap = ri->overlap;
    b->wait = ri->wait;
    b->late_sender = glucx_an_ivl_len(&ri->ls);
    b->late_receiver = glucx_an_ivl_len_minus(&ri->lr, &ri->ls);
    b->idle = b->duration - ri->busy;
    if (b->idle < 0)
        b->idle = 0;
}

void glucx_an_bd_add(bd_t *a, const bd_t *b)
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
