// The fused cosine-feature kernels on NVIDIA GPUs: the contract of csrc/rffkern/cos_kernels.hpp
// (the same FourierFeatureMap view, the same maths), with device pointers and a CUDA stream.
//
// Plain host C++: this header holds no device code, so the pybind11 module (compiled by the host
// compiler) includes it; the kernels live in cos_kernels_cuda.cu (compiled by nvcc).
//
// Conventions of this layer
// - Every pointer (X, the map's weights/offsets/theta, coef, Y, outputs, workspace) is device
//   memory of the current device, C-contiguous (row-major), and may not alias an output.
// - Everything is enqueued on `stream` and returns before it runs; nothing synchronises. A launch
//   error is returned at once; an error while a kernel runs surfaces from the next CUDA call on the
//   stream (the caller's synchronisation), as everywhere in CUDA.
// - No exception leaves this layer and nothing in it knows Python: failures come back as a
//   CudaResult that the caller maps (bind_cuda.cpp: invalid_argument -> ValueError,
//   out_of_memory -> MemoryError, cuda_error -> RuntimeError). Out of memory is the only
//   allocation failure possible (gram's workspace) and leaves nothing allocated.
//
// Accuracy plan (why these results meet the CPU kernels' tolerances: float64 1e-10, float32 2e-4)
// - U = (X o theta) W + b is summed in T with fused multiply-adds (FMA contraction is on, as with
//   -ffp-contract=fast on the CPU). No tensor cores: no TF32 for float, no DMMA for double; the
//   GEMMs are SIMT. A TF32/3xTF32 path, if ever added, must be opt-in with its error stated.
// - cos/sin are CUDA's accurate sincos()/sincosf() (max 2 ulp in the CUDA C Programming Guide's
//   table for both types, full range reduction). The build never uses -use_fast_math, so no
//   __cosf/__sincosf (whose error grows with |u| and is unusable past a few pi).
// - gram's and predict's sums run in T in a fixed order that depends only on the shapes (not on
//   the device or timing: no atomics), so results are bitwise reproducible run to run; the order
//   differs from the CPU kernels', so the two agree to rounding, not bitwise.
#pragma once
#include <cstddef>

#include <cuda_runtime_api.h>

#include "rffkern/cos_kernels.hpp"  // FourierFeatureMap, Loss

namespace rffkern::cuda {

enum class CudaStatus : int { ok = 0, invalid_argument = 1, out_of_memory = 2, cuda_error = 3 };

struct CudaResult {
    CudaStatus status = CudaStatus::ok;
    int cuda_error = 0;           // the cudaError_t behind out_of_memory / cuda_error, else 0
    const char* message = "";     // static text: what failed (never owned)
    bool ok() const { return status == CudaStatus::ok; }
};

// Z (n x n_out) = scale * cos(U), [cos U, sin U] in the pair form.
template <class T>
CudaResult fused_cos_features(const T* X, std::size_t n, const FourierFeatureMap<T>& map, T* Z,
                              cudaStream_t stream);

// F (n x m) = Z coef, coef of shape n_out x m. Z is never written to memory: each block computes
// a tile of U in registers, takes cos/sin and multiplies by the matching rows of coef.
template <class T>
CudaResult fused_cos_predict(const T* X, std::size_t n, const FourierFeatureMap<T>& map,
                             const T* coef, std::size_t m, T* F, cudaStream_t stream);

// Bytes of device scratch streamed_gram needs for these sizes (m = columns of Y, 0 without Y).
template <class T>
std::size_t gram_workspace_bytes(std::size_t n, const FourierFeatureMap<T>& map, std::size_t m);

// G = Z^T Z (n_out x n_out, full symmetric matrix) and, if Y is given, ZtY = Z^T Y (n_out x m),
// streamed over chunks of rows: a chunk of Z is written to the workspace by the features kernel,
// then a tiled SIMT Z_c^T Z_c (upper-triangular tiles only, split over rows in a number of slices
// fixed by the shapes) and Z_c^T Y_c are accumulated. With accumulate = true the results are
// added to G and ZtY. `workspace` is gram_workspace_bytes(...) bytes of device memory, or nullptr:
// then it is taken with cudaMallocAsync on `stream` and released with cudaFreeAsync (failure:
// out_of_memory, nothing enqueued).
// No cuBLAS: the CI machine has the CUDA compiler and runtime only, and the fused syrk skips the
// lower triangle; swapping in cublasSsyrk/Dsyrk for the second step is a local change.
template <class T>
CudaResult streamed_gram(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* Y,
                         std::size_t m, T* G, T* ZtY, bool accumulate, void* workspace,
                         cudaStream_t stream);

}  // namespace rffkern::cuda
