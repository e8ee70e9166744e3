/*
 * glucx-info: what this glucx is and how it is configured.
 *
 *   glucx-info                 version, build options, every GLUCX_* variable (default, current)
 *   glucx-info --algorithms    every collective's algorithms
 *   glucx-info --algorithms (--ranks N [--packages P] | --topology FILE) [--calibration FILE]
 *              [--sizes LIST] [--json]
 *                              on that topology: each collective's selection map (with
 *                              GLUCX_TUNE) and every algorithm's predicted time at a few sizes
 *   glucx-info --probe [-n N]  start N local ranks (default 2), or run as one rank of a job
 *                              (RANK/WORLD_SIZE and GLUCX_STORE, e.g. under glucx-cluster run),
 *                              and show, per peer, the UCX transport in use and, with
 *                              GLUCX_TOPOLOGY, the physical links on the route; then the
 *                              algorithm map of the communicator
 *   glucx-info --topology FILE [--json]
 *                              the network a topology file describes: dimensions, rank
 *                              coordinates, links, routes between packages (docs/topology.md)
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <glucx/glucx.h>

#include "coll/coll.h"
#include "common/bench_util.h"
#include "common/local_ranks.h"
#include "core/core.h"
#include "transport/ucx_info.h"
#include "util/config.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: glucx-info [--algorithms] [--probe [--ranks N]] [--topology FILE [--json]]\n"
            "       glucx-info --algorithms (--ranks N [--packages P] | --topology FILE)\n"
            "                  [--calibration FILE] [--sizes LIST] [--json]\n"
            "  (no option)       version, build options and GLUCX_* variables\n"
            "  --algorithms      the algorithm table of every collective; with a topology\n"
            "                    (--ranks N [--packages P]: N ranks in P equal packages, default\n"
            "                    1, default costs; or --topology FILE: the file's ranks and\n"
            "                    packages, its nominal costs) each collective's selection map\n"
            "                    (GLUCX_TUNE applied, as a communicator builds it) and every\n"
            "                    algorithm's predicted time at the --sizes (comma-separated,\n"
            "                    K/M/G suffixes; default 1K,64K,1M,16M), the chosen one marked;\n"
            "                    --calibration FILE (default: GLUCX_CALIBRATION) takes the costs\n"
            "                    from a glucx-bench --calibrate file; --json: as JSON\n"
            "  --probe           start N local ranks (default 2; without --ranks under a launcher\n"
            "                    that sets RANK/WORLD_SIZE and GLUCX_STORE: be one rank of the\n"
            "                    job) and show per peer the UCX transport, the physical links on\n"
            "                    its route (with GLUCX_TOPOLOGY), and the algorithm map\n"
            "  --topology FILE   the dimensions, rank coordinates, links and routes between\n"
            "                    packages of a topology file; --json: as JSON (format 1,\n"
            "                    docs/topology.md)\n");
}

static void print_build(void)
{
    printf("glucx %s\n", glucx_version());
#ifdef __OPTIMIZE__
    const char *opt = "optimized";
#else
    const char *opt = "debug";
#endif
#if defined(__SANITIZE_ADDRESS__)
    const char *san = "AddressSanitizer";
#else
    const char *san = "no sanitizer";
#endif
    printf("  build: %s, %s\n", opt, san);
    char ucx[128];
    glucx_tx_ucx_version(ucx, sizeof(ucx));
    printf("  UCX: %s\n", ucx);
    printf("  tracing: not built yet (arrives with the tracing work)\n");
}

static void print_variables(void)
{
    int n;
    const glucx_config_var_t *vars = glucx_config_vars(&n);
    printf("\nvariables:\n");
    for (int i = 0; i < n; i++) {
        const char *cur = getenv(vars[i].name);
        printf("  %-18s default '%s'%s%s%s\n      %s\n", vars[i].name, vars[i].default_value,
               cur ? ", current '" : "", cur ? cur : "", cur ? "'" : "", vars[i].description);
    }
    /* warns about unknown GLUCX_* variables and checks the values */
    glucx_config_t config;
    if (glucx_config_read(&config) != GLUCX_OK)
        printf("\nerror: %s\n", glucx_last_error());
    glucx_tune_t tune;
    if (glucx_tune_parse(config.tune, &tune) != GLUCX_OK)
        printf("\nerror: %s\n", glucx_last_error());
    printf(
        "\nUCX variables that matter: UCX_TLS (transports), UCX_NET_DEVICES (interfaces),\n"
        "  UCX_LOG_LEVEL; glucx sets UCX_KEEPALIVE_INTERVAL from GLUCX_KEEPALIVE_MS and enables\n"
        "  error handling on shared memory so dead peers are detected.\n");
}

