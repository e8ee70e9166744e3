/*
 * The diff of two runs over their report.json (METRICS.md, "Diff of two runs"). The iteration
 * time is the reports' summary.mean_iteration_ns (the mean over iterations of the ranks' own
 * durations); every other quantity is brought to "per iteration" by dividing the run's total by
 * its summary.iterations, so the two runs compare whatever their lengths. Entries of the two runs
 * are matched by identity, never by position: communicators by name and order of appearance,
 * ranks by (communicator, rank), collectives and decisions by (communicator, collective, size
 * bucket), physical links by (communicator, dimension, endpoints).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diff.h"
#include "engine.h"

/* a contributor is named as the cause when it is at least this share of the difference */
#define CAUSE_MIN_SHARE 0.10

/* the analysis's error text (event.h) */
#define set_err glucx_an_set_err

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

static const char *str(const json_t *o, const char *k, const char *dflt)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

static const json_t *arr(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_array(v) ? v : NULL;
}

static json_t *jint(double v)
{
    return json_integer((json_int_t)llround(v));
}

/* ---- loading ------------------------------------------------------------------------------- */

static int check_report(const json_t *r, const char *path, char *err, size_t len)
{
    if (!json_is_object(r)) {
        set_err(err, len, "%s is not a glucx-analyze report: the top level is not a JSON object",
                path);
        return -1;
    }
    const json_t *ver = json_object_get(r, "schema_version");
    if (!json_is_integer(ver)) {
        set_err(err, len,
                "%s is not a glucx-analyze report: no integer \"schema_version\" at its top level",
                path);
        return -1;
    }
    if (json_integer_value(ver) != 1) {
        set_err(err, len,
                "%s has report schema_version %" JSON_INTEGER_FORMAT
                "; this glucx-analyze reads version 1",
                path, json_integer_value(ver));
        return -1;
    }
    const json_t *sum = json_object_get(r, "summary");
    if (!json_is_object(sum)) {
        set_err(err, len, "%s is not a complete report: no \"summary\" object", path);
        return -1;
    }
    static const char *const need[] = {"iterations", "mean_iteration_ns"};
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
        const json_t *v = json_object_get(sum, need[i]);
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            set_err(err, len, "%s: summary.%s is %s, want an integer >= 0", path, need[i],
                    !v ? "missing" : "not an integer >= 0");
            return -1;
        }
    }
    return 0;
}

json_t *glucx_an_diff_load(const char *path, char *err, size_t errlen)
{
    char file[4096];
    struct stat st;
    if (stat(path, &st) != 0) {
        set_err(err, errlen, "cannot read report %s: %s", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode))
        snprintf(file, sizeof(file), "%s/report.json", path);
    else
        snprintf(file, sizeof(file), "%s", path);
    FILE *f = fopen(file, "r");
    if (!f) {
        set_err(err, errlen, "cannot read report %s: %s", file, strerror(errno));
        return NULL;
    }
    json_error_t je;
    json_t *r = json_loadf(f, 0, &je);
    fclose(f);
    if (!r) {
        set_err(err, errlen, "%s is not JSON: %s (line %d, column %d)", file, je.text, je.line,
                je.column);
        return NULL;
    }
    if (check_report(r, file, err, errlen) != 0) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* ---- one run ------------------------------------------------------------------------------- */

typedef struct run {
    const json_t *r;
    const char *label;
    double T;      /* mean iteration time, ns */
    double iters;  /* summary.iterations, at least 1 for the divisions */
    json_t *keys;  /* comm_id -> matching key ("NAME#k": k-th communicator of that name) */
    json_t *names; /* comm_id -> name */
    size_t ncomms;
    size_t nranks;
} run_t;

static int add_comm(run_t *run, const char *id, const char *name)
{
    if (json_object_get(run->keys, id))
        return 0;
    size_t occ = 0;
    const char *k;
    json_t *v;
    json_object_foreach(run->names, k, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            occ++;
    }
    char key[512];
    snprintf(key, sizeof(key), "%s#%zu", name, occ);
    run->ncomms++;
    return json_object_set_new(run->keys, id, json_string(key)) ||
           json_object_set_new(run->names, id, json_string(name));
}

static int run_init(run_t *run, const json_t *r, const char *label)
{
    memset(run, 0, sizeof(*run));
    run->r = r;
    run->label = label;
    const json_t *sum = json_object_get(r, "summary");
    run->T = num(sum, "mean_iteration_ns");
    run->iters = num(sum, "iterations");
    if (run->iters < 1)
        run->iters = 1;
    run->keys = json_object();
    run->names = json_object();
    if (!run->keys || !run->names)
        return -1;
    const json_t *comms = arr(json_object_get(r, "trace"), "comms");
    size_t i;
    const json_t *c;
    json_array_foreach(comms, i, c)
    {
        const char *id = str(c, "comm_id", NULL);
        if (id && add_comm(run, id, str(c, "name", "")) != 0)
            return -1;
    }
    /* reports without trace.comms: the communicators in the order the sections name them */
    static const char *const sections[] = {"ranks",      "collective_groups", "collectives",
                                           "decisions",  "physical_links",    "links",
                                           "stragglers", "iterations"};
    for (size_t k = 0; k < sizeof(sections) / sizeof(sections[0]); k++) {
        json_array_foreach(arr(r, sections[k]), i, c)
        {
            const char *id = str(c, "comm_id", NULL);
            if (id && add_comm(run, id, "") != 0)
                return -1;
        }
    }
    run->nranks = json_array_size(arr(r, "ranks"));
    return 0;
}

static void run_fini(run_t *run)
{
    json_decref(run->keys);
    json_decref(run->names);
}

static const char *comm_key(const run_t *run, const json_t *entry)
{
    const char *id = str(entry, "comm_id", "");
    const char *k = str(run->keys, id, NULL);
    return k ? k : id;
}

static const char *comm_name(const run_t *run, const json_t *entry)
{
    const char *id = str(entry, "comm_id", "");
    return str(run->names, id, id);
}

/* The median over the listed iterations of the ranks' mean duration; < 0 without any. */
static double median_iteration(const run_t *run)
{
    const json_t *its = arr(run->r, "iterations");
    size_t n = json_array_size(its), m = 0;
    if (n == 0)
        return -1;
    double *v = malloc(n * sizeof(double));
    if (!v)
        return -1;
    size_t i;
    const json_t *it;
    json_array_foreach(its, i, it)
    {
        size_t nr = json_array_size(arr(it, "ranks"));
        const json_t *tot = json_object_get(it, "totals");
        if (nr > 0 && tot)
            v[m++] = num(tot, "duration_ns") / (double)nr;
    }
    double med = -1;
    if (m > 0) {
        for (size_t a = 1; a < m; a++) /* insertion sort: lists are short */
            for (size_t b = a; b > 0 && v[b - 1] > v[b]; b--) {
                double t = v[b];
                v[b] = v[b - 1];
                v[b - 1] = t;
            }
        med = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
    }
    free(v);
    return med;
}

/* ---- rows: one entry per matched identity -------------------------------------------------- */

typedef struct row {
    char *key;
    json_t *obj;   /* the output entry; "a" and "b" hold each run's side (null: absent) */
    double va, vb; /* the run's term of the iteration time, ns per iteration */
} row_t;

typedef struct rows {
    row_t *v;
    size_t n, cap;
    json_t *index; /* key -> position in v (a hash: a run may have millions of rank-pair links) */
} rows_t;

static row_t *row_get(rows_t *rs, const char *key)
{
    if (!rs->index && !(rs->index = json_object()))
        return NULL;
    const json_t *at = json_object_get(rs->index, key);
    if (at)
        return &rs->v[json_integer_value(at)];
    if (rs->n == rs->cap) {
        size_t nc = rs->cap ? 2 * rs->cap : 16;
        row_t *nv = realloc(rs->v, nc * sizeof(row_t));
        if (!nv)
            return NULL;
        rs->v = nv;
        rs->cap = nc;
    }
    row_t *r = &rs->v[rs->n];
    memset(r, 0, sizeof(*r));
    r->key = strdup(key);
    r->obj = json_object();
    if (!r->key || !r->obj || json_object_set_new(r->obj, "a", json_null()) ||
        json_object_set_new(r->obj, "b", json_null()) ||
        json_object_set_new(rs->index, key, json_integer((json_int_t)rs->n))) {
        free(r->key);
        json_decref(r->obj);
        return NULL;
    }
    rs->n++;
    return r;
}

/* The side object of run @p side (0: a, 1: b) of @p r, created on first use. */
static json_t *row_side(row_t *r, int side)
{
    const char *k = side ? "b" : "a";
    json_t *s = json_object_get(r->obj, k);
    if (json_is_object(s))
        return s;
    s = json_object();
    if (!s || json_object_set_new(r->obj, k, s))
        return NULL;
    return s;
}

static void rows_free(rows_t *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        free(rs->v[i].key);
        json_decref(rs->v[i].obj);
    }
    free(rs->v);
    json_decref(rs->index);
}

