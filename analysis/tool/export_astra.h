/*
 * glucx-analyze export: a run's topology and collective algorithm choices as ASTRA-sim's
 * network and system configuration files (analysis/README.md, "Export to ASTRA-sim").
 */
#ifndef GLUCX_ANALYSIS_EXPORT_ASTRA_H
#define GLUCX_ANALYSIS_EXPORT_ASTRA_H

#include <stddef.h>

/**
 * Write ASTRA-sim 2.0 input files for the run a glucx-analyze report describes.
 *
 * @param report      report.json written by glucx-analyze (read; borrowed)
 * @param topology    the topology file the run used (GLUCX_TOPOLOGY; ASTRA-sim's analytical
 *                    network format, read with libglucx's own reader)
 * @param calibration a glucx-bench --calibrate file whose costs apply (its copy rate gives
 *                    local-mem-bw), or NULL for the defaults
 * @param out_dir     an existing or new directory; network.yml (the topology's dimensions),
 *                    system.json (per ASTRA-sim collective: the implementation per dimension of
 *                    the glucx algorithm that took the most time of that kind in the run, the
 *                    chunks it keeps in flight) and export.json (every kind's algorithms with
 *                    their counts and times, how each maps, what could not be exported) are
 *                    written there, replacing files of those names
 * @param why, len    on failure, a message naming the file and what is wrong
 * @return 0; 1 on bad input (unreadable or invalid report or topology, a report from another
 *         tool, a report whose ranks do not fit the topology) or an output that cannot be
 *         written. Not thread-safe (libglucx's last-error text).
 */
int glucx_an_export_astra(const char *report, const char *topology, const char *calibration,
                          const char *out_dir, char *why, size_t len);

#endif
