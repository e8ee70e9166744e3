/**
 * @file glucx/store.h
 * @brief Rendezvous store: the key-value service through which the ranks of a communicator
 *        exchange their UCX worker addresses and settings digests.
 *
 * glucx never runs a bootstrap service of its own. The host supplies a store (PyTorch's c10d
 * store, Gloo's FileStore/RedisStore, ...) through glucx_store_ops_t, or uses one of the two
 * built-in stores: a directory on a (shared) filesystem, or a Redis server through hiredis.
 */
#ifndef GLUCX_STORE_H
#define GLUCX_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <glucx/export.h>
#include <glucx/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque store handle. */
typedef struct glucx_store glucx_store_t;

/**
 * Callbacks of a host-supplied store. Keys are NUL-terminated printable strings without '/'
 * beyond what the caller put in a prefix; values are arbitrary bytes. Every key is written once.
 * The callbacks may be called from any thread, but glucx never calls one store concurrently.
 */
typedef struct glucx_store_ops {
    /**
     * Store @p bytes bytes at @p value under @p key (both borrowed for the call).
     * @return GLUCX_OK, or GLUCX_ERR_STORE / GLUCX_ERR_NO_MEMORY.
     */
    glucx_status_t (*set)(void *arg, const char *key, const void *value, size_t bytes);
    /**
     * Wait until @p key exists or @p timeout_ms milliseconds pass, then return its value in a
     * buffer allocated with malloc() that the caller releases with free().
     * @return GLUCX_OK with *value_p and *bytes_p set; GLUCX_ERR_TIMEOUT if the key did not
     *         appear in time; GLUCX_ERR_STORE on any other failure.
     */
    glucx_status_t (*get)(void *arg, const char *key, int64_t timeout_ms, void **value_p,
                          size_t *bytes_p);
    /** Release @p arg when the store is destroyed; may be NULL. */
    void (*release)(void *arg);
} glucx_store_ops_t;

/**
 * Wrap host callbacks as a store.
 * @param ops   callbacks (copied); set and get are required.
 * @param arg   passed to every callback; owned by the caller unless ops->release is set, in
 *              which case glucx_store_destroy() calls it.
 * @param store_p receives the new store on success.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL ops, set or get); GLUCX_ERR_NO_MEMORY.
 * Thread-safe.
 */
GLUCX_API glucx_status_t glucx_store_create(const glucx_store_ops_t *ops, void *arg,
                                            glucx_store_t **store_p);

/**
 * A store kept as one file per key in directory @p dir (created if missing; may be on a shared
 * filesystem such as NFS). Values are written to a temporary file and renamed into place, so a
 * reader never sees a partial value. Readers poll with a bounded backoff (1 ms growing to 50 ms).
 * @param dir borrowed path (copied).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL/empty dir); GLUCX_ERR_STORE (cannot create or
 *         access dir, message names it); GLUCX_ERR_NO_MEMORY.
 */
GLUCX_API glucx_status_t glucx_store_file_create(const char *dir, glucx_store_t **store_p);

/**
 * A store on a Redis server reached with hiredis (SET/GET on keys under @p prefix).
 * @param host   host name or address (borrowed, copied).
 * @param port   TCP port, 1..65535.
 * @param prefix key prefix (may be NULL for none), borrowed and copied.
 * @param timeout_ms connection timeout in milliseconds (<= 0: 10000).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG; GLUCX_ERR_STORE (cannot connect; names host:port);
 *         GLUCX_ERR_UNSUPPORTED if glucx was built without hiredis.
 */
GLUCX_API glucx_status_t glucx_store_redis_create(const char *host, int port, const char *prefix,
                                                  int64_t timeout_ms, glucx_store_t **store_p);

/**
 * The store named by the environment variable GLUCX_STORE: "file:DIR" or
 * "redis://HOST:PORT[/PREFIX]".
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG if GLUCX_STORE is unset or malformed (the message
 *         shows the value and the accepted forms); errors of the store constructors.
 */
GLUCX_API glucx_status_t glucx_store_from_env(glucx_store_t **store_p);

/**
 * Set a key (see glucx_store_ops_t::set). @return as the callback; GLUCX_ERR_INVALID_ARG for
 * NULL arguments. Thread-safe for the built-in stores.
 */
GLUCX_API glucx_status_t glucx_store_set(glucx_store_t *store, const char *key, const void *value,
                                         size_t bytes);

/**
 * Get a key, waiting up to @p timeout_ms (see glucx_store_ops_t::get); *value_p is released
 * with free(). @return as the callback; GLUCX_ERR_INVALID_ARG for NULL arguments.
 */
GLUCX_API glucx_status_t glucx_store_get(glucx_store_t *store, const char *key, int64_t timeout_ms,
                                         void **value_p, size_t *bytes_p);

/** Destroy a store; NULL is accepted. Not thread-safe with other calls on the same store. */
GLUCX_API void glucx_store_destroy(glucx_store_t *store);

#ifdef __cplusplus
}
#endif
#endif
