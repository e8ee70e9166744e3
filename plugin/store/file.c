/*
 * File store: one file per key in a directory that every rank can see (a local directory for
 * ranks on one host, a shared filesystem such as NFS across hosts).
 *
 * - Key -> file name: bytes outside [A-Za-z0-9._-] and a leading '.' are percent-encoded
 *   ("%2F" for '/'), so any key maps to exactly one flat file name and distinct keys never
 *   collide. The empty key becomes "%". Encoded names never start with '.', which leaves the
 *   ".tmp." namespace to temporary files.
 * - set: write the value into ".tmp.<host>.<pid>.<tid>.<counter>" in the same directory, close
 *   it and rename() it over the key's name. rename() within one directory is atomic (also on
 *   NFS, where close() flushes the data first: close-to-open consistency), so a reader opens
 *   either nothing or the complete value. No fsync: the store lives for one job, not across
 *   machine crashes.
 * - get: try to open the key's file; if it does not exist yet, sleep 1 ms, doubling up to 50 ms,
 *   until the deadline.
 * The store keeps no mutable state besides an atomic counter, so it is thread-safe and
 * fork-safe.
 */
#include <glucx/store.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "util/time.h"

#define FILE_STORE_BACKOFF_MIN_NS (1000000LL)  /* 1 ms */
#define FILE_STORE_BACKOFF_MAX_NS (50000000LL) /* 50 ms */
/* Longest encoded key file name; keeps well below NAME_MAX (255) on every filesystem. */
#define FILE_STORE_NAME_MAX 240

typedef struct file_store {
    char *dir; /* owned, without trailing '/' (except for "/") */
} file_store_t;

static atomic_uint_fast64_t file_store_counter;

static int file_store_keep_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

/*
 * Encode @p key as a file name into @p name (capacity FILE_STORE_NAME_MAX + 1).
 * @return 0, or -1 if the encoded name would be too long.
 */
static int file_store_encode(const char *key, char *name)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    if (*key == '\0') {
        name[n++] = '%';
    }
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
        int keep = file_store_keep_char(*p) && !(*p == '.' && p == (const unsigned char *)key);
        if (n + (keep ? 1 : 3) > FILE_STORE_NAME_MAX)
            return -1;
        if (keep) {
            name[n++] = (char)*p;
        } else {
            name[n++] = '%';
            name[n++] = hex[*p >> 4];
            name[n++] = hex[*p & 15];
        }
    }
    name[n] = '\0';
    return 0;
}

/* "<dir>/<name>" into a new buffer, or NULL when out of memory. */
static char *file_store_path(const file_store_t *fs, const char *name)
{
    char *path = NULL;
    const char *sep = fs->dir[strlen(fs->dir) - 1] == '/' ? "" : "/";
    if (asprintf(&path, "%s%s%s", fs->dir, sep, name) < 0)
        return NULL;
    return path;
}

