/*
 * Tests of the Redis store (plugin/store/redis.c) against a real redis-server that the test
 * starts on 127.0.0.1 on a free port and stops by PID at the end. Values are checked against
 * independently generated patterns and, where it matters, read back with plain hiredis.
 *
 * redis-server is a test dependency (Debian package redis-server): if it is missing the test
 * fails with a message saying so, it does not skip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <glucx/store.h>

#include "support/procs.h"
#include "support/util.h"

#define MiB (1024 * 1024)

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Number of open file descriptors of this process. */

/* ---- a private redis-server ---- */

typedef struct {
    pid_t pid;
    int port;
    char dir[128]; /* its working directory and log */
} redis_server_t;

static redis_server_t g_server;

/* @return 1 if an executable named @p name is on PATH. */
static int on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = strdup(path), *save = NULL;
    int found = 0;
    for (char *d = strtok_r(copy, ":", &save); d != NULL && !found;
         d = strtok_r(NULL, ":", &save)) {
        char full[512];
        snprintf(full, sizeof(full), "%s/%s", d, name);
        found = access(full, X_OK) == 0;
    }
    free(copy);
    return found;
}

/* @return 1 if we can bind 127.0.0.1:@p port right now. */
static int port_is_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
    close(fd);
    return ok;
}

/* A port nothing listens on (bound by us, then released). */
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

/* @return 1 if the server on @p port answers PING with PONG. */
static int server_pings(int port)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c != NULL && c->err == 0) {
        redisReply *r = redisCommand(c, "PING");
        ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        if (r != NULL)
            freeReplyObject(r);
    }
    redisFree(c);
    return ok;
}

static void server_stop(redis_server_t *srv)
{
    if (srv->pid > 0) {
        kill(srv->pid, SIGTERM);
        int64_t deadline = now_ms() + glucx_test_ms(5000);
        while (waitpid(srv->pid, NULL, WNOHANG) == 0) {
            if (now_ms() > deadline) {
                kill(srv->pid, SIGKILL);
                waitpid(srv->pid, NULL, 0);
                break;
            }
            usleep(5000);
        }
        srv->pid = 0;
    }
    if (srv->dir[0] == '\0')
        return;
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", srv->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", srv->dir);
    srv->dir[0] = '\0';
}

/*
 * Start redis-server on 127.0.0.1 on a random free port in 20000-60000 and wait until it
 * answers PING. @return 0, or -1 with a message on stderr.
 */
static int server_start(redis_server_t *srv)
{
    memset(srv, 0, sizeof(*srv));
    if (!on_path("redis-server")) {
        fprintf(stderr, "FAIL: redis-server is not installed (not found on PATH). The Redis "
                        "store tests need it: install the Debian package redis-server (the "
                        "project's dependency script does).\n");
        return -1;
    }
    snprintf(srv->dir, sizeof(srv->dir), "/tmp/glucx-test-redis-XXXXXX");
    if (mkdtemp(srv->dir) == NULL) {
        fprintf(stderr, "cannot create a temporary directory: %s\n", strerror(errno));
        return -1;
    }
    uint64_t seed = (uint64_t)getpid() * 1000003u ^ (uint64_t)now_ms();
    for (int attempt = 0; attempt < 20; attempt++) {
        int port = 20000 + (int)(glucx_test_rand(&seed) % 40001);
        if (!port_is_free(port))
            continue;
        char port_s[16], log[200];
        snprintf(port_s, sizeof(port_s), "%d", port);
        snprintf(log, sizeof(log), "%s/redis.log", srv->dir);
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "fork: %s\n", strerror(errno));
            return -1;
        }
        if (pid == 0) {
            /* do not outlive the test if it crashes */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            /* its own process group: test_server_dies stops it (SIGSTOP), and the kernel sends
             * SIGHUP (then SIGCONT) to an orphaned process group that has a stopped member when
             * a process exits (POSIX); ctest's group, which its tests share, is orphaned when
             * ctest runs detached (nohup, CI): the test died of SIGHUP that way under load */
            setpgid(0, 0);
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
                close(fd);
            }
            execlp("redis-server", "redis-server", "--port", port_s, "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", srv->dir,
                   "--loglevel", "warning", (char *)NULL);
            _exit(127);
        }
        int64_t deadline = now_ms() + glucx_test_ms(10000);
        int exited = 0;
        while (now_ms() < deadline) {
            if (waitpid(pid, NULL, WNOHANG) == pid) {
                exited = 1; /* e.g. the port was taken in between: try another */
                break;
            }
            if (server_pings(port)) {
                srv->pid = pid;
                srv->port = port;
                return 0;
            }
            usleep(20000);
        }
        if (!exited) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        fprintf(stderr, "redis-server on port %d did not come up (log in %s), trying another\n",
                port, log);
    }
    fprintf(stderr, "FAIL: could not start redis-server on any of 20 ports (see %s/redis.log)\n",
            srv->dir);
    return -1;
}

