// Declarations of the per-instruction-set builds of the cosine-feature kernels.
#pragma once
#include <cstddef>
#include <cstdint>

#include "rffkern/cos_kernels.hpp"

#define RFFKERN_DECLARE_ISA(NS)                                                                     \
    namespace NS {                                                                                 \
    template <class T>                                                                             \
    void features(const T*, std::size_t, const CosMap<T>&, T*, int);                               \
    template <class T>                                                                             \
    void predict(const T*, std::size_t, const CosMap<T>&, const T*, std::size_t, T*, int);         \
    template <class T>                                                                             \
    void gram(const T*, std::size_t, const CosMap<T>&, const T*, std::size_t, T*, T*, bool, int);  \
    template <class T>                                                                             \
    T loss_and_grad(const T*, const T*, std::size_t, const CosMap<T>&, const T*, std::size_t,      \
                    Loss, T*, T*, int);                                                            \
    template <class T>                                                                             \
    T train_epoch(const T*, const T*, std::size_t, const std::int64_t*, std::size_t, std::size_t,  \
                  const T*, const T*, T*, std::size_t, std::size_t, T, T*, std::size_t, Loss,      \
                  const StepConfig<T>&, T*, T*, T*, T*, std::int64_t*, int);                        \
    }

namespace rffkern {
RFFKERN_DECLARE_ISA(isa_baseline)
#if defined(RFFKERN_X86)
RFFKERN_DECLARE_ISA(isa_avx2)
RFFKERN_DECLARE_ISA(isa_avx512)
#endif
}  // namespace rffkern
#undef RFFKERN_DECLARE_ISA
