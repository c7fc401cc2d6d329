// Shared helpers of the SQP suites: loading configs, the solver's default options, and independent
// checks of a solution (constraints, dynamics) that re-evaluate the problem's own terms.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/solver.hpp"
#include "source_tree.hpp"

namespace knot::test {

// Under AddressSanitizer the solves run about ten times slower: suites that sweep many solves check
// a subset there.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif
#else
inline constexpr bool kUnderSanitizer = false;
#endif

// Random cart-pole starts, the first n of one fixed sequence: x0 = (cart 0.5 U, angle pi + U,
// velocity U, angular velocity 2 U), U uniform on [-1, 1] from mt19937_64 seeded 20261201 (the
// pole hanging, give or take a radian, and moving).
inline std::vector<std::array<double, 4>> cartpole_starts(int n) {
  std::mt19937_64 rng(20261201);
  std::uniform_real_distribution<double> U(-1, 1);
  std::vector<std::array<double, 4>> starts(static_cast<std::size_t>(n));
  for (auto& s : starts) {
    const double a = U(rng), b = U(rng), c = U(rng), d = U(rng);
    s = {0.5 * a, std::numbers::pi + b, c, 2 * d};
  }
  return starts;
}

// A change of one box term's bounds that adds or removes its rows: `term` gets `lower`, `upper`, and
// `moved` is the problem with that term made with them (the reference a set_bounds is held to).
struct BoxMove {
  std::string term;
  std::vector<double> lower, upper;
  problems::Problem moved;
  bool removes = true;  // a finite bound made infinite (else an infinite one made finite)
};

// For every box term of p: its first finite bound made infinite, and its first infinite bound made
// finite (+-1e3, far from any optimum of the configs: a row that stays inactive), where it has one.
inline std::vector<BoxMove> box_moves(const problems::Problem& p) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<BoxMove> moves;
  for (std::size_t j = 0; j < p.constraints.size(); ++j) {
    const problems::BoxBounds* box = p.constraints[j]->box();
    if (box == nullptr) continue;
    for (const bool removes : {true, false}) {
      BoxMove m{p.constraints[j]->info().name, box->lower, box->upper, p, removes};
      bool changed = false;
      for (std::size_t e = 0; e < box->index.size() && !changed; ++e)
        for (double* v : {&m.upper[e], &m.lower[e]}) {
          if (changed || std::isfinite(*v) != removes) continue;
          const bool up = v == &m.upper[e];
          *v = removes ? (up ? inf : -inf) : (up ? 1e3 : -1e3);
          changed = true;
        }
      if (!changed) continue;
      const problems::TermInfo& info = p.constraints[j]->info();
      if (box->on_control)
        m.moved.constraints[j] = std::make_shared<problems::ControlBox>(info, p.nu(), m.lower, m.upper);
      else
        m.moved.constraints[j] = std::make_shared<problems::StateBox>(info, p.nx(), box->index, m.lower, m.upper);
      moves.push_back(std::move(m));
    }
  }
  return moves;
}

// Initial states of B problems: problem 0 the file's x0, problem i >= 1 x0 + sigma n_i (standard
// normal draws of mt19937_64 seeded 20261201), the perturbation `knot solve --vary` documents.
inline std::vector<std::vector<double>> perturbed_starts(const problems::Problem& p, int B, double sigma) {
  std::mt19937_64 rng(20261201);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<std::vector<double>> x0(static_cast<std::size_t>(B), p.x0);
  for (int i = 1; i < B; ++i)
    for (double& v : x0[static_cast<std::size_t>(i)]) v += sigma * n(rng);
  return x0;
}

inline problems::Problem load_config(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return problems::load_problem(std::filesystem::path(knot::source_tree::configs_dir()) / (name + ".yaml"), overrides);
}

// Expression terms beside the cart-pole swing-up's own (the device path's tests, on the expression
// cart-pole and the built-in one): a residual mixing states and the control under a dense weight, a
// terminal residual, an inequality on x and u with one side unbounded, a terminal equality.
inline std::vector<std::string> expression_term_overrides() {
  return {
      "costs=[{name: state, type: state, weights: [2000, 2000, 0.02, 0.02], stage: running, scale_by_dt: true}, "
      "{name: force, type: control, weights: [0.02], stage: running, scale_by_dt: true}, "
      "{name: terminal, type: state, weights: [2000, 2000, 0.02, 0.02], stage: terminal}, "
      "{name: mix, type: residual, residual: [sin(theta) * F, v - 0.5 * F, omega * p], "
      "weights: [[1, 0.2, 0], [0.2, 2, 0.1], [0, 0.1, 0.5]], stage: running, scale_by_dt: true}, "
      "{name: tip, type: residual, residual: [p - 0.8 * sin(theta), 0.8 * cos(theta) - 0.8], weights: [10, 5], "
      "stage: terminal}]",
      "constraints=[{name: force_limit, type: control_box, lower: [-80], upper: [80]}, "
      "{name: lean, type: expression, expression: [F * cos(theta), p^2 + v], lower: [-78, -.inf], upper: [78, 9]}, "
      "{name: upright, type: expression, expression: [sin(theta), omega * cos(theta)], lower: [0, 0], upper: [0, 0], "
      "stage: terminal}]"};
}

