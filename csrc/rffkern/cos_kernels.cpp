// Run-time dispatch of the cosine-feature kernels to the best instruction set the CPU has.
#include "rffkern/cos_kernels.hpp"

#include <stdexcept>
#include <string>

#include "rffkern/isa/cos_kernels_isa.hpp"
#include "rffkern/parallel.hpp"

namespace rffkern {
namespace {

enum class Isa { baseline, avx2, avx512 };

bool cpu_has(Isa isa) {
#if defined(RFFKERN_X86)
    __builtin_cpu_init();
    switch (isa) {
        case Isa::avx512:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("fma");
        case Isa::avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case Isa::baseline:
            return true;
    }
    return false;
#else
    return isa == Isa::baseline;
#endif
}

Isa best_isa() {
    if (cpu_has(Isa::avx512)) return Isa::avx512;
    if (cpu_has(Isa::avx2)) return Isa::avx2;
    return Isa::baseline;
}

Isa& current_isa() {
    static Isa isa = best_isa();
    return isa;
}

void check_map(const void* weights, std::size_t d, std::size_t s) {
    if (s > 0 && d > 0 && !weights) throw std::invalid_argument("weights must not be null");
}

}  // namespace

const char* active_isa() {
    switch (current_isa()) {
        case Isa::avx512: return "avx512";
        case Isa::avx2: return "avx2";
        default: return "baseline";
    }
}

bool have_libmvec() {
#if defined(RFFKERN_HAVE_LIBMVEC)
    return true;
#else
    return false;
#endif
}

void set_isa(const char* name) {
    const std::string n(name ? name : "auto");
    Isa want;
    if (n == "auto") want = best_isa();
    else if (n == "avx512") want = Isa::avx512;
    else if (n == "avx2") want = Isa::avx2;
    else if (n == "baseline") want = Isa::baseline;
    else throw std::invalid_argument("unknown instruction set '" + n + "'; use auto, avx512, avx2 or baseline");
    if (!cpu_has(want)) throw std::invalid_argument("this CPU does not support instruction set '" + n + "'");
    current_isa() = want;
}

#if defined(RFFKERN_X86)
#define RFFKERN_DISPATCH(FN, ...)                                              \
    switch (current_isa()) {                                                   \
        case Isa::avx512: return isa_avx512::FN<T>(__VA_ARGS__);               \
        case Isa::avx2: return isa_avx2::FN<T>(__VA_ARGS__);                   \
        default: return isa_baseline::FN<T>(__VA_ARGS__);                      \
    }
#else
#define RFFKERN_DISPATCH(FN, ...) return isa_baseline::FN<T>(__VA_ARGS__);
#endif

template <class T>
void fused_cos_features(const T* X, std::size_t n, const CosMap<T>& map, T* Z, int n_threads) {
    checked_threads(n_threads);
    check_map(map.weights, map.d, map.s);
    RFFKERN_DISPATCH(features, X, n, map, Z, n_threads)
}

template <class T>
void fused_cos_predict(const T* X, std::size_t n, const CosMap<T>& map, const T* coef,
                       std::size_t m, T* F, int n_threads) {
    checked_threads(n_threads);
    check_map(map.weights, map.d, map.s);
    RFFKERN_DISPATCH(predict, X, n, map, coef, m, F, n_threads)
}

template <class T>
void streamed_gram(const T* X, std::size_t n, const CosMap<T>& map, const T* Y, std::size_t m,
                   T* G, T* ZtY, bool accumulate, int n_threads) {
    checked_threads(n_threads);
    check_map(map.weights, map.d, map.s);
    RFFKERN_DISPATCH(gram, X, n, map, Y, m, G, ZtY, accumulate, n_threads)
}

template <class T>
T loss_and_grad(const T* X, const T* Y, std::size_t n, const CosMap<T>& map, const T* coef,
                std::size_t m, Loss loss, T* grad_coef, T* grad_theta, int n_threads) {
    checked_threads(n_threads);
    check_map(map.weights, map.d, map.s);
    if (n == 0) throw std::invalid_argument("loss_and_grad needs at least one sample");
    if (m == 0) throw std::invalid_argument("loss_and_grad needs at least one output");
    RFFKERN_DISPATCH(loss_and_grad, X, Y, n, map, coef, m, loss, grad_coef, grad_theta, n_threads)
}

template <class T>
T train_epoch(const T* X, const T* Y, std::size_t n, const std::int64_t* order, std::size_t n_order,
              std::size_t batch_size, const T* weights, const T* offsets, T* theta, std::size_t d,
              std::size_t s, T scale, T* coef, std::size_t m, Loss loss, const StepConfig<T>& cfg,
              T* m_coef, T* v_coef, T* m_theta, T* v_theta, std::int64_t* step, int n_threads) {
    checked_threads(n_threads);
    check_map(weights, d, s);
    if (batch_size == 0) throw std::invalid_argument("batch_size must be >= 1");
    if (m == 0) throw std::invalid_argument("train_epoch needs at least one output");
    for (std::size_t i = 0; i < n_order; ++i)
        if (order[i] < 0 || std::size_t(order[i]) >= n)
            throw std::invalid_argument("order holds an index outside [0, n)");
    RFFKERN_DISPATCH(train_epoch, X, Y, n, order, n_order, batch_size, weights, offsets, theta, d, s,
                     scale, coef, m, loss, cfg, m_coef, v_coef, m_theta, v_theta, step, n_threads)
}

#define RFFKERN_INSTANTIATE(T)                                                                      \
    template void fused_cos_features<T>(const T*, std::size_t, const CosMap<T>&, T*, int);         \
    template void fused_cos_predict<T>(const T*, std::size_t, const CosMap<T>&, const T*,          \
                                       std::size_t, T*, int);                                      \
    template void streamed_gram<T>(const T*, std::size_t, const CosMap<T>&, const T*, std::size_t, \
                                   T*, T*, bool, int);                                             \
    template T loss_and_grad<T>(const T*, const T*, std::size_t, const CosMap<T>&, const T*,       \
                                std::size_t, Loss, T*, T*, int);                                   \
    template T train_epoch<T>(const T*, const T*, std::size_t, const std::int64_t*, std::size_t,   \
                              std::size_t, const T*, const T*, T*, std::size_t, std::size_t, T,    \
                              T*, std::size_t, Loss, const StepConfig<T>&, T*, T*, T*, T*,          \
                              std::int64_t*, int);
RFFKERN_INSTANTIATE(float)
RFFKERN_INSTANTIATE(double)

}  // namespace rffkern
