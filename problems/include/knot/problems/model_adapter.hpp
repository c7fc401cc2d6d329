// ModelAdapter<M>: a template model M seen through the host Model interface.
//
// A template model is a plain struct, copyable to the device, written once for every scalar:
//
//   struct Pendulum {
//     struct Params { double mass = 1; ... };         // plain data; run-time sizes live here too
//     Params params;
//     static constexpr std::string_view kType = "pendulum";   // the registry name
//     KNOT_HD int nx() const;  KNOT_HD int nu() const;  KNOT_HD int nq() const;
//     template <class S>                              // S = double, float, Dual<double>, ...
//     KNOT_HD void dynamics(const S* x, const S* u, S* f) const;   // f = x' (or x+ if discrete)
//     std::vector<std::string> state_names() const;   // host only
//     std::vector<std::string> control_names() const; // host only
//     std::vector<ModelParameter> parameters() const;  // host only, optional: what knot check prints
//     // optional:
//     std::optional<std::array<int, 2>> planar_position() const;
//     bool discrete_time() const;
//     void jacobian(const double* x, const double* u, double* f, double* fx, double* fu) const;
//   };
//
// dynamics() must not allocate and must write every f[i]. Array parameters (a linear model's A, B)
// are non-owning pointers, so the struct stays trivially copyable; the adapter keeps their storage
// alive (`storage`).
//
// Jacobians: when M has jacobian(), the adapter calls it (analytic). Otherwise forward-mode sweeps
// give the columns of [fx | fu] (nx x nx and nx x nu, column-major), one column per seeded direction
// (dx_j = 1 for j < nx, du_{j-nx} = 1 after), W directions per sweep with Dual<double,
// Tangent<double, W>>: ceil((nx + nu) / W) evaluations of the model instead of nx + nu, each
// column bit for bit what a one-direction sweep gives. The dual copies of x, u, f live in the
// ModelData, so no call allocates.
//
// Second order (step_hessian): one evaluation of the integrator step (explicit_step, integrator.hpp)
// on HyperDual<W> seeded with the nx + nu unit directions gives every second derivative of x_next;
// W is the smallest width of kSecondOrderWidths that holds nx + nu (the unused directions stay
// zero); a model with a compile-time M::kNw = nx + nu builds that width only, the others all of
// them (chosen at run time). Larger models report Unsupported. The HyperDual copies live in the ModelData too.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "knot/problems/dual.hpp"
#include "knot/problems/hyperdual.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/model.hpp"
#include "knot/problems/models/acrobot.hpp"
#include "knot/problems/models/car.hpp"
#include "knot/problems/models/cartpole.hpp"
#include "knot/problems/models/chain_of_masses.hpp"
#include "knot/problems/models/double_integrator.hpp"
#include "knot/problems/models/linear.hpp"
#include "knot/problems/models/pendulum.hpp"
#include "knot/problems/models/quadrotor.hpp"
#include "knot/problems/models/unicycle.hpp"

namespace knot::problems {

template <class M>
concept AnalyticJacobian = requires(const M& m, const double* x, const double* u, double* f, double* fx, double* fu) {
  m.jacobian(x, u, f, fx, fu);
};

// A model with jacobian() that is itself a dual evaluation (an expression model's, over the inputs it
// reads) still takes dynamics_chain's seeded sweeps, one evaluation where the product with its
// Jacobian would cost more: it says so with `static constexpr bool kChainBySweeps = true`.
template <class M>
concept ChainBySweeps = requires { requires M::kChainBySweeps; };

// A dual number carrying W directions.
template <int W>
using DualW = Dual<double, Tangent<double, W>>;

template <class M>
class ModelAdapter final : public Model {
 public:
  // `storage` owns whatever M's params point into (nullptr when they point at nothing).
  explicit ModelAdapter(M model, std::shared_ptr<const void> storage = nullptr)
      : model_(std::move(model)), storage_(std::move(storage)) {}

  const M& model() const { return model_; }

