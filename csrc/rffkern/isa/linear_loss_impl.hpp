// One instruction-set build of the logistic and softmax losses on given features (the closing fit
// of RFFNetClassifier): each isa/linear_loss_<isa>.cpp defines RFFKERN_ISA_NS and includes this file;
// CMake gives that translation unit its -m flags, and linear_loss.cpp calls the table below for the
// active level.
//
// One pass over Z: each row's logit (a dot product), its loss and residual, and the residual times
// the row added to the gradient while the row is still in L1. Two matrix-vector products (Z a, then
// Z.T r) read Z from memory twice. Reproducibility: the rows are cut into fixed chunks of
// kLinearLossChunkRows; a chunk's gradient is summed in T over its rows in order and the chunks'
// sums (and losses) are added in double in chunk order, so the result is the same bits whatever
// the thread count.
#ifndef RFFKERN_ISA_NS
#error "define RFFKERN_ISA_NS before including linear_loss_impl.hpp"
#endif
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "rffkern/isa/kernel_tables.hpp"
#include "rffkern/isa/simd_vector.hpp"
#include "rffkern/parallel.hpp"

namespace rffkern {
namespace RFFKERN_ISA_NS {
namespace {

constexpr std::size_t kLinearLossChunkRows = 256;

// out[r] = sum_j z_r[j] c[j] for R rows z_r = z + r * s at once: each load of c serves R rows, and
// the R row streams keep more loads in flight than one.
template <int R, class T>
inline void dots(const T* z, std::size_t s, const T* c, T* out) {
    using V = typename simd::VecTraits<T>::V;
    constexpr std::size_t L = std::size_t(simd::VecTraits<T>::L);
    V acc[R][2] = {};
    std::size_t j = 0;
    for (; j + 2 * L <= s; j += 2 * L) {
        const V c0 = simd::loadu<V>(c + j), c1 = simd::loadu<V>(c + j + L);
        for (int r = 0; r < R; ++r) {
            acc[r][0] += simd::loadu<V>(z + r * s + j) * c0;
            acc[r][1] += simd::loadu<V>(z + r * s + j + L) * c1;
        }
    }
    for (int r = 0; r < R; ++r) {
        const V v = acc[r][0] + acc[r][1];
        T total = 0;
        for (std::size_t l = 0; l < L; ++l) total += v[l];
        for (std::size_t k = j; k < s; ++k) total += z[r * s + k] * c[k];
        out[r] = total;
    }
}

// g[j] += sum_r w[r] z_r[j] for R rows z_r = z + r * s: one load and store of g per R rows.
template <int R, class T>
inline void axpys(const T* w, const T* z, std::size_t s, T* g) {
    using V = typename simd::VecTraits<T>::V;
    constexpr std::size_t L = std::size_t(simd::VecTraits<T>::L);
    V wv[R];
    for (int r = 0; r < R; ++r) wv[r] = V{} + w[r];
    std::size_t j = 0;
    for (; j + L <= s; j += L) {
        V v = simd::loadu<V>(g + j);
        for (int r = 0; r < R; ++r) v += wv[r] * simd::loadu<V>(z + r * s + j);
        simd::storeu(g + j, v);
    }
    for (; j < s; ++j) {
        T v = g[j];
        for (int r = 0; r < R; ++r) v += w[r] * z[r * s + j];
        g[j] = v;
    }
}

// log(1 + e^f) without overflow, and the logistic function.
inline double softplus(double f) { return f > 0 ? f + std::log1p(std::exp(-f)) : std::log1p(std::exp(f)); }
inline double sigmoid(double f) {
    if (f >= 0) return 1.0 / (1.0 + std::exp(-f));
    const double e = std::exp(f);
    return e / (1.0 + e);
}

// R consecutive rows: their logits, their weighted losses (returned, summed) and gradient terms (added to g).
template <int R, class T>
inline double rows(const T* z, std::size_t s, const T* coef, const double* y, const double* w, T* g) {
    T f[R], r[R];
    dots<R>(z, s, coef, f);
    double loss = 0;
    for (int k = 0; k < R; ++k) {
        const double fk = double(f[k]);
        loss += w[k] * (softplus(fk) - y[k] * fk);
        r[k] = T(w[k] * (sigmoid(fk) - y[k]));
    }
    axpys<R>(r, z, s, g);
    return loss;
}

// The chunks' partial gradients (n_chunks x width, in T) summed in double in chunk order into grad,
// and their losses likewise (returned): the same bits for any thread count.
template <class T>
double sum_chunks(const AlignedBuffer<T>& partial, const AlignedBuffer<double>& chunk_loss, std::size_t n_chunks,
                  std::size_t width, double* grad, [[maybe_unused]] int n_threads) {
    const std::ptrdiff_t total_width = std::ptrdiff_t(width);
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_threads > 1 && width >= 4096)
#endif
    for (std::ptrdiff_t j = 0; j < total_width; ++j) {
        double total = 0;
        for (std::size_t c = 0; c < n_chunks; ++c) total += double(partial.data()[c * width + std::size_t(j)]);
        grad[j] = total;
    }
    double loss = 0;
    for (std::size_t c = 0; c < n_chunks; ++c) loss += chunk_loss.data()[c];
    return loss;
}

// Rows per group: of 1, 2, 4 and 8, float64 is fastest with 8 and float32 with 1
// (docs/design_notes.rst).
template <class T>
constexpr int kRows = std::is_same_v<T, float> ? 1 : 8;

template <class T>
double logistic_loss_grad(const T* Z, std::size_t n, std::size_t s, const T* coef, const double* y,
                          const double* w, double* grad, int n_threads) {
    const std::size_t n_chunks = ceil_div(n, kLinearLossChunkRows);
    AlignedBuffer<T> partial(n_chunks * s);  // zeroed
    AlignedBuffer<double> chunk_loss(n_chunks);
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_threads > 1 && n_chunks > 1)
#endif
    for (std::size_t c = 0; c < n_chunks; ++c) {
        T* g = partial.data() + c * s;
        double loss = 0;
        const std::size_t stop = std::min(n, (c + 1) * kLinearLossChunkRows);
        // rows in groups of kRows (then one by one): a fixed grouping, the same sums for any thread count
        std::size_t i = c * kLinearLossChunkRows;
        for (; i + kRows<T> <= stop; i += kRows<T>)
            loss += rows<kRows<T>>(Z + i * s, s, coef, y + i, w + i, g);
        for (; i < stop; ++i) loss += rows<1>(Z + i * s, s, coef, y + i, w + i, g);
        chunk_loss.data()[c] = loss;
    }
    return sum_chunks(partial, chunk_loss, n_chunks, s, grad, n_threads);
}

// ---- softmax (several outputs) ----
//
// Each row's m logits are dot products with the m columns of coef, kept transposed (coef_t, m x s:
// one contiguous vector per class). A block of R rows x K classes forms its R * K dot products in
// registers, so that each load of a row serves K classes and each load of a class column R rows;
// the gradient terms of the block's rows go into the transposed gradient (m x s) the same way.
// Registers: R * K accumulators (and as many broadcast residuals in the gradient), R + K loads.
// 4 x 4 is the fastest of the blocks tried on the AVX-512 build, and faster than the two NumPy
// products (docs/design_notes.rst). Memory: one m x s partial gradient per 256 rows.
#if defined(__AVX512F__)
constexpr int kSoftmaxRows = 4;  // 16 accumulators of the 32 vector registers
#else
constexpr int kSoftmaxRows = 2;  // 8 of the 16
#endif
constexpr int kSoftmaxClasses = 4;

// f[r * m + k] = z_r . c_k for r < R, k < K, with z_r = z + r * s and c_k = c + k * s.
template <int R, int K, class T>
inline void block_dots(const T* z, std::size_t s, const T* c, std::size_t m, T* f) {
    using V = typename simd::VecTraits<T>::V;
    constexpr std::size_t L = std::size_t(simd::VecTraits<T>::L);
    V acc[R][K] = {};
    std::size_t j = 0;
    for (; j + L <= s; j += L) {
        V cv[K];
        for (int k = 0; k < K; ++k) cv[k] = simd::loadu<V>(c + std::size_t(k) * s + j);
        for (int r = 0; r < R; ++r) {
            const V zv = simd::loadu<V>(z + std::size_t(r) * s + j);
            for (int k = 0; k < K; ++k) acc[r][k] += zv * cv[k];
        }
    }
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < K; ++k) {
            const T* zr = z + std::size_t(r) * s;
            const T* ck = c + std::size_t(k) * s;
            T total = 0;
            for (std::size_t l = 0; l < L; ++l) total += acc[r][k][l];
            for (std::size_t q = j; q < s; ++q) total += zr[q] * ck[q];
            f[std::size_t(r) * m + std::size_t(k)] = total;
        }
}

