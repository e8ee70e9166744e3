/*
 * Test data whose reductions are exact: every element is an integer k (from a hash of a seed,
 * the contributing rank and the index) scaled by a power of two, with |k| small enough that a
 * sum of up to 8 contributions is exactly representable in the type. Expected results are
 * computed from the integers (int64 arithmetic), never by repeating the floating-point additions
 * the transport performed, so they are independent of the reduction order and compared exactly.
 */
#ifndef GLUCX_TEST_GLOO_VALUES_H
#define GLUCX_TEST_GLOO_VALUES_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/context.h>

#include "harness.h"

namespace glucx_test
{

template <typename T> struct Dtype;
/* int32: |k| < 2^27, so 8 terms stay below 2^30 */
template <> struct Dtype<int32_t> {
    static constexpr const char *kName = "int";
    static constexpr int kBits = 27;
    static constexpr int kExp = 0;
};
/* float: |k| < 2^20 scaled by 2^-4: 8 terms need at most 24 significant bits */
template <> struct Dtype<float> {
    static constexpr const char *kName = "float";
    static constexpr int kBits = 20;
    static constexpr int kExp = 4;
};
/* double: |k| < 2^49 scaled by 2^-20: 8 terms need at most 53 significant bits */
template <> struct Dtype<double> {
    static constexpr const char *kName = "double";
    static constexpr int kBits = 49;
    static constexpr int kExp = 20;
};

inline uint64_t Mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/** The integer behind element i of rank's data for seed, in [-2^bits, 2^bits). */
inline int64_t Gen(int bits, uint64_t seed, int rank, uint64_t i)
{
    uint64_t h = Mix64(Mix64(seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(rank) + 1) + i);
    return static_cast<int64_t>(h & ((uint64_t(1) << (bits + 1)) - 1)) - (int64_t(1) << bits);
}

/** The T represented by integer k (k scaled by 2^-kExp). */
template <typename T> T FromInt(int64_t k)
{
    if constexpr (std::is_integral_v<T>)
        return static_cast<T>(k);
    else
        return static_cast<T>(std::ldexp(static_cast<double>(k), -Dtype<T>::kExp));
}

template <typename T> int64_t GenT(uint64_t seed, int rank, uint64_t i)
{
    return Gen(Dtype<T>::kBits, seed, rank, i);
}

/** Element i of rank's data for seed. */
template <typename T> T Value(uint64_t seed, int rank, uint64_t i)
{
    return FromInt<T>(GenT<T>(seed, rank, i));
}

template <typename T> std::vector<T> Values(uint64_t seed, int rank, size_t n)
{
    std::vector<T> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = Value<T>(seed, rank, i);
    return v;
}

/** A value no test data takes (outside the generated range), to detect unwritten elements. */
template <typename T> T Poison()
{
    return FromInt<T>((int64_t(1) << (Dtype<T>::kBits + 3)) + 1);
}

/** Elementwise sum, the reduction function handed to Gloo. */
template <typename T> void Sum(void *c, const void *a, const void *b, size_t n)
{
    T *cc = static_cast<T *>(c);
    const T *aa = static_cast<const T *>(a);
    const T *bb = static_cast<const T *>(b);
    for (size_t i = 0; i < n; i++)
        cc[i] = aa[i] + bb[i];
}

template <typename T> bool SameBits(T a, T b)
{
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/**
 * Check got[0..n) against expect(i), exactly (bitwise); the message names what, the first
 * mismatches and how many elements differ.
 */
template <typename T, typename F>
void CheckArray(const T *got, size_t n, F expect, const std::string &what)
{
    size_t bad = 0;
    std::string first;
    for (size_t i = 0; i < n; i++) {
        T e = expect(i);
        if (!SameBits(got[i], e)) {
            if (bad < 3)
                first += Str(" [", i, "] got ", +got[i], " expected ", +e, ";");
            bad++;
        }
    }
    RANK_CHECK(bad == 0, what, ": ", bad, " of ", n, " elements differ:", first);
}

// ---- byte patterns (point-to-point messages) ------------------------------------------------

/** What tests write into receive memory before a transfer, to see which bytes it wrote. */
constexpr uint8_t kPoisonByte = 0xa5;

/** Byte j of a message from src to dst (seed distinguishes messages). */
inline uint8_t PatternByte(uint64_t seed, int src, int dst, size_t j)
{
    return static_cast<uint8_t>(
        Mix64(seed * 0x9e3779b97f4a7c15ULL ^ (uint64_t(src) << 48) ^ (uint64_t(dst) << 40) ^ j));
}

inline void FillPattern(uint8_t *p, size_t n, uint64_t seed, int src, int dst)
{
    for (size_t j = 0; j < n; j++)
        p[j] = PatternByte(seed, src, dst, j);
}

/** Check p[0..n) against the pattern of seed from src to dst. */
inline void CheckPattern(const uint8_t *p, size_t n, uint64_t seed, int src, int dst,
                         const std::string &what)
{
    size_t bad = 0, first = 0;
    for (size_t j = 0; j < n; j++)
        if (p[j] != PatternByte(seed, src, dst, j) && bad++ == 0)
            first = j;
    RANK_CHECK(bad == 0, what, ": ", bad, " of ", n, " bytes differ from what rank ", src,
               " sent (first at byte ", first, ")");
}

/** Check that p[0..n) still holds kPoisonByte. */
inline void CheckUntouched(const uint8_t *p, size_t n, const std::string &what)
{
    for (size_t j = 0; j < n; j++)
        RANK_CHECK(p[j] == kPoisonByte, what, ": byte ", j, " was written");
}

/* @p iters allreduces (float sum, 1023 elements, tag @p tag) of values from Values<float>,
 * each checked exactly against the sum of the integers behind them. */
inline void AllreduceLoop(const std::shared_ptr<::gloo::Context> &ctx, uint32_t tag, int iters)
{
    const size_t n = 1023;
    for (int it = 0; it < iters; it++) {
        const uint64_t seed = Mix64(tag * 1000 + it);
        std::vector<float> out = Values<float>(seed, ctx->rank, n);
        ::gloo::AllreduceOptions opts(ctx);
        opts.setOutput(out.data(), n);
        opts.setReduceFunction(Sum<float>);
        opts.setTag(tag);
        ::gloo::allreduce(opts);
        CheckArray(
            out.data(), n,
            [&](size_t i) {
                int64_t s = 0;
                for (int r = 0; r < ctx->size; r++)
                    s += GenT<float>(seed, r, i);
                return FromInt<float>(s);
            },
            Str("allreduce tag ", tag, " iteration ", it));
    }
}

} // namespace glucx_test

#endif
