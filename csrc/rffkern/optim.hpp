// Optimiser updates on flat parameter arrays.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rffkern {

// Bias-corrected Adam step on one parameter block (in place), then the proximal maps:
//   l2 > 0: prox of l2 * ||p||^2, p <- p / (1 + 2 l2 lr);   l1 > 0: soft-threshold by l1 * lr.
// `step` is the 1-based step number used in the bias correction.
template <class T>
void adam_prox_step(T* param, const T* grad, T* m, T* v, std::size_t len, std::int64_t step,
                    T lr, T beta1, T beta2, T eps, T l2, T l1, int n_threads);

// Plain gradient step p <- p - lr g, then the same proximal maps.
template <class T>
void sgd_prox_step(T* param, const T* grad, std::size_t len, T lr, T l2, T l1, int n_threads);

}  // namespace rffkern
