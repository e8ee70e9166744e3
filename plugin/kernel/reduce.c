/*
 * Reduction kernels: dst[i] = a[i] op b[i] for every dtype x op of glucx/types.h.
 *
 * Each kernel is one plain loop over an element-wise "combine" function, written so that GCC
 * vectorizes it at -O3 for the x86-64 baseline (SSE2); tests/plugin/kernel/test_vectorized.c
 * compiles this file with -fopt-info-vec and checks every loop by the line of its GLUCX_KERNEL()
 * row. What makes that work:
 * - Elements are accessed through typedefs with alignment 1 (and may_alias), so any pointer is
 *   fine; on x86 this costs nothing (unaligned vector loads and stores).
 * - dst may equal a or b, so pointers are not `restrict`: GCC versions each loop with a runtime
 *   overlap test that accepts the exact-alias case and takes the scalar copy only for partial
 *   overlap, which the interface forbids.
 * - Integer SUM/PROD are done in unsigned types (wraparound, no undefined behaviour).
 * - SSE2 has no 64-bit compare or multiply, so 64-bit MIN/MAX use a branch-free compare built from
 *   subtract/xor/shift, and 64-bit PROD is split into 32x32->64 partial products.
 * - Float MIN/MAX work on the bit patterns: compare as floats, select the bits. A NaN operand is
 *   returned as is (a's if both are NaN), and -0 < +0 (IEEE 754-2019 minimum/maximum), so
 *   MIN/MAX are commutative bitwise for non-NaN inputs, signed zeros included.
 * - F16/BF16 are widened to f32, combined there, and rounded back to nearest-even. f32 has
 *   24 >= 2p+2 significand bits for p = 11 (f16) and p = 8 (bf16), so the double rounding of a
 *   sum or product is harmless: the result is the correctly rounded f16/bf16 result
 *   (S. A. Figueroa, "When is double rounding innocuous?", SIGNUM 1995). The conversions are
 *   integer selects plus one f32 add or int->float convert, so they vectorize as well.
 * - GCC 12 does not vectorize several equivalent formulations (a float op inside a select, some
 *   orders of selects); the comments at each say which. test_vectorized.c catches regressions.
 * - On x86-64 each kernel also gets an AVX2 clone (GLUCX_KERNEL_CLONES below).
 *
 * BOOL: any nonzero byte counts as true and results are always 0 or 1. SUM, BOR and MAX are
 * logical or; PROD, BAND and MIN logical and; BXOR logical xor.
 *
 * Float kernels assume the default floating-point environment (round to nearest); with a
 * flush-to-zero/denormals-are-zero mode (e.g. torch.set_flush_denormal(True)) f32/f64 subnormals
 * flush as they would in the framework's own kernels. All functions here are thread-safe.
 */
#include <math.h>
#include <string.h>

#include "kernel/reduce.h"

/* Element access at any alignment. */
typedef uint8_t u8_ua __attribute__((aligned(1), may_alias));
typedef uint16_t u16_ua __attribute__((aligned(1), may_alias));
typedef uint32_t u32_ua __attribute__((aligned(1), may_alias));
typedef uint64_t u64_ua __attribute__((aligned(1), may_alias));
typedef int8_t i8_ua __attribute__((aligned(1), may_alias));
typedef int32_t i32_ua __attribute__((aligned(1), may_alias));
typedef float f32_ua __attribute__((aligned(1), may_alias));
typedef double f64_ua __attribute__((aligned(1), may_alias));

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static inline double f64_from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

static inline uint32_t min_u32(uint32_t x, uint32_t y)
{
    return x < y ? x : y;
}

static inline uint32_t max_u32(uint32_t x, uint32_t y)
{
    return x > y ? x : y;
}

/* ---- binary16 / bfloat16 <-> binary32 ------------------------------------------------------ */

