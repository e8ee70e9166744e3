/*
 * Clock correction across hosts (METRICS.md, "Clocks across hosts"; the model and the sources:
 * clocksync.h).
 *
 * Estimate: per host, the half-planes of its messages with the reference clip a polygon in
 * (o, D) with D = d * S, S the span of the messages' reference times (so both coordinates are ns
 * and the polygon is well conditioned). The polygon starts as a box (|o| <= 10^13 ns,
 * |d| <= 1 %): a vertex on the box's drift edge means the messages do not bound the drift, and a
 * bound wider than DRIFT_DETERMINED does not determine it. Nothing is applied when (0, 0) lies in
 * the polygon; drift 0 when the drift is not determined and 0 fits (estimate_host).
 * Clipping is incremental (Sutherland-Hodgman on a convex polygon, one half-plane at a time), so
 * the cost is linear in the messages and the polygon stays small (its vertices are those of the
 * two convex hulls the bounds form).
 *
 * Logical clock: every matched message (all hosts, same host too: a shifted sender can make one
 * of them violate) is a constraint re' >= sb' + lmin between the corrected times. Shifts are
 * step functions per process, raised at receives, iterated over the messages in receive order
 * until nothing changes (a fixed point: each pass settles the chains whose receives come in
 * order; causality has no cycle, so it ends unless messages were mis-paired, which the cap
 * reports).
 */
#include "clocksync.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "map.h"
#include "model.h" /* glucx_an_grow */

#define BOX_OFFSET_NS 1e13
#define BOX_DRIFT 1e-2
/* A drift bound wider than this (100 ppm, about the tolerance of a computer's quartz
 * oscillator) says nothing about the drift that a clock's specification does not: drift 0 then,
 * when it fits the messages (METRICS.md, "Clocks across hosts") */
#define DRIFT_DETERMINED 1e-4
#define CLC_MAX_PASSES 64

typedef struct step {
    int64_t t;     /* from this corrected time on */
    int64_t shift; /* the process is shifted by at least this */
} step_t;

typedef struct proc {
    int host;
    step_t *v; /* increasing t, increasing shift */
    size_t n, cap;
} proc_t;

typedef struct cmsg {
    uint32_t sp, dp;  /* process indices */
    int64_t sb, re;   /* raw */
    int64_t sbt, ret; /* mapped (offset and drift) */
} cmsg_t;

struct glucx_an_clock {
    int nhosts, ref;
    int64_t lmin, t0;
    int64_t *first;          /* per host: earliest event */
    glucx_an_map_t proc_map; /* key -> proc index + 1 */
    proc_t *procs;
    size_t nprocs, capprocs;
    cmsg_t *msgs;
    size_t nmsgs, capmsgs;
    glucx_an_clock_host_t *hosts;
    char **names; /* [nhosts], NULL: none */
    int estimated;
    glucx_an_clock_stats_t st;
};

static const char *const status_names[] = {
#define GLUCX_AN_CLOCK_NAME_(N, n) #n,
    GLUCX_AN_CLOCK_STATUS_MAP(GLUCX_AN_CLOCK_NAME_)
#undef GLUCX_AN_CLOCK_NAME_
};

const char *glucx_an_clock_status_name(int status)
{
    if (status < 0 || (size_t)status >= sizeof(status_names) / sizeof(status_names[0]))
        return "?";
    return status_names[status];
}

glucx_an_clock_t *glucx_an_clock_create(int nhosts, int ref, int64_t min_latency_ns)
{
    if (nhosts < 1 || ref < 0 || ref >= nhosts || min_latency_ns < 0)
        return NULL;
    glucx_an_clock_t *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return NULL;
    cs->nhosts = nhosts;
    cs->ref = ref;
    cs->lmin = min_latency_ns;
    cs->t0 = INT64_MAX;
    cs->first = malloc((size_t)nhosts * sizeof(*cs->first));
    cs->hosts = calloc((size_t)nhosts, sizeof(*cs->hosts));
    cs->names = calloc((size_t)nhosts, sizeof(*cs->names));
    if (!cs->first || !cs->hosts || !cs->names) {
        glucx_an_clock_destroy(cs);
        return NULL;
    }
    for (int h = 0; h < nhosts; h++)
        cs->first[h] = INT64_MAX;
    return cs;
}

