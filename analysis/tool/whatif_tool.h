/**
 * @file analysis/tool/whatif_tool.h
 * @brief The tool side of `glucx-analyze whatif`: the measured run read from a report directory
 *        (report.json and the event dump events.jsonl next to it), the new setup built from a
 *        topology file with libglucx's own reader, and libglucx's own cost functions and
 *        selection map as the replay's cost function (analysis/core/whatif.h).
 */
#ifndef GLUCX_ANALYSIS_WHATIF_TOOL_H
#define GLUCX_ANALYSIS_WHATIF_TOOL_H

#include <stddef.h>

#include "core/whatif.h"

/** At most this many --link-rate options. */
#define GLUCX_WI_MAX_RATES 32

/** What the command line asks for. Strings borrowed from argv. */
typedef struct glucx_wi_args {
    const char *topology;      /**< the new setup's topology file (required) */
    const char *from_topology; /**< the measured run's topology file (NULL: @p topology as the
                                    file says, before --link-rate) */
    const char *calibration;   /**< a glucx-bench --calibrate file for both, or NULL */
    const char *tune; /**< GLUCX_TUNE syntax forcing algorithms on the new setup, or NULL */
    const char *rates[GLUCX_WI_MAX_RATES]; /**< LINK=RATE texts */
    int nrates;
    int ranks;           /**< --ranks N, 0: as measured */
    int mode;            /**< GLUCX_AN_WI_RELATIVE / ABSOLUTE */
    int keep_algorithms; /**< keep each collective's measured algorithm where it applies */
} glucx_wi_args_t;

/**
 * Read the measured run of report directory @p dir (report.json for the iterations of the
 * collectives, events.jsonl, as `glucx-analyze --dump-events` writes it, for each rank's
 * coll_begin / coll_end) into @p in (initialised by the caller). Processes are told apart by
 * (host, vpid) of their comm_init. @return 0, or -1 with a message in @p err naming the file,
 * its line and what is wrong.
 */
int glucx_wi_load(const char *dir, glucx_an_wi_input_t *in, char *err, size_t errlen);

/**
 * Run the what-if of @p in with @p a: build both topologies (--link-rate applied to the new
 * one), the selection map with --tune, check the rank counts, replay with libglucx's costs.
 * @return the whatif.json document (caller owns), or NULL with *status_p = 2 for bad arguments
 *         (the message names the argument and its value: unknown link, bad rate, bad tune
 *         string, rank counts that differ) or 1 for a failure of the replay; @p err holds the
 *         message.
 */
json_t *glucx_wi_run(const glucx_an_wi_input_t *in, const glucx_wi_args_t *a, int *status_p,
                     char *err, size_t errlen);

#endif