/* f16 -> f32 bits. Exact; NaN payloads (and signalling NaNs) are kept as they are. */
static inline uint32_t f16_to_f32_bits(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t mag = h & 0x7fffu;
    /* Normal: move the 5-bit exponent field into the 8-bit one and rebias 15 -> 127. */
    const uint32_t normal = (mag << 13) + ((uint32_t)(127 - 15) << 23);
    /* Inf/NaN: exponent 31 -> 255, payload unchanged. */
    const uint32_t special = (mag << 13) + ((uint32_t)(255 - 31) << 23);
    /* Zero/subnormal: mag * 2^-24. The int -> f32 conversion is exact (mag < 2^10 here); the
     * scaling is done on the exponent field because a float multiply would stop GCC from
     * if-converting (it may trap), and so from vectorizing. */
    const uint32_t subnormal = f32_bits((float)(int32_t)mag) - (mag != 0 ? 24u << 23 : 0u);
    const uint32_t r = mag < 0x0400u ? subnormal : (mag >= 0x7c00u ? special : normal);
    return sign | r;
}

/*
 * f32 bits -> f16, round to nearest even, overflow to inf, NaN -> quiet NaN with the top 9
 * payload bits kept.
 *
 * Written without selects on the paths: GCC turns selects here into branches, and then cannot
 * if-convert (and so cannot vectorize) the f32 add because it may trap (-ftrapping-math).
 * Instead each path works on a clamped copy of |x| and the paths are summed or max'ed.
 */
static inline uint16_t f32_bits_to_f16(uint32_t x)
{
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    /* Normal path on |x| clamped to [2^-14, 2^16]: rebias 127 -> 15 and round away the 13 extra
     * bits; a carry out of the mantissa bumps the exponent, up to inf (0x7c00) from 65520 on
     * (65504 + half an ulp rounds to even, i.e. up). Gives 0x0400 below 2^-14. */
    const uint32_t hi = min_u32(max_u32(ax, 0x38800000u), 0x47800000u);
    const uint32_t normal = (hi - ((uint32_t)(127 - 15) << 23) + 0x0fffu + ((hi >> 13) & 1u)) >> 13;
    /* Subnormal path on |x| clamped to [0, 2^-14]: the f16 grid there is 2^-24, the ulp of 0.5f,
     * so the f32 add rounds |x| to it (to nearest even) and leaves the number of 2^-24 steps in
     * the low bits: 0 .. 0x0400 (the smallest normal). Gives 0x0400 above 2^-14. */
    const uint32_t lo = min_u32(ax, 0x38800000u);
    const uint32_t subnormal = f32_bits(f32_from_bits(lo) + 0.5f) - 0x3f000000u;
    /* NaN: quiet, top payload bits kept; 0 for non-NaN so that max() keeps the finite/inf path. */
    const uint32_t nan = (0x7e00u | ((ax >> 13) & 0x03ffu)) & (0u - (uint32_t)(ax > 0x7f800000u));
    return (uint16_t)(sign | max_u32(normal + subnormal - 0x0400u, nan));
}

static inline float f16_to_float(uint16_t h)
{
    return f32_from_bits(f16_to_f32_bits(h));
}

static inline uint16_t float_to_f16(float f)
{
    return f32_bits_to_f16(f32_bits(f));
}

static inline float bf16_to_float(uint16_t h)
{
    return f32_from_bits((uint32_t)h << 16);
}

/* Round to nearest even on the low 16 bits (a carry may reach the exponent and give inf), NaN
 * -> quiet NaN with the top 7 payload bits kept. */
