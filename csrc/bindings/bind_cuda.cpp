// rffkern._cuda: the CUDA kernels of csrc/cuda/ for device arrays (built only with RFFKERN_CUDA=ON;
// a module of its own, so the CPU module _core never links the CUDA runtime).
//
// Python (rffkern._cuda_backend) reads each array's __cuda_array_interface__ and passes it here as
// a descriptor tuple (ptr: int, shape: tuple, typestr: str), None for an absent optional array, and
// the caller's stream as an int (0 default, 1 legacy default, 2 per-thread default, else a
// cudaStream_t), as the interface's "stream" field counts them. Python converts (it refuses
// strided arrays and allocates the outputs); this layer checks: dtypes ('<f4' / '<f8', all the
// same) and shapes (TypeError / ValueError naming the argument), that every pointer is device
// memory of one device (TypeError otherwise), that no output overlaps an input (ValueError).
// The kernel's CudaResult becomes ValueError (invalid_argument), MemoryError (out_of_memory) or
// RuntimeError (any other CUDA error, with CUDA's own text). The GIL is released around the
// launches, which only enqueue work on the stream.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda/cos_kernels_cuda.cuh"

namespace py = pybind11;

namespace rffkern::bindings {
namespace {

using cuda::CudaResult;
using cuda::CudaStatus;

struct DeviceArg {
    const char* name = "";
    std::uintptr_t ptr = 0;
    std::vector<std::int64_t> shape;
    std::string typestr;
    std::size_t itemsize() const { return typestr == "<f8" ? 8 : typestr == "<f4" ? 4 : 1; }
    std::size_t count() const {
        std::size_t c = 1;
        for (auto v : shape) c *= std::size_t(v);
        return c;
    }
    std::size_t bytes() const { return count() * itemsize(); }
    std::string shape_text() const {
        std::string t = "(";
        for (std::size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
        return t + (shape.size() == 1 ? ",)" : ")");
    }
};

DeviceArg parse_arg(const py::handle& obj, const char* name) {
    if (!py::isinstance<py::tuple>(obj) || py::len(obj) != 3)
        throw py::type_error(std::string(name) + ": expected a (ptr, shape, typestr) device descriptor");
    const auto t = py::reinterpret_borrow<py::tuple>(obj);
    DeviceArg a;
    a.name = name;
    a.ptr = t[0].cast<std::uintptr_t>();
    a.shape = t[1].cast<std::vector<std::int64_t>>();
    a.typestr = t[2].cast<std::string>();
    for (auto v : a.shape)
        if (v < 0) throw std::invalid_argument(std::string(name) + " has a negative dimension");
    return a;
}

std::optional<DeviceArg> parse_optional(const py::handle& obj, const char* name) {
    if (obj.is_none()) return std::nullopt;
    return parse_arg(obj, name);
}

void require(bool ok, const std::string& msg) {
    if (!ok) throw std::invalid_argument(msg);
}

void require_shape(const DeviceArg& a, std::vector<std::int64_t> want) {
    if (a.shape != want) {
        DeviceArg w;
        w.shape = want;
        throw std::invalid_argument(std::string(a.name) + " must have shape " + w.shape_text() + ", got " +
                                    a.shape_text());
    }
}

void require_dtype(const DeviceArg& a, const std::string& typestr) {
    if (a.typestr != typestr)
        throw py::type_error(std::string(a.name) + " must have typestr " + typestr + " (the dtype of X), got " +
                             a.typestr);
}

// The device that owns `a` (memory of no device, or host memory: TypeError naming it).
int device_of(const DeviceArg& a) {
    if (a.bytes() == 0 || a.ptr == 0) return -1;  // empty arrays may carry a null pointer
    cudaPointerAttributes attr{};
    const cudaError_t err = cudaPointerGetAttributes(&attr, reinterpret_cast<const void*>(a.ptr));
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        throw py::type_error(std::string(a.name) + " is not CUDA device memory (" + cudaGetErrorString(err) + ")");
    }
    if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
        throw py::type_error(std::string(a.name) + " is host memory; the CUDA kernels need device arrays");
    return attr.device;
}

// Every argument on one device; the call runs with that device current, then restores the old one.
class OnDevice {
public:
    explicit OnDevice(std::initializer_list<const DeviceArg*> args) {
        int dev = -1;
        const char* first = "";
        for (const DeviceArg* a : args) {
            if (!a) continue;
            const int d = device_of(*a);
            if (d < 0) continue;
            if (dev >= 0 && d != dev)
                throw std::invalid_argument(std::string(a->name) + " is on device " + std::to_string(d) + " but " +
                                            first + " is on device " + std::to_string(dev));
            if (dev < 0) first = a->name;
            dev = d;
        }
        check(cudaGetDevice(&previous_), "cudaGetDevice");
        if (dev >= 0 && dev != previous_) {
            check(cudaSetDevice(dev), "cudaSetDevice");
            switched_ = true;
        }
    }
    ~OnDevice() {
        if (switched_) (void)cudaSetDevice(previous_);
    }
    OnDevice(const OnDevice&) = delete;
    OnDevice& operator=(const OnDevice&) = delete;

private:
    static void check(cudaError_t err, const char* what) {
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(err));
        }
    }
    int previous_ = 0;
    bool switched_ = false;
};

