/*
 * glucx-analyze TRACE... -o DIR: builds source.ctf.fs -> filter.utils.muxer -> sink.glucx.report
 * with libbabeltrace2 (the sink's class is created in-process from the same code as the plugin's)
 * and writes report.txt, report.json, report.html and timeline.json into DIR.
 *
 * Concurrent jobs: LTTng records every traced process of the user in each session, so a trace
 * may hold the events of another job traced at the same time. glucx-trace record lists its
 * command's processes in DIR/glucx-pids; for every trace directory with such a file (the nearest
 * one in the directory or its parents, up to PIDS_MAX_UP levels), events of processes it does not
 * list are left out (the sink filters them, the report counts them). Traces without it: all kept.
 *
 * Trace format versions (trace/EVENTS.md, "Format version"): the sink reads the current version,
 * reads a trace without a version with a warning in the report, and refuses any other version
 * (no report; the message names the trace and both versions).
 *
 * Several TRACE arguments are one host each (a TRACE whose traces name several hostnames, one
 * host per name: assign_hosts()): the traces are read twice, first to pair sends and
 * receives and estimate each host's clock offset and drift against the first TRACE's host
 * (core/clocksync.h), then to analyse every event at its corrected time (the engine merges the
 * hosts in corrected order and a controlled logical clock removes the violations left);
 * --no-clock-sync reads them once, on their own clocks (METRICS.md, "Clocks across hosts").
 *
 * Outputs are written into a staging directory DIR/.glucx-analyze-XXXXXX and renamed into DIR
 * only when all of them are complete (see publish()): on a full disk the run fails naming the
 * output file and the errno text, and nothing partial appears under a final name.
 *
 * glucx-analyze diff A B -o OUT (diff_main()): two runs compared by core/diff.c; A and B are
 * reports, or traces analysed first by analyze_main() into OUT/report-a and OUT/report-b; it
 * writes diff.txt, diff.json and diff.html (the dashboard template filled with diff.json).
 *
 * glucx-analyze export REPORT -o DIR (export_main()): ASTRA-sim network and system input files
 * (export_astra.c).
 *
 * glucx-analyze whatif TRACE_OR_REPORT --topology FILE ... (whatif_main()): the run replayed at
 * the collective level with libglucx's costs on another setup (core/whatif.c, whatif_tool.c); a
 * trace is analysed first by analyze_main() with the event dump, into OUT/report.
 *
 * Exit status: 0 report written (complete or partial: see report.json trace.partial),
 * 1 the analysis failed or its outputs could not be written (no report), 2 usage error, no
 * readable trace, or a trace format version this glucx-analyze does not read (no report).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <babeltrace2/babeltrace.h>

#include "core/diff.h"
#include "core/engine.h"
#include "export_astra.h"
#include "report/sink.h"
#include "whatif_tool.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: glucx-analyze TRACE... -o DIR [--template PATH] [--no-timeline] [--no-html]\n"
            "                     [--no-progress] [--list-limit N] [--dump-events FILE]\n"
            "                     [--no-clock-sync] [--min-latency NS]\n"
            "  TRACE   a trace directory written by glucx-trace record (or any CTF trace with\n"
            "          glucx events); several hosts' traces are merged (one TRACE per host, or a\n"
            "          TRACE holding traces of several hostnames, as glucx-cluster run --trace\n"
            "          OUT writes), with each host's clock offset and drift against the first\n"
            "          host estimated from their messages and corrected (report.json \"clock\")\n"
            "  --no-clock-sync  merge several TRACEs without clock correction\n"
            "  --min-latency NS a lower bound on every message's one-way latency for the clock\n"
            "          estimate (default 0: causality only)\n"
            "  -o DIR  output directory: report.txt, report.json, report.html, timeline.json\n"
            "  --list-limit N  list at most N iterations, collectives and decisions each in\n"
            "          report.json (default 10000; 0: all); every one counts in the totals\n"
            "  --dump-events FILE  also write every glucx event as the analysis read it to FILE,\n"
            "          one JSON object per line: event, ts (ns, the trace's own clock, before\n"
            "          any clock correction), vpid, vtid (-1: none), then\n"
            "          its EVENTS.md fields in order (hex fields as \"0x...\" strings; fields the\n"
            "          analysis does not keep, such as select_map's ranges, left out)\n"
            "\n"
            "usage: glucx-analyze diff A B -o OUT [--rows N] [--template PATH] [--no-html]\n"
            "  A, B    each a report (report.json, or the directory glucx-analyze -o wrote) or a\n"
            "          trace (analysed first, as above, into OUT/report-a or OUT/report-b)\n"
            "  -o OUT  output directory: diff.txt, diff.json and diff.html, the change of the\n"
            "          mean iteration time from A to B decomposed into phases, collectives,\n"
            "          links, decisions and ranks, largest contribution first\n"
            "  --rows N  rows per section in diff.txt (default 10; 0: all); diff.json has all\n"
            "  --template PATH  the dashboard template for diff.html (the same as report.html's)\n"
            "  --no-html  no diff.html\n"
            "\n"
            "usage: glucx-analyze export REPORT -o DIR [--topology FILE] [--calibration FILE]\n"
            "  REPORT  a report.json written by glucx-analyze (or its directory); writes DIR/\n"
            "          network.yml and DIR/system.json (ASTRA-sim's network and system input:\n"
            "          the topology and, per collective, the implementation of the algorithm\n"
            "          that took the most time in the run) and DIR/export.json (how each maps)\n"
            "  --topology FILE  the run's topology file (default GLUCX_TOPOLOGY)\n"
            "  --calibration FILE  its glucx-bench --calibrate file (default GLUCX_CALIBRATION)\n"
            "\n"
            "usage: glucx-analyze whatif TRACE_OR_REPORT --topology FILE [--ranks N] [--tune S]\n"
            "                            [--link-rate LINK=RATE]... [-o OUT] (whatif --help)\n"
            "  the run replayed with libglucx's costs on another topology, link rate, algorithm\n"
            "  or rank count: predicted iteration time, exposed communication, the bottleneck\n"
            "Definitions of every number: analysis/METRICS.md (installed with the docs).\n");
}

/* glucx-analyze export REPORT -o DIR [--topology FILE] [--calibration FILE] */
static int export_main(int argc, char **argv)
{
    const char *report = NULL, *out = NULL;
    const char *topology = getenv("GLUCX_TOPOLOGY"), *calibration = getenv("GLUCX_CALIBRATION");
    for (int i = 2; i < argc; i++) {
        const char *opt = argv[i];
        int has_value = i + 1 < argc;
        if ((strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0) && has_value)
            out = argv[++i];
        else if (strcmp(opt, "--topology") == 0 && has_value)
            topology = argv[++i];
        else if (strcmp(opt, "--calibration") == 0 && has_value)
            calibration = argv[++i];
        else if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (opt[0] != '-' && report == NULL)
            report = opt;
        else {
            fprintf(stderr, "glucx-analyze export: unexpected argument '%s'%s\n", opt,
                    opt[0] == '-' && !has_value ? " (missing its value?)" : "");
            usage(stderr);
            return 2;
        }
    }
    if (report == NULL || out == NULL || topology == NULL || topology[0] == '\0') {
        fprintf(stderr, "glucx-analyze export: needs REPORT, -o DIR and --topology FILE (or "
                        "GLUCX_TOPOLOGY)\n");
        usage(stderr);
        return 2;
    }
    if (calibration != NULL && calibration[0] == '\0')
        calibration = NULL;
    char path[4096];
    struct stat st;
    if (stat(report, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(path, sizeof(path), "%s/report.json", report);
    else
        snprintf(path, sizeof(path), "%s", report);
    char why[1024] = "";
    if (glucx_an_export_astra(path, topology, calibration, out, why, sizeof(why)) != 0) {
        fprintf(stderr, "glucx-analyze %s\n", why);
        return 1;
    }
    printf("glucx-analyze export: %s/network.yml, %s/system.json, %s/export.json\n", out, out, out);
    return 0;
}

/* Every directory under DIR (depth-limited) that holds a CTF metadata file: source.ctf.fs
 * opens trace directories, not their parents (the babeltrace2 CLI does the same walk). */
typedef struct dirlist {
    char **v;
    size_t n, cap;
} dirlist_t;

static int collect_traces(const char *dir, int depth, dirlist_t *out)
{
    if (depth > 8)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            found += collect_traces(p, depth + 1, out);
        } else if (strcmp(e->d_name, "metadata") == 0) {
            if (out->n == out->cap) {
                size_t nc = out->cap ? out->cap * 2 : 8;
                char **nv = realloc(out->v, nc * sizeof(char *));
                if (!nv)
                    continue;
                out->v = nv;
                out->cap = nc;
            }
            out->v[out->n] = strdup(dir);
            if (out->v[out->n])
                out->n++;
            found++;
        }
    }
    closedir(d);
    return found;
}

/* ---- process lists (glucx-pids) ------------------------------------------------------------- */

