// The structured kernels (FWHT, Fastfood, SORF) compiled for the avx2 instruction set (flags set in
// CMakeLists.txt).
#define RFFKERN_ISA_NS isa_avx2
#include "rffkern/isa/structured_impl.hpp"