static void print_algorithms(void)
{
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        const glucx_coll_table_t *t = glucx_coll_tables[c];
        printf("%s:\n", glucx_coll_name((glucx_coll_t)c));
        for (int i = 0; i < t->count; i++)
            printf("  %-22s %s\n", t->algs[i].name, t->algs[i].desc);
    }
}

/* " links 4 (dim 1), 7 (dim 2)" for the route between two ranks of @p comm, or "" */
static void format_route(const glucx_comm_t *comm, int src, int dst, char *buf, size_t len)
{
    int links[64];
    int n = glucx_topo_route(comm->topo, src, dst, links, 64);
    size_t off = 0;
    buf[0] = '\0';
    if (comm->topo->net == NULL || src == dst)
        return;
    off += (size_t)snprintf(buf, len, "; route:");
    for (int i = 0; i < n && i < 64 && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s link %d (dim %d)", i ? "," : "", links[i],
                                comm->topo->net->links[links[i]].dim);
    if (n > 64 && off < len)
        snprintf(buf + off, len - off, " ... (%d links)", n);
}

static int probe_body(int rank, int size, glucx_store_t *store)
{
    glucx_context_t *ctx = NULL;
    glucx_comm_t *comm = NULL;
    int rc = 1;
    if (glucx_context_create(NULL, &ctx) != GLUCX_OK)
        goto out;
    glucx_comm_params_t p = {.field_mask = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT,
                             .rank = rank,
                             .size = size,
                             .store = store,
                             .name = "probe",
                             .timeout_ms = 30000};
    if (glucx_comm_create(ctx, &p, &comm) != GLUCX_OK)
        goto out;
    /* print rank by rank so the lines do not interleave */
    for (int turn = 0; turn < size; turn++) {
        if (turn == rank) {
            for (int peer = 0; peer < size; peer++) {
                char desc[256], route[512];
                glucx_comm_peer_transport(comm, peer, desc, sizeof(desc));
                format_route(comm, rank, peer, route, sizeof(route));
                printf("rank %d -> rank %d: %s%s\n", rank, peer, desc, route);
            }
            fflush(stdout);
        }
        if (glucx_barrier(comm, NULL) != GLUCX_OK)
            goto out;
    }
    if (rank == 0) {
        printf("\nalgorithm map (ranks: %d, packages: %d):\n", size, comm->topo->npackages);
        for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
            char map[1024];
            glucx_select_format(&comm->select, (glucx_coll_t)c, map, sizeof(map));
            printf("  %-15s %s\n", glucx_coll_name((glucx_coll_t)c), map);
        }
    }
    rc = 0;
out:
    if (rc != 0)
        fprintf(stderr, "glucx-info: rank %d: %s\n", rank, glucx_last_error());
    glucx_comm_destroy(comm);
    glucx_context_destroy(ctx);
    return rc;
}

static int probe_rank(int rank, int size, const char *dir, int progress_fd, void *arg)
{
    (void)arg;
    (void)progress_fd;
    glucx_store_t *store = NULL;
    if (glucx_store_file_create(dir, &store) != GLUCX_OK) {
        fprintf(stderr, "glucx-info: rank %d: %s\n", rank, glucx_last_error());
        return 1;
    }
    int rc = probe_body(rank, size, store);
    glucx_store_destroy(store);
    return rc;
}

/* --probe under a launcher: this process is one rank */
static int probe_launched(int rank, int size)
{
    glucx_store_t *store = NULL;
    if (glucx_store_from_env(&store) != GLUCX_OK) {
        fprintf(stderr, "glucx-info: rank %d: cannot open the store: %s\n", rank,
                glucx_last_error());
        return 1;
    }
    int rc = probe_body(rank, size, store);
    glucx_store_destroy(store);
    return rc;
}

/* ---- --topology ------------------------------------------------------------------------------ */

static const char *node_kind_name(glucx_node_kind_t k)
{
    return k == GLUCX_NODE_RANK ? "rank" : k == GLUCX_NODE_PACKAGE ? "package" : "switch";
}