#define PIDS_FILE "glucx-pids"
/* a metadata directory is DIR/ust/uid/<uid>/64-bit, DIR/archives/<chunk>/ust/uid/<uid>/64-bit or
 * DIR/snapshot-N-<date>/ust/uid/<uid>/64-bit: DIR is at most 6 levels up */
#define PIDS_MAX_UP 6

typedef struct pidfile {
    char *path;
    glucx_an_pidset_t set;
    int ok; /* read: its set filters; 0: unreadable (warned), no filter */
} pidfile_t;

typedef struct pidfiles {
    pidfile_t *v;
    size_t n;
} pidfiles_t;

/* The nearest DIR/glucx-pids above the trace directory @p trace (into @p out); 0 if found. */
static int find_pid_file(const char *trace, char *out, size_t len)
{
    char dir[PATH_MAX];
    if (!realpath(trace, dir))
        return -1;
    for (int up = 0; up <= PIDS_MAX_UP; up++) {
        struct stat st;
        if (snprintf(out, len, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, PIDS_FILE) < (int)len &&
            stat(out, &st) == 0 && S_ISREG(st.st_mode))
            return 0;
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            break;
        *slash = 0;
    }
    return -1;
}

/* The process list of every trace directory (NULL: none, keep all); files are read once each
 * and reported to the engine (trace.pid_files), problems as warnings. */
static int load_pid_files(const dirlist_t *traces, glucx_an_engine_t *eng, pidfiles_t *files,
                          const glucx_an_pidset_t ***sets_p)
{
    const glucx_an_pidset_t **sets = calloc(traces->n ? traces->n : 1, sizeof(*sets));
    size_t *file_of = malloc((traces->n ? traces->n : 1) * sizeof(size_t)); /* SIZE_MAX: none */
    *sets_p = sets;
    if (!sets || !file_of) {
        free(file_of);
        return -1;
    }
    for (size_t i = 0; i < traces->n; i++) {
        file_of[i] = SIZE_MAX;
        char path[PATH_MAX + 32];
        if (find_pid_file(traces->v[i], path, sizeof(path)) != 0)
            continue;
        size_t k = 0;
        while (k < files->n && strcmp(files->v[k].path, path) != 0)
            k++;
        if (k == files->n) {
            pidfile_t *nv = realloc(files->v, (files->n + 1) * sizeof(pidfile_t));
            if (!nv) {
                free(file_of);
                return -1;
            }
            files->v = nv;
            pidfile_t *pf = &files->v[files->n++];
            memset(pf, 0, sizeof(*pf));
            pf->path = strdup(path);
            if (!pf->path) {
                free(file_of);
                return -1;
            }
            char why[PATH_MAX + 128];
            uint64_t bad = 0;
            if (glucx_an_pidset_read(path, &pf->set, &bad, why, sizeof(why)) != 0) {
                fprintf(stderr, "glucx-analyze: warning: %s: every process of %s is kept\n", why,
                        traces->v[i]);
                glucx_an_engine_warn(eng,
                                     "%s: the events of every process were kept (another "
                                     "job traced at the same time would be mixed in)",
                                     why);
            } else {
                pf->ok = 1;
                glucx_an_engine_pid_file(eng, path);
                if (bad)
                    glucx_an_engine_warn(eng, "%s: %" PRIu64 " lines that are not a pid ignored",
                                         path, bad);
            }
        }
        file_of[i] = k;
    }
    /* pointers into files->v only now that it no longer moves */
    for (size_t i = 0; i < traces->n; i++)
        if (file_of[i] != SIZE_MAX && files->v[file_of[i]].ok)
            sets[i] = &files->v[file_of[i]].set;
    free(file_of);
    return 0;
}

static void free_pid_files(pidfiles_t *files)
{
    for (size_t i = 0; i < files->n; i++) {
        free(files->v[i].path);
        free(files->v[i].set.pids);
    }
    free(files->v);
}

/* The current error's causes, root cause first, on one line (for messages and the report). The
 * causes that components (source.ctf.fs...) give say what is wrong with the trace; those of the
 * library itself only restate that a call failed, with its internal addresses: they are left out
 * when a component gave a cause. */
static void take_error_text(char *buf, size_t len)
{
    const bt_error *err = bt_current_thread_take_error();
    snprintf(buf, len, "unknown error");
    if (!err)
        return;
    uint64_t n = bt_error_get_cause_count(err), shown = 0;
    int from_components = 0;
    for (uint64_t i = 0; i < n; i++)
        from_components |= bt_error_cause_get_actor_type(bt_error_borrow_cause_by_index(err, i)) !=
                           BT_ERROR_CAUSE_ACTOR_TYPE_UNKNOWN;
    size_t used = 0;
    for (uint64_t i = 0; i < n && shown < 3 && used + 1 < len; i++) {
        const bt_error_cause *c = bt_error_borrow_cause_by_index(err, i);
        if (from_components &&
            bt_error_cause_get_actor_type(c) == BT_ERROR_CAUSE_ACTOR_TYPE_UNKNOWN)
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", shown++ ? " <- " : "",
                         bt_error_cause_get_message(c));
        if (w < 0)
            break;
        used += (size_t)w;
    }
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = ' ';
    bt_error_release(err);
}

static const bt_plugin *find_plugin(const char *name)
{
    const bt_plugin *p = NULL;
    if (bt_plugin_find(name, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, &p) !=
        BT_PLUGIN_FIND_STATUS_OK)
        return NULL;
    return p;
}

/* The traces' time range from source.ctf.fs's babeltrace.trace-infos query (progress bar). */
static void query_range(const bt_component_class *src, const bt_value *params, int64_t *b,
                        int64_t *e)
{
    bt_query_executor *q = bt_query_executor_create(src, "babeltrace.trace-infos", params);
    const bt_value *res = NULL;
    *b = INT64_MAX;
    *e = INT64_MIN;
    if (!q || bt_query_executor_query(q, &res) != BT_QUERY_EXECUTOR_QUERY_STATUS_OK) {
        bt_current_thread_clear_error();
        bt_query_executor_put_ref(q);
        return;
    }
    for (uint64_t i = 0; i < bt_value_array_get_length(res); i++) {
        const bt_value *ti = bt_value_array_borrow_element_by_index_const(res, i);
        const bt_value *sis = bt_value_map_borrow_entry_value_const(ti, "stream-infos");
        for (uint64_t j = 0; sis && j < bt_value_array_get_length(sis); j++) {
            const bt_value *r = bt_value_map_borrow_entry_value_const(
                bt_value_array_borrow_element_by_index_const(sis, j), "range-ns");
            const bt_value *rb = r ? bt_value_map_borrow_entry_value_const(r, "begin") : NULL;
            const bt_value *re = r ? bt_value_map_borrow_entry_value_const(r, "end") : NULL;
            if (rb && re && bt_value_is_signed_integer(rb) && bt_value_is_signed_integer(re)) {
                if (bt_value_integer_signed_get(rb) < *b)
                    *b = bt_value_integer_signed_get(rb);
                if (bt_value_integer_signed_get(re) > *e)
                    *e = bt_value_integer_signed_get(re);
            }
        }
    }
    bt_value_put_ref(res);
    bt_query_executor_put_ref(q);
}

enum { GRAPH_OK, GRAPH_INIT_FAILED, GRAPH_SETUP_FAILED, GRAPH_RUN_FAILED };

