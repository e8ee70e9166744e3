/*
 * Tests for plugin/kernel/reduce.c: the f16/bf16 conversions, every dtype x op kernel and AVG.
 *
 * Expected values come from references written independently of the code under test:
 * - f16/bf16 encodings are decoded from the IEEE 754 definition with ldexp(), and rounding is
 *   done by scaling to the format's ulp and nearbyint() in double (plus the compiler's _Float16
 *   conversion where GCC provides it);
 * - float SUM/PROD are computed in a wider type (__float128 where available) and rounded once;
 * - integer SUM/PROD in a wider or unsigned type and truncated.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/reduce.h"
#include "support/util.h"

#ifdef __SIZEOF_FLOAT128__
typedef __float128 wide_t; /* 113-bit significand: SUM/PROD of two f64 then one rounding */
#else
typedef long double wide_t;
#endif

/* ---- independent references for the 16-bit formats ----------------------------------------- */

static uint32_t bits_of_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static float float_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static int f16_is_nan(uint16_t h)
{
    return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
}

static int bf16_is_nan(uint16_t h)
{
    return (h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0;
}

/* Value of a binary16 encoding (NaN for NaNs), from the definition. */
static double ref_f16_value(uint16_t h)
{
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f)
        v = m != 0 ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* Value of a bfloat16 encoding (sign, 8-bit exponent, 7-bit fraction). */
static double ref_bf16_value(uint16_t h)
{
    const int e = (h >> 7) & 0xff, m = h & 0x7f;
    double v;
    if (e == 0xff)
        v = m != 0 ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -133);
    else
        v = ldexp(128 + m, e - 134);
    return (h & 0x8000) ? -v : v;
}

#define F16_MAX 65504.0
#define BF16_MAX (0x1.fep127)

/*
 * Round v to the nearest value with p significand bits and exponent >= emin (ties to the even
 * multiple of the ulp); beyond max_finite after rounding -> inf. NaN/inf/zero pass through.
 */
static double ref_round(double v, int p, int emin, double max_finite)
{
    if (v == 0 || !isfinite(v))
        return v;
    int e = ilogb(v);
    if (e < emin)
        e = emin;
    const double ulp = ldexp(1.0, e - (p - 1));
    const double r = nearbyint(v / ulp) * ulp; /* v / ulp is exact: ulp is a power of two */
    if (fabs(r) > max_finite)
        return copysign(INFINITY, v);
    return r;
}

static double ref_round_f16(double v)
{
    return ref_round(v, 11, -14, F16_MAX);
}

static double ref_round_bf16(double v)
{
    return ref_round(v, 8, -126, BF16_MAX);
}

/* Encoding of a value exactly representable in binary16 (or +-inf/NaN). */
static uint16_t ref_f16_encode(double v)
{
    const uint16_t sign = signbit(v) ? 0x8000 : 0;
    const double a = fabs(v);
    if (isnan(v))
        return sign | 0x7e00;
    if (isinf(v))
        return sign | 0x7c00;
    if (a == 0)
        return sign;
    const int e = ilogb(a);
    if (e < -14)
        return sign | (uint16_t)(a / 0x1p-24);
    return sign | (uint16_t)((e + 15) << 10) | (uint16_t)(a / ldexp(1.0, e - 10) - 1024);
}

/* Encoding of a value exactly representable in bfloat16 (or +-inf/NaN). */
static uint16_t ref_bf16_encode(double v)
{
    if (isnan(v))
        return signbit(v) ? 0xffc0 : 0x7fc0;
    return (uint16_t)(bits_of_float((float)v) >> 16);
}

#ifdef __FLT16_MAX__
/* The compiler's own conversion (libgcc soft-fp or F16C), a second reference. */
static uint16_t cc_f32_to_f16(float f)
{
    const _Float16 h = (_Float16)f;
    uint16_t u;
    memcpy(&u, &h, sizeof(u));
    return u;
}
#endif

/* Check glucx_f32_to_f16(x) against the references; x is f32 bits. */
static void check_to_f16(uint32_t x)
{
    const float f = float_of_bits(x);
    const uint16_t got = glucx_f32_to_f16(f);
    if (isnan(f)) {
        /* Quiet NaN, sign and the top payload bits kept. */
        const uint16_t want = (uint16_t)(((x >> 16) & 0x8000) | 0x7e00 | ((x >> 13) & 0x3ff));
        if (got != want)
            fail_msg("f32->f16 of NaN 0x%08x: got 0x%04x, want 0x%04x", x, got, want);
        return;
    }
    const uint16_t want = ref_f16_encode(ref_round_f16(f));
    if (got != want)
        fail_msg("f32->f16 of 0x%08x (%a): got 0x%04x, want 0x%04x", x, f, got, want);
#ifdef __FLT16_MAX__
    if (got != cc_f32_to_f16(f))
        fail_msg("f32->f16 of 0x%08x (%a): got 0x%04x, _Float16 gives 0x%04x", x, f, got,
                 cc_f32_to_f16(f));
#endif
}

static void check_to_bf16(uint32_t x)
{
    const float f = float_of_bits(x);
    const uint16_t got = glucx_f32_to_bf16(f);
    if (isnan(f)) {
        const uint16_t want = (uint16_t)((x >> 16) | 0x0040);
        if (got != want)
            fail_msg("f32->bf16 of NaN 0x%08x: got 0x%04x, want 0x%04x", x, got, want);
        return;
    }
    const uint16_t want = ref_bf16_encode(ref_round_bf16(f));
    if (got != want)
        fail_msg("f32->bf16 of 0x%08x (%a): got 0x%04x, want 0x%04x", x, f, got, want);
}

/* ---- conversion tests ---------------------------------------------------------------------- */

static void test_f16_to_f32_all(void **state)
{
    (void)state;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        const float got = glucx_f16_to_f32((uint16_t)h);
        const double want = ref_f16_value((uint16_t)h);
        if (isnan(want)) {
            /* Payload kept exactly (quiet or signalling), sign kept. */
            const uint32_t wbits = ((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13);
            if (bits_of_float(got) != wbits)
                fail_msg("f16->f32 of NaN 0x%04x: got 0x%08x, want 0x%08x", h, bits_of_float(got),
                         wbits);
        } else if ((double)got != want || !signbit(got) != !signbit(want)) {
            fail_msg("f16->f32 of 0x%04x: got %a, want %a", h, got, want);
        }
    }
}