// g_k[j] += sum_r res[r * m + k] z_r[j] for j < len and k < K, with z_r = z + r * s and g_k = g +
// k * s: one load and store of g_k per R rows. With next (the first class block only), the same
// columns of the rows at next are prefetched into L2 meanwhile, one line per row and step.
template <int R, int K, class T>
inline void block_axpys(const T* res, std::size_t m, const T* z, std::size_t s, std::size_t len, T* g,
                        const T* next) {
    using V = typename simd::VecTraits<T>::V;
    constexpr std::size_t L = std::size_t(simd::VecTraits<T>::L);
    V rv[R][K];
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < K; ++k) rv[r][k] = V{} + res[std::size_t(r) * m + std::size_t(k)];
    std::size_t j = 0;
    for (; j + L <= len; j += L) {
        if (next != nullptr)
            for (int r = 0; r < R; ++r) __builtin_prefetch(next + std::size_t(r) * s + j, 0, 1);
        V zv[R];
        for (int r = 0; r < R; ++r) zv[r] = simd::loadu<V>(z + std::size_t(r) * s + j);
        for (int k = 0; k < K; ++k) {
            T* gk = g + std::size_t(k) * s + j;
            V v = simd::loadu<V>(gk);
            for (int r = 0; r < R; ++r) v += rv[r][k] * zv[r];
            simd::storeu(gk, v);
        }
    }
    for (; j < len; ++j)
        for (int k = 0; k < K; ++k) {
            T v = g[std::size_t(k) * s + j];
            for (int r = 0; r < R; ++r) v += rv[r][k][0] * z[std::size_t(r) * s + j];
            g[std::size_t(k) * s + j] = v;
        }
}

