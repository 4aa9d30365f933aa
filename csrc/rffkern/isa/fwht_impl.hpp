// The fast Walsh-Hadamard transform of one row, for the instruction set of the including
// translation unit (the FWHT kernel itself and the inner transform of Fastfood and SORF).
//
// FWHT layout (length len = 2^k, L lanes per vector, stages h = 1, 2, ..., len/2 in that order):
//  * first pass: groups of up to 8 consecutive vectors are loaded once; the stages inside a
//    vector (h < L) are a lane shuffle plus one multiply-add by a +-1 vector (x*sgn + shuffle(x),
//    exact, so bitwise a + b / a - b), then the stages between the vectors of the group run in
//    registers;
//  * then radix-8 (or radix-16/4/2) passes: 8 vectors h apart are loaded, 3 stages run in
//    registers, stored back; the normalisation factor is applied in the last pass;
//  * beyond kChunkBytes (cache blocking): every chunk gets its whole in-cache transform first, then
//    the remaining stages (h >= chunk) run as radix-8 passes over the full row, each pass
//    streaming 8 far-apart runs. (Gathering column panels into a contiguous buffer to do all
//    the outer stages in one pass is slower here: the power-of-two row stride maps every
//    panel row to the same cache sets.)
// Every stage computes (a + b, a - b) in the working precision, so the result is bitwise the
// textbook loop's whatever the grouping and whatever the number of threads.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "rffkern/isa/simd_vector.hpp"
#include "rffkern/parallel.hpp"

