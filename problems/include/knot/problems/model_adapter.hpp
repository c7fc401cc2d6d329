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
// Jacobians: when M has jacobian(), the adapter calls it (analytic). Otherwise it runs nx + nu
// forward-mode sweeps, sweep j seeding dx_j = 1 (j < nx) or du_{j-nx} = 1, each giving column j of
// [fx | fu] (nx x nx and nx x nu, column-major). The dual copies of x, u, f live in the ModelData,
// so no call allocates.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "knot/problems/dual.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems {

template <class M>
concept AnalyticJacobian = requires(const M& m, const double* x, const double* u, double* f, double* fx, double* fu) {
  m.jacobian(x, u, f, fx, fu);
};

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

  std::unique_ptr<ModelData> make_data() const override {
    auto d = std::make_unique<Data>();
    d->x.assign(model_.nx(), Dual<double>{});
    d->u.assign(model_.nu(), Dual<double>{});
    d->f.assign(model_.nx(), Dual<double>{});
    return d;
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

  // The Jacobian by dual sweeps even when M has an analytic one (tests compare the two).
  void dual_jacobian(ModelData& data, const double* x, const double* u, double* f, double* fx, double* fu) const {
    Data& d = cast(data);
    const int n = model_.nx(), m = model_.nu();
    for (int i = 0; i < n; ++i) d.x[i] = {x[i], 0.0};
    for (int i = 0; i < m; ++i) d.u[i] = {u[i], 0.0};
    if (n + m == 0) return model_.template dynamics<double>(x, u, f);
    for (int j = 0; j < n + m; ++j) {
      Dual<double>& seed = j < n ? d.x[j] : d.u[j - n];
      seed.d = 1.0;
      model_.template dynamics<Dual<double>>(d.x.data(), d.u.data(), d.f.data());
      seed.d = 0.0;
      double* col = j < n ? fx + std::size_t(j) * n : fu + std::size_t(j - n) * n;
      for (int i = 0; i < n; ++i) col[i] = d.f[i].d;
    }
    for (int i = 0; i < n; ++i) f[i] = d.f[i].v;
  }

 private:
  struct Data final : ModelData {
    std::vector<Dual<double>> x, u, f;
  };

  // A data object from another model would be read out of bounds: refuse it in every build.
  Data& cast(ModelData& data) const {
    auto* d = dynamic_cast<Data*>(&data);
    if (d == nullptr || d->x.size() != std::size_t(model_.nx()) || d->u.size() != std::size_t(model_.nu()))
      throw std::logic_error("ModelAdapter: ModelData was not made by this model's make_data()");
    return *d;
  }

  M model_;
  std::shared_ptr<const void> storage_;
};

}  // namespace knot::problems