/* Build source.ctf.fs -> filter.utils.muxer -> sink.glucx.report over @p traces and run it. */
static int run_graph(const dirlist_t *traces, glucx_an_sink_ctl_t *ctl, char *why, size_t len)
{
    int rc = GRAPH_SETUP_FAILED;
    bt_graph *g = NULL;
    bt_value *params = NULL;
    bt_component_class_sink *sink_cls = NULL;
    const bt_plugin *ctf_plugin = find_plugin("ctf"), *utils_plugin = find_plugin("utils");
    const bt_component_class_source *src_cls =
        ctf_plugin ? bt_plugin_borrow_source_component_class_by_name_const(ctf_plugin, "fs") : NULL;
    const bt_component_class_filter *mux_cls =
        utils_plugin ? bt_plugin_borrow_filter_component_class_by_name_const(utils_plugin, "muxer")
                     : NULL;
    const bt_component_source **srcs = NULL;
    const bt_component_filter *mux = NULL;
    const bt_component_sink *snk = NULL;
    snprintf(why, len, "cannot build the analysis graph (out of memory?)");
    ctl->left_out_events = ctl->left_out_processes = 0; /* counted again by a second run */
    if (!src_cls || !mux_cls) {
        snprintf(why, len,
                 "cannot find the Babeltrace 2 plugins ctf (source.ctf.fs) and utils "
                 "(filter.utils.muxer): is babeltrace2 installed with its plugins?");
        goto out;
    }
    sink_cls = bt_component_class_sink_create("report", glucx_an_sink_consume);
    if (!sink_cls || bt_component_class_sink_set_initialize_method(sink_cls, glucx_an_sink_init) ||
        bt_component_class_sink_set_finalize_method(sink_cls, glucx_an_sink_finalize) ||
        bt_component_class_sink_set_graph_is_configured_method(sink_cls,
                                                               glucx_an_sink_graph_is_configured))
        goto out;
    g = bt_graph_create(0);
    if (!g)
        goto out;
    /* one source per trace directory: per-host traces have their own UUIDs, and one
     * source.ctf.fs only merges directories of the same trace */
    srcs = calloc(traces->n + 1, sizeof(*srcs));
    if (!srcs)
        goto out;
    if (ctl->progress) {
        ctl->range_begin_ns = INT64_MAX;
        ctl->range_end_ns = INT64_MIN;
    }
    for (size_t i = 0; i < traces->n; i++) {
        bt_value_put_ref(params);
        params = bt_value_map_create();
        bt_value *inputs = NULL;
        /* the sink finds an event's input (and process list) from its trace's name */
        char tname[64];
        snprintf(tname, sizeof(tname), "%s%zu", GLUCX_AN_TRACE_NAME_PREFIX, i);
        if (!params || bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) != 0 ||
            bt_value_array_append_string_element(inputs, traces->v[i]) != 0 ||
            bt_value_map_insert_string_entry(params, "trace-name", tname) != 0)
            goto out;
        if (ctl->progress) {
            int64_t b, e;
            query_range(bt_component_class_source_as_component_class_const(src_cls), params, &b,
                        &e);
            if (b < ctl->range_begin_ns)
                ctl->range_begin_ns = b;
            if (e > ctl->range_end_ns)
                ctl->range_end_ns = e;
        }
        char name[32];
        snprintf(name, sizeof(name), "src%zu", i);
        if (bt_graph_add_source_component(g, src_cls, name, params, BT_LOGGING_LEVEL_NONE,
                                          &srcs[i]) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
            char cause[900];
            take_error_text(cause, sizeof(cause));
            snprintf(why, len, "source.ctf.fs cannot open the trace %s: %s", traces->v[i], cause);
            rc = GRAPH_INIT_FAILED;
            goto out;
        }
    }
    if (bt_graph_add_filter_component(g, mux_cls, "muxer", NULL, BT_LOGGING_LEVEL_WARNING, &mux) !=
            BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
        bt_graph_add_sink_component_with_initialize_method_data(g, sink_cls, "report", NULL, ctl,
                                                                BT_LOGGING_LEVEL_WARNING, &snk) !=
            BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
        take_error_text(why, len);
        goto out;
    }
    for (size_t t = 0; t < traces->n; t++) {
        uint64_t nout = bt_component_source_get_output_port_count(srcs[t]);
        for (uint64_t i = 0; i < nout; i++) {
            const bt_port_output *op =
                bt_component_source_borrow_output_port_by_index_const(srcs[t], i);
            const bt_port_input *ip = bt_component_filter_borrow_input_port_by_index_const(
                mux, bt_component_filter_get_input_port_count(mux) - 1);
            if (bt_graph_connect_ports(g, op, ip, NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
                take_error_text(why, len);
                goto out;
            }
        }
    }
    if (bt_graph_connect_ports(g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
                               bt_component_sink_borrow_input_port_by_index_const(snk, 0),
                               NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
        take_error_text(why, len);
        goto out;
    }
    bt_graph_run_status st;
    do {
        st = bt_graph_run(g);
        if (st == BT_GRAPH_RUN_STATUS_AGAIN)
            usleep(1000);
    } while (st == BT_GRAPH_RUN_STATUS_AGAIN);
    if (ctl->progress)
        fprintf(stderr, "\n");
    if (st != BT_GRAPH_RUN_STATUS_OK) {
        take_error_text(why, len);
        rc = GRAPH_RUN_FAILED;
    } else {
        why[0] = 0;
        rc = GRAPH_OK;
    }
out:
    bt_graph_put_ref(g); /* finalizes the sink (it only borrows the engine) */
    bt_component_class_sink_put_ref(sink_cls);
    bt_plugin_put_ref(ctf_plugin);
    bt_plugin_put_ref(utils_plugin);
    bt_value_put_ref(params);
    free(srcs);
    return rc;
}

/* ---- clock correction (several hosts) -------------------------------------------------------- */

static uint32_t le32(const unsigned char *p);

/* The hostname in the env block of trace directory @p dir's CTF metadata (LTTng writes it), into
 * @p buf ("" when there is none). Packetized metadata (magic 0x75d11d57, 37-byte headers with the
 * content size in bits at byte 24) is read packet by packet, text metadata as it is. */
static void trace_hostname(const char *dir, char *buf, size_t len)
{
    char path[4200];
    buf[0] = 0;
    snprintf(path, sizeof(path), "%s/metadata", dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    struct stat st;
    size_t size = fstat(fileno(f), &st) == 0 ? (size_t)st.st_size : 0;
    unsigned char *data = size && size < (64u << 20) ? malloc(size + 1) : NULL;
    char *text = data ? malloc(size + 1) : NULL;
    size_t n = 0;
    if (text && fread(data, 1, size, f) == size) {
        if (size >= 37 && le32(data) == 0x75d11d57u) {
            for (size_t off = 0; off + 37 <= size;) {
                size_t content = le32(data + off + 24) / 8, packet = le32(data + off + 28) / 8;
                if (le32(data + off) != 0x75d11d57u || content < 37 || content > packet ||
                    off + content > size || packet == 0)
                    break;
                memcpy(text + n, data + off + 37, content - 37);
                n += content - 37;
                off += packet;
            }
        } else {
            memcpy(text, data, size);
            n = size;
        }
        text[n] = 0;
        const char *env = strstr(text, "env {");
        const char *h = env ? strstr(env, "hostname = \"") : NULL;
        if (h) {
            h += strlen("hostname = \"");
            size_t l = strcspn(h, "\"");
            if (l >= len)
                l = len - 1;
            memcpy(buf, h, l);
            buf[l] = 0;
        }
    }
    free(text);
    free(data);
    fclose(f);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The host of each trace directory (@p host_of, [traces->n]) and each host's name (*names_p,
 * allocated: free each and the array): every TRACE argument is one host or more, one per distinct
 * hostname in its traces' metadata (glucx-cluster run --trace OUT given as one argument holds a
 * trace per host), in argument order and, within one, hostname order. Host 0 is the reference.
 * Returns the number of hosts, or -1 when out of memory. */
static int assign_hosts(const dirlist_t *traces, const size_t *start, int nargs,
                        const char *const *args, int *host_of, char ***names_p)
{
    char **hn = calloc(traces->n ? traces->n : 1, sizeof(char *));
    char **names = calloc(traces->n ? traces->n : 1, sizeof(char *));
    int nhosts = 0, rc = -1;
    if (!hn || !names)
        goto out;
    for (size_t k = 0; k < traces->n; k++) {
        char b[256];
        trace_hostname(traces->v[k], b, sizeof(b));
        if (!(hn[k] = strdup(b)))
            goto out;
    }
    for (int j = 0; j < nargs; j++) {
        size_t a = start[j], b = start[j + 1];
        /* this argument's distinct hostnames, sorted */
        char **u = malloc((b - a ? b - a : 1) * sizeof(char *));
        if (!u)
            goto out;
        size_t nu = 0;
        for (size_t k = a; k < b; k++)
            u[nu++] = hn[k];
        qsort(u, nu, sizeof(char *), cmp_str);
        size_t w = 0;
        for (size_t i = 0; i < nu; i++)
            if (w == 0 || strcmp(u[w - 1], u[i]) != 0)
                u[w++] = u[i];
        for (size_t i = 0; i < w; i++) {
            char name[4400];
            if (w == 1)
                snprintf(name, sizeof(name), "%s", args[j]);
            else
                snprintf(name, sizeof(name), "%s (host %s)", args[j], u[i]);
            if (!(names[nhosts] = strdup(name))) {
                free(u);
                goto out;
            }
            for (size_t k = a; k < b; k++)
                if (strcmp(hn[k], u[i]) == 0)
                    host_of[k] = nhosts;
            nhosts++;
        }
        free(u);
    }
    rc = nhosts;
out:
    for (size_t k = 0; hn && k < traces->n; k++)
        free(hn[k]);
    free(hn);
    if (rc < 0) {
        for (int h = 0; names && h < nhosts; h++)
            free(names[h]);
        free(names);
        names = NULL;
    }
    *names_p = names;
    return rc;
}

static void remove_tree(const char *path);
static int repair_traces(const dirlist_t *in, const char *dir, dirlist_t *out, char *what,
                         size_t len, char *why, size_t whylen);

/* Pass 1 of a multi-host merge: read the traces once to pair sends and receives, estimate each
 * host's clock against the first (analysis/core/clocksync.h), and make @p eng correct its events
 * with the estimate. Returns the estimate (the caller destroys it after the engine), or NULL
 * when the clocks stay as they are: a warning in the report says why (a trace that cannot be
 * read whole is then merged without correction). */
static glucx_an_clock_t *clock_pass(const dirlist_t *traces, const glucx_an_sink_ctl_t *ctl,
                                    int nhosts, const char *const *names, int64_t min_latency,
                                    const char *stage, glucx_an_engine_t *eng)
{
    char dir[4200], err[512], why[1024] = "";
    snprintf(dir, sizeof(dir), "%s/.clock-pass", stage);
    glucx_an_clock_t *cs = glucx_an_clock_create(nhosts, 0, min_latency);
    glucx_an_options_t o = {.out_dir = dir, .clock_collect = cs};
    for (int h = 0; cs && h < nhosts; h++)
        if (glucx_an_clock_set_name(cs, h, names[h]) != 0) {
            glucx_an_clock_destroy(cs);
            cs = NULL;
        }
    glucx_an_engine_t *e1 = cs ? glucx_an_engine_create(&o, err, sizeof(err)) : NULL;
    if (!e1) {
        glucx_an_engine_warn(eng, "clock correction skipped: %s",
                             cs ? err : "out of memory for the clock estimate");
        glucx_an_clock_destroy(cs);
        return NULL;
    }
    glucx_an_sink_ctl_t c1 = *ctl;
    c1.engine = e1;
    c1.dump = NULL; /* the analysis pass writes it */
    c1.refused[0] = 0;
    c1.ended = 0;
    int gr = run_graph(traces, &c1, why, sizeof(why));
    if (gr == GRAPH_INIT_FAILED) {
        /* stream files cut inside a packet: pair the messages of their complete packets, as
         * the analysis pass reads them (it repairs and reports the cut itself) */
        char rep[4300], what[1024] = "";
        snprintf(rep, sizeof(rep), "%s/.clock-repaired", stage);
        dirlist_t fixed = {0};
        if (repair_traces(traces, rep, &fixed, what, sizeof(what), err, sizeof(err)) > 0) {
            c1.refused[0] = 0;
            c1.ended = 0;
            gr = run_graph(&fixed, &c1, why, sizeof(why));
        }
        remove_tree(rep);
        for (size_t i = 0; i < fixed.n; i++)
            free(fixed.v[i]);
        free(fixed.v);
    }
    int rc = gr == GRAPH_OK && c1.ended && !c1.refused[0] ? 0 : -1;
    if (rc != 0 && !c1.refused[0]) /* a refused trace is refused again by the analysis pass */
        glucx_an_engine_warn(eng,
                             "clock correction skipped: the traces could not be read whole "
                             "to pair their messages (%s): hosts merged on their own clocks",
                             why[0] ? why : "reading stopped early");
    if (rc == 0 && glucx_an_clock_estimate(cs) != 0) {
        glucx_an_engine_warn(eng, "clock correction skipped: out of memory for the estimate");
        rc = -1;
    }
    if (rc == 0 && glucx_an_engine_set_clock(eng, cs) != 0)
        rc = -1;
    glucx_an_engine_destroy(e1);
    remove_tree(dir);
    if (rc != 0) {
        glucx_an_clock_destroy(cs);
        return NULL;
    }
    return cs;
}

/* ---- truncated stream files ------------------------------------------------------------------ */

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[4096];
            snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

/* Copy the first @p bytes of @p from to @p to; -1 with the file and errno text in @p why. */
static int copy_prefix(const char *from, const char *to, uint64_t bytes, char *why, size_t len)
{
    FILE *a = fopen(from, "rb");
    if (!a) {
        snprintf(why, len, "cannot read %s: %s", from, strerror(errno));
        return -1;
    }
    FILE *b = fopen(to, "wb");
    if (!b) {
        snprintf(why, len, "cannot create %s: %s", to, strerror(errno));
        fclose(a);
        return -1;
    }
    char buf[65536];
    int rc = 0;
    while (bytes > 0 && !rc) {
        size_t want = bytes < sizeof(buf) ? (size_t)bytes : sizeof(buf);
        size_t n = fread(buf, 1, want, a);
        if (n == 0) {
            snprintf(why, len, "cannot read %s: %s", from,
                     ferror(a) ? strerror(errno) : "too short");
            rc = -1;
        } else if (fwrite(buf, 1, n, b) != n) {
            snprintf(why, len, "cannot write %s: %s", to, strerror(errno));
            rc = -1;
        }
        bytes -= n;
    }
    fclose(a);
    if (fclose(b) != 0 && !rc) {
        snprintf(why, len, "cannot write %s: %s", to, strerror(errno));
        rc = -1;
    }
    return rc;
}

/* The little-endian 32-bit integer at @p p (CTF packet headers as LTTng writes them). */
static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bytes of @p path made of complete packets (LTTng's CTF packet header: magic 0xc1fc1fc1, then
 * packet context with content_size and packet_size in bits at bytes 48 and 56). */
static uint64_t complete_packets(const char *path, uint64_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    uint64_t off = 0;
    unsigned char h[64];
    while (off + sizeof(h) <= size) {
        if (fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(h, 1, sizeof(h), f) != sizeof(h))
            break;
        uint32_t magic = le32(h);
        uint64_t bits = 0;
        for (int i = 7; i >= 0; i--)
            bits = bits << 8 | h[56 + i];
        if (magic != 0xc1fc1fc1u || bits == 0 || bits % 8 || off + bits / 8 > size)
            break;
        off += bits / 8;
    }
    fclose(f);
    return off;
}

/* Whether @p path, a CTF metadata file, is made of whole packets (LTTng writes packetized
 * metadata: magic 0x75d11d57, then uuid[16], checksum, content_size and packet_size in bits at
 * bytes 24 and 28). Babeltrace 2 can hang on metadata cut inside a packet, so a truncated file is
 * refused before it is opened. Plain-text metadata (no magic) is left to Babeltrace. */
static int metadata_complete(const char *path, uint64_t *size_p)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1; /* Babeltrace reports it */
    struct stat st;
    uint64_t size = fstat(fileno(f), &st) == 0 ? (uint64_t)st.st_size : 0;
    *size_p = size;
    uint64_t off = 0;
    unsigned char h[37];
    int complete = 1;
    while (off < size) {
        if (fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(h, 1, sizeof(h), f) != sizeof(h)) {
            complete = 0;
            break;
        }
        uint32_t magic = le32(h);
        if (magic != 0x75d11d57u) {
            complete = off > 0 ? 0 : 1; /* text metadata (off 0) or garbage after packets */
            break;
        }
        uint32_t bits = le32(h + 28);
        if (bits == 0 || bits % 8 || off + bits / 8 > size) {
            complete = 0;
            break;
        }
        off += bits / 8;
    }
    fclose(f);
    return complete;
}

