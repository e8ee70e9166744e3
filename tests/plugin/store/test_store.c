/*
 * Tests of the generic store wrapper (plugin/store/store.c) with fake host callbacks, and of
 * GLUCX_STORE parsing in glucx_store_from_env().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glucx/store.h>

#include "support/util.h"

/* ---- a fake host store: a small table of copied values, with knobs to misbehave ---- */

#define FAKE_MAX_KEYS 16

typedef struct fake_store {
    char *keys[FAKE_MAX_KEYS];
    void *values[FAKE_MAX_KEYS];
    size_t bytes[FAKE_MAX_KEYS];
    int nkeys;
    int set_calls, get_calls, release_calls;
    int64_t last_timeout_ms;
    const void *last_set_value;  /* pointer the wrapper passed to set */
    glucx_status_t force_status; /* != GLUCX_OK: set and get fail with it */
    int get_returns_no_buffer;   /* get succeeds with bytes > 0 and a NULL buffer */
    int get_returns_null_empty;  /* get of an empty value hands back NULL */
} fake_store_t;

static int fake_find(fake_store_t *fake, const char *key)
{
    for (int i = 0; i < fake->nkeys; i++)
        if (strcmp(fake->keys[i], key) == 0)
            return i;
    return -1;
}

static glucx_status_t fake_set(void *arg, const char *key, const void *value, size_t bytes)
{
    fake_store_t *fake = arg;
    fake->set_calls++;
    fake->last_set_value = value;
    if (fake->force_status != GLUCX_OK)
        return fake->force_status;
    if (fake->nkeys == FAKE_MAX_KEYS)
        return GLUCX_ERR_STORE;
    int i = fake->nkeys++;
    fake->keys[i] = strdup(key);
    fake->values[i] = malloc(bytes > 0 ? bytes : 1);
    memcpy(fake->values[i], value, bytes);
    fake->bytes[i] = bytes;
    return GLUCX_OK;
}

static glucx_status_t fake_get(void *arg, const char *key, int64_t timeout_ms, void **value_p,
                               size_t *bytes_p)
{
    fake_store_t *fake = arg;
    fake->get_calls++;
    fake->last_timeout_ms = timeout_ms;
    if (fake->force_status != GLUCX_OK)
        return fake->force_status;
    if (fake->get_returns_no_buffer) {
        *value_p = NULL;
        *bytes_p = 8;
        return GLUCX_OK;
    }
    int i = fake_find(fake, key);
    if (i < 0)
        return GLUCX_ERR_TIMEOUT;
    if (fake->bytes[i] == 0 && fake->get_returns_null_empty) {
        *value_p = NULL;
        *bytes_p = 0;
        return GLUCX_OK;
    }
    *value_p = malloc(fake->bytes[i] > 0 ? fake->bytes[i] : 1);
    memcpy(*value_p, fake->values[i], fake->bytes[i]);
    *bytes_p = fake->bytes[i];
    return GLUCX_OK;
}

static void fake_release(void *arg)
{
    fake_store_t *fake = arg;
    fake->release_calls++;
}

static void fake_clear(fake_store_t *fake)
{
    for (int i = 0; i < fake->nkeys; i++) {
        free(fake->keys[i]);
        free(fake->values[i]);
    }
    fake->nkeys = 0;
}

/* ---- generic wrapper ---- */

static void test_create_rejects_null(void **state)
{
    (void)state;
    fake_store_t fake = {0};
    glucx_store_ops_t ops = {.set = fake_set, .get = fake_get, .release = fake_release};
    glucx_store_t *store = (glucx_store_t *)0x1;

    assert_int_equal(glucx_store_create(NULL, &fake, &store), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "store create"));
    assert_non_null(strstr(glucx_last_error(), "ops"));

    ops.set = NULL;
    assert_int_equal(glucx_store_create(&ops, &fake, &store), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "ops->set"));
    ops.set = fake_set;
    ops.get = NULL;
    assert_int_equal(glucx_store_create(&ops, &fake, &store), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "ops->get"));
    ops.get = fake_get;
    assert_int_equal(glucx_store_create(&ops, &fake, NULL), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "store_p"));

    /* outputs untouched and nothing released on failure */
    assert_ptr_equal(store, (glucx_store_t *)0x1);
    assert_int_equal(fake.release_calls, 0);
    glucx_store_destroy(NULL); /* accepted */
}