static inline uint16_t f32_bits_to_bf16(uint32_t x)
{
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const uint32_t nan = (x >> 16) | 0x0040u;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

static inline uint16_t float_to_bf16(float f)
{
    return f32_bits_to_bf16(f32_bits(f));
}

float glucx_f16_to_f32(uint16_t h)
{
    return f16_to_float(h);
}

uint16_t glucx_f32_to_f16(float f)
{
    return float_to_f16(f);
}

float glucx_bf16_to_f32(uint16_t h)
{
    return bf16_to_float(h);
}

uint16_t glucx_f32_to_bf16(float f)
{
    return float_to_bf16(f);
}

/* ---- element-wise combine functions -------------------------------------------------------- */

/* BOOL: nonzero is true, results are 0/1. */
static inline uint8_t bool_or(uint8_t x, uint8_t y)
{
    return (uint8_t)((x | y) != 0);
}

static inline uint8_t bool_and(uint8_t x, uint8_t y)
{
    return (uint8_t)((x != 0) & (y != 0));
}

static inline uint8_t bool_xor(uint8_t x, uint8_t y)
{
    return (uint8_t)((x != 0) ^ (y != 0));
}

/* Wrapping arithmetic and bitwise ops on unsigned storage (signedness does not matter). */
#define GLUCX_UINT_OPS_(bits)                                                                      \
    static inline uint##bits##_t add_u##bits(uint##bits##_t x, uint##bits##_t y)                   \
    {                                                                                              \
        return (uint##bits##_t)(x + y);                                                            \
    }                                                                                              \
    static inline uint##bits##_t and_u##bits(uint##bits##_t x, uint##bits##_t y)                   \
    {                                                                                              \
        return x & y;                                                                              \
    }                                                                                              \
    static inline uint##bits##_t or_u##bits(uint##bits##_t x, uint##bits##_t y)                    \
    {                                                                                              \
        return x | y;                                                                              \
    }                                                                                              \
    static inline uint##bits##_t xor_u##bits(uint##bits##_t x, uint##bits##_t y)                   \
    {                                                                                              \
        return x ^ y;                                                                              \
    }
GLUCX_UINT_OPS_(8)
GLUCX_UINT_OPS_(32)
GLUCX_UINT_OPS_(64)
#undef GLUCX_UINT_OPS_

static inline uint8_t mul_u8(uint8_t x, uint8_t y)
{
    return (uint8_t)((unsigned)x * (unsigned)y);
}

static inline uint32_t mul_u32(uint32_t x, uint32_t y)
{
    return x * y;
}

/* Low 64 bits of x * y from 32x32->64 products (SSE2 has pmuludq but no 64-bit multiply; GCC
 * does not vectorize a plain 64-bit multiply for it). */
static inline uint64_t mul_u64(uint64_t x, uint64_t y)
{
    const uint32_t xl = (uint32_t)x, xh = (uint32_t)(x >> 32);
    const uint32_t yl = (uint32_t)y, yh = (uint32_t)(y >> 32);
    const uint32_t cross = xl * yh + xh * yl;
    return (uint64_t)xl * yl + ((uint64_t)cross << 32);
}

#define GLUCX_MINMAX_(name, T)                                                                     \
    static inline T min_##name(T x, T y)                                                           \
    {                                                                                              \
        return x < y ? x : y;                                                                      \
    }                                                                                              \
    static inline T max_##name(T x, T y)                                                           \
    {                                                                                              \
        return x > y ? x : y;                                                                      \
    }
GLUCX_MINMAX_(i8, int8_t)
GLUCX_MINMAX_(u8, uint8_t)
GLUCX_MINMAX_(i32, int32_t)
#undef GLUCX_MINMAX_

/* 64-bit compares as all-ones/all-zero masks from subtract, xor and shift only (SSE2 lacks
 * pcmpgtq, and GCC does not vectorize a 64-bit `<` for it). */
static inline uint64_t lt_mask_i64(uint64_t x, uint64_t y)
{
    const uint64_t d = x - y;
    /* Sign of x - y, corrected when the subtraction overflowed (x, y of different signs). */
    return 0 - ((d ^ ((x ^ y) & (d ^ x))) >> 63);
}

static inline uint64_t lt_mask_u64(uint64_t x, uint64_t y)
{
    const uint64_t d = x - y;
    /* Borrow out of x - y. */
    return 0 - (((~x & y) | (~(x ^ y) & d)) >> 63);
}

static inline uint64_t min_i64(uint64_t x, uint64_t y)
{
    return y ^ ((x ^ y) & lt_mask_i64(x, y));
}

static inline uint64_t max_i64(uint64_t x, uint64_t y)
{
    return x ^ ((x ^ y) & lt_mask_i64(x, y));
}

static inline uint64_t min_u64(uint64_t x, uint64_t y)
{
    return y ^ ((x ^ y) & lt_mask_u64(x, y));
}

static inline uint64_t max_u64(uint64_t x, uint64_t y)
{
    return x ^ ((x ^ y) & lt_mask_u64(x, y));
}

static inline float add_f32(float x, float y)
{
    return x + y;
}

static inline float mul_f32(float x, float y)
{
    return x * y;
}

static inline double add_f64(double x, double y)
{
    return x + y;
}

static inline double mul_f64(double x, double y)
{
    return x * y;
}

/*
 * Float MIN/MAX on bit patterns ux/uy whose values are fx/fy, as a statement sequence of r.
 * Ordered and unequal: the smaller (larger). Equal: the bits or'ed for MIN (-0 wins over +0),
 * and'ed for MAX (+0 wins); the identity for equal nonzero values. NaN: the NaN operand (x if
 * both are). Written as this sequence of selects because GCC 12 does not vectorize some
 * equivalent forms (nested ?:, other orders) for 64-bit elements.
 */
#define GLUCX_FMIN_(r, ux, uy, fx, fy)                                                             \
    r = (fx) < (fy) ? (ux) : ((ux) | (uy));                                                        \
    r = (fx) > (fy) ? (uy) : r;                                                                    \
    r = (fy) != (fy) ? (uy) : r;                                                                   \
    r = (fx) != (fx) ? (ux) : r
#define GLUCX_FMAX_(r, ux, uy, fx, fy)                                                             \
    r = (fx) > (fy) ? (ux) : ((ux) & (uy));                                                        \
    r = (fx) < (fy) ? (uy) : r;                                                                    \
    r = (fy) != (fy) ? (uy) : r;                                                                   \
    r = (fx) != (fx) ? (ux) : r

static inline uint32_t min_f32(uint32_t x, uint32_t y)
{
    const float fx = f32_from_bits(x), fy = f32_from_bits(y);
    uint32_t r;
    GLUCX_FMIN_(r, x, y, fx, fy);
    return r;
}

static inline uint32_t max_f32(uint32_t x, uint32_t y)
{
    const float fx = f32_from_bits(x), fy = f32_from_bits(y);
    uint32_t r;
    GLUCX_FMAX_(r, x, y, fx, fy);
    return r;
}

static inline uint64_t min_f64(uint64_t x, uint64_t y)
{
    const double fx = f64_from_bits(x), fy = f64_from_bits(y);
    uint64_t r;
    GLUCX_FMIN_(r, x, y, fx, fy);
    return r;
}

static inline uint64_t max_f64(uint64_t x, uint64_t y)
{
    const double fx = f64_from_bits(x), fy = f64_from_bits(y);
    uint64_t r;
    GLUCX_FMAX_(r, x, y, fx, fy);
    return r;
}

static inline uint16_t add_f16(uint16_t x, uint16_t y)
{
    return float_to_f16(f16_to_float(x) + f16_to_float(y));
}

static inline uint16_t mul_f16(uint16_t x, uint16_t y)
{
    return float_to_f16(f16_to_float(x) * f16_to_float(y));
}

static inline uint16_t min_f16(uint16_t x, uint16_t y)
{
    const float fx = f16_to_float(x), fy = f16_to_float(y);
    uint16_t r;
    GLUCX_FMIN_(r, x, y, fx, fy);
    return r;
}

static inline uint16_t max_f16(uint16_t x, uint16_t y)
{
    const float fx = f16_to_float(x), fy = f16_to_float(y);
    uint16_t r;
    GLUCX_FMAX_(r, x, y, fx, fy);
    return r;
}

static inline uint16_t add_bf16(uint16_t x, uint16_t y)
{
    return float_to_bf16(bf16_to_float(x) + bf16_to_float(y));
}

static inline uint16_t mul_bf16(uint16_t x, uint16_t y)
{
    return float_to_bf16(bf16_to_float(x) * bf16_to_float(y));
}

static inline uint16_t min_bf16(uint16_t x, uint16_t y)
{
    const float fx = bf16_to_float(x), fy = bf16_to_float(y);
    uint16_t r;
    GLUCX_FMIN_(r, x, y, fx, fy);
    return r;
}

static inline uint16_t max_bf16(uint16_t x, uint16_t y)
{
    const float fx = bf16_to_float(x), fy = bf16_to_float(y);
    uint16_t r;
    GLUCX_FMAX_(r, x, y, fx, fy);
    return r;
}

#undef GLUCX_FMIN_
#undef GLUCX_FMAX_

/* ---- kernels ------------------------------------------------------------------------------- */

/*
 * On x86-64 ELF targets every kernel is compiled twice, for the SSE2 baseline and for AVX2, and
 * the dynamic loader binds the table entries to the one the CPU supports (GNU ifunc). AVX2 doubles
 * the F16/BF16 kernels and helps the rest when the data is in cache. -DGLUCX_KERNEL_NO_CLONES
 * builds the baseline only (the tests use it to run the SSE2 code on AVX2 machines).
 */
#if !defined(GLUCX_KERNEL_NO_CLONES) && defined(__x86_64__) && defined(__ELF__) &&                 \
    defined(__has_attribute)
#if __has_attribute(target_clones)
#define GLUCX_KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#define GLUCX_KERNEL_CLONES_ON 1
#endif
#endif
#ifndef GLUCX_KERNEL_CLONES
#define GLUCX_KERNEL_CLONES
#endif

/*
 * One kernel per row: kernel_<name> applies <combine> element-wise over elements of type <ua>.
 * Keep each GLUCX_KERNEL() row on one line of its own: test_vectorized.c finds the rows by
 * that pattern and matches GCC's "loop vectorized" reports to their lines.
 */
#define GLUCX_KERNEL(name, ua, combine)                                                            \
    GLUCX_KERNEL_CLONES static void kernel_##name(void *dst_v, const void *a_v, const void *b_v,   \
                                                  size_t count)                                    \
    {                                                                                              \
        ua *dst = dst_v;                                                                           \
        const ua *a = a_v;                                                                         \
        const ua *b = b_v;                                                                         \
        for (size_t i = 0; i < count; i++)                                                         \
            dst[i] = combine(a[i], b[i]);                                                          \
    }

/* clang-format off */
GLUCX_KERNEL(bool_or, u8_ua, bool_or)
GLUCX_KERNEL(bool_and, u8_ua, bool_and)
GLUCX_KERNEL(bool_xor, u8_ua, bool_xor)

GLUCX_KERNEL(u8_sum, u8_ua, add_u8)
GLUCX_KERNEL(u8_prod, u8_ua, mul_u8)
GLUCX_KERNEL(i8_min, i8_ua, min_i8)
GLUCX_KERNEL(i8_max, i8_ua, max_i8)
GLUCX_KERNEL(u8_min, u8_ua, min_u8)
GLUCX_KERNEL(u8_max, u8_ua, max_u8)
GLUCX_KERNEL(u8_band, u8_ua, and_u8)
GLUCX_KERNEL(u8_bor, u8_ua, or_u8)
GLUCX_KERNEL(u8_bxor, u8_ua, xor_u8)

GLUCX_KERNEL(u32_sum, u32_ua, add_u32)
GLUCX_KERNEL(u32_prod, u32_ua, mul_u32)
GLUCX_KERNEL(i32_min, i32_ua, min_i32)
GLUCX_KERNEL(i32_max, i32_ua, max_i32)
GLUCX_KERNEL(u32_band, u32_ua, and_u32)
GLUCX_KERNEL(u32_bor, u32_ua, or_u32)
GLUCX_KERNEL(u32_bxor, u32_ua, xor_u32)

GLUCX_KERNEL(u64_sum, u64_ua, add_u64)
GLUCX_KERNEL(u64_prod, u64_ua, mul_u64)
GLUCX_KERNEL(i64_min, u64_ua, min_i64)
GLUCX_KERNEL(i64_max, u64_ua, max_i64)
GLUCX_KERNEL(u64_min, u64_ua, min_u64)
GLUCX_KERNEL(u64_max, u64_ua, max_u64)
GLUCX_KERNEL(u64_band, u64_ua, and_u64)
GLUCX_KERNEL(u64_bor, u64_ua, or_u64)
GLUCX_KERNEL(u64_bxor, u64_ua, xor_u64)

GLUCX_KERNEL(f16_sum, u16_ua, add_f16)
GLUCX_KERNEL(f16_prod, u16_ua, mul_f16)
GLUCX_KERNEL(f16_min, u16_ua, min_f16)
GLUCX_KERNEL(f16_max, u16_ua, max_f16)

GLUCX_KERNEL(bf16_sum, u16_ua, add_bf16)
GLUCX_KERNEL(bf16_prod, u16_ua, mul_bf16)
GLUCX_KERNEL(bf16_min, u16_ua, min_bf16)
GLUCX_KERNEL(bf16_max, u16_ua, max_bf16)

GLUCX_KERNEL(f32_sum, f32_ua, add_f32)
GLUCX_KERNEL(f32_prod, f32_ua, mul_f32)
GLUCX_KERNEL(f32_min, u32_ua, min_f32)
GLUCX_KERNEL(f32_max, u32_ua, max_f32)

GLUCX_KERNEL(f64_sum, f64_ua, add_f64)
GLUCX_KERNEL(f64_prod, f64_ua, mul_f64)
GLUCX_KERNEL(f64_min, u64_ua, min_f64)
GLUCX_KERNEL(f64_max, u64_ua, max_f64)
/* clang-format on */

#undef GLUCX_KERNEL

/* Integer kernels shared by the signed and unsigned type of one width. */
#define GLUCX_INT_ROW_(bits, sname)                                                                \
    {                                                                                              \
        [GLUCX_OP_SUM] = kernel_u##bits##_sum, [GLUCX_OP_PROD] = kernel_u##bits##_prod,            \
        [GLUCX_OP_MIN] = kernel_##sname##_min, [GLUCX_OP_MAX] = kernel_##sname##_max,              \
        [GLUCX_OP_BAND] = kernel_u##bits##_band, [GLUCX_OP_BOR] = kernel_u##bits##_bor,            \
        [GLUCX_OP_BXOR] = kernel_u##bits##_bxor,                                                   \
    }
#define GLUCX_FLOAT_ROW_(name)                                                                     \
    {                                                                                              \
        [GLUCX_OP_SUM] = kernel_##name##_sum, [GLUCX_OP_PROD] = kernel_##name##_prod,              \
        [GLUCX_OP_MIN] = kernel_##name##_min, [GLUCX_OP_MAX] = kernel_##name##_max,                \
        [GLUCX_OP_AVG] = kernel_##name##_sum,                                                      \
    }

/* NULL where glucx_op_supported() says no; tests check the two agree. */
static const glucx_reduce_fn_t kernels[GLUCX_DTYPE_COUNT][GLUCX_OP_COUNT] = {
    [GLUCX_DTYPE_BOOL] =
        {
            [GLUCX_OP_SUM] = kernel_bool_or,
            [GLUCX_OP_PROD] = kernel_bool_and,
            [GLUCX_OP_MIN] = kernel_bool_and,
            [GLUCX_OP_MAX] = kernel_bool_or,
            [GLUCX_OP_BAND] = kernel_bool_and,
            [GLUCX_OP_BOR] = kernel_bool_or,
            [GLUCX_OP_BXOR] = kernel_bool_xor,
        },
    [GLUCX_DTYPE_I8] = GLUCX_INT_ROW_(8, i8),
    [GLUCX_DTYPE_U8] = GLUCX_INT_ROW_(8, u8),
    [GLUCX_DTYPE_I32] = GLUCX_INT_ROW_(32, i32),
    [GLUCX_DTYPE_I64] = GLUCX_INT_ROW_(64, i64),
    [GLUCX_DTYPE_U64] = GLUCX_INT_ROW_(64, u64),
    [GLUCX_DTYPE_F16] = GLUCX_FLOAT_ROW_(f16),
    [GLUCX_DTYPE_BF16] = GLUCX_FLOAT_ROW_(bf16),
    [GLUCX_DTYPE_F32] = GLUCX_FLOAT_ROW_(f32),
    [GLUCX_DTYPE_F64] = GLUCX_FLOAT_ROW_(f64),
};

#undef GLUCX_INT_ROW_
#undef GLUCX_FLOAT_ROW_

/*
 * F16 SUM/PROD with the F16C conversion instructions (Intel Ivy Bridge, AMD Piledriver and
 * later), about 15x the integer conversions: SUM is the common f16 collective (e.g. DDP's fp16
 * compression hook). MIN/MAX and AVG's division keep the portable code.
 * Same results as the portable kernels, NaN payloads aside: vcvtph2ps is exact and vcvtps2ph
 * with an explicit round-to-nearest-even immediate rounds exactly like f32_bits_to_f16().
 * Chosen at run time when the CPU has F16C and the OS saves AVX state; not built with
 * GLUCX_KERNEL_NO_CLONES, so the baseline test runs the portable kernels.
 */
#if defined(GLUCX_KERNEL_CLONES_ON) && (defined(__GNUC__) || defined(__clang__))
#define GLUCX_KERNEL_F16C 1
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>

#define GLUCX_F16C_KERNEL_(name, vop, tail)                                                        \
    __attribute__((target("avx,f16c"))) static void name(void *dst_v, const void *a_v,             \
                                                         const void *b_v, size_t count)            \
    {                                                                                              \
        uint8_t *dst = dst_v;                                                                      \
        const uint8_t *a = a_v, *b = b_v;                                                          \
        size_t i = 0;                                                                              \
        for (; i + 8 <= count; i += 8) {                                                           \
            const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const void *)(a + 2 * i)));          \
            const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const void *)(b + 2 * i)));          \
            _mm_storeu_si128((void *)(dst + 2 * i),                                                \
                             _mm256_cvtps_ph(vop(x, y), _MM_FROUND_TO_NEAREST_INT));               \
        }                                                                                          \
        if (i < count)                                                                             \
            tail(dst + 2 * i, a + 2 * i, b + 2 * i, count - i);                                    \
    }
