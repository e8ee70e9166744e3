/*
 * The physical network of a topology file: links of every dimension and dimension-order routes
 * (docs/topology.md states each rule). The vocabulary is ASTRA-sim's analytical network
 * configuration (Won et al., "ASTRA-sim2.0", ISPASS 2023): per dimension a kind (Ring,
 * FullyConnected, Switch), a size, a bandwidth and a latency, innermost first. One difference:
 * here the links of an outer dimension join packages (hosts), shared by the package's ranks.
 */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"
#include "util/error.h"

static const char *const kind_names[GLUCX_DIM_KIND_COUNT] = {
    [GLUCX_DIM_RING] = "Ring",
    [GLUCX_DIM_FULLY_CONNECTED] = "FullyConnected",
    [GLUCX_DIM_SWITCH] = "Switch",
};

const char *glucx_dim_kind_name(glucx_dim_kind_t kind)
{
    return (unsigned)kind < GLUCX_DIM_KIND_COUNT ? kind_names[kind] : "?";
}

/* links on one line of a dimension of n members */
static int line_links(glucx_dim_kind_t kind, int n)
{
    if (n <= 1)
        return 0;
    switch (kind) {
    case GLUCX_DIM_RING:
        return n == 2 ? 1 : n;
    case GLUCX_DIM_FULLY_CONNECTED:
        return n * (n - 1) / 2;
    default:
        return n;
    }
}

/* index, within its line, of the FullyConnected link between members i < j */
static int fc_index(int n, int i, int j)
{
    return i * n - i * (i + 1) / 2 + (j - i - 1);
}

/* lines of dimension d: packages for d = 0, else packages / size */
static int dim_lines(const glucx_net_t *net, int d)
{
    return d == 0 ? net->npackages : net->npackages / net->dim[d].size;
}

/* node (rank for d = 0, else package) of member i on line L of dimension d */
static int line_node(const glucx_net_t *net, int d, int line, int i)
{
    if (d == 0)
        return line * net->ranks_per_package + i;
    int stride = net->pkg_stride[d];
    return line % stride + i * stride + (line / stride) * stride * net->dim[d].size;
}

/* line of dimension d >= 1 through package p, and p's coordinate along it */
static int pkg_line(const glucx_net_t *net, int d, int p, int *coord)
{
    int stride = net->pkg_stride[d], n = net->dim[d].size;
    *coord = (p / stride) % n;
    return p % stride + (p / (stride * n)) * stride;
}

static void set_link(glucx_net_t *net, int id, int d, glucx_node_kind_t kind, int x, int y)
{
    glucx_net_link_t *l = &net->links[id];
    l->id = id;
    l->dim = d;
    l->a_kind = l->b_kind = kind;
    l->a = x < y ? x : y;
    l->b = x < y ? y : x;
}