/* Whether the declarations of metadata file @p path (known to be whole packets, or text) end
 * where a declaration ends: braces balanced, the last token a ';'. A metadata stream cut between
 * two packets (the consumer could not write the next one: a full disk) stops inside a
 * declaration, which Babeltrace only reports as a parser error. Comments and string literals are
 * skipped. */
static int metadata_text_whole(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1; /* Babeltrace reports it */
    struct stat st;
    const uint64_t size = fstat(fileno(f), &st) == 0 ? (uint64_t)st.st_size : 0;
    long depth = 0;
    int last = 0, in_str = 0, in_comment = 0, line_comment = 0, esc = 0, prev = 0;
    unsigned char h[37];
    char buf[4096];
    uint64_t off = 0;
    while (off < size) {
        /* one packet's content, or (text metadata) the whole file */
        uint64_t begin = off, end = size, next = size;
        if (fseeko(f, (off_t)off, SEEK_SET) == 0 && fread(h, 1, sizeof(h), f) == sizeof(h) &&
            le32(h) == 0x75d11d57u) {
            uint32_t content = le32(h + 24);
            uint32_t packet = le32(h + 28);
            if (packet == 0 || content > packet)
                break;
            begin = off + sizeof(h);
            end = off + content / 8;
            next = off + packet / 8;
        }
        if (fseeko(f, (off_t)begin, SEEK_SET) != 0)
            break;
        for (uint64_t at = begin; at < end;) {
            size_t want = end - at < sizeof(buf) ? (size_t)(end - at) : sizeof(buf);
            size_t n = fread(buf, 1, want, f);
            if (n == 0)
                break;
            at += n;
            for (size_t i = 0; i < n; i++) {
                const int c = (unsigned char)buf[i];
                if (in_comment) {
                    if (line_comment ? c == '\n' : (prev == '*' && c == '/')) {
                        in_comment = 0;
                        prev = 0;
                    } else {
                        prev = c;
                    }
                    continue;
                }
                if (in_str) {
                    if (esc)
                        esc = 0;
                    else if (c == '\\')
                        esc = 1;
                    else if (c == '"')
                        in_str = 0;
                    continue;
                }
                if (prev == '/' && (c == '*' || c == '/')) {
                    in_comment = 1;
                    line_comment = c == '/';
                    prev = 0;
                    continue;
                }
                prev = c;
                if (c == '"')
                    in_str = 1; /* a string ends a declaration only before a ';' */
                else if (c == '{')
                    depth++;
                else if (c == '}')
                    depth--;
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '/')
                    last = c;
            }
        }
        off = next;
    }
    fclose(f);
    return depth == 0 && last == ';' && !in_str && !(in_comment && !line_comment);
}

