/**
 * @file analysis/core/engine.h
 * @brief The streaming analysis of glucx events: feed events in time order (as the muxer gives
 *        them), then finish to write report.json, report.txt and timeline.json.
 *
 * Independent of Babeltrace: the sink (plugin/report/sink.c) converts messages to
 * glucx_an_event_t, tests build the events by hand. Definitions of everything computed:
 * analysis/METRICS.md. Memory is bounded by the open iterations (plus a bounded buffer of the
 * first collectives of a communicator while its iterations are inferred); the long lists of
 * the report (iterations, collectives, decisions) go to temporary files in the output
 * directory as they complete. Not thread-safe: one engine per thread.
 */
#ifndef GLUCX_ANALYSIS_ENGINE_H
#define GLUCX_ANALYSIS_ENGINE_H

#include <stdint.h>

#include "clocksync.h"
#include "event.h"

typedef struct glucx_an_engine glucx_an_engine_t;

typedef struct glucx_an_options {
    const char *out_dir;          /**< output directory (created if missing); required */
    int timeline;                 /**< write timeline.json (1) or not (0) */
    unsigned infer_max_colls;     /**< collectives buffered to infer iterations (0: 256) */
    unsigned max_open_iterations; /**< per communicator; older ones close incomplete (0: 16) */
    long list_limit;              /**< at most this many entries each in report.json's iterations,
                                       collectives and decisions lists (every one still counts in the
                                       totals); 0: 10000, negative: no limit */
    /** Pass 1 of a multi-host merge (borrowed, not NULL to enable): every event's time goes to
     *  glucx_an_clock_seen() and every matched send/receive pair (matched as messages.c
     *  matches them) to glucx_an_clock_add(), with each side's host (the events' host_index)
     *  and process; nothing else is analysed. The engine writes no report: destroy it without
     *  glucx_an_engine_finish(). */
    glucx_an_clock_t *clock_collect;
    /** Pass 2 (borrowed, estimated with glucx_an_clock_estimate(), must outlive the engine): each
     *  event's time is corrected with glucx_an_clock_apply() (offset, drift and logical clock)
     *  and the events are merged in corrected time order (a reorder window as wide as the
     *  hosts' offsets) before the analysis; report.json's clock section gives the estimate.
     *  Events may then be fed in the raw order the muxer gives (non-decreasing raw time). */
    const glucx_an_clock_t *clock;
} glucx_an_options_t;

/**
 * Create an engine writing into @p opt->out_dir. Returns NULL on failure with a message in
 * @p err (naming the directory and the errno text).
 */
glucx_an_engine_t *glucx_an_engine_create(const glucx_an_options_t *opt, char *err, size_t errlen);

/**
 * Correct the events' times with @p clock (borrowed, estimated, must outlive the engine), as
 * glucx_an_options_t.clock does: for a caller that creates the engine before the estimate.
 * Returns 0, or -1 when events were already fed or the engine collects (clock_collect).
 */
int glucx_an_engine_set_clock(glucx_an_engine_t *e, const glucx_an_clock_t *clock);

/** Free everything; accepts NULL. Removes the temporary files. */
void glucx_an_engine_destroy(glucx_an_engine_t *e);

/**
 * One event, in non-decreasing timestamp order across all events. Borrowed: the engine
 * copies what it keeps. Returns 0, or -1 on an I/O or memory failure (glucx_an_engine_error()).
 */
int glucx_an_engine_feed(glucx_an_engine_t *e, const glucx_an_event_t *ev);

/** The trace lost @p events events / @p packets packets (Babeltrace discarded messages). */
void glucx_an_engine_discarded(glucx_an_engine_t *e, uint64_t events, uint64_t packets);

/** Mark the report partial with a reason (printf format); reasons are kept once each. */
void glucx_an_engine_partial(glucx_an_engine_t *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** A warning for the report (printf format). */
void glucx_an_engine_warn(glucx_an_engine_t *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** Trace facts for the report: an input path (call once per path), the tracer text. */
void glucx_an_engine_add_path(glucx_an_engine_t *e, const char *path);
void glucx_an_engine_set_tracer(glucx_an_engine_t *e, const char *tracer);
/** Tool facts: version of libbabeltrace2 ("2.0.4"), the command line. Borrowed, copied. */
void glucx_an_engine_set_tool(glucx_an_engine_t *e, const char *bt_version, const char *command);

/** An event class named glucx:@p name that EVENTS.md does not list (ignored, reported). */
void glucx_an_engine_unknown_event(glucx_an_engine_t *e, const char *name);
/** An event class whose fields differ from EVENTS.md ABI 1 (its events are ignored). */
void glucx_an_engine_mismatched_event(glucx_an_engine_t *e, const char *name, const char *why);
/**
 * A process list (glucx-trace record's DIR/glucx-pids, path borrowed and copied) that filters
 * the events of one of the traces: reported in trace.pid_files. Call once per file.
 */
void glucx_an_engine_pid_file(glucx_an_engine_t *e, const char *path);
/**
 * @p events glucx events of @p processes processes (distinct vpids per trace) were not fed
 * because their trace's process list does not name them: another traced job ran at the same
 * time. Adds to trace.left_out_events / left_out_processes and puts one warning, with the totals,
 * first in the report's warnings. Call after the input ended (may be called again: it adds).
 */
void glucx_an_engine_left_out(glucx_an_engine_t *e, uint64_t events, uint64_t processes);
/** An event not read (other provider, bad class): counted in events_ignored. */
void glucx_an_engine_ignored(glucx_an_engine_t *e);

/**
 * End of input: close open iterations and collectives, compute the verdict, write
 * report.json, report.txt and (if enabled) timeline.json into the output directory.
 * Call once. Returns 0, or -1 with glucx_an_engine_error().
 */
int glucx_an_engine_finish(glucx_an_engine_t *e);

/** Whether the report is partial (after finish). */
int glucx_an_engine_is_partial(const glucx_an_engine_t *e);
/** Number of glucx events fed so far. */
uint64_t glucx_an_engine_events(const glucx_an_engine_t *e);
/** The last error text ("" if none). */
const char *glucx_an_engine_error(const glucx_an_engine_t *e);
/** The verdict sentence (after finish; "" before). */
const char *glucx_an_engine_verdict(const glucx_an_engine_t *e);

/** mkdir -p @p path: 0, or -1 with errno set. */
int glucx_an_mkdir_p(const char *path);

/**
 * Fill the dashboard template: write DIR/@p html_name, the template at @p template_path with its
 * one marker "@GLUCX_REPORT_JSON@" replaced by the text of DIR/@p json_name, every '<' written as
 * \u003c (dashboards/README.md, "Filling the template"). The file is written as DIR/.NAME.tmp and
 * renamed when complete. The same template shows a report.json and a diff.json (the page tells
 * them apart by the diff's "diff_version").
 * Returns 0; -1 with a message in @p err when the template is the problem (unreadable, marker
 * absent or repeated); -2 when the JSON cannot be read or the output cannot be written.
 */
int glucx_an_fill_template(const char *dir, const char *json_name, const char *html_name,
                           const char *template_path, char *err, size_t errlen);

/** glucx_an_fill_template(dir, "report.json", "report.html", ...): DIR/report.html. */
int glucx_an_write_html(const char *dir, const char *template_path, char *err, size_t errlen);

#endif
