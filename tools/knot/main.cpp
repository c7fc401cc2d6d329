// knot: the command-line front end. Subcommands: info, check, solve, bench.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/core.h>
#include <exception>
#include <iostream>
#include <spdlog/spdlog.h>
#include <string>

#include "commands.hpp"
#include "knot/build_info.hpp"
#include "knot/problems/error.hpp"
#include "output.hpp"

namespace {

constexpr const char* kExitCodes =
    "Exit codes (every subcommand): 0 success (solved, valid, ran), 1 invalid input or usage (a problem file,\n"
    "an option, an unwritable output), 2 not solved (the status is in the output), 3 internal error.";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Knot: trajectory optimization and model predictive control"};
  app.set_version_flag("--version", std::string("knot ") + knot::build::kVersion);
  app.require_subcommand(1);

  auto* info = app.add_subcommand("info", "Version, build options, and whether a usable GPU is present");

  knot::cli::CheckOptions copt;
  auto* check = app.add_subcommand("check", "Validate a problem file and print the problem it resolves to");
  check->add_option("file", copt.file, "Problem file (YAML)")->required();
  check->add_option("--set", copt.overrides, "Override a key after extends: key.path=value (value parsed as YAML)")
      ->allow_extra_args(false);  // one key=value per --set; repeat --set for more

  knot::cli::SolveOptions sopt;
  auto* solve = app.add_subcommand("solve", "Solve a problem file, print the summary, and write the trajectory, the "
                                            "statistics and the solution on request");
  solve->add_option("file", sopt.file, "Problem file (YAML)")->required();
  solve->add_option("--set", sopt.overrides, "Override a key after extends: key.path=value (value parsed as YAML)")
      ->allow_extra_args(false);
  solve->add_option("--format", sopt.format, "Summary format")->check(CLI::IsMember({"table", "json", "csv"}));
  // An empty path is a slip (an unset shell variable, say), not a request to skip the file.
  const CLI::Validator file_path(
      [](std::string& s) { return s.empty() ? std::string("expected a file path, found an empty string") : std::string(); },
      "PATH");
  solve->add_option("--output", sopt.output,
                    "Write the trajectory as CSV (knot, time, states, controls); '-' writes it to stdout and the "
                    "summary to stderr")
      ->check(file_path);
  solve->add_option("--out", sopt.out_dir, "Write DIR/trajectory.csv, DIR/stats.json and DIR/solution.yaml")
      ->check(file_path);
  solve->add_option("--initial-guess", sopt.initial_guess,
                    "Start from a solution.yaml (a warm start, with its multipliers) or a trajectory.csv, "
                    "replacing the problem file's initial_guess")
      ->check(file_path);
  solve->add_option("--linsys", sopt.linsys, "LQ backend, overriding solver.linsys")
      ->check(CLI::IsMember({"auto", "riccati", "bdsv", "pcg", "kkt_ldlt"}));
  solve->add_option("--globalization", sopt.globalization, "Line search, overriding solver.globalization")
      ->check(CLI::IsMember({"filter", "merit", "none"}));
  solve->add_option("--hessian", sopt.hessian, "SQP Hessian, overriding solver.hessian (exact for long horizons)")
      ->check(CLI::IsMember({"auto", "exact", "gauss_newton"}));
  solve->add_option("--solver", sopt.solver, "knot (SQP) or ipopt (the IPOPT cross-check)")
      ->check(CLI::IsMember({"knot", "ipopt"}));
  solve->add_flag("--plot", sopt.plot, "Draw PNG figures of the trajectory beside its CSV (with --out DIR or --output FILE)");
  solve->add_flag("--verbose,-v", sopt.verbose,
                  "Print the iteration table live, one row per iteration (to stderr beside a JSON or CSV summary)");
  solve->add_option("--batch", sopt.batch, "Solve B copies of the problem at once (BatchSolver; docs/batch.md)")
      ->check(CLI::Range(1, 1 << 20));
  auto* vary = solve->add_option("--vary", sopt.vary,
                                 "With --batch: copies 1..B-1 start at x0 + SIGMA N(0,1), fixed seed (x0=SIGMA)");
  solve->add_option("--vary-file", sopt.vary_file, "With --batch: one initial state per line (CSV of nx numbers)")
      ->check(file_path)
      ->excludes(vary);
  solve->add_option("--sweep", sopt.sweep,
                    "With --batch: model parameter NAME from LO (copy 0) to HI (copy B-1), evenly (NAME=LO:HI)");
  solve->add_option("--backend", sopt.backend, "Batch backend")->check(CLI::IsMember({"cpu", "cuda"}));
  solve->add_option("--precision", sopt.precision, "Batch arithmetic: double, or float (backend cuda only)")
      ->check(CLI::IsMember({"double", "float"}));
  solve->add_option("--threads", sopt.threads,
                    "CPU threads (0: every core): with a batch, the batch's (default 0); on one solve, the threads "
                    "that evaluate its knots (solver.threads)")
      ->check(CLI::Range(0, 4096));
  solve->add_option("--path", sopt.path, "Batch path: auto (cpu: solvers, cuda: device), solvers (one Solver per problem) "
                                         "or device (the GPU's code, on the CPU with backend cpu)")
      ->check(CLI::IsMember({"auto", "solvers", "device"}));

