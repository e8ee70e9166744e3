#include "util/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static _Thread_local char last_error[1024];

glucx_status_t glucx_error(glucx_status_t status, const char *fmt, ...)
{
    /* format into a local buffer first: callers often pass glucx_error_text() as an argument */
    char text[sizeof(last_error)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    memcpy(last_error, text, sizeof(text));
    glucx_debug("error %s: %s", glucx_status_string(status), last_error);
    return status;
}

const char *glucx_error_text(void)
{
    return last_error;
}

const char *glucx_last_error(void)
{
    return last_error;
}

const char *glucx_status_string(glucx_status_t status)
{
    switch (status) {
#define GLUCX_STATUS_CASE_(name, value, text)                                              \
    case GLUCX_##name:                                                                     \
        return text;
        GLUCX_STATUS_MAP(GLUCX_STATUS_CASE_)
#undef GLUCX_STATUS_CASE_
    }
    return "unknown status";
}

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

glucx_log_level_t glucx_log_level(void)
{
    static int level = -1; /* racy first read is benign: every thread computes the same value */
    if (level < 0) {
        int l = GLUCX_LOG_WARN;
        const char *env = getenv("GLUCX_LOG_LEVEL");
        if (env != NULL) {
            for (int i = 0; i < (int)(sizeof(level_names) / sizeof(level_names[0])); i++)
                if (strcasecmp(env, level_names[i]) == 0)
                    l = i;
        }
        level = l;
    }
    return (glucx_log_level_t)level;
}

void glucx_log(glucx_log_level_t level, const char *fmt, ...)
{
    if (!GLUCX_LOG_ON(level))
        return;
    char line[1200];
    int n = snprintf(line, sizeof(line), "[glucx %s %d] ", level_names[level], (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len] = '\n';
    /* one write(2) so lines of concurrent ranks do not interleave */
    ssize_t rc = write(STDERR_FILENO, line, len + 1);
    (void)rc;
}
