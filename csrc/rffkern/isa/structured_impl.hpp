// The structured kernels (FWHT, Fastfood, SORF), written once and compiled once per instruction
// set: each isa/structured_<isa>.cpp defines RFFKERN_ISA_NS and includes this file, CMake gives
// the translation unit its -m flags and structured.cpp dispatches at run time.
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
//    the outer stages in one pass measured slower here: the power-of-two row stride maps every
//    panel row to the same cache sets.)
// Every stage computes (a + b, a - b) in the working precision, so the result is bitwise the
// textbook loop's whatever the grouping and whatever the number of threads.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "rffkern/isa/simd_vector.hpp"
#include "rffkern/parallel.hpp"
#include "rffkern/structured.hpp"
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#ifndef RFFKERN_ISA_NS
#error "define RFFKERN_ISA_NS before including structured_impl.hpp"
#endif

namespace rffkern {
namespace RFFKERN_ISA_NS {
// A nested namespace keeps these inline helpers apart from the cosine kernels' ones, which are
// compiled into the same per-ISA namespace in another translation unit.
namespace structured_detail {

constexpr int kBytes = simd::kVecBytes;

// In-cache transform size: chunks of 64 KiB (L2-resident; 32 to 256 KiB measured within noise
// of each other on Zen 3).
constexpr std::size_t kChunkBytes = 64 * 1024;

using simd::vdouble;
using simd::vfloat;
typedef std::int32_t vint32 __attribute__((vector_size(kBytes)));
typedef std::int64_t vint64 __attribute__((vector_size(kBytes)));

template <class T>
struct Vec;
template <>
struct Vec<float> {
    typedef vfloat V;
    typedef vint32 M;
    typedef std::int32_t E;
    static constexpr int L = kBytes / 4;
};
template <>
struct Vec<double> {
    typedef vdouble V;
    typedef vint64 M;
    typedef std::int64_t E;
    static constexpr int L = kBytes / 8;
};

using simd::loadu;
using simd::storeu;
using simd::vcos;
using simd::vsin;
using simd::vsincos;

inline int log2_exact(std::size_t len) {
    int k = 0;
    while ((std::size_t(1) << k) < len) ++k;
    return k;
}

// ---- butterflies inside one vector ------------------------------------------------------------
template <class T, int H, std::size_t... I>
inline typename Vec<T>::V inlane_stage(typename Vec<T>::V x, std::index_sequence<I...>) {
    using V = typename Vec<T>::V;
    using M = typename Vec<T>::M;
    using E = typename Vec<T>::E;
    const M partner = {E(I ^ H)...};
    const V sign = {T((I & H) ? -1 : 1)...};
    // lane i with bit H clear: x_i + x_{i+H}; with it set: x_{i-H} - x_i (both exact-order ops)
    return x * sign + __builtin_shuffle(x, partner);
}

template <class T, int H = 1>
inline typename Vec<T>::V inlane_all(typename Vec<T>::V x) {
    if constexpr (H < Vec<T>::L) {
        x = inlane_stage<T, H>(x, std::make_index_sequence<Vec<T>::L>{});
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
    using V = typename Vec<T>::V;
    constexpr int L = Vec<T>::L;
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
    using V = typename Vec<T>::V;
    constexpr int L = Vec<T>::L;
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
// radix-16 pass (16 vectors and a few spills; measured ~12% faster at 2^10 float32); for the
// outer passes of long rows 16 far-apart streams conflict in the cache sets and radix-16 measured
// up to 2x slower, so those stay radix-8.
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
    constexpr int L = Vec<T>::L;
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

// ---- the cosine output of one block -----------------------------------------------------------
// zc[j] = scale * cos(arg[j]) and, when zs is given, zs[j] = scale * sin(arg[j]), for j < nc.
// arg holds at least round_up(nc, L) values (the lanes past nc are computed and dropped).
template <class T>
inline void emit_cos(const T* __restrict arg, T scale, T* __restrict zc, T* __restrict zs,
                     std::size_t nc) {
    using V = typename Vec<T>::V;
    constexpr int L = Vec<T>::L;
    std::size_t j = 0;
    if (zs) {
        for (; j + L <= nc; j += L) {
            V sv, cv;
            vsincos(loadu<V>(arg + j), sv, cv);
            storeu(zc + j, cv * scale);
            storeu(zs + j, sv * scale);
        }
    } else {
        for (; j + L <= nc; j += L) storeu(zc + j, vcos(loadu<V>(arg + j)) * scale);
    }
    if (j < nc) {
        T tail[L];
        const V a = loadu<V>(arg + j);
        V sv, cv;
        if (zs) vsincos(a, sv, cv);
        else cv = vcos(a);
        storeu(tail, cv * scale);
        std::memcpy(zc + j, tail, (nc - j) * sizeof(T));
        if (zs) {
            storeu(tail, sv * scale);
            std::memcpy(zs + j, tail, (nc - j) * sizeof(T));
        }
    }
}

// Per-thread work space of the feature maps: x padded, two work vectors, each of pv >= p values
// (at least one vector, so the vector tail of a block never reads past the buffer).
template <class T>
struct MapScratch {
    std::size_t pv, stride;
    explicit MapScratch(std::size_t p) {
        pv = round_up(std::max<std::size_t>(p, Vec<T>::L), 16);
        stride = 3 * pv;
    }
};

// b[j] = a[P[j]] * G[j] for j < p (the permutation, then the Gaussian scaling).
template <class T>
inline void permute_scale(const T* __restrict a, const std::int32_t* __restrict P,
                          const T* __restrict G, T* __restrict b, std::size_t p) {
    std::size_t j = 0;
#if defined(__AVX2__) && !defined(RFFKERN_SCALAR_GATHER)
    if constexpr (std::is_same_v<T, float>) {
        for (; j + 8 <= p; j += 8) {
            const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(P + j));
            // the masked form with an explicit source avoids GCC 12's maybe-uninitialized warning
            const __m256 v = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), a, idx,
                                                      _mm256_castsi256_ps(_mm256_set1_epi32(-1)), 4);
            _mm256_storeu_ps(b + j, _mm256_mul_ps(v, _mm256_loadu_ps(G + j)));
        }
    } else {
        for (; j + 4 <= p; j += 4) {
            const __m128i idx = _mm_loadu_si128(reinterpret_cast<const __m128i*>(P + j));
            const __m256d v = _mm256_mask_i32gather_pd(
                _mm256_setzero_pd(), a, idx, _mm256_castsi256_pd(_mm256_set1_epi64x(-1)), 8);
            _mm256_storeu_pd(b + j, _mm256_mul_pd(v, _mm256_loadu_pd(G + j)));
        }
    }
#endif
    for (; j < p; ++j) b[j] = a[P[j]] * G[j];
}

template <class T>
inline void load_padded_row(const T* x, const T* theta, std::size_t d, std::size_t pv, T* xs) {
    if (theta)
        for (std::size_t j = 0; j < d; ++j) xs[j] = x[j] * theta[j];
    else
        std::memcpy(xs, x, d * sizeof(T));
    std::fill(xs + d, xs + pv, T(0));
}

}  // namespace structured_detail

// ---- entry points ------------------------------------------------------------------------------
template <class T>
void fwht_rows(const T* X, T* Y, std::size_t n, std::size_t len, bool normalized, int n_threads) {
    using namespace structured_detail;
    if (n == 0 || len == 0) return;
    const T mul = fwht_norm<T>(len);
    // small batches are not worth waking the other threads
    const bool parallel = n_threads > 1 && n > 1 && n * len >= 4096;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel for num_threads(n_threads) schedule(static) if (parallel)
#endif
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i)
        fwht_row(X + std::size_t(i) * len, Y + std::size_t(i) * len, len, normalized, mul);
    (void)parallel;
}

