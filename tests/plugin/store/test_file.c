/*
 * Tests of the file store (plugin/store/file.c): round trips of binary and empty values, key
 * encoding, timeouts, errors for unusable directories, and several processes and threads
 * sharing one directory, including a reader that must never see a partial value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glucx/store.h>

#include "support/procs.h"
#include "support/util.h"

#define MiB (1024 * 1024)

typedef struct {
    char dir[200]; /* a fresh temporary directory per test */
} fixture_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof(*fx));
    if (fx == NULL)
        return -1;
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/glucx-test-file-store-XXXXXX");
    if (mkdtemp(fx->dir) == NULL) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
    int rc = system(cmd);
    free(fx);
    return rc == 0 ? 0 : -1;
}

/* Wait for @p n children for at most @p timeout_s seconds; SIGKILL them on timeout.
 * @return the number of children that did not exit with status 0. */

/* Keys and values exercised by the round-trip tests. Value i is @p sizes[i] bytes of the
 * pattern with seed 1000 + i, with a few NUL bytes forced in. */
static const char *const rt_keys[] = {
    "rank/0/addr", "a:b",
    "a%3Ab",       "a_b",
    ".",           "..",
    ".hidden",     "",
    "with space",  "tab\there",
    "ünïcödé",     "trailing/",
    "/leading",    "many////slashes",
    "big",         "empty",
};
static const size_t rt_sizes[] = {
    100, 7, 8, 9, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13, MiB + 17, 0,
};
#define RT_COUNT ((int)(sizeof(rt_keys) / sizeof(rt_keys[0])))

static void *rt_value(int i)
{
    size_t bytes = rt_sizes[i];
    unsigned char *v = malloc(bytes > 0 ? bytes : 1);
    assert_non_null(v);
    glucx_test_fill_bytes(v, bytes, 1000 + (uint64_t)i);
    if (bytes > 0)
        v[0] = 0;
    if (bytes > 2)
        v[bytes / 2] = 0;
    return v;
}