/* The JSON form (format 1), the interface glucx-cluster reads. */
static json_t *net_json(const glucx_net_t *net)
{
    json_t *root = json_object(), *dims = json_array(), *coords = json_array(), *sws = json_array(),
           *links = json_array(), *routes = json_array();
    json_object_set_new(root, "format", json_integer(1));
    json_object_set_new(root, "file", json_string(net->path));
    json_object_set_new(root, "ranks", json_integer(net->nranks));
    json_object_set_new(root, "ranks_per_package", json_integer(net->ranks_per_package));
    json_object_set_new(root, "packages", json_integer(net->npackages));
    for (int d = 0; d < net->ndims; d++)
        json_array_append_new(dims, json_pack("{s:i, s:s, s:i, s:f, s:f}", "index", d, "kind",
                                              glucx_dim_kind_name(net->dim[d].kind), "size",
                                              net->dim[d].size, "bandwidth_GBps",
                                              net->dim[d].bandwidth_GBps, "latency_ns",
                                              net->dim[d].latency_ns));
    int c[GLUCX_NET_MAX_DIMS];
    for (int p = 0; p < net->npackages; p++) {
        glucx_net_coords(net, p * net->ranks_per_package, c);
        json_t *pc = json_array();
        for (int d = 1; d < net->ndims; d++)
            json_array_append_new(pc, json_integer(c[d]));
        json_array_append_new(coords, pc);
    }
    for (int s = 0; s < net->nswitches; s++) {
        const glucx_net_switch_t *sw = &net->switches[s];
        json_t *members = json_array();
        for (int m = 0; m < net->dim[sw->dim].size; m++)
            json_array_append_new(members, json_integer(net->links[sw->first_link + m].a));
        json_array_append_new(sws, json_pack("{s:i, s:i, s:o}", "switch", s, "dimension", sw->dim,
                                             "members", members));
    }
    for (int i = 0; i < net->nlinks; i++) {
        const glucx_net_link_t *l = &net->links[i];
        const glucx_net_dim_t *d = &net->dim[l->dim];
        json_array_append_new(
            links,
            json_pack("{s:i, s:i, s:s, s:s, s:i, s:s, s:i, s:f, s:f}", "id", l->id, "dimension",
                      l->dim, "kind", glucx_dim_kind_name(d->kind), "a_kind",
                      node_kind_name(l->a_kind), "a", l->a, "b_kind", node_kind_name(l->b_kind),
                      "b", l->b, "bandwidth_GBps", d->bandwidth_GBps, "latency_ns", d->latency_ns));
    }
    int route[GLUCX_NET_MAX_ROUTE];
    for (int s = 0; s < net->npackages; s++)
        for (int t = 0; t < net->npackages; t++) {
            if (s == t)
                continue;
            int n = glucx_net_package_route(net, s, t, route, GLUCX_NET_MAX_ROUTE);
            json_t *r = json_array();
            for (int i = 0; i < n && i < GLUCX_NET_MAX_ROUTE; i++)
                json_array_append_new(r, json_integer(route[i]));
            json_array_append_new(routes,
                                  json_pack("{s:i, s:i, s:o}", "src", s, "dst", t, "links", r));
        }
    json_object_set_new(root, "dimensions", dims);
    json_object_set_new(root, "package_coords", coords);
    json_object_set_new(root, "switches", sws);
    json_object_set_new(root, "links", links);
    json_object_set_new(root, "package_routes", routes);
    return root;
}

static void print_net_text(const glucx_net_t *net)
{
    printf("topology %s: %d ranks, %d packages of %d ranks, %d dimensions, %d links\n", net->path,
           net->nranks, net->npackages, net->ranks_per_package, net->ndims, net->nlinks);
    for (int d = 0; d < net->ndims; d++)
        printf("  dimension %d: %-14s x%-3d %10.4g GB/s %10.4g ns%s\n", d,
               glucx_dim_kind_name(net->dim[d].kind), net->dim[d].size, net->dim[d].bandwidth_GBps,
               net->dim[d].latency_ns, d == 0 ? "  (the package: one host)" : "");
    printf("\nranks (package: coordinates, innermost first):\n");
    int c[GLUCX_NET_MAX_DIMS];
    for (int r = 0; r < net->nranks; r++) {
        glucx_net_coords(net, r, c);
        printf("  rank %d: package %d: (", r, r / net->ranks_per_package);
        for (int d = 0; d < net->ndims; d++)
            printf("%s%d", d ? "," : "", c[d]);
        printf(")\n");
    }
    printf("\nlinks:\n");
    for (int i = 0; i < net->nlinks; i++) {
        const glucx_net_link_t *l = &net->links[i];
        printf("  link %d: dimension %d %s, %s %d - %s %d\n", l->id, l->dim,
               glucx_dim_kind_name(net->dim[l->dim].kind), node_kind_name(l->a_kind), l->a,
               node_kind_name(l->b_kind), l->b);
    }
    printf("\nroutes between packages (dimension order):\n");
    int route[GLUCX_NET_MAX_ROUTE];
    for (int s = 0; s < net->npackages; s++)
        for (int t = 0; t < net->npackages; t++) {
            if (s == t)
                continue;
            int n = glucx_net_package_route(net, s, t, route, GLUCX_NET_MAX_ROUTE);
            printf("  %d -> %d: links", s, t);
            for (int i = 0; i < n && i < GLUCX_NET_MAX_ROUTE; i++)
                printf(" %d", route[i]);
            printf("\n");
        }
}

