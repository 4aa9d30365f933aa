// Which instruction-set build of the kernels runs. One choice serves every kernel family (the
// cosine kernels and the structured maps), so a test or benchmark that forces one gets it
// everywhere.
#pragma once

namespace rffkern {

// The builds of the per-ISA kernels (csrc/rffkern/isa/*_<level>.cpp), in increasing order.
enum class IsaLevel { baseline, avx2, avx512 };

// The build the dispatchers call now: the best one the CPU runs, unless set_isa chose another.
IsaLevel active_isa_level();
// Its name: "avx512", "avx2" or "baseline".
const char* active_isa();
// Whether vector cos/sin come from libmvec.
bool have_libmvec();
// Force an instruction set ("auto", "avx512", "avx2", "baseline"); for tests and benchmarks.
// Throws std::invalid_argument if the CPU lacks it.
void set_isa(const char* name);

}  // namespace rffkern