static int cmp_rows(const void *x, const void *y)
{
    const row_t *a = x, *b = y;
    double ca = fabs(a->vb - a->va), cb = fabs(b->vb - b->va);
    if (ca != cb)
        return ca > cb ? -1 : 1;
    return strcmp(a->key, b->key);
}

static json_t *share_of(double c, double dT)
{
    return dT != 0 ? json_real(c / dT) : json_null();
}

/* Sort by absolute contribution and move the entries into a new array (rows emptied). */
static json_t *rows_take(rows_t *rs, double dT)
{
    if (rs->n > 1) /* an empty section has no array (qsort's base must not be NULL) */
        qsort(rs->v, rs->n, sizeof(row_t), cmp_rows);
    json_object_clear(rs->index); /* positions changed: no row_get() after this */
    json_t *out = json_array();
    if (!out)
        return NULL;
    for (size_t i = 0; i < rs->n; i++) {
        row_t *r = &rs->v[i];
        double c = r->vb - r->va;
        const json_t *a = json_object_get(r->obj, "a"), *b = json_object_get(r->obj, "b");
        const char *present = json_is_object(a) && json_is_object(b) ? "both"
                              : json_is_object(a)                    ? "a"
                                                                     : "b";
        if (json_object_set_new(r->obj, "present", json_string(present)) ||
            json_object_set_new(r->obj, "contribution_ns", jint(c)) ||
            json_object_set_new(r->obj, "share", share_of((double)llround(c), dT)) ||
            json_array_append(out, r->obj)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* ---- sections ------------------------------------------------------------------------------ */

/* The power-of-two size bucket [lo, 2 lo) of @p bytes (0: [0, 1)). */
static uint64_t bucket_lo(uint64_t bytes)
{
    uint64_t lo = 1;
    if (bytes == 0)
        return 0;
    while (lo <= bytes / 2)
        lo <<= 1;
    return lo;
}

static void size_str(uint64_t b, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && b >= 1024 && b % 1024 == 0) {
        b /= 1024;
        u++;
    }
    snprintf(buf, len, "%" PRIu64 " %s", b, unit[u]);
}

static void bucket_str(uint64_t bytes, char *buf, size_t len)
{
    uint64_t lo = bucket_lo(bytes);
    char a[32], b[32];
    size_str(lo, a, sizeof(a));
    size_str(lo ? 2 * lo : 1, b, sizeof(b));
    snprintf(buf, len, "%s..%s", a, b);
}

static int add_count(json_t *obj, const char *key, json_int_t n)
{
    json_t *v = json_object_get(obj, key);
    return json_object_set_new(obj, key,
                               json_integer((json_is_integer(v) ? json_integer_value(v) : 0) + n));
}

static int add_real(json_t *obj, const char *key, double x)
{
    return json_object_set_new(obj, key, json_real(num(obj, key) + x));
}

/* The key of @p counts (an object of integers) with the largest count (ties: first in order). */
static const char *dominant(const json_t *counts)
{
    const char *best = NULL, *k;
    json_int_t bn = -1;
    json_t *v;
    json_object_foreach((json_t *)counts, k, v)
    {
        if (json_integer_value(v) > bn) {
            bn = json_integer_value(v);
            best = k;
        }
    }
    return best;
}

static int same_keys(const json_t *x, const json_t *y)
{
    if (json_object_size(x) != json_object_size(y))
        return 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)x, k, v)
    {
        if (!json_object_get(y, k))
            return 0;
    }
    return 1;
}

/* phases: T split by the shares of the summary totals; wait is what the other three leave */
static const char *const phase_names[] = {"compute", "exposed_communication", "wait", "idle"};

static int phases_of(const run_t *run, double out[4])
{
    const json_t *tot = json_object_get(json_object_get(run->r, "summary"), "totals");
    double D = num(tot, "duration_ns");
    if (!json_is_object(tot) || D <= 0)
        return -1;
    out[0] = run->T * num(tot, "compute_ns") / D;
    out[1] = run->T * num(tot, "exposed_communication_ns") / D;
    out[3] = run->T * num(tot, "idle_ns") / D;
    out[2] = run->T - out[0] - out[1] - out[3];
    return 0;
}

static json_t *section_phases(const run_t *A, const run_t *B, double dT, json_t *notes)
{
    double pa[4], pb[4];
    int ha = phases_of(A, pa) == 0, hb = phases_of(B, pb) == 0;
    if (!ha || !hb) {
        json_array_append_new(notes, json_string("phases not compared: a report has no "
                                                 "summary.totals with a duration"));
        return json_array();
    }
    rows_t rs = {0};
    json_t *out = NULL;
    for (int p = 0; p < 4; p++) {
        row_t *r = row_get(&rs, phase_names[p]);
        if (!r || json_object_set_new(r->obj, "phase", json_string(phase_names[p])) ||
            json_object_set_new(r->obj, "a",
                                json_pack("{s:I}", "ns", (json_int_t)llround(pa[p]))) ||
            json_object_set_new(r->obj, "b", json_pack("{s:I}", "ns", (json_int_t)llround(pb[p]))))
            goto out;
        r->va = pa[p];
        r->vb = pb[p];
    }
    out = rows_take(&rs, dT);
out:
    rows_free(&rs);
    return out;
}