void glucx_an_clock_destroy(glucx_an_clock_t *cs)
{
    if (!cs)
        return;
    for (size_t i = 0; i < cs->nprocs; i++)
        free(cs->procs[i].v);
    free(cs->procs);
    free(cs->msgs);
    free(cs->first);
    free(cs->hosts);
    for (int h = 0; cs->names && h < cs->nhosts; h++)
        free(cs->names[h]);
    free(cs->names);
    glucx_an_map_free(&cs->proc_map);
    free(cs);
}

int glucx_an_clock_set_name(glucx_an_clock_t *cs, int h, const char *name)
{
    if (h < 0 || h >= cs->nhosts)
        return -1;
    char *s = strdup(name);
    if (!s)
        return -1;
    free(cs->names[h]);
    cs->names[h] = s;
    return 0;
}

const char *glucx_an_clock_name(const glucx_an_clock_t *cs, int h)
{
    return h >= 0 && h < cs->nhosts && cs->names[h] ? cs->names[h] : "";
}

int glucx_an_clock_nhosts(const glucx_an_clock_t *cs)
{
    return cs->nhosts;
}
int glucx_an_clock_ref(const glucx_an_clock_t *cs)
{
    return cs->ref;
}
int64_t glucx_an_clock_t0(const glucx_an_clock_t *cs)
{
    return cs->t0;
}
int64_t glucx_an_clock_min_latency(const glucx_an_clock_t *cs)
{
    return cs->lmin;
}

void glucx_an_clock_seen(glucx_an_clock_t *cs, int host, int64_t ts)
{
    if (host < 0 || host >= cs->nhosts)
        return;
    if (ts < cs->first[host])
        cs->first[host] = ts;
}

void glucx_an_clock_proc_key(const glucx_an_event_t *ev, uint64_t key[3])
{
    key[0] = (uint64_t)(uint32_t)ev->host_index;
    if (ev->vpid >= 0) {
        key[0] |= UINT64_C(1) << 32;
        key[1] = (uint64_t)ev->vpid;
        key[2] = 0;
    } else {
        key[1] = ev->comm_id;
        key[2] = (uint64_t)(uint32_t)ev->rank;
    }
}

/* The index of process @p key (created on first use), or -1 when out of memory. */
static long proc_index(glucx_an_clock_t *cs, int host, const uint64_t key[3], int create)
{
    glucx_an_key_t k = glucx_an_key(key[0], key[1], key[2]);
    void *v = glucx_an_map_get(&cs->proc_map, &k);
    if (v)
        return (long)((uintptr_t)v - 1);
    if (!create)
        return -1;
    proc_t *np = glucx_an_grow(cs->procs, &cs->capprocs, cs->nprocs + 1, sizeof(*np));
    if (!np)
        return -1;
    cs->procs = np;
    if (glucx_an_map_put(&cs->proc_map, &k, (void *)(uintptr_t)(cs->nprocs + 1)) != 0)
        return -1;
    memset(&cs->procs[cs->nprocs], 0, sizeof(proc_t));
    cs->procs[cs->nprocs].host = host;
    return (long)cs->nprocs++;
}

int glucx_an_clock_add(glucx_an_clock_t *cs, int src_host, const uint64_t skey[3], int64_t sb,
                       int dst_host, const uint64_t dkey[3], int64_t re)
{
    if (src_host < 0 || src_host >= cs->nhosts || dst_host < 0 || dst_host >= cs->nhosts)
        return 0; /* not a host this estimator knows: nothing to learn */
    long sp = proc_index(cs, src_host, skey, 1), dp = proc_index(cs, dst_host, dkey, 1);
    if (sp < 0 || dp < 0)
        return -1;
    cmsg_t *nm = glucx_an_grow(cs->msgs, &cs->capmsgs, cs->nmsgs + 1, sizeof(*nm));
    if (!nm)
        return -1;
    cs->msgs = nm;
    cmsg_t *m = &cs->msgs[cs->nmsgs++];
    m->sp = (uint32_t)sp;
    m->dp = (uint32_t)dp;
    m->sb = m->sbt = sb;
    m->re = m->ret = re;
    return 0;
}

