// The fused cosine-feature kernels, written once and compiled once per instruction set.
//
// Each isa/cos_kernels_<isa>.cpp defines RFFKERN_ISA_NS and includes this file; CMake gives that
// translation unit its -m flags, and cos_kernels.cpp dispatches to one of them at run time.
//
// The shape of every kernel is that of a GEMM (BLIS-style): W is packed once into column
// panels of NR columns, a block of MC rows of X o theta into micro-panels of MR rows, and a
// register-blocked micro-kernel computes an MR x NR tile of U = (X o theta) W + b, starting from
// the offsets. The tile then goes straight through vector cos (libmvec) into its consumer:
// the output Z (features), a dot product with coef (predict), a panel-major Z tile for the
// symmetric rank-k update (gram), or the forward/backward pass of the loss. U is never stored.
//
// Reproducibility: every output entry is computed by one fixed sequence of operations whatever
// the number of threads (fixed row blocks, fixed panels, per-panel partial sums added in panel
// order), so all kernels are bitwise reproducible across thread counts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "rffkern/cos_kernels.hpp"
#include "rffkern/isa/simd_vector.hpp"
#include "rffkern/parallel.hpp"

#ifndef RFFKERN_ISA_NS
#error "define RFFKERN_ISA_NS before including cos_kernels_impl.hpp"
#endif

#define RFFKERN_OPTIM_NS RFFKERN_ISA_NS
#include "rffkern/optim_kernels.hpp"
#undef RFFKERN_OPTIM_NS

namespace rffkern {
namespace RFFKERN_ISA_NS {

#if defined(__AVX512F__)
constexpr int kMR = 8;   // 8 x 3 accumulators of 32 zmm registers
constexpr int kNV = 3;
#elif defined(__AVX2__)
constexpr int kMR = 4;   // 4 x 3 accumulators of 16 ymm registers
constexpr int kNV = 3;
#else
constexpr int kMR = 4;
constexpr int kNV = 2;
#endif
using simd::kVecBytes;
using simd::loadu;
using simd::storeu;
using simd::vcos;
using simd::vsin;
using simd::vsincos;

template <class T>
struct Isa {
    typedef T vec __attribute__((vector_size(kVecBytes)));
    static constexpr int L = kVecBytes / int(sizeof(T));  // lanes
    static constexpr int NR = kNV * L;                     // columns of a micro-tile
};

// Sum of the lanes by halving (a fixed order): 3 shuffle+add steps for 8 lanes.
template <class V>
inline auto hsum_tree(V v) {
    constexpr int N = int(sizeof(V) / sizeof(v[0]));
    if constexpr (N == 16)
        return hsum_tree(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                         __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
    else if constexpr (N == 8)
        return hsum_tree(__builtin_shufflevector(v, v, 0, 1, 2, 3) +
                         __builtin_shufflevector(v, v, 4, 5, 6, 7));
    else if constexpr (N == 4)
        return hsum_tree(__builtin_shufflevector(v, v, 0, 1) + __builtin_shufflevector(v, v, 2, 3));
    else
        return v[0] + v[1];
}
template <class T>
inline T hsum(typename Isa<T>::vec v) {
    return hsum_tree(v);
}

// ---- the micro-kernel -------------------------------------------------------------------------
// acc (kMR x NR in registers) = init + sum_k A[k*lda + r] * B[k*ldb + c], for k < K.
// init is one row of NR values broadcast to every row (the offsets b), or zero when null.
template <class T>
__attribute__((always_inline)) inline void micro_accumulate(
    std::size_t K, const T* __restrict A, std::size_t lda, const T* __restrict B, std::size_t ldb,
    const T* __restrict init, typename Isa<T>::vec (&acc)[kMR][kNV]) {
    using V = typename Isa<T>::vec;
    constexpr int L = Isa<T>::L;
    V start[kNV];
    for (int j = 0; j < kNV; ++j) start[j] = init ? loadu<V>(init + j * L) : V{};
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < kNV; ++j) acc[r][j] = start[j];
    for (std::size_t k = 0; k < K; ++k) {
        const T* bk = B + k * ldb;
        const T* ak = A + k * lda;
        V bv[kNV];
#pragma GCC unroll 4
        for (int j = 0; j < kNV; ++j) bv[j] = loadu<V>(bk + j * L);
#pragma GCC unroll 8
        for (int r = 0; r < kMR; ++r) {
            const T a = ak[r];
#pragma GCC unroll 4
            for (int j = 0; j < kNV; ++j) acc[r][j] += a * bv[j];
        }
    }
}

// C (kMR x NR, row-major, contiguous) = the accumulated tile.
template <class T>
inline void micro_kernel(std::size_t K, const T* __restrict A, std::size_t lda,
                         const T* __restrict B, std::size_t ldb, const T* __restrict init,
                         T* __restrict C) {
    constexpr int L = Isa<T>::L;
    typename Isa<T>::vec acc[kMR][kNV];
    micro_accumulate(K, A, lda, B, ldb, init, acc);
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < kNV; ++j) storeu(C + r * Isa<T>::NR + j * L, acc[r][j]);
}

// The theta-gradient tile: the accumulated tile C (K rows of X against K rows of dL/dU, ldb = NR),
// then, for each of the `rows` valid rows r, the lane-wise products of C's row with row r of the
// W panel summed over the kNV vectors: out[r*L + l] (= or +=) sum_j C[r][j*L + l] W[r][j*L + l].
// The lanes are summed once per gradient (finish), not once per panel.
template <class T>
inline void micro_kernel_wdot(std::size_t K, const T* __restrict A, std::size_t lda,
                              const T* __restrict B, const T* __restrict Wrows, int rows,
                              bool accumulate, T* __restrict out) {
    using V = typename Isa<T>::vec;
    constexpr int L = Isa<T>::L;
    constexpr int NR = Isa<T>::NR;
    V acc[kMR][kNV];
    micro_accumulate(K, A, lda, B, std::size_t(NR), static_cast<const T*>(nullptr), acc);
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r) {
        if (r >= rows) break;
        V v = acc[r][0] * loadu<V>(Wrows + r * NR);
#pragma GCC unroll 4
        for (int j = 1; j < kNV; ++j) v += acc[r][j] * loadu<V>(Wrows + r * NR + j * L);
        if (accumulate) v += loadu<V>(out + r * L);
        storeu(out + r * L, v);
    }
}

