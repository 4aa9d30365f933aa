// Vector types, unaligned loads/stores and vector cos/sin for the instruction set the including
// translation unit is compiled for. Shared by every per-ISA kernel file (cos kernels, structured
// maps); RFFKERN_ISA_NS names the per-ISA namespace.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__FMA__)
#include <immintrin.h>
#endif

#ifndef RFFKERN_ISA_NS
#error "define RFFKERN_ISA_NS before including simd_vector.hpp"
#endif

namespace rffkern {
namespace RFFKERN_ISA_NS {
namespace simd {

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX2__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

typedef double vdouble __attribute__((vector_size(kVecBytes)));
typedef float vfloat __attribute__((vector_size(kVecBytes)));

// The vector type of T, its lane count and the integer vector of the same lane width (for
// shuffles and sign masks).
template <class T>
struct VecTraits;
template <>
struct VecTraits<float> {
    typedef vfloat V;
    typedef std::int32_t IntLane;
    typedef IntLane IntV __attribute__((vector_size(kVecBytes)));
    static constexpr int L = kVecBytes / 4;
};
template <>
struct VecTraits<double> {
    typedef vdouble V;
    typedef std::int64_t IntLane;
    typedef IntLane IntV __attribute__((vector_size(kVecBytes)));
    static constexpr int L = kVecBytes / 8;
};

template <class V, class T>
inline V loadu(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
}
template <class V, class T>
inline void storeu(T* p, V v) {
    std::memcpy(p, &v, sizeof(V));
}

#if defined(RFFKERN_HAVE_LIBMVEC)
// glibc's libmvec, x86_64 vector function ABI: b = SSE, d = AVX2, e = AVX-512.
extern "C" {
#if defined(__AVX512F__)
vdouble _ZGVeN8v_cos(vdouble);
vdouble _ZGVeN8v_sin(vdouble);
vfloat _ZGVeN16v_cosf(vfloat);
vfloat _ZGVeN16v_sinf(vfloat);
#elif defined(__AVX2__)
vdouble _ZGVdN4v_cos(vdouble);
vdouble _ZGVdN4v_sin(vdouble);
vfloat _ZGVdN8v_cosf(vfloat);
vfloat _ZGVdN8v_sinf(vfloat);
#else
vdouble _ZGVbN2v_cos(vdouble);
vdouble _ZGVbN2v_sin(vdouble);
vfloat _ZGVbN4v_cosf(vfloat);
vfloat _ZGVbN4v_sinf(vfloat);
#endif
}
#if defined(__AVX512F__)
inline vdouble vcos(vdouble x) { return _ZGVeN8v_cos(x); }
inline vdouble vsin(vdouble x) { return _ZGVeN8v_sin(x); }
inline vfloat vcos(vfloat x) { return _ZGVeN16v_cosf(x); }
inline vfloat vsin(vfloat x) { return _ZGVeN16v_sinf(x); }
#elif defined(__AVX2__)
inline vdouble vcos(vdouble x) { return _ZGVdN4v_cos(x); }
inline vdouble vsin(vdouble x) { return _ZGVdN4v_sin(x); }
inline vfloat vcos(vfloat x) { return _ZGVdN8v_cosf(x); }
inline vfloat vsin(vfloat x) { return _ZGVdN8v_sinf(x); }
#else
inline vdouble vcos(vdouble x) { return _ZGVbN2v_cos(x); }
inline vdouble vsin(vdouble x) { return _ZGVbN2v_sin(x); }
inline vfloat vcos(vfloat x) { return _ZGVbN4v_cosf(x); }
inline vfloat vsin(vfloat x) { return _ZGVbN4v_sinf(x); }
#endif
#else
// Without libmvec (non-glibc): scalar std::cos / std::sin per lane.
template <class V>
inline V vcos(V x) {
    for (int l = 0; l < int(sizeof(V) / sizeof(x[0])); ++l) x[l] = std::cos(x[l]);
    return x;
}
template <class V>
inline V vsin(V x) {
    for (int l = 0; l < int(sizeof(V) / sizeof(x[0])); ++l) x[l] = std::sin(x[l]);
    return x;
}
#endif


// ---- sin and cos together -----------------------------------------------------------------------
// With FMA (the AVX2 and AVX-512 builds): one Cody-Waite reduction by pi/2 (pi/2 split in three
// parts, the first product exact under FMA) and the Taylor polynomials of sin and cos on
// [-pi/4, pi/4], truncated below half an ulp, then the quadrant's swap and signs: within 1.5 ulp
// for float and double, about twice as fast as the two libmvec calls it replaces
// (docs/design_notes.rst). A vector with any lane outside
// [-limit, limit] (or NaN/inf) takes libmvec's sin and cos instead.
template <class T>
struct SinCosConstants;
template <>
struct SinCosConstants<float> {
    typedef std::int32_t I;
    static constexpr float two_over_pi = 0.636619772367581343f;
    static constexpr float c1 = 1.57079637050628662109375f;  // pi/2 = c1 + c2 + c3 + O(1e-23)
    static constexpr float c2 = -4.371138828673793e-08f;
    static constexpr float c3 = -1.7151245100058819e-15f;
    static constexpr float limit = 131072.0f;
    static constexpr float shifter = 12582912.0f;  // 1.5 * 2^23: x*2/pi + shifter = round(x*2/pi)
};
template <>
struct SinCosConstants<double> {
    typedef std::int64_t I;
    static constexpr double two_over_pi = 0.63661977236758134308;
    static constexpr double c1 = 1.5707963267948966;  // pi/2 = c1 + c2 + c3 + O(1e-49)
    static constexpr double c2 = 6.123233995736766e-17;
    static constexpr double c3 = -1.4973849048591698e-33;
    static constexpr double limit = 1073741824.0;
    static constexpr double shifter = 6755399441055744.0;  // 1.5 * 2^52
};

template <class V>
inline void sincos_poly(V r, V& s, V& c, float) {
    const V r2 = r * r;
    V ps = V{} + 1.0f / 362880;  // sin: r + r^3 (-1/3! + r^2/5! - r^4/7! + r^6/9!)
    ps = -1.0f / 5040 + r2 * ps;
    ps = 1.0f / 120 + r2 * ps;
    ps = -1.0f / 6 + r2 * ps;
    s = r + (r * r2) * ps;
    V pc = V{} - 1.0f / 3628800;  // cos: 1 + r^2 (-1/2! + r^2/4! - ... - r^8/10!)
    pc = 1.0f / 40320 + r2 * pc;
    pc = -1.0f / 720 + r2 * pc;
    pc = 1.0f / 24 + r2 * pc;
    pc = -0.5f + r2 * pc;
    c = 1.0f + r2 * pc;
}
template <class V>
inline void sincos_poly(V r, V& s, V& c, double) {
    const V r2 = r * r;
    V ps = V{} - 1.0 / 121645100408832000.0;  // sin: r + r^3 (-1/3! + ... - r^16/19!)
    ps = 1.0 / 355687428096000.0 + r2 * ps;
    ps = -1.0 / 1307674368000.0 + r2 * ps;
    ps = 1.0 / 6227020800.0 + r2 * ps;
    ps = -1.0 / 39916800.0 + r2 * ps;
    ps = 1.0 / 362880.0 + r2 * ps;
    ps = -1.0 / 5040.0 + r2 * ps;
    ps = 1.0 / 120.0 + r2 * ps;
    ps = -1.0 / 6.0 + r2 * ps;
    s = r + (r * r2) * ps;
    V pc = V{} + 1.0 / 6402373705728000.0;  // cos: 1 - r^2 (1/2! - r^2/4! + ... - r^16/18!)
    pc = -1.0 / 20922789888000.0 + r2 * pc;
    pc = 1.0 / 87178291200.0 + r2 * pc;
    pc = -1.0 / 479001600.0 + r2 * pc;
    pc = 1.0 / 3628800.0 + r2 * pc;
    pc = -1.0 / 40320.0 + r2 * pc;
    pc = 1.0 / 720.0 + r2 * pc;
    pc = -1.0 / 24.0 + r2 * pc;
    pc = 0.5 + r2 * pc;
    c = 1.0 - r2 * pc;
}

#if defined(__FMA__)
// true when every lane of a comparison result (all ones / all zeros per lane) is all ones
template <class IV>
inline bool all_lanes(IV m) {
#if defined(__AVX512F__)
    static_assert(sizeof(IV) == 64, "AVX-512 vectors are 64 bytes");
    return _mm512_cmpneq_epi64_mask(reinterpret_cast<__m512i>(m), _mm512_set1_epi64(-1)) == 0;
#else
    static_assert(sizeof(IV) == 32, "AVX2 vectors are 32 bytes");
    const __m256i v = reinterpret_cast<__m256i>(m);
    return _mm256_testc_si256(v, _mm256_set1_epi64x(-1)) != 0;
#endif
}

// a * b + c and c - a * b with one rounding. The reduction below depends on it (x - q*c1 must be
// exact), so it is spelled out rather than left to -ffp-contract, which GCC only applies from -O2
// (the -O1 sanitizer build got cos wrong near multiples of pi/2 by 1e-4 without it).
#if defined(__AVX512F__)
inline vfloat mul_add(vfloat a, vfloat b, vfloat c) {
    return (vfloat)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
}
inline vdouble mul_add(vdouble a, vdouble b, vdouble c) {
    return (vdouble)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
}
inline vfloat neg_mul_add(vfloat a, vfloat b, vfloat c) {
    return (vfloat)_mm512_fnmadd_ps((__m512)a, (__m512)b, (__m512)c);
}
inline vdouble neg_mul_add(vdouble a, vdouble b, vdouble c) {
    return (vdouble)_mm512_fnmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
}
#else
inline vfloat mul_add(vfloat a, vfloat b, vfloat c) {
    return (vfloat)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
}
inline vdouble mul_add(vdouble a, vdouble b, vdouble c) {
    return (vdouble)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
}
inline vfloat neg_mul_add(vfloat a, vfloat b, vfloat c) {
    return (vfloat)_mm256_fnmadd_ps((__m256)a, (__m256)b, (__m256)c);
}
inline vdouble neg_mul_add(vdouble a, vdouble b, vdouble c) {
    return (vdouble)_mm256_fnmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
}
#endif
#endif

template <class V>
inline void vsincos(V x, V& s, V& c) {
#if defined(__FMA__)
    typedef typename std::remove_reference<decltype(x[0])>::type T;
    using K = SinCosConstants<T>;
    typedef typename K::I IV __attribute__((vector_size(sizeof(V))));
    if (__builtin_expect(all_lanes((x <= K::limit) & (x >= -K::limit)), 1)) {  // false for NaN
        const V t = mul_add(x, V{} + K::two_over_pi, V{} + K::shifter);
        const V q = t - K::shifter;  // nearest integer to x*2/pi; its low bits are those of t
        V r = neg_mul_add(q, V{} + K::c1, x);
        r = neg_mul_add(q, V{} + K::c2, r);
        r = neg_mul_add(q, V{} + K::c3, r);
        V ps, pc;
        sincos_poly(r, ps, pc, T(0));
        const IV qi = (IV)t;
        const IV odd = -(qi & 1);  // all ones where the quadrant swaps sin and cos
        const IV sflip = (qi & 2) << (sizeof(T) * 8 - 2);
        const IV cflip = ((qi + 1) & 2) << (sizeof(T) * 8 - 2);
        const IV is = (IV)ps, ic = (IV)pc;
        s = (V)(((is & ~odd) | (ic & odd)) ^ sflip);
        c = (V)(((ic & ~odd) | (is & odd)) ^ cflip);
        return;
    }
#endif
    s = vsin(x);
    c = vcos(x);
}

}  // namespace simd
}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
