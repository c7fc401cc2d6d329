// knot mpc FILE: the closed loop of the file's mpc: section (solver/closed_loop.hpp), a progress
// bar on a terminal (one line per simulated second otherwise), a summary table, and with --out DIR
// the files closed_loop.csv and summary.json (docs/mpc.md).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fmt/core.h>
#include <exception>
#include <filesystem>
#include <iterator>
#include <string>

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/closed_loop.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "report.hpp"

namespace knot::cli {
namespace {

using nlohmann::json;
using solver::ClosedLoop;
using solver::Status;

constexpr Status kStatuses[] = {Status::NotRun,         Status::Solved,           Status::SolvedAcceptable,
                                Status::MaxIterations,  Status::TimeLimit,        Status::Infeasible,
                                Status::NumericalError, Status::LineSearchFailed, Status::Interrupted};
static_assert(std::size(kStatuses) == solver::kStatusCount);

struct Progress {
  bool terminal = false;
  double period = 0;
  int last_second = -1;
};

void on_step(int done, int steps, void* user) {
  auto& p = *static_cast<Progress*>(user);
  if (p.terminal) {
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(static_cast<long long>(kWidth) * done / steps);
    fmt::print("\r[{}{}] {}/{} steps, t = {:.2f} s", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, ' ').c_str(), done, steps, done * p.period);
    if (done == steps) std::fputc('\n', stdout);
    std::fflush(stdout);
    return;
  }
  const int second = static_cast<int>(std::floor(done * p.period + 1e-9));
  if (second != p.last_second || done == steps) {
    p.last_second = second;
    fmt::print("t = {:.3f} s: {}/{} steps\n", done * p.period, done, steps);
  }
}

// Non-finite values (a plant that diverged) are left empty.
std::string number(double v) { return std::isfinite(v) ? csv_number(v) : std::string(); }

std::string closed_loop_csv(const ClosedLoop& loop) {
  const problems::Problem& p = loop.problem();
  const solver::ClosedLoopRecord& r = loop.record();
  const int nx = r.nx, nu = r.nu, K = loop.steps_done();
  const bool final_row = K == loop.steps();
  const std::vector<std::string> states = state_names(p), controls = control_names(p);
  const auto state_name = [&](int j) { return csv_field(states[static_cast<std::size_t>(j)]); };
  const auto control_name = [&](int j) { return csv_field(controls[static_cast<std::size_t>(j)]); };
  std::string frame;
  if (loop.ee_frame() >= 0) frame = p.mpc.plant_model && p.mpc.plant_model->kinematics()
                                        ? p.mpc.plant_model->kinematics()->frame_name(loop.ee_frame())
                                        : p.model->kinematics()->frame_name(loop.ee_frame());
  // Cells appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "," + std::string.
  std::string out = "step,time";
  const auto cell = [&out](const std::string& v) { out.append(",").append(v); };
  const auto named = [&cell](std::string prefix, const std::string& name, const char* suffix = "") {
    cell(prefix.append(name).append(suffix));
  };
  for (int j = 0; j < nx; ++j) cell(state_name(j));
  for (int j = 0; j < nu; ++j) cell(control_name(j));
  if (!r.ee.empty())
    for (const char* axis : {".x", ".y", ".z"}) named("", frame, axis);
  if (!r.x_ref.empty())
    for (int j = 0; j < nx; ++j) named("ref.", state_name(j));
  if (!r.ee_ref.empty())
    for (const char* axis : {".x", ".y", ".z"}) named("ref.", frame, axis);
  out += ",solve_time,status,iterations,deadline_miss\n";
  const int rows = final_row ? K + 1 : K;
  const auto at = [](const std::vector<double>& v, int i, int w, int j) { return v[static_cast<std::size_t>(i) * w + j]; };
  for (int i = 0; i < rows; ++i) {
    const bool step = i < K;
    out.append(std::to_string(i));
    cell(number(r.time[i]));
    for (int j = 0; j < nx; ++j) cell(number(at(r.x, i, nx, j)));
    for (int j = 0; j < nu; ++j) cell(step ? number(at(r.u, i, nu, j)) : std::string());
    if (!r.ee.empty())
      for (int j = 0; j < 3; ++j) cell(number(at(r.ee, i, 3, j)));
    if (!r.x_ref.empty())
      for (int j = 0; j < nx; ++j) cell(number(at(r.x_ref, i, nx, j)));
    if (!r.ee_ref.empty())
      for (int j = 0; j < 3; ++j) cell(number(at(r.ee_ref, i, 3, j)));
    if (step) {
      cell(number(r.solve_time[i]));
      cell(solver::to_string(r.status[i]));
      cell(std::to_string(r.iterations[i]));
      cell(r.deadline_miss[i] ? "1" : "0");
      out.append("\n");
    } else {
      out.append(",,,,\n");
    }
  }
  return out;
}

json mpc_json(const problems::Problem& p) {
  const problems::MpcSettings& m = p.mpc;
  json plant_params = json::object();
  for (const problems::PlantParam& pp : m.plant_params) {
    const auto value = [](const std::vector<double>& v) {
      if (v.size() == 1) return json_number(v[0]);
      json a = json::array();
      for (double x : v) a.push_back(json_number(x));
      return a;
    };
    plant_params[pp.name] = {{"model", value(pp.model_value)}, {"plant", value(pp.plant_value)}};
  }
  json disturbances = json::array();
  for (const problems::Disturbance& d : m.disturbances) disturbances.push_back({{"time", d.time}, {"state_kick", d.state_kick}});
  json references = json::array();
  for (const problems::MpcReference& r : m.references)
    references.push_back({{"cost", r.cost}, {"file", r.source}, {"rows", r.rows()}, {"timed", !r.times.empty()}});
  return {{"mode", m.mode},
          {"iterations_per_step", m.iterations_per_step},
          {"time_limit", m.time_limit},
          {"control_rate", 1.0 / problems::mpc_period(m, p.horizon.dt)},
          {"steps", problems::mpc_steps(m, p.horizon.dt)},
          {"warm_start", m.warm_start},
          {"plant", {{"integrator", std::string(problems::to_string(m.plant_integrator))},
                     {"substeps", m.plant_substeps},
                     {"params", plant_params}}},
          {"process_noise", m.process_noise},
          {"measurement_noise", m.measurement_noise},
          {"disturbances", disturbances},
          {"seed", m.seed},
          {"reference", references}};
}

json summary_json(const ClosedLoop& loop, const solver::ClosedLoopSummary& s) {
  json tracking = json::object();
  for (const solver::TrackingError& e : s.tracking) tracking[e.name] = {{"rms", json_number(e.rms)}, {"max", json_number(e.max)}};
  json statuses = json::object();
  for (Status st : kStatuses)
    if (const int n = s.statuses[static_cast<std::size_t>(st)]) statuses[solver::to_string(st)] = n;
  return {{"problem", problem_json(loop.problem())},
          {"mpc", mpc_json(loop.problem())},
          {"steps", s.steps},
          {"duration", s.duration},
          {"control_period", s.control_period},
          {"tracking", tracking},
          {"constraint_violation", json_number(s.constraint_violation)},
          {"solve_time", {{"p50", s.solve_p50}, {"p99", s.solve_p99}, {"max", s.solve_max}, {"mean", s.solve_mean}}},
          {"deadline_misses", s.deadline_misses},
          {"statuses", statuses},
          {"failed_steps", s.failed_steps},
          {"closed_loop_cost", json_number(s.closed_loop_cost)},
          {"seed", s.seed}};
}

void print_summary(const ClosedLoop& loop, const solver::ClosedLoopSummary& s) {
  const problems::Problem& p = loop.problem();
  fmt::print("closed loop   {}: {} steps of {:.6g} s ({:.6g} s), mode {}, seed {}\n", p.name.c_str(), s.steps,
              s.control_period, s.duration, p.mpc.mode.c_str(), static_cast<unsigned long long>(s.seed));
  fmt::print("tracking      {:<16} {:>12} {:>12}\n", "", "rms", "max");
  for (const solver::TrackingError& e : s.tracking)
    fmt::print("              {:<16} {:12.4e} {:12.4e}\n", e.name.c_str(), e.rms, e.max);
  fmt::print("constraints   max violation {:.4e}\n", s.constraint_violation);
  fmt::print("solve time    p50 {:.3e} s, p99 {:.3e} s, max {:.3e} s, mean {:.3e} s\n", s.solve_p50, s.solve_p99,
              s.solve_max, s.solve_mean);
  fmt::print("deadline      {} misses of {} (control period {:.6g} s)\n", s.deadline_misses, s.steps, s.control_period);
  std::string statuses;
  for (Status st : kStatuses)
    if (const int n = s.statuses[static_cast<std::size_t>(st)])
      statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", solver::to_string(st), n);
  fmt::print("statuses      {}\n", statuses.c_str());
  fmt::print("failed steps  {} (the previous plan applied)\n", s.failed_steps);
  fmt::print("cost          {:.10g} (closed loop, running terms)\n", s.closed_loop_cost);
}

}  // namespace

