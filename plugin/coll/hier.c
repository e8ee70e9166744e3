/*
 * The shape of the network for the topology-aware algorithms, each rank's lines through it, and
 * the direct (full-mesh) engines. See hier.h.
 */
#include "coll/hier.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/allgather/ring.h"
#include "coll/reduce_scatter/ring.h"

/* With a topology file the communicator covers exactly, its outer dimensions; else none. */
static const glucx_net_t *covered_net(const glucx_topo_t *t)
{
    return t->net != NULL && t->net_rank != NULL && t->net->nranks == t->size ? t->net : NULL;
}

int glucx_coll_shape(const glucx_topo_t *t, glucx_coll_shape_t *s)
{
    memset(s, 0, sizeof(*s));
    if (t->package_size < 1)
        return 0;
    const int p = t->package_size;
    const glucx_net_t *net = covered_net(t);
    s->ndims = 1;
    s->size[0] = p;
    s->flows[0] = 1;
    if (net != NULL) {
        s->engine[0] = net->dim[0].kind == GLUCX_DIM_RING ? GLUCX_ENGINE_RING : GLUCX_ENGINE_DIRECT;
        s->link[0] = glucx_topo_dim_cost(t, 0);
        for (int d = 1; d < net->ndims; d++) {
            if (net->dim[d].size < 2)
                continue;
            const int k = s->ndims++;
            s->size[k] = net->dim[d].size;
            s->engine[k] =
                net->dim[d].kind == GLUCX_DIM_RING ? GLUCX_ENGINE_RING : GLUCX_ENGINE_DIRECT;
            s->link[k] = glucx_topo_dim_cost(t, d);
            s->flows[k] = p;
        }
        return 1;
    }
    /* without a file: shared memory inside a host, a switch between hosts */
    s->engine[0] = GLUCX_ENGINE_DIRECT;
    s->link[0] = t->cost[GLUCX_LINK_INTRA];
    if (t->npackages > 1) {
        s->ndims = 2;
        s->size[1] = t->npackages;
        s->engine[1] = GLUCX_ENGINE_DIRECT;
        s->link[1] = t->cost[GLUCX_LINK_INTER];
        s->flows[1] = p;
    }
    return 1;
}

double glucx_coll_dim_cost(const glucx_coll_shape_t *s, int d, double bytes, double gamma,
                           int flows)
{
    const double n = s->size[d];
    if (n <= 1)
        return 0;
    const glucx_link_cost_t l = s->link[d];
    const double steps = s->engine[d] == GLUCX_ENGINE_DIRECT ? 1 : n - 1;
    return steps * l.alpha_ns + (n - 1) / n * bytes * (l.beta_ns_per_byte * flows + gamma);
}

/* One chunk of @p bytes through the phases in sequence (glucx_coll_offload_cost's fill). */
static double offload_seq(const glucx_topo_t *topo, const glucx_coll_shape_t s, double bytes,
                          int rs)
{
    const double m = bytes, x = m / topo->size, P = topo->npackages;
    const double g = rs ? topo->gamma_ns_per_byte : 0;
    const int p = s.size[0], nout = s.ndims - 1, nrot = p < nout ? p : nout;
    glucx_coll_shape_t d0 = s; /* the reduce-scatter's package phase runs the direct engine */
    if (rs)
        d0.engine[0] = GLUCX_ENGINE_DIRECT;
    double c = P * glucx_coll_dim_cost(&d0, 0, m / P, g, 1);
    /* outer phase j: each rotation on its dimension, its local ranks sharing the links; the
     * phase takes its slowest rotation */
    for (int j = 0; j < nout; j++) {
        double phase = 0;
        for (int rot = 0; rot < nrot; rot++) {
            const int flows = (p - rot + nout - 1) / nout;
            /* allgather phase j: G = the dimensions before it, G allgathers of one block per
             * member; reduce-scatter phase j (from the last): one of G blocks per member */
            const int jj = rs ? nout - 1 - j : j;
            double G = 1;
            for (int k = 0; k < jj; k++)
                G *= s.size[glucx_coll_outer_dim(&s, 1, rot, k)];
            const int d = glucx_coll_outer_dim(&s, 1, rot, jj);
            const double t = rs ? glucx_coll_dim_cost(&s, d, G * s.size[d] * x, g, flows)
                                : G * glucx_coll_dim_cost(&s, d, s.size[d] * x, 0, flows);
            phase = t > phase ? t : phase;
        }
        c += phase;
    }
    return c;
}