static int show_topology(const char *path, int as_json)
{
    glucx_net_t *net = NULL;
    if (glucx_net_load(path, &net) != GLUCX_OK) {
        fprintf(stderr, "glucx-info: %s\n", glucx_last_error());
        return 1;
    }
    int rc = 0;
    if (as_json) {
        json_t *j = net_json(net);
        if (j == NULL || json_dumpf(j, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0) {
            fprintf(stderr, "glucx-info: cannot write the JSON of %s\n", path);
            rc = 1;
        }
        printf("\n");
        json_decref(j);
    } else {
        print_net_text(net);
    }
    glucx_net_destroy(net);
    return rc;
}

/* ---- --algorithms on a topology ----------------------------------------------------------------
 */

#define INFO_MAX_SIZES 32

/** What --algorithms shows on a topology: where the topology and costs come from, the sizes. */
typedef struct algo_view {
    int ranks;                    /**< --ranks N, 0 when not given */
    int packages;                 /**< --packages P, 0 when not given (then 1) */
    const char *topology;         /**< --topology FILE, or NULL */
    const char *calibration;      /**< the calibration file, or NULL */
    const char *calibration_from; /**< "--calibration" or "GLUCX_CALIBRATION" */
    const char *tune;             /**< GLUCX_TUNE's text ("" when unset) */
    size_t sizes[INFO_MAX_SIZES];
    int nsizes;
    int as_json;
} algo_view_t;

/**
 * Parse --sizes: byte counts (glucx_tool_parse_size: digits, optional K/M/G) separated by commas.
 * @return 0, or 2 after printing a message naming the option, the list and the bad item.
 */
static int parse_sizes(const char *list, size_t *sizes, int max, int *n_p)
{
    int n = 0;
    const char *s = list;
    for (;;) {
        size_t len = strcspn(s, ",");
        char item[64];
        if (len == 0 || len >= sizeof(item)) {
            fprintf(stderr,
                    "glucx-info: --sizes '%s': expected sizes separated by commas (e.g. "
                    "1K,64K,1M,16M), got an empty or overlong item\n",
                    list);
            return 2;
        }
        memcpy(item, s, len);
        item[len] = '\0';
        if (n == max) {
            fprintf(stderr, "glucx-info: --sizes '%s': more than %d sizes\n", list, max);
            return 2;
        }
        if (glucx_tool_parse_size(item, &sizes[n]) != 0) {
            fprintf(stderr,
                    "glucx-info: --sizes '%s': '%s' is not a size (digits with an optional K, M or "
                    "G suffix)\n",
                    list, item);
            return 2;
        }
        n++;
        if (s[len] == '\0')
            break;
        s += len + 1;
    }
    *n_p = n;
    return 0;
}

/**
 * Parse a positive int option value (digits only) in [lo, hi].
 * @return 0, or 2 after printing a message naming @p opt, the value and the range.
 */
static int parse_int_opt(const char *opt, const char *value, long lo, long hi, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "glucx-info: %s '%s': expected an integer in %ld..%ld\n", opt, value, lo,
                hi);
        return 2;
    }
    *out = (int)v;
    return 0;
}

