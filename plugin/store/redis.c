/*
 * Redis store: keys live on a Redis server as "<prefix><key>" and are written with SET and read
 * with GET through one blocking hiredis connection per store.
 *
 * - Values are sent as length-delimited arguments (redisCommandArgv), so they are binary-safe.
 * - get polls GET with a backoff of 1 ms doubling to 50 ms until the deadline; the mutex that
 *   serialises use of the connection is held for one command at a time, never across a sleep.
 * - Every command runs with a socket timeout equal to the connection timeout, so a stalled
 *   server cannot block a caller for longer than that beyond its own deadline.
 * - A command that fails at the connection level (server restarted, connection dropped) is
 *   retried once on a fresh connection; if that fails too the call returns GLUCX_ERR_STORE.
 * - hiredis writes with write(2): a write to a connection the server closed would raise SIGPIPE
 *   and kill the host process. Each command blocks SIGPIPE in the calling thread and discards a
 *   SIGPIPE it caused, without changing the process' signal dispositions.
 */
#include <glucx/store.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "util/error.h"
#include "util/time.h"

#define REDIS_STORE_DEFAULT_TIMEOUT_MS 10000
#define REDIS_STORE_BACKOFF_MIN_NS (1000000LL)  /* 1 ms */
#define REDIS_STORE_BACKOFF_MAX_NS (50000000LL) /* 50 ms */

typedef struct redis_store {
    char *host; /* owned */
    int port;
    char *prefix; /* owned, "" for none */
    size_t prefix_len;
    struct timeval timeout;
    int64_t timeout_ms;
    pthread_mutex_t lock; /* protects ctx */
    redisContext *ctx;    /* NULL after a failed reconnect */
} redis_store_t;

/* Blocks SIGPIPE in this thread for the duration of one hiredis call. */
typedef struct {
    sigset_t old_mask;
    int was_pending;
} redis_sigpipe_guard_t;

static void redis_sigpipe_block(redis_sigpipe_guard_t *guard)
{
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    sigpending(&pending);
    guard->was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &guard->old_mask);
}

static void redis_sigpipe_unblock(redis_sigpipe_guard_t *guard)
{
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    sigpending(&pending);
    if (!guard->was_pending && sigismember(&pending, SIGPIPE) == 1) {
        /* Our write raised it: consume it before unblocking so it is never delivered. */
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &guard->old_mask, NULL);
}

/* Open a connection; on failure leaves ctx NULL and copies the reason into @p why. */
static redisContext *redis_store_connect(redis_store_t *rs, char *why, size_t why_size)
{
    redisContext *ctx = redisConnectWithTimeout(rs->host, rs->port, rs->timeout);
    if (ctx == NULL) {
        snprintf(why, why_size, "cannot allocate a hiredis context");
        return NULL;
    }
    if (ctx->err != 0) {
        snprintf(why, why_size, "%s", ctx->errstr);
        redisFree(ctx);
        return NULL;
    }
    if (redisSetTimeout(ctx, rs->timeout) != REDIS_OK) {
        snprintf(why, why_size, "cannot set the socket timeout: %s", ctx->errstr);
        redisFree(ctx);
        return NULL;
    }
    return ctx;
}

/*
 * Run one command under the lock, reconnecting and retrying once when the connection fails.
 * @return the reply (caller frees it with freeReplyObject()), or NULL with @p why filled.
 */
static redisReply *redis_store_command(redis_store_t *rs, int argc, const char **argv,
                                       const size_t *argv_len, char *why, size_t why_size)
{
    redisReply *reply = NULL;
    redis_sigpipe_guard_t guard;
    redis_sigpipe_block(&guard);
    pthread_mutex_lock(&rs->lock);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (rs->ctx == NULL || rs->ctx->err != 0 || attempt > 0) {
            /* (Re)connect: the old connection is unusable after any hiredis I/O error. */
            if (rs->ctx != NULL)
                redisFree(rs->ctx);
            rs->ctx = redis_store_connect(rs, why, why_size);
            if (rs->ctx == NULL)
                break;
        }
        reply = redisCommandArgv(rs->ctx, argc, argv, argv_len);
        if (reply != NULL)
            break;
        snprintf(why, why_size, "%s", rs->ctx->err != 0 ? rs->ctx->errstr : "no reply");
    }
    pthread_mutex_unlock(&rs->lock);
    redis_sigpipe_unblock(&guard);
    return reply;
}