double glucx_coll_offload_cost(const glucx_topo_t *topo, size_t bytes, int rs)
{
    glucx_coll_shape_t s;
    if (!glucx_coll_shape(topo, &s) || s.ndims < 2)
        return INFINITY; /* one package: the flat algorithms */
    const int C = glucx_coll_pipeline_chunks(bytes, GLUCX_COLL_OFFLOAD_CHUNK_BYTES, SIZE_MAX, 1);
    const double mc = (double)bytes / C, x = mc / topo->size;
    const double seq = offload_seq(topo, s, mc, rs);
    /* the busiest resource: one direction of an outer link (every local rank's chunks that
     * cross it, beta only), or a rank's package exchanges and reductions */
    const int p = s.size[0], nout = s.ndims - 1;
    const double g = rs ? topo->gamma_ns_per_byte : 0, n0 = p;
    double load[GLUCX_NET_MAX_DIMS] = {0};
    for (int c = 0; c < C; c++) {
        load[0] += (n0 - 1) / n0 * mc * (s.link[0].beta_ns_per_byte + g);
        for (int l = 0; l < p; l++) {
            double G = 1;
            for (int j = 0; j < nout; j++) {
                const int d = glucx_coll_outer_dim(&s, 1, l + c, j);
                const double n = s.size[d], v = (n - 1) / n * G * n * x;
                load[d] += v * s.link[d].beta_ns_per_byte;
                if (l == 0) /* this rank's own reductions (local rank 0 stands for any) */
                    load[0] += v * g;
                G *= n;
            }
        }
    }
    return glucx_coll_pipeline_cost(load, s.ndims, seq, C);
}

double glucx_coll_pipeline_cost(const double *load, int nload, double seq, int nchunks)
{
    double lmax = 0;
    for (int k = 0; k < nload; k++)
        lmax = load[k] > lmax ? load[k] : lmax;
    return nchunks == 1 ? seq : lmax + seq - lmax / nchunks;
}

glucx_status_t glucx_coll_layout_init(glucx_coll_ctx_t *ctx, glucx_coll_layout_t *layout)
{
    memset(layout, 0, sizeof(*layout));
    const glucx_topo_t *t = ctx->topo;
    if (t == NULL || t->size != ctx->size)
        return glucx_coll_decline(ctx, "no topology of %d ranks", ctx->size);
    if (!glucx_coll_shape(t, &layout->shape)) {
        int lo = t->size, hi = 0; /* the smallest and largest package */
        for (int k = 0; k < t->npackages; k++) {
            int c = 0;
            for (int r = 0; r < t->size; r++)
                c += t->package_of[r] == k;
            lo = c < lo ? c : lo;
            hi = c > hi ? c : hi;
        }
        return glucx_coll_decline(ctx,
                                  "its packages must be of equal size: %d ranks in %d packages "
                                  "of %d to %d ranks",
                                  t->size, t->npackages, lo, hi);
    }
    const glucx_coll_shape_t *s = &layout->shape;
    const int n = t->size, P = t->npackages, p = t->package_size;
    const glucx_net_t *net = covered_net(t);
    size_t nline = 0;
    for (int d = 0; d < s->ndims; d++)
        nline += (size_t)s->size[d];
    glucx_status_t st;
    int *mem = glucx_coll_malloc(ctx, sizeof(int) * ((size_t)P * 2 + (size_t)n + nline), &st);
    if (mem == NULL)
        return st;
    layout->storage_ = mem;
    layout->pkg_pos = mem;
    int *fill = mem + P;
    layout->ranks = mem + 2 * (size_t)P;
    int *lines = layout->ranks + n;

    /* a package's position: its file package index (outer coordinates, innermost fastest) */
    for (int k = 0; k < P; k++)
        layout->pkg_pos[k] = -1;
    for (int r = 0; r < n; r++) {
        const int k = t->package_of[r];
        if (layout->pkg_pos[k] < 0)
            layout->pkg_pos[k] = net != NULL ? t->net_rank[r] / net->ranks_per_package : k;
    }
    /* ranks[pos * p + l]: package at position pos, local rank l (rank order inside it) */
    memset(fill, 0, sizeof(int) * (size_t)P);
    int me_local = 0;
    for (int r = 0; r < n; r++) {
        const int k = t->package_of[r], l = fill[k]++;
        layout->ranks[layout->pkg_pos[k] * p + l] = r;
        if (r == ctx->rank)
            me_local = l;
    }
    const int me_pos = layout->pos = layout->pkg_pos[t->package_of[ctx->rank]];
    layout->npackages = P;

    /* lines: dimension 0 is the package; an outer one varies one coordinate of the position */
    layout->line[0] = lines;
    layout->index[0] = me_local;
    for (int l = 0; l < p; l++)
        lines[l] = layout->ranks[me_pos * p + l];
    lines += p;
    int k = 1;
    for (int d = 1; k < s->ndims; d++) {
        int stride = 1, size = P;
        if (net != NULL) {
            if (net->dim[d].size < 2)
                continue;
            stride = net->pkg_stride[d];
            size = net->dim[d].size;
        }
        const int c = (me_pos / stride) % size;
        layout->line[k] = lines;
        layout->index[k] = c;
        for (int i = 0; i < size; i++)
            lines[i] = layout->ranks[(me_pos + (i - c) * stride) * p + me_local];
        lines += size;
        k++;
    }
    return GLUCX_OK;
}

