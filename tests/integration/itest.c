/* Shared harness of the multi-process integration tests (see itest.h). */
#include "itest.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int g_rank = -1;
static int g_failures;
static const char *g_case = "itest";

void itest_set_rank(int rank)
{
    g_rank = rank;
}

int itest_failures(void)
{
    return g_failures;
}

static void vprint(const char *file, int line, const char *fmt, va_list ap)
{
    char msg[4096];
    int n;
    if (g_rank >= 0)
        n = snprintf(msg, sizeof(msg), "[%s rank %d] ", g_case, g_rank);
    else
        n = snprintf(msg, sizeof(msg), "[%s parent] ", g_case);
    if (file != NULL && n >= 0 && (size_t)n < sizeof(msg))
        n += snprintf(msg + n, sizeof(msg) - (size_t)n, "%s:%d: ", file, line);
    if (n >= 0 && (size_t)n < sizeof(msg))
        vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    /* one write per line so the ranks' lines do not interleave */
    size_t len = strnlen(msg, sizeof(msg) - 2);
    msg[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, msg, len);
    (void)w;
}

void itest_fail_at(const char *file, int line, const char *fmt, ...)
{
    const char *base = strrchr(file, '/');
    va_list ap;
    va_start(ap, fmt);
    vprint(base != NULL ? base + 1 : file, line, fmt, ap);
    va_end(ap);
    g_failures++;
}

void itest_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint(NULL, 0, fmt, ap);
    va_end(ap);
}

int itest_status_at(const char *file, int line, glucx_status_t got, glucx_status_t want,
                    const char *what, ...)
{
    if (got == want)
        return 0;
    char text[1024];
    va_list ap;
    va_start(ap, what);
    vsnprintf(text, sizeof(text), what, ap);
    va_end(ap);
    itest_fail_at(file, line, "%s: expected %s (%d), got %s (%d): last error: %s", text,
                  glucx_status_string(want), (int)want, glucx_status_string(got), (int)got,
                  got != GLUCX_OK ? glucx_last_error() : "(none)");
    return -1;
}

/* ---- setup ---- */

void itest_apply_variant(const itest_env_t *env)
{
    g_case = env->case_name;
    if (strcmp(env->variant, "tcp") == 0) {
        setenv("UCX_TLS", "tcp", 1);
        setenv("UCX_NET_DEVICES", "lo", 1);
    }
}

glucx_status_t itest_comm(glucx_context_t *ctx, glucx_store_t *store, int rank, int size,
                          const char *name, int64_t timeout_ms, glucx_comm_t **comm_p)
{
    glucx_comm_params_t params = {
        .field_mask = GLUCX_COMM_PARAM_NAME | (timeout_ms > 0 ? GLUCX_COMM_PARAM_TIMEOUT : 0),
        .rank = rank,
        .size = size,
        .store = store,
        .name = name,
        .timeout_ms = timeout_ms,
    };
    *comm_p = NULL;
    glucx_status_t st = glucx_comm_create(ctx, &params, comm_p);
    if (st != GLUCX_OK)
        ITEST_FAIL("glucx_comm_create('%s', rank %d of %d) failed: %s: %s", name, rank, size,
                   glucx_status_string(st), glucx_last_error());
    return st;
}

glucx_status_t itest_open(const itest_env_t *env, int rank, int size, const char *name,
                          int64_t timeout_ms, glucx_context_t **ctx_p, glucx_store_t **store_p,
                          glucx_comm_t **comm_p)
{
    *ctx_p = NULL;
    *store_p = NULL;
    *comm_p = NULL;
    itest_apply_variant(env);
    glucx_status_t st = glucx_context_create(NULL, ctx_p);
    if (st != GLUCX_OK) {
        ITEST_FAIL("glucx_context_create failed: %s: %s", glucx_status_string(st),
                   glucx_last_error());
        return st;
    }
    st = glucx_store_file_create(env->store_dir, store_p);
    if (st != GLUCX_OK) {
        ITEST_FAIL("glucx_store_file_create(%s) failed: %s: %s", env->store_dir,
                   glucx_status_string(st), glucx_last_error());
        goto err;
    }
    st = itest_comm(*ctx_p, *store_p, rank, size, name, timeout_ms, comm_p);
    if (st != GLUCX_OK)
        goto err;
    return GLUCX_OK;
err:
    glucx_store_destroy(*store_p);
    glucx_context_destroy(*ctx_p);
    *store_p = NULL;
    *ctx_p = NULL;
    return st;
}

