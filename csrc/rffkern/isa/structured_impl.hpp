// The structured feature maps (Fastfood, SORF) and the FWHT entry point, written once and
// compiled once per instruction set: each isa/structured_<isa>.cpp defines RFFKERN_ISA_NS and
// includes this file, CMake gives the translation unit its -m flags and structured.cpp calls the
// table below for the active level.
//
// Both maps run, for each row and block, a chain of elementwise products and FWHTs in a per-thread
// buffer of O(p) values (no s x d matrix is formed), then scale * cos (and sin) into Z; they differ
// only in the chain (block_map_rows takes it as a function).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "rffkern/isa/fwht_impl.hpp"
#include "rffkern/isa/kernel_tables.hpp"
#include "rffkern/structured.hpp"
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#ifndef RFFKERN_ISA_NS
#error "define RFFKERN_ISA_NS before including structured_impl.hpp"
#endif

namespace rffkern {
namespace RFFKERN_ISA_NS {
namespace structured_detail {

using simd::vcos;
using simd::vsincos;

// ---- the cosine output of one block -----------------------------------------------------------
// zc[j] = scale * cos(arg[j]) and, when zs is given, zs[j] = scale * sin(arg[j]), for j < nc.
// arg holds at least round_up(nc, L) values (the lanes past nc are computed and dropped).
template <class T>
inline void emit_cos(const T* __restrict arg, T scale, T* __restrict zc, T* __restrict zs,
                     std::size_t nc) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L;
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
        pv = round_up(std::max<std::size_t>(p, VecTraits<T>::L), 16);
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

// The rows of a block map (FastfoodMap or SorfMap): per row, x o theta zero-padded to p, then for
// each block t the map's chain `block_chain(t, xs, u, a, b)` over the padded row xs, with u the
// block's phases and a, b two work vectors of p values, returns where the block's p arguments of
// cos lie. Rows are shared out statically, so the result does not depend on n_threads.
template <class T, class Map, class BlockChain>
void block_map_rows(const T* X, std::size_t n, const Map& m, T* Z, int n_threads,
                    const BlockChain& block_chain) {
    const std::size_t p = m.p, ld = m.n_out(), nb = std::min(m.n_blocks, ceil_div(m.s, p));
    const MapScratch<T> ms(p);
    AlignedBuffer<T> scratch(ms.stride * std::size_t(n_threads));
    // the phases padded to whole blocks, prepared once per call
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
                const T* arg = block_chain(t, xs, phase.data() + c0, a, b);
                emit_cos(arg, m.scale, z + c0, m.pair ? z + m.s + c0 : nullptr, nc);
            }
        }
    }
    (void)parallel;
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

// Fastfood block t: v = S * H(G * Pi(H(B * x))) + u.
template <class T>
void fastfood(const T* X, std::size_t n, const FastfoodMap<T>& m, T* Z, int n_threads) {
    using namespace structured_detail;
    if (n == 0 || m.s == 0) return;
    const std::size_t p = m.p, nb = std::min(m.n_blocks, ceil_div(m.s, p));
    // 32-bit permutation indices for the gathers (p <= 2^30 is checked by the dispatcher)
    AlignedBuffer<std::int32_t> perm32(nb * p);
    for (std::size_t i = 0; i < nb * p; ++i) perm32.data()[i] = std::int32_t(m.perm[i]);
    block_map_rows(X, n, m, Z, n_threads,
                   [&](std::size_t t, const T* __restrict xs, const T* __restrict u, T* __restrict a,
                       T* __restrict b) -> const T* {
                       const std::size_t c0 = t * p;
                       const T* __restrict B = m.signs + c0;
                       const std::int32_t* __restrict P = perm32.data() + c0;
                       const T* __restrict G = m.gaussian + c0;
                       const T* __restrict S = m.scaling + c0;
                       for (std::size_t j = 0; j < p; ++j) a[j] = xs[j] * B[j];
                       fwht_row(a, a, p, false, T(1));
                       permute_scale(a, P, G, b, p);
                       fwht_row(b, b, p, false, T(1));
                       for (std::size_t j = 0; j < p; ++j) b[j] = b[j] * S[j] + u[j];
                       return b;
                   });
}

// SORF block t: v = freq_scale * R * H(D1 * H(D2 * H(D3 * x))) + u (R = 1 without radial factors).
template <class T>
void sorf(const T* X, std::size_t n, const SorfMap<T>& m, T* Z, int n_threads) {
    using namespace structured_detail;
    if (n == 0 || m.s == 0) return;
    const std::size_t p = m.p;
    const T fs = m.freq_scale;
    block_map_rows(X, n, m, Z, n_threads,
                   [&](std::size_t t, const T* __restrict xs, const T* __restrict u, T* __restrict a,
                       T*) -> const T* {
                       const T* __restrict D1 = m.diagonals + 3 * t * p;
                       const T* __restrict D2 = D1 + p;
                       const T* __restrict D3 = D2 + p;
                       for (std::size_t j = 0; j < p; ++j) a[j] = xs[j] * D3[j];
                       fwht_row(a, a, p, false, T(1));
                       for (std::size_t j = 0; j < p; ++j) a[j] *= D2[j];
                       fwht_row(a, a, p, false, T(1));
                       for (std::size_t j = 0; j < p; ++j) a[j] *= D1[j];
                       fwht_row(a, a, p, false, T(1));
                       // the Gaussian map keeps its own loop, so its bits do not change
                       if (m.radial) {
                           const T* __restrict r = m.radial + t * p;
                           for (std::size_t j = 0; j < p; ++j) a[j] = a[j] * fs * r[j] + u[j];
                       } else {
                           for (std::size_t j = 0; j < p; ++j) a[j] = a[j] * fs + u[j];
                       }
                       return a;
                   });
}

template <class T>
const StructuredKernelTable<T>& structured_kernel_table() {
    static constexpr StructuredKernelTable<T> table{&fwht_rows<T>, &fastfood<T>, &sorf<T>};
    return table;
}
template const StructuredKernelTable<float>& structured_kernel_table<float>();
template const StructuredKernelTable<double>& structured_kernel_table<double>();

}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
