/*
 * Reading a topology file: YAML (libyaml's document API), the keys of ASTRA-sim's analytical
 * network configuration. Every error names the file, the line and the field.
 *
 *   topology: [FullyConnected, Ring, Ring]   # innermost dimension first
 *   npus_count: [2, 2, 2]
 *   bandwidth: [50, 0.125, 0.125]             # GB/s per link and direction
 *   latency: [500, 10000, 10000]              # ns per link
 */
#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "topo/topo.h"
#include "util/error.h"

enum { F_TOPOLOGY, F_NPUS, F_BANDWIDTH, F_LATENCY, F_COUNT };
static const char *const field_names[F_COUNT] = {"topology", "npus_count", "bandwidth", "latency"};

static glucx_status_t bad(const char *path, const yaml_node_t *node, const char *field,
                          const char *what)
{
    return glucx_error(GLUCX_ERR_INVALID_ARG, "topology %s:%zu: field '%s': %s", path,
                       node ? node->start_mark.line + 1 : 0, field, what);
}

static int parse_kind(const char *s, glucx_dim_kind_t *kind)
{
    for (int k = 0; k < GLUCX_DIM_KIND_COUNT; k++)
        if (strcmp(s, glucx_dim_kind_name((glucx_dim_kind_t)k)) == 0) {
            *kind = (glucx_dim_kind_t)k;
            return 0;
        }
    return -1;
}

/* one entry of a sequence field into dims[i] */
static glucx_status_t parse_entry(const char *path, int field, const yaml_node_t *item,
                                  glucx_net_dim_t *dim)
{
    char what[320];
    if (item->type != YAML_SCALAR_NODE)
        return bad(path, item, field_names[field], "expected a scalar entry");
    const char *s = (const char *)item->data.scalar.value;
    if (field == F_TOPOLOGY) {
        if (parse_kind(s, &dim->kind) == 0)
            return GLUCX_OK;
        snprintf(what, sizeof(what), "unknown kind '%.64s' (Ring, FullyConnected, Switch)", s);
        return bad(path, item, field_names[field], what);
    }
    char *end;
    errno = 0;
    if (strpbrk(s, "xX") != NULL) {
        snprintf(what, sizeof(what), "'%.64s': write numbers in decimal", s);
        return bad(path, item, field_names[field], what);
    }
    if (field == F_NPUS) {
        long v = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v < 1 || v > GLUCX_NET_MAX_RANKS) {
            snprintf(what, sizeof(what), "'%.64s' is not a count of 1 to %d", s,
                     GLUCX_NET_MAX_RANKS);
            return bad(path, item, field_names[field], what);
        }
        dim->size = (int)v;
        return GLUCX_OK;
    }
    double v = strtod(s, &end);
    int ok = errno == 0 && end != s && *end == '\0' && isfinite(v) &&
             (field == F_BANDWIDTH ? v > 0 : v >= 0);
    if (!ok) {
        snprintf(what, sizeof(what), "'%.64s' is not a %s number", s,
                 field == F_BANDWIDTH ? "positive" : "non-negative");
        return bad(path, item, field_names[field], what);
    }
    if (field == F_BANDWIDTH && (v < GLUCX_NET_MIN_GBPS || v > GLUCX_NET_MAX_GBPS)) {
        snprintf(what, sizeof(what), "%g GB/s is outside %g to %g GB/s (GB/s = 1e9 bytes/s)", v,
                 GLUCX_NET_MIN_GBPS, GLUCX_NET_MAX_GBPS);
        return bad(path, item, field_names[field], what);
    }
    if (field == F_LATENCY && v > GLUCX_NET_MAX_LATENCY_NS) {
        snprintf(what, sizeof(what), "%g ns is more than %g ns", v, GLUCX_NET_MAX_LATENCY_NS);
        return bad(path, item, field_names[field], what);
    }
    if (field == F_BANDWIDTH)
        dim->bandwidth_GBps = v;
    else
        dim->latency_ns = v;
    return GLUCX_OK;
}