static void test_f16_round_trip_all(void **state)
{
    (void)state;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        const uint16_t back = glucx_f32_to_f16(glucx_f16_to_f32((uint16_t)h));
        if (f16_is_nan((uint16_t)h)) {
            /* Stays NaN; a quiet NaN comes back bit-exact, a signalling one comes back quiet. */
            if (back != (h | 0x0200u))
                fail_msg("f16 NaN 0x%04x came back as 0x%04x", h, back);
        } else if (back != h) {
            fail_msg("f16 0x%04x came back as 0x%04x", h, back);
        }
    }
}

/* Every midpoint between neighbouring f16 values (and the f32 values next to it) rounds to the
 * nearest, ties to the even encoding; includes 65520 (max + half an ulp) -> inf. */
static void test_f32_to_f16_ties(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        const double lo = ref_f16_value((uint16_t)h);
        const double hi = h == 0x7bff ? 65536.0 : ref_f16_value((uint16_t)(h + 1));
        const float mid = (float)((lo + hi) / 2); /* 12 significant bits: exact */
        assert_true((double)mid == (lo + hi) / 2);
        for (int s = 0; s < 2; s++) {
            const float m = s ? -mid : mid;
            const uint16_t sign = s ? 0x8000 : 0;
            const uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            if (glucx_f32_to_f16(m) != (sign | even))
                fail_msg("tie %a: got 0x%04x, want 0x%04x", m, glucx_f32_to_f16(m), sign | even);
            check_to_f16(bits_of_float(m));
            check_to_f16(bits_of_float(m) - 1); /* just towards zero */
            check_to_f16(bits_of_float(m) + 1); /* just away from zero */
        }
    }
}

/*
 * In the f16 normal range the result depends only on the top 19 bits of |x| and on how the low
 * 13 bits compare with a half ulp; try every top part with each such class of low part. Also
 * every f32 exponent with random and edge mantissas (f16 subnormals, underflow, overflow).
 */
static void test_f32_to_f16_classes(void **state)
{
    (void)state;
    static const uint32_t low[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff};
    for (uint32_t top = 0; top < (1u << 19); top++)
        for (size_t k = 0; k < sizeof(low) / sizeof(low[0]); k++)
            check_to_f16((top << 13) | low[k]);
    uint64_t rng = 1;
    for (uint32_t e = 0; e < 256; e++) {
        for (int k = 0; k < 2000; k++) {
            uint32_t m = (uint32_t)glucx_test_rand(&rng) & 0x7fffff;
            if (k < 4)
                m = (uint32_t[]){0, 1, 0x7fffff, 0x400000}[k];
            const uint32_t s = (uint32_t)(k & 1) << 31;
            check_to_f16(s | (e << 23) | m);
        }
    }
}

