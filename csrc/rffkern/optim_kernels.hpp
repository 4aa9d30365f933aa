// The elementwise optimiser updates, written once. Included by optim.cpp (the public
// adam_prox_step / sgd_prox_step) and by every per-ISA kernel file (the steps inside
// train_epoch), each inside its own namespace RFFKERN_OPTIM_NS so that the copies compiled with
// different instruction sets never meet at link time.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "rffkern/optim.hpp"

#ifndef RFFKERN_OPTIM_NS
#error "define RFFKERN_OPTIM_NS before including optim_kernels.hpp"
#endif

namespace rffkern {
namespace RFFKERN_OPTIM_NS {

// The per-step constants of one update: computed once per step, shared by every block of it.
template <class T>
struct StepCoeffs {
    T lr, beta1, beta2, eps;
    T bc1 = 1, bc2 = 1;       // Adam's bias corrections 1 - beta^step
    T shrink, thresh;         // prox of l2 ||p||^2: p / (1 + 2 l2 lr); of l1 ||p||_1: threshold l1 lr
};

// step < 1 leaves the bias corrections at 1 (SGD has none).
template <class T>
inline StepCoeffs<T> step_coeffs(const AdamSettings<T>& adam, std::int64_t step,
                                 const ProxPenalty<T>& penalty) {
    StepCoeffs<T> c;
    c.lr = adam.learning_rate;
    c.beta1 = adam.beta1;
    c.beta2 = adam.beta2;
    c.eps = adam.eps;
    if (step >= 1) {
        c.bc1 = T(1) - std::pow(adam.beta1, T(step));
        c.bc2 = T(1) - std::pow(adam.beta2, T(step));
    }
    c.shrink = T(1) / (T(1) + T(2) * penalty.l2 * adam.learning_rate);
    c.thresh = penalty.l1 * adam.learning_rate;
    return c;
}

template <class T>
inline T prox(T p, T shrink, T thresh) {
    p *= shrink;
    if (thresh > T(0)) p = p > thresh ? p - thresh : (p < -thresh ? p + thresh : T(0));
    return p;
}

// Bias-corrected Adam step on elements [0, len), then the proximal maps.
template <class T>
inline void adam_prox_apply(T* __restrict param, const T* __restrict grad, T* __restrict m,
                            T* __restrict v, std::size_t len, const StepCoeffs<T>& c) {
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (std::size_t i = 0; i < len; ++i) {
        const T gi = grad[i];
        m[i] = c.beta1 * m[i] + (T(1) - c.beta1) * gi;
        v[i] = c.beta2 * v[i] + (T(1) - c.beta2) * gi * gi;
        param[i] = prox(param[i] - c.lr * (m[i] / c.bc1) / (std::sqrt(v[i] / c.bc2) + c.eps),
                        c.shrink, c.thresh);
    }
}

// Adam with one second moment for the whole block: every v[i] holds the same running mean of
// the block's mean squared gradient (1/len) sum_j g_j^2, so the step of element i is
// proportional to m_i / RMS_j(g_j): invariant to the block's scale as Adam is, but an element
// whose gradient is small beside the others' moves little (per-element Adam moves every element
// by about lr whatever its gradient). v[] must start equal (zeros); elements [0, len) are the
// whole block (the mean is taken over them).
template <class T>
inline void adam_shared_prox_apply(T* __restrict param, const T* __restrict grad, T* __restrict m,
                                   T* __restrict v, std::size_t len, const StepCoeffs<T>& c) {
    double sq = 0;
    for (std::size_t i = 0; i < len; ++i) sq += double(grad[i]) * double(grad[i]);
    const T g2 = len ? T(sq / double(len)) : T(0);
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (std::size_t i = 0; i < len; ++i) {
        m[i] = c.beta1 * m[i] + (T(1) - c.beta1) * grad[i];
        v[i] = c.beta2 * v[i] + (T(1) - c.beta2) * g2;
        param[i] = prox(param[i] - c.lr * (m[i] / c.bc1) / (std::sqrt(v[i] / c.bc2) + c.eps),
                        c.shrink, c.thresh);
    }
}

// Plain gradient step p <- p - lr g on elements [0, len), then the proximal maps.
template <class T>
inline void sgd_prox_apply(T* __restrict param, const T* __restrict grad, std::size_t len,
                           const StepCoeffs<T>& c) {
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (std::size_t i = 0; i < len; ++i) param[i] = prox(param[i] - c.lr * grad[i], c.shrink, c.thresh);
}

// One optimiser step on elements [0, len) of a parameter block; mom/var are unused by SGD.
template <class T>
inline void optimizer_update(T* param, const T* grad, T* mom, T* var, std::size_t len, bool adam,
                             const StepCoeffs<T>& c) {
    if (adam) adam_prox_apply(param, grad, mom, var, len, c);
    else sgd_prox_apply(param, grad, len, c);
}

}  // namespace RFFKERN_OPTIM_NS
}  // namespace rffkern
