/* A set of disjoint half-open time intervals [a, b) in ns, kept sorted and merged. Internal. */
#ifndef GLUCX_ANALYSIS_IVL_H
#define GLUCX_ANALYSIS_IVL_H

#include <stddef.h>
#include <stdint.h>

typedef struct glucx_an_ivl {
    int64_t *v; /* 2n values: a0 b0 a1 b1 ... with b_i < a_{i+1} */
    size_t n, cap;
} glucx_an_ivl_t;

/** Add [a, b) (ignored when b <= a), merging with overlapping or touching intervals. 0 or -1. */
int glucx_an_ivl_add(glucx_an_ivl_t *s, int64_t a, int64_t b);
/** Total length. */
int64_t glucx_an_ivl_len(const glucx_an_ivl_t *s);
/** Length of s minus t (the part of s not covered by t). */
int64_t glucx_an_ivl_len_minus(const glucx_an_ivl_t *s, const glucx_an_ivl_t *t);
void glucx_an_ivl_free(glucx_an_ivl_t *s);

#endif
