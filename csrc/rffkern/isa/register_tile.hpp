// The register-tile GEMM under every fused cosine kernel (BLIS-style), for the instruction set the
// including translation unit is compiled for (RFFKERN_ISA_NS names its namespace).
//
// W is packed once into column panels of kNR columns, a block of rows of X o theta into
// micro-panels of kMR rows, and a register-blocked micro-kernel computes a kMR x kNR tile of
// U = (X o theta) W + b starting from the offsets. The epilogues at the end turn a tile row into
// cos/sin values or dot products with coef, the consumers the kernel files combine.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "rffkern/cos_kernels.hpp"
#include "rffkern/isa/simd_vector.hpp"
#include "rffkern/parallel.hpp"

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
using simd::loadu;
using simd::storeu;
using simd::vcos;
using simd::vsin;
using simd::vsincos;
using simd::VecTraits;

// Columns of a micro-tile and of a packed W panel (kNV vectors).
template <class T>
constexpr int kNR = kNV * VecTraits<T>::L;

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
inline T hsum(typename VecTraits<T>::V v) {
    return hsum_tree(v);
}

// ---- the micro-kernel -------------------------------------------------------------------------
// acc (kMR x NR in registers) = init + sum_k A[k*lda + r] * B[k*ldb + c], for k < K.
// init is one row of NR values broadcast to every row (the offsets b), or zero when null.
template <class T>
__attribute__((always_inline)) inline void micro_accumulate(
    std::size_t K, const T* __restrict A, std::size_t lda, const T* __restrict B, std::size_t ldb,
    const T* __restrict init, typename VecTraits<T>::V (&acc)[kMR][kNV]) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L;
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
    constexpr int L = VecTraits<T>::L;
    typename VecTraits<T>::V acc[kMR][kNV];
    micro_accumulate(K, A, lda, B, ldb, init, acc);
#pragma GCC unroll 8
    for (int r = 0; r < kMR; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < kNV; ++j) storeu(C + r * kNR<T> + j * L, acc[r][j]);
}

// The theta-gradient tile: the accumulated tile C (K rows of X against K rows of dL/dU, ldb = NR),
// then, for each of the `rows` valid rows r, the lane-wise products of C's row with row r of the
// W panel summed over the kNV vectors: out[r*L + l] (= or +=) sum_j C[r][j*L + l] W[r][j*L + l].
// The lanes are summed once per gradient (finish), not once per panel.
template <class T>
inline void micro_kernel_wdot(std::size_t K, const T* __restrict A, std::size_t lda,
                              const T* __restrict B, const T* __restrict Wrows, int rows,
                              bool accumulate, T* __restrict out) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L;
    constexpr int NR = kNR<T>;
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

// ---- packing ------------------------------------------------------------------------------------
// W (d x s) -> panels Wp[p][k][NR] and offsets -> bp[p][NR], zero padded past s.
template <class T>
void pack_weights(const FourierFeatureMap<T>& map, T* Wp, T* bp) {
    constexpr int NR = kNR<T>;
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

// coef (n_out x m) -> coefT[q][o][NR]: panel q of the cos part (q < P) or sin part (q >= P),
// transposed so a dot product over a panel's columns is contiguous; zero padded.
template <class T>
void pack_coef_panel(const T* coef, std::size_t s, std::size_t m, std::size_t P, std::size_t q,
                     T* coefT) {
    constexpr int NR = kNR<T>;
    const std::size_t part = q / P, p = q % P;
    for (std::size_t o = 0; o < m; ++o)
        for (std::size_t c = 0; c < std::size_t(NR); ++c) {
            const std::size_t col = p * NR + c;
            coefT[(q * m + o) * NR + c] = col < s ? coef[(part * s + col) * m + o] : T(0);
        }
}

template <class T>
void pack_coef(const T* coef, std::size_t s, std::size_t m, bool pair, T* coefT) {
    const std::size_t P = ceil_div(s, kNR<T>), Ptot = pair ? 2 * P : P;
    for (std::size_t q = 0; q < Ptot; ++q) pack_coef_panel(coef, s, m, P, q, coefT);
}

// ---- epilogues: what a kernel does with one row of a U tile -------------------------------------
// scale*cos (and scale*sin) of NR consecutive values of U.
template <class T>
inline void cos_sin_row(const T* u, T* cos_out, T* sin_out, T scale) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L;
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
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L;
    V acc = loadu<V>(a) * loadu<V>(b);
    for (int j = 1; j < kNV; ++j) acc += loadu<V>(a + j * L) * loadu<V>(b + j * L);
    return hsum<T>(acc);
}

// out[c * m + o] += sum_row panel[row][c] * y[row * m + o] for the kNR columns c of a panel
// (rows x kNR, row-major) and every output o: lane-wise sums in row order, then added per entry.
// Always inlined: as a call it tipped GCC's growth limits and gram stopped inlining micro_kernel.
template <class T>
__attribute__((always_inline)) inline void add_panel_t_times(const T* panel, const T* y, std::size_t rows,
                                                             std::size_t m, T* out) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L, NR = kNR<T>;
    for (std::size_t o = 0; o < m; ++o) {
        V acc[kNV];
        for (int j = 0; j < kNV; ++j) acc[j] = V{};
        for (std::size_t row = 0; row < rows; ++row) {
            const T yv = y[row * m + o];
            for (int j = 0; j < kNV; ++j) acc[j] += yv * loadu<V>(panel + row * NR + j * L);
        }
        for (int j = 0; j < kNV; ++j)
            for (int l = 0; l < L; ++l) out[(j * L + l) * m + o] += acc[j][l];
    }
}