// scale*cos (and scale*sin) of NR consecutive values of U.
template <class T>
inline void cos_sin_row(const T* u, T* cos_out, T* sin_out, T scale) {
    using V = typename Isa<T>::vec;
    constexpr int L = Isa<T>::L;
    for (int j = 0; j < kNV; ++j) {
        const V x = loadu<V>(u + j * L);
        if (sin_out) {
            V sv, cv;
            vsincos(x, sv, cv);
            storeu(cos_out + j * L, cv * scale);
            storeu(sin_out + j * L, sv * scale);
        } else {
            storeu(cos_out + j * L, vcos(x) * scale);
        }
    }
}

// dot product of NR consecutive values, summed lane-wise then across lanes (a fixed order).
template <class T>
inline T dot_nr(const T* a, const T* b) {
    using V = typename Isa<T>::vec;
    constexpr int L = Isa<T>::L;
    V acc = loadu<V>(a) * loadu<V>(b);
    for (int j = 1; j < kNV; ++j) acc += loadu<V>(a + j * L) * loadu<V>(b + j * L);
    return hsum<T>(acc);
}

// ---- packing ------------------------------------------------------------------------------------
// W (d x s) -> panels Wp[p][k][NR] and offsets -> bp[p][NR], zero padded past s.
template <class T>
void pack_weights(const CosMap<T>& map, T* Wp, T* bp) {
    constexpr int NR = Isa<T>::NR;
    const std::size_t P = ceil_div(map.s, NR);
    for (std::size_t p = 0; p < P; ++p) {
        const std::size_t c0 = p * NR, nc = std::min<std::size_t>(NR, map.s - c0);
        T* panel = Wp + p * map.d * NR;
        for (std::size_t k = 0; k < map.d; ++k) {
            std::memcpy(panel + k * NR, map.weights + k * map.s + c0, nc * sizeof(T));
            std::fill(panel + k * NR + nc, panel + (k + 1) * NR, T(0));
        }
        for (std::size_t c = 0; c < std::size_t(NR); ++c)
            bp[p * NR + c] = (c < nc && map.offsets) ? map.offsets[c0 + c] : T(0);
    }
}

// Row `row` of the logical X: X[idx[row]] when an index list is given, else X[row].
template <class T>
inline const T* row_ptr(const T* X, std::size_t d, const std::int64_t* idx, std::size_t row) {
    return X + (idx ? std::size_t(idx[row]) : row) * d;
}

// Micro-panel i of a row block starting at r0 with mc valid rows: Ap[k][kMR] = X[r][k]*theta[k],
// zero for rows past mc.
template <class T>
void pack_micro_panel(const T* X, std::size_t d, const T* theta, const std::int64_t* idx,
                      std::size_t r0, std::size_t mc, std::size_t i, T* Ap) {
    for (int r = 0; r < kMR; ++r) {
        const std::size_t row = i * kMR + r;
        if (row < mc) {
            const T* x = row_ptr(X, d, idx, r0 + row);
            if (theta)
                for (std::size_t k = 0; k < d; ++k) Ap[k * kMR + r] = x[k] * theta[k];
            else
                for (std::size_t k = 0; k < d; ++k) Ap[k * kMR + r] = x[k];
        } else {
            for (std::size_t k = 0; k < d; ++k) Ap[k * kMR + r] = T(0);
        }
    }
}

// Rows per block for features/predict: the packed block (MC x d) stays in L2.
template <class T>
std::size_t feature_block_rows(std::size_t n, std::size_t d, int n_threads) {
    std::size_t mc = (256 * 1024) / (std::max<std::size_t>(d, 1) * sizeof(T));
    mc = std::clamp<std::size_t>(mc, kMR, 512);
    // enough blocks to keep every thread busy (features and predict do not depend on MC)
    const std::size_t per_thread = ceil_div(n, std::size_t(n_threads) * 4);
    mc = std::min(mc, std::max<std::size_t>(per_thread, kMR));
    return round_up(mc, kMR);
}

