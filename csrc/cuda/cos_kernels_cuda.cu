// CUDA kernels of the fused cosine features (contract and accuracy plan: cos_kernels_cuda.cuh).
//
// One SIMT tile engine serves every kernel: a block of 256 threads computes a tile C = A^T B of two
// operands staged k-major in shared memory, 8 values of k at a time, double buffered (the next
// slab is fetched into registers while the current one is multiplied). For features and predict
// A^T is X o theta and B is W (C = U without the offsets), in 128 x 64 tiles; for gram A and B are
// row blocks of a chunk of Z (and of Y), in 128 x 128 tiles. The epilogue decides the kernel:
// store scale*cos (features), dot with coef and reduce across the tile's columns (predict), or
// add into gram's partial sums.
//
// Shapes chosen on an H100 with bench/cuda_tune.py over variants from bench/build_cuda_variants.sh
// (the numbers: bench/CUDA_TUNING.md, docs/kernels.rst). Each thread holds 8 x 4 (features,
// predict) or 8 x 8 (gram) accumulators, its rows {4 ty + r, 64 + 4 ty + r} and columns
// {64 g + 4 tx + c}, so per k its operands are 16-byte shared loads (3 for 32 FMAs, 4 for 64):
// features and predict take 20-30% less time than with 4-byte loads on strided columns. Tried and
// slower: 8 x 8 accumulators for features / predict (the unrolled epilogue's 64 inlined
// cosf, 14k instructions, stalled on instruction fetch: 18 ms), and cos taken in a rolled loop over
// a shared-memory copy of the tile (2-10% slower than the unrolled 8 x 4 epilogue).
#include <climits>
#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/cos_kernels_cuda.cuh"