// ---- centered sparse rows (CenteredRows) -------------------------------------------------------
// The entries [begin, end) of CSR row `row` of the logical rows (idx-mapped, as row_ptr).
template <class T>
inline void sparse_row_range(const CenteredRows<T>& rows, const std::int64_t* idx, std::size_t row,
                             std::size_t& begin, std::size_t& end) {
    const std::size_t r = idx ? std::size_t(idx[row]) : row;
    begin = std::size_t(rows.indptr[r]);
    end = std::size_t(rows.indptr[r + 1]);
}

// The panel's share of the offsets with the center folded in: out[c] = b[c] + sum_k center[k]
// theta[k] Wpanel[k][c] (theta null: ones; center null: out = b), summed in k order. b and out may
// be one array (pack_map_panels updates the offsets in place), so neither is restrict: b is read
// whole into registers before out is written.
template <class T>
inline void centered_offsets(const T* __restrict center, const T* __restrict theta, std::size_t d,
                             const T* __restrict Wpanel, const T* b, T* out) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L, NR = kNR<T>;
    V acc[kNV];
    for (int j = 0; j < kNV; ++j) acc[j] = loadu<V>(b + j * L);
    if (center)
        for (std::size_t k = 0; k < d; ++k) {
            const T c = theta ? center[k] * theta[k] : center[k];
            if (c == T(0)) continue;
            for (int j = 0; j < kNV; ++j) acc[j] += c * loadu<V>(Wpanel + k * NR + j * L);
        }
    for (int j = 0; j < kNV; ++j) storeu(out + j * L, acc[j]);
}

// One row of a U tile from its stored entries: u[c] = init[c] + sum_q a_q Wpanel[k_q][c] with
// a_q = values[q] theta[k_q] (theta null: values[q]). Two interleaved accumulator sets (even and
// odd entries) keep two independent chains of multiply-adds per vector, added at the end.
template <class T>
inline void sparse_row_u(const std::int32_t* __restrict ind, const T* __restrict val, std::size_t nnz,
                         const T* __restrict theta, const T* __restrict Wpanel, const T* __restrict init,
                         T* __restrict u) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L, NR = kNR<T>;
    V a0[kNV], a1[kNV];
    for (int j = 0; j < kNV; ++j) {
        a0[j] = loadu<V>(init + j * L);
        a1[j] = V{};
    }
    std::size_t q = 0;
    for (; q + 2 <= nnz; q += 2) {
        const std::size_t k0 = std::size_t(ind[q]), k1 = std::size_t(ind[q + 1]);
        const T c0 = theta ? val[q] * theta[k0] : val[q];
        const T c1 = theta ? val[q + 1] * theta[k1] : val[q + 1];
        const T* w0 = Wpanel + k0 * NR;
        const T* w1 = Wpanel + k1 * NR;
#pragma GCC unroll 4
        for (int j = 0; j < kNV; ++j) {
            a0[j] += c0 * loadu<V>(w0 + j * L);
            a1[j] += c1 * loadu<V>(w1 + j * L);
        }
    }
    if (q < nnz) {
        const std::size_t k0 = std::size_t(ind[q]);
        const T c0 = theta ? val[q] * theta[k0] : val[q];
        for (int j = 0; j < kNV; ++j) a0[j] += c0 * loadu<V>(Wpanel + k0 * NR + j * L);
    }
    for (int j = 0; j < kNV; ++j) storeu(u + j * L, a0[j] + a1[j]);
}

// The theta-gradient lane partials of one row from its stored entries: for each entry (k, x),
// out[k*L + l] += x * sum_j Wpanel[k][j*L + l] h[j*L + l] (h: the row's dL/dU on the panel).
template <class T>
inline void sparse_row_wdot(const std::int32_t* __restrict ind, const T* __restrict val, std::size_t nnz,
                            const T* __restrict Wpanel, const T* __restrict h, T* __restrict out) {
    using V = typename VecTraits<T>::V;
    constexpr int L = VecTraits<T>::L, NR = kNR<T>;
    V hv[kNV];
    for (int j = 0; j < kNV; ++j) hv[j] = loadu<V>(h + j * L);
    for (std::size_t q = 0; q < nnz; ++q) {
        const std::size_t k = std::size_t(ind[q]);
        const T* w = Wpanel + k * NR;
        V v = loadu<V>(w) * hv[0];
#pragma GCC unroll 4
        for (int j = 1; j < kNV; ++j) v += loadu<V>(w + j * L) * hv[j];
        storeu(out + k * L, loadu<V>(out + k * L) + val[q] * v);
    }
}

// Internal (panel-padded) index of output column c: the sin part starts at panel P.
inline std::size_t internal_col(std::size_t c, std::size_t s, std::size_t P, int NR) {
    return c < s ? c : P * NR + (c - s);
}

}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
