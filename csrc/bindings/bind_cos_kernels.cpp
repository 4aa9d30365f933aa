// Bindings of the fused cosine-feature kernels (features, predict, gram, loss_and_grad, epochs).
// One Python function per kernel: the dtype of X picks the float32 or float64 core.
#include <string>

#include "bindings/pybind_utils.hpp"
#include "rffkern/cos_kernels.hpp"

namespace rffkern::bindings {
namespace {

// The map's arrays of one call, checked against X: X (n, d), W (d, s), b (s,), theta (d,). X may
// be None where the kernel takes its centered sparse rows instead (features, predict, gram): n is then
// the rows' (indptr has n + 1 entries).
template <class T>
struct MapArgs {
    std::optional<carray<T>> X;
    carray<T> W;
    std::optional<carray<T>> b, theta;
    FourierFeatureMap<T> map;
    std::size_t n_ = 0;

    MapArgs(const py::handle& X_, const py::handle& W_, const py::handle& b_, const py::handle& theta_,
            double scale, bool pair, const py::handle& rows_ = py::none())
        : X(as_optional_carray<T>(X_, "X")), W(as_carray<T>(W_, "weights")),
          b(as_optional_carray<T>(b_, "offsets")), theta(as_optional_carray<T>(theta_, "theta")) {
        require_ndim(W, "weights", 2);
        if (X) {
            require_ndim(*X, "X", 2);
            require(X->shape(1) == W.shape(0), "X has " + std::to_string(X->shape(1)) +
                                                   " features but weights has " + std::to_string(W.shape(0)) +
                                                   " rows");
            n_ = std::size_t(X->shape(0));
        } else {
            require(py::isinstance<py::tuple>(rows_) && py::len(rows_) == 4, "X is None but no rows are given");
            const carray<std::int64_t> indptr =
                as_carray<std::int64_t>(py::reinterpret_borrow<py::tuple>(rows_)[0], "rows indptr");
            require(indptr.ndim() == 1 && indptr.shape(0) >= 1, "rows indptr must be 1-D with n + 1 entries");
            n_ = std::size_t(indptr.shape(0) - 1);
        }
        if (b) require_shape(*b, "offsets", {W.shape(1)});
        if (theta) require_shape(*theta, "theta", {W.shape(0)});
        map.d = std::size_t(W.shape(0));
        map.s = std::size_t(W.shape(1));
        map.weights = W.data();
        map.offsets = opt_ptr(b);
        map.theta = opt_ptr(theta);
        map.scale = T(scale);
        map.pair = pair;
    }
    std::size_t n() const { return n_; }
    const T* xdata() const { return X ? X->data() : nullptr; }
    py::ssize_t n_out() const { return py::ssize_t(map.n_out()); }
    // the spans of the read-only map arrays, for require_disjoint
    ArgSpan x() const { return span_of(X, "X"); }
    ArgSpan w() const { return span_of(W, "weights"); }
    ArgSpan offsets() const { return span_of(b, "offsets"); }
    ArgSpan th() const { return span_of(theta, "theta"); }
};

// The optional `rows` argument: None, or the tuple (indptr int64 (n + 1,), indices int32 (nnz,),
// values (nnz,), center (d,) or None) of X's centered sparse rows (CenteredRows); the structure is
// checked by the kernels' entry points.
template <class T>
struct RowsArg {
    std::optional<carray<std::int64_t>> indptr;
    std::optional<carray<std::int32_t>> indices;
    std::optional<carray<T>> values, center;
    CenteredRows<T> rows;