/* ---- the estimate: a convex polygon in (o, D) ------------------------------------------------ */

typedef struct pt {
    double o, D;
} pt_t;

typedef struct poly {
    pt_t *v;
    size_t n, cap;
} poly_t;

/* Keep the part of @p p where a*o + b*D <= c; 0, or -1 when out of memory. */
static int clip(poly_t *p, poly_t *tmp, double a, double b, double c)
{
    if (p->n == 0)
        return 0;
    /* quick test: every vertex inside leaves the polygon as it is */
    size_t out = 0;
    for (size_t i = 0; i < p->n; i++)
        out += a * p->v[i].o + b * p->v[i].D > c;
    if (out == 0)
        return 0;
    if (tmp->cap < 2 * p->n + 2) {
        size_t nc = 2 * p->n + 2;
        pt_t *nv = realloc(tmp->v, nc * sizeof(*nv));
        if (!nv)
            return -1;
        tmp->v = nv;
        tmp->cap = nc;
    }
    tmp->n = 0;
    for (size_t i = 0; i < p->n; i++) {
        pt_t u = p->v[i], w = p->v[(i + 1) % p->n];
        double fu = a * u.o + b * u.D - c, fw = a * w.o + b * w.D - c;
        if (fu <= 0)
            tmp->v[tmp->n++] = u;
        if ((fu < 0 && fw > 0) || (fu > 0 && fw < 0)) {
            double s = fu / (fu - fw);
            pt_t x = {u.o + s * (w.o - u.o), u.D + s * (w.D - u.D)};
            tmp->v[tmp->n++] = x;
        }
    }
    poly_t t = *p;
    *p = *tmp;
    *tmp = t;
    return 0;
}

/* Area centroid of a convex polygon (its vertex mean when degenerate). */
static pt_t centroid(const poly_t *p)
{
    double a2 = 0, co = 0, cD = 0;
    pt_t r = {0, 0};
    /* relative to the first vertex: small numbers, no cancellation */
    pt_t b = p->v[0];
    for (size_t i = 0; i < p->n; i++) {
        pt_t u = p->v[i], w = p->v[(i + 1) % p->n];
        double uo = u.o - b.o, uD = u.D - b.D, wo = w.o - b.o, wD = w.D - b.D;
        double cr = uo * wD - wo * uD;
        a2 += cr;
        co += (uo + wo) * cr;
        cD += (uD + wD) * cr;
    }
    if (fabs(a2) > 1e-12) {
        r.o = b.o + co / (3 * a2);
        r.D = b.D + cD / (3 * a2);
        return r;
    }
    for (size_t i = 0; i < p->n; i++) {
        r.o += p->v[i].o / (double)p->n;
        r.D += p->v[i].D / (double)p->n;
    }
    return r;
}

/* The bounds host h's messages with the reference give (X: reference time - t0, ns; V: value):
 * upper (reference -> h): o + d X <= V; lower (h -> reference): o + d X >= V. Through another
 * host g (its times mapped to reference time with its estimate), e is the error that mapping may
 * have at X (g's offset bound + drift bound x |X|): the true values lie within V +- e. */
typedef struct bound {
    double X, V, e;
    int upper;
} bound_t;

