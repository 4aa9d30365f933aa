// Bindings of the optimiser steps (Adam + prox, SGD + prox), in place on NumPy arrays.
#include "bindings/pybind_utils.hpp"
#include "rffkern/optim.hpp"

namespace rffkern::bindings {
namespace {

void adam_prox_step(const py::object& param_, const py::object& grad_, const py::object& m_,
                    const py::object& v_, std::int64_t step, double lr, double beta1, double beta2,
                    double eps, double l2, double l1, int n_threads) {
    with_float_dtype(param_, "param", [&](auto tag) {
        using T = decltype(tag);
        carray<T> param = as_carray<T>(param_, "param");
        const carray<T> grad = as_carray<T>(grad_, "grad");
        carray<T> mom = as_carray<T>(m_, "m"), var = as_carray<T>(v_, "v");
        const py::ssize_t len = param.size();
        require(grad.size() == len && mom.size() == len && var.size() == len,
                "param, grad, m and v must have the same size");
        require_disjoint({span_of(param, "param"), span_of(mom, "m"), span_of(var, "v")},
                         {span_of(grad, "grad")});
        T* p = out_ptr(param, "param");
        T* mp = out_ptr(mom, "m");
        T* vp = out_ptr(var, "v");
        const AdamSettings<T> adam{T(lr), T(beta1), T(beta2), T(eps)};
        const ProxPenalty<T> penalty{T(l2), T(l1)};
        py::gil_scoped_release release;
        rffkern::adam_prox_step(p, grad.data(), mp, vp, std::size_t(len), step, adam, penalty, n_threads);
    });
}

void sgd_prox_step(const py::object& param_, const py::object& grad_, double lr, double l2, double l1,
                   int n_threads) {
    with_float_dtype(param_, "param", [&](auto tag) {
        using T = decltype(tag);
        carray<T> param = as_carray<T>(param_, "param");
        const carray<T> grad = as_carray<T>(grad_, "grad");
        require(grad.size() == param.size(), "param and grad must have the same size");
        require_disjoint({span_of(param, "param")}, {span_of(grad, "grad")});
        T* p = out_ptr(param, "param");
        const ProxPenalty<T> penalty{T(l2), T(l1)};
        py::gil_scoped_release release;
        rffkern::sgd_prox_step(p, grad.data(), std::size_t(param.size()), T(lr), penalty, n_threads);
    });
}

}  // namespace

void register_optim(py::module_& m) {
    m.def("adam_prox_step", &adam_prox_step, py::arg("param"), py::arg("grad"), py::arg("m"), py::arg("v"),
          py::arg("step"), py::arg("learning_rate"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"),
          py::arg("l2"), py::arg("l1"), py::arg("n_threads"));
    m.def("sgd_prox_step", &sgd_prox_step, py::arg("param"), py::arg("grad"), py::arg("learning_rate"),
          py::arg("l2"), py::arg("l1"), py::arg("n_threads"));
}

}  // namespace rffkern::bindings
