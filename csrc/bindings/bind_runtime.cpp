// Bindings of what the core reports about the machine and forces for tests: the instruction set
// it dispatches to and the thread counts it clamps to.
#include <string>

#include "bindings/pybind_utils.hpp"
#include "rffkern/isa_dispatch.hpp"
#include "rffkern/parallel.hpp"

namespace rffkern::bindings {

void register_runtime(py::module_& m) {
    m.def("active_isa", &active_isa, "Instruction set the kernels dispatch to.");
    m.def("have_libmvec", &have_libmvec, "Whether vector cos/sin come from glibc's libmvec.");
    m.def("set_isa", [](const std::string& name) { set_isa(name.c_str()); }, py::arg("name"),
          "Force an instruction set: 'auto', 'avx512', 'avx2' or 'baseline'.");
    m.def("max_threads", &max_threads,
          "omp_get_max_threads(): the default team size, following OMP_NUM_THREADS and "
          "omp_set_num_threads (threadpoolctl's limits); 1 without OpenMP.");
    m.def("num_procs", &num_procs,
          "omp_get_num_procs(): the processors this process may use (std::thread::hardware_concurrency() "
          "without OpenMP); every kernel clamps n_threads to it.");
}

}  // namespace rffkern::bindings
