/*
 * glucx-analyze export: the run's topology and its collective algorithm choices as ASTRA-sim 2.0
 * input files (Won et al., "ASTRA-sim2.0", ISPASS 2023; the keys of its analytical network file
 * and its system-layer JSON, as its examples/ directory shows them).
 *
 * - network.yml: the topology file's dimensions (it is already ASTRA-sim's analytical format:
 *   topology, npus_count, bandwidth in GB/s, latency in ns), as libglucx read it.
 * - system.json: for each collective ASTRA-sim's system layer knows (all-reduce, all-gather,
 *   reduce-scatter, all-to-all), the implementation of the glucx algorithm that took the most
 *   time of that kind in the run (report.json "collectives"), per dimension where glucx's
 *   algorithm works dimension by dimension ("direct" in the package, whose phase is glucx's
 *   direct exchange, "ring" outside), else one ASTRA-sim "one*" implementation over all ranks.
 *   A kind the run did not use takes the algorithm glucx's selection picks at 1 MiB on this
 *   topology. active-chunks-per-dimension and preferred-dataset-splits are the most chunks glucx
 *   keeps in flight in the exported algorithms of the kinds the run used (1 without chunks);
 *   inter-dimension-scheduling is "themis" when one of them is a rotated row; local-mem-bw is
 *   1 / copy_ns_per_byte of the costs.
 * - export.json: per kind, every algorithm of the run with its calls, bytes and time, the one
 *   exported, how it maps (exact or approximate, and why), and what could not be exported
 *   (broadcast, reduce, gather, scatter, barrier: ASTRA-sim's system layer has no such
 *   collective; Gloo's own collectives: no algorithm known).
 * The workload (a Chakra execution trace) is not written: see analysis/README.md.
 */
#include "export_astra.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "coll/coll.h"
#include "coll/hier.h"
#include "core/select.h"
#include "topo/topo.h"
#include "util/error.h"

/* The ASTRA-sim collectives and the glucx kinds that map to each. */
static const struct {
    const char *key; /* system.json key */
    glucx_coll_t coll;
    glucx_coll_t alias; /* a second glucx kind counted with it, or GLUCX_COLL_COUNT */
} kinds[] = {
    {"all-reduce-implementation", GLUCX_COLL_ALLREDUCE, GLUCX_COLL_COUNT},
    {"all-gather-implementation", GLUCX_COLL_ALLGATHER, GLUCX_COLL_ALLGATHERV},
    {"reduce-scatter-implementation", GLUCX_COLL_REDUCE_SCATTER, GLUCX_COLL_COUNT},
    {"all-to-all-implementation", GLUCX_COLL_ALLTOALL, GLUCX_COLL_ALLTOALLV},
};
enum { NKINDS = sizeof(kinds) / sizeof(kinds[0]) };

/* How a glucx algorithm maps. flat: one ASTRA-sim implementation over all ranks; else per
 * dimension ("direct" for the package, "ring" for the outer ones). chunk: its chunk size when it
 * keeps chunks in flight (0: none); rotated: chunks start in different dimensions. */
typedef struct amap {
    glucx_coll_t coll;
    const char *alg;
    const char *flat;
    size_t chunk;
    int rotated, exact;
    const char *note;
} amap_t;