void glucx_coll_layout_fini(glucx_coll_layout_t *layout)
{
    free(layout->storage_);
    layout->storage_ = NULL;
}

/* A direct phase, blocking: posted, waited for and finished step by step. */
static glucx_status_t direct_phase(glucx_coll_ctx_t *ctx, int rs, const char *in, char *buf,
                                   char *out, const size_t *off, const size_t *len, unsigned step)
{
    glucx_coll_phase_t ph = {.sub = *ctx,
                             .engine = GLUCX_ENGINE_DIRECT,
                             .rs = rs,
                             .in = in,
                             .out = out,
                             .buf = buf,
                             .off = off,
                             .len = len,
                             .step = step};
    glucx_status_t st = glucx_coll_phase_start(&ph);
    while (st == GLUCX_OK && !glucx_coll_phase_done(&ph)) {
        st = glucx_coll_waitall(&ph.sub, ph.reqs, ph.nreq);
        if (st == GLUCX_OK)
            st = glucx_coll_phase_advance(&ph);
    }
    glucx_coll_phase_fini(&ph); /* (after a failure the transport completed every request) */
    return st;
}

glucx_status_t glucx_coll_dim_reduce_scatter(glucx_coll_ctx_t *ctx, glucx_coll_engine_t engine,
                                             const char *in, char *work, const size_t *off,
                                             const size_t *len, char *out, unsigned *step)
{
    if (engine == GLUCX_ENGINE_DIRECT) {
        glucx_status_t st = direct_phase(ctx, 1, in, NULL, out, off, len, *step);
        *step += 1;
        return st;
    }
    glucx_status_t st = glucx_coll_ring_reduce_scatter_blocks(ctx, in, off, len, work, out, *step);
    *step += (unsigned)(ctx->size > 1 ? ctx->size - 1 : 0);
    return st;
}

glucx_status_t glucx_coll_dim_allgather(glucx_coll_ctx_t *ctx, glucx_coll_engine_t engine,
                                        char *buf, const size_t *off, const size_t *len,
                                        unsigned *step)
{
    if (engine == GLUCX_ENGINE_DIRECT) {
        glucx_status_t st = direct_phase(ctx, 0, NULL, buf, NULL, off, len, *step);
        *step += 1;
        return st;
    }
    glucx_status_t st = glucx_coll_ring_allgather_blocks(ctx, buf, off, len, *step, NULL);
    *step += (unsigned)(ctx->size > 1 ? ctx->size - 1 : 0);
    return st;
}

/* ---- step-by-step phases ---- */

