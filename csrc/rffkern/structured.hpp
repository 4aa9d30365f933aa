// Structured random feature maps: the fast Walsh-Hadamard transform (FWHT), Fastfood and SORF
// (docs/user_guide/feature_maps.rst; Le, Sarlos & Smola 2013, "Fastfood: approximating kernel
// expansions in loglinear time"; Yu et al. 2016, "Orthogonal random features").
//
// All arrays are C-contiguous (row-major); every kernel takes an explicit thread count and works
// on rows in parallel with a static split, so results are bitwise identical for any thread count.
// H below is the *unnormalised* Walsh-Hadamard matrix of order p = 2^k (H H = p I).
#pragma once
#include <cstddef>
#include <cstdint>

namespace rffkern {

// Every row of X (n x len, len a power of two) replaced by H x, or 2^(-k/2) H x when normalized.
// The butterflies run stage by stage in the order h = 1, 2, 4, ..., len/2 with (a + b, a - b), so
// the result is bitwise that of the textbook radix-2 loop in the same precision.
template <class T>
void fwht_inplace(T* X, std::size_t n, std::size_t len, bool normalized, int n_threads);

// Out-of-place: Y = FWHT(X) row by row; X is not modified. X and Y must not overlap partially
// (Y == X is the in-place transform; a partial overlap throws std::invalid_argument).
template <class T>
void fwht(const T* X, std::size_t n, std::size_t len, T* Y, bool normalized, int n_threads);

// A Fastfood map (Le, Sarlos, Smola 2013) of n_blocks blocks of size p = 2^k >= d. Block t maps
// the zero-padded input x (length p) to
//     v_t = S_t * H( G_t * Pi_t( H( B_t * x ) ) )        (elementwise products)
// where (Pi_t y)_j = y[perm_t[j]]. The constants (1/(sigma sqrt(p)), chi / ||G||) are folded into
// S by the caller. Output column c < s of the frequencies is block c / p, entry c % p.
template <class T>
struct FastfoodMap {
    const T* signs = nullptr;               // B: n_blocks x p, entries +-1
    const std::int64_t* perm = nullptr;     // Pi: n_blocks x p, each row a permutation of 0..p-1
    const T* gaussian = nullptr;            // G: n_blocks x p
    const T* scaling = nullptr;             // S: n_blocks x p
    const T* offsets = nullptr;             // u: s phases, or nullptr (zero phases)
    const T* theta = nullptr;               // d ARD scales applied to x first, or nullptr
    std::size_t d = 0, p = 0, n_blocks = 0;
    std::size_t s = 0;                      // frequencies used, s <= n_blocks * p
    T scale = 1;                            // Z = scale * cos(v + u)
    bool pair = false;                      // Z = scale * [cos v, sin v] (2s columns)
    std::size_t n_out() const { return pair ? 2 * s : s; }
};

// Z (n x n_out) for the Fastfood map; per row and block the whole chain runs in a per-thread
// buffer of O(p) values (no s x d matrix is ever formed).
template <class T>
void fastfood_features(const T* X, std::size_t n, const FastfoodMap<T>& map, T* Z, int n_threads);

// A structured orthogonal random features map (SORF, Yu et al. 2016): block t maps the padded x to
//     v_t = freq_scale * R_t * H( D1_t * H( D2_t * H( D3_t * x ) ) )
// The caller sets freq_scale = sqrt(p)/sigma * p^(-3/2) = 1/(sigma p) for the normalised-H form.
// R_t (elementwise) gives each frequency its own radius factor, for kernels whose radial law is not
// the Gaussian's (the Matern kernel); nullptr means all ones, and the product is then skipped.
template <class T>
struct SorfMap {
    const T* diagonals = nullptr;  // n_blocks x 3 x p: rows D1, D2, D3 of each block
    const T* radial = nullptr;     // R: n_blocks x p per-frequency radius factors, or nullptr
    const T* offsets = nullptr;    // s phases, or nullptr
    const T* theta = nullptr;      // d ARD scales, or nullptr
    std::size_t d = 0, p = 0, n_blocks = 0, s = 0;
    T freq_scale = 1;
    T scale = 1;
    bool pair = false;
    std::size_t n_out() const { return pair ? 2 * s : s; }
};

template <class T>
void sorf_features(const T* X, std::size_t n, const SorfMap<T>& map, T* Z, int n_threads);

// The instruction set is the one rffkern::active_isa() reports (isa_dispatch.hpp; set_isa
// switches the cosine kernels and these together).

}  // namespace rffkern
