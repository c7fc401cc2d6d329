// Linear (affine) model: f = A x + B u + c, in continuous time (f = x') or, with `discrete`,
// as the discrete map x+ = A x + B u + c, which the integrator applies unchanged.
//
//   x (nx), u (nu): whatever the matrices describe; A nx x nx, B nx x nu, c nx, column-major
//   nq = 0
//
// Parameters: nx, nu (required integers >= 1), A, B (required matrices), c (default 0),
// discrete (default false). The struct holds non-owning pointers to A, B, c, so it stays plain
// data; ModelAdapter keeps their storage alive.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems::models {

struct Linear {
  struct Params {
    int nx = 0, nu = 0;
    const double* A = nullptr;  // nx x nx
    const double* B = nullptr;  // nx x nu
    const double* c = nullptr;  // nx; nullptr means zero
    bool discrete = false;
  };
  Params params;

  static constexpr std::string_view kType = "linear";
  KNOT_HD int nx() const { return params.nx; }
  KNOT_HD int nu() const { return params.nu; }
  KNOT_HD int nq() const { return 0; }
  bool discrete_time() const { return params.discrete; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    const Params& p = params;
    for (int i = 0; i < p.nx; ++i) f[i] = p.c == nullptr ? S(0) : S(p.c[i]);
    for (int j = 0; j < p.nx; ++j)
      for (int i = 0; i < p.nx; ++i) f[i] += S(p.A[i + j * p.nx]) * x[j];
    for (int j = 0; j < p.nu; ++j)
      for (int i = 0; i < p.nx; ++i) f[i] += S(p.B[i + j * p.nx]) * u[j];
  }

  void jacobian(const double* x, const double* u, double* f, double* fx, double* fu) const {
    dynamics(x, u, f);
    const int n = params.nx;
    for (int k = 0; k < n * n; ++k) fx[k] = params.A[k];
    for (int k = 0; k < n * params.nu; ++k) fu[k] = params.B[k];
  }

  std::vector<std::string> state_names() const { return names("x", params.nx); }
  std::vector<std::string> control_names() const { return names("u", params.nu); }
  std::vector<ModelParameter> parameters() const {
    return {
        {"nx", {double(params.nx)}}, {"nu", {double(params.nu)}}, {"discrete", {}, params.discrete ? "true" : "false"}};
  }

 private:
  static std::vector<std::string> names(const char* prefix, int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
      std::string name = prefix;
      name += std::to_string(i);
      out.push_back(std::move(name));
    }
    return out;
  }
};

}  // namespace knot::problems::models