/* Whether @p run's collectives list is complete (not cut at --list-limit) and assigns some
 * collective to an iteration: then the collectives inside iterations are counted, else every
 * collective of collective_groups (set-up and warm-up calls included). */
static int by_iteration(const run_t *run)
{
    const json_t *list = arr(run->r, "collectives");
    const json_t *lists = json_object_get(run->r, "lists");
    if (!list ||
        (json_is_object(lists) && num(lists, "collectives_listed") < num(lists, "collectives")))
        return 0;
    size_t i;
    const json_t *c;
    json_array_foreach(list, i, c)
    {
        if (json_is_integer(json_object_get(c, "iteration")))
            return 1;
    }
    return 0;
}

/* The collectives of @p run inside iterations, as (comm_id ":" seq) -> true. */
static json_t *in_iterations(const run_t *run)
{
    json_t *set = json_object();
    size_t i;
    const json_t *c;
    json_array_foreach(arr(run->r, "collectives"), i, c)
    {
        char k[256];
        if (!json_is_integer(json_object_get(c, "iteration")))
            continue;
        snprintf(k, sizeof(k), "%s:%" JSON_INTEGER_FORMAT, str(c, "comm_id", ""),
                 json_integer_value(json_object_get(c, "seq")));
        if (set && json_object_set_new(set, k, json_true())) {
            json_decref(set);
            return NULL;
        }
    }
    return set;
}

/* One collective_groups entry, or one call of the collectives list (count 1). */
static void group_of(const json_t *x, int call, double *count_p, double *time_p)
{
    *count_p = call ? 1 : num(x, "count");
    *time_p = call ? num(x, "time_ns") : *count_p * num(x, "mean_time_ns");
}

static json_t *section_collectives(const run_t *R[2], int iter_only, double dT, json_t *notes)
{
    rows_t rs = {0};
    json_t *out = NULL;
    for (int s = 0; s < 2; s++) {
        const json_t *groups = arr(R[s]->r, iter_only ? "collectives" : "collective_groups");
        if (!groups) {
            char m[512];
            snprintf(m, sizeof(m), "%s has no collective_groups: collectives not compared",
                     R[s]->label);
            json_array_append_new(notes, json_string(m));
        }
        size_t i;
        const json_t *g;
        json_array_foreach(groups, i, g)
        {
            if (iter_only && !json_is_integer(json_object_get(g, "iteration")))
                continue;
            uint64_t bytes = (uint64_t)num(g, "bytes");
            char bucket[64], key[768];
            bucket_str(bytes, bucket, sizeof(bucket));
            const char *coll = str(g, "coll", "?");
            snprintf(key, sizeof(key), "%s|%s|%s", comm_key(R[s], g), coll, bucket);
            row_t *r = row_get(&rs, key);
            json_t *side = r ? row_side(r, s) : NULL;
            if (!side)
                goto out;
            if (!json_object_get(r->obj, "coll")) {
                uint64_t lo = bucket_lo(bytes);
                if (json_object_set_new(r->obj, "comm", json_string(comm_name(R[s], g))) ||
                    json_object_set_new(r->obj, "coll", json_string(coll)) ||
                    json_object_set_new(r->obj, "bucket", json_string(bucket)) ||
                    json_object_set_new(r->obj, "bytes_min", json_integer((json_int_t)lo)) ||
                    json_object_set_new(r->obj, "bytes_max",
                                        json_integer((json_int_t)(lo ? 2 * lo - 1 : 0))))
                    goto out;
            }
            double count, time;
            group_of(g, iter_only, &count, &time);
            json_t *algs = json_object_get(side, "algorithms");
            if (!algs && json_object_set_new(side, "algorithms", algs = json_object()))
                goto out;
            if (add_count(side, "count", (json_int_t)count) || add_real(side, "time_ns", time) ||
                add_count(algs, str(g, "algorithm", "(none)"), (json_int_t)count))
                goto out;
            if (s)
                r->vb += time / R[s]->iters;
            else
                r->va += time / R[s]->iters;
        }
    }
    for (size_t i = 0; i < rs.n; i++) {
        row_t *r = &rs.v[i];
        json_t *sd[2] = {json_object_get(r->obj, "a"), json_object_get(r->obj, "b")};
        for (int s = 0; s < 2; s++) {
            if (!json_is_object(sd[s]))
                continue;
            double count = num(sd[s], "count"), time = num(sd[s], "time_ns");
            json_object_set_new(sd[s], "time_ns", jint(time));
            json_object_set_new(sd[s], "calls_per_iteration", json_real(count / R[s]->iters));
            json_object_set_new(sd[s], "time_per_iteration_ns", jint(time / R[s]->iters));
            json_object_set_new(sd[s], "mean_time_ns", jint(count > 0 ? time / count : 0));
            const char *dom = dominant(json_object_get(sd[s], "algorithms"));
            json_object_set_new(sd[s], "algorithm", dom ? json_string(dom) : json_null());
        }
        int changed =
            json_is_object(sd[0]) && json_is_object(sd[1]) &&
            !same_keys(json_object_get(sd[0], "algorithms"), json_object_get(sd[1], "algorithms"));
        if (json_object_set_new(r->obj, "algorithm_changed", json_boolean(changed)))
            goto out;
    }
    out = rows_take(&rs, dT);
out:
    rows_free(&rs);
    return out;
}

static void endpoint_str(const json_t *ep, char *buf, size_t len)
{
    snprintf(buf, len, "%s %" JSON_INTEGER_FORMAT, str(ep, "kind", "?"),
             json_integer_value(json_object_get(ep, "index")));
}

