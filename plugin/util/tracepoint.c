/* The trace macro layer's one definition unit: the tracepoint call-site structures of libglucx
 * (LTTng-UST dynamic provider linkage, so libglucx never links liblttng-ust), loading the
 * provider on GLUCX_TRACE=1, and the helpers of util/tracepoint.h. */
#if defined(GLUCX_TRACING) && GLUCX_TRACING
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE
#endif
#include "util/tracepoint.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#define FNV64_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV64_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= FNV64_PRIME;
    }
    return h;
}

static uint64_t fnv1a_u32le(uint64_t h, uint32_t v)
{
    const unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                                (unsigned char)(v >> 24)};
    return fnv1a(h, b, sizeof(b));
}

uint64_t glucx_tp_comm_id(const char *name, int size, const void *const *records,
                          const size_t *record_lens)
{
    const char *n = name != NULL ? name : "";
    uint64_t h = fnv1a(FNV64_OFFSET, n, strlen(n));
    h = fnv1a(h, "", 1);
    h = fnv1a_u32le(h, (uint32_t)size);
    for (int r = 0; r < size; r++) {
        h = fnv1a_u32le(h, (uint32_t)record_lens[r]);
        h = fnv1a(h, records[r], record_lens[r]);
    }
    /* splitmix64 finaliser: FNV's low bits mix poorly, and analysis tools may hash ids again */
    h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
    h ^= h >> 31;
    return h != 0 ? h : 1;
}

int glucx_tp_alg_id(const char *name)
{
    if (name == NULL)
        return GLUCX_TP_ALG_NONE;
#define GLUCX_TP_ALG_MATCH_(uname, lname, value)                                                   \
    if (strcmp(name, #lname) == 0)                                                                 \
        return value;
    GLUCX_TP_ALG_MAP(GLUCX_TP_ALG_MATCH_)
#undef GLUCX_TP_ALG_MATCH_
    return GLUCX_TP_ALG_NONE;
}

/* Exported by trace/provider.c; its presence in the global scope means the probes are loaded. */
#define PROVIDER_MARKER "glucx_tp_provider_abi"

int glucx_tp_provider_loaded(void)
{
    return dlsym(RTLD_DEFAULT, PROVIDER_MARKER) != NULL;
}

#if defined(GLUCX_TRACING) && GLUCX_TRACING

#ifndef GLUCX_TP_PROVIDER_NAME
#define GLUCX_TP_PROVIDER_NAME "libglucx-trace-provider.so"
#endif

static int env_true(const char *v)
{
    return v != NULL && (strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "on") == 0 ||
                         strcmp(v, "true") == 0);
}

static int try_load(const char *path, char *errors, size_t len)
{
    if (dlopen(path, RTLD_NOW | RTLD_GLOBAL) != NULL) /* never closed: LTTng needs the probes */
        return 1;
    const char *e = dlerror();
    size_t used = strlen(errors);
    if (used < len)
        snprintf(errors + used, len - used, "%s%s", used ? "; " : "", e ? e : path);
    return 0;
}

/* GLUCX_TRACE=1: load the probe library so that a session made by hand records glucx events. */
__attribute__((constructor)) static void glucx_tp_autoload(void)
{
    if (!env_true(getenv("GLUCX_TRACE")) || glucx_tp_provider_loaded())
        return;
    char errors[2048] = "";
    const char *explicit_path = getenv("GLUCX_TRACE_PROVIDER");
    if (explicit_path != NULL && explicit_path[0] != '\0') {
        if (!try_load(explicit_path, errors, sizeof(errors)))
            glucx_warn("GLUCX_TRACE=1: cannot load the trace provider GLUCX_TRACE_PROVIDER=%s: %s; "
                       "glucx events will not be recorded",
                       explicit_path, errors);
        return;
    }
    /* next to the object holding this code (libglucx.so, or a program linking it statically) */
    Dl_info info;
    if (dladdr((void *)glucx_tp_alg_id, &info) != 0 && info.dli_fname != NULL) {
        char path[4096];
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash != NULL &&
            snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                     GLUCX_TP_PROVIDER_NAME) < (int)sizeof(path) &&
            try_load(path, errors, sizeof(errors)))
            return;
    }
#ifdef GLUCX_TP_PROVIDER_INSTALL_PATH
    if (try_load(GLUCX_TP_PROVIDER_INSTALL_PATH, errors, sizeof(errors)))
        return;
#endif
#ifdef GLUCX_TP_PROVIDER_BUILD_PATH
    if (try_load(GLUCX_TP_PROVIDER_BUILD_PATH, errors, sizeof(errors)))
        return;
#endif
    if (try_load(GLUCX_TP_PROVIDER_NAME, errors, sizeof(errors)))
        return;
    glucx_warn("GLUCX_TRACE=1: cannot find the trace provider %s (%s); set GLUCX_TRACE_PROVIDER "
               "to its path; glucx events will not be recorded",
               GLUCX_TP_PROVIDER_NAME, errors);
}

#endif