// Outputs must not share a byte with any input (the kernels read inputs while they write).
void require_disjoint(std::initializer_list<const DeviceArg*> outs, std::initializer_list<const DeviceArg*> ins) {
    for (const DeviceArg* o : outs) {
        if (!o || o->bytes() == 0) continue;
        for (const DeviceArg* i : ins) {
            if (!i || i->bytes() == 0) continue;
            if (o->ptr < i->ptr + i->bytes() && i->ptr < o->ptr + o->bytes())
                throw std::invalid_argument(std::string(o->name) + " overlaps " + i->name +
                                            " in device memory; pass a separate output buffer");
        }
    }
}

void raise_for(const CudaResult& r) {
    if (r.ok()) return;
    switch (r.status) {
    case CudaStatus::invalid_argument:
        throw std::invalid_argument(r.message);
    case CudaStatus::out_of_memory:
        PyErr_SetString(PyExc_MemoryError, (std::string(r.message) + ": CUDA out of memory").c_str());
        throw py::error_already_set();
    default:
        throw std::runtime_error(std::string(r.message) + ": " +
                                 cudaGetErrorString(static_cast<cudaError_t>(r.cuda_error)));
    }
}

cudaStream_t as_stream(std::uintptr_t stream) { return reinterpret_cast<cudaStream_t>(stream); }

// The map's descriptors, checked against X: X (n, d), W (d, s), b (s,), theta (d,).
struct MapArgs {
    DeviceArg X, W;
    std::optional<DeviceArg> b, theta;
    std::size_t n = 0, d = 0, s = 0;
    bool pair = false;

    MapArgs(const py::handle& X_, const py::handle& W_, const py::handle& b_, const py::handle& th_, bool pair_)
        : X(parse_arg(X_, "X")), W(parse_arg(W_, "weights")), b(parse_optional(b_, "offsets")),
          theta(parse_optional(th_, "theta")), pair(pair_) {
        if (X.typestr != "<f4" && X.typestr != "<f8")
            throw py::type_error("X must have dtype float32 or float64 (typestr '<f4' or '<f8'), got " + X.typestr);
        require_dtype(W, X.typestr);
        if (b) require_dtype(*b, X.typestr);
        if (theta) require_dtype(*theta, X.typestr);
        require(X.shape.size() == 2, "X must be 2-D, got shape " + X.shape_text());
        require(W.shape.size() == 2, "weights must be 2-D, got shape " + W.shape_text());
        require(X.shape[1] == W.shape[0], "X has " + std::to_string(X.shape[1]) + " features but weights has " +
                                              std::to_string(W.shape[0]) + " rows");
        n = std::size_t(X.shape[0]);
        d = std::size_t(W.shape[0]);
        s = std::size_t(W.shape[1]);
        if (b) require_shape(*b, {W.shape[1]});
        if (theta) require_shape(*theta, {W.shape[0]});
    }
    bool is_double() const { return X.typestr == "<f8"; }
    std::int64_t n_out() const { return std::int64_t(pair ? 2 * s : s); }

