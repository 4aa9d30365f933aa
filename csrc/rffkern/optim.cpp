// Optimiser updates on flat parameter arrays (elementwise; parallel only when large).
#include "rffkern/optim.hpp"

#include <cmath>
#include <cstdint>

#include "rffkern/parallel.hpp"

namespace rffkern {
namespace {
template <class T>
inline T prox(T p, T shrink, T thresh) {
    p *= shrink;
    if (thresh > T(0)) p = p > thresh ? p - thresh : (p < -thresh ? p + thresh : T(0));
    return p;
}
constexpr std::size_t kParallelMin = 1 << 15;  // below this a parallel region costs more than it saves
}  // namespace

template <class T>
void adam_prox_step(T* param, const T* grad, T* m, T* v, std::size_t len, std::int64_t step, T lr,
                    T beta1, T beta2, T eps, T l2, T l1, int n_threads) {
    checked_threads(n_threads);
    if (step < 1) throw std::invalid_argument("step must be >= 1 (Adam's bias correction)");
    const T bc1 = T(1) - std::pow(beta1, T(step)), bc2 = T(1) - std::pow(beta2, T(step));
    const T shrink = T(1) / (T(1) + T(2) * l2 * lr), thresh = l1 * lr;
    const std::ptrdiff_t nn = std::ptrdiff_t(len);
    (void)n_threads;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel for simd schedule(static) num_threads(n_threads) if (len >= kParallelMin)
#endif
    for (std::ptrdiff_t i = 0; i < nn; ++i) {
        const T gi = grad[i];
        m[i] = beta1 * m[i] + (T(1) - beta1) * gi;
        v[i] = beta2 * v[i] + (T(1) - beta2) * gi * gi;
        param[i] = prox(param[i] - lr * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps), shrink, thresh);
    }
}

template <class T>
void sgd_prox_step(T* param, const T* grad, std::size_t len, T lr, T l2, T l1, int n_threads) {
    checked_threads(n_threads);
    const T shrink = T(1) / (T(1) + T(2) * l2 * lr), thresh = l1 * lr;
    const std::ptrdiff_t nn = std::ptrdiff_t(len);
    (void)n_threads;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel for simd schedule(static) num_threads(n_threads) if (len >= kParallelMin)
#endif
    for (std::ptrdiff_t i = 0; i < nn; ++i) param[i] = prox(param[i] - lr * grad[i], shrink, thresh);
}

template void adam_prox_step<float>(float*, const float*, float*, float*, std::size_t, std::int64_t,
                                    float, float, float, float, float, float, int);
template void adam_prox_step<double>(double*, const double*, double*, double*, std::size_t,
                                     std::int64_t, double, double, double, double, double, double, int);
template void sgd_prox_step<float>(float*, const float*, std::size_t, float, float, float, int);
template void sgd_prox_step<double>(double*, const double*, std::size_t, double, double, double, int);

}  // namespace rffkern