static json_t *section_links(const run_t *R[2], double dT, json_t *notes, const char **kind_p)
{
    int phys = json_array_size(arr(R[0]->r, "physical_links")) > 0 ||
               json_array_size(arr(R[1]->r, "physical_links")) > 0;
    *kind_p = phys ? "physical" : "rank_pair";
    rows_t rs = {0};
    json_t *out = NULL;
    for (int s = 0; s < 2; s++) {
        const json_t *links = arr(R[s]->r, phys ? "physical_links" : "links");
        if (json_array_size(links) == 0) {
            char m[512];
            snprintf(m, sizeof(m), "%s has no %s: its links count as absent", R[s]->label,
                     phys ? "physical_links (a one-host run, or an older trace)" : "links");
            json_array_append_new(notes, json_string(m));
        }
        size_t i;
        const json_t *l;
        json_array_foreach(links, i, l)
        {
            char key[1024], label[512];
            if (phys) {
                char ea[128], eb[128];
                endpoint_str(json_object_get(l, "a"), ea, sizeof(ea));
                endpoint_str(json_object_get(l, "b"), eb, sizeof(eb));
                int swap = strcmp(ea, eb) > 0; /* the same link whichever end is named first */
                int dim = (int)num(l, "dim");
                snprintf(key, sizeof(key), "%s|%d|%s|%s", comm_key(R[s], l), dim, swap ? eb : ea,
                         swap ? ea : eb);
                snprintf(label, sizeof(label), "physical link %d (dimension %d, %s - %s)",
                         (int)num(l, "phys_id"), dim, ea, eb);
            } else {
                int src = (int)num(l, "src"), dst = (int)num(l, "dst");
                snprintf(key, sizeof(key), "%s|%d|%d", comm_key(R[s], l), src, dst);
                snprintf(label, sizeof(label), "link %d->%d", src, dst);
            }
            row_t *r = row_get(&rs, key);
            json_t *side = r ? row_side(r, s) : NULL;
            if (!side)
                goto out;
            if (!json_object_get(r->obj, "label")) {
                if (json_object_set_new(r->obj, "label", json_string(label)) ||
                    json_object_set_new(r->obj, "comm", json_string(comm_name(R[s], l))) ||
                    json_object_set_new(r->obj, "dim", jint(num(l, "dim"))))
                    goto out;
                if (phys && (json_object_set(r->obj, "a_end", json_object_get(l, "a")) ||
                             json_object_set(r->obj, "b_end", json_object_get(l, "b"))))
                    goto out;
                if (!phys && (json_object_set_new(r->obj, "src", jint(num(l, "src"))) ||
                              json_object_set_new(r->obj, "dst", jint(num(l, "dst")))))
                    goto out;
            }
            double busy = num(l, "busy_ns") / R[s]->iters;
            const json_t *nom = json_object_get(l, "bandwidth_Bps");
            const json_t *of = json_object_get(l, phys ? "of_nominal" : "efficiency");
            if (json_object_set_new(side, "id", jint(num(l, phys ? "phys_id" : "link_id"))) ||
                json_object_set_new(side, "bytes_per_iteration",
                                    jint(num(l, "bytes") / R[s]->iters)) ||
                json_object_set_new(side, "busy_ns_per_iteration", jint(busy)) ||
                json_object_set_new(side, "bandwidth_Bps",
                                    json_is_number(nom) ? json_real(json_number_value(nom))
                                                        : json_null()) ||
                json_object_set_new(side, "of_nominal",
                                    json_is_number(of) ? json_real(json_number_value(of))
                                                       : json_null()))
                goto out;
            if (s)
                r->vb += busy;
            else
                r->va += busy;
        }
    }
    for (size_t i = 0; i < rs.n; i++) {
        const json_t *a = json_object_get(rs.v[i].obj, "a"), *b = json_object_get(rs.v[i].obj, "b");
        if (json_object_set_new(
                rs.v[i].obj, "bytes_delta_per_iteration",
                jint(num(b, "bytes_per_iteration") - num(a, "bytes_per_iteration"))))
            goto out;
    }
    out = rows_take(&rs, dT);
out:
    rows_free(&rs);
    return out;
}

static json_t *section_decisions(const run_t *R[2], int iter_only, double dT, json_t *notes)
{
    rows_t rs = {0};
    json_t *out = NULL, *inside = NULL;
    for (int s = 0; s < 2; s++) {
        json_decref(inside);
        inside = iter_only ? in_iterations(R[s]) : NULL;
        if (iter_only && !inside)
            goto out;
        const json_t *ds = arr(R[s]->r, "decisions");
        if (!ds) {
            char m[512];
            snprintf(m, sizeof(m), "%s has no decisions: its decisions count as absent",
                     R[s]->label);
            json_array_append_new(notes, json_string(m));
        }
        /* a list cut at --list-limit: scale the listed ones to the total */
        const json_t *lists = json_object_get(R[s]->r, "lists");
        double total = num(lists, "decisions"), listed = num(lists, "decisions_listed");
        double scale = !iter_only && listed > 0 && total > listed ? total / listed : 1.0;
        size_t i;
        const json_t *d;
        json_array_foreach(ds, i, d)
        {
            char bucket[64], key[768];
            if (inside) {
                snprintf(key, sizeof(key), "%s:%" JSON_INTEGER_FORMAT, str(d, "comm_id", ""),
                         (json_int_t)num(d, "seq"));
                if (!json_object_get(inside, key))
                    continue;
            }
            bucket_str((uint64_t)num(d, "bytes"), bucket, sizeof(bucket));
            const char *kind = str(d, "kind", "?"), *coll = str(d, "coll", "?");
            snprintf(key, sizeof(key), "%s|%s|%s|%s", comm_key(R[s], d), kind, coll, bucket);
            row_t *r = row_get(&rs, key);
            json_t *side = r ? row_side(r, s) : NULL;
            if (!side)
                goto out;
            if (!json_object_get(r->obj, "kind") &&
                (json_object_set_new(r->obj, "comm", json_string(comm_name(R[s], d))) ||
                 json_object_set_new(r->obj, "kind", json_string(kind)) ||
                 json_object_set_new(r->obj, "coll", json_string(coll)) ||
                 json_object_set_new(r->obj, "bucket", json_string(bucket))))
                goto out;
            json_t *ch = json_object_get(side, "chosen");
            if (!ch && json_object_set_new(side, "chosen", ch = json_object()))
                goto out;
            json_t *rea = json_object_get(side, "reasons");
            if (!rea && json_object_set_new(side, "reasons", rea = json_object()))
                goto out;
            double m = num(d, "measured_ns") * scale / R[s]->iters;
            /* a priority decision's options are other collectives' chunks, named by seqs that
             * differ between runs: counted as one option ("chunk"), never "changed" */
            const char *opt = strcmp(kind, "priority") == 0 ? "chunk" : str(d, "chosen", "?");
            if (add_count(side, "count", 1) || add_count(ch, opt, 1) ||
                add_count(rea, str(d, "reason", "?"), 1) ||
                add_real(side, "measured_ns_per_iteration", m))
                goto out;
            if (s)
                r->vb += m;
            else
                r->va += m;
        }
    }
    for (size_t i = 0; i < rs.n; i++) {
        json_t *sd[2] = {json_object_get(rs.v[i].obj, "a"), json_object_get(rs.v[i].obj, "b")};
        for (int s = 0; s < 2; s++) {
            if (!json_is_object(sd[s]))
                continue;
            json_object_set_new(sd[s], "measured_ns_per_iteration",
                                jint(num(sd[s], "measured_ns_per_iteration")));
            const char *dom = dominant(json_object_get(sd[s], "chosen"));
            json_object_set_new(sd[s], "option", dom ? json_string(dom) : json_null());
        }
        int changed =
            json_is_object(sd[0]) && json_is_object(sd[1]) &&
            !same_keys(json_object_get(sd[0], "chosen"), json_object_get(sd[1], "chosen"));
        if (json_object_set_new(rs.v[i].obj, "changed", json_boolean(changed)))
            goto out;
    }
    out = rows_take(&rs, dT);
out:
    json_decref(inside);
    rows_free(&rs);
    return out;
}

