/*
 * Links (METRICS.md, "Links"): one per (communicator, sender, receiver), with what the link
 * event announced (dimension, nominal bandwidth and latency, transport), the bytes and messages
 * sent over it, and its busy time: the union of its messages' in-flight intervals.
 * Physical links are in plinks.c.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* open intervals a link keeps before committing the older half */
#define LINK_OPEN_INTERVALS 256

link_st_t *glucx_an_link_get(glucx_an_engine_t *e, comm_st_t *c, int32_t src, int32_t dst)
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

int glucx_an_busy_add(glucx_an_ivl_t *busy, int64_t *committed, int64_t *until, int64_t a,
                      int64_t b)
{
    if (a < *until)
        a = *until;
    if (b <= a)
        return 0;
    if (glucx_an_ivl_add(busy, a, b) != 0)
        return -1;
    if (busy->n > LINK_OPEN_INTERVALS) {
        size_t half = busy->n / 2;
        for (size_t i = 0; i < half; i++)
            *committed += busy->v[2 * i + 1] - busy->v[2 * i];
        *until = busy->v[2 * (half - 1) + 1];
        memmove(busy->v, busy->v + 2 * half, (busy->n - half) * 2 * sizeof(int64_t));
        busy->n -= half;
    }
    return 0;
}

int glucx_an_link_busy(link_st_t *l, int64_t a, int64_t b)
{
    return glucx_an_busy_add(&l->busy, &l->busy_committed, &l->committed_until, a, b);
}

int glucx_an_link_announce(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                           const glucx_an_event_t *ev)
{
    glucx_an_bd_advance(e, rs, ev->rank, ev->ts);
    if (ev->src < 0 || ev->dst < 0)
        return 0;
    link_st_t *l = glucx_an_link_get(e, c, ev->src, ev->dst);
    if (!l)
        return glucx_an_oom(e, "links");
    l->announced = 1;
    l->dim = ev->dim;
    l->bw = ev->bandwidth_Bps;
    l->lat = ev->latency_ns;
    free(l->transport);
    l->transport = strdup(ev->transport);
    return 0;
}

void glucx_an_links_finish(glucx_an_engine_t *e)
{
    for (size_t i = 0; i < e->ncomms; i++) {
        comm_st_t *c = e->comms[i];
        for (size_t k = 0; k < c->nlinks; k++) {
            link_st_t *l = c->links[k];
            l->busy_ns = l->busy_committed + glucx_an_ivl_len(&l->busy);
        }
        glucx_an_plinks_finish(c);
    }
}

void glucx_an_links_free(comm_st_t *c)
{
    for (size_t i = 0; i < c->nlinks; i++) {
        free(c->links[i]->transport);
        glucx_an_ivl_free(&c->links[i]->busy);
        free(c->links[i]);
    }
    free(c->links);
    c->links = NULL;
    c->nlinks = c->caplinks = 0;
    glucx_an_plinks_free(c);
}