/* "<prefix><key>" into a new buffer; @p len_p receives its length. */
static char *redis_store_full_key(const redis_store_t *rs, const char *key, size_t *len_p)
{
    size_t key_len = strlen(key);
    char *full = malloc(rs->prefix_len + key_len + 1);
    if (full == NULL)
        return NULL;
    memcpy(full, rs->prefix, rs->prefix_len);
    memcpy(full + rs->prefix_len, key, key_len + 1);
    *len_p = rs->prefix_len + key_len;
    return full;
}

static glucx_status_t redis_store_set(void *arg, const char *key, const void *value, size_t bytes)
{
    redis_store_t *rs = arg;
    size_t full_len;
    char *full = redis_store_full_key(rs, key, &full_len);
    if (full == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY,
                           "redis store set: key '%s%s' on %s:%d: cannot "
                           "allocate the key",
                           rs->prefix, key, rs->host, rs->port);

    const char *argv[3] = {"SET", full, value};
    size_t argv_len[3] = {3, full_len, bytes};
    char why[160] = "";
    glucx_status_t status = GLUCX_OK;
    redisReply *reply = redis_store_command(rs, 3, argv, argv_len, why, sizeof(why));
    if (reply == NULL)
        status = glucx_error(GLUCX_ERR_STORE, "redis store set: key '%s', %zu bytes on %s:%d: %s",
                             full, bytes, rs->host, rs->port, why);
    else if (reply->type == REDIS_REPLY_ERROR)
        status = glucx_error(GLUCX_ERR_STORE,
                             "redis store set: key '%s', %zu bytes on %s:%d: server error: %.*s",
                             full, bytes, rs->host, rs->port, (int)reply->len, reply->str);
    else if (reply->type != REDIS_REPLY_STATUS)
        status = glucx_error(GLUCX_ERR_STORE,
                             "redis store set: key '%s', %zu bytes on %s:%d: unexpected reply "
                             "type %d",
                             full, bytes, rs->host, rs->port, reply->type);
    if (reply != NULL)
        freeReplyObject(reply);
    free(full);
    return status;
}