  std::string_view type() const override { return M::kType; }
  int nx() const override { return model_.nx(); }
  int nu() const override { return model_.nu(); }
  int nq() const override { return model_.nq(); }
  bool discrete_time() const override {
    if constexpr (requires { model_.discrete_time(); })
      return model_.discrete_time();
    else
      return false;
  }
  std::vector<std::string> state_names() const override { return model_.state_names(); }
  std::vector<std::string> control_names() const override { return model_.control_names(); }
  std::optional<std::array<int, 2>> planar_position() const override {
    if constexpr (requires { model_.planar_position(); })
      return model_.planar_position();
    else
      return std::nullopt;
  }

  std::vector<ModelParameter> parameters() const override {
    if constexpr (requires { model_.parameters(); })
      return model_.parameters();
    else
      return {};
  }

  std::unique_ptr<ModelData> make_data() const override {
    auto d = std::make_unique<Data>();
    const int n = model_.nx(), m = model_.nu();
    if (n + m <= kNarrow)
      d->narrow.resize(n, m);
    else
      d->wide.resize(n, m);
    with_second_order_width(n + m, [&]<int W>() {
      auto work = std::make_unique<SecondOrderWork<W>>();
      work->buf.assign(std::size_t(4 * n + m), HyperDual<W>{});
      d->second = std::move(work);
    });
    return d;
  }

  SecondOrderStatus step_hessian(ModelData& data, IntegratorType type, const double* x, const double* u, double dt,
                                 const double* lambda, double* H) const override {
    const int n = model_.nx(), m = model_.nu();
    SecondOrderStatus status = SecondOrderStatus::Unsupported;
    Data& d = cast(data);
    with_second_order_width(n + m, [&]<int W>() {
      HyperDual<W>* b = static_cast<SecondOrderWork<W>&>(*d.second).buf.data();
      status = second_order<W>(type, x, u, dt, lambda, H, b, b + n, b + n + m, b + 2 * n + m);
    });
    return status;
  }

  void dynamics(ModelData&, const double* x, const double* u, double* f) const override {
    model_.template dynamics<double>(x, u, f);
  }

