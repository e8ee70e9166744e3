/*
 * glucx-analyze whatif, the tool side (whatif_tool.h): read the measured run, build the new
 * setup with libglucx's topology reader (glucx_net_load, glucx_topo_from_net), parse --tune with
 * libglucx's GLUCX_TUNE parser (glucx_tune_parse), select as a communicator does
 * (glucx_select_build / glucx_select_lookup) and cost with the algorithm tables' own cost
 * functions (glucx_coll_tables[kind]->algs[row].cost): the same code glucx-info --algorithms
 * prints, never a copy. The replay itself is analysis/core/whatif.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coll/coll.h"
#include "core/core.h"
#include "core/event.h"
#include "core/select.h"
#include "topo/topo.h"
#include "util/error.h"
#include "core/event.h"
#include "whatif_tool.h"

/* the analysis's error text (event.h) */
#define set_err glucx_an_set_err

/* ---- the measured run ---------------------------------------------------------------------- */

typedef struct comm_ent {
    uint64_t id;
    int size;
    int *proc;      /* [size] process index of each rank, -1 before its comm_init */
    size_t *by_seq; /* [nseq] collective index + 1 (0: none) */
    size_t nseq;
    int64_t *iter; /* [niter] iteration of each seq from report.json, -2: none listed */
    size_t niter;
    unsigned char *requested; /* [nreq] 1: the call requested the algorithm of that seq */
    size_t nreq;
} comm_ent_t;

typedef struct proc_key {
    char host[128];
    int64_t vpid;
} proc_key_t;

typedef struct loader {
    comm_ent_t *comms;
    size_t ncomms;
    proc_key_t *procs;
    size_t nprocs, capprocs;
} loader_t;

static comm_ent_t *comm_get(loader_t *L, uint64_t id)
{
    for (size_t i = 0; i < L->ncomms; i++)
        if (L->comms[i].id == id)
            return &L->comms[i];
    comm_ent_t *v = realloc(L->comms, (L->ncomms + 1) * sizeof(*v));
    if (!v)
        return NULL;
    L->comms = v;
    comm_ent_t *c = &v[L->ncomms++];
    memset(c, 0, sizeof(*c));
    c->id = id;
    return c;
}

static int grow_seq(comm_ent_t *c, size_t seq)
{
    if (seq < c->nseq)
        return 0;
    size_t n = seq + 1 > 2 * c->nseq ? seq + 1 : 2 * c->nseq;
    size_t *v = realloc(c->by_seq, n * sizeof(*v));
    if (!v)
        return -1;
    memset(v + c->nseq, 0, (n - c->nseq) * sizeof(*v));
    c->by_seq = v;
    c->nseq = n;
    return 0;
}

static int proc_of(loader_t *L, const char *host, int64_t vpid)
{
    for (size_t i = 0; i < L->nprocs; i++)
        if (L->procs[i].vpid == vpid && strcmp(L->procs[i].host, host) == 0)
            return (int)i;
    if (L->nprocs == L->capprocs) {
        size_t cap = L->capprocs ? 2 * L->capprocs : 64;
        proc_key_t *v = realloc(L->procs, cap * sizeof(*v));
        if (!v)
            return -1;
        L->procs = v;
        L->capprocs = cap;
    }
    proc_key_t *k = &L->procs[L->nprocs];
    snprintf(k->host, sizeof(k->host), "%s", host);
    k->vpid = vpid;
    return (int)L->nprocs++;
}

static uint64_t hexval(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? strtoull(s, NULL, 16) : 0;
}

