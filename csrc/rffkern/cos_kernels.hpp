// The fused cosine-feature kernels: the contract of ALGORITHMS.md section 2.
//
// With U = (X o theta) W + b and Z = scale * cos(U) (or the pair form [cos U, sin U]), every kernel
// computes U tile by tile in registers and never stores an n x s temporary.
// All arrays are C-contiguous (row-major); every kernel takes an explicit thread count.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rffkern {

// A view of one random cosine feature map; it owns nothing.
template <class T>
struct CosMap {
    const T* weights = nullptr;  // d x s, row-major
    const T* offsets = nullptr;  // s, or nullptr for zero offsets
    const T* theta = nullptr;    // d ARD scales, or nullptr for all ones
    std::size_t d = 0;
    std::size_t s = 0;
    T scale = 1;                 // c in Z = c cos(U)
    bool pair = false;           // outputs [cos U, sin U] (2s columns) instead of cos U
    std::size_t n_out() const { return pair ? 2 * s : s; }
};

enum class Loss : int { squared = 0, logistic = 1, softmax = 2 };

// Z (n x n_out) = scale * cos(U), [cos U, sin U] in the pair form.
template <class T>
void fused_cos_features(const T* X, std::size_t n, const CosMap<T>& map, T* Z, int n_threads);

// F (n x m) = Z coef, coef of shape n_out x m; memory O(tile).
template <class T>
void fused_cos_predict(const T* X, std::size_t n, const CosMap<T>& map, const T* coef,
                       std::size_t m, T* F, int n_threads);

// G = Z^T Z (n_out x n_out) and, if Y is given, ZtY = Z^T Y (n_out x m), streamed over row blocks.
// Each entry is summed in the same order whatever n_threads is (bitwise reproducible).
// With accumulate = true the results are added to G and ZtY (streaming over chunks).
template <class T>
void streamed_gram(const T* X, std::size_t n, const CosMap<T>& map, const T* Y, std::size_t m,
                   T* G, T* ZtY, bool accumulate, int n_threads);

// Loss L = (1/n) sum_i l(y_i, f_i) with f = Z coef, and its gradients dL/dcoef (n_out x m) and
// dL/dtheta (d; skipped when grad_theta is nullptr). Losses, per sample:
//   squared   l = 1/2 sum_o (f_o - y_o)^2
//   logistic  l = sum_o log(1 + exp(f_o)) - y_o f_o          (y in {0, 1}, m independent outputs)
//   softmax   l = -sum_o y_o log softmax(f)_o                  (y one-hot or probabilities)
// Bitwise reproducible for any n_threads.
template <class T>
T loss_and_grad(const T* X, const T* Y, std::size_t n, const CosMap<T>& map, const T* coef,
                std::size_t m, Loss loss, T* grad_coef, T* grad_theta, int n_threads);

// Optimiser settings shared by one epoch of mini-batch steps.
template <class T>
struct StepConfig {
    bool adam = true;            // false: plain SGD
    T learning_rate = T(1e-3);
    T beta1 = T(0.9), beta2 = T(0.999), eps = T(1e-8);
    T l2_coef = 0;               // prox of l2 * ||coef||^2 after each step: coef /= (1 + 2 l2 lr)
    T l1_theta = 0;              // prox of l1 * ||theta||_1: soft-threshold by l1 * lr
    bool update_coef = true;
    bool update_theta = true;
};

// One pass of mini-batch steps: batches are consecutive chunks of `order` (row indices into X/Y)
// of size batch_size (the last may be smaller). theta, coef and the Adam moments are updated in
// place; `step` is the Adam step counter (incremented per batch). Returns the mean batch loss.
template <class T>
T train_epoch(const T* X, const T* Y, std::size_t n, const std::int64_t* order, std::size_t n_order,
              std::size_t batch_size, const T* weights, const T* offsets, T* theta, std::size_t d,
              std::size_t s, T scale, T* coef, std::size_t m, Loss loss, const StepConfig<T>& cfg,
              T* m_coef, T* v_coef, T* m_theta, T* v_theta, std::int64_t* step, int n_threads);

// Which instruction set the dispatcher chose ("avx512", "avx2" or "baseline").
const char* active_isa();
// Whether vector cos/sin come from libmvec.
bool have_libmvec();
// Force an instruction set ("auto", "avx512", "avx2", "baseline"); for tests and benchmarks.
// Throws std::invalid_argument if the CPU lacks it.
void set_isa(const char* name);

}  // namespace rffkern
