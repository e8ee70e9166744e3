/*
 * What-if prediction: a collective-level replay of a measured run (METRICS.md, "What-if
 * prediction"; API and method: whatif.h).
 *
 * Each process's collectives are ordered by its own begin times. Replayed, process p arrives at
 * its k-th collective at its predicted end of the (k-1)-th plus its measured local time between
 * them (begin of k minus end of k-1, never below 0); its first collective it reaches at the
 * measured time. A collective starts when every participant has arrived and lasts its duration d
 * (relative: measured x new cost / old cost; absolute: the new cost); each participant leaves at
 * start + d x its measured share (its end minus the last arrival, over the last end minus the
 * last arrival, within [0, 1]), so the last to leave ends at start + d. The
 * replay is a topological walk: a collective becomes ready when its last participant registers,
 * so each participant is visited once per collective.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "whatif.h"

/* the analysis's error text (event.h) */
#define set_err glucx_an_set_err

int glucx_an_wi_check_ranks(const glucx_an_wi_input_t *in, int ranks, char *err, size_t errlen)
{
    for (size_t i = 0; i < in->ncolls; i++)
        if (in->colls[i].nparts != in->nprocs) {
            const glucx_an_wi_coll_t *c = &in->colls[i];
            set_err(err, errlen,
                    "--ranks %d: collective %s seq %" PRIu32 " of communicator 0x%" PRIx64
                    " involves %d of the run's %d processes; rank scaling replays only "
                    "collectives over every process",
                    ranks, glucx_an_coll_name(c->coll), c->seq, c->comm_id, c->nparts, in->nprocs);
            return -1;
        }
    return 0;
}

void glucx_an_wi_init(glucx_an_wi_input_t *in)
{
    memset(in, 0, sizeof(*in));
}

void glucx_an_wi_free(glucx_an_wi_input_t *in)
{
    for (size_t i = 0; i < in->ncolls; i++) {
        free(in->colls[i].proc);
        free(in->colls[i].b);
        free(in->colls[i].e);
    }
    free(in->colls);
    memset(in, 0, sizeof(*in));
}

glucx_an_wi_coll_t *glucx_an_wi_add(glucx_an_wi_input_t *in, uint64_t comm_id, uint32_t seq,
                                    int64_t iteration, int coll, int alg, uint64_t bytes,
                                    int comm_size)
{
    if (in->ncolls == in->cap) {
        size_t cap = in->cap ? 2 * in->cap : 64;
        glucx_an_wi_coll_t *v = realloc(in->colls, cap * sizeof(*v));
        if (!v)
            return NULL;
        in->colls = v;
        in->cap = cap;
    }
    glucx_an_wi_coll_t *c = &in->colls[in->ncolls++];
    memset(c, 0, sizeof(*c));
    c->comm_id = comm_id;
    c->seq = seq;
    c->iteration = iteration;
    c->coll = coll;
    c->alg = alg;
    c->bytes = bytes;
    c->comm_size = comm_size;
    return c;
}

int glucx_an_wi_part(glucx_an_wi_input_t *in, glucx_an_wi_coll_t *c, int32_t proc, int64_t b,
                     int64_t e)
{
    if (proc < 0)
        return -1;
    for (int i = 0; i < c->nparts; i++)
        if (c->proc[i] == proc) {
            if (b >= 0)
                c->b[i] = b;
            if (e >= 0)
                c->e[i] = e;
            return 0;
        }
    int n = c->nparts + 1;
    int32_t *p = realloc(c->proc, (size_t)n * sizeof(*p));
    if (!p)
        return -1;
    c->proc = p;
    int64_t *bb = realloc(c->b, (size_t)n * sizeof(*bb));
    if (!bb)
        return -1;
    c->b = bb;
    int64_t *ee = realloc(c->e, (size_t)n * sizeof(*ee));
    if (!ee)
        return -1;
    c->e = ee;
    c->proc[c->nparts] = proc;
    c->b[c->nparts] = b;
    c->e[c->nparts] = e;
    c->nparts = n;
    if (proc >= in->nprocs)
        in->nprocs = proc + 1;
    return 0;
}

/* ---- replay -------------------------------------------------------------------------------- */

