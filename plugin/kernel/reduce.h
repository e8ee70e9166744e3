/**
 * Internal: reduction kernels for every dtype x op (glucx_kernel_*).
 *
 * Kernels are plain loops the compiler vectorizes (built with -O3 and checked with
 * -fopt-info-vec in tests/plugin/kernel). F16 and BF16 are widened to f32, combined, and
 * rounded back with round-to-nearest-even, so a pairwise combine is correctly rounded.
 * Every kernel is commutative bitwise for non-NaN inputs except MIN/MAX on signed zeros; the
 * algorithms keep operand order canonical, so results are bitwise identical on all ranks anyway.
 */
#ifndef GLUCX_KERNEL_REDUCE_H
#define GLUCX_KERNEL_REDUCE_H

#include <stddef.h>

#include <glucx/types.h>

/**
 * dst[i] = a[i] op b[i] for i < count. dst may be the same pointer as a or b (exactly);
 * no other overlap. Pointers need only the alignment of the element type's size... or none:
 * kernels use memcpy-safe access and accept any alignment.
 */
typedef void (*glucx_reduce_fn_t)(void *dst, const void *a, const void *b, size_t count);

/**
 * The kernel for dtype/op; AVG gives the SUM kernel (divide afterwards with
 * glucx_kernel_avg_finalize()). @return NULL if op is not defined on dtype.
 */
glucx_reduce_fn_t glucx_kernel_reduce_fn(glucx_dtype_t dtype, glucx_op_t op);

/** buf[i] /= nranks for a float dtype (f16/bf16 via f32, rounded once). No-op otherwise. */
void glucx_kernel_avg_finalize(glucx_dtype_t dtype, void *buf, size_t count, int nranks);

/** IEEE binary16 <-> binary32, round-to-nearest-even, NaN and infinities kept. */
float glucx_f16_to_f32(uint16_t h);
uint16_t glucx_f32_to_f16(float f);
/** bfloat16 <-> binary32, round-to-nearest-even, NaN kept quiet. */
float glucx_bf16_to_f32(uint16_t h);
uint16_t glucx_f32_to_bf16(float f);

#endif
