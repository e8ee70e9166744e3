/* Minimal topology: packages from host identity, link classes with nominal alpha-beta costs. */
#include "topo/topo.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* Defaults, measured on the development machines (2 cores, UCX 1.13 shared memory; TCP numbers
 * are typical of 10 GbE). A calibration file from `glucx-bench --calibrate` replaces them. */
static const glucx_link_cost_t default_cost[GLUCX_LINK_CLASS_COUNT] = {
    [GLUCX_LINK_SELF] = {.alpha_ns = 50.0, .beta_ns_per_byte = 0.1},
    [GLUCX_LINK_INTRA] = {.alpha_ns = 1500.0, .beta_ns_per_byte = 0.2},
    [GLUCX_LINK_INTER] = {.alpha_ns = 20000.0, .beta_ns_per_byte = 0.8},
};
static const double default_gamma_ns_per_byte = 0.1;
static const double default_copy_ns_per_byte = 0.1;

static glucx_topo_t *topo_alloc(int size)
{
    glucx_topo_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->package_of = calloc((size_t)size, sizeof(int));
    if (t->package_of == NULL) {
        free(t);
        return NULL;
    }
    t->size = size;
    memcpy(t->cost, default_cost, sizeof(default_cost));
    t->gamma_ns_per_byte = default_gamma_ns_per_byte;
    t->copy_ns_per_byte = default_copy_ns_per_byte;
    for (int d = 0; d < GLUCX_NET_MAX_DIMS; d++) {
        t->dim_cost[d] = (glucx_link_cost_t){-1.0, -1.0};
        t->dim_nominal[d] = (glucx_link_cost_t){-1.0, -1.0};
    }
    return t;
}

/* package_size: the common size of the packages, or 0 */
static glucx_status_t topo_finish(glucx_topo_t *t)
{
    int *count = calloc((size_t)t->npackages, sizeof(int));
    if (count == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "topology: cannot allocate for %d packages",
                           t->npackages);
    for (int r = 0; r < t->size; r++)
        count[t->package_of[r]]++;
    t->package_size = count[0];
    for (int k = 1; k < t->npackages; k++)
        if (count[k] != count[0])
            t->package_size = 0;
    free(count);
    return GLUCX_OK;
}

glucx_status_t glucx_topo_create(int size, const char *const *hostids, const glucx_topo_t *costs,
                                 glucx_topo_t **topo_p)
{
    if (size < 1 || hostids == NULL || topo_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "topology: invalid arguments (size %d)", size);
    glucx_topo_t *t = topo_alloc(size);
    if (t == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "topology: cannot allocate for %d ranks", size);
    /* packages numbered in order of first appearance; O(size^2) is fine at creation */
    for (int r = 0; r < size; r++) {
        t->package_of[r] = -1;
        for (int q = 0; q < r; q++) {
            if (strcmp(hostids[q], hostids[r]) == 0) {
                t->package_of[r] = t->package_of[q];
                break;
            }
        }
        if (t->package_of[r] < 0)
            t->package_of[r] = t->npackages++;
    }
    if (costs != NULL) {
        memcpy(t->cost, costs->cost, sizeof(t->cost));
        t->gamma_ns_per_byte = costs->gamma_ns_per_byte;
        t->copy_ns_per_byte = costs->copy_ns_per_byte;
        memcpy(t->dim_cost, costs->dim_cost, sizeof(t->dim_cost));
        memcpy(t->dim_nominal, costs->dim_nominal, sizeof(t->dim_nominal));
    }
    glucx_status_t st = topo_finish(t);
    if (st != GLUCX_OK) {
        glucx_topo_destroy(t);
        return st;
    }
    *topo_p = t;
    return GLUCX_OK;
}

glucx_status_t glucx_topo_create_uniform(int size, int npackages, glucx_topo_t **topo_p)
{
    if (size < 1 || npackages < 1 || npackages > size || topo_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "topology: %d ranks in %d packages", size,
                           npackages);
    glucx_topo_t *t = topo_alloc(size);
    if (t == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "topology: cannot allocate for %d ranks", size);
    t->npackages = npackages;
    for (int r = 0; r < size; r++)
        t->package_of[r] = (int)((long)r * npackages / size);
    glucx_status_t st = topo_finish(t);
    if (st != GLUCX_OK) {
        glucx_topo_destroy(t);
        return st;
    }
    *topo_p = t;
    return GLUCX_OK;
}

