/* A buffered writer with integer formatting of its own: the timeline and the per-iteration
 * records are the bulk of the output, and stdio's per-call cost and floating-point printing
 * dominated the analysis time. Internal. Errors are sticky (wbuf_flush reports them). */
#ifndef GLUCX_ANALYSIS_WBUF_H
#define GLUCX_ANALYSIS_WBUF_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct wbuf {
    FILE *f;
    size_t n;
    int err;
    char b[1 << 16];
} wbuf_t;

static inline void wb_flush(wbuf_t *w)
{
    if (!w->f) { /* a scratch writer: content dropped */
        w->n = 0;
        return;
    }
    if (w->n && fwrite(w->b, 1, w->n, w->f) != w->n)
        w->err = 1;
    w->n = 0;
}

static inline void wb_mem(wbuf_t *w, const char *s, size_t len)
{
    if (w->n + len > sizeof(w->b)) {
        wb_flush(w);
        if (len > sizeof(w->b)) {
            if (w->f && fwrite(s, 1, len, w->f) != len)
                w->err = 1;
            return;
        }
    }
    memcpy(w->b + w->n, s, len);
    w->n += len;
}

#define wb_lit(w, s) wb_mem((w), (s), sizeof(s) - 1)

static inline void wb_str(wbuf_t *w, const char *s)
{
    wb_mem(w, s, strlen(s));
}

static inline void wb_u64(wbuf_t *w, uint64_t v)
{
    char t[24];
    int i = 24;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    wb_mem(w, t + i, (size_t)(24 - i));
}

static inline void wb_i64(wbuf_t *w, int64_t v)
{
    if (v < 0) {
        wb_lit(w, "-");
        wb_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        wb_u64(w, (uint64_t)v);
    }
}

/* ns as microseconds with three decimals (exact) */
static inline void wb_us(wbuf_t *w, int64_t ns)
{
    if (ns < 0) {
        wb_lit(w, "-");
        ns = -ns;
    }
    wb_u64(w, (uint64_t)ns / 1000);
    char t[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
                 (char)('0' + ns % 10)};
    wb_mem(w, t, 4);
}

/* a share in [0, 1] (or any non-negative ratio) with six decimals */
static inline void wb_ratio(wbuf_t *w, double x)
{
    if (!(x >= 0) || x > 1e12) {
        wb_lit(w, "null");
        return;
    }
    uint64_t m = (uint64_t)(x * 1e6 + 0.5);
    wb_u64(w, m / 1000000);
    char t[8];
    t[0] = '.';
    uint64_t f = m % 1000000;
    for (int i = 6; i >= 1; i--) {
        t[i] = (char)('0' + f % 10);
        f /= 10;
    }
    wb_mem(w, t, 7);
}

#endif
