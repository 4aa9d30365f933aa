// The run-time choice of instruction set, made once from the CPU's features (no -march=native).
#include "rffkern/isa_dispatch.hpp"

#include <stdexcept>
#include <string>

namespace rffkern {
namespace {

bool cpu_has(IsaLevel level) {
#if defined(RFFKERN_X86)
    __builtin_cpu_init();
    switch (level) {
        case IsaLevel::avx512:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("fma");
        case IsaLevel::avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case IsaLevel::baseline:
            return true;
    }
    return false;
#else
    return level == IsaLevel::baseline;
#endif
}

IsaLevel best_level() {
    if (cpu_has(IsaLevel::avx512)) return IsaLevel::avx512;
    if (cpu_has(IsaLevel::avx2)) return IsaLevel::avx2;
    return IsaLevel::baseline;
}

IsaLevel& current_level() {
    static IsaLevel level = best_level();
    return level;
}

}  // namespace

IsaLevel active_isa_level() { return current_level(); }

const char* active_isa() {
    switch (current_level()) {
        case IsaLevel::avx512: return "avx512";
        case IsaLevel::avx2: return "avx2";
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
    IsaLevel want;
    if (n == "auto") want = best_level();
    else if (n == "avx512") want = IsaLevel::avx512;
    else if (n == "avx2") want = IsaLevel::avx2;
    else if (n == "baseline") want = IsaLevel::baseline;
    else throw std::invalid_argument("unknown instruction set '" + n + "'; use auto, avx512, avx2 or baseline");
    if (!cpu_has(want)) throw std::invalid_argument("this CPU does not support instruction set '" + n + "'");
    current_level() = want;
}

}  // namespace rffkern
