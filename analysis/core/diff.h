/**
 * @file analysis/core/diff.h
 * @brief The diff of two runs (`glucx-analyze diff A B -o OUT`): the change of the mean iteration
 *        time from run A to run B, decomposed into phases, collectives, links, decisions and
 *        ranks, each list sorted by absolute contribution (METRICS.md, "Diff of two runs").
 *
 * Works on two report.json documents as glucx-analyze writes them (report.schema.json); the
 * tool analyses a trace first when it is given one. No Babeltrace. Not thread-safe for one
 * document, otherwise reentrant (no global state).
 */
#ifndef GLUCX_ANALYSIS_DIFF_H
#define GLUCX_ANALYSIS_DIFF_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/** The version of diff.json's layout (its "diff_version"). */
#define GLUCX_AN_DIFF_VERSION 1

/**
 * Read and check one report.
 *
 * @param path     in: a report.json file, or a directory holding one (report.json in it).
 * @param err      out: on failure, a sentence naming the file and what is wrong with it (cannot
 *                 be read and the errno text, not JSON and the parser's line and column, or which
 *                 field of the report schema is missing or of the wrong type); may be NULL.
 * @param errlen   size of @p err in bytes.
 * @return a new reference the caller owns (json_decref()), or NULL on failure. Only the fields
 *         the diff needs are checked: the top level is an object with `schema_version` 1 and a
 *         `summary` object whose `iterations` and `mean_iteration_ns` are integers >= 0. The
 *         other sections may be missing (older reports): the diff then says so.
 */
json_t *glucx_an_diff_load(const char *path, char *err, size_t errlen);

/**
 * Diff two reports.
 *
 * @param a, b         in, borrowed: reports checked by glucx_an_diff_load() (or built alike);
 *                     B minus A is the difference.
 * @param label_a, label_b  in, borrowed: how each run is named in the output (its path); copied.
 * @param err, errlen  out: on failure, the reason (out of memory, a report that fails the
 *                     checks of glucx_an_diff_load()); may be NULL.
 * @return a new diff.json document the caller owns (json_decref()), or NULL on failure. Every
 *         contribution is in ns per iteration and as a share of the mean iteration-time
 *         difference (null when the difference is 0). Layout: METRICS.md, "Diff of two runs".
 */
json_t *glucx_an_diff_compute(const json_t *a, const json_t *b, const char *label_a,
                              const char *label_b, char *err, size_t errlen);

/**
 * Write the text form of a diff (diff.txt): the cause named first, then each section, top
 * contributors first, at most @p max_rows rows each.
 *
 * @param diff      in, borrowed: a document from glucx_an_diff_compute().
 * @param f         in: an open stream (not closed).
 * @param max_rows  rows per section (0: every row).
 * @return 0, or -1 when writing failed (errno set by stdio).
 */
int glucx_an_diff_write_text(const json_t *diff, FILE *f, size_t max_rows);

/**
 * Write diff.json and diff.txt into @p dir (created if missing). Each file is written under a
 * temporary name in @p dir and renamed when complete, so a failed write leaves no partial file
 * under its final name.
 *
 * @param diff    in, borrowed: a document from glucx_an_diff_compute().
 * @param dir     in: the output directory.
 * @param max_rows  rows per section in diff.txt (0: every row); diff.json has every row.
 * @param err, errlen  out: on failure, the operation, the file and the errno text.
 * @return 0, or -1 on failure (a file already renamed into place stays).
 */
int glucx_an_diff_write(const json_t *diff, const char *dir, size_t max_rows, char *err,
                        size_t errlen);

#endif
