// Bindings of the logistic and softmax losses on given features (the closing fit of
// RFFNetClassifier). The dtype of Z picks the float32 or float64 core; coef has Z's dtype, the
// targets, weights and gradient are float64.
#include <string>

#include "bindings/pybind_utils.hpp"
#include "rffkern/linear_loss.hpp"

namespace rffkern::bindings {
namespace {

double logistic_loss_grad(const py::object& Z_, const py::object& coef_, const py::object& y_,
                          const py::object& w_, const py::object& out_, int n_threads) {
    return with_float_dtype(Z_, "Z", [&](auto tag) {
        using T = decltype(tag);
        const carray<T> Z = as_carray<T>(Z_, "Z");
        require_ndim(Z, "Z", 2);
        const py::ssize_t n = Z.shape(0), s = Z.shape(1);
        const carray<T> coef = as_carray<T>(coef_, "coef");
        require_shape(coef, "coef", {s});
        const carray<double> y = as_carray<double>(y_, "y");
        require_shape(y, "y", {n});
        const carray<double> w = as_carray<double>(w_, "w");
        require_shape(w, "w", {n});
        carray<double> out = as_carray<double>(out_, "out");
        require_shape(out, "out", {s});
        require_disjoint({span_of(out, "out")}, {span_of(Z, "Z"), span_of(coef, "coef"), span_of(y, "y"),
                                                 span_of(w, "w")});
        double* g = out_ptr(out, "out");
        py::gil_scoped_release release;
        return rffkern::logistic_loss_grad(Z.data(), std::size_t(n), std::size_t(s), coef.data(), y.data(),
                                           w.data(), g, n_threads);
    });
}

double softmax_loss_grad(const py::object& Z_, const py::object& coef_t_, const py::object& Y_,
                         const py::object& w_, const py::object& out_, int n_threads) {
    return with_float_dtype(Z_, "Z", [&](auto tag) {
        using T = decltype(tag);
        const carray<T> Z = as_carray<T>(Z_, "Z");
        require_ndim(Z, "Z", 2);
        const py::ssize_t n = Z.shape(0), s = Z.shape(1);
        const carray<T> coef_t = as_carray<T>(coef_t_, "coef_t");
        require_ndim(coef_t, "coef_t", 2);
        const py::ssize_t m = coef_t.shape(0);
        require_shape(coef_t, "coef_t", {m, s});
        const carray<double> Y = as_carray<double>(Y_, "Y");
        require_shape(Y, "Y", {n, m});
        const carray<double> w = as_carray<double>(w_, "w");
        require_shape(w, "w", {n});
        carray<double> out = as_carray<double>(out_, "out");
        require_shape(out, "out", {m, s});
        require_disjoint({span_of(out, "out")}, {span_of(Z, "Z"), span_of(coef_t, "coef_t"), span_of(Y, "Y"),
                                                 span_of(w, "w")});
        double* g = out_ptr(out, "out");
        py::gil_scoped_release release;
        return rffkern::softmax_loss_grad(Z.data(), std::size_t(n), std::size_t(s), std::size_t(m),
                                          coef_t.data(), Y.data(), w.data(), g, n_threads);
    });
}

}  // namespace

void register_linear_loss(py::module_& m) {
    m.def("logistic_loss_grad", &logistic_loss_grad, py::arg("Z"), py::arg("coef"), py::arg("y"),
          py::arg("w"), py::arg("out"), py::arg("n_threads"));
    m.def("softmax_loss_grad", &softmax_loss_grad, py::arg("Z"), py::arg("coef_t"), py::arg("Y"),
          py::arg("w"), py::arg("out"), py::arg("n_threads"));
}

}  // namespace rffkern::bindings
