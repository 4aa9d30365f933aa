// Small shared pieces of the core: thread counts and ids, aligned scratch buffers, integer helpers.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#if defined(_WIN32)
#include <malloc.h>
#endif
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

// Processors this process may run on (its affinity mask under OpenMP).
inline int num_procs() {
#if defined(RFFKERN_HAVE_OPENMP)
    return omp_get_num_procs();
#else
    return std::max(1, int(std::thread::hardware_concurrency()));
#endif
}

// The team size OpenMP would use by default: follows OMP_NUM_THREADS and omp_set_num_threads
// (so threadpoolctl's limits); 1 without OpenMP.
inline int max_threads() {
#if defined(RFFKERN_HAVE_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
}

// The thread count every core entry point runs with. More threads than processors only adds
// barrier latency (results are the same for any count), and a huge request would make libgomp fail
// to create threads (abort or crash) and size per-thread scratch for threads that never run.
[[nodiscard]] inline int checked_threads(int n_threads) {
    if (n_threads < 1) throw std::invalid_argument("n_threads must be >= 1, got " + std::to_string(n_threads));
    return std::min(n_threads, std::max(1, num_procs()));
}

constexpr std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
constexpr std::size_t round_up(std::size_t a, std::size_t b) { return ceil_div(a, b) * b; }

// Windows' C runtime has no aligned_alloc (its free cannot release aligned blocks): it pairs
// _aligned_malloc with _aligned_free instead.
inline void* aligned_bytes(std::size_t alignment, std::size_t bytes) {
#if defined(_WIN32)
    return _aligned_malloc(bytes, alignment);
#else
    return std::aligned_alloc(alignment, bytes);
#endif
}
inline void free_aligned_bytes(void* ptr) {
#if defined(_WIN32)
    _aligned_free(ptr);
#else
    std::free(ptr);
#endif
}

// 64-byte aligned, zero-initialised scratch memory. Allocated before any parallel region, so
// std::bad_alloc is thrown on the calling thread and never inside an OpenMP region.
template <class T>
class AlignedBuffer {
public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(std::size_t count) { reset(count); }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    ~AlignedBuffer() { free_aligned_bytes(ptr_); }
    void reset(std::size_t count) {
        free_aligned_bytes(ptr_);
        ptr_ = nullptr;
        size_ = count;
        const std::size_t bytes = round_up(count * sizeof(T) + 1, 64);
        ptr_ = static_cast<T*>(aligned_bytes(64, bytes));
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
