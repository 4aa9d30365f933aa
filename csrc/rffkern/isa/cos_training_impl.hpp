// The training kernels: loss_and_grad (one fused forward/backward pass) and train_epoch (a whole
// epoch of mini-batch Adam/SGD + prox steps in one parallel region), for the instruction set of
// the including translation unit. Both run LossGradEngine, the register-tile GEMM of
// register_tile.hpp with the loss's forward and backward epilogues.
//
// Reproducibility: blocks of kLossRows rows are fixed, every panel's partial sums are added in
// panel order, and the optimiser steps are elementwise, so results do not depend on n_threads.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>

#include "rffkern/isa/register_tile.hpp"

#ifndef RFFKERN_ISA_NS
#error "define RFFKERN_ISA_NS before including cos_training_impl.hpp"
#endif

#define RFFKERN_OPTIM_NS RFFKERN_ISA_NS
#include "rffkern/optim_kernels.hpp"
#undef RFFKERN_OPTIM_NS

namespace rffkern {
namespace RFFKERN_ISA_NS {

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
    static constexpr int NR = kNR<T>;
    static constexpr int L = VecTraits<T>::L;
    using V = typename VecTraits<T>::V;

    FourierFeatureMap<T> map;
    const CenteredRows<T>* rows;  // X as centered sparse rows, or nullptr (dense X)
    std::size_t m;
    Loss loss;
    std::size_t d, s, P, Ptot, dpad, MC, nmp;
    AlignedBuffer<T> Wp, bp, bc, coefT, Ap, Xb, Z, Sn, fpart, g, H, gcoef, gtheta_part, tmp;
    std::size_t tmp_stride;
    bool want_theta = true;