void glucx_topo_destroy(glucx_topo_t *topo)
{
    if (topo == NULL)
        return;
    free(topo->package_of);
    free(topo->net_rank);
    free(topo);
}

glucx_status_t glucx_topo_place(glucx_topo_t *t, const glucx_net_t *net, const int *net_ranks,
                                const char *const *hostids, int keep_costs)
{
    if (t == NULL || net == NULL || net_ranks == NULL || hostids == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "topology: NULL argument");
    if (t->size > net->nranks)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "topology %s describes %d ranks; the communicator has %d", net->path,
                           net->nranks, t->size);
    int *map = calloc((size_t)t->size, sizeof(int));
    int *first = malloc(sizeof(int) * (size_t)net->npackages);
    if (map == NULL || first == NULL) {
        free(map);
        free(first);
        return glucx_error(GLUCX_ERR_NO_MEMORY, "topology: out of memory for %d ranks", t->size);
    }
    glucx_status_t st = GLUCX_OK;
    for (int p = 0; p < net->npackages; p++)
        first[p] = -1;
    for (int r = 0; r < t->size && st == GLUCX_OK; r++) {
        int n = net_ranks[r];
        if (n < 0 || n >= net->nranks) {
            st = glucx_error(GLUCX_ERR_INVALID_ARG,
                             "topology %s: rank %d has rank %d in the file, which has %d ranks",
                             net->path, r, n, net->nranks);
            break;
        }
        map[r] = n;
        int pkg = n / net->ranks_per_package;
        for (int q = 0; q < r && st == GLUCX_OK; q++) {
            int same_pkg = map[q] / net->ranks_per_package == pkg;
            int same_host = strcmp(hostids[q], hostids[r]) == 0;
            if (map[q] == n)
                st = glucx_error(GLUCX_ERR_INVALID_ARG,
                                 "topology %s: ranks %d and %d both claim rank %d of the file",
                                 net->path, q, r, n);
            else if (same_pkg && !same_host)
                st = glucx_error(GLUCX_ERR_INVALID_ARG,
                                 "topology %s: ranks %d and %d are in package %d of the file but "
                                 "on different hosts ('%s', '%s')",
                                 net->path, q, r, pkg, hostids[q], hostids[r]);
            else if (!same_pkg && same_host)
                st = glucx_error(GLUCX_ERR_INVALID_ARG,
                                 "topology %s: ranks %d and %d share host '%s' but are in "
                                 "packages %d and %d of the file (one host is one package)",
                                 net->path, q, r, hostids[r], map[q] / net->ranks_per_package, pkg);
        }
    }
    if (st != GLUCX_OK) {
        free(map);
        free(first);
        return st;
    }
    /* packages numbered in order of first appearance, as glucx_topo_create does */
    t->npackages = 0;
    for (int r = 0; r < t->size; r++) {
        int pkg = map[r] / net->ranks_per_package;
        if (first[pkg] < 0)
            first[pkg] = t->npackages++;
        t->package_of[r] = first[pkg];
    }
    free(first);
    free(t->net_rank);
    t->net_rank = map;
    t->net = net;
    if (keep_costs) {
        /* the calibration's measured dimensions, where it has them, define the classes (carried
         * to this file's rates by glucx_topo_dim_cost) */
        if (t->dim_cost[0].alpha_ns >= 0)
            t->cost[GLUCX_LINK_INTRA] = glucx_topo_dim_cost(t, 0);
        glucx_link_cost_t worst = {-1, -1};
        for (int d = 1; d < net->ndims; d++) {
            if (net->dim[d].size < 2 || t->dim_cost[d].alpha_ns < 0)
                continue;
            glucx_link_cost_t k = glucx_topo_dim_cost(t, d);
            if (k.alpha_ns > worst.alpha_ns)
                worst.alpha_ns = k.alpha_ns;
            if (k.beta_ns_per_byte > worst.beta_ns_per_byte)
                worst.beta_ns_per_byte = k.beta_ns_per_byte;
        }
        if (worst.alpha_ns >= 0)
            t->cost[GLUCX_LINK_INTER] = worst;
    } else {
        /* 1 GB/s is 1 byte per ns */
        t->cost[GLUCX_LINK_INTRA].alpha_ns = net->dim[0].latency_ns;
        t->cost[GLUCX_LINK_INTRA].beta_ns_per_byte = 1.0 / net->dim[0].bandwidth_GBps;
        if (net->ndims > 1) {
            glucx_link_cost_t worst = {0, 0};
            for (int d = 1; d < net->ndims; d++) {
                if (net->dim[d].size < 2)
                    continue;
                if (net->dim[d].latency_ns > worst.alpha_ns)
                    worst.alpha_ns = net->dim[d].latency_ns;
                if (1.0 / net->dim[d].bandwidth_GBps > worst.beta_ns_per_byte)
                    worst.beta_ns_per_byte = 1.0 / net->dim[d].bandwidth_GBps;
            }
            if (worst.beta_ns_per_byte > 0)
                t->cost[GLUCX_LINK_INTER] = worst;
        }
    }
    st = topo_finish(t);
    if (st == GLUCX_OK)
        glucx_topo_patterns_compute(t);
    return st;
}