static int mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/* Post step ph->s. */
static glucx_status_t phase_post(glucx_coll_phase_t *ph)
{
    glucx_coll_ctx_t *c = &ph->sub;
    const int n = c->size, i = c->rank, s = ph->s;
    const unsigned step = ph->step + (unsigned)s;
    const size_t es = c->esize;
    glucx_status_t st = GLUCX_OK;
    ph->nreq = 0;
    memset(ph->reqs, 0, sizeof(*ph->reqs) * 2 * (size_t)(n - 1));
    if (ph->engine == GLUCX_ENGINE_DIRECT) {
        if (ph->rs) {
            const size_t mine = ph->len[i] * es;
            for (int g = 0; g < n && st == GLUCX_OK; g++)
                if (g != i)
                    st = glucx_coll_irecv(c, g, step,
                                          ph->scratch + (size_t)(g < i ? g : g - 1) * mine, mine,
                                          &ph->reqs[ph->nreq++]);
            for (int k = 1; k < n && st == GLUCX_OK; k++) {
                const int g = (i + k) % n;
                st = glucx_coll_isend(c, g, step, ph->in + ph->off[g] * es, ph->len[g] * es,
                                      &ph->reqs[ph->nreq++]);
            }
        } else {
            for (int g = 0; g < n && st == GLUCX_OK; g++)
                if (g != i)
                    st = glucx_coll_irecv(c, g, step, ph->buf + ph->off[g] * es, ph->len[g] * es,
                                          &ph->reqs[ph->nreq++]);
            for (int k = 1; k < n && st == GLUCX_OK; k++)
                st = glucx_coll_isend(c, (i + k) % n, step, ph->buf + ph->off[i] * es,
                                      ph->len[i] * es, &ph->reqs[ph->nreq++]);
        }
        return st;
    }
    const int right = (i + 1) % n, left = mod(i - 1, n);
    if (ph->rs) {
        const int rb = mod(i - 2 - s, n), sb = mod(i - 1 - s, n);
        st = glucx_coll_irecv(c, left, step, ph->scratch, ph->len[rb] * es, &ph->reqs[ph->nreq++]);
        if (st == GLUCX_OK)
            st = glucx_coll_isend(c, right, step, (s == 0 ? ph->in : ph->work) + ph->off[sb] * es,
                                  ph->len[sb] * es, &ph->reqs[ph->nreq++]);
    } else {
        const int rb = mod(i - 1 - s, n), sb = mod(i - s, n);
        st = glucx_coll_irecv(c, left, step, ph->buf + ph->off[rb] * es, ph->len[rb] * es,
                              &ph->reqs[ph->nreq++]);
        if (st == GLUCX_OK)
            st = glucx_coll_isend(c, right, step, ph->buf + ph->off[sb] * es, ph->len[sb] * es,
                                  &ph->reqs[ph->nreq++]);
    }
    return st;
}

glucx_status_t glucx_coll_phase_start(glucx_coll_phase_t *ph)
{
    glucx_coll_ctx_t *c = &ph->sub;
    const int n = c->size, i = c->rank;
    const size_t es = c->esize;
    ph->s = 0;
    ph->nreq = 0;
    ph->reqs = NULL;
    ph->scratch = NULL;
    ph->nsteps = glucx_coll_phase_steps(ph->engine, n);
    if (n < 2) {
        if (ph->rs)
            glucx_coll_copy(ph->out, ph->in + ph->off[0] * es, ph->len[0] * es);
        return GLUCX_OK;
    }
    glucx_status_t st = GLUCX_OK;
    size_t scratch = 0;
    ph->own = ph->rs ? ph->in + ph->off[i] * es : NULL;
    if (ph->rs && ph->engine == GLUCX_ENGINE_DIRECT) {
        /* the own contribution is read after the first combine wrote out: keep a copy if they
         * alias and the own member is not among the first two operands */
        const int keep_own = ph->out == ph->own && i >= 2;
        scratch = ((size_t)n - 1 + (size_t)keep_own) * ph->len[i] * es;
    } else if (ph->rs) {
        for (int b = 0; b < n; b++)
            scratch = ph->len[b] * es > scratch ? ph->len[b] * es : scratch;
    }
    /* (at least a byte for a reduce-scatter: zero-length blocks still address the scratch) */
    if (ph->rs && (ph->scratch = glucx_coll_malloc(c, scratch > 0 ? scratch : 1, &st)) == NULL)
        return st;
    ph->reqs = glucx_coll_malloc(c, sizeof(*ph->reqs) * 2 * ((size_t)n - 1), &st);
    if (ph->reqs == NULL)
        return st;
    return phase_post(ph);
}

