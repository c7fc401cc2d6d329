#include "knot/problems/settings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

#include "settings_check.hpp"
#include "text.hpp"

namespace knot::problems {
namespace detail {
namespace {

// "name[i]", appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "[" + to_string(i).
std::string indexed(std::string name, std::size_t i) {
  name.append("[").append(std::to_string(i)).append("]");
  return name;
}

std::optional<SettingIssue> positive(const char* field, double v) {
  if (std::isfinite(v) && v > 0) return std::nullopt;
  return SettingIssue{field, "a finite number > 0", text::format_number(v)};
}

std::optional<SettingIssue> nonnegative(const char* field, double v) {
  if (std::isfinite(v) && v >= 0) return std::nullopt;
  return SettingIssue{field, "a finite number >= 0", text::format_number(v)};
}

// A fraction in [0, 1): the inexact-Newton forcing.
std::optional<SettingIssue> fraction(const char* field, double v) {
  if (v >= 0 && v < 1) return std::nullopt;
  return SettingIssue{field, "a number in [0, 1)", text::format_number(v)};
}

std::optional<SettingIssue> thread_count(const char* field, int v) {
  if (v >= 0) return std::nullopt;
  return SettingIssue{field, "an integer >= 0 (0: every core)", std::to_string(v)};
}

std::optional<SettingIssue> at_least_one(const char* field, int v) {
  if (v >= 1) return std::nullopt;
  return SettingIssue{field, "an integer >= 1", std::to_string(v)};
}

template <std::size_t N>
std::optional<SettingIssue> one_of(const char* field, const std::string& v, const char* const (&names)[N]) {
  if (std::find(std::begin(names), std::end(names), v) != std::end(names)) return std::nullopt;
  std::string expected = "one of ";
  for (std::size_t i = 0; i < N; ++i) expected.append(i == 0 ? "" : i + 1 == N ? " or " : ", ").append(names[i]);
  return SettingIssue{field, expected, "'" + v + "'"};
}

}  // namespace

std::optional<SettingIssue> check(const SolverSettings& s) {
  // In declaration order, so the first invalid field reported is the first one in the struct.
  for (auto issue :
       {at_least_one("max_iter", s.max_iter), nonnegative("time_limit", s.time_limit),
        positive("tol_stationarity", s.tol_stationarity), positive("tol_feasibility", s.tol_feasibility),
        positive("tol_complementarity", s.tol_complementarity), one_of("linsys", s.linsys, kLinsysNames),
        one_of("hessian", s.hessian, kHessianNames), one_of("globalization", s.globalization, kGlobalizationNames),
        positive("pcg_tol", s.pcg_tol), at_least_one("pcg_max_iter", s.pcg_max_iter),
        fraction("lq_forcing", s.lq_forcing),
        nonnegative("regularization", s.regularization), positive("mu_init", s.mu_init),
        positive("memory_limit", s.memory_limit), thread_count("threads", s.threads)})
    if (issue) return issue;
  return std::nullopt;
}

std::optional<SettingIssue> check(const MpcSettings& s) {
  // In the order of the problem-file section (docs/problem-format.md).
  if (auto issue = one_of("mode", s.mode, kMpcModeNames)) return issue;
  for (auto issue : {at_least_one("iterations_per_step", s.iterations_per_step),
                     nonnegative("time_limit", s.time_limit), nonnegative("control_rate", s.control_rate),
                     positive("duration", s.duration)})
    if (issue) return issue;
  if (s.steps < 0) return SettingIssue{"steps", "an integer >= 1", std::to_string(s.steps)};
  if (auto issue = one_of("warm_start", s.warm_start, kWarmStartNames)) return issue;
  if (auto issue = at_least_one("plant.substeps", s.plant_substeps)) return issue;
  for (const auto* noise : {&s.process_noise, &s.measurement_noise}) {
    const char* field = noise == &s.process_noise ? "process_noise" : "measurement_noise";
    for (std::size_t i = 0; i < noise->size(); ++i)
      if (auto issue = nonnegative(field, (*noise)[i])) {
        issue->field = indexed(issue->field, i);
        return issue;
      }
  }
  for (std::size_t i = 0; i < s.disturbances.size(); ++i) {
    const std::string at = indexed("disturbances", i);
    const Disturbance& d = s.disturbances[i];
    if (auto issue = nonnegative("time", d.time)) return SettingIssue{at + ".time", issue->expected, issue->found};
    if (d.state_kick.empty()) return SettingIssue{at + ".state_kick", "a non-empty list of numbers", "an empty list"};
    for (std::size_t j = 0; j < d.state_kick.size(); ++j)
      if (!std::isfinite(d.state_kick[j]))
        return SettingIssue{indexed(at + ".state_kick", j), "a finite number", text::format_number(d.state_kick[j])};
  }
  for (std::size_t i = 0; i < s.references.size(); ++i) {
    const MpcReference& r = s.references[i];
    const std::string at = s.references.size() == 1 ? std::string("reference") : indexed("reference", i);
    if (r.dim < 1 || r.values.empty() || r.values.size() % static_cast<std::size_t>(r.dim) != 0)
      return SettingIssue{at, "rows of at least one value", std::to_string(r.values.size()) + " values"};
    if (!r.times.empty() && r.times.size() != static_cast<std::size_t>(r.rows()))
      return SettingIssue{at + ".time_column", "one time per row (" + std::to_string(r.rows()) + ")",
                          std::to_string(r.times.size())};
    for (std::size_t j = 1; j < r.times.size(); ++j)
      if (!(r.times[j] > r.times[j - 1]))
        return SettingIssue{at + ".time_column", "increasing times",
                            text::format_number(r.times[j]) + " after " + text::format_number(r.times[j - 1])};
  }
  return std::nullopt;
}

}  // namespace detail

namespace {

std::string message(const std::optional<detail::SettingIssue>& issue) {
  if (!issue) return {};
  return issue->field + " must be " + issue->expected + ", found " + issue->found;
}

}  // namespace

std::string SolverSettings::validate() const { return message(detail::check(*this)); }

std::string MpcSettings::validate() const { return message(detail::check(*this)); }

double mpc_period(const MpcSettings& s, double dt) { return s.control_rate > 0 ? 1.0 / s.control_rate : dt; }

int mpc_steps(const MpcSettings& s, double dt) {
  if (s.steps > 0) return s.steps;
  const double n = std::round(s.duration / mpc_period(s, dt));
  return n < 1 ? 1 : n > 1e9 ? 1000000000 : static_cast<int>(n);
}

}  // namespace knot::problems
