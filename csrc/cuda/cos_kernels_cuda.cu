// CUDA kernels of the fused cosine features (contract and accuracy plan: cos_kernels_cuda.cuh).
//
// One SIMT tile engine serves every kernel: a block of BM rows x BN columns of U = (X o theta) W
// computed in registers (TM x TN per thread, the thread's rows strided by BM/TM and its columns by
// BN/TN so that a warp's stores and shared-memory reads are contiguous), X o theta and W staged in
// shared memory BK at a time. The epilogue decides the kernel: store scale*cos (features), dot with
// coef and reduce across the tile's columns (predict), or store into gram's chunk of Z.
//
// Nothing here has run on a GPU yet: the tile shapes are first guesses to tune on an H100
// (bench/bench_cuda.py), not measured choices.
#include <climits>
#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/cos_kernels_cuda.cuh"

namespace rffkern::cuda {
namespace {

// ---- tile shapes --------------------------------------------------------------------------
// TX = BN / TN threads along columns must be 16 (predict reduces across a half-warp).
template <class T>
struct FeatureTile;
template <>
struct FeatureTile<float> {
    static constexpr int BM = 128, BN = 64, BK = 16, TM = 8, TN = 4;
};
template <>
struct FeatureTile<double> {
    static constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
};

// Z_c^T B tiles for gram: square output tiles (the upper-triangle skip needs BM == BN).
template <class T>
struct GramTile;
template <>
struct GramTile<float> {
    static constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
};
template <>
struct GramTile<double> {
    static constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
};

template <class Cfg>
constexpr int threads_of() {
    return (Cfg::BM / Cfg::TM) * (Cfg::BN / Cfg::TN);
}

// Outputs of predict handled per launch column (grid dimension); more outputs recompute U.
constexpr int kPredictOutputs = 4;
// gram: rows of Z per chunk are about this many elements / n_out (64 MiB of float32).
constexpr std::size_t kGramChunkElements = std::size_t(1) << 24;
// gram: aim for this many live blocks per Z_c^T Z_c launch when splitting rows into slices...
constexpr std::size_t kGramTargetBlocks = 1024;
constexpr std::size_t kGramMaxSlices = 32;
// ...with at most this many elements of per-slice partial sums.
constexpr std::size_t kGramMaxPartialElements = std::size_t(1) << 25;

// ---- accurate cos / sin (never the __ intrinsics; see the header) ---------------------------
__device__ __forceinline__ float cos_of(float u) { return cosf(u); }
__device__ __forceinline__ double cos_of(double u) { return cos(u); }
__device__ __forceinline__ void sin_cos_of(float u, float* s, float* c) { sincosf(u, s, c); }
__device__ __forceinline__ void sin_cos_of(double u, double* s, double* c) { sincos(u, s, c); }

// ---- the tile engine ----------------------------------------------------------------------
// acc[i][j] = sum_k (X[r_i, k] theta[k]) W[k, c_j] for the thread's rows r_i = row0 + ty + TY i and
// columns c_j = col0 + tx + TX j; out-of-range rows/columns read zeros. Every thread of the block
// must call it (it holds barriers) and it ends with a barrier, so shared memory written before
// the call is visible to every thread after it.
template <class T, class Cfg>
struct UTile {
    static constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::TM, TN = Cfg::TN;
    static constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
    static constexpr int A_PAD = 1;  // odd row length: the transposing stores avoid bank conflicts
    static_assert(BM % TM == 0 && BN % TN == 0, "tile must split evenly over threads");
    static_assert((BM * BK) % NT == 0 && (BK * BN) % NT == 0, "tile loads must split evenly");

    T As[BK][BM + A_PAD];
    T Bs[BK][BN];