static void test_create_errors(void **state)
{
    fixture_t *fx = *state;
    glucx_store_t *store = (glucx_store_t *)0x1;
    char path[400];

    assert_int_equal(glucx_store_file_create(NULL, &store), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_file_create("", &store), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_file_create(fx->dir, NULL), GLUCX_ERR_INVALID_ARG);
    assert_ptr_equal(store, (glucx_store_t *)0x1);

    /* a path below a regular file cannot be created */
    snprintf(path, sizeof(path), "%s/regular", fx->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/regular/sub/dir", fx->dir);
    assert_int_equal(glucx_store_file_create(path, &store), GLUCX_ERR_STORE);
    assert_non_null(strstr(glucx_last_error(), path));
    /* the regular file itself is not a directory */
    snprintf(path, sizeof(path), "%s/regular", fx->dir);
    assert_int_equal(glucx_store_file_create(path, &store), GLUCX_ERR_STORE);
    assert_non_null(strstr(glucx_last_error(), path));
    assert_non_null(strstr(glucx_last_error(), "not a directory"));

    /* unwritable even for root: new directories in /proc, files in an existing /proc dir */
    assert_int_equal(glucx_store_file_create("/proc/glucx-test-no-such/dir", &store),
                     GLUCX_ERR_STORE);
    assert_non_null(strstr(glucx_last_error(), "/proc/glucx-test-no-such"));
    assert_int_equal(glucx_store_file_create("/proc/self", &store), GLUCX_ERR_STORE);
    assert_non_null(strstr(glucx_last_error(), "/proc/self"));
    assert_non_null(strstr(glucx_last_error(), "not writable"));
    assert_ptr_equal(store, (glucx_store_t *)0x1);
}

static void test_create_makes_parents(void **state)
{
    fixture_t *fx = *state;
    char path[400];
    snprintf(path, sizeof(path), "%s/x/y//z/", fx->dir);
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_file_create(path, &store), GLUCX_OK);
    struct stat st;
    snprintf(path, sizeof(path), "%s/x/y/z", fx->dir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* an existing directory is fine too */
    glucx_store_t *again = NULL;
    assert_int_equal(glucx_store_file_create(path, &again), GLUCX_OK);
    /* the trailing-slash spelling and the plain one are the same store */
    assert_int_equal(glucx_store_set(store, "k", "v", 1), GLUCX_OK);
    void *got = NULL;
    size_t bytes = 0;
    assert_int_equal(glucx_store_get(again, "k", 0, &got, &bytes), GLUCX_OK);
    assert_int_equal(bytes, 1);
    assert_memory_equal(got, "v", 1);
    free(got);
    glucx_store_destroy(again);
    glucx_store_destroy(store);
}

static void test_round_trip(void **state)
{
    fixture_t *fx = *state;
    int fds_before = glucx_test_count_fds();
    glucx_store_t *writer = NULL, *reader = NULL;
    assert_int_equal(glucx_store_file_create(fx->dir, &writer), GLUCX_OK);
    assert_int_equal(glucx_store_file_create(fx->dir, &reader), GLUCX_OK);

    for (int i = 0; i < RT_COUNT; i++) {
        void *v = rt_value(i);
        assert_int_equal(glucx_store_set(writer, rt_keys[i], v, rt_sizes[i]), GLUCX_OK);
        free(v);
    }
    assert_int_equal(glucx_store_set(writer, "null-empty", NULL, 0), GLUCX_OK);

    for (int i = 0; i < RT_COUNT; i++) {
        void *expect = rt_value(i);
        void *got = NULL;
        size_t bytes = 12345;
        glucx_status_t status = glucx_store_get(reader, rt_keys[i], 0, &got, &bytes);
        if (status != GLUCX_OK)
            fail_msg("get '%s': %s (%s)", rt_keys[i], glucx_status_string(status),
                     glucx_last_error());
        assert_non_null(got);
        assert_int_equal(bytes, rt_sizes[i]);
        assert_memory_equal(got, expect, rt_sizes[i]);
        free(got);
        free(expect);
    }
    void *got = NULL;
    size_t bytes = 1;
    assert_int_equal(glucx_store_get(reader, "null-empty", 0, &got, &bytes), GLUCX_OK);
    assert_non_null(got);
    assert_int_equal(bytes, 0);
    free(got);

    /* the directory holds one flat regular file per key, no subdirectories (keys with '/')
     * and no leftover temporary files */
    DIR *d = opendir(fx->dir);
    assert_non_null(d);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[600];
        snprintf(path, sizeof(path), "%s/%s", fx->dir, e->d_name);
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        if (!S_ISREG(st.st_mode))
            fail_msg("unexpected non-regular entry %s", path);
        if (strncmp(e->d_name, ".tmp", 4) == 0)
            fail_msg("leftover temporary file %s", path);
        files++;
    }
    closedir(d);
    assert_int_equal(files, RT_COUNT + 1);

    glucx_store_destroy(reader);
    glucx_store_destroy(writer);
    assert_int_equal(glucx_test_count_fds(), fds_before); /* no descriptor leaks */
}

static void test_timeout(void **state)
{
    fixture_t *fx = *state;
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_file_create(fx->dir, &store), GLUCX_OK);
    void *got = (void *)0x1;
    size_t bytes = 3;

    int64_t t0 = now_ms();
    assert_int_equal(glucx_store_get(store, "never/set", 200, &got, &bytes), GLUCX_ERR_TIMEOUT);
    int64_t elapsed = now_ms() - t0;
    assert_true(elapsed >= 200);
    assert_true(elapsed < glucx_test_ms(5000));
    const char *msg = glucx_last_error();
    assert_non_null(strstr(msg, "never/set"));
    assert_non_null(strstr(msg, fx->dir));
    assert_non_null(strstr(msg, "Timed out waiting 200ms")); /* Gloo's wording */
    assert_ptr_equal(got, (void *)0x1);
    assert_int_equal(bytes, 3);

    /* timeout 0: one look, no wait */
    t0 = now_ms();
    assert_int_equal(glucx_store_get(store, "never/set", 0, &got, &bytes), GLUCX_ERR_TIMEOUT);
    assert_true(now_ms() - t0 < glucx_test_ms(1000));
    glucx_store_destroy(store);
}

static void test_long_key(void **state)
{
    fixture_t *fx = *state;
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_file_create(fx->dir, &store), GLUCX_OK);
    char key[400];
    memset(key, '/', sizeof(key) - 1); /* each '/' takes 3 bytes once encoded */
    key[sizeof(key) - 1] = '\0';
    assert_int_equal(glucx_store_set(store, key, "v", 1), GLUCX_ERR_STORE);
    assert_non_null(strstr(glucx_last_error(), "too long"));
    void *got = NULL;
    size_t bytes = 0;
    assert_int_equal(glucx_store_get(store, key, 0, &got, &bytes), GLUCX_ERR_STORE);
    glucx_store_destroy(store);
}