static void test_round_trip_and_release_once(void **state)
{
    (void)state;
    fake_store_t fake = {0};
    glucx_store_ops_t ops = {.set = fake_set, .get = fake_get, .release = fake_release};
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_create(&ops, &fake, &store), GLUCX_OK);
    assert_non_null(store);
    /* the ops are copied: clobbering the caller's struct must not matter */
    memset(&ops, 0, sizeof(ops));

    unsigned char value[300], expect[300];
    glucx_test_fill_bytes(value, sizeof(value), 42);
    value[0] = 0;
    value[150] = 0; /* binary: embedded NUL bytes */
    memcpy(expect, value, sizeof(value));
    assert_int_equal(glucx_store_set(store, "rank/0:addr", value, sizeof(value)), GLUCX_OK);
    assert_int_equal(fake.set_calls, 1);
    assert_ptr_equal(fake.last_set_value, value); /* borrowed for the call, not copied */
    memset(value, 0xee, sizeof(value));           /* caller reuses its buffer */

    void *got = NULL, *got2 = NULL;
    size_t bytes = 0, bytes2 = 0;
    assert_int_equal(glucx_store_get(store, "rank/0:addr", 1234, &got, &bytes), GLUCX_OK);
    assert_int_equal(fake.last_timeout_ms, 1234);
    assert_int_equal(bytes, sizeof(expect));
    assert_memory_equal(got, expect, sizeof(expect));
    assert_int_equal(glucx_store_get(store, "rank/0:addr", 0, &got2, &bytes2), GLUCX_OK);
    assert_ptr_not_equal(got, got2); /* every get hands out its own buffer */
    assert_int_equal(bytes2, sizeof(expect));
    assert_memory_equal(got2, expect, sizeof(expect));
    free(got);
    free(got2);

    /* a missing key: the callback's status passes through, outputs untouched */
    got = (void *)0x1;
    bytes = 77;
    assert_int_equal(glucx_store_get(store, "missing", 10, &got, &bytes), GLUCX_ERR_TIMEOUT);
    assert_ptr_equal(got, (void *)0x1);
    assert_int_equal(bytes, 77);
    /* the fake cannot call glucx_error(): the wrapper names operation and key */
    assert_non_null(strstr(glucx_last_error(), "store get"));
    assert_non_null(strstr(glucx_last_error(), "missing"));

    assert_int_equal(fake.release_calls, 0);
    glucx_store_destroy(store);
    assert_int_equal(fake.release_calls, 1);
    fake_clear(&fake);
}

static void test_zero_length_values(void **state)
{
    (void)state;
    fake_store_t fake = {0};
    glucx_store_ops_t ops = {.set = fake_set, .get = fake_get};
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_create(&ops, &fake, &store), GLUCX_OK);

    /* NULL value is fine with 0 bytes; the callback still gets a valid pointer */
    assert_int_equal(glucx_store_set(store, "empty-null", NULL, 0), GLUCX_OK);
    assert_non_null(fake.last_set_value);
    char c = 'x';
    assert_int_equal(glucx_store_set(store, "empty", &c, 0), GLUCX_OK);

    void *got = NULL;
    size_t bytes = 99;
    assert_int_equal(glucx_store_get(store, "empty-null", 0, &got, &bytes), GLUCX_OK);
    assert_int_equal(bytes, 0);
    assert_non_null(got); /* an empty value is still a buffer the caller frees */
    free(got);

    /* a host callback that returns NULL for an empty value is normalised */
    fake.get_returns_null_empty = 1;
    got = NULL;
    bytes = 99;
    assert_int_equal(glucx_store_get(store, "empty", 0, &got, &bytes), GLUCX_OK);
    assert_int_equal(bytes, 0);
    assert_non_null(got);
    free(got);

    glucx_store_destroy(store); /* no release callback: arg untouched */
    assert_int_equal(fake.release_calls, 0);
    fake_clear(&fake);
}