// ---- features -----------------------------------------------------------------------------------
template <class T>
void features(const T* X, std::size_t n, const CosMap<T>& map, T* Z, int n_threads) {
    constexpr int NR = Isa<T>::NR;
    const std::size_t d = map.d, s = map.s, ld = map.n_out();
    if (n == 0 || s == 0) return;
    const std::size_t P = ceil_div(s, NR);
    AlignedBuffer<T> Wp(P * d * NR), bp(P * NR);
    pack_weights(map, Wp.data(), bp.data());
    const std::size_t MC = feature_block_rows<T>(n, d, n_threads);
    const std::size_t nblocks = ceil_div(n, MC);
    const std::size_t ap_stride = round_up(MC * d + 1, 16);
    const std::size_t tmp_stride = round_up(kMR * NR + 2 * NR, 16);
    AlignedBuffer<T> Ap(ap_stride * n_threads), tmp(tmp_stride * n_threads);
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel num_threads(n_threads)
#endif
    {
        T* ap = Ap.data() + thread_id() * ap_stride;
        T* cbuf = tmp.data() + thread_id() * tmp_stride;
        T* ctail = cbuf + kMR * NR;
        T* stail = ctail + NR;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::ptrdiff_t blk = 0; blk < std::ptrdiff_t(nblocks); ++blk) {
            const std::size_t r0 = std::size_t(blk) * MC, mc = std::min(MC, n - r0);
            const std::size_t nmp = ceil_div(mc, kMR);
            for (std::size_t i = 0; i < nmp; ++i)
                pack_micro_panel(X, d, map.theta, nullptr, r0, mc, i, ap + i * d * kMR);
            for (std::size_t p = 0; p < P; ++p) {
                const std::size_t c0 = p * NR, nc = std::min<std::size_t>(NR, s - c0);
                for (std::size_t i = 0; i < nmp; ++i) {
                    micro_kernel(d, ap + i * d * kMR, kMR, Wp.data() + p * d * NR, NR,
                                 bp.data() + p * NR, cbuf);
                    const std::size_t rows = std::min<std::size_t>(kMR, mc - i * kMR);
                    for (std::size_t r = 0; r < rows; ++r) {
                        T* z = Z + (r0 + i * kMR + r) * ld;
                        if (nc == std::size_t(NR)) {
                            cos_sin_row(cbuf + r * NR, z + c0, map.pair ? z + s + c0 : nullptr,
                                        map.scale);
                        } else {
                            cos_sin_row(cbuf + r * NR, ctail, map.pair ? stail : nullptr, map.scale);
                            std::memcpy(z + c0, ctail, nc * sizeof(T));
                            if (map.pair) std::memcpy(z + s + c0, stail, nc * sizeof(T));
                        }
                    }
                }
            }
        }
    }
}

// coef (n_out x m) -> coefT[q][o][NR]: panel q of the cos part (q < P) or sin part (q >= P),
// transposed so a dot product over a panel's columns is contiguous; zero padded.
template <class T>
void pack_coef(const T* coef, std::size_t s, std::size_t m, bool pair, T* coefT) {
    constexpr int NR = Isa<T>::NR;
    const std::size_t P = ceil_div(s, NR), Ptot = pair ? 2 * P : P;
    for (std::size_t q = 0; q < Ptot; ++q) {
        const std::size_t part = q / P, p = q % P;
        for (std::size_t o = 0; o < m; ++o)
            for (std::size_t c = 0; c < std::size_t(NR); ++c) {
                const std::size_t col = p * NR + c;
                coefT[(q * m + o) * NR + c] = col < s ? coef[(part * s + col) * m + o] : T(0);
            }
    }
}

template <class T>
constexpr std::size_t NR_of() {
    return std::size_t(Isa<T>::NR);
}

// Panel p of pack_coef's layout for the cos-only (non-pair) map.
template <class T>
void pack_coef_panel(const T* coef, std::size_t s, std::size_t m, std::size_t p, T* coefT) {
    constexpr int NR = Isa<T>::NR;
    for (std::size_t o = 0; o < m; ++o)
        for (std::size_t c = 0; c < std::size_t(NR); ++c) {
            const std::size_t col = p * NR + c;
            coefT[(p * m + o) * NR + c] = col < s ? coef[col * m + o] : T(0);
        }
}