glucx_status_t itest_open_killed(const itest_env_t *env, int rank, int size, const char *name,
                                 int64_t timeout_ms, glucx_context_t **ctx_p,
                                 glucx_store_t **store_p, glucx_comm_t **comm_p)
{
    setenv("GLUCX_KEEPALIVE_MS", "500", 1);
    glucx_status_t st = itest_open(env, rank, size, name, timeout_ms, ctx_p, store_p, comm_p);
    if (st != GLUCX_OK)
        __atomic_store_n(&env->shared->done[rank], 2, __ATOMIC_SEQ_CST);
    return st;
}

void itest_close(glucx_context_t *ctx, glucx_store_t *store, glucx_comm_t *comm)
{
    glucx_comm_destroy(comm);
    glucx_store_destroy(store);
    glucx_context_destroy(ctx);
}

void itest_check_transport(const itest_env_t *env, glucx_comm_t *comm)
{
    int rank = glucx_comm_rank(comm), size = glucx_comm_size(comm);
    int tcp = strcmp(env->variant, "tcp") == 0;
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        char buf[256] = "";
        glucx_status_t st = glucx_comm_peer_transport(comm, p, buf, sizeof(buf));
        if (ITEST_STATUS(st, GLUCX_OK, "glucx_comm_peer_transport(peer %d)", p) != 0)
            continue;
        if (tcp)
            ITEST_CHECK(strstr(buf, "tcp") != NULL,
                        "variant tcp (UCX_TLS=tcp): rank %d reaches rank %d over '%s'", rank, p,
                        buf);
        else
            ITEST_CHECK(strstr(buf, "tcp") == NULL,
                        "variant shm: rank %d reaches rank %d on the same host over '%s', not "
                        "shared memory (UCX_TLS=%s)",
                        rank, p, buf, getenv("UCX_TLS") ? getenv("UCX_TLS") : "unset");
        if (rank == 0 && p == 1)
            itest_note("variant %s: rank 0 reaches rank 1 over '%s'", env->variant, buf);
    }
}

/* ---- elements ---- */

uint16_t itest_f32_to_f16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    int exp = (int)((bits >> 23) & 0xffu);
    uint32_t mant = bits & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant != 0 ? 0x200u : 0));
    int e = exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = (uint32_t)sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
        half++;
    return (uint16_t)half;
}

float itest_f16_to_f32(uint16_t h)
{
    int sign = (h >> 15) & 1;
    int exp = (h >> 10) & 0x1f;
    int mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant != 0 ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint32_t rem = bits & 0xffffu;
    uint32_t hi = bits >> 16;
    if (rem > 0x8000u || (rem == 0x8000u && (hi & 1u)))
        hi++;
    return (uint16_t)hi;
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void itest_put(glucx_dtype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case GLUCX_DTYPE_BOOL:
        ((uint8_t *)buf)[i] = v != 0;
        break;
    case GLUCX_DTYPE_I8:
        ((int8_t *)buf)[i] = (int8_t)v;
        break;
    case GLUCX_DTYPE_U8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case GLUCX_DTYPE_I32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case GLUCX_DTYPE_I64:
        ((int64_t *)buf)[i] = (int64_t)v;
        break;
    case GLUCX_DTYPE_U64:
        ((uint64_t *)buf)[i] = (uint64_t)v;
        break;
    case GLUCX_DTYPE_F16:
        ((uint16_t *)buf)[i] = itest_f32_to_f16((float)v);
        break;
    case GLUCX_DTYPE_BF16:
        ((uint16_t *)buf)[i] = f32_to_bf16((float)v);
        break;
    case GLUCX_DTYPE_F32:
        ((float *)buf)[i] = (float)v;
        break;
    case GLUCX_DTYPE_F64:
        ((double *)buf)[i] = v;
        break;
    default:
        break;
    }
}

