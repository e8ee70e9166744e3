/*
 * Pairing of compute phases and waits: each begin opens an entry of its rank, each end closes
 * the entry it belongs to (a wait on its own thread; a compute phase by (phase, id), the full
 * phase name compared through its interned copy, on any thread if none is open on its own). A
 * closed wait is kept in the rank's iteration for the
 * late-sender split and the critical path.
 */
#include <inttypes.h>
#include <string.h>

#include "model.h"

/* compute_begin/end phases with this prefix are framework-level communication (METRICS.md) */
#define COMM_PHASE_PREFIX "comm:"
/* open entries a rank keeps; beyond, the oldest is dropped */
#define MAX_OPEN 256

int glucx_an_pair_open(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                       const glucx_an_event_t *ev, int is_wait)
{
    int r = ev->rank;
    if (rs->nopen >= MAX_OPEN) {
        glucx_an_engine_warn(e,
                             "comm 0x%" PRIx64 " rank %d: more than 256 open compute phases "
                             "or waits; the oldest is dropped",
                             c->id, r);
        memmove(rs->open, rs->open + 1, (rs->nopen - 1) * sizeof(*rs->open));
        rs->nopen--;
    }
    if (!GROW(rs->open, rs->capopen, rs->nopen + 1))
        return glucx_an_oom(e, "open phases");
    const glucx_an_name_t *phase = NULL;
    if (!is_wait && !(phase = glucx_an_name_intern(e, ev->phase)))
        return -1;
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
    o->phase = phase;
    glucx_an_bd_change(e, rs, r, ev->ts, is_wait || o->is_comm ? 0 : 1, o->is_comm ? 1 : 0,
                       is_wait ? 1 : 0);
    return 0;
}

/* The newest open entry that @p ev (an end; a compute end: its phase name interned as
 * @p phase) closes, or (size_t)-1. */
static size_t find_open(const rank_st_t *rs, const glucx_an_event_t *ev,
                        const glucx_an_name_t *phase, int is_wait, int any_thread)
{
    size_t i = rs->nopen;
    while (i-- > 0) {
        const open_ent_t *o = &rs->open[i];
        if (o->is_wait == is_wait && (any_thread || o->vtid == ev->vtid) &&
            (is_wait || (o->id == ev->id && o->phase == phase)))
            return i;
    }
    return (size_t)-1;
}

int glucx_an_pair_close(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                        const glucx_an_event_t *ev, int is_wait)
{
    int r = ev->rank;
    /* A wait ends on its own thread. A compute phase pairs on (phase, id): on the same thread
     * if one is open there, else on any thread (a framework may end a phase from another
     * thread, e.g. a communication completed by the backend's thread). */
    /* a name never interned was never opened: nothing to close */
    const glucx_an_name_t *phase = is_wait ? NULL : glucx_an_name_find(e, ev->phase);
    size_t i = (size_t)-1;
    if (is_wait || phase) {
        i = find_open(rs, ev, phase, is_wait, 0);
        if (i == (size_t)-1 && !is_wait)
            i = find_open(rs, ev, phase, 0, 1);
    }
    if (i == (size_t)-1) {
        e->unpaired++;
        glucx_an_bd_advance(e, rs, r, ev->ts);
        return 0;
    }
    open_ent_t o = rs->open[i];
    memmove(rs->open + i, rs->open + i + 1, (rs->nopen - i - 1) * sizeof(*rs->open));
    rs->nopen--;
    glucx_an_bd_change(e, rs, r, ev->ts, is_wait || o.is_comm ? 0 : -1, o.is_comm ? -1 : 0,
                       is_wait ? -1 : 0);
    if (is_wait) {
        riter_t *ri = glucx_an_iter_cur(rs, r);
        if (ri) {
            int64_t w0 = o.ts > ri->start ? o.ts : ri->start;
            if (!GROW(ri->w, ri->capw, ri->nw + 1))
                return glucx_an_oom(e, "waits");
            ri->w[ri->nw] = o.w; /* its id and the message attributed while it was open */
            ri->w[ri->nw].w0 = w0;
            ri->w[ri->nw].w1 = ev->ts;
            ri->nw++;
        }
        glucx_an_tl_wait(e, c, r, o.ts, ev->ts);
    } else {
        glucx_an_tl_phase(e, c, r, &o, ev->ts);
    }
    return 0;
}

uint64_t glucx_an_pair_open_wait(const rank_st_t *rs, int64_t vtid)
{
    for (size_t i = rs->nopen; i-- > 0;)
        if (rs->open[i].is_wait && rs->open[i].vtid == vtid)
            return rs->open[i].w.id;
    return 0;
}