// The m classes of R rows in blocks of kSoftmaxClasses (then 3, 2 or 1): Op<K>(k0) per block.
template <template <int> class Op, class... Args>
inline void over_class_blocks(std::size_t m, Args&&... args) {
    std::size_t k = 0;
    for (; k + kSoftmaxClasses <= m; k += kSoftmaxClasses) Op<kSoftmaxClasses>::run(k, args...);
    switch (m - k) {
        case 3: Op<3>::run(k, args...); break;
        case 2: Op<2>::run(k, args...); break;
        case 1: Op<1>::run(k, args...); break;
        default: break;
    }
}

template <int R, class T>
struct DotsOp {
    template <int K>
    struct Op {
        static void run(std::size_t k, const T* z, std::size_t s, const T* c, std::size_t m, T* f) {
            block_dots<R, K>(z, s, c + k * s, m, f + k);
        }
    };
};

template <int R, class T>
struct AxpysOp {
    template <int K>
    struct Op {
        static void run(std::size_t k, const T* res, std::size_t m, const T* z, std::size_t s, std::size_t len, T* g,
                        const T* next) {
            block_axpys<R, K>(res + k, m, z, s, len, g + k * s, k == 0 ? next : nullptr);
        }
    };
};

// Q * R consecutive rows (Q groups of R): their logits, their weighted cross-entropies (added to
// loss, each group's sum in turn) and gradient terms (added to the transposed gradient g, m x s).
// f and res hold Q * R * m values, e m (a row's exponentials). The gradient terms go in by panels of columns (panel_cols, a
// multiple of the vector width), each panel's groups in turn: a panel of g and of the Q * R rows stays
// in L1 while every group adds to it, where whole rows of g (m * s values, beyond L1 at 10 classes
// and 1000 features) would come from L2 once per group. Every g[k][j] still receives the rows'
// terms in row order, group by group: the same sums as one group at a time. With next, the next
// Q * R rows are prefetched into L2 meanwhile: the gradient terms run on L1 data while the logits
// of those rows, which read them first, would otherwise wait on memory.
template <int R, int Q, class T>
inline void softmax_rows(const T* z, std::size_t s, std::size_t m, const T* coef_t, const double* Y,
                         const double* w, T* g, T* f, T* res, double* e, const T* next, std::size_t panel_cols,
                         double& loss) {
    for (int q = 0; q < Q; ++q) {
        const std::size_t q0 = std::size_t(q) * R;
        over_class_blocks<DotsOp<R, T>::template Op>(m, z + q0 * s, s, coef_t, m, f + q0 * m);
        double group_loss = 0;
        for (std::size_t r = q0; r < q0 + R; ++r) {
            const T* fr = f + r * m;
            const double* yr = Y + r * m;
            double top = double(fr[0]);
            for (std::size_t k = 1; k < m; ++k) top = std::max(top, double(fr[k]));
            double total = 0, ysum = 0, yf = 0;
            for (std::size_t k = 0; k < m; ++k) {
                e[k] = std::exp(double(fr[k]) - top);  // one exponential per logit: p_k = e_k / total
                total += e[k];
                ysum += yr[k];
                yf += yr[k] * double(fr[k]);
            }
            group_loss += w[r] * (ysum * (top + std::log(total)) - yf);  // sum_k y_k (lse - f_k)
            const double scale = w[r] * ysum / total;
            for (std::size_t k = 0; k < m; ++k) res[r * m + k] = T(scale * e[k] - w[r] * yr[k]);
        }
        loss += group_loss;
    }
    for (std::size_t p0 = 0; p0 < s; p0 += panel_cols) {
        const std::size_t len = std::min(panel_cols, s - p0);
        for (int q = 0; q < Q; ++q) {
            const std::size_t q0 = std::size_t(q) * R;
            over_class_blocks<AxpysOp<R, T>::template Op>(m, res + q0 * m, m, z + q0 * s + p0, s, len, g + p0,
                                                          next == nullptr ? next : next + q0 * s + p0);
        }
    }
}