glucx_status_t glucx_topo_from_net(const glucx_net_t *net, const char *calibration,
                                   glucx_topo_t **topo_p)
{
    *topo_p = NULL;
    const int n = net->nranks;
    enum { NAME = 24 };
    char *names = malloc((size_t)n * NAME);
    const char **hostids = malloc(sizeof(*hostids) * (size_t)n);
    int *ids = malloc(sizeof(int) * (size_t)n);
    glucx_topo_t *t = NULL;
    glucx_status_t st = GLUCX_ERR_NO_MEMORY;
    if (names != NULL && hostids != NULL && ids != NULL) {
        /* one host per package of the file, rank r being the file's rank r */
        for (int r = 0; r < n; r++) {
            snprintf(names + (size_t)r * NAME, NAME, "package%d", r / net->ranks_per_package);
            hostids[r] = names + (size_t)r * NAME;
            ids[r] = r;
        }
        st = glucx_topo_create(n, hostids, NULL, &t);
        if (st == GLUCX_OK && calibration != NULL)
            st = glucx_topo_calibration_load(t, calibration);
        if (st == GLUCX_OK)
            st = glucx_topo_place(t, net, ids, hostids, calibration != NULL);
    }
    if (st == GLUCX_ERR_NO_MEMORY)
        glucx_error(st, "topology %s: out of memory for %d ranks", net->path, n);
    free(names);
    free(hostids);
    free(ids);
    if (st != GLUCX_OK) {
        glucx_topo_destroy(t);
        return st;
    }
    *topo_p = t;
    return GLUCX_OK;
}

glucx_link_cost_t glucx_topo_dim_cost(const glucx_topo_t *t, int dim)
{
    glucx_link_cost_t none = {-1.0, -1.0};
    if (t->net == NULL || dim < 0 || dim >= t->net->ndims)
        return none;
    /* a dimension whose lines run in parallel ends with its slowest link (a link of its own
     * rate, glucx_net_set_link_rate; else every link is at the dimension's rate) */
    const glucx_link_cost_t nominal = {t->net->dim[dim].latency_ns,
                                       1.0 / glucx_net_dim_min_rate(t->net, dim)};
    const glucx_link_cost_t cal = t->dim_cost[dim], at = t->dim_nominal[dim];
    if (cal.alpha_ns < 0)
        return nominal;
    if (at.alpha_ns < 0 || !(at.beta_ns_per_byte > 0))
        return cal; /* measured against unknown nominal rates: as measured */
    /* The calibration's overhead beyond the wire latency it was measured on, on this file's
     * latency; its rate as a fraction of the nominal rate it was measured on, of this file's. */
    double alpha = nominal.alpha_ns + (cal.alpha_ns - at.alpha_ns);
    return (glucx_link_cost_t){alpha > 0 ? alpha : 0.0,
                               cal.beta_ns_per_byte *
                                   (nominal.beta_ns_per_byte / at.beta_ns_per_byte)};
}