static json_t *straggler_of(const run_t *run, const char **key_p)
{
    const json_t *s = json_array_get(arr(run->r, "stragglers"), 0);
    *key_p = "";
    if (!json_is_object(s))
        return json_null();
    *key_p = comm_key(run, s);
    return json_pack("{s:s,s:I,s:I}", "comm", comm_name(run, s), "rank", (json_int_t)num(s, "rank"),
                     "lateness_per_iteration_ns",
                     (json_int_t)llround(num(s, "lateness_ns") / run->iters));
}

static json_t *section_ranks(const run_t *R[2], double dT, json_t *notes)
{
    rows_t rs = {0};
    json_t *out = NULL, *entries = NULL;
    size_t matched = 0;
    for (int s = 0; s < 2; s++) {
        const json_t *ranks = arr(R[s]->r, "ranks");
        double n = (double)R[s]->nranks;
        size_t i;
        const json_t *x;
        json_array_foreach(ranks, i, x)
        {
            char key[600];
            int rank = (int)num(x, "rank");
            snprintf(key, sizeof(key), "%s|%d", comm_key(R[s], x), rank);
            row_t *r = row_get(&rs, key);
            if (!r)
                goto out;
            if (s && json_is_object(json_object_get(r->obj, "a")))
                matched++;
            json_t *side = row_side(r, s);
            if (!side)
                goto out;
            if (!json_object_get(r->obj, "rank") &&
                (json_object_set_new(r->obj, "comm", json_string(comm_name(R[s], x))) ||
                 json_object_set_new(r->obj, "rank", json_integer(rank))))
                goto out;
            double it = num(x, "duration_ns") / R[s]->iters;
            if (json_object_set_new(side, "iteration_ns", jint(it)) ||
                json_object_set_new(side, "host", json_string(str(x, "host", ""))) ||
                json_object_set_new(side, "compute_ns", jint(num(x, "compute_ns") / R[s]->iters)) ||
                json_object_set_new(side, "exposed_communication_ns",
                                    jint(num(x, "exposed_communication_ns") / R[s]->iters)) ||
                json_object_set_new(side, "wait_ns", jint(num(x, "wait_ns") / R[s]->iters)) ||
                json_object_set_new(side, "idle_ns", jint(num(x, "idle_ns") / R[s]->iters)) ||
                json_object_set_new(side, "lateness_per_iteration_ns",
                                    jint(num(x, "lateness_ns") / R[s]->iters)))
                goto out;
            /* the rank's term of the mean over ranks */
            if (s)
                r->vb = it / n;
            else
                r->va = it / n;
        }
    }
    for (size_t i = 0; i < rs.n; i++) {
        const json_t *a = json_object_get(rs.v[i].obj, "a"), *b = json_object_get(rs.v[i].obj, "b");
        json_t *d = json_is_object(a) && json_is_object(b)
                        ? jint(num(b, "iteration_ns") - num(a, "iteration_ns"))
                        : json_null();
        if (json_object_set_new(rs.v[i].obj, "iteration_delta_ns", d))
            goto out;
    }
    if (R[0]->nranks != R[1]->nranks || matched != R[0]->nranks) {
        char m[512];
        snprintf(m, sizeof(m),
                 "rank counts differ: %s has %zu ranks, %s has %zu; %zu are matched by "
                 "(communicator, rank), a rank of one run only contributes its own term",
                 R[0]->label, R[0]->nranks, R[1]->label, R[1]->nranks, matched);
        json_array_append_new(notes, json_string(m));
    }
    entries = rows_take(&rs, dT);
    if (!entries)
        goto out;
    const char *ka, *kb;
    json_t *sa = straggler_of(R[0], &ka), *sb = straggler_of(R[1], &kb);
    int changed = json_is_null(sa) != json_is_null(sb) ||
                  (!json_is_null(sa) && (num(sa, "rank") != num(sb, "rank") || strcmp(ka, kb)));
    out = json_pack("{s:I,s:I,s:I,s:o,s:{s:o,s:o,s:b}}", "a_ranks", (json_int_t)R[0]->nranks,
                    "b_ranks", (json_int_t)R[1]->nranks, "matched", (json_int_t)matched, "entries",
                    entries, "straggler", "a", sa, "b", sb, "changed", changed);
out:
    rows_free(&rs);
    return out;
}

/* ---- the cause ----------------------------------------------------------------------------- */

static void ns_str(double ns, int sign, char *buf, size_t len)
{
    const char *sg = sign && ns >= 0 ? "+" : "";
    double a = fabs(ns);
    if (a >= 1e9)
        snprintf(buf, len, "%s%.3f s", sg, ns / 1e9);
    else if (a >= 1e6)
        snprintf(buf, len, "%s%.2f ms", sg, ns / 1e6);
    else if (a >= 1e3)
        snprintf(buf, len, "%s%.1f us", sg, ns / 1e3);
    else
        snprintf(buf, len, "%s%.0f ns", sg, ns);
}

static int big(const json_t *e)
{
    const json_t *s = json_object_get(e, "share");
    return json_is_number(s) && fabs(json_number_value(s)) >= CAUSE_MIN_SHARE;
}

static const json_t *first_where(const json_t *list, const char *flag)
{
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e)
    {
        if ((!flag || json_is_true(json_object_get(e, flag))) && big(e))
            return e;
    }
    return NULL;
}

/* The first that holds: a collective that changed algorithm, a decision that changed, a link,
 * a rank, a phase (METRICS.md, "Diff of two runs", "cause"). */
/* The cause object of kind @p kind for a collectives or decisions entry @p e: its subject is
 * "<coll> <size range>", its contribution and share are the entry's. */
static json_t *coll_cause(const char *kind, const json_t *e, const char *sentence)
{
    return json_pack("{s:s,s:s++,s:O,s:O,s:s}", "kind", kind, "subject", str(e, "coll", "?"), " ",
                     str(e, "bucket", "?"), "contribution_ns",
                     json_object_get(e, "contribution_ns"), "share", json_object_get(e, "share"),
                     "sentence", sentence);
}

