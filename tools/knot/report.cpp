#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "knot/problems/constraint.hpp"

namespace knot::cli {

nlohmann::json json_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::vector<std::string> state_names(const problems::Problem& p) {
  return p.state_names.empty() && p.model ? p.model->state_names() : p.state_names;
}

std::vector<std::string> control_names(const problems::Problem& p) {
  return p.control_names.empty() && p.model ? p.model->control_names() : p.control_names;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

namespace {

nlohmann::json numbers(const std::vector<double>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const double x : v) out.push_back(json_number(x));
  return out;
}

}  // namespace

nlohmann::json problem_json(const problems::Problem& p) {
  const int nx = p.nx(), nu = p.nu();
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<double> xl(static_cast<std::size_t>(nx), -inf), xu(static_cast<std::size_t>(nx), inf);
  std::vector<double> ul(static_cast<std::size_t>(nu), -inf), uu(static_cast<std::size_t>(nu), inf);
  for (const auto& c : p.constraints) {
    const problems::BoxBounds* b = c ? c->box() : nullptr;
    if (!b) continue;
    std::vector<double>& lo = b->on_control ? ul : xl;
    std::vector<double>& hi = b->on_control ? uu : xu;
    for (std::size_t i = 0; i < b->index.size(); ++i) {
      const auto j = static_cast<std::size_t>(b->index[i]);
      if (j >= lo.size()) continue;
      lo[j] = std::max(lo[j], b->lower[i]);
      hi[j] = std::min(hi[j], b->upper[i]);
    }
  }
  nlohmann::json j;
  j["name"] = p.name;
  j["source"] = p.source;
  j["model"] = p.model ? std::string(p.model->type()) : std::string();
  j["nx"] = nx;
  j["nu"] = nu;
  j["N"] = p.horizon.N;
  j["dt"] = p.horizon.dt;
  j["integrator"] = std::string(problems::to_string(p.horizon.integrator));
  j["state_names"] = state_names(p);
  j["control_names"] = control_names(p);
  j["bounds"] = {{"x_lower", numbers(xl)}, {"x_upper", numbers(xu)}, {"u_lower", numbers(ul)}, {"u_upper", numbers(uu)}};
  return j;
}

}  // namespace knot::cli