glucx_status_t glucx_net_create(const glucx_net_dim_t *dims, int ndims, const char *path,
                                glucx_net_t **net_p)
{
    if (dims == NULL || net_p == NULL || ndims < 1 || ndims > GLUCX_NET_MAX_DIMS)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "topology %s: %d dimensions (1 to %d are supported)", path ? path : "",
                           ndims, GLUCX_NET_MAX_DIMS);
    long long ranks = 1;
    for (int d = 0; d < ndims; d++) {
        const glucx_net_dim_t *x = &dims[d];
        if ((unsigned)x->kind >= GLUCX_DIM_KIND_COUNT || x->size < 1 ||
            !(x->bandwidth_GBps >= GLUCX_NET_MIN_GBPS && x->bandwidth_GBps <= GLUCX_NET_MAX_GBPS) ||
            !(x->latency_ns >= 0 && x->latency_ns <= GLUCX_NET_MAX_LATENCY_NS))
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "topology %s: dimension %d (%s): size %d, bandwidth %g GB/s, "
                               "latency %g ns: need size >= 1, bandwidth %g to %g GB/s, latency "
                               "0 to %g ns",
                               path ? path : "", d, glucx_dim_kind_name(x->kind), x->size,
                               x->bandwidth_GBps, x->latency_ns, GLUCX_NET_MIN_GBPS,
                               GLUCX_NET_MAX_GBPS, GLUCX_NET_MAX_LATENCY_NS);
        ranks *= x->size;
        if (ranks > GLUCX_NET_MAX_RANKS)
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "topology %s: more than %d ranks (npus_count up to dimension %d)",
                               path ? path : "", GLUCX_NET_MAX_RANKS, d);
    }
    glucx_net_t *net = calloc(1, sizeof(*net));
    if (net == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "topology: out of memory");
    snprintf(net->path, sizeof(net->path), "%s", path ? path : "");
    net->ndims = ndims;
    memcpy(net->dim, dims, sizeof(*dims) * (size_t)ndims);
    net->nranks = (int)ranks;
    net->ranks_per_package = dims[0].size;
    net->npackages = net->nranks / net->ranks_per_package;
    int stride = 1;
    for (int d = 1; d < ndims; d++) {
        net->pkg_stride[d] = stride;
        stride *= dims[d].size;
    }
    long long nlinks = 0, nswitches = 0;
    for (int d = 0; d < ndims; d++) {
        net->link_base[d] = (int)nlinks;
        int per = line_links(dims[d].kind, dims[d].size);
        nlinks += (long long)dim_lines(net, d) * per;
        if (dims[d].kind == GLUCX_DIM_SWITCH && per > 0)
            nswitches += dim_lines(net, d);
    }
    net->nlinks = (int)nlinks;
    net->nswitches = (int)nswitches;
    net->links = calloc((size_t)nlinks + 1, sizeof(*net->links));
    net->switches = calloc((size_t)nswitches + 1, sizeof(*net->switches));
    if (nlinks > 4 * (long long)GLUCX_NET_MAX_RANKS || net->links == NULL ||
        net->switches == NULL) {
        glucx_net_destroy(net);
        return glucx_error(GLUCX_ERR_NO_MEMORY, "topology %s: cannot hold %lld links",
                           path ? path : "", nlinks);
    }
    int sw = 0;
    for (int d = 0; d < ndims; d++) {
        int n = dims[d].size, per = line_links(dims[d].kind, n);
        glucx_node_kind_t kind = d == 0 ? GLUCX_NODE_RANK : GLUCX_NODE_PACKAGE;
        for (int line = 0; line < dim_lines(net, d) && per > 0; line++) {
            int id = net->link_base[d] + line * per;
            switch (dims[d].kind) {
            case GLUCX_DIM_RING:
                for (int k = 0; k < per; k++)
                    set_link(net, id + k, d, kind, line_node(net, d, line, k),
                             line_node(net, d, line, (k + 1) % n));
                break;
            case GLUCX_DIM_FULLY_CONNECTED:
                for (int i = 0; i < n; i++)
                    for (int j = i + 1; j < n; j++)
                        set_link(net, id + fc_index(n, i, j), d, kind, line_node(net, d, line, i),
                                 line_node(net, d, line, j));
                break;
            default:
                net->switches[sw].dim = d;
                net->switches[sw].first_link = id;
                for (int m = 0; m < n; m++) {
                    glucx_net_link_t *l = &net->links[id + m];
                    l->id = id + m;
                    l->dim = d;
                    l->a_kind = kind;
                    l->a = line_node(net, d, line, m);
                    l->b_kind = GLUCX_NODE_SWITCH;
                    l->b = sw;
                }
                sw++;
                break;
            }
        }
    }
    *net_p = net;
    return GLUCX_OK;
}

void glucx_net_destroy(glucx_net_t *net)
{
    if (net == NULL)
        return;
    free(net->links);
    free(net->switches);
    free(net->link_rate_GBps);
    free(net);
}

glucx_status_t glucx_net_set_link_rate(glucx_net_t *net, int id, double gbps)
{
    if (id < 0 || id >= net->nlinks)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "topology %s: no link %d (links 0..%d)",
                           net->path, id, net->nlinks - 1);
    if (!(gbps > 0) || !isfinite(gbps))
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "topology %s: link %d: rate %g GB/s is not a positive number", net->path,
                           id, gbps);
    if (net->link_rate_GBps == NULL) {
        net->link_rate_GBps = calloc((size_t)net->nlinks, sizeof(double));
        if (net->link_rate_GBps == NULL)
            return glucx_error(GLUCX_ERR_NO_MEMORY, "topology %s: no memory for %d link rates",
                               net->path, net->nlinks);
    }
    net->link_rate_GBps[id] = gbps;
    return GLUCX_OK;
}