GLUCX_F16C_KERNEL_(kernel_f16_sum_f16c, _mm256_add_ps, kernel_f16_sum)
GLUCX_F16C_KERNEL_(kernel_f16_prod_f16c, _mm256_mul_ps, kernel_f16_prod)
#undef GLUCX_F16C_KERNEL_

static int cpu_has_f16c(void)
{
    /* 0: not checked yet, 1: no, 2: yes. Racing first callers store the same answer. */
    static atomic_int state;
    int s = atomic_load_explicit(&state, memory_order_relaxed);
    if (s == 0) {
        unsigned eax, ebx, ecx, edx;
        __builtin_cpu_init();
        /* "avx" also means the OS saves the YMM registers (OSXSAVE/XCR0). */
        const int yes = __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
                        (ecx & bit_F16C) != 0;
        s = yes ? 2 : 1;
        atomic_store_explicit(&state, s, memory_order_relaxed);
    }
    return s == 2;
}
#endif

glucx_reduce_fn_t glucx_kernel_reduce_fn(glucx_dtype_t dtype, glucx_op_t op)
{
    if ((unsigned)dtype >= GLUCX_DTYPE_COUNT || (unsigned)op >= GLUCX_OP_COUNT)
        return NULL;
#ifdef GLUCX_KERNEL_F16C
    if (dtype == GLUCX_DTYPE_F16 &&
        (op == GLUCX_OP_SUM || op == GLUCX_OP_AVG || op == GLUCX_OP_PROD) && cpu_has_f16c())
        return op == GLUCX_OP_PROD ? kernel_f16_prod_f16c : kernel_f16_sum_f16c;
#endif
    return kernels[dtype][op];
}

