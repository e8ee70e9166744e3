/* Tools' shared benchmark helpers (see bench_util.h). */
#include "common/bench_util.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

int glucx_tool_parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    errno = 0;
    if (s[0] == '-' || s[0] == '\0')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    unsigned long long mult = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1ULL << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1ULL << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1ULL << 30;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || (v != 0 && mult > ULLONG_MAX / v) || v * mult > SIZE_MAX / 4)
        return -1;
    *out = (size_t)(v * mult);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void glucx_tool_sort(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
}

double glucx_tool_median(double *v, int n)
{
    glucx_tool_sort(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