// ---- predict ------------------------------------------------------------------------------------
template <class T>
void predict(const T* X, std::size_t n, const CosMap<T>& map, const T* coef, std::size_t m, T* F,
             int n_threads) {
    constexpr int NR = Isa<T>::NR;
    const std::size_t d = map.d, s = map.s;
    if (n == 0 || m == 0) return;
    if (s == 0) {
        std::fill(F, F + n * m, T(0));
        return;
    }
    const std::size_t P = ceil_div(s, NR), Ptot = map.pair ? 2 * P : P;
    AlignedBuffer<T> Wp(P * d * NR), bp(P * NR), coefT(Ptot * m * NR);
    pack_weights(map, Wp.data(), bp.data());
    pack_coef(coef, s, m, map.pair, coefT.data());
    const std::size_t MC = feature_block_rows<T>(n, d, n_threads);
    const std::size_t nblocks = ceil_div(n, MC);
    const std::size_t ap_stride = round_up(MC * d + 1, 16);
    const std::size_t tmp_stride = round_up(kMR * NR + 2 * NR + MC * m, 16);
    AlignedBuffer<T> Ap(ap_stride * n_threads), tmp(tmp_stride * n_threads);
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel num_threads(n_threads)
#endif
    {
        T* ap = Ap.data() + thread_id() * ap_stride;
        T* cbuf = tmp.data() + thread_id() * tmp_stride;
        T* crow = cbuf + kMR * NR;
        T* srow = crow + NR;
        T* facc = srow + NR;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::ptrdiff_t blk = 0; blk < std::ptrdiff_t(nblocks); ++blk) {
            const std::size_t r0 = std::size_t(blk) * MC, mc = std::min(MC, n - r0);
            const std::size_t nmp = ceil_div(mc, kMR);
            std::fill(facc, facc + mc * m, T(0));
            for (std::size_t i = 0; i < nmp; ++i)
                pack_micro_panel(X, d, map.theta, nullptr, r0, mc, i, ap + i * d * kMR);
            for (std::size_t p = 0; p < P; ++p) {
                for (std::size_t i = 0; i < nmp; ++i) {
                    micro_kernel(d, ap + i * d * kMR, kMR, Wp.data() + p * d * NR, NR,
                                 bp.data() + p * NR, cbuf);
                    const std::size_t rows = std::min<std::size_t>(kMR, mc - i * kMR);
                    for (std::size_t r = 0; r < rows; ++r) {
                        cos_sin_row(cbuf + r * NR, crow, map.pair ? srow : nullptr, map.scale);
                        T* f = facc + (i * kMR + r) * m;
                        for (std::size_t o = 0; o < m; ++o) {
                            T v = dot_nr(crow, coefT.data() + (p * m + o) * NR);
                            if (map.pair) v += dot_nr(srow, coefT.data() + ((P + p) * m + o) * NR);
                            f[o] += v;
                        }
                    }
                }
            }
            std::memcpy(F + r0 * m, facc, mc * m * sizeof(T));
        }
    }
}

// ---- gram ---------------------------------------------------------------------------------------
// Rows per gram tile: fixed (results must not depend on the thread count).
constexpr std::size_t kGramRows = 256;

// Internal (panel-padded) index of output column c: the sin part starts at panel P.
inline std::size_t internal_col(std::size_t c, std::size_t s, std::size_t P, int NR) {
    return c < s ? c : P * NR + (c - s);
}

template <class T>
void gram(const T* X, std::size_t n, const CosMap<T>& map, const T* Y, std::size_t m, T* G, T* ZtY,
          bool accumulate, int n_threads) {
    using V = typename Isa<T>::vec;
    constexpr int NR = Isa<T>::NR, L = Isa<T>::L;
    const std::size_t d = map.d, s = map.s, nout = map.n_out();
    if (!accumulate) {
        std::fill(G, G + nout * nout, T(0));
        if (Y && ZtY) std::fill(ZtY, ZtY + nout * m, T(0));
    }
    if (n == 0 || s == 0) return;
    const bool want_y = Y && ZtY && m > 0;
    const std::size_t P = ceil_div(s, NR), Ptot = map.pair ? 2 * P : P, S = Ptot * NR;
    const std::size_t MC = kGramRows, nmp = MC / kMR;
    AlignedBuffer<T> Wp(P * d * NR), bp(P * NR);
    pack_weights(map, Wp.data(), bp.data());
    AlignedBuffer<T> Gi(S * S), Yi(want_y ? S * m : 1), Ap(nmp * d * kMR + 1), tile(Ptot * MC * NR);
    const std::size_t tmp_stride = round_up(kMR * NR + 2 * NR + kNV * L * (m + 1), 16);
    AlignedBuffer<T> tmp(tmp_stride * n_threads);
    const std::size_t nblocks = ceil_div(n, MC);
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel num_threads(n_threads)
#endif
    {
        T* cbuf = tmp.data() + thread_id() * tmp_stride;
        for (std::size_t blk = 0; blk < nblocks; ++blk) {
            const std::size_t r0 = blk * MC, mc = std::min(MC, n - r0);
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
            for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(nmp); ++i)
                pack_micro_panel(X, d, map.theta, nullptr, r0, mc, std::size_t(i),
                                 Ap.data() + i * d * kMR);
            // Z tile, panel-major: tile[q][row][NR], zero in padded rows and columns.
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
            for (std::ptrdiff_t pp = 0; pp < std::ptrdiff_t(P); ++pp) {
                const std::size_t p = std::size_t(pp);
                const std::size_t nc = std::min<std::size_t>(NR, s - p * NR);
                T* zc = tile.data() + p * MC * NR;
                T* zs = map.pair ? tile.data() + (P + p) * MC * NR : nullptr;
                for (std::size_t i = 0; i < nmp; ++i) {
                    T* zci = zc + i * kMR * NR;
                    T* zsi = zs ? zs + i * kMR * NR : nullptr;
                    if (i * kMR >= mc) {
                        std::fill(zci, zci + kMR * NR, T(0));
                        if (zsi) std::fill(zsi, zsi + kMR * NR, T(0));
                        continue;
                    }
                    micro_kernel(d, Ap.data() + i * d * kMR, kMR, Wp.data() + p * d * NR, NR,
                                 bp.data() + p * NR, cbuf);
                    for (int r = 0; r < kMR; ++r) {
                        T* zr = zci + r * NR;
                        T* sr = zsi ? zsi + r * NR : nullptr;
                        if (i * kMR + r >= mc) {
                            std::fill(zr, zr + NR, T(0));
                            if (sr) std::fill(sr, sr + NR, T(0));
                            continue;
                        }
                        cos_sin_row(cbuf + r * NR, zr, sr, map.scale);
                        for (std::size_t c = nc; c < std::size_t(NR); ++c) {
                            zr[c] = T(0);
                            if (sr) sr[c] = T(0);
                        }
                    }
                }
            }
            // Upper triangle of the rank-MC update, panel jq by panel (cyclic, fixed split);
            // each entry of Gi is owned by one panel, so it is summed in block order.
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static, 1)
#endif
            for (std::ptrdiff_t jj = 0; jj < std::ptrdiff_t(Ptot); ++jj) {
                const std::size_t jq = std::size_t(jj);
                const T* bpanel = tile.data() + jq * MC * NR;
                const std::size_t ni = ceil_div((jq + 1) * NR, kMR);
                for (std::size_t i = 0; i < ni; ++i) {
                    const std::size_t row0 = i * kMR;
                    const T* apanel = tile.data() + (row0 / NR) * MC * NR + row0 % NR;
                    micro_kernel(MC, apanel, NR, bpanel, NR, static_cast<const T*>(nullptr), cbuf);
                    for (int r = 0; r < kMR; ++r) {
                        T* g = Gi.data() + (row0 + r) * S + jq * NR;
                        for (int c = 0; c < NR; ++c) g[c] += cbuf[r * NR + c];
                    }
                }
                if (want_y) {
                    for (std::size_t o = 0; o < m; ++o) {
                        V acc[kNV];
                        for (int j = 0; j < kNV; ++j) acc[j] = V{};
                        for (std::size_t row = 0; row < mc; ++row) {
                            const T y = Y[(r0 + row) * m + o];
                            for (int j = 0; j < kNV; ++j)
                                acc[j] += y * loadu<V>(bpanel + row * NR + j * L);
                        }
                        for (int j = 0; j < kNV; ++j)
                            for (int l = 0; l < L; ++l) Yi.data()[(jq * NR + j * L + l) * m + o] += acc[j][l];
                    }
                }
            }
        }
    }
    for (std::size_t a = 0; a < nout; ++a) {
        const std::size_t ia = internal_col(a, s, P, NR);
        for (std::size_t b = 0; b < nout; ++b) {
            const std::size_t ib = internal_col(b, s, P, NR);
            G[a * nout + b] += Gi.data()[std::min(ia, ib) * S + std::max(ia, ib)];
        }
        if (want_y)
            for (std::size_t o = 0; o < m; ++o) ZtY[a * m + o] += Yi.data()[ia * m + o];
    }
}

