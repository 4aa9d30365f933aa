// The public entry points of the structured kernels (FWHT, Fastfood, SORF): the argument checks
// shared by every caller, the thread clamp, then the build of the active instruction set.
#include "rffkern/structured.hpp"

#include <stdexcept>
#include <string>

#include "rffkern/isa/kernel_tables.hpp"
#include "rffkern/parallel.hpp"

namespace rffkern {
namespace {

bool is_power_of_two(std::size_t v) { return v != 0 && (v & (v - 1)) == 0; }

void check_length(std::size_t len) {
    if (!is_power_of_two(len))
        throw std::invalid_argument("the Walsh-Hadamard transform needs a power-of-two length, got " +
                                    std::to_string(len));
}

void check_block(std::size_t d, std::size_t p, std::size_t n_blocks, std::size_t s) {
    check_length(p);
    if (p > (std::size_t(1) << 30))
        throw std::invalid_argument("block size p = " + std::to_string(p) + " exceeds 2^30");
    if (d > p)
        throw std::invalid_argument("block size p = " + std::to_string(p) + " is smaller than d = " +
                                    std::to_string(d));
    if (s > n_blocks * p)
        throw std::invalid_argument(std::to_string(n_blocks) + " blocks of size " + std::to_string(p) +
                                    " give fewer than s = " + std::to_string(s) + " frequencies");
}

}  // namespace

template <class T>
void fwht_inplace(T* X, std::size_t n, std::size_t len, bool normalized, int n_threads) {
    n_threads = checked_threads(n_threads);
    check_length(len);
    active_structured_kernels<T>().fwht_rows(X, X, n, len, normalized, n_threads);
}

template <class T>
void fwht(const T* X, std::size_t n, std::size_t len, T* Y, bool normalized, int n_threads) {
    n_threads = checked_threads(n_threads);
    check_length(len);
    if (n > 0 && X != Y) {
        const char* a = reinterpret_cast<const char*>(X);
        const char* b = reinterpret_cast<const char*>(Y);
        const std::size_t bytes = n * len * sizeof(T);
        if (a < b + bytes && b < a + bytes)
            throw std::invalid_argument("fwht: input and output overlap; use fwht_inplace");
    }
    active_structured_kernels<T>().fwht_rows(X, Y, n, len, normalized, n_threads);
}

template <class T>
void fastfood_features(const T* X, std::size_t n, const FastfoodMap<T>& map, T* Z, int n_threads) {
    n_threads = checked_threads(n_threads);
    check_block(map.d, map.p, map.n_blocks, map.s);
    if (map.s > 0 && !(map.signs && map.perm && map.gaussian && map.scaling))
        throw std::invalid_argument("fastfood_features: a block array is null");
    for (std::size_t i = 0; i < map.n_blocks * map.p; ++i)
        if (map.perm[i] < 0 || std::size_t(map.perm[i]) >= map.p)
            throw std::invalid_argument("fastfood_features: permutation index out of range [0, p)");
    active_structured_kernels<T>().fastfood(X, n, map, Z, n_threads);
}

template <class T>
void sorf_features(const T* X, std::size_t n, const SorfMap<T>& map, T* Z, int n_threads) {
    n_threads = checked_threads(n_threads);
    check_block(map.d, map.p, map.n_blocks, map.s);
    if (map.s > 0 && !map.diagonals) throw std::invalid_argument("sorf_features: diagonals is null");
    active_structured_kernels<T>().sorf(X, n, map, Z, n_threads);
}

#define RFFKERN_INSTANTIATE_STRUCTURED(T)                                                        \
    template void fwht_inplace<T>(T*, std::size_t, std::size_t, bool, int);                     \
    template void fwht<T>(const T*, std::size_t, std::size_t, T*, bool, int);                   \
    template void fastfood_features<T>(const T*, std::size_t, const FastfoodMap<T>&, T*, int);  \
    template void sorf_features<T>(const T*, std::size_t, const SorfMap<T>&, T*, int);
RFFKERN_INSTANTIATE_STRUCTURED(float)
RFFKERN_INSTANTIATE_STRUCTURED(double)
#undef RFFKERN_INSTANTIATE_STRUCTURED

}  // namespace rffkern