const char *glucx_topo_dim_cost_source(const glucx_topo_t *t, int dim)
{
    if (t->net == NULL || dim < 0 || dim >= t->net->ndims || t->dim_cost[dim].alpha_ns < 0)
        return "nominal";
    const glucx_link_cost_t at = t->dim_nominal[dim];
    if (at.alpha_ns < 0)
        return "calibrated";
    if (at.alpha_ns == t->net->dim[dim].latency_ns &&
        at.beta_ns_per_byte == 1.0 / t->net->dim[dim].bandwidth_GBps)
        return "calibrated at these rates";
    return "calibrated at other rates, carried";
}

int glucx_topo_route(const glucx_topo_t *t, int src, int dst, int *links, int max)
{
    if (t->net == NULL || t->net_rank == NULL || src == dst)
        return 0;
    int n = glucx_net_route(t->net, t->net_rank[src], t->net_rank[dst], links, max);
    return n < 0 ? 0 : n;
}

glucx_link_cost_t glucx_topo_bottleneck(const glucx_topo_t *t)
{
    if (t->npackages > 1)
        return t->cost[GLUCX_LINK_INTER];
    if (t->size > 1)
        return t->cost[GLUCX_LINK_INTRA];
    return t->cost[GLUCX_LINK_SELF];
}

static const char *const class_key[GLUCX_LINK_CLASS_COUNT] = {"self", "intra", "inter"};

glucx_status_t glucx_topo_calibration_save(const glucx_topo_t *t, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "calibration: cannot write %s: %s", path,
                           strerror(errno));
    fprintf(f, "# glucx link-class calibration (glucx-bench --calibrate)\n");
    for (int c = 0; c < GLUCX_LINK_CLASS_COUNT; c++) {
        fprintf(f, "%s.alpha_ns %.6g\n", class_key[c], t->cost[c].alpha_ns);
        fprintf(f, "%s.beta_ns_per_byte %.6g\n", class_key[c], t->cost[c].beta_ns_per_byte);
    }
    for (int d = 0; d < GLUCX_NET_MAX_DIMS; d++) {
        if (t->dim_cost[d].alpha_ns < 0)
            continue;
        fprintf(f, "dim%d.alpha_ns %.6g\n", d, t->dim_cost[d].alpha_ns);
        fprintf(f, "dim%d.beta_ns_per_byte %.6g\n", d, t->dim_cost[d].beta_ns_per_byte);
        if (t->dim_nominal[d].alpha_ns < 0)
            continue;
        /* exact, so that a calibration read back on the same file is "at these rates" */
        fprintf(f, "dim%d.nominal_alpha_ns %.17g\n", d, t->dim_nominal[d].alpha_ns);
        fprintf(f, "dim%d.nominal_beta_ns_per_byte %.17g\n", d, t->dim_nominal[d].beta_ns_per_byte);
    }
    fprintf(f, "gamma_ns_per_byte %.6g\n", t->gamma_ns_per_byte);
    fprintf(f, "copy_ns_per_byte %.6g\n", t->copy_ns_per_byte);
    if (fclose(f) != 0)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "calibration: cannot write %s: %s", path,
                           strerror(errno));
    return GLUCX_OK;
}

