/*
 * The generic store: a thin wrapper around host callbacks (glucx_store_ops_t) that checks the
 * arguments, normalises the callbacks' results and makes sure every failure carries a message.
 * The built-in stores (file.c, redis.c) are wrapped the same way, and glucx_store_from_env()
 * picks one of them from GLUCX_STORE.
 */
#include <glucx/store.h>

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

struct glucx_store {
    glucx_store_ops_t ops;
    void *arg;
};

/* The accepted forms of GLUCX_STORE, quoted in error messages. */
#define GLUCX_STORE_FORMS "\"file:DIR\", \"redis://HOST:PORT\" or \"redis://HOST:PORT/PREFIX\""

glucx_status_t glucx_store_create(const glucx_store_ops_t *ops, void *arg, glucx_store_t **store_p)
{
    const char *missing = ops == NULL        ? "ops"
                          : ops->set == NULL ? "ops->set"
                          : ops->get == NULL ? "ops->get"
                          : store_p == NULL  ? "store_p"
                                             : NULL;
    if (missing != NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "store create: %s is NULL (ops, ops->set, ops->get and store_p are "
                           "required)",
                           missing);

    glucx_store_t *store = calloc(1, sizeof(*store));
    if (store == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "store create: cannot allocate %zu bytes",
                           sizeof(*store));
    store->ops = *ops;
    store->arg = arg;
    *store_p = store;
    return GLUCX_OK;
}

void glucx_store_destroy(glucx_store_t *store)
{
    if (store == NULL)
        return;
    if (store->ops.release != NULL)
        store->ops.release(store->arg);
    free(store);
}

/*
 * Host callbacks cannot call glucx_error(): when a callback fails without leaving a new message
 * in this thread's error text, write one that names the operation and key. Messages of the
 * built-in stores (which do call glucx_error()) are kept as they are.
 */
typedef struct {
    char text[256];
} store_error_mark_t;

static void store_error_mark(store_error_mark_t *mark)
{
    strncpy(mark->text, glucx_error_text(), sizeof(mark->text) - 1);
    mark->text[sizeof(mark->text) - 1] = '\0';
}

static int store_error_changed(const store_error_mark_t *mark)
{
    return strncmp(mark->text, glucx_error_text(), sizeof(mark->text) - 1) != 0;
}

glucx_status_t glucx_store_set(glucx_store_t *store, const char *key, const void *value,
                               size_t bytes)
{
    if (store == NULL || key == NULL || (value == NULL && bytes > 0))
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "store set: key '%s', %zu bytes: store=%p, key=%p, value=%p (store "
                           "and key are required, value unless bytes is 0)",
                           key == NULL ? "(null)" : key, bytes, (void *)store, (const void *)key,
                           value);

    static const char empty = 0;
    store_error_mark_t mark;
    store_error_mark(&mark);
    glucx_status_t status = store->ops.set(store->arg, key, value != NULL ? value : &empty, bytes);
    if (status != GLUCX_OK && !store_error_changed(&mark))
        glucx_error(status, "store set: key '%s', %zu bytes: the store's set callback failed: %s",
                    key, bytes, glucx_status_string(status));
    return status;
}