    __device__ void compute(const T* __restrict__ X, const T* __restrict__ theta,
                            const T* __restrict__ W, std::size_t n, int d, int s, std::size_t row0,
                            int col0, T (&acc)[TM][TN]) {
        const int tid = threadIdx.x;
        const int tx = tid % TX, ty = tid / TX;
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = T(0);
        for (int k0 = 0; k0 < d; k0 += BK) {
#pragma unroll
            for (int t = 0; t < (BM * BK) / NT; ++t) {
                const int e = tid + t * NT;
                const int r = e / BK, k = e % BK;
                const std::size_t row = row0 + std::size_t(r);
                T v = T(0);
                if (row < n && k0 + k < d) {
                    v = X[row * std::size_t(d) + std::size_t(k0 + k)];
                    if (theta) v *= theta[k0 + k];  // rounded as the reference's X * theta
                }
                As[k][r] = v;
            }
#pragma unroll
            for (int t = 0; t < (BK * BN) / NT; ++t) {
                const int e = tid + t * NT;
                const int k = e / BN, c = e % BN;
                Bs[k][c] = (k0 + k < d && col0 + c < s)
                               ? W[std::size_t(k0 + k) * std::size_t(s) + std::size_t(col0 + c)]
                               : T(0);
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                T a[TM], b[TN];
#pragma unroll
                for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + TY * i];
#pragma unroll
                for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx + TX * j];
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
            }
            __syncthreads();
        }
    }
};

// ---- features -----------------------------------------------------------------------------
template <class T>
__global__ void __launch_bounds__(threads_of<FeatureTile<T>>())
features_kernel(const T* __restrict__ X, std::size_t n, int d, int s, const T* __restrict__ W,
                const T* __restrict__ b, const T* __restrict__ theta, T scale, bool pair,
                T* __restrict__ Z, int col_tiles) {
    using Tile = UTile<T, FeatureTile<T>>;
    __shared__ Tile tile;
    const std::size_t row0 = std::size_t(blockIdx.x / col_tiles) * Tile::BM;
    const int col0 = int(blockIdx.x % col_tiles) * Tile::BN;  // columns vary fastest: X rows reused in L2
    T acc[Tile::TM][Tile::TN];
    tile.compute(X, theta, W, n, d, s, row0, col0, acc);

    const int tx = threadIdx.x % Tile::TX, ty = threadIdx.x / Tile::TX;
    const std::size_t n_out = pair ? 2 * std::size_t(s) : std::size_t(s);
#pragma unroll
    for (int i = 0; i < Tile::TM; ++i) {
        const std::size_t row = row0 + std::size_t(ty + Tile::TY * i);
        if (row >= n) continue;
        T* z = Z + row * n_out;
#pragma unroll
        for (int j = 0; j < Tile::TN; ++j) {
            const int col = col0 + tx + Tile::TX * j;
            if (col >= s) continue;
            const T u = acc[i][j] + (b ? b[col] : T(0));
            if (pair) {
                T sn, cs;
                sin_cos_of(u, &sn, &cs);
                z[col] = scale * cs;
                z[s + col] = scale * sn;
            } else {
                z[col] = scale * cos_of(u);
            }
        }
    }
}