// ---- loss and gradient --------------------------------------------------------------------------
constexpr std::size_t kLossRows = 256;  // fixed rows per block (reproducibility)

template <class T>
inline T log1pexp(T x) {  // log(1 + e^x) without overflow
    return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// Workspace and steps of the fused forward/backward pass; the step methods are called by every
// thread of an enclosing parallel region (orphaned worksharing loops).
template <class T>
struct LossGradEngine {
    static constexpr int NR = Isa<T>::NR;
    static constexpr int L = Isa<T>::L;
    using V = typename Isa<T>::vec;

    CosMap<T> map;
    std::size_t m;
    Loss loss;
    std::size_t d, s, P, Ptot, dpad, MC, nmp;
    AlignedBuffer<T> Wp, bp, coefT, Ap, Xb, Z, Sn, fpart, g, H, gcoef, gtheta_part, tmp;
    std::size_t tmp_stride;
    bool want_theta = true;

    LossGradEngine(const CosMap<T>& map_, std::size_t m_, Loss loss_, int n_threads)
        : map(map_), m(m_), loss(loss_) {
        d = map.d;
        s = map.s;
        P = ceil_div(s, NR);
        Ptot = map.pair ? 2 * P : P;
        dpad = round_up(std::max<std::size_t>(d, 1), kMR);
        MC = kLossRows;
        nmp = MC / kMR;
        Wp.reset(P * d * NR + 1);
        bp.reset(P * NR);
        pack_weights(map, Wp.data(), bp.data());
        coefT.reset(Ptot * m * NR);
        Ap.reset(nmp * d * kMR + 1);
        Xb.reset(MC * dpad);
        Z.reset(Ptot * MC * NR);
        Sn.reset(map.pair ? 1 : P * MC * NR);
        fpart.reset(P * MC * m);
        g.reset(MC * m * n_threads);  // one copy per thread (each computes the same values)
        H.reset(MC * NR * n_threads);  // one panel's dL/dU per thread (stays in L1/L2)
        gcoef.reset(Ptot * NR * m);
        gtheta_part.reset(P * dpad * L);  // lane partials per panel and feature
        tmp_stride = round_up(kMR * NR + NR, 16);
        tmp.reset(tmp_stride * n_threads);
    }

    // single thread: start accumulating a new batch
    void reset_accumulators() { gcoef.zero(); }  // gtheta_part is overwritten by the first block

    // All threads: forward and backward over rows [r0, r0+mc) of the logical X (idx-mapped),
    // adding the un-normalised gradients to gcoef / gtheta_part. Returns (on every thread) nothing;
    // the block's summed loss is stored in block_loss by the single thread.
    T block_loss = 0;
    void block(const T* X, const T* Y, const std::int64_t* idx, std::size_t r0, std::size_t mc) {
        T* cbuf = tmp.data() + thread_id() * tmp_stride;
        const std::size_t nmv = ceil_div(mc, kMR);  // micro-panels with valid rows
        const std::size_t mcp = nmv * kMR;
        // 1. pack X o theta (micro-panels) and raw X (rows, padded to dpad)
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::ptrdiff_t ii = 0; ii < std::ptrdiff_t(nmv); ++ii) {
            const std::size_t i = std::size_t(ii);
            pack_micro_panel(X, d, map.theta, idx, r0, mc, i, Ap.data() + i * d * kMR);
            for (int r = 0; r < kMR; ++r) {
                const std::size_t row = i * kMR + r;
                T* xb = Xb.data() + row * dpad;
                if (row < mc) std::memcpy(xb, row_ptr(X, d, idx, r0 + row), d * sizeof(T));
                else std::fill(xb, xb + d, T(0));
            }
        }
        // 2. forward: Z panels (and -sin for the backward pass), per-panel partial outputs
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::ptrdiff_t pp = 0; pp < std::ptrdiff_t(P); ++pp) {
            const std::size_t p = std::size_t(pp);
            T* zc = Z.data() + p * MC * NR;
            T* zs = map.pair ? Z.data() + (P + p) * MC * NR : Sn.data() + p * MC * NR;
            for (std::size_t i = 0; i < nmv; ++i) {
                micro_kernel(d, Ap.data() + i * d * kMR, kMR, Wp.data() + p * d * NR, NR,
                             bp.data() + p * NR, cbuf);
                for (int r = 0; r < kMR; ++r) {
                    const std::size_t row = i * kMR + r;
                    cos_sin_row(cbuf + r * NR, zc + row * NR, zs + row * NR, map.scale);
                }
            }
            T* fp = fpart.data() + p * MC * m;
            for (std::size_t row = 0; row < mcp; ++row)
                for (std::size_t o = 0; o < m; ++o) {
                    T v = dot_nr(zc + row * NR, coefT.data() + (p * m + o) * NR);
                    if (map.pair) v += dot_nr(zs + row * NR, coefT.data() + ((P + p) * m + o) * NR);
                    fp[row * m + o] = v;
                }
        }
        // 3. outputs, loss and dloss/df: O(mc m), computed by every thread into its own copy of g
        // (the same values everywhere), which saves a barrier; thread 0 publishes the loss.
        T* gt_ = g.data() + thread_id() * MC * m;
        {
            T total = 0;
            for (std::size_t row = 0; row < mcp; ++row) {
                T* gr = gt_ + row * m;
                if (row >= mc) {
                    std::fill(gr, gr + m, T(0));
                    continue;
                }
                for (std::size_t o = 0; o < m; ++o) {
                    T f = 0;
                    for (std::size_t p = 0; p < P; ++p) f += fpart.data()[(p * MC + row) * m + o];
                    gr[o] = f;
                }
                const T* y = Y + (idx ? std::size_t(idx[r0 + row]) : r0 + row) * m;
                T l = 0;
                if (loss == Loss::squared) {
                    for (std::size_t o = 0; o < m; ++o) {
                        const T e = gr[o] - y[o];
                        l += T(0.5) * e * e;
                        gr[o] = e;
                    }
                } else if (loss == Loss::logistic) {
                    for (std::size_t o = 0; o < m; ++o) {
                        const T f = gr[o];
                        l += log1pexp(f) - y[o] * f;
                        gr[o] = T(1) / (T(1) + std::exp(-f)) - y[o];
                    }
                } else {
                    T fmax = gr[0];
                    for (std::size_t o = 1; o < m; ++o) fmax = std::max(fmax, gr[o]);
                    T z = 0;
                    for (std::size_t o = 0; o < m; ++o) z += std::exp(gr[o] - fmax);
                    const T lse = fmax + std::log(z);
                    T ysum = 0;
                    for (std::size_t o = 0; o < m; ++o) {
                        l += y[o] * (lse - gr[o]);
                        ysum += y[o];
                    }
                    for (std::size_t o = 0; o < m; ++o) gr[o] = std::exp(gr[o] - lse) * ysum - y[o];
                }
                total += l;
            }
            if (thread_id() == 0) block_loss = total;  // read by all after step 4's barrier
        }
        // 4. backward: dL/dcoef = Z^T g, H = dL/dU, dL/dtheta_j = sum_k W_jk (X^T H)_jk
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::ptrdiff_t pp = 0; pp < std::ptrdiff_t(P); ++pp) {
            const std::size_t p = std::size_t(pp);
            const T* zc = Z.data() + p * MC * NR;
            const T* zs = map.pair ? Z.data() + (P + p) * MC * NR : Sn.data() + p * MC * NR;
            for (std::size_t part = 0; part < (map.pair ? 2u : 1u); ++part) {
                const T* zq = part ? zs : zc;
                const std::size_t q = part ? P + p : p;
                for (std::size_t o = 0; o < m; ++o) {
                    V acc[kNV];
                    for (int j = 0; j < kNV; ++j) acc[j] = V{};
                    for (std::size_t row = 0; row < mcp; ++row) {
                        const T gv = gt_[row * m + o];
                        for (int j = 0; j < kNV; ++j) acc[j] += gv * loadu<V>(zq + row * NR + j * L);
                    }
                    for (int j = 0; j < kNV; ++j)
                        for (int l = 0; l < L; ++l) gcoef.data()[(q * NR + j * L + l) * m + o] += acc[j][l];
                }
            }
            if (!want_theta) continue;
            // H[row][c] = sum_o g[row][o] * (d Z_q / dU)[row][c] * coef_q[c][o]
            T* h = H.data() + thread_id() * MC * NR;
            for (std::size_t row = 0; row < mcp; ++row) {
                V hv[kNV];
                for (int j = 0; j < kNV; ++j) hv[j] = V{};
                for (std::size_t o = 0; o < m; ++o) {
                    const T gv = gt_[row * m + o];
                    const T* cc = coefT.data() + (p * m + o) * NR;
                    if (map.pair) {
                        const T* cs = coefT.data() + ((P + p) * m + o) * NR;
                        // d(c cos U)/dU = -(c sin U) = -zs ; d(c sin U)/dU = c cos U = zc
                        for (int j = 0; j < kNV; ++j)
                            hv[j] += gv * (loadu<V>(zc + row * NR + j * L) * loadu<V>(cs + j * L) -
                                           loadu<V>(zs + row * NR + j * L) * loadu<V>(cc + j * L));
                    } else {
                        // zs holds c sin U: d(c cos U)/dU = -zs
                        for (int j = 0; j < kNV; ++j)
                            hv[j] -= gv * (loadu<V>(zs + row * NR + j * L) * loadu<V>(cc + j * L));
                    }
                }
                for (int j = 0; j < kNV; ++j) storeu(h + row * NR + j * L, hv[j]);
            }
            T* gt = gtheta_part.data() + p * dpad * L;
            const T* wpanel = Wp.data() + p * d * NR;
            for (std::size_t jb = 0; jb < dpad / kMR; ++jb) {
                const int rows = int(std::min<std::size_t>(kMR, d - jb * kMR));
                micro_kernel_wdot(mcp, Xb.data() + jb * kMR, dpad, h, wpanel + jb * kMR * NR, rows,
                                  r0 != 0, gt + jb * kMR * L);
            }
        }
    }

    // the theta gradient of the mean loss over `count` rows: the lane partials of every panel
    // summed in panel order, then across lanes
    void finish_theta(std::size_t count, T* grad_theta) const {
        const T inv = T(1) / T(count);
        for (std::size_t j = 0; j < d; ++j) {
            if (P == 0) {
                grad_theta[j] = T(0);
                continue;
            }
            V acc = loadu<V>(gtheta_part.data() + j * L);
            for (std::size_t p = 1; p < P; ++p) acc += loadu<V>(gtheta_part.data() + (p * dpad + j) * L);
            grad_theta[j] = hsum<T>(acc) * inv;
        }
    }

    // single thread: the gradients of the mean loss over `count` rows
    void finish(std::size_t count, T* grad_coef, T* grad_theta) const {
        const T inv = T(1) / T(count);
        const std::size_t nout = map.n_out();
        for (std::size_t c = 0; c < nout; ++c) {
            const std::size_t ic = internal_col(c, s, P, NR);
            for (std::size_t o = 0; o < m; ++o) grad_coef[c * m + o] = gcoef.data()[ic * m + o] * inv;
        }
        if (grad_theta) finish_theta(count, grad_theta);
    }
};