static json_int_t ival(const json_t *o, const char *k, json_int_t dflt)
{
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* report.json's collectives: the iteration of each (comm, seq). */
static int load_iterations(loader_t *L, const char *dir, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/report.json", dir);
    json_error_t je;
    json_t *rep = json_load_file(path, 0, &je);
    if (!rep) {
        set_err(err, errlen, "%s: cannot be read as JSON (line %d: %s)", path, je.line, je.text);
        return -1;
    }
    const json_t *cs = json_object_get(rep, "collectives");
    const json_t *lim = json_object_get(json_object_get(rep, "summary"), "collectives");
    if (!json_is_array(cs)) {
        set_err(err, errlen, "%s: no collectives list (not a glucx-analyze report?)", path);
        json_decref(rep);
        return -1;
    }
    if (json_is_integer(lim) && (size_t)json_integer_value(lim) > json_array_size(cs))
        fprintf(stderr,
                "glucx-analyze whatif: %s lists %zu of %" JSON_INTEGER_FORMAT
                " collectives (--list-limit): the others count as outside iterations\n",
                path, json_array_size(cs), json_integer_value(lim));
    size_t i;
    const json_t *c;
    json_array_foreach(cs, i, c)
    {
        comm_ent_t *ce = comm_get(L, hexval(c, "comm_id"));
        json_int_t seq = ival(c, "seq", -1), it = ival(c, "iteration", -1);
        if (!ce || seq < 0)
            continue;
        if ((size_t)seq >= ce->niter) {
            size_t n = (size_t)seq + 1 > 2 * ce->niter ? (size_t)seq + 1 : 2 * ce->niter;
            int64_t *v = realloc(ce->iter, n * sizeof(*v));
            if (!v) {
                json_decref(rep);
                set_err(err, errlen, "out of memory reading %s", path);
                return -1;
            }
            for (size_t k = ce->niter; k < n; k++)
                v[k] = -2;
            ce->iter = v;
            ce->niter = n;
        }
        ce->iter[seq] = it;
    }
    json_decref(rep);
    return 0;
}

static void loader_free(loader_t *L)
{
    for (size_t i = 0; i < L->ncomms; i++) {
        free(L->comms[i].proc);
        free(L->comms[i].by_seq);
        free(L->comms[i].iter);
        free(L->comms[i].requested);
    }
    free(L->comms);
    free(L->procs);
}

int glucx_wi_load(const char *dir, glucx_an_wi_input_t *in, char *err, size_t errlen)
{
    loader_t L = {0};
    int rc = -1;
    char path[4096];
    snprintf(path, sizeof(path), "%s/events.jsonl", dir);
    FILE *f = NULL;
    char *line = NULL;
    size_t cap = 0;
    if (load_iterations(&L, dir, err, errlen) != 0)
        goto out;
    f = fopen(path, "r");
    if (!f) {
        set_err(err, errlen,
                "%s: %s (whatif reads the event dump next to report.json: `glucx-analyze TRACE -o "
                "%s --list-limit 0 --dump-events %s`, or give it the trace)",
                path, strerror(errno), dir, path);
        goto out;
    }
    long lineno = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        json_error_t je;
        json_t *ev = json_loadb(line, (size_t)len, 0, &je);
        if (!ev) {
            set_err(err, errlen, "%s line %ld: not JSON (%s)", path, lineno, je.text);
            goto out;
        }
        const char *name = json_string_value(json_object_get(ev, "event"));
        int kind = name ? glucx_an_ev_from_name(name) : -1;
        uint64_t cid = hexval(ev, "comm_id");
        json_int_t rank = ival(ev, "rank", -1), ts = ival(ev, "ts", -1);
        comm_ent_t *ce = NULL;
        if (kind == GLUCX_AN_EV_COMM_INIT || kind == GLUCX_AN_EV_COLL_BEGIN ||
            kind == GLUCX_AN_EV_COLL_END) {
            ce = comm_get(&L, cid);
            if (!ce) {
                json_decref(ev);
                set_err(err, errlen, "out of memory reading %s", path);
                goto out;
            }
        }
        if (kind == GLUCX_AN_EV_COMM_INIT) {
            int size = (int)ival(ev, "size", 0);
            const char *host = json_string_value(json_object_get(ev, "host"));
            if (size <= 0 || rank < 0 || rank >= size) {
                json_decref(ev);
                set_err(err, errlen,
                        "%s line %ld: comm_init of rank %" JSON_INTEGER_FORMAT
                        " in a communicator of %d ranks",
                        path, lineno, rank, size);
                goto out;
            }
            if (!ce->proc) {
                ce->size = size;
                ce->proc = malloc((size_t)size * sizeof(int));
                if (!ce->proc) {
                    json_decref(ev);
                    set_err(err, errlen, "out of memory reading %s", path);
                    goto out;
                }
                for (int r = 0; r < size; r++)
                    ce->proc[r] = -1;
            }
            if (rank < ce->size)
                ce->proc[rank] = proc_of(&L, host ? host : "", ival(ev, "vpid", -1));
        } else if (kind == GLUCX_AN_EV_SCHED_DECISION && ival(ev, "kind", -1) == 0) {
            /* an algorithm decision the call made ("override": opts.algorithm) */
            const char *why = json_string_value(json_object_get(ev, "reason"));
            comm_ent_t *dc = why && strcmp(why, "override") == 0 ? comm_get(&L, cid) : NULL;
            json_int_t seq = ival(ev, "seq", -1);
            if (dc && seq >= 0) {
                if (!dc->requested || (size_t)seq >= dc->nreq) {
                    size_t n = (size_t)seq + 1 > 2 * dc->nreq ? (size_t)seq + 1 : 2 * dc->nreq;
                    unsigned char *v = realloc(dc->requested, n);
                    if (v) {
                        memset(v + dc->nreq, 0, n - dc->nreq);
                        dc->requested = v;
                        dc->nreq = n;
                    }
                }
                if ((size_t)seq < dc->nreq)
                    dc->requested[seq] = 1;
            }
        } else if ((kind == GLUCX_AN_EV_COLL_BEGIN || kind == GLUCX_AN_EV_COLL_END) && ce->proc &&
                   rank >= 0 && rank < ce->size && ce->proc[rank] >= 0) {
            json_int_t seq = ival(ev, "seq", -1);
            if (seq < 0 || grow_seq(ce, (size_t)seq) != 0) {
                json_decref(ev);
                set_err(err, errlen,
                        "%s line %ld: collective seq %" JSON_INTEGER_FORMAT
                        " cannot be kept (out of memory?)",
                        path, lineno, seq);
                goto out;
            }
            int alg = (int)ival(ev, "alg", -1);
            glucx_an_wi_coll_t *co = NULL;
            if (ce->by_seq[seq] == 0) {
                int64_t it = (size_t)seq < ce->niter && ce->iter[seq] != -2 ? ce->iter[seq] : -1;
                co = glucx_an_wi_add(in, cid, (uint32_t)seq, it, (int)ival(ev, "coll", -1), alg,
                                     (uint64_t)ival(ev, "bytes", 0), ce->size);
                if (!co) {
                    json_decref(ev);
                    set_err(err, errlen, "out of memory reading %s", path);
                    goto out;
                }
                ce->by_seq[seq] = in->ncolls;
            } else {
                co = &in->colls[ce->by_seq[seq] - 1];
            }
            if (kind == GLUCX_AN_EV_COLL_END && alg >= 0)
                co->alg = alg; /* the algorithm that ran (a fallback may differ from the begin's) */
            if (glucx_an_wi_part(in, co, ce->proc[rank], kind == GLUCX_AN_EV_COLL_BEGIN ? ts : -1,
                                 kind == GLUCX_AN_EV_COLL_END ? ts : -1) != 0) {
                json_decref(ev);
                set_err(err, errlen, "out of memory reading %s", path);
                goto out;
            }
        }
        json_decref(ev);
    }
    if (ferror(f)) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < in->ncolls; i++) {
        glucx_an_wi_coll_t *co = &in->colls[i];
        for (size_t k = 0; k < L.ncomms; k++)
            if (L.comms[k].id == co->comm_id && co->seq < L.comms[k].nreq)
                co->requested = L.comms[k].requested[co->seq];
    }
    if (in->ncolls == 0) {
        set_err(err, errlen,
                "%s: no collective of a glucx communicator (coll_begin/coll_end) in "
                "the run: nothing to predict",
                path);
        goto out;
    }
    rc = 0;