/* Copies of the trace directories with every stream file cut to its complete packets, under
 * @p dir; returns how many files were cut (0: nothing to repair), or -1 with the reason in
 * @p why (the copy cannot be written: the output's disk is full...). */
static int repair_traces(const dirlist_t *in, const char *dir, dirlist_t *out, char *what,
                         size_t len, char *why, size_t whylen)
{
    int cut = 0;
    remove_tree(dir);
    if (mkdir(dir, 0777) != 0) {
        snprintf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < in->n; i++) {
        char td[4096];
        snprintf(td, sizeof(td), "%s/%zu", dir, i);
        if (mkdir(td, 0777) != 0) {
            snprintf(why, whylen, "cannot create %s: %s", td, strerror(errno));
            return -1;
        }
        DIR *d = opendir(in->v[i]);
        if (!d) {
            snprintf(why, whylen, "cannot read %s: %s", in->v[i], strerror(errno));
            return -1;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            char from[4096], to[4096];
            snprintf(from, sizeof(from), "%s/%s", in->v[i], e->d_name);
            snprintf(to, sizeof(to), "%s/%s", td, e->d_name);
            struct stat st;
            if (e->d_name[0] == '.' || stat(from, &st) != 0 || !S_ISREG(st.st_mode))
                continue; /* the index/ directory is left out: it describes the old sizes */
            uint64_t keep = (uint64_t)st.st_size;
            if (strcmp(e->d_name, "metadata") != 0) {
                keep = complete_packets(from, (uint64_t)st.st_size);
                if (keep < (uint64_t)st.st_size) {
                    size_t l = strlen(what);
                    snprintf(what + l, len - l,
                             "%s%s ends inside a packet (%" PRIu64 " of %lld bytes usable)",
                             cut ? "; " : "", from, keep, (long long)st.st_size);
                    cut++;
                }
            }
            if (copy_prefix(from, to, keep, why, whylen) != 0) {
                closedir(d);
                return -1;
            }
        }
        closedir(d);
        if (out->n == out->cap) {
            size_t nc = out->cap ? out->cap * 2 : 8;
            char **nv = realloc(out->v, nc * sizeof(char *));
            if (!nv) {
                snprintf(why, whylen, "out of memory (%zu trace directories)", out->n);
                return -1;
            }
            out->v = nv;
            out->cap = nc;
        }
        out->v[out->n] = strdup(td);
        if (!out->v[out->n]) {
            snprintf(why, whylen, "out of memory (%zu trace directories)", out->n);
            return -1;
        }
        out->n++;
    }
    return cut;
}

/* ---- traces a full disk left empty ---------------------------------------------------------- */

/* " (its file system is full: N KiB free)" when the file system holding @p path has less than
 * 1 MiB left, else "": a full disk is the usual reason for an empty or cut trace file. */
static void full_note(const char *path, char *buf, size_t len)
{
    struct statvfs sv;
    buf[0] = 0;
    if (statvfs(path, &sv) != 0)
        return;
    uint64_t bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
    if (bytes < (UINT64_C(1) << 20))
        snprintf(buf, len, " (its file system is full: %" PRIu64 " KiB free)", bytes >> 10);
}

/* The stream files of trace directory @p tdir that are empty (0 bytes), appended to @p list;
 * returns how many. Stopping an LTTng session flushes at least one packet into every stream file,
 * so an empty one was never written (its events are lost: a full disk while recording). */
static int empty_streams(const char *tdir, char *list, size_t len)
{
    DIR *d = opendir(tdir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char p[4096];
        struct stat st;
        if (e->d_name[0] == '.' || strcmp(e->d_name, "metadata") == 0 ||
            snprintf(p, sizeof(p), "%s/%s", tdir, e->d_name) >= (int)sizeof(p) ||
            stat(p, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0)
            continue;
        size_t l = strlen(list);
        snprintf(list + l, len - l, "%s%s", l ? ", " : "", p);
        n++;
    }
    closedir(d);
    return n;
}

/* ---- outputs: written in a staging directory, renamed when complete ------------------------ */

/* Every output is written into STAGE, a new directory inside the output directory OUT (so on the
 * same file system), and renamed into OUT only once all of them are written and synced: a report
 * that could not be written whole (a full disk...) never appears under a final name. */
static const char *const output_names[] = {"report.json", "report.txt", "timeline.json",
                                           "report.html"};

/* @p msg with the staging directory's paths told as the output files they become. */
static void unstage(char *msg, size_t len, const char *stage, const char *out)
{
    static const char *const tmp_names[][2] = {
        {".report.json.tmp", "report.json"}, {".report.html.tmp", "report.html"},
        {".iterations.tmp", "report.json"},  {".collectives.tmp", "report.json"},
        {".decisions.tmp", "report.json"},
    };
    char buf[2048];
    size_t w = 0;
    const size_t sl = strlen(stage);
    for (const char *p = msg; *p && w + 1 < sizeof(buf);) {
        if (strncmp(p, stage, sl) != 0) {
            buf[w++] = *p++;
            continue;
        }
        p += sl;
        const char *name = NULL;
        size_t skip = 0;
        for (size_t i = 0; *p == '/' && i < sizeof(tmp_names) / sizeof(tmp_names[0]); i++)
            if (strncmp(p + 1, tmp_names[i][0], strlen(tmp_names[i][0])) == 0) {
                name = tmp_names[i][1];
                skip = 1 + strlen(tmp_names[i][0]);
            }
        int n =
            snprintf(buf + w, sizeof(buf) - w, "%s%s%s", out, name ? "/" : "", name ? name : "");
        if (n < 0 || (size_t)n >= sizeof(buf) - w)
            break;
        w += (size_t)n;
        p += skip;
    }
    buf[w] = 0;
    snprintf(msg, len, "%s", buf);
}

/* Sync STAGE's outputs, then rename each into OUT. 0, or -1 after a message naming the file. */
static int publish(const char *stage, const char *out)
{
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < sizeof(output_names) / sizeof(output_names[0]); i++) {
            char from[4096], to[4096];
            snprintf(from, sizeof(from), "%s/%s", stage, output_names[i]);
            snprintf(to, sizeof(to), "%s/%s", out, output_names[i]);
            if (pass == 0) {
                int fd = open(from, O_RDONLY | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT)
                    continue; /* not asked for */
                if (fd < 0 || fsync(fd) != 0) {
                    fprintf(stderr, "glucx-analyze: cannot write %s: %s; no report written\n", to,
                            strerror(errno));
                    if (fd >= 0)
                        close(fd);
                    return -1;
                }
                close(fd);
            } else if (rename(from, to) != 0 && errno != ENOENT) {
                fprintf(stderr, "glucx-analyze: cannot rename %s to %s: %s\n", from, to,
                        strerror(errno));
                return -1;
            }
        }
    return 0;
}