static void test_null_arguments(void **state)
{
    (void)state;
    fake_store_t fake = {0};
    glucx_store_ops_t ops = {.set = fake_set, .get = fake_get, .release = fake_release};
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_create(&ops, &fake, &store), GLUCX_OK);
    char v[4] = "abc";
    void *got = NULL;
    size_t bytes = 0;

    assert_int_equal(glucx_store_set(NULL, "k", v, 4), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "store set"));
    assert_int_equal(glucx_store_set(store, NULL, v, 4), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_set(store, "k", NULL, 4), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "'k'"));
    assert_int_equal(fake.set_calls, 0);

    assert_int_equal(glucx_store_get(NULL, "k", 0, &got, &bytes), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_get(store, NULL, 0, &got, &bytes), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_get(store, "k", 0, NULL, &bytes), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_get(store, "k", 0, &got, NULL), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_get(store, "k", -1, &got, &bytes), GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "store get"));
    assert_non_null(strstr(glucx_last_error(), "'k'"));
    assert_int_equal(fake.get_calls, 0);

    glucx_store_destroy(store);
    assert_int_equal(fake.release_calls, 1);
}

static void test_callback_failures(void **state)
{
    (void)state;
    fake_store_t fake = {0};
    glucx_store_ops_t ops = {.set = fake_set, .get = fake_get, .release = fake_release};
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_create(&ops, &fake, &store), GLUCX_OK);
    void *got = NULL;
    size_t bytes = 0;

    fake.force_status = GLUCX_ERR_STORE;
    assert_int_equal(glucx_store_set(store, "job/k1", "x", 1), GLUCX_ERR_STORE);
    assert_non_null(strstr(glucx_last_error(), "store set"));
    assert_non_null(strstr(glucx_last_error(), "job/k1"));
    assert_int_equal(glucx_store_get(store, "job/k2", 5, &got, &bytes), GLUCX_ERR_STORE);
    assert_non_null(strstr(glucx_last_error(), "job/k2"));
    assert_null(got);

    fake.force_status = GLUCX_OK;
    fake.get_returns_no_buffer = 1;
    assert_int_equal(glucx_store_get(store, "job/k3", 5, &got, &bytes), GLUCX_ERR_STORE);
    assert_non_null(strstr(glucx_last_error(), "job/k3"));
    assert_null(got);

    glucx_store_destroy(store);
    assert_int_equal(fake.release_calls, 1);
    fake_clear(&fake);
}

/* ---- GLUCX_STORE ---- */

/* A TCP port on 127.0.0.1 that nothing listens on (bound, then released). */
static int unused_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
    close(fd);
    return ntohs(addr.sin_port);
}

static void expect_malformed(const char *value)
{
    glucx_store_t *store = (glucx_store_t *)0x1;
    if (value == NULL)
        unsetenv("GLUCX_STORE");
    else
        setenv("GLUCX_STORE", value, 1);
    glucx_status_t status = glucx_store_from_env(&store);
    if (status != GLUCX_ERR_INVALID_ARG)
        fail_msg("GLUCX_STORE=\"%s\": expected GLUCX_ERR_INVALID_ARG, got %s (%s)",
                 value ? value : "(unset)", glucx_status_string(status), glucx_last_error());
    assert_ptr_equal(store, (glucx_store_t *)0x1);
    const char *msg = glucx_last_error();
    if (value != NULL && strstr(msg, value) == NULL)
        fail_msg("message does not show the value \"%s\": %s", value, msg);
    /* the accepted forms are listed */
    assert_non_null(strstr(msg, "file:DIR"));
    assert_non_null(strstr(msg, "redis://HOST:PORT"));
    assert_non_null(strstr(msg, "GLUCX_STORE"));
}