namespace rffkern::cuda {
namespace {

// ---- tile shape ---------------------------------------------------------------------------
// 256 threads as 16 x 16 (tx = threadIdx.x % 16, ty = threadIdx.x / 16); a block tile of 128 rows
// and 64 NB columns, thread (tx, ty) holding rows {4 ty + r, 64 + 4 ty + r} and columns
// {64 g + 4 tx + c} (r, c < 4, g < NB). features / predict use NB = 1, gram's square tiles NB = 2.
struct Tile {
    static constexpr int BM = 128, BK = 8, NT = 256;
    static constexpr int PAD = 4;  // keeps rows 16-byte aligned; spreads the transposing stores over banks
};

// Blocks per SM the compiler must fit (a register cap): the features / predict kernels (8 x 4
// accumulators a thread) and gram's Z^T Z (8 x 8), chosen on an H100 with bench/cuda_tune.py; the
// macros let bench/build_cuda_variants.sh build others.
#ifndef RFFKERN_CUDA_F32_FEATURE_BLOCKS
#define RFFKERN_CUDA_F32_FEATURE_BLOCKS 3
#endif
#ifndef RFFKERN_CUDA_F64_FEATURE_BLOCKS
#define RFFKERN_CUDA_F64_FEATURE_BLOCKS 2
#endif
#ifndef RFFKERN_CUDA_F32_GRAM_BLOCKS
#define RFFKERN_CUDA_F32_GRAM_BLOCKS 2
#endif
#ifndef RFFKERN_CUDA_F64_GRAM_BLOCKS
#define RFFKERN_CUDA_F64_GRAM_BLOCKS 1
#endif
template <class T>
constexpr int kFeatureMinBlocks = sizeof(T) == 4 ? RFFKERN_CUDA_F32_FEATURE_BLOCKS : RFFKERN_CUDA_F64_FEATURE_BLOCKS;
template <class T>
constexpr int kGramMinBlocks = sizeof(T) == 4 ? RFFKERN_CUDA_F32_GRAM_BLOCKS : RFFKERN_CUDA_F64_GRAM_BLOCKS;

// Outputs of predict handled per launch column (grid dimension) when m > 1; more outputs recompute U.
constexpr int kPredictOutputs = 2;
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

// ---- 16-byte loads and stores of four consecutive values (p 16-byte aligned) --------------------
__device__ __forceinline__ void load4(const float* p, float* v) {
    const float4 t = *reinterpret_cast<const float4*>(p);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void load4(const double* p, double* v) {
    const double2 t0 = reinterpret_cast<const double2*>(p)[0], t1 = reinterpret_cast<const double2*>(p)[1];
    v[0] = t0.x, v[1] = t0.y, v[2] = t1.x, v[3] = t1.y;
}
__device__ __forceinline__ void store4(float* p, const float* v) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void store4(double* p, const double* v) {
    reinterpret_cast<double2*>(p)[0] = make_double2(v[0], v[1]);
    reinterpret_cast<double2*>(p)[1] = make_double2(v[2], v[3]);
}

// Row (column) of the tile held in a thread's i-th accumulator row (column): t is ty (tx).
__device__ __forceinline__ int tile_index(int t, int i) { return (i >> 2) * 64 + 4 * t + (i & 3); }

// ---- the tile engine ----------------------------------------------------------------------
template <class T, int NB>
struct TileSmem {
    T a[2][Tile::BK][Tile::BM + Tile::PAD];
    T b[2][Tile::BK][64 * NB + Tile::PAD];
};

// Slabs of X o theta, transposed: a[k][r] = X[row0 + r, k0 + k] theta[k0 + k] (zero outside), for
// k0 = 0, 8, 16, ... in turn. A thread always loads the same k of four rows 32 apart; eight
// consecutive threads read one row's eight values of k (one 32-byte sector).
template <class T>
struct XThetaLoader {
    const T* __restrict__ X;
    const T* __restrict__ theta;
    int d, k;  // k: the next slab's column for this thread
    std::size_t at[4];
    bool row_ok[4];
    T reg[4];
    __device__ XThetaLoader(const T* X_, const T* theta_, std::size_t n, int d_, std::size_t row0)
        : X(X_), theta(theta_), d(d_), k(int(threadIdx.x) & 7) {
#pragma unroll
        for (int t = 0; t < 4; ++t) {
            const std::size_t row = row0 + std::size_t((int(threadIdx.x) >> 3) + 32 * t);
            row_ok[t] = row < n;
            at[t] = row * std::size_t(d) + std::size_t(k);
        }
    }
    __device__ void fetch() {
        const bool k_ok = k < d;
        const T th = (k_ok && theta) ? theta[k] : T(1);  // one rounding, as the reference's X * theta
#pragma unroll
        for (int t = 0; t < 4; ++t) {
            reg[t] = (k_ok && row_ok[t]) ? X[at[t]] * th : T(0);
            at[t] += Tile::BK;
        }
        k += Tile::BK;
    }
    __device__ void store(T (&a)[Tile::BK][Tile::BM + Tile::PAD]) const {
#pragma unroll
        for (int t = 0; t < 4; ++t) a[int(threadIdx.x) & 7][(int(threadIdx.x) >> 3) + 32 * t] = reg[t];
    }
};

// Slabs of a row-major operand: a[k][c] = M[k0 + k, col0 + c] for k0 + k < k_end and
// col0 + c < cols (zero outside), width 64 NB, for k0 = k_begin, k_begin + 8, ... in turn.
// Consecutive threads read consecutive columns.
template <class T, int NB>
struct RowLoader {
    static constexpr int W = 64 * NB, V = Tile::BK * W / Tile::NT, KSTEP = Tile::NT / W;
    const T* __restrict__ M;
    std::size_t ld, k_end, k, at;  // k: the next slab's first row for this thread
    bool col_ok;
    T reg[V];
    __device__ RowLoader(const T* M_, std::size_t ld_, std::size_t k_begin, std::size_t k_end_, std::size_t cols,
                         std::size_t col0)
        : M(M_), ld(ld_), k_end(k_end_), k(k_begin + std::size_t(int(threadIdx.x) / W)) {
        const std::size_t col = col0 + std::size_t(int(threadIdx.x) % W);
        col_ok = col < cols;
        at = k * ld + col;
    }
    __device__ void fetch() {
#pragma unroll
        for (int t = 0; t < V; ++t) {
            reg[t] = (col_ok && k + std::size_t(KSTEP * t) < k_end) ? M[at + std::size_t(KSTEP * t) * ld] : T(0);
        }
        k += Tile::BK;
        at += Tile::BK * ld;
    }
    __device__ void store(T (&a)[Tile::BK][W + Tile::PAD]) const {
#pragma unroll
        for (int t = 0; t < V; ++t) a[int(threadIdx.x) / W + KSTEP * t][int(threadIdx.x) % W] = reg[t];
    }
};

// acc[i][j] = sum_{k_begin <= k < k_end} A[k][tile_index(ty, i)] B[k][tile_index(tx, j)], summed in
// k order with FMAs (the loaders start at k_begin). Every thread of the block calls it with the
// same range (it holds barriers); it returns after a barrier, so the shared memory it used may be
// overwritten at once and shared memory written before the call is visible to every thread after
// it (when k_begin < k_end).
template <class T, int NB, class LoaderA, class LoaderB>
__device__ void tile_product(TileSmem<T, NB>& sm, LoaderA& la, LoaderB& lb, std::size_t k_begin,
                             std::size_t k_end, T (&acc)[8][4 * NB]) {
    const int tx = int(threadIdx.x) & 15, ty = int(threadIdx.x) >> 4;
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 4 * NB; ++j) acc[i][j] = T(0);
    if (k_begin >= k_end) return;
    la.fetch();
    lb.fetch();
    la.store(sm.a[0]);
    lb.store(sm.b[0]);
    __syncthreads();
    int buf = 0;
    for (std::size_t k0 = k_begin; k0 < k_end; k0 += Tile::BK) {
        const bool more = k0 + Tile::BK < k_end;
        if (more) {  // in flight while this slab is multiplied
            la.fetch();
            lb.fetch();
        }
#pragma unroll
        for (int kk = 0; kk < Tile::BK; ++kk) {
            T a[8], b[4 * NB];
            load4(&sm.a[buf][kk][4 * ty], a);
            load4(&sm.a[buf][kk][64 + 4 * ty], a + 4);
#pragma unroll
            for (int g = 0; g < NB; ++g) load4(&sm.b[buf][kk][64 * g + 4 * tx], b + 4 * g);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 4 * NB; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        if (more) {  // the other buffer: its last readers finished before the previous barrier
            la.store(sm.a[buf ^ 1]);
            lb.store(sm.b[buf ^ 1]);
        }
        __syncthreads();
        buf ^= 1;
    }
}

// U's tile for rows row0.. and columns col0.. (without the offsets).
template <class T, int NB>
__device__ void u_tile(TileSmem<T, NB>& sm, const T* X, const T* theta, const T* W, std::size_t n, int d,
                       int s, std::size_t row0, int col0, T (&acc)[8][4 * NB]) {
    XThetaLoader<T> la(X, theta, n, d, row0);
    RowLoader<T, NB> lb(W, std::size_t(s), 0, std::size_t(d), std::size_t(s), std::size_t(col0));
    tile_product(sm, la, lb, 0, std::size_t(d), acc);
}

// ---- features -----------------------------------------------------------------------------
// vec: Z's rows and the sin half start 16-byte aligned (s % 4 == 0 and Z aligned), so four
// consecutive columns inside [0, s) are one 16-byte store (two for double).
template <class T>
__global__ void __launch_bounds__(Tile::NT, kFeatureMinBlocks<T>)
features_kernel(const T* __restrict__ X, std::size_t n, int d, int s, const T* __restrict__ W,
                const T* __restrict__ b, const T* __restrict__ theta, T scale, bool pair,
                T* __restrict__ Z, int col_tiles, bool vec) {
    constexpr int NB = 1;
    __shared__ __align__(16) TileSmem<T, NB> sm;
    const std::size_t row0 = std::size_t(blockIdx.x / col_tiles) * Tile::BM;
    const int col0 = int(blockIdx.x % col_tiles) * 64 * NB;  // columns vary fastest: X rows reused in L2
    T acc[8][4 * NB];
    u_tile(sm, X, theta, W, n, d, s, row0, col0, acc);

    const int tx = int(threadIdx.x) & 15, ty = int(threadIdx.x) >> 4;
    const std::size_t n_out = pair ? 2 * std::size_t(s) : std::size_t(s);
    T off[4 * NB];
#pragma unroll
    for (int j = 0; j < 4 * NB; ++j) {
        const int col = col0 + tile_index(tx, j);
        off[j] = (b && col < s) ? b[col] : T(0);
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const std::size_t row = row0 + std::size_t(tile_index(ty, i));
        if (row >= n) continue;
        T* z = Z + row * n_out;
#pragma unroll
        for (int g = 0; g < NB; ++g) {
            const int c0 = col0 + 64 * g + 4 * tx;
            if (c0 >= s) continue;
            T cs[4], sn[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const T u = acc[i][4 * g + j] + off[4 * g + j];
                if (pair) {
                    sin_cos_of(u, &sn[j], &cs[j]);
                    sn[j] *= scale;
                } else {
                    cs[j] = cos_of(u);
                }
                cs[j] *= scale;
            }
            if (vec && c0 + 3 < s) {
                store4(z + c0, cs);
                if (pair) store4(z + s + c0, sn);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (c0 + j >= s) break;
                    z[c0 + j] = cs[j];
                    if (pair) z[s + c0 + j] = sn[j];
                }
            }
        }
    }
}

// ---- predict ------------------------------------------------------------------------------
// One block owns 128 rows and MO outputs and sweeps every column tile of U: the per-thread
// partial dot products stay in registers, then the 16 threads sharing a row (a half-warp) add
// theirs with shuffles in a fixed order.
template <class T, int MO>
__global__ void __launch_bounds__(Tile::NT, kFeatureMinBlocks<T>)
predict_kernel(const T* __restrict__ X, std::size_t n, int d, int s, const T* __restrict__ W,
               const T* __restrict__ b, const T* __restrict__ theta, T scale, bool pair,
               const T* __restrict__ coef, int m, T* __restrict__ F, int output_groups) {
    constexpr int NB = 1, BN = 64;
    __shared__ __align__(16) TileSmem<T, NB> sm;
    __shared__ T coef_tile[2][BN][MO];  // rows of coef for this column tile: cos, sin

    const std::size_t row0 = std::size_t(blockIdx.x / output_groups) * Tile::BM;
    const int o0 = int(blockIdx.x % output_groups) * MO;
    const int tx = int(threadIdx.x) & 15, ty = int(threadIdx.x) >> 4;

    T part[8][MO];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int o = 0; o < MO; ++o) part[i][o] = T(0);