template <class T>
void fastfood(const T* X, std::size_t n, const FastfoodMap<T>& m, T* Z, int n_threads) {
    using namespace structured_detail;
    if (n == 0 || m.s == 0) return;
    const std::size_t p = m.p, ld = m.n_out(), nb = std::min(m.n_blocks, ceil_div(m.s, p));
    const MapScratch<T> ms(p);
    AlignedBuffer<T> scratch(ms.stride * std::size_t(n_threads));
    // 32-bit permutation indices (p <= 2^31 is checked by the dispatcher) and the phases padded
    // to whole blocks, prepared once per call
    AlignedBuffer<std::int32_t> perm32(nb * p);
    for (std::size_t i = 0; i < nb * p; ++i) perm32.data()[i] = std::int32_t(m.perm[i]);
    AlignedBuffer<T> phase(nb * p);
    if (m.offsets) std::memcpy(phase.data(), m.offsets, m.s * sizeof(T));
    const bool parallel = n_threads > 1 && n > 1;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel num_threads(n_threads) if (parallel)
#endif
    {
        T* __restrict xs = scratch.data() + std::size_t(thread_id()) * ms.stride;
        T* __restrict a = xs + ms.pv;
        T* __restrict b = a + ms.pv;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) {
            load_padded_row(X + std::size_t(i) * m.d, m.theta, m.d, ms.pv, xs);
            T* z = Z + std::size_t(i) * ld;
            for (std::size_t t = 0; t < nb; ++t) {
                const std::size_t c0 = t * p, nc = std::min(p, m.s - c0);
                const T* __restrict B = m.signs + c0;
                const std::int32_t* __restrict P = perm32.data() + c0;
                const T* __restrict G = m.gaussian + c0;
                const T* __restrict S = m.scaling + c0;
                const T* __restrict u = phase.data() + c0;
                for (std::size_t j = 0; j < p; ++j) a[j] = xs[j] * B[j];
                fwht_row(a, a, p, false, T(1));
                permute_scale(a, P, G, b, p);
                fwht_row(b, b, p, false, T(1));
                for (std::size_t j = 0; j < p; ++j) b[j] = b[j] * S[j] + u[j];
                emit_cos(b, m.scale, z + c0, m.pair ? z + m.s + c0 : nullptr, nc);
            }
        }
    }
    (void)parallel;
}