static glucx_status_t parse_document(const char *path, yaml_document_t *doc, glucx_net_dim_t *dims,
                                     int *ndims_p)
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (root == NULL || root->type != YAML_MAPPING_NODE)
        return bad(path, root, "(top level)",
                   "expected a mapping with topology, npus_count, bandwidth and latency");
    const yaml_node_t *seen[F_COUNT] = {0};
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        yaml_node_t *key = yaml_document_get_node(doc, pair->key);
        yaml_node_t *value = yaml_document_get_node(doc, pair->value);
        if (key == NULL || key->type != YAML_SCALAR_NODE)
            return bad(path, key, "(top level)", "keys must be plain names");
        const char *name = (const char *)key->data.scalar.value;
        int f = 0;
        while (f < F_COUNT && strcmp(name, field_names[f]) != 0)
            f++;
        if (f == F_COUNT) {
            char what[160];
            snprintf(what, sizeof(what),
                     "unknown field (known: topology, npus_count, bandwidth, latency)");
            return bad(path, key, name, what);
        }
        if (seen[f] != NULL)
            return bad(path, key, name, "given twice");
        if (value == NULL || value->type != YAML_SEQUENCE_NODE)
            return bad(path, value ? value : key, name,
                       "expected a list with one entry per dimension, e.g. [2, 2]");
        seen[f] = value;
    }
    for (int f = 0; f < F_COUNT; f++)
        if (seen[f] == NULL)
            return bad(path, root, field_names[f], "missing");
    const yaml_node_t *top = seen[F_TOPOLOGY];
    int ndims = (int)(top->data.sequence.items.top - top->data.sequence.items.start);
    if (ndims < 1 || ndims > GLUCX_NET_MAX_DIMS) {
        char what[96];
        snprintf(what, sizeof(what), "%d dimensions (1 to %d are supported)", ndims,
                 GLUCX_NET_MAX_DIMS);
        return bad(path, top, "topology", what);
    }
    for (int f = 0; f < F_COUNT; f++) {
        const yaml_node_t *seq = seen[f];
        int n = (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
        if (n != ndims) {
            char what[128];
            snprintf(what, sizeof(what), "%d entries, but 'topology' has %d dimensions", n, ndims);
            return bad(path, seq, field_names[f], what);
        }
        long long ranks = 1;
        for (int i = 0; i < n; i++) {
            yaml_node_t *item = yaml_document_get_node(doc, seq->data.sequence.items.start[i]);
            if (item == NULL)
                return bad(path, seq, field_names[f], "unreadable entry");
            glucx_status_t st = parse_entry(path, f, item, &dims[i]);
            if (st != GLUCX_OK)
                return st;
            ranks *= f == F_NPUS ? dims[i].size : 1;
            if (ranks > GLUCX_NET_MAX_RANKS) {
                char what[96];
                snprintf(what, sizeof(what), "more than %d ranks in all (up to dimension %d)",
                         GLUCX_NET_MAX_RANKS, i);
                return bad(path, item, field_names[f], what);
            }
        }
    }
    *ndims_p = ndims;
    return GLUCX_OK;
}

glucx_status_t glucx_net_load(const char *path, glucx_net_t **net_p)
{
    if (path == NULL || net_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "topology: NULL argument");
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "topology %s: cannot open: %s", path,
                           strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && !S_ISREG(sb.st_mode)) {
        fclose(f);
        return glucx_error(GLUCX_ERR_INVALID_ARG, "topology %s: not a regular file%s", path,
                           S_ISDIR(sb.st_mode) ? " (a directory)" : "");
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    glucx_status_t st;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return glucx_error(GLUCX_ERR_NO_MEMORY, "topology %s: cannot start the YAML parser", path);
    }
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        st = glucx_error(GLUCX_ERR_INVALID_ARG, "topology %s:%zu: not valid YAML: %s%s%s", path,
                         parser.problem_mark.line + 1, parser.problem ? parser.problem : "error",
                         parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        fclose(f);
        return st;
    }
    glucx_net_dim_t dims[GLUCX_NET_MAX_DIMS];
    memset(dims, 0, sizeof(dims));
    int ndims = 0;
    if (yaml_document_get_root_node(&doc) == NULL)
        st = glucx_error(GLUCX_ERR_INVALID_ARG,
                         "topology %s:1: field '(top level)': the file is "
                         "empty",
                         path);
    else
        st = parse_document(path, &doc, dims, &ndims);
    yaml_document_delete(&doc);
    if (st == GLUCX_OK) {
        /* one document per file: a second one would be ignored silently */
        size_t line = parser.mark.line + 1;
        if (!yaml_parser_load(&parser, &doc)) {
            st = glucx_error(GLUCX_ERR_INVALID_ARG, "topology %s:%zu: not valid YAML: %s", path,
                             parser.problem_mark.line + 1,
                             parser.problem ? parser.problem : "error");
        } else {
            if (yaml_document_get_root_node(&doc) != NULL)
                st = glucx_error(GLUCX_ERR_INVALID_ARG,
                                 "topology %s:%zu: field '(top level)': a second YAML document "
                                 "(a topology file holds one)",
                                 path, line);
            yaml_document_delete(&doc);
        }
    }
    yaml_parser_delete(&parser);
    fclose(f);
    if (st != GLUCX_OK)
        return st;
    return glucx_net_create(dims, ndims, path, net_p);
}