/* Sleep for @p ns nanoseconds (restarting after signals). */
static void file_store_sleep_ns(int64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static glucx_status_t file_store_write_all(int fd, const void *value, size_t bytes, const char *key,
                                           const char *tmp_path)
{
    const char *p = value;
    while (bytes > 0) {
        ssize_t n = write(fd, p, bytes);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return glucx_error(GLUCX_ERR_STORE,
                               "file store set: key '%s': cannot write %zu more bytes to %s: %s",
                               key, bytes, tmp_path, n < 0 ? strerror(errno) : "short write");
        p += n;
        bytes -= (size_t)n;
    }
    return GLUCX_OK;
}

static glucx_status_t file_store_set(void *arg, const char *key, const void *value, size_t bytes)
{
    file_store_t *fs = arg;
    glucx_status_t status;
    char name[FILE_STORE_NAME_MAX + 1];
    char tmp_name[HOST_NAME_MAX + 96];
    char host[HOST_NAME_MAX + 1];

    if (file_store_encode(key, name) != 0)
        return glucx_error(GLUCX_ERR_STORE,
                           "file store set: key '%s' (%zu chars) is too long: its file name in "
                           "%s would exceed %d bytes",
                           key, strlen(key), fs->dir, FILE_STORE_NAME_MAX);
    if (gethostname(host, sizeof(host)) != 0)
        strcpy(host, "unknown");
    host[sizeof(host) - 1] = '\0';
    /* Unique across hosts (shared filesystems), processes, threads and calls. */
    snprintf(tmp_name, sizeof(tmp_name), ".tmp.%s.%ld.%ld.%llu", host, (long)getpid(),
             (long)gettid(), (unsigned long long)atomic_fetch_add(&file_store_counter, 1));

    char *path = file_store_path(fs, name);
    char *tmp_path = file_store_path(fs, tmp_name);
    if (path == NULL || tmp_path == NULL) {
        status = glucx_error(GLUCX_ERR_NO_MEMORY,
                             "file store set: key '%s': cannot allocate a "
                             "path in %s",
                             key, fs->dir);
        goto out;
    }

    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        status = glucx_error(GLUCX_ERR_STORE,
                             "file store set: key '%s', %zu bytes: cannot create %s: %s", key,
                             bytes, tmp_path, strerror(errno));
        goto out;
    }
    status = file_store_write_all(fd, value, bytes, key, tmp_path);
    /* close() reports delayed write errors on NFS: check it. */
    if (close(fd) != 0 && status == GLUCX_OK)
        status =
            glucx_error(GLUCX_ERR_STORE, "file store set: key '%s', %zu bytes: cannot close %s: %s",
                        key, bytes, tmp_path, strerror(errno));
    if (status != GLUCX_OK)
        goto err_unlink;
    if (rename(tmp_path, path) != 0) {
        status = glucx_error(GLUCX_ERR_STORE,
                             "file store set: key '%s', %zu bytes: cannot rename %s to %s: %s", key,
                             bytes, tmp_path, path, strerror(errno));
        goto err_unlink;
    }
    goto out;

err_unlink:
    unlink(tmp_path);
out:
    free(tmp_path);
    free(path);
    return status;
}

/*
 * Read the whole file @p fd into a new buffer. Values are immutable once renamed into place,
 * but read to EOF anyway instead of trusting st_size alone.
 */
static glucx_status_t file_store_read_all(int fd, const char *key, const char *path, void **value_p,
                                          size_t *bytes_p)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return glucx_error(GLUCX_ERR_STORE, "file store get: key '%s': cannot stat %s: %s", key,
                           path, strerror(errno));
    size_t cap = st.st_size > 0 ? (size_t)st.st_size : 0;
    size_t len = 0;
    char *buf = malloc(cap + 1); /* +1: room to detect growth and a non-NULL empty value */
    if (buf == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY,
                           "file store get: key '%s': cannot allocate %zu "
                           "bytes for %s",
                           key, cap + 1, path);
    for (;;) {
        if (len == cap + 1) {
            size_t new_cap = 2 * cap + 4096;
            char *grown = realloc(buf, new_cap + 1);
            if (grown == NULL) {
                free(buf);
                return glucx_error(GLUCX_ERR_NO_MEMORY,
                                   "file store get: key '%s': cannot allocate %zu bytes for %s",
                                   key, new_cap + 1, path);
            }
            buf = grown;
            cap = new_cap;
        }
        ssize_t n = read(fd, buf + len, cap + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            free(buf);
            return glucx_error(GLUCX_ERR_STORE,
                               "file store get: key '%s': cannot read %s after %zu bytes: %s", key,
                               path, len, strerror(err));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    *value_p = buf;
    *bytes_p = len;
    return GLUCX_OK;
}

static glucx_status_t file_store_get(void *arg, const char *key, int64_t timeout_ms, void **value_p,
                                     size_t *bytes_p)
{
    file_store_t *fs = arg;
    char name[FILE_STORE_NAME_MAX + 1];
    if (file_store_encode(key, name) != 0)
        return glucx_error(GLUCX_ERR_STORE,
                           "file store get: key '%s' (%zu chars) is too long: its file name in "
                           "%s would exceed %d bytes",
                           key, strlen(key), fs->dir, FILE_STORE_NAME_MAX);
    char *path = file_store_path(fs, name);
    if (path == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY,
                           "file store get: key '%s': cannot allocate a path in %s", key, fs->dir);

    glucx_status_t status;
    int64_t deadline_ns = glucx_deadline_ns(timeout_ms);
    int64_t backoff_ns = FILE_STORE_BACKOFF_MIN_NS;
    for (;;) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            status = file_store_read_all(fd, key, path, value_p, bytes_p);
            close(fd);
            goto out;
        }
        if (errno != ENOENT && errno != EINTR) {
            status = glucx_error(GLUCX_ERR_STORE, "file store get: key '%s': cannot open %s: %s",
                                 key, path, strerror(errno));
            goto out;
        }
        int64_t now_ns = glucx_now_ns();
        if (now_ns >= deadline_ns) {
            status = glucx_error(GLUCX_ERR_TIMEOUT,
                                 "file store get: Timed out waiting %lldms for key '%s' to appear "
                                 "in directory %s (expected file %s)",
                                 (long long)timeout_ms, key, fs->dir, path);
            goto out;
        }
        int64_t left_ns = deadline_ns - now_ns;
        file_store_sleep_ns(backoff_ns < left_ns ? backoff_ns : left_ns);
        backoff_ns =
            backoff_ns * 2 < FILE_STORE_BACKOFF_MAX_NS ? backoff_ns * 2 : FILE_STORE_BACKOFF_MAX_NS;
    }