/**
 * Build the topology @p v describes: N ranks in P equal packages with the default costs
 * (glucx_topo_create_uniform), or the ranks of a topology file placed on it with its nominal
 * costs (glucx_topo_place; hosts follow the file's packages); then, with a calibration file, its
 * costs (kept over the file's nominal ones, as a communicator does under GLUCX_CALIBRATION).
 * @param topo_p receives the topology (glucx_topo_destroy); @param net_p the file's network or
 *        NULL (glucx_net_destroy, after the topology, which borrows it).
 * @return 0, or 2 after printing a message naming the option and value at fault.
 */
static int view_topology(const algo_view_t *v, glucx_topo_t **topo_p, glucx_net_t **net_p)
{
    glucx_topo_t *t = NULL;
    glucx_net_t *net = NULL;
    *topo_p = NULL;
    *net_p = NULL;
    if (v->topology != NULL) {
        if (glucx_net_load(v->topology, &net) != GLUCX_OK) {
            fprintf(stderr, "glucx-info: --topology '%s': %s\n", v->topology, glucx_last_error());
            return 2;
        }
        if (net->nranks > GLUCX_COMM_SIZE_MAX) {
            fprintf(stderr,
                    "glucx-info: --topology '%s': %d ranks, more than a communicator has (%d)\n",
                    v->topology, net->nranks, GLUCX_COMM_SIZE_MAX);
            glucx_net_destroy(net);
            return 2;
        }
        glucx_status_t st = glucx_topo_from_net(net, v->calibration, &t);
        if (st != GLUCX_OK) {
            fprintf(stderr, "glucx-info: --topology '%s'%s%s%s: %s\n", v->topology,
                    v->calibration ? " with " : "", v->calibration ? v->calibration_from : "",
                    v->calibration ? " file" : "",
                    st == GLUCX_ERR_NO_MEMORY ? "out of memory" : glucx_last_error());
            glucx_topo_destroy(t);
            glucx_net_destroy(net);
            return 2;
        }
    } else {
        int p = v->packages > 0 ? v->packages : 1;
        if (p > v->ranks || v->ranks % p != 0) {
            fprintf(stderr,
                    "glucx-info: --packages '%d': must divide --ranks %d (equal packages of "
                    "whole ranks)\n",
                    p, v->ranks);
            return 2;
        }
        if (glucx_topo_create_uniform(v->ranks, p, &t) != GLUCX_OK) {
            fprintf(stderr, "glucx-info: --ranks %d --packages %d: %s\n", v->ranks, p,
                    glucx_last_error());
            return 2;
        }
        if (v->calibration != NULL && glucx_topo_calibration_load(t, v->calibration) != GLUCX_OK) {
            fprintf(stderr, "glucx-info: %s '%s': %s\n", v->calibration_from, v->calibration,
                    glucx_last_error());
            glucx_topo_destroy(t);
            return 2;
        }
    }
    *topo_p = t;
    *net_p = net;
    return 0;
}

static const char *const class_names[GLUCX_LINK_CLASS_COUNT] = {"self", "intra", "inter"};

/** The link class whose costs glucx_topo_bottleneck returns for @p t. */
static glucx_link_class_t bottleneck_class(const glucx_topo_t *t)
{
    return t->npackages > 1 ? GLUCX_LINK_INTER : t->size > 1 ? GLUCX_LINK_INTRA : GLUCX_LINK_SELF;
}

/** Where the costs of the view come from, for its header. */
static void costs_source(const algo_view_t *v, char *buf, size_t len)
{
    if (v->calibration != NULL)
        snprintf(buf, len, "calibration %s (%s)", v->calibration, v->calibration_from);
    else if (v->topology != NULL)
        snprintf(buf, len, "nominal, from %s", v->topology);
    else
        snprintf(buf, len, "defaults");
}

/** The text form of the view: the topology's costs, then per collective its map and a table of
 *  predicted times (us) per algorithm and size, the map's choice marked '*'. */
