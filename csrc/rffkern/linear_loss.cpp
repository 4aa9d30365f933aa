// The public entry point of the linear losses: the thread clamp, then the build of the active
// instruction set.
#include "rffkern/linear_loss.hpp"

#include <stdexcept>

#include "rffkern/isa/kernel_tables.hpp"
#include "rffkern/parallel.hpp"

namespace rffkern {

template <class T>
double logistic_loss_grad(const T* Z, std::size_t n, std::size_t s, const T* coef, const double* y,
                          const double* w, double* grad, int n_threads) {
    n_threads = checked_threads(n_threads);
    if (n == 0) throw std::invalid_argument("logistic_loss_grad needs at least one sample");
    return active_linear_loss_kernels<T>().logistic_loss_grad(Z, n, s, coef, y, w, grad, n_threads);
}

template <class T>
double softmax_loss_grad(const T* Z, std::size_t n, std::size_t s, std::size_t m, const T* coef_t,
                         const double* Y, const double* w, double* grad_t, int n_threads) {
    n_threads = checked_threads(n_threads);
    if (n == 0) throw std::invalid_argument("softmax_loss_grad needs at least one sample");
    if (m == 0) throw std::invalid_argument("softmax_loss_grad needs at least one output");
    return active_linear_loss_kernels<T>().softmax_loss_grad(Z, n, s, m, coef_t, Y, w, grad_t, n_threads);
}

template double logistic_loss_grad<float>(const float*, std::size_t, std::size_t, const float*, const double*,
                                          const double*, double*, int);
template double logistic_loss_grad<double>(const double*, std::size_t, std::size_t, const double*,
                                           const double*, const double*, double*, int);

template double softmax_loss_grad<float>(const float*, std::size_t, std::size_t, std::size_t, const float*,
                                         const double*, const double*, double*, int);
template double softmax_loss_grad<double>(const double*, std::size_t, std::size_t, std::size_t, const double*,
                                          const double*, const double*, double*, int);

}  // namespace rffkern