static int group_setup(void **state)
{
    (void)state;
    return server_start(&g_server);
}

static int group_teardown(void **state)
{
    (void)state;
    server_stop(&g_server);
    return 0;
}

/* Raw GET through plain hiredis (independent of the code under test). Returns a malloc'd copy
 * or NULL if the key does not exist. */
static void *raw_get(int port, const char *key, size_t *bytes_p)
{
    struct timeval tv = {.tv_sec = glucx_test_ms(5000) / 1000, .tv_usec = 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    const char *argv[2] = {"GET", key};
    size_t argv_len[2] = {3, strlen(key)};
    redisReply *r = redisCommandArgv(c, 2, argv, argv_len);
    assert_non_null(r);
    void *copy = NULL;
    if (r->type == REDIS_REPLY_STRING) {
        copy = malloc(r->len + 1);
        memcpy(copy, r->str, r->len);
        *bytes_p = r->len;
    } else {
        assert_int_equal(r->type, REDIS_REPLY_NIL);
    }
    freeReplyObject(r);
    redisFree(c);
    return copy;
}

static glucx_store_t *open_store(const char *prefix)
{
    glucx_store_t *store = NULL;
    glucx_status_t status =
        glucx_store_redis_create("127.0.0.1", g_server.port, prefix, glucx_test_ms(5000), &store);
    if (status != GLUCX_OK)
        fail_msg("redis store create: %s", glucx_last_error());
    return store;
}

/* ---- tests ---- */

static void test_create_errors(void **state)
{
    (void)state;
    glucx_store_t *store = (glucx_store_t *)0x1;
    assert_int_equal(glucx_store_redis_create(NULL, 6379, NULL, 0, &store), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_redis_create("", 6379, NULL, 0, &store), GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_redis_create("127.0.0.1", 0, NULL, 0, &store),
                     GLUCX_ERR_INVALID_ARG);
    assert_int_equal(glucx_store_redis_create("127.0.0.1", 65536, NULL, 0, &store),
                     GLUCX_ERR_INVALID_ARG);
    assert_non_null(strstr(glucx_last_error(), "65536"));
    assert_int_equal(glucx_store_redis_create("127.0.0.1", 6379, NULL, 0, NULL),
                     GLUCX_ERR_INVALID_ARG);
    assert_ptr_equal(store, (glucx_store_t *)0x1);

    /* nothing listens: refused at once, the message names host:port */
    int port = unused_port();
    int64_t t0 = now_ms();
    assert_int_equal(glucx_store_redis_create("127.0.0.1", port, "p/", glucx_test_ms(3000), &store),
                     GLUCX_ERR_STORE);
    assert_true(now_ms() - t0 < glucx_test_ms(2000));
    char hostport[64];
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", port);
    assert_non_null(strstr(glucx_last_error(), hostport));
    assert_ptr_equal(store, (glucx_store_t *)0x1);
}

static const char *const rt_keys[] = {
    "rank/0/addr", "a:b", "", "with space", "ünïcödé", "%41", "big", "empty",
};
static const size_t rt_sizes[] = {100, 7, 8, 9, 10, 11, MiB + 17, 0};
#define RT_COUNT ((int)(sizeof(rt_keys) / sizeof(rt_keys[0])))

static void *rt_value(int i)
{
    size_t bytes = rt_sizes[i];
    unsigned char *v = malloc(bytes > 0 ? bytes : 1);
    assert_non_null(v);
    glucx_test_fill_bytes(v, bytes, 2000 + (uint64_t)i);
    if (bytes > 0)
        v[0] = 0;
    if (bytes > 2)
        v[bytes / 2] = 0;
    return v;
}

static void test_round_trip(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "rt/%d/", (int)getpid());
    int fds_before = glucx_test_count_fds();
    glucx_store_t *writer = open_store(prefix), *reader = open_store(prefix);

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

        /* the server holds exactly the bytes under "<prefix><key>" */
        char full[128];
        snprintf(full, sizeof(full), "%s%s", prefix, rt_keys[i]);
        size_t raw_bytes = 0;
        void *raw = raw_get(g_server.port, full, &raw_bytes);
        assert_non_null(raw);
        assert_int_equal(raw_bytes, rt_sizes[i]);
        assert_memory_equal(raw, expect, rt_sizes[i]);
        free(raw);
        free(expect);
    }
    void *got = NULL;
    size_t bytes = 1;
    assert_int_equal(glucx_store_get(reader, "null-empty", 0, &got, &bytes), GLUCX_OK);
    assert_non_null(got);
    assert_int_equal(bytes, 0);
    free(got);
    glucx_store_destroy(reader);
    glucx_store_destroy(writer);
    assert_int_equal(glucx_test_count_fds(), fds_before); /* the connections are closed */
}