out:
    free(path);
    return status;
}

static void file_store_release(void *arg)
{
    file_store_t *fs = arg;
    if (fs == NULL)
        return;
    free(fs->dir);
    free(fs);
}

/* mkdir -p: create every missing component of @p dir with mode 0777 (before umask). */
static glucx_status_t file_store_mkdir_p(const char *dir)
{
    char *path = strdup(dir);
    if (path == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "file store create: cannot copy path %s", dir);
    glucx_status_t status = GLUCX_OK;
    size_t len = strlen(path);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        if (path[i - 1] == '/')
            continue; /* "a//b" or a trailing '/' */
        char saved = path[i];
        path[i] = '\0';
        /* Another rank may create the same directory concurrently: EEXIST is fine as long as
         * it is a directory. */
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            status = glucx_error(GLUCX_ERR_STORE,
                                 "file store create: cannot create directory %s (for %s): %s", path,
                                 dir, strerror(errno));
            goto out;
        }
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
            status = glucx_error(GLUCX_ERR_STORE,
                                 "file store create: cannot create directory %s: %s exists and "
                                 "is not a directory",
                                 dir, path);
            goto out;
        }
        path[i] = saved;
    }
out:
    free(path);
    return status;
}

/* Create and remove a probe file, so a directory we cannot write fails now with a clear message
 * instead of at the first set. */
static glucx_status_t file_store_probe(file_store_t *fs)
{
    char host[HOST_NAME_MAX + 1];
    char name[HOST_NAME_MAX + 96];
    if (gethostname(host, sizeof(host)) != 0)
        strcpy(host, "unknown");
    host[sizeof(host) - 1] = '\0';
    snprintf(name, sizeof(name), ".tmp.probe.%s.%ld.%ld.%llu", host, (long)getpid(), (long)gettid(),
             (unsigned long long)atomic_fetch_add(&file_store_counter, 1));
    char *path = file_store_path(fs, name);
    if (path == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "file store create: cannot allocate a path in %s",
                           fs->dir);
    glucx_status_t status = GLUCX_OK;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        status = glucx_error(GLUCX_ERR_STORE,
                             "file store create: directory %s is not writable: cannot create %s: "
                             "%s",
                             fs->dir, path, strerror(errno));
    } else {
        close(fd);
        unlink(path);
    }
    free(path);
    return status;
}

glucx_status_t glucx_store_file_create(const char *dir, glucx_store_t **store_p)
{
    if (dir == NULL || *dir == '\0' || store_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "file store create: dir=%s%s%s, store_p=%p: a non-empty directory and "
                           "store_p are required",
                           dir == NULL ? "" : "\"", dir == NULL ? "(null)" : dir,
                           dir == NULL ? "" : "\"", (void *)store_p);

    glucx_status_t status;
    file_store_t *fs = calloc(1, sizeof(*fs));
    if (fs == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "file store create: cannot allocate %zu bytes",
                           sizeof(*fs));
    fs->dir = strdup(dir);
    if (fs->dir == NULL) {
        status = glucx_error(GLUCX_ERR_NO_MEMORY, "file store create: cannot copy path %s", dir);
        goto err_free;
    }
    status = file_store_mkdir_p(dir);
    if (status != GLUCX_OK)
        goto err_free;
    status = file_store_probe(fs);
    if (status != GLUCX_OK)
        goto err_free;

    static const glucx_store_ops_t ops = {
        .set = file_store_set,
        .get = file_store_get,
        .release = file_store_release,
    };
    status = glucx_store_create(&ops, fs, store_p);
    if (status != GLUCX_OK)
        goto err_free;
    return GLUCX_OK;

err_free:
    file_store_release(fs);
    return status;
}
