/*
 * glucx-info: what this glucx is and how it is configured.
 *
 *   glucx-info                 version, build options, every GLUCX_* variable (default, current)
 *   glucx-info --algorithms    every collective's algorithms
 *   glucx-info --probe [-n N]  start N local ranks (default 2) and show, per peer, the UCX
 *                              transport in use, and the algorithm map of the communicator
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glucx/glucx.h>

#include "coll/coll.h"
#include "common/local_ranks.h"
#include "core/core.h"
#include "transport/ucx_info.h"
#include "util/config.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: glucx-info [--algorithms] [--probe [--ranks N]] [--help]\n"
                 "  (no option)     version, build options and GLUCX_* variables\n"
                 "  --algorithms    the algorithm table of every collective\n"
                 "  --probe         start N local ranks (default 2) and show the UCX transport\n"
                 "                  per peer and the algorithm map\n");
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

static int probe_rank(int rank, int size, const char *dir, int progress_fd, void *arg)
{
    (void)arg;
    (void)progress_fd;
    glucx_store_t *store = NULL;
    glucx_context_t *ctx = NULL;
    glucx_comm_t *comm = NULL;
    int rc = 1;
    if (glucx_store_file_create(dir, &store) != GLUCX_OK ||
        glucx_context_create(NULL, &ctx) != GLUCX_OK)
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
                char desc[256];
                glucx_comm_peer_transport(comm, peer, desc, sizeof(desc));
                printf("rank %d -> rank %d: %s\n", rank, peer, desc);
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
    glucx_store_destroy(store);
    return rc;
}

int main(int argc, char **argv)
{
    int algorithms = 0, probe = 0, ranks = 2;
    static const struct option opts[] = {{"algorithms", no_argument, NULL, 'a'},
                                         {"probe", no_argument, NULL, 'p'},
                                         {"ranks", required_argument, NULL, 'n'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "apn:h", opts, NULL)) != -1) {
        switch (c) {
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
    if (probe)
        return glucx_tool_run_local(ranks, probe_rank, NULL, 120.0, "glucx-info") == 0 ? 0 : 1;
    print_build();
    print_variables();
    return 0;
}
