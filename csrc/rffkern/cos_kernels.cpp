// The public entry points of the cosine-feature kernels: argument checks that hold for every
// instruction set, the thread clamp, then the build of the active instruction set.
#include "rffkern/cos_kernels.hpp"

#include <stdexcept>

#include "rffkern/isa/kernel_tables.hpp"
#include "rffkern/parallel.hpp"

namespace rffkern {
namespace {

template <class T>
void check_map(const FourierFeatureMap<T>& map) {
    if (map.s > 0 && map.d > 0 && !map.weights) throw std::invalid_argument("weights must not be null");
}

// The structure of centered sparse rows for n rows of d inputs: O(n + nnz), so that a kernel never
// reads outside the arrays (the values themselves are the caller's).
template <class T>
void check_rows(const CenteredRows<T>* rows, std::size_t n, std::size_t d) {
    if (!rows) return;
    if (!rows->indptr || (n > 0 && rows->indptr[n] > 0 && (!rows->indices || !rows->values)))
        throw std::invalid_argument("centered rows: indptr, indices and values must not be null");
    if (rows->indptr[0] != 0) throw std::invalid_argument("centered rows: indptr[0] must be 0");
    for (std::size_t i = 0; i < n; ++i)
        if (rows->indptr[i + 1] < rows->indptr[i])
            throw std::invalid_argument("centered rows: indptr must be non-decreasing");
    const std::int64_t nnz = rows->indptr[n];
    for (std::int64_t q = 0; q < nnz; ++q)
        if (rows->indices[q] < 0 || std::size_t(rows->indices[q]) >= d)
            throw std::invalid_argument("centered rows: a column index is outside [0, d)");
}

}  // namespace

template <class T>
void fused_cos_features(const T* X, std::size_t n, const FourierFeatureMap<T>& map, T* Z,
                        int n_threads, const CenteredRows<T>* rows) {
    n_threads = checked_threads(n_threads);
    check_map(map);
    check_rows(rows, n, map.d);
    active_cos_kernels<T>().features(X, n, map, Z, n_threads, rows);
}

template <class T>
void fused_cos_predict(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* coef,
                       std::size_t m, T* F, int n_threads, const CenteredRows<T>* rows) {
    n_threads = checked_threads(n_threads);
    check_map(map);
    check_rows(rows, n, map.d);
    active_cos_kernels<T>().predict(X, n, map, coef, m, F, n_threads, rows);
}

template <class T>
void streamed_gram(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* Y,
                   std::size_t m, T* G, T* ZtY, bool accumulate, int n_threads, const CenteredRows<T>* rows) {
    n_threads = checked_threads(n_threads);
    check_map(map);
    check_rows(rows, n, map.d);
    active_cos_kernels<T>().gram(X, n, map, Y, m, G, ZtY, accumulate, n_threads, rows);
}

template <class T>
T loss_and_grad(const T* X, const T* Y, std::size_t n, const FourierFeatureMap<T>& map,
                const T* coef, std::size_t m, Loss loss, T* grad_coef, T* grad_theta, int n_threads,
                const CenteredRows<T>* rows) {
    n_threads = checked_threads(n_threads);
    check_map(map);
    check_rows(rows, n, map.d);
    if (n == 0) throw std::invalid_argument("loss_and_grad needs at least one sample");
    if (m == 0) throw std::invalid_argument("loss_and_grad needs at least one output");
    return active_cos_kernels<T>().loss_and_grad(X, Y, n, map, coef, m, loss, grad_coef, grad_theta,
                                                 n_threads, rows);
}

template <class T>
T train_epoch(const EpochBatches<T>& data, const FourierFeatureMap<T>& map, Loss loss,
              const StepConfig<T>& cfg, TrainableState<T>& state, int n_threads) {
    n_threads = checked_threads(n_threads);
    check_map(map);
    if (map.pair) throw std::invalid_argument("train_epoch trains the cos-only map (pair = false)");
    if (loss == Loss::linear) throw std::invalid_argument("train_epoch cannot train on the linear loss (no minimum)");
    if (map.theta && map.theta != state.theta)
        throw std::invalid_argument("train_epoch trains state.theta: map.theta must be null or state.theta");
    if (data.batch_size == 0) throw std::invalid_argument("batch_size must be >= 1");
    if (state.m == 0) throw std::invalid_argument("train_epoch needs at least one output");
    for (std::size_t i = 0; i < data.n_order; ++i)
        if (data.order[i] < 0 || std::size_t(data.order[i]) >= data.n)
            throw std::invalid_argument("order holds an index outside [0, n)");
    check_rows(data.rows, data.n, map.d);
    return active_cos_kernels<T>().train_epoch(data, map, loss, cfg, state, n_threads);
}

#define RFFKERN_INSTANTIATE(T)                                                                      \
    template void fused_cos_features<T>(const T*, std::size_t, const FourierFeatureMap<T>&, T*, int, \
                                        const CenteredRows<T>*);                                   \
    template void fused_cos_predict<T>(const T*, std::size_t, const FourierFeatureMap<T>&, const T*, \
                                       std::size_t, T*, int, const CenteredRows<T>*);              \
    template void streamed_gram<T>(const T*, std::size_t, const FourierFeatureMap<T>&, const T*,     \
                                   std::size_t, T*, T*, bool, int, const CenteredRows<T>*);        \
    template T loss_and_grad<T>(const T*, const T*, std::size_t, const FourierFeatureMap<T>&,       \
                                const T*, std::size_t, Loss, T*, T*, int, const CenteredRows<T>*); \
    template T train_epoch<T>(const EpochBatches<T>&, const FourierFeatureMap<T>&, Loss,            \
                              const StepConfig<T>&, TrainableState<T>&, int);
RFFKERN_INSTANTIATE(float)
RFFKERN_INSTANTIATE(double)
#undef RFFKERN_INSTANTIATE

}  // namespace rffkern