static json_t *cause(const json_t *d, double dT)
{
    char c[48], sent[1024];
    const json_t *e;
    if (dT == 0)
        return json_pack("{s:s,s:n,s:I,s:n,s:s}", "kind", "none", "subject", "contribution_ns",
                         (json_int_t)0, "share", "sentence",
                         "The mean iteration time did not change.");
    if ((e = first_where(json_object_get(d, "collectives"), "algorithm_changed"))) {
        ns_str(num(e, "contribution_ns"), 1, c, sizeof(c));
        snprintf(sent, sizeof(sent),
                 "%s %s (communicator %s) changed algorithm %s -> %s: %s per iteration (%.0f%% of "
                 "the difference).",
                 str(e, "coll", "?"), str(e, "bucket", "?"), str(e, "comm", ""),
                 str(json_object_get(e, "a"), "algorithm", "?"),
                 str(json_object_get(e, "b"), "algorithm", "?"), c, 100 * num(e, "share"));
        return coll_cause("collective", e, sent);
    }
    if ((e = first_where(json_object_get(d, "collectives"), NULL)) &&
        strcmp(str(e, "present", "both"), "both") != 0) {
        ns_str(num(e, "contribution_ns"), 1, c, sizeof(c));
        int only_a = strcmp(str(e, "present", ""), "a") == 0;
        snprintf(sent, sizeof(sent),
                 "The workloads differ: %s %s (communicator %s) runs only in %s: %s per "
                 "iteration (%.0f%% of the difference).",
                 str(e, "coll", "?"), str(e, "bucket", "?"), str(e, "comm", ""), only_a ? "A" : "B",
                 c, 100 * num(e, "share"));
        return coll_cause("workload", e, sent);
    }
    if ((e = first_where(json_object_get(d, "decisions"), "changed"))) {
        ns_str(num(e, "contribution_ns"), 1, c, sizeof(c));
        snprintf(sent, sizeof(sent),
                 "The %s decision for %s %s changed %s -> %s: its collectives take %s per "
                 "iteration (%.0f%% of the difference).",
                 str(e, "kind", "?"), str(e, "coll", "?"), str(e, "bucket", "?"),
                 str(json_object_get(e, "a"), "option", "?"),
                 str(json_object_get(e, "b"), "option", "?"), c, 100 * num(e, "share"));
        return coll_cause("decision", e, sent);
    }
    if ((e = first_where(json_object_get(json_object_get(d, "links"), "entries"), NULL))) {
        ns_str(num(e, "contribution_ns"), 1, c, sizeof(c));
        const json_t *a = json_object_get(e, "a"), *b = json_object_get(e, "b");
        char ofs[128] = "";
        if (json_is_number(json_object_get(a, "of_nominal")) &&
            json_is_number(json_object_get(b, "of_nominal")))
            snprintf(ofs, sizeof(ofs),
                     ", at %.0f%% of its nominal bandwidth in B against %.0f%% in A",
                     100 * num(b, "of_nominal"), 100 * num(a, "of_nominal"));
        ns_str(fabs(num(e, "contribution_ns")), 0, c, sizeof(c));
        snprintf(sent, sizeof(sent), "%s is busy %s %s per iteration (%.0f%% of the difference)%s.",
                 str(e, "label", "?"), c, num(e, "contribution_ns") >= 0 ? "longer" : "shorter",
                 100 * num(e, "share"), ofs);
        return json_pack("{s:s,s:s,s:O,s:O,s:s}", "kind", "link", "subject", str(e, "label", "?"),
                         "contribution_ns", json_object_get(e, "contribution_ns"), "share",
                         json_object_get(e, "share"), "sentence", sent);
    }
    if ((e = first_where(json_object_get(json_object_get(d, "ranks"), "entries"), NULL))) {
        ns_str(num(e, "contribution_ns"), 1, c, sizeof(c));
        snprintf(
            sent, sizeof(sent),
            "Rank %d (communicator %s) contributes %s per iteration (%.0f%% of the difference).",
            (int)num(e, "rank"), str(e, "comm", ""), c, 100 * num(e, "share"));
        char subj[64];
        snprintf(subj, sizeof(subj), "rank %d", (int)num(e, "rank"));
        return json_pack("{s:s,s:s,s:O,s:O,s:s}", "kind", "rank", "subject", subj,
                         "contribution_ns", json_object_get(e, "contribution_ns"), "share",
                         json_object_get(e, "share"), "sentence", sent);
    }
    e = json_array_get(json_object_get(d, "phases"), 0);
    if (e) {
        ns_str(num(e, "contribution_ns"), 1, c, sizeof(c));
        snprintf(sent, sizeof(sent), "Phase %s: %s per iteration (%.0f%% of the difference).",
                 str(e, "phase", "?"), c, 100 * num(e, "share"));
        return json_pack("{s:s,s:s,s:O,s:O,s:s}", "kind", "phase", "subject", str(e, "phase", "?"),
                         "contribution_ns", json_object_get(e, "contribution_ns"), "share",
                         json_object_get(e, "share"), "sentence", sent);
    }
    return json_pack("{s:s,s:n,s:I,s:n,s:s}", "kind", "none", "subject", "contribution_ns",
                     (json_int_t)0, "share", "sentence", "No section of the reports explains it.");
}

/* ---- the diff ------------------------------------------------------------------------------ */

static json_t *run_info(const run_t *run)
{
    double med = median_iteration(run);
    const json_t *sum = json_object_get(run->r, "summary");
    const json_t *tr = json_object_get(run->r, "trace");
    return json_pack(
        "{s:s,s:I,s:s,s:I,s:o,s:I,s:I,s:b,s:O*}", "label", run->label, "iterations",
        (json_int_t)num(sum, "iterations"), "iteration_source", str(sum, "iteration_source", "?"),
        "mean_iteration_ns", (json_int_t)llround(run->T), "median_iteration_ns",
        med >= 0 ? jint(med) : json_null(), "ranks", (json_int_t)run->nranks, "comms",
        (json_int_t)run->ncomms, "partial", json_is_true(json_object_get(tr, "partial")), "verdict",
        json_object_get(json_object_get(run->r, "verdict"), "sentence"));
}