typedef struct {
    glucx_store_t *store;
    const char *key;
    int delay_ms;
    glucx_status_t status;
} late_set_t;

static void *late_set_main(void *arg)
{
    late_set_t *ls = arg;
    usleep((useconds_t)ls->delay_ms * 1000);
    ls->status = glucx_store_set(ls->store, ls->key, "late", 4);
    return NULL;
}

/* A get that starts before the set waits for it. */
static void test_get_waits_for_set(void **state)
{
    fixture_t *fx = *state;
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_file_create(fx->dir, &store), GLUCX_OK);
    late_set_t ls = {.store = store, .key = "late/key", .delay_ms = 150};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, late_set_main, &ls), 0);
    void *got = NULL;
    size_t bytes = 0;
    int64_t t0 = now_ms();
    glucx_status_t status = glucx_store_get(store, "late/key", glucx_test_ms(10000), &got, &bytes);
    int64_t elapsed = now_ms() - t0;
    pthread_join(thread, NULL);
    assert_int_equal(ls.status, GLUCX_OK);
    assert_int_equal(status, GLUCX_OK);
    assert_int_equal(bytes, 4);
    assert_memory_equal(got, "late", 4);
    assert_true(elapsed < glucx_test_ms(5000));
    free(got);
    glucx_store_destroy(store);
}

/* ---- several threads on one store ---- */

#define NTHREADS 4
#define THREAD_KEYS 25

typedef struct {
    glucx_store_t *store;
    int id;
    int errors;
} thread_arg_t;

static void *thread_main(void *arg)
{
    thread_arg_t *ta = arg;
    char key[64];
    unsigned char value[64], expect[64];
    for (int k = 0; k < THREAD_KEYS; k++) {
        snprintf(key, sizeof(key), "thread/%d/%d", ta->id, k);
        glucx_test_fill_bytes(value, sizeof(value), (uint64_t)(ta->id * 1000 + k));
        if (glucx_store_set(ta->store, key, value, sizeof(value)) != GLUCX_OK)
            ta->errors++;
    }
    for (int peer = 0; peer < NTHREADS; peer++) {
        for (int k = 0; k < THREAD_KEYS; k++) {
            snprintf(key, sizeof(key), "thread/%d/%d", peer, k);
            glucx_test_fill_bytes(expect, sizeof(expect), (uint64_t)(peer * 1000 + k));
            void *got = NULL;
            size_t bytes = 0;
            if (glucx_store_get(ta->store, key, glucx_test_ms(20000), &got, &bytes) != GLUCX_OK ||
                bytes != sizeof(expect) || memcmp(got, expect, bytes) != 0)
                ta->errors++;
            free(got);
        }
    }
    return NULL;
}

static void test_threads(void **state)
{
    fixture_t *fx = *state;
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_file_create(fx->dir, &store), GLUCX_OK);
    pthread_t threads[NTHREADS];
    thread_arg_t args[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (thread_arg_t){.store = store, .id = i};
        assert_int_equal(pthread_create(&threads[i], NULL, thread_main, &args[i]), 0);
    }
    int errors = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        errors += args[i].errors;
    }
    assert_int_equal(errors, 0);
    glucx_store_destroy(store);
}

/* ---- several processes ---- */

#define NPROCS 4
#define PROC_VALUE_BYTES 4096

/* Rank @p rank of a rendezvous through a file store in directory @p arg. */
static int proc_main(int rank, int size, void *arg)
{
    glucx_store_t *store = NULL;
    if (glucx_store_file_create(arg, &store) != GLUCX_OK) {
        fprintf(stderr, "rank %d: create: %s\n", rank, glucx_last_error());
        return 1;
    }
    int rc = glucx_test_store_exchange(store, rank, size, "job/", PROC_VALUE_BYTES, 7000);
    glucx_store_destroy(store);
    return rc;
}

static void test_processes(void **state)
{
    fixture_t *fx = *state;
    char dir[300];
    /* the children create the directory themselves, concurrently */
    snprintf(dir, sizeof(dir), "%s/shared/rendezvous", fx->dir);
    assert_int_equal(glucx_test_procs_run(NPROCS, proc_main, dir, 60), 0);
}

/* ---- atomic visibility of large values ---- */