static const amap_t maps[] = {
    {GLUCX_COLL_ALLREDUCE, "ring", "oneRing", 0, 0, 1, "one ring over all ranks"},
    {GLUCX_COLL_ALLREDUCE, "recursive_doubling", "oneHalvingDoubling", 0, 0, 0,
     "ASTRA-sim's halving-doubling halves the data each step (Rabenseifner); recursive doubling "
     "exchanges the whole vector, so the export understates its bandwidth term"},
    {GLUCX_COLL_ALLREDUCE, "rabenseifner", "oneHalvingDoubling", 0, 0, 1,
     "reduce-scatter by recursive halving, allgather by recursive doubling"},
    {GLUCX_COLL_ALLREDUCE, "hierarchical", NULL, 0, 0, 0,
     "glucx allreduces each outer dimension in turn on 1/p of the vector; ASTRA-sim's "
     "multi-dimensional allreduce reduce-scatters down every dimension and gathers back (glucx's "
     "torus), which moves less over the outer links"},
    {GLUCX_COLL_ALLREDUCE, "torus", NULL, 0, 0, 1,
     "reduce-scatter down the dimensions, allgather back (Mikami et al. 2018)"},
    {GLUCX_COLL_ALLREDUCE, "torus_rotated", NULL, GLUCX_COLL_ALLREDUCE_CHUNK_BYTES, 1, 0,
     "chunks in flight, chunk c of local rank l starting in outer dimension 1 + (l + c) mod D; "
     "ASTRA-sim's Themis scheduler orders each chunk's dimensions by load at run time"},
    {GLUCX_COLL_ALLGATHER, "ring", "oneRing", 0, 0, 1, "one ring over all ranks"},
    {GLUCX_COLL_ALLGATHER, "recursive_doubling", "oneHalvingDoubling", 0, 0, 1,
     "recursive doubling"},
    {GLUCX_COLL_ALLGATHER, "bruck", "oneHalvingDoubling", 0, 0, 0,
     "Bruck's allgather has recursive doubling's steps and volume with partners r - 2^k"},
    {GLUCX_COLL_ALLGATHER, "hierarchical", NULL, GLUCX_COLL_OFFLOAD_CHUNK_BYTES, 1, 1,
     "each block crosses each outer link of its line once, the fan-out inside the package"},
    {GLUCX_COLL_REDUCE_SCATTER, "ring", "oneRing", 0, 0, 1, "one ring over all ranks"},
    {GLUCX_COLL_REDUCE_SCATTER, "halving", "oneHalvingDoubling", 0, 0, 1, "recursive halving"},
    {GLUCX_COLL_REDUCE_SCATTER, "hierarchical", NULL, GLUCX_COLL_OFFLOAD_CHUNK_BYTES, 1, 1,
     "each partial crosses each outer link of its line once, reduced inside the package"},
    {GLUCX_COLL_ALLTOALL, "pairwise", "oneDirect", 0, 0, 1,
     "every rank sends each block straight to its destination"},
    {GLUCX_COLL_ALLTOALL, "linear", "oneDirect", 0, 0, 1,
     "every rank sends each block straight to its destination"},
    {GLUCX_COLL_ALLTOALL, "bruck", "oneDirect", 0, 0, 0,
     "Bruck's alltoall forwards blocks in log2(n) rounds; ASTRA-sim has no such algorithm, "
     "direct sends move each block once"},
};

static const amap_t *find_map(glucx_coll_t kind, const char *alg)
{
    for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
        if (maps[i].coll == kind && strcmp(maps[i].alg, alg) == 0)
            return &maps[i];
    return NULL;
}

static int coll_of(const char *name)
{
    for (int c = 0; c < GLUCX_COLL_COUNT; c++)
        if (strcmp(glucx_coll_name((glucx_coll_t)c), name) == 0)
            return c;
    return -1;
}

/* The ASTRA-sim kind (index in kinds[]) of glucx kind c, or -1. */
static int kind_of(int c)
{
    for (int k = 0; k < NKINDS; k++)
        if ((int)kinds[k].coll == c || (int)kinds[k].alias == c)
            return k;
    return -1;
}

/* One glucx algorithm of one ASTRA-sim kind in the run. */
typedef struct use {
    char alg[64];
    long calls;
    double time_ns, bytes;
    size_t *sizes;
    size_t nsizes, capsizes;
} use_t;

typedef struct kind_uses {
    use_t *u;
    size_t n, cap;
} kind_uses_t;

static use_t *use_of(kind_uses_t *ku, const char *alg)
{
    for (size_t i = 0; i < ku->n; i++)
        if (strcmp(ku->u[i].alg, alg) == 0)
            return &ku->u[i];
    if (ku->n == ku->cap) {
        size_t cap = ku->cap ? 2 * ku->cap : 4;
        use_t *u = realloc(ku->u, cap * sizeof(*u));
        if (u == NULL)
            return NULL;
        ku->u = u;
        ku->cap = cap;
    }
    use_t *u = &ku->u[ku->n++];
    memset(u, 0, sizeof(*u));
    snprintf(u->alg, sizeof(u->alg), "%s", alg);
    return u;
}

