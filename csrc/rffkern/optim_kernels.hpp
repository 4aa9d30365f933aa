// The elementwise optimiser updates, written once. Included by optim.cpp (the public
// adam_prox_step / sgd_prox_step) and by every per-ISA kernel file (the steps inside
// train_epoch), each inside its own namespace RFFKERN_OPTIM_NS so that the copies compiled with
// different instruction sets never meet at link time.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

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

template <class T>
inline StepCoeffs<T> step_coeffs(T lr, T beta1, T beta2, T eps, std::int64_t step, T l2, T l1) {
    StepCoeffs<T> c;
    c.lr = lr;
    c.beta1 = beta1;
    c.beta2 = beta2;
    c.eps = eps;
    if (step >= 1) {
        c.bc1 = T(1) - std::pow(beta1, T(step));
        c.bc2 = T(1) - std::pow(beta2, T(step));
    }
    c.shrink = T(1) / (T(1) + T(2) * l2 * lr);
    c.thresh = l1 * lr;
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

// Plain gradient step p <- p - lr g on elements [0, len), then the proximal maps.
template <class T>
inline void sgd_prox_apply(T* __restrict param, const T* __restrict grad, std::size_t len,
                           const StepCoeffs<T>& c) {
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (std::size_t i = 0; i < len; ++i) param[i] = prox(param[i] - c.lr * grad[i], c.shrink, c.thresh);
}

}  // namespace RFFKERN_OPTIM_NS
}  // namespace rffkern