// Rows per gradient pass (Q groups of R) and the L1 share of a panel's gradient and rows.
// Q groups over a panel, with the next rows prefetched, take 10-37% off the time per row of one
// group at a time over whole rows (docs/design_notes.rst). The logistic loss (one output) streams
// at memory speed already (~18 GB/s on 36-40k rows): prefetching there gains nothing measurable.
constexpr int kSoftmaxPassRows = 16;
constexpr std::size_t kSoftmaxPanelBytes = 24 * 1024;

template <class T>
double softmax_loss_grad(const T* Z, std::size_t n, std::size_t s, std::size_t m, const T* coef_t,
                         const double* Y, const double* w, double* grad_t, int n_threads) {
    constexpr int R = kSoftmaxRows;
    constexpr int Q = kSoftmaxPassRows / R;
    constexpr std::size_t L = std::size_t(simd::VecTraits<T>::L);
    const std::size_t n_chunks = ceil_div(n, kLinearLossChunkRows);
    const std::size_t ms = m * s;
    // columns per panel: the panel's m rows of g and Q * R rows of Z in kSoftmaxPanelBytes, a
    // multiple of the vector width, at least four vectors
    const std::size_t panel_cols =
        std::max<std::size_t>(4, kSoftmaxPanelBytes / ((m + std::size_t(kSoftmaxPassRows)) * sizeof(T) * L)) * L;
    AlignedBuffer<T> partial(n_chunks * ms);  // zeroed
    AlignedBuffer<double> chunk_loss(n_chunks);
    const std::size_t per_thread = 2 * std::size_t(kSoftmaxPassRows) * m;  // logits and residuals of a pass
    AlignedBuffer<T> scratch(std::size_t(n_threads) * per_thread);
    AlignedBuffer<double> exps(std::size_t(n_threads) * m);
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp parallel num_threads(n_threads) if (n_threads > 1 && n_chunks > 1)
#endif
    {
        T* f = scratch.data() + std::size_t(thread_id()) * per_thread;
        T* res = f + std::size_t(kSoftmaxPassRows) * m;
        double* e = exps.data() + std::size_t(thread_id()) * m;
#if defined(RFFKERN_HAVE_OPENMP)
#pragma omp for schedule(static)
#endif
        for (std::size_t c = 0; c < n_chunks; ++c) {
            T* g = partial.data() + c * ms;
            double loss = 0;
            const std::size_t stop = std::min(n, (c + 1) * kLinearLossChunkRows);
            // rows in passes of Q * R, then groups of R, then one by one: a fixed grouping, the same
            // sums for any thread count
            const T* none = nullptr;
            std::size_t i = c * kLinearLossChunkRows;
            for (; i + std::size_t(kSoftmaxPassRows) <= stop; i += kSoftmaxPassRows) {
                const T* next = i + 2 * std::size_t(kSoftmaxPassRows) <= n ? Z + (i + kSoftmaxPassRows) * s : none;
                softmax_rows<R, Q>(Z + i * s, s, m, coef_t, Y + i * m, w + i, g, f, res, e, next, panel_cols, loss);
            }
            for (; i + R <= stop; i += R)
                softmax_rows<R, 1>(Z + i * s, s, m, coef_t, Y + i * m, w + i, g, f, res, e, none, s, loss);
            for (; i < stop; ++i)
                softmax_rows<1, 1>(Z + i * s, s, m, coef_t, Y + i * m, w + i, g, f, res, e, none, s, loss);
            chunk_loss.data()[c] = loss;
        }
    }
    return sum_chunks(partial, chunk_loss, n_chunks, ms, grad_t, n_threads);
}

}  // namespace

template <class T>
const LinearLossKernelTable<T>& linear_loss_kernel_table() {
    static constexpr LinearLossKernelTable<T> table{&logistic_loss_grad<T>, &softmax_loss_grad<T>};
    return table;
}
template const LinearLossKernelTable<float>& linear_loss_kernel_table<float>();
template const LinearLossKernelTable<double>& linear_loss_kernel_table<double>();

}  // namespace RFFKERN_ISA_NS
}  // namespace rffkern