json_t *glucx_an_diff_compute(const json_t *a, const json_t *b, const char *label_a,
                              const char *label_b, char *err, size_t errlen)
{
    if (check_report(a, label_a, err, errlen) != 0 || check_report(b, label_b, err, errlen) != 0)
        return NULL;
    run_t ra, rb;
    json_t *d = NULL, *notes = json_array();
    int ok_a = run_init(&ra, a, label_a), ok_b = run_init(&rb, b, label_b);
    if (ok_a != 0 || ok_b != 0 || !notes)
        goto fail;
    /* single communicators are matched whatever their names */
    if (ra.ncomms == 1 && rb.ncomms == 1) {
        const char *k;
        json_t *v;
        json_object_foreach(ra.keys, k, v) json_string_set(v, "#0");
        json_object_foreach(rb.keys, k, v) json_string_set(v, "#0");
    }
    const run_t *R[2] = {&ra, &rb};
    double dT = rb.T - ra.T;
    for (int s = 0; s < 2; s++) {
        if (json_is_true(json_object_get(json_object_get(R[s]->r, "trace"), "partial"))) {
            char m[512];
            snprintf(m, sizeof(m), "%s is a partial report (trace.partial_reasons)", R[s]->label);
            json_array_append_new(notes, json_string(m));
        }
        if (num(json_object_get(R[s]->r, "summary"), "iterations") < 1) {
            char m[512];
            snprintf(m, sizeof(m), "%s has no iterations: its per-iteration values are totals",
                     R[s]->label);
            json_array_append_new(notes, json_string(m));
        }
    }
    double ma = median_iteration(&ra), mb = median_iteration(&rb);
    d = json_pack("{s:i,s:o,s:o,s:{s:s,s:I,s:I,s:I,s:o,s:o,s:o,s:o}}", "diff_version",
                  GLUCX_AN_DIFF_VERSION, "a", run_info(&ra), "b", run_info(&rb), "iteration",
                  "statistic", "mean", "a_ns", (json_int_t)llround(ra.T), "b_ns",
                  (json_int_t)llround(rb.T), "delta_ns", (json_int_t)llround(dT), "delta_share",
                  ra.T > 0 ? json_real(dT / ra.T) : json_null(), "median_a_ns",
                  ma >= 0 ? jint(ma) : json_null(), "median_b_ns", mb >= 0 ? jint(mb) : json_null(),
                  "median_delta_ns", ma >= 0 && mb >= 0 ? jint(mb - ma) : json_null());
    if (!d)
        goto fail;
    const char *link_kind = "physical";
    /* collectives inside iterations when both runs' lists allow it (by_iteration()) */
    const int iter_only = by_iteration(&ra) && by_iteration(&rb);
    if (json_object_set_new(d, "collectives_counted",
                            json_string(iter_only ? "in_iterations" : "all")))
        goto fail;
    json_t *ph = section_phases(&ra, &rb, dT, notes);
    json_t *co = section_collectives(R, iter_only, dT, notes);
    json_t *li = section_links(R, dT, notes, &link_kind);
    json_t *de = section_decisions(R, iter_only, dT, notes);
    json_t *rk = section_ranks(R, dT, notes);
    if (!ph || !co || !li || !de || !rk) {
        json_decref(ph);
        json_decref(co);
        json_decref(li);
        json_decref(de);
        json_decref(rk);
        goto fail;
    }
    /* json_object_set_new() takes the reference also when it fails */
    if (json_object_set_new(d, "phases", ph) || json_object_set_new(d, "collectives", co) ||
        json_object_set_new(d, "links", json_pack("{s:s,s:o}", "kind", link_kind, "entries", li)) ||
        json_object_set_new(d, "decisions", de) || json_object_set_new(d, "ranks", rk))
        goto fail;
    json_t *cz = cause(d, dT);
    if (!cz || json_object_set_new(d, "cause", cz) || json_object_set(d, "notes", notes))
        goto fail;
    json_decref(notes);
    run_fini(&ra);
    run_fini(&rb);
    return d;
fail:
    set_err(err, errlen, "cannot diff %s and %s: out of memory", label_a, label_b);
    json_decref(d);
    json_decref(notes);
    run_fini(&ra);
    run_fini(&rb);
    return NULL;
}

/* ---- output -------------------------------------------------------------------------------- */

static void pct_str(const json_t *share, char *buf, size_t len)
{
    if (json_is_number(share))
        snprintf(buf, len, "%+.1f%%", 100 * json_number_value(share));
    else
        snprintf(buf, len, "-");
}

/* One row's "a -> b" of @p field (ns) of its sides ("-" for an absent side). */
static void ab_str(const json_t *e, const char *field, char *buf, size_t len)
{
    char x[48] = "-", y[48] = "-";
    const json_t *a = json_object_get(e, "a"), *b = json_object_get(e, "b");
    if (json_is_object(a))
        ns_str(num(a, field), 0, x, sizeof(x));
    if (json_is_object(b))
        ns_str(num(b, field), 0, y, sizeof(y));
    snprintf(buf, len, "%s -> %s", x, y);
}

static size_t shown(const json_t *list, size_t max_rows)
{
    size_t n = json_array_size(list);
    return max_rows && n > max_rows ? max_rows : n;
}

