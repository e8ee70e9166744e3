/**
 * Internal: reduction kernels for every dtype x op (glucx_kernel_*).
 *
 * Kernels are plain loops the compiler vectorizes (built with -O3 for the x86-64 SSE2 baseline,
 * plus AVX2 clones picked at load time on x86-64; checked with -fopt-info-vec by
 * tests/plugin/kernel/test_vectorized.c). Semantics, per element:
 * - Integers: SUM/PROD wrap around (two's complement); MIN/MAX use the dtype's signedness.
 * - BOOL: any nonzero byte is true and results are 0 or 1. SUM, MAX, BOR are logical or; PROD,
 *   MIN, BAND logical and; BXOR logical xor.
 * - Floats: IEEE arithmetic in the default rounding mode. MIN/MAX propagate NaN like
 *   torch.minimum/maximum (the NaN operand is returned; a's if both are NaN) and order -0 below
 *   +0 (IEEE 754-2019 minimum/maximum). SUM/PROD involving a NaN give some quiet NaN.
 * - F16 and BF16 are widened to f32, combined, and rounded back with round-to-nearest-even, so a
 *   pairwise combine is correctly rounded (f32 has more than 2p+2 significand bits).
 * Every kernel is commutative bitwise for non-NaN inputs, signed zeros included, so results do
 * not depend on which rank's data is the left operand.
 */
#ifndef GLUCX_KERNEL_REDUCE_H
#define GLUCX_KERNEL_REDUCE_H

#include <stddef.h>

#include <glucx/types.h>

/**
 * dst[i] = a[i] op b[i] for i < count (count in elements; 0 touches nothing).
 * dst may be the same pointer as a or b (exactly); no other overlap. Pointers need no
 * alignment. Reads a and b, writes only dst[0..count). Thread-safe; cannot fail.
 */
typedef void (*glucx_reduce_fn_t)(void *dst, const void *a, const void *b, size_t count);

/**
 * The kernel for dtype/op; AVG gives the SUM kernel (divide afterwards with
 * glucx_kernel_avg_finalize()). @return NULL exactly where glucx_op_supported() is 0 (also for
 * out-of-range values). Thread-safe; the pointer stays valid for the life of the process.
 */
glucx_reduce_fn_t glucx_kernel_reduce_fn(glucx_dtype_t dtype, glucx_op_t op);

/**
 * buf[i] /= nranks in place for a float dtype, any alignment. The quotient is formed in f64 and
 * rounded once to the dtype (via round-to-odd f32 for f16/bf16), so it is correctly rounded
 * (f32: for nranks < 2^28). No-op for integer/BOOL/invalid dtypes and for nranks <= 1.
 * Thread-safe.
 */
void glucx_kernel_avg_finalize(glucx_dtype_t dtype, void *buf, size_t count, int nranks);

/**
 * IEEE binary16 <-> binary32. f16 -> f32 is exact (NaN payloads kept). f32 -> f16 rounds to
 * nearest even, handles subnormals, overflows to inf (from 65520 on), and turns NaN into a
 * quiet NaN keeping the sign and the top payload bits. Thread-safe.
 */
float glucx_f16_to_f32(uint16_t h);
uint16_t glucx_f32_to_f16(float f);
/**
 * bfloat16 (the upper half of a binary32) <-> binary32. bf16 -> f32 is exact; f32 -> bf16 rounds
 * to nearest even (overflow to inf) and turns NaN into a quiet NaN. Thread-safe.
 */
float glucx_bf16_to_f32(uint16_t h);
uint16_t glucx_f32_to_bf16(float f);

#endif
