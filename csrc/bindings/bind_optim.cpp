// Bindings of the optimiser steps (Adam + prox, SGD + prox), in place on NumPy arrays.
#include "bindings/pybind_utils.hpp"
#include "rffkern/optim.hpp"

namespace rffkern::bindings {
namespace {

template <class T>
void register_dtype(py::module_& m) {
    m.def(
        "adam_prox_step",
        [](carray<T>& param, const carray<T>& grad, carray<T>& mom, carray<T>& var, std::int64_t step,
           T lr, T beta1, T beta2, T eps, T l2, T l1, int n_threads) {
            const py::ssize_t len = param.size();
            require(grad.size() == len && mom.size() == len && var.size() == len,
                    "param, grad, m and v must have the same size");
            T* p = out_ptr(param, "param");
            T* mp = out_ptr(mom, "m");
            T* vp = out_ptr(var, "v");
            py::gil_scoped_release release;
            adam_prox_step(p, grad.data(), mp, vp, std::size_t(len), step, lr, beta1, beta2, eps, l2, l1,
                           n_threads);
        },
        py::arg("param").noconvert(), py::arg("grad").noconvert(), py::arg("m").noconvert(),
        py::arg("v").noconvert(), py::arg("step"), py::arg("learning_rate"), py::arg("beta1"),
        py::arg("beta2"), py::arg("eps"), py::arg("l2"), py::arg("l1"), py::arg("n_threads"));
    m.def(
        "sgd_prox_step",
        [](carray<T>& param, const carray<T>& grad, T lr, T l2, T l1, int n_threads) {
            require(grad.size() == param.size(), "param and grad must have the same size");
            T* p = out_ptr(param, "param");
            py::gil_scoped_release release;
            sgd_prox_step(p, grad.data(), std::size_t(param.size()), lr, l2, l1, n_threads);
        },
        py::arg("param").noconvert(), py::arg("grad").noconvert(), py::arg("learning_rate"),
        py::arg("l2"), py::arg("l1"), py::arg("n_threads"));
}

}  // namespace

void register_optim(py::module_& m) {
    register_dtype<float>(m);
    register_dtype<double>(m);
}

}  // namespace rffkern::bindings