    template <class T>
    FourierFeatureMap<T> map(double scale) const {
        FourierFeatureMap<T> m;
        m.weights = reinterpret_cast<const T*>(W.ptr);
        m.offsets = b ? reinterpret_cast<const T*>(b->ptr) : nullptr;
        m.theta = theta ? reinterpret_cast<const T*>(theta->ptr) : nullptr;
        m.d = d;
        m.s = s;
        m.scale = T(scale);
        m.pair = pair;
        return m;
    }
};

template <class Body>
void with_dtype(const MapArgs& a, Body&& body) {
    if (a.is_double()) body(double{});
    else body(float{});
}

void features(const py::object& X_, const py::object& W_, const py::object& b_, const py::object& th_,
              double scale, bool pair, const py::object& out_, std::uintptr_t stream) {
    const MapArgs a(X_, W_, b_, th_, pair);
    DeviceArg out = parse_arg(out_, "out");
    require_dtype(out, a.X.typestr);
    require_shape(out, {std::int64_t(a.n), a.n_out()});
    const DeviceArg* b = a.b ? &*a.b : nullptr;
    const DeviceArg* th = a.theta ? &*a.theta : nullptr;
    require_disjoint({&out}, {&a.X, &a.W, b, th});
    OnDevice on({&a.X, &a.W, b, th, &out});
    CudaResult r;
    with_dtype(a, [&](auto tag) {
        using T = decltype(tag);
        const auto map = a.map<T>(scale);
        py::gil_scoped_release release;
        r = cuda::fused_cos_features(reinterpret_cast<const T*>(a.X.ptr), a.n, map, reinterpret_cast<T*>(out.ptr),
                                     as_stream(stream));
    });
    raise_for(r);
}

void predict(const py::object& X_, const py::object& W_, const py::object& b_, const py::object& th_,
             double scale, bool pair, const py::object& coef_, const py::object& out_, std::uintptr_t stream) {
    const MapArgs a(X_, W_, b_, th_, pair);
    DeviceArg coef = parse_arg(coef_, "coef");
    DeviceArg out = parse_arg(out_, "out");
    require_dtype(coef, a.X.typestr);
    require_dtype(out, a.X.typestr);
    require(coef.shape.size() == 2 && coef.shape[0] == a.n_out(),
            "coef must have shape (" + std::to_string(a.n_out()) + ", m), got " + coef.shape_text());
    require_shape(out, {std::int64_t(a.n), coef.shape[1]});
    const DeviceArg* b = a.b ? &*a.b : nullptr;
    const DeviceArg* th = a.theta ? &*a.theta : nullptr;
    require_disjoint({&out}, {&a.X, &a.W, b, th, &coef});
    OnDevice on({&a.X, &a.W, b, th, &coef, &out});
    CudaResult r;
    with_dtype(a, [&](auto tag) {
        using T = decltype(tag);
        const auto map = a.map<T>(scale);
        py::gil_scoped_release release;
        r = cuda::fused_cos_predict(reinterpret_cast<const T*>(a.X.ptr), a.n, map,
                                    reinterpret_cast<const T*>(coef.ptr), std::size_t(coef.shape[1]),
                                    reinterpret_cast<T*>(out.ptr), as_stream(stream));
    });
    raise_for(r);
}

std::size_t gram_workspace_bytes(std::size_t n, std::size_t d, std::size_t s, bool pair, std::size_t m,
                                 const std::string& typestr) {
    auto bytes = [&](auto tag) {
        using T = decltype(tag);
        FourierFeatureMap<T> map;
        map.d = d;
        map.s = s;
        map.pair = pair;
        return cuda::gram_workspace_bytes<T>(n, map, m);
    };
    if (typestr == "<f8") return bytes(double{});
    if (typestr == "<f4") return bytes(float{});
    throw py::type_error("typestr must be '<f4' or '<f8', got " + typestr);
}