static void test_f32_to_f16_specials(void **state)
{
    (void)state;
    assert_int_equal(glucx_f32_to_f16(0.0f), 0x0000);
    assert_int_equal(glucx_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(glucx_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(glucx_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(glucx_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(glucx_f32_to_f16(65519.996f), 0x7bff);
    assert_int_equal(glucx_f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(glucx_f32_to_f16(FLT_MAX), 0x7c00);
    assert_int_equal(glucx_f32_to_f16(-INFINITY), 0xfc00);
    assert_int_equal(glucx_f32_to_f16(0x1p-24f), 0x0001);   /* smallest subnormal */
    assert_int_equal(glucx_f32_to_f16(0x1p-25f), 0x0000);   /* tie with 0 -> even */
    assert_int_equal(glucx_f32_to_f16(0x1.8p-24f), 0x0002); /* tie 1.5 -> 2 */
    assert_int_equal(glucx_f32_to_f16(0x1.000002p-25f), 0x0001);
    assert_int_equal(glucx_f32_to_f16(0x1.ff8p-15f), 0x03ff); /* largest subnormal */
    assert_int_equal(glucx_f32_to_f16(0x1.ffcp-15f), 0x0400); /* tie -> even: min normal */
    assert_int_equal(glucx_f32_to_f16(-0x1p-30f), 0x8000);
    assert_int_equal(glucx_f32_to_f16(FLT_TRUE_MIN), 0x0000);
    /* NaNs: quiet, and a payload only in the low bits must not turn into inf. */
    assert_true(f16_is_nan(glucx_f32_to_f16(float_of_bits(0x7f800001))));
    assert_true(f16_is_nan(glucx_f32_to_f16(float_of_bits(0xff800001))));
    assert_int_equal(glucx_f32_to_f16(float_of_bits(0x7fc00000)), 0x7e00);
    assert_int_equal(glucx_f32_to_f16(float_of_bits(0xffc00000)), 0xfe00);
}

static void test_bf16_to_f32_all(void **state)
{
    (void)state;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        const float got = glucx_bf16_to_f32((uint16_t)h);
        const double want = ref_bf16_value((uint16_t)h);
        if (isnan(want)) {
            if (bits_of_float(got) != h << 16)
                fail_msg("bf16->f32 of NaN 0x%04x: got 0x%08x", h, bits_of_float(got));
        } else if ((double)got != want || !signbit(got) != !signbit(want)) {
            fail_msg("bf16->f32 of 0x%04x: got %a, want %a", h, got, want);
        }
        const uint16_t back = glucx_f32_to_bf16(got);
        if (bf16_is_nan((uint16_t)h) ? back != (h | 0x40u) : back != h)
            fail_msg("bf16 0x%04x came back as 0x%04x", h, back);
    }
}

/* Every upper half with the low halves that decide the rounding: exhaustive in effect. */
static void test_f32_to_bf16_classes(void **state)
{
    (void)state;
    static const uint32_t low[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x4000, 0xc000};
    uint64_t rng = 2;
    for (uint32_t top = 0; top <= 0xffff; top++) {
        for (size_t k = 0; k < sizeof(low) / sizeof(low[0]); k++)
            check_to_bf16((top << 16) | low[k]);
        check_to_bf16((top << 16) | ((uint32_t)glucx_test_rand(&rng) & 0xffff));
    }
    assert_int_equal(glucx_f32_to_bf16(FLT_MAX), 0x7f80); /* beyond max + half ulp */
    assert_int_equal(glucx_f32_to_bf16(-FLT_MAX), 0xff80);
    assert_int_equal(glucx_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(glucx_f32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(glucx_f32_to_bf16(float_of_bits(0x7f800001)), 0x7fc0); /* NaN, not inf */
    assert_int_equal(glucx_f32_to_bf16(float_of_bits(0x3f808000)), 0x3f80); /* tie -> even */
    assert_int_equal(glucx_f32_to_bf16(float_of_bits(0x3f818000)), 0x3f82); /* tie -> even */
}

/* ---- kernel references --------------------------------------------------------------------- */

static int dtype_is_float(glucx_dtype_t dt)
{
    return dt == GLUCX_DTYPE_F16 || dt == GLUCX_DTYPE_BF16 || dt == GLUCX_DTYPE_F32 ||
           dt == GLUCX_DTYPE_F64;
}

static uint64_t load_elem(glucx_dtype_t dt, const void *p)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (glucx_dtype_size(dt)) {
    case 1:
        memcpy(&u8, p, 1);
        return u8;
    case 2:
        memcpy(&u16, p, 2);
        return u16;
    case 4:
        memcpy(&u32, p, 4);
        return u32;
    default:
        memcpy(&u64, p, 8);
        return u64;
    }
}

static void store_elem(glucx_dtype_t dt, void *p, uint64_t v)
{
    const uint8_t u8 = (uint8_t)v;
    const uint16_t u16 = (uint16_t)v;
    const uint32_t u32 = (uint32_t)v;
    switch (glucx_dtype_size(dt)) {
    case 1:
        memcpy(p, &u8, 1);
        break;
    case 2:
        memcpy(p, &u16, 2);
        break;
    case 4:
        memcpy(p, &u32, 4);
        break;
    default:
        memcpy(p, &v, 8);
        break;
    }
}

/* Value of float-dtype bits. */
static double fvalue(glucx_dtype_t dt, uint64_t bits)
{
    double d;
    switch (dt) {
    case GLUCX_DTYPE_F16:
        return ref_f16_value((uint16_t)bits);
    case GLUCX_DTYPE_BF16:
        return ref_bf16_value((uint16_t)bits);
    case GLUCX_DTYPE_F32:
        return float_of_bits((uint32_t)bits);
    default:
        memcpy(&d, &bits, sizeof(d));
        return d;
    }
}

static int fis_nan(glucx_dtype_t dt, uint64_t bits)
{
    return isnan(fvalue(dt, bits));
}

/* Bits of the correctly rounded value of w in dtype dt. */
static uint64_t fround(glucx_dtype_t dt, wide_t w)
{
    double d;
    uint64_t u;
    switch (dt) {
    case GLUCX_DTYPE_F16:
        /* w is exact in double for f16 operands (sums need <= 40 bits, products 22). */
        return ref_f16_encode(ref_round_f16((double)w));
    case GLUCX_DTYPE_BF16:
        /* A sum may round on the way to double; 53 >= 2 * 8 + 2 makes that harmless. */
        return ref_bf16_encode(ref_round_bf16((double)w));
    case GLUCX_DTYPE_F32:
        return bits_of_float((float)w);
    default:
        d = (double)w;
        memcpy(&u, &d, sizeof(u));
        return u;
    }
}

/* IEEE 754-2019 minimum/maximum on bits: NaN operand wins (a's if both), -0 < +0. */
static uint64_t ref_fminmax(glucx_dtype_t dt, int is_max, uint64_t a, uint64_t b)
{
    const double x = fvalue(dt, a), y = fvalue(dt, b);
    if (isnan(x))
        return a;
    if (isnan(y))
        return b;
    if (x < y)
        return is_max ? b : a;
    if (y < x)
        return is_max ? a : b;
    if (!signbit(x) == !signbit(y))
        return a; /* same bits */
    /* +0 and -0 */
    return (is_max ? !signbit(x) : !!signbit(x)) ? a : b;
}

static uint64_t ref_float(glucx_dtype_t dt, glucx_op_t op, uint64_t a, uint64_t b)
{
    const wide_t x = (wide_t)fvalue(dt, a), y = (wide_t)fvalue(dt, b);
    switch (op) {
    case GLUCX_OP_SUM:
    case GLUCX_OP_AVG:
        return fround(dt, x + y);
    case GLUCX_OP_PROD:
        return fround(dt, x * y);
    case GLUCX_OP_MIN:
        return ref_fminmax(dt, 0, a, b);
    default:
        return ref_fminmax(dt, 1, a, b);
    }
}

static uint64_t ref_bool(glucx_op_t op, uint64_t a, uint64_t b)
{
    const int x = a != 0, y = b != 0;
    switch (op) {
    case GLUCX_OP_SUM:
    case GLUCX_OP_MAX:
    case GLUCX_OP_BOR:
        return x || y;
    case GLUCX_OP_BXOR:
        return x != y;
    default:
        return x && y;
    }
}

/* Signed value of integer-dtype bits. */
static int64_t sval(glucx_dtype_t dt, uint64_t v)
{
    switch (dt) {
    case GLUCX_DTYPE_I8:
        return (int8_t)(uint8_t)v;
    case GLUCX_DTYPE_I32:
        return (int32_t)(uint32_t)v;
    default:
        return (int64_t)v;
    }
}

static uint64_t ref_int(glucx_dtype_t dt, glucx_op_t op, uint64_t a, uint64_t b)
{
    const int is_signed = dt == GLUCX_DTYPE_I8 || dt == GLUCX_DTYPE_I32 || dt == GLUCX_DTYPE_I64;
    const size_t bytes = glucx_dtype_size(dt);
    const uint64_t mask = bytes == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * bytes)) - 1;
    uint64_t r;
    switch (op) {
    case GLUCX_OP_SUM:
        r = is_signed ? (uint64_t)(__int128)((__int128)sval(dt, a) + sval(dt, b))
                      : (uint64_t)((unsigned __int128)a + b);
        break;
    case GLUCX_OP_PROD:
        r = is_signed ? (uint64_t)(unsigned __int128)((__int128)sval(dt, a) * sval(dt, b))
                      : (uint64_t)((unsigned __int128)a * b);
        break;
    case GLUCX_OP_MIN:
        r = is_signed ? (sval(dt, a) < sval(dt, b) ? a : b) : (a < b ? a : b);
        break;
    case GLUCX_OP_MAX:
        r = is_signed ? (sval(dt, a) > sval(dt, b) ? a : b) : (a > b ? a : b);
        break;
    case GLUCX_OP_BAND:
        r = a & b;
        break;
    case GLUCX_OP_BOR:
        r = a | b;
        break;
    default:
        r = a ^ b;
        break;
    }
    return r & mask;
}

static uint64_t ref_combine(glucx_dtype_t dt, glucx_op_t op, uint64_t a, uint64_t b)
{
    if (dt == GLUCX_DTYPE_BOOL)
        return ref_bool(op, a, b);
    if (dtype_is_float(dt))
        return ref_float(dt, op, a, b);
    return ref_int(dt, op, a, b);
}

/* got vs want for one element: bit-exact, except that any NaN matches a NaN where the op's NaN
 * payload is unspecified (SUM/PROD). */
static int elem_ok(glucx_dtype_t dt, glucx_op_t op, uint64_t got, uint64_t want)
{
    if (dtype_is_float(dt) && op != GLUCX_OP_MIN && op != GLUCX_OP_MAX && fis_nan(dt, want))
        return fis_nan(dt, got);
    return got == want;
}

/* ---- random inputs ------------------------------------------------------------------------- */

/* Float bits with exp_bits/man_bits: mostly moderate values (so sums interact), some raw bit
 * patterns, and special values (zeros, subnormals, max, inf, quiet and signalling NaN). */
static uint64_t gen_float(uint64_t *rng, int exp_bits, int man_bits)
{
    const uint64_t r = glucx_test_rand(rng);
    const uint64_t man_mask = (UINT64_C(1) << man_bits) - 1;
    const uint64_t emax = (UINT64_C(1) << exp_bits) - 1, bias = emax >> 1;
    const uint64_t sign = (r >> 8) & 1;
    uint64_t man = glucx_test_rand(rng) & man_mask;
    uint64_t exp;
    const unsigned kind = (unsigned)(r % 20);
    if (kind < 14) {
        exp = bias - 6 + (r >> 16) % 13;
    } else if (kind == 14) {
        const int total = 1 + exp_bits + man_bits;
        return glucx_test_rand(rng) & (total == 64 ? UINT64_MAX : (UINT64_C(1) << total) - 1);
    } else {
        switch ((r >> 20) % 9) {
        case 0:
            exp = 0, man = 0; /* zero */
            break;
        case 1:
            exp = 0, man = 1; /* smallest subnormal */
            break;
        case 2:
            exp = 0; /* subnormal */
            break;
        case 3:
            exp = emax - 1, man = man_mask; /* max finite */
            break;
        case 4:
            exp = emax, man = 0; /* inf */
            break;
        case 5:
            exp = emax, man |= UINT64_C(1) << (man_bits - 1); /* quiet NaN */
            break;
        case 6:
            exp = emax, man = (man >> 1) | 1; /* signalling NaN */
            break;
        case 7:
            exp = 1, man = 0; /* smallest normal */
            break;
        default:
            exp = emax - 1 - (r >> 32) % 3; /* large: overflow in SUM/PROD */
            break;
        }
    }
    return (sign << (exp_bits + man_bits)) | (exp << man_bits) | man;
}

static uint64_t gen_elem(glucx_dtype_t dt, uint64_t *rng)
{
    const uint64_t r = glucx_test_rand(rng);
    switch (dt) {
    case GLUCX_DTYPE_BOOL:
        /* mostly 0/1, some other nonzero bytes (documented: treated as true) */
        return r % 5 == 0 ? 2 + (r >> 8) % 254 : r >> 63;
    case GLUCX_DTYPE_F16:
        return gen_float(rng, 5, 10);
    case GLUCX_DTYPE_BF16:
        return gen_float(rng, 8, 7);
    case GLUCX_DTYPE_F32:
        return gen_float(rng, 8, 23);
    case GLUCX_DTYPE_F64:
        return gen_float(rng, 11, 52);
    default: {
        /* raw bits, with extremes (0, -1/max, min, 1) to exercise wraparound */
        const size_t bytes = glucx_dtype_size(dt);
        const uint64_t mask = bytes == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * bytes)) - 1;
        const uint64_t top = UINT64_C(1) << (8 * bytes - 1);
        if (r % 8 == 0) {
            switch ((r >> 8) % 5) {
            case 0:
                return 0;
            case 1:
                return mask;
            case 2:
                return top;
            case 3:
                return top - 1;
            default:
                return 1;
            }
        }
        return glucx_test_rand(rng) & mask;
    }
    }
}

/* Fill a (and b) with n elements; sometimes b[i] = a[i] or -a[i] (equal values, signed zeros,
 * exact cancellation). */
static void gen_pair(glucx_dtype_t dt, uint64_t *rng, uint64_t *a, uint64_t *b, size_t n)
{
    const size_t bytes = glucx_dtype_size(dt);
    const uint64_t sign = UINT64_C(1) << (8 * bytes - 1);
    for (size_t i = 0; i < n; i++) {
        a[i] = gen_elem(dt, rng);
        b[i] = gen_elem(dt, rng);
        const uint64_t r = glucx_test_rand(rng) % 16;
        if (r == 0)
            b[i] = a[i];
        else if (r == 1 && dtype_is_float(dt))
            b[i] = a[i] ^ sign;
    }
}

/* ---- kernel tests -------------------------------------------------------------------------- */

static const size_t counts[] = {0, 1, 7, 33, 1000, 4099};
#define MAX_COUNT 4099
#define GUARD 64 /* bytes of canary before and after every buffer */
#define CANARY 0xa5
#define BUF_BYTES ((2 * GUARD + MAX_COUNT * 8 + 64 + 63) / 64 * 64)

enum alias { SEPARATE, DST_IS_A, DST_IS_B };

typedef struct {
    size_t a, b, dst;
} offsets_t;

/* Byte offsets of a, b, dst inside their buffers: aligned, all off by one, all different. */
static const offsets_t offsets[] = {{0, 0, 0}, {1, 1, 1}, {3, 5, 7}};

static uint8_t *new_buffer(void)
{
    uint8_t *p = aligned_alloc(64, BUF_BYTES);
    assert_non_null(p);
    memset(p, CANARY, BUF_BYTES);
    return p;
}

static void check_guards(const uint8_t *buf, size_t off, size_t bytes, const char *what,
                         glucx_dtype_t dt, glucx_op_t op, size_t count)
{
    for (size_t i = 0; i < GUARD + off; i++)
        if (buf[i] != CANARY)
            fail_msg("%s/%s count=%zu: byte %zu before %s overwritten", glucx_dtype_name(dt),
                     glucx_op_name(op), count, GUARD + off - i, what);
    for (size_t i = GUARD + off + bytes; i < BUF_BYTES; i++)
        if (buf[i] != CANARY)
            fail_msg("%s/%s count=%zu: byte %zu after %s overwritten", glucx_dtype_name(dt),
                     glucx_op_name(op), count, i - (GUARD + off + bytes), what);
}

static const char *alias_name(enum alias m)
{
    return m == SEPARATE ? "separate" : m == DST_IS_A ? "dst==a" : "dst==b";
}

/* One kernel call on random data in one layout, checked element by element. */
static void run_case(glucx_dtype_t dt, glucx_op_t op, size_t count, enum alias mode,
                     const offsets_t *off, uint64_t seed)
{
    const glucx_reduce_fn_t fn = glucx_kernel_reduce_fn(dt, op);
    assert_non_null(fn);
    const size_t es = glucx_dtype_size(dt), bytes = count * es;
    static uint64_t va[MAX_COUNT], vb[MAX_COUNT];
    uint64_t rng = seed;
    gen_pair(dt, &rng, va, vb, count);

    uint8_t *ba = new_buffer(), *bb = new_buffer(), *bd = new_buffer();
    uint8_t *pa = ba + GUARD + off->a, *pb = bb + GUARD + off->b, *pd = bd + GUARD + off->dst;
    for (size_t i = 0; i < count; i++) {
        store_elem(dt, pa + i * es, va[i]);
        store_elem(dt, pb + i * es, vb[i]);
    }
    void *dst = mode == DST_IS_A ? (void *)pa : mode == DST_IS_B ? (void *)pb : (void *)pd;
    fn(dst, pa, pb, count);

    for (size_t i = 0; i < count; i++) {
        const uint64_t got = load_elem(dt, (uint8_t *)dst + i * es);
        const uint64_t want = ref_combine(dt, op, va[i], vb[i]);
        if (!elem_ok(dt, op, got, want))
            fail_msg("%s/%s count=%zu %s offsets=%zu,%zu,%zu: [%zu] a=0x%llx b=0x%llx -> "
                     "got 0x%llx, want 0x%llx",
                     glucx_dtype_name(dt), glucx_op_name(op), count, alias_name(mode), off->a,
                     off->b, off->dst, i, (unsigned long long)va[i], (unsigned long long)vb[i],
                     (unsigned long long)got, (unsigned long long)want);
        /* inputs that are not dst are left alone */
        if (mode != DST_IS_A && load_elem(dt, pa + i * es) != va[i])
            fail_msg("%s/%s: input a[%zu] modified", glucx_dtype_name(dt), glucx_op_name(op), i);
        if (mode != DST_IS_B && load_elem(dt, pb + i * es) != vb[i])
            fail_msg("%s/%s: input b[%zu] modified", glucx_dtype_name(dt), glucx_op_name(op), i);
    }
    check_guards(ba, off->a, bytes, "a", dt, op, count);
    check_guards(bb, off->b, bytes, "b", dt, op, count);
    check_guards(bd, off->dst, mode == SEPARATE ? bytes : 0, "dst", dt, op, count);
    free(ba);
    free(bb);
    free(bd);
}

/* Every supported op of one dtype (the prestate) x count x aliasing x alignment. */
static void test_kernels_random(void **state)
{
    const glucx_dtype_t dt = *(const glucx_dtype_t *)*state;
    int ops = 0;
    for (int op = 0; op < GLUCX_OP_COUNT; op++) {
        if (!glucx_op_supported((glucx_op_t)op, dt))
            continue;
        ops++;
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (int mode = SEPARATE; mode <= DST_IS_B; mode++)
                for (size_t o = 0; o < sizeof(offsets) / sizeof(offsets[0]); o++)
                    run_case(dt, (glucx_op_t)op, counts[c], (enum alias)mode, &offsets[o],
                             1000 * (uint64_t)dt + 100 * (uint64_t)op + 10 * c + o);
    }
    assert_true(ops >= 4);
}

static void test_table_matches_op_supported(void **state)
{
    (void)state;
    for (int dt = -1; dt <= GLUCX_DTYPE_COUNT + 1; dt++) {
        for (int op = -1; op <= GLUCX_OP_COUNT + 1; op++) {
            const glucx_reduce_fn_t fn = glucx_kernel_reduce_fn((glucx_dtype_t)dt, (glucx_op_t)op);
            const int supported = glucx_op_supported((glucx_op_t)op, (glucx_dtype_t)dt);
            if ((fn != NULL) != (supported != 0))
                fail_msg("dtype %d op %d: kernel %s but glucx_op_supported() = %d", dt, op,
                         fn ? "present" : "missing", supported);
        }
    }
    /* AVG reduces with the SUM kernel. */
    static const glucx_dtype_t floats[] = {GLUCX_DTYPE_F16, GLUCX_DTYPE_BF16, GLUCX_DTYPE_F32,
                                           GLUCX_DTYPE_F64};
    for (size_t i = 0; i < 4; i++)
        assert_ptr_equal(glucx_kernel_reduce_fn(floats[i], GLUCX_OP_AVG),
                         glucx_kernel_reduce_fn(floats[i], GLUCX_OP_SUM));
}

static void test_unsupported_is_null(void **state)
{
    (void)state;
    assert_null(glucx_kernel_reduce_fn(GLUCX_DTYPE_F32, GLUCX_OP_BAND));
    assert_null(glucx_kernel_reduce_fn(GLUCX_DTYPE_F64, GLUCX_OP_BOR));
    assert_null(glucx_kernel_reduce_fn(GLUCX_DTYPE_F16, GLUCX_OP_BXOR));
    assert_null(glucx_kernel_reduce_fn(GLUCX_DTYPE_BF16, GLUCX_OP_BAND));
    assert_null(glucx_kernel_reduce_fn(GLUCX_DTYPE_I32, GLUCX_OP_AVG));
    assert_null(glucx_kernel_reduce_fn(GLUCX_DTYPE_BOOL, GLUCX_OP_AVG));
    assert_null(glucx_kernel_reduce_fn(GLUCX_DTYPE_COUNT, GLUCX_OP_SUM));
    assert_null(glucx_kernel_reduce_fn(GLUCX_DTYPE_F32, GLUCX_OP_COUNT));
    assert_null(glucx_kernel_reduce_fn((glucx_dtype_t)-1, GLUCX_OP_SUM));
}

/* Run one kernel on two short arrays given as element bits. */
static void run_bits(glucx_dtype_t dt, glucx_op_t op, const uint64_t *a, const uint64_t *b,
                     uint64_t *out, size_t n)
{
    uint8_t pa[64], pb[64], pd[64];
    const size_t es = glucx_dtype_size(dt);
    assert_true(n * es <= sizeof(pa));
    for (size_t i = 0; i < n; i++) {
        store_elem(dt, pa + i * es, a[i]);
        store_elem(dt, pb + i * es, b[i]);
    }
    glucx_kernel_reduce_fn(dt, op)(pd, pa, pb, n);
    for (size_t i = 0; i < n; i++)
        out[i] = load_elem(dt, pd + i * es);
}

static void test_bool_nonzero_is_true(void **state)
{
    (void)state;
    const uint64_t a[] = {0, 0, 1, 1, 2, 0x80, 0xff, 0, 7};
    const uint64_t b[] = {0, 1, 0, 1, 1, 0x80, 0xfe, 0x40, 0};
    const struct {
        glucx_op_t op;
        uint64_t want[9];
    } cases[] = {
        {GLUCX_OP_SUM, {0, 1, 1, 1, 1, 1, 1, 1, 1}},  {GLUCX_OP_BOR, {0, 1, 1, 1, 1, 1, 1, 1, 1}},
        {GLUCX_OP_MAX, {0, 1, 1, 1, 1, 1, 1, 1, 1}},  {GLUCX_OP_PROD, {0, 0, 0, 1, 1, 1, 1, 0, 0}},
        {GLUCX_OP_BAND, {0, 0, 0, 1, 1, 1, 1, 0, 0}}, {GLUCX_OP_MIN, {0, 0, 0, 1, 1, 1, 1, 0, 0}},
        {GLUCX_OP_BXOR, {0, 1, 1, 0, 0, 0, 0, 1, 1}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint64_t out[9];
        run_bits(GLUCX_DTYPE_BOOL, cases[c].op, a, b, out, 9);
        for (size_t i = 0; i < 9; i++)
            if (out[i] != cases[c].want[i])
                fail_msg("bool %s(0x%llx, 0x%llx) = %llu, want %llu", glucx_op_name(cases[c].op),
                         (unsigned long long)a[i], (unsigned long long)b[i],
                         (unsigned long long)out[i], (unsigned long long)cases[c].want[i]);
    }
}

static void expect1(glucx_dtype_t dt, glucx_op_t op, uint64_t a, uint64_t b, uint64_t want)
{
    uint64_t got;
    run_bits(dt, op, &a, &b, &got, 1);
    if (got != want)
        fail_msg("%s %s(0x%llx, 0x%llx) = 0x%llx, want 0x%llx", glucx_dtype_name(dt),
                 glucx_op_name(op), (unsigned long long)a, (unsigned long long)b,
                 (unsigned long long)got, (unsigned long long)want);
}

static void test_int_wraparound(void **state)
{
    (void)state;
    expect1(GLUCX_DTYPE_I32, GLUCX_OP_SUM, INT32_MAX, 1, (uint32_t)INT32_MIN);
    expect1(GLUCX_DTYPE_I32, GLUCX_OP_SUM, (uint32_t)INT32_MIN, (uint32_t)-1, INT32_MAX);
    expect1(GLUCX_DTYPE_I32, GLUCX_OP_PROD, 0x10000, 0x10000, 0);
    expect1(GLUCX_DTYPE_I32, GLUCX_OP_PROD, (uint32_t)INT32_MIN, (uint32_t)-1, (uint32_t)INT32_MIN);
    expect1(GLUCX_DTYPE_I64, GLUCX_OP_SUM, INT64_MAX, 1, (uint64_t)INT64_MIN);
    expect1(GLUCX_DTYPE_I64, GLUCX_OP_PROD, (uint64_t)INT64_MIN, UINT64_MAX, (uint64_t)INT64_MIN);
    expect1(GLUCX_DTYPE_I64, GLUCX_OP_PROD, UINT64_C(0x100000001), UINT64_C(0x100000001),
            UINT64_C(0x200000001));
    expect1(GLUCX_DTYPE_I64, GLUCX_OP_PROD, UINT64_C(0xffffffffffffffff), 3,
            UINT64_C(0xfffffffffffffffd));
    expect1(GLUCX_DTYPE_U64, GLUCX_OP_SUM, UINT64_MAX, 2, 1);
    expect1(GLUCX_DTYPE_U64, GLUCX_OP_PROD, UINT64_C(0xdeadbeefcafebabe), UINT64_C(0x123456789),
            UINT64_C(0xdeadbeefcafebabe) * UINT64_C(0x123456789));
    expect1(GLUCX_DTYPE_U8, GLUCX_OP_SUM, 200, 100, 44);
    expect1(GLUCX_DTYPE_U8, GLUCX_OP_PROD, 16, 17, 16);
    expect1(GLUCX_DTYPE_I8, GLUCX_OP_SUM, 0x7f, 1, 0x80);
    expect1(GLUCX_DTYPE_I8, GLUCX_OP_PROD, 0x80, 0xff, 0x80); /* -128 * -1 = -128 */
    /* MIN/MAX use the dtype's signedness, including across the 64-bit sign boundary. */
    expect1(GLUCX_DTYPE_I8, GLUCX_OP_MIN, 0x80, 0x7f, 0x80);
    expect1(GLUCX_DTYPE_U8, GLUCX_OP_MIN, 0x80, 0x7f, 0x7f);
    expect1(GLUCX_DTYPE_I32, GLUCX_OP_MAX, (uint32_t)-1, 0, 0);
    expect1(GLUCX_DTYPE_I64, GLUCX_OP_MIN, (uint64_t)INT64_MIN, INT64_MAX, (uint64_t)INT64_MIN);
    expect1(GLUCX_DTYPE_I64, GLUCX_OP_MAX, (uint64_t)INT64_MIN, INT64_MAX, INT64_MAX);
    expect1(GLUCX_DTYPE_I64, GLUCX_OP_MIN, (uint64_t)-1, 1, (uint64_t)-1);
    expect1(GLUCX_DTYPE_U64, GLUCX_OP_MIN, UINT64_MAX, 1, 1);
    expect1(GLUCX_DTYPE_U64, GLUCX_OP_MAX, UINT64_C(0x8000000000000000), INT64_MAX,
            UINT64_C(0x8000000000000000));
}

static uint64_t f32b(float f)
{
    return bits_of_float(f);
}

static uint64_t f64b(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

static void test_float_special_cases(void **state)
{
    (void)state;
    const uint64_t qnan = 0x7fc00001, snan = 0x7f800001;
    /* MIN/MAX propagate NaN, whichever side, and return the NaN operand. */
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_MIN, qnan, f32b(1), qnan);
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_MIN, f32b(1), qnan, qnan);
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_MAX, snan, f32b(-INFINITY), snan);
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_MAX, f32b(INFINITY), snan, snan);
    /* Signed zeros: -0 < +0 in either order. */
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_MIN, f32b(0.0f), f32b(-0.0f), f32b(-0.0f));
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_MIN, f32b(-0.0f), f32b(0.0f), f32b(-0.0f));
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_MAX, f32b(0.0f), f32b(-0.0f), f32b(0.0f));
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_MAX, f32b(-0.0f), f32b(0.0f), f32b(0.0f));
    expect1(GLUCX_DTYPE_F64, GLUCX_OP_MIN, f64b(0.0), f64b(-0.0), f64b(-0.0));
    expect1(GLUCX_DTYPE_F64, GLUCX_OP_MAX, f64b(-0.0), f64b(0.0), f64b(0.0));
    expect1(GLUCX_DTYPE_F64, GLUCX_OP_MIN, f64b(1.0), f64b(NAN), f64b(NAN));
    expect1(GLUCX_DTYPE_F64, GLUCX_OP_MAX, f64b(NAN), f64b(1.0), f64b(NAN));
    expect1(GLUCX_DTYPE_F64, GLUCX_OP_MIN, f64b(-INFINITY), f64b(-DBL_MAX), f64b(-INFINITY));
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_MIN, 0x0000, 0x8000, 0x8000);
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_MAX, 0x8000, 0x0000, 0x0000);
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_MAX, 0x3c00, 0x7e01, 0x7e01);
    expect1(GLUCX_DTYPE_BF16, GLUCX_OP_MIN, 0x7fc1, 0x3f80, 0x7fc1);
    expect1(GLUCX_DTYPE_BF16, GLUCX_OP_MIN, 0x8000, 0x0000, 0x8000);
    /* SUM/PROD: signed zeros, inf, overflow. */
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_SUM, f32b(-0.0f), f32b(-0.0f), f32b(-0.0f));
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_SUM, f32b(-0.0f), f32b(0.0f), f32b(0.0f));
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_SUM, f32b(FLT_MAX), f32b(FLT_MAX), f32b(INFINITY));
    expect1(GLUCX_DTYPE_F32, GLUCX_OP_PROD, f32b(-0.0f), f32b(5.0f), f32b(-0.0f));
    expect1(GLUCX_DTYPE_F64, GLUCX_OP_SUM, f64b(1.0), f64b(-1.0), f64b(0.0));
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_SUM, 0x7bff, 0x4c00, 0x7c00); /* 65504 + 16: tie -> inf */
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_SUM, 0x7bff, 0x4800, 0x7bff); /* 65504 + 8 -> 65504 */
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_SUM, 0x8000, 0x8000, 0x8000);
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_SUM, 0x3c00, 0xbc00, 0x0000);
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_SUM, 0x3c00, 0x1000, 0x3c00);  /* 1 + 2^-11: tie -> even */
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_SUM, 0x3c01, 0x1000, 0x3c02);  /* tie -> even (up) */
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_PROD, 0x0001, 0x3800, 0x0000); /* 2^-25: tie -> 0 */
    expect1(GLUCX_DTYPE_F16, GLUCX_OP_PROD, 0x0003, 0x3800, 0x0002); /* 1.5 ulp -> 2 */
    expect1(GLUCX_DTYPE_BF16, GLUCX_OP_SUM, 0x7f7f, 0x7f7f, 0x7f80);
    expect1(GLUCX_DTYPE_BF16, GLUCX_OP_SUM, 0x3f80, 0x3b80, 0x3f80);  /* 1 + 2^-8: tie -> even */
    expect1(GLUCX_DTYPE_BF16, GLUCX_OP_PROD, 0x0001, 0x3f00, 0x0000); /* subnormal tie -> 0 */
    uint64_t got;
    const uint64_t a = 0x7c00, b = 0xfc00;
    run_bits(GLUCX_DTYPE_F16, GLUCX_OP_SUM, &a, &b, &got, 1);
    assert_true(f16_is_nan((uint16_t)got));
}

