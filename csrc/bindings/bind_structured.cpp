// Bindings of the structured transforms (FWHT, Fastfood, SORF). Filled in by the structured-maps work.
#include "bindings/pybind_utils.hpp"

namespace rffkern::bindings {

void register_structured(py::module_& m) { (void)m; }

}  // namespace rffkern::bindings