// Threads worth using for blocks of `rows` rows: each of the four barrier-separated phases of a
// block should give every thread at least ~1M multiply-adds, or the barriers cost more than the
// split saves (mini-batches of 32 run on one thread). Results do not depend on the choice.
inline int useful_threads(int n_threads, std::size_t rows, std::size_t d, std::size_t s) {
    const std::size_t work = std::min(rows, kLossRows) * std::max<std::size_t>(d, 1) * s;
    const std::size_t by_work = std::max<std::size_t>(1, work / (std::size_t(1) << 20));
    return int(std::min<std::size_t>(std::size_t(n_threads), by_work));
}

template <class T>
T loss_and_grad(const T* X, const T* Y, std::size_t n, const CosMap<T>& map, const T* coef,
                std::size_t m, Loss loss, T* grad_coef, T* grad_theta, int n_threads) {
    n_threads = useful_threads(n_threads, n, map.d, map.s);
    LossGradEngine<T> eng(map, m, loss, n_threads);
    eng.want_theta = grad_theta != nullptr;
    pack_coef(coef, map.s, m, map.pair, eng.coefT.data());
    T total = 0;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel num_threads(n_threads)
#endif
    {
        for (std::size_t r0 = 0; r0 < n; r0 += eng.MC) {
            eng.block(X, Y, nullptr, r0, std::min(eng.MC, n - r0));
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp single
#endif
            total += eng.block_loss;
        }
    }
    eng.finish(n, grad_coef, grad_theta);
    return total / T(n);
}