void gram(const py::object& X_, const py::object& W_, const py::object& b_, const py::object& th_, double scale,
          bool pair, const py::object& Y_, const py::object& G_, const py::object& ZtY_, bool accumulate,
          const py::object& workspace_, std::uintptr_t stream) {
    const MapArgs a(X_, W_, b_, th_, pair);
    const auto Y = parse_optional(Y_, "Y");
    DeviceArg G = parse_arg(G_, "out");
    auto ZtY = parse_optional(ZtY_, "out_zty");
    auto ws = parse_optional(workspace_, "workspace");
    require_dtype(G, a.X.typestr);
    require_shape(G, {a.n_out(), a.n_out()});
    std::size_t m = 0;
    if (Y) {
        require_dtype(*Y, a.X.typestr);
        require(Y->shape.size() == 2, "Y must be 2-D, got shape " + Y->shape_text());
        require(Y->shape[0] == std::int64_t(a.n),
                "Y has " + std::to_string(Y->shape[0]) + " rows but X has " + std::to_string(a.n));
        require(bool(ZtY), "out_zty is required when Y is given");
        require_dtype(*ZtY, a.X.typestr);
        require_shape(*ZtY, {a.n_out(), Y->shape[1]});
        m = std::size_t(Y->shape[1]);
    }
    const std::size_t need = a.is_double() ? cuda::gram_workspace_bytes<double>(a.n, a.map<double>(scale), m)
                                           : cuda::gram_workspace_bytes<float>(a.n, a.map<float>(scale), m);
    if (ws) require(ws->shape.size() == 1 && ws->bytes() >= need,
                    "workspace must be a 1-D device buffer of at least " + std::to_string(need) + " bytes");
    const DeviceArg* b = a.b ? &*a.b : nullptr;
    const DeviceArg* th = a.theta ? &*a.theta : nullptr;
    const DeviceArg* y = Y ? &*Y : nullptr;
    const DeviceArg* zty = ZtY ? &*ZtY : nullptr;
    const DeviceArg* w = ws ? &*ws : nullptr;
    require_disjoint({&G, zty, w}, {&a.X, &a.W, b, th, y});
    require_disjoint({&G}, {zty, w});
    require_disjoint({zty}, {w});
    OnDevice on({&a.X, &a.W, b, th, y, &G, zty, w});
    CudaResult r;
    with_dtype(a, [&](auto tag) {
        using T = decltype(tag);
        const auto map = a.map<T>(scale);
        py::gil_scoped_release release;
        r = cuda::streamed_gram(reinterpret_cast<const T*>(a.X.ptr), a.n, map,
                                y ? reinterpret_cast<const T*>(y->ptr) : nullptr, m, reinterpret_cast<T*>(G.ptr),
                                zty ? reinterpret_cast<T*>(zty->ptr) : nullptr, accumulate,
                                w ? reinterpret_cast<void*>(w->ptr) : nullptr, as_stream(stream));
    });
    raise_for(r);
}

int device_count() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();  // no driver / no device: report none, raise nothing
        return 0;
    }
    return count;
}

int runtime_version() {
    int v = 0;
    (void)cudaRuntimeGetVersion(&v);
    return v;
}

}  // namespace
}  // namespace rffkern::bindings

PYBIND11_MODULE(_cuda, m) {
    using namespace rffkern::bindings;
    m.doc() = "rffkern CUDA kernels (private; used by rffkern._cuda_backend for device arrays)";
    m.def("features", &features, py::arg("X"), py::arg("weights"), py::arg("offsets"), py::arg("theta"),
          py::arg("scale"), py::arg("pair"), py::arg("out"), py::arg("stream"));
    m.def("predict", &predict, py::arg("X"), py::arg("weights"), py::arg("offsets"), py::arg("theta"),
          py::arg("scale"), py::arg("pair"), py::arg("coef"), py::arg("out"), py::arg("stream"));
    m.def("gram", &gram, py::arg("X"), py::arg("weights"), py::arg("offsets"), py::arg("theta"), py::arg("scale"),
          py::arg("pair"), py::arg("Y"), py::arg("out"), py::arg("out_zty"), py::arg("accumulate"),
          py::arg("workspace"), py::arg("stream"));
    m.def("gram_workspace_bytes", &gram_workspace_bytes, py::arg("n"), py::arg("d"), py::arg("s"), py::arg("pair"),
          py::arg("m"), py::arg("typestr"));
    m.def("device_count", &device_count, "CUDA devices visible (0 without a driver or device)");
    m.def("runtime_version", &runtime_version, "the CUDA runtime version this module was built with, e.g. 13000");
}