double itest_get(glucx_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case GLUCX_DTYPE_BOOL:
    case GLUCX_DTYPE_U8:
        return ((const uint8_t *)buf)[i];
    case GLUCX_DTYPE_I8:
        return ((const int8_t *)buf)[i];
    case GLUCX_DTYPE_I32:
        return ((const int32_t *)buf)[i];
    case GLUCX_DTYPE_I64:
        return (double)((const int64_t *)buf)[i];
    case GLUCX_DTYPE_U64:
        return (double)((const uint64_t *)buf)[i];
    case GLUCX_DTYPE_F16:
        return itest_f16_to_f32(((const uint16_t *)buf)[i]);
    case GLUCX_DTYPE_BF16:
        return bf16_to_f32(((const uint16_t *)buf)[i]);
    case GLUCX_DTYPE_F32:
        return ((const float *)buf)[i];
    case GLUCX_DTYPE_F64:
        return ((const double *)buf)[i];
    default:
        return NAN;
    }
}

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

double itest_value(glucx_dtype_t dt, int r, int b, size_t j)
{
    uint64_t h = mix(((uint64_t)(unsigned)r << 56) ^ ((uint64_t)(unsigned)b << 40) ^ j);
    switch (dt) {
    case GLUCX_DTYPE_BOOL:
        return (double)(h & 1);
    case GLUCX_DTYPE_I8:
        return (double)((int)(h & 0xff) - 128);
    case GLUCX_DTYPE_U8:
        return (double)(h & 0xff);
    case GLUCX_DTYPE_I32:
        return (double)(int32_t)(uint32_t)h;
    case GLUCX_DTYPE_I64:
        return (double)((int64_t)(h >> 11) - (INT64_C(1) << 52));
    case GLUCX_DTYPE_U64:
        return (double)(h >> 12);
    case GLUCX_DTYPE_F16:
        return (double)((int)(h % 2001) - 1000) / 2.0;
    case GLUCX_DTYPE_BF16:
        return (double)((int)(h % 255) - 127);
    case GLUCX_DTYPE_F32:
        return (double)((int64_t)(h % (UINT64_C(1) << 24)) - (INT64_C(1) << 23)) / 4.0;
    case GLUCX_DTYPE_F64:
        return (double)((int64_t)(h >> 12) - (INT64_C(1) << 51)) / 8.0;
    default:
        return 0;
    }
}

uint64_t itest_hash(const void *buf, size_t bytes)
{
    const unsigned char *p = buf;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* ---- buffers ---- */

void *itest_alloc(size_t bytes)
{
    unsigned char *p = malloc(bytes + ITEST_GUARD);
    if (p == NULL) {
        ITEST_FAIL("cannot allocate %zu bytes", bytes + ITEST_GUARD);
        return NULL;
    }
    memset(p, ITEST_FILL_BYTE, bytes);
    memset(p + bytes, ITEST_GUARD_BYTE, ITEST_GUARD);
    return p;
}

int itest_guard_ok(const void *buf, size_t bytes, const char *what)
{
    const unsigned char *g = (const unsigned char *)buf + bytes;
    for (size_t i = 0; i < ITEST_GUARD; i++) {
        if (g[i] != ITEST_GUARD_BYTE) {
            ITEST_FAIL("%s: guard byte %zu after the %zu-byte buffer was overwritten (0x%02x)",
                       what, i, bytes, g[i]);
            return -1;
        }
    }
    return 0;
}

int itest_compare(const char *what, glucx_dtype_t dt, const void *got, const void *want,
                  size_t count)
{
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) {
        double g = itest_get(dt, got, i), w = itest_get(dt, want, i);
        if (g == w || (isnan(g) && isnan(w)))
            continue;
        if (bad < 5)
            ITEST_FAIL("%s: rank %d, index %zu of %zu (%s): expected %.17g, got %.17g", what,
                       g_rank, i, count, glucx_dtype_name(dt), w, g);
        bad++;
    }
    if (bad > 5)
        ITEST_FAIL("%s: ... %zu of %zu elements differ in all", what, bad, count);
    return bad == 0 ? 0 : -1;
}

/* ---- time and process state ---- */

int64_t itest_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t itest_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void itest_sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int itest_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

long itest_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

int itest_asan(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#else
    return 0;
#endif
#else
    return 0;
#endif
}

