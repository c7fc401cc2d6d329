// knot solve FILE: load a problem, solve it with Knot's SQP (or IPOPT, for the cross-check), print a
// summary and optionally write the trajectory as CSV.
//
// Exit codes: 0 solved; 1 input error (problem file, override, option, unwritable output, IPOPT not
// built in); 2 the solver ran but did not reach Solved.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/ipopt.hpp"
#include "knot/solver/solver.hpp"

namespace knot::cli {
namespace {

// What both solvers report, in one shape for the three output formats.
struct Report {
  std::string solver;  // "knot" or "ipopt"
  std::string settings;
  std::string status;  // machine name
  std::string message;
  bool solved = false;
  int iterations = 0;
  double cost = 0, stationarity = 0, feasibility = 0, complementarity = 0;
  double seconds = 0;
  const solver::Stats* stats = nullptr;  // knot only
  std::size_t bytes = 0;                 // knot only
};

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// JSON has no NaN or Inf: those are written as null.
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void print_table(const problems::Problem& p, const Report& r, bool verbose) {
  std::printf("problem          %s  (nx %d, nu %d, N %d, dt %g, %s)\n", p.name.c_str(), p.nx(), p.nu(), p.horizon.N,
              p.horizon.dt, std::string(problems::to_string(p.horizon.integrator)).c_str());
  std::printf("solver           %s (%s)\n", r.solver.c_str(), r.settings.c_str());
  std::printf("status           %s\n", r.status.c_str());
  std::printf("message          %s\n", r.message.c_str());
  std::printf("iterations       %d\n", r.iterations);
  std::printf("cost             %.12g\n", r.cost);
  std::printf("stationarity     %.3e\n", r.stationarity);
  std::printf("feasibility      %.3e\n", r.feasibility);
  std::printf("complementarity  %.3e\n", r.complementarity);
  if (r.stats) {
    const solver::PhaseTimes& t = r.stats->time;
    std::printf("time             %.3f ms  (linearize %.3f, barrier %.3f, lq %.3f, step %.3f, line search %.3f, "
                "convergence %.3f)\n",
                1e3 * t.total, 1e3 * t.linearize, 1e3 * t.barrier, 1e3 * t.lq, 1e3 * t.step, 1e3 * t.line_search,
                1e3 * t.convergence);
    std::printf("regularized      %d iterations (largest delta %.3g)\n", r.stats->regularized,
                r.stats->max_regularization);
    std::printf("memory           %zu bytes allocated at creation\n", r.bytes);
  } else {
    std::printf("time             %.3f ms\n", 1e3 * r.seconds);
  }
  if (verbose && r.stats) {
    std::printf("\n iter  %-20s %-10s %-10s %-10s %-9s %-9s %-9s %-4s %-9s %s\n", "cost", "stationar.", "feasib.",
                "complem.", "mu", "step", "dual step", "bt", "reg", "lq iters");
    const auto rows = r.stats->history();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const solver::IterationStats& it = rows[i];
      std::printf(" %4zu  %-20.12g %-10.3e %-10.3e %-10.3e %-9.2e %-9.3g %-9.3g %-4d %-9.2e %d\n", i, it.cost,
                  it.stationarity, it.feasibility, it.complementarity, it.mu, it.step, it.dual_step, it.backtracks,
                  it.regularization, it.lq_iterations);
    }
  }
}

void print_json(const problems::Problem& p, const Report& r, bool verbose) {
  std::printf("{\"problem\": %s, \"nx\": %d, \"nu\": %d, \"N\": %d, \"solver\": %s, \"settings\": %s,\n",
              json_string(p.name).c_str(), p.nx(), p.nu(), p.horizon.N, json_string(r.solver).c_str(),
              json_string(r.settings).c_str());
  std::printf(" \"status\": %s, \"message\": %s, \"iterations\": %d, \"cost\": %s,\n", json_string(r.status).c_str(),
              json_string(r.message).c_str(), r.iterations, json_number(r.cost).c_str());
  std::printf(" \"stationarity\": %s, \"feasibility\": %s, \"complementarity\": %s, \"seconds\": %s",
              json_number(r.stationarity).c_str(), json_number(r.feasibility).c_str(),
              json_number(r.complementarity).c_str(), json_number(r.seconds).c_str());
  if (r.stats) {
    const solver::PhaseTimes& t = r.stats->time;
    std::printf(",\n \"time\": {\"linearize\": %s, \"barrier\": %s, \"lq\": %s, \"step\": %s, \"line_search\": %s, "
                "\"convergence\": %s, \"total\": %s},\n",
                json_number(t.linearize).c_str(), json_number(t.barrier).c_str(), json_number(t.lq).c_str(),
                json_number(t.step).c_str(), json_number(t.line_search).c_str(), json_number(t.convergence).c_str(),
                json_number(t.total).c_str());
    std::printf(" \"regularized\": %d, \"bytes_allocated\": %zu", r.stats->regularized, r.bytes);
    if (verbose) {
      std::printf(",\n \"history\": [");
      const auto rows = r.stats->history();
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const solver::IterationStats& it = rows[i];
        std::printf("%s\n  {\"cost\": %s, \"stationarity\": %s, \"feasibility\": %s, \"complementarity\": %s, "
                    "\"mu\": %s, \"step\": %s, \"dual_step\": %s, \"backtracks\": %d, \"regularization\": %s, "
                    "\"lq_iterations\": %d}",
                    i ? "," : "", json_number(it.cost).c_str(), json_number(it.stationarity).c_str(),
                    json_number(it.feasibility).c_str(), json_number(it.complementarity).c_str(),
                    json_number(it.mu).c_str(), json_number(it.step).c_str(), json_number(it.dual_step).c_str(),
                    it.backtracks, json_number(it.regularization).c_str(), it.lq_iterations);
      }
      std::printf("]");
    }
  }
  std::printf("}\n");
}