static void print_view_text(const algo_view_t *v, const glucx_topo_t *t, const glucx_select_t *sel)
{
    char src[700];
    costs_source(v, src, sizeof(src));
    printf("algorithm selection for %d ranks in %d packages", t->size, t->npackages);
    if (v->topology != NULL)
        printf(" (topology %s)", v->topology);
    printf("\n  costs: %s\n", src);
    for (int c = GLUCX_LINK_SELF; c < GLUCX_LINK_CLASS_COUNT; c++)
        printf("    %-5s alpha %10.6g ns  beta %10.6g ns/B\n", class_names[c], t->cost[c].alpha_ns,
               t->cost[c].beta_ns_per_byte);
    printf("    gamma %.6g ns/B, copy %.6g ns/B; topology-oblivious algorithms pay the %s class\n",
           t->gamma_ns_per_byte, t->copy_ns_per_byte, class_names[bottleneck_class(t)]);
    if (t->net != NULL)
        for (int d = 0; d < t->net->ndims; d++) {
            glucx_link_cost_t k = glucx_topo_dim_cost(t, d);
            printf("    dim %d alpha %10.6g ns  beta %10.6g ns/B (%s)\n", d, k.alpha_ns,
                   k.beta_ns_per_byte, glucx_topo_dim_cost_source(t, d));
        }
    printf("  GLUCX_TUNE: %s\n", v->tune[0] ? v->tune : "(not set)");
    printf("predicted time per call in us (each algorithm's cost function on this topology); "
           "*: the map's choice at that size; n/a: the algorithm does not apply\n");
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        const glucx_coll_table_t *tab = glucx_coll_tables[c];
        char map[2048];
        glucx_select_format(sel, (glucx_coll_t)c, map, sizeof(map));
        printf("\n%s\n  map: %s\n  %-24s", glucx_coll_name((glucx_coll_t)c), map, "algorithm");
        for (int k = 0; k < v->nsizes; k++) {
            char lab[24];
            glucx_select_format_size(v->sizes[k], lab, sizeof(lab));
            printf(" %13s%-*s", lab, k + 1 < v->nsizes ? 8 : 0, "");
        }
        printf("\n");
        for (int a = 0; a < tab->count; a++) {
            printf("  %-24s", tab->algs[a].name);
            for (int k = 0; k < v->nsizes; k++) {
                const glucx_select_range_t *r =
                    glucx_select_lookup(sel, (glucx_coll_t)c, v->sizes[k]);
                double ns = tab->algs[a].cost(t, v->sizes[k]);
                const char *mark = r->alg == a ? (r->forced ? "*(tuned)" : "*") : "";
                int w = k + 1 < v->nsizes ? 8 : 0; /* no trailing blanks */
                if (isfinite(ns))
                    printf(" %13.2f%-*s", ns / 1e3, w, mark);
                else
                    printf(" %13s%-*s", "n/a", w, mark);
            }
            printf("\n");
        }
    }
}

/** A cost in ns as JSON: a number, or null for INFINITY (does not apply). */
static json_t *cost_json(double ns)
{
    return isfinite(ns) ? json_real(ns) : json_null();
}

/** A size bound as JSON: the byte count, or null for SIZE_MAX (unbounded). */
static json_t *bound_json(size_t b)
{
    return b == SIZE_MAX ? json_null() : json_integer((json_int_t)b);
}

