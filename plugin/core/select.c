#include "core/select.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/config.h"
#include "util/error.h"

static int find_coll(const char *name, size_t len)
{
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        const char *n = glucx_coll_name((glucx_coll_t)c);
        if (strlen(n) == len && strncmp(n, name, len) == 0)
            return c;
    }
    return -1;
}

static int find_alg(glucx_coll_t coll, const char *name)
{
    const glucx_coll_table_t *t = glucx_coll_tables[coll];
    for (int i = 0; i < t->count; i++)
        if (strcmp(t->algs[i].name, name) == 0)
            return i;
    return -1;
}

/* Parse one entry "COLLS:[LO-HI:]ALG" of length len at s. */
static glucx_status_t parse_entry(const char *s, size_t len, glucx_tune_entry_t *e)
{
    char buf[256];
    if (len >= sizeof(buf))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "GLUCX_TUNE entry '%.*s' is too long", (int)len,
                           s);
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *fields[3];
    int nf = 0;
    for (char *f = buf;; f++) { /* split on ':' keeping empty fields, which are errors */
        char *colon = strchr(f, ':');
        if (nf == 3 || (colon == f) || *f == '\0')
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "GLUCX_TUNE entry '%.*s': expected COLL[,COLL]:[LO-HI:]ALG",
                               (int)len, s);
        fields[nf++] = f;
        if (colon == NULL)
            break;
        *colon = '\0';
        f = colon;
    }
    if (nf < 2)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "GLUCX_TUNE entry '%.*s': expected COLL[,COLL]:[LO-HI:]ALG", (int)len,
                           s);
    memset(e, 0, sizeof(*e));
    for (const char *c = fields[0]; *c != '\0';) {
        size_t n = strcspn(c, ",");
        int coll = find_coll(c, n);
        if (coll < 0)
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "GLUCX_TUNE entry '%.*s': unknown collective '%.*s'", (int)len, s,
                               (int)n, c);
        e->colls |= 1u << coll;
        c += n + (c[n] == ',');
    }
    e->lo = 0;
    e->hi = SIZE_MAX;
    if (nf == 3) {
        char *dash = strchr(fields[1], '-');
        if (dash == NULL)
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "GLUCX_TUNE entry '%.*s': range '%s' is not LO-HI", (int)len, s,
                               fields[1]);
        *dash = '\0';
        if (glucx_config_parse_size(fields[1], &e->lo) != GLUCX_OK ||
            glucx_config_parse_size(dash + 1, &e->hi) != GLUCX_OK || e->lo >= e->hi ||
            e->lo == SIZE_MAX)
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "GLUCX_TUNE entry '%.*s': bad range '%s-%s' (sizes like 0, 4096, "
                               "4K, 16M, 1G, inf; LO < HI)",
                               (int)len, s, fields[1], dash + 1);
    }
    const char *alg = fields[nf - 1];
    if (strlen(alg) >= sizeof(e->alg_name))
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "GLUCX_TUNE entry '%.*s': algorithm name too long", (int)len, s);
    strcpy(e->alg_name, alg);
    e->alg = -1;
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        if (!(e->colls & (1u << c)))
            continue;
        int a = find_alg((glucx_coll_t)c, alg);
        if (a < 0)
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "GLUCX_TUNE entry '%.*s': %s has no algorithm '%s' (glucx-info "
                               "lists them)",
                               (int)len, s, glucx_coll_name((glucx_coll_t)c), alg);
    }
    return GLUCX_OK;
}

glucx_status_t glucx_tune_parse(const char *text, glucx_tune_t *tune)
{
    memset(tune, 0, sizeof(*tune));
    if (text == NULL)
        return GLUCX_OK;
    const char *s = text;
    while (*s != '\0') {
        size_t n = strcspn(s, "#");
        if (n > 0) {
            if (tune->count == GLUCX_TUNE_MAX_ENTRIES)
                return glucx_error(GLUCX_ERR_INVALID_ARG, "GLUCX_TUNE has more than %d entries",
                                   GLUCX_TUNE_MAX_ENTRIES);
            glucx_status_t st = parse_entry(s, n, &tune->entries[tune->count]);
            if (st != GLUCX_OK)
                return st;
            tune->count++;
        }
        s += n + (s[n] == '#');
    }
    return GLUCX_OK;
}

static int argmin_alg(const glucx_topo_t *topo, glucx_coll_t coll, size_t bytes)
{
    int order[1];
    return glucx_select_by_cost(topo, coll, bytes, order, NULL, 1) == 1 ? order[0] : -1;
}

int glucx_select_by_cost(const glucx_topo_t *topo, glucx_coll_t coll, size_t bytes, int *order,
                         double *costs, int max)
{
    const glucx_coll_table_t *t = glucx_coll_tables[coll];
    double cost[64];
    int idx[64];
    int n = 0, best = -1;
    double best_cost = INFINITY;
    for (int i = 0; i < t->count && i < 64; i++) {
        double c = t->algs[i].cost(topo, bytes);
        if (!isfinite(c))
            continue;
        /* The first choice: in table order, a row replaces the best so far only when cheaper
         * by more than a relative 1e-9, so costs equal but for rounding keep table order
         * (algorithms that are the same on this topology, e.g. the torus rows with one outer
         * dimension, would otherwise alternate at sizes where their last bits differ). */
        if (best < 0 || c * (1 + 1e-9) < best_cost) {
            best = i;
            best_cost = c;
        }
        /* the others by cost: insertion sort (tables are short; ties keep table order) */
        int j = n++;
        while (j > 0 && cost[j - 1] > c) {
            cost[j] = cost[j - 1];
            idx[j] = idx[j - 1];
            j--;
        }
        cost[j] = c;
        idx[j] = i;
    }
    for (int k = 0; k < n; k++) { /* move the first choice to the front */
        if (idx[k] != best)
            continue;
        for (; k > 0; k--) {
            idx[k] = idx[k - 1];
            cost[k] = cost[k - 1];
        }
        idx[0] = best;
        cost[0] = best_cost;
        break;
    }
    int out = n < max ? n : max;
    memcpy(order, idx, sizeof(int) * (size_t)out);
    if (costs != NULL)
        memcpy(costs, cost, sizeof(double) * (size_t)out);
    return out;
}