void print_csv(const problems::Problem& p, const Report& r) {
  std::printf("problem,solver,status,iterations,cost,stationarity,feasibility,complementarity,seconds\n");
  std::printf("%s,%s,%s,%d,%.17g,%.6e,%.6e,%.6e,%.6e\n", csv_field(p.name).c_str(), r.solver.c_str(),
              r.status.c_str(), r.iterations, r.cost, r.stationarity, r.feasibility, r.complementarity, r.seconds);
}

// knot,time,<state names>,<control names>; the last knot has no control (empty fields).
bool write_trajectory(const std::string& path, const problems::Problem& p, const std::vector<double>& x,
                      const std::vector<double>& u) {
  std::ofstream out(path);
  if (!out) return false;
  const int nx = p.nx(), nu = p.nu(), N = p.horizon.N;
  const std::vector<std::string> states = p.state_names.empty() ? p.model->state_names() : p.state_names;
  const std::vector<std::string> controls = p.control_names.empty() ? p.model->control_names() : p.control_names;
  out << "knot,time";
  for (const auto& n : states) out << ',' << csv_field(n);
  for (const auto& n : controls) out << ',' << csv_field(n);
  out << '\n';
  char buf[32];
  for (int k = 0; k <= N; ++k) {
    out << k;
    std::snprintf(buf, sizeof buf, "%.17g", k * p.horizon.dt);
    out << ',' << buf;
    for (int i = 0; i < nx; ++i) {
      std::snprintf(buf, sizeof buf, "%.17g", x[static_cast<std::size_t>(k) * nx + i]);
      out << ',' << buf;
    }
    for (int i = 0; i < nu; ++i) {
      if (k < N) std::snprintf(buf, sizeof buf, "%.17g", u[static_cast<std::size_t>(k) * nu + i]);
      out << ',' << (k < N ? buf : "");
    }
    out << '\n';
  }
  return static_cast<bool>(out);
}

}  // namespace

int run_solve(const SolveOptions& opt) {
  std::vector<std::string> overrides = opt.overrides;
  if (!opt.linsys.empty()) overrides.push_back("solver.linsys=" + opt.linsys);
  problems::Problem problem;
  solver::SolverOptions options;
  try {
    problem = problems::load_problem(opt.file, overrides);
    options = solver::from_settings(problem.solver);
  } catch (const problems::ProblemError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  for (const std::string& w : problem.model->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (opt.globalization == "filter") options.globalization = solver::Globalization::Filter;
  else if (opt.globalization == "merit") options.globalization = solver::Globalization::Merit;
  else if (opt.globalization == "none") options.globalization = solver::Globalization::None;
  const bool verbose = opt.verbose || options.verbose;

  Report report;
  std::vector<double> x, u;
  // Kept alive for the report, which points into its statistics.
  std::unique_ptr<solver::Solver> knot_solver;
  if (opt.solver == "ipopt") {
    if (!solver::ipopt_available()) {
      std::fprintf(stderr, "knot solve --solver ipopt: this build has no IPOPT (install coinor-libipopt-dev and "
                           "reconfigure)\n");
      return 1;
    }
    solver::IpoptOptions io;
    io.max_iter = std::max(options.max_iter, io.max_iter);
    io.time_limit = options.time_limit;
    io.memory_limit = options.memory_limit;
    io.print_level = verbose ? 5 : 0;
    solver::IpoptResult r;
    try {
      r = solver::solve_with_ipopt(problem, io);
    } catch (const problems::ProblemError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
    report.solver = "ipopt";
    // Reports the Hessian IPOPT actually used (IpoptOptions' default).
    const char* hessian = io.hessian == solver::IpoptHessian::FiniteDifference ? "finite-difference"
                          : io.hessian == solver::IpoptHessian::GaussNewton    ? "gauss-newton"
                                                                               : "limited-memory";
    char settings[96];
    std::snprintf(settings, sizeof settings, "%s Hessian, tol %g", hessian, io.tol);
    report.settings = settings;
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
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
    solver::Solver& s = *knot_solver;
    s.solve();
    const solver::Solution& sol = s.solution();
    const solver::Stats& st = s.stats();
    report.solver = "knot";
    report.settings = std::string("sqp; linsys ") + solver::to_string(st.linsys) + ", hessian " +
                      solver::to_string(options.hessian) + ", globalization " +
                      solver::to_string(options.globalization);
    report.status = solver::to_string(sol.status);
    report.message = std::string(sol.message());
    report.solved = sol.status == solver::Status::Solved;
    report.iterations = sol.iterations;
    report.cost = sol.cost;
    if (const auto rows = st.history(); !rows.empty()) {
      report.stationarity = rows.back().stationarity;
      report.feasibility = rows.back().feasibility;
      report.complementarity = rows.back().complementarity;
    }
    report.seconds = st.time.total;
    report.stats = &st;
    report.bytes = s.bytes_allocated();
    x = sol.x;
    u = sol.u;
  }

  if (opt.format == "json") print_json(problem, report, verbose);
  else if (opt.format == "csv") print_csv(problem, report);
  else print_table(problem, report, verbose);

  if (!opt.output.empty() && !x.empty() && !write_trajectory(opt.output, problem, x, u)) {
    std::fprintf(stderr, "knot solve: cannot write the trajectory to '%s'\n", opt.output.c_str());
    return 1;
  }
  return report.solved ? 0 : 2;
}

}  // namespace knot::cli
