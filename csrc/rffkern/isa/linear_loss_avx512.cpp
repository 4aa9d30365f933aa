// The logistic loss on given features compiled for the avx512 instruction set (flags set in CMakeLists.txt).
#define RFFKERN_ISA_NS isa_avx512
#include "rffkern/isa/linear_loss_impl.hpp"
