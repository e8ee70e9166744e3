/*
 * Congestion-aware costs of the flat algorithms' steps on a topology file's network.
 *
 * A flat algorithm (ring, recursive doubling/halving, Bruck, pairwise) runs in steps in which
 * every rank sends one message to a partner given by a pattern: r XOR d, r + d or r - d (mod n).
 * On a hierarchical network those messages follow dimension-order routes, and several of them
 * may cross one link in one direction at once (recursive doubling's partners at distance 2 on
 * two ranks per package: both ranks of a package cross the same link between packages). With
 * the link's bandwidth shared fairly, the step ends when the most loaded link direction has
 * carried its messages, so one step of m bytes per message costs
 *     alpha_step + m beta_step,
 *     alpha_step = max over senders of the summed alphas of the links of its route,
 *     beta_step  = max over link directions of (messages crossing it) x the link's beta,
 * where a link's alpha and beta are its dimension's (glucx_topo_dim_cost: calibrated or
 * nominal). This is the "congestion-aware" analytical network model of ASTRA-sim 2.0 (Won et
 * al., ISPASS 2023) applied per step, and the link-sharing term of the alpha-beta model of
 * Hockney (1994) as Sack & Gropp use it for collectives on meshes ("Collective algorithms for
 * multiported torus networks", ACM TOPC 2015). It ignores the CPU and the overlap of steps.
 * Without a topology file a rank has no routes: the steps cost the slowest link class, as
 * before (glucx_topo_bottleneck).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

/* The partner of rank r in a step of pattern p at distance d, or -1 (none: XOR past n). */
static int partner(glucx_pattern_t p, int r, int d, int n)
{
    switch (p) {
    case GLUCX_PATTERN_XOR:
        return (r ^ d) < n ? r ^ d : -1;
    case GLUCX_PATTERN_SHIFT_UP:
        return (int)(((long)r + d) % n);
    case GLUCX_PATTERN_SHIFT_DOWN:
        return (int)((((long)r - d) % n + n) % n);
    default:
        return -1;
    }
}

typedef struct scratch {
    const glucx_phys_t *phys;
    glucx_link_cost_t *dim; /* [ndims] cost of a link of each dimension */
    unsigned *load;         /* [2 nlinks] messages per link direction */
    double *beta;           /* [nlinks] each link's beta: its dimension's, at its own rate */
    int links[GLUCX_NET_MAX_ROUTE];
    uint8_t dirs[GLUCX_NET_MAX_ROUTE];
} scratch_t;

/* One step of pattern p at distance d; {-1, -1} when a route cannot be walked. */
static glucx_link_cost_t step_cost(const glucx_topo_t *t, scratch_t *s, glucx_pattern_t p, int d)
{
    const glucx_phys_t *ph = s->phys;
    memset(s->load, 0, sizeof(unsigned) * 2 * (size_t)ph->nlinks);
    double alpha = 0.0;
    for (int r = 0; r < t->size; r++) {
        int q = partner(p, r, d, t->size);
        if (q < 0 || q == r)
            continue;
        int nh = glucx_phys_route(ph, r, q, s->links, GLUCX_NET_MAX_ROUTE);
        if (nh < 0 || nh > GLUCX_NET_MAX_ROUTE ||
            glucx_phys_directions(ph, r, s->links, nh, s->dirs) != 0)
            return (glucx_link_cost_t){-1.0, -1.0};
        double a = 0.0;
        for (int h = 0; h < nh; h++) {
            s->load[2 * s->links[h] + s->dirs[h]]++;
            a += s->dim[ph->links[s->links[h]].dim].alpha_ns;
        }
        if (a > alpha)
            alpha = a;
    }
    double beta = 0.0;
    for (int l = 0; l < ph->nlinks; l++)
        for (int dir = 0; dir < 2; dir++) {
            double b = s->load[2 * l + dir] * s->beta[l];
            if (b > beta)
                beta = b;
        }
    return (glucx_link_cost_t){alpha, beta};
}

void glucx_topo_patterns_compute(glucx_topo_t *t)
{
    t->pattern_valid = 0;
    t->pairwise_valid = 0;
    if (t->net == NULL || t->size < 2)
        return;
    glucx_phys_t *ph = NULL;
    scratch_t *s = calloc(1, sizeof(*s));
    if (s == NULL || glucx_phys_create(t, &ph) != GLUCX_OK) {
        free(s);
        return; /* the class model stands in */
    }
    s->phys = ph;
    s->dim = malloc(sizeof(*s->dim) * (size_t)t->net->ndims);
    s->load = malloc(sizeof(unsigned) * 2 * (size_t)(ph->nlinks > 0 ? ph->nlinks : 1));
    int ok = s->dim != NULL && s->load != NULL;
    for (int d = 0; ok && d < t->net->ndims; d++)
        s->dim[d] = glucx_topo_dim_cost(t, d);
    /* glucx_topo_dim_cost is at the dimension's slowest link; a link of another rate
     * (glucx_net_set_link_rate) scales it by slowest rate / its rate (physical-link ids are the
     * file's with a network) */
    s->beta = malloc(sizeof(double) * (size_t)(ph->nlinks > 0 ? ph->nlinks : 1));
    ok = ok && s->beta != NULL;
    for (int l = 0; ok && l < ph->nlinks; l++) {
        int d = ph->links[l].dim;
        s->beta[l] = s->dim[d].beta_ns_per_byte;
        if (t->net->link_rate_GBps != NULL && l < t->net->nlinks)
            s->beta[l] *= glucx_net_dim_min_rate(t->net, d) / glucx_net_link_rate(t->net, l);
    }
    for (int p = 0; ok && p < GLUCX_PATTERN_COUNT; p++)
        for (int k = 0; ok && k < GLUCX_TOPO_PATTERN_STEPS && (1L << k) < t->size; k++) {
            t->pattern_step[p][k] = step_cost(t, s, (glucx_pattern_t)p, 1 << k);
            ok = t->pattern_step[p][k].alpha_ns >= 0;
        }
    t->pattern_valid = ok;
    if (ok && t->size <= GLUCX_TOPO_PAIRWISE_MAX) {
        glucx_link_cost_t sum = {0.0, 0.0};
        for (int d = 1; ok && d < t->size; d++) {
            glucx_link_cost_t c = step_cost(t, s, GLUCX_PATTERN_SHIFT_UP, d);
            ok = c.alpha_ns >= 0;
            sum.alpha_ns += c.alpha_ns;
            sum.beta_ns_per_byte += c.beta_ns_per_byte;
        }
        t->pairwise_sum = sum;
        t->pairwise_valid = ok;
    }
    free(s->dim);
    free(s->beta);
    free(s->load);
    free(s);
    glucx_phys_destroy(ph);
}

glucx_link_cost_t glucx_topo_step_cost(const glucx_topo_t *t, glucx_pattern_t p, int k)
{
    if (t->pattern_valid && p >= 0 && p < GLUCX_PATTERN_COUNT && k >= 0 &&
        k < GLUCX_TOPO_PATTERN_STEPS && (1L << k) < t->size)
        return t->pattern_step[p][k];
    return glucx_topo_bottleneck(t);
}

glucx_link_cost_t glucx_topo_pairwise_cost(const glucx_topo_t *t)
{
    if (t->pairwise_valid)
        return t->pairwise_sum;
    glucx_link_cost_t l = glucx_topo_bottleneck(t);
    const double steps = t->size - 1;
    return (glucx_link_cost_t){steps * l.alpha_ns, steps * l.beta_ns_per_byte};
}
