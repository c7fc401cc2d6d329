// Double integrator in `dim` dimensions: a point mass driven by its acceleration.
//
//   x = [p (dim); v (dim)]   positions (m) and velocities (m/s)
//   u = a (dim)              accelerations (m/s^2)
//   p' = v,  v' = a          (linear; nq = dim)
//
// Parameters: dim (integer >= 1, default 1).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems::models {

struct DoubleIntegrator {
  struct Params {
    int dim = 1;
  };
  Params params;

  static constexpr std::string_view kType = "double_integrator";
  KNOT_HD int nx() const { return 2 * params.dim; }
  KNOT_HD int nu() const { return params.dim; }
  KNOT_HD int nq() const { return params.dim; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    const int n = params.dim;
    for (int i = 0; i < n; ++i) {
      f[i] = x[n + i];
      f[n + i] = u[i];
    }
  }

  // Constant Jacobians: fx = [0 I; 0 0], fu = [0; I].
  void jacobian(const double* x, const double* u, double* f, double* fx, double* fu) const {
    dynamics(x, u, f);
    const int n = params.dim, nx2 = 2 * n;
    for (int k = 0; k < nx2 * nx2; ++k) fx[k] = 0.0;
    for (int k = 0; k < nx2 * n; ++k) fu[k] = 0.0;
    for (int i = 0; i < n; ++i) {
      fx[i + (n + i) * nx2] = 1.0;
      fu[(n + i) + i * nx2] = 1.0;
    }
  }

  // p, v, a when dim = 1; p0, p1, ..., v0, ..., a0, ... otherwise.
  std::vector<std::string> state_names() const { return names({"p", "v"}); }
  std::vector<std::string> control_names() const { return names({"a"}); }
  std::vector<ModelParameter> parameters() const { return {{"dim", {double(params.dim)}}}; }

 private:
  std::vector<std::string> names(std::initializer_list<const char*> prefixes) const {
    std::vector<std::string> out;
    for (const char* prefix : prefixes)
      for (int i = 0; i < params.dim; ++i) {
        std::string name = prefix;
        if (params.dim > 1) name += std::to_string(i);
        out.push_back(std::move(name));
      }
    return out;
  }
};

}  // namespace knot::problems::models
