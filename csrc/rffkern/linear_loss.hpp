// Losses of a linear model on given features: the closing fit of RFFNetClassifier (refit_coef),
// whose features are fixed once the relevances are trained. The contract is in docs/kernels.rst.
#pragma once
#include <cstddef>

namespace rffkern {

// The weighted logistic loss of the logits f = Z coef and its gradient in coef, in one pass over Z:
//   returns sum_i w_i (log(1 + exp(f_i)) - y_i f_i), and grad (s) = sum_i w_i (sigmoid(f_i) - y_i) Z_i.
// Z is n x s (row-major), coef s values, y and w n values (y in {0, 1}; any real weights). The
// logits are formed in T, the loss and residuals in double; the gradient is summed in T over each
// 256-row chunk and in double over the chunks. Bitwise reproducible for any n_threads.
template <class T>
double logistic_loss_grad(const T* Z, std::size_t n, std::size_t s, const T* coef, const double* y,
                          const double* w, double* grad, int n_threads);

// The weighted softmax cross-entropy of the logits F = Z coef (n x m) and its gradient in coef:
//   returns sum_i w_i sum_k Y_ik (lse(F_i) - F_ik), with lse the log-sum-exp over the m outputs,
//   and grad_t (m x s, the transposed gradient) with grad_t[k] = sum_i w_i (p_ik sum_l Y_il - Y_ik) Z_i,
//   p_i = softmax(F_i). coef_t is coef transposed (m x s, row-major), Y n x m (one-hot rows, or
//   any non-negative weights of the classes), w n values. Precision as logistic_loss_grad's.
//   Bitwise reproducible for any n_threads.
template <class T>
double softmax_loss_grad(const T* Z, std::size_t n, std::size_t s, std::size_t m, const T* coef_t,
                         const double* Y, const double* w, double* grad_t, int n_threads);

}  // namespace rffkern