static void test_timeout(void **state)
{
    (void)state;
    glucx_store_t *store = open_store("timeout/");
    void *got = (void *)0x1;
    size_t bytes = 3;
    int64_t t0 = now_ms();
    assert_int_equal(glucx_store_get(store, "never/set", 200, &got, &bytes), GLUCX_ERR_TIMEOUT);
    int64_t elapsed = now_ms() - t0;
    assert_true(elapsed >= 200);
    assert_true(elapsed < glucx_test_ms(5000));
    char hostport[64];
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", g_server.port);
    assert_non_null(strstr(glucx_last_error(), hostport));
    assert_non_null(strstr(glucx_last_error(), "timeout/never/set"));
    assert_non_null(strstr(glucx_last_error(), "Timed out waiting 200ms")); /* Gloo's wording */
    assert_ptr_equal(got, (void *)0x1);
    assert_int_equal(bytes, 3);
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

/* A get that starts before the set waits for it; both share one store (and connection). */
static void test_get_waits_for_set(void **state)
{
    (void)state;
    glucx_store_t *store = open_store("late/");
    late_set_t ls = {.store = store, .key = "key", .delay_ms = 150};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, late_set_main, &ls), 0);
    void *got = NULL;
    size_t bytes = 0;
    glucx_status_t status = glucx_store_get(store, "key", glucx_test_ms(10000), &got, &bytes);
    pthread_join(thread, NULL);
    assert_int_equal(ls.status, GLUCX_OK);
    assert_int_equal(status, GLUCX_OK);
    assert_int_equal(bytes, 4);
    assert_memory_equal(got, "late", 4);
    free(got);
    glucx_store_destroy(store);
}

