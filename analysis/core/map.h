/* A hash map from a 3 x u64 key to a pointer (open addressing, linear probing, backward-shift
 * deletion). Not thread-safe. Internal to the analysis. */
#ifndef GLUCX_ANALYSIS_MAP_H
#define GLUCX_ANALYSIS_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct glucx_an_key {
    uint64_t k[3];
} glucx_an_key_t;

typedef struct glucx_an_map_slot {
    glucx_an_key_t key;
    void *val; /* NULL = empty slot */
} glucx_an_map_slot_t;

typedef struct glucx_an_map {
    glucx_an_map_slot_t *slots;
    size_t cap, n; /* cap: power of two or 0 */
} glucx_an_map_t;

/** The value stored under @p key, or NULL. */
void *glucx_an_map_get(const glucx_an_map_t *m, const glucx_an_key_t *key);
/** Store @p val (not NULL) under @p key, replacing any value. 0, or -1 when out of memory. */
int glucx_an_map_put(glucx_an_map_t *m, const glucx_an_key_t *key, void *val);
/** Remove @p key; returns its value or NULL. */
void *glucx_an_map_del(glucx_an_map_t *m, const glucx_an_key_t *key);
/** Free the table (not the values). */
void glucx_an_map_free(glucx_an_map_t *m);

static inline glucx_an_key_t glucx_an_key(uint64_t a, uint64_t b, uint64_t c)
{
    glucx_an_key_t k = {{a, b, c}};
    return k;
}

#endif