  void dynamics_jacobian(ModelData& data, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override {
    if constexpr (AnalyticJacobian<M>)
      model_.jacobian(x, u, f, fx, fu);
    else
      dual_jacobian(data, x, u, f, fx, fu);
  }

  // K = fx S + [0 | fu] in one pass of dual sweeps seeded with S's columns (and the unit
  // directions of u) instead of the identity: the same number of model evaluations as
  // dynamics_jacobian, and no product fx S afterwards. Models with an analytic Jacobian decline
  // (unless ChainBySweeps).
  bool dynamics_chain(ModelData& data, const double* x, const double* u, const double* S, double* f,
                      double* K) const override {
    if constexpr (AnalyticJacobian<M> && !ChainBySweeps<M>) {
      return false;
    } else {
      Data& d = cast(data);
      if (model_.nx() + model_.nu() <= kNarrow)
        seeded_sweeps<kNarrow>(x, u, S, f, K, d.narrow.x.data(), d.narrow.u.data(), d.narrow.f.data());
      else
        seeded_sweeps<kWide>(x, u, S, f, K, d.wide.x.data(), d.wide.u.data(), d.wide.f.data());
      return true;
    }
  }

  // Direction j of sweep j0 / W sits in tangent component k = j - j0: dx = column j of S, du = e_(j - nx)
  // for j >= nx; component k of f's tangent is column j of K. Unused components of a last, partial
  // sweep are zero.
  template <int W>
  void seeded_sweeps(const double* x, const double* u, const double* S, double* f, double* K, DualW<W>* xd,
                     DualW<W>* ud, DualW<W>* fd) const {
    const int n = model_.nx(), m = model_.nu();
    if (n + m == 0) return model_.template dynamics<double>(x, u, f);
    for (int i = 0; i < n; ++i) xd[i] = DualW<W>(x[i]);
    for (int i = 0; i < m; ++i) ud[i] = DualW<W>(u[i]);
    // The loops over the W components innermost: their bound is a constant, so a model whose nx is
    // known only at run time (an expression model) gets them unrolled too.
    for (int j0 = 0; j0 < n + m; j0 += W) {
      const int w = std::min(W, n + m - j0);
      for (int i = 0; i < n; ++i) {
        const double* row = S + std::size_t(j0) * n + i;
        for (int k = 0; k < W; ++k) xd[i].d[k] = k < w ? row[std::size_t(k) * n] : 0.0;
      }
      for (int i = 0; i < m; ++i)
        for (int k = 0; k < W; ++k) ud[i].d[k] = k < w && j0 + k - n == i ? 1.0 : 0.0;
      model_.template dynamics<DualW<W>>(xd, ud, fd);
      for (int i = 0; i < n; ++i) {
        double* row = K + std::size_t(j0) * n + i;
        for (int k = 0; k < W; ++k)
          if (k < w) row[std::size_t(k) * n] = fd[i].d[k];
      }
    }
    for (int i = 0; i < n; ++i) f[i] = fd[i].v;
  }

  // The Jacobian by dual sweeps even when M has an analytic one (tests compare the two).
  void dual_jacobian(ModelData& data, const double* x, const double* u, double* f, double* fx, double* fu) const {
    Data& d = cast(data);
    if (model_.nx() + model_.nu() <= kNarrow)
      dual_sweeps<kNarrow>(x, u, f, fx, fu, d.narrow.x.data(), d.narrow.u.data(), d.narrow.f.data());
    else
      dual_sweeps<kWide>(x, u, f, fx, fu, d.wide.x.data(), d.wide.u.data(), d.wide.f.data());
  }

  // Sweeps of W directions each: sweep s seeds direction j = s W + k (dx_j = 1 for j < nx, else
  // du_{j-nx} = 1) in tangent component k, and component k of f's tangent is column j of [fx | fu].
  // Every column is bit for bit the one a single-direction Dual<double> sweep gives (dual.hpp), for
  // any W. xd, ud, fd: nx, nu and nx duals of scratch.
  template <int W>
  void dual_sweeps(const double* x, const double* u, double* f, double* fx, double* fu, DualW<W>* xd, DualW<W>* ud,
                   DualW<W>* fd) const {
    const int n = model_.nx(), m = model_.nu();
    if (n + m == 0) return model_.template dynamics<double>(x, u, f);
    for (int i = 0; i < n; ++i) xd[i] = DualW<W>(x[i]);
    for (int i = 0; i < m; ++i) ud[i] = DualW<W>(u[i]);
    for (int j0 = 0; j0 < n + m; j0 += W) {
      const int w = std::min(W, n + m - j0);
      for (int k = 0; k < w; ++k) input(xd, ud, n, j0 + k).d[k] = 1.0;
      model_.template dynamics<DualW<W>>(xd, ud, fd);
      for (int k = 0; k < w; ++k) {
        const int j = j0 + k;
        input(xd, ud, n, j).d[k] = 0.0;
        double* col = j < n ? fx + std::size_t(j) * n : fu + std::size_t(j - n) * n;
        for (int i = 0; i < n; ++i) col[i] = fd[i].d[k];
      }
    }
    for (int i = 0; i < n; ++i) f[i] = fd[i].v;
  }

 private:
  // second_order_width's widths (hyperdual.hpp), as a list to instantiate.
  static constexpr int kSecondOrderWidths[] = {3, 5, 6, 8, 12, 16, 24};
  static_assert(second_order_width(kMaxSecondOrderWidth) == kMaxSecondOrderWidth &&
                second_order_width(kMaxSecondOrderWidth + 1) == 0);

  // Calls body.template operator()<W>() for the smallest width W >= nw; nothing when none is. A
  // model that states nx + nu at compile time (M::kNw) instantiates that one width only.
  template <class Body>
  static void with_second_order_width(int nw, const Body& body) {
    if constexpr (requires { M::kNw; }) {
      constexpr int W = second_order_width(M::kNw);
      if constexpr (W > 0)
        if (nw <= W) body.template operator()<W>();
    } else {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (void)((nw <= kSecondOrderWidths[I] ? (body.template operator()<kSecondOrderWidths[I]>(), true) : false) ||
               ...);
      }
      (std::make_index_sequence<std::size(kSecondOrderWidths)>{});
    }
  }