int itest_names_rank(const char *text)
{
    const char *words[] = {"rank ", "peer "};
    for (int w = 0; w < 2; w++)
        for (const char *p = strstr(text, words[w]); p != NULL; p = strstr(p + 1, words[w]))
            if (p[5] >= '0' && p[5] <= '9')
                return 1;
    return 0;
}

/* ---- completion callbacks ---- */

glucx_coll_opts_t itest_prio_opts(int priority, size_t chunk_bytes)
{
    glucx_coll_opts_t o = {.field_mask = GLUCX_COLL_OPT_PRIORITY, .priority = priority};
    if (chunk_bytes > 0) {
        o.field_mask |= GLUCX_COLL_OPT_CHUNK;
        o.chunk_bytes = chunk_bytes;
    }
    return o;
}

static atomic_int slot_completions;

void itest_slots_reset(void)
{
    atomic_store(&slot_completions, 0);
}

void itest_slot_done(void *arg, glucx_status_t status, const char *error)
{
    itest_slot_t *s = arg;
    s->status = status;
    snprintf(s->text, sizeof(s->text), "%s", error != NULL ? error : "(null)");
    s->thread = pthread_self();
    atomic_store(&s->order, atomic_fetch_add(&slot_completions, 1) + 1);
    atomic_fetch_add(&s->calls, 1); /* last: the waiter reads the fields after seeing this */
}

int itest_wait_slots(itest_slot_t *s, int n, int64_t wait_ms, const char *what)
{
    const int64_t end = itest_now_ns() + wait_ms * 1000000;
    for (;;) {
        int done = 0;
        for (int i = 0; i < n; i++)
            done += atomic_load(&s[i].calls) > 0;
        if (done == n)
            return 0;
        if (itest_now_ns() > end) {
            ITEST_FAIL("%s: only %d of %d callbacks ran within %lld ms", what, done, n,
                       (long long)wait_ms);
            return -1;
        }
        itest_sleep_ms(1);
    }
}

void itest_destroy_outstanding(const itest_env_t *env, glucx_context_t *ctx, glucx_store_t *store,
                               int rank, int size, const char *name,
                               const glucx_coll_opts_t *const opts[2])
{
    glucx_comm_t *comm = NULL;
    const int64_t wait_ms = glucx_test_ms(60000);
    if (itest_comm(ctx, store, rank, size, name, glucx_test_ms(20000), &comm) != GLUCX_OK)
        return;
    static int32_t buf[2][4096];
    itest_slot_t s[2];
    memset(s, 0, sizeof(s));
    if (rank == 0) {
        for (int k = 0; k < 2; k++) {
            glucx_coll_args_t a = {.coll = GLUCX_COLL_ALLREDUCE,
                                   .sendbuf = GLUCX_IN_PLACE,
                                   .recvbuf = buf[k],
                                   .count = 4096,
                                   .dtype = GLUCX_DTYPE_I32,
                                   .op = GLUCX_OP_SUM};
            ITEST_STATUS(glucx_coll_start_cb(comm, &a, opts[k], itest_slot_done, &s[k]), GLUCX_OK,
                         "%s: start before destroy %d", name, k);
        }
        itest_sleep_ms(50);
        glucx_comm_destroy(comm);
        for (int k = 0; k < 2; k++) {
            ITEST_CHECK(atomic_load(&s[k].calls) == 1, "%s: callback %d ran %d times by destroy",
                        name, k, atomic_load(&s[k].calls));
            ITEST_CHECK(s[k].status != GLUCX_OK, "%s: callback %d: OK after destroy", name, k);
            ITEST_CHECK(s[k].text[0] != '\0', "%s: callback %d: no text", name, k);
        }
        __atomic_store_n(&env->shared->flag, 1, __ATOMIC_RELEASE);
    } else {
        /* wait (bounded) until rank 0 has destroyed its communicator, then destroy ours */
        const int64_t end = itest_now_ns() + wait_ms * 1000000;
        while (__atomic_load_n(&env->shared->flag, __ATOMIC_ACQUIRE) == 0 && itest_now_ns() < end)
            itest_sleep_ms(5);
        ITEST_CHECK(__atomic_load_n(&env->shared->flag, __ATOMIC_ACQUIRE) == 1,
                    "%s: rank 0 did not finish its destroy part", name);
        glucx_comm_destroy(comm);
    }
}