double glucx_net_link_rate(const glucx_net_t *net, int id)
{
    if (net->link_rate_GBps != NULL && id >= 0 && id < net->nlinks && net->link_rate_GBps[id] > 0)
        return net->link_rate_GBps[id];
    return net->dim[net->links[id].dim].bandwidth_GBps;
}

double glucx_net_dim_min_rate(const glucx_net_t *net, int dim)
{
    double r = net->dim[dim].bandwidth_GBps;
    for (int l = 0; net->link_rate_GBps != NULL && l < net->nlinks; l++)
        if (net->links[l].dim == dim && net->link_rate_GBps[l] > 0 && net->link_rate_GBps[l] < r)
            r = net->link_rate_GBps[l];
    return r;
}

void glucx_net_coords(const glucx_net_t *net, int rank, int *coords)
{
    coords[0] = rank % net->ranks_per_package;
    int p = rank / net->ranks_per_package;
    for (int d = 1; d < net->ndims; d++)
        pkg_line(net, d, p, &coords[d]);
}

/* Append the links from member i to member j (i != j) of line @p line of dimension d. */
static int line_route(const glucx_net_t *net, int d, int line, int i, int j, int *links, int len,
                      int max)
{
    int n = net->dim[d].size, per = line_links(net->dim[d].kind, n);
    int base = net->link_base[d] + line * per;
    switch (net->dim[d].kind) {
    case GLUCX_DIM_RING: {
        int fwd = ((j - i) % n + n) % n;
        int step = fwd <= n - fwd ? 1 : -1;
        for (int k = i; k != j; k = (k + step + n) % n) {
            int local = n == 2 ? 0 : (step > 0 ? k : (k - 1 + n) % n);
            if (len < max)
                links[len] = base + local;
            len++;
        }
        return len;
    }
    case GLUCX_DIM_FULLY_CONNECTED:
        if (len < max)
            links[len] = base + (i < j ? fc_index(n, i, j) : fc_index(n, j, i));
        return len + 1;
    default:
        if (len < max)
            links[len] = base + i;
        if (len + 1 < max)
            links[len + 1] = base + j;
        return len + 2;
    }
}

int glucx_net_package_route(const glucx_net_t *net, int src_pkg, int dst_pkg, int *links, int max)
{
    if (src_pkg < 0 || dst_pkg < 0 || src_pkg >= net->npackages || dst_pkg >= net->npackages)
        return -1;
    int len = 0, p = src_pkg;
    for (int d = 1; d < net->ndims; d++) {
        int from, to;
        int line = pkg_line(net, d, p, &from);
        pkg_line(net, d, dst_pkg, &to);
        if (from == to)
            continue;
        len = line_route(net, d, line, from, to, links, len, max);
        p += (to - from) * net->pkg_stride[d];
    }
    return len;
}

int glucx_net_route(const glucx_net_t *net, int src, int dst, int *links, int max)
{
    if (src < 0 || dst < 0 || src >= net->nranks || dst >= net->nranks)
        return -1;
    int n0 = net->ranks_per_package;
    if (src == dst)
        return 0;
    if (src / n0 == dst / n0)
        return line_route(net, 0, src / n0, src % n0, dst % n0, links, 0, max);
    return glucx_net_package_route(net, src / n0, dst / n0, links, max);
}

uint64_t glucx_net_digest(const glucx_net_t *net)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (int d = 0; d < net->ndims; d++) {
        const glucx_net_dim_t *x = &net->dim[d];
        const void *parts[4] = {&x->kind, &x->size, &x->bandwidth_GBps, &x->latency_ns};
        const size_t lens[4] = {sizeof(x->kind), sizeof(x->size), sizeof(x->bandwidth_GBps),
                                sizeof(x->latency_ns)};
        for (int k = 0; k < 4; k++) {
            const unsigned char *b = parts[k];
            for (size_t i = 0; i < lens[k]; i++)
                h = (h ^ b[i]) * UINT64_C(0x100000001b3);
        }
    }
    return h;
}