static void test_env_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "file:",
        "FILE:/tmp/x",
        "/tmp/x",
        "file",
        "redis://",
        "redis:/127.0.0.1:6379",
        "redis:127.0.0.1:6379",
        "http://127.0.0.1:6379",
        "redis://127.0.0.1",
        "redis://127.0.0.1:",
        "redis://:6379",
        "redis://127.0.0.1:0",
        "redis://127.0.0.1:65536",
        "redis://127.0.0.1:-1",
        "redis://127.0.0.1:63x79",
        "redis://127.0.0.1:6379x/prefix",
        "redis://127.0.0.1:99999999999999999999999",
        "redis://127.0.0.1/x:6379",
        "redis://[::1",
        "redis://[::1]6379",
        "redis://[]:6379",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_malformed(bad[i]);
    expect_malformed(NULL);
    unsetenv("GLUCX_STORE");
    assert_int_equal(glucx_store_from_env(NULL), GLUCX_ERR_INVALID_ARG);
}

static void test_env_file(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/glucx-test-store-env-XXXXXX";
    char *base = mkdtemp(tmpl);
    assert_non_null(base);
    char dir[256], env[400];
    snprintf(dir, sizeof(dir), "%s/a/b", base); /* created on demand */
    snprintf(env, sizeof(env), "file:%s", dir);
    setenv("GLUCX_STORE", env, 1);

    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_from_env(&store), GLUCX_OK);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(glucx_store_set(store, "k", "v1", 2), GLUCX_OK);
    glucx_store_destroy(store);

    /* a second store from the same variable sees the value */
    assert_int_equal(glucx_store_from_env(&store), GLUCX_OK);
    void *got = NULL;
    size_t bytes = 0;
    assert_int_equal(glucx_store_get(store, "k", 0, &got, &bytes), GLUCX_OK);
    assert_int_equal(bytes, 2);
    assert_memory_equal(got, "v1", 2);
    free(got);
    glucx_store_destroy(store);

    /* the file store's own errors come through (a path under a regular file) */
    char file[300];
    snprintf(file, sizeof(file), "%s/plain", base);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(env, sizeof(env), "file:%s/sub", file);
    setenv("GLUCX_STORE", env, 1);
    store = NULL;
    assert_int_equal(glucx_store_from_env(&store), GLUCX_ERR_STORE);
    assert_null(store);
    unsetenv("GLUCX_STORE");

    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
}

/* Well-formed redis URLs reach the Redis constructor: with nothing listening on the port, the
 * result is GLUCX_ERR_STORE naming host:port, not GLUCX_ERR_INVALID_ARG. (Round trips through a
 * real server are in test_redis.c.) */
static void test_env_redis_parsed(void **state)
{
    (void)state;
    int port = unused_port();
    char env[200], hostport[64];
    const char *const forms[] = {"redis://127.0.0.1:%d", "redis://127.0.0.1:%d/job7/",
                                 "redis://localhost:%d/a:b/c", "redis://127.0.0.1:%d/"};
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        snprintf(env, sizeof(env), forms[i], port);
        setenv("GLUCX_STORE", env, 1);
        glucx_store_t *store = NULL;
        glucx_status_t status = glucx_store_from_env(&store);
        if (status != GLUCX_ERR_STORE)
            fail_msg("GLUCX_STORE=%s: expected GLUCX_ERR_STORE, got %s (%s)", env,
                     glucx_status_string(status), glucx_last_error());
        assert_null(store);
        snprintf(hostport, sizeof(hostport), ":%d", port);
        assert_non_null(strstr(glucx_last_error(), hostport));
        assert_non_null(strstr(glucx_last_error(), i == 2 ? "localhost" : "127.0.0.1"));
    }
    /* bracketed IPv6 host: the brackets are stripped before connecting */
    snprintf(env, sizeof(env), "redis://[::1]:%d/p", port);
    setenv("GLUCX_STORE", env, 1);
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_from_env(&store), GLUCX_ERR_STORE);
    snprintf(hostport, sizeof(hostport), "::1:%d", port);
    assert_non_null(strstr(glucx_last_error(), hostport));
    unsetenv("GLUCX_STORE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_rejects_null),
        cmocka_unit_test(test_round_trip_and_release_once),
        cmocka_unit_test(test_zero_length_values),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_callback_failures),
        cmocka_unit_test(test_env_malformed),
        cmocka_unit_test(test_env_file),
        cmocka_unit_test(test_env_redis_parsed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
