/*
 * Physical links (METRICS.md, "Physical links"): one per (communicator, phys_link id), with what
 * its phys_link event announced, and the routes of the route events (the physical links each
 * ordered rank pair's messages cross, and which way). Every message is charged to every link of
 * its route, in total and in the direction it crosses it: bytes and messages at its send, busy
 * time when it is matched; critical-path time (in total only) when one of its transfer segments
 * is on an iteration's critical path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

plink_st_t *glucx_an_plink_get(comm_st_t *c, int32_t id)
{
    glucx_an_key_t k = glucx_an_key((uint64_t)(uint32_t)id, 0, 0);
    plink_st_t *l = glucx_an_map_get(&c->plink_map, &k);
    if (l)
        return l;
    l = calloc(1, sizeof(*l));
    if (!l || !GROW(c->plinks, c->capplinks, c->nplinks + 1) ||
        glucx_an_map_put(&c->plink_map, &k, l) != 0) {
        free(l);
        return NULL;
    }
    l->id = id;
    l->dim = -1;
    l->a_kind = l->b_kind = -1;
    l->a = l->b = -1;
    l->committed_until = INT64_MIN;
    l->dir[0].committed_until = l->dir[1].committed_until = INT64_MIN;
    c->plinks[c->nplinks++] = l;
    return l;
}

int glucx_an_plink_announce(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                            const glucx_an_event_t *ev)
{
    glucx_an_bd_advance(e, rs, ev->rank, ev->ts);
    if (ev->link_id < 0)
        return 0;
    plink_st_t *l = glucx_an_plink_get(c, ev->link_id);
    if (!l)
        return glucx_an_oom(e, "physical links");
    l->announced = 1;
    l->dim = ev->dim;
    l->a_kind = ev->a_kind;
    l->a = ev->a;
    l->b_kind = ev->b_kind;
    l->b = ev->b;
    l->bw = ev->bandwidth_Bps;
    l->lat = ev->latency_ns;
    return 0;
}

int glucx_an_route_event(glucx_an_engine_t *e, comm_st_t *c, rank_st_t *rs,
                         const glucx_an_event_t *ev)
{
    glucx_an_bd_advance(e, rs, ev->rank, ev->ts);
    if (ev->rank < 0 || ev->dst < 0)
        return 0;
    glucx_an_key_t k = glucx_an_key((uint64_t)(uint32_t)ev->rank, (uint64_t)(uint32_t)ev->dst, 0);
    route_st_t *r = glucx_an_map_get(&c->route_map, &k);
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r || !GROW(c->routes, c->caproutes, c->nroutes + 1) ||
            glucx_an_map_put(&c->route_map, &k, r) != 0) {
            free(r);
            return glucx_an_oom(e, "routes");
        }
        r->src = ev->rank;
        r->dst = ev->dst;
        c->routes[c->nroutes++] = r;
    }
    int32_t *h = ev->nhops ? malloc(ev->nhops * sizeof(int32_t)) : NULL;
    if (ev->nhops && !h)
        return glucx_an_oom(e, "routes");
    if (ev->nhops)
        memcpy(h, ev->hops, ev->nhops * sizeof(int32_t));
    /* directions: only when the event has them and each is 0 or 1 (else the route charges the
     * links' totals only) */
    uint8_t *d = NULL;
    int dirs_ok = ev->nhops && ev->dirs != NULL;
    for (size_t i = 0; dirs_ok && i < ev->nhops; i++)
        dirs_ok = ev->dirs[i] <= 1;
    if (dirs_ok && !(d = malloc(ev->nhops))) {
        free(h);
        return glucx_an_oom(e, "routes");
    }
    if (d)
        memcpy(d, ev->dirs, ev->nhops);
    free(r->hops);
    free(r->dirs);
    r->hops = h;
    r->dirs = d;
    r->n = ev->nhops;
    return 0;
}

const route_st_t *glucx_an_route(const comm_st_t *c, int32_t src, int32_t dst)
{
    if (src < 0 || dst < 0)
        return NULL;
    glucx_an_key_t k = glucx_an_key((uint64_t)(uint32_t)src, (uint64_t)(uint32_t)dst, 0);
    return glucx_an_map_get(&c->route_map, &k);
}