out:
    if (f)
        fclose(f);
    free(line);
    loader_free(&L);
    return rc;
}

/* ---- the new setup ------------------------------------------------------------------------- */

typedef struct wi_cost {
    glucx_topo_t *t_new, *t_old; /* t_old NULL: no old costs (absolute mode, another size) */
    int run_size;                /* the run's processes */
    glucx_select_t *sel;
    int keep;
} wi_cost_t;

/* The table row of trace algorithm @p alg for @p coll, -1 if none. */
static int row_of(int coll, int alg)
{
    if (alg < 0)
        return -1;
    const glucx_coll_table_t *tab = glucx_coll_tables[coll];
    for (int a = 0; a < tab->count; a++)
        if (glucx_coll_tp_alg((glucx_coll_t)coll, a) == alg)
            return a;
    return -1;
}

static int cost_fn(void *arg, const glucx_an_wi_coll_t *c, int size, glucx_an_wi_cost_t *out,
                   char *err, size_t errlen)
{
    const wi_cost_t *w = arg;
    int coll = c->coll, alg = c->alg;
    uint64_t bytes = c->bytes;
    if (coll < 0 || coll >= GLUCX_COLL_COUNT) {
        out->new_ns = out->old_ns = NAN; /* not costed: its measured duration stays */
        out->alg = alg;
        return 0;
    }
    if (size != w->t_new->size || c->comm_size != w->run_size) {
        /* a communicator over part of the topology: its ranks' places are not in the trace;
         * not costed, its measured duration stays (counted in collectives_not_costed) */
        out->new_ns = out->old_ns = NAN;
        out->alg = alg;
        return 0;
    }
    const glucx_coll_table_t *tab = glucx_coll_tables[coll];
    int old_row = row_of(coll, alg);
    const glucx_select_range_t *r = glucx_select_lookup(w->sel, (glucx_coll_t)coll, bytes);
    int new_row = r->alg;
    /* the call's own request beats GLUCX_TUNE in libglucx (plugin/core/coll.c): kept; so is
     * every measured algorithm under --keep-algorithms unless --tune forces another */
    if (old_row >= 0 && (c->requested || (w->keep && !r->forced)))
        new_row = old_row;
    if (new_row < 0) {
        set_err(err, errlen, "%s of %" PRIu64 " bytes on %d ranks: no algorithm selected",
                glucx_coll_name((glucx_coll_t)coll), bytes, size);
        return -1;
    }
    double nw = tab->algs[new_row].cost(w->t_new, bytes);
    if (!isfinite(nw)) {
        set_err(err, errlen,
                "%s of %" PRIu64 " bytes on %d ranks: algorithm '%s'%s does not apply (its cost "
                "is not finite)",
                glucx_coll_name((glucx_coll_t)coll), bytes, size, tab->algs[new_row].name,
                new_row == old_row ? " (as measured)"
                : r->forced        ? " (forced by --tune)"
                                   : "");
        return -1;
    }
    out->new_ns = nw;
    out->old_ns = old_row >= 0 && w->t_old ? tab->algs[old_row].cost(w->t_old, bytes) : NAN;
    out->alg = glucx_coll_tp_alg((glucx_coll_t)coll, new_row);
    return 0;
}