int glucx_an_diff_write_text(const json_t *d, FILE *f, size_t max_rows)
{
    const json_t *it = json_object_get(d, "iteration");
    const json_t *ia = json_object_get(d, "a"), *ib = json_object_get(d, "b");
    char x[48], y[48], z[48], p[32], ab[128], delta[48];
    ns_str(num(it, "a_ns"), 0, x, sizeof(x));
    ns_str(num(it, "b_ns"), 0, y, sizeof(y));
    ns_str(num(it, "delta_ns"), 1, z, sizeof(z));
    snprintf(delta, sizeof(delta), "%s", z);
    pct_str(json_object_get(it, "delta_share"), p, sizeof(p));
    fprintf(f, "glucx-analyze diff: B minus A, per iteration (mean over iterations)\n");
    fprintf(f, "  A: %s (%" JSON_INTEGER_FORMAT " iterations, %" JSON_INTEGER_FORMAT " ranks)\n",
            str(ia, "label", "?"), (json_int_t)num(ia, "iterations"), (json_int_t)num(ia, "ranks"));
    fprintf(f, "  B: %s (%" JSON_INTEGER_FORMAT " iterations, %" JSON_INTEGER_FORMAT " ranks)\n",
            str(ib, "label", "?"), (json_int_t)num(ib, "iterations"), (json_int_t)num(ib, "ranks"));
    fprintf(f, "Mean iteration: %s -> %s, %s (%s of A)\n", x, y, z, p);
    if (json_is_number(json_object_get(it, "median_delta_ns"))) {
        ns_str(num(it, "median_a_ns"), 0, x, sizeof(x));
        ns_str(num(it, "median_b_ns"), 0, y, sizeof(y));
        ns_str(num(it, "median_delta_ns"), 1, z, sizeof(z));
        fprintf(f, "Median iteration (for reference): %s -> %s, %s\n", x, y, z);
    }
    fprintf(f, "\nCause: %s\n", str(json_object_get(d, "cause"), "sentence", "?"));
    size_t i;
    const json_t *e;
    const json_t *notes = json_object_get(d, "notes");
    if (json_array_size(notes) > 0) {
        fprintf(f, "\nNotes:\n");
        json_array_foreach(notes, i, e) fprintf(f, "  - %s\n", json_string_value(e));
    }
    fprintf(f,
            "\nContributions in ns per iteration and %% of the difference (%s), largest first.\n",
            delta);

    fprintf(f, "\nPhases (they add up to the difference):\n");
    json_array_foreach(json_object_get(d, "phases"), i, e)
    {
        ns_str(num(e, "contribution_ns"), 1, z, sizeof(z));
        pct_str(json_object_get(e, "share"), p, sizeof(p));
        ab_str(e, "ns", ab, sizeof(ab));
        fprintf(f, "  %-24s %12s %8s   %s\n", str(e, "phase", "?"), z, p, ab);
    }

    const json_t *list = json_object_get(d, "collectives");
    fprintf(f, "\nCollectives (time per iteration; they overlap compute and each other):\n");
    for (i = 0; i < shown(list, max_rows); i++) {
        e = json_array_get(list, i);
        const json_t *a = json_object_get(e, "a"), *b = json_object_get(e, "b");
        ns_str(num(e, "contribution_ns"), 1, z, sizeof(z));
        pct_str(json_object_get(e, "share"), p, sizeof(p));
        ab_str(e, "time_per_iteration_ns", ab, sizeof(ab));
        char alg[160] = "";
        if (json_is_true(json_object_get(e, "algorithm_changed")))
            snprintf(alg, sizeof(alg), "  ALGORITHM %s -> %s", str(a, "algorithm", "?"),
                     str(b, "algorithm", "?"));
        else
            snprintf(alg, sizeof(alg), "  %s", str(json_is_object(a) ? a : b, "algorithm", "?"));
        fprintf(f, "  %-14s %-18s %12s %8s   %s, calls %.1f -> %.1f%s%s\n", str(e, "coll", "?"),
                str(e, "bucket", "?"), z, p, ab, num(a, "calls_per_iteration"),
                num(b, "calls_per_iteration"), alg,
                strcmp(str(e, "present", "both"), "both")
                    ? (strcmp(str(e, "present", ""), "a") ? "  (only in B)" : "  (only in A)")
                    : "");
    }

    const json_t *links = json_object_get(d, "links");
    list = json_object_get(links, "entries");
    fprintf(f, "\n%s links (busy time per iteration):\n",
            strcmp(str(links, "kind", ""), "physical") ? "Rank-pair" : "Physical");
    for (i = 0; i < shown(list, max_rows); i++) {
        e = json_array_get(list, i);
        const json_t *a = json_object_get(e, "a"), *b = json_object_get(e, "b");
        ns_str(num(e, "contribution_ns"), 1, z, sizeof(z));
        pct_str(json_object_get(e, "share"), p, sizeof(p));
        ab_str(e, "busy_ns_per_iteration", ab, sizeof(ab));
        fprintf(f, "  %-48s %12s %8s   busy %s, bytes %+" JSON_INTEGER_FORMAT, str(e, "label", "?"),
                z, p, ab, (json_int_t)num(e, "bytes_delta_per_iteration"));
        if (json_is_number(json_object_get(a, "of_nominal")) &&
            json_is_number(json_object_get(b, "of_nominal")))
            fprintf(f, ", of nominal %.0f%% -> %.0f%%", 100 * num(a, "of_nominal"),
                    100 * num(b, "of_nominal"));
        fprintf(f, "\n");
    }

    list = json_object_get(d, "decisions");
    fprintf(f, "\nDecisions (their collectives' measured time per iteration):\n");
    int any = 0;
    for (i = 0; i < shown(list, max_rows); i++) {
        e = json_array_get(list, i);
        const json_t *a = json_object_get(e, "a"), *b = json_object_get(e, "b");
        ns_str(num(e, "contribution_ns"), 1, z, sizeof(z));
        pct_str(json_object_get(e, "share"), p, sizeof(p));
        fprintf(f, "  %-10s %-14s %-18s %12s %8s   %s%s -> %s\n", str(e, "kind", "?"),
                str(e, "coll", "?"), str(e, "bucket", "?"), z, p,
                json_is_true(json_object_get(e, "changed")) ? "CHANGED " : "",
                str(a, "option", "-"), str(b, "option", "-"));
        any = 1;
    }
    if (!any)
        fprintf(f, "  (none)\n");

    const json_t *rk = json_object_get(d, "ranks");
    list = json_object_get(rk, "entries");
    fprintf(f,
            "\nRanks (each rank's term of the mean over ranks; %" JSON_INTEGER_FORMAT
            " of %" JSON_INTEGER_FORMAT " / %" JSON_INTEGER_FORMAT " matched):\n",
            (json_int_t)num(rk, "matched"), (json_int_t)num(rk, "a_ranks"),
            (json_int_t)num(rk, "b_ranks"));
    for (i = 0; i < shown(list, max_rows); i++) {
        e = json_array_get(list, i);
        ns_str(num(e, "contribution_ns"), 1, z, sizeof(z));
        pct_str(json_object_get(e, "share"), p, sizeof(p));
        ab_str(e, "iteration_ns", ab, sizeof(ab));
        fprintf(f, "  rank %-4d %-16s %12s %8s   its iteration %s\n", (int)num(e, "rank"),
                str(e, "comm", ""), z, p, ab);
    }
    const json_t *st = json_object_get(rk, "straggler");
    const json_t *sa = json_object_get(st, "a"), *sb = json_object_get(st, "b");
    if (json_is_object(sa))
        ns_str(num(sa, "lateness_per_iteration_ns"), 0, x, sizeof(x));
    if (json_is_object(sb))
        ns_str(num(sb, "lateness_per_iteration_ns"), 0, y, sizeof(y));
    char wa[96] = "none", wb[96] = "none";
    if (json_is_object(sa))
        snprintf(wa, sizeof(wa), "rank %d (late %s per iteration)", (int)num(sa, "rank"), x);
    if (json_is_object(sb))
        snprintf(wb, sizeof(wb), "rank %d (late %s per iteration)", (int)num(sb, "rank"), y);
    fprintf(f, "Top straggler: A %s, B %s%s\n", wa, wb,
            json_is_true(json_object_get(st, "changed")) ? " (changed)" : "");
    return ferror(f) ? -1 : 0;
}

/* Write @p dir/@p name through a temporary file renamed when complete. */
static int write_one(const json_t *d, const char *dir, const char *name, int text, size_t max_rows,
                     char *err, size_t errlen)
{
    char tmp[4096], fin[4096];
    snprintf(fin, sizeof(fin), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        set_err(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    /* mkstemp makes it 0600; the outputs are as readable as report.json (0666 less umask) */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        set_err(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    int rc = text ? glucx_an_diff_write_text(d, f, max_rows)
                  : json_dumpf(d, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    if (!text && rc == 0 && fputc('\n', f) == EOF)
        rc = -1;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        set_err(err, errlen, "cannot write %s: %s", fin, strerror(saved ? saved : EIO));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, fin) != 0) {
        set_err(err, errlen, "cannot rename %s to %s: %s", tmp, fin, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int glucx_an_diff_write(const json_t *diff, const char *dir, size_t max_rows, char *err,
                        size_t errlen)
{
    if (glucx_an_mkdir_p(dir) != 0) {
        set_err(err, errlen, "cannot create output directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (write_one(diff, dir, "diff.json", 0, 0, err, errlen) != 0 ||
        write_one(diff, dir, "diff.txt", 1, max_rows, err, errlen) != 0)
        return -1;
    return 0;
}
