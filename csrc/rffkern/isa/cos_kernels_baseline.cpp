// The cosine-feature kernels compiled for the baseline instruction set (flags set in CMakeLists.txt).
#define RFFKERN_ISA_NS isa_baseline
#include "rffkern/isa/cos_kernels_impl.hpp"
