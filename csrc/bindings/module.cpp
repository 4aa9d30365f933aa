// rffkern._core: wires the per-area registrations; no logic lives here.
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace rffkern::bindings {
void register_cos_kernels(py::module_& m);
void register_linear_loss(py::module_& m);
void register_optim(py::module_& m);
void register_runtime(py::module_& m);
void register_structured(py::module_& m);
}  // namespace rffkern::bindings

PYBIND11_MODULE(_core, m) {
    m.doc() = "rffkern compiled core (private; use rffkern.kernels)";
    rffkern::bindings::register_cos_kernels(m);
    rffkern::bindings::register_linear_loss(m);
    rffkern::bindings::register_optim(m);
    rffkern::bindings::register_runtime(m);
    rffkern::bindings::register_structured(m);
}
