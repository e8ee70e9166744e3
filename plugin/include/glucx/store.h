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
 * Callbacks of a host-supplied store. Keys are NUL-terminated strings (glucx uses printable
 * ones, which may contain '/' and ':'); values are arbitrary bytes, possibly empty. Every key is
 * written once. The callbacks may be called from any thread, but glucx never calls one store
 * concurrently. Callbacks cannot call glucx's error reporting: when one fails, the wrapper
 * records a message naming the operation and key for glucx_last_error().
 */
typedef struct glucx_store_ops {
    /**
     * Store @p bytes bytes at @p value under @p key (both borrowed for the call; @p value is
     * never NULL, even when @p bytes is 0).
     * @return GLUCX_OK, or GLUCX_ERR_STORE / GLUCX_ERR_NO_MEMORY.
     */
    glucx_status_t (*set)(void *arg, const char *key, const void *value, size_t bytes);
    /**
     * Wait until @p key exists or @p timeout_ms milliseconds (>= 0; 0: look once) pass, then
     * return its value in a buffer allocated with malloc() that the caller releases with
     * free(). For an empty value the callback may return NULL with *bytes_p = 0.
     * @return GLUCX_OK with *value_p and *bytes_p set; GLUCX_ERR_TIMEOUT if the key did not
     *         appear in time; GLUCX_ERR_STORE on any other failure; GLUCX_ERR_NO_MEMORY.
     */
    glucx_status_t (*get)(void *arg, const char *key, int64_t timeout_ms, void **value_p,
                          size_t *bytes_p);
    /** Release @p arg when the store is destroyed (called exactly once); may be NULL. */
    void (*release)(void *arg);
} glucx_store_ops_t;

/**
 * Wrap host callbacks as a store.
 * @param ops   callbacks (copied); set and get are required.
 * @param arg   passed to every callback; owned by the caller unless ops->release is set, in
 *              which case glucx_store_destroy() calls it.
 * @param store_p receives the new store on success (untouched on failure; @p arg is then not
 *              released).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL ops, set, get or store_p); GLUCX_ERR_NO_MEMORY.
 * Thread-safe.
 */
GLUCX_API glucx_status_t glucx_store_create(const glucx_store_ops_t *ops, void *arg,
                                            glucx_store_t **store_p);

/**
 * A store kept as one file per key in directory @p dir (created with its parents if missing, as
 * `mkdir -p` does; may be on a shared filesystem such as NFS, so several processes and hosts can
 * share it). Each key becomes one flat file name: bytes other than [A-Za-z0-9._-] (and a leading
 * '.') are percent-encoded, so keys may contain '/', ':' or any other byte; encoded names are
 * limited to 240 bytes (set/get of a longer key fail with GLUCX_ERR_STORE). Values are written
 * to a temporary file ".tmp.<host>.<pid>.<tid>.<n>" in @p dir and renamed into place, so a
 * reader never sees a partial value (no fsync: the store need not survive a machine crash).
 * get polls for the file with a backoff of 1 ms doubling to 50 ms until its timeout. Files are
 * left in place on destroy: removing the directory after the job is the host's business.
 * @param dir borrowed path (copied).
 * @param store_p receives the new store on success (untouched on failure).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL/empty dir, NULL store_p); GLUCX_ERR_STORE
 *         (cannot create dir, or cannot create a file in it: checked here with a probe file;
 *         the message names the path and the reason); GLUCX_ERR_NO_MEMORY.
 * Thread-safe; the store is thread-safe and may be used by several threads at once.
 */
GLUCX_API glucx_status_t glucx_store_file_create(const char *dir, glucx_store_t **store_p);

