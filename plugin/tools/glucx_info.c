/*
 * glucx-info: what this glucx is and how it is configured.
 *
 *   glucx-info                 version, build options, every GLUCX_* variable (default, current)
 *   glucx-info --algorithms    every collective's algorithms
 *   glucx-info --probe [-n N]  start N local ranks (default 2), or run as one rank of a job
 *                              (RANK/WORLD_SIZE and GLUCX_STORE, e.g. under glucx-cluster run),
 *                              and show, per peer, the UCX transport in use and, with
 *                              GLUCX_TOPOLOGY, the physical links on the route; then the
 *                              algorithm map of the communicator
 *   glucx-info --topology FILE [--json]
 *                              the network a topology file describes: dimensions, rank
 *                              coordinates, links, routes between packages (docs/topology.md)
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <glucx/glucx.h>

#include "coll/coll.h"
#include "common/local_ranks.h"
#include "core/core.h"
#include "transport/ucx_info.h"
#include "util/config.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: glucx-info [--algorithms] [--probe [--ranks N]] [--topology FILE [--json]]\n"
            "  (no option)       version, build options and GLUCX_* variables\n"
            "  --algorithms      the algorithm table of every collective\n"
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

int main(int argc, char **argv)
{
    int algorithms = 0, probe = 0, ranks = 0, as_json = 0;
    const char *topology = NULL;
    static const struct option opts[] = {{"algorithms", no_argument, NULL, 'a'},
                                         {"probe", no_argument, NULL, 'p'},
                                         {"ranks", required_argument, NULL, 'n'},
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
            ranks = atoi(optarg);
            if (ranks < 1 || ranks > GLUCX_TOOL_MAX_LOCAL_RANKS) {
                fprintf(stderr, "glucx-info: --ranks takes 1..%d\n", GLUCX_TOOL_MAX_LOCAL_RANKS);
                return 2;
            }
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
    if (algorithms) {
        print_algorithms();
        return 0;
    }
    if (as_json && topology == NULL) {
        fprintf(stderr, "glucx-info: --json goes with --topology FILE\n");
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
