/*
 * The physical links a communicator's trace announces (trace/EVENTS.md, `phys_link` and
 * `route`): the network of a topology file, or, without one, the model glucx assumes
 * (docs/topology.md, "How glucx uses it"): dimension 0, one link per pair of ranks of a package;
 * dimension 1, one link per package to the one switch between hosts.
 */
#include <limits.h>
#include <stdlib.h>

#include "topo/topo.h"
#include "util/error.h"

/* index of the pair i < j among the pairs of n members, in (0,1), (0,2), .., (1,2), .. order */
static int pair_index(int n, int i, int j)
{
    return i * n - i * (i + 1) / 2 + (j - i - 1);
}

/* the derived model's links and its per-rank tables */
static glucx_status_t derive(glucx_phys_t *p)
{
    const glucx_topo_t *t = p->topo;
    int np = t->npackages;
    p->member = calloc((size_t)t->size, sizeof(int));
    p->pkg_base = calloc((size_t)np + 1, sizeof(int));
    int *count = calloc((size_t)np, sizeof(int));
    if (p->member == NULL || p->pkg_base == NULL || count == NULL) {
        free(count);
        return glucx_error(GLUCX_ERR_NO_MEMORY,
                           "physical links: out of memory for %d ranks in %d packages", t->size,
                           np);
    }
    for (int r = 0; r < t->size; r++)
        p->member[r] = count[t->package_of[r]]++;
    long long n = 0;
    for (int k = 0; k < np; k++) {
        p->pkg_base[k] = (int)n;
        n += (long long)count[k] * (count[k] - 1) / 2;
    }
    p->uplink_base = np > 1 ? (int)n : -1;
    if (np > 1)
        n += np;
    if (n > INT_MAX / 2) {
        free(count);
        return glucx_error(GLUCX_ERR_INVALID_ARG, "physical links: %lld links for %d ranks", n,
                           t->size);
    }
    p->nlinks = (int)n;
    p->own_links = calloc((size_t)n + 1, sizeof(glucx_net_link_t));
    p->bandwidth_Bps = calloc((size_t)n + 1, sizeof(double));
    p->latency_ns = calloc((size_t)n + 1, sizeof(double));
    /* ranks of each package in rank order: the members of package k are first[k], ... */
    int **members = calloc((size_t)np, sizeof(int *));
    int ok = p->own_links != NULL && p->bandwidth_Bps != NULL && p->latency_ns != NULL &&
             members != NULL;
    for (int k = 0; ok && k < np; k++)
        ok = (members[k] = malloc(sizeof(int) * ((size_t)count[k] + 1))) != NULL;
    if (ok) {
        for (int r = 0; r < t->size; r++)
            members[t->package_of[r]][p->member[r]] = r;
        const glucx_link_cost_t *in = &t->cost[GLUCX_LINK_INTRA];
        const glucx_link_cost_t *out = &t->cost[GLUCX_LINK_INTER];
        for (int k = 0; k < np; k++)
            for (int i = 0; i < count[k]; i++)
                for (int j = i + 1; j < count[k]; j++) {
                    int id = p->pkg_base[k] + pair_index(count[k], i, j);
                    glucx_net_link_t *l = &p->own_links[id];
                    *l = (glucx_net_link_t){.id = id,
                                            .dim = 0,
                                            .a_kind = GLUCX_NODE_RANK,
                                            .b_kind = GLUCX_NODE_RANK,
                                            .a = members[k][i],
                                            .b = members[k][j]};
                    p->bandwidth_Bps[id] =
                        in->beta_ns_per_byte > 0 ? 1e9 / in->beta_ns_per_byte : 0.0;
                    p->latency_ns[id] = in->alpha_ns;
                }
        for (int k = 0; k < np && np > 1; k++) {
            int id = p->uplink_base + k;
            p->own_links[id] = (glucx_net_link_t){.id = id,
                                                  .dim = 1,
                                                  .a_kind = GLUCX_NODE_PACKAGE,
                                                  .b_kind = GLUCX_NODE_SWITCH,
                                                  .a = k,
                                                  .b = 0};
            p->bandwidth_Bps[id] = out->beta_ns_per_byte > 0 ? 1e9 / out->beta_ns_per_byte : 0.0;
            /* a route between hosts crosses two uplinks: each takes half the class's alpha */
            p->latency_ns[id] = out->alpha_ns / 2;
        }
    }
    for (int k = 0; members != NULL && k < np; k++)
        free(members[k]);
    free(members);
    p->count = count;
    if (!ok)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "physical links: out of memory for %d links",
                           p->nlinks);
    p->links = p->own_links;
    return GLUCX_OK;
}

/* the file's links, their nominal values, and the comm rank of each file rank */
static glucx_status_t from_file(glucx_phys_t *p)
{
    const glucx_net_t *net = p->topo->net;
    p->nlinks = net->nlinks;
    p->links = net->links;
    p->bandwidth_Bps = calloc((size_t)net->nlinks + 1, sizeof(double));
    p->latency_ns = calloc((size_t)net->nlinks + 1, sizeof(double));
    if (p->bandwidth_Bps == NULL || p->latency_ns == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "physical links: out of memory for %d links",
                           net->nlinks);
    for (int i = 0; i < net->nlinks; i++) {
        const glucx_net_dim_t *d = &net->dim[net->links[i].dim];
        p->bandwidth_Bps[i] = d->bandwidth_GBps * 1e9;
        p->latency_ns[i] = d->latency_ns;
    }
    return GLUCX_OK;
}

