#include "support/util.h"

#include <string.h>

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