int glucx_an_route_send(glucx_an_engine_t *e, comm_st_t *c, int32_t src, int32_t dst,
                        uint64_t bytes)
{
    const route_st_t *r = glucx_an_route(c, src, dst);
    for (size_t i = 0; r && i < r->n; i++) {
        if (r->hops[i] < 0)
            continue;
        plink_st_t *l = glucx_an_plink_get(c, r->hops[i]);
        if (!l)
            return glucx_an_oom(e, "physical links");
        l->bytes += bytes;
        l->messages++;
        if (r->dirs) {
            l->dir[r->dirs[i]].bytes += bytes;
            l->dir[r->dirs[i]].messages++;
        }
    }
    return 0;
}

int glucx_an_route_busy(glucx_an_engine_t *e, comm_st_t *c, int32_t src, int32_t dst, int64_t a,
                        int64_t b)
{
    const route_st_t *r = glucx_an_route(c, src, dst);
    for (size_t i = 0; r && i < r->n; i++) {
        if (r->hops[i] < 0)
            continue;
        plink_st_t *l = glucx_an_plink_get(c, r->hops[i]);
        if (!l)
            return glucx_an_oom(e, "physical links");
        if (glucx_an_busy_add(&l->busy, &l->busy_committed, &l->committed_until, a, b) != 0)
            return glucx_an_oom(e, "physical link intervals");
        plink_dir_t *d = r->dirs ? &l->dir[r->dirs[i]] : NULL;
        if (d && glucx_an_busy_add(&d->busy, &d->busy_committed, &d->committed_until, a, b) != 0)
            return glucx_an_oom(e, "physical link intervals");
    }
    return 0;
}

void glucx_an_route_cp(comm_st_t *c, int32_t src, int32_t dst, int64_t ns)
{
    const route_st_t *r = glucx_an_route(c, src, dst);
    for (size_t i = 0; r && i < r->n; i++) {
        plink_st_t *l = r->hops[i] >= 0 ? glucx_an_plink_get(c, r->hops[i]) : NULL;
        if (l)
            l->cp_ns += ns;
    }
}

void glucx_an_plinks_finish(comm_st_t *c)
{
    for (size_t k = 0; k < c->nplinks; k++) {
        plink_st_t *l = c->plinks[k];
        l->busy_ns = l->busy_committed + glucx_an_ivl_len(&l->busy);
        for (int d = 0; d < 2; d++)
            l->dir[d].busy_ns = l->dir[d].busy_committed + glucx_an_ivl_len(&l->dir[d].busy);
    }
}

double glucx_an_plink_dir_of_nominal(const plink_st_t *l, int d)
{
    const plink_dir_t *x = &l->dir[d];
    if (!(l->bw > 0) || x->busy_ns <= 0)
        return NAN;
    return (double)x->bytes / (double)x->busy_ns * 1e9 / l->bw;
}

double glucx_an_plink_of_nominal(const plink_st_t *l, int *dir)
{
    double best = NAN;
    int at = -1;
    for (int d = 0; d < 2; d++) {
        double v = glucx_an_plink_dir_of_nominal(l, d);
        if (!isnan(v) && (isnan(best) || v > best)) {
            best = v;
            at = d;
        }
    }
    if (dir)
        *dir = at;
    return best;
}

void glucx_an_plinks_free(comm_st_t *c)
{
    for (size_t i = 0; i < c->nplinks; i++) {
        glucx_an_ivl_free(&c->plinks[i]->busy);
        glucx_an_ivl_free(&c->plinks[i]->dir[0].busy);
        glucx_an_ivl_free(&c->plinks[i]->dir[1].busy);
        free(c->plinks[i]);
    }
    free(c->plinks);
    c->plinks = NULL;
    c->nplinks = c->capplinks = 0;
    glucx_an_map_free(&c->plink_map);
    for (size_t i = 0; i < c->nroutes; i++) {
        free(c->routes[i]->hops);
        free(c->routes[i]->dirs);
        free(c->routes[i]);
    }
    free(c->routes);
    c->routes = NULL;
    c->nroutes = c->caproutes = 0;
    glucx_an_map_free(&c->route_map);
}