/*
 * Every f16/bf16 value through the SUM and PROD kernels against a set of partners (x + -0 and
 * x * 1 give x back, the others round): covers the kernels' own (vectorized) conversions
 * exhaustively in both directions for these cases.
 */
static void half_kernel_all(glucx_dtype_t dt, const uint16_t *partners, size_t np)
{
    enum { N = 65536 };
    uint16_t *a = malloc(N * 2), *b = malloc(N * 2), *d = malloc(N * 2);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(d);
    for (uint32_t i = 0; i < N; i++)
        a[i] = (uint16_t)i;
    static const glucx_op_t ops[] = {GLUCX_OP_SUM, GLUCX_OP_PROD, GLUCX_OP_MIN, GLUCX_OP_MAX};
    for (size_t p = 0; p < np; p++) {
        for (uint32_t i = 0; i < N; i++)
            b[i] = partners[p];
        for (size_t o = 0; o < 4; o++) {
            glucx_kernel_reduce_fn(dt, ops[o])(d, a, b, N);
            for (uint32_t i = 0; i < N; i++) {
                const uint64_t want = ref_combine(dt, ops[o], a[i], b[i]);
                if (!elem_ok(dt, ops[o], d[i], want))
                    fail_msg("%s %s(0x%04x, 0x%04x) = 0x%04x, want 0x%04llx", glucx_dtype_name(dt),
                             glucx_op_name(ops[o]), a[i], b[i], d[i], (unsigned long long)want);
            }
        }
    }
    free(a);
    free(b);
    free(d);
}

