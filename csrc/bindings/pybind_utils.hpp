// The single NumPy <-> core adapter: shape checks on C-contiguous arrays of one dtype.
// Python converts inputs (dtype, order, finiteness); this layer only checks and never copies.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/stl.h>  // std::optional arrays: every TU must see the same casters (ODR)
#include <pybind11/pybind11.h>

#include <optional>
#include <stdexcept>
#include <string>

namespace rffkern::bindings {
namespace py = pybind11;

template <class T>
using carray = py::array_t<T, py::array::c_style>;

inline void require(bool ok, const std::string& msg) {
    if (!ok) throw std::invalid_argument(msg);
}

template <class T>
void require_shape(const carray<T>& a, const char* name, std::initializer_list<py::ssize_t> shape) {
    std::string want = "(";
    bool ok = a.ndim() == py::ssize_t(shape.size());
    int i = 0;
    for (py::ssize_t v : shape) {
        want += (i ? ", " : "") + std::to_string(v);
        if (ok && a.shape(i) != v) ok = false;
        ++i;
    }
    want += shape.size() == 1 ? ",)" : ")";
    if (!ok) {
        std::string got = "(";
        for (py::ssize_t k = 0; k < a.ndim(); ++k) got += (k ? ", " : "") + std::to_string(a.shape(k));
        got += a.ndim() == 1 ? ",)" : ")";
        throw std::invalid_argument(std::string(name) + " must have shape " + want + ", got " + got);
    }
}

template <class T>
void require_ndim(const carray<T>& a, const char* name, py::ssize_t ndim) {
    if (a.ndim() != ndim)
        throw std::invalid_argument(std::string(name) + " must be " + std::to_string(ndim) +
                                    "-D, got " + std::to_string(a.ndim()) + "-D");
}

// Pointer to a writable output buffer (raises ValueError for read-only arrays).
template <class T>
T* out_ptr(carray<T>& a, const char* name) {
    if (!a.writeable()) throw std::invalid_argument(std::string(name) + " is read-only");
    return a.mutable_data();
}

template <class T>
const T* opt_ptr(const std::optional<carray<T>>& a) {
    return a ? a->data() : nullptr;
}

}  // namespace rffkern::bindings
