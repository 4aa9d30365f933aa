// The structured kernels (FWHT, Fastfood, SORF) compiled for the baseline instruction set (flags set in
// CMakeLists.txt).
#define RFFKERN_ISA_NS isa_baseline
#include "rffkern/isa/structured_impl.hpp"