static int analyze_main(int argc, char **argv)
{
    const char *out = NULL, *tmpl = NULL;
    int timeline = 1, html = 1, want_progress = 1, clock_sync = 1;
    long long min_latency = 0;
    long list_limit = 0;
    const char *dump_path = NULL;
    const char **paths = calloc((size_t)argc, sizeof(char *));
    int npaths = 0;
    if (!paths)
        return 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i >= argc) {
                usage(stderr);
                return 2;
            }
            out = argv[i];
        } else if (strcmp(argv[i], "--template") == 0) {
            if (++i >= argc) {
                usage(stderr);
                return 2;
            }
            tmpl = argv[i];
        } else if (strcmp(argv[i], "--list-limit") == 0) {
            if (++i >= argc) {
                usage(stderr);
                return 2;
            }
            list_limit = strtol(argv[i], NULL, 10);
            if (list_limit == 0)
                list_limit = -1; /* 0 on the command line: list everything */
        } else if (strcmp(argv[i], "--dump-events") == 0) {
            if (++i >= argc) {
                usage(stderr);
                return 2;
            }
            dump_path = argv[i];
        } else if (strcmp(argv[i], "--min-latency") == 0) {
            char *end = NULL;
            if (++i >= argc || (min_latency = strtoll(argv[i], &end, 10)) < 0 || *end) {
                fprintf(stderr, "glucx-analyze: --min-latency needs a number of ns >= 0\n");
                usage(stderr);
                return 2;
            }
        } else if (strcmp(argv[i], "--no-clock-sync") == 0) {
            clock_sync = 0;
        } else if (strcmp(argv[i], "--no-timeline") == 0) {
            timeline = 0;
        } else if (strcmp(argv[i], "--no-html") == 0) {
            html = 0;
        } else if (strcmp(argv[i], "--no-progress") == 0) {
            want_progress = 0;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "glucx-analyze: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            paths[npaths++] = argv[i];
        }
    }
    if (!out || npaths == 0) {
        usage(stderr);
        return 2;
    }
    /* check the inputs before anything else: a clear message for a non-trace directory, and for
     * the empty or cut files a full disk leaves (Babeltrace's own errors would not say so) */
    int ok = 0;
    char skipped[2048] = "", empty[2048] = "";
    int nempty = 0;
    dirlist_t traces = {0};
    /* the first trace directory of each accepted TRACE (one host each): host_start[j] */
    size_t *host_start = calloc((size_t)npaths + 1, sizeof(size_t));
    if (!host_start)
        return 1;
    for (int i = 0; i < npaths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            fprintf(stderr, "glucx-analyze: cannot read trace %s: %s\n", paths[i], strerror(errno));
        } else if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr,
                    "glucx-analyze: %s is not a directory (give the directory that "
                    "glucx-trace record -o wrote)\n",
                    paths[i]);
        } else {
            size_t before = traces.n;
            if (collect_traces(paths[i], 0, &traces) == 0) {
                fprintf(stderr, "glucx-analyze: %s is not a trace: no CTF metadata file under it\n",
                        paths[i]);
            } else {
                int bad = 0, nempty_before = nempty;
                size_t empty_len = strlen(empty);
                for (size_t k = before; k < traces.n; k++) {
                    char md[4096], note[96];
                    uint64_t mdsize = 0;
                    snprintf(md, sizeof(md), "%s/metadata", traces.v[k]);
                    full_note(md, note, sizeof(note));
                    if (!metadata_complete(md, &mdsize)) {
                        fprintf(stderr,
                                "glucx-analyze: %s is truncated (%" PRIu64 " bytes end inside "
                                "a metadata packet)%s: the trace cannot be read (a full disk "
                                "while recording, a session destroyed while writing, or the "
                                "file was cut)\n",
                                md, mdsize, note);
                        bad = 1;
                    } else if (mdsize > 0 && !metadata_text_whole(md)) {
                        fprintf(stderr,
                                "glucx-analyze: %s is cut (%" PRIu64 " bytes end inside a "
                                "declaration)%s: the trace cannot be read (a full disk while "
                                "recording?)\n",
                                md, mdsize, note);
                        bad = 1;
                    } else if (mdsize == 0) {
                        fprintf(stderr,
                                "glucx-analyze: %s is empty (0 bytes)%s: the trace was never "
                                "written and cannot be read (a full disk while recording?)\n",
                                md, note);
                        bad = 1;
                    } else {
                        nempty += empty_streams(traces.v[k], empty, sizeof(empty));
                    }
                }
                if (!bad) {
                    host_start[ok] = before;
                    paths[ok++] = paths[i];
                    continue;
                }
                nempty = nempty_before; /* this input is skipped: its files are not analysed */
                empty[empty_len] = 0;
                for (size_t k = before; k < traces.n; k++)
                    free(traces.v[k]);
                traces.n = before;
            }
        }
        size_t l = strlen(skipped);
        snprintf(skipped + l, sizeof(skipped) - l, "%s%s", l ? ", " : "", paths[i]);
    }
    if (ok == 0) {
        fprintf(stderr, "glucx-analyze: no trace to analyse\n");
        free(traces.v);
        free(paths);
        free(host_start);
        return 2;
    }
    npaths = ok;
    host_start[ok] = traces.n;
    /* each trace directory's host: its TRACE argument, split by the traces' hostnames */
    int *host_of = calloc(traces.n ? traces.n : 1, sizeof(int));
    char **host_names = NULL;
    int nhosts =
        host_of ? assign_hosts(&traces, host_start, npaths, paths, host_of, &host_names) : -1;
    free(host_start);
    if (nhosts < 0) {
        fprintf(stderr, "glucx-analyze: out of memory reading the traces' hosts\n");
        free(host_of);
        return 1;
    }
    glucx_an_clock_t *clock = NULL;

    int rc = 1;
    glucx_an_engine_t *eng = NULL;
    pidfiles_t pid_files = {0};
    const glucx_an_pidset_t **pidsets = NULL;
    FILE *dump = NULL;
    char stage[4096] = "", err[2048];
    if (glucx_an_mkdir_p(out) != 0) {
        fprintf(stderr, "glucx-analyze: cannot create output directory %s: %s\n", out,
                strerror(errno));
        goto out;
    }
    if (snprintf(stage, sizeof(stage), "%s/.glucx-analyze-XXXXXX", out) >= (int)sizeof(stage) ||
        !mkdtemp(stage)) {
        fprintf(stderr, "glucx-analyze: cannot create a staging directory in %s: %s\n", out,
                strerror(errno));
        stage[0] = 0;
        goto out;
    }
    glucx_an_options_t opt = {.out_dir = stage, .timeline = timeline, .list_limit = list_limit};
    eng = glucx_an_engine_create(&opt, err, sizeof(err));
    if (!eng) {
        unstage(err, sizeof(err), stage, out);
        fprintf(stderr, "glucx-analyze: %s\n", err);
        goto out;
    }
    char ver[64];
    snprintf(ver, sizeof(ver), "%u.%u.%u", (unsigned)bt_version_get_major(),
             (unsigned)bt_version_get_minor(), (unsigned)bt_version_get_patch());
    char cmd[4096] = "";
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(cmd);
        snprintf(cmd + l, sizeof(cmd) - l, "%s%s", i ? " " : "", argv[i]);
    }
    glucx_an_engine_set_tool(eng, ver, cmd);
    for (int i = 0; i < npaths; i++)
        glucx_an_engine_add_path(eng, paths[i]);
    if (skipped[0])
        glucx_an_engine_partial(eng, "inputs that are not traces were skipped: %s", skipped);
    if (nempty > 0) {
        char note[96];
        full_note(traces.v[0], note, sizeof(note));
        fprintf(stderr,
                "glucx-analyze: %d stream file(s) empty (0 bytes)%s: their events were never "
                "written (a full disk while recording?): %s\n",
                nempty, note, empty);
        glucx_an_engine_partial(eng,
                                "%d stream file(s) are empty (0 bytes): their events were never "
                                "written (a full disk while recording?): %s",
                                nempty, empty);
    }

    if (dump_path && !(dump = fopen(dump_path, "w"))) {
        fprintf(stderr, "glucx-analyze: cannot create the event dump %s: %s\n", dump_path,
                strerror(errno));
        goto out; /* rc is 1 */
    }
    if (load_pid_files(&traces, eng, &pid_files, &pidsets) != 0) {
        fprintf(stderr, "glucx-analyze: out of memory reading the process lists (%s)\n", PIDS_FILE);
        goto out; /* rc is 1 */
    }
    glucx_an_sink_ctl_t ctl = {.engine = eng,
                               .progress = want_progress && isatty(2),
                               .pidsets = pidsets,
                               .ninputs = traces.n,
                               .paths = (const char *const *)traces.v,
                               .dump = dump,
                               .hosts = host_of};
    char why[1024] = "";
    if (nhosts > 1 && clock_sync)
        clock = clock_pass(&traces, &ctl, nhosts, (const char *const *)host_names,
                           (int64_t)min_latency, stage, eng);
    int gr = run_graph(&traces, &ctl, why, sizeof(why));
    if (gr == GRAPH_INIT_FAILED) {
        /* a stream file cut inside a packet (killed session, full disk): read a copy cut at the
         * last complete packet of each file */
        char rep_dir[4200];
        snprintf(rep_dir, sizeof(rep_dir), "%s/.repaired-trace", stage);
        dirlist_t fixed = {0};
        char what[1024] = "";
        int cut = repair_traces(&traces, rep_dir, &fixed, what, sizeof(what), err, sizeof(err));
        if (cut > 0) {
            fprintf(stderr, "glucx-analyze: %s; reading the complete packets only\n", what);
            glucx_an_engine_partial(eng,
                                    "trace truncated: %s; the analysis read up to the last "
                                    "complete packet of each stream",
                                    what);
            gr = run_graph(&fixed, &ctl, why, sizeof(why));
        }
        remove_tree(rep_dir);
        for (size_t i = 0; i < fixed.n; i++)
            free(fixed.v[i]);
        free(fixed.v);
        if (cut < 0) {
            unstage(err, sizeof(err), stage, out);
            fprintf(stderr,
                    "glucx-analyze: the trace has files cut inside a packet, and a copy of its "
                    "complete packets cannot be written: %s\n",
                    err);
            goto out;
        }
    }
    if (ctl.refused[0]) {
        fprintf(stderr, "glucx-analyze: %s; no report written\n", ctl.refused);
        rc = 2;
        goto out;
    }
    if (gr == GRAPH_INIT_FAILED || gr == GRAPH_SETUP_FAILED) {
        fprintf(stderr, "glucx-analyze: %s\n", why);
        rc = gr == GRAPH_INIT_FAILED ? 2 : 1;
        goto out;
    }
    if (gr == GRAPH_RUN_FAILED || !ctl.ended) {
        fprintf(stderr, "glucx-analyze: reading stopped before the end of the trace: %s\n", why);
        glucx_an_engine_partial(
            eng, "trace truncated or unreadable: reading stopped after %" PRIu64 " events: %s",
            glucx_an_engine_events(eng), why);
    }
    if (ctl.left_out_events > 0) {
        glucx_an_engine_left_out(eng, ctl.left_out_events, ctl.left_out_processes);
        fprintf(stderr,
                "glucx-analyze: %" PRIu64 " events of %" PRIu64 " processes not listed in %s "
                "left out: another traced job ran at the same time\n",
                ctl.left_out_events, ctl.left_out_processes, PIDS_FILE);
    }
    if (glucx_an_engine_finish(eng) != 0) {
        snprintf(err, sizeof(err), "%s", glucx_an_engine_error(eng));
        unstage(err, sizeof(err), stage, out);
        fprintf(stderr, "glucx-analyze: %s; no report written\n", err);
        goto out;
    }
    int html_written = 0;
    if (html) {
        const char *t = glucx_an_find_template(tmpl);
        if (!t) {
            glucx_an_no_template_warn(tmpl, "report.html");
        } else if (glucx_an_write_html(stage, t, err, sizeof(err)) != 0) {
            /* the template's own problems stay a warning; an output that cannot be written
             * fails like the others */
            const int output = strstr(err, stage) != NULL;
            unstage(err, sizeof(err), stage, out);
            if (output) {
                fprintf(stderr, "glucx-analyze: %s; no report written\n", err);
                goto out;
            }
            fprintf(stderr, "glucx-analyze: warning: %s: report.html not written\n", err);
        } else {
            html_written = 1;
        }
    }
    if (publish(stage, out) != 0)
        goto out;
    printf("%s\n", glucx_an_engine_verdict(eng));
    printf("reports in %s: report.txt report.json%s%s\n", out, html_written ? " report.html" : "",
           timeline ? " timeline.json" : "");
    if (glucx_an_engine_is_partial(eng))
        fprintf(stderr, "glucx-analyze: the report is PARTIAL (reasons in report.txt and "
                        "report.json trace.partial_reasons)\n");
    rc = 0;