/* The JSON form (format 1; README "Tools"). */
static json_t *view_json(const algo_view_t *v, const glucx_topo_t *t, const glucx_select_t *sel)
{
    json_t *root = json_object(), *costs = json_object(), *sizes = json_array(),
           *colls = json_array(), *dims = json_array();
    json_object_set_new(root, "format", json_integer(1));
    json_object_set_new(root, "ranks", json_integer(t->size));
    json_object_set_new(root, "packages", json_integer(t->npackages));
    json_object_set_new(root, "topology", v->topology ? json_string(v->topology) : json_null());
    json_object_set_new(root, "calibration",
                        v->calibration ? json_string(v->calibration) : json_null());
    json_object_set_new(root, "tune", json_string(v->tune));
    for (int c = GLUCX_LINK_SELF; c < GLUCX_LINK_CLASS_COUNT; c++)
        json_object_set_new(costs, class_names[c],
                            json_pack("{s:f, s:f}", "alpha_ns", t->cost[c].alpha_ns,
                                      "beta_ns_per_byte", t->cost[c].beta_ns_per_byte));
    json_object_set_new(costs, "gamma_ns_per_byte", json_real(t->gamma_ns_per_byte));
    json_object_set_new(costs, "copy_ns_per_byte", json_real(t->copy_ns_per_byte));
    json_object_set_new(costs, "bottleneck", json_string(class_names[bottleneck_class(t)]));
    for (int d = 0; t->net != NULL && d < t->net->ndims; d++) {
        glucx_link_cost_t k = glucx_topo_dim_cost(t, d);
        json_array_append_new(dims,
                              json_pack("{s:i, s:f, s:f, s:b, s:s}", "dimension", d, "alpha_ns",
                                        k.alpha_ns, "beta_ns_per_byte", k.beta_ns_per_byte,
                                        "calibrated", t->dim_cost[d].alpha_ns >= 0, "source",
                                        glucx_topo_dim_cost_source(t, d)));
    }
    json_object_set_new(costs, "dimensions", dims);
    json_object_set_new(root, "costs", costs);
    for (int k = 0; k < v->nsizes; k++)
        json_array_append_new(sizes, json_integer((json_int_t)v->sizes[k]));
    json_object_set_new(root, "sizes", sizes);
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        const glucx_coll_table_t *tab = glucx_coll_tables[c];
        char map[2048];
        glucx_select_format(sel, (glucx_coll_t)c, map, sizeof(map));
        json_t *ranges = json_array(), *algs = json_array(), *chosen = json_array();
        for (int i = 0; i < sel->nranges[c]; i++) {
            const glucx_select_range_t *r = &sel->ranges[c][i];
            json_array_append_new(
                ranges, json_pack("{s:o, s:o, s:o, s:b}", "lo", bound_json(r->lo), "hi",
                                  bound_json(r->hi), "algorithm",
                                  r->alg >= 0 ? json_string(tab->algs[r->alg].name) : json_null(),
                                  "tuned", r->forced));
        }
        for (int a = 0; a < tab->count; a++) {
            json_t *cost = json_array();
            for (int k = 0; k < v->nsizes; k++)
                json_array_append_new(cost, cost_json(tab->algs[a].cost(t, v->sizes[k])));
            json_array_append_new(algs, json_pack("{s:s, s:s, s:o}", "name", tab->algs[a].name,
                                                  "desc", tab->algs[a].desc, "cost_ns", cost));
        }
        for (int k = 0; k < v->nsizes; k++) {
            const glucx_select_range_t *r = glucx_select_lookup(sel, (glucx_coll_t)c, v->sizes[k]);
            json_array_append_new(
                chosen, json_pack("{s:I, s:o, s:b}", "size", (json_int_t)v->sizes[k], "algorithm",
                                  r->alg >= 0 ? json_string(tab->algs[r->alg].name) : json_null(),
                                  "tuned", r->forced));
        }
        json_array_append_new(
            colls, json_pack("{s:s, s:s, s:o, s:o, s:o}", "name", glucx_coll_name((glucx_coll_t)c),
                             "map", map, "ranges", ranges, "algorithms", algs, "chosen", chosen));
    }
    json_object_set_new(root, "collectives", colls);
    return root;
}

/**
 * --algorithms on a topology: build it (view_topology), parse GLUCX_TUNE, build the selection
 * map as a communicator does (glucx_select_build) and print it with every algorithm's predicted
 * cost at the view's sizes, as text or JSON. @return 0, 1 (output failed) or 2 (bad input).
 */