// ---- predict ------------------------------------------------------------------------------
// One block owns BM rows and kPredictOutputs outputs and sweeps every column tile of U: the
// per-thread partial dot products stay in registers, then the 16 threads sharing a row (a
// half-warp) add theirs with shuffles in a fixed order.
template <class T>
__global__ void __launch_bounds__(threads_of<FeatureTile<T>>())
predict_kernel(const T* __restrict__ X, std::size_t n, int d, int s, const T* __restrict__ W,
               const T* __restrict__ b, const T* __restrict__ theta, T scale, bool pair,
               const T* __restrict__ coef, int m, T* __restrict__ F, int output_groups) {
    using Tile = UTile<T, FeatureTile<T>>;
    constexpr int MO = kPredictOutputs;
    static_assert(Tile::TX == 16, "predict reduces across 16-lane half-warps");
    __shared__ Tile tile;
    __shared__ T coef_tile[2][Tile::BN][MO];  // rows of coef for this column tile: cos, sin

    const std::size_t row0 = std::size_t(blockIdx.x / output_groups) * Tile::BM;
    const int o0 = int(blockIdx.x % output_groups) * MO;
    const int tx = threadIdx.x % Tile::TX, ty = threadIdx.x / Tile::TX;

    T part[Tile::TM][MO];
#pragma unroll
    for (int i = 0; i < Tile::TM; ++i)
#pragma unroll
        for (int o = 0; o < MO; ++o) part[i][o] = T(0);

    for (int col0 = 0; col0 < s; col0 += Tile::BN) {
        for (int e = threadIdx.x; e < 2 * Tile::BN * MO; e += Tile::NT) {
            const int half = e / (Tile::BN * MO), c = (e / MO) % Tile::BN, o = e % MO;
            const int col = col0 + c;
            T v = T(0);
            if (col < s && o0 + o < m && (half == 0 || pair))
                v = coef[(std::size_t(col) + (half ? std::size_t(s) : 0)) * std::size_t(m) +
                         std::size_t(o0 + o)];
            coef_tile[half][c][o] = v;
        }
        T acc[Tile::TM][Tile::TN];
        tile.compute(X, theta, W, n, d, s, row0, col0, acc);  // ends with a barrier: coef_tile ready
#pragma unroll
        for (int j = 0; j < Tile::TN; ++j) {
            const int c = tx + Tile::TX * j;
            const int col = col0 + c;
            if (col >= s) continue;  // coef_tile is zero there, but cos(b) must not be taken
            const T off = b ? b[col] : T(0);
#pragma unroll
            for (int i = 0; i < Tile::TM; ++i) {
                const T u = acc[i][j] + off;
                if (pair) {
                    T sn, cs;
                    sin_cos_of(u, &sn, &cs);
                    cs *= scale;
                    sn *= scale;
#pragma unroll
                    for (int o = 0; o < MO; ++o)
                        part[i][o] = fma(sn, coef_tile[1][c][o], fma(cs, coef_tile[0][c][o], part[i][o]));
                } else {
                    const T z = scale * cos_of(u);
#pragma unroll
                    for (int o = 0; o < MO; ++o) part[i][o] = fma(z, coef_tile[0][c][o], part[i][o]);
                }
            }
        }
        __syncthreads();  // every thread is done with coef_tile before the next tile overwrites it
    }

#pragma unroll
    for (int i = 0; i < Tile::TM; ++i)
#pragma unroll
        for (int o = 0; o < MO; ++o) {
            T v = part[i][o];
#pragma unroll
            for (int lane = 8; lane >= 1; lane /= 2) v += __shfl_xor_sync(0xffffffffu, v, lane);
            part[i][o] = v;
        }
    if (tx == 0) {
#pragma unroll
        for (int i = 0; i < Tile::TM; ++i) {
            const std::size_t row = row0 + std::size_t(ty + Tile::TY * i);
            if (row >= n) continue;
#pragma unroll
            for (int o = 0; o < MO; ++o)
                if (o0 + o < m) F[row * std::size_t(m) + std::size_t(o0 + o)] = part[i][o];
        }
    }
}