out:
    if (dump && fclose(dump) != 0 && rc == 0) {
        fprintf(stderr, "glucx-analyze: cannot write the event dump %s: %s\n", dump_path,
                strerror(errno));
        rc = 1;
    }
    glucx_an_engine_destroy(eng);
    glucx_an_clock_destroy(clock);
    free(host_of);
    for (int h = 0; h < nhosts; h++)
        free(host_names[h]);
    free(host_names);
    if (stage[0])
        remove_tree(stage);
    free(pidsets);
    free_pid_files(&pid_files);
    for (size_t i = 0; i < traces.n; i++)
        free(traces.v[i]);
    free(traces.v);
    free(paths);
    return rc;
}

/* ---- glucx-analyze diff A B -o OUT ----------------------------------------------------------- */

/* The report of one diff input (into @p report, a path glucx_an_diff_load() reads): a report as
 * it is, a trace analysed into @p out/report-<side> by analyze_main(). 0, or the exit status. */
static int diff_input(const char *in, const char *out, char side, char *report, size_t len)
{
    struct stat st;
    if (stat(in, &st) != 0) {
        fprintf(stderr, "glucx-analyze diff: cannot read %s: %s\n", in, strerror(errno));
        return 2;
    }
    char rj[4096];
    snprintf(rj, sizeof(rj), "%s/report.json", in);
    if (!S_ISDIR(st.st_mode) || access(rj, F_OK) == 0) {
        snprintf(report, len, "%s", in);
        return 0;
    }
    dirlist_t traces = {0};
    int found = collect_traces(in, 0, &traces);
    for (size_t i = 0; i < traces.n; i++)
        free(traces.v[i]);
    free(traces.v);
    if (found == 0) {
        fprintf(stderr,
                "glucx-analyze diff: %s is neither a report (no report.json in it) nor a trace "
                "(no CTF metadata file under it)\n",
                in);
        return 2;
    }
    snprintf(report, len, "%s/report-%c", out, side);
    char *argv[] = {"glucx-analyze", (char *)in,      "-o", report, "--no-html",
                    "--no-timeline", "--no-progress", NULL};
    fprintf(stderr, "glucx-analyze diff: analysing trace %s into %s\n", in, report);
    int rc = analyze_main(7, argv);
    if (rc != 0)
        fprintf(stderr, "glucx-analyze diff: the analysis of trace %s failed (status %d)\n", in,
                rc);
    return rc;
}

static int diff_main(int argc, char **argv)
{
    const char *in[2] = {NULL, NULL}, *out = NULL, *tmpl = NULL;
    int nin = 0, html = 1;
    long rows = 10;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i >= argc) {
                usage(stderr);
                return 2;
            }
            out = argv[i];
        } else if (strcmp(argv[i], "--rows") == 0) {
            char *end = NULL;
            if (++i >= argc || (rows = strtol(argv[i], &end, 10)) < 0 || *end) {
                fprintf(stderr, "glucx-analyze diff: --rows needs a number >= 0\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--template") == 0) {
            if (++i >= argc) {
                usage(stderr);
                return 2;
            }
            tmpl = argv[i];
        } else if (strcmp(argv[i], "--no-html") == 0) {
            html = 0;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "glucx-analyze diff: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (nin < 2) {
            in[nin++] = argv[i];
        } else {
            fprintf(stderr, "glucx-analyze diff: one run too many: %s (give A and B)\n", argv[i]);
            return 2;
        }
    }
    if (nin != 2 || !out) {
        fprintf(stderr, "glucx-analyze diff: needs two runs and -o OUT\n");
        usage(stderr);
        return 2;
    }
    char rep[2][4200], err[8192];
    json_t *r[2] = {NULL, NULL}, *d = NULL;
    int rc = 2;
    for (int s = 0; s < 2; s++) {
        int st = diff_input(in[s], out, (char)('a' + s), rep[s], sizeof(rep[s]));
        if (st != 0) {
            rc = st;
            goto out;
        }
        if (!(r[s] = glucx_an_diff_load(rep[s], err, sizeof(err)))) {
            fprintf(stderr, "glucx-analyze diff: %s\n", err);
            goto out; /* rc is 2: bad input */
        }
    }
    rc = 1;
    if (!(d = glucx_an_diff_compute(r[0], r[1], in[0], in[1], err, sizeof(err)))) {
        fprintf(stderr, "glucx-analyze diff: %s\n", err);
        goto out;
    }
    if (glucx_an_diff_write(d, out, (size_t)rows, err, sizeof(err)) != 0) {
        fprintf(stderr, "glucx-analyze diff: %s; no diff written\n", err);
        goto out;
    }
    int html_written = 0;
    if (html) {
        /* diff.html: the report's dashboard template filled with diff.json, as report.html */
        const char *t = glucx_an_find_template(tmpl);
        int st = t ? glucx_an_fill_template(out, "diff.json", "diff.html", t, err, sizeof(err)) : 0;
        if (!t) {
            glucx_an_no_template_warn(tmpl, "diff.html");
        } else if (st == -1) { /* the template's own problem: a warning, as for report.html */
            fprintf(stderr, "glucx-analyze diff: warning: %s: diff.html not written\n", err);
        } else if (st != 0) {
            fprintf(stderr, "glucx-analyze diff: %s; diff.html not written\n", err);
            goto out;
        } else {
            html_written = 1;
        }
    }
    printf("%s\n", json_string_value(json_object_get(json_object_get(d, "cause"), "sentence")));
    printf("diff in %s: diff.txt diff.json%s\n", out, html_written ? " diff.html" : "");
    rc = 0;
out:
    json_decref(r[0]);
    json_decref(r[1]);
    json_decref(d);
    return rc;
}

static void whatif_usage(FILE *f)
{
    fprintf(f,
            "usage: glucx-analyze whatif TRACE_OR_REPORT --topology FILE [--ranks N]\n"
            "                            [--tune STRING] [--link-rate LINK=RATE]...\n"
            "                            [--from-topology FILE] [--calibration FILE]\n"
            "                            [--mode relative|absolute|additive] [--keep-algorithms]\n"
            "                            [--rows N] [-o OUT]\n"
            "  TRACE_OR_REPORT   a trace (analysed first, into OUT/report), or a report\n"
            "                    directory holding events.jsonl (--dump-events) next to\n"
            "                    report.json, as whatif leaves OUT/report\n"
            "  --topology FILE   the setup to predict (default GLUCX_TOPOLOGY)\n"
            "  --ranks N         predict N ranks (the topology's count): rank r timed as the\n"
            "                    run's process r mod its ranks\n"
            "  --tune STRING     force algorithms as GLUCX_TUNE does (\"allreduce=ring\")\n"
            "  --link-rate L=R   link L (its id, docs/topology.md) or dimension dimD at R GB/s\n"
            "                    (or R with kbit, mbit, gbit: bits/s), before costing\n"
            "  --from-topology FILE  the topology the run was measured on (default --topology\n"
            "                    as the file says)\n"
            "  --mode M          relative (default): measured x new cost / old cost;\n"
            "                    absolute: the new cost; additive: measured + new - old\n"
            "  --keep-algorithms keep each collective's measured algorithm (else the selection\n"
            "                    map of the new setup, as libglucx would choose)\n"
            "  -o OUT            write OUT/whatif.json and OUT/whatif.txt (else the text to\n"
            "                    stdout)\n"
            "Definitions: analysis/METRICS.md, \"What-if prediction\".\n");
}

