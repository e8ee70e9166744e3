/** Internal: thread-local error text behind glucx_last_error(), and logging (GLUCX_LOG_LEVEL). */
#ifndef GLUCX_UTIL_ERROR_H
#define GLUCX_UTIL_ERROR_H

#include <stdarg.h>

#include <glucx/status.h>

/** Log levels, lowest number most severe. GLUCX_LOG_LEVEL takes the names in lower case. */
typedef enum glucx_log_level {
    GLUCX_LOG_ERROR,
    GLUCX_LOG_WARN,
    GLUCX_LOG_INFO,
    GLUCX_LOG_DEBUG,
    GLUCX_LOG_TRACE,
} glucx_log_level_t;

/**
 * Record @p status with a printf-style message as the calling thread's last error, log it at
 * debug level, and return @p status (so callers can `return glucx_error(...)`).
 */
glucx_status_t glucx_error(glucx_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** The calling thread's last error text (never NULL). */
const char *glucx_error_text(void);

/** Current log level (from GLUCX_LOG_LEVEL: error, warn (default), info, debug, trace). */
glucx_log_level_t glucx_log_level(void);

/** Log to stderr as "[glucx <level> pid] message" when @p level is enabled. Thread-safe. */
void glucx_log(glucx_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define GLUCX_LOG_ON(level) ((level) <= glucx_log_level())
#define glucx_warn(...) glucx_log(GLUCX_LOG_WARN, __VA_ARGS__)
#define glucx_info(...) glucx_log(GLUCX_LOG_INFO, __VA_ARGS__)
#define glucx_debug(...)                                                                   \
    do {                                                                                   \
        if (GLUCX_LOG_ON(GLUCX_LOG_DEBUG))                                                 \
            glucx_log(GLUCX_LOG_DEBUG, __VA_ARGS__);                                       \
    } while (0)

#endif
