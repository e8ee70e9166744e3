#include "ivl.h"

#include <stdlib.h>
#include <string.h>

int glucx_an_ivl_add(glucx_an_ivl_t *s, int64_t a, int64_t b)
{
    if (b <= a)
        return 0;
    /* first interval whose end >= a (candidates to merge start there) */
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[2 * mid + 1] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t first = lo, last = lo; /* [first, last) merge with [a,b) */
    while (last < s->n && s->v[2 * last] <= b)
        last++;
    if (first < last) {
        if (s->v[2 * first] < a)
            a = s->v[2 * first];
        if (s->v[2 * (last - 1) + 1] > b)
            b = s->v[2 * (last - 1) + 1];
        s->v[2 * first] = a;
        s->v[2 * first + 1] = b;
        memmove(&s->v[2 * (first + 1)], &s->v[2 * last], (s->n - last) * 2 * sizeof(int64_t));
        s->n -= last - first - 1;
        return 0;
    }
    if (s->n == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 8;
        int64_t *nv = realloc(s->v, ncap * 2 * sizeof(int64_t));
        if (!nv)
            return -1;
        s->v = nv;
        s->cap = ncap;
    }
    memmove(&s->v[2 * (first + 1)], &s->v[2 * first], (s->n - first) * 2 * sizeof(int64_t));
    s->v[2 * first] = a;
    s->v[2 * first + 1] = b;
    s->n++;
    return 0;
}

int64_t glucx_an_ivl_len(const glucx_an_ivl_t *s)
{
    int64_t t = 0;
    for (size_t i = 0; i < s->n; i++)
        t += s->v[2 * i + 1] - s->v[2 * i];
    return t;
}

int64_t glucx_an_ivl_len_minus(const glucx_an_ivl_t *s, const glucx_an_ivl_t *t)
{
    int64_t total = 0;
    size_t j = 0;
    for (size_t i = 0; i < s->n; i++) {
        int64_t a = s->v[2 * i], b = s->v[2 * i + 1];
        int64_t len = b - a;
        while (j < t->n && t->v[2 * j + 1] <= a)
            j++;
        for (size_t k = j; k < t->n && t->v[2 * k] < b; k++) {
            int64_t x = t->v[2 * k] > a ? t->v[2 * k] : a;
            int64_t y = t->v[2 * k + 1] < b ? t->v[2 * k + 1] : b;
            if (y > x)
                len -= y - x;
        }
        total += len;
    }
    return total;
}

void glucx_an_ivl_free(glucx_an_ivl_t *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}