/* ---- AVG ----------------------------------------------------------------------------------- */

/*
 * Round a double to f32 with round-to-odd: truncate toward zero, then set the last bit if
 * anything was lost. Rounding that to a format with at least two fewer significand bits (f16,
 * bf16) gives the same result as rounding the double directly (Boldo & Melquiond, "Emulation of
 * FMA and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008).
 * |d| must not exceed FLT_MAX (it does not here: it is an f16/bf16 value divided by n >= 1).
 */
static inline uint32_t f64_to_f32_bits_odd(double d)
{
    const float f = (float)d;
    const uint32_t bits = f32_bits(f);
    /* RNE rounded away from zero: step back one ulp (bits - 1 stays within the sign). */
    const uint32_t trunc = fabs((double)f) > fabs(d) ? bits - 1u : bits;
    return (double)f != d ? (trunc | 1u) : bits;
}

/*
 * buf[i] /= n, the quotient formed in f64 and rounded once to the element type. The f64 quotient
 * is within 2^-53 (relative) of the exact one, and an exact quotient of a p-bit value by an
 * integer n that is not on a rounding boundary of the p-bit format is at least about 2^-p / n
 * away from one; so the f64 quotient rounds like the exact one for f16/bf16 (any int n, via
 * round-to-odd) and for f32 (n < 2^28).
 */