namespace rffkern {
namespace RFFKERN_ISA_NS {
// A nested namespace keeps these inline helpers apart from the cosine kernels' ones, which are
// compiled into the same per-ISA namespace in another translation unit.
namespace structured_detail {

using simd::VecTraits;

// In-cache transform size: chunks of 64 KiB (L2-resident; 32 to 256 KiB are within noise of
// each other on Zen 3).
constexpr std::size_t kChunkBytes = 64 * 1024;

using simd::loadu;
using simd::storeu;

inline int log2_exact(std::size_t len) {
    int k = 0;
    while ((std::size_t(1) << k) < len) ++k;
    return k;
}

// ---- butterflies inside one vector ------------------------------------------------------------
template <class T, int H, std::size_t... I>
inline typename VecTraits<T>::V inlane_stage(typename VecTraits<T>::V x, std::index_sequence<I...>) {
    using V = typename VecTraits<T>::V;
    const V sign = {T((I & H) ? -1 : 1)...};
    // lane i with bit H clear: x_i + x_{i+H}; with it set: x_{i-H} - x_i (both exact-order ops)
#if defined(__clang__)
    // Clang (Apple's, clang-cl) has no __builtin_shuffle; its shufflevector takes the same
    // permutation as constant lane indices
    return x * sign + __builtin_shufflevector(x, x, int(I ^ H)...);
#else
    using M = typename VecTraits<T>::IntV;
    using E = typename VecTraits<T>::IntLane;
    const M partner = {E(I ^ H)...};
    return x * sign + __builtin_shuffle(x, partner);
#endif
}

template <class T, int H = 1>
inline typename VecTraits<T>::V inlane_all(typename VecTraits<T>::V x) {
    if constexpr (H < VecTraits<T>::L) {
        x = inlane_stage<T, H>(x, std::make_index_sequence<VecTraits<T>::L>{});
        return inlane_all<T, 2 * H>(x);
    } else {
        return x;
    }
}

// Stages between R vectors held in registers (strides 1, 2, ..., R/2 in vector units).
template <class V, int R>
inline void cross_stages(V* v) {
#pragma GCC unroll 4
    for (int s = 1; s < R; s *= 2)
#pragma GCC unroll 16
        for (int k = 0; k < R; ++k)
            if (!(k & s)) {
                const V a = v[k], b = v[k + s];
                v[k] = a + b;
                v[k + s] = a - b;
            }
}

// First pass: every stage with h < R*L, on groups of R consecutive vectors (src -> dst).
template <class T, int R, bool Scale>
inline void first_pass(const T* src, T* dst, std::size_t len, T mul) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L;
    for (std::size_t b = 0; b < len; b += std::size_t(R) * L) {
        V v[R];
#pragma GCC unroll 16
        for (int k = 0; k < R; ++k) v[k] = inlane_all<T>(loadu<V>(src + b + std::size_t(k) * L));
        cross_stages<V, R>(v);
#pragma GCC unroll 16
        for (int k = 0; k < R; ++k) storeu(dst + b + std::size_t(k) * L, Scale ? v[k] * mul : v[k]);
    }
}

// log2(R) stages with strides h, 2h, ..., (R/2)h (h a multiple of L), in place.
template <class T, int R, bool Scale>
inline void radix_pass(T* x, std::size_t len, std::size_t h, T mul) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L;
    for (std::size_t b = 0; b < len; b += std::size_t(R) * h)
        for (std::size_t j = b; j < b + h; j += L) {
            V v[R];
#pragma GCC unroll 16
            for (int k = 0; k < R; ++k) v[k] = loadu<V>(x + j + std::size_t(k) * h);
            cross_stages<V, R>(v);
#pragma GCC unroll 16
            for (int k = 0; k < R; ++k) storeu(x + j + std::size_t(k) * h, Scale ? v[k] * mul : v[k]);
        }
}

template <class T>
inline void radix_pass_any(T* x, std::size_t len, std::size_t h, int r, bool scale, T mul) {
    switch (r * 2 + int(scale)) {
        case 2: radix_pass<T, 2, false>(x, len, h, mul); break;
        case 3: radix_pass<T, 2, true>(x, len, h, mul); break;
        case 4: radix_pass<T, 4, false>(x, len, h, mul); break;
        case 5: radix_pass<T, 4, true>(x, len, h, mul); break;
        case 6: radix_pass<T, 8, false>(x, len, h, mul); break;
        case 7: radix_pass<T, 8, true>(x, len, h, mul); break;
        case 8: radix_pass<T, 16, false>(x, len, h, mul); break;
        default: radix_pass<T, 16, true>(x, len, h, mul); break;
    }
}

// `stages` stages starting at stride h0 (a multiple of L), in radix-8/4/2 passes; the last pass
// applies mul when scale is set. In cache (in_cache), exactly 4 remaining stages run as one
// radix-16 pass (16 vectors and a few spills; ~12% faster at 2^10 float32); for the outer passes
// of long rows 16 far-apart streams conflict in the cache sets and radix-16 is up to 2x slower,
// so those stay radix-8.
template <class T>
inline void strided_stages(T* x, std::size_t len, std::size_t h0, int stages, bool scale, T mul,
                           bool in_cache) {
    std::size_t h = h0;
    while (stages > 0) {
        const int r = stages == 4 ? (in_cache ? 4 : 2) : std::min(stages, 3);
        radix_pass_any(x, len, h, r, scale && stages == r, mul);
        h <<= r;
        stages -= r;
    }
}

// Textbook loop, for lengths below one vector.
template <class T>
inline void scalar_fwht(const T* src, T* dst, std::size_t len, bool scale, T mul) {
    if (src != dst) std::memcpy(dst, src, len * sizeof(T));
    for (std::size_t h = 1; h < len; h *= 2)
        for (std::size_t i = 0; i < len; i += 2 * h)
            for (std::size_t j = i; j < i + h; ++j) {
                const T a = dst[j], b = dst[j + h];
                dst[j] = a + b;
                dst[j + h] = a - b;
            }
    if (scale)
        for (std::size_t j = 0; j < len; ++j) dst[j] *= mul;
}

// The whole transform of a length that fits the cache (src may equal dst).
template <class T>
void fwht_incache(const T* src, T* dst, std::size_t len, bool scale, T mul) {
    constexpr int L = VecTraits<T>::L;
    if (len < std::size_t(L)) return scalar_fwht(src, dst, len, scale, mul);
    const std::size_t nv = len / L;
    const std::size_t R = std::min<std::size_t>(nv, 8);
    const int rest = log2_exact(nv / R);
    const bool s1 = scale && rest == 0;
    switch (R * 2 + std::size_t(s1)) {
        case 2: first_pass<T, 1, false>(src, dst, len, mul); break;
        case 3: first_pass<T, 1, true>(src, dst, len, mul); break;
        case 4: first_pass<T, 2, false>(src, dst, len, mul); break;
        case 5: first_pass<T, 2, true>(src, dst, len, mul); break;
        case 8: first_pass<T, 4, false>(src, dst, len, mul); break;
        case 9: first_pass<T, 4, true>(src, dst, len, mul); break;
        case 16: first_pass<T, 8, false>(src, dst, len, mul); break;
        default: first_pass<T, 8, true>(src, dst, len, mul); break;
    }
    strided_stages(dst, len, R * L, rest, scale, mul, true);
}

template <class T>
constexpr std::size_t chunk_len() {
    return kChunkBytes / sizeof(T);
}
// One row, any length (src may equal dst).
template <class T>
void fwht_row(const T* src, T* dst, std::size_t len, bool scale, T mul) {
    const std::size_t C = chunk_len<T>();
    if (len <= C) return fwht_incache(src, dst, len, scale, mul);
    for (std::size_t c = 0; c < len; c += C) fwht_incache(src + c, dst + c, C, false, mul);
    strided_stages(dst, len, C, log2_exact(len / C), scale, mul, false);
}

template <class T>
T fwht_norm(std::size_t len) {
    return T(1.0 / std::sqrt(double(len)));
}

}  // namespace structured_detail
}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