// ---- gram: C_slice (+)= A[slice rows]^T B[slice rows] ---------------------------------------
// A is rows x p and B rows x q, both row-major (a chunk of Z and of Z or Y), so both tiles load
// contiguously along their columns. blockIdx.y is the row slice; slice z writes
// C + z * slice_stride. With upper_only (A == B, p == q) tiles below the diagonal return at once.
template <class T>
__global__ void __launch_bounds__(threads_of<GramTile<T>>())
at_b_kernel(const T* __restrict__ A, int p, const T* __restrict__ B, int q, std::size_t rows,
            std::size_t slice_rows, T* __restrict__ C, std::size_t slice_stride, int col_tiles,
            bool upper_only, bool overwrite) {
    using Cfg = GramTile<T>;
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::TM, TN = Cfg::TN;
    constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
    static_assert((BM * BK) % NT == 0 && (BK * BN) % NT == 0, "tile loads must split evenly");
    const int ti = int(blockIdx.x) / col_tiles, tj = int(blockIdx.x) % col_tiles;
    if (upper_only && ti > tj) return;  // the whole block leaves before any barrier
    __shared__ T As[BK][BM];
    __shared__ T Bs[BK][BN];
    const int i0 = ti * BM, j0 = tj * BN;
    const std::size_t r_begin = std::size_t(blockIdx.y) * slice_rows;
    const std::size_t r_end = r_begin + slice_rows < rows ? r_begin + slice_rows : rows;
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;

    T acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = T(0);
    for (std::size_t r0 = r_begin; r0 < r_end; r0 += BK) {
#pragma unroll
        for (int t = 0; t < (BM * BK) / NT; ++t) {
            const int e = tid + t * NT, k = e / BM, i = e % BM;
            const std::size_t r = r0 + std::size_t(k);
            As[k][i] = (r < r_end && i0 + i < p) ? A[r * std::size_t(p) + std::size_t(i0 + i)] : T(0);
        }
#pragma unroll
        for (int t = 0; t < (BK * BN) / NT; ++t) {
            const int e = tid + t * NT, k = e / BN, j = e % BN;
            const std::size_t r = r0 + std::size_t(k);
            Bs[k][j] = (r < r_end && j0 + j < q) ? B[r * std::size_t(q) + std::size_t(j0 + j)] : T(0);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            T a[TM], bv[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + TY * i];
#pragma unroll
            for (int j = 0; j < TN; ++j) bv[j] = Bs[kk][tx + TX * j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fma(a[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }
    T* c_out = C + std::size_t(blockIdx.y) * slice_stride;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int gi = i0 + ty + TY * i;
        if (gi >= p) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int gj = j0 + tx + TX * j;
            if (gj >= q) continue;
            T* dst = c_out + std::size_t(gi) * std::size_t(q) + std::size_t(gj);
            *dst = overwrite ? acc[i][j] : *dst + acc[i][j];
        }
    }
}

// G[i, j] = G[j, i] = (accumulate ? G[i, j] : 0) + sum_z part[z][i, j] for i <= j, slices in order.
template <class T>
__global__ void gram_finish_kernel(T* __restrict__ G, const T* __restrict__ part, int n_out,
                                   int slices, bool accumulate) {
    const std::size_t idx = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::size_t nn = std::size_t(n_out) * std::size_t(n_out);
    if (idx >= nn) return;
    const std::size_t i = idx / std::size_t(n_out), j = idx % std::size_t(n_out);
    if (i > j) return;
    T v;
    if (part) {
        v = accumulate ? G[idx] : T(0);
        for (int z = 0; z < slices; ++z) v += part[std::size_t(z) * nn + idx];
        G[idx] = v;
    } else {
        v = G[idx];  // one slice summed straight into G: only the mirror is left
    }
    G[j * std::size_t(n_out) + i] = v;
}

// ZtY[k] = (accumulate ? ZtY[k] : 0) + sum_z part[z][k], slices in order.
template <class T>
__global__ void sum_slices_kernel(T* __restrict__ out, const T* __restrict__ part, std::size_t len,
                                  int slices, bool accumulate) {
    const std::size_t idx = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= len) return;
    T v = accumulate ? out[idx] : T(0);
    for (int z = 0; z < slices; ++z) v += part[std::size_t(z) * len + idx];
    out[idx] = v;
}

// ---- host helpers -------------------------------------------------------------------------
CudaResult invalid(const char* message) { return {CudaStatus::invalid_argument, 0, message}; }

CudaResult from_cuda(cudaError_t err, const char* message) {
    if (err == cudaSuccess) return {};
    const CudaStatus st =
        err == cudaErrorMemoryAllocation ? CudaStatus::out_of_memory : CudaStatus::cuda_error;
    return {st, int(err), message};
}

// The launch just made, checked. cudaGetLastError also clears a non-sticky error, so the next
// call starts clean.
CudaResult launched(const char* message) { return from_cuda(cudaGetLastError(), message); }

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

template <class T>
CudaResult check_map(const FourierFeatureMap<T>& map) {
    if (!map.weights) return invalid("weights is a null pointer");
    if (map.d == 0 || map.s == 0) return invalid("weights must have at least one row and one column");
    if (map.d > std::size_t(INT_MAX) || map.n_out() > std::size_t(INT_MAX))
        return invalid("weights has too many rows or columns for the CUDA kernels");
    return {};
}

// Stale non-sticky errors of an earlier, unrelated CUDA call would otherwise be reported as ours.
void clear_stale_error() { (void)cudaGetLastError(); }

// The slices rows of one gram chunk are split into: enough blocks to fill a GPU, few enough that
// the partial sums stay small. Depends on the shapes only (so do the results' bits).
template <class T>
std::size_t gram_slices(std::size_t n_out, std::size_t m) {
    const std::size_t tiles = ceil_div(n_out, GramTile<T>::BM);
    const std::size_t upper = tiles * (tiles + 1) / 2;
    std::size_t slices = ceil_div(kGramTargetBlocks, upper);
    if (slices > kGramMaxSlices) slices = kGramMaxSlices;
    const std::size_t per_slice = n_out * n_out + n_out * m;
    const std::size_t by_memory = kGramMaxPartialElements / per_slice;
    if (slices > by_memory) slices = by_memory;
    return slices < 1 ? 1 : slices;
}

template <class T>
std::size_t gram_chunk_rows(std::size_t n, std::size_t n_out) {
    std::size_t rows = ceil_div(kGramChunkElements / n_out, 128) * 128;
    if (rows < 128) rows = 128;
    const std::size_t all = ceil_div(n, 128) * 128;
    return rows < all ? rows : all;
}

constexpr std::size_t kAlign = 256;
std::size_t aligned(std::size_t bytes) { return ceil_div(bytes, kAlign) * kAlign; }

struct GramLayout {
    std::size_t chunk_rows, slices, z_bytes, g_part_bytes, y_part_bytes;
    std::size_t total() const { return z_bytes + g_part_bytes + y_part_bytes; }
};

template <class T>
GramLayout gram_layout(std::size_t n, std::size_t n_out, std::size_t m) {
    GramLayout l{};
    l.chunk_rows = gram_chunk_rows<T>(n, n_out);
    l.slices = gram_slices<T>(n_out, m);
    l.z_bytes = aligned(l.chunk_rows * n_out * sizeof(T));
    l.g_part_bytes = l.slices > 1 ? aligned(l.slices * n_out * n_out * sizeof(T)) : 0;
    l.y_part_bytes = (l.slices > 1 && m > 0) ? aligned(l.slices * n_out * m * sizeof(T)) : 0;
    return l;
}

template <class T>
CudaResult launch_features(const T* X, std::size_t n, const FourierFeatureMap<T>& map, T* Z,
                           cudaStream_t stream) {
    using Cfg = FeatureTile<T>;
    const std::size_t col_tiles = ceil_div(map.s, Cfg::BN);
    const std::size_t blocks = ceil_div(n, Cfg::BM) * col_tiles;
    if (blocks > std::size_t(INT_MAX)) return invalid("too many rows for one features launch");
    features_kernel<T><<<unsigned(blocks), threads_of<Cfg>(), 0, stream>>>(
        X, n, int(map.d), int(map.s), map.weights, map.offsets, map.theta, map.scale, map.pair, Z,
        int(col_tiles));
    return launched("features kernel launch failed");
}

}  // namespace