static void test_f16_kernels_all_values(void **state)
{
    (void)state;
    /* -0, 1, 0.5, min subnormal, 2^-10, -max, 3 (odd significand), 1 + 2^-10 */
    static const uint16_t partners[] = {0x8000, 0x3c00, 0x3800, 0x0001,
                                        0x1400, 0xfbff, 0x4200, 0x3c01};
    half_kernel_all(GLUCX_DTYPE_F16, partners, sizeof(partners) / sizeof(partners[0]));
}

static void test_bf16_kernels_all_values(void **state)
{
    (void)state;
    static const uint16_t partners[] = {0x8000, 0x3f80, 0x3f00, 0x0001,
                                        0x0080, 0xff7f, 0x4040, 0x3f81};
    half_kernel_all(GLUCX_DTYPE_BF16, partners, sizeof(partners) / sizeof(partners[0]));
}

/* ---- AVG ----------------------------------------------------------------------------------- */

/* Correctly rounded x / n in dtype dt. */
static uint64_t ref_avg(glucx_dtype_t dt, uint64_t bits, int n)
{
    const double x = fvalue(dt, bits);
    switch (dt) {
    case GLUCX_DTYPE_F16:
        /* x / n in double lands on the same side of every f16 rounding boundary as the exact
         * quotient (it is at least 2^-43 away from one, relatively, unless on it). */
        return ref_f16_encode(ref_round_f16(x / n));
    case GLUCX_DTYPE_BF16:
        return ref_bf16_encode(ref_round_bf16(x / n));
    default:
        return fround(dt, (wide_t)x / n);
    }
}

