/** Internal: monotonic time and deadlines in nanoseconds. */
#ifndef GLUCX_UTIL_TIME_H
#define GLUCX_UTIL_TIME_H

#include <stdint.h>
#include <time.h>

#define GLUCX_NO_DEADLINE INT64_MAX

/** CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t glucx_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/** Deadline @p timeout_ms from now; a negative timeout means none. */
static inline int64_t glucx_deadline_ns(int64_t timeout_ms)
{
    if (timeout_ms < 0 || timeout_ms > INT64_MAX / 2000000)
        return GLUCX_NO_DEADLINE;
    return glucx_now_ns() + timeout_ms * 1000000;
}

#endif
