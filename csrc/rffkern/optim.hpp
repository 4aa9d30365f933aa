// Optimiser updates on flat parameter arrays.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rffkern {

// Adam's step size and moment settings (SGD reads only learning_rate).
template <class T>
struct AdamSettings {
    T learning_rate = T(1e-3);
    T beta1 = T(0.9), beta2 = T(0.999);
    T eps = T(1e-8);  // Adam's epsilon: added to sqrt(v) in the denominator
};

// The proximal maps applied after a step: l2 > 0: prox of l2 * ||p||^2, p <- p / (1 + 2 l2 lr);
// l1 > 0: prox of l1 * ||p||_1, soft-threshold by l1 * lr.
template <class T>
struct ProxPenalty {
    T l2 = 0;
    T l1 = 0;
};

// Bias-corrected Adam step on one parameter block (in place), then the proximal maps.
// `step` is the 1-based step number used in the bias correction.
template <class T>
void adam_prox_step(T* param, const T* grad, T* m, T* v, std::size_t len, std::int64_t step,
                    const AdamSettings<T>& adam, const ProxPenalty<T>& penalty, int n_threads);

// Plain gradient step p <- p - lr g, then the same proximal maps.
template <class T>
void sgd_prox_step(T* param, const T* grad, std::size_t len, T learning_rate,
                   const ProxPenalty<T>& penalty, int n_threads);

}  // namespace rffkern
