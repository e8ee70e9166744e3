/*
 * Helpers of the trace model that every analyzer and the report use: array growth, the
 * out-of-memory error, string lists, communicator lookups, number formatting and the reader of
 * the temporary decision records.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

void *glucx_an_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(p, ncap * elem);
    if (!np)
        return NULL;
    *cap = ncap;
    return np;
}

int glucx_an_oom(glucx_an_engine_t *e, const char *what)
{
    snprintf(e->err, sizeof(e->err), "out of memory: %s (events read: %" PRIu64 ")", what,
             e->events);
    return -1;
}

int glucx_an_strlist_add(strlist_t *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return 0;
    if (!GROW(l->v, l->cap, l->n + 1))
        return -1;
    l->v[l->n] = strdup(s);
    if (!l->v[l->n])
        return -1;
    l->n++;
    return 0;
}

void glucx_an_strlist_free(strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

const char *glucx_an_comm_hex(uint64_t id, char *buf)
{
    snprintf(buf, 20, "0x%" PRIx64, id);
    return buf;
}

const char *glucx_an_fmt_ns(double ns, char *buf, size_t len)
{
    double a = fabs(ns);
    if (a >= 1e9)
        snprintf(buf, len, "%.2f s", ns / 1e9);
    else if (a >= 1e6)
        snprintf(buf, len, "%.1f ms", ns / 1e6);
    else if (a >= 1e3)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else
        snprintf(buf, len, "%.0f ns", ns);
    return buf;
}

const char *glucx_an_fmt_bytes(uint64_t b, char *buf, size_t len)
{
    if (b >= (1u << 30) && b % (1u << 30) == 0)
        snprintf(buf, len, "%" PRIu64 " GiB", b >> 30);
    else if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(buf, len, "%" PRIu64 " MiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, len, "%" PRIu64 " KiB", b >> 10);
    else
        snprintf(buf, len, "%" PRIu64 " B", b);
    return buf;
}

int glucx_an_comm_nranks(const comm_st_t *c)
{
    int n = c->size;
    for (int r = c->size; r < c->nalloc; r++)
        if (c->ranks[r].seen)
            n = r + 1;
    return n;
}

size_t glucx_an_comm_index(const glucx_an_engine_t *e, const comm_st_t *c)
{
    for (size_t i = 0; i < e->ncomms; i++)
        if (e->comms[i] == c)
            return i;
    return 0;
}

int glucx_an_dec_read(FILE *f, dec_view_t *d)
{
    if (fread(&d->h, sizeof(d->h), 1, f) != 1)
        return 0;
    d->ids = calloc(d->h.nalt + 1, sizeof(int32_t));
    d->cost = calloc(d->h.nalt + 1, sizeof(uint64_t));
    d->reason = calloc(d->h.reason_len + 1, 1);
    if (!d->ids || !d->cost || !d->reason ||
        fread(d->ids, sizeof(int32_t), d->h.nalt, f) != d->h.nalt ||
        fread(d->cost, sizeof(uint64_t), d->h.nalt, f) != d->h.nalt ||
        fread(d->reason, 1, d->h.reason_len, f) != d->h.reason_len) {
        glucx_an_dec_free(d);
        return -1;
    }
    return 1;
}

void glucx_an_dec_free(dec_view_t *d)
{
    free(d->ids);
    free(d->cost);
    free(d->reason);
    d->ids = NULL;
    d->cost = NULL;
    d->reason = NULL;
}
