// Small shared pieces of the core: thread ids, aligned scratch buffers, integer helpers.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#if defined(RFFKERN_HAVE_OPENMP)
#include <omp.h>
#endif

namespace rffkern {

inline int thread_id() {
#if defined(RFFKERN_HAVE_OPENMP)
    return omp_get_thread_num();
#else
    return 0;
#endif
}

inline int checked_threads(int n_threads) {
    if (n_threads < 1) throw std::invalid_argument("n_threads must be >= 1, got " + std::to_string(n_threads));
    return n_threads;
}

constexpr std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
constexpr std::size_t round_up(std::size_t a, std::size_t b) { return ceil_div(a, b) * b; }

// 64-byte aligned, zero-initialised scratch memory. Allocated before any parallel region, so
// std::bad_alloc is thrown on the calling thread and never inside an OpenMP region.
template <class T>
class AlignedBuffer {
public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(std::size_t count) { reset(count); }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    ~AlignedBuffer() { std::free(ptr_); }
    void reset(std::size_t count) {
        std::free(ptr_);
        ptr_ = nullptr;
        size_ = count;
        const std::size_t bytes = round_up(count * sizeof(T) + 1, 64);
        ptr_ = static_cast<T*>(std::aligned_alloc(64, bytes));
        if (!ptr_) throw std::bad_alloc();
        std::memset(static_cast<void*>(ptr_), 0, bytes);
    }
    T* data() { return ptr_; }
    const T* data() const { return ptr_; }
    std::size_t size() const { return size_; }
    void zero() { std::memset(static_cast<void*>(ptr_), 0, size_ * sizeof(T)); }

private:
    T* ptr_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace rffkern
