/*
 * Messages and waits (METRICS.md, "Messages", "Per rank: the state machine", "Critical path"):
 * a send and its receive are matched on (comm, seq, step, sender, receiver), in FIFO order
 * among messages with the same key; any-source receives take the oldest pending begin with
 * their tag. A complete message occupies its link, splits the waits it overlaps into late
 * sender / late receiver, and is attributed to the receiver's wait its recv_end was emitted in.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* any-source receive begins a rank keeps; beyond, the oldest is dropped */
#define MAX_ANY_SOURCE 4096

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
    if (e->opt.clock_collect) {
        /* pass 1 of a multi-host merge: the pair is all the clock estimate needs */
        if (glucx_an_clock_add(e->opt.clock_collect, m->shost, m->skey, m->sb, m->dhost, m->dkey,
                               m->re) != 0)
            rc = glucx_an_oom(e, "clock samples");
        goto out;
    }
    if (m->re < m->sb) {
        e->causality++;
        goto out;
    }
    link_st_t *l = glucx_an_link_get(e, c, m->src, m->dst);
    if (!l) {
        rc = glucx_an_oom(e, "links");
        goto out;
    }
    int64_t a = m->sb > m->rb ? m->sb : m->rb;
    if (glucx_an_link_busy(l, a, m->re) != 0) {
        rc = glucx_an_oom(e, "link intervals");
        goto out;
    }
    if (glucx_an_route_busy(e, c, m->src, m->dst, a, m->re) != 0) {
        rc = -1;
        goto out;
    }
    riter_t *rr = glucx_an_iter_at(c, m->dst, m->re);
    riter_t *sr = glucx_an_iter_at(c, m->src, m->se > 0 ? m->se : m->sb);
    /* late sender: the receiver waits in [rb, sb) for a send not yet started */
    const rank_st_t *rs_dst = m->dst >= 0 && m->dst < c->nalloc ? &c->ranks[m->dst] : NULL;
    const rank_st_t *rs_src = m->src >= 0 && m->src < c->nalloc ? &c->ranks[m->src] : NULL;
    if (rr && m->sb > m->rb && add_in_waits(rr, rs_dst, &rr->ls, m->rb, m->sb) != 0) {
        rc = glucx_an_oom(e, "wait intervals");
        goto out;
    }
    /* late receiver: the sender waits in [sb, rb) for a receive not yet posted */
    if (sr && m->rb > m->sb && add_in_waits(sr, rs_src, &sr->lr, m->sb, m->rb) != 0) {
        rc = glucx_an_oom(e, "wait intervals");
        goto out;
    }
    msg_attribute(c, m, rr);
    glucx_an_tl_message(e, c, m, l, a);
out:
    drop_msg(e, m);
    return rc;
}

int glucx_an_msg_event(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                       const glucx_an_event_t *ev)
{
    int r = ev->rank;
    int is_send = ev->kind == GLUCX_AN_EV_SEND_BEGIN || ev->kind == GLUCX_AN_EV_SEND_END;
    int is_begin = ev->kind == GLUCX_AN_EV_SEND_BEGIN || ev->kind == GLUCX_AN_EV_RECV_BEGIN;
    int in_coll = (ev->tag & GLUCX_AN_TAG_COLL_BIT) != 0;
    int gloo = !in_coll && (ev->tag & GLUCX_AN_TAG_SLOT_BIT) != 0;
    /* pass 1 of a multi-host merge: the matching only (msg_complete hands the pair over) */
    const int collect = e->opt.clock_collect != NULL;

    if (!collect && !in_coll)
        glucx_an_bd_change(e, rs, r, ev->ts, 0, is_begin ? 1 : -1, 0);
    else if (!collect)
        glucx_an_bd_advance(e, rs, r, ev->ts);

    if (!collect && gloo && ev->peer >= 0 && glucx_an_coll_gloo_msg(e, c, rs, ev) != 0)
        return -1;

    if (is_send) {
        if (ev->peer < 0)
            return 0;
        if (is_begin && !collect) {
            link_st_t *l = glucx_an_link_get(e, c, r, ev->peer);
            if (!l)
                return glucx_an_oom(e, "links");
            l->bytes += ev->bytes;
            l->messages++;
            if (glucx_an_route_send(e, c, r, ev->peer, ev->bytes) != 0)
                return -1;
        }
        int bit = is_begin ? 1 : 2;
        msg_st_t *m = get_msg(e, c, ev->seq, ev->step, r, ev->peer, bit);
        if (!m)
            return glucx_an_oom(e, "messages");
        m->have |= bit;
        if (is_begin || !(m->have & 1)) {
            m->shost = ev->host_index;
            glucx_an_clock_proc_key(ev, m->skey);
        }
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
        if (rs->nany >= MAX_ANY_SOURCE) {
            memmove(rs->any, rs->any + 1, (rs->nany - 1) * sizeof(*rs->any));
            rs->nany--;
        }
        if (!GROW(rs->any, rs->capany, rs->nany + 1))
            return glucx_an_oom(e, "any-source receives");
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
        return glucx_an_oom(e, "messages");
    m->have |= bit;
    if (!is_begin) {
        m->dhost = ev->host_index;
        glucx_an_clock_proc_key(ev, m->dkey);
    }
    if (is_begin) {
        m->rb = ev->ts;
    } else {
        m->re = ev->ts;
        m->wait_id = glucx_an_pair_open_wait(rs, ev->vtid);
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

void glucx_an_msgs_finish(glucx_an_engine_t *e)
{
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
}

void glucx_an_msgs_free(glucx_an_engine_t *e)
{
    for (size_t i = 0; i < e->msgs.cap; i++)
        for (msg_st_t *m = e->msgs.slots[i].val, *next; m; m = next) {
            next = m->next;
            free(m);
        }
    glucx_an_map_free(&e->msgs);
}
