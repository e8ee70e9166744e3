/**
 * @file analysis/plugin/report/sink.h
 * @brief sink.glucx.report: consumes glucx events (source.ctf.fs -> filter.utils.muxer -> this)
 *        and feeds the analysis engine. Used by the plugin (babeltrace2 CLI) and by glucx-analyze,
 *        which creates the same component class in-process and passes a control block.
 *
 * Parameters (CLI): output (string, required: output directory), timeline (bool, default true),
 * template (string: dashboard template; default: GLUCX_DASHBOARD_TEMPLATE, the build tree, the
 * install prefix), pid-file (string: a process list, glucx-trace record's DIR/glucx-pids: the
 * events of processes it does not list are left out and counted, as glucx-analyze does; it
 * applies to every input; an unreadable file fails the component's initialisation). With the
 * CLI the sink writes the reports when the input ends, or a partial report when the graph stops
 * early.
 */
#ifndef GLUCX_ANALYSIS_SINK_H
#define GLUCX_ANALYSIS_SINK_H

#include <stdio.h>

#include <babeltrace2/babeltrace.h>

#include "core/engine.h"

/** The processes of one trace's job (glucx-trace record's DIR/glucx-pids): sorted, unique. */
typedef struct glucx_an_pidset {
    int64_t *pids; /**< ascending vpids; may be NULL when n == 0 (an empty list keeps nothing) */
    size_t n;
} glucx_an_pidset_t;

/**
 * Read a process list into @p set (empty on entry; set->pids allocated, the caller frees it): one
 * decimal pid per line, sorted and made unique; lines that are not a positive pid are counted in
 * @p bad_p and skipped. 0, or -1 with a message naming @p path in @p why (@p len bytes).
 */
int glucx_an_pidset_read(const char *path, glucx_an_pidset_t *set, uint64_t *bad_p, char *why,
                         size_t len);

/** Prefix of the trace-name parameter glucx-analyze gives source i ("<prefix><i>"; source.ctf.fs
 *  then names the trace "<hostname>/<prefix><i>"): the sink finds an event's input index, hence
 *  its process list, from its trace's name. */
#define GLUCX_AN_TRACE_NAME_PREFIX "glucx-analyze-input-"

/** Control block that glucx-analyze passes as initialisation data (borrowed by the sink). */
typedef struct glucx_an_sink_ctl {
    glucx_an_engine_t *engine; /**< the tool's engine: the sink feeds it, the tool finishes it */
    int progress;              /**< draw a progress bar on stderr */
    int64_t range_begin_ns, range_end_ns; /**< the traces' time range (progress) */
    int ended;                            /**< set by the sink when the input ended normally */
    /** Process lists by input index (@p ninputs entries, borrowed; NULL entry or NULL array:
     *  no filter). A glucx event of input i whose vpid pidsets[i] does not hold is not fed to
     *  the engine but counted below (events without a vpid context are kept). */
    const glucx_an_pidset_t *const *pidsets;
    size_t ninputs;
    uint64_t left_out_events;    /**< out: events left out by the process lists */
    uint64_t left_out_processes; /**< out: distinct (input, vpid) pairs left out */
    /** Input paths by index (@p ninputs entries, borrowed; NULL: none), to name a trace in
     *  messages (else its Babeltrace trace name is used). */
    const char *const *paths;
    /** When not NULL (borrowed, open for writing): every glucx event fed to the engine is also
     *  written there, one JSON object per line, as the analysis read it (glucx-analyze
     *  --dump-events; format in glucx-analyze's usage). A write error stops the graph. */
    FILE *dump;
    /** out: why the input was refused ("" if it was not): a trace whose glucx events have a
     *  trace format version this sink does not read (EVENTS.md, "Format version"), naming the
     *  trace and both versions. The sink then stopped the graph with an error before feeding
     *  any event of that trace's refused classes; the caller must not write a report. */
    char refused[512];
    /** Host index by input index (@p ninputs entries, borrowed; NULL: all 0): set as each
     *  event's glucx_an_event_t.host_index, the clock it was stamped with (glucx-analyze: one
     *  TRACE argument per host, numbered in argument order). */
    const int *hosts;
} glucx_an_sink_ctl_t;

bt_component_class_initialize_method_status
glucx_an_sink_init(bt_self_component_sink *self, bt_self_component_sink_configuration *config,
                   const bt_value *params, void *init_data);
void glucx_an_sink_finalize(bt_self_component_sink *self);
bt_component_class_sink_graph_is_configured_method_status
glucx_an_sink_graph_is_configured(bt_self_component_sink *self);
bt_component_class_sink_consume_method_status glucx_an_sink_consume(bt_self_component_sink *self);

/**
 * The dashboard template to use: @p explicit_path if not NULL, else $GLUCX_DASHBOARD_TEMPLATE,
 * else the build tree's template, else <prefix>/share/glucx/report-template.html; NULL when none
 * of them is a readable file.
 */
const char *glucx_an_find_template(const char *explicit_path);

/** The warning on stderr that no template was found (@p explicit_template: the one asked for, or
 *  NULL) and so @p html_name ("report.html", "diff.html") is not written. */
void glucx_an_no_template_warn(const char *explicit_template, const char *html_name);

/** Write report.html next to report.json; a warning on stderr (never a failure) if impossible. */
void glucx_an_html_or_warn(const char *dir, const char *explicit_template);

#endif