/* A rate: GB/s (the topology file's unit) as a plain number, or bits/s with tc's suffixes
 * kbit, mbit, gbit (as glucx-cluster degrade takes them). 0 and the GB/s value, or -1. */
static int parse_rate(const char *s, double *gbps)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || !(v > 0) || !isfinite(v))
        return -1;
    if (*end == '\0')
        *gbps = v;
    else if (strcmp(end, "gbit") == 0)
        *gbps = v / 8.0;
    else if (strcmp(end, "mbit") == 0)
        *gbps = v / 8.0 / 1e3;
    else if (strcmp(end, "kbit") == 0)
        *gbps = v / 8.0 / 1e6;
    else
        return -1;
    return 0;
}

/* Apply LINK=RATE to @p net: LINK "dimD" sets dimension D's rate (every link of it); a link id
 * sets that link's (glucx_net_set_link_rate). 0, or -1 with a message naming the option. */
static int apply_rate(glucx_net_t *net, const char *opt, char *err, size_t errlen)
{
    const char *eq = strchr(opt, '=');
    char link[64];
    if (!eq || eq == opt || (size_t)(eq - opt) >= sizeof(link)) {
        set_err(err, errlen, "--link-rate '%s': expected LINK=RATE (LINK a link id or dimD)", opt);
        return -1;
    }
    memcpy(link, opt, (size_t)(eq - opt));
    link[eq - opt] = '\0';
    double gbps;
    if (parse_rate(eq + 1, &gbps) != 0) {
        set_err(err, errlen,
                "--link-rate '%s': rate '%s' is not a positive number of GB/s (or of bits/s "
                "with kbit, mbit, gbit)",
                opt, eq + 1);
        return -1;
    }
    char *end = NULL;
    if (strncmp(link, "dim", 3) == 0) {
        long d = strtol(link + 3, &end, 10);
        if (end == link + 3 || *end != '\0' || d < 0 || d >= net->ndims) {
            set_err(err, errlen,
                    "--link-rate '%s': no dimension '%s' in %s (dimensions dim0..dim%d)", opt,
                    link + 3, net->path, net->ndims - 1);
            return -1;
        }
        net->dim[d].bandwidth_GBps = gbps;
        return 0;
    }
    long id = strtol(link, &end, 10);
    if (end == link || *end != '\0' || id < 0 || id >= net->nlinks) {
        set_err(err, errlen,
                "--link-rate '%s': no link '%s' in %s (links 0..%d, docs/topology.md numbers "
                "them; or dimD for a dimension)",
                opt, link, net->path, net->nlinks - 1);
        return -1;
    }
    if (glucx_net_set_link_rate(net, (int)id, gbps) != GLUCX_OK) {
        set_err(err, errlen, "--link-rate '%s': %s", opt, glucx_last_error());
        return -1;
    }
    return 0;
}

