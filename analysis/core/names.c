/*
 * Interned names: one copy of each distinct phase or communicator name the timeline uses, of
 * any length, with its JSON-escaped form made once. Open phases hold a pointer to their name,
 * so they pair by the full name (pointer equality) and memory grows with the distinct names,
 * not with the events.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model.h"

static uint64_t name_hash(const char *s, size_t len)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* Length of the valid UTF-8 sequence at @p s (at most @p n bytes), 0 if none starts there. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t cp;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        len = 2;
        cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3;
        cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates, beyond U+10FFFF */
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* @p s as valid UTF-8: each byte that starts no valid sequence becomes U+FFFD. Allocated. */
static char *utf8_repair(const char *s, size_t len)
{
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq((const unsigned char *)s + i, len - i);
        if (k == 0) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        }
    }
    out[o] = '\0';
    return out;
}

char *glucx_an_json_escape(const char *s)
{
    size_t len = strlen(s);
    json_t *j = json_stringn(s, len);
    if (!j) { /* not UTF-8: JSON cannot hold the bytes as they are */
        char *fixed = utf8_repair(s, len);
        if (!fixed)
            return NULL;
        j = json_string(fixed);
        free(fixed);
        if (!j)
            return NULL;
    }
    char *d = json_dumps(j, JSON_ENCODE_ANY);
    json_decref(j);
    if (!d)
        return NULL;
    size_t n = strlen(d); /* "\"...\"": drop the quotes */
    memmove(d, d + 1, n - 2);
    d[n - 2] = '\0';
    return d;
}

static glucx_an_key_t name_key(const char *s, size_t len)
{
    return glucx_an_key(name_hash(s, len), (uint64_t)len, 0);
}

const glucx_an_name_t *glucx_an_name_find(const glucx_an_engine_t *e, const char *s)
{
    size_t len = strlen(s);
    glucx_an_key_t k = name_key(s, len);
    for (const glucx_an_name_t *n = glucx_an_map_get(&e->names, &k); n; n = n->next)
        if (memcmp(n->s, s, len) == 0)
            return n;
    return NULL;
}

const glucx_an_name_t *glucx_an_name_intern(glucx_an_engine_t *e, const char *s)
{
    const glucx_an_name_t *found = glucx_an_name_find(e, s);
    if (found)
        return found;
    size_t len = strlen(s);
    glucx_an_name_t *n = malloc(sizeof(*n) + len + 1);
    if (!n) {
        glucx_an_oom(e, "names");
        return NULL;
    }
    memcpy(n->s, s, len + 1);
    n->len = len;
    n->json = glucx_an_json_escape(s);
    glucx_an_key_t k = name_key(s, len);
    n->next = glucx_an_map_get(&e->names, &k); /* same hash and length: a chain */
    if (!n->json || glucx_an_map_put(&e->names, &k, n) != 0) {
        free(n->json);
        free(n);
        glucx_an_oom(e, "names");
        return NULL;
    }
    return n;
}

void glucx_an_names_free(glucx_an_engine_t *e)
{
    for (size_t i = 0; i < e->names.cap; i++) {
        glucx_an_name_t *n = e->names.slots[i].val;
        while (n) {
            glucx_an_name_t *next = n->next;
            free(n->json);
            free(n);
            n = next;
        }
    }
    glucx_an_map_free(&e->names);
}