static void test_prefix_separation(void **state)
{
    (void)state;
    glucx_store_t *a = open_store("jobA/"), *b = open_store("jobB/"), *none = open_store(NULL);
    assert_int_equal(glucx_store_set(a, "k", "from-a", 6), GLUCX_OK);
    assert_int_equal(glucx_store_set(b, "k", "from-b!", 7), GLUCX_OK);
    assert_int_equal(glucx_store_set(a, "only-a", "x", 1), GLUCX_OK);

    void *got = NULL;
    size_t bytes = 0;
    assert_int_equal(glucx_store_get(a, "k", 0, &got, &bytes), GLUCX_OK);
    assert_int_equal(bytes, 6);
    assert_memory_equal(got, "from-a", 6);
    free(got);
    assert_int_equal(glucx_store_get(b, "k", 0, &got, &bytes), GLUCX_OK);
    assert_int_equal(bytes, 7);
    assert_memory_equal(got, "from-b!", 7);
    free(got);
    got = NULL;
    assert_int_equal(glucx_store_get(b, "only-a", 50, &got, &bytes), GLUCX_ERR_TIMEOUT);
    assert_null(got);
    /* without a prefix the full names are visible */
    assert_int_equal(glucx_store_get(none, "jobA/k", 0, &got, &bytes), GLUCX_OK);
    assert_int_equal(bytes, 6);
    assert_memory_equal(got, "from-a", 6);
    free(got);
    got = NULL;
    assert_int_equal(glucx_store_get(none, "k", 0, &got, &bytes), GLUCX_ERR_TIMEOUT);
    glucx_store_destroy(none);
    glucx_store_destroy(b);
    glucx_store_destroy(a);
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
        snprintf(key, sizeof(key), "%d/%d", ta->id, k);
        glucx_test_fill_bytes(value, sizeof(value), (uint64_t)(ta->id * 1000 + k));
        if (glucx_store_set(ta->store, key, value, sizeof(value)) != GLUCX_OK)
            ta->errors++;
    }
    for (int peer = 0; peer < NTHREADS; peer++) {
        for (int k = 0; k < THREAD_KEYS; k++) {
            snprintf(key, sizeof(key), "%d/%d", peer, k);
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
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "threads/%d/", (int)getpid());
    glucx_store_t *store = open_store(prefix);
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

/* Rank @p rank of a rendezvous through the test server, keys under prefix @p arg. */
static int proc_main(int rank, int size, void *arg)
{
    glucx_store_t *store = NULL;
    if (glucx_store_redis_create("127.0.0.1", g_server.port, arg, glucx_test_ms(5000), &store) !=
        GLUCX_OK) {
        fprintf(stderr, "rank %d: create: %s\n", rank, glucx_last_error());
        return 1;
    }
    int rc = glucx_test_store_exchange(store, rank, size, "", PROC_VALUE_BYTES, 9000);
    glucx_store_destroy(store);
    return rc;
}

static void test_processes(void **state)
{
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "procs/%d/", (int)getpid());
    assert_int_equal(glucx_test_procs_run(NPROCS, proc_main, prefix, 60), 0);
}

/* ---- connection failures ---- */