static glucx_status_t redis_store_get(void *arg, const char *key, int64_t timeout_ms,
                                      void **value_p, size_t *bytes_p)
{
    redis_store_t *rs = arg;
    size_t full_len;
    char *full = redis_store_full_key(rs, key, &full_len);
    if (full == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY,
                           "redis store get: key '%s%s' on %s:%d: cannot "
                           "allocate the key",
                           rs->prefix, key, rs->host, rs->port);

    const char *argv[2] = {"GET", full};
    size_t argv_len[2] = {3, full_len};
    glucx_status_t status;
    int64_t deadline_ns = glucx_deadline_ns(timeout_ms);
    int64_t backoff_ns = REDIS_STORE_BACKOFF_MIN_NS;
    for (;;) {
        char why[160] = "";
        redisReply *reply = redis_store_command(rs, 2, argv, argv_len, why, sizeof(why));
        if (reply == NULL) {
            status = glucx_error(GLUCX_ERR_STORE, "redis store get: key '%s' on %s:%d: %s", full,
                                 rs->host, rs->port, why);
            goto out;
        }
        if (reply->type == REDIS_REPLY_STRING) {
            char *value = malloc(reply->len > 0 ? reply->len : 1);
            if (value == NULL) {
                status = glucx_error(GLUCX_ERR_NO_MEMORY,
                                     "redis store get: key '%s' on %s:%d: cannot allocate %zu "
                                     "bytes",
                                     full, rs->host, rs->port, (size_t)reply->len);
            } else {
                memcpy(value, reply->str, reply->len);
                *value_p = value;
                *bytes_p = reply->len;
                status = GLUCX_OK;
            }
            freeReplyObject(reply);
            goto out;
        }
        if (reply->type != REDIS_REPLY_NIL) {
            if (reply->type == REDIS_REPLY_ERROR)
                status = glucx_error(GLUCX_ERR_STORE,
                                     "redis store get: key '%s' on %s:%d: server error: %.*s", full,
                                     rs->host, rs->port, (int)reply->len, reply->str);
            else
                status = glucx_error(GLUCX_ERR_STORE,
                                     "redis store get: key '%s' on %s:%d: unexpected reply "
                                     "type %d",
                                     full, rs->host, rs->port, reply->type);
            freeReplyObject(reply);
            goto out;
        }
        freeReplyObject(reply);

        int64_t now_ns = glucx_now_ns();
        if (now_ns >= deadline_ns) {
            status = glucx_error(GLUCX_ERR_TIMEOUT,
                                 "redis store get: Timed out waiting %lldms for key '%s' to "
                                 "appear on %s:%d",
                                 (long long)timeout_ms, full, rs->host, rs->port);
            goto out;
        }
        int64_t left_ns = deadline_ns - now_ns;
        int64_t sleep_ns = backoff_ns < left_ns ? backoff_ns : left_ns;
        struct timespec ts = {.tv_sec = (time_t)(sleep_ns / 1000000000),
                              .tv_nsec = (long)(sleep_ns % 1000000000)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        backoff_ns = backoff_ns * 2 < REDIS_STORE_BACKOFF_MAX_NS ? backoff_ns * 2
                                                                 : REDIS_STORE_BACKOFF_MAX_NS;
    }
out:
    free(full);
    return status;
}

static void redis_store_release(void *arg)
{
    redis_store_t *rs = arg;
    if (rs == NULL)
        return;
    if (rs->ctx != NULL)
        redisFree(rs->ctx);
    pthread_mutex_destroy(&rs->lock);
    free(rs->prefix);
    free(rs->host);
    free(rs);
}

glucx_status_t glucx_store_redis_create(const char *host, int port, const char *prefix,
                                        int64_t timeout_ms, glucx_store_t **store_p)
{
    if (host == NULL || *host == '\0' || port < 1 || port > 65535 || store_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "redis store create: host=%s, port=%d, store_p=%p: a non-empty host, "
                           "a port in 1..65535 and store_p are required",
                           host == NULL ? "(null)" : host, port, (void *)store_p);
    if (timeout_ms <= 0)
        timeout_ms = REDIS_STORE_DEFAULT_TIMEOUT_MS;
    if (timeout_ms > INT32_MAX)
        timeout_ms = INT32_MAX;

    glucx_status_t status;
    redis_store_t *rs = calloc(1, sizeof(*rs));
    if (rs == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY,
                           "redis store create: %s:%d: cannot allocate %zu "
                           "bytes",
                           host, port, sizeof(*rs));
    if (pthread_mutex_init(&rs->lock, NULL) != 0) {
        free(rs);
        return glucx_error(GLUCX_ERR_NO_MEMORY,
                           "redis store create: %s:%d: cannot create a "
                           "mutex",
                           host, port);
    }
    rs->port = port;
    rs->timeout_ms = timeout_ms;
    rs->timeout.tv_sec = (time_t)(timeout_ms / 1000);
    rs->timeout.tv_usec = (suseconds_t)((timeout_ms % 1000) * 1000);
    rs->host = strdup(host);
    rs->prefix = strdup(prefix != NULL ? prefix : "");
    if (rs->host == NULL || rs->prefix == NULL) {
        status = glucx_error(GLUCX_ERR_NO_MEMORY,
                             "redis store create: %s:%d: cannot copy the "
                             "host and prefix",
                             host, port);
        goto err_free;
    }
    rs->prefix_len = strlen(rs->prefix);

    char why[160] = "";
    redis_sigpipe_guard_t guard;
    redis_sigpipe_block(&guard);
    rs->ctx = redis_store_connect(rs, why, sizeof(why));
    redis_sigpipe_unblock(&guard);
    if (rs->ctx == NULL) {
        status = glucx_error(GLUCX_ERR_STORE,
                             "redis store create: cannot connect to %s:%d within %lld ms: %s", host,
                             port, (long long)timeout_ms, why);
        goto err_free;
    }

    static const glucx_store_ops_t ops = {
        .set = redis_store_set,
        .get = redis_store_get,
        .release = redis_store_release,
    };
    status = glucx_store_create(&ops, rs, store_p);
    if (status != GLUCX_OK)
        goto err_free;
    return GLUCX_OK;

err_free:
    redis_store_release(rs);
    return status;
}