GLUCX_KERNEL_CLONES static void avg_f16(u16_ua *p, size_t count, double n)
{
    for (size_t i = 0; i < count; i++)
        p[i] = f32_bits_to_f16(f64_to_f32_bits_odd((double)f16_to_float(p[i]) / n));
}

GLUCX_KERNEL_CLONES static void avg_bf16(u16_ua *p, size_t count, double n)
{
    for (size_t i = 0; i < count; i++)
        p[i] = f32_bits_to_bf16(f64_to_f32_bits_odd((double)bf16_to_float(p[i]) / n));
}

GLUCX_KERNEL_CLONES static void avg_f32(f32_ua *p, size_t count, double n)
{
    for (size_t i = 0; i < count; i++)
        p[i] = (float)((double)p[i] / n);
}

GLUCX_KERNEL_CLONES static void avg_f64(f64_ua *p, size_t count, double n)
{
    for (size_t i = 0; i < count; i++)
        p[i] = p[i] / n;
}

void glucx_kernel_avg_finalize(glucx_dtype_t dtype, void *buf, size_t count, int nranks)
{
    /* Dividing by 1 is the identity (and leaves NaN payloads alone). */
    if (nranks <= 1)
        return;
    const double n = (double)nranks;
    switch (dtype) {
    case GLUCX_DTYPE_F16:
        avg_f16(buf, count, n);
        break;
    case GLUCX_DTYPE_BF16:
        avg_bf16(buf, count, n);
        break;
    case GLUCX_DTYPE_F32:
        avg_f32(buf, count, n);
        break;
    case GLUCX_DTYPE_F64:
        avg_f64(buf, count, n);
        break;
    default:
        break;
    }
}
