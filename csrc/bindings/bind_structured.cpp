// Bindings of the structured transforms (FWHT, Fastfood, SORF). Python converts and validates
// values; this layer checks shapes, takes pointers, then releases the GIL around the core call.
#include <pybind11/stl.h>

#include <string>

#include "bindings/pybind_utils.hpp"
#include "rffkern/structured.hpp"

namespace rffkern::bindings {
namespace {

// X (n, d) and an output (n, n_out) for a block map of n_blocks blocks of size p.
template <class T>
void check_map_io(const carray<T>& X, std::size_t p, std::size_t n_blocks, std::size_t s, bool pair,
                  const std::optional<carray<T>>& offsets, const std::optional<carray<T>>& theta,
                  carray<T>& out) {
    require_ndim(X, "X", 2);
    require(std::size_t(X.shape(1)) <= p, "X has " + std::to_string(X.shape(1)) +
                                              " features, more than the block size " + std::to_string(p));
    require(s <= n_blocks * p, "n_frequencies exceeds n_blocks * block size");
    if (offsets) require_shape(*offsets, "offsets", {py::ssize_t(s)});
    if (theta) require_shape(*theta, "theta", {X.shape(1)});
    require_shape(out, "out", {X.shape(0), py::ssize_t(pair ? 2 * s : s)});
}

template <class T>
void register_dtype(py::module_& m) {
    using opt = std::optional<carray<T>>;
    m.def(
        "fwht_inplace",
        [](carray<T>& X, bool normalized, int n_threads) {
            require_ndim(X, "X", 2);
            T* x = out_ptr(X, "X");
            const std::size_t n = std::size_t(X.shape(0)), len = std::size_t(X.shape(1));
            py::gil_scoped_release release;
            fwht_inplace(x, n, len, normalized, n_threads);
        },
        py::arg("X").noconvert(), py::arg("normalized"), py::arg("n_threads"));
    m.def(
        "fwht",
        [](const carray<T>& X, carray<T>& out, bool normalized, int n_threads) {
            require_ndim(X, "X", 2);
            require_shape(out, "out", {X.shape(0), X.shape(1)});
            T* y = out_ptr(out, "out");
            const std::size_t n = std::size_t(X.shape(0)), len = std::size_t(X.shape(1));
            py::gil_scoped_release release;
            fwht(X.data(), n, len, y, normalized, n_threads);
        },
        py::arg("X").noconvert(), py::arg("out").noconvert(), py::arg("normalized"), py::arg("n_threads"));
    m.def(
        "fastfood_features",
        [](const carray<T>& X, const carray<T>& signs, const carray<std::int64_t>& perm,
           const carray<T>& gaussian, const carray<T>& scaling, const opt& offsets, const opt& theta,
           std::size_t n_frequencies, T scale, bool pair, carray<T>& out, int n_threads) {
            require_ndim(signs, "signs", 2);
            const py::ssize_t nb = signs.shape(0), p = signs.shape(1);
            require_shape(perm, "permutation", {nb, p});
            require_shape(gaussian, "gaussian", {nb, p});
            require_shape(scaling, "scaling", {nb, p});
            check_map_io(X, std::size_t(p), std::size_t(nb), n_frequencies, pair, offsets, theta, out);
            FastfoodMap<T> map;
            map.signs = signs.data();
            map.perm = perm.data();
            map.gaussian = gaussian.data();
            map.scaling = scaling.data();
            map.offsets = opt_ptr(offsets);
            map.theta = opt_ptr(theta);
            map.d = std::size_t(X.shape(1));
            map.p = std::size_t(p);
            map.n_blocks = std::size_t(nb);
            map.s = n_frequencies;
            map.scale = scale;
            map.pair = pair;
            T* z = out_ptr(out, "out");
            py::gil_scoped_release release;
            fastfood_features(X.data(), std::size_t(X.shape(0)), map, z, n_threads);
        },
        py::arg("X").noconvert(), py::arg("signs").noconvert(), py::arg("permutation").noconvert(),
        py::arg("gaussian").noconvert(), py::arg("scaling").noconvert(), py::arg("offsets").noconvert(),
        py::arg("theta").noconvert(), py::arg("n_frequencies"), py::arg("scale"), py::arg("pair"),
        py::arg("out").noconvert(), py::arg("n_threads"));
    m.def(
        "sorf_features",
        [](const carray<T>& X, const carray<T>& diagonals, const opt& offsets, const opt& theta,
           std::size_t n_frequencies, T freq_scale, T scale, bool pair, carray<T>& out, int n_threads) {
            require_ndim(diagonals, "diagonals", 3);
            require(diagonals.shape(1) == 3, "diagonals must have shape (n_blocks, 3, p)");
            const py::ssize_t nb = diagonals.shape(0), p = diagonals.shape(2);
            check_map_io(X, std::size_t(p), std::size_t(nb), n_frequencies, pair, offsets, theta, out);
            SorfMap<T> map;
            map.diagonals = diagonals.data();
            map.offsets = opt_ptr(offsets);
            map.theta = opt_ptr(theta);
            map.d = std::size_t(X.shape(1));
            map.p = std::size_t(p);
            map.n_blocks = std::size_t(nb);
            map.s = n_frequencies;
            map.freq_scale = freq_scale;
            map.scale = scale;
            map.pair = pair;
            T* z = out_ptr(out, "out");
            py::gil_scoped_release release;
            sorf_features(X.data(), std::size_t(X.shape(0)), map, z, n_threads);
        },
        py::arg("X").noconvert(), py::arg("diagonals").noconvert(), py::arg("offsets").noconvert(),
        py::arg("theta").noconvert(), py::arg("n_frequencies"), py::arg("freq_scale"), py::arg("scale"),
        py::arg("pair"), py::arg("out").noconvert(), py::arg("n_threads"));
}

}  // namespace

void register_structured(py::module_& m) {
    register_dtype<float>(m);
    register_dtype<double>(m);
}

}  // namespace rffkern::bindings
