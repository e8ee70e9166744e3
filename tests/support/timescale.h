/* Test helpers: the suite's time-scale factor (no other dependency, so that any test program,
 * C or C++, can compile tests/support/timescale.c in). */
#ifndef GLUCX_TEST_TIMESCALE_H
#define GLUCX_TEST_TIMESCALE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The suite's one time-scale factor: GLUCX_TEST_TIME_SCALE (a positive number, default 1; see
 * tests/README.md). Every deadline a test sets for another process, thread or rank (waits,
 * communicator and store timeouts, "failure found within" bounds) is a base value for a loaded
 * 2-core machine multiplied by it, so a slower machine (sanitizers, valgrind, heavy load) scales
 * them all at once instead of editing tests. Values below 1 are allowed (quick local runs).
 */
double glucx_test_time_scale(void);

/** @p base_ms scaled by glucx_test_time_scale() (at least 1 ms). */
int64_t glucx_test_ms(int64_t base_ms);

#ifdef __cplusplus
}
#endif

#endif