template <class T>
void sorf(const T* X, std::size_t n, const SorfMap<T>& m, T* Z, int n_threads) {
    using namespace structured_detail;
    if (n == 0 || m.s == 0) return;
    const std::size_t p = m.p, ld = m.n_out(), nb = std::min(m.n_blocks, ceil_div(m.s, p));
    const MapScratch<T> ms(p);
    AlignedBuffer<T> scratch(ms.stride * std::size_t(n_threads));
    AlignedBuffer<T> phase(nb * p);
    if (m.offsets) std::memcpy(phase.data(), m.offsets, m.s * sizeof(T));
    const T fs = m.freq_scale;
    const bool parallel = n_threads > 1 && n > 1;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel num_threads(n_threads) if (parallel)
#endif
    {
        T* __restrict xs = scratch.data() + std::size_t(thread_id()) * ms.stride;
        T* __restrict a = xs + ms.pv;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) {
            load_padded_row(X + std::size_t(i) * m.d, m.theta, m.d, ms.pv, xs);
            T* z = Z + std::size_t(i) * ld;
            for (std::size_t t = 0; t < nb; ++t) {
                const std::size_t c0 = t * p, nc = std::min(p, m.s - c0);
                const T* __restrict D1 = m.diagonals + 3 * c0;
                const T* __restrict D2 = D1 + p;
                const T* __restrict D3 = D2 + p;
                const T* __restrict u = phase.data() + c0;
                for (std::size_t j = 0; j < p; ++j) a[j] = xs[j] * D3[j];
                fwht_row(a, a, p, false, T(1));
                for (std::size_t j = 0; j < p; ++j) a[j] *= D2[j];
                fwht_row(a, a, p, false, T(1));
                for (std::size_t j = 0; j < p; ++j) a[j] *= D1[j];
                fwht_row(a, a, p, false, T(1));
                for (std::size_t j = 0; j < p; ++j) a[j] = a[j] * fs + u[j];
                emit_cos(a, m.scale, z + c0, m.pair ? z + m.s + c0 : nullptr, nc);
            }
        }
    }
    (void)parallel;
}

template void fwht_rows<float>(const float*, float*, std::size_t, std::size_t, bool, int);
template void fwht_rows<double>(const double*, double*, std::size_t, std::size_t, bool, int);
template void fastfood<float>(const float*, std::size_t, const FastfoodMap<float>&, float*, int);
template void fastfood<double>(const double*, std::size_t, const FastfoodMap<double>&, double*, int);
template void sorf<float>(const float*, std::size_t, const SorfMap<float>&, float*, int);
template void sorf<double>(const double*, std::size_t, const SorfMap<double>&, double*, int);

}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
