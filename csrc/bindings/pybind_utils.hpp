// The single NumPy <-> core adapter. Python converts inputs (dtype, order, finiteness); this layer
// only checks and never copies: an argument of the wrong dtype or a non-contiguous one is refused
// with a TypeError naming it (not converted: a converted out= buffer would silently drop the
// result), and an output that shares memory with another argument with a ValueError naming both
// (the kernels read their inputs while they write, so an alias gives wrong numbers silently).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>

namespace rffkern::bindings {
namespace py = pybind11;

template <class T>
using carray = py::array_t<T, py::array::c_style>;

template <class T>
constexpr const char* dtype_name() {
    if constexpr (std::is_same_v<T, float>) return "float32";
    else if constexpr (std::is_same_v<T, double>) return "float64";
    else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
    else return "int64";
}

inline std::string type_name_of(const py::handle& obj) { return Py_TYPE(obj.ptr())->tp_name; }

inline py::array require_ndarray(const py::handle& obj, const char* name, const std::string& want) {
    if (!py::isinstance<py::array>(obj))
        throw py::type_error(std::string(name) + " must be a numpy.ndarray of dtype " + want + ", got " +
                             type_name_of(obj));
    return py::reinterpret_borrow<py::array>(obj);
}

// The argument `name` as a C-contiguous array of T, the caller's own memory.
template <class T>
carray<T> as_carray(const py::handle& obj, const char* name) {
    const py::array a = require_ndarray(obj, name, dtype_name<T>());
    if (!py::isinstance<py::array_t<T>>(a))
        throw py::type_error(std::string(name) + " must have dtype " + dtype_name<T>() + ", got " +
                             std::string(py::str(a.dtype())));
    if (!(a.flags() & py::array::c_style))
        throw py::type_error(std::string(name) + " must be a C-contiguous " + dtype_name<T>() +
                             " array (it is used in place, never copied)");
    return py::reinterpret_borrow<carray<T>>(a);
}

// None, or as as_carray.
template <class T>
std::optional<carray<T>> as_optional_carray(const py::handle& obj, const char* name) {
    if (obj.is_none()) return std::nullopt;
    return as_carray<T>(obj, name);
}

// body(T{}) with T the dtype of the leading array argument, float32 or float64; the body then
// takes every other array argument with as_carray<T>, so they must all share that dtype.
template <class Body>
decltype(auto) with_float_dtype(const py::handle& lead, const char* name, Body&& body) {
    const py::array a = require_ndarray(lead, name, "float32 or float64");
    if (py::isinstance<py::array_t<float>>(a)) return body(float{});
    if (py::isinstance<py::array_t<double>>(a)) return body(double{});
    throw py::type_error(std::string(name) + " must have dtype float32 or float64, got " +
                         std::string(py::str(a.dtype())));
}

inline void require(bool ok, const std::string& msg) {
    if (!ok) throw std::invalid_argument(msg);
}

inline void require_shape(const py::array& a, const char* name, std::initializer_list<py::ssize_t> shape) {
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

inline void require_ndim(const py::array& a, const char* name, py::ssize_t ndim) {
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

// The bytes one argument's (contiguous) buffer spans; empty for None and zero-size arrays.
struct ArgSpan {
    const char* name;
    const char* begin = nullptr;
    const char* end = nullptr;
};

inline ArgSpan span_of(const py::array& a, const char* name) {
    const char* p = static_cast<const char*>(a.data());
    return ArgSpan{name, p, p + a.nbytes()};
}

template <class A>
ArgSpan span_of(const std::optional<A>& a, const char* name) {
    return a ? span_of(*a, name) : ArgSpan{name};
}

// ValueError naming both arguments when a buffer the kernel writes shares memory with any other
// argument (another output, or an input it reads).
inline void require_disjoint(std::initializer_list<ArgSpan> written, std::initializer_list<ArgSpan> read) {
    auto overlap = [](const ArgSpan& a, const ArgSpan& b) {
        return a.begin != a.end && b.begin != b.end && a.begin < b.end && b.begin < a.end;
    };
    auto refuse = [](const ArgSpan& a, const ArgSpan& b) {
        throw std::invalid_argument(std::string(a.name) + " overlaps " + b.name +
                                    " in memory; the kernel writes " + a.name + " while it uses " +
                                    b.name + ", so pass separate arrays");
    };
    for (auto w = written.begin(); w != written.end(); ++w) {
        for (auto v = w + 1; v != written.end(); ++v)
            if (overlap(*w, *v)) refuse(*w, *v);
        for (const ArgSpan& r : read)
            if (overlap(*w, r)) refuse(*w, r);
    }
}

}  // namespace rffkern::bindings