    for (int col0 = 0; col0 < s; col0 += BN) {
        for (int e = int(threadIdx.x); e < 2 * BN * MO; e += Tile::NT) {
            const int half = e / (BN * MO), c = (e / MO) % BN, o = e % MO;
            const int col = col0 + c;
            T v = T(0);
            if (col < s && o0 + o < m && (half == 0 || pair))
                v = coef[(std::size_t(col) + (half ? std::size_t(s) : 0)) * std::size_t(m) +
                         std::size_t(o0 + o)];
            coef_tile[half][c][o] = v;
        }
        T acc[8][4 * NB];
        u_tile(sm, X, theta, W, n, d, s, row0, col0, acc);  // its first barrier: coef_tile ready
#pragma unroll
        for (int j = 0; j < 4 * NB; ++j) {
            const int c = tile_index(tx, j);
            const int col = col0 + c;
            if (col >= s) continue;  // coef_tile is zero there, but cos(b) must not be taken
            const T off = b ? b[col] : T(0);
#pragma unroll
            for (int i = 0; i < 8; ++i) {
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
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int o = 0; o < MO; ++o) {
            T v = part[i][o];
#pragma unroll
            for (int lane = 8; lane >= 1; lane /= 2) v += __shfl_xor_sync(0xffffffffu, v, lane);
            part[i][o] = v;
        }
    if (tx == 0) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const std::size_t row = row0 + std::size_t(tile_index(ty, i));
            if (row >= n) continue;
#pragma unroll
            for (int o = 0; o < MO; ++o)
                if (o0 + o < m) F[row * std::size_t(m) + std::size_t(o0 + o)] = part[i][o];
        }
    }
}

// ---- gram: C_slice (+)= A[slice rows]^T B[slice rows] ---------------------------------------
// A is rows x p and B rows x q, both row-major (a chunk of Z and of Z or Y), so both slabs load
// contiguously along their columns. blockIdx.y is the row slice; slice z writes
// C + z * slice_stride. With upper_only (A == B, p == q) tiles below the diagonal return at once.
// Square 128 x 128 tiles (NB = 2).
template <class T>
__global__ void __launch_bounds__(Tile::NT, kGramMinBlocks<T>)
at_b_kernel(const T* __restrict__ A, int p, const T* __restrict__ B, int q, std::size_t rows,
            std::size_t slice_rows, T* __restrict__ C, std::size_t slice_stride, int col_tiles,
            bool upper_only, bool overwrite) {
    const int ti = int(blockIdx.x) / col_tiles, tj = int(blockIdx.x) % col_tiles;
    if (upper_only && ti > tj) return;  // the whole block leaves before any barrier
    __shared__ __align__(16) TileSmem<T, 2> sm;
    const int i0 = ti * Tile::BM, j0 = tj * Tile::BM;
    const std::size_t r_begin = std::size_t(blockIdx.y) * slice_rows;
    const std::size_t r_end = r_begin + slice_rows < rows ? r_begin + slice_rows : rows;
    RowLoader<T, 2> la(A, std::size_t(p), r_begin, r_end, std::size_t(p), std::size_t(i0));
    RowLoader<T, 2> lb(B, std::size_t(q), r_begin, r_end, std::size_t(q), std::size_t(j0));
    T acc[8][8];
    tile_product(sm, la, lb, r_begin, r_end, acc);  // a slice past the rows sums nothing: zeros

    const int tx = int(threadIdx.x) & 15, ty = int(threadIdx.x) >> 4;
    T* c_out = C + std::size_t(blockIdx.y) * slice_stride;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int gi = i0 + tile_index(ty, i);
        if (gi >= p) continue;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int gj = j0 + tile_index(tx, j);
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
    const std::size_t tiles = ceil_div(n_out, std::size_t(Tile::BM));
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
    const std::size_t col_tiles = ceil_div(map.s, std::size_t(64));
    const std::size_t blocks = ceil_div(n, Tile::BM) * col_tiles;
    if (blocks > std::size_t(INT_MAX)) return invalid("too many rows for one features launch");
    const bool vec = map.s % 4 == 0 && reinterpret_cast<std::uintptr_t>(Z) % 16 == 0;
    features_kernel<T><<<unsigned(blocks), Tile::NT, 0, stream>>>(
        X, n, int(map.d), int(map.s), map.weights, map.offsets, map.theta, map.scale, map.pair, Z,
        int(col_tiles), vec);
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
    // one output (regression, binary classification) gets a kernel of its own: no wasted FMAs
    const std::size_t per_group = m == 1 ? 1 : kPredictOutputs;
    const std::size_t groups = ceil_div(m, per_group);
    const std::size_t blocks = ceil_div(n, Tile::BM) * groups;
    if (blocks > std::size_t(INT_MAX)) return invalid("too many rows or outputs for one predict launch");
    if (per_group == 1)
        predict_kernel<T, 1><<<unsigned(blocks), Tile::NT, 0, stream>>>(
            X, n, int(map.d), int(map.s), map.weights, map.offsets, map.theta, map.scale, map.pair, coef,
            int(m), F, int(groups));
    else
        predict_kernel<T, kPredictOutputs><<<unsigned(blocks), Tile::NT, 0, stream>>>(
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
    const std::size_t g_tiles = ceil_div(n_out, std::size_t(Tile::BM));
    const std::size_t g_blocks = g_tiles * g_tiles;
    const std::size_t y_col_tiles = ceil_div(m, std::size_t(Tile::BM));
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
    const int threads = Tile::NT;

    CudaResult r;
    for (std::size_t row0 = 0; row0 < n && r.ok(); row0 += lay.chunk_rows) {
        const std::size_t rows = n - row0 < lay.chunk_rows ? n - row0 : lay.chunk_rows;
        const bool overwrite = row0 == 0 && (g_part || !accumulate);
        r = launch_features(X + row0 * map.d, rows, map, Zc, stream);
        if (!r.ok()) break;
        const std::size_t slice_rows = ceil_div(ceil_div(rows, lay.slices), std::size_t(Tile::BK)) * Tile::BK;
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