    RowsArg(const py::object& obj, const MapArgs<T>& a) {
        if (obj.is_none()) return;
        require(py::isinstance<py::tuple>(obj) && py::len(obj) == 4,
                "rows must be None or a tuple (indptr, indices, values, center)");
        const py::tuple t = py::reinterpret_borrow<py::tuple>(obj);
        indptr = as_carray<std::int64_t>(t[0], "rows indptr");
        indices = as_carray<std::int32_t>(t[1], "rows indices");
        values = as_carray<T>(t[2], "rows values");
        center = as_optional_carray<T>(t[3], "rows center");
        require_shape(*indptr, "rows indptr", {py::ssize_t(a.n()) + 1});
        require_ndim(*indices, "rows indices", 1);
        require_shape(*values, "rows values", {indices->shape(0)});
        require(indptr->data()[a.n()] == indices->shape(0),
                "rows indptr[-1] must equal the number of stored entries");
        if (center) require_shape(*center, "rows center", {a.W.shape(0)});
        rows.indptr = indptr->data();
        rows.indices = indices->data();
        rows.values = values->data();
        rows.center = opt_ptr(center);
    }
    const CenteredRows<T>* get() const { return indptr ? &rows : nullptr; }
    ArgSpan span() const { return span_of(values, "rows values"); }
};

// The array whose dtype picks the core: X, or the rows' values where X is None.
inline py::object lead_of(const py::object& X_, const py::object& rows_) {
    if (X_.is_none() && py::isinstance<py::tuple>(rows_) && py::len(rows_) == 4)
        return py::reinterpret_borrow<py::tuple>(rows_)[2];
    return X_;
}

// coef (n_out, m) for the map.
template <class T>
carray<T> coef_for(const py::handle& obj, const MapArgs<T>& a) {
    carray<T> coef = as_carray<T>(obj, "coef");
    require_ndim(coef, "coef", 2);
    require(coef.shape(0) == a.n_out(),
            "coef must have " + std::to_string(a.n_out()) + " rows, got " + std::to_string(coef.shape(0)));
    return coef;
}

Loss parse_loss(const std::string& name) {
    if (name == "squared") return Loss::squared;
    if (name == "logistic") return Loss::logistic;
    if (name == "softmax") return Loss::softmax;
    if (name == "linear") return Loss::linear;
    throw std::invalid_argument("loss must be 'squared', 'logistic', 'softmax' or 'linear', got '" + name + "'");
}

void features(const py::object& X_, const py::object& W_, const py::object& b_, const py::object& th_,
              double scale, bool pair, const py::object& out_, int n_threads, const py::object& rows_) {
    with_float_dtype(lead_of(X_, rows_), "X", [&](auto tag) {
        using T = decltype(tag);
        const MapArgs<T> a(X_, W_, b_, th_, scale, pair, rows_);
        const RowsArg<T> rows(rows_, a);
        carray<T> out = as_carray<T>(out_, "out");
        require_shape(out, "out", {py::ssize_t(a.n()), a.n_out()});
        require_disjoint({span_of(out, "out")}, {a.x(), a.w(), a.offsets(), a.th(), rows.span()});
        T* z = out_ptr(out, "out");
        py::gil_scoped_release release;
        fused_cos_features(a.xdata(), a.n(), a.map, z, n_threads, rows.get());
    });
}

void predict(const py::object& X_, const py::object& W_, const py::object& b_, const py::object& th_,
             double scale, bool pair, const py::object& coef_, const py::object& out_, int n_threads,
             const py::object& rows_) {
    with_float_dtype(lead_of(X_, rows_), "X", [&](auto tag) {
        using T = decltype(tag);
        const MapArgs<T> a(X_, W_, b_, th_, scale, pair, rows_);
        const RowsArg<T> rows(rows_, a);
        const carray<T> coef = coef_for(coef_, a);
        carray<T> out = as_carray<T>(out_, "out");
        require_shape(out, "out", {py::ssize_t(a.n()), coef.shape(1)});
        require_disjoint({span_of(out, "out")},
                         {a.x(), a.w(), a.offsets(), a.th(), span_of(coef, "coef"), rows.span()});
        T* f = out_ptr(out, "out");
        py::gil_scoped_release release;
        fused_cos_predict(a.xdata(), a.n(), a.map, coef.data(), std::size_t(coef.shape(1)), f, n_threads,
                          rows.get());
    });
}

void gram(const py::object& X_, const py::object& W_, const py::object& b_, const py::object& th_,
          double scale, bool pair, const py::object& Y_, const py::object& G_, const py::object& ZtY_,
          bool accumulate, int n_threads, const py::object& rows_) {
    with_float_dtype(lead_of(X_, rows_), "X", [&](auto tag) {
        using T = decltype(tag);
        const MapArgs<T> a(X_, W_, b_, th_, scale, pair, rows_);
        const RowsArg<T> rows(rows_, a);
        const auto Y = as_optional_carray<T>(Y_, "Y");
        carray<T> G = as_carray<T>(G_, "out");
        auto ZtY = as_optional_carray<T>(ZtY_, "out_zty");
        require_shape(G, "out", {a.n_out(), a.n_out()});
        std::size_t m = 0;
        T* zty = nullptr;
        if (Y) {
            require_ndim(*Y, "Y", 2);
            require(Y->shape(0) == py::ssize_t(a.n()), "Y has " + std::to_string(Y->shape(0)) +
                                                     " rows but X has " + std::to_string(py::ssize_t(a.n())));
            require(bool(ZtY), "out_zty is required when Y is given");
            require_shape(*ZtY, "out_zty", {a.n_out(), Y->shape(1)});
            m = std::size_t(Y->shape(1));
            zty = out_ptr(*ZtY, "out_zty");
        }
        require_disjoint({span_of(G, "out"), span_of(ZtY, "out_zty")},
                         {a.x(), a.w(), a.offsets(), a.th(), span_of(Y, "Y"), rows.span()});
        T* g = out_ptr(G, "out");
        const T* y = opt_ptr(Y);
        py::gil_scoped_release release;
        streamed_gram(a.xdata(), a.n(), a.map, y, m, g, zty, accumulate, n_threads, rows.get());
    });
}

double loss_and_grad(const py::object& X_, const py::object& Y_, const py::object& W_,
                     const py::object& b_, const py::object& th_, double scale, bool pair,
                     const py::object& coef_, const std::string& loss, const py::object& grad_coef_,
                     const py::object& grad_theta_, int n_threads, const py::object& rows_) {
    return with_float_dtype(X_, "X", [&](auto tag) -> double {
        using T = decltype(tag);
        const MapArgs<T> a(X_, W_, b_, th_, scale, pair);
        const RowsArg<T> rows(rows_, a);
        const carray<T> Y = as_carray<T>(Y_, "Y");
        const carray<T> coef = coef_for(coef_, a);
        carray<T> grad_coef = as_carray<T>(grad_coef_, "out_coef");
        auto grad_theta = as_optional_carray<T>(grad_theta_, "out_theta");
        require_shape(Y, "Y", {py::ssize_t(a.n()), coef.shape(1)});
        require_shape(grad_coef, "out_coef", {coef.shape(0), coef.shape(1)});
        if (grad_theta) require_shape(*grad_theta, "out_theta", {a.W.shape(0)});
        const Loss l = parse_loss(loss);
        require_disjoint({span_of(grad_coef, "out_coef"), span_of(grad_theta, "out_theta")},
                         {a.x(), span_of(Y, "Y"), a.w(), a.offsets(), a.th(), span_of(coef, "coef"),
                          rows.span()});
        T* gc = out_ptr(grad_coef, "out_coef");
        T* gt = grad_theta ? out_ptr(*grad_theta, "out_theta") : nullptr;
        py::gil_scoped_release release;
        return loss_and_grad(a.xdata(), Y.data(), a.n(), a.map, coef.data(), std::size_t(coef.shape(1)),
                             l, gc, gt, n_threads, rows.get());
    });
}

py::tuple train_epoch(const py::object& X_, const py::object& Y_, const py::object& order_,
                      std::size_t batch_size, const py::object& W_, const py::object& b_,
                      const py::object& theta_, double scale, const py::object& coef_,
                      const std::string& loss, bool adam, double lr, double beta1, double beta2,
                      double eps, double l2_coef, double l1_theta, bool update_coef, bool update_theta,
                      const py::object& m_coef_, const py::object& v_coef_, const py::object& m_theta_,
                      const py::object& v_theta_, std::int64_t step, int n_threads,
                      bool shared_theta_moment, const py::object& rows_) {
    return with_float_dtype(X_, "X", [&](auto tag) -> py::tuple {
        using T = decltype(tag);
        require(!theta_.is_none(), "theta is required (it is trained in place)");
        const MapArgs<T> a(X_, W_, b_, theta_, scale, false);
        const RowsArg<T> rows(rows_, a);
        const carray<T> Y = as_carray<T>(Y_, "Y");
        const carray<std::int64_t> order = as_carray<std::int64_t>(order_, "order");
        carray<T> theta = *a.theta;
        carray<T> coef = as_carray<T>(coef_, "coef");
        carray<T> m_coef = as_carray<T>(m_coef_, "m_coef"), v_coef = as_carray<T>(v_coef_, "v_coef");
        carray<T> m_theta = as_carray<T>(m_theta_, "m_theta"), v_theta = as_carray<T>(v_theta_, "v_theta");
        require_ndim(coef, "coef", 2);
        require(std::size_t(coef.shape(0)) == a.map.s, "coef must have as many rows as weights has columns");
        require_shape(Y, "Y", {py::ssize_t(a.n()), coef.shape(1)});
        require_ndim(order, "order", 1);
        require_shape(m_coef, "m_coef", {coef.shape(0), coef.shape(1)});
        require_shape(v_coef, "v_coef", {coef.shape(0), coef.shape(1)});
        require_shape(m_theta, "m_theta", {a.W.shape(0)});
        require_shape(v_theta, "v_theta", {a.W.shape(0)});
        require(step >= 0, "step must be >= 0");
        require_disjoint({a.th(), span_of(coef, "coef"), span_of(m_coef, "m_coef"), span_of(v_coef, "v_coef"),
                          span_of(m_theta, "m_theta"), span_of(v_theta, "v_theta")},
                         {a.x(), span_of(Y, "Y"), span_of(order, "order"), a.w(), a.offsets(), rows.span()});
        StepConfig<T> cfg;
        cfg.adam = adam;
        cfg.rate = AdamSettings<T>{T(lr), T(beta1), T(beta2), T(eps)};
        cfg.l2_coef = T(l2_coef);
        cfg.l1_theta = T(l1_theta);
        cfg.update_coef = update_coef;
        cfg.update_theta = update_theta;
        cfg.shared_theta_moment = shared_theta_moment;
        const Loss l = parse_loss(loss);
        const EpochBatches<T> data{a.xdata(), Y.data(), a.n(), order.data(), std::size_t(order.shape(0)),
                                   batch_size, rows.get()};
        TrainableState<T> state;
        state.theta = out_ptr(theta, "theta");
        state.coef = out_ptr(coef, "coef");
        state.m = std::size_t(coef.shape(1));
        state.m_coef = out_ptr(m_coef, "m_coef");
        state.v_coef = out_ptr(v_coef, "v_coef");
        state.m_theta = out_ptr(m_theta, "m_theta");
        state.v_theta = out_ptr(v_theta, "v_theta");
        state.step = step;
        T mean_loss;
        {
            py::gil_scoped_release release;
            mean_loss = rffkern::train_epoch(data, a.map, l, cfg, state, n_threads);
        }
        return py::make_tuple(mean_loss, state.step);
    });
}

}  // namespace

void register_cos_kernels(py::module_& m) {
    m.def("features", &features, py::arg("X"), py::arg("weights"), py::arg("offsets"), py::arg("theta"),
          py::arg("scale"), py::arg("pair"), py::arg("out"), py::arg("n_threads"), py::arg("rows") = py::none());
    m.def("predict", &predict, py::arg("X"), py::arg("weights"), py::arg("offsets"), py::arg("theta"),
          py::arg("scale"), py::arg("pair"), py::arg("coef"), py::arg("out"), py::arg("n_threads"),
          py::arg("rows") = py::none());
    m.def("gram", &gram, py::arg("X"), py::arg("weights"), py::arg("offsets"), py::arg("theta"),
          py::arg("scale"), py::arg("pair"), py::arg("Y"), py::arg("out"), py::arg("out_zty"),
          py::arg("accumulate"), py::arg("n_threads"), py::arg("rows") = py::none());
    m.def("loss_and_grad", &loss_and_grad, py::arg("X"), py::arg("Y"), py::arg("weights"),
          py::arg("offsets"), py::arg("theta"), py::arg("scale"), py::arg("pair"), py::arg("coef"),
          py::arg("loss"), py::arg("out_coef"), py::arg("out_theta"), py::arg("n_threads"),
          py::arg("rows") = py::none());
    m.def("train_epoch", &train_epoch, py::arg("X"), py::arg("Y"), py::arg("order"), py::arg("batch_size"),
          py::arg("weights"), py::arg("offsets"), py::arg("theta"), py::arg("scale"), py::arg("coef"),
          py::arg("loss"), py::arg("adam"), py::arg("learning_rate"), py::arg("beta1"), py::arg("beta2"),
          py::arg("eps"), py::arg("l2_coef"), py::arg("l1_theta"), py::arg("update_coef"),
          py::arg("update_theta"), py::arg("m_coef"), py::arg("v_coef"), py::arg("m_theta"),
          py::arg("v_theta"), py::arg("step"), py::arg("n_threads"),
          py::arg("shared_theta_moment") = false, py::arg("rows") = py::none());
}

}  // namespace rffkern::bindings