typedef struct step { /* one process's participation: collective ci, its participant pi */
    size_t ci;
    int pi;
    int64_t b, e; /* measured, completed from each other when one is missing */
} step_t;

static int cmp_step(const void *x, const void *y)
{
    const step_t *a = x, *b = y;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    return a->ci < b->ci ? -1 : a->ci > b->ci;
}

typedef struct cost_ent { /* cost cache: one entry per (coll, alg, bytes, requested, size) */
    int used, coll, alg, requested, size;
    uint64_t bytes;
    glucx_an_wi_cost_t cost;
} cost_ent_t;

typedef struct group {
    int coll, alg_old, alg_new, requested, size;
    uint64_t bytes;
    uint64_t count, in_iter;
    double measured, predicted, pred_wait;
} group_t;

static int cmp_group(const void *x, const void *y)
{
    const group_t *a = x, *b = y;
    if (a->predicted != b->predicted)
        return a->predicted > b->predicted ? -1 : 1;
    return a->coll != b->coll ? a->coll - b->coll : (a->bytes > b->bytes) - (a->bytes < b->bytes);
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

typedef struct slot { /* one iteration */
    int64_t index;
    int64_t meas_first, meas_last; /* earliest begin, latest end (measured) */
    double pred_first, pred_last;  /* earliest arrival, latest end (predicted) */
    double meas_exposed, pred_exposed;
} slot_t;

typedef struct replay {
    const glucx_an_wi_input_t *in;
    const glucx_an_wi_opts_t *opt;
    int nv;            /* replayed processes */
    int scaled;        /* opt->ranks given */
    step_t *steps;     /* every process's steps, process by process */
    size_t *off;       /* [nprocs + 1] */
    double *dur;       /* [ncolls] predicted duration */
    double *meas;      /* [ncolls] measured duration, NAN: none */
    int *need;         /* [ncolls] participants that must arrive */
    int *arrived;      /* [ncolls] */
    double *maxarr;    /* [ncolls] */
    double *endt;      /* [ncolls] predicted end, NAN until replayed */
    int64_t *lastb;    /* [ncolls] measured last arrival */
    size_t not_costed; /* collectives whose cost function gave no cost */
    int64_t t0;        /* the earliest measured begin: replayed times are doubles from it (trace
                          times near 1e18 ns would lose 256 ns in a double) */
    size_t *cur;       /* [nv] index into the process's steps */
    double *arr;       /* [nv] its arrival at its current collective */
    size_t *ready;     /* stack of ready collectives */
    size_t nready;
    int *slot_of; /* [ncolls] iteration slot, -1 */
    slot_t *slots;
    size_t nslots;
    double *wait; /* [ncolls] summed waiting of its participants (predicted) */
} replay_t;

static int src_of(const replay_t *r, int v)
{
    return v % r->in->nprocs;
}

/* Process v arrives at its step k (of its source process) at time t. */
static void arrive(replay_t *r, int v, size_t k, double t)
{
    const step_t *s = &r->steps[r->off[src_of(r, v)] + k];
    r->cur[v] = k;
    r->arr[v] = t;
    size_t ci = s->ci;
    if (r->arrived[ci] == 0 || t > r->maxarr[ci])
        r->maxarr[ci] = t;
    if (++r->arrived[ci] == r->need[ci])
        r->ready[r->nready++] = ci;
}

/* Collective ci is ready: its end, then each participant's next arrival. */
static void fire(replay_t *r, size_t ci)
{
    const glucx_an_wi_coll_t *c = &r->in->colls[ci];
    double start = r->maxarr[ci], d = r->dur[ci], m = r->meas[ci];
    r->endt[ci] = start + d;
    int sl = r->slot_of[ci];
    int n = r->scaled ? r->nv : c->nparts;
    for (int i = 0; i < n; i++) {
        int v = r->scaled ? i : c->proc[i];
        int p = src_of(r, v);
        size_t k = r->cur[v];
        const step_t *s = &r->steps[r->off[p] + k];
        if (s->ci != ci)
            continue; /* a participant whose times were not recorded (not in its steps) */
        /* it leaves at its measured share of the collective's time after the last arrival
         * (the last to leave at start + d) */
        double share = 1.0;
        if (isfinite(m) && m > 0) {
            share = (double)(s->e - r->lastb[ci]) / m;
            share = share < 0 ? 0 : share > 1 ? 1 : share;
        }
        double end = start + d * share;
        r->wait[ci] += r->maxarr[ci] - r->arr[v];
        if (sl >= 0) {
            slot_t *st = &r->slots[sl];
            st->pred_exposed += end - r->arr[v];
            if (r->arr[v] < st->pred_first)
                st->pred_first = r->arr[v];
            if (end > st->pred_last)
                st->pred_last = end;
        }
        if (r->off[p] + k + 1 < r->off[p + 1]) {
            const step_t *nx = s + 1;
            int64_t gap = nx->b - s->e;
            arrive(r, v, k + 1, end + (double)(gap > 0 ? gap : 0));
        }
    }
}

static void replay_free(replay_t *r)
{
    free(r->steps);
    free(r->off);
    free(r->dur);
    free(r->meas);
    free(r->need);
    free(r->arrived);
    free(r->maxarr);
    free(r->endt);
    free(r->lastb);
    free(r->cur);
    free(r->arr);
    free(r->ready);
    free(r->slot_of);
    free(r->slots);
    free(r->wait);
}

/* The costs of every collective through the cache; 0 or -1. */
static int cost_all(replay_t *r, char *err, size_t errlen)
{
    const glucx_an_wi_input_t *in = r->in;
    size_t cap = 64;
    while (cap < 2 * in->ncolls)
        cap *= 2;
    cost_ent_t *tab = calloc(cap, sizeof(*tab));
    if (!tab) {
        set_err(err, errlen, "out of memory for the cost cache of %zu collectives", in->ncolls);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < in->ncolls && rc == 0; i++) {
        const glucx_an_wi_coll_t *c = &in->colls[i];
        uint64_t h = (uint64_t)c->coll * 1000003u ^ (uint64_t)(c->alg + 1) * 7919u ^
                     c->bytes * 0x9e3779b97f4a7c15ull;
        size_t j = (size_t)(h ^ (h >> 29)) & (cap - 1);
        int size = r->scaled ? r->nv : c->comm_size;
        while (tab[j].used &&
               !(tab[j].coll == c->coll && tab[j].alg == c->alg && tab[j].bytes == c->bytes &&
                 tab[j].requested == c->requested && tab[j].size == size))
            j = (j + 1) & (cap - 1);
        cost_ent_t *ce = &tab[j];
        if (!ce->used) {
            ce->size = size;
            ce->used = 1;
            ce->coll = c->coll;
            ce->alg = c->alg;
            ce->bytes = c->bytes;
            ce->requested = c->requested;
            ce->cost = (glucx_an_wi_cost_t){NAN, NAN, -1};
            if (r->opt->cost(r->opt->cost_arg, c, size, &ce->cost, err, errlen) != 0) {
                rc = -1;
                break;
            }
        }
        double nw = ce->cost.new_ns, old = ce->cost.old_ns, m = r->meas[i];
        if (!isfinite(nw))
            r->not_costed++;
        double d;
        if (!isfinite(nw))
            d = isfinite(m) ? m : 0.0;
        else if (r->opt->mode == GLUCX_AN_WI_RELATIVE && isfinite(m) && isfinite(old) && old > 0)
            d = m * nw / old;
        else if (r->opt->mode == GLUCX_AN_WI_ADDITIVE && isfinite(m) && isfinite(old))
            d = m + (nw - old);
        else
            d = nw;
        r->dur[i] = d < 0 ? 0 : d;
    }
    free(tab);
    return rc;
}

json_t *glucx_an_wi_replay(const glucx_an_wi_input_t *in, const glucx_an_wi_opts_t *opt, char *err,
                           size_t errlen)
{
    replay_t r;
    memset(&r, 0, sizeof(r));
    r.in = in;
    r.opt = opt;
    if (!opt || !opt->cost) {
        set_err(err, errlen, "what-if replay: no cost function");
        return NULL;
    }
    if (in->nprocs <= 0 || in->ncolls == 0) {
        set_err(err, errlen,
                "what-if replay: the run has no collectives to replay (%d processes, "
                "%zu collectives)",
                in->nprocs, in->ncolls);
        return NULL;
    }
    r.scaled = opt->ranks > 0;
    r.nv = r.scaled ? opt->ranks : in->nprocs;
    if (r.scaled && glucx_an_wi_check_ranks(in, opt->ranks, err, errlen) != 0)
        return NULL;
    size_t nc = in->ncolls, np = (size_t)in->nprocs, nv = (size_t)r.nv;
    json_t *doc = NULL;
    group_t *groups = NULL;
    r.off = calloc(np + 1, sizeof(*r.off));
    r.dur = calloc(nc, sizeof(*r.dur));
    r.meas = calloc(nc, sizeof(*r.meas));
    r.need = calloc(nc, sizeof(*r.need));
    r.arrived = calloc(nc, sizeof(*r.arrived));
    r.maxarr = calloc(nc, sizeof(*r.maxarr));
    r.endt = calloc(nc, sizeof(*r.endt));
    r.lastb = calloc(nc, sizeof(*r.lastb));
    r.cur = calloc(nv, sizeof(*r.cur));
    r.arr = calloc(nv, sizeof(*r.arr));
    r.ready = calloc(nc, sizeof(*r.ready));
    r.slot_of = calloc(nc, sizeof(*r.slot_of));
    r.wait = calloc(nc, sizeof(*r.wait));
    if (!r.off || !r.dur || !r.meas || !r.need || !r.arrived || !r.maxarr || !r.endt || !r.lastb ||
        !r.cur || !r.arr || !r.ready || !r.slot_of || !r.wait)
        goto oom;
    /* steps per process: count, place, sort by begin */
    size_t nsteps = 0;
    for (size_t i = 0; i < nc; i++)
        for (int j = 0; j < in->colls[i].nparts; j++)
            if (in->colls[i].b[j] >= 0 || in->colls[i].e[j] >= 0) {
                r.off[in->colls[i].proc[j] + 1]++;
                nsteps++;
            }
    for (size_t p = 0; p < np; p++)
        r.off[p + 1] += r.off[p];
    r.steps = malloc((nsteps ? nsteps : 1) * sizeof(*r.steps));
    size_t *fill = calloc(np, sizeof(*fill));
    if (!r.steps || !fill) {
        free(fill);
        goto oom;
    }
    for (size_t i = 0; i < nc; i++) {
        const glucx_an_wi_coll_t *c = &in->colls[i];
        int64_t maxb = -1, maxe = -1;
        int whole = c->nparts > 0;
        for (int j = 0; j < c->nparts; j++) {
            int64_t b = c->b[j], e = c->e[j];
            if (b < 0 && e < 0)
                continue;
            if (b < 0 || e < 0)
                whole = 0;
            if (b < 0)
                b = e;
            if (e < 0)
                e = b;
            int p = c->proc[j];
            r.steps[r.off[p] + fill[p]++] = (step_t){i, j, b, e};
            if (b > maxb)
                maxb = b;
            if (e > maxe)
                maxe = e;
            r.need[i]++;
        }
        r.meas[i] = whole && maxe >= maxb ? (double)(maxe - maxb) : NAN;
        r.lastb[i] = maxb;
        if (r.scaled)
            r.need[i] = r.need[i] == c->nparts ? (int)nv : 0;
    }
    free(fill);
    for (size_t p = 0; p < np; p++)
        qsort(r.steps + r.off[p], r.off[p + 1] - r.off[p], sizeof(step_t), cmp_step);
    r.t0 = INT64_MAX;
    for (size_t k = 0; k < nsteps; k++)
        if (r.steps[k].b < r.t0)
            r.t0 = r.steps[k].b;
    /* iterations */
    {
        int64_t *idx = malloc(nc * sizeof(*idx));
        if (!idx)
            goto oom;
        size_t n = 0;
        for (size_t i = 0; i < nc; i++)
            if (in->colls[i].iteration >= 0)
                idx[n++] = in->colls[i].iteration;
        qsort(idx, n, sizeof(*idx), cmp_i64);
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
            if (u == 0 || idx[u - 1] != idx[i])
                idx[u++] = idx[i];
        r.slots = calloc(u ? u : 1, sizeof(*r.slots));
        if (!r.slots) {
            free(idx);
            goto oom;
        }
        r.nslots = u;
        for (size_t s = 0; s < u; s++)
            r.slots[s] = (slot_t){idx[s], INT64_MAX, INT64_MIN, INFINITY, -INFINITY, 0, 0};
        for (size_t i = 0; i < nc; i++) {
            r.slot_of[i] = -1;
            int64_t it = in->colls[i].iteration;
            if (it < 0)
                continue;
            size_t lo = 0, hi = u;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (idx[mid] < it)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            r.slot_of[i] = (int)lo;
            const glucx_an_wi_coll_t *c = &in->colls[i];
            slot_t *st = &r.slots[lo];
            for (int j = 0; j < c->nparts; j++) {
                if (c->b[j] < 0 || c->e[j] < 0)
                    continue;
                st->meas_exposed += (double)(c->e[j] - c->b[j]);
                if (c->b[j] < st->meas_first)
                    st->meas_first = c->b[j];
                if (c->e[j] > st->meas_last)
                    st->meas_last = c->e[j];
            }
        }
        free(idx);
    }
    /* costs, then the walk */
    if (cost_all(&r, err, errlen) != 0)
        goto fail;
    for (size_t v = 0; v < nv; v++) {
        int p = src_of(&r, (int)v);
        if (r.off[p] < r.off[p + 1])
            arrive(&r, (int)v, 0, (double)(r.steps[r.off[p]].b - r.t0));
    }
    for (size_t i = 0; i < nc; i++)
        r.endt[i] = NAN;
    while (r.nready > 0)
        fire(&r, r.ready[--r.nready]);
    for (size_t i = 0; i < nc; i++)
        if (r.need[i] > 0 && isnan(r.endt[i])) {
            const glucx_an_wi_coll_t *c = &in->colls[i];
            set_err(err, errlen,
                    "what-if replay: collective %s seq %" PRIu32 " of communicator 0x%" PRIx64
                    " (%" PRIu64 " bytes) never has all %d participants: %d arrived (the "
                    "processes' orders of their collectives disagree; an incomplete trace?)",
                    glucx_an_coll_name(c->coll), c->seq, c->comm_id, c->bytes, r.need[i],
                    r.arrived[i]);
            goto fail;
        }
    /* groups by (kind, bytes, algorithm measured): one more cost call per group for its
     * algorithm on the new setup (the cost function is deterministic) */
    groups = calloc(nc, sizeof(*groups));
    if (!groups)
        goto oom;
    size_t ng = 0;
    double total_last = -INFINITY;
    int64_t mfirst = INT64_MAX, mlast = INT64_MIN;
    for (size_t i = 0; i < nc; i++) {
        const glucx_an_wi_coll_t *c = &in->colls[i];
        if (r.need[i] == 0)
            continue;
        size_t g;
        for (g = 0; g < ng; g++)
            if (groups[g].coll == c->coll && groups[g].bytes == c->bytes &&
                groups[g].alg_old == c->alg && groups[g].requested == c->requested &&
                groups[g].size == c->comm_size)
                break;
        if (g == ng) {
            glucx_an_wi_cost_t k = {NAN, NAN, -1};
            int size = r.scaled ? r.nv : c->comm_size;
            if (opt->cost(opt->cost_arg, c, size, &k, err, errlen) != 0)
                goto fail;
            groups[ng++] = (group_t){
                c->coll, c->alg, k.alg, c->requested, c->comm_size, c->bytes, 0, 0, 0, 0, 0};
        }
        group_t *gr = &groups[g];
        gr->count++;
        if (r.slot_of[i] >= 0) {
            gr->in_iter++;
            gr->predicted += r.dur[i];
            gr->pred_wait += r.wait[i];
            if (isfinite(r.meas[i]))
                gr->measured += r.meas[i];
        }
        if (r.endt[i] > total_last)
            total_last = r.endt[i];
        for (int j = 0; j < c->nparts; j++) {
            if (c->b[j] >= 0 && c->b[j] < mfirst)
                mfirst = c->b[j];
            if (c->e[j] > mlast)
                mlast = c->e[j];
        }
    }
    qsort(groups, ng, sizeof(*groups), cmp_group);
    /* iteration times: a slot with a predecessor ends where it ends and begins where the
     * previous one ended; the first runs from its earliest arrival */
    json_t *per = json_array();
    double sum_m = 0, sum_p = 0, sum_me = 0, sum_pe = 0;
    size_t nsum = 0;
    for (size_t s = 0; s < r.nslots; s++) {
        const slot_t *st = &r.slots[s];
        double m = s == 0 ? (double)(st->meas_last - st->meas_first)
                          : (double)(st->meas_last - r.slots[s - 1].meas_last);
        double p =
            s == 0 ? st->pred_last - st->pred_first : st->pred_last - r.slots[s - 1].pred_last;
        double me = st->meas_exposed / (double)np, pe = st->pred_exposed / (double)nv;
        json_array_append_new(
            per, json_pack("{s:I, s:I, s:I, s:I, s:I}", "iteration", (json_int_t)st->index,
                           "measured_ns", (json_int_t)llround(m), "predicted_ns",
                           (json_int_t)llround(p), "measured_exposed_ns", (json_int_t)llround(me),
                           "predicted_exposed_ns", (json_int_t)llround(pe)));
        if (r.nslots >= 2 && s == 0)
            continue;
        sum_m += m;
        sum_p += p;
        sum_me += me;
        sum_pe += pe;
        nsum++;
    }
    double mean_m = nsum ? sum_m / (double)nsum : NAN, mean_p = nsum ? sum_p / (double)nsum : NAN;
    double niter = r.nslots ? (double)r.nslots : 1.0;
    json_t *colls = json_array();
    for (size_t g = 0; g < ng; g++) {
        const group_t *gr = &groups[g];
        json_array_append_new(
            colls,
            json_pack("{s:s, s:I, s:i, s:s, s:s, s:b, s:I, s:I, s:f, s:f, s:f, s:o}", "coll",
                      glucx_an_coll_name(gr->coll), "bytes", (json_int_t)gr->bytes,
                      "communicator_ranks", gr->size, "algorithm_measured",
                      glucx_an_alg_name(gr->alg_old), "algorithm", glucx_an_alg_name(gr->alg_new),
                      "requested_by_call", gr->requested, "count", (json_int_t)gr->count,
                      "in_iterations", (json_int_t)gr->in_iter, "measured_ns_per_iteration",
                      gr->measured / niter, "predicted_ns_per_iteration", gr->predicted / niter,
                      "predicted_wait_ns_per_iteration", gr->pred_wait / niter / (double)nv,
                      "share_of_iteration",
                      isfinite(mean_p) && mean_p > 0 ? json_real(gr->predicted / niter / mean_p)
                                                     : json_null()));
    }
    json_t *pred = json_pack(
        "{s:o, s:o, s:o, s:o, s:I, s:I}", "iteration_ns",
        isfinite(mean_p) ? json_integer((json_int_t)llround(mean_p)) : json_null(),
        "measured_iteration_ns",
        isfinite(mean_m) ? json_integer((json_int_t)llround(mean_m)) : json_null(),
        "exposed_comm_ns", nsum ? json_integer((json_int_t)llround(sum_pe / nsum)) : json_null(),
        "measured_exposed_comm_ns",
        nsum ? json_integer((json_int_t)llround(sum_me / nsum)) : json_null(), "total_ns",
        (json_int_t)llround(total_last - (double)(mfirst - r.t0)), "measured_total_ns",
        (json_int_t)(mlast - mfirst));
    doc = json_pack("{s:i, s:s, s:i, s:i, s:I, s:I, s:o, s:o, s:o, s:o}", "whatif_version",
                    GLUCX_AN_WHATIF_VERSION, "mode",
                    opt->mode == GLUCX_AN_WI_ABSOLUTE   ? "absolute"
                    : opt->mode == GLUCX_AN_WI_ADDITIVE ? "additive"
                                                        : "relative",
                    "ranks", r.nv, "measured_ranks", in->nprocs, "collectives_replayed",
                    (json_int_t)nc, "iterations", (json_int_t)r.nslots, "prediction", pred,
                    "bottleneck", ng ? json_deep_copy(json_array_get(colls, 0)) : json_null(),
                    "per_iteration", per, "collectives", colls);
    if (!doc)
        goto oom;
    json_object_set_new(doc, "collectives_not_costed", json_integer((json_int_t)r.not_costed));
    free(groups);
    replay_free(&r);
    return doc;
oom:
    set_err(err, errlen, "what-if replay: out of memory (%zu collectives, %d ranks)", in->ncolls,
            r.nv);
fail:
    free(groups);
    replay_free(&r);
    json_decref(doc);
    return NULL;
}

/* ---- text ---------------------------------------------------------------------------------- */

static double jnum(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

int glucx_an_wi_write_text(const json_t *doc, FILE *f, size_t max_rows)
{
    const json_t *p = json_object_get(doc, "prediction");
    double pi = jnum(p, "iteration_ns"), mi = jnum(p, "measured_iteration_ns");
    fprintf(f, "what-if (%s mode, %d ranks; measured on %d):\n",
            json_string_value(json_object_get(doc, "mode")),
            (int)json_integer_value(json_object_get(doc, "ranks")),
            (int)json_integer_value(json_object_get(doc, "measured_ranks")));
    fprintf(f, "  iteration time   predicted %.3f ms, the measured run %.3f ms (replay definition)",
            pi / 1e6, mi / 1e6);
    if (isfinite(pi) && isfinite(mi) && mi > 0)
        fprintf(f, ", %+.1f %%", 100.0 * (pi - mi) / mi);
    fprintf(
        f,
        "\n  exposed comm     predicted %.3f ms, the measured run %.3f ms per rank and iteration\n",
        jnum(p, "exposed_comm_ns") / 1e6, jnum(p, "measured_exposed_comm_ns") / 1e6);
    const json_t *b = json_object_get(doc, "bottleneck");
    if (json_is_object(b))
        fprintf(f,
                "  bottleneck       %s of %" JSON_INTEGER_FORMAT " bytes by %s: %.3f ms per "
                "iteration\n",
                json_string_value(json_object_get(b, "coll")),
                json_integer_value(json_object_get(b, "bytes")),
                json_string_value(json_object_get(b, "algorithm")),
                jnum(b, "predicted_ns_per_iteration") / 1e6);
    const json_t *bd = json_object_get(doc, "bottleneck_link_class");
    if (json_is_object(bd))
        fprintf(f, "  bottleneck link  %s (%s packages): %.3f ms of it\n",
                json_string_value(json_object_get(bd, "class")),
                strcmp(json_string_value(json_object_get(bd, "class")), "intra") == 0 ? "inside"
                                                                                      : "between",
                jnum(bd, "ns_per_iteration") / 1e6);
    fprintf(f, "\ncollectives (per iteration, predicted time first):\n");
    fprintf(f, "  %-16s %12s %-20s %-20s %12s %12s\n", "collective", "bytes", "measured alg",
            "predicted alg", "measured ms", "predicted ms");
    const json_t *cs = json_object_get(doc, "collectives");
    for (size_t i = 0; i < json_array_size(cs) && (max_rows == 0 || i < max_rows); i++) {
        const json_t *c = json_array_get(cs, i);
        fprintf(f, "  %-16s %12" JSON_INTEGER_FORMAT " %-20s %-20s %12.3f %12.3f\n",
                json_string_value(json_object_get(c, "coll")),
                json_integer_value(json_object_get(c, "bytes")),
                json_string_value(json_object_get(c, "algorithm_measured")),
                json_string_value(json_object_get(c, "algorithm")),
                jnum(c, "measured_ns_per_iteration") / 1e6,
                jnum(c, "predicted_ns_per_iteration") / 1e6);
    }
    const json_t *notes = json_object_get(doc, "notes");
    for (size_t i = 0; i < json_array_size(notes); i++)
        fprintf(f, "note: %s\n", json_string_value(json_array_get(notes, i)));
    return ferror(f) ? -1 : 0;
}
