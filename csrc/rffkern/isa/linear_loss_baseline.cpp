// The logistic loss on given features compiled for the baseline instruction set (the portable build).
#define RFFKERN_ISA_NS isa_baseline
#include "rffkern/isa/linear_loss_impl.hpp"