static glucx_topo_t *build_topo(const char *path, const glucx_wi_args_t *a, int with_rates,
                                glucx_net_t **net_p, char *err, size_t errlen)
{
    glucx_net_t *net = NULL;
    glucx_topo_t *t = NULL;
    const char *what = with_rates ? "--topology" : "--from-topology";
    if (glucx_net_load(path, &net) != GLUCX_OK) {
        set_err(err, errlen, "%s '%s': %s", what, path, glucx_last_error());
        return NULL;
    }
    if (net->nranks > GLUCX_COMM_SIZE_MAX) {
        set_err(err, errlen, "%s '%s': %d ranks, more than a communicator has (%d)", what, path,
                net->nranks, GLUCX_COMM_SIZE_MAX);
        glucx_net_destroy(net);
        return NULL;
    }
    for (int i = 0; with_rates && i < a->nrates; i++)
        if (apply_rate(net, a->rates[i], err, errlen) != 0) {
            glucx_net_destroy(net);
            return NULL;
        }
    if (glucx_topo_from_net(net, a->calibration, &t) != GLUCX_OK) {
        set_err(err, errlen, "%s '%s': %s", what, path, glucx_last_error());
        glucx_net_destroy(net);
        return NULL;
    }
    *net_p = net;
    return t;
}

