/*
 * The critical path of an iteration (METRICS.md, "Critical path"): from the rank that ended
 * last, walk back through its latest wait; a wait for a message whose send started inside it
 * (a late sender) continues on the sender at the send's begin, otherwise the wait is the
 * transfer itself (or a plain wait). Between waits the rank's own state log gives compute,
 * communication or idle segments. Each transfer's time is charged to its link.
 */
#include <string.h>

#include "model.h"

/* segments a path keeps; beyond, it is marked truncated */
#define MAX_SEGMENTS 100000

static int seg_push(segs_t *s, int rank, int kind, int64_t a, int64_t b, int32_t link, int32_t peer,
                    int64_t seq)
{
    if (b <= a)
        return 0;
    if (s->n && s->v[s->n - 1].rank == rank && s->v[s->n - 1].kind == kind &&
        kind != SEG_TRANSFER && s->v[s->n - 1].a == b) {
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
        return SEG_COMPUTE;
    if (bits & ST_WAIT)
        return SEG_WAIT;
    if (bits & ST_COMM)
        return SEG_COMM;
    return SEG_IDLE;
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

int glucx_an_cp_walk(glucx_an_engine_t *e, comm_st_t *c, iter_t *it, segs_t *s, int64_t *start_p,
                     int64_t *end_p)
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
            if (seg_push(s, src, SEG_TRANSFER, w->m_sb, we, w->m_link, r, w->m_seq) != 0)
                return -1;
            link_st_t *l = glucx_an_link_get(e, c, src, r);
            if (l)
                l->cp_ns += we - w->m_sb;
            glucx_an_route_cp(c, src, r, we - w->m_sb);
            r = src;
            t = w->m_sb;
        } else if (w->has_msg) {
            /* the data was on its way before the wait began: the transfer itself */
            if (seg_push(s, r, SEG_TRANSFER, w->w0, we, w->m_link, src, w->m_seq) != 0)
                return -1;
            link_st_t *l = src >= 0 ? glucx_an_link_get(e, c, src, r) : NULL;
            if (l)
                l->cp_ns += we - w->w0;
            if (src >= 0)
                glucx_an_route_cp(c, src, r, we - w->w0);
            t = w->w0;
        } else {
            if (seg_push(s, r, SEG_WAIT, w->w0, we, -1, -1, -1) != 0)
                return -1;
            t = w->w0;
        }
    }
    if (guard >= limit)
        s->truncated = 1;
    *start_p = t;
    return 0;
}
