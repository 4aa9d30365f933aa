// The forward kernels: features, predict and gram, for the instruction set of the including
// translation unit. Each is the register-tile GEMM of register_tile.hpp with its own epilogue;
// U is never stored.
//
// Reproducibility: every output entry is computed by one fixed sequence of operations whatever
// the number of threads (fixed row blocks, fixed panels, per-panel partial sums added in panel
// order), so all kernels are bitwise reproducible across thread counts.
#pragma once
#include <algorithm>
#include <cstring>

#include "rffkern/isa/register_tile.hpp"

namespace rffkern {
namespace RFFKERN_ISA_NS {

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

// The packed weight panels and offsets of the map (pack_weights); with centered sparse rows the
// offsets get the center folded in (centered_offsets), once per call.
template <class T>
void pack_map_panels(const FourierFeatureMap<T>& map, const CenteredRows<T>* rows, T* Wp, T* bp) {
    constexpr int NR = kNR<T>;
    pack_weights(map, Wp, bp);
    if (rows)
        for (std::size_t p = 0; p < ceil_div(map.s, std::size_t(NR)); ++p)
            centered_offsets(rows->center, map.theta, map.d, Wp + p * map.d * NR, bp + p * NR, bp + p * NR);
}

// The kMR x kNR tile of U for micro-panel i of the block of mc rows from r0, from the rows' stored
// entries (sparse_row_u); padding rows (past mc) get the offsets: finite, never stored.
template <class T>
void rows_u_tile(const CenteredRows<T>& rows, const T* theta, std::size_t r0, std::size_t mc, std::size_t i,
                 const T* wpanel, const T* bpanel, T* cbuf) {
    constexpr int NR = kNR<T>;
    for (int r = 0; r < kMR; ++r) {
        const std::size_t row = i * kMR + std::size_t(r);
        if (row >= mc) {
            std::memcpy(cbuf + r * NR, bpanel, NR * sizeof(T));
            continue;
        }
        std::size_t q0, q1;
        sparse_row_range(rows, nullptr, r0 + row, q0, q1);
        sparse_row_u(rows.indices + q0, rows.values + q0, q1 - q0, theta, wpanel, bpanel, cbuf + r * NR);
    }
}

// The row-block loop of features and predict: blocks of MC rows are shared out statically; each
// thread packs its block of X o theta, then computes every kMR x kNR tile of U (W panel p, micro-
// panel i) into a per-thread buffer and hands it to the kernel's epilogue:
//   begin_block(r0, mc, extra)          before the block's tiles
//   tile(r0, mc, p, i, u_tile, extra)   u_tile: kMR x kNR values, row-major
//   end_block(r0, mc, extra)            after them
// `extra` is the thread's own scratch: two rows of kNR values, then MC * extra_per_row values.
// With centered sparse rows the tile's rows come from their stored entries instead (rows_u_tile);
// no block is packed.
template <class T, class BeginBlock, class Tile, class EndBlock>
void for_each_u_tile(const T* X, std::size_t n, const FourierFeatureMap<T>& map, int n_threads,
                     const CenteredRows<T>* rows, std::size_t extra_per_row, BeginBlock begin_block,
                     Tile tile, EndBlock end_block) {
    constexpr int NR = kNR<T>;
    const std::size_t d = map.d, s = map.s;
    const std::size_t P = ceil_div(s, NR);
    AlignedBuffer<T> Wp(P * d * NR), bp(P * NR);
    pack_map_panels(map, rows, Wp.data(), bp.data());
    const std::size_t MC = feature_block_rows<T>(n, d, n_threads);
    const std::size_t nblocks = ceil_div(n, MC);
    const std::size_t ap_stride = rows ? 16 : round_up(MC * d + 1, 16);
    const std::size_t tmp_stride = round_up(kMR * NR + 2 * NR + MC * extra_per_row, 16);
    AlignedBuffer<T> Ap(ap_stride * n_threads), tmp(tmp_stride * n_threads);
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel num_threads(n_threads)
#endif
    {
        T* ap = Ap.data() + thread_id() * ap_stride;
        T* cbuf = tmp.data() + thread_id() * tmp_stride;
        T* extra = cbuf + kMR * NR;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::ptrdiff_t blk = 0; blk < std::ptrdiff_t(nblocks); ++blk) {
            const std::size_t r0 = std::size_t(blk) * MC, mc = std::min(MC, n - r0);
            const std::size_t nmp = ceil_div(mc, kMR);
            begin_block(r0, mc, extra);
            if (!rows)
                for (std::size_t i = 0; i < nmp; ++i)
                    pack_micro_panel(X, d, map.theta, nullptr, r0, mc, i, ap + i * d * kMR);
            for (std::size_t p = 0; p < P; ++p) {
                const T* wpanel = Wp.data() + p * d * NR;
                const T* bpanel = bp.data() + p * NR;
                for (std::size_t i = 0; i < nmp; ++i) {
                    if (rows)
                        rows_u_tile(*rows, map.theta, r0, mc, i, wpanel, bpanel, cbuf);
                    else
                        micro_kernel(d, ap + i * d * kMR, kMR, wpanel, NR, bpanel, cbuf);
                    tile(r0, mc, p, i, static_cast<const T*>(cbuf), extra);
                }
            }
            end_block(r0, mc, extra);
        }
    }
}

// ---- features -----------------------------------------------------------------------------------
template <class T>
void features(const T* X, std::size_t n, const FourierFeatureMap<T>& map, T* Z, int n_threads,
              const CenteredRows<T>* rows) {
    constexpr int NR = kNR<T>;
    const std::size_t s = map.s, ld = map.n_out();
    if (n == 0 || s == 0) return;
    auto nothing = [](std::size_t, std::size_t, T*) {};
    // a partial last panel goes through two rows of scratch (cos, sin) then its nc columns are copied
    auto emit = [&](std::size_t r0, std::size_t mc, std::size_t p, std::size_t i, const T* u, T* tail) {
        const bool pair = map.pair;
        const T scale = map.scale;
        const std::size_t c0 = p * NR, nc = std::min<std::size_t>(NR, s - c0);
        const std::size_t rows = std::min<std::size_t>(kMR, mc - i * kMR);
        T* z = Z + (r0 + i * kMR) * ld;
        if (nc == std::size_t(NR)) {
            for (std::size_t r = 0; r < rows; ++r, z += ld)
                cos_sin_row(u + r * NR, z + c0, pair ? z + s + c0 : nullptr, scale);
            return;
        }
        T* ctail = tail;
        T* stail = tail + NR;
        for (std::size_t r = 0; r < rows; ++r, z += ld) {
            cos_sin_row(u + r * NR, ctail, pair ? stail : nullptr, scale);
            std::memcpy(z + c0, ctail, nc * sizeof(T));
            if (pair) std::memcpy(z + s + c0, stail, nc * sizeof(T));
        }
    };
    for_each_u_tile(X, n, map, n_threads, rows, 0, nothing, emit, nothing);
}

// ---- predict ------------------------------------------------------------------------------------
template <class T>
void predict(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* coef,
             std::size_t m, T* F, int n_threads, const CenteredRows<T>* rows) {
    constexpr int NR = kNR<T>;
    const std::size_t s = map.s;
    if (n == 0 || m == 0) return;
    if (s == 0) {
        std::fill(F, F + n * m, T(0));
        return;
    }
    const std::size_t P = ceil_div(s, NR), Ptot = map.pair ? 2 * P : P;
    AlignedBuffer<T> coefT(Ptot * m * NR);
    pack_coef(coef, s, m, map.pair, coefT.data());
    // per thread: a cos row, a sin row, then the block's outputs (MC x m), summed over panels
    auto clear = [&](std::size_t, std::size_t mc, T* scratch) {
        T* facc = scratch + 2 * NR;
        std::fill(facc, facc + mc * m, T(0));
    };
    auto dot_coef = [&](std::size_t, std::size_t mc, std::size_t p, std::size_t i, const T* u, T* scratch) {
        const bool pair = map.pair;
        T* crow = scratch;
        T* srow = crow + NR;
        T* facc = srow + NR;
        const std::size_t rows = std::min<std::size_t>(kMR, mc - i * kMR);
        for (std::size_t r = 0; r < rows; ++r) {
            cos_sin_row(u + r * NR, crow, pair ? srow : nullptr, map.scale);
            T* f = facc + (i * kMR + r) * m;
            for (std::size_t o = 0; o < m; ++o) {
                T v = dot_nr(crow, coefT.data() + (p * m + o) * NR);
                if (pair) v += dot_nr(srow, coefT.data() + ((P + p) * m + o) * NR);
                f[o] += v;
            }
        }
    };
    auto store = [&](std::size_t r0, std::size_t mc, T* scratch) {
        std::memcpy(F + r0 * m, scratch + 2 * NR, mc * m * sizeof(T));
    };
    for_each_u_tile(X, n, map, n_threads, rows, m, clear, dot_coef, store);
}

// ---- gram ---------------------------------------------------------------------------------------
// Rows per gram tile: fixed (results must not depend on the thread count).
constexpr std::size_t kGramRows = 256;

// With centered sparse rows the tile's rows of U come from their stored entries (rows_u_tile)
// instead of the packed block's micro-kernel; the rank-MC updates are the same.
template <class T>
void gram(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* Y, std::size_t m,
          T* G, T* ZtY, bool accumulate, int n_threads, const CenteredRows<T>* rows) {
    constexpr int NR = kNR<T>, L = VecTraits<T>::L;
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
    pack_map_panels(map, rows, Wp.data(), bp.data());
    AlignedBuffer<T> Gi(S * S), Yi(want_y ? S * m : 1), Ap(rows ? 1 : nmp * d * kMR + 1), tile(Ptot * MC * NR);
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
            if (!rows) {  // (the same branch on every thread)
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
                for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(nmp); ++i)
                    pack_micro_panel(X, d, map.theta, nullptr, r0, mc, std::size_t(i),
                                     Ap.data() + i * d * kMR);
            }
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
                    if (rows)
                        rows_u_tile(*rows, map.theta, r0, mc, i, Wp.data() + p * d * NR, bp.data() + p * NR, cbuf);
                    else
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
                if (want_y) add_panel_t_times(bpanel, Y + r0 * m, mc, m, Yi.data() + jq * NR * m);
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

}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