/* The server drops every client connection: the store reconnects once and carries on. */
static void test_reconnect(void **state)
{
    (void)state;
    glucx_store_t *store = open_store("reconnect/");
    assert_int_equal(glucx_store_set(store, "before", "1", 1), GLUCX_OK);

    struct timeval tv = {.tv_sec = 5, .tv_usec = 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", g_server.port, tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisReply *r = redisCommand(c, "CLIENT KILL TYPE normal SKIPME yes");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_true(r->integer >= 1); /* at least the store's connection */
    freeReplyObject(r);
    redisFree(c);

    void *got = NULL;
    size_t bytes = 0;
    glucx_status_t status = glucx_store_get(store, "before", 0, &got, &bytes);
    if (status != GLUCX_OK)
        fail_msg("get after the connection was killed: %s", glucx_last_error());
    assert_int_equal(bytes, 1);
    assert_memory_equal(got, "1", 1);
    free(got);
    assert_int_equal(glucx_store_set(store, "after", "2", 1), GLUCX_OK);
    size_t raw_bytes = 0;
    void *raw = raw_get(g_server.port, "reconnect/after", &raw_bytes);
    assert_non_null(raw);
    assert_int_equal(raw_bytes, 1);
    assert_memory_equal(raw, "2", 1);
    free(raw);
    glucx_store_destroy(store);
}

/* A "server" that accepts connections and hangs up at once, from its own thread. */
typedef struct {
    int listen_fd;
    int port;
    atomic_int stop;
    atomic_int accepted; /* connections accepted and closed */
} hangup_server_t;

static void *hangup_server_main(void *arg)
{
    hangup_server_t *hs = arg;
    while (!hs->stop) {
        struct pollfd pfd = {.fd = hs->listen_fd, .events = POLLIN};
        if (poll(&pfd, 1, 20) == 1) {
            int fd = accept(hs->listen_fd, NULL, NULL);
            if (fd >= 0) {
                close(fd);
                hs->accepted++;
            }
        }
    }
    return NULL;
}

/* A value no single write() can take: twice the largest send buffer TCP autotuning may give a
 * socket (the maximum of net.ipv4.tcp_wmem; net.core.wmem_max if larger), at least 1 MiB;
 * 32 MiB when /proc cannot tell. Not more: hiredis copies the value twice per attempt, and on a
 * loaded machine that CPU time, not the store, would dominate the time the SET takes. */
static size_t beyond_send_buffer(void)
{
    long long tcp_min = 0, tcp_def = 0, tcp_max = 0, core_max = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
    if (f != NULL) {
        if (fscanf(f, "%lld %lld %lld", &tcp_min, &tcp_def, &tcp_max) != 3)
            tcp_max = 0;
        fclose(f);
    }
    f = fopen("/proc/sys/net/core/wmem_max", "r");
    if (f != NULL) {
        if (fscanf(f, "%lld", &core_max) != 1)
            core_max = 0;
        fclose(f);
    }
    long long most = tcp_max > core_max ? tcp_max : core_max;
    if (most <= 0)
        return 32 * MiB;
    return most < MiB / 2 ? MiB : (size_t)(2 * most);
}

/*
 * The peer hangs up before a large SET: the store's connection is half-closed, the first
 * write() of the value provokes a reset, and the next write() fails with EPIPE, which raises
 * SIGPIPE. The store must turn that into GLUCX_ERR_STORE instead of letting SIGPIPE kill the
 * process (its default action).
 */
static void test_peer_hangs_up_during_set(void **state)
{
    (void)state;
    hangup_server_t hs = {0};
    hs.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(hs.listen_fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(hs.listen_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    assert_int_equal(getsockname(hs.listen_fd, (struct sockaddr *)&addr, &len), 0);
    hs.port = ntohs(addr.sin_port);
    assert_int_equal(listen(hs.listen_fd, 16), 0);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, hangup_server_main, &hs), 0);

    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_redis_create("127.0.0.1", hs.port, "p/", 2000, &store), GLUCX_OK);
    /* the hang-up has happened once the server thread closed the connection */
    for (int64_t end = now_ms() + glucx_test_ms(10000); hs.accepted < 1 && now_ms() < end;)
        usleep(1000);
    assert_true(hs.accepted >= 1);
    usleep(50000); /* let the hang-up arrive */
    size_t bytes = beyond_send_buffer();
    char *value = calloc(1, bytes);
    assert_non_null(value);
    int64_t t0 = now_ms();
    glucx_status_t status = glucx_store_set(store, "k", value, bytes);
    int64_t elapsed = now_ms() - t0;
    free(value);
    hs.stop = 1;
    pthread_join(thread, NULL);
    close(hs.listen_fd);

    assert_int_equal(status, GLUCX_ERR_STORE);
    assert_true(elapsed < glucx_test_ms(10000));
    char hostport[64];
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", hs.port);
    assert_non_null(strstr(glucx_last_error(), hostport));
    assert_non_null(strstr(glucx_last_error(), "p/k"));
    assert_true(hs.accepted >= 2); /* the store reconnected once before giving up */
    glucx_store_destroy(store);

    /* the guard leaves the thread's signal mask as it was */
    sigset_t mask;
    pthread_sigmask(SIG_SETMASK, NULL, &mask);
    assert_false(sigismember(&mask, SIGPIPE));
}

/* A server that stalls, then dies, mid-test: errors within bounded time, no hang, no crash
 * (in particular no SIGPIPE when writing to the dead connection). */
