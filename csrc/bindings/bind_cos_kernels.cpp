// Bindings of the fused cosine-feature kernels (features, predict, gram, loss_and_grad, epochs).

#include <string>

#include "bindings/pybind_utils.hpp"
#include "rffkern/cos_kernels.hpp"

namespace rffkern::bindings {
namespace {

// Shape checks shared by every kernel: X (n, d), W (d, s), b (s,), theta (d,).
template <class T>
CosMap<T> make_map(const carray<T>& X, const carray<T>& W, const std::optional<carray<T>>& b,
                   const std::optional<carray<T>>& theta, T scale, bool pair) {
    require_ndim(X, "X", 2);
    require_ndim(W, "weights", 2);
    require(X.shape(1) == W.shape(0), "X has " + std::to_string(X.shape(1)) +
                                          " features but weights has " + std::to_string(W.shape(0)) + " rows");
    CosMap<T> map;
    map.d = std::size_t(W.shape(0));
    map.s = std::size_t(W.shape(1));
    map.weights = W.data();
    if (b) {
        require_shape(*b, "offsets", {W.shape(1)});
        map.offsets = b->data();
    }
    if (theta) {
        require_shape(*theta, "theta", {W.shape(0)});
        map.theta = theta->data();
    }
    map.scale = scale;
    map.pair = pair;
    return map;
}

Loss parse_loss(const std::string& name) {
    if (name == "squared") return Loss::squared;
    if (name == "logistic") return Loss::logistic;
    if (name == "softmax") return Loss::softmax;
    throw std::invalid_argument("loss must be 'squared', 'logistic' or 'softmax', got '" + name + "'");
}

template <class T>
void register_dtype(py::module_& m) {
    using opt = std::optional<carray<T>>;
    m.def(
        "features",
        [](const carray<T>& X, const carray<T>& W, const opt& b, const opt& theta, T scale, bool pair,
           carray<T>& out, int n_threads) {
            const CosMap<T> map = make_map(X, W, b, theta, scale, pair);
            require_shape(out, "out", {X.shape(0), py::ssize_t(map.n_out())});
            T* z = out_ptr(out, "out");
            py::gil_scoped_release release;
            fused_cos_features(X.data(), std::size_t(X.shape(0)), map, z, n_threads);
        },
        py::arg("X").noconvert(), py::arg("weights").noconvert(), py::arg("offsets").noconvert(),
        py::arg("theta").noconvert(), py::arg("scale"), py::arg("pair"), py::arg("out").noconvert(),
        py::arg("n_threads"));
    m.def(
        "predict",
        [](const carray<T>& X, const carray<T>& W, const opt& b, const opt& theta, T scale, bool pair,
           const carray<T>& coef, carray<T>& out, int n_threads) {
            const CosMap<T> map = make_map(X, W, b, theta, scale, pair);
            require_ndim(coef, "coef", 2);
            require(std::size_t(coef.shape(0)) == map.n_out(),
                    "coef must have " + std::to_string(map.n_out()) + " rows, got " + std::to_string(coef.shape(0)));
            require_shape(out, "out", {X.shape(0), coef.shape(1)});
            T* f = out_ptr(out, "out");
            py::gil_scoped_release release;
            fused_cos_predict(X.data(), std::size_t(X.shape(0)), map, coef.data(),
                              std::size_t(coef.shape(1)), f, n_threads);
        },
        py::arg("X").noconvert(), py::arg("weights").noconvert(), py::arg("offsets").noconvert(),
        py::arg("theta").noconvert(), py::arg("scale"), py::arg("pair"), py::arg("coef").noconvert(),
        py::arg("out").noconvert(), py::arg("n_threads"));
    m.def(
        "gram",
        [](const carray<T>& X, const carray<T>& W, const opt& b, const opt& theta, T scale, bool pair,
           const opt& Y, carray<T>& G, std::optional<carray<T>>& ZtY, bool accumulate, int n_threads) {
            const CosMap<T> map = make_map(X, W, b, theta, scale, pair);
            const py::ssize_t nout = py::ssize_t(map.n_out());
            require_shape(G, "gram_out", {nout, nout});
            std::size_t m = 0;
            T* zty = nullptr;
            if (Y) {
                require_ndim(*Y, "Y", 2);
                require(Y->shape(0) == X.shape(0), "Y has " + std::to_string(Y->shape(0)) +
                                                       " rows but X has " + std::to_string(X.shape(0)));
                require(bool(ZtY), "ZtY_out is required when Y is given");
                require_shape(*ZtY, "ZtY_out", {nout, Y->shape(1)});
                m = std::size_t(Y->shape(1));
                zty = out_ptr(*ZtY, "ZtY_out");
            }
            T* g = out_ptr(G, "gram_out");
            const T* y = opt_ptr(Y);
            py::gil_scoped_release release;
            streamed_gram(X.data(), std::size_t(X.shape(0)), map, y, m, g, zty, accumulate, n_threads);
        },
        py::arg("X").noconvert(), py::arg("weights").noconvert(), py::arg("offsets").noconvert(),
        py::arg("theta").noconvert(), py::arg("scale"), py::arg("pair"), py::arg("Y").noconvert(),
        py::arg("gram_out").noconvert(), py::arg("ZtY_out").noconvert(), py::arg("accumulate"),
        py::arg("n_threads"));
    m.def(
        "loss_and_grad",
        [](const carray<T>& X, const carray<T>& Y, const carray<T>& W, const opt& b, const opt& theta,
           T scale, bool pair, const carray<T>& coef, const std::string& loss, carray<T>& grad_coef,
           std::optional<carray<T>>& grad_theta, int n_threads) {
            const CosMap<T> map = make_map(X, W, b, theta, scale, pair);
            require_ndim(coef, "coef", 2);
            require(std::size_t(coef.shape(0)) == map.n_out(),
                    "coef must have " + std::to_string(map.n_out()) + " rows, got " + std::to_string(coef.shape(0)));
            require_shape(Y, "Y", {X.shape(0), coef.shape(1)});
            require_shape(grad_coef, "grad_coef_out", {coef.shape(0), coef.shape(1)});
            const Loss l = parse_loss(loss);
            T* gc = out_ptr(grad_coef, "grad_coef_out");
            T* gt = nullptr;
            if (grad_theta) {
                require_shape(*grad_theta, "grad_theta_out", {W.shape(0)});
                gt = out_ptr(*grad_theta, "grad_theta_out");
            }
            py::gil_scoped_release release;
            return loss_and_grad(X.data(), Y.data(), std::size_t(X.shape(0)), map, coef.data(),
                                 std::size_t(coef.shape(1)), l, gc, gt, n_threads);
        },
        py::arg("X").noconvert(), py::arg("Y").noconvert(), py::arg("weights").noconvert(),
        py::arg("offsets").noconvert(), py::arg("theta").noconvert(), py::arg("scale"), py::arg("pair"),
        py::arg("coef").noconvert(), py::arg("loss"), py::arg("grad_coef_out").noconvert(),
        py::arg("grad_theta_out").noconvert(), py::arg("n_threads"));
    m.def(
        "train_epoch",
        [](const carray<T>& X, const carray<T>& Y, const carray<std::int64_t>& order, std::size_t batch_size,
           const carray<T>& W, const opt& b, carray<T>& theta, T scale, carray<T>& coef,
           const std::string& loss, bool adam, T lr, T beta1, T beta2, T eps, T l2_coef, T l1_theta,
           bool update_coef, bool update_theta, carray<T>& m_coef, carray<T>& v_coef, carray<T>& m_theta,
           carray<T>& v_theta, std::int64_t step, int n_threads) {
            const opt th(theta);
            const CosMap<T> map = make_map(X, W, b, th, scale, false);
            require_ndim(coef, "coef", 2);
            require(std::size_t(coef.shape(0)) == map.s, "coef must have as many rows as weights has columns");
            require_shape(Y, "Y", {X.shape(0), coef.shape(1)});
            require_ndim(order, "order", 1);
            require_shape(m_coef, "m_coef", {coef.shape(0), coef.shape(1)});
            require_shape(v_coef, "v_coef", {coef.shape(0), coef.shape(1)});
            require_shape(m_theta, "m_theta", {W.shape(0)});
            require_shape(v_theta, "v_theta", {W.shape(0)});
            require(step >= 0, "step must be >= 0");
            StepConfig<T> cfg;
            cfg.adam = adam;
            cfg.learning_rate = lr;
            cfg.beta1 = beta1;
            cfg.beta2 = beta2;
            cfg.eps = eps;
            cfg.l2_coef = l2_coef;
            cfg.l1_theta = l1_theta;
            cfg.update_coef = update_coef;
            cfg.update_theta = update_theta;
            const Loss l = parse_loss(loss);
            T* th_p = out_ptr(theta, "theta");
            T* coef_p = out_ptr(coef, "coef");
            T* mc = out_ptr(m_coef, "m_coef");
            T* vc = out_ptr(v_coef, "v_coef");
            T* mt = out_ptr(m_theta, "m_theta");
            T* vt = out_ptr(v_theta, "v_theta");
            T mean_loss;
            {
                py::gil_scoped_release release;
                mean_loss = train_epoch(X.data(), Y.data(), std::size_t(X.shape(0)), order.data(),
                                        std::size_t(order.shape(0)), batch_size, W.data(), map.offsets,
                                        th_p, map.d, map.s, scale, coef_p, std::size_t(coef.shape(1)), l,
                                        cfg, mc, vc, mt, vt, &step, n_threads);
            }
            return py::make_tuple(mean_loss, step);
        },
        py::arg("X").noconvert(), py::arg("Y").noconvert(), py::arg("order").noconvert(),
        py::arg("batch_size"), py::arg("weights").noconvert(), py::arg("offsets").noconvert(),
        py::arg("theta").noconvert(), py::arg("scale"), py::arg("coef").noconvert(), py::arg("loss"),
        py::arg("adam"), py::arg("learning_rate"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"),
        py::arg("l2_coef"), py::arg("l1_theta"), py::arg("update_coef"), py::arg("update_theta"),
        py::arg("m_coef").noconvert(), py::arg("v_coef").noconvert(), py::arg("m_theta").noconvert(),
        py::arg("v_theta").noconvert(), py::arg("step"), py::arg("n_threads"));
}

}  // namespace

void register_cos_kernels(py::module_& m) {
    register_dtype<float>(m);
    register_dtype<double>(m);
    m.def("active_isa", &active_isa, "Instruction set the kernels dispatch to.");
    m.def("have_libmvec", &have_libmvec, "Whether vector cos/sin come from glibc's libmvec.");
    m.def("set_isa", [](const std::string& name) { set_isa(name.c_str()); }, py::arg("name"),
          "Force an instruction set: 'auto', 'avx512', 'avx2' or 'baseline'.");
}

}  // namespace rffkern::bindings
