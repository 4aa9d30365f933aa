// The fused cosine-feature kernels: the contract documented in docs/kernels.rst.
//
// With U = (X o theta) W + b and Z = scale * cos(U) (or the pair form [cos U, sin U]), every kernel
// computes U tile by tile in registers and never stores an n x s temporary.
// All arrays are C-contiguous (row-major); every kernel takes an explicit thread count (clamped to
// the processors available; results are bitwise the same for any count).
#pragma once
#include <cstddef>
#include <cstdint>

#include "rffkern/optim.hpp"

namespace rffkern {

// A view of one random Fourier feature map (RandomFourierFeatures in Python); it owns nothing.
template <class T>
struct FourierFeatureMap {
    const T* weights = nullptr;  // d x s, row-major
    const T* offsets = nullptr;  // s, or nullptr for zero offsets
    const T* theta = nullptr;    // d ARD scales, or nullptr for all ones
    std::size_t d = 0;
    std::size_t s = 0;
    T scale = 1;                 // c in Z = c cos(U)
    bool pair = false;           // outputs [cos U, sin U] (2s columns) instead of cos U
    std::size_t n_out() const { return pair ? 2 * s : s; }
};

// linear is no training loss: its gradient in f is Y itself, which makes loss_and_grad the backward
// pass of f = Z coef for any upstream gradient Y (rffkern.torch); train_epoch refuses it.
enum class Loss : int { squared = 0, logistic = 1, softmax = 2, linear = 3 };

// Rows of X held as X = 1 center^T + S with S sparse (CSR): inputs that mostly take one value per
// column (one-hot and bag-of-words columns, pixels, standardized). The kernels given such rows
// compute (X o theta) W + b as S (theta o W) + (b + (center o theta) W), in O(nnz(S) s + d s) per
// block of rows instead of O(n d s), and read X only through them. They must describe the same
// rows as X (the kernels do not compare the two).
template <class T>
struct CenteredRows {
    const std::int64_t* indptr = nullptr;   // n + 1 offsets into indices/values, from 0
    const std::int32_t* indices = nullptr;  // the column of each stored entry, in [0, d)
    const T* values = nullptr;              // X[i][j] - center[j]
    const T* center = nullptr;              // d values, or nullptr for zero
};

// Z (n x n_out) = scale * cos(U), [cos U, sin U] in the pair form.
// `rows` (here and below), when not null, replaces X (see CenteredRows).
template <class T>
void fused_cos_features(const T* X, std::size_t n, const FourierFeatureMap<T>& map, T* Z,
                        int n_threads, const CenteredRows<T>* rows = nullptr);

// F (n x m) = Z coef, coef of shape n_out x m; memory O(tile).
template <class T>
void fused_cos_predict(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* coef,
                       std::size_t m, T* F, int n_threads, const CenteredRows<T>* rows = nullptr);

// G = Z^T Z (n_out x n_out) and, if Y is given, ZtY = Z^T Y (n_out x m), streamed over row blocks.
// Each entry is summed in the same order whatever n_threads is (bitwise reproducible).
// With accumulate = true the results are added to G and ZtY (streaming over chunks).
template <class T>
void streamed_gram(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* Y,
                   std::size_t m, T* G, T* ZtY, bool accumulate, int n_threads,
                   const CenteredRows<T>* rows = nullptr);

// Loss L = (1/n) sum_i l(y_i, f_i) with f = Z coef, and its gradients dL/dcoef (n_out x m) and
// dL/dtheta (d; skipped when grad_theta is nullptr). Losses, per sample:
//   squared   l = 1/2 sum_o (f_o - y_o)^2
//   logistic  l = sum_o log(1 + exp(f_o)) - y_o f_o          (y in {0, 1}, m independent outputs)
//   softmax   l = -sum_o y_o log softmax(f)_o                  (y one-hot or probabilities)
//   linear    l = sum_o y_o f_o                                (dl/df = y: any upstream gradient)
// Bitwise reproducible for any n_threads.
template <class T>
T loss_and_grad(const T* X, const T* Y, std::size_t n, const FourierFeatureMap<T>& map,
                const T* coef, std::size_t m, Loss loss, T* grad_coef, T* grad_theta, int n_threads,
                const CenteredRows<T>* rows = nullptr);

// The data of one epoch: the mini-batches are consecutive chunks of `order` (row indices into
// X and Y) of batch_size rows, the last one possibly smaller.
template <class T>
struct EpochBatches {
    const T* X = nullptr;                 // n x d
    const T* Y = nullptr;                 // n x m targets
    std::size_t n = 0;
    const std::int64_t* order = nullptr;  // n_order indices in [0, n)
    std::size_t n_order = 0;
    std::size_t batch_size = 1;
    const CenteredRows<T>* rows = nullptr;  // X as centered sparse rows (or nullptr: dense X)
};

// What an epoch trains, updated in place: the readout coef (s x m), the ARD scales theta (d), their
// Adam moments and Adam's step counter (incremented once per batch).
template <class T>
struct TrainableState {
    T* coef = nullptr;
    std::size_t m = 0;  // outputs: the columns of coef and Y
    T* theta = nullptr;
    T *m_coef = nullptr, *v_coef = nullptr;    // Adam's moments of coef (s x m); unused by SGD
    T *m_theta = nullptr, *v_theta = nullptr;  // and of theta (d)
    std::int64_t step = 0;
};

// Optimiser settings shared by one epoch of mini-batch steps.
template <class T>
struct StepConfig {
    bool adam = true;            // false: plain SGD (reads only rate.learning_rate)
    AdamSettings<T> rate;
    T l2_coef = 0;               // prox of l2 * ||coef||^2 after each step: coef /= (1 + 2 l2 lr)
    T l1_theta = 0;              // prox of l1 * ||theta||_1: soft-threshold by l1 * lr
    bool update_coef = true;
    bool update_theta = true;
    bool shared_theta_moment = false;  // Adam on theta with one second moment for the block
};

// One pass of mini-batch steps over `data` with the cos-only map (map.pair must be false).
// map.theta is not read: the map's scales are state.theta, trained in place (map.theta must be
// null or equal to it). Returns the mean of the batch losses, each taken before its step.
template <class T>
T train_epoch(const EpochBatches<T>& data, const FourierFeatureMap<T>& map, Loss loss,
              const StepConfig<T>& cfg, TrainableState<T>& state, int n_threads);

}  // namespace rffkern