static void test_avg_finalize(void **state)
{
    (void)state;
    static const glucx_dtype_t dts[] = {GLUCX_DTYPE_F16, GLUCX_DTYPE_BF16, GLUCX_DTYPE_F32,
                                        GLUCX_DTYPE_F64};
    /* f32 is exact for nranks < 2^28 (see reduce.c); the others for any int. */
    static const int ns[] = {2, 3, 7, 10, 1000, 4099, 65537, 1000003, INT_MAX};
    enum { N = 4099 };
    static uint64_t v[N], w[N];
    uint8_t *buf = malloc(N * 8 + 8);
    assert_non_null(buf);
    for (size_t d = 0; d < 4; d++) {
        const glucx_dtype_t dt = dts[d];
        const size_t es = glucx_dtype_size(dt);
        for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
            const int n = ns[k];
            if (dt == GLUCX_DTYPE_F32 && n > (1 << 28))
                continue;
            uint64_t rng = 77 + d * 100 + k;
            gen_pair(dt, &rng, v, w, N);
            uint8_t *p = buf + 1 + (k % 4); /* unaligned */
            for (size_t i = 0; i < N; i++)
                store_elem(dt, p + i * es, v[i]);
            glucx_kernel_avg_finalize(dt, p, N, n);
            for (size_t i = 0; i < N; i++) {
                const uint64_t got = load_elem(dt, p + i * es);
                const uint64_t want = ref_avg(dt, v[i], n);
                if (fis_nan(dt, want) ? !fis_nan(dt, got) : got != want)
                    fail_msg("avg %s n=%d: 0x%llx -> 0x%llx, want 0x%llx", glucx_dtype_name(dt), n,
                             (unsigned long long)v[i], (unsigned long long)got,
                             (unsigned long long)want);
            }
        }
    }
    free(buf);
}