/* a free dimension's rate: the largest a topology file may give (GB/s) */
#define WI_FREE_GBPS 1e6

/* The link class the bottleneck collective spends most on (whatif.json "bottleneck_link_class"):
 * its cost on the new setup, again with each class in turn made free (every dimension of it at
 * WI_FREE_GBPS, latency 0, its links' own rates too): "intra" is dimension 0 (inside a
 * package), "inter" every outer dimension together (one alone may save nothing: the torus rows
 * work the outer dimensions in parallel); the class whose removal saves the most. Only for a
 * costed bottleneck on a communicator over the whole topology. Leaves @p doc as it is when
 * nothing applies or memory runs out. @p t_new is the topology built from @p net as it is. */
static void bottleneck_class(json_t *doc, glucx_net_t *net, const glucx_topo_t *t_new,
                             const glucx_wi_args_t *a)
{
    const json_t *b = json_object_get(doc, "bottleneck");
    const char *cname = json_string_value(json_object_get(b, "coll"));
    const char *aname = json_string_value(json_object_get(b, "algorithm"));
    json_int_t bytes = json_integer_value(json_object_get(b, "bytes"));
    int coll = -1, row = -1;
    for (int c = 0; cname && c < GLUCX_COLL_COUNT; c++)
        if (strcmp(glucx_coll_name((glucx_coll_t)c), cname) == 0)
            coll = c;
    if (coll < 0 || !aname)
        return;
    const glucx_coll_table_t *tab = glucx_coll_tables[coll];
    for (int k = 0; k < tab->count; k++)
        if (strcmp(tab->algs[k].name, aname) == 0)
            row = k;
    if (row < 0)
        return;
    glucx_topo_t *t = NULL;
    double base = tab->algs[row].cost(t_new, (size_t)bytes); /* t_new: built from net */
    if (!isfinite(base) || base <= 0)
        return;
    int best = -1;
    double best_save = 0;
    double *saved = calloc((size_t)net->nlinks + 1, sizeof(double));
    if (!saved)
        return;
    glucx_net_dim_t keep[GLUCX_NET_MAX_DIMS];
    memcpy(keep, net->dim, sizeof(keep));
    for (int cls = 0; cls < 2; cls++) { /* 0 intra: dimension 0; 1 inter: the outer ones */
        for (int d = 0; d < net->ndims; d++)
            if ((d == 0) == (cls == 0)) {
                net->dim[d].bandwidth_GBps = WI_FREE_GBPS;
                net->dim[d].latency_ns = 0;
            }
        for (int l = 0; net->link_rate_GBps && l < net->nlinks; l++) {
            saved[l] = net->link_rate_GBps[l];
            if ((net->links[l].dim == 0) == (cls == 0) && saved[l] > 0)
                net->link_rate_GBps[l] = WI_FREE_GBPS;
        }
        t = NULL;
        double c = NAN;
        if (glucx_topo_from_net(net, a->calibration, &t) == GLUCX_OK)
            c = tab->algs[row].cost(t, (size_t)bytes);
        glucx_topo_destroy(t);
        memcpy(net->dim, keep, sizeof(keep));
        for (int l = 0; net->link_rate_GBps && l < net->nlinks; l++)
            net->link_rate_GBps[l] = saved[l];
        if (isfinite(c) && base - c > best_save) {
            best_save = base - c;
            best = cls;
        }
    }
    free(saved);
    if (best < 0)
        return;
    double per_iter = json_number_value(json_object_get(b, "predicted_ns_per_iteration"));
    json_object_set_new(doc, "bottleneck_link_class",
                        json_pack("{s:s, s:f, s:f}", "class", best == 0 ? "intra" : "inter",
                                  "share_of_collective", best_save / base, "ns_per_iteration",
                                  per_iter * best_save / base));
}

