#include "support/util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glucx/glucx.h>

void glucx_test_fill_bytes(void *buf, size_t bytes, uint64_t seed)
{
    unsigned char *p = buf;
    uint64_t s = seed;
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t v = glucx_test_rand(&s);
        size_t n = bytes - i < 8 ? bytes - i : 8;
        memcpy(p + i, &v, n);
    }
}

int glucx_test_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

int glucx_test_store_exchange(glucx_store_t *store, int rank, int nranks, const char *key_prefix,
                              size_t value_bytes, uint64_t seed)
{
    int rc = 0;
    char key[256];
    unsigned char *value = malloc(value_bytes ? value_bytes : 1);
    unsigned char *expect = malloc(value_bytes ? value_bytes : 1);
    if (value == NULL || expect == NULL) {
        rc = 2;
        goto out;
    }
    snprintf(key, sizeof(key), "%srank:%d/addr", key_prefix, rank);
    glucx_test_fill_bytes(value, value_bytes, seed + (uint64_t)rank);
    if (glucx_store_set(store, key, value, value_bytes) != GLUCX_OK) {
        fprintf(stderr, "rank %d: set %s: %s\n", rank, key, glucx_last_error());
        rc = 3;
        goto out;
    }
    for (int peer = 0; peer < nranks; peer++) {
        if (peer == rank)
            continue;
        snprintf(key, sizeof(key), "%srank:%d/addr", key_prefix, peer);
        glucx_test_fill_bytes(expect, value_bytes, seed + (uint64_t)peer);
        void *got = NULL;
        size_t bytes = 0;
        if (glucx_store_get(store, key, glucx_test_ms(30000), &got, &bytes) != GLUCX_OK) {
            fprintf(stderr, "rank %d: get %s: %s\n", rank, key, glucx_last_error());
            rc = 4;
            goto out;
        }
        if (bytes != value_bytes || memcmp(got, expect, bytes) != 0) {
            fprintf(stderr, "rank %d: wrong value for %s (%zu bytes)\n", rank, key, bytes);
            rc = 5;
        }
        free(got);
    }
out:
    free(value);
    free(expect);
    return rc;
}
