/* Test helpers: deterministic inputs. */
#ifndef GLUCX_TEST_UTIL_H
#define GLUCX_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/** splitmix64: a fast deterministic generator for test data. */
static inline uint64_t glucx_test_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/** Fill bytes with a pattern determined by seed. */
void glucx_test_fill_bytes(void *buf, size_t bytes, uint64_t seed);

#endif