// One optimiser step on elements [0, len) of a parameter block: the elementwise update of
// optim_kernels.hpp (the one adam_prox_step / sgd_prox_step apply), compiled for this ISA.
template <class T>
inline void optimizer_update(T* param, const T* grad, T* mom, T* var, std::size_t len, bool adam,
                             const StepCoeffs<T>& c) {
    if (adam) adam_prox_apply(param, grad, mom, var, len, c);
    else sgd_prox_apply(param, grad, len, c);
}

template <class T>
T train_epoch(const T* X, const T* Y, std::size_t n, const std::int64_t* order, std::size_t n_order,
              std::size_t batch_size, const T* weights, const T* offsets, T* theta, std::size_t d,
              std::size_t s, T scale, T* coef, std::size_t m, Loss loss, const StepConfig<T>& cfg,
              T* m_coef, T* v_coef, T* m_theta, T* v_theta, std::int64_t* step, int n_threads) {
    (void)n;
    n_threads = useful_threads(n_threads, batch_size, d, s);
    CosMap<T> map;
    map.weights = weights;
    map.offsets = offsets;
    map.theta = theta;
    map.d = d;
    map.s = s;
    map.scale = scale;
    LossGradEngine<T> eng(map, m, loss, n_threads);
    eng.want_theta = cfg.update_theta;
    const std::size_t nout = map.n_out();
    AlignedBuffer<T> grad_coef(nout * m), grad_theta(d + 1);
    const std::size_t nbatches = ceil_div(n_order, batch_size);
    const std::size_t P = eng.P;
    // Start fetching the rows of batch bi, which are scattered over X.
    auto prefetch_batch = [&](std::size_t bi) {
        const std::size_t b1 = bi * batch_size;
        for (std::size_t r = b1; r < std::min(b1 + batch_size, n_order); ++r) {
            const char* xr = reinterpret_cast<const char*>(X + std::size_t(order[r]) * d);
            for (std::size_t off = 0; off < d * sizeof(T); off += 64) __builtin_prefetch(xr + off, 0, 1);
            __builtin_prefetch(Y + std::size_t(order[r]) * m, 0, 1);
        }
    };
    eng.reset_accumulators();
    pack_coef(coef, s, m, false, eng.coefT.data());
    prefetch_batch(1);
    const std::int64_t step0 = *step;
    T loss_sum = 0;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel num_threads(n_threads)
#endif
    {
        for (std::size_t bi = 0; bi < nbatches; ++bi) {
            const std::size_t b0 = bi * batch_size, nb = std::min(batch_size, n_order - b0);
            T batch_loss = 0;
            for (std::size_t r0 = 0; r0 < nb; r0 += eng.MC) {
                eng.block(X, Y, order + b0, r0, std::min(eng.MC, nb - r0));
                batch_loss += eng.block_loss;  // read after the barrier of block()'s last loop
            }
            // The step, shared out by coefficient panel (item p < P: rows [p NR, p NR + NR) of
            // coef; item P: theta and the bookkeeping). Adam and the prox act element by element,
            // so the split does not change a bit; each panel is then re-packed and its gradient
            // accumulator cleared for the next batch. One barrier per batch.
            const T inv = T(1) / T(nb);
            const std::int64_t t = step0 + std::int64_t(bi) + 1;
            const T lr = cfg.learning_rate;
            const auto ccoef = step_coeffs(lr, cfg.beta1, cfg.beta2, cfg.eps, t, cfg.l2_coef, T(0));
            const auto ctheta = step_coeffs(lr, cfg.beta1, cfg.beta2, cfg.eps, t, T(0), cfg.l1_theta);
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
            for (std::ptrdiff_t item = 0; item <= std::ptrdiff_t(P); ++item) {
                if (std::size_t(item) < P) {
                    const std::size_t p = std::size_t(item), c0 = p * NR_of<T>();
                    const std::size_t len = (std::min(s, c0 + NR_of<T>()) - c0) * m;
                    T* gc = eng.gcoef.data() + c0 * m;  // non-pair: internal column = column
                    if (cfg.update_coef) {
                        T* gr = grad_coef.data() + c0 * m;
                        for (std::size_t i = 0; i < len; ++i) gr[i] = gc[i] * inv;
                        optimizer_update(coef + c0 * m, gr, m_coef + c0 * m, v_coef + c0 * m, len,
                                         cfg.adam, ccoef);
                    }
                    std::fill(gc, gc + NR_of<T>() * m, T(0));
                    if (bi + 1 < nbatches) pack_coef_panel(coef, s, m, p, eng.coefT.data());
                } else {
                    if (cfg.update_theta) {
                        eng.finish_theta(nb, grad_theta.data());
                        optimizer_update(theta, grad_theta.data(), m_theta, v_theta, d, cfg.adam,
                                         ctheta);
                    }
                    loss_sum += batch_loss / T(nb);
                    if (bi + 2 < nbatches) prefetch_batch(bi + 2);
                }
            }
        }
    }
    *step = step0 + std::int64_t(nbatches);
    return nbatches ? loss_sum / T(nbatches) : T(0);
}

}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern

// ---- explicit instantiations for this instruction set -------------------------------------------
namespace rffkern {
namespace RFFKERN_ISA_NS {
#define RFFKERN_INSTANTIATE(T)                                                                      \
    template void features<T>(const T*, std::size_t, const CosMap<T>&, T*, int);                   \
    template void predict<T>(const T*, std::size_t, const CosMap<T>&, const T*, std::size_t, T*,   \
                             int);                                                                 \
    template void gram<T>(const T*, std::size_t, const CosMap<T>&, const T*, std::size_t, T*, T*,  \
                          bool, int);                                                              \
    template T loss_and_grad<T>(const T*, const T*, std::size_t, const CosMap<T>&, const T*,       \
                                std::size_t, Loss, T*, T*, int);                                   \
    template T train_epoch<T>(const T*, const T*, std::size_t, const std::int64_t*, std::size_t,   \
                              std::size_t, const T*, const T*, T*, std::size_t, std::size_t, T,    \
                              T*, std::size_t, Loss, const StepConfig<T>&, T*, T*, T*, T*,          \
                              std::int64_t*, int);
RFFKERN_INSTANTIATE(float)
RFFKERN_INSTANTIATE(double)
#undef RFFKERN_INSTANTIATE
}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