int glucx_coll_phase_ready(const glucx_coll_phase_t *ph)
{
    for (int k = 0; k < ph->nreq; k++)
        if (!glucx_tx_req_done(&ph->reqs[k]))
            return 0;
    return 1;
}

glucx_status_t glucx_coll_phase_advance(glucx_coll_phase_t *ph)
{
    glucx_coll_ctx_t *c = &ph->sub;
    const int n = c->size, i = c->rank, s = ph->s;
    const size_t es = c->esize;
    glucx_status_t st = glucx_coll_waitall(c, ph->reqs, ph->nreq); /* done: checks only */
    if (st != GLUCX_OK)
        return st;
    if (ph->rs && ph->engine == GLUCX_ENGINE_DIRECT && ph->len[i] > 0) {
        const size_t mine = ph->len[i] * es;
        const char *own = ph->own;
        if (ph->out == own && i >= 2) {
            char *copy = ph->scratch + (size_t)(n - 1) * mine;
            memcpy(copy, own, mine);
            own = copy;
        }
#define CONTRIB(g) ((g) == i ? own : ph->scratch + (size_t)((g) < i ? (g) : (g)-1) * mine)
        glucx_coll_reduce(c, ph->out, CONTRIB(0), CONTRIB(1), ph->len[i]);
        for (int g = 2; g < n; g++)
            glucx_coll_reduce(c, ph->out, ph->out, CONTRIB(g), ph->len[i]);
#undef CONTRIB
    } else if (ph->rs && ph->engine == GLUCX_ENGINE_RING && ph->len[mod(i - 2 - s, n)] > 0) {
        const int rb = mod(i - 2 - s, n);
        char *dst = s == n - 2 ? ph->out : ph->work + ph->off[rb] * es;
        glucx_coll_reduce(c, dst, ph->scratch, ph->in + ph->off[rb] * es, ph->len[rb]);
    }
    ph->s++;
    return ph->s < ph->nsteps ? phase_post(ph) : GLUCX_OK;
}

void glucx_coll_phase_fini(glucx_coll_phase_t *ph)
{
    free(ph->reqs);
    free(ph->scratch);
    ph->reqs = NULL;
    ph->scratch = NULL;
    ph->nreq = 0;
}

/* ---- chunks in flight ---- */

typedef struct pipe_chunk {
    int j;                 /* the phase running; nphase when the chunk is done */
    glucx_coll_phase_t ph; /* (all zero before its start and after its fini) */
} pipe_chunk_t;

static glucx_status_t pipe_start(pipe_chunk_t *x, int c, unsigned spc, glucx_coll_phase_fn build,
                                 void *arg)
{
    memset(&x->ph, 0, sizeof(x->ph));
    glucx_status_t st = build(arg, c, x->j, &x->ph);
    if (st != GLUCX_OK)
        return st;
    x->ph.step += (unsigned)c * spc;
    return glucx_coll_phase_start(&x->ph);
}

int glucx_coll_pipeline_chunks(size_t bytes, size_t chunk_bytes, size_t max_chunks,
                               unsigned steps_per_chunk)
{
    size_t c = bytes / chunk_bytes;
    c = c < 1 ? 1 : c > GLUCX_COLL_CHUNKS_MAX ? GLUCX_COLL_CHUNKS_MAX : c;
    c = c > max_chunks ? (max_chunks > 0 ? max_chunks : 1) : c;
    while (c > 1 && c * steps_per_chunk > GLUCX_COLL_STEP_CONFIRM)
        c--;
    return (int)c;
}

