/**
 * @file glucx/types.h
 * @brief Element datatypes and reduction operators.
 */
#ifndef GLUCX_TYPES_H
#define GLUCX_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <glucx/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, lowercase name, element bytes, is_float) */
#define GLUCX_DTYPE_MAP(X)                                                                 \
    X(BOOL, bool, 1, 0)                                                                    \
    X(I8, i8, 1, 0)                                                                        \
    X(U8, u8, 1, 0)                                                                        \
    X(I32, i32, 4, 0)                                                                      \
    X(I64, i64, 8, 0)                                                                      \
    X(U64, u64, 8, 0)                                                                      \
    X(F16, f16, 2, 1)                                                                      \
    X(BF16, bf16, 2, 1)                                                                    \
    X(F32, f32, 4, 1)                                                                      \
    X(F64, f64, 8, 1)

/**
 * Element datatype. BOOL is one byte holding 0 or 1 (C `bool`, torch.bool); F16 is IEEE 754
 * binary16; BF16 is bfloat16 (the upper half of a binary32). All are host byte order.
 */
typedef enum glucx_dtype {
#define GLUCX_DTYPE_ENUM_(name, lname, bytes, is_float) GLUCX_DTYPE_##name,
    GLUCX_DTYPE_MAP(GLUCX_DTYPE_ENUM_)
#undef GLUCX_DTYPE_ENUM_
    GLUCX_DTYPE_COUNT
} glucx_dtype_t;

/* X(name, lowercase name) */
#define GLUCX_OP_MAP(X)                                                                    \
    X(SUM, sum)                                                                            \
    X(PROD, prod)                                                                          \
    X(MIN, min)                                                                            \
    X(MAX, max)                                                                            \
    X(AVG, avg)                                                                            \
    X(BAND, band)                                                                          \
    X(BOR, bor)                                                                            \
    X(BXOR, bxor)

/**
 * Reduction operator.
 * - SUM, PROD, MIN, MAX: every dtype. On BOOL, SUM is logical or, PROD logical and.
 *   MIN/MAX on floats propagate NaN.
 * - AVG: float dtypes only; the sum divided by the number of ranks, rounded once at the end.
 * - BAND, BOR, BXOR: integer dtypes and BOOL only.
 */
typedef enum glucx_op {
#define GLUCX_OP_ENUM_(name, lname) GLUCX_OP_##name,
    GLUCX_OP_MAP(GLUCX_OP_ENUM_)
#undef GLUCX_OP_ENUM_
    GLUCX_OP_COUNT
} glucx_op_t;

/**
 * Size of one element.
 * @param dtype any value.
 * @return bytes per element, or 0 for an invalid dtype. Thread-safe.
 */
GLUCX_API size_t glucx_dtype_size(glucx_dtype_t dtype);

/**
 * Name of a dtype ("f32", "bf16", ...).
 * @return a static string; "invalid" for an out-of-range value. Thread-safe.
 */
GLUCX_API const char *glucx_dtype_name(glucx_dtype_t dtype);

/**
 * Name of an operator ("sum", "bxor", ...).
 * @return a static string; "invalid" for an out-of-range value. Thread-safe.
 */
GLUCX_API const char *glucx_op_name(glucx_op_t op);

/**
 * Whether @p op is defined on @p dtype (see glucx_op_t).
 * @return 1 if supported, 0 otherwise (also for out-of-range values). Thread-safe.
 */
GLUCX_API int glucx_op_supported(glucx_op_t op, glucx_dtype_t dtype);

#ifdef __cplusplus
}
#endif
#endif