static void test_server_dies(void **state)
{
    (void)state;
    int fds_before = glucx_test_count_fds();
    redis_server_t srv;
    assert_int_equal(server_start(&srv), 0);
    char hostport[64];
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", srv.port);
    glucx_store_t *store = NULL;
    assert_int_equal(glucx_store_redis_create("127.0.0.1", srv.port, "dies/", 500, &store),
                     GLUCX_OK);
    assert_int_equal(glucx_store_set(store, "k", "v", 1), GLUCX_OK);

    /* stalled: commands time out after the store's 500 ms socket timeout (once per attempt) */
    kill(srv.pid, SIGSTOP);
    void *got = NULL;
    size_t bytes = 0;
    int64_t t0 = now_ms();
    glucx_status_t status = glucx_store_get(store, "k", 200, &got, &bytes);
    int64_t elapsed = now_ms() - t0;
    if (status != GLUCX_ERR_STORE && status != GLUCX_ERR_TIMEOUT)
        fail_msg("get from a stopped server: %s (%s)", glucx_status_string(status),
                 glucx_last_error());
    assert_true(elapsed < glucx_test_ms(5000));
    assert_non_null(strstr(glucx_last_error(), hostport));

    /* dead */
    kill(srv.pid, SIGKILL);
    waitpid(srv.pid, NULL, 0);
    srv.pid = 0;
    t0 = now_ms();
    assert_int_equal(glucx_store_set(store, "k2", "v", 1), GLUCX_ERR_STORE);
    assert_true(now_ms() - t0 < glucx_test_ms(5000));
    assert_non_null(strstr(glucx_last_error(), hostport));
    assert_non_null(strstr(glucx_last_error(), "dies/k2"));
    t0 = now_ms();
    status = glucx_store_get(store, "k", 1000, &got, &bytes);
    if (status != GLUCX_ERR_STORE && status != GLUCX_ERR_TIMEOUT)
        fail_msg("get from a dead server: %s (%s)", glucx_status_string(status),
                 glucx_last_error());
    assert_true(now_ms() - t0 < glucx_test_ms(10000));
    assert_null(got);
    /* and again, now that the store has no connection at all */
    assert_int_equal(glucx_store_set(store, "k3", "v", 1), GLUCX_ERR_STORE);
    glucx_store_destroy(store);
    server_stop(&srv);
    assert_int_equal(glucx_test_count_fds(),
                     fds_before); /* failed reconnects leave no sockets behind */
}

static void test_from_env(void **state)
{
    (void)state;
    char env[128];
    snprintf(env, sizeof(env), "redis://127.0.0.1:%d/env/%d/", g_server.port, (int)getpid());
    setenv("GLUCX_STORE", env, 1);
    glucx_store_t *store = NULL;
    glucx_status_t status = glucx_store_from_env(&store);
    if (status != GLUCX_OK)
        fail_msg("GLUCX_STORE=%s: %s", env, glucx_last_error());
    unsigned char value[300];
    glucx_test_fill_bytes(value, sizeof(value), 77);
    assert_int_equal(glucx_store_set(store, "k", value, sizeof(value)), GLUCX_OK);
    char full[64];
    snprintf(full, sizeof(full), "env/%d/k", (int)getpid());
    size_t raw_bytes = 0;
    void *raw = raw_get(g_server.port, full, &raw_bytes);
    assert_non_null(raw);
    assert_int_equal(raw_bytes, sizeof(value));
    assert_memory_equal(raw, value, sizeof(value));
    free(raw);
    glucx_store_destroy(store);

    /* without a prefix */
    snprintf(env, sizeof(env), "redis://127.0.0.1:%d", g_server.port);
    setenv("GLUCX_STORE", env, 1);
    assert_int_equal(glucx_store_from_env(&store), GLUCX_OK);
    void *got = NULL;
    size_t bytes = 0;
    assert_int_equal(glucx_store_get(store, full, 0, &got, &bytes), GLUCX_OK);
    assert_int_equal(bytes, sizeof(value));
    assert_memory_equal(got, value, sizeof(value));
    free(got);
    glucx_store_destroy(store);
    unsetenv("GLUCX_STORE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_errors),     cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_timeout),           cmocka_unit_test(test_get_waits_for_set),
        cmocka_unit_test(test_prefix_separation), cmocka_unit_test(test_threads),
        cmocka_unit_test(test_processes),         cmocka_unit_test(test_reconnect),
        cmocka_unit_test(test_server_dies),       cmocka_unit_test(test_peer_hangs_up_during_set),
        cmocka_unit_test(test_from_env),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
    /* make a failed server start a failure whatever cmocka's count says */
    return failed != 0 || g_server.port == 0 ? 1 : 0;
}