static double *calibration_field(glucx_topo_t *t, const char *key)
{
    if (strcmp(key, "gamma_ns_per_byte") == 0)
        return &t->gamma_ns_per_byte;
    if (strcmp(key, "copy_ns_per_byte") == 0)
        return &t->copy_ns_per_byte;
    int d, used = 0;
    if (sscanf(key, "dim%d.%n", &d, &used) == 1 && used > 0 && d >= 0 && d < GLUCX_NET_MAX_DIMS &&
        key[3] >= '0' && key[3] <= '9') {
        if (strcmp(key + used, "alpha_ns") == 0)
            return &t->dim_cost[d].alpha_ns;
        if (strcmp(key + used, "beta_ns_per_byte") == 0)
            return &t->dim_cost[d].beta_ns_per_byte;
        if (strcmp(key + used, "nominal_alpha_ns") == 0)
            return &t->dim_nominal[d].alpha_ns;
        if (strcmp(key + used, "nominal_beta_ns_per_byte") == 0)
            return &t->dim_nominal[d].beta_ns_per_byte;
    }
    for (int c = 0; c < GLUCX_LINK_CLASS_COUNT; c++) {
        size_t n = strlen(class_key[c]);
        if (strncmp(key, class_key[c], n) != 0 || key[n] != '.')
            continue;
        if (strcmp(key + n + 1, "alpha_ns") == 0)
            return &t->cost[c].alpha_ns;
        if (strcmp(key + n + 1, "beta_ns_per_byte") == 0)
            return &t->cost[c].beta_ns_per_byte;
    }
    return NULL;
}

glucx_status_t glucx_topo_calibration_load(glucx_topo_t *t, const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "calibration: cannot read %s: %s", path,
                           strerror(errno));
    char line[256];
    int lineno = 0;
    glucx_status_t st = GLUCX_OK;
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        char key[128];
        double value;
        char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        double *field = NULL;
        if (sscanf(p, "%127s %lf", key, &value) != 2 || !isfinite(value) || value < 0 ||
            (field = calibration_field(t, key)) == NULL) {
            st = glucx_error(GLUCX_ERR_INVALID_ARG,
                             "calibration: %s line %d: expected '<key> <non-negative number>' "
                             "with a known key, got: %.*s",
                             path, lineno, (int)strcspn(p, "\n"), p);
            break;
        }
        *field = value;
    }
    fclose(f);
    for (int d = 0; d < GLUCX_NET_MAX_DIMS && st == GLUCX_OK; d++) {
        const glucx_link_cost_t *k = &t->dim_cost[d], *at = &t->dim_nominal[d];
        if ((k->alpha_ns < 0) != (k->beta_ns_per_byte < 0))
            st = glucx_error(GLUCX_ERR_INVALID_ARG,
                             "calibration: %s: dimension %d has only one of dim%d.alpha_ns and "
                             "dim%d.beta_ns_per_byte",
                             path, d, d, d);
        else if ((at->alpha_ns < 0) != (at->beta_ns_per_byte < 0) ||
                 (at->alpha_ns >= 0 && (k->alpha_ns < 0 || !(at->beta_ns_per_byte > 0))))
            st = glucx_error(GLUCX_ERR_INVALID_ARG,
                             "calibration: %s: dimension %d needs dim%d.nominal_alpha_ns and "
                             "dim%d.nominal_beta_ns_per_byte (> 0) together, and only with its "
                             "measured dim%d.alpha_ns and dim%d.beta_ns_per_byte",
                             path, d, d, d, d, d);
    }
    return st;
}

/* FNV-1a, continued from h */
static uint64_t mix(uint64_t h, const void *ptr, size_t len)
{
    const unsigned char *p = ptr;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

uint64_t glucx_topo_costs_digest(const glucx_topo_t *t)
{
    uint64_t h = mix(UINT64_C(0xcbf29ce484222325), t->cost, sizeof(t->cost));
    h = mix(h, t->dim_cost, sizeof(t->dim_cost));
    h = mix(h, t->dim_nominal, sizeof(t->dim_nominal));
    h = mix(h, &t->gamma_ns_per_byte, sizeof(t->gamma_ns_per_byte));
    return mix(h, &t->copy_ns_per_byte, sizeof(t->copy_ns_per_byte));
}

uint64_t glucx_topo_digest(const glucx_topo_t *t)
{
    uint64_t h = mix(glucx_topo_costs_digest(t), &t->size, sizeof(t->size));
    h = mix(h, t->package_of, sizeof(int) * (size_t)t->size);
    if (t->net != NULL) {
        uint64_t n = glucx_net_digest(t->net);
        h = mix(h, &n, sizeof(n));
        h = mix(h, t->net_rank, sizeof(int) * (size_t)t->size);
    }
    return h;
}