/* @p p := the box clipped by every bound, each relaxed by @p relax times its e; 0 or -1. */
static int build_polygon(poly_t *p, poly_t *tmp, const bound_t *b, size_t nb, double S, double Dmax,
                         double relax)
{
    if (p->cap < 4) {
        pt_t *nv = realloc(p->v, 16 * sizeof(*nv));
        if (!nv)
            return -1;
        p->v = nv;
        p->cap = 16;
    }
    p->n = 4;
    p->v[0] = (pt_t){-BOX_OFFSET_NS, -Dmax};
    p->v[1] = (pt_t){BOX_OFFSET_NS, -Dmax};
    p->v[2] = (pt_t){BOX_OFFSET_NS, Dmax};
    p->v[3] = (pt_t){-BOX_OFFSET_NS, Dmax};
    for (size_t i = 0; i < nb && p->n; i++) {
        double x = b[i].X / S, e = relax * b[i].e;
        int rc = b[i].upper ? clip(p, tmp, 1, x, b[i].V + e) : clip(p, tmp, -1, -x, -(b[i].V - e));
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Does a vertex of @p p lie on the box's drift edge (the messages do not bound the drift)? */
static int touches_box(const poly_t *p, double Dmax)
{
    for (size_t i = 0; i < p->n; i++)
        if (fabs(p->v[i].D) >= Dmax * (1 - 1e-9))
            return 1;
    return 0;
}

static void estimate_host(glucx_an_clock_t *cs, int h, int g, const bound_t *b, size_t nb,
                          poly_t *p, poly_t *tmp, int *oom)
{
    glucx_an_clock_host_t *ho = &cs->hosts[h];
    /* lo, hi: the range of offsets at drift 0 (tight); lor, hir: the same with every bound
     * relaxed by its e (through another host: where the truth lies) */
    double lo = -INFINITY, hi = INFINITY, lor = -INFINITY, hir = INFINITY;
    double xmin = INFINITY, xmax = -INFINITY;
    for (size_t i = 0; i < nb; i++) {
        if (b[i].upper) {
            ho->to_host++;
            hi = b[i].V < hi ? b[i].V : hi;
            hir = b[i].V + b[i].e < hir ? b[i].V + b[i].e : hir;
        } else {
            ho->from_host++;
            lo = b[i].V > lo ? b[i].V : lo;
            lor = b[i].V - b[i].e > lor ? b[i].V - b[i].e : lor;
        }
        xmin = b[i].X < xmin ? b[i].X : xmin;
        xmax = b[i].X > xmax ? b[i].X : xmax;
    }
    ho->offset_bound_ns = ho->drift_bound = NAN;
    ho->offset_lo_ns = lor;
    ho->offset_hi_ns = hir;
    if (nb == 0) {
        ho->status = GLUCX_AN_CLOCK_NO_MESSAGES;
        snprintf(ho->why, sizeof(ho->why),
                 "host %d: no matched message with the reference host %d: its clock is not "
                 "corrected",
                 h, g);
        return;
    }
    const unsigned long long nto = ho->to_host, nfrom = ho->from_host;
    if (nto == 0 || nfrom == 0) {
        /* one side only: with drift 0, the offset is only bounded on that side; take the
         * smallest correction the bound allows (none if the raw clock satisfies it) */
        ho->status = GLUCX_AN_CLOCK_ONE_SIDED;
        ho->offset_ns = hi < 0 ? hi : lo > 0 ? lo : 0;
        if (nto)
            snprintf(ho->why, sizeof(ho->why),
                     "host %d: messages from the reference host %d only (%llu): its offset is at "
                     "most %.0f ns, with no lower bound",
                     h, g, nto, hi);
        else
            snprintf(ho->why, sizeof(ho->why),
                     "host %d: messages to the reference host %d only (%llu): its offset is at "
                     "least %.0f ns, with no upper bound",
                     h, g, nfrom, lo);
        return;
    }
    /* both directions: the polygon in (o, D), D = d * S */
    const double S = xmax - xmin > 1 ? xmax - xmin : 1;
    const double Dmax = BOX_DRIFT * S;
    int relaxed = 0;
    for (size_t i = 0; i < nb; i++)
        relaxed |= b[i].e > 0;
    if (build_polygon(p, tmp, b, nb, S, Dmax, 0) != 0) {
        *oom = 1;
        return;
    }
    /* bounded_t: the tight polygon bounds the drift; bounded: the one the truth lies in (the
     * relaxed one through another host) does; determined: within DRIFT_DETERMINED */
    const int bounded_t = p->n >= 3 && !touches_box(p, Dmax);
    int bounded = 0, determined = 0;
    pt_t c = {0, 0};
    double bo = 0, bd = 0, mino = INFINITY, maxo = -INFINITY, ao = 0, ad = 0;
    if (bounded_t) {
        c = centroid(p);
        if (relaxed && build_polygon(p, tmp, b, nb, S, Dmax, 1) != 0) {
            *oom = 1;
            return;
        }
        bounded = p->n >= 3 && !touches_box(p, Dmax);
        for (size_t i = 0; bounded && i < p->n; i++) {
            double eo = fabs(p->v[i].o - c.o), ed = fabs(p->v[i].D - c.D) / S;
            bo = eo > bo ? eo : bo;
            bd = ed > bd ? ed : bd;
            mino = p->v[i].o < mino ? p->v[i].o : mino;
            maxo = p->v[i].o > maxo ? p->v[i].o : maxo;
            /* the error of applying nothing: the farthest (o, d) from (0, 0) */
            ao = fabs(p->v[i].o) > ao ? fabs(p->v[i].o) : ao;
            ad = fabs(p->v[i].D) / S > ad ? fabs(p->v[i].D) / S : ad;
        }
        determined = bounded && bd <= DRIFT_DETERMINED;
    }
    /* (0, 0) satisfies every message: the raw clocks agree with them */
    const int zero = lo <= 0 && 0 <= hi;
    if (determined && zero) {
        ho->status = GLUCX_AN_CLOCK_CONSISTENT;
        ho->offset_ns = ho->drift = 0;
        ho->offset_bound_ns = ao;
        ho->drift_bound = ad;
        ho->offset_lo_ns = mino;
        ho->offset_hi_ns = maxo;
        snprintf(ho->why, sizeof(ho->why),
                 "host %d: its clock agrees with the reference host %d's on all %llu + %llu "
                 "messages (offset 0 and drift 0 satisfy every one): not corrected",
                 h, g, nto, nfrom);
        return;
    }
    if (!determined && lo <= hi) {
        /* drift 0 fits every message, and the messages do not determine the drift (too few,
         * all at about one time, or a bound wider than DRIFT_DETERMINED: long messages over a
         * short run): drift 0, and the offset from the range [lo, hi] the messages allow at
         * drift 0; the bound, measured on the relaxed range, holds if the drift is 0 */
        char drift_why[128];
        if (bounded)
            snprintf(drift_why, sizeof(drift_why),
                     "bound its drift only to +-%.0f ppm (more than the %.0f ppm taken as "
                     "determined)",
                     bd * 1e6, DRIFT_DETERMINED * 1e6);
        else
            snprintf(drift_why, sizeof(drift_why), "do not determine a drift");
        ho->drift = 0;
        if (zero) {
            ho->status = GLUCX_AN_CLOCK_CONSISTENT;
            ho->offset_ns = 0;
            ho->offset_bound_ns = -lor > hir ? -lor : hir;
            snprintf(ho->why, sizeof(ho->why),
                     "host %d: %llu + %llu messages with the reference host %d over %.3f ms %s; "
                     "at drift 0 its clock agrees with them (offset 0 satisfies every one): not "
                     "corrected",
                     h, nto, nfrom, g, (xmax - xmin) / 1e6, drift_why);
        } else {
            ho->status = GLUCX_AN_CLOCK_OFFSET_ONLY;
            ho->offset_ns = (lo + hi) / 2;
            ho->offset_bound_ns = hir - ho->offset_ns > ho->offset_ns - lor ? hir - ho->offset_ns
                                                                            : ho->offset_ns - lor;
            snprintf(ho->why, sizeof(ho->why),
                     "host %d: %llu + %llu messages with the reference host %d over %.3f ms %s: "
                     "offset only (drift taken as 0)",
                     h, nto, nfrom, g, (xmax - xmin) / 1e6, drift_why);
        }
        return;
    }
    if (determined || bounded) {
        /* the drift is determined; or no constant offset fits, so the drift is not 0, though
         * loosely bounded: the centroid is the estimate */
        ho->status = GLUCX_AN_CLOCK_OK;
        ho->offset_ns = c.o;
        ho->drift = c.D / S;
        ho->offset_bound_ns = bo;
        ho->drift_bound = bd;
        ho->offset_lo_ns = mino;
        ho->offset_hi_ns = maxo;
        return;
    }
    ho->status = GLUCX_AN_CLOCK_INCONSISTENT; /* through another host: the caller keeps its own */
    ho->offset_ns = (lo + hi) / 2;
    snprintf(ho->why, sizeof(ho->why),
             "host %d: no linear clock satisfies all %llu messages with the reference host %d "
             "(the bounds cross by %.0f ns: a clock that is not linear, or a minimum latency set "
             "too high): midpoint offset, the logical clock removes what is left",
             h, (unsigned long long)nb, g, lo - hi);
}

/* ---- the logical clock ----------------------------------------------------------------------- */

static int64_t shift_at(const proc_t *p, int64_t t)
{
    size_t lo = 0, hi = p->n; /* first entry with v.t > t */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->v[mid].t <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? p->v[lo - 1].shift : 0;
}

/* Raise @p p's shift to at least @p s from @p t on; 0, or -1 when out of memory. */
static int raise_shift(proc_t *p, int64_t t, int64_t s)
{
    if (shift_at(p, t) >= s)
        return 0;
    size_t i = 0;
    while (i < p->n && p->v[i].t < t)
        i++;
    /* entries from i on with a shift <= s are covered by the new one */
    size_t j = i;
    while (j < p->n && p->v[j].shift <= s)
        j++;
    if (j == i) {
        if (p->n == p->cap) {
            size_t nc = p->cap ? 2 * p->cap : 4;
            step_t *nv = realloc(p->v, nc * sizeof(*nv));
            if (!nv)
                return -1;
            p->v = nv;
            p->cap = nc;
        }
        memmove(p->v + i + 1, p->v + i, (p->n - i) * sizeof(*p->v));
        p->n++;
    } else if (j > i + 1) {
        memmove(p->v + i + 1, p->v + j, (p->n - j) * sizeof(*p->v));
        p->n -= j - i - 1;
    }
    p->v[i].t = t;
    p->v[i].shift = s;
    return 0;
}

static int by_ret(const void *a, const void *b)
{
    const cmsg_t *x = a, *y = b;
    return x->ret < y->ret ? -1 : x->ret > y->ret;
}

static int clc(glucx_an_clock_t *cs)
{
    if (cs->nmsgs > 1)
        qsort(cs->msgs, cs->nmsgs, sizeof(*cs->msgs), by_ret);
    int changed = 1, pass;
    for (pass = 0; changed && pass < CLC_MAX_PASSES; pass++) {
        changed = 0;
        for (size_t i = 0; i < cs->nmsgs; i++) {
            const cmsg_t *m = &cs->msgs[i];
            proc_t *s = &cs->procs[m->sp], *d = &cs->procs[m->dp];
            int64_t need = m->sbt + shift_at(s, m->sbt) + cs->lmin - m->ret;
            if (need > 0 && need > shift_at(d, m->ret)) {
                if (raise_shift(d, m->ret, need) != 0)
                    return -1;
                changed = 1;
            }
        }
    }
    cs->st.clc_unresolved = changed;
    for (size_t i = 0; i < cs->nmsgs; i++) {
        const cmsg_t *m = &cs->msgs[i];
        int64_t sb = m->sbt + shift_at(&cs->procs[m->sp], m->sbt);
        int64_t rs = shift_at(&cs->procs[m->dp], m->ret), re = m->ret + rs;
        cs->st.violations_after += re < sb;
        /* a receive the logical clock had to move: before its own shift it violated */
        if (m->ret < sb + cs->lmin)
            cs->st.clc_moved++;
        if (rs > cs->st.clc_max_shift_ns)
            cs->st.clc_max_shift_ns = rs;
    }
    return 0;
}

/* A status whose offset is bounded from both sides (a host others can be estimated through). */
static int two_sided(int status)
{
    return status == GLUCX_AN_CLOCK_OK || status == GLUCX_AN_CLOCK_OFFSET_ONLY ||
           status == GLUCX_AN_CLOCK_CONSISTENT;
}

/* @p x of a host's clock in reference time, unrounded (@p ho: its estimate). */
static double map_d(const glucx_an_clock_t *cs, const glucx_an_clock_host_t *ho, int64_t x)
{
    return (double)cs->t0 + ((double)(x - cs->t0) - ho->offset_ns) / (1 + ho->drift);
}

int glucx_an_clock_estimate(glucx_an_clock_t *cs)
{
    if (cs->estimated)
        return 0;
    cs->t0 = cs->first[cs->ref];
    if (cs->t0 == INT64_MAX) { /* no event of the reference: the earliest of any host */
        for (int h = 0; h < cs->nhosts; h++)
            cs->t0 = cs->first[h] < cs->t0 ? cs->first[h] : cs->t0;
        if (cs->t0 == INT64_MAX)
            cs->t0 = 0;
    }
    cs->st.messages = cs->nmsgs;
    /* the bounds, grouped by host */
    const size_t nh = (size_t)cs->nhosts;
    size_t *count = calloc(nh + 1, sizeof(size_t));
    uint64_t *pair = calloc(nh * nh, sizeof(uint64_t)); /* messages from host a to b: [a nh + b] */
    bound_t *b = malloc((cs->nmsgs ? cs->nmsgs : 1) * sizeof(*b));
    poly_t p = {0}, tmp = {0};
    int oom = !count || !b || !pair;
    for (size_t i = 0; !oom && i < cs->nmsgs; i++) {
        const cmsg_t *m = &cs->msgs[i];
        int hs = cs->procs[m->sp].host, hd = cs->procs[m->dp].host;
        cs->st.violations_before += m->re < m->sb;
        if (hs == hd)
            continue;
        cs->st.cross_host++;
        pair[(size_t)hs * nh + (size_t)hd]++;
        if (hs == cs->ref)
            count[hd + 1]++;
        else if (hd == cs->ref)
            count[hs + 1]++;
    }
    for (int h = 0; !oom && h < cs->nhosts; h++)
        count[h + 1] += count[h];
    for (size_t i = 0; !oom && i < cs->nmsgs; i++) {
        const cmsg_t *m = &cs->msgs[i];
        int hs = cs->procs[m->sp].host, hd = cs->procs[m->dp].host;
        if (hs == hd || (hs != cs->ref && hd != cs->ref))
            continue;
        if (hs == cs->ref) { /* o + d (s - t0) <= re - s, s = sb + lmin */
            int64_t s = m->sb + cs->lmin;
            b[count[hd]++] = (bound_t){(double)(s - cs->t0), (double)(m->re - s), 0, 1};
        } else { /* o + d (r - t0) >= sb - r, r = re - lmin */
            int64_t r = m->re - cs->lmin;
            b[count[hs]++] = (bound_t){(double)(r - cs->t0), (double)(m->sb - r), 0, 0};
        }
    }
    /* count[h] is now the end of host h's bounds (and the start of h + 1's) */
    for (int h = 0; !oom && h < cs->nhosts; h++) {
        glucx_an_clock_host_t *ho = &cs->hosts[h];
        memset(ho, 0, sizeof(*ho));
        ho->via = -1;
        if (h == cs->ref) {
            ho->status = GLUCX_AN_CLOCK_REFERENCE;
            ho->offset_bound_ns = ho->drift_bound = 0;
            continue;
        }
        size_t start = h == 0 ? 0 : count[h - 1];
        estimate_host(cs, h, cs->ref, b + start, count[h] - start, &p, &tmp, &oom);
    }
    /* A host without messages both ways with the reference (a ring's far side, or one that sent
     * it only a few): through the estimated host it has most messages both ways with, that
     * host's times mapped to reference time; each bound is relaxed by the error that mapping may
     * have there (its offset bound + drift bound x |X|, + 1 ns of rounding; a drift taken as 0
     * adds nothing, as that host's own bound assumes). Any estimate bounded from both sides
     * replaces the one-sided one. Repeated until no host improves: chains of any length settle,
     * each link adding its error. */
    for (int changed = 1; changed && !oom;) {
        changed = 0;
        for (int h = 0; h < cs->nhosts && !oom; h++) {
            glucx_an_clock_host_t *ho = &cs->hosts[h];
            if (ho->status != GLUCX_AN_CLOCK_NO_MESSAGES && ho->status != GLUCX_AN_CLOCK_ONE_SIDED)
                continue;
            int g = -1;
            uint64_t gn = 0;
            for (int k = 0; k < cs->nhosts; k++) {
                uint64_t to = pair[(size_t)k * nh + (size_t)h],
                         from = pair[(size_t)h * nh + (size_t)k];
                if (k != h && two_sided(cs->hosts[k].status) && to && from && to + from > gn) {
                    g = k;
                    gn = to + from;
                }
            }
            if (g < 0)
                continue;
            const glucx_an_clock_host_t *go = &cs->hosts[g];
            const double gdb = isfinite(go->drift_bound) ? go->drift_bound : 0;
            size_t nb = 0;
            for (size_t i = 0; i < cs->nmsgs; i++) {
                const cmsg_t *m = &cs->msgs[i];
                int hs = cs->procs[m->sp].host, hd = cs->procs[m->dp].host;
                if (hs == g && hd == h) {
                    double s = map_d(cs, go, m->sb) + (double)cs->lmin, X = s - (double)cs->t0;
                    b[nb++] =
                        (bound_t){X, (double)m->re - s, go->offset_bound_ns + gdb * fabs(X) + 1, 1};
                } else if (hs == h && hd == g) {
                    double r = map_d(cs, go, m->re) - (double)cs->lmin, X = r - (double)cs->t0;
                    b[nb++] =
                        (bound_t){X, (double)m->sb - r, go->offset_bound_ns + gdb * fabs(X) + 1, 0};
                }
            }
            glucx_an_clock_host_t keep = *ho;
            memset(ho, 0, sizeof(*ho));
            estimate_host(cs, h, g, b, nb, &p, &tmp, &oom);
            if (!two_sided(ho->status)) {
                *ho = keep;
                continue;
            }
            ho->via = g;
            const char *how =
                ho->status == GLUCX_AN_CLOCK_CONSISTENT
                    ? "; its clock agrees with that host's corrected one: not corrected"
                : ho->status == GLUCX_AN_CLOCK_OFFSET_ONLY
                    ? "; the drift is not determined: taken as 0"
                    : "";
            snprintf(ho->why, sizeof(ho->why),
                     "host %d: no messages both ways with the reference host %d: estimated through "
                     "host %d (%llu messages), whose error its bounds include (%llu messages from "
                     "the reference, %llu to it)%s",
                     h, cs->ref, g, (unsigned long long)gn, (unsigned long long)keep.to_host,
                     (unsigned long long)keep.from_host, how);
            changed = 1;
        }
    }
    free(pair);
    free(count);
    free(b);
    free(p.v);
    free(tmp.v);
    if (oom) {
        for (int h = 0; h < cs->nhosts; h++)
            memset(&cs->hosts[h], 0, sizeof(cs->hosts[h]));
        return -1;
    }
    cs->estimated = 1;
    for (size_t i = 0; i < cs->nmsgs; i++) {
        cmsg_t *m = &cs->msgs[i];
        m->sbt = glucx_an_clock_map(cs, cs->procs[m->sp].host, m->sb);
        m->ret = glucx_an_clock_map(cs, cs->procs[m->dp].host, m->re);
        cs->st.violations_synced += m->ret < m->sbt;
    }
    return clc(cs);
}

const glucx_an_clock_host_t *glucx_an_clock_host(const glucx_an_clock_t *cs, int h)
{
    if (!cs->estimated || h < 0 || h >= cs->nhosts)
        return NULL;
    return &cs->hosts[h];
}

int64_t glucx_an_clock_map(const glucx_an_clock_t *cs, int host, int64_t ts)
{
    if (!cs->estimated || host < 0 || host >= cs->nhosts)
        return ts;
    const glucx_an_clock_host_t *h = &cs->hosts[host];
    if (h->offset_ns == 0 && h->drift == 0)
        return ts;
    /* t0 + (ts - t0 - o) / (1 + d), the difference first: exact in double for a run's span */
    double rel = ((double)(ts - cs->t0) - h->offset_ns) / (1 + h->drift);
    return cs->t0 + (int64_t)llround(rel);
}

int64_t glucx_an_clock_apply(const glucx_an_clock_t *cs, int host, const uint64_t key[3],
                             int64_t ts)
{
    int64_t t = glucx_an_clock_map(cs, host, ts);
    long p = proc_index((glucx_an_clock_t *)cs, host, key, 0);
    return p < 0 ? t : t + shift_at(&cs->procs[p], t);
}

int64_t glucx_an_clock_watermark(const glucx_an_clock_t *cs, int64_t ts)
{
    int64_t w = INT64_MAX;
    for (int h = 0; h < cs->nhosts; h++) {
        int64_t t = glucx_an_clock_map(cs, h, ts);
        w = t < w ? t : w;
    }
    return w;
}

glucx_an_clock_stats_t glucx_an_clock_stats(const glucx_an_clock_t *cs)
{
    return cs->st;
}
