#include "util/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/error.h"

extern char **environ;

static const glucx_config_var_t vars[] = {
#define GLUCX_CONFIG_ROW_(name, def, desc) {#name, def, desc},
    GLUCX_CONFIG_MAP(GLUCX_CONFIG_ROW_)
#undef GLUCX_CONFIG_ROW_
};

const glucx_config_var_t *glucx_config_vars(int *count_p)
{
    *count_p = (int)(sizeof(vars) / sizeof(vars[0]));
    return vars;
}

static const char *get(const char *name)
{
    const char *v = getenv(name);
    if (v != NULL)
        return v;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (strcmp(vars[i].name, name) == 0)
            return vars[i].default_value;
    return "";
}

static glucx_status_t parse_int(const char *name, int64_t min, int64_t max, const char *unit,
                                int64_t *out)
{
    const char *v = get(name);
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < min || x > max)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "%s=%s: expected an integer number of %s in [%lld, %lld]", name, v, unit,
                           (long long)min, (long long)max);
    *out = x;
    return GLUCX_OK;
}

static glucx_status_t parse_ms(const char *name, int64_t min, int64_t *out)
{
    const char *v = get(name);
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < min)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "%s=%s: expected an integer number of milliseconds >= %lld", name, v,
                           (long long)min);
    *out = x;
    return GLUCX_OK;
}

glucx_status_t glucx_config_parse_size(const char *text, size_t *bytes_p)
{
    if (text == NULL || *text == '\0')
        return GLUCX_ERR_INVALID_ARG;
    if (strcasecmp(text, "inf") == 0) {
        *bytes_p = SIZE_MAX;
        return GLUCX_OK;
    }
    if (!isdigit((unsigned char)text[0]))
        return GLUCX_ERR_INVALID_ARG;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(text, &end, 10);
    if (errno != 0)
        return GLUCX_ERR_INVALID_ARG;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case '\0':
        break;
    case 'K':
        shift = 10;
        break;
    case 'M':
        shift = 20;
        break;
    case 'G':
        shift = 30;
        break;
    default:
        return GLUCX_ERR_INVALID_ARG;
    }
    if (shift != 0) {
        end++;
        if (toupper((unsigned char)*end) == 'B' || toupper((unsigned char)*end) == 'I')
            end += (toupper((unsigned char)*end) == 'I' && toupper((unsigned char)end[1]) == 'B')
                       ? 2
                       : 1;
    }
    if (*end != '\0' || x > (SIZE_MAX >> shift))
        return GLUCX_ERR_INVALID_ARG;
    *bytes_p = (size_t)(x << shift);
    return GLUCX_OK;
}

glucx_status_t glucx_config_read(glucx_config_t *c)
{
    memset(c, 0, sizeof(*c));
    glucx_status_t st = parse_ms("GLUCX_TIMEOUT_MS", 1, &c->timeout_ms);
    if (st != GLUCX_OK)
        return st;
    st = parse_ms("GLUCX_KEEPALIVE_MS", 10, &c->keepalive_ms);
    if (st != GLUCX_OK)
        return st;
    st = parse_int("GLUCX_SPIN_US", 0, 10000000, "microseconds", &c->spin_us);
    if (st != GLUCX_OK)
        return st;
    const char *yield = get("GLUCX_YIELD");
    if (strcasecmp(yield, "auto") == 0)
        c->yield = 0;
    else if (strcasecmp(yield, "always") == 0)
        c->yield = 1;
    else if (strcasecmp(yield, "never") == 0)
        c->yield = 2;
    else
        return glucx_error(GLUCX_ERR_INVALID_ARG, "GLUCX_YIELD=%s: expected auto, always or never",
                           yield);
    st = parse_int("GLUCX_COLL_NICE", -20, 19, "nice steps", &c->coll_nice);
    if (st != GLUCX_OK)
        return st;
    const char *hold = get("GLUCX_WINDOW_HOLD");
    if (glucx_config_parse_size(hold, &c->window_hold) != GLUCX_OK)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "GLUCX_WINDOW_HOLD=%s: expected a size in bytes (4096, 64K, 256M, 1G, "
                           "inf)",
                           hold);
    const char *seg = get("GLUCX_NET_SEG");
    if (strcasecmp(seg, "auto") == 0)
        c->net_seg = SIZE_MAX;
    else if (glucx_config_parse_size(seg, &c->net_seg) != GLUCX_OK ||
             c->net_seg > ((size_t)1 << 30) || (c->net_seg > 0 && c->net_seg < 4096))
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "GLUCX_NET_SEG=%s: expected auto, 0 or a size in bytes from 4K to 1G "
                           "(64K, 256K, 1M)",
                           seg);
    const char *level = get("GLUCX_LOG_LEVEL");
    static const char *const levels[] = {"error", "warn", "info", "debug", "trace"};
    int level_ok = 0;
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        level_ok |= strcasecmp(level, levels[i]) == 0;
    if (!level_ok)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "GLUCX_LOG_LEVEL=%s: expected error, warn, info, debug or trace", level);
    const char *tune = get("GLUCX_TUNE");
    if (strlen(tune) >= sizeof(c->tune))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "GLUCX_TUNE is longer than %zu characters",
                           sizeof(c->tune) - 1);
    strcpy(c->tune, tune);
    const char *cal = get("GLUCX_CALIBRATION");
    if (strlen(cal) >= sizeof(c->calibration))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "GLUCX_CALIBRATION path is too long");
    strcpy(c->calibration, cal);
    const char *topology = get("GLUCX_TOPOLOGY");
    if (strlen(topology) >= sizeof(c->topology))
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "GLUCX_TOPOLOGY path is longer than %zu characters",
                           sizeof(c->topology) - 1);
    strcpy(c->topology, topology);
    const size_t hostid_len = strlen(get("GLUCX_HOSTID"));
    if (hostid_len > GLUCX_HOSTID_MAX)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "GLUCX_HOSTID is %zu characters long, at most %d are allowed (a longer "
                           "identity would be cut, and hosts whose identities share the first %d "
                           "characters would count as one package)",
                           hostid_len, GLUCX_HOSTID_MAX, GLUCX_HOSTID_MAX);

    for (char **e = environ; e != NULL && *e != NULL; e++) {
        /* GLUCX_TEST_* belong to glucx's test suite (tests/README.md), not to the library */
        if (strncmp(*e, "GLUCX_", 6) != 0 || strncmp(*e, "GLUCX_TEST_", 11) == 0)
            continue;
        size_t n = strcspn(*e, "=");
        int known = 0;
        for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
            if (strlen(vars[i].name) == n && strncmp(vars[i].name, *e, n) == 0)
                known = 1;
        if (!known)
            glucx_warn("unknown variable %.*s is ignored (glucx-info lists the known ones)", (int)n,
                       *e);
    }
    return GLUCX_OK;
}