/**
 * A store on a Redis server reached with hiredis: key K is stored with SET/GET under
 * "<prefix>K" (binary-safe values, empty ones included). One connection per store, guarded by a
 * mutex held for one command at a time; get polls GET with a backoff of 1 ms doubling to 50 ms
 * until its timeout. A command that fails at the connection level is retried once on a new
 * connection; if that fails too, the call returns GLUCX_ERR_STORE. SIGPIPE raised by writing to
 * a dropped connection is blocked and discarded in the calling thread (signal dispositions are
 * not changed).
 * @param host   host name or address (borrowed, copied).
 * @param port   TCP port, 1..65535.
 * @param prefix key prefix (may be NULL for none), borrowed and copied.
 * @param timeout_ms timeout in milliseconds for connecting and for each command's socket I/O
 *               (<= 0: 10000). A stalled server can delay a set or get past its own
 *               timeout by at most about three of these (a command, the reconnect and the
 *               retried command).
 * @param store_p receives the new store on success (untouched on failure).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (NULL/empty host, port out of range, NULL store_p);
 *         GLUCX_ERR_STORE (cannot connect; the message names host:port and the reason);
 *         GLUCX_ERR_NO_MEMORY; GLUCX_ERR_UNSUPPORTED if glucx was built without hiredis.
 * Thread-safe; the store is thread-safe. Errors of set/get name host:port and the full key.
 */
GLUCX_API glucx_status_t glucx_store_redis_create(const char *host, int port, const char *prefix,
                                                  int64_t timeout_ms, glucx_store_t **store_p);

/**
 * The store named by the environment variable GLUCX_STORE:
 * - "file:DIR": glucx_store_file_create(DIR);
 * - "redis://HOST:PORT" or "redis://HOST:PORT/PREFIX": glucx_store_redis_create(HOST, PORT,
 *   PREFIX, default timeout). HOST may be a bracketed IPv6 address ("[::1]"); PORT is decimal,
 *   1..65535; PREFIX is everything after the first '/' following the port, taken verbatim
 *   (e.g. "job42/"); an empty PREFIX means none.
 * @param store_p receives the new store on success (untouched on failure).
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG if GLUCX_STORE is unset or malformed (the message
 *         shows the value and the accepted forms) or store_p is NULL; errors of the store
 *         constructors.
 */
GLUCX_API glucx_status_t glucx_store_from_env(glucx_store_t **store_p);

/**
 * Set a key (see glucx_store_ops_t::set).
 * @param key   NUL-terminated key (borrowed for the call).
 * @param value @p bytes bytes (borrowed for the call); may be NULL when @p bytes is 0.
 * @return as the callback; GLUCX_ERR_INVALID_ARG for a NULL store or key, or a NULL value with
 *         bytes > 0. Thread-safe for the built-in stores.
 */
GLUCX_API glucx_status_t glucx_store_set(glucx_store_t *store, const char *key, const void *value,
                                         size_t bytes);

/**
 * Get a key, waiting up to @p timeout_ms milliseconds for it to appear (see
 * glucx_store_ops_t::get).
 * @param timeout_ms >= 0 (0: look once); there is no "wait forever".
 * @param value_p on success, a malloc()ed buffer the caller releases with free(); never NULL,
 *                even for an empty value. Untouched on failure.
 * @param bytes_p on success, the value's length in bytes. Untouched on failure.
 * @return as the callback (GLUCX_ERR_TIMEOUT if the key did not appear in time, the message
 *         naming the key, the store and the timeout); GLUCX_ERR_INVALID_ARG for NULL arguments
 *         or a negative timeout; GLUCX_ERR_STORE if a host callback reports success with
 *         bytes > 0 and no buffer. Thread-safe for the built-in stores.
 */
GLUCX_API glucx_status_t glucx_store_get(glucx_store_t *store, const char *key, int64_t timeout_ms,
                                         void **value_p, size_t *bytes_p);

/**
 * Destroy a store: calls ops->release(arg) once if set, closes the built-in stores' connections
 * and frees their memory. NULL is accepted. Not thread-safe with other calls on the same store.
 */
GLUCX_API void glucx_store_destroy(glucx_store_t *store);

#ifdef __cplusplus
}
#endif
#endif
