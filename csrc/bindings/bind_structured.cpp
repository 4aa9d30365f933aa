// Bindings of the structured transforms (FWHT, Fastfood, SORF). Python converts and validates
// values; this layer checks shapes, takes pointers, then releases the GIL around the core call.
#include <string>

#include "bindings/pybind_utils.hpp"
#include "rffkern/structured.hpp"

namespace rffkern::bindings {
namespace {

void fwht_inplace(const py::object& X_, bool normalized, int n_threads) {
    with_float_dtype(X_, "X", [&](auto tag) {
        using T = decltype(tag);
        carray<T> X = as_carray<T>(X_, "X");
        require_ndim(X, "X", 2);
        T* x = out_ptr(X, "X");
        const std::size_t n = std::size_t(X.shape(0)), len = std::size_t(X.shape(1));
        py::gil_scoped_release release;
        rffkern::fwht_inplace(x, n, len, normalized, n_threads);
    });
}

void fwht(const py::object& X_, const py::object& out_, bool normalized, int n_threads) {
    with_float_dtype(X_, "X", [&](auto tag) {
        using T = decltype(tag);
        const carray<T> X = as_carray<T>(X_, "X");
        carray<T> out = as_carray<T>(out_, "out");
        require_ndim(X, "X", 2);
        require_shape(out, "out", {X.shape(0), X.shape(1)});
        require_disjoint({span_of(out, "out")}, {span_of(X, "X")});  // in place is fwht_inplace
        T* y = out_ptr(out, "out");
        const std::size_t n = std::size_t(X.shape(0)), len = std::size_t(X.shape(1));
        py::gil_scoped_release release;
        rffkern::fwht(X.data(), n, len, y, normalized, n_threads);
    });
}

// What Fastfood and SORF share: X (n, d) with d <= p, offsets (s,), theta (d,), out (n, n_out);
// fills the common fields of `map` (block arrays already set by the caller, `blocks` their spans)
// and runs `kernel` on it with the GIL released.
template <class T, class Map, class Kernel>
void run_block_map(Map map, std::size_t p, std::size_t n_blocks, const py::object& X_,
                   const py::object& offsets_, const py::object& theta_, std::size_t n_frequencies,
                   double scale, bool pair, const py::object& out_, int n_threads,
                   std::initializer_list<ArgSpan> blocks, Kernel kernel) {
    const carray<T> X = as_carray<T>(X_, "X");
    const auto offsets = as_optional_carray<T>(offsets_, "offsets");
    const auto theta = as_optional_carray<T>(theta_, "theta");
    carray<T> out = as_carray<T>(out_, "out");
    const std::size_t s = n_frequencies;
    require_ndim(X, "X", 2);
    require(std::size_t(X.shape(1)) <= p, "X has " + std::to_string(X.shape(1)) +
                                              " features, more than the block size " + std::to_string(p));
    require(s <= n_blocks * p, "n_frequencies exceeds n_blocks * block size");
    if (offsets) require_shape(*offsets, "offsets", {py::ssize_t(s)});
    if (theta) require_shape(*theta, "theta", {X.shape(1)});
    require_shape(out, "out", {X.shape(0), py::ssize_t(pair ? 2 * s : s)});
    require_disjoint({span_of(out, "out")},
                     {span_of(X, "X"), span_of(offsets, "offsets"), span_of(theta, "theta")});
    require_disjoint({span_of(out, "out")}, blocks);
    map.offsets = opt_ptr(offsets);
    map.theta = opt_ptr(theta);
    map.d = std::size_t(X.shape(1));
    map.p = p;
    map.n_blocks = n_blocks;
    map.s = s;
    map.scale = T(scale);
    map.pair = pair;
    T* z = out_ptr(out, "out");
    py::gil_scoped_release release;
    kernel(X.data(), std::size_t(X.shape(0)), map, z, n_threads);
}

void fastfood_features(const py::object& X_, const py::object& signs_, const py::object& perm_,
                       const py::object& gaussian_, const py::object& scaling_, const py::object& offsets_,
                       const py::object& theta_, std::size_t n_frequencies, double scale, bool pair,
                       const py::object& out_, int n_threads) {
    with_float_dtype(X_, "X", [&](auto tag) {
        using T = decltype(tag);
        const carray<T> signs = as_carray<T>(signs_, "signs");
        const carray<std::int64_t> perm = as_carray<std::int64_t>(perm_, "permutation");
        const carray<T> gaussian = as_carray<T>(gaussian_, "gaussian");
        const carray<T> scaling = as_carray<T>(scaling_, "scaling");
        require_ndim(signs, "signs", 2);
        const py::ssize_t nb = signs.shape(0), p = signs.shape(1);
        require_shape(perm, "permutation", {nb, p});
        require_shape(gaussian, "gaussian", {nb, p});
        require_shape(scaling, "scaling", {nb, p});
        FastfoodMap<T> map;
        map.signs = signs.data();
        map.perm = perm.data();
        map.gaussian = gaussian.data();
        map.scaling = scaling.data();
        run_block_map<T>(map, std::size_t(p), std::size_t(nb), X_, offsets_, theta_, n_frequencies, scale,
                         pair, out_, n_threads,
                         {span_of(signs, "signs"), span_of(perm, "permutation"),
                          span_of(gaussian, "gaussian"), span_of(scaling, "scaling")},
                         &rffkern::fastfood_features<T>);
    });
}

void sorf_features(const py::object& X_, const py::object& diagonals_, const py::object& offsets_,
                   const py::object& theta_, std::size_t n_frequencies, double freq_scale, double scale,
                   bool pair, const py::object& out_, int n_threads, const py::object& radial_) {
    with_float_dtype(X_, "X", [&](auto tag) {
        using T = decltype(tag);
        const carray<T> diagonals = as_carray<T>(diagonals_, "diagonals");
        const auto radial = as_optional_carray<T>(radial_, "radial");
        require_ndim(diagonals, "diagonals", 3);
        require(diagonals.shape(1) == 3, "diagonals must have shape (n_blocks, 3, p)");
        const py::ssize_t nb = diagonals.shape(0), p = diagonals.shape(2);
        if (radial) require_shape(*radial, "radial", {nb, p});
        SorfMap<T> map;
        map.diagonals = diagonals.data();
        map.radial = opt_ptr(radial);
        map.freq_scale = T(freq_scale);
        run_block_map<T>(map, std::size_t(p), std::size_t(nb), X_, offsets_, theta_, n_frequencies, scale,
                         pair, out_, n_threads, {span_of(diagonals, "diagonals"), span_of(radial, "radial")},
                         &rffkern::sorf_features<T>);
    });
}

}  // namespace

void register_structured(py::module_& m) {
    m.def("fwht_inplace", &fwht_inplace, py::arg("X"), py::arg("normalized"), py::arg("n_threads"));
    m.def("fwht", &fwht, py::arg("X"), py::arg("out"), py::arg("normalized"), py::arg("n_threads"));
    m.def("fastfood_features", &fastfood_features, py::arg("X"), py::arg("signs"), py::arg("permutation"),
          py::arg("gaussian"), py::arg("scaling"), py::arg("offsets"), py::arg("theta"),
          py::arg("n_frequencies"), py::arg("scale"), py::arg("pair"), py::arg("out"), py::arg("n_threads"));
    m.def("sorf_features", &sorf_features, py::arg("X"), py::arg("diagonals"), py::arg("offsets"),
          py::arg("theta"), py::arg("n_frequencies"), py::arg("freq_scale"), py::arg("scale"),
          py::arg("pair"), py::arg("out"), py::arg("n_threads"), py::arg("radial") = py::none());
}

}  // namespace rffkern::bindings