static int show_algorithm_view(const algo_view_t *v)
{
    glucx_tune_t tune;
    if (glucx_tune_parse(v->tune, &tune) != GLUCX_OK) {
        fprintf(stderr, "glucx-info: GLUCX_TUNE '%s': %s\n", v->tune, glucx_last_error());
        return 2;
    }
    glucx_topo_t *t = NULL;
    glucx_net_t *net = NULL;
    int rc = view_topology(v, &t, &net);
    if (rc != 0)
        return rc;
    glucx_select_t *sel = malloc(sizeof(*sel));
    if (sel == NULL) {
        fprintf(stderr, "glucx-info: out of memory for the selection map\n");
        rc = 1;
    } else if (glucx_select_build(t, &tune, sel) != GLUCX_OK) {
        fprintf(stderr, "glucx-info: building the selection map: %s\n", glucx_last_error());
        rc = 1;
    } else if (v->as_json) {
        json_t *j = view_json(v, t, sel);
        if (j == NULL || json_dumpf(j, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0) {
            fprintf(stderr, "glucx-info: cannot write the JSON of the algorithm view\n");
            rc = 1;
        }
        printf("\n");
        json_decref(j);
    } else {
        print_view_text(v, t, sel);
    }
    free(sel);
    glucx_topo_destroy(t);
    glucx_net_destroy(net);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "glucx-info: cannot write the output: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    int algorithms = 0, probe = 0, ranks = 0, as_json = 0;
    const char *topology = NULL, *ranks_arg = NULL, *packages_arg = NULL, *sizes_arg = NULL,
               *calibration = NULL;
    enum { OPT_PACKAGES = 256, OPT_SIZES, OPT_CALIBRATION };
    static const struct option opts[] = {{"algorithms", no_argument, NULL, 'a'},
                                         {"probe", no_argument, NULL, 'p'},
                                         {"ranks", required_argument, NULL, 'n'},
                                         {"packages", required_argument, NULL, OPT_PACKAGES},
                                         {"sizes", required_argument, NULL, OPT_SIZES},
                                         {"calibration", required_argument, NULL, OPT_CALIBRATION},
                                         {"topology", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "apn:t:jh", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            topology = optarg;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'a':
            algorithms = 1;
            break;
        case 'p':
            probe = 1;
            break;
        case 'n':
            ranks_arg = optarg;
            break;
        case OPT_PACKAGES:
            packages_arg = optarg;
            break;
        case OPT_SIZES:
            sizes_arg = optarg;
            break;
        case OPT_CALIBRATION:
            calibration = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (algorithms && probe) {
        fprintf(stderr, "glucx-info: --algorithms and --probe are separate views; choose one\n");
        return 2;
    }
    if (!algorithms && (packages_arg || sizes_arg || calibration)) {
        fprintf(stderr, "glucx-info: %s goes with --algorithms\n",
                packages_arg ? "--packages"
                : sizes_arg  ? "--sizes"
                             : "--calibration");
        return 2;
    }
    if (algorithms) {
        if (ranks_arg == NULL && topology == NULL) {
            if (packages_arg || sizes_arg || calibration || as_json) {
                fprintf(stderr,
                        "glucx-info: --algorithms with %s needs a topology: --ranks N "
                        "[--packages P] or --topology FILE\n",
                        packages_arg  ? "--packages"
                        : sizes_arg   ? "--sizes"
                        : calibration ? "--calibration"
                                      : "--json");
                return 2;
            }
            print_algorithms();
            return 0;
        }
        algo_view_t v = {.as_json = as_json,
                         .topology = topology,
                         .sizes = {1u << 10, 64u << 10, 1u << 20, 16u << 20},
                         .nsizes = 4};
        if (topology != NULL && (ranks_arg || packages_arg)) {
            fprintf(stderr,
                    "glucx-info: --topology '%s' gives the ranks and packages; %s '%s' goes with "
                    "--ranks N instead of a file\n",
                    topology, ranks_arg ? "--ranks" : "--packages",
                    ranks_arg ? ranks_arg : packages_arg);
            return 2;
        }
        if (ranks_arg && parse_int_opt("--ranks", ranks_arg, 1, GLUCX_COMM_SIZE_MAX, &v.ranks))
            return 2;
        if (packages_arg &&
            parse_int_opt("--packages", packages_arg, 1, GLUCX_COMM_SIZE_MAX, &v.packages))
            return 2;
        if (sizes_arg && parse_sizes(sizes_arg, v.sizes, INFO_MAX_SIZES, &v.nsizes))
            return 2;
        glucx_config_t config;
        if (glucx_config_read(&config) != GLUCX_OK) {
            fprintf(stderr, "glucx-info: %s\n", glucx_last_error());
            return 2;
        }
        v.tune = config.tune;
        v.calibration = calibration;
        v.calibration_from = "--calibration";
        if (calibration == NULL && config.calibration[0] != '\0') {
            v.calibration = config.calibration;
            v.calibration_from = "GLUCX_CALIBRATION";
        }
        if (v.calibration != NULL && v.calibration[0] == '\0') {
            fprintf(stderr, "glucx-info: --calibration '': expected a file\n");
            return 2;
        }
        return show_algorithm_view(&v);
    }
    if (ranks_arg &&
        parse_int_opt("--ranks", ranks_arg, 1, GLUCX_TOOL_MAX_LOCAL_RANKS, &ranks) != 0)
        return 2;
    if (as_json && topology == NULL) {
        fprintf(stderr, "glucx-info: --json goes with --topology FILE (or --algorithms)\n");
        return 2;
    }
    if (topology != NULL)
        return show_topology(topology, as_json);
    if (probe && ranks == 0) {
        int rank, size;
        int rc = glucx_tool_launcher_rank_size("glucx-info", &rank, &size);
        if (rc == 0)
            return probe_launched(rank, size);
        if (rc == 2)
            return 2;
        ranks = 2;
    }
    if (probe)
        return glucx_tool_run_local(ranks, probe_rank, NULL, 120.0, "glucx-info") == 0 ? 0 : 1;
    print_build();
    print_variables();
    return 0;
}
