// knot solve FILE: load a problem, solve it with Knot's SQP (or IPOPT, for the cross-check), print a
// summary (table, JSON or CSV), and write the trajectory, the statistics and the solution on request.
//
// -v prints the iteration table live, one row per iteration as the solver's iteration callback
// delivers it. --out DIR writes DIR/trajectory.csv, DIR/stats.json and DIR/solution.yaml (the last
// readable by --initial-guess, which also takes a trajectory.csv); --output FILE writes the trajectory CSV alone ("-": stdout, and then
// everything else goes to stderr so stdout stays a clean CSV). Every file is written whole or not at
// all (write_output). Exit codes: output.hpp (0 solved, 1 input or output error, 2 not solved).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fmt/core.h>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/ipopt.hpp"
#include "knot/solver/solver.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "report.hpp"

namespace knot::cli {
namespace {

// What both solvers report, in one shape for the three summary formats and stats.json.
struct Report {
  std::string solver;  // "knot" or "ipopt"
  std::string settings;
  std::string status;  // machine name
  std::string message;
  bool solved = false;
  int iterations = 0;
  double cost = 0, stationarity = 0, feasibility = 0, complementarity = 0;
  double seconds = 0;
  const solver::Stats* stats = nullptr;        // knot only
  const solver::Solution* solution = nullptr;  // knot only: the multipliers for solution.yaml
  std::size_t bytes = 0;                       // knot only
};

// YAML spells the non-finite values .nan, .inf and -.inf.
std::string yaml_number(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  return csv_number(v);
}

// A YAML flow scalar for a name: plain when safe, else double-quoted with escapes.
std::string yaml_string(std::string_view text) {
  const bool plain = !text.empty() && text.find_first_of(":#,[]{}&*!|>'\"%@`\\ \t\n") == std::string_view::npos &&
                     text.front() != '-' && text.front() != '?';
  if (plain) return std::string(text);
  return nlohmann::json(std::string(text)).dump();  // a JSON string is a valid YAML double-quoted scalar
}


// ---- The live iteration table (-v), printed by the solver's iteration callback.

void print_table_header(std::FILE* out) {
  fmt::print(out, " iter  {:<9} {:<20} {:<10} {:<10} {:<10} {:<9} {:<9} {:<9} {:<4} {:<9} {:<7} {}\n", "time ms",
               "cost", "stationar.", "feasib.", "complem.", "mu", "step", "dual step", "bt", "reg", "hessian",
               "lq iters");
  std::fflush(out);
}

bool print_table_row(const solver::IterationStats& it, int iteration, void* user) {
  auto* out = static_cast<std::FILE*>(user);
  fmt::print(out, " {:4}  {:<9.3f} {:<20.12g} {:<10.3e} {:<10.3e} {:<10.3e} {:<9.2e} {:<9.3g} {:<9.3g} {:<4} {:<9.2e} {:<7} {}\n",
               iteration, 1e3 * it.seconds, it.cost, it.stationarity, it.feasibility, it.complementarity, it.mu,
               it.step, it.dual_step, it.backtracks, it.regularization, it.exact_hessian ? "exact" : "gn",
               it.lq_iterations);
  std::fflush(out);
  return true;
}

// ---- Summaries

void print_table(std::FILE* out, const problems::Problem& p, const Report& r) {
  fmt::print(out, "problem          {}  (nx {}, nu {}, N {}, dt {:g}, {})\n", p.name.c_str(), p.nx(), p.nu(),
               p.horizon.N, p.horizon.dt, std::string(problems::to_string(p.horizon.integrator)).c_str());
  fmt::print(out, "solver           {} ({})\n", r.solver.c_str(), r.settings.c_str());
  fmt::print(out, "status           {}\n", r.status.c_str());
  fmt::print(out, "message          {}\n", r.message.c_str());
  fmt::print(out, "iterations       {}\n", r.iterations);
  fmt::print(out, "cost             {:.12g}\n", r.cost);
  fmt::print(out, "stationarity     {:.3e}\n", r.stationarity);
  fmt::print(out, "feasibility      {:.3e}\n", r.feasibility);
  fmt::print(out, "complementarity  {:.3e}\n", r.complementarity);
  if (r.stats) {
    const solver::PhaseTimes& t = r.stats->time;
    fmt::print(out,
                 "time             {:.3f} ms  (linearize {:.3f}, barrier {:.3f}, lq {:.3f}, step {:.3f}, line search {:.3f}, "
                 "convergence {:.3f})\n",
                 1e3 * t.total, 1e3 * t.linearize, 1e3 * t.barrier, 1e3 * t.lq, 1e3 * t.step, 1e3 * t.line_search,
                 1e3 * t.convergence);
    fmt::print(out, "regularized      {} iterations (largest delta {:.3g})\n", r.stats->regularized,
                 r.stats->max_regularization);
    if (r.stats->linsys == solver::Linsys::Bdsv || r.stats->linsys == solver::Linsys::Pcg)
      fmt::print(out, "riccati fallback {} steps (LqOptions::riccati_fallback)\n", r.stats->riccati_fallbacks);
    fmt::print(out, "memory           {} bytes allocated at creation\n", r.bytes);
  } else {
    fmt::print(out, "time             {:.3f} ms\n", 1e3 * r.seconds);
  }
}

// The summary and the per-iteration table: `knot solve --format json` and DIR/stats.json.
nlohmann::ordered_json stats_json(const problems::Problem& p, const Report& r) {
  nlohmann::ordered_json j;
  j["problem"] = problem_json(p);
  j["solver"] = r.solver;
  j["settings"] = r.settings;
  j["status"] = r.status;
  j["message"] = r.message;
  j["solved"] = r.solved;
  j["iterations"] = r.iterations;
  j["cost"] = json_number(r.cost);
  j["stationarity"] = json_number(r.stationarity);
  j["feasibility"] = json_number(r.feasibility);
  j["complementarity"] = json_number(r.complementarity);
  j["seconds"] = json_number(r.seconds);
  nlohmann::ordered_json history = nlohmann::ordered_json::array();
  if (r.stats) {
    const solver::PhaseTimes& t = r.stats->time;
    j["time"] = {{"linearize", t.linearize}, {"barrier", t.barrier},         {"lq", t.lq},
                 {"step", t.step},           {"line_search", t.line_search}, {"convergence", t.convergence},
                 {"total", t.total}};
    j["regularized"] = r.stats->regularized;
    j["riccati_fallbacks"] = r.stats->riccati_fallbacks;
    j["bytes_allocated"] = r.bytes;
    const auto rows = r.stats->history();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const solver::IterationStats& it = rows[i];
      history.push_back({{"iteration", i},
                         {"seconds", json_number(it.seconds)},
                         {"cost", json_number(it.cost)},
                         {"stationarity", json_number(it.stationarity)},
                         {"feasibility", json_number(it.feasibility)},
                         {"complementarity", json_number(it.complementarity)},
                         {"duality_gap", json_number(it.duality_gap)},
                         {"dual_scale", json_number(it.dual_scale)},
                         {"mu", json_number(it.mu)},
                         {"step", json_number(it.step)},
                         {"dual_step", json_number(it.dual_step)},
                         {"backtracks", it.backtracks},
                         {"regularization", json_number(it.regularization)},
                         {"hessian", it.exact_hessian ? "exact" : "gauss_newton"},
                         {"lq_iterations", it.lq_iterations},
                         {"lq_riccati_fallback", it.lq_riccati_fallback}});
    }
  } else {  // IPOPT: its own time only, no phases, no rows
    j["time"] = {{"total", json_number(r.seconds)}};
    j["regularized"] = nullptr;
    j["riccati_fallbacks"] = nullptr;
    j["bytes_allocated"] = nullptr;
  }
  j["history"] = std::move(history);
  return j;
}

std::string summary_csv(const problems::Problem& p, const Report& r) {
  return "problem,solver,status,iterations,cost,stationarity,feasibility,complementarity,seconds\n" +
         fmt::format("{},{},{},{},{:.17g},{:.6e},{:.6e},{:.6e},{:.6e}\n", csv_field(p.name), r.solver, r.status,
                     r.iterations, r.cost, r.stationarity, r.feasibility, r.complementarity, r.seconds);
}

// ---- Files

// knot,time,<state names>,<control names>[,<frame>.x,.y,.z]: the last knot has no control (empty
// cells); models with kinematics add the world position of their default frame.
std::string trajectory_csv(const problems::Problem& p, const std::vector<double>& x, const std::vector<double>& u) {
  const int nx = p.nx(), nu = p.nu(), N = p.horizon.N;
  const problems::Kinematics* kin = p.model->kinematics();
  const int frame = kin ? kin->default_frame() : -1;
  std::unique_ptr<problems::ModelData> data = kin ? p.model->make_data() : nullptr;
  std::string out = "knot,time";
  for (const auto& n : state_names(p)) out += ',' + csv_field(n);
  for (const auto& n : control_names(p)) out += ',' + csv_field(n);
  if (kin)
    for (const char* axis : {".x", ".y", ".z"}) out += ',' + csv_field(kin->frame_name(frame) + axis);
  out += '\n';
  for (int k = 0; k <= N; ++k) {
    out += std::to_string(k) + ',' + csv_number(k * p.horizon.dt);
    for (int i = 0; i < nx; ++i) out += ',' + csv_number(x[static_cast<std::size_t>(k) * nx + i]);
    for (int i = 0; i < nu; ++i) out += ',' + (k < N ? csv_number(u[static_cast<std::size_t>(k) * nu + i]) : std::string());
    if (kin) {
      std::array<double, 3> pos{};
      kin->frame_position(*data, x.data() + static_cast<std::size_t>(k) * nx, frame, {0.0, 0.0, 0.0}, pos.data(),
                          nullptr);
      for (const double v : pos) out += ',' + csv_number(v);
    }
    out += '\n';
  }
  return out;
}

// Rows of `width` values, one flow sequence per line; a flat list when width is 0.
std::string yaml_rows(const std::vector<double>& v, int width) {
  if (v.empty()) return " []\n";
  std::string out;
  if (width <= 0) {
    out = " [";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + yaml_number(v[i]);
    return out + "]\n";
  }
  out = "\n";
  for (std::size_t r = 0; r * width < v.size(); ++r) {
    out += "  - [";
    for (int i = 0; i < width; ++i) out += (i ? ", " : "") + yaml_number(v[r * width + i]);
    out += "]\n";
  }
  return out;
}

std::string yaml_names(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + yaml_string(names[i]);
  return out + "]";
}

// The optimum in the format `--initial-guess` and `initial_guess:` read: x and u always; the
// multipliers, slacks and barrier parameter when Knot's solver produced them (a warm start).
std::string solution_yaml(const problems::Problem& p, const Report& r, const std::vector<double>& x,
                          const std::vector<double>& u) {
  std::string out = "# Written by knot solve: the optimum of " + p.name + ", readable as an initial guess\n";
  out += "# (knot solve FILE --initial-guess solution.yaml, or `initial_guess: solution.yaml` in a problem file).\n";
  out += "knot_solution: 1\n";
  out += "problem: " + yaml_string(p.name) + "\n";
  out += "status: " + r.status + "\n";
  out += "iterations: " + std::to_string(r.iterations) + "\n";
  out += "cost: " + yaml_number(r.cost) + "\n";
  out += "N: " + std::to_string(p.horizon.N) + "\n";
  out += "dt: " + csv_number(p.horizon.dt) + "\n";
  out += "state_names: " + yaml_names(state_names(p)) + "\n";
  out += "control_names: " + yaml_names(control_names(p)) + "\n";
  out += "x:" + yaml_rows(x, p.nx());
  out += "u:" + yaml_rows(u, p.nu());
  if (const solver::Solution* s = r.solution) {
    out += "lambda:" + yaml_rows(s->lambda, p.nx());
    out += "z:" + yaml_rows(s->z, 0);
    out += "s:" + yaml_rows(s->s, 0);
    out += "y:" + yaml_rows(s->y, 0);
    out += "mu: " + yaml_number(s->mu) + "\n";
  }
  return out;
}

// Writes one file, printing the reason on failure.
bool write_file(const std::string& path, const std::string& contents) {
  if (const std::string why = write_output(path, contents); !why.empty()) {
    fmt::print(stderr, "knot solve: {}\n", why.c_str());
    return false;
  }
  return true;
}

std::string out_path(const std::string& dir, const char* name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace

int run_solve(const SolveOptions& opt) {
  if (opt.plot && opt.out_dir.empty() && (opt.output.empty() || opt.output == "-")) {
    fmt::print(stderr, "knot solve --plot: the figures go beside the trajectory CSV; give --out DIR or --output FILE\n");
    return kExitInput;
  }
  std::vector<std::string> overrides = opt.overrides;
  if (!opt.linsys.empty()) overrides.push_back("solver.linsys=" + opt.linsys);
  if (!opt.hessian.empty()) overrides.push_back("solver.hessian=" + opt.hessian);
  if (opt.threads) overrides.push_back("solver.threads=" + std::to_string(*opt.threads));
  problems::Problem problem;
  solver::SolverOptions options;
  try {
    problem = problems::load_problem(opt.file, overrides);
    options = solver::from_settings(problem.solver);
    // Relative to the working folder (a file's initial_guess: key is relative to the file).
    if (!opt.initial_guess.empty()) problem.initial_guess = problems::read_initial_guess(opt.initial_guess, problem);
  } catch (const problems::ProblemError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitInput;
  }
  // The folder is made before the solve, so an unusable --out costs no solve.
  if (!opt.out_dir.empty()) {
    if (const std::string why = make_output_dir(opt.out_dir); !why.empty()) {
      fmt::print(stderr, "knot solve --out: {}\n", why.c_str());
      return kExitInput;
    }
  }
  for (const std::string& w : problem.model->warnings()) fmt::print(stderr, "warning: {}\n", w.c_str());
  if (opt.globalization == "filter") options.globalization = solver::Globalization::Filter;
  else if (opt.globalization == "merit") options.globalization = solver::Globalization::Merit;
  else if (opt.globalization == "none") options.globalization = solver::Globalization::None;
  const bool verbose = opt.verbose || options.verbose;
  // With the trajectory on stdout, the summary and the live table go to stderr; the live table also
  // goes there beside a JSON or CSV summary, which must stay parseable.
  std::FILE* summary_out = opt.output == "-" ? stderr : stdout;
  std::FILE* live_out = opt.format == "table" ? summary_out : stderr;

  Report report;
  std::vector<double> x, u;
  // Kept alive for the report, which points into its statistics.
  std::unique_ptr<solver::Solver> knot_solver;
  if (opt.solver == "ipopt") {
    if (!solver::ipopt_available()) {
      fmt::print(stderr, "knot solve --solver ipopt: this build has no IPOPT (install coinor-libipopt-dev and "
                           "reconfigure)\n");
      return kExitInput;
    }
    solver::IpoptOptions io;
    io.max_iter = std::max(options.max_iter, io.max_iter);
    io.time_limit = options.time_limit;
    io.memory_limit = options.memory_limit;
    io.print_level = verbose ? 5 : 0;
    const problems::InitialGuess& guess = problem.initial_guess;
    solver::IpoptResult r;
    try {
      r = guess.empty() ? solver::solve_with_ipopt(problem, io)
                        : solver::solve_with_ipopt(problem, io, &guess.x, &guess.u);
    } catch (const problems::ProblemError& e) {
      fmt::print(stderr, "{}\n", e.what());
      return kExitInput;
    }
    report.solver = "ipopt";
    // Reports the Hessian IPOPT actually used (IpoptOptions' default).
    const char* hessian = io.hessian == solver::IpoptHessian::FiniteDifference ? "finite-difference"
                          : io.hessian == solver::IpoptHessian::GaussNewton    ? "gauss-newton"
                                                                               : "limited-memory";
    report.settings = fmt::format("{} Hessian, tol {:g}", hessian, io.tol);
    report.status = r.status == solver::IpoptStatus::Solved ? "solved" : "not_solved";
    report.message = r.message;
    report.solved = r.status == solver::IpoptStatus::Solved;
    report.iterations = r.iterations;
    report.cost = r.cost;
    report.stationarity = r.kkt_stationarity;
    report.feasibility = r.constraint_violation;
    report.complementarity = r.complementarity;
    report.seconds = r.seconds;
    x = std::move(r.x);
    u = std::move(r.u);
  } else {
    try {
      knot_solver = std::make_unique<solver::Solver>(problem, options);
    } catch (const problems::ProblemError& e) {
      fmt::print(stderr, "{}\n", e.what());
      return kExitInput;
    }
    solver::Solver& s = *knot_solver;
    if (verbose) {
      print_table_header(live_out);
      s.set_iteration_callback(&print_table_row, live_out);
    }
    s.solve();
    if (verbose) fmt::print(live_out, "\n");
    const solver::Solution& sol = s.solution();
    const solver::Stats& st = s.stats();
    report.solver = "knot";
    report.settings = std::string("sqp; linsys ") + solver::to_string(st.linsys) + ", hessian " +
                      solver::to_string(options.hessian) + ", globalization " +
                      solver::to_string(options.globalization) +
                      (s.threads() > 1 ? ", threads " + std::to_string(s.threads()) : std::string());
    report.status = solver::to_string(sol.status);
    report.message = std::string(sol.message());
    report.solved = solver::is_solved(sol.status);
    report.iterations = sol.iterations;
    report.cost = sol.cost;
    if (const auto rows = st.history(); !rows.empty()) {
      report.stationarity = rows.back().stationarity;
      report.feasibility = rows.back().feasibility;
      report.complementarity = rows.back().complementarity;
    }
    report.seconds = st.time.total;
    report.stats = &st;
    report.solution = &sol;
    report.bytes = s.bytes_allocated();
    x = sol.x;
    u = sol.u;
  }

  if (opt.format == "json") fmt::print(summary_out, "{}\n", stats_json(problem, report).dump(2).c_str());
  else if (opt.format == "csv") std::fputs(summary_csv(problem, report).c_str(), summary_out);
  else print_table(summary_out, problem, report);
  std::fflush(summary_out);

  bool written = true;
  if (!x.empty()) {
    const std::string trajectory = trajectory_csv(problem, x, u);
    if (!opt.output.empty()) written = write_file(opt.output, trajectory) && written;
    if (!opt.out_dir.empty()) {
      written = write_file(out_path(opt.out_dir, "trajectory.csv"), trajectory) && written;
      written = write_file(out_path(opt.out_dir, "stats.json"), stats_json(problem, report).dump(2) + "\n") && written;
      written = write_file(out_path(opt.out_dir, "solution.yaml"), solution_yaml(problem, report, x, u)) && written;
    }
  }
  if (!written) return kExitInput;
  if (opt.plot && !x.empty()) {
    const std::string csv = !opt.out_dir.empty() ? out_path(opt.out_dir, "trajectory.csv") : opt.output;
    std::vector<std::string> pngs;
    // A figure that cannot be drawn is a warning: the solve and its files are done.
    if (const std::string why = plot_files({csv}, "", pngs); !why.empty())
      fmt::print(stderr, "knot solve --plot: {}\n", why.c_str());
    for (const std::string& png : pngs) fmt::print(summary_out, "figure           {}\n", png.c_str());
  }
  return report.solved ? kExitSolved : kExitNotSolved;
}

}  // namespace knot::cli