  // xd, ud, yd (n, m, n) and work (2 n) HyperDuals of scratch.
  template <int W>
  SecondOrderStatus second_order(IntegratorType type, const double* x, const double* u, double dt, const double* lambda,
                                 double* H, HyperDual<W>* xd, HyperDual<W>* ud, HyperDual<W>* yd,
                                 HyperDual<W>* work) const {
    const auto f = [this](const HyperDual<W>* xs, const HyperDual<W>* us, HyperDual<W>* out) {
      model_.template dynamics<HyperDual<W>>(xs, us, out);
    };
    return explicit_step_hessian<W>(type, discrete_time(), model_.nx(), model_.nu(), model_.nq(), f, x, u, dt, lambda,
                                    H, xd, ud, yd, work);
  }

  struct SecondOrderBase {
    virtual ~SecondOrderBase() = default;
  };
  template <int W>
  struct SecondOrderWork final : SecondOrderBase {
    std::vector<HyperDual<W>> buf;
  };

  // Directions per sweep. Wider sweeps compute the values (sin, cos, divisions) once for more
  // columns, but past 8 the tangents no longer stay in registers and each operation costs more
  // than it saves (measured on pendulum through chain_of_masses, nx + nu = 3..24); 4 suits the
  // smallest models, where 8 would leave most lanes idle.
  static constexpr int kNarrow = 4, kWide = 8;

  template <int W>
  struct Work {
    std::vector<DualW<W>> x, u, f;
    void resize(int n, int m) {
      x.assign(n, DualW<W>{});
      u.assign(m, DualW<W>{});
      f.assign(n, DualW<W>{});
    }
  };
  // Only the width this model uses is allocated.
  struct Data final : ModelData {
    Work<kNarrow> narrow;
    Work<kWide> wide;
    std::unique_ptr<SecondOrderBase> second;  // null when nx + nu exceeds every second-order width
  };

  template <int W>
  static DualW<W>& input(DualW<W>* xd, DualW<W>* ud, int n, int j) {
    return j < n ? xd[j] : ud[j - n];
  }

  // A data object from another model would be read out of bounds: refuse it in every build. Data
  // is final, so comparing the dynamic type is exact, and cheaper than dynamic_cast's search of the
  // hierarchy (a few percent of a small model's integrator step).
  Data& cast(ModelData& data) const {
    auto* d = typeid(data) == typeid(Data) ? static_cast<Data*>(&data) : nullptr;
    const std::size_t n = model_.nx(), m = model_.nu();
    const bool sized =
        d != nullptr && (n + m <= std::size_t(kNarrow) ? d->narrow.x.size() == n && d->narrow.u.size() == m
                                                       : d->wide.x.size() == n && d->wide.u.size() == m);
    if (!sized) throw std::logic_error("ModelAdapter: ModelData was not made by this model's make_data()");
    return *d;
  }

  M model_;
  std::shared_ptr<const void> storage_;
};

// The built-in models' adapters are compiled once, in knot_problems (registry.cpp) under its flags
// (no a*b + c contraction). A program that names one links that copy: left to instantiate its own,
// under its own flags, it could hand the linker a copy that the library's calls then run too.
extern template class ModelAdapter<models::Acrobot>;
extern template class ModelAdapter<models::Car>;
extern template class ModelAdapter<models::Cartpole>;
extern template class ModelAdapter<models::ChainOfMasses>;
extern template class ModelAdapter<models::DoubleIntegrator>;
extern template class ModelAdapter<models::Linear>;
extern template class ModelAdapter<models::Pendulum>;
extern template class ModelAdapter<models::Quadrotor>;
extern template class ModelAdapter<models::Unicycle>;

}  // namespace knot::problems