int run_mpc(const MpcOptions& opt) {
  if (opt.duration && opt.steps) {
    fmt::print(stderr, "knot mpc: --duration, --steps: expected one of them, found both\n");
    return kExitInput;
  }
  // After the file's own --set overrides; each replaces the other key of the file.
  std::vector<std::string> overrides = opt.overrides;
  if (opt.duration) {
    overrides.push_back("mpc.duration=" + fmt::format("{:.17g}", *opt.duration));
    overrides.push_back("mpc.steps=null");
  }
  if (opt.steps) {
    overrides.push_back("mpc.steps=" + std::to_string(*opt.steps));
    overrides.push_back("mpc.duration=null");
  }
  if (opt.seed) overrides.push_back("mpc.seed=" + std::to_string(*opt.seed));
  problems::Problem problem;
  try {
    problem = problems::load_problem(opt.file, overrides);
  } catch (const problems::ProblemError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitInput;
  }
  if (opt.plot && opt.out.empty()) {
    fmt::print(stderr, "knot mpc --plot: the figures go beside closed_loop.csv; give --out DIR\n");
    return kExitInput;
  }
  if (!opt.out.empty())
    if (const std::string err = make_output_dir(opt.out); !err.empty()) {
      fmt::print(stderr, "knot mpc: --out: {}\n", err.c_str());
      return kExitInput;
    }
  try {
    ClosedLoop loop(std::move(problem));
    Progress progress{isatty(fileno(stdout)) != 0, loop.period(), -1};
    loop.set_step_callback(on_step, &progress);
    loop.run();
    const solver::ClosedLoopSummary s = loop.summary();
    print_summary(loop, s);
    if (!opt.out.empty()) {
      const std::filesystem::path dir(opt.out);
      for (const auto& [name, text] :
           {std::pair<std::string, std::string>{"closed_loop.csv", closed_loop_csv(loop)},
            std::pair<std::string, std::string>{"summary.json", summary_json(loop, s).dump(2) + "\n"}}) {
        const std::string path = (dir / name).string();
        if (const std::string err = write_output(path, text); !err.empty()) {
          fmt::print(stderr, "knot mpc: {}\n", err.c_str());
          return kExitInput;
        }
        fmt::print("wrote         {}\n", path.c_str());
      }
    }
    if (opt.plot) {
      std::vector<std::string> pngs;
      // A figure that cannot be drawn is a warning: the closed loop and its files are done.
      if (const std::string why = plot_files({(std::filesystem::path(opt.out) / "closed_loop.csv").string()}, "", pngs);
          !why.empty())
        fmt::print(stderr, "knot mpc --plot: {}\n", why.c_str());
      for (const std::string& png : pngs) fmt::print("figure        {}\n", png.c_str());
    }
    return kExitSolved;
  } catch (const problems::ProblemError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "knot mpc: internal error: {}\n", e.what());
    return kExitInternal;
  }
}

}  // namespace knot::cli
