/**
 * @file glucx/status.h
 * @brief Status codes returned by every fallible glucx function.
 *
 * Codes and their texts come from one X-macro list, so they cannot drift.
 * glucx never reports errors through errno and never calls abort().
 */
#ifndef GLUCX_STATUS_H
#define GLUCX_STATUS_H

#include <glucx/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, text) */
#define GLUCX_STATUS_MAP(X)                                                                        \
    X(OK, 0, "success")                                                                            \
    X(INPROGRESS, 1, "operation in progress")                                                      \
    X(ERR_INVALID_ARG, -1, "invalid argument")                                                     \
    X(ERR_NO_MEMORY, -2, "out of memory")                                                          \
    X(ERR_TRANSPORT, -3, "transport error")                                                        \
    X(ERR_TIMEOUT, -4, "Timed out")                                                                \
    X(ERR_PEER_FAILED, -5, "peer failed")                                                          \
    X(ERR_MISMATCH, -6, "arguments differ across ranks")                                           \
    X(ERR_ABORTED, -7, "operation aborted")                                                        \
    X(ERR_UNSUPPORTED, -8, "unsupported")                                                          \
    X(ERR_TRUNCATED, -9, "message longer than the posted buffer")                                  \
    X(ERR_STORE, -10, "rendezvous store error")

/** Status of a glucx call: GLUCX_OK (0), GLUCX_INPROGRESS (1) or a negative error. */
typedef enum glucx_status {
#define GLUCX_STATUS_ENUM_(name, value, text) GLUCX_##name = (value),
    GLUCX_STATUS_MAP(GLUCX_STATUS_ENUM_)
#undef GLUCX_STATUS_ENUM_
} glucx_status_t;

/**
 * Short, static, human-readable text for a status.
 *
 * @param status any value; unknown values give "unknown status".
 * @return a string with static storage duration (never NULL, never freed by the caller).
 * Thread-safe.
 */
GLUCX_API const char *glucx_status_string(glucx_status_t status);

/**
 * Detailed message of the last failing glucx call made by the calling thread, naming the
 * operation, sizes and peer where they apply (e.g. "allreduce: count mismatch: rank 0 has 1024
 * elements (4096 bytes), peer rank 2 sent 2048 bytes").
 *
 * @return a thread-local string owned by glucx, valid until the next failing glucx call in this
 *         thread; "" when no call has failed. Thread-safe (each thread has its own text).
 */
GLUCX_API const char *glucx_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
