// Optimiser updates on flat parameter arrays (elementwise; parallel only when large).
#include "rffkern/optim.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "rffkern/parallel.hpp"

#define RFFKERN_OPTIM_NS optim_generic
#include "rffkern/optim_kernels.hpp"
#undef RFFKERN_OPTIM_NS

namespace rffkern {
namespace {
constexpr std::size_t kParallelMin = 1 << 15;  // below this a parallel region costs more than it saves
}  // namespace

template <class T>
void adam_prox_step(T* param, const T* grad, T* m, T* v, std::size_t len, std::int64_t step, T lr,
                    T beta1, T beta2, T eps, T l2, T l1, int n_threads) {
    checked_threads(n_threads);
    if (step < 1) throw std::invalid_argument("step must be >= 1 (Adam's bias correction)");
    const auto c = optim_generic::step_coeffs(lr, beta1, beta2, eps, step, l2, l1);
    if (len < kParallelMin || n_threads == 1) {
        optim_generic::adam_prox_apply(param, grad, m, v, len, c);
        return;
    }
    // fixed chunks: the elementwise result does not depend on the split
    const std::ptrdiff_t nchunks = std::ptrdiff_t(ceil_div(len, kParallelMin));
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel for schedule(static) num_threads(n_threads)
#endif
    for (std::ptrdiff_t k = 0; k < nchunks; ++k) {
        const std::size_t i0 = std::size_t(k) * kParallelMin, n = std::min(kParallelMin, len - i0);
        optim_generic::adam_prox_apply(param + i0, grad + i0, m + i0, v + i0, n, c);
    }
}

template <class T>
void sgd_prox_step(T* param, const T* grad, std::size_t len, T lr, T l2, T l1, int n_threads) {
    checked_threads(n_threads);
    const auto c = optim_generic::step_coeffs(lr, T(0), T(0), T(0), 0, l2, l1);
    if (len < kParallelMin || n_threads == 1) {
        optim_generic::sgd_prox_apply(param, grad, len, c);
        return;
    }
    const std::ptrdiff_t nchunks = std::ptrdiff_t(ceil_div(len, kParallelMin));
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel for schedule(static) num_threads(n_threads)
#endif
    for (std::ptrdiff_t k = 0; k < nchunks; ++k) {
        const std::size_t i0 = std::size_t(k) * kParallelMin, n = std::min(kParallelMin, len - i0);
        optim_generic::sgd_prox_apply(param + i0, grad + i0, n, c);
    }
}

template void adam_prox_step<float>(float*, const float*, float*, float*, std::size_t, std::int64_t,
                                    float, float, float, float, float, float, int);
template void adam_prox_step<double>(double*, const double*, double*, double*, std::size_t,
                                     std::int64_t, double, double, double, double, double, double, int);
template void sgd_prox_step<float>(float*, const float*, std::size_t, float, float, float, int);
template void sgd_prox_step<double>(double*, const double*, std::size_t, double, double, double, int);

}  // namespace rffkern