/* Every f16/bf16 value divided by several nranks, including large ones where rounding the
 * quotient to f32 first and then to 16 bits would go wrong. */
static void test_avg_finalize_half_all_values(void **state)
{
    (void)state;
    static const glucx_dtype_t dts[] = {GLUCX_DTYPE_F16, GLUCX_DTYPE_BF16};
    static const int ns[] = {3, 7, 1000, 65537, 1000003, 33554433, 1073741827, INT_MAX};
    enum { N = 65536 };
    uint16_t *h = malloc(N * sizeof(*h));
    assert_non_null(h);
    for (size_t d = 0; d < 2; d++) {
        for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
            for (uint32_t i = 0; i < N; i++)
                h[i] = (uint16_t)i;
            glucx_kernel_avg_finalize(dts[d], h, N, ns[k]);
            for (uint32_t i = 0; i < N; i++) {
                const uint64_t want = ref_avg(dts[d], i, ns[k]);
                if (fis_nan(dts[d], want) ? !fis_nan(dts[d], h[i]) : h[i] != want)
                    fail_msg("avg %s n=%d: 0x%04x -> 0x%04x, want 0x%04llx",
                             glucx_dtype_name(dts[d]), ns[k], i, h[i], (unsigned long long)want);
            }
        }
    }
    free(h);
}