#define BIG_KEYS 16
#define BIG_BYTES MiB

static int big_writer_main(const char *dir)
{
    glucx_store_t *store = NULL;
    if (glucx_store_file_create(dir, &store) != GLUCX_OK)
        return 1;
    unsigned char *value = malloc(BIG_BYTES);
    if (value == NULL)
        return 2;
    int rc = 0;
    for (int k = 0; k < BIG_KEYS && rc == 0; k++) {
        char key[32];
        snprintf(key, sizeof(key), "big/%d", k);
        glucx_test_fill_bytes(value, BIG_BYTES, 5000 + (uint64_t)k);
        if (glucx_store_set(store, key, value, BIG_BYTES) != GLUCX_OK) {
            fprintf(stderr, "writer: %s\n", glucx_last_error());
            rc = 3;
        }
    }
    free(value);
    glucx_store_destroy(store);
    return rc;
}

/*
 * Scan the directory while the writer works: every entry that is not a temporary file must
 * already hold the full value. This checks the on-disk invariant directly, independent of how
 * get polls.
 */
static int big_scanner_main(const char *dir)
{
    int complete = 0, rc = 0;
    int64_t deadline = now_ms() + glucx_test_ms(60000);
    char *buf = malloc(BIG_BYTES + 1);
    if (buf == NULL)
        return 2;
    while (complete < BIG_KEYS && now_ms() < deadline && rc == 0) {
        DIR *d = opendir(dir);
        if (d == NULL) {
            usleep(100);
            continue;
        }
        complete = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue; /* ".", ".." and temporary files */
            char path[600];
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            int fd = open(path, O_RDONLY);
            if (fd < 0) {
                fprintf(stderr, "scanner: cannot open listed %s: %s\n", path, strerror(errno));
                rc = 3;
                break;
            }
            size_t len = 0;
            ssize_t n;
            while ((n = read(fd, buf + len, BIG_BYTES + 1 - len)) > 0)
                len += (size_t)n;
            close(fd);
            if (len != BIG_BYTES) {
                fprintf(stderr, "scanner: %s holds %zu bytes, expected %d\n", path, len, BIG_BYTES);
                rc = 4;
                break;
            }
            complete++;
        }
        closedir(d);
    }
    free(buf);
    if (rc == 0 && complete < BIG_KEYS) {
        fprintf(stderr, "scanner: saw only %d of %d keys\n", complete, BIG_KEYS);
        rc = 5;
    }
    return rc;
}

/* A get racing the writer: polls from before the set, must get the whole value. */
static int big_reader_main(const char *dir)
{
    glucx_store_t *store = NULL;
    if (glucx_store_file_create(dir, &store) != GLUCX_OK)
        return 1;
    unsigned char *expect = malloc(BIG_BYTES);
    if (expect == NULL)
        return 2;
    int rc = 0;
    for (int k = 0; k < BIG_KEYS && rc == 0; k++) {
        char key[32];
        snprintf(key, sizeof(key), "big/%d", k);
        glucx_test_fill_bytes(expect, BIG_BYTES, 5000 + (uint64_t)k);
        void *got = NULL;
        size_t bytes = 0;
        if (glucx_store_get(store, key, glucx_test_ms(60000), &got, &bytes) != GLUCX_OK) {
            fprintf(stderr, "reader: %s\n", glucx_last_error());
            rc = 3;
        } else if (bytes != BIG_BYTES || memcmp(got, expect, BIG_BYTES) != 0) {
            fprintf(stderr, "reader: %s: %zu bytes, or wrong content\n", key, bytes);
            rc = 4;
        }
        free(got);
    }
    free(expect);
    glucx_store_destroy(store);
    return rc;
}

/* Rank 0 reads, rank 1 scans the directory, rank 2 writes. */
static int big_role_main(int rank, int size, void *arg)
{
    (void)size;
    int (*const roles[3])(const char *) = {big_reader_main, big_scanner_main, big_writer_main};
    return roles[rank](arg);
}

static void test_atomic_visibility(void **state)
{
    fixture_t *fx = *state;
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/big", fx->dir);
    glucx_store_t *store = NULL; /* create the directory before the scanner looks */
    assert_int_equal(glucx_store_file_create(dir, &store), GLUCX_OK);
    glucx_store_destroy(store);

    assert_int_equal(glucx_test_procs_run(3, big_role_main, dir, 120), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_makes_parents, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_waits_for_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_atomic_visibility, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
