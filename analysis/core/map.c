#include "map.h"

#include <stdlib.h>
#include <string.h>

static size_t hash_key(const glucx_an_key_t *k)
{
    uint64_t h = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 3; i++) {
        h ^= k->k[i] + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
        h ^= h >> 31;
        h *= 0xbf58476d1ce4e5b9u;
    }
    h ^= h >> 29;
    return (size_t)h;
}

static int key_eq(const glucx_an_key_t *a, const glucx_an_key_t *b)
{
    return a->k[0] == b->k[0] && a->k[1] == b->k[1] && a->k[2] == b->k[2];
}

void *glucx_an_map_get(const glucx_an_map_t *m, const glucx_an_key_t *key)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = hash_key(key) & mask;; i = (i + 1) & mask) {
        if (!m->slots[i].val)
            return NULL;
        if (key_eq(&m->slots[i].key, key))
            return m->slots[i].val;
    }
}

static int grow(glucx_an_map_t *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    glucx_an_map_slot_t *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].val)
            continue;
        size_t j = hash_key(&m->slots[i].key) & (ncap - 1);
        while (ns[j].val)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

int glucx_an_map_put(glucx_an_map_t *m, const glucx_an_key_t *key, void *val)
{
    if ((m->n + 1) * 4 > m->cap * 3 && grow(m) != 0)
        return -1;
    size_t mask = m->cap - 1;
    for (size_t i = hash_key(key) & mask;; i = (i + 1) & mask) {
        if (!m->slots[i].val) {
            m->slots[i].key = *key;
            m->slots[i].val = val;
            m->n++;
            return 0;
        }
        if (key_eq(&m->slots[i].key, key)) {
            m->slots[i].val = val;
            return 0;
        }
    }
}

void *glucx_an_map_del(glucx_an_map_t *m, const glucx_an_key_t *key)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1, i = hash_key(key) & mask;
    for (;; i = (i + 1) & mask) {
        if (!m->slots[i].val)
            return NULL;
        if (key_eq(&m->slots[i].key, key))
            break;
    }
    void *val = m->slots[i].val;
    m->slots[i].val = NULL;
    m->n--;
    /* backward shift: move later members of the cluster into the hole when allowed */
    for (size_t j = (i + 1) & mask; m->slots[j].val; j = (j + 1) & mask) {
        size_t h = hash_key(&m->slots[j].key) & mask;
        /* slot j may move to i if h is not cyclically in (i, j] */
        int in_range = (i <= j) ? (h > i && h <= j) : (h > i || h <= j);
        if (!in_range) {
            m->slots[i] = m->slots[j];
            m->slots[j].val = NULL;
            i = j;
        }
    }
    return val;
}

void glucx_an_map_free(glucx_an_map_t *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}