    LossGradEngine(const FourierFeatureMap<T>& map_, std::size_t m_, Loss loss_, int n_threads,
                   const CenteredRows<T>* rows_ = nullptr)
        : map(map_), rows(rows_), m(m_), loss(loss_) {
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
        bc.reset(rows ? P * NR : 1);
        coefT.reset(Ptot * m * NR);
        Ap.reset(rows ? 1 : nmp * d * kMR + 1);  // sparse rows are read where they are stored
        Xb.reset(rows ? 1 : MC * dpad);
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
        // 1. pack X o theta (micro-panels) and raw X (rows, padded to dpad); sparse rows: nothing
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::ptrdiff_t ii = 0; ii < std::ptrdiff_t(rows ? 0 : nmv); ++ii) {
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
            if (rows) {
                // the offsets with the center folded in at the current theta, then row by row
                T* bcp = bc.data() + p * NR;
                centered_offsets(rows->center, map.theta, d, Wp.data() + p * d * NR, bp.data() + p * NR, bcp);
                for (std::size_t row = 0; row < mcp; ++row) {
                    if (row < mc) {
                        std::size_t q0, q1;
                        sparse_row_range(*rows, idx, r0 + row, q0, q1);
                        sparse_row_u(rows->indices + q0, rows->values + q0, q1 - q0, map.theta,
                                     Wp.data() + p * d * NR, bcp, cbuf);
                        cos_sin_row(cbuf, zc + row * NR, zs + row * NR, map.scale);
                    } else {  // padding rows (dL/dU = 0 there): finite values
                        cos_sin_row(bcp, zc + row * NR, zs + row * NR, map.scale);
                    }
                }
            } else {
                for (std::size_t i = 0; i < nmv; ++i) {
                    micro_kernel(d, Ap.data() + i * d * kMR, kMR, Wp.data() + p * d * NR, NR,
                                 bp.data() + p * NR, cbuf);
                    for (int r = 0; r < kMR; ++r) {
                        const std::size_t row = i * kMR + r;
                        cos_sin_row(cbuf + r * NR, zc + row * NR, zs + row * NR, map.scale);
                    }
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
                } else if (loss == Loss::linear) {
                    for (std::size_t o = 0; o < m; ++o) {
                        l += y[o] * gr[o];
                        gr[o] = y[o];
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
                add_panel_t_times(zq, gt_, mcp, m, gcoef.data() + q * NR * m);
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
            if (rows) {
                // sum_i x_ij H_ik = sum over stored entries + center_j sum_i H_ik
                if (r0 == 0) std::fill(gt, gt + dpad * L, T(0));
                V hsum[kNV];
                for (int j = 0; j < kNV; ++j) hsum[j] = V{};
                for (std::size_t row = 0; row < mc; ++row) {
                    std::size_t q0, q1;
                    sparse_row_range(*rows, idx, r0 + row, q0, q1);
                    sparse_row_wdot(rows->indices + q0, rows->values + q0, q1 - q0, wpanel, h + row * NR, gt);
                    for (int j = 0; j < kNV; ++j) hsum[j] += loadu<V>(h + row * NR + j * L);
                }
                if (rows->center)
                    for (std::size_t k = 0; k < d; ++k) {
                        const T c = rows->center[k];
                        if (c == T(0)) continue;
                        V v = loadu<V>(wpanel + k * NR) * hsum[0];
                        for (int j = 1; j < kNV; ++j) v += loadu<V>(wpanel + k * NR + j * L) * hsum[j];
                        storeu(gt + k * L, loadu<V>(gt + k * L) + c * v);
                    }
                continue;
            }
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
// block should give every thread at least 2^18 (~262k) multiply-adds, or the barriers cost more than
// the split saves. Results do not depend on the choice. Larger thresholds leave on one thread work
// that two threads run faster (loss_and_grad on a few thousand rows, as in SRFF; RFFNet's
// mini-batches of 32 on 100 inputs); 2^17 gains nothing more (docs/design_notes.rst).
inline int useful_threads(int n_threads, std::size_t rows, std::size_t d, std::size_t s) {
    const std::size_t work = std::min(rows, kLossRows) * std::max<std::size_t>(d, 1) * s;
    const std::size_t by_work = std::max<std::size_t>(1, work / (std::size_t(1) << 18));
    return int(std::min<std::size_t>(std::size_t(n_threads), by_work));
}

template <class T>
T loss_and_grad(const T* X, const T* Y, std::size_t n, const FourierFeatureMap<T>& map,
                const T* coef, std::size_t m, Loss loss, T* grad_coef, T* grad_theta, int n_threads,
                const CenteredRows<T>* rows) {
    n_threads = useful_threads(n_threads, n, map.d, map.s);
    LossGradEngine<T> eng(map, m, loss, n_threads, rows);
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


template <class T>
T train_epoch(const EpochBatches<T>& data, const FourierFeatureMap<T>& fixed_map, Loss loss,
              const StepConfig<T>& cfg, TrainableState<T>& state, int n_threads) {
    const T* X = data.X;
    const T* Y = data.Y;
    const std::int64_t* order = data.order;
    const std::size_t n_order = data.n_order, batch_size = data.batch_size;
    const std::size_t d = fixed_map.d, s = fixed_map.s, m = state.m;
    constexpr std::size_t NR = std::size_t(kNR<T>);
    n_threads = useful_threads(n_threads, batch_size, d, s);
    FourierFeatureMap<T> map = fixed_map;
    map.theta = state.theta;
    LossGradEngine<T> eng(map, m, loss, n_threads, data.rows);
    eng.want_theta = cfg.update_theta;
    const std::size_t nout = map.n_out();
    AlignedBuffer<T> grad_coef(nout * m), grad_theta(d + 1);
    const std::size_t nbatches = ceil_div(n_order, batch_size);
    const std::size_t P = eng.P;
    // Start fetching the rows of batch bi, which are scattered over X.
    auto prefetch_batch = [&](std::size_t bi) {
        const std::size_t b1 = bi * batch_size;
        for (std::size_t r = b1; r < std::min(b1 + batch_size, n_order); ++r) {
            const std::size_t row = std::size_t(order[r]);
            if (data.rows) {  // the row's stored entries
                const std::size_t q0 = std::size_t(data.rows->indptr[row]), q1 = std::size_t(data.rows->indptr[row + 1]);
                const char* vr = reinterpret_cast<const char*>(data.rows->values + q0);
                const char* ir = reinterpret_cast<const char*>(data.rows->indices + q0);
                for (std::size_t off = 0; off < (q1 - q0) * sizeof(T); off += 64) __builtin_prefetch(vr + off, 0, 1);
                for (std::size_t off = 0; off < (q1 - q0) * sizeof(std::int32_t); off += 64)
                    __builtin_prefetch(ir + off, 0, 1);
            } else {
                const char* xr = reinterpret_cast<const char*>(X + row * d);
                for (std::size_t off = 0; off < d * sizeof(T); off += 64) __builtin_prefetch(xr + off, 0, 1);
            }
            __builtin_prefetch(Y + row * m, 0, 1);
        }
    };
    eng.reset_accumulators();
    pack_coef(state.coef, s, m, false, eng.coefT.data());
    prefetch_batch(1);
    const std::int64_t step0 = state.step;
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
            const auto ccoef = step_coeffs(cfg.rate, t, ProxPenalty<T>{cfg.l2_coef, T(0)});
            const auto ctheta = step_coeffs(cfg.rate, t, ProxPenalty<T>{T(0), cfg.l1_theta});
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
            for (std::ptrdiff_t item = 0; item <= std::ptrdiff_t(P); ++item) {
                if (std::size_t(item) < P) {
                    const std::size_t p = std::size_t(item), c0 = p * std::size_t(NR);
                    const std::size_t len = (std::min(s, c0 + std::size_t(NR)) - c0) * m;
                    T* gc = eng.gcoef.data() + c0 * m;  // non-pair: internal column = column
                    if (cfg.update_coef) {
                        T* gr = grad_coef.data() + c0 * m;
                        for (std::size_t i = 0; i < len; ++i) gr[i] = gc[i] * inv;
                        optimizer_update(state.coef + c0 * m, gr, state.m_coef + c0 * m,
                                         state.v_coef + c0 * m, len, cfg.adam, ccoef);
                    }
                    std::fill(gc, gc + std::size_t(NR) * m, T(0));
                    if (bi + 1 < nbatches) pack_coef_panel(state.coef, s, m, P, p, eng.coefT.data());
                } else {
                    if (cfg.update_theta) {
                        eng.finish_theta(nb, grad_theta.data());
                        if (cfg.adam && cfg.shared_theta_moment)
                            adam_shared_prox_apply(state.theta, grad_theta.data(), state.m_theta,
                                                   state.v_theta, d, ctheta);
                        else
                            optimizer_update(state.theta, grad_theta.data(), state.m_theta,
                                             state.v_theta, d, cfg.adam, ctheta);
                    }
                    loss_sum += batch_loss / T(nb);
                    if (bi + 2 < nbatches) prefetch_batch(bi + 2);
                }
            }
        }
    }
    state.step = step0 + std::int64_t(nbatches);
    return nbatches ? loss_sum / T(nbatches) : T(0);
}

}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