// ---- entry points -------------------------------------------------------------------------
template <class T>
CudaResult fused_cos_features(const T* X, std::size_t n, const FourierFeatureMap<T>& map, T* Z,
                              cudaStream_t stream) {
    clear_stale_error();
    if (CudaResult r = check_map(map); !r.ok()) return r;
    if (n == 0) return {};
    if (!X || !Z) return invalid("X and the output must be device pointers, not null");
    return launch_features(X, n, map, Z, stream);
}

template <class T>
CudaResult fused_cos_predict(const T* X, std::size_t n, const FourierFeatureMap<T>& map,
                             const T* coef, std::size_t m, T* F, cudaStream_t stream) {
    clear_stale_error();
    if (CudaResult r = check_map(map); !r.ok()) return r;
    if (m > std::size_t(INT_MAX)) return invalid("coef has too many columns");
    if (n == 0 || m == 0) return {};
    if (!X || !coef || !F) return invalid("X, coef and the output must be device pointers, not null");
    using Cfg = FeatureTile<T>;
    const std::size_t groups = ceil_div(m, kPredictOutputs);
    const std::size_t blocks = ceil_div(n, Cfg::BM) * groups;
    if (blocks > std::size_t(INT_MAX)) return invalid("too many rows or outputs for one predict launch");
    predict_kernel<T><<<unsigned(blocks), threads_of<Cfg>(), 0, stream>>>(
        X, n, int(map.d), int(map.s), map.weights, map.offsets, map.theta, map.scale, map.pair, coef,
        int(m), F, int(groups));
    return launched("predict kernel launch failed");
}