static int add_size(use_t *u, size_t bytes)
{
    if (u->nsizes == u->capsizes) {
        size_t cap = u->capsizes ? 2 * u->capsizes : 16;
        size_t *s = realloc(u->sizes, cap * sizeof(*s));
        if (s == NULL)
            return -1;
        u->sizes = s;
        u->capsizes = cap;
    }
    u->sizes[u->nsizes++] = bytes;
    return 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static size_t median_size(use_t *u)
{
    if (u->nsizes == 0)
        return 0;
    qsort(u->sizes, u->nsizes, sizeof(size_t), cmp_size);
    return u->sizes[u->nsizes / 2];
}

/* The implementation list of @p m on @p net (NULL m: an unmapped algorithm, ring everywhere). */
static json_t *impl_list(const amap_t *m, const glucx_net_t *net)
{
    json_t *a = json_array();
    if (m != NULL && m->flat != NULL) {
        json_array_append_new(a, json_string(m->flat));
        return a;
    }
    for (int d = 0; d < net->ndims; d++)
        json_array_append_new(a, json_string(m != NULL && d == 0 ? "direct" : "ring"));
    return a;
}

static int write_json(const char *dir, const char *name, json_t *v, char *why, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (json_dump_file(v, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
        snprintf(why, len, "export: cannot write %s: %s", path, strerror(errno));
        return 1;
    }
    return 0;
}

static int write_network(const char *dir, const glucx_net_t *net, char *why, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/network.yml", dir);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        snprintf(why, len, "export: cannot write %s: %s", path, strerror(errno));
        return 1;
    }
    fprintf(f, "# ASTRA-sim analytical network, written by glucx-analyze export from %s\n",
            net->path);
    const char *keys[] = {"topology", "npus_count", "bandwidth", "latency"};
    for (int k = 0; k < 4; k++) {
        fprintf(f, "%s: [", keys[k]);
        for (int d = 0; d < net->ndims; d++) {
            const glucx_net_dim_t *x = &net->dim[d];
            if (d > 0)
                fputs(", ", f);
            if (k == 0)
                fputs(glucx_dim_kind_name(x->kind), f);
            else if (k == 1)
                fprintf(f, "%d", x->size);
            else
                fprintf(f, "%.17g", k == 2 ? x->bandwidth_GBps : x->latency_ns);
        }
        fprintf(f, "]%s\n", k == 2 ? "  # GB/s per link and direction" : k == 3 ? "  # ns" : "");
    }
    if (fclose(f) != 0) {
        snprintf(why, len, "export: cannot write %s: %s", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* Read the report's collectives into uses[kind]; the kinds it could not export into skipped. */
static int read_uses(const char *report, json_t *root, kind_uses_t *uses, json_t *skipped,
                     char *why, size_t len)
{
    json_t *colls = json_object_get(root, "collectives");
    if (!json_is_array(colls)) {
        snprintf(why, len, "export: %s: no \"collectives\" array (not a glucx-analyze report?)",
                 report);
        return 1;
    }
    size_t i;
    json_t *c;
    json_array_foreach(colls, i, c)
    {
        const char *coll = json_string_value(json_object_get(c, "coll"));
        const char *alg = json_string_value(json_object_get(c, "algorithm"));
        json_t *t = json_object_get(c, "time_ns"), *b = json_object_get(c, "bytes");
        if (coll == NULL || alg == NULL || !json_is_integer(t) || !json_is_integer(b) ||
            json_integer_value(b) < 0) {
            snprintf(why, len,
                     "export: %s: collectives[%zu] lacks coll, algorithm, time_ns or bytes", report,
                     i);
            return 1;
        }
        int kc = coll_of(coll), k = kc < 0 ? -1 : kind_of(kc);
        const char *reason = kc < 0  ? "unknown collective"
                             : k < 0 ? "ASTRA-sim's system layer has no such collective"
                             : strcmp(alg, "gloo") == 0 ? "Gloo's own algorithm: not known to glucx"
                                                        : NULL;
        if (reason != NULL) {
            json_t *o = json_object_get(skipped, coll);
            if (o == NULL) {
                o = json_pack("{s:s, s:i}", "reason", reason, "calls", 0);
                json_object_set_new(skipped, coll, o);
            }
            json_object_set_new(o, "calls",
                                json_integer(json_integer_value(json_object_get(o, "calls")) + 1));
            continue;
        }
        use_t *u = use_of(&uses[k], alg);
        if (u == NULL || add_size(u, (size_t)json_integer_value(b)) != 0) {
            snprintf(why, len, "export: out of memory reading %s", report);
            return 1;
        }
        u->calls++;
        u->time_ns += (double)json_integer_value(t);
        u->bytes += (double)json_integer_value(b);
    }
    return 0;
}

int glucx_an_export_astra(const char *report, const char *topology, const char *calibration,
                          const char *out_dir, char *why, size_t len)
{
    json_error_t jerr;
    json_t *root = json_load_file(report, 0, &jerr);
    if (root == NULL) {
        snprintf(why, len, "export: %s: not a readable JSON file (%s, line %d)", report, jerr.text,
                 jerr.line);
        return 1;
    }
    const char *tool = json_string_value(json_object_get(json_object_get(root, "tool"), "name"));
    if (tool == NULL || strcmp(tool, "glucx-analyze") != 0) {
        snprintf(why, len, "export: %s: not a glucx-analyze report (tool.name is %s)", report,
                 tool ? tool : "missing");
        json_decref(root);
        return 1;
    }
    glucx_net_t *net = NULL;
    glucx_topo_t *topo = NULL;
    if (glucx_net_load(topology, &net) != GLUCX_OK ||
        glucx_topo_from_net(net, calibration, &topo) != GLUCX_OK) {
        snprintf(why, len, "export: topology %s%s%s: %s", topology,
                 calibration ? " with calibration " : "", calibration ? calibration : "",
                 glucx_last_error());
        glucx_net_destroy(net);
        json_decref(root);
        return 1;
    }
    kind_uses_t uses[NKINDS];
    memset(uses, 0, sizeof(uses));
    json_t *skipped = json_object(), *system = json_object(), *exp = json_object(),
           *jkinds = json_object();
    glucx_select_t *sel = malloc(sizeof(*sel));
    int rc = sel == NULL;
    if (rc)
        snprintf(why, len, "export: out of memory");
    if (rc == 0)
        rc = read_uses(report, root, uses, skipped, why, len);
    /* every communicator of the run has at most as many ranks as the topology file */
    json_t *colls = json_object_get(root, "collectives"), *c;
    size_t i;
    json_array_foreach(colls, i, c)
    {
        if (rc == 0 && json_integer_value(json_object_get(c, "ranks")) > net->nranks) {
            snprintf(why, len, "export: %s: collectives[%zu] ran on %lld ranks; topology %s has %d",
                     report, i, (long long)json_integer_value(json_object_get(c, "ranks")),
                     topology, net->nranks);
            rc = 1;
        }
    }
    if (rc == 0)
        glucx_select_build(topo, NULL, sel);
    int chunks_max = 1, rotated_any = 0, any_used = 0;
    for (int k = 0; k < NKINDS; k++)
        any_used |= uses[k].n > 0;
    for (int k = 0; k < NKINDS && rc == 0; k++) {
        use_t *best = NULL;
        for (size_t j = 0; j < uses[k].n; j++)
            if (best == NULL || uses[k].u[j].time_ns > best->time_ns)
                best = &uses[k].u[j];
        const char *alg;
        const char *source;
        size_t bytes;
        if (best != NULL) {
            alg = best->alg;
            bytes = median_size(best);
            source = "the algorithm with the most time of this kind in the run";
        } else {
            bytes = (size_t)1 << 20;
            const glucx_select_range_t *r = glucx_select_lookup(sel, kinds[k].coll, bytes);
            alg = glucx_coll_tables[kinds[k].coll]->algs[r->alg].name;
            source = "not in the run: glucx's selection at 1 MiB on this topology";
        }
        const amap_t *m = find_map(kinds[k].coll, alg);
        int chunks = 1;
        if (m != NULL && m->chunk > 0)
            chunks = glucx_coll_pipeline_chunks(bytes, m->chunk, SIZE_MAX, 1);
        /* the system layer's chunking and scheduling follow the kinds the run used */
        if (best != NULL || !any_used) {
            if (chunks > chunks_max)
                chunks_max = chunks;
            rotated_any |= m != NULL && m->rotated;
        }
        json_object_set_new(system, kinds[k].key, impl_list(m, net));
        json_t *algs = json_array();
        for (size_t j = 0; j < uses[k].n; j++) {
            const use_t *u = &uses[k].u[j];
            json_array_append_new(algs, json_pack("{s:s, s:I, s:f, s:f}", "algorithm", u->alg,
                                                  "calls", (json_int_t)u->calls, "time_ns",
                                                  u->time_ns, "bytes", u->bytes));
        }
        json_object_set_new(
            jkinds, kinds[k].key,
            json_pack("{s:s, s:s, s:I, s:o, s:b, s:s, s:i, s:o}", "exported", alg, "source", source,
                      "median_bytes", (json_int_t)bytes, "implementation", impl_list(m, net),
                      "exact", m != NULL && m->exact, "note",
                      m != NULL ? m->note : "no ASTRA-sim equivalent known: a ring per dimension",
                      "chunks_in_flight", chunks, "algorithms", algs));
    }
    if (rc == 0) {
        /* the system layer: FIFO because a communicator runs its collectives in issue order */
        json_t *s = json_object();
        json_object_set_new(s, "scheduling-policy", json_string("FIFO"));
        json_object_set_new(s, "endpoint-delay", json_integer(10));
        json_object_set_new(s, "active-chunks-per-dimension", json_integer(chunks_max));
        json_object_set_new(s, "preferred-dataset-splits", json_integer(chunks_max));
        json_object_update(s, system);
        json_object_set_new(s, "collective-optimization", json_string("baseline"));
        json_object_set_new(s, "inter-dimension-scheduling",
                            json_string(rotated_any ? "themis" : "baseline"));
        json_object_set_new(
            s, "local-mem-bw",
            json_real(topo->copy_ns_per_byte > 0 ? 1.0 / topo->copy_ns_per_byte : 0.0));
        json_object_set_new(s, "boost-mode", json_integer(0));
        json_decref(system);
        system = s;
        json_object_set_new(exp, "format", json_integer(1));
        json_object_set_new(exp, "report", json_string(report));
        json_object_set_new(exp, "topology", json_string(topology));
        json_object_set_new(exp, "calibration",
                            calibration ? json_string(calibration) : json_null());
        json_object_set_new(exp, "kinds", jkinds);
        jkinds = NULL;
        json_object_set_new(exp, "not_exported", skipped);
        skipped = NULL;
        json_object_set_new(
            exp, "notes",
            json_pack("[s, s, s]",
                      "endpoint-delay is ASTRA-sim's default (10): glucx has no per-message "
                      "processing figure in those units",
                      "local-mem-bw is 1 / copy_ns_per_byte of the costs (GB/s)",
                      "no workload: a Chakra execution trace is not written"));
        if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
            snprintf(why, len, "export: cannot create %s: %s", out_dir, strerror(errno));
            rc = 1;
        }
    }
    if (rc == 0)
        rc = write_network(out_dir, net, why, len);
    if (rc == 0)
        rc = write_json(out_dir, "system.json", system, why, len);
    if (rc == 0)
        rc = write_json(out_dir, "export.json", exp, why, len);
    for (int k = 0; k < NKINDS; k++) {
        for (size_t j = 0; j < uses[k].n; j++)
            free(uses[k].u[j].sizes);
        free(uses[k].u);
    }
    json_decref(skipped);
    json_decref(jkinds);
    json_decref(system);
    json_decref(exp);
    free(sel);
    glucx_topo_destroy(topo);
    glucx_net_destroy(net);
    json_decref(root);
    return rc;
}