  knot::cli::MpcOptions mopt;
  auto* mpc = app.add_subcommand("mpc", "Run the closed loop of a problem file's mpc: section and print its summary "
                                        "(exit 0 ran, 1 input error)");
  mpc->add_option("file", mopt.file, "Problem file (YAML)")->required();
  mpc->add_option("--duration", mopt.duration, "Seconds of closed loop, replacing mpc.duration/steps")
      ->check(CLI::PositiveNumber);
  mpc->add_option("--steps", mopt.steps, "Control steps, replacing mpc.duration/steps")->check(CLI::PositiveNumber);
  mpc->add_option("--seed", mopt.seed, "Seed of the noise, replacing mpc.seed")->check(CLI::NonNegativeNumber);
  mpc->add_option("--set", mopt.overrides, "Override a key after extends: key.path=value (value parsed as YAML)")
      ->allow_extra_args(false);
  mpc->add_option("--out", mopt.out, "Write DIR/closed_loop.csv and DIR/summary.json")->check(file_path);
  mpc->add_flag("--plot", mopt.plot, "Plot the closed loop (needs --out)");

  auto* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  knot::cli::BenchOptions bopt;
  auto* bench_linalg = bench->add_subcommand("linalg", "Block-tridiagonal and dense-block kernels against Eigen");
  bench_linalg->add_flag("--quick", bopt.quick, "Few sizes and repeats (seconds)");
  bench_linalg->add_option("--format", bopt.format, "Output format")->check(CLI::IsMember({"table", "csv", "json"}));
  bench_linalg->add_option("--repeats", bopt.repeats, "Timed repetitions per case (median reported)")->check(CLI::Range(1, 100000));

  // The exit codes, on every subcommand's --help too; an unknown subcommand is named with the list.
  app.footer(kExitCodes);
  std::string subcommands;
  for (CLI::App* sub : app.get_subcommands({})) {
    sub->footer(kExitCodes);
    subcommands += (subcommands.empty() ? "" : ", ") + sub->get_name();
  }
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      fmt::print(stderr, "knot: unknown subcommand '{}'; the subcommands are: {}\n", argv[1], subcommands.c_str());
      return knot::cli::kExitInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0 (CLI11's success codes); every usage error is exit code 1.
    const int code = app.exit(e);
    return code == 0 ? knot::cli::kExitSolved : knot::cli::kExitInput;
  }
  try {
    if (*info) return knot::cli::run_info();
    if (*check) return knot::cli::run_check(copt);
    if (*solve) return knot::cli::wants_batch(sopt) ? knot::cli::run_solve_batch(sopt) : knot::cli::run_solve(sopt);
    if (*mpc) return knot::cli::run_mpc(mopt);
    if (*bench_linalg) return knot::cli::run_bench_linalg(bopt);
  } catch (const knot::problems::ProblemError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return knot::cli::kExitInput;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return knot::cli::kExitInternal;
  }
  return knot::cli::kExitSolved;
}
