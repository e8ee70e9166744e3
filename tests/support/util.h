/* Test helpers: deterministic inputs. */
#ifndef GLUCX_TEST_UTIL_H
#define GLUCX_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "support/timescale.h" /* glucx_test_ms() */

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

/** Number of open file descriptors of this process (-1 if /proc/self/fd cannot be read). */
int glucx_test_count_fds(void);

struct glucx_store;

/**
 * What every rank of a rendezvous does, for the stores' multi-process tests: set
 * "<key_prefix>rank:<rank>/addr" to @p value_bytes bytes of the pattern with seed seed + rank,
 * then get every other rank's key (30 s timeout, scaled) and compare it with the pattern of seed
 * seed + peer. @return 0, or non-zero after printing what went wrong.
 */
int glucx_test_store_exchange(struct glucx_store *store, int rank, int nranks,
                              const char *key_prefix, size_t value_bytes, uint64_t seed);

#endif
