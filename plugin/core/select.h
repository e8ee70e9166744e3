/**
 * Internal: algorithm selection (glucx_select_*). At communicator creation, for every collective,
 * a map from message-size ranges to algorithms is built from the cost functions of the
 * algorithm table (argmin of predicted time at 0 and every power of two; where it changes, the
 * range boundary is the exact crossover size, found by bisection) and then overridden by
 * GLUCX_TUNE ranges — the scheme of UCC's score maps and UCC_TL_UCP_TUNE, written afresh.
 */
#ifndef GLUCX_CORE_SELECT_H
#define GLUCX_CORE_SELECT_H

#include <stddef.h>

#include "coll/coll.h"

/** One range [lo, hi) of message bytes and the algorithm index chosen for it. */
typedef struct glucx_select_range {
    size_t lo;
    size_t hi; /**< exclusive; SIZE_MAX means unbounded */
    int alg;
    int forced; /**< 1 if set by GLUCX_TUNE (no fallback to others on UNSUPPORTED) */
} glucx_select_range_t;

#define GLUCX_SELECT_MAX_RANGES 80

typedef struct glucx_select {
    int nranges[GLUCX_COLL_COUNT];
    glucx_select_range_t ranges[GLUCX_COLL_COUNT][GLUCX_SELECT_MAX_RANGES];
} glucx_select_t;

/** One parsed GLUCX_TUNE entry. */
typedef struct glucx_tune_entry {
    unsigned colls; /**< bit mask of glucx_coll_t */
    size_t lo, hi;  /**< [lo, hi) bytes */
    int alg;        /**< index in each named collective's table (names must exist in all) */
    char alg_name[32];
} glucx_tune_entry_t;

#define GLUCX_TUNE_MAX_ENTRIES 64

typedef struct glucx_tune {
    int count;
    glucx_tune_entry_t entries[GLUCX_TUNE_MAX_ENTRIES];
} glucx_tune_t;

/**
 * Parse a GLUCX_TUNE string: entries "COLL[,COLL...]:[LO-HI:]ALG" joined by '#'; LO and HI are
 * sizes in bytes with optional K/M/G (binary) suffix, HI may be "inf"; without a range the entry
 * covers every size. Later entries win where they overlap. An empty string has no entries.
 * @return GLUCX_OK or GLUCX_ERR_INVALID_ARG naming the entry and what is wrong in it.
 */
glucx_status_t glucx_tune_parse(const char *text, glucx_tune_t *tune);

/**
 * Build the selection map for @p topo (its size is the communicator size) with @p tune applied.
 * Untuned, each range starts at the size where its algorithm becomes the cheapest, so the map's
 * choice is the argmin of the cost functions at every power of two and at every boundary (ties:
 * table order); a change of argmin and back between two powers of two is not seen.
 * Pure: no I/O. @return GLUCX_OK.
 */
glucx_status_t glucx_select_build(const glucx_topo_t *topo, const glucx_tune_t *tune,
                                  glucx_select_t *sel);

/** The range of @p sel that covers @p bytes for @p coll (never NULL for a built map). */
const glucx_select_range_t *glucx_select_lookup(const glucx_select_t *sel, glucx_coll_t coll,
                                                size_t bytes);

/**
 * Algorithms of @p coll in increasing predicted cost at @p bytes, skipping those with infinite
 * cost; writes at most @p max indices to @p order (and, if @p costs is not NULL, their predicted
 * costs in ns) and returns how many.
 */
int glucx_select_by_cost(const glucx_topo_t *topo, glucx_coll_t coll, size_t bytes, int *order,
                         double *costs, int max);

/** Print the map of @p coll as "0-4K:recursive_doubling 4K-inf:ring" into buf. */
void glucx_select_format(const glucx_select_t *sel, glucx_coll_t coll, char *buf, size_t len);

/** A size as the map prints it: "inf" for SIZE_MAX, "4K", "16M", "1G" when exact, else bytes. */
void glucx_select_format_size(size_t v, char *buf, size_t len);

#endif