/* rank_of (the comm rank at each rank endpoint, -1: none) and pkg_first (the lowest comm rank
 * of each package endpoint, -1: none), in the numbering of the links' endpoints */
static glucx_status_t announcers(glucx_phys_t *p)
{
    const glucx_topo_t *t = p->topo;
    int file = p->own_links == NULL;
    p->nnodes_rank = file ? t->net->nranks : t->size;
    p->nnodes_pkg = file ? t->net->npackages : t->npackages;
    p->rank_of = malloc(sizeof(int) * ((size_t)p->nnodes_rank + 1));
    p->pkg_first = malloc(sizeof(int) * ((size_t)p->nnodes_pkg + 1));
    if (p->rank_of == NULL || p->pkg_first == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY,
                           "physical links: out of memory for %d ranks and %d packages",
                           p->nnodes_rank, p->nnodes_pkg);
    for (int i = 0; i < p->nnodes_rank; i++)
        p->rank_of[i] = -1;
    for (int i = 0; i < p->nnodes_pkg; i++)
        p->pkg_first[i] = -1;
    for (int r = 0; r < t->size; r++) {
        int me = file ? t->net_rank[r] : r;
        int pkg = file ? me / t->net->ranks_per_package : t->package_of[r];
        p->rank_of[me] = r;
        if (p->pkg_first[pkg] < 0)
            p->pkg_first[pkg] = r;
    }
    return GLUCX_OK;
}

glucx_status_t glucx_phys_create(const glucx_topo_t *t, glucx_phys_t **phys_p)
{
    if (t == NULL || phys_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "physical links: no topology");
    glucx_phys_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "physical links: out of memory");
    p->topo = t;
    p->uplink_base = -1;
    glucx_status_t st = t->net != NULL && t->net_rank != NULL ? from_file(p) : derive(p);
    if (st == GLUCX_OK)
        st = announcers(p);
    if (st != GLUCX_OK) {
        glucx_phys_destroy(p);
        return st;
    }
    *phys_p = p;
    return GLUCX_OK;
}

void glucx_phys_destroy(glucx_phys_t *p)
{
    if (p == NULL)
        return;
    free(p->own_links);
    free(p->bandwidth_Bps);
    free(p->latency_ns);
    free(p->member);
    free(p->pkg_base);
    free(p->count);
    free(p->rank_of);
    free(p->pkg_first);
    free(p);
}

int glucx_phys_route(const glucx_phys_t *p, int src, int dst, int *links, int max)
{
    const glucx_topo_t *t = p->topo;
    if (src < 0 || dst < 0 || src >= t->size || dst >= t->size)
        return -1;
    if (src == dst)
        return 0;
    if (p->own_links == NULL)
        return glucx_topo_route(t, src, dst, links, max);
    int ps = t->package_of[src], pd = t->package_of[dst];
    if (ps == pd) {
        int i = p->member[src], j = p->member[dst];
        if (max > 0)
            links[0] = p->pkg_base[ps] +
                       (i < j ? pair_index(p->count[ps], i, j) : pair_index(p->count[ps], j, i));
        return 1;
    }
    if (max > 0)
        links[0] = p->uplink_base + ps;
    if (max > 1)
        links[1] = p->uplink_base + pd;
    return 2;
}

int glucx_phys_directions(const glucx_phys_t *p, int src, const int *links, int n, uint8_t *dirs)
{
    const glucx_topo_t *t = p->topo;
    if (src < 0 || src >= t->size || n < 0 || (n > 0 && (links == NULL || dirs == NULL)))
        return -1;
    int file = p->own_links == NULL;
    /* where the message is, in the links' numbering: the sender's rank, until it leaves the
     * package through an outer link (whose endpoint is the sender's package) */
    glucx_node_kind_t kind = GLUCX_NODE_RANK;
    int at = file ? t->net_rank[src] : src;
    int pkg = file ? at / t->net->ranks_per_package : t->package_of[src];
    for (int i = 0; i < n; i++) {
        if (links[i] < 0 || links[i] >= p->nlinks)
            return -1;
        const glucx_net_link_t *l = &p->links[links[i]];
        if (kind == GLUCX_NODE_RANK && l->a_kind != GLUCX_NODE_RANK &&
            l->b_kind != GLUCX_NODE_RANK) {
            kind = GLUCX_NODE_PACKAGE; /* leaving the host: from the sender's package */
            at = pkg;
        }
        if (l->a_kind == kind && l->a == at) {
            dirs[i] = 0;
            kind = l->b_kind;
            at = l->b;
        } else if (l->b_kind == kind && l->b == at) {
            dirs[i] = 1;
            kind = l->a_kind;
            at = l->a;
        } else {
            return -1;
        }
    }
    return 0;
}

int glucx_phys_announcer(const glucx_phys_t *p, int id)
{
    if (id < 0 || id >= p->nlinks)
        return -1;
    const glucx_net_link_t *l = &p->links[id];
    const glucx_node_kind_t kinds[2] = {l->a_kind, l->b_kind};
    const int ends[2] = {l->a, l->b};
    int best = INT_MAX;
    for (int k = 0; k < 2; k++) {
        int r = -1;
        if (kinds[k] == GLUCX_NODE_RANK && ends[k] >= 0 && ends[k] < p->nnodes_rank)
            r = p->rank_of[ends[k]];
        else if (kinds[k] == GLUCX_NODE_PACKAGE && ends[k] >= 0 && ends[k] < p->nnodes_pkg)
            r = p->pkg_first[ends[k]];
        if (r >= 0 && r < best)
            best = r;
    }
    return best == INT_MAX ? 0 : best;
}
