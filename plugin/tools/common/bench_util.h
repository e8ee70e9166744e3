/**
 * Tools' helpers shared by the benchmarks (glucx-bench, glucx-p2p-bench, glucx-gloo-bench): size
 * arguments and medians.
 */
#ifndef GLUCX_TOOLS_BENCH_UTIL_H
#define GLUCX_TOOLS_BENCH_UTIL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Parse a byte count: decimal digits with an optional binary suffix K, M or G (either case) and
 * an optional B ("4096", "1K", "16M", "1GB").
 * @param out receives the count on success (at most SIZE_MAX / 4); untouched on failure.
 * @return 0 on success, -1 for anything else (sign, junk, overflow). Thread-safe.
 */
int glucx_tool_parse_size(const char *s, size_t *out);

/** Sort @p n values ascending, in place. Thread-safe (touches only @p v). */
void glucx_tool_sort(double *v, int n);

/**
 * Median of @p n (>= 1) values; sorts @p v in place. The mean of the two middle values when
 * @p n is even. Thread-safe (touches only @p v).
 */
double glucx_tool_median(double *v, int n);

#ifdef __cplusplus
}
#endif

#endif
