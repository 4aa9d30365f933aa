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

// update(i0, count) on fixed chunks of [0, len): the elementwise result does not depend on the split.
template <class Update>
void update_in_chunks(std::size_t len, int n_threads, const Update& update) {
    if (len < kParallelMin || n_threads == 1) {
        update(std::size_t(0), len);
        return;
    }
    const std::ptrdiff_t nchunks = std::ptrdiff_t(ceil_div(len, kParallelMin));
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel for schedule(static) num_threads(n_threads)
#endif
    for (std::ptrdiff_t k = 0; k < nchunks; ++k) {
        const std::size_t i0 = std::size_t(k) * kParallelMin;
        update(i0, std::min(kParallelMin, len - i0));
    }
}
}  // namespace

template <class T>
void adam_prox_step(T* param, const T* grad, T* m, T* v, std::size_t len, std::int64_t step,
                    const AdamSettings<T>& adam, const ProxPenalty<T>& penalty, int n_threads) {
    n_threads = checked_threads(n_threads);
    if (step < 1) throw std::invalid_argument("step must be >= 1 (Adam's bias correction)");
    const auto c = optim_generic::step_coeffs(adam, step, penalty);
    update_in_chunks(len, n_threads, [&](std::size_t i0, std::size_t count) {
        optim_generic::adam_prox_apply(param + i0, grad + i0, m + i0, v + i0, count, c);
    });
}

template <class T>
void sgd_prox_step(T* param, const T* grad, std::size_t len, T learning_rate,
                   const ProxPenalty<T>& penalty, int n_threads) {
    n_threads = checked_threads(n_threads);
    AdamSettings<T> rate;
    rate.learning_rate = learning_rate;
    const auto c = optim_generic::step_coeffs(rate, 0, penalty);
    update_in_chunks(len, n_threads, [&](std::size_t i0, std::size_t count) {
        optim_generic::sgd_prox_apply(param + i0, grad + i0, count, c);
    });
}

#define RFFKERN_INSTANTIATE(T)                                                                      \
    template void adam_prox_step<T>(T*, const T*, T*, T*, std::size_t, std::int64_t,              \
                                    const AdamSettings<T>&, const ProxPenalty<T>&, int);           \
    template void sgd_prox_step<T>(T*, const T*, std::size_t, T, const ProxPenalty<T>&, int);
RFFKERN_INSTANTIATE(float)
RFFKERN_INSTANTIATE(double)
#undef RFFKERN_INSTANTIATE

}  // namespace rffkern