template <class T>
std::size_t gram_workspace_bytes(std::size_t n, const FourierFeatureMap<T>& map, std::size_t m) {
    if (map.s == 0) return 0;
    return gram_layout<T>(n, map.n_out(), m).total();
}

template <class T>
CudaResult streamed_gram(const T* X, std::size_t n, const FourierFeatureMap<T>& map, const T* Y,
                         std::size_t m, T* G, T* ZtY, bool accumulate, void* workspace,
                         cudaStream_t stream) {
    clear_stale_error();
    if (CudaResult r = check_map(map); !r.ok()) return r;
    if (!G) return invalid("the Gram output must be a device pointer, not null");
    if (Y && !ZtY) return invalid("ZtY is required when Y is given");
    if (!Y) m = 0;
    if (m > std::size_t(INT_MAX)) return invalid("Y has too many columns");
    const std::size_t n_out = map.n_out();
    if (n == 0) {  // Z has no rows: G = 0 and ZtY = 0, or unchanged when accumulating
        if (accumulate) return {};
        CudaResult r = from_cuda(cudaMemsetAsync(G, 0, n_out * n_out * sizeof(T), stream), "memset of G failed");
        if (r.ok() && m > 0)
            r = from_cuda(cudaMemsetAsync(ZtY, 0, n_out * m * sizeof(T), stream), "memset of ZtY failed");
        return r;
    }
    if (!X) return invalid("X must be a device pointer, not null");

    const GramLayout lay = gram_layout<T>(n, n_out, m);
    using Cfg = GramTile<T>;
    const std::size_t g_tiles = ceil_div(n_out, Cfg::BM);
    const std::size_t g_blocks = g_tiles * g_tiles;
    const std::size_t y_col_tiles = ceil_div(m, Cfg::BN);
    if (g_blocks > std::size_t(INT_MAX) || g_tiles * y_col_tiles > std::size_t(INT_MAX))
        return invalid("n_out is too large for the gram kernel's grid");

    bool owned = false;
    if (!workspace) {
        const cudaError_t err = cudaMallocAsync(&workspace, lay.total(), stream);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();  // leave no error behind: the next call must work
            return from_cuda(err, "cannot allocate gram's device workspace");
        }
        owned = true;
    }
    char* base = static_cast<char*>(workspace);
    T* Zc = reinterpret_cast<T*>(base);
    T* g_part = lay.slices > 1 ? reinterpret_cast<T*>(base + lay.z_bytes) : nullptr;
    T* y_part = (lay.slices > 1 && m > 0) ? reinterpret_cast<T*>(base + lay.z_bytes + lay.g_part_bytes) : nullptr;
    // Without slices the sums go straight into G / ZtY (accumulated from the first chunk on).
    T* g_target = g_part ? g_part : G;
    T* y_target = y_part ? y_part : ZtY;
    const std::size_t g_stride = n_out * n_out, y_stride = n_out * m;
    const int threads = threads_of<Cfg>();

    CudaResult r;
    for (std::size_t row0 = 0; row0 < n && r.ok(); row0 += lay.chunk_rows) {
        const std::size_t rows = n - row0 < lay.chunk_rows ? n - row0 : lay.chunk_rows;
        const bool overwrite = row0 == 0 && (g_part || !accumulate);
        r = launch_features(X + row0 * map.d, rows, map, Zc, stream);
        if (!r.ok()) break;
        const std::size_t slice_rows = ceil_div(ceil_div(rows, lay.slices), Cfg::BK) * Cfg::BK;
        const dim3 g_grid(unsigned(g_blocks), unsigned(lay.slices));
        at_b_kernel<T><<<g_grid, threads, 0, stream>>>(Zc, int(n_out), Zc, int(n_out), rows, slice_rows,
                                                       g_target, g_stride, int(g_tiles), true, overwrite);
        r = launched("gram Z^T Z kernel launch failed");
        if (!r.ok() || m == 0) continue;
        const dim3 y_grid(unsigned(g_tiles * y_col_tiles), unsigned(lay.slices));
        at_b_kernel<T><<<y_grid, threads, 0, stream>>>(Zc, int(n_out), Y + row0 * m, int(m), rows,
                                                       slice_rows, y_target, y_stride, int(y_col_tiles),
                                                       false, overwrite);
        r = launched("gram Z^T Y kernel launch failed");
    }
    if (r.ok()) {
        const unsigned fin_threads = 256;
        gram_finish_kernel<T><<<unsigned(ceil_div(g_stride, fin_threads)), fin_threads, 0, stream>>>(
            G, g_part, int(n_out), int(lay.slices), accumulate);
        r = launched("gram finishing kernel launch failed");
        if (r.ok() && y_part) {
            sum_slices_kernel<T><<<unsigned(ceil_div(y_stride, fin_threads)), fin_threads, 0, stream>>>(
                ZtY, y_part, y_stride, int(lay.slices), accumulate);
            r = launched("gram ZtY finishing kernel launch failed");
        }
    }
    if (owned) {
        const cudaError_t err = cudaFreeAsync(workspace, stream);
        if (r.ok()) r = from_cuda(err, "cannot release gram's device workspace");
    }
    return r;
}

#define RFFKERN_CUDA_INSTANTIATE(T)                                                                  \
    template CudaResult fused_cos_features<T>(const T*, std::size_t, const FourierFeatureMap<T>&, T*, \
                                              cudaStream_t);                                         \
    template CudaResult fused_cos_predict<T>(const T*, std::size_t, const FourierFeatureMap<T>&,      \
                                             const T*, std::size_t, T*, cudaStream_t);               \
    template std::size_t gram_workspace_bytes<T>(std::size_t, const FourierFeatureMap<T>&,            \
                                                 std::size_t);                                       \
    template CudaResult streamed_gram<T>(const T*, std::size_t, const FourierFeatureMap<T>&, const T*, \
                                         std::size_t, T*, T*, bool, void*, cudaStream_t);
RFFKERN_CUDA_INSTANTIATE(float)
RFFKERN_CUDA_INSTANTIATE(double)
#undef RFFKERN_CUDA_INSTANTIATE

}  // namespace rffkern::cuda
