// One instruction-set build of the fused cosine-feature kernels: each isa/cos_kernels_<isa>.cpp
// defines RFFKERN_ISA_NS and includes this file; CMake gives that translation unit its -m flags,
// and cos_kernels.cpp calls the table below for the active level.
#ifndef RFFKERN_ISA_NS
#error "define RFFKERN_ISA_NS before including cos_kernels_impl.hpp"
#endif

#include "rffkern/isa/cos_forward_impl.hpp"
#include "rffkern/isa/cos_training_impl.hpp"
#include "rffkern/isa/kernel_tables.hpp"

namespace rffkern {
namespace RFFKERN_ISA_NS {

template <class T>
const CosKernelTable<T>& cos_kernel_table() {
    static constexpr CosKernelTable<T> table{&features<T>, &predict<T>, &gram<T>, &loss_and_grad<T>,
                                             &train_epoch<T>};
    return table;
}
template const CosKernelTable<float>& cos_kernel_table<float>();
template const CosKernelTable<double>& cos_kernel_table<double>();

}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