/* Overwrite [lo, hi) of a range list with alg (forced). */
static void apply_override(glucx_select_range_t *r, int *n, size_t lo, size_t hi, int alg)
{
    glucx_select_range_t out[GLUCX_SELECT_MAX_RANGES];
    int m = 0;
    int placed = 0;
    for (int i = 0; i < *n && m < GLUCX_SELECT_MAX_RANGES - 2; i++) {
        if (r[i].hi <= lo || r[i].lo >= hi) {
            if (!placed && r[i].lo >= hi) {
                out[m++] = (glucx_select_range_t){lo, hi, alg, 1};
                placed = 1;
            }
            out[m++] = r[i];
            continue;
        }
        if (r[i].lo < lo) {
            out[m] = r[i];
            out[m++].hi = lo;
        }
        if (!placed) {
            out[m++] = (glucx_select_range_t){lo, hi, alg, 1};
            placed = 1;
        }
        if (r[i].hi > hi) {
            out[m] = r[i];
            out[m++].lo = hi;
        }
    }
    if (!placed && m < GLUCX_SELECT_MAX_RANGES)
        out[m++] = (glucx_select_range_t){lo, hi, alg, 1};
    memcpy(r, out, sizeof(out[0]) * (size_t)m);
    *n = m;
}

/* The smallest size in (lo, hi] whose argmin is not @p alg, where argmin(lo) == alg and
 * argmin(hi) != alg: bisection, so the range boundary is the exact crossover. */
static size_t crossover(const glucx_topo_t *topo, glucx_coll_t coll, size_t lo, size_t hi, int alg)
{
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (argmin_alg(topo, coll, mid) == alg)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

glucx_status_t glucx_select_build(const glucx_topo_t *topo, const glucx_tune_t *tune,
                                  glucx_select_t *sel)
{
    memset(sel, 0, sizeof(*sel));
    for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
        glucx_select_range_t *r = sel->ranges[c];
        /* the argmin at 0 and at every power of two; where it changes between two probes, the
         * boundary is the exact crossover (found by bisection), so every range starts where its
         * algorithm becomes the cheapest */
        int n = 1;
        size_t prev = 0;
        r[0] = (glucx_select_range_t){0, SIZE_MAX, argmin_alg(topo, (glucx_coll_t)c, 0), 0};
        for (int k = 0; k < 63 && n < GLUCX_SELECT_MAX_RANGES - 4; k++) {
            size_t probe = (size_t)1 << k;
            int alg = argmin_alg(topo, (glucx_coll_t)c, probe);
            while (r[n - 1].alg != alg && n < GLUCX_SELECT_MAX_RANGES - 4) {
                size_t x = crossover(topo, (glucx_coll_t)c, prev, probe, r[n - 1].alg);
                r[n - 1].hi = x;
                r[n++] =
                    (glucx_select_range_t){x, SIZE_MAX, argmin_alg(topo, (glucx_coll_t)c, x), 0};
                prev = x;
            }
            prev = probe;
        }
        if (tune != NULL) {
            for (int i = 0; i < tune->count; i++) {
                const glucx_tune_entry_t *e = &tune->entries[i];
                if (e->colls & (1u << c))
                    apply_override(r, &n, e->lo, e->hi, find_alg((glucx_coll_t)c, e->alg_name));
            }
        }
        sel->nranges[c] = n;
    }
    return GLUCX_OK;
}

const glucx_select_range_t *glucx_select_lookup(const glucx_select_t *sel, glucx_coll_t coll,
                                                size_t bytes)
{
    const glucx_select_range_t *r = sel->ranges[coll];
    for (int i = 0; i < sel->nranges[coll]; i++)
        if (bytes >= r[i].lo && (bytes < r[i].hi || r[i].hi == SIZE_MAX))
            return &r[i];
    return &r[sel->nranges[coll] - 1];
}

void glucx_select_format_size(size_t v, char *buf, size_t len)
{
    if (v == SIZE_MAX)
        snprintf(buf, len, "inf");
    else if (v >= (1u << 30) && v % (1u << 30) == 0)
        snprintf(buf, len, "%zuG", v >> 30);
    else if (v >= (1u << 20) && v % (1u << 20) == 0)
        snprintf(buf, len, "%zuM", v >> 20);
    else if (v >= (1u << 10) && v % (1u << 10) == 0)
        snprintf(buf, len, "%zuK", v >> 10);
    else
        snprintf(buf, len, "%zu", v);
}

void glucx_select_format(const glucx_select_t *sel, glucx_coll_t coll, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    const glucx_coll_table_t *t = glucx_coll_tables[coll];
    for (int i = 0; i < sel->nranges[coll] && off < len; i++) {
        const glucx_select_range_t *r = &sel->ranges[coll][i];
        char lo[24], hi[24];
        glucx_select_format_size(r->lo, lo, sizeof(lo));
        glucx_select_format_size(r->hi, hi, sizeof(hi));
        int w = snprintf(buf + off, len - off, "%s%s-%s:%s%s", i ? " " : "", lo, hi,
                         r->alg >= 0 && r->alg < t->count ? t->algs[r->alg].name : "none",
                         r->forced ? "(tuned)" : "");
        if (w < 0)
            break;
        off += (size_t)w;
    }
}