glucx_status_t glucx_store_get(glucx_store_t *store, const char *key, int64_t timeout_ms,
                               void **value_p, size_t *bytes_p)
{
    if (store == NULL || key == NULL || value_p == NULL || bytes_p == NULL || timeout_ms < 0)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "store get: key '%s', timeout %lld ms: store=%p, key=%p, value_p=%p, "
                           "bytes_p=%p (all are required and the timeout must be >= 0)",
                           key == NULL ? "(null)" : key, (long long)timeout_ms, (void *)store,
                           (const void *)key, (void *)value_p, (void *)bytes_p);

    void *value = NULL;
    size_t bytes = 0;
    store_error_mark_t mark;
    store_error_mark(&mark);
    glucx_status_t status = store->ops.get(store->arg, key, timeout_ms, &value, &bytes);
    if (status != GLUCX_OK) {
        if (!store_error_changed(&mark))
            glucx_error(status,
                        "store get: key '%s', timeout %lld ms: the store's get callback "
                        "failed: %s",
                        key, (long long)timeout_ms, glucx_status_string(status));
        free(value); /* a callback that failed should not have allocated; be safe if it did */
        return status;
    }
    if (value == NULL && bytes > 0)
        return glucx_error(GLUCX_ERR_STORE,
                           "store get: key '%s': the store's get callback returned success, "
                           "%zu bytes and no buffer",
                           key, bytes);
    if (value == NULL) {
        /* Zero-length value: hand out a real (1-byte) allocation so callers can treat NULL as
         * "no value" uniformly. */
        value = malloc(1);
        if (value == NULL)
            return glucx_error(GLUCX_ERR_NO_MEMORY,
                               "store get: key '%s': cannot allocate an empty value", key);
    }
    *value_p = value;
    *bytes_p = bytes;
    return GLUCX_OK;
}

/* "redis://HOST:PORT[/PREFIX]"; HOST may be a bracketed IPv6 address ("[::1]"). */
static glucx_status_t store_from_redis_url(const char *env, const char *rest,
                                           glucx_store_t **store_p)
{
    const char *host_begin = rest, *host_end;
    const char *colon;
    if (*rest == '[') {
        host_begin = rest + 1;
        host_end = strchr(host_begin, ']');
        if (host_end == NULL || host_end[1] != ':')
            goto malformed;
        colon = host_end + 1;
    } else {
        colon = strchr(rest, ':');
        if (colon == NULL)
            goto malformed;
        host_end = colon;
        if (memchr(host_begin, '/', (size_t)(host_end - host_begin)) != NULL)
            goto malformed;
    }
    if (host_end == host_begin)
        goto malformed;

    const char *port_begin = colon + 1;
    const char *port_end = port_begin;
    long port = 0;
    while (*port_end >= '0' && *port_end <= '9') {
        port = port * 10 + (*port_end - '0');
        if (port > 65535)
            goto malformed;
        port_end++;
    }
    if (port_end == port_begin || port < 1 || (*port_end != '\0' && *port_end != '/'))
        goto malformed;
    const char *prefix = *port_end == '/' ? port_end + 1 : "";

    size_t host_len = (size_t)(host_end - host_begin);
    char *host = strndup(host_begin, host_len);
    if (host == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "store from env: cannot copy host of %s", env);
    glucx_status_t status =
        glucx_store_redis_create(host, (int)port, *prefix != '\0' ? prefix : NULL, 0, store_p);
    free(host);
    return status;

malformed:
    return glucx_error(GLUCX_ERR_INVALID_ARG,
                       "store from env: GLUCX_STORE=\"%s\" is malformed; accepted forms: %s "
                       "(PORT in 1..65535)",
                       env, GLUCX_STORE_FORMS);
}

glucx_status_t glucx_store_from_env(glucx_store_t **store_p)
{
    if (store_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "store from env: store_p is NULL");
    const char *env = getenv("GLUCX_STORE");
    if (env == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "store from env: GLUCX_STORE is not set; accepted forms: %s",
                           GLUCX_STORE_FORMS);
    if (strncmp(env, "file:", 5) == 0) {
        if (env[5] == '\0')
            return glucx_error(GLUCX_ERR_INVALID_ARG,
                               "store from env: GLUCX_STORE=\"%s\" names no directory; accepted "
                               "forms: %s",
                               env, GLUCX_STORE_FORMS);
        return glucx_store_file_create(env + 5, store_p);
    }
    if (strncmp(env, "redis://", 8) == 0)
        return store_from_redis_url(env, env + 8, store_p);
    return glucx_error(GLUCX_ERR_INVALID_ARG,
                       "store from env: GLUCX_STORE=\"%s\" is malformed; accepted forms: %s", env,
                       GLUCX_STORE_FORMS);
}