json_t *glucx_wi_run(const glucx_an_wi_input_t *in, const glucx_wi_args_t *a, int *status_p,
                     char *err, size_t errlen)
{
    *status_p = 2;
    glucx_tune_t tune;
    if (glucx_tune_parse(a->tune ? a->tune : "", &tune) != GLUCX_OK) {
        set_err(err, errlen, "--tune '%s': %s", a->tune, glucx_last_error());
        return NULL;
    }
    glucx_net_t *net_new = NULL, *net_old = NULL;
    wi_cost_t w = {0};
    json_t *doc = NULL;
    w.keep = a->keep_algorithms;
    w.t_new = build_topo(a->topology, a, 1, &net_new, err, errlen);
    if (!w.t_new)
        goto out;
    w.t_old =
        build_topo(a->from_topology ? a->from_topology : a->topology, a, 0, &net_old, err, errlen);
    if (!w.t_old)
        goto out;
    int want = a->ranks > 0 ? a->ranks : in->nprocs;
    if (w.t_new->size != want) {
        if (a->ranks > 0)
            set_err(err, errlen,
                    "--ranks %d: the topology '%s' has %d ranks (give the topology "
                    "file of the rank count to predict)",
                    a->ranks, a->topology, w.t_new->size);
        else
            set_err(err, errlen,
                    "--topology '%s' has %d ranks, the run %d: give --ranks %d to "
                    "predict at the topology's rank count, or the run's topology",
                    a->topology, w.t_new->size, in->nprocs, w.t_new->size);
        goto out;
    }
    w.run_size = in->nprocs;
    if (w.t_old->size != in->nprocs && a->mode == GLUCX_AN_WI_ABSOLUTE) {
        glucx_topo_destroy(w.t_old); /* absolute needs no old costs */
        w.t_old = NULL;
    } else if (w.t_old->size != in->nprocs) {
        set_err(err, errlen,
                "--from-topology '%s'%s has %d ranks, the run %d: give the topology the run "
                "was measured on (relative and additive modes cost the measured algorithm on "
                "it), or --mode absolute",
                a->from_topology ? a->from_topology : a->topology,
                a->from_topology ? "" : " (by default --topology)", w.t_old->size, in->nprocs);
        goto out;
    }
    if (a->ranks > 0 && a->ranks != in->nprocs &&
        glucx_an_wi_check_ranks(in, a->ranks, err, errlen) != 0)
        goto out;
    w.sel = malloc(sizeof(*w.sel));
    if (!w.sel || glucx_select_build(w.t_new, &tune, w.sel) != GLUCX_OK) {
        *status_p = 1;
        set_err(err, errlen, "building the selection map: %s",
                w.sel ? glucx_last_error() : "out of memory");
        goto out;
    }
    glucx_an_wi_opts_t o = {a->mode, a->ranks > 0 && a->ranks != in->nprocs ? a->ranks : 0, cost_fn,
                            &w};
    *status_p = 1;
    doc = glucx_an_wi_replay(in, &o, err, errlen);
    if (doc) {
        *status_p = 0;
        json_object_set_new(doc, "topology", json_string(a->topology));
        json_object_set_new(doc, "from_topology",
                            json_string(a->from_topology ? a->from_topology : a->topology));
        json_object_set_new(doc, "tune", json_string(a->tune ? a->tune : ""));
        json_t *rates = json_array();
        for (int i = 0; i < a->nrates; i++)
            json_array_append_new(rates, json_string(a->rates[i]));
        json_object_set_new(doc, "link_rates", rates);
        json_object_set_new(doc, "keep_algorithms", json_boolean(a->keep_algorithms));
        bottleneck_class(doc, net_new, w.t_new, a);
    }
out:
    free(w.sel);
    glucx_topo_destroy(w.t_new);
    glucx_topo_destroy(w.t_old);
    glucx_net_destroy(net_new);
    glucx_net_destroy(net_old);
    return doc;
}