/* Parse a whole int in [lo, hi]; 0 or -1. */
static int whatif_int(const char *s, long lo, long hi, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Write @p doc's whatif.json and whatif.txt into @p out (each under a temporary name, renamed
 * when complete); 0 or -1 with a message printed. */
static int whatif_write(const json_t *doc, const char *out, size_t rows)
{
    if (glucx_an_mkdir_p(out) != 0) {
        fprintf(stderr, "glucx-analyze whatif: cannot create %s: %s\n", out, strerror(errno));
        return -1;
    }
    const char *names[2] = {"whatif.json", "whatif.txt"};
    for (int k = 0; k < 2; k++) {
        char tmp[4096], fin[4096];
        snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", out, names[k]);
        snprintf(fin, sizeof(fin), "%s/%s", out, names[k]);
        FILE *f = fopen(tmp, "w");
        int bad = f == NULL;
        if (!bad && k == 0)
            bad = json_dumpf(doc, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0 ||
                  fputc('\n', f) == EOF;
        else if (!bad)
            bad = glucx_an_wi_write_text(doc, f, rows) != 0;
        if (f && fclose(f) != 0)
            bad = 1;
        if (bad || rename(tmp, fin) != 0) {
            fprintf(stderr, "glucx-analyze whatif: cannot write %s: %s\n", fin, strerror(errno));
            unlink(tmp);
            return -1;
        }
    }
    return 0;
}

/* glucx-analyze whatif TRACE_OR_REPORT --topology FILE ...: exit 0, 1 (the replay or an output
 * failed), 2 (usage, bad argument values, input that is neither report nor trace). */
static int whatif_main(int argc, char **argv)
{
    glucx_wi_args_t a = {0};
    a.topology = getenv("GLUCX_TOPOLOGY");
    a.calibration = getenv("GLUCX_CALIBRATION");
    a.mode = GLUCX_AN_WI_RELATIVE;
    const char *in = NULL, *out = NULL;
    int rows = 20;
    for (int i = 2; i < argc; i++) {
        const char *opt = argv[i];
        int has_value = i + 1 < argc;
        if ((strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0) && has_value)
            out = argv[++i];
        else if (strcmp(opt, "--topology") == 0 && has_value)
            a.topology = argv[++i];
        else if (strcmp(opt, "--from-topology") == 0 && has_value)
            a.from_topology = argv[++i];
        else if (strcmp(opt, "--calibration") == 0 && has_value)
            a.calibration = argv[++i];
        else if (strcmp(opt, "--tune") == 0 && has_value)
            a.tune = argv[++i];
        else if (strcmp(opt, "--keep-algorithms") == 0)
            a.keep_algorithms = 1;
        else if (strcmp(opt, "--link-rate") == 0 && has_value) {
            if (a.nrates == GLUCX_WI_MAX_RATES) {
                fprintf(stderr, "glucx-analyze whatif: --link-rate '%s': more than %d\n",
                        argv[i + 1], GLUCX_WI_MAX_RATES);
                return 2;
            }
            a.rates[a.nrates++] = argv[++i];
        } else if (strcmp(opt, "--ranks") == 0 && has_value) {
            if (whatif_int(argv[++i], 1, 16384, &a.ranks) != 0) {
                fprintf(stderr,
                        "glucx-analyze whatif: --ranks '%s': expected an integer in "
                        "1..16384\n",
                        argv[i]);
                return 2;
            }
        } else if (strcmp(opt, "--rows") == 0 && has_value) {
            if (whatif_int(argv[++i], 0, 1000000, &rows) != 0) {
                fprintf(stderr, "glucx-analyze whatif: --rows '%s': expected an integer >= 0\n",
                        argv[i]);
                return 2;
            }
        } else if (strcmp(opt, "--mode") == 0 && has_value) {
            const char *m = argv[++i];
            if (strcmp(m, "relative") == 0)
                a.mode = GLUCX_AN_WI_RELATIVE;
            else if (strcmp(m, "absolute") == 0)
                a.mode = GLUCX_AN_WI_ABSOLUTE;
            else if (strcmp(m, "additive") == 0)
                a.mode = GLUCX_AN_WI_ADDITIVE;
            else {
                fprintf(stderr,
                        "glucx-analyze whatif: --mode '%s': expected relative, absolute or "
                        "additive\n",
                        m);
                return 2;
            }
        } else if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
            whatif_usage(stdout);
            return 0;
        } else if (opt[0] != '-' && in == NULL)
            in = opt;
        else {
            fprintf(stderr, "glucx-analyze whatif: unexpected argument '%s'%s\n", opt,
                    opt[0] == '-' && !has_value ? " (missing its value?)" : "");
            whatif_usage(stderr);
            return 2;
        }
    }
    if (in == NULL || a.topology == NULL || a.topology[0] == '\0') {
        fprintf(stderr, "glucx-analyze whatif: needs TRACE_OR_REPORT and --topology FILE (or "
                        "GLUCX_TOPOLOGY)\n");
        whatif_usage(stderr);
        return 2;
    }
    if (a.calibration != NULL && a.calibration[0] == '\0')
        a.calibration = NULL;
    struct stat st;
    if (stat(in, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "glucx-analyze whatif: %s: %s\n", in,
                stat(in, &st) != 0 ? strerror(errno)
                                   : "not a directory (a trace or a report "
                                     "directory)");
        return 2;
    }
    char rdir[4096], rj[4096], tmpdir[64] = "";
    snprintf(rj, sizeof(rj), "%s/report.json", in);
    if (access(rj, F_OK) == 0) {
        snprintf(rdir, sizeof(rdir), "%s", in);
    } else {
        dirlist_t traces = {0};
        int found = collect_traces(in, 0, &traces);
        for (size_t i = 0; i < traces.n; i++)
            free(traces.v[i]);
        free(traces.v);
        if (found == 0) {
            fprintf(stderr,
                    "glucx-analyze whatif: %s is neither a report (no report.json in "
                    "it) nor a trace (no CTF metadata file under it)\n",
                    in);
            return 2;
        }
        if (out) {
            snprintf(rdir, sizeof(rdir), "%s/report", out);
        } else {
            snprintf(tmpdir, sizeof(tmpdir), "/tmp/glucx-whatif-XXXXXX");
            if (!mkdtemp(tmpdir)) {
                fprintf(stderr,
                        "glucx-analyze whatif: cannot create a directory under /tmp: "
                        "%s\n",
                        strerror(errno));
                return 1;
            }
            snprintf(rdir, sizeof(rdir), "%s/report", tmpdir);
        }
        char dump[4200];
        snprintf(dump, sizeof(dump), "%s/events.jsonl", rdir);
        if (glucx_an_mkdir_p(rdir) != 0) {
            fprintf(stderr, "glucx-analyze whatif: cannot create %s: %s\n", rdir, strerror(errno));
            return 1;
        }
        char *av[] = {"glucx-analyze",
                      (char *)in,
                      "-o",
                      rdir,
                      "--no-html",
                      "--no-timeline",
                      "--no-progress",
                      "--list-limit",
                      "0",
                      "--dump-events",
                      dump,
                      NULL};
        fprintf(stderr, "glucx-analyze whatif: analysing trace %s into %s\n", in, rdir);
        int rc = analyze_main(11, av);
        if (rc != 0) {
            fprintf(stderr, "glucx-analyze whatif: the analysis of trace %s failed (status %d)\n",
                    in, rc);
            if (tmpdir[0])
                remove_tree(tmpdir);
            return rc;
        }
    }
    glucx_an_wi_input_t wi;
    glucx_an_wi_init(&wi);
    char err[2048] = "";
    int rc = 0;
    json_t *doc = NULL;
    if (glucx_wi_load(rdir, &wi, err, sizeof(err)) != 0) {
        fprintf(stderr, "glucx-analyze whatif: %s\n", err);
        rc = 2;
        goto out;
    }
    doc = glucx_wi_run(&wi, &a, &rc, err, sizeof(err));
    if (!doc) {
        fprintf(stderr, "glucx-analyze whatif: %s\n", err);
        goto out;
    }
    json_object_set_new(doc, "input", json_string(in));
    if (out) {
        if (whatif_write(doc, out, (size_t)rows) != 0)
            rc = 1;
        else
            printf("glucx-analyze whatif: %s/whatif.txt, %s/whatif.json\n", out, out);
    } else if (glucx_an_wi_write_text(doc, stdout, (size_t)rows) != 0) {
        rc = 1;
    }
out:
    json_decref(doc);
    glucx_an_wi_free(&wi);
    if (tmpdir[0])
        remove_tree(tmpdir);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "diff") == 0)
        return diff_main(argc, argv);
    if (argc > 1 && strcmp(argv[1], "export") == 0)
        return export_main(argc, argv);
    if (argc > 1 && strcmp(argv[1], "whatif") == 0)
        return whatif_main(argc, argv);
    return analyze_main(argc, argv);
}