glucx_status_t glucx_coll_pipeline(glucx_coll_ctx_t *ctx, int nchunks, const int *nphase,
                                   unsigned steps_per_chunk, glucx_coll_phase_fn build, void *arg)
{
    glucx_status_t st = GLUCX_OK;
    pipe_chunk_t *ch = glucx_coll_malloc(ctx, sizeof(*ch) * (size_t)nchunks, &st);
    if (ch == NULL)
        return st;
    memset(ch, 0, sizeof(*ch) * (size_t)nchunks);
    int npend = 0, active = 0;
    for (int c = 0; c < nchunks && st == GLUCX_OK; c++) {
        if (nphase[c] > 0) {
            active++;
            st = pipe_start(&ch[c], c, steps_per_chunk, build, arg);
        }
    }
    glucx_tx_req_t **pend = NULL;
    while (st == GLUCX_OK && active > 0) {
        /* wait only when no running chunk's step is complete */
        int np = 0, ready = 0, need = 0;
        for (int c = 0; c < nchunks; c++)
            need += ch[c].j < nphase[c] ? ch[c].ph.nreq : 0;
        if (need > npend) {
            free(pend);
            if ((pend = glucx_coll_malloc(ctx, sizeof(*pend) * (size_t)need, &st)) == NULL)
                break;
            npend = need;
        }
        for (int c = 0; c < nchunks; c++) {
            if (ch[c].j >= nphase[c])
                continue;
            const int before = np;
            for (int q = 0; q < ch[c].ph.nreq; q++)
                if (!glucx_tx_req_done(&ch[c].ph.reqs[q]))
                    pend[np++] = &ch[c].ph.reqs[q];
            ready |= np == before;
        }
        if (!ready && (st = glucx_coll_wait_some(ctx, pend, np)) != GLUCX_OK)
            break;
        for (int c = 0; c < nchunks && st == GLUCX_OK; c++) {
            pipe_chunk_t *x = &ch[c];
            while (st == GLUCX_OK && x->j < nphase[c] && glucx_coll_phase_ready(&x->ph)) {
                if (!glucx_coll_phase_done(&x->ph))
                    st = glucx_coll_phase_advance(&x->ph);
                if (st != GLUCX_OK || !glucx_coll_phase_done(&x->ph))
                    break;
                glucx_coll_phase_fini(&x->ph);
                if (++x->j == nphase[c])
                    active--;
                else
                    st = pipe_start(x, c, steps_per_chunk, build, arg);
            }
        }
    }
    for (int c = 0; c < nchunks; c++) /* (a no-op on a chunk's finished or unstarted phase) */
        glucx_coll_phase_fini(&ch[c].ph);
    free(pend);
    free(ch);
    return st;
}

/* ---- rows composed of other rows on subgroups ---- */

glucx_link_cost_t glucx_coll_outer_link(const glucx_coll_shape_t *s)
{
    glucx_link_cost_t l = {0};
    for (int d = 1; d < s->ndims; d++) {
        l.alpha_ns += s->link[d].alpha_ns;
        if (s->link[d].beta_ns_per_byte > l.beta_ns_per_byte)
            l.beta_ns_per_byte = s->link[d].beta_ns_per_byte;
    }
    return l;
}

void glucx_coll_layout_cross(const glucx_coll_layout_t *layout, int l, int *members)
{
    const int p = layout->shape.size[0];
    for (int q = 0; q < layout->npackages; q++)
        members[q] = layout->ranks[q * p + l];
}

void glucx_coll_layout_find(const glucx_coll_layout_t *layout, const glucx_topo_t *topo, int root,
                            int *pos_p, int *local_p)
{
    const int p = layout->shape.size[0], pos = layout->pkg_pos[topo->package_of[root]];
    int local = 0;
    while (local < p - 1 && layout->ranks[pos * p + local] != root)
        local++;
    *pos_p = pos;
    *local_p = local;
}

glucx_status_t glucx_coll_run_on(glucx_coll_ctx_t *ctx, const int *members, int n, int index,
                                 const glucx_coll_args_t *args, const void *sendbuf, void *recvbuf,
                                 unsigned step_base, glucx_status_t (*run)(glucx_coll_ctx_t *))
{
    glucx_coll_ctx_t sub;
    glucx_coll_subgroup(ctx, members, n, index, &sub);
    sub.args = args;
    sub.sendbuf = sendbuf;
    sub.recvbuf = recvbuf;
    sub.step_base = ctx->step_base + step_base;
    glucx_status_t st = run(&sub);
    if (st == GLUCX_ERR_UNSUPPORTED)
        st = glucx_coll_fail(ctx, GLUCX_ERR_INVALID_ARG,
                             "internal error: a phase on %d ranks declined after the collective "
                             "started: %s",
                             n, sub.why);
    return st;
}
