// How the dispatchers reach the per-instruction-set builds: every build (isa/*_<level>.cpp) fills
// one table of entry points per kernel family and dtype, and the dispatcher calls the table of
// the active level. The per-ISA signatures are written here once, as the tables' fields.
#pragma once
#include <cstddef>

#include "rffkern/cos_kernels.hpp"
#include "rffkern/isa_dispatch.hpp"
#include "rffkern/structured.hpp"

namespace rffkern {

template <class T>
struct CosKernelTable {
    void (*features)(const T* X, std::size_t n, const FourierFeatureMap<T>& map, T* Z, int n_threads,
                     const CenteredRows<T>* rows);
    void (*predict)(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* coef,
                    std::size_t m, T* F, int n_threads, const CenteredRows<T>* rows);
    void (*gram)(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* Y, std::size_t m,
                 T* G, T* ZtY, bool accumulate, int n_threads, const CenteredRows<T>* rows);
    T (*loss_and_grad)(const T* X, const T* Y, std::size_t n, const FourierFeatureMap<T>& map,
                       const T* coef, std::size_t m, Loss loss, T* grad_coef, T* grad_theta,
                       int n_threads, const CenteredRows<T>* rows);
    T (*train_epoch)(const EpochBatches<T>& data, const FourierFeatureMap<T>& map, Loss loss,
                     const StepConfig<T>& cfg, TrainableState<T>& state, int n_threads);
};

template <class T>
struct StructuredKernelTable {
    void (*fwht_rows)(const T* X, T* Y, std::size_t n, std::size_t len, bool normalized, int n_threads);
    void (*fastfood)(const T* X, std::size_t n, const FastfoodMap<T>& map, T* Z, int n_threads);
    void (*sorf)(const T* X, std::size_t n, const SorfMap<T>& map, T* Z, int n_threads);
};

// The closing fit's logistic and softmax losses on given features (linear_loss.hpp).
template <class T>
struct LinearLossKernelTable {
    double (*logistic_loss_grad)(const T* Z, std::size_t n, std::size_t s, const T* coef, const double* y,
                                 const double* w, double* grad, int n_threads);
    double (*softmax_loss_grad)(const T* Z, std::size_t n, std::size_t s, std::size_t m, const T* coef_t,
                                const double* Y, const double* w, double* grad_t, int n_threads);
};

#define RFFKERN_DECLARE_ISA_BUILD(NS)                                                     \
    namespace NS {                                                                       \
    template <class T>                                                                   \
    const CosKernelTable<T>& cos_kernel_table();                                         \
    template <class T>                                                                   \
    const StructuredKernelTable<T>& structured_kernel_table();                           \
    template <class T>                                                                   \
    const LinearLossKernelTable<T>& linear_loss_kernel_table();                          \
    }
RFFKERN_DECLARE_ISA_BUILD(isa_baseline)
#if defined(RFFKERN_X86)
RFFKERN_DECLARE_ISA_BUILD(isa_avx2)
RFFKERN_DECLARE_ISA_BUILD(isa_avx512)
#endif
#undef RFFKERN_DECLARE_ISA_BUILD

// The table of the active level among the three builds' getters (only baseline exists off x86,
// where the active level is always baseline).
template <class Table>
const Table& active_build(const Table& (*baseline)(), const Table& (*avx2)(),
                          const Table& (*avx512)()) {
    switch (active_isa_level()) {
        case IsaLevel::avx512: return avx512();
        case IsaLevel::avx2: return avx2();
        default: return baseline();
    }
}

#if defined(RFFKERN_X86)
#define RFFKERN_EVERY_ISA_BUILD(GETTER) &isa_baseline::GETTER, &isa_avx2::GETTER, &isa_avx512::GETTER
#else
#define RFFKERN_EVERY_ISA_BUILD(GETTER) &isa_baseline::GETTER, nullptr, nullptr
#endif

template <class T>
const CosKernelTable<T>& active_cos_kernels() {
    return active_build<CosKernelTable<T>>(RFFKERN_EVERY_ISA_BUILD(cos_kernel_table<T>));
}

template <class T>
const StructuredKernelTable<T>& active_structured_kernels() {
    return active_build<StructuredKernelTable<T>>(RFFKERN_EVERY_ISA_BUILD(structured_kernel_table<T>));
}

template <class T>
const LinearLossKernelTable<T>& active_linear_loss_kernels() {
    return active_build<LinearLossKernelTable<T>>(RFFKERN_EVERY_ISA_BUILD(linear_loss_kernel_table<T>));
}

#undef RFFKERN_EVERY_ISA_BUILD

}  // namespace rffkern