static void test_avg_finalize_noop(void **state)
{
    (void)state;
    uint8_t buf[256], copy[256];
    glucx_test_fill_bytes(buf, sizeof(buf), 5);
    memcpy(copy, buf, sizeof(buf));
    /* nranks <= 1 and non-float dtypes leave the buffer alone */
    glucx_kernel_avg_finalize(GLUCX_DTYPE_F32, buf, 64, 1);
    glucx_kernel_avg_finalize(GLUCX_DTYPE_F32, buf, 64, 0);
    glucx_kernel_avg_finalize(GLUCX_DTYPE_F16, buf, 128, -4);
    glucx_kernel_avg_finalize(GLUCX_DTYPE_I32, buf, 64, 4);
    glucx_kernel_avg_finalize(GLUCX_DTYPE_U8, buf, 256, 4);
    glucx_kernel_avg_finalize(GLUCX_DTYPE_COUNT, buf, 64, 4);
    glucx_kernel_avg_finalize(GLUCX_DTYPE_F64, buf, 0, 4);
    assert_memory_equal(buf, copy, sizeof(buf));
    /* exact values, f16 rounding once: 3 / 2 = 1.5; 1 / 3 in f16 = 0x3555 */
    uint16_t h[2] = {0x4200, 0x3c00};
    glucx_kernel_avg_finalize(GLUCX_DTYPE_F16, h, 1, 2);
    assert_int_equal(h[0], 0x3e00);
    assert_int_equal(h[1], 0x3c00);
    h[0] = 0x3c00;
    glucx_kernel_avg_finalize(GLUCX_DTYPE_F16, h, 1, 3);
    assert_int_equal(h[0], 0x3555);
}

#define DTYPE_TEST(name) cmocka_unit_test_prestate(test_kernels_random, (void *)&dtype_##name)

static glucx_dtype_t dtype_bool = GLUCX_DTYPE_BOOL, dtype_i8 = GLUCX_DTYPE_I8,
                     dtype_u8 = GLUCX_DTYPE_U8, dtype_i32 = GLUCX_DTYPE_I32,
                     dtype_i64 = GLUCX_DTYPE_I64, dtype_u64 = GLUCX_DTYPE_U64,
                     dtype_f16 = GLUCX_DTYPE_F16, dtype_bf16 = GLUCX_DTYPE_BF16,
                     dtype_f32 = GLUCX_DTYPE_F32, dtype_f64 = GLUCX_DTYPE_F64;

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_to_f32_all),
        cmocka_unit_test(test_f16_round_trip_all),
        cmocka_unit_test(test_f32_to_f16_ties),
        cmocka_unit_test(test_f32_to_f16_classes),
        cmocka_unit_test(test_f32_to_f16_specials),
        cmocka_unit_test(test_bf16_to_f32_all),
        cmocka_unit_test(test_f32_to_bf16_classes),
        cmocka_unit_test(test_table_matches_op_supported),
        cmocka_unit_test(test_unsupported_is_null),
        DTYPE_TEST(bool),
        DTYPE_TEST(i8),
        DTYPE_TEST(u8),
        DTYPE_TEST(i32),
        DTYPE_TEST(i64),
        DTYPE_TEST(u64),
        DTYPE_TEST(f16),
        DTYPE_TEST(bf16),
        DTYPE_TEST(f32),
        DTYPE_TEST(f64),
        cmocka_unit_test(test_bool_nonzero_is_true),
        cmocka_unit_test(test_int_wraparound),
        cmocka_unit_test(test_float_special_cases),
        cmocka_unit_test(test_f16_kernels_all_values),
        cmocka_unit_test(test_bf16_kernels_all_values),
        cmocka_unit_test(test_avg_finalize),
        cmocka_unit_test(test_avg_finalize_half_all_values),
        cmocka_unit_test(test_avg_finalize_noop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