// End-effector constraints on iiwa14_reach (the device path's tests): a floor under a point offset
// from the flange and a workspace box with some sides unbounded, whose x <= 0.58 is active along the
// fixture path (cost 1.36508733906 against 1.22985223547 without them).
inline std::vector<std::string> end_effector_constraint_overrides() {
  return {"constraints=[{name: floor, type: end_effector_height, min: 0.23, offset: [0.01, 0, 0]}, "
          "{name: workspace, type: end_effector_box, lower: [-0.8, -.inf, 0.1], upper: [0.58, 0.9, .inf]}]"};
}

inline std::vector<std::string> config_names() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(knot::source_tree::configs_dir()))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The solver options of the problem file's `solver` section (the filter line search by default).
inline solver::SolverOptions sqp_options(const problems::Problem& p) { return solver::from_settings(p.solver); }

// Knot k of the trajectory (x, u) as the terms see it: u null at k = N, u_prev null at k = 0.
inline problems::StagePoint stage_point(const problems::Problem& p, int k, const double* x, const double* u,
                                        problems::ModelData* data) {
  const int nx = p.nx(), nu = p.nu(), N = p.horizon.N;
  problems::StagePoint pt;
  pt.k = k;
  pt.N = N;
  pt.dt = p.horizon.dt;
  pt.x = x + static_cast<std::size_t>(k) * nx;
  pt.u = k < N ? u + static_cast<std::size_t>(k) * nu : nullptr;
  pt.u_prev = k > 0 ? u + static_cast<std::size_t>(k - 1) * nu : nullptr;
  pt.data = data;
  return pt;
}

// Largest violation of the problem's constraints by (x, u), evaluated from scratch with the
// problem's own terms, a fresh integrator and fresh model data: |x_0 - x0|, dynamics defects,
// max(g, 0) of inequality rows and |h| of equality rows.
inline double max_violation(const problems::Problem& p, const std::vector<double>& x, const std::vector<double>& u) {
  const int nx = p.nx(), nu = p.nu(), N = p.horizon.N;
  auto data = p.model->make_data();
  problems::Integrator integrator(*p.model, p.horizon.integrator);
  std::vector<double> next(static_cast<std::size_t>(nx)), g;
  double worst = 0;
  for (int i = 0; i < nx; ++i) worst = std::max(worst, std::abs(x[static_cast<std::size_t>(i)] - p.x0[static_cast<std::size_t>(i)]));
  for (int k = 0; k <= N; ++k) {
    const double* xk = x.data() + static_cast<std::size_t>(k) * nx;
    const double* uk = k < N ? u.data() + static_cast<std::size_t>(k) * nu : nullptr;
    if (k < N) {
      if (integrator.step(*data, xk, uk, p.horizon.dt, next.data()) != problems::IntegratorStatus::Ok) return INFINITY;
      for (int i = 0; i < nx; ++i) worst = std::max(worst, std::abs(next[static_cast<std::size_t>(i)] - xk[nx + i]));
    }
    const problems::StagePoint pt = stage_point(p, k, x.data(), u.data(), data.get());
    for (const auto& c : p.constraints) {
      if (!c->active(k, N)) continue;
      g.assign(static_cast<std::size_t>(c->dim()), 0.0);
      c->evaluate(pt, g.data());
      for (double v : g)
        worst = std::max(worst, c->kind() == problems::ConstraintKind::Equality ? std::abs(v) : std::max(v, 0.0));
    }
  }
  return worst;
}

// The objective at (x, u), from the cost terms directly.
inline double total_cost(const problems::Problem& p, const std::vector<double>& x, const std::vector<double>& u) {
  const int N = p.horizon.N;
  auto data = p.model->make_data();
  double f = 0;
  for (int k = 0; k <= N; ++k) {
    const problems::StagePoint pt = stage_point(p, k, x.data(), u.data(), data.get());
    for (const auto& c : p.costs)
      if (c->active(k, N)) f += c->value(pt);
  }
  return f;
}

// Single shooting: the states the controls produce from x0.
inline std::vector<double> rollout(const problems::Problem& p, const std::vector<double>& u) {
  const int nx = p.nx(), nu = p.nu(), N = p.horizon.N;
  auto data = p.model->make_data();
  problems::Integrator integrator(*p.model, p.horizon.integrator);
  std::vector<double> x(static_cast<std::size_t>(N + 1) * nx);
  std::copy(p.x0.begin(), p.x0.end(), x.begin());
  for (int k = 0; k < N; ++k)
    integrator.step(*data, x.data() + static_cast<std::size_t>(k) * nx, u.data() + static_cast<std::size_t>(k) * nu,
                    p.horizon.dt, x.data() + static_cast<std::size_t>(k + 1) * nx);
  return x;
}

}  // namespace knot::test
